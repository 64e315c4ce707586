"""Burst instead of buy (core.decision.burst): hand-worked costs, the base fleet chosen, flat profiles."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.decision import burst
from core.decision.engine import evaluate
from core.models import Scenario
from core.store.seed import sample_workloads_path
from tests.test_pages_answer import app, show, start  # noqa: F401 - fixtures shared with the answer pages' tests

PEAK_4H = np.array([1] * 9 + [3] * 4 + [1] * 11)  # 3 nodes from 09:00 to 13:00, 1 otherwise


def test_four_peak_hours_needing_two_more_nodes_burst_from_one_owned():
    """1 owned at $33.02 (1-y plan), on-demand $55.04, no warm-up; the month is 730 h = 730/24 days.

    All owned: 3 x 33.02 x 730 = 72,313.80.
    Base 1: 2 nodes x 4 h x 730/24 = 243.333 node-hours x 55.04 = 13,393.07; + 1 x 33.02 x 730 = 24,104.60:
    37,497.67. Base 2: 1 x 4 x 730/24 = 121.667 h x 55.04 = 6,696.53; + 2 x 33.02 x 730 = 48,209.20: 54,905.73.
    Base 1 is cheapest: saves 72,313.80 - 37,497.67 = 34,816.13.
    """
    b = burst.plan_burst(PEAK_4H, 1, 33.02, 55.04, warmup_hours=0.0)
    assert b.cost_by_base == ((1, 37497.67), (2, 54905.73), (3, 72313.8))
    assert (b.base_nodes, b.burst_node_hours, b.all_owned_usd, b.burst_usd) == (1, 243.33, 72313.8, 37497.67)
    assert b.wins and b.saves_usd == 34816.13


def test_warm_up_is_paid_once_per_run_around_the_cycle():
    """Each rented node runs once a day (09-13): 2 runs x 0.25 h x 730/24 = 15.208 node-hours more than 243.333.
    A run over midnight (hours 22, 23, 0, 1) is one run: (4 + 0.25) x 730/24 = 129.27."""
    assert burst.burst_hours(PEAK_4H, np.array([1]), 0.25)[0] == pytest.approx((8 + 0.5) * 730 / 24)
    night = np.array([2, 2] + [1] * 20 + [2, 2])
    assert burst.burst_hours(night, np.array([1]), 0.25)[0] == pytest.approx(4.25 * 730 / 24)


def test_long_peaks_do_not_burst():
    """Peak 18 h a day: a rented node costs 18 x 55.04 = 990.72 a day against 24 x 33.02 = 792.48 owned."""
    need = np.array([1] * 6 + [2] * 18)
    b = burst.plan_burst(need, 1, 33.02, 55.04, warmup_hours=0.0)
    assert not b.wins and b.base_nodes == 2 and b.burst_usd == b.all_owned_usd == round(2 * 33.02 * 730, 2)
    assert "does not win" in burst.verdict(b)


def test_hourly_nodes_scale_replicas_with_traffic():
    """One pool of 3 replicas x 8 GPUs on 8-GPU nodes: traffic at 0.5 of its peak -> ceil(1.5) = 2 replicas = 2
    nodes; at 0.1 -> 1 (one warm replica while there is traffic); at 0 -> 0. With a second pool of 1 x 2 GPUs busy
    in the first two hours: 3 x 8 + 2 = 26 GPUs -> ceil(26/8) = 4 nodes; 2 x 8 + 2 = 18 -> 3; 8 -> 1; 0."""
    ratio = np.array([[1.0, 0.5, 0.1, 0.0]])
    assert burst.hourly_nodes(np.array([3]), np.array([8]), ratio, 8, 3).tolist() == [3, 2, 1, 0]
    two = np.array([[1.0, 0.5, 0.1, 0.0], [1.0, 1.0, 0.0, 0.0]])
    assert burst.hourly_nodes(np.array([3, 1]), np.array([8, 2]), two, 8, 4).tolist() == [4, 3, 1, 0]


def test_batch_work_sets_the_smallest_base():
    """Interactive GPUs 16 for 12 h, 0 otherwise, 8-GPU nodes; 200 batch GPU-hours a day. Base 0: no room. Base 1:
    8 x 12 h spare = 96 < 200. Base 2: 16 x 12 = 192 < 200. Base 3: 8 x 12 + 24 x 12 = 384 >= 200."""
    gpus = np.array([16.0] * 12 + [0.0] * 12)
    assert burst.min_base_for_batch(gpus, 200.0, 1, 8, 5) == 3
    assert burst.min_base_for_batch(gpus, 0.0, 0, 8, 5) == 0


@settings(max_examples=60, deadline=None)
@given(need=st.lists(st.integers(0, 6), min_size=24, max_size=24), owned=st.integers(0, 4),
       base=st.floats(5.0, 80.0), od=st.floats(5.0, 150.0), warm=st.sampled_from([0.0, 0.25]))
def test_chosen_burst_never_costs_more_than_owning_all(need, owned, base, od, warm):
    b = burst.plan_burst(np.array(need), owned, base, od, warmup_hours=warm)
    assert b.burst_usd <= b.all_owned_usd
    assert b.base_nodes >= min(owned, max(max(need), owned))
    if b.wins:
        assert b.burst_node_hours > 0 and b.burst_usd < b.all_owned_usd


@settings(max_examples=40, deadline=None)
@given(level=st.integers(0, 8), owned=st.integers(0, 4), base=st.floats(5.0, 80.0), od=st.floats(1.0, 150.0),
       hours=st.sampled_from([24, 168]))
def test_a_flat_profile_never_bursts(level, owned, base, od, hours):
    """Even with on-demand cheaper than the base price: a node rented every hour is a purchase option, not burst."""
    b = burst.plan_burst(np.full(hours, level), owned, base, od)
    assert b.flat and not b.wins and b.base_nodes == max(level, owned) and b.burst_node_hours == 0
    if level > owned:
        assert "cannot win" in burst.verdict(b)


def test_the_sample_bursts_its_office_hour_peaks(seed_catalog):
    """The bank's plan: 1 owned + 2 new H100 nodes at the 1-y price (3 x 33.02 x 730 = $72,313.80), the new ones
    for the office-hour peak (3 nodes at 10-11 h and 14 h, none overnight). Keeping the owned node and renting the
    peaks on demand (AWS p5 $55.04 a node-hour, ~418 node-hours) is cheaper: 24,104.60 + 418.23 x 55.04 ≈ $47,124."""
    ev = evaluate(seed_catalog, pd.read_csv(sample_workloads_path()), Scenario())
    j = burst.burst_json(ev)
    assert j["priced"] and j["wins"] and j["base_nodes"] == 1 and j["all_owned_usd_per_month"] == 72313.8
    assert max(j["hourly_nodes"]) == ev.fleet.nodes_needed and min(j["hourly_nodes"]) < ev.fleet.nodes_needed
    # Base 1 x 33.02 x 730 + the rented node-hours (shown to the hundredth) x 55.04.
    assert j["burst_usd_per_month"] == pytest.approx(33.02 * 730 + j["burst_node_hours_per_month"] * 55.04, abs=0.3)
    assert j["on_demand_as_of"] and j["on_demand_source"]


@pytest.mark.slow
def test_fleet_page_shows_burst_against_owning_on_the_sample(app, monkeypatch):  # noqa: F811
    """Fleet sizing: the verdict (keep the 1 owned node, rent the office-hour peaks) and the cost per base fleet:
    bases 1 and 2 cheaper than owning all 3, base 3 the all-owned $72,314 (3 x 33.02 x 730 = 72,313.80)."""
    from tests.apptest_support import sweep_on_demand

    sweep_on_demand(monkeypatch)
    at = show(app, "screens/fleet.py")
    assert not at.exception
    words = " ".join(m.value for m in at.markdown)
    assert "Renting the peaks wins: keep 1 node all month" in words
    table = next(t.value for t in at.table if "Nodes kept all month" in t.value.columns)
    assert table["Nodes kept all month"].tolist() == ["1", "2", "3"]
    assert table.iloc[-1, 3].replace("\\", "") == "$72,314"  # nodes $ a month, owning all 3
    assert any("AWS p5.48xlarge" in c.value and "2026-01-01" in c.value for c in at.caption)
