"""Pure Plotly builder for the scenario comparison: the cash bill of each scenario, split into nodes and APIs, with idle cost."""

from __future__ import annotations

import plotly.graph_objects as go

from core.presentation import palette
from core.presentation.charts import API_COLOR, OWNED_COLOR, _style
from core.presentation.format import D3, hover
from core.presentation.report.numbers import fmt
from core.scenarios import Comparison

IDLE_COLOR = palette.ALERT  # money paying for idle GPU-hours: the palette's warning accent
TITLE = "Cash bill per month by scenario"


def scenario_comparison_chart(cmp: Comparison) -> go.Figure:
    """Stacked bars per scenario: API spend and everything else (nodes owned and new, licences); idle cost as a marker.

    The bar's height is the cash bill; the idle marker shows how much of the
    node side pays for idle GPU-hours.
    """
    names = cmp.names
    bill = [s.cash_bill_usd_per_month for s in cmp.scenarios]
    api = [s.api_usd_per_month for s in cmp.scenarios]
    nodes = [b - a for b, a in zip(bill, api, strict=True)]
    idle = [s.idle_usd_per_month for s in cmp.scenarios]
    fig = go.Figure()
    fig.add_trace(go.Bar(name="Nodes and licences", x=names, y=nodes, marker_color=OWNED_COLOR,
                         hovertemplate="%{x}<br>nodes and licences $" + hover("y", "usd") + "/month<extra></extra>"))
    fig.add_trace(go.Bar(name="API spend", x=names, y=api, marker_color=API_COLOR,
                         text=[f"{fmt(b, 'usd')}/month · serves {s.served}" for b, s in
                               zip(bill, cmp.scenarios, strict=True)], textposition="outside",
                         hovertemplate="%{x}<br>APIs $" + hover("y", "usd") + "/month<extra></extra>"))
    fig.add_trace(go.Scatter(name="Idle cost", x=names, y=idle, mode="markers",
                             marker={"symbol": "diamond", "size": 13, "color": IDLE_COLOR,
                                     "line": {"color": palette.WHITE, "width": 1}},
                             hovertemplate="%{x}<br>idle $" + hover("y", "usd") + "/month<extra></extra>"))
    _style(fig, TITLE, height=380)
    top = max(bill + idle + [1.0])
    fig.update_layout(barmode="stack", yaxis={"title": "US$ per month", "tickprefix": "$", "tickformat": D3["usd"],
                                              "range": [0, top * 1.18]},  # room for the totals above the bars
                      xaxis={"type": "category"}, bargap=0.45)
    return fig
