"""AppTest of scenarios in the dashboard: the URL keeps the sidebar, saved scenarios load and compare, prices and tabs."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core import scenarios as S
from core.store import Store
from tests.apptest_support import figures

APP = Path(__file__).resolve().parents[1] / "dashboard" / "app.py"


@pytest.fixture
def db(app_db):
    """A fresh store path for the app (conftest.app_db)."""
    return app_db


def _app(params: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=90)
    for k, v in (params or {}).items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, at.exception
    return at


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _show(at: AppTest, page: str) -> AppTest:
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def _button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def _save(path: Path, name: str, **inputs) -> None:
    store = Store(path)
    try:
        S.save_scenario(store, name, S.scenario_from_inputs(inputs), created_by="alice")
    finally:
        store.close()


LINK = {"sc_fleet_nodes": "3", "sc_pricing": "3-year savings plan", "sc_cost_basis": "Marginal",
        "sc_max_fallback_pct": "30", "sc_sla_scale": "1.5"}


@pytest.mark.slow
def test_a_link_sets_the_sidebar_and_a_refresh_keeps_it(db):
    """Opening the app with the scenario in the query string (what a refresh or a shared link does)."""
    at = _app(LINK)
    sb = at.sidebar
    assert sb.number_input(key="sc_fleet_nodes").value == 3
    assert sb.selectbox(key="sc_pricing").value == "savings_3y"
    assert sb.radio(key="sc_cost_basis").value == "marginal"
    assert sb.number_input(key="sc_max_fallback_pct").value == 30
    assert sb.slider(key="sc_sla_scale").value == 1.5
    assert not sb.warning  # every setting in the link was used
    assert _metrics(at)["Owned nodes"] == "3"
    first = _metrics(at)

    again = _app(LINK)  # the same URL in a new session: the same figures
    assert _metrics(again) == first
    plain = _app()
    assert plain.sidebar.number_input(key="sc_fleet_nodes").value == 1 and _metrics(plain) != first


@pytest.mark.slow
def test_garbled_and_unknown_link_settings_fall_back_with_a_note(db):
    at = _app({"sc_fleet_nodes": "three", "sc_gpu": "No Such GPU", "sc_sla_scale": "99", "sc_bogus": "1"})
    sb = at.sidebar
    assert sb.number_input(key="sc_fleet_nodes").value == 1
    assert sb.selectbox(key="sc_gpu").value == "H100 SXM"
    (note,) = [w.value for w in sb.warning if "could not be used" in w.value]
    for words in ("sc_fleet_nodes='three'", "sc_gpu='No Such GPU'", "sc_sla_scale='99'", "sc_bogus='1'"):
        assert words in note
    assert "sc_bogus" not in at.query_params  # an unknown setting leaves the link
    assert _metrics(at)["Owned nodes"] == "1"  # the pages run on the defaults
    _button(at, "Dismiss").click().run()
    assert not [w for w in at.sidebar.warning if "could not be used" in w.value]


@pytest.mark.slow
def test_percent_inputs_in_the_sidebar(db):
    """Cost of capital typed as 12 (percent) is 0.12 in the scenario; the fallback share 35 is 0.35."""
    at = _app({"sc_pricing": "Owned hardware", "sc_own_cost_of_capital_pct": "12", "sc_max_fallback_pct": "35"})
    assert at.sidebar.number_input(key="sc_own_cost_of_capital_pct").value == 12.0
    inputs = {k.removeprefix("sc_"): at.session_state[k] for k in
              ["sc_pricing", "sc_max_fallback_pct", *[f"sc_{n}" for n in S.OWNED_INPUT_FIELDS]]}
    sc = S.scenario_from_inputs(inputs)
    assert sc.owned_hardware.cost_of_capital_rate == 0.12 and sc.max_fallback_share == 0.35


@pytest.mark.slow
def test_overview_says_whose_figures_these_are(db):
    at = _app()
    assert any(m.value.startswith(":orange-badge[sample data] **Bundled sample inventory")
               and "a demo bank" in m.value for m in at.markdown)


@pytest.mark.slow
def test_a_saved_scenario_loads_into_the_sidebar(db):
    _save(db, "Three nodes", fleet_nodes=3, pricing="savings_3y")
    at = _show(_app(), "screens/scenarios.py")
    at.selectbox(key="sc_manage_name").set_value("Three nodes")
    at.button(key="sc_load").click().run()
    assert not at.exception
    assert any("Loaded 'Three nodes' into the sidebar" in s.value for s in at.success)
    assert at.sidebar.number_input(key="sc_fleet_nodes").value == 3
    assert at.sidebar.selectbox(key="sc_pricing").value == "savings_3y"
    assert any("this is the saved scenario **Three nodes**" in m.value for m in at.markdown)
    at = _show(at, "screens/overview.py")
    assert _metrics(at)["Owned nodes"] == "3"
    # The export's file names carry the saved name (AppTest cannot read a download's name: the browser test does).
    assert S.download_stem(S.scenario_from_inputs(at.session_state["sc_saved"][1]), "bundled sample",
                           saved_name="Three nodes").startswith("gpu-hangover_three-nodes_")


@pytest.mark.slow
def test_saving_from_the_page_and_a_bad_name(db):
    at = _show(_app({"sc_fleet_nodes": "2"}), "screens/scenarios.py")
    at.text_input(key="sc_save_name").input("a/b")
    _button(at, "Save scenario").click().run()
    assert any("contains '/'" in e.value for e in at.error)
    at.text_input(key="sc_save_name").input("Two nodes")
    at.text_input(key="sc_save_by").input("alice")
    _button(at, "Save scenario").click().run()
    assert any("Saved 'Two nodes'" in s.value for s in at.success)
    store = Store(db)
    try:
        saved = S.load_scenario(store, "two nodes")
    finally:
        store.close()
    assert saved.scenario.fleet_nodes == 2 and saved.created_by == "alice"
    table = at.table[0].value  # the saved scenarios
    assert list(table["name"]) == ["Two nodes"]


@pytest.mark.slow
def test_a_comparison_of_two_scenarios_shows_their_difference(db):
    _save(db, "One node")
    _save(db, "Three nodes 3y", fleet_nodes=3, pricing="savings_3y")
    at = _show(_app(), "screens/scenarios.py")
    assert at.multiselect(key="sc_compare_names").value == ["One node", "Three nodes 3y"]
    saved_table, figures_table = (t.value for t in at.table)
    verdicts_table = at.dataframe[0].value
    assert list(saved_table["name"]) == ["One node", "Three nodes 3y"]
    table = figures_table.set_index("Figure")
    assert list(table.columns) == ["One node", "Three nodes 3y"]
    assert table.loc["Nodes owned", "One node"] == "1" and table.loc["Nodes owned", "Three nodes 3y"] == "3"
    bills = table.loc["Cash bill per month"]
    assert bills["One node"] != bills["Three nodes 3y"] and bills["One node"].startswith("\\$")  # escaped for st.table
    chart = figures(at)["Cash bill per month by scenario"]
    assert chart["data"][0]["x"] == ["One node", "Three nodes 3y"]
    totals = [a + b for a, b in zip(chart["data"][0]["y"], chart["data"][1]["y"], strict=True)]
    shown = [float(bills[n].replace("\\$", "").replace(",", "")) for n in ("One node", "Three nodes 3y")]
    assert shown == pytest.approx(totals, abs=0.51)  # the bars' heights are the bills in the table
    assert {"One node", "Three nodes 3y", "changed"} <= set(verdicts_table.columns)
    names = [b.proto.label for b in at.get("download_button")]
    assert "Comparison workbook (XLSX)" in names


def test_a_gpu_without_a_price_is_one_sidebar_warning(db):
    at = _app({"sc_gpu": "L40S"})  # no 1-year savings-plan price for the L40S
    (warning,) = [w.value for w in at.sidebar.warning]
    assert warning.startswith("No 1-year savings plan price for L40S") and "node price override" in warning
    assert not at.error and not at.metric
    assert any("needs a node price" in i.value for i in at.info)
    for page in ("screens/workloads.py", "screens/pricing.py", "screens/scenarios.py"):
        at = _show(at, page)
        assert not at.error, (page, [e.value for e in at.error])
    at.sidebar.number_input(key="sc_node_usd_per_hour").set_value(20.0).run()  # the fix it names
    at = _show(at, "screens/overview.py")
    assert not at.sidebar.warning and _metrics(at)["Owned nodes"] == "1"


@pytest.mark.slow
def test_the_workloads_tabs_do_not_move_after_a_commit_message(db):
    """The tabs keep their place in the page whether or not a commit message shows above them.

    A browser keeps the open tab only while the tabs element keeps its position;
    the flash came and went before, moving them and reopening 'Upload a file'.
    """
    at = _show(_app(), "screens/workloads.py")

    def tabs_position(at):
        return [i for i, node in enumerate(at.main.children.values()) if node.type == "tab_container"]

    before = tabs_position(at)
    at.button(key="wl_save_edits").click().run()  # commit the current rows as a version: a flash appears
    assert any("committed version 1" in s.value for s in at.success)
    with_flash = tabs_position(at)
    at.run()  # the next rerun (e.g. the first cell edit): the flash is gone
    assert not at.success
    assert before == with_flash == tabs_position(at)


@pytest.mark.slow
def test_rename_delete_and_a_scenario_the_sidebar_cannot_show(db):
    _save(db, "Plan A")
    _save(db, "Pricey APIs", api_price_scale=4.0)
    store = Store(db)
    try:  # saved from the CLI with an API price scale beyond the sidebar's 0.25-4 slider
        S.save_scenario(store, "Tenfold", S.scenario_from_inputs({"api_price_scale": 10.0}))
    finally:
        store.close()
    at = _show(_app(), "screens/scenarios.py")
    at.selectbox(key="sc_manage_name").set_value("Tenfold")
    at.button(key="sc_load").click().run()
    (err,) = [e.value for e in at.error]
    assert "Cannot load 'Tenfold' into the sidebar" in err and "outside the sidebar's 0.25 to 4" in err
    assert at.sidebar.slider(key="sc_api_price_scale").value == 1.0  # nothing changed

    at.selectbox(key="sc_manage_name").set_value("Plan A")
    at.text_input(key="sc_rename_to").input("pricey apis")
    at.button(key="sc_rename").click().run()
    assert any("a scenario named 'Pricey APIs' is already saved" in e.value for e in at.error)
    at.text_input(key="sc_rename_to").input("Plan B")
    at.button(key="sc_rename").click().run()
    assert any("Renamed 'Plan A' to 'Plan B'" in s.value for s in at.success)
    at.selectbox(key="sc_manage_name").set_value("Plan B")
    at.checkbox(key="sc_delete_sure").check().run()
    at.button(key="sc_delete").click().run()
    assert any("Deleted 'Plan B'" in s.value for s in at.success)
    assert list(at.table[0].value["name"]) == ["Pricey APIs", "Tenfold"]


@pytest.mark.slow
def test_a_link_naming_a_saved_scenario_opens_it(db):
    """?scenario=NAME (any case) loads that saved scenario into the sidebar; the URL then holds its settings."""
    _save(db, "Three nodes 3y", fleet_nodes=3, pricing="savings_3y", cost_basis="marginal")
    at = _app({"scenario": "three NODES 3y"})
    sb = at.sidebar
    assert sb.number_input(key="sc_fleet_nodes").value == 3
    assert sb.selectbox(key="sc_pricing").value == "savings_3y"
    assert sb.radio(key="sc_cost_basis").value == "marginal"
    assert [s.value for s in sb.success] == ["Opened the saved scenario 'Three nodes 3y' (saved on the bundled "
                                             "sample inventory)."]
    assert not sb.warning
    assert _metrics(at)["Owned nodes"] == "3"
    # The settings, not the name, are the scenario from here on: a refresh finds them in the URL.
    assert "scenario" not in at.query_params
    assert at.query_params["sc_fleet_nodes"] == "3" and at.query_params["sc_pricing"] == "3-year savings plan"
    assert "sc_gpu" not in at.query_params  # a default stays out of the URL
    # The link's own settings win over the saved ones, as --scenario and the CLI flags do.
    at = _app({"scenario": "Three nodes 3y", "sc_fleet_nodes": "5"})
    assert at.sidebar.number_input(key="sc_fleet_nodes").value == 5
    assert at.sidebar.selectbox(key="sc_pricing").value == "savings_3y"


@pytest.mark.slow
def test_a_link_naming_an_unknown_scenario_warns_and_keeps_the_defaults(db):
    _save(db, "Kept", fleet_nodes=2)
    at = _app({"scenario": "Nope"})
    sb = at.sidebar
    (warning,) = [w.value for w in sb.warning]
    assert warning.startswith("The link asks for the saved scenario 'Nope', which cannot be opened: ")
    assert "Kept" in warning and "defaults" in warning  # names what is saved, says what is shown instead
    assert sb.number_input(key="sc_fleet_nodes").value == 1 and sb.selectbox(key="sc_pricing").value == "savings_1y"
    assert not at.exception and not at.error


def test_a_link_with_a_very_long_scenario_name_is_refused_in_a_short_warning(db):
    """A 20,000-character ?scenario= (issue 34: 75 s and a sidebar full of it) is refused by its length and quoted
    clipped: the warning names the limit and stays short."""
    at = _app({"scenario": "x" * 20_000, "sc_bogus": "y" * 20_000})
    sb = at.sidebar
    warnings = [w.value for w in sb.warning]
    assert any("the limit is 60" in w and "20,000 characters" in w for w in warnings), warnings
    assert all(len(w) < 1_000 for w in warnings), [len(w) for w in warnings]
    assert sb.number_input(key="sc_fleet_nodes").value == 1
    assert not at.exception and not at.error
