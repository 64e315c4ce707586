"""Showback page: each team's monthly $ with the idle recovered; the plan against measured telemetry and invoices."""

import streamlit as st

from core.errors import HangoverError
from core.presentation.actuals_view import comparison_rows, shape_words, variance_rows
from core.presentation.charts_telemetry import idle_by_node_chart, measured_vs_plan_heatmaps
from core.presentation.report.showback import showback_frame_for_page
from core.service import (
    idle_by_node,
    plan_against_actual,
    showback,
    showback_columns,
    showback_idle_keys,
    telemetry_period,
)
from dashboard import state
from dashboard.format import count_col, md, money, money_col, percent, text_col

st.title("Showback")
st.markdown(state.whose_figures())
ev = state.evaluation()
if ev is None:
    st.stop()

st.subheader("Showback by team")
left, right = st.columns(2)
by = left.selectbox("Group by", showback_columns(ev), key="showback_by",
                    help="Any text column of the inventory, or an extra column it kept in notes (cost centre, product).")
keys = showback_idle_keys()
idle_key = right.radio("Share the idle by", list(keys), format_func=keys.get, horizontal=True,
                       key="showback_idle_key")
sb = showback(ev, by=by, idle_key=idle_key)
st.dataframe(showback_frame_for_page(sb), hide_index=True, placeholder="—", key="showback_table", column_config={
    "team": text_col(by.replace("_", " ").capitalize()),
    "workloads": count_col("Workloads"),
    "tokens_per_month": count_col("Tokens a month", help="Requests a day × (input + output tokens) × 365/12."),
    "attributed_usd": money_col("Attributed $", kind="usd_2"),
    "idle_usd": money_col("Idle share $", kind="usd_2"),
    "monthly_usd": money_col("Monthly $", kind="usd_2"),
    "usd_per_mtok": money_col("Internal $/M tokens", kind="usd_2"),
    "api_usd_per_month": money_col("API $ a month", kind="usd_2",
                                   help="The cheapest API each workload may use (data policy, quality, latency)."),
    "api_workloads": count_col("With an allowed API"),
    "difference_usd_per_month": money_col("Internal − API $", kind="usd_2",
                                          help="Monthly $ of the workloads with an allowed API minus their API $."),
    "unserved_workloads": count_col("Without a route"),
})
st.caption(md(f"Rows add up to the cash bill of {money(sb.total_monthly_usd)} a month to the cent; "
              f"{sb.idle_key_note}. Source: {sb.source}."))

st.divider()
st.subheader("Plan against actual")
store = state.store()
period = telemetry_period(store)
if period is None:
    st.info("No telemetry yet: import nvidia-smi, DCGM or Prometheus files on the Telemetry page, or "
            "`hangover telemetry import FILE --node NAME`; the plan is then compared with what the GPUs did.")
    st.page_link("screens/telemetry.py", label="Telemetry", icon=":material/monitoring:")
    st.stop()

first, last = period
c1, c2 = st.columns([2, 3])
span = c1.date_input("Period (inclusive)", value=(first, last), min_value=first, max_value=last, key="showback_dates")
date_from, date_to = (span[0], span[-1]) if isinstance(span, tuple | list) and span else (first, last)
invoice = c2.file_uploader("Invoice lines (optional): item (node_hours, api, tokens), quantity, usd, source, date",
                           type=["csv"], key="showback_invoice")
replan = st.toggle("Plan the next month on the measured traffic", key="showback_replan",
                   help="Plans again on the measured hour-of-day shape, then with the measured peak factor as well, "
                        "and says what each changes (the sidebar's 'Traffic over the day' keeps the shape).")
try:
    actual, replanned, profile = plan_against_actual(
        store, ev, date_from, date_to, replan=replan,
        invoice_text=invoice.getvalue().decode("utf-8-sig") if invoice is not None else None)
except HangoverError as exc:
    st.error(md(str(exc)))
    st.stop()

k1, k2, k3 = st.columns(3)
k1.metric(f"Owned $/M tokens, actual (plan {money(actual.plan.usd_per_mtok)})", money(actual.actual.usd_per_mtok),
          help="Owned GPUs' $ of the period ÷ the tokens they served, per million.")
k2.metric(f"Utilization, measured (plan {percent(actual.plan.utilization)})", percent(actual.actual.utilization))
k3.metric("Cost of the period, actual − plan", money(actual.difference_usd, decimals=2),
          help="Mix + utilization + throughput + price, each factor moved from plan to actual in turn "
               "(docs/showback.md).")
left, right = st.columns(2)
left.dataframe(comparison_rows(actual), hide_index=True, key="showback_compare",
               column_config={"figure": text_col("Figure"), "plan": text_col("Plan"), "actual": text_col("Actual")})
right.dataframe(variance_rows(actual), hide_index=True, key="showback_variance",
                column_config={"component": text_col("Component", width="medium"),
                               "usd": money_col("$ actual − plan", kind="usd_2")})
(st.warning if actual.shape.differs else st.caption)(md(shape_words(actual, replanned)))
st.caption(md(f"{actual.measured_label}. Assumed: " + "; ".join(actual.notes) + "." if actual.notes
              else actual.measured_label))

st.subheader("Measured beside the plan")
st.plotly_chart(measured_vs_plan_heatmaps(profile.by_weekday_hour, ev.fleet.hourly_utilization,
                                          label=profile.label, metric=profile.metric_label), key="showback_heat")
nodes = idle_by_node(store, ev, date_from, date_to)
st.plotly_chart(idle_by_node_chart(nodes["node"], nodes["idle_usd_per_month"], nodes["utilization"],
                                   label=profile.label), key="showback_idle_nodes")
st.caption(md(f"Idle $ a month = the node's GPUs × 730 h × {money(ev.rate.full_usd_per_node_hour / ev.rate.gpus_per_node)}"
              f"/GPU-hour × (1 − its measured utilization); node price {ev.rate.label} (as of {ev.rate.as_of})."))
