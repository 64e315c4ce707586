"""Staged purchase under the ranges (core/decision/purchase.py): hand-worked goldens, properties, the end plans."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.decision import purchase as P
from core.errors import InputError

U = P.U_GRID  # -1, -0.75, ..., 1


def _inputs(replicas, *, gpr=2, gpn=8, offline_hours=0.0, slow=(1.0, 1.0), fast=(1.0, 1.0), owned_usd=(),
            api_usd=(), owned_p95=(), slo=(), growth_grid=(1.0,), busy=None, plan_nodes=None) -> P.Inputs:
    """One route, one pool with the given replicas per (speed, growth) grid point; workloads as given."""
    reps = np.asarray(replicas, dtype=float).reshape(len(U), len(growth_grid))
    route = P.RouteRange("owned:x", "X", "x", gpr, "test assumption", slow, fast)
    pool = P.Pool(route=0, gpus_per_replica=gpr, cap=4.0, replicas=reps, offline_gpu_hours_day=offline_hours,
                  offline_min_gpus=1 if offline_hours else 0)
    W = len(owned_usd)
    central = reps[len(U) // 2, list(growth_grid).index(1.0)] * gpr
    return P.Inputs(
        routes=(route,), pools=(pool,), gpus_per_node=gpn,
        plan_nodes=int(np.ceil(central / gpn)) if plan_nodes is None else plan_nodes, owned_nodes=1,
        busy_gpus_by_hour=np.full(24, central / 2) if busy is None else np.asarray(busy, dtype=float),
        interactive_gpus=int(central), growth_grid=np.asarray(growth_grid, dtype=float),
        workload_ids=np.array([f"w{i}" for i in range(W)], dtype=object),
        owned_usd=np.asarray(owned_usd, dtype=float), owned_route=np.zeros(W, dtype=int),
        owned_p95_ms=np.asarray(owned_p95 or [np.nan] * W, dtype=float),
        slo_ms=np.asarray(slo or [np.nan] * W, dtype=float), api_usd=np.asarray(api_usd, dtype=float),
        api_label=np.array(["API"] * W, dtype=object))


def test_nodes_for_hand_worked():
    """One pool, 2 GPUs a replica, 8 GPUs a node; replicas at the 9 speed points 6,6,5,5,4,3,3,2,2.

    - u = -1 -> the first point: 6 replicas x 2 = 12 GPUs -> ceil(12 / 8) = 2 nodes;
    - u = -0.1 -> nearest point 0: 4 x 2 = 8 GPUs -> 1 node;
    - u = 0.2 -> nearest 0.25: 3 x 2 = 6 GPUs -> 1 node;
    - u = 1 -> 2 x 2 = 4 GPUs -> 1 node.
    Batch work, 40 GPU-hours a day at speed 1 (slow = fast = 1): busy is 4 GPUs every hour at the central
    point (half of its 8), scaled by GPUs / 8. At u = -1: 2 nodes = 16 GPUs x 24 h = 384 GPU-hours, busy
    4 x 12/8 = 6 an hour = 144, idle 240 >= 40 -> no extra node. At u = 1: 1 node, 192 GPU-hours, busy
    4 x 4/8 = 2 an hour = 48, idle 144 >= 40 -> 1 node. With 200 GPU-hours a day at u = 1: 200 - 144 = 56
    beyond the idle hours -> ceil(56 / (24 x 8)) = 1 extra node -> 2.
    """
    inp = _inputs([6, 6, 5, 5, 4, 3, 3, 2, 2], offline_hours=40.0)
    u = np.array([[-1.0], [-0.1], [0.2], [1.0]])
    assert P.nodes_for(inp, u, np.ones(4)).tolist() == [2, 1, 1, 1]
    heavy = _inputs([6, 6, 5, 5, 4, 3, 3, 2, 2], offline_hours=200.0)
    assert P.nodes_for(heavy, np.array([[1.0]]), np.ones(1)).tolist() == [2]


def test_buy_now_and_percentiles_hand_worked():
    """100 draws: 5 need 1 node, 85 need 2, 10 need 3.

    buy_now at 90 %: 2 is needed in 95 draws (>= 90), 3 in only 10 -> 2. Percentiles (a node count some draw
    needed, the smallest with at least q of the draws at or below it): p10: 5 % at or below 1, 90 % at or
    below 2 -> 2; p50 -> 2; p90: 90 % at or below 2 -> 2. At 95 %: 2 is needed in 95 draws -> 2; at 96 %: only
    1 is needed in 96 or more -> 1.
    """
    nodes = np.array([1] * 5 + [2] * 85 + [3] * 10)
    rng = np.random.default_rng(1)
    rng.shuffle(nodes)
    assert P.buy_now(nodes, 0.9) == 2
    assert [P.percentile(nodes, q) for q in (0.1, 0.5, 0.9)] == [2, 2, 2]
    assert P.buy_now(nodes, 0.95) == 2 and P.buy_now(nodes, 0.96) == 1


def test_owned_beats_api_hand_worked():
    """Speeds are exactly 1 (slow = fast = 1), so only the prices move: node price x [0.9, 1.1], API x [0.8, 1.2].

    - w0: owned $100 against API $150: owned at most $110, API at least $120 -> owned wins every draw: P = 1;
    - w1: owned $200 against API $100: owned at least $180, API at most $120 -> P = 0;
    - w2: owned $100 against API $1,000 but its p95 alone 600 ms over a 500 ms target -> it cannot run owned: 0;
    - w3: no allowed API (NaN) -> None.
    """
    inp = _inputs([4] * 9, owned_usd=[100, 200, 100, 100], api_usd=[150, 100, 1000, np.nan],
                  owned_p95=[100, 100, 600, 100], slo=[500, 500, 500, 500])
    p = P.simulate(inp, P.PurchaseSettings(draws=500, seed=7))
    got = {r["workload_id"]: r["p_owned_beats_api"] for r in p.owned_beats_api}
    assert got == {"w0": 1.0, "w1": 0.0, "w2": 0.0, "w3": None}
    assert list(P.owned_vs_api_frame(p)["workload_id"]) == ["w0", "w1", "w2"]


def test_simulate_hand_worked_spread_and_what_to_measure():
    """Replicas 8,8,6,6,4,4,4,2,2 (2 GPUs each, 8 a node): the points -1 .. -0.25 hold 16 or 12 GPUs -> 2 nodes;
    central 4 replicas -> 1 node; optimistic side 1 node. Triangular draws on [-1, 1]: a draw is nearest to one
    of -1 .. -0.25 when u < -0.125, P = 0.875^2 / 2 = 0.383 -> about 38 % of draws need 2 nodes, the rest 1.
    So buy_now (90 %) = 1 (2 is needed in only 38 %), p50 = 1 (62 % at or below 1), p90 = 2; the route's range
    alone moves the need by 1 node, and it is the one to measure."""
    inp = _inputs([8, 8, 6, 6, 4, 4, 4, 2, 2])
    p = P.simulate(inp, P.PurchaseSettings(draws=4000, seed=11))
    assert (p.buy_now_nodes, p.nodes_p50, p.nodes_p90) == (1, 1, 2)
    share_two = float(np.mean(p.nodes == 2))
    assert abs(share_two - 0.383) < 0.03
    assert p.measure_route_id == "owned:x" and p.measure_spread_nodes == 1
    assert "hangover bench import" in p.measure_what and "concurrency 4" in p.measure_what
    words = P.purchase_words(p)
    assert words.startswith("Buy no node now: 1 node is needed in at least 90% of 4,000 draws")
    assert "Hold up to 1 node more until X is measured" in words and p.hold_nodes == 1
    # Owning 2 nodes covers the 90th percentile: nothing to hold.
    two = P.simulate(dataclasses.replace(inp, owned_nodes=2), P.PurchaseSettings(draws=4000, seed=11))
    assert two.hold_nodes == 0 and "no second purchase" in P.purchase_words(two)


def test_same_seed_same_answer_other_seed_other_draws():
    inp = _inputs([8, 8, 6, 6, 4, 4, 4, 2, 2], owned_usd=[100], api_usd=[105])
    a = P.simulate(inp, P.PurchaseSettings(draws=300, seed=5))
    b = P.simulate(inp, P.PurchaseSettings(draws=300, seed=5))
    c = P.simulate(inp, P.PurchaseSettings(draws=300, seed=6))
    assert np.array_equal(a.nodes, b.nodes) and a.owned_beats_api == b.owned_beats_api
    assert P.purchase_json(a) == P.purchase_json(b)
    assert not np.array_equal(a.nodes, c.nodes)


def test_growth_grid_and_draws_use_it():
    """Growth 0-100 %: the pool is sized at growth 1, 1.5 and 2 (and 1.0, the plan); all replicas double with
    growth here, so the central speed at growth 2 needs 8 replicas = 16 GPUs = 2 nodes."""
    assert P.growth_grid((0.0, 1.0)).tolist() == [1.0, 1.5, 2.0]
    assert P.growth_grid((0.1, 0.3)).tolist() == pytest.approx([1.0, 1.1, 1.2, 1.3])
    reps = np.array([[4, 6, 8]] * 9)
    inp = _inputs(reps, growth_grid=(1.0, 1.5, 2.0))
    assert P.nodes_for(inp, np.zeros((3, 1)), np.array([1.0, 1.6, 2.0])).tolist() == [1, 2, 2]


@pytest.mark.parametrize("text, want", [("20%", (0.2, 0.2)), ("10-30%", (0.1, 0.3)), ("10%..30%", (0.1, 0.3)),
                                        ("0.1-0.3", (0.1, 0.3)), ("-10-20%", (-0.1, 0.2)), ("0", (0.0, 0.0))])
def test_parse_growth(text, want):
    assert P.parse_growth(text) == pytest.approx(want)


@pytest.mark.parametrize("text", ["abc", "30-10%", "2000%", ""])
def test_parse_growth_refuses(text):
    with pytest.raises(InputError):
        P.parse_growth(text)


@settings(max_examples=60, deadline=None)
@given(nodes=st.lists(st.integers(0, 40), min_size=1, max_size=300),
       q=st.floats(0.501, 0.99))
def test_buy_now_le_p50_le_p90_and_needed_in_q(nodes, q):
    arr = np.array(nodes)
    now = P.buy_now(arr, q)
    assert now <= P.percentile(arr, 0.5) <= P.percentile(arr, 0.9)
    assert np.sum(arr >= now) >= q * len(arr) - 1e-9  # needed in at least q of the draws
    assert np.sum(arr >= now + 1) < q * len(arr)  # and the most such


@settings(max_examples=25, deadline=None)
@given(reps=st.lists(st.integers(0, 30), min_size=9, max_size=9), seed=st.integers(0, 10_000),
       draws=st.integers(1, 400), q=st.floats(0.55, 0.99), gpr=st.sampled_from([1, 2, 4, 8]))
def test_simulate_orders_its_figures(reps, seed, draws, q, gpr):
    p = P.simulate(_inputs(reps, gpr=gpr), P.PurchaseSettings(draws=draws, seed=seed, quantile=q))
    assert p.buy_now_nodes <= p.nodes_p50 <= p.nodes_p90
    assert p.nodes_p10 <= p.nodes_p50 and p.buy_now_new_nodes == max(p.buy_now_nodes - 1, 0)
    assert sum(p.histogram().values()) == draws


def test_settings_refuse_bad_values():
    for kw in ({"draws": 0}, {"quantile": 0.5}, {"quantile": 1.0}, {"growth": (0.3, 0.1)}):
        with pytest.raises(ValueError):
            P.PurchaseSettings(**kw)


# -- on the bundled sample ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample_ev(tmp_path_factory):
    from core.service import evaluate_store, make_scenario
    from core.store import Store

    store = Store(tmp_path_factory.mktemp("purchase") / "s.duckdb")
    return evaluate_store(store, make_scenario())


@pytest.mark.slow
def test_sample_grid_lands_on_the_plan_and_near_the_end_plans(sample_ev):
    """The central draw is the plan (no shift needed); all routes at the optimistic end land within one node of the
    end plan (which re-plans everything; the draws re-size the plan's pools only). The pessimistic end plan may
    serve less: on the sample it leaves lc-clearing unserved and needs 4 nodes, as does the draw that keeps every
    pool (LLaDA2.0-flash's latency-bound pool at the slow end); they agree within a node for certain only where the
    end plan drops nothing (model v3.1: the end plan dropped 2 and needed 1 node, the draw 11; v3.2 before BF16
    prefill reached its larger share of peak: 5 and 5)."""
    from core.decision.sensitivity import ranges

    ev = sample_ev
    inp = P.inputs_of(ev)
    R = len(inp.routes)
    assert int(P.nodes_for(inp, np.zeros((1, R)), np.ones(1))[0]) == ev.fleet.nodes_needed
    pr = ranges(ev).performance
    pess = int(P.nodes_for(inp, -np.ones((1, R)), np.ones(1))[0])
    opt = int(P.nodes_for(inp, np.ones((1, R)), np.ones(1))[0])
    if pr.dropped_pessimistic == 0:
        assert abs(pess - pr.nodes_needed_pessimistic) <= 1, (pess, pr)
    else:
        assert (pess, pr.nodes_needed_pessimistic, pr.dropped_pessimistic) == (4, 4, 1)
    assert abs(opt - pr.nodes_needed_optimistic) <= 1, (opt, pr)
    assert opt <= ev.fleet.nodes_needed <= pess


@pytest.mark.slow
def test_sample_purchase_json_and_words(sample_ev):
    p = P.purchase(sample_ev)
    js = P.purchase_json(p)
    assert {"buy_now_nodes", "nodes_p10", "nodes_p50", "nodes_p90", "draws", "seed"} <= set(js)
    assert js["draws"] == 1000 and js["seed"] == 0
    assert js["buy_now_nodes"] <= js["nodes_p50"] <= js["nodes_p90"]
    assert js["buy_now_nodes"] <= sample_ev.fleet.nodes_needed  # the plan's 3 is not needed in 90 % of draws
    assert js["measure"]["route_id"] == "owned:llada2-flash"  # the sample's only interactive pool
    assert P.purchase(sample_ev) is p  # kept in the evaluation's answers
    json.dumps(js)


@pytest.mark.slow
def test_cli_evaluate_shows_the_purchase(tmp_path, capsys):
    from core.cli import main

    db = str(tmp_path / "c.duckdb")
    assert main(["--db", db, "evaluate", "--format", "json", "--detail", "verdicts", "--purchase-draws", "200",
                 "--seed", "4", "--growth", "10-30%"]) == 0
    first = json.loads(capsys.readouterr().out)["fleet"]["purchase"]
    assert (first["draws"], first["seed"], first["growth"]) == (200, 4, [0.1, 0.3])
    assert main(["--db", db, "evaluate", "--format", "json", "--detail", "verdicts", "--purchase-draws", "200",
                 "--seed", "4", "--growth", "10-30%"]) == 0
    assert json.loads(capsys.readouterr().out)["fleet"]["purchase"] == first
    assert main(["--db", db, "evaluate", "--growth", "lots"]) == 2
    assert "growth is a share or range" in capsys.readouterr().err
    assert main(["--db", db, "evaluate"]) == 0
    assert "Buy " in capsys.readouterr().out


@pytest.mark.slow
def test_report_section_reads_the_purchase(sample_ev):
    from core.presentation.report.buying import purchase_table as _purchase

    p = P.purchase(sample_ev)
    table = _purchase(sample_ev)
    by = {r["figure"]: r["value"] for r in table.rows}
    assert by["Buy now, nodes beyond those owned"] == p.buy_now_new_nodes
    assert by["Hold until measured, up to"] == p.nodes_p90 - max(p.buy_now_nodes, p.owned_nodes)
    assert (by["Nodes needed, 10th percentile"], by["Nodes needed, 90th percentile"]) == (p.nodes_p10, p.nodes_p90)
    assert table.note.startswith(f"Buy {p.buy_now_new_nodes} node")


@pytest.mark.parametrize("typed, reads", [("1.5", "1.5%"), ("40%", "40.0%"), ("100", "100.0%")])
def test_buy_quantile_refusal_echoes_what_was_typed(typed, reads):
    """'1.5' is read as 1.5 % (a number above 1 is a percent); the refusal names the flag, the text typed
    and what it read as, so nobody is told they wrote 0.015."""
    import argparse

    from core.commands.evaluate import purchase_settings

    args = argparse.Namespace(purchase_draws=None, seed=None, buy_quantile=typed, growth=None)
    with pytest.raises(InputError) as err:
        purchase_settings(args)
    assert f"--buy-quantile: {typed!r} reads as {reads}" in str(err.value)
    ok = argparse.Namespace(purchase_draws=None, seed=None, buy_quantile="95", growth=None)
    assert purchase_settings(ok).quantile == pytest.approx(0.95)


@pytest.mark.slow
def test_a_switch_is_the_plan_repriced_with_the_workload_on_the_other_side(sample_ev):
    """The sample's internal-chat runs on Google gemini-2.0-flash at $233.83 a month; its share of an owned route
    never beats that (P = 0). Switched alone onto its owned route it needs a node of its own: the cash bill rises
    by 33.02 x 730 - 233.83 = 24,104.60 - 233.83 = $23,870.77 a month. Both say keep it on the API. The report
    names the switch beside the chance, in words."""
    from core.presentation.report.buying import purchase_table

    p = P.purchase(sample_ev)
    (row,) = [r for r in p.owned_beats_api if r["workload_id"] == "internal-chat"]
    assert row["p_owned_beats_api"] == 0.0 and row["api"] == "Google gemini-2.0-flash (API)"
    assert row["switch_usd_per_month"] == pytest.approx(33.02 * 730 - 233.83, abs=0.01)
    frame = P.owned_vs_api_frame(p)
    assert frame.set_index("workload_id").loc["internal-chat", "switch_usd_per_month"] == pytest.approx(23870.77)
    notes = {r["figure"]: r["note"] for r in purchase_table(sample_ev).rows}
    note = notes["Chance its owned share beats Google gemini-2.0-flash (API): internal-chat"]
    assert note.endswith("; on the API now, moving it alone to owned GPUs raises the cash bill by $23,871/month "
                         "(exact, central plan)")
    assert frame.set_index("workload_id").loc["internal-chat", "runs_on"] == "the API"


@pytest.mark.slow
def test_no_single_switch_lowers_a_searched_plans_bill(catalog):
    """20 generated workloads (bench/gen.py seed 20, frozen), no owned node. The search ends where no single move
    lowers the bill (every move of every row is priced each pass below 400 workloads), so every priced switch is
    >= 0; and each is the plan re-priced with that one workload on the other side (a pricer of its own)."""
    from pathlib import Path

    import pandas as pd

    from core.decision.engine import evaluate
    from core.decision.pricing import Pricer
    from core.models import Scenario

    inv = pd.read_csv(Path(__file__).parent / "data" / "plan" / "twenty_workloads_pools_need_the_nodes.csv")
    ev = evaluate(catalog, inv, Scenario(fleet_nodes=0))
    p = P.purchase(ev)
    priced = [r for r in p.owned_beats_api if r["switch_usd_per_month"] is not None]
    assert len(priced) >= 5
    assert all(r["switch_usd_per_month"] >= -0.005 for r in priced)
    ids = list(ev.workloads["workload_id"])
    inp, pricer = ev.plan_inputs, Pricer(ev.plan_inputs)
    owned_cols = {o.index for o in inp.owned}
    checked = 0
    for r in priced:
        i = ids.index(r["workload_id"])
        here = int(ev.plan.assignment[i])
        if here in owned_cols:  # owned -> the API the row names
            (k,) = [k for k, rt in enumerate(ev.routes) if rt.label == r["api"]]
            (col,) = np.flatnonzero((inp.col_route == k) & inp.allowed[i])
            moved = ev.plan.assignment.copy()
            moved[i] = col
            assert pricer.price(moved).bill - ev.plan.bill == pytest.approx(r["switch_usd_per_month"], abs=0.01)
            checked += 1
    assert checked >= 3


@pytest.mark.slow
def test_a_switch_through_a_pool_the_check_raised_is_not_priced(catalog, monkeypatch):
    """95 generated workloads (bench/gen.py seed 1082, frozen), 2 owned nodes, APIs x 1.5, the check's repair off:
    the simulation check adds a replica to the Qwen3-235B-A22B x4 pool (tests/test_plan.py). That raise belongs to
    the pool's sizing with its members as they are: a workload switched into or out of it is re-priced without
    the raise, a saving that is not there (one such switch read -$931.61 a month). Those are not priced; the
    other switches are, and may be negative here, where the plan was not searched again after the raise (cash a
    finer search would save, said as such)."""
    from pathlib import Path

    import pandas as pd

    from core.decision import closeloop
    from core.decision import settings as settings_mod
    from core.decision.engine import evaluate
    from core.decision.settings import DEFAULT
    from core.models import Scenario

    monkeypatch.setattr(settings_mod, "PLAN", DEFAULT.but(close_loop_repairs=0))
    inv = pd.read_csv(Path(__file__).parent / "data" / "plan" / "ninety_five_workloads_repaired_check.csv")
    ev = evaluate(catalog, inv, Scenario(fleet_nodes=2, api_price_scale=1.5))
    (raised,) = [d for d in ev.fleet.deployments if d.replicas_added_by_simulation]
    assert (raised.route_id, raised.gpus_per_replica, raised.replicas_added_by_simulation) == \
        ("owned:qwen3-235b-a22b-fp8", 4, 1)
    guarded = P.inputs_of(ev).switch_usd
    ids = list(ev.workloads["workload_id"])
    assert all(not np.isfinite(guarded[ids.index(w)]) for w in raised.workloads)
    monkeypatch.setattr(closeloop, "added_by_check", lambda *a, **k: {})
    unguarded = P.inputs_of(ev).switch_usd
    through = [ids[i] for i in range(len(ids)) if np.isfinite(unguarded[i]) and not np.isfinite(guarded[i])]
    assert through and min(unguarded[ids.index(w)] for w in through) < -100  # the raise's replica, dropped
    both = np.isfinite(guarded)
    assert both.sum() >= 20 and np.array_equal(guarded[both], unguarded[both])
