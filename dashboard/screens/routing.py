"""Routing page: the verdict per workload, why, the routes it beat or could not use, and the routing picture."""

import streamlit as st

from core import service
from core.presentation import charts, views
from dashboard import state
from dashboard.format import count_col, md, money_col, ms_col, number_col, share_bar_col, text_col

st.title("Routing")
ev = state.evaluation()
if ev is None:
    st.stop()

vf = views.routing_table(service.verdicts_frame(ev))
st.caption("Each workload goes to the cheapest route that meets its data policy, latency target or batch window, "
           f"and quality floor. {md(views.inventory_words(ev.fleet.inventory or 'given').capitalize())}. "
           "Select a row to see why.")
event = st.dataframe(
    vf,
    key="routing_table",
    hide_index=True,
    on_select="rerun",
    selection_mode="single-row",
    selection_default={"selection": {"rows": [0]}},
    placeholder="—",
    # Sized to fit the main column at 1280 px wide without a horizontal scroll (issue 14); $/request is in the
    # selected workload's routes below and in the CSV export.
    column_order=["workload_id", "route", "sensitive", "usd_per_mtok_out", "monthly_usd", "p95_latency_ms", "nodes"],
    column_config={
        "workload_id": text_col("Workload", width=125),
        "route": text_col("Verdict", width=270),
        "sensitive": st.column_config.CheckboxColumn(
            "Flips", width=60, help="Ticked: the verdict flips between the pessimistic and optimistic "
            "ends of the performance estimates; the reasons name the assumption to measure. Blank: not computed "
            "(over 5,000 workloads; hangover evaluate --ranges)."),
        "usd_per_mtok_out": money_col("$/M output", kind="usd_2", help="Per million output tokens, input cost included."),
        "monthly_usd": money_col("$/month"),
        "p95_latency_ms": ms_col("p95", help="Estimated end-to-end p95 latency at the operating point."),
        "nodes": count_col("Nodes", help="Owned nodes this workload alone would take; routes share nodes (Fleet sizing)."),
    },
)
rows = event.selection.rows if event is not None else []

if rows:
    i = int(rows[0])
    st.subheader(f"Why: {md(vf['name'].iloc[i])}")
    st.markdown("\n".join(f"- {md(line)}" for line in service.reasons(ev, i)))
    if (scored := views.scored_routes_note(ev, i)) is not None:
        st.caption(md(scored))
    ok, rejected = views.route_alternatives(ev, i)
    st.markdown(f"**Routes that could serve it** ({len(ok)}), cheapest first")
    st.dataframe(ok, hide_index=True, key="routing_feasible", placeholder="—",
                 column_order=["route", "usd_per_request", "monthly_usd", "p95_latency_ms", "concurrency", "quality",
                               "fallback_share"],
                 column_config={
                     "route": text_col("Route", width=330),
                     "usd_per_request": money_col("$/request", kind="usd_price"),
                     "monthly_usd": money_col("$/month"),
                     "p95_latency_ms": ms_col("p95"),
                     "concurrency": count_col("Batch", help="Requests per replica at the operating point."),
                     "quality": number_col("Quality", kind="num_2", help="Estimate, 0-1 of a strong frontier model."),
                     "fallback_share": share_bar_col("Escalated", help="Share of outputs sent to a stronger "
                                                     "route to meet the quality floor."),
                 })
    st.markdown(f"**Routes rejected** ({sum(len(r) for r, _ in rejected)}) and why")
    for routes, why in rejected:
        names = ", ".join(routes) if len(routes) <= 3 else f"{len(routes)} routes ({', '.join(routes[:2])}, …)"
        st.markdown(f"- **{md(names)}**: {md(why)}", help=md(", ".join(routes)) if len(routes) > 3 else None)
else:
    st.info("Select a workload in the table to see the reasons and the rejected routes.")

st.plotly_chart(charts.routing_map_chart(views.routing_map(ev)), key="routing_map")
st.caption("Left: a person or an agent waits (the latency target). Right: the work can wait for a batch (the batch "
           "window). Up: the token is worth more (the list price of the cheapest API meeting the quality floor, "
           "data policy aside). Batchable, low-value work is where owned GPUs earn their keep.")
