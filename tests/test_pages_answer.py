"""AppTest of the answer pages (overview, routing, fleet sizing, export) driven through dashboard/app.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from core.store import Store
from tests.apptest_support import figures

APP = Path(__file__).resolve().parents[1] / "dashboard" / "app.py"
PAGES = ["screens/overview.py", "screens/routing.py", "screens/fleet.py", "screens/export.py"]
TITLES = {"screens/overview.py": "Overview", "screens/routing.py": "Routing", "screens/fleet.py": "Fleet sizing",
          "screens/export.py": "Export"}


@pytest.fixture
def start(monkeypatch, tmp_path):
    """Start the app on a store at a fresh path; `start(inventory_csv)` commits that inventory first."""
    path = tmp_path / "fresh.duckdb"
    monkeypatch.setenv("HANGOVER_DB", str(path))
    st.cache_resource.clear()  # open_store() is cached per process, not per path
    st.cache_data.clear()

    def run(inventory_csv: str | None = None) -> AppTest:
        if inventory_csv is not None:
            from core.inventory import read_inventory
            from core.inventory.versions import commit_inventory

            report = read_inventory(inventory_csv.encode(), file_name="inventory.csv")
            assert report.ok, report.errors
            store = Store(path)
            commit_inventory(store, report.frame, file_name="inventory.csv")
            store.close()
        at = AppTest.from_file(str(APP), default_timeout=180)
        at.run()
        assert not at.exception
        return at

    yield run
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def app(start):
    """The app on a fresh store (no inventory version, no user rows: the bundled sample), after its first run."""
    return start()


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def dollars(text: str) -> float:
    return float(text.replace("$", "").replace(",", ""))




def show(at: AppTest, page: str) -> AppTest:
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_page_renders_on_a_fresh_store(app, page):
    at = show(app, page)
    assert at.title[0].value == TITLES[page]
    assert not at.error


def test_overview_shows_kpis_summary_charts_and_provenance(app):
    at = show(app, "screens/overview.py")
    m = metrics(at)
    assert m["Owned nodes"] == "1"
    assert m["Utilization"].endswith("%")
    assert dollars(m["Idle cost a month"]) > 0
    assert m["Owned $/M output"].startswith("$")
    assert int(m["Nodes needed"]) >= 1
    text = " ".join(md.value for md in at.markdown)
    assert "bundled sample" in text  # where the inventory came from
    assert "Node price: AWS" in text and "as of 20" in text and "confidence" in text
    charts = figures(at)
    (util,) = [c for t, c in charts.items() if t.startswith("Utilization")]
    assert [t["name"] for t in util["data"]] == ["With batch fill", "Interactive only"]
    assert len(util["data"][0]["y"]) == 24
    assert any(t.startswith("Verdict mix") for t in charts)


def test_more_owned_nodes_raise_the_idle_cost(app):
    at = show(app, "screens/overview.py")
    before = metrics(at)
    # Idle cost covers every node in the plan (issue 11): owning more than the plan needs adds idle nodes.
    at.number_input(key="sc_fleet_nodes").set_value(12).run()
    after = metrics(at)
    assert after["Owned nodes"] == "12"
    assert dollars(after["Idle cost a month"]) > dollars(before["Idle cost a month"])
    assert float(after["Utilization"].rstrip("%")) < float(before["Utilization"].rstrip("%"))


@pytest.mark.slow
def test_on_demand_pricing_changes_the_node_price(app):
    at = show(app, "screens/overview.py")
    before = metrics(at)
    note = [md.value.replace("\\", "") for md in at.markdown if "Node price:" in md.value][0]
    at.selectbox(key="sc_pricing").set_value("on_demand").run()
    assert not at.exception
    after_note = [md.value.replace("\\", "") for md in at.markdown if "Node price:" in md.value][0]
    assert "(On-demand)" in after_note and "(1-year savings plan)" in note  # options in words (issue 14)
    assert after_note != note
    # On-demand costs more an hour, so the same idle hours cost more.
    assert dollars(metrics(at)["Idle cost a month"]) > dollars(before["Idle cost a month"])


def _api_spend_by_option(at) -> dict[str, float]:
    """The fleet-options chart's 'Public APIs' bars by option (the table under it is words, not numbers)."""
    (chart,) = [c for t, c in figures(at).items() if t.startswith("$ a month: owned nodes + public APIs")]
    api = next(t for t in chart["data"] if t["name"] == "Public APIs")
    return {y.split(" (")[0]: x for x, y in zip(api["x"], api["y"], strict=True)}


@pytest.mark.slow
def test_api_price_scale_doubles_what_the_all_api_option_costs(app, monkeypatch):
    from tests.apptest_support import sweep_on_demand

    sweep_on_demand(monkeypatch)  # the options do not wait for the sweep
    at = show(app, "screens/fleet.py")
    options = _api_spend_by_option(at)
    at.slider(key="sc_api_price_scale").set_value(2.0).run()
    assert not at.exception
    doubled = _api_spend_by_option(at)
    # Scaling every list price by 2 keeps the cheapest API per workload the cheapest: the bill doubles exactly.
    assert doubled["All on public APIs"] == pytest.approx(2 * options["All on public APIs"])


def _fleet_tables_wrap_their_text_and_show_no_infinity(at) -> None:
    """Issue 14: the drivers, deployments, architectures and options are static tables (long text wraps), in words."""
    tables = [t.value for t in at.table]
    headers = [list(t.columns) for t in tables]
    assert ["Workload", "Runs on", "Target", "Nodes it forces", "If", "Saves a month"] in headers
    assert ["Option", "Cash bill a month", "Nodes", "Serves", "Unserved work: cheapest route if relaxed or allowed",
            "With unserved work priced"] in headers
    side = next(t for t in tables if "Why not" in t.columns)
    assert (side["Why not"].str.len() > 40).any()  # whole sentences, not a cut-off cell
    for t in tables:
        text = " ".join(t.astype(str).to_numpy().ravel())
        assert "Infinity" not in text and "inf" not in text.split() and "None" not in text and "nan" not in text


@pytest.mark.slow
@pytest.mark.slow
def test_zero_owned_nodes_render_every_page(app):
    app.number_input(key="sc_fleet_nodes").set_value(0).run()
    assert not app.exception
    m = metrics(app)
    assert m["Owned nodes"] == "0"
    # Utilization and idle cost cover every node in the plan, including the ones it says to buy (issue 11).
    assert m["Utilization"] != "—" and m["Idle cost a month"] != "$0"
    assert any("You own no nodes" in md.value for md in app.markdown)
    for page in PAGES[1:]:
        show(app, page)


def test_a_scenario_error_is_a_message_on_every_page(app):
    # No 1-year savings-plan price exists for the L40S: one warning in the sidebar (issue 14), and each
    # answer page says in one line that it needs the price, instead of repeating the error.
    app.selectbox(key="sc_gpu").set_value("L40S").run()
    for page in PAGES:
        at = show(app, page)
        assert [w.value for w in at.sidebar.warning if "No 1-year savings plan price for L40S" in w.value]
        assert any("needs a node price" in i.value for i in at.info) and not at.error
        assert not at.metric


def test_routing_table_has_one_row_per_workload_and_explains_the_first(app):
    at = show(app, "screens/routing.py")
    table = at.dataframe[0].value
    assert len(table) == 7 and table["workload_id"].iloc[0] == "kyc-overnight"
    text = [md.value for md in at.markdown]
    assert any(line.startswith("- Runs on owned") for line in text)  # reasons(ev, 0)
    assert any("Routes rejected" in line for line in text)
    assert any("may not leave" in line for line in text)  # kyc data is owned_only: APIs refused
    (points,) = [c for t, c in figures(at).items() if t.startswith("Batchability")]
    assert points["layout"]["xaxis"]["type"] == "log" and points["layout"]["yaxis"]["type"] == "log"
    shown = sum(len(t["x"]) for t in points["data"])
    assert shown == int(table["value_usd_per_mtok"].notna().sum())


@pytest.mark.slow
def test_sla_scale_changes_the_routing_table_targets(app):
    at = show(app, "screens/routing.py")
    before = at.dataframe[0].value
    at.slider(key="sc_sla_scale").set_value(2.0).run()
    after = at.dataframe[0].value
    live = before["latency_slo_ms"].notna()
    assert (after.loc[live, "latency_slo_ms"] == 2 * before.loc[live, "latency_slo_ms"]).all()


@pytest.mark.slow
def test_fleet_page_sweeps_the_chosen_sla_scales(app, monkeypatch):
    from core.decision import analysis

    swept = []  # the scales the page evaluated (each is a full evaluation)
    one_scale = analysis.sla_sweep_rows
    monkeypatch.setattr(analysis, "sla_sweep_rows",
                        lambda catalog, workloads, scenario, scale: swept.append(scale)
                        or one_scale(catalog, workloads, scenario, scale))
    at = show(app, "screens/fleet.py")
    assert swept == [0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0]
    _fleet_tables_wrap_their_text_and_show_no_infinity(at)  # on the same run: the page is slow to draw
    nodes = metrics(at)["Nodes needed"]
    charts = figures(at)
    assert any(t.startswith("GPUs held") for t in charts)
    assert any(t.startswith("Nodes each architecture") for t in charts)
    (sweep,) = [c for t, c in charts.items() if t.startswith("Owned nodes per fleet option")]
    assert sweep["data"][0]["x"] == [0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0]
    at.select_slider(key="fleet_sla_scales").set_range(0.5, 1.0).run()
    assert not at.exception
    (sweep,) = [c for t, c in figures(at).items() if t.startswith("Owned nodes per fleet option")]
    assert sweep["data"][0]["x"] == [0.5, 0.75, 1.0]
    assert len(swept) == 8  # the narrower range is cached per scale: nothing evaluated again
    assert metrics(at)["Nodes needed"] == nodes  # a page-local sweep leaves the scenario's answer alone


@pytest.mark.slow
def test_fleet_page_sweeps_above_the_size_only_when_asked(app, monkeypatch):
    """Above SearchSettings.sla_sweep_max_workloads (each scale a whole evaluation with every fleet option: ~14 CPU s
    a scale at 100 workloads) the page draws every other section, the fleet options included, and offers the sweep
    as a button; pressed, it sweeps the chosen scales, and a rerun of the same scenario keeps the sweep."""
    from core.decision import analysis
    from core.decision import settings as settings_mod

    monkeypatch.setattr(settings_mod, "PLAN", settings_mod.PLAN.but(sla_sweep_max_workloads=6))  # the sample has 7
    swept = []
    one_scale = analysis.sla_sweep_rows
    monkeypatch.setattr(analysis, "sla_sweep_rows",
                        lambda catalog, workloads, scenario, scale: swept.append(scale)
                        or one_scale(catalog, workloads, scenario, scale))
    at = show(app, "screens/fleet.py")
    assert swept == []
    titles = list(figures(at))
    assert not any(t.startswith("Owned nodes per fleet option") for t in titles)
    assert any(t.startswith("GPUs held") for t in titles) and any(t.startswith("Nodes each architecture") for t in titles)
    assert any("Option" in t.value.columns for t in at.table)  # the options do not wait for the sweep
    assert any("up to 6 workloads only" in c.value and "these 7 workloads" in c.value for c in at.caption)
    at.select_slider(key="fleet_sla_scales").set_range(0.5, 2.0).run()
    assert swept == []  # choosing the range sweeps nothing either
    button = next(b for b in at.button if b.key == "fleet_sweep_run")
    assert button.label == "Sweep 5 SLA scales"
    button.click().run()
    assert not at.exception
    assert swept == [0.5, 0.75, 1.0, 1.5, 2.0]
    (sweep,) = [c for t, c in figures(at).items() if t.startswith("Owned nodes per fleet option")]
    assert sweep["data"][0]["x"] == [0.5, 0.75, 1.0, 1.5, 2.0]
    assert not any(b.key == "fleet_sweep_run" for b in at.button)
    at.run()
    assert any(t.startswith("Owned nodes per fleet option") for t in figures(at)) and len(swept) == 5
    at.number_input(key="sc_fleet_nodes").set_value(2).run()  # another scenario: asked for again
    assert len(swept) == 5 and any(b.key == "fleet_sweep_run" for b in at.button)


def test_export_offers_the_routing_csv(app):
    at = show(app, "screens/export.py")
    labels = [b.label for b in at.get("download_button")]
    assert "Download routing table (CSV)" in labels


@pytest.mark.slow
def test_export_builds_the_procurement_summary_on_demand(app):
    pytest.importorskip("core.presentation.report", reason="the procurement summary (core/report) is not in this build")
    at = show(app, "screens/export.py")
    assert [b.label for b in at.get("download_button")] == ["Download routing table (CSV)", "Audit trail (CSV)"]  # nothing built yet
    at.button(key="export_build").click().run()
    assert not at.exception and not at.error
    labels = [b.label for b in at.get("download_button")]
    assert labels == ["Download routing table (CSV)", "Workbook (XLSX)", "One-pager (HTML)", "One-pager (Markdown)",
                      "Audit trail (CSV)"]
    # A changed scenario makes the built files stale: they are withdrawn until built again.
    at.number_input(key="sc_fleet_nodes").set_value(3).run()
    assert [b.label for b in at.get("download_button")] == ["Download routing table (CSV)", "Audit trail (CSV)"]
    assert any("build again" in c.value for c in at.caption)


HEADER = ("workload_id,name,team,requests_per_day,peak_factor,input_tokens,output_tokens,latency_slo_ms,"
          "batch_window_hours,data_policy,task_class,min_quality,cached_input_share,notes\n")


@pytest.mark.slow
def test_pages_read_a_committed_inventory_version(start):
    at = start(HEADER
               + "chat,Chat,Ops,20000,3,1500,300,8000,,external_ok,chat,,,\n"
               + "night,Night batch,Ops,50000,1,3000,400,,8,owned_only,extraction,,,\n")
    assert any("inventory version 1" in md.value for md in at.markdown)
    at = show(at, "screens/routing.py")
    assert list(at.dataframe[0].value["workload_id"]) == ["chat", "night"]
    show(at, "screens/fleet.py")
    show(at, "screens/export.py")


def test_pages_render_when_no_route_can_serve_a_workload(start):
    # A 1 ms target on data that may not leave: nothing owned is that fast and no API may take it.
    at = start(HEADER + "tick,Impossible tick,Ops,1000,2,500,50,1,,owned_only,chat,,,\n")
    assert any("no feasible route" in md.value for md in at.markdown)
    at = show(at, "screens/routing.py")
    assert at.dataframe[0].value["route"].iloc[0] == "no feasible route"
    assert any("meets every constraint" in md.value for md in at.markdown)
    at = show(at, "screens/fleet.py")
    assert any("No workload runs on owned GPUs" in i.value for i in at.info)
    show(at, "screens/export.py")


def test_text_from_data_is_literal_markdown():
    from dashboard.format import md

    # Source paths such as "catalog/*/catalog.md; data/*.json" must not turn into italics, nor "$1 … $2" into LaTeX.
    assert md("catalog/*/x.md; $1 and $2") == "catalog/\\*/x.md; \\$1 and \\$2"
    # An underscore inside a word is never emphasis (CommonMark), so it is left as it is; brackets are escaped.
    assert md("owned_only [draft]") == "owned_only \\[draft\\]"
    assert md("_x_ and [a](http://e)") == "\\_x\\_ and \\[a\\](http\\://e)"
