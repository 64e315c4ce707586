"""Pool sizings kept with the catalog (engine.kept_sizings): the next scenario of the same pools (another owned-node
count, another price) re-plans without sizing them again, and plans exactly what a plan from scratch does."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.decision import contract
from core.decision.engine import evaluate
from core.decision.sizing import Sizer
from core.models import CostBasis, PricingOption, Scenario

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from gen import synthetic_inventory  # noqa: E402


@pytest.fixture(scope="module")
def thirty():
    """30 generated workloads (bench/gen.py seed 30): with no owned node the plan buys nodes."""
    return synthetic_inventory(30, seed=30)


def _fresh(catalog):
    """The same reference data with nothing cached (no calibration, no kept sizings)."""
    return dataclasses.replace(catalog, _eff_cache={})


def _counting(monkeypatch) -> list[int]:
    """Pools sized from scratch (Sizer._size_many's requests), appended per call."""
    sized: list[int] = []
    original = Sizer._size_many

    def size_many(self, requests):
        sized.append(len(requests))
        return original(self, requests)

    monkeypatch.setattr(Sizer, "_size_many", size_many)
    return sized


def _assert_same_plan(a, b):
    assert a.fleet.nodes_needed == b.fleet.nodes_needed
    assert a.fleet.total_monthly_usd == b.fleet.total_monthly_usd  # to the bit: the same sizings, the same sums
    np.testing.assert_array_equal(a.verdict, b.verdict)
    assert contract.fleet_json(a) == contract.fleet_json(b)


def test_a_change_of_owned_nodes_plans_the_same_without_sizing_again(catalog, thirty, monkeypatch):
    """One catalog plans 0 owned nodes, then 2: the second plan is the one a catalog with nothing kept makes (every
    figure of the fleet record), and sizes under a tenth of the pools it sizes from scratch (the node count and
    prices enter no sizing; the pools the two searches visit are mostly the same)."""
    kept = _fresh(catalog)
    evaluate(kept, thirty, Scenario(fleet_nodes=0))
    sized = _counting(monkeypatch)
    warm = evaluate(kept, thirty, Scenario(fleet_nodes=2, api_price_scale=1.5))
    warm_sized = sum(sized)
    sized.clear()
    cold = evaluate(_fresh(catalog), thirty, Scenario(fleet_nodes=2, api_price_scale=1.5))
    cold_sized = sum(sized)  # before the fleet records are read (they size what they report lazily)
    _assert_same_plan(warm, cold)
    assert cold.fleet.nodes_needed >= 2 and cold_sized > 100
    assert warm_sized < 0.1 * cold_sized


def test_the_efficiency_ends_share_the_store_but_not_each_others_sizings(catalog, thirty, monkeypatch):
    """The slow end's catalog is a copy sharing the central one's caches, so its plan runs in the same kept store:
    its pools have the same members as the central plan's but a slower step curve, and the key names the physics
    a sizing read (Sizer._physics_of), so it sizes every pool it needs itself, as many as from scratch, and plans
    what a fresh catalog's slow end plans."""
    kept = _fresh(catalog)
    sc = Scenario(fleet_nodes=0)
    evaluate(kept, thirty, sc)
    sized = _counting(monkeypatch)
    warm = evaluate(kept.at_efficiency_end("low"), thirty, sc)
    warm_sized = sum(sized)
    sized.clear()
    cold = evaluate(_fresh(catalog).at_efficiency_end("low"), thirty, sc)
    cold_sized = sum(sized)  # before the fleet records are read (they size what they report lazily)
    _assert_same_plan(warm, cold)
    assert warm_sized == cold_sized > 100


def test_a_tighter_tail_is_another_store(catalog, thirty):
    """Targets at the 99th percentile size every pool anew (another store: the tail is in what a sizing reads), and
    plan what a fresh catalog plans."""
    kept = _fresh(catalog)
    evaluate(kept, thirty, Scenario(fleet_nodes=0))
    warm = evaluate(kept, thirty, Scenario(fleet_nodes=0, sla_percentile=0.99))
    cold = evaluate(_fresh(catalog), thirty, Scenario(fleet_nodes=0, sla_percentile=0.99))
    _assert_same_plan(warm, cold)
    assert len(kept._eff_cache[("kept sizings",)]) == 2


def test_a_store_is_kept_for_the_last_four_scenarios_only(catalog):
    """Catalog.kept_sizings holds the stores of the last KEPT_SIZING_STORES identities (one asked again moves to the
    back), so a dashboard trying many targets does not grow without bound."""
    from core.catalog import KEPT_SIZING_STORES

    kept = _fresh(catalog)
    first = kept.kept_sizings("a")
    assert kept.kept_sizings("a") is first
    for k in range(KEPT_SIZING_STORES - 1):
        kept.kept_sizings(f"b{k}")
    assert kept.kept_sizings("a") is first  # still held, now the most recent
    for k in range(KEPT_SIZING_STORES - 1):
        kept.kept_sizings(f"c{k}")
    assert kept.kept_sizings("a") is first
    kept.kept_sizings("d")
    kept.kept_sizings("e")
    kept.kept_sizings("f")
    kept.kept_sizings("g")
    assert kept.kept_sizings("a") is not first  # dropped: a new, empty store


def test_the_key_of_a_kept_sizing_names_the_physics_it_read(catalog, thirty):
    """Two owned columns alike in everything the per-row key holds (members, shares, targets, per-row service and
    prefill) but with another memory efficiency step at another speed: their sizings are keyed apart, so a plan
    never takes a sizing made with other physics from a store it shares."""
    inp = evaluate(_fresh(catalog), thirty, Scenario(fleet_nodes=0)).plan_inputs
    pos = next(p for p, o in enumerate(inp.owned) if o.eff is not None)
    route = inp.owned[pos]
    slower = dataclasses.replace(route, eff=dataclasses.replace(route.eff, mem=route.eff.mem * 0.9))
    other = dataclasses.replace(inp, owned=type(inp.owned)([*inp.owned[:pos], slower, *inp.owned[pos + 1:]]))
    rows, shares = np.array([0, 1]), np.ones(2)
    key = Sizer(inp)._shared_key(pos, rows, shares, inp.slo_ms[rows], 2)
    other_key = Sizer(other)._shared_key(pos, rows, shares, inp.slo_ms[rows], 2)
    assert key[1:] == other_key[1:]  # the per-row part cannot tell them apart
    assert key != other_key


def test_the_dashboard_shares_one_catalog_so_its_sizings_are_kept(app_db):
    """Every rerun and session of the dashboard reads the same catalog object (a cached resource, not a copy per
    call), so the sizings it keeps serve the next sidebar change."""
    from dashboard import state

    version = state.data_version()
    first = state.catalog(version)
    assert state.catalog(version) is first
    assert first.kept_sizings("x") is state.catalog(version).kept_sizings("x")


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), rows=st.integers(6, 14),
       scenarios=st.lists(st.fixed_dictionaries({
           "fleet_nodes": st.integers(0, 3),
           "api_price_scale": st.sampled_from([0.5, 1.0, 2.0, 4.0]),
           "node_usd_per_hour": st.sampled_from([None, 25.0, 60.0, 150.0]),
           "cost_basis": st.sampled_from(list(CostBasis)),
           "pricing_option": st.sampled_from([PricingOption.ON_DEMAND, PricingOption.SAVINGS_3Y]),
           "sla_percentile": st.sampled_from([0.9, 0.95])}), min_size=2, max_size=3))
def test_any_sequence_of_scenarios_plans_what_a_fresh_catalog_plans(catalog, seed, rows, scenarios):
    """Property: a generated inventory planned under a sequence of scenarios with one catalog (each plan taking the
    sizings the earlier ones kept) plans, scenario by scenario, exactly what a catalog with nothing kept plans."""
    inv = synthetic_inventory(rows, seed=seed)
    kept = _fresh(catalog)
    for fields in scenarios:
        sc = Scenario(**fields)
        _assert_same_plan(evaluate(kept, inv, sc), evaluate(_fresh(catalog), inv, sc))


def test_a_store_grown_past_its_bound_starts_again(catalog, monkeypatch):
    """A store holding more than KEPT_SIZINGS_MAX sizings (many inventories planned with one catalog) is emptied
    when next asked for, so a long-running server or bench does not hold every pool it ever sized."""
    from core import catalog as catalog_mod

    monkeypatch.setattr(catalog_mod, "KEPT_SIZINGS_MAX", 3)
    kept = _fresh(catalog)
    store = kept.kept_sizings("a")
    store.update({k: None for k in range(3)})
    assert kept.kept_sizings("a") is store and len(store) == 3
    store[3] = None
    fresh = kept.kept_sizings("a")
    assert fresh is not store and fresh == {}
