"""Pure Plotly figure builders for the answer pages (overview, routing, fleet); data in, figure out, no Streamlit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.presentation import palette
from core.presentation.format import D3, hour_of_day, hover, integer, money, number, plain
from core.presentation.views import ARCHITECTURE_LABELS, ARCHITECTURE_ORDER, NO_ROUTE, group_label
from core.textsafety import escape_plotly

# One colour per verdict group (core.presentation.palette): owned routes saturated, API routes a lighter shade.
GROUP_COLORS: dict[str, str] = {
    **{f"{a} (owned)": palette.architecture(a, "owned") for a in ARCHITECTURE_ORDER},
    **{f"{a} (API)": palette.architecture(a, "api") for a in ARCHITECTURE_ORDER},
    NO_ROUTE: palette.ALERT,
}
ARCH_COLORS = dict(palette.ARCHITECTURE)
OPTION_COLORS = palette.SEQUENCE
OWNED_COLOR, API_COLOR, BATCH_COLOR = palette.HOSTING["owned"], palette.HOSTING["api"], palette.BATCH_FILL

# Ticks a finance reader can read on a log axis of milliseconds.
_MS_TICKS = (100, 1_000, 10_000, 60_000, 600_000, 3_600_000, 8 * 3_600_000, 24 * 3_600_000)
_MS_TICK_TEXT = ("100 ms", "1 s", "10 s", "1 min", "10 min", "1 h", "8 h", "24 h")
_USD_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500)


def _style(fig: go.Figure, title: str, *, height: int = 360, legend: bool = True,
           legend_below: bool = False) -> go.Figure:
    # Long legends go under the plot, where they cannot collide with the title or annotations.
    where = ({"yanchor": "top", "y": -0.22} if legend_below else {"yanchor": "bottom", "y": 1.0})
    fig.update_layout(
        title={"text": title, "x": 0, "xanchor": "left", "font": {"size": 16}},
        height=height,
        margin={"l": 10, "r": 10, "t": 60 if legend and not legend_below else 45, "b": 10},
        showlegend=legend,
        legend={"orientation": "h", "xanchor": "left", "x": 0, "title": None, **where},
        hoverlabel={"align": "left"},
        template="plotly_white",
    )
    return fig


def _group_order(groups) -> list[str]:
    known = [g for g in GROUP_COLORS if g in set(groups)]
    return known + sorted(set(groups) - set(known))


def verdict_mix_chart(mix: Mapping[str, int]) -> go.Figure:
    """Horizontal bars: how many workloads each kind of route wins (keys as in the fleet record's verdict_mix)."""
    order = _group_order(mix.keys())[::-1]  # first group on top
    fig = go.Figure(go.Bar(
        x=[int(mix[g]) for g in order],
        y=[group_label(g) for g in order],
        orientation="h",
        marker_color=[GROUP_COLORS.get(g, palette.UNKNOWN) for g in order],
        text=[int(mix[g]) for g in order],
        textposition="auto",
        hovertemplate="%{y}: %{x} workload(s)<extra></extra>",
    ))
    # A tick per workload only while few: at 100 workloads dtick=1 drew ~50 labels over one another.
    top = max((int(v) for v in mix.values()), default=0)
    fig.update_xaxes(title_text="Workloads", dtick=1 if top <= 8 else None, rangemode="tozero")
    fig.update_yaxes(title_text=None, automargin=True)
    return _style(fig, "Verdict mix: workloads per kind of route", height=max(220, 70 + 40 * len(order)),
                  legend=False)


def utilization_chart(with_batch: Sequence[float], without_batch: Sequence[float], *, owned_nodes: int,
                      plan_nodes: int | None = None) -> go.Figure:
    """Owned fleet utilization by hour of day: interactive load, and with batch work filling the idle hours."""
    hours = [hour_of_day(h) for h in range(24)]
    fig = go.Figure()
    # Overlaid bars: the batch bar (total) behind, the interactive bar in front; what shows above is batch fill.
    fig.add_trace(go.Bar(
        x=hours, y=list(map(float, with_batch)), name="With batch fill", marker_color=BATCH_COLOR,
        hovertemplate="%{x}: " + hover("y", "pct") + " busy with batch fill<extra></extra>",
    ))
    fig.add_trace(go.Bar(
        x=hours, y=list(map(float, without_batch)), name="Interactive only", marker_color=OWNED_COLOR,
        hovertemplate="%{x}: " + hover("y", "pct") + " busy with interactive work<extra></extra>",
    ))
    fig.update_layout(barmode="overlay", bargap=0.1)
    # The shares are of every node in the plan (issue 11): say so when the plan holds more than is owned.
    more = plan_nodes is not None and plan_nodes > owned_nodes
    fig.update_yaxes(title_text="Share of the plan's GPUs busy" if more else "Share of owned GPUs busy",
                     tickformat=D3["pct"], range=[0, 1.05])
    fig.update_xaxes(title_text="Hour of day (local time)", type="category", tickangle=0, dtick=3)
    if owned_nodes == 0 and not more:
        fig.add_annotation(text="No owned nodes in this scenario", x=0.5, y=0.5, xref="paper", yref="paper",
                           showarrow=False, font={"size": 14})
    owned_words = f"{owned_nodes} owned node{'s' if owned_nodes != 1 else ''}"
    if more:
        return _style(fig, f"Utilization of the plan's {plan_nodes} nodes by hour ({owned_words})")
    return _style(fig, f"Utilization of your {owned_words} by hour")


def routing_map_chart(points: pd.DataFrame) -> go.Figure:
    """The routing picture: batchability (latency target or batch window, ms) against value of the token ($/M), log-log.

    Takes views.routing_map(ev); points without a value (no API meets the floor) are left out and counted in the title.
    """
    ok = np.isfinite(points["value_usd_per_mtok"].to_numpy(dtype=float)) & np.isfinite(
        points["batchability_ms"].to_numpy(dtype=float))
    shown = points[ok]
    labelled = len(shown) <= 40  # past a few dozen points the names only hide each other; hover still names them
    fig = go.Figure()
    for g in _group_order(shown["group"]):
        d = shown[shown["group"] == g]
        fig.add_trace(go.Scatter(
            x=d["batchability_ms"], y=d["value_usd_per_mtok"], name=group_label(g),
            mode="markers+text" if labelled else "markers",
            marker={"size": 14 if labelled else 8, "color": GROUP_COLORS.get(g, palette.UNKNOWN),
                    "line": {"width": 1, "color": palette.WHITE}},
            text=escape_plotly(d["workload_id"]), textposition="top center",
            customdata=np.stack([escape_plotly(d["name"]), escape_plotly(d["route"]), d["batchability"]], axis=-1) if len(d) else None,
            hovertemplate=("<b>%{customdata[0]}</b><br>verdict: %{customdata[1]}<br>%{customdata[2]}: "
                           + hover("x", "int") + " ms<br>value of the token: $" + hover("y", "usd_2")
                           + "/M output<extra></extra>"),
        ))
    lo: float = _MS_TICKS[0]
    hi: float = _MS_TICKS[-1]
    if len(shown):
        lo = min(lo, float(shown["batchability_ms"].min()))
        hi = max(hi, float(shown["batchability_ms"].max()))
    fig.update_xaxes(type="log", title_text="Batchability: latency target, or batch window (log)",
                     tickvals=list(_MS_TICKS), ticktext=list(_MS_TICK_TEXT),
                     range=[np.log10(lo) - 0.2, np.log10(hi) + 0.2])
    fig.update_yaxes(type="log", title_text="Value of the token: cheapest acceptable API, $/M output (log)",
                     tickvals=list(_USD_TICKS), ticktext=[money(t) for t in _USD_TICKS])
    fig.add_annotation(text="← a person or agent is waiting", x=0, y=0, xref="paper", yref="paper",
                       xanchor="left", yanchor="bottom", showarrow=False, font={"size": 11, "color": palette.MUTED})
    fig.add_annotation(text="work can wait and batch →", x=1, y=0, xref="paper", yref="paper",
                       xanchor="right", yanchor="bottom", showarrow=False, font={"size": 11, "color": palette.MUTED})
    missing = int((~ok).sum())
    title = "Batchability against the value of the token, coloured by verdict"
    if missing:
        title += f" ({missing} workload{'s' if missing != 1 else ''} without an acceptable API not shown)"
    return _style(fig, title, height=440)


def gpus_by_route_chart(routes: pd.DataFrame, *, owned_gpus: int) -> go.Figure:
    """GPUs each owned route holds (views.nodes_by_route), against the GPUs you own."""
    d = routes.iloc[::-1]  # largest on top
    text = [f"{number(g, decimals=1)} GPUs" + (f" · {int(n)} node{'s' if n != 1 else ''}" if pd.notna(n)
                                               else " (batch, daily average)")
            for g, n in zip(d["gpus"], d["nodes"], strict=True)]
    fig = go.Figure(go.Bar(
        x=d["gpus"], y=escape_plotly(d["route"]), orientation="h", text=text, textposition="auto",
        marker_color=[ARCH_COLORS.get(a, palette.UNKNOWN) for a in d["architecture"]],
        hovertemplate="%{y}: " + hover("x", "num_2") + " GPUs<extra></extra>",
    ))
    if owned_gpus > 0:
        fig.add_vline(x=owned_gpus, line_dash="dash", line_color=palette.INK,
                      annotation_text=f"you own {owned_gpus} GPUs", annotation_position="top")
    fig.update_xaxes(title_text="GPUs", rangemode="tozero")
    fig.update_yaxes(title_text=None, automargin=True)
    return _style(fig, "GPUs held by each owned route", height=max(240, 110 + 45 * len(d)), legend=False)


def architecture_chart(side: pd.DataFrame, *, workloads: Sequence[str] | None = None) -> go.Figure:
    """Nodes each architecture's best owned route needs per interactive workload (views.architecture_side_by_side).

    `workloads` limits the chart to those ids (in the frame's order). A bar
    marked ✗ is an architecture that cannot serve the workload (latency or
    quality; see the table); a hatched one, a route the plan may not use
    (`permitted` False: licensed weights whose fee is not entered), which a
    legend entry of its own explains.
    """
    fig = go.Figure()
    keep = None if workloads is None else set(workloads)
    workloads = [w for w in dict.fromkeys(side["workload_id"]) if keep is None or w in keep]
    side = side[side["workload_id"].isin(workloads)]
    for arch in ARCHITECTURE_ORDER:
        d = side[side["architecture"] == arch].set_index("workload_id").reindex(workloads)
        feasible = d["feasible"].fillna(False).astype(bool).to_numpy()
        permitted = (d["permitted"].fillna(True).astype(bool).to_numpy() if "permitted" in d
                     else np.ones(len(d), dtype=bool))
        barred = feasible & ~permitted
        nodes = np.where(feasible, d["nodes"].to_numpy(dtype=float), 0.0)
        text = [integer(n) if f else "✗" for n, f in zip(nodes, feasible, strict=True)]
        detail = [
            (f"{escape_plotly(r)}<br>{integer(c)} requests per replica within the SLA<br>p95 {integer(p)} ms"
             + ("<br>licensed weights, fee not entered: the plan may not use it" if b else "") if f
             else f"{escape_plotly(r) if isinstance(r, str) else 'no route'}: cannot serve")
            for r, c, p, f, b in zip(d["route"], d["max_concurrency_within_sla"], d["p95_latency_ms"], feasible,
                                     barred, strict=True)
        ]
        hover = "%{x} · " + ARCHITECTURE_LABELS[arch] + ": %{y} node(s)<br>%{customdata}<extra></extra>"
        fig.add_trace(go.Bar(
            x=escape_plotly(workloads), y=np.where(barred, 0.0, nodes), name=ARCHITECTURE_LABELS[arch],
            marker_color=ARCH_COLORS[arch], offsetgroup=arch, legendgroup=arch,
            text=["" if b else t for t, b in zip(text, barred, strict=True)], textposition="outside",
            cliponaxis=False, customdata=detail, hovertemplate=hover,
        ))
        if barred.any():
            # Its own trace in the same slot (offsetgroup), out of the legend: a hatched first bar hatched the
            # architecture's legend swatch.
            fig.add_trace(go.Bar(
                x=escape_plotly(workloads), y=np.where(barred, nodes, 0.0), name=ARCHITECTURE_LABELS[arch],
                marker_color=ARCH_COLORS[arch], marker_pattern_shape="/", offsetgroup=arch, legendgroup=arch,
                showlegend=False, text=[t if b else "" for t, b in zip(text, barred, strict=True)],
                textposition="outside", cliponaxis=False, customdata=detail, hovertemplate=hover,
            ))
    fig.update_layout(barmode="group", bargap=0.25)
    top = float(np.nanmax(side["nodes"].to_numpy(dtype=float))) if side["nodes"].notna().any() else 1.0
    fig.update_yaxes(title_text="Nodes at peak", rangemode="tozero", dtick=1 if top <= 8 else None,
                     range=[0, top * 1.2 + 0.5])
    fig.update_xaxes(title_text=None)
    hatched = [t for t in fig.data if t.marker.pattern.shape == "/"]
    if hatched:
        # What hatching means, as a legend entry of its own (a bar of height 0 in a hatched trace's slot).
        fig.add_trace(go.Bar(
            x=[workloads[0]], y=[0.0], name="Licence fee not entered: not in the plan", marker_color="white",
            marker_line_color=palette.INK, marker_pattern_shape="/", marker_pattern_fgcolor=palette.INK,
            offsetgroup=hatched[0].offsetgroup, hoverinfo="skip",
        ))
    return _style(fig, "Nodes each architecture needs to hold the SLA at peak (✗ = cannot serve)", height=380)


def sla_sweep_chart(sweep: pd.DataFrame, *, current_scale: float) -> go.Figure:
    """Owned nodes each fleet option needs as every latency target is scaled (analysis.sla_sweep).

    Hollow markers: that option leaves some workloads unserved at that scale.
    """
    fig = go.Figure()
    for k, option in enumerate(dict.fromkeys(sweep["option"])):
        d = sweep[sweep["option"] == option].sort_values("sla_scale")
        unserved = d["workloads_unserved"].to_numpy()
        fig.add_trace(go.Scatter(
            x=d["sla_scale"], y=d["owned_nodes"], name=option, mode="lines+markers",
            line={"color": OPTION_COLORS[k % len(OPTION_COLORS)], "width": 2},
            marker={"size": 9, "symbol": ["circle-open" if u else "circle" for u in unserved]},
            customdata=np.stack([d["monthly_usd"], unserved, _priced(d)], axis=-1),
            hovertemplate=(f"<b>{option}</b><br>SLA × " + hover("x", "num_g") + ": %{y} node(s)<br>$"
                           + hover("customdata[0]", "usd") + " a month"
                           "<br>%{customdata[1]} workload(s) unserved; with them priced $"
                           + hover("customdata[2]", "usd") + " a month<extra></extra>"),
        ))
    scales = sorted(set(sweep["sla_scale"]) | {float(current_scale)})
    fig.add_vline(x=current_scale, line_dash="dot", line_color=palette.INK)
    # Annotations on a log axis take log10 of the value (shapes do not), so this one is placed by hand.
    fig.add_annotation(x=np.log10(current_scale), y=1, xref="x", yref="paper", xanchor="left", yanchor="top",
                       showarrow=False, text=f" sidebar: × {plain(current_scale)}", font={"size": 11})
    fig.update_xaxes(type="log", title_text="Every latency target × (left = tighter)",
                     tickvals=scales, ticktext=[f"× {plain(s)}" for s in scales],
                     range=[np.log10(scales[0]) - 0.08, np.log10(scales[-1]) + 0.08])
    fig.update_yaxes(title_text="Owned nodes needed", rangemode="tozero")
    return _style(fig, "Owned nodes per fleet option at each SLA scale (hollow marker = some workloads unserved)",
                  height=460, legend_below=True)


def _priced(d: pd.DataFrame) -> np.ndarray:
    """The bill with unserved work priced (the cash bill where a frame predates that column)."""
    col = d["monthly_usd_with_unserved"] if "monthly_usd_with_unserved" in d else d["monthly_usd"]
    return col.to_numpy(dtype=float)


def fleet_options_chart(options: pd.DataFrame) -> go.Figure:
    """Monthly cost of each fleet option (analysis.fleet_options): owned nodes and APIs stacked (the cash bill),
    then its unserved work priced (hatched, an estimate), so an option that serves less does not look cheaper."""
    d = options.iloc[::-1]
    labels = [o + (f" ({u} unserved)" if u else "") for o, u in zip(d["option"], d["workloads_unserved"], strict=True)]
    fig = go.Figure()
    fig.add_trace(go.Bar(
        x=d["owned_monthly_usd"], y=labels, name="Owned nodes", orientation="h", marker_color=OWNED_COLOR,
        customdata=d["owned_nodes"],
        hovertemplate="%{y}<br>owned: $" + hover("x", "usd") + " a month (%{customdata} nodes)<extra></extra>",
    ))
    fig.add_trace(go.Bar(
        x=d["api_monthly_usd"], y=labels, name="Public APIs", orientation="h", marker_color=API_COLOR,
        hovertemplate="%{y}<br>APIs: $" + hover("x", "usd") + " a month<extra></extra>",
    ))
    with_unserved = _priced(d)
    fig.add_trace(go.Bar(
        x=with_unserved - d["monthly_usd"].to_numpy(dtype=float), y=labels, orientation="h",
        name="Unserved work, priced if relaxed or allowed (estimate)", marker_color=palette.WHITE,
        marker_line_color=palette.ALERT, marker_pattern_shape="/", marker_pattern_fgcolor=palette.ALERT,
        text=[money(t, decimals=0) + (f" → {money(p, decimals=0)} with unserved" if p > t + 0.5 else "")
              for t, p in zip(d["monthly_usd"], with_unserved, strict=True)],
        textposition="outside", cliponaxis=False,
        hovertemplate="%{y}<br>unserved work priced: $" + hover("x", "usd") + " a month<extra></extra>",
    ))
    fig.update_layout(barmode="stack", legend={"traceorder": "normal"})
    fig.update_xaxes(title_text="$ a month", tickprefix="$", rangemode="tozero",
                     range=[0, float(np.nanmax(with_unserved) or 1.0) * 1.6])
    fig.update_yaxes(title_text=None, automargin=True)
    return _style(fig, "$ a month: owned nodes + public APIs (the cash bill), then unserved work priced",
                  height=max(260, 110 + 45 * len(d)), legend_below=True)


def simulation_check_chart(rows: pd.DataFrame) -> go.Figure:
    """Analytic vs simulated p95 per workload against its target (checks.PlanCheck.frame()): the plan's check.

    Per workload: a bar of the simulated p95 with its 95 % interval, a diamond at the analytic
    p95 the plan sized on, and a tick at the target; a bar over its target is drawn in the alert colour.
    """
    d = rows.reset_index(drop=True)
    labels = [escape_plotly(f"{w} · {dep}") for w, dep in zip(d["workload_id"], d["deployment_id"], strict=True)]
    over = d["simulated_p95_ms"] > d["slo_ms"]
    lo = (d["simulated_p95_ms"] - d["ci_lo_ms"]).clip(lower=0).fillna(0)
    hi = (d["ci_hi_ms"] - d["simulated_p95_ms"]).clip(lower=0).fillna(0)
    fig = go.Figure()
    fig.add_trace(go.Bar(
        x=d["simulated_p95_ms"], y=labels, orientation="h", name="Simulated p95 (95 % interval)",
        marker_color=[palette.ALERT if o else OWNED_COLOR for o in over],
        error_x={"type": "data", "symmetric": False, "array": hi, "arrayminus": lo, "color": palette.INK},
        customdata=np.stack([d["share_within_slo"], d["slo_ms"]], axis=-1),
        hovertemplate=("%{y}<br>simulated p95 " + hover("x", "int") + " ms<br>within target "
                       + hover("customdata[0]", "pct") + " of requests (target "
                       + hover("customdata[1]", "int") + " ms)<extra></extra>"),
    ))
    fig.add_trace(go.Scatter(
        x=d["analytic_p95_ms"], y=labels, mode="markers", name="Analytic p95 (what the plan sized on)",
        marker={"symbol": "diamond", "size": 11, "color": palette.ARCHITECTURE["moe"],
                "line": {"color": palette.WHITE, "width": 1}},
        hovertemplate="%{y}<br>analytic p95 " + hover("x", "int") + " ms<extra></extra>",
    ))
    fig.add_trace(go.Scatter(
        x=d["slo_ms"], y=labels, mode="markers", name="Target (p95)",
        marker={"symbol": "line-ns-open", "size": 22, "color": palette.INK, "line": {"width": 3}},
        hovertemplate="%{y}<br>target " + hover("x", "int") + " ms<extra></extra>",
    ))
    top = float(np.nanmax(np.r_[d["slo_ms"], d["ci_hi_ms"].fillna(0), d["analytic_p95_ms"], 1.0]))
    fig.update_xaxes(title_text="ms at the peak hour (p95 of wait + service)", rangemode="tozero",
                     range=[0, top * 1.08])
    fig.update_yaxes(title_text=None, automargin=True, autorange="reversed")
    return _style(fig, "Analytic vs simulated p95 per workload, against its target",
                  height=max(280, 120 + 38 * len(d)), legend_below=True)


def buy_options_chart(options: pd.DataFrame) -> go.Figure:
    """What to buy next (service.buy_options_frame): $ a month per row, owned nodes, new nodes and APIs stacked,
    the total and what it buys written beside each bar."""
    d = options.iloc[::-1]
    labels = [("★ " if r == "best mix" else "") + (lab if r != "best mix" else f"best: {lab}")
              + (f" ({u} unserved)" if u else "") for r, lab, u in zip(d["row"], d["label"], d["unserved"], strict=True)]
    fig = go.Figure()
    for col, name, color in (("owned_usd", "Owned nodes", OWNED_COLOR), ("new_nodes_usd", "New nodes", BATCH_COLOR),
                             ("api_usd", "Public APIs", API_COLOR)):
        last = col == "api_usd"
        fig.add_trace(go.Bar(
            x=d[col] + (d["licence_usd"] if last else 0.0), y=labels, name=name, orientation="h", marker_color=color,
            text=[f"{money(t, decimals=0)} · {n} new node{'s' if n != 1 else ''}"
                  for t, n in zip(d["total_usd"], d["nodes_new"], strict=True)]
            if last else None, textposition="outside" if last else None, cliponaxis=False,
            hovertemplate="%{y}<br>" + name + ": $" + hover("x", "usd") + " a month<extra></extra>"))
    fig.update_layout(barmode="stack", legend={"traceorder": "normal"})
    fig.update_xaxes(title_text="$ a month", tickprefix="$", rangemode="tozero",
                     range=[0, float(d["total_usd"].max() or 1.0) * 1.35])
    fig.update_yaxes(title_text=None, automargin=True)
    return _style(fig, "What to buy next: $ a month of each choice", height=max(260, 110 + 45 * len(d)))
