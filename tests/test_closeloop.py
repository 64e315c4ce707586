"""The plan checked by its own simulation (core.decision.closeloop) and the sub-second tier rule (fleet)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.decision import settings as settings_mod
from core.decision.checks import check_plan
from core.decision.closeloop import under_share
from core.decision.engine import evaluate
from core.models import Scenario

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from gen import archetype_inventory, synthetic_inventory  # noqa: E402


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
    """90 generated workloads (bench/gen.py seed 90, 1 owned node) with close_loop_z 0 (any share under 95 % is
    a miss): a Llama-70B+draft member a hair under its share gains a replica, and the plan 3 nodes ($94,241.12
    a month) where the default check (z = 2) adds none and plans 2 ($70,136.52), for a miss the run cannot tell
    from noise. So the test above can fail, and the loop does add replicas where it is told a member misses.
    Planned with the restart from faster routes off, as the test was written, and the blind check without its
    fallback to the search's other plans and the descents from its own (close_loop_alternatives and
    close_loop_repairs 0), which would route around the replica. (It
    was 80 workloads, seed 80, until the simulation dealt requests to members by what they are, not their row
    order: the blind check finds nothing there now.)"""
    monkeypatch.setattr(settings_mod, "PLAN", settings_mod.DEFAULT.but(
        close_loop_z=0.0, close_loop_familywise=False, faster_restart=False, close_loop_alternatives=0,
        close_loop_repairs=0))
    blind = evaluate(catalog, synthetic_inventory(90, seed=90), Scenario(fleet_nodes=1))
    raised = {d.route_id: d.replicas_added_by_simulation for d in blind.fleet.deployments
              if d.replicas_added_by_simulation}
    assert raised == {"owned:llama70b-fp8-spec": 1}, raised
    assert blind.fleet.nodes_needed == 3
    assert blind.fleet.total_monthly_usd == pytest.approx(94_241.12, abs=0.01)
    monkeypatch.setattr(settings_mod, "PLAN", settings_mod.DEFAULT.but(faster_restart=False))
    sighted = evaluate(catalog, synthetic_inventory(90, seed=90), Scenario(fleet_nodes=1))
    assert sighted.fleet.nodes_needed == 2
    assert sighted.fleet.total_monthly_usd == pytest.approx(70_136.52, abs=0.01)
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


def test_under_share_is_an_exact_binomial_test_for_the_pools_members_together():
    """Hand-worked, target 95 % (a miss has probability 0.05 for a member exactly at its share), z = 2, so the
    level is Phi(-2) = 0.02275 for the whole pool.
    One member, 14 requests: P(K <= 2) = 0.95^14 + 14 x 0.05 x 0.95^13 + 91 x 0.0025 x 0.95^12
    = 0.48767 + 0.35934 + 0.12294 = 0.96995, so 3 misses have p = 0.03005 (not under: a normal-share test at z = 2
    would call 11 of 14, 78.6 % against 95 - 11.6, under); 4 misses: p = 0.03005 - 364 x 0.05^3 x 0.95^11
    = 0.03005 - 0.02588 = 0.00417 < 0.02275 (under).
    That member among nine with no miss: eleven tests (ten members and the pool's 4 misses of 140 together), level
    0.02275 / 11 = 0.00207 < 0.00417: not under; judged alone (familywise False) it is.
    A thousand members of 14 requests with one miss each: none tells anything alone (p = 1 - 0.95^14 = 0.51), but
    together 1,000 misses in 14,000 (7.1 % against 5 %) is far beyond chance: under. With no miss at all, or no
    member with traffic (NaN shares), nothing is under."""
    assert not under_share(np.array([11 / 14]), np.array([14.0]), 0.95, 2.0)
    assert under_share(np.array([10 / 14]), np.array([14.0]), 0.95, 2.0)
    shares, counts = np.array([10 / 14] + [1.0] * 9), np.full(10, 14.0)
    assert not under_share(shares, counts, 0.95, 2.0)
    assert under_share(shares, counts, 0.95, 2.0, familywise=False)
    assert under_share(np.full(1000, 13 / 14), np.full(1000, 14.0), 0.95, 2.0)
    assert not under_share(np.ones(5), np.full(5, 100.0), 0.95, 2.0)
    assert not under_share(np.array([np.nan, np.nan]), np.array([1.0, 1.0]), 0.95, 2.0)


def test_a_pool_of_members_at_their_share_is_called_under_about_as_often_as_the_level_says():
    """Members exactly at their share (misses drawn Binomial(n, 0.05), n from 1 to 60): of 2,000 pools of 300
    members the family-wise check calls at most Phi(-2) = 2.3 % under (plus three standard errors of 2,000 draws,
    1.0 point); checking each member alone at the same level calls nearly every pool under (300 members at 2.3 %
    each: 1 - 0.977^300 ~ 99.9 %, less for members too quiet to show anything)."""
    rng = np.random.default_rng(31)
    pools, members = 2000, 300
    n = rng.integers(1, 61, size=(pools, members)).astype(float)
    k = rng.binomial(n.astype(int), 0.05)
    shares = 1.0 - k / n
    together = np.mean([under_share(shares[i], n[i], 0.95, 2.0) for i in range(pools)])
    alone = np.mean([under_share(shares[i], n[i], 0.95, 2.0, familywise=False) for i in range(pools)])
    assert together <= 0.02275 + 3 * np.sqrt(0.02275 * 0.97725 / pools)
    assert alone > 0.9


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 400), st.floats(0.0, 1.0)), min_size=1, max_size=12),
       st.integers(0, 11), st.integers(1, 50))
def test_more_misses_never_make_a_pool_look_better(members, which, extra):
    """Monotone: a member with more of its requests over target (the same count) never turns an "under" pool
    into one that holds."""
    n = np.array([float(c) for c, _ in members])
    k = np.floor(np.array([f for _, f in members]) * n)
    j = which % len(members)
    more = k.copy()
    more[j] = min(k[j] + extra, n[j])
    if under_share(1.0 - k / n, n, 0.95, 2.0):
        assert under_share(1.0 - more / n, n, 0.95, 2.0)


@pytest.mark.slow
def test_thousand_quiet_copies_buy_no_replica_for_noise(catalog):
    """1,000 workloads drawn from the sample's seven (bench/gen.py archetype_inventory, seed 7: each at a
    thousandth of its daily requests times a lognormal, sigma 0.8): the LLaDA2.0-flash pools hold 427 and 287
    of them. The check adds no replica and the plan needs 1 node. (Judged one member at a time on runs sized by
    the quietest member, 200,000 requests, it added a replica here and planned 2 nodes; at 3,000 such workloads 6
    nodes against 2, at 100,000 38 against 30. The runs are now sized by the pool: 20,000 to 33,000 requests.)"""
    inv = archetype_inventory(1000, seed=7)
    ev = evaluate(catalog, inv, Scenario())
    assert all(d.replicas_added_by_simulation == 0 for d in ev.fleet.deployments)
    assert ev.fleet.nodes_needed == 1


def test_over_share_needs_every_member_shown_at_or_above_its_share():
    """553 requests at 95 %: misses expected 27.65; P(K <= 17) = 0.0185 < Phi(-2) = 0.02275 (shown: 96.9 %
    within target), P(K <= 18) = 0.0312 (not). A second member exactly at its share (1,000 requests, 50 misses:
    P(K <= 50) ~ 0.54) keeps the pool from showing it; a member without requests (NaN) has nothing to show."""
    from core.decision.simulate import over_share

    one = np.array([1.0])
    assert over_share(np.array([1 - 17 / 553]), one * 553, 0.95, 2.0)
    assert not over_share(np.array([1 - 18 / 553]), one * 553, 0.95, 2.0)
    assert not over_share(np.array([1 - 17 / 553, 0.95]), np.array([553.0, 1000.0]), 0.95, 2.0)
    assert over_share(np.array([1 - 17 / 553, np.nan]), np.array([553.0, 1.0]), 0.95, 2.0)
    assert not over_share(np.array([np.nan]), one, 0.95, 2.0)


def test_a_quiet_member_under_its_share_with_one_fewer_is_not_a_cut():
    """The sample's LLaDA2.0-flash pool as `hangover simulate` ran it (seed 0, 33,958 requests): the quiet
    member (553 requests) holds 94.8 % within target with one replica fewer (29 misses against 27.65 expected
    at 95 %: P(K >= 29) = 0.42, nowhere near short), the busy one 97.5 % (31,708). Neither page nor command may
    say one fewer "would do" (on 3,476 of its requests the quiet member reads 94.4 %: the model needs the
    replica); both say not shown, within the run's noise."""
    from core.commands.simulate import format_table
    from core.decision.checks import PlanCheck
    from core.decision.simulate import SimulationResult, WorkloadSimulation

    ws = (WorkloadSimulation("lc-clearing", 3000.0, 2817.0, 1200.0, 2768.0, 3500.0, (2564.0, 2971.0),
                             1 - 22 / 553, 1 - 29 / 553, 553),
          WorkloadSimulation("code-completion", 500.0, 400.0, 200.0, 394.0, 450.0, (388.0, 399.0),
                             1 - 358 / 31708, 1 - 786 / 31708, 31708))
    res = SimulationResult("owned:llada2-flash", 3, 4, ws, ws[0].share_within_slo, 1 - 29 / 553, 0.1, 0.1,
                           33958, 0, seconds=0.0)
    check = PlanCheck((res,), frozenset(w.workload_id for w in ws), 0.95)
    (verdict,) = check.verdicts()
    assert " hold every target" in verdict
    assert "whether one replica fewer would do is within the run's noise (worst workload 94.8% within target; " \
        "95% needed)" in verdict
    table = format_table(check)
    assert "94.8% (within noise)" in table and "--requests 200000" in table
    assert "would do" not in table


def test_simulate_verdicts_judge_a_big_pool_as_the_plan_does():
    """400 members of 470 simulated requests each, each exactly at its share (misses drawn Binomial(470, 0.05),
    seed 5) and a hair above it with one replica fewer (Binomial(470, 0.045)). One by one, members whose 95 %
    interval lies under 95 % turn up by chance (share + 1.96 sqrt(share (1 - share) / 470) < 0.95, i.e. about 33
    misses or more against 23.5 expected: a few of 400); the pool's verdict, taken with the plan's test for the
    members together, says the replicas hold; whether one fewer would do is within the run's noise (no member
    shown short, nor every one at or above 95 %: a cut on that is a bet). With one fewer at 1 % over target
    (Binomial(470, 0.01): the worst of 400 members ~12 misses, P(K <= 13 | 470, 0.05) = 0.012) it would also do. With every member 10 % over target (Binomial(470,
    0.10)) it does not hold."""
    from core.decision.checks import PlanCheck, within
    from core.decision.simulate import SimulationResult, WorkloadSimulation

    rng = np.random.default_rng(5)

    def check(p_now: float, p_fewer: float) -> tuple[str, list[bool]]:
        now = 1 - rng.binomial(470, p_now, 400) / 470
        fewer = 1 - rng.binomial(470, p_fewer, 400) / 470
        ws = tuple(WorkloadSimulation(f"w{i}", 1000.0, 900.0, 500.0, 950.0, 1200.0, (940.0, 960.0), float(now[i]),
                                      float(fewer[i]), 470) for i in range(400))
        res = SimulationResult("pool", 3, 8, ws, float(now.min()), float(fewer.min()), 0.1, 0.1, 188_000, 0,
                               seconds=0.0)
        alone = [within(w.share_within_slo, w.requests) for w in ws]
        return PlanCheck((res,), frozenset(w.workload_id for w in ws), 0.95).verdicts()[0], alone

    verdict, alone = check(0.05, 0.045)
    assert not all(alone)
    assert " hold every target" in verdict
    assert "whether one replica fewer would do is within the run's noise (worst workload" in verdict
    verdict, _ = check(0.05, 0.01)
    assert " hold every target" in verdict and "one replica fewer would also do" in verdict
    verdict, _ = check(0.10, 0.12)
    assert "do NOT hold" in verdict and "one replica fewer would not do" in verdict
