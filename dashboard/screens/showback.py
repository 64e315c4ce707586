"""Showback page: each team's monthly $ with the idle recovered, its $/M tokens and what an API would charge it."""

import streamlit as st

from core.presentation.report.showback import showback_frame_for_page
from core.service import showback, showback_columns, showback_idle_keys
from dashboard import state
from dashboard.format import count_col, md, money, money_col, text_col

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
st.dataframe(showback_frame_for_page(sb), hide_index=True, key="showback_table", column_config={
    "team": text_col(by.replace("_", " ").capitalize()),
    "workloads": count_col("Workloads"),
    "tokens_per_month": count_col("Tokens a month", help="Requests a day × (input + output tokens) × 365/12."),
    "attributed_usd": money_col("Attributed $", kind="usd_2"),
    "idle_usd": money_col("Idle share $", kind="usd_2"),
    "monthly_usd": money_col("Monthly $", kind="usd_2"),
    "usd_per_mtok": money_col("Internal $/M tokens", kind="usd_price"),
    "api_usd_per_month": money_col("API $ a month", kind="usd_2",
                                   help="The cheapest API each workload may use (data policy, quality, latency)."),
    "api_workloads": count_col("With an allowed API"),
    "difference_usd_per_month": money_col("Internal − API $", kind="usd_2",
                                          help="Monthly $ of the workloads with an allowed API minus their API $."),
    "unserved_workloads": count_col("Without a route"),
})
st.caption(md(f"Rows add up to the cash bill of {money(sb.total_monthly_usd)} a month to the cent; "
              f"{sb.idle_key_note}. Source: {sb.source}."))
