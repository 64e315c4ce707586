"""Workloads page: upload and validate an inventory, commit it as a version, edit it, compare and restore versions."""

import streamlit as st

from core.bounds import input_limits
from core.errors import HangoverError
from core.inventory import DECIMALS, ENUM_VALUES, read_inventory, template_bytes, validate_frame
from core.inventory.versions import (
    commit_inventory,
    diff_versions,
    latest_inventory,
    list_versions,
    restore_version,
)
from core.models import Workload
from core.presentation.format import column_format, integer
from dashboard.format import md
from dashboard.state import bump_data_version, data_version, store

ERROR_COLUMNS = {
    "row": st.column_config.NumberColumn("row", format=column_format("id"), width="small",
                                         help="Row in the file as a spreadsheet numbers it (header = 1); 0 = the whole file"),
    "column": st.column_config.TextColumn("column", width="small"),
    "value": st.column_config.TextColumn("value", width="small"),
    "problem": st.column_config.TextColumn("problem", width="large"),
}
# Pixel widths and short headers keep the contract's columns inside the ~980 px main column at 1440 px.
# Limits and help come from the Workload model's fields (core.bounds), the one place they are set.
WORKLOAD_COLUMNS = {
    "workload_id": st.column_config.TextColumn("workload_id", width=115, required=True),
    "name": st.column_config.TextColumn("name", width=140, required=True),
    "team": st.column_config.TextColumn("team", width=90),
    "requests_per_day": st.column_config.NumberColumn("requests/day", format=column_format("int"), width=80,
                                                      **input_limits(Workload, "requests_per_day")),
    "peak_factor": st.column_config.NumberColumn("peak", format=column_format("num_1"), width=50,
                                                 **input_limits(Workload, "peak_factor")),
    "input_tokens": st.column_config.NumberColumn("in tok", format=column_format("int"), width=60,
                                                  **input_limits(Workload, "input_tokens")),
    "output_tokens": st.column_config.NumberColumn("out tok", format=column_format("int"), width=55,
                                                   **input_limits(Workload, "output_tokens")),
    "latency_slo_ms": st.column_config.NumberColumn("SLA ms", format=column_format("int"), width=65,
                                                    **input_limits(Workload, "latency_slo_ms")),
    "batch_window_hours": st.column_config.NumberColumn("window h", format=column_format("num_1"), width=65,
                                                        **input_limits(Workload, "batch_window_hours")),
    "data_policy": st.column_config.SelectboxColumn("data policy", options=list(ENUM_VALUES["data_policy"]), width=90),
    "task_class": st.column_config.SelectboxColumn("task class", options=list(ENUM_VALUES["task_class"]), width=110),
    "min_quality": st.column_config.NumberColumn("floor", format=column_format("num_2"), width=55,
                                                 **input_limits(Workload, "min_quality")),
    "cached_input_share": st.column_config.NumberColumn("cached", format=column_format("num_2"), width=60,
                                                        **input_limits(Workload, "cached_input_share")),
    "notes": st.column_config.TextColumn("notes", width=150),
}
# The preview leaves out the free-text team and notes so the figures fit without sideways scrolling;
# the editor needs every column, so it puts those two last (and scrolls to reach them).
PREVIEW_ORDER = [c for c in WORKLOAD_COLUMNS if c not in ("team", "notes")]
EDITOR_ORDER = [*PREVIEW_ORDER, "team", "notes"]
# Editable headers carry a pencil icon: 22 px more per column keeps the short headers whole.
EDITOR_COLUMNS = {name: {**config, "width": config["width"] + 22} for name, config in WORKLOAD_COLUMNS.items()}


@st.cache_data(show_spinner=False, max_entries=8)
def _read(data: bytes, file_name: str, sheet: str | None = None, decimal: str | None = None):
    """Parsed and validated once per file content, sheet and decimal choice (reruns do not re-read the file)."""
    return read_inventory(data, file_name=file_name, sheet=sheet, decimal=decimal)


@st.cache_data(show_spinner=False, max_entries=4)
def _current(data_ver: int):
    return latest_inventory(store())


@st.cache_data(show_spinner=False, max_entries=4)
def _versions(data_ver: int):
    return list_versions(store())


def _committed(result) -> None:
    """After a commit or restore: refresh cached reads, route the latest version, say what happened."""
    if result.created:
        bump_data_version()
        st.session_state["inventory_version"] = None
    st.session_state["wl_flash"] = ("success" if result.created else "info", result.message)
    st.rerun()


def _show_report(report, what: str) -> bool:
    """Warnings, then the error table; True when the rows may be committed."""
    for w in report.warnings:
        st.warning(md(w))
    if report.ok:
        return True
    n = max(report.error_count, len(report.errors))  # the report lists the first MAX_LISTED_ERRORS
    st.error(md(f"{what}: {integer(n)} problem{'s' if n != 1 else ''}; nothing can be committed until "
                f"{'they are' if n != 1 else 'it is'} fixed."))
    st.dataframe(report.errors, hide_index=True, width="stretch", column_config=ERROR_COLUMNS, key=f"wl_errors_{what}")
    if report.unlisted_errors:
        st.caption(f"The first {integer(len(report.errors))} are listed; fix them and upload again to see the rest.")
    return False


st.title("Workloads")
try:
    version, current = _current(data_version())
except HangoverError as exc:
    st.error(md(str(exc)))
    st.stop()
st.caption(
    f"The routing uses **version {version}**, the latest committed inventory ({integer(len(current))} workloads)."
    if version is not None else
    f"Nothing committed yet: the routing uses the **bundled sample** ({integer(len(current))} workloads of a bank). "
    "Upload your own inventory below.")

# The message slot is drawn on every run, flash or not: if it came and went, the tabs below would move
# one place and the browser would reopen them on the first tab (issue 14: an edit flipped back to upload).
flash_slot = st.empty()
if flash := st.session_state.pop("wl_flash", None):
    getattr(flash_slot, flash[0])(md(flash[1]))

upload_tab, edit_tab, history_tab = st.tabs(["Upload a file", "Edit the current inventory", "Versions"])

with upload_tab:
    st.markdown("Fill in the template (one row per kind of LLM work), then upload it. Every bad cell is listed "
                "with its row and column; a file with any problem commits nothing.")
    buttons = st.container(horizontal=True)
    buttons.download_button("Template (CSV)", template_bytes("csv"), "workloads_template.csv", "text/csv",
                       key="wl_template_csv", icon=":material/download:")
    buttons.download_button("Template (XLSX)", template_bytes("xlsx"), "workloads_template.xlsx",
                       "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
                       key="wl_template_xlsx", icon=":material/download:", help="With a 'Columns' sheet explaining each column.")
    up = st.file_uploader("Inventory file (CSV or XLSX)", type=["csv", "xlsx"], key="wl_upload")
    if up is not None:
        data, upload_key = up.getvalue(), f"{up.name}_{up.size}"
        report = _read(data, up.name)
        sheet = None
        if len(report.sheets) > 1:  # several sheets hold an inventory header: the user picks one
            sheet = st.selectbox("Sheet to read", report.sheets, index=report.sheets.index(report.sheet),
                                 key=f"wl_sheet_{upload_key}", help="Every sheet whose header names the inventory columns.")
            report = _read(data, up.name, sheet=sheet)
        if report.needs_decimal or st.session_state.get(f"wl_decimal_{upload_key}") is not None:
            decimal = st.radio("Decimal separator in this file", DECIMALS, index=None, horizontal=True,
                               key=f"wl_decimal_{upload_key}",
                               format_func=lambda d: "comma: 40.000 is forty thousand, 0,85 a share" if d == ","
                               else "point: 40.000 is forty, 0.85 a share",
                               help="Numbers such as 40.000 read two ways, and nothing else in the file says which.")
            if decimal is not None:
                report = _read(data, up.name, sheet=sheet, decimal=decimal)
        st.caption(md(f"{up.name}: read as {report.dialect}."))
        if _show_report(report, up.name):
            st.success(md(f"{integer(len(report.frame))} workloads read from {up.name} with no problems. Preview:"))
            st.dataframe(report.frame, width="stretch", hide_index=True, column_config=WORKLOAD_COLUMNS,
                         column_order=PREVIEW_ORDER, placeholder="—", key="wl_preview")
            if st.button(md(f"Commit {up.name} as a new version"), key="wl_commit", type="primary"):
                try:
                    _committed(commit_inventory(store(), report.frame, file_name=up.name, created_by="dashboard"))
                except HangoverError as exc:
                    st.error(md(str(exc)))

with edit_tab:
    st.markdown("Edit cells, add rows at the bottom or delete rows, then save. The same checks as an upload run "
                "first; problems name rows counted from 1 at the top of this table.")
    # The key carries the version: after a commit the editor starts again from the new version's rows.
    edited = st.data_editor(current.reset_index(drop=True), num_rows="dynamic", width="stretch", hide_index=True,
                            column_config=EDITOR_COLUMNS, column_order=EDITOR_ORDER, placeholder="",
                            key=f"wl_editor_{version}")
    if st.button("Check and save as a new version", key="wl_save_edits", type="primary"):
        report = validate_frame(edited, row_numbers=range(1, len(edited) + 1))
        if _show_report(report, "Your edits"):
            try:
                _committed(commit_inventory(store(), report.frame, file_name="edited in the dashboard",
                                            created_by="dashboard"))
            except HangoverError as exc:
                st.error(md(str(exc)))

with history_tab:
    versions = _versions(data_version())
    if versions.empty:
        st.info("No version committed yet; the routing uses the bundled sample.")
    else:
        st.dataframe(
            versions, hide_index=True, width="stretch", key="wl_versions", placeholder="—",
            column_order=["version", "created_at", "file_name", "row_count", "comment", "restored_from", "is_latest"],
            column_config={
                "version": st.column_config.NumberColumn("version", format=column_format("id"), width="small"),
                "created_at": st.column_config.DatetimeColumn("committed", format="YYYY-MM-DD HH:mm"),
                "file_name": st.column_config.TextColumn("from", width="medium"),
                "row_count": st.column_config.NumberColumn("workloads", format=column_format("int")),
                "restored_from": st.column_config.NumberColumn("restored from", format=column_format("id")),
                "is_latest": st.column_config.CheckboxColumn("in use"),
            },
        )
        numbers = versions["version"].tolist()
        st.markdown("**Compare two versions**")
        c1, c2 = st.columns(2)
        # Keyed on the latest version: after each commit the comparison opens at (previous, latest).
        a = c1.selectbox("From version", numbers, index=max(len(numbers) - 2, 0), key=f"wl_diff_a_{numbers[-1]}")
        b = c2.selectbox("To version", numbers, index=len(numbers) - 1, key=f"wl_diff_b_{numbers[-1]}")
        try:
            diff = diff_versions(store(), a, b)
            if diff.empty:
                st.caption(f"Versions {a} and {b} hold the same workloads.")
            else:
                st.dataframe(diff, hide_index=True, width="stretch", key="wl_diff",
                             column_config={"fields": st.column_config.TextColumn("changed columns", width="large")})
        except HangoverError as exc:
            st.error(md(str(exc)))
        st.markdown("**Restore a version**")
        c1, c2 = st.columns([1, 2])
        n = c1.selectbox("Version to restore", numbers, index=0, key="wl_restore_version")
        c2.caption("Restoring adds that version's workloads as a new version; nothing is overwritten.")
        if c2.button(f"Restore version {n}", key="wl_restore"):
            try:
                _committed(restore_version(store(), n, created_by="dashboard"))
            except HangoverError as exc:
                st.error(md(str(exc)))
