"""The plan checked by its own simulation (core.decision.closeloop) and the sub-second tier rule (fleet)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from core.decision import settings as settings_mod
from core.decision.checks import check_plan
from core.decision.engine import evaluate
from core.models import Scenario

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from gen import synthetic_inventory  # noqa: E402


def _every_member_holds(ev, z: float = 0.0) -> list[tuple[str, float]]:
    """(workload, share within target) of every interactive owned member the simulation puts under 95 % by more
    than z binomial standard errors of its share (z 0: under 95 % at all)."""
    chk = check_plan(ev)
    p = ev.scenario.sla_percentile
    return [(w["workload_id"], w["share_within_slo"]) for w in chk.workloads(detail=True)
            if w["share_within_slo"] is not None
            and w["share_within_slo"] < p - z * np.sqrt(p * (1 - p) / max(w["requests"], 1))]


def _no_sub_second_member_in_a_throughput_tier(ev) -> None:
    slo = dict(zip(ev.workloads["workload_id"], ev.slo_ms, strict=True))
    for d in ev.fleet.deployments:
        if d.tier == "throughput tier":
            assert all(not slo[w] < 1000.0 for w in d.workloads), (d.route_id, d.concurrency_cap, d.workloads)


@pytest.mark.slow
def test_sample_after_the_loop_every_interactive_member_holds_95_percent(catalog, bank):
    """Sample: the LLaDA2.0-flash pool (lc-clearing and code-completion, 3 replicas x cap 4) holds every member
    at >= 95 % as sized: the check adds nothing, and the plan stays 3 nodes, $73,971.13."""
    ev = evaluate(catalog, bank, Scenario())
    assert _every_member_holds(ev) == []
    assert all(d.replicas_added_by_simulation == 0 for d in ev.fleet.deployments)
    assert ev.fleet.nodes_needed == 3 and ev.fleet.total_monthly_usd == pytest.approx(73971.13, abs=0.01)
    _no_sub_second_member_in_a_throughput_tier(ev)


@pytest.mark.slow
def test_generated_inventory_every_member_holds_its_share_within_the_runs_error(catalog):
    """100 generated workloads (bench/gen.py seed 100, 1 owned node): as the search sizes it, every interactive
    member holds 95 % within target in the simulation, or sits below it by less than two binomial standard errors
    of its simulated share (at 1,873 requests sqrt(0.95 x 0.05 / 1,873) = 0.50 points): the check buys no
    replica for noise, and the plan stays 3 nodes."""
    ev = evaluate(catalog, synthetic_inventory(100, seed=100), Scenario(fleet_nodes=1))
    assert _every_member_holds(ev, z=2.0) == []
    assert all(d.replicas_added_by_simulation == 0 for d in ev.fleet.deployments)
    assert ev.fleet.nodes_needed == 3
    _no_sub_second_member_in_a_throughput_tier(ev)


@pytest.mark.slow
def test_a_check_blind_to_the_runs_error_buys_replicas_for_noise(catalog, monkeypatch):
    """80 generated workloads (bench/gen.py seed 80, 1 owned node) with close_loop_z 0 (any share under 95 % is
    a miss): members a hair under their share gain a replica each (Llama-70B+draft and LLaDA-8B, one each), and
    the plan 3 nodes where the default check (z = 2) adds none and plans 2, for misses the run cannot tell from
    noise. So the test above can fail, and the loop does add replicas where it is told a member misses. (On
    the 100 workloads above the blind check added a LLaDA2.0-flash replica until BF16 prefill reached its larger
    share of peak; it adds none there now.) Planned with the restart from faster routes off, as the test was
    written."""
    monkeypatch.setattr(settings_mod, "PLAN", settings_mod.DEFAULT.but(close_loop_z=0.0, faster_restart=False))
    blind = evaluate(catalog, synthetic_inventory(80, seed=80), Scenario(fleet_nodes=1))
    raised = {d.route_id: d.replicas_added_by_simulation for d in blind.fleet.deployments
              if d.replicas_added_by_simulation}
    assert raised == {"owned:llama70b-fp8-spec": 1, "owned:llada-8b": 1} and blind.fleet.nodes_needed == 3
    monkeypatch.setattr(settings_mod, "PLAN", settings_mod.DEFAULT.but(faster_restart=False))
    sighted = evaluate(catalog, synthetic_inventory(80, seed=80), Scenario(fleet_nodes=1))
    assert sighted.fleet.nodes_needed == 2
    assert all(d.replicas_added_by_simulation == 0 for d in sighted.fleet.deployments)
    assert _every_member_holds(blind) == []
    from core.decision.explain import deployment_why_words

    (d, *_) = [d for d in blind.fleet.deployments if d.replicas_added_by_simulation]
    assert "of these was added by the plan's simulation check" in deployment_why_words(d)


@pytest.mark.slow
def test_request_budget_bounds_the_check(catalog):
    """A budget of 1 request: of two interactive pools (20 generated workloads, bench/gen.py seed 20, 1 owned node)
    the first is simulated once (the run spends at least its least, 20,000 requests, and no replica is needed) and
    the budget leaves the other unchecked; a budget of 0 simulates nothing and returns the plan as given. (The
    bundled sample has one interactive pool since model v3.2.)"""
    from core.decision.closeloop import close_by_simulation

    ev = evaluate(catalog, synthetic_inventory(20, seed=20), Scenario(fleet_nodes=1))
    small = settings_mod.DEFAULT.but(close_loop_requests=1)
    closed = close_by_simulation(ev.planner, ev.plan, small)
    assert closed.checked == 1 and closed.unchecked == 1 and closed.added == {}
    assert closed.requests >= 20_000  # the simulation's least run (SearchSettings.min_requests)
    assert closed.plan.nodes_needed == ev.fleet.nodes_needed
    off = close_by_simulation(ev.planner, ev.plan, settings_mod.DEFAULT.but(close_loop_requests=0))
    assert (off.checked, off.requests) == (0, 0) and off.plan is ev.plan
    assert np.array_equal(off.plan.assignment, ev.plan.assignment)


@pytest.mark.slow
def test_a_sub_second_member_stays_off_the_throughput_tier(catalog, monkeypatch):
    """30 generated workloads (bench/gen.py seed 7, 1 owned node): with the rule off (sub_second_ms 0) w0000029,
    a sub-second target, runs in LLaDA-8B's throughput tier (cap 32); with the rule it is in no throughput-tier
    pool, nor is any other sub-second member. (Between the kernel-boundary time per layer and model v3.2 it sat in
    the middle tier with the rule off, and this instance did not show the rule biting.)"""
    inv = synthetic_inventory(30, seed=7)
    monkeypatch.setattr(settings_mod, "PLAN", settings_mod.DEFAULT.but(sub_second_ms=0.0))
    off = evaluate(catalog, inv, Scenario(fleet_nodes=1))
    tiers_off = {(d.route_id, d.tier, d.concurrency_cap) for d in off.fleet.deployments if "w0000029" in d.workloads}
    assert ("owned:llada-8b", "throughput tier", 32) in tiers_off
    monkeypatch.setattr(settings_mod, "PLAN", settings_mod.DEFAULT)
    on = evaluate(catalog, inv, Scenario(fleet_nodes=1))
    _no_sub_second_member_in_a_throughput_tier(on)
