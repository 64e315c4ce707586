"""Why each node: a pool's why-figures and words (core.decision.why, explain), the nodes a workload forces, and the
report naming as forcing only what forces."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.decision import explain
from core.decision.engine import evaluate
from core.decision.latency import block_tokens_of, service_p95_alone_ms
from core.models import Scenario
from core.presentation.report.content import _driver_words


@pytest.fixture(scope="module")
def sample(catalog, bank):
    return evaluate(catalog, bank, Scenario())


def _pool(ev, route_id, tier=None):
    (dep,) = [d for d in ev.fleet.deployments if d.route_id == route_id and tier in (None, d.tier)]
    return dep


def test_sample_pool_why_figures_by_hand(sample):
    """The sample's LLaDA2.0-flash latency tier (lc-clearing 3,000 ms and code-completion 500 ms; 3 replicas,
    cap 4).

    Peak rate = requests_per_day x peak_factor / 86,400 per member:
      code-completion 200,000 x 4.0 / 86,400 = 9.259259 req/s
      lc-clearing       6,000 x 2.5 / 86,400 = 0.173611 req/s      sum 9.432870 req/s.
    Slots = 3 replicas x cap 4 = 12. In flight = sum of rate x mean service (Little's law), from the sizing.
    lc-clearing's service p95 alone is 2,479 ms of its 3,000 ms target at batch 1 and over it at batch 2, so each
    replica may hold 1 of its requests: ceil(1.98 in flight / 1) = 2 replicas for the load; the plan's third keeps
    the queue short enough at the peak.
    """
    dep = _pool(sample, "owned:llada2-flash")
    y = dep.why
    assert y is not None and dep.replicas == 3 and dep.concurrency_cap == 4
    assert set(dep.workloads) == {"lc-clearing", "code-completion"}
    assert y.peak_requests_per_s == pytest.approx(200000 * 4.0 / 86400 + 6000 * 2.5 / 86400, rel=1e-12)
    assert y.slots == 12
    (d,) = [s for s in sample.plan.sizes.values() if s.feasible and s.replicas == 3]
    lam = sample.plan_inputs.lam_peak[d.rows] * d.shares
    assert y.requests_in_flight_at_peak == pytest.approx(float((lam * d.service_s).sum()), rel=1e-12)
    assert 1.9 < y.requests_in_flight_at_peak < 2.0
    assert y.binding_workload == "lc-clearing" and y.latency_slo_ms == 3000.0
    assert y.requests_per_replica_within_target == 1
    assert y.replicas_for_load == math.ceil(y.requests_in_flight_at_peak / 1) == 2
    # p95 alone, recomputed from the route's service curve: within target at batch 1, over it at batch 2.
    inp = sample.plan_inputs
    row = np.array([list(inp.workload_ids).index("lc-clearing")])
    (route,) = [o for o in inp.owned if o.index == int(sample.plan.assignment[row[0]])]
    p95 = service_p95_alone_ms(np.asarray(route.service_s[row], dtype=float), route.prefill_ms[row],
                               inp.output_tokens[row], inp.output_p95_tokens[row],
                               block_tokens_of(route.stack))[0, 0]
    assert y.p95_alone_ms == pytest.approx(p95[0], rel=1e-9)
    assert p95[0] <= 3000.0 < p95[1]


def test_sample_pool_why_words(sample):
    """The words carry the figures: 3 replicas x 4 = 12 slots, 9.43 req/s, 2.0 in flight, 1 each -> 2 replicas,
    the third for the queue."""
    text = explain.deployment_why_words(_pool(sample, "owned:llada2-flash"))
    for part in ("3 replicas × up to 4 requests = 12 slots", "9.43 requests/s at peak", "about 2.0 in flight",
                 "lc-clearing, takes 2.5 s alone", "82% of its 3.0 s target",
                 "may hold only 1 request at once", "at 1 each need 2 replicas",
                 "the other 1 keep the queue short enough"):
        assert part in text, (part, text)
    # A batch-only deployment has no why-figures and no words.
    assert _pool(sample, "owned:qwen3-30b-a3b-fp8").why is None
    assert explain.deployment_why_words(_pool(sample, "owned:qwen3-30b-a3b-fp8")) == ""


def test_nodes_forced_is_the_plan_priced_without_the_workload(sample):
    """Sample: 3 nodes. Without code-completion the pool carries lc-clearing alone on 1 node: 2 fewer; without
    lc-clearing code-completion needs 2: 1 fewer; kyc-overnight fills hours bought anyway: 0."""
    forced = {d.workload_id: d.nodes_forced for d in sample.fleet.node_drivers}
    assert forced == {"code-completion": 2, "lc-clearing": 1, "kyc-overnight": 0}
    ids = list(sample.plan_inputs.workload_ids)
    for wid, n in forced.items():
        moved = sample.plan.assignment.copy()
        moved[ids.index(wid)] = -1
        assert sample.planner.price(moved).nodes_needed == sample.fleet.nodes_needed - n


def test_batch_work_forcing_no_node_is_not_named_as_forcing(sample):
    """The report's "What forces it" names code-completion and lc-clearing, never kyc-overnight (0 nodes, $0)."""
    kyc = [d for d in sample.fleet.node_drivers if d.workload_id == "kyc-overnight"]
    assert kyc and kyc[0].nodes_forced == 0 and kyc[0].batch_window_hours == 8.0
    words = _driver_words(sample.fleet)
    assert "kyc-overnight" not in words and "window" not in words
    assert "code-completion (its 500 ms target; 2 nodes fewer without it)" in words
    assert "lc-clearing (its 3,000 ms target; 1 node fewer without it)" in words
    assert explain.forced_words(sample, ids_index(sample, "kyc-overnight")).startswith(
        "Without it the plan would need no node fewer")


def ids_index(ev, wid: str) -> int:
    return list(ev.workloads["workload_id"]).index(wid)


@pytest.mark.slow
def test_fleet_page_says_why_each_pool_and_what_each_workload_forces(app_pages):
    """Fleet sizing (AppTest, bundled sample): the pool's why sentence, and the drivers table's nodes forced."""
    at = app_pages("screens/fleet.py")
    text = [m.value for m in at.markdown]
    assert any("Why each interactive pool" in t for t in text)
    assert any("12 slots for 9.43 requests/s at peak" in t and "at 1 each need 2 replicas" in t for t in text)
    drivers = [t.value for t in at.table if {"Workload", "Nodes it forces"} <= set(t.value.columns)]
    assert drivers, "the node drivers table has a 'Nodes it forces' column"
    forced = dict(zip(drivers[0]["Workload"], drivers[0]["Nodes it forces"], strict=False))
    assert forced["code-completion"] == "2" and forced["lc-clearing"] == "1" and forced["kyc-overnight"] == "0"
    # The pools that need the new nodes: LLaDA2.0-flash's latency tier holds 24 GPUs (3 replicas x 8) for two
    # workloads; code-completion has no route off the stack (owned-only data, a 500 ms target only it meets).
    (pools,) = [t.value for t in at.table if "Its workloads on their next-best routes" in t.value.columns]
    row = pools[pools["Pool"].str.startswith("LLaDA2.0-flash")].iloc[0]
    assert (row["GPUs"], row["Workloads"], row["Nodes it forces"]) == ("24", "2", "2")
    assert row["Its workloads on their next-best routes"] == "1 of its 2 workloads has no other route"


@pytest.mark.slow
def test_routing_page_says_why_for_a_pooled_workload(app_pages):
    """Routing (AppTest): code-completion's reasons carry its pool's why and the 2 nodes it forces."""
    at = app_pages("screens/routing.py", select="code-completion")
    text = "\n".join(m.value for m in at.markdown)
    assert "Why: " in "\n".join(h.value for h in at.subheader)
    assert "at 1 each need 2 replicas" in text
    assert "Without it the plan would need 2 nodes fewer" in text


@pytest.fixture
def app_pages(monkeypatch, tmp_path):
    """Open one page of the app on a fresh store (the bundled sample); select= picks a routing table row."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from tests.apptest_support import sweep_on_demand
    from tests.test_pages_answer import APP

    sweep_on_demand(monkeypatch)  # the pages' why sentences, not the Fleet page's SLA sweep
    monkeypatch.setenv("HANGOVER_DB", str(tmp_path / "fresh.duckdb"))
    st.cache_resource.clear()
    st.cache_data.clear()

    def open_page(page: str, select: str | None = None) -> AppTest:
        at = AppTest.from_file(str(APP), default_timeout=120)
        at.run()
        at.switch_page(page).run()
        assert not at.exception, at.exception
        if select is not None:
            ids = list(at.dataframe[0].value["workload_id"])
            at.session_state["routing_table"] = {"selection": {"rows": [ids.index(select)], "columns": []}}
            at.run()
            assert not at.exception, at.exception
        return at

    yield open_page
    st.cache_resource.clear()
    st.cache_data.clear()


def test_words_of_the_issue_payments_pool():
    """The issue's payments agent: 5 replicas x cap 128 = 640 slots for 5.2 req/s, ~12.1 in flight; its 800 ms
    target against 690 ms alone (690 / 800 = 86 %) lets a replica hold 3: ceil(12.1 / 3) = 5 replicas, the pool's 5.
    At 2 a replica the load would need ceil(12.1 / 2) = 7, more than the 5 it runs: the words say why."""
    from core.decision.records import Deployment, DeploymentWhy

    def pool(per_replica: int, for_load: int, added: int = 0) -> Deployment:
        why = DeploymentWhy("payments-agent", 800.0, 690.0, per_replica, 640, 5.2, 12.1, for_load)
        return Deployment("owned:l70", "Llama 3.3 70B (FP8)", "autoregressive", ("payments-agent",), (), 8,
                          "throughput tier", 128, 5, 40, 0.0, 0, 40, 5, 0.0, why, added)

    text = explain.deployment_why_words(pool(3, math.ceil(12.1 / 3)))
    assert text == ("Llama 3.3 70B (FP8) (throughput tier): 5 replicas × up to 128 requests = 640 slots for 5.20 "
                    "requests/s at peak, about 12.1 in flight. Its binding member, payments-agent, takes 690 ms alone "
                    "(p95; 86% of its 800 ms target), so each replica may hold only 3 requests at once and still meet "
                    "it: 12.1 in flight at 3 each need 5 replicas (rounded up) before any margin for queueing.")
    more = explain.deployment_why_words(pool(2, math.ceil(12.1 / 2), added=1))
    assert "at 2 each need 7 replicas" in more and "it runs 5, as most requests finish well inside the p95" in more
    assert more.endswith("1 replica of these was added by the plan's simulation check: as sized on the latency "
                         "model, a member held under its target share in the simulated peak hour, by more than the run's noise.")


def test_best_relaxation_never_offers_a_change_that_costs_more():
    """A move to an API dearer than the node share it frees 'saves' -$234: that is no saving, and the CLI
    printed it as one ("move to … saves -$234/month"). Only a relaxation saving at least a cent is best."""
    from core.decision.records import NodeDriver, Relaxation

    dearer = Relaxation("move to an API", "to_api", -234.0, 2)
    wider = Relaxation("target × 2", "target_x2", 120.5, 2)
    none = Relaxation("smallest target", "smallest_target", None, None)
    d = NodeDriver("w", "r", "route", 1, 500.0, None, 100.0, (dearer, none))
    assert d.best_relaxation() is None
    assert NodeDriver("w", "r", "route", 1, 500.0, None, 100.0, (dearer, wider, none)).best_relaxation() is wider


def _pool_driver(**kw):
    from core.decision.records import PoolDriver

    base = dict(route_id="owned:x", route="X (throughput tier)", gpus_per_replica=4, gpus=8.0, workloads=7,
                nodes_forced=1, elsewhere_usd_per_month=49251.42, elsewhere_nodes_needed=5, elsewhere_unserved=0)
    return PoolDriver(**{**base, **kw})


def test_pool_words_say_what_the_alternative_costs_and_never_hide_a_cheaper_one():
    """A pool's words: its size, the nodes it forces, and its workloads off its stack: dearer by so much, the same,
    cheaper (a plan the search missed: said, not hidden), or with workloads that have nowhere else to go (no bill:
    theirs would leave the bill)."""
    assert explain.pool_driver_words(_pool_driver()) == (
        "X (throughput tier) on 4 GPUs a replica (8 GPUs, 7 workloads): 1 node fewer without it; its workloads on "
        "their next-best routes: +$49,251 a month (5 nodes)")
    assert explain.pool_elsewhere_words(_pool_driver(elsewhere_usd_per_month=0.0, elsewhere_nodes_needed=2)) == \
        "$0 a month (2 nodes)"
    assert explain.pool_elsewhere_words(_pool_driver(elsewhere_usd_per_month=-1893.4, elsewhere_nodes_needed=2)) == \
        "$1,893 a month less (2 nodes): a cheaper plan the search missed"
    assert explain.pool_elsewhere_words(_pool_driver(elsewhere_usd_per_month=None, elsewhere_nodes_needed=None,
                                                     elsewhere_unserved=5)) == \
        "5 of its 7 workloads have no other route"
    words = explain.pool_driver_words(_pool_driver(gpus=0.5, workloads=1, nodes_forced=0, elsewhere_unserved=1,
                                                   elsewhere_usd_per_month=None, elsewhere_nodes_needed=None))
    assert words == ("X (throughput tier) on 4 GPUs a replica (0.5 GPUs, 1 workload): no node fewer without it; "
                     "its one workload has no other route")
    assert explain.pool_elsewhere_words(_pool_driver(elsewhere_usd_per_month=None, elsewhere_nodes_needed=None,
                                                     elsewhere_unserved=7)) == \
        "none of its 7 workloads has another route"


@pytest.mark.slow
def test_where_no_workload_forces_a_node_the_pools_that_do_are_priced_exactly(catalog):
    """20 generated workloads (bench/gen.py seed 20, frozen), no owned node: 2 nodes, $54,946.26 a month
    (2 x 33.02 x 730 = $48,209.20 of nodes + $6,737.06 of APIs). Every workload driver's nodes_forced is 0: one
    member fewer frees no replica. The pools do: the LLaDA 8B latency tier (1 replica of 8 GPUs, 6 workloads) and
    the Qwen3-30B-A3B throughput tier (1 replica of 1 GPU, 5 workloads) each leave 1 node without their members
    (8 + 1 interactive GPUs need 2 nodes; 8 or 1 fit 1). The Qwen3-30B pool's members on their next-best routes
    off its stack need a third node and no more API spend (two of them may not leave owned hardware): the bill
    rises by exactly one node-month, 33.02 x 730 = $24,104.60. One LLaDA 8B member (a 787 ms target) has no
    route off its stack, so that alternative is not priced."""
    from pathlib import Path

    import pandas as pd

    from core.decision.pricing import Pricer

    inv = pd.read_csv(Path(__file__).parent / "data" / "plan" / "twenty_workloads_pools_need_the_nodes.csv")
    ev = evaluate(catalog, inv, Scenario(fleet_nodes=0))
    f = ev.fleet
    assert f.nodes_needed == 2 and f.total_monthly_usd == pytest.approx(2 * 33.02 * 730 + 6737.06, abs=0.01)
    assert f.node_drivers and not any(d.nodes_forced for d in f.node_drivers)
    pools = {p.route: p for p in f.pool_drivers}
    llada = pools["LLaDA 8B Instruct (diffusion; Fast-dLLM parallel decoding) (latency tier)"]
    qwen = pools["Qwen3-30B-A3B (MoE; FP8) (throughput tier)"]
    assert (llada.gpus, llada.workloads, llada.nodes_forced, llada.elsewhere_unserved) == (8.0, 6, 1, 1)
    assert llada.elsewhere_usd_per_month is None and llada.elsewhere_nodes_needed is None
    assert (qwen.gpus, qwen.workloads, qwen.nodes_forced, qwen.elsewhere_unserved) == (1.0, 5, 1, 0)
    assert qwen.elsewhere_usd_per_month == pytest.approx(33.02 * 730, abs=0.01) and qwen.elsewhere_nodes_needed == 3
    # nodes_forced is the plan re-priced without the pool's members (a pricer of its own on the plan's inputs).
    (dep,) = [d for d in f.deployments if d.label.startswith("Qwen3-30B") and d.replicas]
    without = ev.plan.assignment.copy()
    without[inv["workload_id"].isin(dep.workloads).to_numpy()] = -1
    assert Pricer(ev.plan_inputs).price(without).nodes_needed == f.nodes_needed - qwen.nodes_forced
    # The report's buy line and the CLI's summary say so where the workload drivers cannot.
    words = _driver_words(f)
    assert words.startswith(" No single workload forces the new nodes; these pools do: ")
    assert "LLaDA 8B Instruct" in words and "1 of its 6 workloads has no other route" in words
    assert "its workloads on their next-best routes: +$24,105 a month (3 nodes)" in words


@pytest.mark.slow
def test_overview_sets_a_workloads_share_beside_the_cash_its_switch_moves(app_pages):
    """Overview (AppTest, bundled sample): the staged purchase's owned-against-API table names what its chance
    compares (a share) and, beside it, where the plan runs internal-chat and the cash bill change of switching it
    alone: on the API at $233.83, onto owned GPUs it needs a node, +24,104.60 - 233.83 = +$23,871 a month."""
    at = app_pages("screens/overview.py")
    (table,) = [d.value for d in at.dataframe if "switch_usd_per_month" in d.value.columns]
    row = table.set_index("workload_id").loc["internal-chat"]
    assert (row["runs_on"], row["switch_usd_per_month"]) == ("the API", "+$23,871")
    assert row["p_owned_beats_api"] == 0.0


@pytest.mark.slow
def test_a_driver_in_a_pool_the_check_raised_has_no_priced_what_ifs(catalog, monkeypatch):
    """95 generated workloads (bench/gen.py seed 1082, frozen), 2 owned nodes, APIs x 1.5, the check's repair off:
    the check adds a replica to the Qwen3-235B-A22B x4 pool, so the plan buys a third node. A node driver in that
    pool re-priced without a member, with a looser target or on an API would be sized without the raise: its
    nodes forced and savings are not priced (None), and the report's moves say a move through it is not priced."""
    from pathlib import Path

    import pandas as pd

    from core.decision import settings as settings_mod
    from core.decision.settings import DEFAULT
    from core.presentation.report.content import _moves

    monkeypatch.setattr(settings_mod, "PLAN", DEFAULT.but(close_loop_repairs=0))
    inv = pd.read_csv(Path(__file__).parent / "data" / "plan" / "ninety_five_workloads_repaired_check.csv")
    ev = evaluate(catalog, inv, Scenario(fleet_nodes=2, api_price_scale=1.5))
    (raised,) = [d for d in ev.fleet.deployments if d.replicas_added_by_simulation]
    inside = [d for d in ev.fleet.node_drivers if d.workload_id in raised.workloads]
    outside = [d for d in ev.fleet.node_drivers if d.workload_id not in raised.workloads]
    assert inside and outside
    for d in inside:
        assert d.nodes_forced is None and all(r.saves_usd_per_month is None for r in d.relaxations)
    assert any(d.nodes_forced is not None for d in outside)
    moves = [c.text for c in _moves(ev) if c.text.split()[1] in raised.workloads]
    assert any("a move is not priced" in t for t in moves)
    assert not any(" would " in t for t in moves)  # no priced move out of the raised pool
