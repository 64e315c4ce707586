"""One evaluation shared by threads (the dashboard caches one per scenario for every session): frozen, and what is
read from it on request (the verdict ranges, the fleet options) is computed once, whoever asks first."""

from __future__ import annotations

import dataclasses
import threading
import warnings

import pandas as pd
import pytest

from core.decision import analysis, contract, sensitivity
from core.decision.engine import evaluate
from core.models import Scenario

WAIT_S = 60.0  # a bound so a broken lock fails the test instead of hanging it; no assertion reads the clock


def _both_inside(monkeypatch, module, name: str):
    """Wrap module.name so that each thread's entry is counted; returns an Event set once two threads are inside."""
    original = getattr(module, name)
    entered: list[int] = []
    lock = threading.Lock()
    both = threading.Event()

    def wrapper(*args, **kwargs):
        with lock:
            entered.append(threading.get_ident())
            if len(entered) >= 2:
                both.set()
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)
    return both


def _counted(monkeypatch, module, name: str, both_inside: threading.Event):
    """Wrap module.name to count its calls; the first call waits until both threads have asked, so that without
    the lock the second thread would compute too (the race is forced, not left to timing)."""
    original = getattr(module, name)
    calls: list[tuple] = []
    waited: list[bool] = []
    lock = threading.Lock()

    def wrapper(*args, **kwargs):
        with lock:
            # What the call is for: its last string argument (an end's "low"/"high"), else its last argument.
            calls.append(next((a for a in reversed(args) if isinstance(a, str)), args[-1]) if args else None)
            first = len(calls) == 1
        if first:
            waited.append(both_inside.wait(WAIT_S))
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)
    return calls, waited


def _two_threads(job):
    """Run job() in two threads released together; their results, in thread order."""
    start = threading.Barrier(2)
    out: list = [None, None]
    errors: list[BaseException] = []

    def run(k):
        try:
            start.wait(WAIT_S)
            out[k] = job()
        except BaseException as exc:  # noqa: BLE001 - re-raised below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT_S * 2)
    if errors:
        raise errors[0]
    return out


def test_two_threads_reading_the_ranges_plan_the_ends_once(catalog, bank, monkeypatch):
    """Two threads ask one fresh evaluation for its ranges at once: both get the same record (the same object),
    and each efficiency end was planned exactly once (low, high), not once per thread."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ev = evaluate(catalog, bank, Scenario())
        both = _both_inside(monkeypatch, sensitivity, "ranges")
        ends, waited = _counted(monkeypatch, sensitivity, "_end", both)
        first, second = _two_threads(lambda: sensitivity.ranges(ev))
    assert waited == [True]  # the second thread had asked before the first planned anything
    assert sorted(ends) == ["high", "low"]  # two end plans in all (without the lock: four)
    assert first is not None and first is second
    assert sensitivity.ranges(ev) is first and sorted(ends) == ["high", "low"]  # kept: a third read plans nothing
    assert contract.fleet_json(ev)["performance_range"]["nodes_needed_optimistic"] == first.performance.nodes_needed_optimistic


def test_two_threads_reading_the_fleet_options_plan_them_once(catalog, bank, monkeypatch):
    """The purchase analysis (each fleet option planned and priced) asked by two threads at once: planned once,
    and both frames equal (each caller gets its own frame: changing one leaves the other and the record alone)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ev = evaluate(catalog, bank, Scenario(fleet_nodes=2))
        both = _both_inside(monkeypatch, analysis, "option_records")
        planned, waited = _counted(monkeypatch, analysis, "_plan_options", both)
        first, second = _two_threads(lambda: analysis.fleet_options(ev))
    assert waited == [True] and len(planned) == 1
    pd.testing.assert_frame_equal(first, second)
    assert first is not second
    first.loc[0, "monthly_usd"] = -1.0
    assert analysis.fleet_options(ev).loc[0, "monthly_usd"] == second.loc[0, "monthly_usd"] != -1.0
    assert len(planned) == 1
    assert second.loc[0, "option"] == "Recommended mix"
    assert second.loc[0, "monthly_usd"] == pytest.approx(ev.fleet.total_monthly_usd, abs=0.005)  # the bill in cents


def test_an_evaluation_and_its_fleet_record_are_frozen(catalog, bank):
    """Nothing rebinds a field once evaluate returns; naming the inventory gives a copy sharing the answers."""
    ev = evaluate(catalog, bank, Scenario())
    with pytest.raises(dataclasses.FrozenInstanceError):
        ev.fleet = ev.fleet  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ev.fleet.nodes_needed = 0  # type: ignore[misc]
    named = ev.with_source("bundled sample")
    assert ev.fleet.inventory is None and named.fleet.inventory == "bundled sample"
    assert named.answers is ev.answers and named.fleet.deployments is ev.fleet.deployments
    assert "inventory" not in contract.fleet_json(ev) and contract.fleet_json(named)["inventory"] == "bundled sample"


def test_one_bill_rule_for_the_plan_its_record_and_its_options(catalog, bank):
    """The search's bill, the fleet record's (in cents) and the options' are economics.cash_bill of the same plan:
    the search's to the bit, the record's to the cent."""
    from core.decision.economics import cash_bill

    ev = evaluate(catalog, bank, Scenario(fleet_nodes=1))
    f, plan = ev.fleet, ev.plan
    bill = cash_bill(f.owned_nodes, plan.nodes_needed, f.full_usd_per_node_hour, plan.api_monthly,
                     plan.licence_monthly)
    assert bill.total == plan.bill
    cents = bill.in_cents()
    assert (f.owned_monthly_usd, f.extra_nodes_monthly_usd, f.api_monthly_usd, f.licence_monthly_usd,
            f.total_monthly_usd) == (cents.owned_usd, cents.new_nodes_usd, cents.api_usd, cents.licence_usd,
                                     cents.total)
    recommended = analysis.option_records(ev)[0]
    assert (recommended.monthly_usd, recommended.owned_monthly_usd) == (bill.total, bill.nodes_usd)


def test_the_sla_scale_is_applied_once(catalog, bank):
    """Every latency target × 0.5: the plan's inputs and the routing table both read the scaled target t × 0.5
    (engine.latency_targets_ms, the one place the scale is applied); batch work keeps no target (NaN)."""
    ev = evaluate(catalog, bank, Scenario(sla_scale=0.5))
    raw = bank["latency_slo_ms"].to_numpy(dtype=float)
    scaled = ev.slo_ms
    assert ((scaled == raw * 0.5) | (pd.isna(raw) & pd.isna(scaled))).all()
    vf = contract.verdicts_frame(ev)
    assert ((vf["latency_slo_ms"].to_numpy() == scaled) | pd.isna(scaled)).all()
    assert (ev.plan_inputs.slo_ms[~pd.isna(scaled)] == scaled[~pd.isna(scaled)]).all()
