"""Golden numbers and properties for the money formulas (core.decision.economics)."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.decision.economics import (
    api_usd_per_request,
    break_even_utilization,
    cash_bill,
    effective_usd_per_mtok,
    idle_usd,
    node_rate,
)
from core.errors import InputError
from core.models import ApiPrice, CostBasis, NodePrice, OwnedHardware, PricingOption, Scenario


def test_effective_cost_golden():
    """$33/hour at 5,000 tok/s.

    Full utilization: 33 / (5,000 x 3,600) x 1e6 = 33 / 18,000,000 x 1e6 = $1.8333 per M tokens.
    Half utilization: 33 / (5,000 x 3,600 x 0.5) x 1e6 = $3.6667 per M tokens.
    """
    assert effective_usd_per_mtok(33.0, 5000.0, 1.0) == pytest.approx(1.8333, abs=1e-4)
    assert effective_usd_per_mtok(33.0, 5000.0, 0.5) == pytest.approx(3.6667, abs=1e-4)
    assert effective_usd_per_mtok(33.0, 5000.0, 0.0) == float("inf")


def test_p5_on_demand_vs_one_year_plan(store):
    """AWS p5.48xlarge from the seed: $55.04/hour on demand, $33.02 with the 40 %-off 1-year plan.

    55.04 x 0.6 = 33.024, stored as 33.02. At 5,000 tok/s fully used:
    on demand 55.04 / 18,000,000 x 1e6 = $3.0578/M; 1-year 33.02 / 18,000,000 x 1e6 = $1.8344/M.
    A month (8,760 / 12 = 730 h): 55.04 x 730 = $40,179.20 vs 33.02 x 730 = $24,104.60.
    """
    prices, owned = store.node_prices(), store.owned_hardware()
    od = node_rate(Scenario(pricing_option=PricingOption.ON_DEMAND), prices, owned)
    sp = node_rate(Scenario(pricing_option=PricingOption.SAVINGS_1Y), prices, owned)
    assert od.usd_per_node_hour == pytest.approx(55.04)
    assert sp.usd_per_node_hour == pytest.approx(33.02)
    assert sp.usd_per_node_hour == pytest.approx(od.usd_per_node_hour * 0.6, abs=0.01)
    assert effective_usd_per_mtok(od.usd_per_node_hour, 5000, 1) == pytest.approx(3.0578, abs=1e-4)
    assert effective_usd_per_mtok(sp.usd_per_node_hour, 5000, 1) == pytest.approx(1.8344, abs=1e-4)
    assert od.usd_per_node_hour * 730 == pytest.approx(40179.2)
    assert sp.usd_per_node_hour * 730 == pytest.approx(24104.6)
    assert od.as_of == "2026-01-01" and "p5" in od.label
    assert sp.confidence == "unverified"


def test_marginal_basis_reserved_is_free_on_demand_is_not(store):
    """Reserved capacity is already committed (marginal 0); on-demand can be released (marginal = full)."""
    prices, owned = store.node_prices(), store.owned_hardware()
    sp = node_rate(Scenario(cost_basis=CostBasis.MARGINAL), prices, owned)
    od = node_rate(Scenario(cost_basis=CostBasis.MARGINAL, pricing_option="on_demand"), prices, owned)
    assert sp.usd_per_node_hour == 0.0 and sp.full_usd_per_node_hour == pytest.approx(33.02)
    assert od.usd_per_node_hour == pytest.approx(55.04)


def test_owned_hardware_rate_full_and_marginal(store):
    """Seed 8xH100 server: capex $300,000, 4 years, 8 % capital, 8 kW, PUE 1.3, $0.10/kWh, $30,000/yr support.

    capital = (300,000 / 4 + 300,000 x 0.5 x 0.08) / 8,760 = (75,000 + 12,000) / 8,760 = $9.9315/h
    power   = 8 x 1.3 x 0.10 = $1.04/h;  support = 30,000 / 8,760 = $3.4247/h
    full = 9.9315 + 1.04 + 3.4247 = $14.3962/h; marginal = 1.04 + 3.4247 = $4.4647/h
    """
    owned = store.owned_hardware()
    full = node_rate(Scenario(pricing_option="owned"), [], owned)
    marginal = node_rate(Scenario(pricing_option="owned", cost_basis="marginal"), [], owned)
    assert full.usd_per_node_hour == pytest.approx(14.3962, abs=1e-3)
    assert marginal.usd_per_node_hour == pytest.approx(4.4647, abs=1e-3)
    assert full.confidence == "estimate"


def test_override_wins_and_missing_option_is_named():
    rate = node_rate(Scenario(node_usd_per_hour=12.5), [], [])
    assert rate.usd_per_node_hour == 12.5 and rate.confidence == "user"
    with pytest.raises(InputError, match="no savings_1y node price for GPU 'L40S'"):
        node_rate(Scenario(gpu="L40S"), [], [])
    with pytest.raises(InputError, match="owned-hardware figures"):
        node_rate(Scenario(gpu="L40S", pricing_option="owned"), [], [])


def _api(**kw) -> ApiPrice:
    base = dict(provider="X", model="m", tier="mid", usd_per_mtok_in=2.0, usd_per_mtok_cached_in=0.5,
                usd_per_mtok_out=8.0, ttft_ms=500, output_tokens_per_s=80, quality_extraction=0.9,
                quality_code_completion=0.9, quality_chat=0.9, quality_agentic_step=0.9, quality_reasoning=0.9,
                source="test", as_of=dt.date(2026, 8, 1))
    return ApiPrice(**{**base, **kw})


def test_api_cost_per_request_golden():
    """1,000 input tokens (40 % cached) and 300 output at $2 / $0.50 cached / $8 per M.

    600 x 2 + 400 x 0.5 + 300 x 8 = 1,200 + 200 + 2,400 = 3,800 per M -> $0.0038 per request;
    with prices doubled: $0.0076. Without a cached price, cached tokens pay the full input price:
    1,000 x 2 + 300 x 8 = 4,400 -> $0.0044.
    """
    assert float(api_usd_per_request(_api(), 1000, 300, 0.4)) == pytest.approx(0.0038)
    assert float(api_usd_per_request(_api(), 1000, 300, 0.4, scale=2.0)) == pytest.approx(0.0076)
    assert float(api_usd_per_request(_api(usd_per_mtok_cached_in=None), 1000, 300, 0.4)) == pytest.approx(0.0044)


def test_break_even_and_idle_golden():
    """Break-even: $33/h at 5,000 tok/s vs an API at $8/M: 33 / (5,000 x 3,600 x 8e-6) = 33 / 144 = 0.2292.

    Idle: 8 GPUs x 730 h = 5,840 GPU-hours at $4.1275 with 25 % utilization:
    5,840 x 4.1275 x 0.75 = $18,078.45.
    """
    assert break_even_utilization(33.0, 5000.0, 8.0) == pytest.approx(0.229167, abs=1e-6)
    assert idle_usd(5840, 4.1275, 0.25) == pytest.approx(18078.45)
    assert break_even_utilization(33.0, 0.0, 8.0) == float("inf")


@given(st.floats(1, 500), st.floats(1, 1e5), st.floats(0.01, 1.0), st.floats(0.01, 1.0))
def test_cost_per_token_falls_as_utilization_rises(usd_per_hour, tps, u1, u2):
    lo, hi = sorted((u1, u2))
    assert effective_usd_per_mtok(usd_per_hour, tps, hi) <= effective_usd_per_mtok(usd_per_hour, tps, lo)


@given(st.floats(0.0, 1e6), st.floats(0.01, 100), st.floats(0, 1))
def test_idle_cost_is_bounded_by_the_bill(gpu_hours, rate, util):
    cost = idle_usd(gpu_hours, rate, util)
    assert 0.0 <= cost <= gpu_hours * rate + 1e-6


def _owned(**kw):
    base = dict(name="n", gpu="H100 SXM", gpus_per_node=8, capex_usd_per_node=300000, depreciation_years=4,
                cost_of_capital_rate=0.08, kw_per_node=8, pue=1.3, usd_per_kwh=0.1, support_usd_per_year=30000,
                source="t", as_of=dt.date(2026, 1, 1))
    return OwnedHardware(**{**base, **kw})


def test_scenario_owned_hardware_overrides_seed():
    rate = node_rate(Scenario(pricing_option="owned", owned_hardware=_owned(capex_usd_per_node=600000)), [], [])
    assert rate.usd_per_node_hour > _owned().full_usd_per_hour


def test_node_price_prefers_named_provider():
    rows = [NodePrice(provider=p, instance="i", gpu="H100 SXM", gpus_per_node=8, pricing_option="on_demand",
                      usd_per_node_hour=v, source="s", as_of=dt.date(2026, 1, 1)) for p, v in (("AWS", 55.0), ("RunPod", 16.0))]
    assert node_rate(Scenario(pricing_option="on_demand"), rows, []).usd_per_node_hour == 55.0
    assert node_rate(Scenario(pricing_option="on_demand", node_provider="RunPod"), rows, []).usd_per_node_hour == 16.0
    assert node_rate(Scenario(pricing_option="on_demand", node_provider="Nobody"), rows, []).usd_per_node_hour == 16.0


def test_cash_bill_golden():
    """1 owned node, 3 needed at $33.02/node-hour, $1,657.33 of APIs, no licences (the sample's plan under model v3).

    Nodes: 3 x 33.02 x 730 = 72,313.80 (owned 1 x 24,104.60 + new 2 x 24,104.60 = 48,209.20);
    total 72,313.80 + 1,657.33 + 0 = 73,971.13. More owned than needed: 4 owned, 3 needed pays for 4 and buys none.
    """
    bill = cash_bill(1, 3, 33.02, 1657.33, 0.0).in_cents()
    assert (bill.owned_usd, bill.new_nodes_usd, bill.nodes_usd) == (24104.6, 48209.2, 72313.8)
    assert (bill.api_usd, bill.licence_usd, bill.total) == (1657.33, 0.0, 73971.13)
    idle = cash_bill(4, 3, 33.02, 0.0, 0.0)
    assert idle.new_nodes_usd == 0.0 and idle.nodes_usd == pytest.approx(4 * 24104.6)


@given(st.integers(0, 50), st.integers(0, 50), st.floats(0.0, 200.0), st.floats(0.0, 1e6), st.floats(0.0, 1e5))
def test_cash_bill_parts_add_up(owned, needed, rate, api, licence):
    """The total is the nodes held (at least those owned) + APIs + licences; in cents the printed parts add up to
    the printed total exactly, and never move it by more than a cent per part."""
    bill = cash_bill(owned, needed, rate, api, licence)
    assert bill.nodes_usd == pytest.approx(bill.owned_usd + bill.new_nodes_usd, rel=1e-12, abs=1e-9)
    assert bill.total == bill.nodes_usd + api + licence
    cents = bill.in_cents()
    assert cents.total == round(cents.owned_usd + cents.new_nodes_usd + cents.api_usd + cents.licence_usd, 2)
    assert cents.total == pytest.approx(bill.total, abs=0.021)
