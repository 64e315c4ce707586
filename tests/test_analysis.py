"""What-if views: fleet options, architecture comparison, SLA sweep and price sensitivity."""

from __future__ import annotations

import pytest

from core.decision import analysis
from core.decision.engine import evaluate
from core.models import HOURS_PER_MONTH, Scenario
from tests.test_engine import _seed_catalog


@pytest.fixture(scope="module")
def ev(bank):
    return evaluate(_seed_catalog(), bank, Scenario())


def test_fleet_options_price_nodes_at_the_node_rate(ev):
    """Owned cost of an option = max(its nodes, owned) x $33.02 x 730 h; its bill adds API spend and licences."""
    opts = analysis.fleet_options(ev).set_index("option")
    for name, row in opts.iterrows():
        assert row["owned_monthly_usd"] == pytest.approx(row["owned_nodes"] * 33.02 * HOURS_PER_MONTH)
        assert row["monthly_usd"] == pytest.approx(row["owned_monthly_usd"] + row["api_monthly_usd"]
                                                   + row["licence_monthly_usd"])
        assert row["workloads_served"] + row["workloads_unserved"] == len(ev.workloads), name
    # Five of the seven sample workloads may not leave the bank: all-API cannot serve them.
    assert opts.loc["All on public APIs", "workloads_unserved"] == 5
    assert opts.loc["All on public APIs", "nodes_needed"] == 0
    # The recommended plan serves at least as many workloads as any narrower option.
    assert opts.loc["Recommended mix", "workloads_served"] == opts["workloads_served"].max()


def test_architecture_comparison_words_only_what_is_shown(ev):
    cmp = analysis.architecture_comparison(ev)
    interactive = ev.workloads["latency_slo_ms"].notna().sum()
    owned = sum(r.hosting == "owned" for r in ev.routes)
    assert len(cmp) == interactive * owned
    assert cmp.loc[cmp["feasible"] & cmp["permitted"], "why_not"].isna().all()
    # A route the plan may not use (licensed weights, fee not entered) says so where it could hold the work.
    barred = cmp[cmp["feasible"] & ~cmp["permitted"]]
    assert not barred.empty and barred["why_not"].str.contains("licence").all()
    # onboarding-rt: no plain AR route is feasible, so the fastest refused one carries its reason.
    ar = cmp[(cmp["workload_id"] == "onboarding-rt") & (cmp["architecture"] == "autoregressive")]
    assert not ar["feasible"].any()
    assert ar["why_not"].notna().sum() >= 1
    full = analysis.architecture_comparison(ev, explain="all")
    assert full.loc[~full["feasible"], "why_not"].notna().all()


@pytest.mark.slow
def test_sla_sweep_keeps_every_option_and_scale(bank):
    sweep = analysis.sla_sweep(_seed_catalog(), bank, Scenario(), scales=(0.5, 1.0, 2.0))
    assert set(sweep["sla_scale"]) == {0.5, 1.0, 2.0}
    assert set(sweep["option"]) == set(analysis.FLEET_OPTIONS)
    mix = sweep[sweep["option"] == "Recommended mix"].set_index("sla_scale")
    # Looser targets never leave more workloads unserved.
    assert mix.loc[2.0, "workloads_unserved"] <= mix.loc[1.0, "workloads_unserved"] <= mix.loc[0.5, "workloads_unserved"]


@pytest.mark.slow
def test_sensitivity_moves_with_prices(ev, bank):
    """API spend scales exactly with API prices when no verdict moves; node price x2 doubles owned cost."""
    sens = analysis.sensitivity(_seed_catalog(), bank, ev).set_index("case")
    base = sens.loc["As assumed"]
    assert base["verdicts_changed"] == 0
    half = sens.loc["API prices × 0.5"]
    if half["verdicts_changed"] == 0:
        assert half["api_monthly_usd"] == pytest.approx(base["api_monthly_usd"] * 0.5, abs=0.01)  # both in cents
    assert sens.loc["Node prices × 2", "total_monthly_usd"] > base["total_monthly_usd"]
    assert sens.loc["Node prices × 0.5", "total_monthly_usd"] < base["total_monthly_usd"]
