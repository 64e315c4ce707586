"""Pure Plotly figure builders for the procurement summary (monthly cost by route, hourly utilization)."""

from __future__ import annotations

import html
import textwrap
from collections.abc import Sequence

import plotly.graph_objects as go

from core.presentation import palette
from core.presentation.format import D3, fmt, hover

# Sized for the printable width of A4 and Letter (about 180 mm at 96 px/inch) so print never cuts them.
WIDTH_PX = 680
# Hosting colours from the one palette (the workbook's charts use the same).
COLORS = {"owned": palette.HOSTING["owned"], "api": palette.HOSTING["api"], "unallocated": palette.UNALLOCATED,
          "interactive": palette.HOSTING["owned"], "batch": palette.BATCH_FILL}


def plain_label(text: str, width: int = 30) -> str:
    """Route or workload text for a chart: HTML-escaped (Plotly renders a few tags, links included), wrapped."""
    lines = textwrap.wrap(str(text), width) or [""]
    return "<br>".join(html.escape(line, quote=False) for line in lines)


def _layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(
        title={"text": html.escape(title, quote=False), "x": 0, "xanchor": "left", "font": {"size": 14}},
        template="plotly_white", width=WIDTH_PX, height=height, autosize=False,
        margin={"l": 10, "r": 20, "t": 50, "b": 40},
        font={"family": "Helvetica, Arial, sans-serif", "size": 11},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "right", "x": 1.0},
    )
    return fig


def cost_by_route_figure(*, routes: Sequence[str], monthly_usd: Sequence[float], groups: Sequence[str],
                         title: str = "Monthly cost by route") -> go.Figure:
    """Horizontal bars, largest on top, one colour per group ('owned', 'api', 'unallocated'); $ on each bar."""
    items = sorted(zip(routes, monthly_usd, groups, strict=True), key=lambda t: t[1])
    fig = go.Figure()
    names = {"owned": "Owned GPUs", "api": "Public API", "unallocated": "Owned, not allocated"}
    for group in ("owned", "api", "unallocated"):
        sel = [t for t in items if t[2] == group]
        if not sel:
            continue
        fig.add_trace(go.Bar(
            name=names[group], orientation="h", marker_color=COLORS[group],
            y=[plain_label(t[0]) for t in sel], x=[t[1] for t in sel],
            text=[fmt(t[1], "usd") for t in sel], textposition="outside", cliponaxis=False,
            hovertemplate="%{y}: %{text}/month<extra></extra>",
        ))
    fig.update_yaxes(categoryorder="array", categoryarray=[plain_label(t[0]) for t in items], automargin=True)
    top = max((float(v) for v in monthly_usd), default=0.0)
    fig.update_xaxes(title_text="US$ per month", tickprefix="$", tickformat=D3["usd"],
                     range=[0, top * 1.2 if top > 0 else 1])
    return _layout(fig, title, height=max(260, 60 + 42 * len(items)))


def hourly_utilization_figure(*, hours: Sequence[str], interactive: Sequence[float], with_batch: Sequence[float],
                              title: str = "Owned fleet utilization by hour (estimate)") -> go.Figure:
    """Stacked bars per hour: interactive load, and the batch work that fills idle hours on top of it."""
    fill = [max(w - i, 0.0) for i, w in zip(interactive, with_batch, strict=True)]
    fig = go.Figure([
        go.Bar(name="Interactive", x=list(hours), y=list(interactive), marker_color=COLORS["interactive"],
               hovertemplate="%{x}: " + hover("y", "pct") + "<extra>interactive</extra>"),
        go.Bar(name="Batch fill", x=list(hours), y=fill, marker_color=COLORS["batch"],
               hovertemplate="%{x}: +" + hover("y", "pct") + "<extra>batch</extra>"),
    ])
    fig.update_layout(barmode="stack", bargap=0.15)
    fig.update_yaxes(title_text="share of owned GPUs busy", tickformat=D3["pct"], range=[0, 1.0])
    # "00:00" would otherwise be read as a time of day and the bars drawn on a date axis.
    fig.update_xaxes(title_text="hour of day (local)", type="category", tickangle=0, dtick=3)
    return _layout(fig, title, height=290)
