"""Telemetry page: import GPU utilization logs, then see what the GPUs did by hour and weekday, and what idling costs."""

import datetime as dt

import streamlit as st

from core.errors import HangoverError
from core.presentation.charts_telemetry import hourly_profile_chart, weekday_hour_heatmap
from core.presentation.format import column_format, integer, money, percent
from core.presentation.pricing_views import node_rate_label
from core.service import telemetry_overview, telemetry_stamp
from core.telemetry import import_telemetry, summarize
from dashboard import signin, state
from dashboard.format import md

ALL_NODES = "(all nodes)"


# Keyed on the telemetry stamp (imports count + newest id), read fresh each run, so another session's import
# shows here too; these reads touch the hourly aggregates only, never the raw samples.
@st.cache_data(show_spinner=False, max_entries=8)
def _imports(stamp: tuple):
    return telemetry_overview(state.store())


@st.cache_data(show_spinner=False, max_entries=32)
def _summary(stamp: tuple, scenario_json: str, node: str | None, date_from: dt.date, date_to: dt.date):
    from core.models import Scenario

    return summarize(state.store(), Scenario.model_validate_json(scenario_json), node=node,
                     date_from=date_from, date_to=date_to)


# Figures are shared resources: building a Plotly figure validates every property, and cache_data would rebuild
# it on each read by unpickling it (docs/performance.md, issue 6).
@st.cache_resource(show_spinner=False, max_entries=32)
def _figures(key: tuple, _summary, plan: tuple | None):
    p = _summary.profile
    return (weekday_hour_heatmap(p.by_weekday_hour, label=p.label, metric=p.metric_label),
            hourly_profile_chart(p.hourly_utilization, label=p.label, metric=p.metric_label,
                                 plan=list(plan) if plan else None))


st.title("Telemetry")
st.caption("What the GPUs actually did, from the logs you already keep: `nvidia-smi --query-gpu=... --format=csv` "
           "logs, DCGM exporter scrapes, or a Prometheus query result. Measured figures sit next to the plan's "
           "modelled ones; hours with no samples are unknown, not idle.")
if flash := st.session_state.pop("tel_flash", None):
    st.success(md(flash))

with st.expander("Import a telemetry file", expanded=False):
    signin.read_only_note()
    up = st.file_uploader("nvidia-smi CSV, DCGM scrape or Prometheus JSON", type=["csv", "txt", "prom", "json", "log"],
                          key="tel_upload", disabled=signin.read_only())
    c1, c2, c3 = st.columns(3)
    any_gpu = "Any GPU in the catalog"
    gpu_in = c3.selectbox("GPU in the node", [any_gpu, *sorted(g.name for g in state.catalog(state.data_version()).gpus)],
                          key="tel_gpu", help="Readings above its memory or twice its TDP, or a GPU index past its "
                                              "GPUs per node, are refused; by default the widest bounds in the catalog.")
    node_in = c1.text_input("Node name", key="tel_node",
                            help="Needed for nvidia-smi logs (they do not name the host); for DCGM and Prometheus "
                                 "files it replaces the Hostname label.")
    tz_in = c2.text_input("Time zone of DCGM/Prometheus times", value="UTC", key="tel_tz",
                          help="An IANA name such as Europe/London; nvidia-smi already writes the node's local time.")
    if st.button("Import", key="tel_import", type="primary", disabled=up is None or signin.read_only()):
        try:
            result = import_telemetry(state.store(), up.getvalue(), up.name, node=node_in.strip() or None,
                                      tz=tz_in.strip() or None, gpu=None if gpu_in == any_gpu else gpu_in)
            if result.duplicate:
                st.info(md(result.message))
            else:
                st.session_state["tel_flash"] = result.message
                state.bump_data_version()
                st.rerun()
        except HangoverError as exc:
            st.error(md(str(exc)))

stamp = telemetry_stamp(state.store())
imports, nodes, cover = _imports(stamp)
if imports.empty:
    st.info("No telemetry yet. Import a file above, or from the command line: "
            "`hangover telemetry import gpu.csv --node bank-node-1`.")
    st.stop()

first, last = cover["first_ts"].min().date(), cover["last_ts"].max().date()
c1, c2 = st.columns([1, 2])
node = c1.selectbox("Node", [ALL_NODES, *nodes], key="tel_node_filter")
span = c2.date_input("Dates (inclusive)", value=(first, last), min_value=first, max_value=last, key="tel_dates")
date_from, date_to = (span[0], span[-1]) if isinstance(span, tuple | list) and span else (first, last)

try:
    scenario = state.scenario()
    summary = _summary(stamp, scenario.model_dump_json(), None if node == ALL_NODES else node, date_from, date_to)
except HangoverError as exc:
    st.error(md(str(exc)))
    st.stop()
p = summary.profile

st.subheader(md(p.label[0].upper() + p.label[1:]))
k1, k2, k3, k4 = st.columns(4)
k1.metric("Measured utilization", percent(p.utilization),
          help=md(f"Mean over {integer(p.gpu_hours)} GPU-hours of {p.metric_label}. SM activity is preferred where "
                  "the file has it: utilization.gpu counts any kernel running, however little of the chip it uses."))
k2.metric("GPUs", integer(p.gpus), help=md(f"On {', '.join(p.nodes)}."))
k3.metric("Samples", integer(p.samples), help=md(f"{p.first_ts:%Y-%m-%d %H:%M} to {p.last_ts:%Y-%m-%d %H:%M}."))
k4.metric("Idle cost a month", money(summary.idle_usd_per_month),
          help=md(f"{integer(p.gpus)} GPUs × 730 h × {money(summary.usd_per_gpu_hour)}/GPU-hour × (1 − measured "
                  f"utilization). Node price: {node_rate_label(summary.rate)}, {summary.rate.source} ({summary.rate.as_of}); "
                  "change it in the sidebar."))
st.caption(md(f"Metric: {p.metric_label}. Measured figures, dated {p.first_ts:%Y-%m-%d} to {p.last_ts:%Y-%m-%d}; "
              "the idle cost prices them at the sidebar scenario's node rate."))

plan = None
ev = state.evaluation()
if ev is not None:
    plan = tuple(float(x) for x in ev.fleet.hourly_utilization)
heat, profile = _figures((stamp, node, date_from, date_to, scenario.model_dump_json(), plan), summary, plan)
st.plotly_chart(heat, key="tel_heatmap")
st.plotly_chart(profile, key="tel_profile")
if plan is not None:
    st.caption("The dashed line is the plan's hour-by-hour utilization (Overview): a model of your inventory "
               "on an assumed office-hours profile, an estimate.")

st.subheader("Imported files")
st.dataframe(
    imports[["imported_at", "file_name", "file_format", "nodes", "gpus", "samples", "first_ts", "last_ts",
             "metrics", "time_basis"]],
    hide_index=True, placeholder="—", width="stretch",
    column_config={"imported_at": st.column_config.DatetimeColumn("imported", format="YYYY-MM-DD HH:mm"),
                   "file_name": st.column_config.TextColumn("file"),
                   "file_format": st.column_config.TextColumn("format"),
                   "gpus": st.column_config.NumberColumn("GPUs", format=column_format("int")),
                   "samples": st.column_config.NumberColumn("samples", format=column_format("int")),
                   "first_ts": st.column_config.DatetimeColumn("first sample", format="YYYY-MM-DD HH:mm"),
                   "last_ts": st.column_config.DatetimeColumn("last sample", format="YYYY-MM-DD HH:mm"),
                   "time_basis": st.column_config.TextColumn("clock")},
)
