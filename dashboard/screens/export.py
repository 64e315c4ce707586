"""Export page: the routing table as CSV and, where core.presentation.report is installed, the procurement summary files."""

import streamlit as st

from core.presentation import views
from core.scenarios import download_stem
from core.service import audit_trail
from core.textsafety import csv_bytes
from dashboard import state
from dashboard.format import md

try:  # the procurement summary lands with its own issue; until then the CSV is the export
    from core.presentation.report import build_html, build_markdown, build_summary, build_xlsx
except ImportError:
    build_html = build_markdown = build_summary = build_xlsx = None

st.title("Export")
ev = state.evaluation()
if ev is None:
    st.stop()

# Pricing option, cost basis, nodes and the saved scenario's name: each scenario downloads under its own name.
stem = download_stem(ev.scenario, ev.fleet.inventory or "inventory", saved_name=state.saved_name())
st.caption(md(f"Built from {views.inventory_words(ev.fleet.inventory or 'given')} under the sidebar's "
              f"scenario. {views.node_price_note(ev)}"))

st.subheader("Routing table")
st.write("One row per workload: the verdict, its cost, latency and nodes, and the value of its token.")
st.download_button("Download routing table (CSV)", data=views.routing_csv(ev), file_name=f"{stem}-routing.csv",
                   mime="text/csv", icon=":material/table_view:", key="export_csv")

st.subheader("Procurement summary")
if build_xlsx is None:
    st.info("The procurement summary (XLSX workbook, HTML and Markdown one-pagers) is not available in this "
            "build yet; the routing table above holds the verdicts.")
else:
    st.write("An XLSX workbook (summary, workloads, fleet, assumptions, price sensitivity), an HTML one-pager "
             "that opens and prints offline, and a Markdown brief for a ticket or a wiki page.")
    built_for = (ev.scenario.model_dump_json(), state.data_version(), ev.fleet.inventory)
    if st.button("Build the procurement summary", key="export_build", type="primary"):
        try:
            with st.spinner("Building the workbook and one-pagers (re-running the price-sensitivity cases)…"):
                summary = build_summary(ev)  # once, shared by the three files
                st.session_state["export_files"] = (built_for, {
                    "xlsx": build_xlsx(ev, summary=summary),
                    "html": build_html(ev, summary=summary),
                    "md": build_markdown(ev, summary=summary),
                })
        except Exception as exc:  # a failed build is a message, never a traceback on the page
            st.error(md(f"Could not build the procurement summary: {exc}"))
    files = st.session_state.get("export_files")
    if files and files[0] == built_for:
        out = files[1]
        c1, c2, c3 = st.columns(3)
        c1.download_button("Workbook (XLSX)", out["xlsx"], file_name=f"{stem}.xlsx", key="export_xlsx",
                           mime="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
        c2.download_button("One-pager (HTML)", out["html"], file_name=f"{stem}.html", mime="text/html",
                           key="export_html")
        c3.download_button("One-pager (Markdown)", out["md"], file_name=f"{stem}.md", mime="text/markdown",
                           key="export_md")
    elif files:
        st.caption("The scenario changed since the last build: build again to download.")

st.subheader("Audit trail")
st.caption("Every write to the store, newest first: who (the signed-in user, or local: and the OS user without sign-in), "
           "when (UTC), what. The CSV holds all of it; `hangover users audit --out audit.csv` writes the same.")
trail = audit_trail(state.store())
st.dataframe(trail.head(200), hide_index=True, placeholder="—", width="stretch", key="export_audit_table",
             column_config={"written_at": st.column_config.DatetimeColumn("When (UTC)", format="YYYY-MM-DD HH:mm:ss")})
st.download_button("Audit trail (CSV)", data=csv_bytes(trail), file_name="audit-trail.csv", mime="text/csv",
                   key="export_audit")
