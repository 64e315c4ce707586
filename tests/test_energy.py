"""Energy by utilization (core.decision.energy): the formula, the sample's owned-TCO bill, the line reconciled."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.decision import contract, energy
from core.decision.engine import evaluate
from core.models import HOURS_PER_MONTH, Scenario
from core.store.seed import sample_workloads_path


def test_energy_of_three_h100_nodes_at_13_percent():
    """idle 2.6 kW, busy 10.2 kW, PUE 1.3, $0.10/kWh: 2.6 + 7.6 x 0.13 = 3.588 kW; x 1.3 x 0.10 = $0.46644 per
    node-hour; x 730 h x 3 nodes = $1,021.50 a month. Idle (u = 0): 2.6 x 0.13 x 730 x 3 = $740.22; busy (u = 1):
    10.2 x 0.13 x 730 x 3 = $2,903.94."""
    assert round(float(energy.energy_usd_per_month(3, 0.13, 2.6, 10.2, 1.3, 0.10)), 2) == 1021.50
    assert round(float(energy.energy_usd_per_month(3, 0.0, 2.6, 10.2, 1.3, 0.10)), 2) == 740.22
    assert round(float(energy.energy_usd_per_month(3, 1.0, 2.6, 10.2, 1.3, 0.10)), 2) == 2903.94


@settings(max_examples=50, deadline=None)
@given(u1=st.floats(0.0, 1.0), u2=st.floats(0.0, 1.0), nodes=st.integers(0, 50))
def test_energy_grows_with_utilization_between_idle_and_busy(u1, u2, nodes):
    lo, hi = sorted((u1, u2))
    a, b = (float(energy.energy_usd_per_month(nodes, u, 2.6, 10.2, 1.3, 0.10)) for u in (lo, hi))
    assert a <= b + 1e-9
    assert nodes * 2.6 * 0.13 * HOURS_PER_MONTH - 1e-6 <= a and b <= nodes * 10.2 * 0.13 * HOURS_PER_MONTH + 1e-6


def test_every_gpu_row_is_sourced_dated_and_idle_below_busy():
    for gpu in ("H100 SXM", "H200 SXM", "B200"):
        p = energy.node_power(gpu)
        assert p is not None and 0 < p.idle_kw < p.busy_kw and p.source and p.as_of and p.confidence == "estimate"


def test_the_samples_owned_tco_bill_carries_energy_at_the_plans_utilization(seed_catalog):
    """The bank on 1 owned + 2 bought H100 nodes priced at their TCO (data/owned_hardware.csv: 8 kW average,
    PUE 1.3, $0.10/kWh: $1.04 of power per node-hour). The plan's utilization u = 0.1287604 (GPU-hours busy over
    the 3 nodes' 24 GPUs): 2.6 + 7.6 u = 3.578579 kW; x 1.3 x 0.10 x 730 = $339.6071 a node; x 3 = $1,018.82 a
    month, instead of the flat 8 kW: 8 x 0.13 x 730 x 3 = $2,277.60. The node lines fall by the difference,
    $1,258.78: 3 x 14.396164 x 730 = $31,527.60 becomes $30,268.82 (without energy 3 x 13.356164 x 730 =
    $29,250.00)."""
    ev = evaluate(seed_catalog, pd.read_csv(sample_workloads_path()), Scenario(pricing_option="owned"))
    f = ev.fleet
    assert f.nodes_needed == 3 and f.utilization == pytest.approx(0.1287604, abs=1e-6)
    assert f.energy_usd_per_month == 1018.82 and f.energy.flat_usd_per_month == 2277.60
    assert round(f.owned_monthly_usd + f.extra_nodes_monthly_usd, 2) == 30268.82
    j = contract.fleet_json(ev)
    e = j["energy"]
    # The bill reconciles to the cent: nodes without energy + energy + API + licences.
    assert e["nodes_without_energy_usd_per_month"] == 29250.00
    assert round(e["nodes_without_energy_usd_per_month"] + j["energy_usd_per_month"] + j["api_monthly_usd"]
                 + j["licence_monthly_usd"], 2) == j["total_monthly_usd"]
    assert round(f.attributed_usd_per_month + f.unallocated_usd_per_month, 2) == f.total_monthly_usd
    assert f.unallocated_usd_per_month >= -0.01


@pytest.mark.parametrize("option", ["savings_1y", "on_demand"])
def test_cloud_prices_have_no_energy_line(seed_catalog, option):
    ev = evaluate(seed_catalog, pd.read_csv(sample_workloads_path()), Scenario(pricing_option=option))
    assert ev.fleet.energy is None and ev.fleet.energy_usd_per_month == 0.0
    assert contract.fleet_json(ev)["energy"] is None


def test_the_overview_bill_has_energy_as_its_own_line_and_still_adds_up(seed_catalog):
    """Owned TCO on the sample: owned 1 node and new 2 nodes each lose their share of the $1,018.82 (owned
    round(1,018.82 / 3) = $339.61, new the rest, 1,018.82 - 339.61 = $679.21: largest remainder to the cent);
    the lines above the cash bill add up to it to the cent."""
    from core.presentation import views

    ev = evaluate(seed_catalog, pd.read_csv(sample_workloads_path()), Scenario(pricing_option="owned"))
    bill = views.cash_bill(ev).set_index("line")["usd_per_month"]
    f = ev.fleet
    assert bill["Energy"] == 1018.82
    assert bill["Owned nodes, without energy"] == round(f.owned_monthly_usd - 339.61, 2)
    assert bill["New nodes, without energy"] == round(f.extra_nodes_monthly_usd - 679.21, 2)
    parts = ["Owned nodes, without energy", "New nodes, without energy", "Energy", "Public APIs", "Licences"]
    assert round(float(bill[parts].sum()), 2) == bill["Cash bill"] == f.total_monthly_usd
