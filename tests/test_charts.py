"""Chart builders of the answer pages (core/charts.py): trace data, axis types and titles, not pixels."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from core.presentation import charts


def _list(values) -> list:
    """A trace's tuple or numpy array as a plain list."""
    return np.asarray(values, dtype=object).tolist()


def test_verdict_mix_counts_each_group_in_its_own_colour_owned_first():
    fig = charts.verdict_mix_chart({"autoregressive (API)": 2, "diffusion (owned)": 3, "moe (owned)": 1})
    (bar,) = fig.data
    # Horizontal bars list bottom-up, so the first group (owned autoregressive order: moe, diffusion, API) is last.
    assert _list(bar.y) == ["Autoregressive, API", "Diffusion, owned", "MoE, owned"]
    assert _list(bar.x) == [2, 3, 1]
    assert list(bar.marker.color) == [charts.GROUP_COLORS["autoregressive (API)"],
                                      charts.GROUP_COLORS["diffusion (owned)"], charts.GROUP_COLORS["moe (owned)"]]
    assert bar.orientation == "h"
    assert fig.layout.title.text.startswith("Verdict mix")
    assert fig.layout.xaxis.title.text == "Workloads"


def test_verdict_mix_ticks_every_workload_only_while_few():
    """7 workloads: a tick at each whole workload (no 0.5 ticks). 100: Plotly's own spacing; dtick=1 drew a label
    per workload up to 49, over one another (seen on the Overview of a generated 100-workload inventory)."""
    assert charts.verdict_mix_chart({"moe (owned)": 5, "autoregressive (API)": 2}).layout.xaxis.dtick == 1
    assert charts.verdict_mix_chart({"moe (owned)": 49, "diffusion (owned)": 35}).layout.xaxis.dtick is None


def test_verdict_mix_keeps_unknown_groups_and_no_route():
    fig = charts.verdict_mix_chart({"no feasible route": 1, "quantum (owned)": 4})
    (bar,) = fig.data
    assert "No feasible route" in _list(bar.y)
    assert sum(_list(bar.x)) == 5


def test_utilization_chart_has_24_hours_both_series_and_a_percent_axis():
    with_batch = [0.5] * 6 + [0.2] * 18
    without = [0.0] * 6 + [0.2] * 18
    fig = charts.utilization_chart(with_batch, without, owned_nodes=2)
    names = [t.name for t in fig.data]
    assert names == ["With batch fill", "Interactive only"]
    assert _list(fig.data[0].y) == with_batch
    assert _list(fig.data[1].y) == without
    assert _list(fig.data[0].x)[0] == "00:00" and _list(fig.data[0].x)[-1] == "23:00"
    assert fig.layout.barmode == "overlay"  # batch bar behind the interactive one, not stacked on it
    assert fig.layout.yaxis.tickformat == ".0%"
    assert tuple(fig.layout.yaxis.range) == (0, 1.05)
    assert "2 owned nodes" in fig.layout.title.text
    assert not fig.layout.annotations


def test_utilization_chart_says_so_when_nothing_is_owned():
    fig = charts.utilization_chart([0.0] * 24, [0.0] * 24, owned_nodes=0)
    assert any("No owned nodes" in a.text for a in fig.layout.annotations)
    assert "0 owned nodes" in fig.layout.title.text


def test_utilization_chart_names_the_plan_nodes_when_more_than_owned():
    fig = charts.utilization_chart([0.1] * 24, [0.1] * 24, owned_nodes=1, plan_nodes=3)
    assert "plan's 3 nodes" in fig.layout.title.text and "1 owned node" in fig.layout.title.text
    assert "plan's GPUs" in fig.layout.yaxis.title.text and not fig.layout.annotations


def _points() -> pd.DataFrame:
    return pd.DataFrame({
        "workload_id": ["chat", "batch", "nofloor", "coder"],
        "name": ["Chat", "Night batch", "No API good enough", "Coder"],
        "batchability_ms": [2000.0, 8 * 3.6e6, 500.0, 400.0],
        "batchability": ["latency target", "batch window", "latency target", "latency target"],
        "value_usd_per_mtok": [0.7, 1.15, np.nan, 8.9],
        "group": ["autoregressive (API)", "moe (owned)", "diffusion (owned)", "diffusion (owned)"],
        "route": ["Flash (API)", "Qwen MoE", "Mercury", "Mercury"],
        "monthly_usd": [230.0, 205.0, 100.0, 6000.0],
    })


def test_routing_map_is_log_log_one_trace_per_verdict_group_and_drops_points_without_a_value():
    fig = charts.routing_map_chart(_points())
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    by_name = {t.name: t for t in fig.data}
    assert set(by_name) == {"MoE, owned", "Diffusion, owned", "Autoregressive, API"}
    # "nofloor" has no acceptable API (value NaN): it cannot sit on a log axis and is counted in the title instead.
    assert _list(by_name["Diffusion, owned"].text) == ["coder"]
    assert _list(by_name["Diffusion, owned"].x) == [400.0]
    assert _list(by_name["MoE, owned"].x) == [8 * 3.6e6]
    assert _list(by_name["MoE, owned"].y) == [1.15]
    assert by_name["MoE, owned"].marker.color == charts.GROUP_COLORS["moe (owned)"]
    assert "1 workload without an acceptable API not shown" in fig.layout.title.text
    assert "Batchability" in fig.layout.xaxis.title.text
    assert "Value of the token" in fig.layout.yaxis.title.text
    # The x range covers the points (log10 units) and the readable ticks.
    lo, hi = fig.layout.xaxis.range
    assert lo < math.log10(400.0) and hi > math.log10(24 * 3.6e6)


def test_routing_map_without_missing_values_has_a_plain_title():
    fig = charts.routing_map_chart(_points().dropna())
    assert "not shown" not in fig.layout.title.text


def test_gpus_by_route_marks_the_owned_gpus_and_labels_nodes_or_batch_average():
    routes = pd.DataFrame({"route_id": ["owned:a", "owned:b"], "route": ["Big MoE", "Small MoE"],
                           "architecture": ["moe", "moe"], "gpus": [8.0, 0.07], "nodes": [1, None],
                           "monthly_usd": [24000.0, 205.0]})
    fig = charts.gpus_by_route_chart(routes, owned_gpus=16)
    (bar,) = fig.data
    assert _list(bar.y) == ["Small MoE", "Big MoE"]  # largest on top
    assert _list(bar.x) == [0.07, 8.0]
    assert _list(bar.text) == ["0.1 GPUs (batch, daily average)", "8.0 GPUs · 1 node"]
    (line,) = fig.layout.shapes
    assert line.x0 == 16 and line.x1 == 16
    assert any("you own 16 GPUs" in a.text for a in fig.layout.annotations)
    assert fig.layout.title.text == "GPUs held by each owned route"


def test_gpus_by_route_draws_no_owned_line_for_an_empty_fleet():
    routes = pd.DataFrame({"route_id": ["owned:a"], "route": ["A"], "architecture": ["diffusion"], "gpus": [3.0],
                           "nodes": [1], "monthly_usd": [12000.0]})
    assert not charts.gpus_by_route_chart(routes, owned_gpus=0).layout.shapes


def test_architecture_chart_groups_four_architectures_and_marks_infeasible_ones():
    side = pd.DataFrame({
        "workload_id": ["w1", "w1", "w1", "w1", "w2", "w2", "w2", "w2"],
        "architecture": ["autoregressive", "speculative", "moe", "diffusion"] * 2,
        "route": ["AR", "Spec", "MoE", "Diff"] * 2,
        "feasible": [False, True, True, True, True, True, False, True],
        "nodes": [np.nan, 1.0, 2.0, 1.0, 3.0, 1.0, np.nan, 1.0],
        "gpus_per_replica": [np.nan, 8.0, 4.0, 1.0, 8.0, 4.0, np.nan, 1.0],
        "max_concurrency_within_sla": [np.nan, 8.0, 4.0, 4.0, 1.0, 4.0, np.nan, 8.0],
        "p95_latency_ms": [1700.0, 900.0, 950.0, 830.0, 2900.0, 2600.0, 3100.0, 2900.0],
        "monthly_usd": [np.nan, 24000.0, 48000.0, 3000.0, 72000.0, 12000.0, np.nan, 3000.0],
        "why_not": ["too slow", None, None, None, None, None, "quality", None],
    })
    fig = charts.architecture_chart(side)
    assert fig.layout.barmode == "group"
    assert [t.name for t in fig.data] == ["Autoregressive", "Speculative", "MoE", "Diffusion"]
    ar, spec, moe, diff = fig.data
    assert _list(ar.x) == ["w1", "w2"]
    assert _list(ar.y) == [0.0, 3.0] and _list(ar.text) == ["✗", "3"]
    assert _list(moe.y) == [2.0, 0.0] and _list(moe.text) == ["2", "✗"]
    assert "8 requests per replica" in _list(spec.customdata)[0]
    assert ar.marker.color == charts.ARCH_COLORS["autoregressive"]
    assert fig.layout.yaxis.title.text == "Nodes at peak"


def _sweep() -> pd.DataFrame:
    rows = []
    for s, mix, api_unserved in ((0.5, 3, 5), (1.0, 2, 5), (2.0, 1, 5)):
        rows.append({"sla_scale": s, "option": "Recommended mix", "owned_nodes": mix, "monthly_usd": mix * 24000.0,
                     "workloads_unserved": 0 if s > 0.5 else 1})
        rows.append({"sla_scale": s, "option": "All on public APIs", "owned_nodes": 0, "monthly_usd": 964.0,
                     "workloads_unserved": api_unserved})
    return pd.DataFrame(rows)


def test_sla_sweep_one_line_per_option_hollow_where_work_is_unserved():
    fig = charts.sla_sweep_chart(_sweep(), current_scale=1.0)
    assert [t.name for t in fig.data] == ["Recommended mix", "All on public APIs"]
    mix, api = fig.data
    assert _list(mix.x) == [0.5, 1.0, 2.0] and _list(mix.y) == [3, 2, 1]
    assert list(mix.marker.symbol) == ["circle-open", "circle", "circle"]
    assert set(api.marker.symbol) == {"circle-open"}
    assert fig.layout.xaxis.type == "log"
    assert list(fig.layout.xaxis.ticktext) == ["× 0.5", "× 1", "× 2"]
    (line,) = fig.layout.shapes
    assert line.x0 == 1.0
    # On a log axis an annotation is placed in log10 units: × 1 sits at 0.
    (note,) = [a for a in fig.layout.annotations if "sidebar" in a.text]
    assert note.x == pytest.approx(0.0)
    assert "SLA scale" in fig.layout.title.text


def test_sla_sweep_adds_the_sidebar_scale_as_a_tick_when_outside_the_sweep():
    fig = charts.sla_sweep_chart(_sweep(), current_scale=4.0)
    assert "× 4" in list(fig.layout.xaxis.ticktext)
    assert fig.layout.xaxis.range[1] > math.log10(4.0)


def test_fleet_options_stack_owned_and_api_cost_and_flag_unserved_work():
    """The cash bill stacked (owned + APIs), then the unserved work priced as a third, hatched segment.

    All on public APIs: cash $964, its 5 unserved workloads priced at $120,000 -> $120,964 with them; the bar's
    label says both, so the option is not read as $48,209 cheaper than the recommended mix ($49,173, all served).
    """
    options = pd.DataFrame({
        "option": ["Recommended mix", "All on public APIs"],
        "monthly_usd": [49173.0, 964.0], "owned_monthly_usd": [48209.0, 0.0], "api_monthly_usd": [964.0, 964.0],
        "owned_nodes": [2, 0], "workloads_served": [7, 2], "workloads_unserved": [0, 5], "unserved": ["", "a, b"],
        "monthly_usd_with_unserved": [49173.0, 120964.0],
    })
    fig = charts.fleet_options_chart(options)
    assert fig.layout.barmode == "stack"
    owned, api, unserved = fig.data
    assert (owned.name, api.name) == ("Owned nodes", "Public APIs")
    assert unserved.name.startswith("Unserved work, priced")
    assert _list(owned.y) == ["All on public APIs (5 unserved)", "Recommended mix"]
    assert _list(owned.x) == [0.0, 48209.0] and _list(api.x) == [964.0, 964.0]
    assert _list(unserved.x) == [120000.0, 0.0]
    assert _list(unserved.text) == ["$964 → $120,964 with unserved", "$49,173"]
    assert fig.layout.xaxis.range[1] > 120964.0
    assert fig.layout.title.text.startswith("$ a month")


def test_architecture_chart_hatches_a_route_the_plan_may_not_use():
    """w1's diffusion bar is a licensed route without its fee (feasible, not permitted): hatched, its hover
    says so, and a legend entry explains the hatching; w2's diffusion bar and every other bar are plain."""
    side = pd.DataFrame({
        "workload_id": ["w1"] * 4 + ["w2"] * 4,
        "architecture": ["autoregressive", "speculative", "moe", "diffusion"] * 2,
        "route": ["AR", "Spec", "MoE", "Diff"] * 2, "feasible": [True] * 8,
        "permitted": [True, True, True, False, True, True, True, True],
        "nodes": [1.0] * 8, "gpus_per_replica": [8.0] * 8, "max_concurrency_within_sla": [4.0] * 8,
        "p95_latency_ms": [900.0] * 8, "monthly_usd": [1.0] * 8, "why_not": [None] * 8,
    })
    fig = charts.architecture_chart(side)
    *plain, diff, hatched, key = fig.data
    assert key.name.startswith("Licence fee not entered") and key.marker.pattern.shape == "/"
    assert _list(key.y) == [0.0] and key.offsetgroup == "diffusion"  # a legend entry, taking no slot
    # The hatched bar is its own trace in diffusion's slot, out of the legend (the legend swatch stays plain).
    assert hatched.marker.pattern.shape == "/" and hatched.showlegend is False
    assert hatched.offsetgroup == diff.offsetgroup == "diffusion" and diff.marker.pattern.shape is None
    assert _list(hatched.y) == [1.0, 0.0] and _list(hatched.text) == ["1", ""]
    assert _list(diff.y) == [0.0, 1.0] and _list(diff.text) == ["", "1"]
    assert "may not use" in _list(hatched.customdata)[0] and "may not use" not in _list(diff.customdata)[1]
    assert [t.name for t in plain] == ["Autoregressive", "Speculative", "MoE"]
    plain_fig = charts.architecture_chart(side.assign(permitted=True))
    assert [t.name for t in plain_fig.data] == ["Autoregressive", "Speculative", "MoE", "Diffusion"]


def test_architecture_chart_can_be_limited_to_some_workloads():
    side = pd.DataFrame({
        "workload_id": ["w1"] * 4 + ["w2"] * 4,
        "architecture": ["autoregressive", "speculative", "moe", "diffusion"] * 2,
        "route": ["AR", "Spec", "MoE", "Diff"] * 2, "feasible": [True] * 8,
        "nodes": [1.0, 1.0, 1.0, 1.0, 5.0, 6.0, 7.0, 8.0], "gpus_per_replica": [8.0] * 8,
        "max_concurrency_within_sla": [4.0] * 8, "p95_latency_ms": [900.0] * 8, "monthly_usd": [1.0] * 8,
        "why_not": [None] * 8,
    })
    fig = charts.architecture_chart(side, workloads=["w2"])
    assert all(_list(t.x) == ["w2"] for t in fig.data)
    assert [_list(t.y) for t in fig.data] == [[5.0], [6.0], [7.0], [8.0]]
    # The y range follows the workloads shown, not the whole frame.
    assert fig.layout.yaxis.range[1] == pytest.approx(8.0 * 1.2 + 0.5)


def test_routing_map_stops_labelling_points_past_a_few_dozen():
    many = pd.concat([_points().dropna()] * 20, ignore_index=True)
    fig = charts.routing_map_chart(many)
    assert all(t.mode == "markers" for t in fig.data)
    assert charts.routing_map_chart(_points()).data[0].mode == "markers+text"
