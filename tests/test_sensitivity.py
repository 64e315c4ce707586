"""Verdict sensitivity (issue 13): each verdict at both ends of the performance ranges, flagged where it flips."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pandas as pd
import pytest

from core.decision import contract, explain, sensitivity
from core.decision import settings as settings_mod
from core.decision.engine import evaluate
from core.decision.records import Answers
from core.errors import InputError
from core.models import Scenario
from core.store.seed import sample_workloads_path


@pytest.fixture(scope="module")
def catalog(seed_catalog):
    return seed_catalog


@pytest.fixture(scope="module")
def bank():
    return pd.read_csv(sample_workloads_path())


@pytest.fixture(scope="module")
def sample_ev(catalog, bank):
    """The bundled sample, default scenario, with its ranges computed (7 workloads: automatic)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ev = evaluate(catalog, bank, Scenario())
        assert sensitivity.ranges(ev) is not None
    return ev


def _row(ev, wid):
    rg = sensitivity.ranges(ev).frame
    return rg[rg["workload_id"] == wid].iloc[0]


def test_the_hook_leaves_the_default_alone_and_returns_each_end(catalog):
    gpu = catalog.gpu("H100 SXM")
    stack = next(s for s in catalog.stacks if s.stack_id == "qwen3-30b-a3b-fp8")
    low, central, high = catalog.efficiency_bounds(stack, gpu, 1)
    assert catalog.efficiency_end == "central"
    assert catalog.efficiency(stack, gpu, 1) == catalog.at_efficiency_end("central").efficiency(stack, gpu, 1)
    eff_low, label = catalog.at_efficiency_end("low").efficiency(stack, gpu, 1)
    assert eff_low == low and "pessimistic end" in label
    assert catalog.at_efficiency_end("high").efficiency(stack, gpu, 1)[0] == high
    assert low != high  # an estimated route carries a real range
    with pytest.raises(InputError, match="low, central or high"):
        catalog.at_efficiency_end("worst")


def test_bundled_sample_flags_verdicts_that_flip_and_names_the_driver(sample_ev):
    """Default scenario: some verdicts move between the pessimistic and optimistic ends (which ones depends on
    the plan; at the time of writing lc-clearing, code-completion and internal-chat), each with the assumption
    that drives the range of the route involved, and the reasons say so in one sentence."""
    rg = sensitivity.ranges(sample_ev).frame
    flipped = rg[rg["sensitive"]]
    assert len(flipped) >= 1
    # sensitive means exactly: the verdict route differs at one end or the other.
    assert (rg["sensitive"] == ((rg["verdict_low"] != rg["verdict_central"])
                                | (rg["verdict_high"] != rg["verdict_central"]))).all()
    ids = [sample_ev.routes[k].route_id if k >= 0 else "" for k in sample_ev.verdict]
    assert rg["verdict_central"].tolist() == ids
    for i in flipped.index:
        row = rg.loc[i]
        assert row["driver"]  # e.g. "MoE expert-GEMM efficiency", "speculative acceptance rate"
        last = explain.reasons(sample_ev, int(i))[-1]
        assert last.startswith("Verdict sensitive to the ") and row["driver"] in last and last.endswith("measure it.")
    vf = contract.verdicts_frame(sample_ev)
    assert vf["sensitive"].tolist() == rg["sensitive"].tolist()
    assert all(bool(t) == s for t, s in zip(vf["sensitivity"], vf["sensitive"], strict=True))


def test_a_workload_far_from_any_boundary_is_not_flagged(sample_ev):
    """credit-memos (reasoning, quality floor 0.90): no owned model reaches the floor, so no owned speed can
    change where it goes; the API verdict holds at both ends and no sentence is added."""
    row = _row(sample_ev, "credit-memos")
    assert row["verdict_central"].startswith("api:")
    assert row["verdict_low"] == row["verdict_high"] == row["verdict_central"]
    assert not row["sensitive"] and row["driver"] == ""
    i = int(np.flatnonzero(sample_ev.workloads["workload_id"] == "credit-memos")[0])
    assert not any(r.startswith("Verdict sensitive") for r in explain.reasons(sample_ev, i))


def test_a_target_inside_the_range_flips_to_the_pessimistic_end(catalog, bank):
    """Constructed: code-completion alone, 1,000 requests/day, its p95 target set between the verdict route's
    latency alone on a replica at the central estimate and at the pessimistic end (geometric mean). At the
    central estimate the workload is served on owned hardware; at the pessimistic end that verdict cannot hold."""
    one = bank[bank["workload_id"] == "code-completion"].assign(requests_per_day=1000, latency_slo_ms=1e6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        loose = evaluate(catalog, one, Scenario(fleet_nodes=0))
        v = int(loose.verdict[0])
        low, _ = sensitivity.end_evaluations(catalog, loose.workloads, loose.scenario, loose)
        central_ms, low_ms = loose.a["best_p95_ms"][0, v], low.a["best_p95_ms"][0, v]
        assert low_ms > central_ms * 1.1
        tight = one.assign(latency_slo_ms=float(np.sqrt(central_ms * low_ms)))
        ev = evaluate(catalog, tight, Scenario(fleet_nodes=0))
        rg = sensitivity.ranges(ev).frame
    row = rg.iloc[0]
    # The tight target may pick another owned route (a wider replica is faster); it holds only at the centre.
    c = int(ev.verdict[0])
    assert c >= 0 and ev.routes[c].hosting == "owned" and row["verdict_central"] == ev.routes[c].route_id
    assert row["sensitive"] and row["verdict_low"] != row["verdict_central"]
    g = int(ev.a["gpus_per_replica"][0, c])
    driver = catalog.efficiency_bounds(ev.routes[c].stack, catalog.gpu("H100 SXM"), g).driver
    assert row["driver"] == driver
    assert f"Verdict sensitive to the {driver}" in explain.reasons(ev, 0)[-1]
    assert "at the pessimistic end" in explain.reasons(ev, 0)[-1]


def test_pessimistic_end_never_needs_fewer_nodes_when_the_same_work_is_served(catalog, bank):
    """code-completion ×15 (3,000,000 requests/day) at a 1,500 ms target on no owned nodes: every end serves it
    on owned hardware, so the optimistic end needs no more nodes (nor dollars) than the central estimate,
    and the pessimistic end no fewer; the range is not empty (2 to 3 nodes when this was written; at ×5 every
    end fits 1 node since expert bytes stream at the GPU's bandwidth share, so the range would be empty)."""
    one = bank[bank["workload_id"] == "code-completion"].assign(requests_per_day=3_000_000, latency_slo_ms=1500)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ev = evaluate(catalog, one, Scenario(fleet_nodes=0))
        sensitivity.ranges(ev)
    pr, f = sensitivity.ranges(ev).performance, ev.fleet
    assert pr.unserved_optimistic == pr.unserved_central == pr.unserved_pessimistic == 0
    assert pr.nodes_needed_optimistic <= f.nodes_needed <= pr.nodes_needed_pessimistic
    assert pr.total_monthly_usd_optimistic <= f.total_monthly_usd + 0.01 <= pr.total_monthly_usd_pessimistic + 0.02
    assert pr.total_monthly_usd_pessimistic > pr.total_monthly_usd_optimistic
    line = sensitivity.estimate_range_words(ev)
    assert line.startswith("Estimate range") and "optimistic end" in line and "pessimistic end" in line


def test_json_contract_carries_the_range(sample_ev):
    d = json.loads(json.dumps(contract.to_dict(sample_ev, detail="verdicts")))
    for w in d["workloads"]:
        assert set(w["verdict_range"]) == {"low", "high", "sensitive", "driver"}
    full = contract.to_dict(sample_ev)  # detail="routes": the same ranges beside the words
    assert [w["verdict_range"] for w in full["workloads"]] == [w["verdict_range"] for w in d["workloads"]]
    assert any(w["verdict_range"]["sensitive"] for w in d["workloads"])
    pr = d["fleet"]["performance_range"]
    assert {"nodes_needed_optimistic", "nodes_needed_pessimistic", "total_monthly_usd_optimistic", "total_monthly_usd_pessimistic"} <= set(pr)


def test_large_inventories_skip_ranges_unless_forced(sample_ev, monkeypatch):
    """The rule: automatic up to RANGES_MAX_WORKLOADS workloads; above it only on demand (force / --ranges)."""
    monkeypatch.setattr(settings_mod, "PLAN", settings_mod.DEFAULT.but(ranges_max_workloads=3))
    fresh = dataclasses.replace(sample_ev, answers=Answers())
    assert sensitivity.ranges(fresh) is None and "performance_range" not in contract.fleet_json(fresh)
    vf = contract.verdicts_frame(fresh)
    assert vf["sensitive"].isna().all() and (vf["sensitivity"] == "").all()
    assert contract.verdict_range(fresh, 0) is None and not any(r.startswith("Verdict sensitive") for r in explain.reasons(fresh, 2))
    forced = sensitivity.ranges(fresh, force=True)
    assert forced is not None and sensitivity.ranges(fresh) is forced  # kept once forced
    pd.testing.assert_frame_equal(forced.frame, sensitivity.ranges(sample_ev).frame)
    assert forced.performance == sensitivity.ranges(sample_ev).performance


def test_cli_ranges_flag_forces_them(capsys, monkeypatch, tmp_path, bank):
    from core.cli import main

    monkeypatch.setattr(settings_mod, "PLAN", settings_mod.DEFAULT.but(ranges_max_workloads=0))
    path = tmp_path / "two.csv"
    bank[bank["workload_id"].isin(["kyc-overnight", "credit-memos"])].to_csv(path, index=False)
    assert main(["evaluate", "--workloads", str(path), "--format", "json", "--detail", "verdicts"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert all(w["verdict_range"] is None for w in plain["workloads"])
    assert main(["evaluate", "--workloads", str(path), "--format", "json", "--detail", "verdicts", "--ranges"]) == 0
    forced = json.loads(capsys.readouterr().out)
    assert [w["verdict_range"]["sensitive"] for w in forced["workloads"]] == [False, False]
    assert "performance_range" in forced["fleet"]


def test_overview_shows_the_estimate_range_and_routing_the_flag(monkeypatch, tmp_path):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from tests.test_pages_answer import APP

    monkeypatch.setenv("HANGOVER_DB", str(tmp_path / "fresh.duckdb"))
    st.cache_resource.clear()
    st.cache_data.clear()
    try:
        at = AppTest.from_file(str(APP), default_timeout=120)
        at.run()
        if not at.title or at.title[0].value != "Overview":
            at.switch_page("screens/overview.py").run()
        assert not at.exception, at.exception
        assert any(c.value.startswith("Estimate range") for c in at.caption)
        at.switch_page("screens/routing.py").run()
        assert not at.exception, at.exception
        table = at.dataframe[0].value
        assert table["sensitive"].any()
        assert any("Verdict sensitive to the" in m.value for m in at.markdown) or not table["sensitive"].iloc[0]
    finally:
        st.cache_resource.clear()
        st.cache_data.clear()


def _forks(monkeypatch) -> list[bool]:
    """Record what in_background is asked (True: fork wanted) while still running it."""
    from core import background

    asked: list[bool] = []
    real = background.in_background

    def spy(job, wanted):
        asked.append(wanted)
        return real(job, wanted)

    monkeypatch.setattr(background, "in_background", spy)
    return asked


def test_ends_planned_in_other_processes_are_the_ends_planned_in_place(catalog, bank, sample_ev, monkeypatch):
    """The pessimistic end may be planned in a forked process beside the optimistic one (from SIDE_BY_SIDE_ROWS
    workloads). Forced on the 7-workload sample, it gives the ranges and the performance range of the in-place
    computation (sample_ev, below the threshold)."""
    monkeypatch.setattr(settings_mod, "PLAN", settings_mod.DEFAULT.but(side_by_side_rows=1))
    asked = _forks(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        beside = evaluate(catalog, bank, Scenario())
        assert sensitivity.ranges(beside) is not None and asked.count(True) == 1
    pd.testing.assert_frame_equal(sensitivity.ranges(beside).frame, sensitivity.ranges(sample_ev).frame)
    assert sensitivity.ranges(beside).performance == sensitivity.ranges(sample_ev).performance
    assert contract.to_dict(beside, detail="verdicts") == contract.to_dict(sample_ev, detail="verdicts")


def test_an_end_starts_from_the_central_plan_and_is_never_dearer_than_it_re_priced(catalog, bank, sample_ev):
    """Each end's search starts from the central plan (fleet.plan_evaluation start_keys, candidates): at the
    optimistic end every pool of the central plan is at least as fast, so that plan re-priced there is a plan the
    end could choose, and the end's bill is at most its bill; the start maps every served row onto a column."""
    from core.decision.engine import _evaluate
    from core.decision.fleet import _warm_start, plan_start_keys
    from core.decision.sensitivity import _end

    start = plan_start_keys(sample_ev.plan_inputs, sample_ev.plan.assignment)
    high = _evaluate(catalog.at_efficiency_end("high"), sample_ev.workloads, sample_ev.scenario, sample_ev.rate,
                     break_even=False, checked=False)
    mapped = _warm_start(high.planner, start)
    assert mapped is not None and ((mapped >= 0) | (sample_ev.plan.assignment < 0)).all()
    re_priced = high.planner.price(mapped)
    assert re_priced.feasible
    end = _end(catalog, sample_ev.workloads, sample_ev.scenario, sample_ev.rate, "high", start)
    assert end.total_monthly_usd <= re_priced.bill + 0.005


def test_ends_skip_the_break_even_re_plan_and_plan_the_same(catalog, bank):
    """An end's evaluation skips the licensed stacks' break-even re-plan (nobody shows it): the same verdicts,
    nodes and bill as the evaluation with it, and no licensed_routes record."""
    from core.decision.engine import _evaluate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ev = evaluate(catalog, bank, Scenario(fleet_nodes=1))
        low_cat = catalog.at_efficiency_end("low")
        full = _evaluate(low_cat, ev.workloads, ev.scenario, ev.rate)
        bare = _evaluate(low_cat, ev.workloads, ev.scenario, ev.rate, break_even=False)
    assert full.fleet.licensed_routes and bare.fleet.licensed_routes == ()
    np.testing.assert_array_equal(bare.verdict, full.verdict)
    assert (bare.fleet.nodes_needed, bare.fleet.total_monthly_usd) == \
        (full.fleet.nodes_needed, full.fleet.total_monthly_usd)
    view = sensitivity.EndView.of(bare)
    import pickle

    back = pickle.loads(pickle.dumps(view))  # what a forked end sends back
    np.testing.assert_array_equal(back.verdict, full.verdict)
    assert (back.nodes_needed, back.total_monthly_usd) == (full.fleet.nodes_needed, full.fleet.total_monthly_usd)


def test_an_end_that_cannot_serve_a_workload_says_what_its_bill_leaves_out(catalog, bank):
    """code-completion kept on owned GPUs (data policy owned_only), 1,000 requests/day at a 380 ms target, no
    owned nodes: the central plan serves it on LLaDA2.0-flash; at the pessimistic end no owned route holds
    380 ms (when this was written: 330 ms had no route centrally, 340-440 ms a route centrally and none at the
    pessimistic end, 450 ms a route at both ends). That end's bill is the lower for it, so the range names the
    workload left out and its share of the central bill: exactly its attributed monthly $ in the central plan."""
    one = bank[bank["workload_id"] == "code-completion"].assign(requests_per_day=1000, latency_slo_ms=380,
                                                                 data_policy="owned_only")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ev = evaluate(catalog, one, Scenario(fleet_nodes=0))
        sensitivity.ranges(ev)
    c = int(ev.verdict[0])
    assert c >= 0 and sensitivity.ranges(ev).frame["verdict_low"].iloc[0] == ""  # the constructed case holds
    pr = sensitivity.ranges(ev).performance
    central_share = round(float(ev.a["monthly_usd"][0, c]), 2)
    assert central_share > 0
    assert (pr.dropped_pessimistic, pr.dropped_pessimistic_usd) == (1, central_share)
    assert (pr.dropped_optimistic, pr.dropped_optimistic_usd) == (0, 0.0)
    assert pr.total_monthly_usd_pessimistic < ev.fleet.total_monthly_usd  # what the words must explain
    line = sensitivity.estimate_range_words(ev)
    from core.presentation.format import money

    assert (f"The pessimistic end's bill leaves out 1 workload the central plan serves, which has no route there "
            f"({money(central_share)} a month of the central bill).") in line
    assert "optimistic end's bill leaves out" not in line and "bill includes" not in line
    assert pr.added_optimistic == pr.added_pessimistic == 0


@pytest.mark.slow
def test_the_procurement_summary_carries_both_ends_and_what_they_leave_out(sample_ev):
    """The report's headline carries the bill at each end, with the nodes and what that end serves otherwise:
    the figures are fleet.performance_range's, and the caveats the Overview's (sensitivity.end_caveats)."""
    from core.presentation.report import build_summary

    summary = build_summary(sample_ev)
    pr = sensitivity.ranges(sample_ev).performance
    for which in ("pessimistic", "optimistic"):
        word = which
        fig = summary.figure(f"range_{which}_monthly_usd")
        assert fig.value == pr.bill_at(which) and f"{word} end" in fig.label
        n = pr.nodes_at(which)
        assert fig.note.startswith(f"{n} node{'s' if n != 1 else ''} needed") and "(estimate)" in fig.note
        for clause in sensitivity.end_caveats(pr, which):
            assert f"this bill {clause}" in fig.note
    # The sample's pessimistic end serves a workload fewer (what made its bill look cheap).
    assert pr.dropped_pessimistic >= 1 and "leaves out" in summary.figure("range_pessimistic_monthly_usd").note


def test_an_end_that_could_serve_more_gives_its_figures_for_the_central_plans_work(catalog, bank):
    """code-completion kept on owned GPUs at a 330 ms target, 1,000 requests/day (no route centrally: see the test
    above), beside internal-chat (the central plan sends it to an API), no owned nodes. At the optimistic end
    LLaDA2.0-flash holds 330 ms. The range is for the same purchase: the optimistic end's nodes and bill are those
    of the central plan's work (0 nodes and internal-chat's API bill, the central bill to the cent), and serving
    code-completion too is given beside: one new node at the scenario's $33.02/node-hour x 730 h = $24,104.60,
    plus the same API bill. Before, the end's one plan served it and read 1 node against a central 0."""
    two = pd.concat([bank[bank["workload_id"] == "code-completion"].assign(
        requests_per_day=1000, latency_slo_ms=330, data_policy="owned_only"),
        bank[bank["workload_id"] == "internal-chat"]], ignore_index=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ev = evaluate(catalog, two, Scenario(fleet_nodes=0))
        rg = sensitivity.ranges(ev)
    assert ev.verdict[0] < 0 and ev.verdict[1] >= 0 and ev.fleet.nodes_needed == 0  # the constructed case holds
    assert ev.rate.usd_per_node_hour == pytest.approx(33.02)
    pr = rg.performance
    api = ev.fleet.api_monthly_usd
    assert (pr.nodes_needed_optimistic, pr.total_monthly_usd_optimistic) == (0, pytest.approx(api, abs=0.005))
    assert pr.total_monthly_usd_optimistic == pytest.approx(ev.fleet.total_monthly_usd, abs=0.005)
    assert pr.added_optimistic == 1 and pr.unserved_optimistic == pr.unserved_central == 1
    assert pr.with_added_at("optimistic") == (1, pytest.approx(33.02 * 730 + api, abs=0.01))
    assert pr.with_added_at("pessimistic") is None and pr.added_pessimistic == 0
    # The verdict ranges read the end's plan that serves it: the workload is flagged, with where it would run.
    row = _row(ev, "code-completion")
    assert row["sensitive"] and row["verdict_high"] == "owned:llada2-flash" and row["verdict_central"] == ""
    from core.presentation.format import money

    line = sensitivity.estimate_range_words(ev)
    assert "for the work the central plan serves: 0 nodes and" in line
    assert (f"The optimistic end's bill leaves out 1 workload the central plan leaves without a route and this "
            f"end could serve; serving it too takes 1 node and {money(33.02 * 730 + api)} a month.") in line
    got = json.loads(json.dumps(contract.to_dict(ev, detail="verdicts")))["fleet"]["performance_range"]
    assert (got["nodes_needed_optimistic_with_added"], got["nodes_needed_pessimistic_with_added"]) == (1, None)
    assert got["total_monthly_usd_optimistic_with_added"] == pytest.approx(33.02 * 730 + api, abs=0.01)


@pytest.mark.slow
def test_the_end_serving_more_is_the_same_with_a_workload_split_in_ten(catalog):
    """Generated 39 workloads (bench/gen.py seed 9, frozen), no owned node: the central plan needs 1 node,
    $35,006.67 a month; the optimistic end for the same work the same, and it could serve one workload more,
    which takes 1 node, $38,827.60. Splitting another workload into ten with a tenth of its traffic each changes
    none of these (the end serving more planned by moves alone from the same-work plan took 2 nodes, $59,111.27,
    once split). (The pessimistic end, a search of one start, is left out: its bill moved with the split before
    this change too.)"""
    from pathlib import Path

    inv = pd.read_csv(Path(__file__).parent / "data" / "plan" / "thirty_nine_workloads_range_split.csv")
    row = inv.loc[[0] * 10].copy()
    row["requests_per_day"] = inv.loc[0, "requests_per_day"] / 10
    row["workload_id"] = [f"w0000000-{k}" for k in range(10)]
    split = pd.concat([inv.drop(index=0), row], ignore_index=True)
    got = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for w in (inv, split):
            ev = evaluate(catalog, w, Scenario(fleet_nodes=0))
            pr = sensitivity.ranges(ev, force=True).performance
            got.append((ev.fleet.nodes_needed, round(ev.fleet.total_monthly_usd, 2), pr.nodes_needed_optimistic,
                        round(pr.total_monthly_usd_optimistic, 2), pr.added_optimistic,
                        pr.with_added_at("optimistic")))
    assert got[0] == (1, 35006.67, 1, 35006.67, 1, (1, pytest.approx(38827.60, abs=0.01)))
    assert got[1] == got[0]
