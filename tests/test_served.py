"""Served counts beside every bill, unserved work priced (core/decision/unserved.py), and the range ends and
zero-traffic workloads in words (issue 32 items 1 and 6)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.decision import contract, sensitivity
from core.decision.analysis import option_records
from core.decision.engine import evaluate
from core.decision.explain import reasons
from core.decision.unserved import _targets, plan_unserved
from core.models import HOURS_PER_MONTH, Scenario
from core.presentation import served, views
from tests.test_plan_properties import _inventory

NODE_MONTH = 33.02 * HOURS_PER_MONTH  # $24,104.60: AWS p5.48xlarge, 1-year savings plan, per node-month (seed)


@pytest.fixture(scope="module")
def sample(seed_catalog, bank):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return evaluate(seed_catalog, bank, Scenario())


def test_the_sample_plan_serves_5_of_7_and_prices_the_other_two(sample):
    """The sample's base plan: 3 nodes x $24,104.60 + APIs $1,423.50 + $233.83 = $73,971.13, serving 5 of 7
    workloads (the LLaDA2.0-flash pool pays vLLM's 32 x 30 us of kernel boundaries on each of its 8 passes a block).

    onboarding-rt (1,000 ms target) and agent-steps (2,000 ms) have no route. Their price at the smallest relaxed
    target (each route's p95 alone x 1.05, 1.25, 1.5, 2, smallest first):
    - onboarding-rt: LLaDA2.0-flash alone 1,505.8 ms x 1.05 = 1,581 ms ('1.6 s'); 32 GPUs = 4 node-months =
      4 x 24,104.60 = $96,418.40;
    - agent-steps: Qwen3-235B-A22B alone 2,927.2 ms; the smallest target on the ladder above it, gemini-2.0-flash's
      1,495 ms x 2 = 2,990 ms ('3.0 s'), gives it that route at 32 GPU-months = 4 x 24,104.60 = $96,418.40.
    With them: 73,971.13 + 96,418.40 + 96,418.40 = $266,807.93.
    """
    f = sample.fleet
    assert (f.workloads_served, f.workloads_total, f.workloads_unserved) == (5, 7, 2)
    assert f.total_monthly_usd == pytest.approx(3 * NODE_MONTH + 1423.50 + 233.83, abs=0.01)
    left = {r.workload_id: r for r in plan_unserved(sample).routes}
    assert set(left) == {"onboarding-rt", "agent-steps"}
    assert left["onboarding-rt"].route_id == "owned:llada2-flash"
    assert left["onboarding-rt"].monthly_usd == pytest.approx(4 * NODE_MONTH, abs=0.01)
    assert left["onboarding-rt"].change == "target 1.6 s, now 1.0 s"
    assert left["agent-steps"].route_id == "owned:qwen3-235b-a22b-fp8"
    assert left["agent-steps"].monthly_usd == pytest.approx(4 * NODE_MONTH, abs=0.01)
    assert left["agent-steps"].change == "target 3.0 s, now 2.0 s"
    js = contract.fleet_json(sample)
    assert (js["workloads_served"], js["workloads_total"]) == (5, 7)
    assert js["unserved_work"]["priced_monthly_usd"] == pytest.approx(8 * NODE_MONTH, abs=0.01)
    assert js["unserved_work"]["total_monthly_usd_with_unserved"] == pytest.approx(266_807.93, abs=0.01)
    assert [w["workload_id"] for w in js["unserved_work"]["workloads"]] == ["onboarding-rt", "agent-steps"]
    assert served.plan_bill_words(sample) == "$73,971 a month — serves 5 of 7 workloads; 2 unserved"
    words = served.unserved_priced_words(sample).splitlines()
    assert words[0].startswith("The plan serves 5 of 7 workloads; 2 unserved: the $73,971 bill leaves their work out.")
    assert "the bill with them would be $266,808 a month:" in words[0]
    assert words[1] == ("- onboarding-rt: LLaDA2.0-flash (diffusion MoE 100B / 6.1B active), $96,418/month "
                        "(target 1.6 s, now 1.0 s)")
    assert len(words) == 3


def test_the_ladders_steps_scored_together_price_as_one_call_a_step(seed_catalog, bank, monkeypatch):
    """_ladder scores several relaxed targets in one call (scoring is row by row) and still takes the steps in order:
    with a call per step (the chunk at one pair, so one step a call) every workload is priced the same, to the cent
    and in words. Targets x0.5 on the sample: four unserved workloads, several steps each."""
    from core.decision import unserved

    ev = evaluate(seed_catalog, bank, Scenario(sla_scale=0.5))
    together = unserved._ladder(ev)
    monkeypatch.setattr(unserved, "LADDER_CHUNK_ROWS", 1)
    one_step_a_call = unserved._ladder(ev)
    assert len(together) == 4 and together == one_step_a_call


def test_served_words_say_what_a_bill_leaves_out():
    assert served.served_words(7, 7) == "serves all 7 workloads"
    assert served.served_words(3, 7) == "serves 3 of 7 workloads; 4 unserved"
    assert served.bill_words(25_528.1, 3, 7) == "$25,528 a month — serves 3 of 7 workloads; 4 unserved"


def test_relaxed_targets_are_each_routes_alone_p95_times_the_steps_above_the_target():
    """Route A alone 1,000 ms, route B cannot serve (inf), route C alone 400 ms; target 900 ms.
    A: 1,050 / 1,250 / 1,500 / 2,000 ms, all above 900; C: 420 / 500 / 600 / 800, all under: not tried.
    Batch work (no target) has none to try."""
    alone = np.array([[1000.0, np.inf, 400.0], [1000.0, 5.0, 400.0]])
    got = _targets(alone, np.array([900.0, np.nan]))
    assert got[0].tolist() == [1050.0, 1250.0, 1500.0, 2000.0]
    assert np.isnan(got[1]).all()


def test_fleet_options_carry_served_counts_and_the_bill_with_unserved_work(sample):
    """Every option: served + unserved = 7, and its bill with unserved work = its cash bill + that work priced.
    All on public APIs serves only the 2 workloads whose data may leave; kyc-overnight (owned_only, batch) is
    priced on its owned route, outside the option."""
    rows = {o.option: o for o in option_records(sample)}
    for o in rows.values():
        assert o.workloads_served + o.workloads_unserved == o.workloads_total == 7
        assert o.monthly_usd_with_unserved == pytest.approx(o.monthly_usd + o.unserved_priced_usd, abs=0.01)
        assert (o.unserved_routes == "") == (o.workloads_unserved == 0)
    api = rows["All on public APIs"]
    assert api.workloads_served == 2
    assert "kyc-overnight: Qwen3-30B-A3B (MoE; FP8)" in api.unserved_routes
    assert "(outside this option)" in api.unserved_routes
    assert api.monthly_usd_with_unserved > rows["Recommended mix"].monthly_usd
    table = served.options_table(pd.DataFrame([{
        "workloads_served": o.workloads_served, "workloads_total": o.workloads_total,
        "unserved_routes": o.unserved_routes} for o in rows.values()]))
    assert list(table["serves"])[1] == "2 of 7"


@pytest.mark.slow
def test_the_bill_with_unserved_work_priced_never_falls_as_targets_tighten(seed_catalog, bank):
    """The defect of issue 32: on the sample the cash bill falls as targets tighten (x0.5: $25,528 serving 3 of 7;
    x1: $73,971 serving 5; x2: $73,737 serving all 7: relaxed, the plan serves two more on the same 3 nodes).
    With the unserved work priced it rises as they tighten: x2: 73,737.30 + 0; x1: 73,971.13 + 192,836.80 =
    266,807.93; x0.5: 25,528.10 + the four workloads it leaves out, priced (387,097.10 in all)."""
    evs = {s: evaluate(seed_catalog, bank, Scenario(sla_scale=s)) for s in (0.5, 1.0, 2.0)}
    cash = {s: ev.fleet.total_monthly_usd for s, ev in evs.items()}
    priced = {s: served.with_unserved_total(ev) for s, ev in evs.items()}
    assert cash[0.5] < cash[1.0]  # the cash bill alone runs the wrong way
    assert [evs[s].fleet.workloads_served for s in (0.5, 1.0, 2.0)] == [3, 5, 7]
    assert priced[0.5] >= priced[1.0] >= priced[2.0]
    assert priced[0.5] == pytest.approx(387_097.10, abs=0.01)
    assert priced[2.0] == pytest.approx(cash[2.0])


PROPERTY = settings(max_examples=4, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.slow
@given(seed=st.integers(0, 2**31 - 1), k=st.sampled_from([1.5, 2.0, 3.0]))
@PROPERTY
def test_relaxing_every_target_never_raises_the_bill_where_the_served_count_is_equal(seed_catalog, seed, k):
    """Every target x0.3, then x0.3k: where both plans serve as many workloads, the relaxed bill is no higher (to
    the cent); whatever they serve, the bill with unserved work priced is no higher either."""
    inv, owned = _inventory(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        tight = evaluate(seed_catalog, inv, Scenario(fleet_nodes=owned, sla_scale=0.3))
        loose = evaluate(seed_catalog, inv, Scenario(fleet_nodes=owned, sla_scale=0.3 * k))
    if tight.fleet.workloads_served == loose.fleet.workloads_served:
        assert loose.fleet.total_monthly_usd <= tight.fleet.total_monthly_usd + 0.01
    assert served.with_unserved_total(loose) <= served.with_unserved_total(tight) + 0.01


# -- item 6: the range's ends by name; no traffic in words ----------------------------------------------------

def test_performance_range_keys_name_the_optimistic_and_pessimistic_ends(sample):
    sensitivity.ranges(sample, force=True)
    pr = contract.fleet_json(sample)["performance_range"]
    assert {"nodes_needed_optimistic", "nodes_needed_pessimistic", "total_monthly_usd_optimistic",
            "total_monthly_usd_pessimistic", "dropped_pessimistic", "added_optimistic"} <= set(pr)
    assert not [k for k in pr if k.endswith(("_low", "_high")) or "_low_" in k or "_high_" in k]
    rec = sensitivity.ranges(sample).performance
    # The pessimistic end may need fewer nodes than the optimistic one by serving less (on the sample: 1 node,
    # 4 unserved, against 2 nodes, 2 unserved): what it leaves out never shrinks.
    assert rec.nodes_at("optimistic") == pr["nodes_needed_optimistic"]
    assert pr["unserved_pessimistic"] >= pr["unserved_central"] >= pr["unserved_optimistic"]
    assert rec.nodes_at("low") == rec.nodes_at("optimistic")  # the old end names still read
    with pytest.raises(ValueError, match="optimistic"):
        rec.nodes_at("central")


def test_a_workload_with_no_traffic_reads_no_traffic_not_zero_replicas(seed_catalog, bank):
    """Two workloads with 0 requests a day (one interactive, one batch) beside the sample: their reasons, the
    routing table, the CLI table and the deployments say "no traffic", never "0 replica(s)"."""
    from core.commands.evaluate import format_table

    extra = pd.DataFrame([
        {**bank.iloc[-1].to_dict(), "workload_id": "idle-bot", "requests_per_day": 0},
        {**bank.iloc[0].to_dict(), "workload_id": "idle-batch", "requests_per_day": 0}])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ev = evaluate(seed_catalog, pd.concat([bank, extra], ignore_index=True), Scenario())
    ids = list(ev.workloads["workload_id"])
    for wid in ("idle-bot", "idle-batch"):
        i = ids.index(wid)
        assert ev.verdict[i] >= 0  # it has a route; it just has nothing to send
        text = " ".join(reasons(ev, i))
        assert text.startswith("No traffic: the inventory gives it 0 requests a day") and "replica(s)" not in text
    table = views.routing_table(contract.verdicts_frame(ev)).set_index("workload_id")
    assert table.loc["idle-bot", "route"].endswith("— no traffic") and pd.isna(table.loc["idle-bot", "nodes"])
    assert not table.loc["code-completion", "route"].endswith("no traffic")
    lines = [ln for ln in format_table(ev).splitlines() if ln.startswith("idle-")]
    assert len(lines) == 2 and all(ln.rstrip().endswith("no traffic") for ln in lines)
    deps = views.deployments(ev)
    assert (deps.loc[deps["replicas"] == "0", "offline_gpu_hours_per_day"] > 0).all()  # batch-only pools
    idle_pools = deps.loc[deps["replicas"] == "no traffic", "workloads"].tolist()
    assert idle_pools and all(set(p.split(", ")) <= {"idle-bot", "idle-batch"} for p in idle_pools)
