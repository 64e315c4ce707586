"""Workloads page: upload and validate an inventory, commit it as a version, edit it, compare and restore versions."""

import streamlit as st

from core.bounds import input_limits
from core.errors import HangoverError
from core.inventory import DECIMALS, ENUM_VALUES, read_inventory, template_bytes, validate_frame

# Above EDITOR_MAX_ROWS the inventory is read-only, PAGE_ROWS a page (also the preview's and a comparison's rows).
from core.inventory.columns import EDITOR_MAX_ROWS, PAGE_ROWS
from core.inventory.versions import (
    commit_inventory,
    diff_versions,
    latest_inventory,
    latest_size,
    list_versions,
    restore_version,
    version_page,
)
from core.models import Workload
from core.presentation.format import column_format, integer
from dashboard import signin
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


def _read(up, slot, sheet: str | None = None, decimal: str | None = None):
    """Read and validated once per upload, sheet and decimal choice, and kept in this session only.

    Not st.cache_data: that pickled the whole report into a process-wide cache
    and unpickled a fresh copy on every rerun, and hashed the uploaded bytes
    each time. The session keeps the reports of its current upload; another
    upload (or none) lets them go.
    """
    memo = st.session_state.get("wl_reads")
    if memo is None or memo[0] != up.file_id:
        memo = (up.file_id, {})
        st.session_state["wl_reads"] = memo
    reads = memo[1]
    if (sheet, decimal) not in reads:
        bar = slot.progress(0.0, text=md(f"Reading {up.name}…"))
        reads[(sheet, decimal)] = read_inventory(up.getvalue(), file_name=up.name, sheet=sheet, decimal=decimal,
                                                 progress=lambda f, what: bar.progress(f, text=md(what)))
        slot.empty()
    return reads[(sheet, decimal)]


@st.cache_resource(show_spinner=False, max_entries=2)
def _current(data_ver: int):
    """(version, workloads, the frame when the editor may take it, else None), shared by every session.

    A resource (never modified here: the editor gets its own copy), keyed on
    the store's stamp, so a version committed from the command line shows on
    the next rerun and sessions do not each hold a copy.
    """
    version, count = latest_size(store())
    if count > EDITOR_MAX_ROWS:
        return version, count, None
    version, frame = latest_inventory(store())
    return version, len(frame), frame


@st.cache_data(show_spinner=False, max_entries=8)
def _page(data_ver: int, version: int, page: int):
    return version_page(store(), version, (page - 1) * PAGE_ROWS, PAGE_ROWS)


@st.cache_data(show_spinner=False, max_entries=4)
def _versions(data_ver: int):
    return list_versions(store())


@st.cache_data(show_spinner=False, max_entries=8)
def _diff(data_ver: int, a: int, b: int):
    return diff_versions(store(), a, b, limit=PAGE_ROWS)


def _commit(frame, file_name: str, upload_id: str | None = None) -> None:
    """Commit with a progress bar (checksum, then the rows), then refresh and say what happened.

    An uploaded file's reports are let go once it is committed (or found identical): they hold its rows,
    and the upload is done with. The page remembers the file as done instead of reading it again.
    """
    bar = st.progress(0.0, text=md(f"Committing {file_name}…"))
    try:
        result = commit_inventory(store(), frame, file_name=file_name, created_by="dashboard",
                                  progress=lambda f, what: bar.progress(f, text=md(what)))
    except HangoverError as exc:
        bar.empty()
        st.error(md(str(exc)))
        return
    if upload_id is not None:
        st.session_state.pop("wl_reads", None)
        st.session_state["wl_done"] = upload_id
    _committed(result)


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
    st.dataframe(report.errors, hide_index=True, placeholder="—", width="stretch", column_config=ERROR_COLUMNS, key=f"wl_errors_{what}")
    if report.unlisted_errors:
        st.caption(f"The first {integer(len(report.errors))} are listed; fix them and upload again to see the rest.")
    return False


st.title("Workloads")
try:
    version, count, current = _current(data_version())
except HangoverError as exc:
    st.error(md(str(exc)))
    st.stop()
st.caption(
    f"The routing uses **version {version}**, the latest committed inventory ({integer(count)} workloads)."
    if version is not None else
    f"Nothing committed yet: the routing uses the **bundled sample** ({integer(count)} workloads of a bank). "
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
    signin.read_only_note()
    # A viewer cannot commit an upload: the uploader is disabled too, so no page suggests an import it then refuses.
    up = st.file_uploader("Inventory file (CSV or XLSX)", type=["csv", "xlsx"], key="wl_upload",
                          disabled=signin.read_only())
    # Drawn on every run (a progress bar while a file is read, else nothing), so the elements below keep their place.
    read_slot = st.empty()
    done = st.session_state.get("wl_done")
    if up is None:
        st.session_state.pop("wl_reads", None)  # let the last upload's reports go
        st.session_state.pop("wl_done", None)
    elif done == up.file_id:  # what happened is the message above (and the Versions tab)
        st.caption(md(f"Done with {up.name}. To commit another file, upload it here."))
    else:
        upload_key = f"{up.name}_{up.size}"
        report = _read(up, read_slot)
        sheet = None
        if len(report.sheets) > 1:  # several sheets hold an inventory header: the user picks one
            sheet = st.selectbox("Sheet to read", report.sheets, index=report.sheets.index(report.sheet),
                                 key=f"wl_sheet_{upload_key}", help="Every sheet whose header names the inventory columns.")
            report = _read(up, read_slot, sheet=sheet)
        if report.needs_decimal or st.session_state.get(f"wl_decimal_{upload_key}") is not None:
            decimal = st.radio("Decimal separator in this file", DECIMALS, index=None, horizontal=True,
                               key=f"wl_decimal_{upload_key}",
                               format_func=lambda d: "comma: 40.000 is forty thousand, 0,85 a share" if d == ","
                               else "point: 40.000 is forty, 0.85 a share",
                               help="Numbers such as 40.000 read two ways, and nothing else in the file says which.")
            if decimal is not None:
                report = _read(up, read_slot, sheet=sheet, decimal=decimal)
        st.caption(md(f"{up.name}: read as {report.dialect}."))
        if _show_report(report, up.name):
            n = len(report.frame)
            st.success(md(f"{integer(n)} workloads read from {up.name} with no problems. Preview:"))
            # Only the first rows go to the browser: a table sends every row it is given.
            st.dataframe(report.frame.head(PAGE_ROWS), width="stretch", hide_index=True,
                         column_config=WORKLOAD_COLUMNS, column_order=PREVIEW_ORDER, placeholder="—", key="wl_preview")
            if n > PAGE_ROWS:
                st.caption(f"The first {integer(PAGE_ROWS)} of {integer(n)} rows are shown; all of them are committed.")
            if st.button(md(f"Commit {up.name} as a new version"), key="wl_commit", type="primary", disabled=signin.read_only()):
                _commit(report.frame, up.name, up.file_id)

with edit_tab:
    if current is None:
        st.info(f"Version {version} holds {integer(count)} workloads, more than the {integer(EDITOR_MAX_ROWS)} the "
                "editor takes: it would send every row to your browser. It is shown read-only, "
                f"{integer(PAGE_ROWS)} rows a page. To change it, edit the file and upload it again "
                "(or `hangover workloads import FILE`).")
        pages = -(-count // PAGE_ROWS)
        page = st.number_input(f"Page (of {integer(pages)})", min_value=1, max_value=pages, value=1, step=1,
                               key=f"wl_page_{version}")
        first = (page - 1) * PAGE_ROWS
        st.dataframe(_page(data_version(), version, page), width="stretch", column_config=WORKLOAD_COLUMNS,
                     column_order=EDITOR_ORDER, placeholder="—", key="wl_pages")
        st.caption(f"Workloads {integer(first + 1)} to {integer(min(first + PAGE_ROWS, count))} of "
                   f"{integer(count)}; the first column is the row in the file.")
    else:
        st.markdown("Edit cells, add rows at the bottom or delete rows, then save. The same checks as an upload run "
                    "first; problems name rows counted from 1 at the top of this table.")
        # The key carries the version: after a commit the editor starts again from the new version's rows.
        edited = st.data_editor(current.reset_index(drop=True), num_rows="dynamic", width="stretch", hide_index=True,
                                column_config=EDITOR_COLUMNS, column_order=EDITOR_ORDER, placeholder="",
                                key=f"wl_editor_{version}")
        if st.button("Check and save as a new version", key="wl_save_edits", type="primary", disabled=signin.read_only()):
            report = validate_frame(edited, row_numbers=range(1, len(edited) + 1))
            if _show_report(report, "Your edits"):
                _commit(report.frame, "edited in the dashboard")

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
        rows = dict(zip(versions["version"], versions["row_count"], strict=True))
        # A comparison joins both versions whole: automatic for inventories the editor takes, on request above
        # (a tab's content runs on every rerun, visible or not).
        large = max(rows[a], rows[b]) > EDITOR_MAX_ROWS
        wanted = not large or st.session_state.get("wl_diff_asked") == (a, b)
        if a == b:
            st.caption("Choose two different versions to compare.")
        elif not wanted:
            st.caption(f"Versions {a} and {b} hold {integer(rows[a])} and {integer(rows[b])} workloads: comparing "
                       "them takes a while, so it runs when you ask.")
            if st.button(f"Compare versions {a} and {b}", key="wl_diff_ask"):
                st.session_state["wl_diff_asked"] = (a, b)
                st.rerun()
        try:
            diff = _diff(data_version(), a, b) if a != b and wanted else None
            if diff is None:
                pass
            elif diff.empty:
                st.caption(f"Versions {a} and {b} hold the same workloads.")
            else:
                st.dataframe(diff, hide_index=True, placeholder="—", width="stretch", key="wl_diff",
                             column_config={"fields": st.column_config.TextColumn("changed columns", width="large")})
                if diff.attrs["total"] > len(diff):
                    st.caption(f"The first {integer(len(diff))} of {integer(diff.attrs['total'])} changes, by "
                               "workload_id (`hangover workloads diff` lists them all).")
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
