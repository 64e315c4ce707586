"""Scenarios page: save the sidebar's scenario under a name, load, rename or delete saved ones, compare 2-4 side by side."""

from functools import partial

import streamlit as st

from core.errors import HangoverError
from core.presentation.charts_scenarios import scenario_comparison_chart
from core.presentation.report.comparison import (
    build_comparison_markdown,
    build_comparison_xlsx,
    figures_display,
)
from core.scenarios import (
    MAX_COMPARED,
    compare_scenarios,
    comparison_stem,
    delete_scenario,
    list_scenarios,
    rename_scenario,
    save_scenario,
    saved_rows,
)
from core.scenarios import scenario_words as words
from dashboard import signin, state
from dashboard.format import md, md_table, text_col


@st.cache_data(show_spinner="Evaluating each scenario…", max_entries=8)
def _compare(names: tuple[str, ...], version: int, saved_stamp: tuple, current_inventory: bool):
    """Cached on the names, the data version and when each was last saved (a replaced scenario is re-evaluated).

    `version` is not underscored: Streamlit leaves underscored arguments out of the cache key, and a
    command-line write (a new inventory, a benchmark) must reach the comparison on the next rerun.
    """
    return compare_scenarios(state.store(), list(names), catalog=state.catalog(version),
                             current_inventory=current_inventory)


@st.cache_data(show_spinner=False, max_entries=4)
def _workbook(names: tuple[str, ...], version: int, saved_stamp: tuple, current_inventory: bool) -> bytes:
    """The comparison workbook, written when the download is clicked (every workload: slow for 100k rows)."""
    return build_comparison_xlsx(_compare(names, version, saved_stamp, current_inventory))


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]  # str.capitalize would lower-case the scenario names


def _load() -> None:
    """Button callback: runs before the sidebar draws, so the sidebar shows the loaded values."""
    name = st.session_state.get("sc_manage_name")  # the choice as it is now, not as it was drawn
    try:
        saved = next(s for s in list_scenarios(state.store()) if s.name == name)
        state.load_into_sidebar(saved)
    except (HangoverError, StopIteration) as exc:
        st.session_state["sc_flash"] = ("error", f"Cannot load {name!r}: {exc or 'it is no longer saved'}")


st.title("Scenarios")
st.caption("A scenario is every setting in the sidebar. The link in the address bar already holds it (refresh or "
           "send it and the same scenario opens); here you can keep it under a name in the store, with who saved "
           "it, when and on which inventory, and compare up to four side by side.")
if flash := st.session_state.pop("sc_flash", None):
    getattr(st, flash[0])(flash[1])

try:
    saved = list_scenarios(state.store())
except HangoverError as exc:
    st.error(md(str(exc)))
    st.stop()

st.subheader("Save the sidebar's scenario")
signin.read_only_note()
try:
    current = state.scenario()
except HangoverError as exc:
    st.error(md(str(exc)))
    st.stop()
showing = state.saved_name()
st.markdown(md(words(current)) + (f" — this is the saved scenario **{md(showing)}**." if showing else "."))
with st.form("sc_save_form", clear_on_submit=False, border=False):
    c1, c2 = st.columns([2, 1])
    name = c1.text_input("Name", max_chars=60, key="sc_save_name", placeholder="e.g. Three nodes, 3-year plan",
                         help="1-60 characters: letters, digits, spaces and - _ . ( ) + & , '")
    who = c2.text_input("Saved by (optional)", key="sc_save_by", placeholder="your name")
    note = st.text_input("Note (optional)", key="sc_save_note", placeholder="what this scenario is for")
    replace = st.checkbox("Replace a saved scenario of the same name", key="sc_save_replace")
    if st.form_submit_button("Save scenario", type="primary", icon=":material/save:", disabled=signin.read_only()):
        try:
            done = save_scenario(state.store(), name, current, created_by=who.strip() or "dashboard", note=note,
                                 replace=replace)
            state.remember_saved(done)
            st.session_state["sc_flash"] = ("success", f"Saved {done.name!r} on the {done.inventory_label} inventory.")
            st.rerun()
        except HangoverError as exc:
            st.error(md(str(exc)))

st.subheader("Saved scenarios")
if not saved:
    st.info("No scenario is saved yet. Set the sidebar, give the scenario a name above and save it.")
    st.stop()

md_table(saved_rows(saved), hide_index=True)  # a few rows: a static table wraps long settings
names = [s.name for s in saved]
c1, c2, c3 = st.columns([2, 2, 1], vertical_alignment="bottom")
chosen = c1.selectbox("Saved scenario", names, key="sc_manage_name")
c2.button("Load into the sidebar", key="sc_load", on_click=_load, icon=":material/upload:")
with st.expander(f"Rename or delete {chosen!r}"):
    r1, r2 = st.columns([3, 1], vertical_alignment="bottom")
    new_name = r1.text_input("New name", max_chars=60, key="sc_rename_to")
    if r2.button("Rename", key="sc_rename", disabled=signin.read_only()):
        try:
            st.session_state["sc_flash"] = ("success", _sentence(rename_scenario(state.store(), chosen, new_name)))
            st.rerun()
        except HangoverError as exc:
            st.error(md(str(exc)))
    sure = st.checkbox(f"Yes, delete {chosen!r}", key="sc_delete_sure")
    if st.button("Delete", key="sc_delete", disabled=not sure or signin.read_only()):
        try:
            st.session_state["sc_flash"] = ("success", _sentence(delete_scenario(state.store(), chosen)))
            st.rerun()
        except HangoverError as exc:
            st.error(md(str(exc)))

st.subheader("Compare side by side")
if len(saved) < 2:
    st.info("Save a second scenario to compare it with the first.")
    st.stop()
picked = st.multiselect(f"Scenarios to compare (2 to {MAX_COMPARED})", names, default=names[:2],
                        max_selections=MAX_COMPARED, key="sc_compare_names")
on_current = st.checkbox("Evaluate all of them on the current inventory (default: the inventory each was saved on)",
                         key="sc_compare_current")
if len(picked) < 2:
    st.info("Pick at least two scenarios.")
    st.stop()
stamp = tuple((s.name, str(s.updated_at)) for s in saved if s.name in picked)
try:
    cmp = _compare(tuple(picked), state.data_version(), stamp, on_current)
except HangoverError as exc:
    st.error(md(str(exc)))
    st.stop()

md_table(figures_display(cmp), hide_index=True)  # static: the settings rows wrap instead of being cut off
for line in cmp.bill_lines():  # a scenario that serves less is never shown cheaper without saying so
    st.markdown(f"- {md(line)}")
st.plotly_chart(scenario_comparison_chart(cmp), key="sc_compare_chart")
n_changed = cmp.changed_count
st.markdown(f"**{n_changed} of {len(cmp.verdicts):,} workloads** are not routed the same way in every scenario"
            + (" (listed first)." if n_changed else "."))
only = st.toggle("Only workloads whose verdict changes", value=bool(n_changed), key="sc_compare_only_changed")
table = cmp.verdicts_table(only_changed=only)
st.dataframe(table, hide_index=True, placeholder="—", width="stretch", key="sc_compare_verdicts",
             # The routes side by side fit the page; each route's $/month is in the workbook below.
             column_order=["workload_id", "name", *cmp.names, "changed"],
             # Widths fit two scenarios at 1280 px with the workload's whole name (issue 14).
             column_config={"workload_id": text_col("workload", width=120), "name": text_col("name", width=235),
                            **{n: text_col(n, width=230) for n in cmp.names},
                            "changed": st.column_config.CheckboxColumn("changes", width=70)})
stem = comparison_stem(picked)
c1, c2 = st.columns(2)
c1.download_button("Comparison workbook (XLSX)", partial(_workbook, tuple(picked), state.data_version(), stamp, on_current),
                   file_name=f"{stem}.xlsx",
                   mime="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", key="sc_compare_xlsx", on_click="ignore",
                   icon=":material/download:")
c2.download_button("Comparison section (Markdown)", build_comparison_markdown(cmp), file_name=f"{stem}.md",
                   mime="text/markdown", key="sc_compare_md", on_click="ignore", icon=":material/download:")
