"""What a shared evaluation holds (issue 16, bounded memory): the arrays kept, their types, the figures derived
where read, and that none of it moves a number or a word the product shows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.decision import contract, engine, explain, fleet
from core.decision import settings as settings_mod
from core.decision.analysis import architecture_comparison
from core.decision.engine import (
    DERIVED,
    PLAN_ONLY,
    ROUTE_ARRAYS,
    SMALL_WHOLE,
    evaluate,
    prepare_workloads,
)
from core.models import Scenario
from core.store.seed import sample_workloads_path

# Two of the bank's workloads (two plans a test: each inventory row costs the plan search): owned-only code
# completion (quality refusals with an escalation share in words) and external chat (API routes, token value).
ROWS = ["code-completion", "internal-chat"]


@pytest.fixture(scope="module")
def lean_and_full(seed_catalog):
    """The same inventory evaluated as shipped, and keeping every array at float64 (what was held before)."""
    bank = pd.read_csv(sample_workloads_path())
    w = bank[bank["workload_id"].isin(ROWS)]
    lean = evaluate(seed_catalog, w, Scenario())
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine, "SMALL_WHOLE", {})
        mp.setattr(engine, "DERIVED", ())
        mp.setattr(engine, "PLAN_ONLY", ())
        mp.setattr(fleet, "DROP_AFTER_INPUTS", ())
        full = evaluate(seed_catalog, w, Scenario())
    return lean, full


def test_the_evaluation_keeps_only_the_arrays_read_after_the_plan(lean_and_full):
    lean, full = lean_and_full
    W, R = len(lean.workloads), len(lean.routes)
    assert set(lean.a) == set(ROUTE_ARRAYS)
    assert not set(lean.a) & (set(PLAN_ONLY) | set(DERIVED))
    assert set(full.a) >= set(ROUTE_ARRAYS) | set(PLAN_ONLY) | set(DERIVED)  # the plan still writes them
    for k, x in lean.a.items():
        want = {"code": np.int8, "feasible": np.bool_, "fallback_route": np.int64}.get(k, SMALL_WHOLE.get(k, np.float64))
        assert x.dtype == want, k
        assert x.shape == ((W,) if k == "fallback_route" else (W, R)), k
    # Per (workload, route): 8 float64 (money x2, p95 x2, replicas, nodes, GPU-hours, fallback share), 3 float32
    # and 2 one-byte arrays (code, feasible) = 78 bytes (was 18 float64 + 2 one-byte = 146); and 8 bytes of
    # fallback route per workload.
    assert sum(x.nbytes for x in lean.a.values()) == W * (R * (8 * 8 + 3 * 4 + 2) + 8)


def test_derived_and_narrowed_figures_are_the_held_ones_to_the_bit(lean_and_full):
    """quality (from each route's table by task class) and usd_per_mtok_out (the plan's usd_per_request / output
    tokens x 1e6) equal the arrays the full evaluation holds; the float32 arrays hold only whole numbers."""
    lean, full = lean_and_full
    W, R = full.a["quality"].shape
    ii, rr = np.repeat(np.arange(W), R), np.tile(np.arange(R), W)
    for name in DERIVED:
        held = full.a[name][ii, rr]
        assert np.array_equal(lean.values(name, ii, rr), held, equal_nan=True), name
        assert all(np.array_equal(lean.values(name, i, r), full.a[name][i, r], equal_nan=True)
                   for i, r in zip(ii, rr, strict=True)), name  # one cell at a time too
    for name in SMALL_WHOLE:
        x = full.a[name]
        assert x.dtype == np.float64 and np.array_equal(x, lean.a[name], equal_nan=True), name
        finite = x[np.isfinite(x)]
        assert np.array_equal(finite, np.round(finite)) and (np.abs(finite) < 2**24).all(), name


def test_every_view_reads_the_same_from_the_lean_evaluation(lean_and_full, monkeypatch):
    """The JSON contract (every route, why not, the reasons in words, the escalation shares), the routing table
    and the architecture table are identical, dtypes included. (The verdict ranges, two more plans each, are
    left out: they read the evaluation's GPUs per replica only, as whole numbers.)"""
    monkeypatch.setattr(settings_mod, "PLAN", settings_mod.DEFAULT.but(ranges_max_workloads=0))
    lean, full = lean_and_full
    assert contract.to_dict(lean, "routes") == contract.to_dict(full, "routes")
    assert contract.to_dict(lean, "verdicts") == contract.to_dict(full, "verdicts")
    pd.testing.assert_frame_equal(contract.verdicts_frame(lean), contract.verdicts_frame(full))
    pd.testing.assert_frame_equal(architecture_comparison(lean, explain="all"),
                                  architecture_comparison(full, explain="all"))
    for i in range(len(lean.workloads)):
        pd.testing.assert_frame_equal(contract.routes_frame(lean, i), contract.routes_frame(full, i))
    words = " ".join(" ".join(explain.reasons(lean, i)) for i in range(len(lean.workloads)))
    shares = [lean.needed_fallback(i, r) for i in range(len(lean.workloads)) for r in range(len(lean.routes))
              if lean.a["code"][i, r] == engine.QUALITY]
    assert any(0 < f < np.inf for f in shares) and "lifting it would escalate" in str(contract.to_dict(lean, "routes"))
    assert words


def test_a_workload_record_is_the_frame_row(lean_and_full, store):
    """_record(i) gives what workloads.to_dict("records")[i] gives (values and Python types), on the sample
    as read by pandas and on a version loaded back from the store, without holding a dict per row."""
    from dataclasses import replace

    from core.inventory import read_inventory
    from core.inventory.versions import commit_inventory, latest_inventory

    lean, _ = lean_and_full
    commit_inventory(store, read_inventory(sample_workloads_path()).frame, file_name="sample.csv")
    stored = prepare_workloads(latest_inventory(store)[1])
    for ev in (lean, replace(lean, workloads=stored)):
        records = ev.workloads.to_dict("records")
        for i, want in enumerate(records):
            got = ev.record(i)
            assert list(got) == list(want)
            for k in want:
                assert type(got[k]) is type(want[k]) and (got[k] == want[k] or (got[k] != got[k] and want[k] != want[k])), (i, k)
        assert "_records" not in ev.__dict__
