"""Pure Plotly builders for measured GPU utilization: hour-of-day profile and hour-of-week heatmaps against the
plan, and the measured idle $ by node."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from core.presentation import palette
from core.presentation.format import D3, hour_of_day, hover, percent

# Measured load is the owned fleet's (navy); the plan is a reference line (ink, dashed); the heatmap runs from
# white (idle) through the batch-fill tint to navy (busy), on the table-header grey where nothing was logged.
MEASURED_COLOR = palette.HOSTING["owned"]
PLAN_COLOR = palette.INK
HEAT_SCALE = [[0.0, palette.WHITE], [0.5, palette.BATCH_FILL], [1.0, palette.HOSTING["owned"]]]
NO_DATA_COLOR = palette.SURFACE
IDLE_COLOR = palette.UNALLOCATED  # idle $ is the unallocated part of the bill, coloured as on the Overview

WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
HOURS = [hour_of_day(h) for h in range(24)]


def _style(fig: go.Figure, title: str, *, height: int = 340, legend: bool = True) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0, "xanchor": "left", "font": {"size": 16}},
        height=height,
        margin={"l": 10, "r": 10, "t": 60 if legend else 45, "b": 10},
        showlegend=legend,
        legend={"orientation": "h", "xanchor": "left", "x": 0, "yanchor": "bottom", "y": 1.0, "title": None},
        hoverlabel={"align": "left"},
        template="plotly_white",
    )
    return fig


def _nullable(values: Sequence[float]) -> list[float | None]:
    return [None if v is None or not np.isfinite(v) else float(v) for v in values]


def hourly_profile_chart(measured: Sequence[float], *, label: str, metric: str,
                         plan: Sequence[float] | None = None) -> go.Figure:
    """Bars: measured share busy by hour of day (gaps where nothing was logged); a line: the plan's, when given."""
    fig = go.Figure(go.Bar(
        x=HOURS, y=_nullable(measured), name=f"Measured ({metric})", marker_color=MEASURED_COLOR,
        hovertemplate="%{x}: " + hover("y", "pct") + " busy<extra>measured</extra>",
    ))
    if plan is not None:
        fig.add_trace(go.Scatter(
            x=HOURS, y=_nullable(plan), name="Plan (modelled: an estimate)", mode="lines",
            line={"color": PLAN_COLOR, "width": 2, "dash": "dash", "shape": "hv"},
            hovertemplate="%{x}: " + hover("y", "pct") + " busy<extra>plan</extra>",
        ))
    fig.update_yaxes(title="share of GPU-hours busy", tickformat=D3["pct"], range=[0, 1])
    fig.update_xaxes(title="hour of day", tickangle=0, dtick=3)
    return _style(fig, f"Utilization by hour of day — {label}")


def weekday_hour_heatmap(by_weekday_hour: np.ndarray, *, label: str, metric: str) -> go.Figure:
    """Heatmap, weekdays down (Monday on top) and hours across; cells with no samples are left blank."""
    z = np.asarray(by_weekday_hour, dtype=float)
    text = [["" if not np.isfinite(v) else percent(v) for v in row] for row in z]
    fig = go.Figure(go.Heatmap(
        z=[_nullable(row) for row in z], x=HOURS, y=list(WEEKDAYS), zmin=0, zmax=1, colorscale=HEAT_SCALE,
        text=text, texttemplate="%{text}", textfont={"size": 9}, xgap=1, ygap=1,
        colorbar={"title": {"text": "busy"}, "tickformat": D3["pct"]},
        hovertemplate="%{y} %{x}: " + hover("z", "pct") + " busy<extra>" + metric + "</extra>",
    ))
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(dtick=3, tickangle=0)
    fig.update_layout(plot_bgcolor=NO_DATA_COLOR)
    return _style(fig, f"Hour of day × day of week — {label}", height=320, legend=False)


def measured_vs_plan_heatmaps(by_weekday_hour: np.ndarray, plan_hourly: Sequence[float], *, label: str,
                              metric: str) -> go.Figure:
    """Two heatmaps on one colour scale, hour of week: measured (left) beside the plan's (right; the plan has one
    day, the same on every weekday)."""
    from plotly.subplots import make_subplots

    measured = np.asarray(by_weekday_hour, dtype=float)
    plan = np.tile(np.asarray(plan_hourly, dtype=float), (7, 1))
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=(f"Measured ({metric})", "Plan (modelled: an estimate)"))
    for col, (z, what) in enumerate(((measured, "measured"), (plan, "plan")), start=1):
        fig.add_trace(go.Heatmap(
            z=[_nullable(row) for row in z], x=HOURS, y=list(WEEKDAYS), zmin=0, zmax=1, colorscale=HEAT_SCALE,
            xgap=1, ygap=1, showscale=col == 2, name=what,
            colorbar={"title": {"text": "busy"}, "tickformat": D3["pct"]},
            hovertemplate="%{y} %{x}: " + hover("z", "pct") + f" busy<extra>{what}</extra>",
        ), row=1, col=col)
        fig.update_xaxes(dtick=6, tickangle=0, row=1, col=col)
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(plot_bgcolor=NO_DATA_COLOR)
    fig = _style(fig, f"Utilization by hour of week, measured beside the plan — {label}", height=350, legend=False)
    # Room for the two panel titles under the figure's: the figure's title pinned to the top of the margin.
    fig.update_layout(margin={"t": 95}, title={"y": 0.98, "yanchor": "top"})
    return fig


def idle_by_node_chart(nodes: Sequence[str], idle_usd_per_month: Sequence[float], utilization: Sequence[float],
                       *, label: str) -> go.Figure:
    """Horizontal bars: each node's measured idle $ a month (largest on top), its utilization in the hover."""
    fig = go.Figure(go.Bar(
        y=list(nodes), x=[float(v) for v in idle_usd_per_month], orientation="h", marker_color=IDLE_COLOR,
        customdata=[float(u) for u in utilization],
        hovertemplate="%{y}: " + hover("x", "usd") + " idle a month, " + hover("customdata", "pct")
        + " busy<extra></extra>",
    ))
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title="idle $ a month", tickformat=D3["usd"], tickprefix="$")
    return _style(fig, f"Idle $ by node a month — {label}", height=140 + 32 * max(len(nodes), 1), legend=False)
