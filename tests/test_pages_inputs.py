"""AppTest of the input pages (workloads, pricing, performance) driven through dashboard/app.py."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from core.inventory import read_inventory
from core.inventory.versions import commit_inventory, list_versions
from core.presentation.charts_inputs import import_benchmarks
from core.presentation.pricing_views import node_price_override, save_override
from core.store import open_store
from tests.apptest_support import figures

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "dashboard" / "app.py"
SAMPLE = ROOT / "data" / "workloads_sample.csv"
BENCH = ROOT / "tests" / "data" / "bench"
PAGES = {"screens/workloads.py": "Workloads", "screens/pricing.py": "Pricing", "screens/performance.py": "Performance"}


@pytest.fixture
def app(monkeypatch, tmp_path):
    """The app on a fresh store (seeded reference data, no inventory version), after its first run."""
    monkeypatch.setenv("HANGOVER_DB", str(tmp_path / "fresh.duckdb"))
    st.cache_resource.clear()  # open_store() is cached per process, not per path
    st.cache_data.clear()
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    assert not at.exception
    yield at
    st.cache_resource.clear()
    st.cache_data.clear()


def show(at: AppTest, page: str) -> AppTest:
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def click(at: AppTest, key: str) -> AppTest:
    at.button(key=key).click()
    return run(at)


def texts(elements) -> str:
    """The elements' text as the page shows it: Markdown's backslash escapes (data text is escaped) dropped."""
    return re.sub(r"\\(.)", r"\1", "\n".join(e.value for e in elements))


# st.dataframe keys do not reach AppTest's element tree (only editors' do), so tables are found by their columns.
TABLES = {
    "wl_preview": {"workload_id", "requests_per_day", "task_class"},
    "wl_errors": {"row", "column", "value", "problem"},
    "wl_versions": {"version", "file_name", "row_count", "is_latest"},
    "wl_diff": {"workload_id", "change", "fields"},
    "price_nodes_table": {"provider", "instance", "usd_per_node_hour"},
    "price_apis_table": {"model", "usd_per_mtok_in", "usd_per_mtok_out"},
    "price_tco_outputs": {"name", "full_usd_per_hour", "marginal_usd_per_hour"},
    "price_be_table": {"model", "break_even_utilization", "verdict"},
    "perf_bench_table": {"stack_id", "route", "provenance", "tool"},
}


def table(at: AppTest, name: str):
    """The first read-only table on the page with the columns `name` stands for."""
    want = TABLES[name]
    for d in at.dataframe:
        if d.editing_mode == "read_only" and want <= set(d.value.columns):
            return d.value
    raise AssertionError(f"no table {name} on the page")




# -- every page, two stores --------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_on_a_fresh_store(app, page):
    at = show(app, page)
    assert at.title[0].value == PAGES[page]
    assert not at.error


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_with_versions_imports_and_overrides(app, page):
    s = open_store()
    commit_inventory(s, read_inventory(SAMPLE).frame, file_name="workloads_sample.csv")
    frame = read_inventory(SAMPLE).frame.iloc[:3]
    commit_inventory(s, frame, file_name="three.csv")
    import_benchmarks(s, (BENCH / "vllm_new.json").read_bytes(), "vllm_new.json", stack_id="llama70b-fp8",
                      gpu="H100 SXM", gpus_per_replica=2)
    base = next(p for p in s.node_prices() if p.provider == "AWS" and p.gpu == "H100 SXM")
    save_override(s, node_price_override(base, 30.0, "quote", dt.date.today()))
    st.cache_data.clear()
    at = show(app, page)
    assert at.title[0].value == PAGES[page] and not at.error


def test_a_scenario_without_a_node_price_is_a_message(app):
    app.selectbox(key="sc_gpu").set_value("MI325X").run()  # no 1-year plan price for it in the seed
    at = show(app, "screens/pricing.py")
    # One warning in the sidebar (issue 14); the break-even points at it instead of repeating the error.
    assert any("No 1-year savings plan price for MI325X" in w.value for w in at.sidebar.warning)
    assert any("The break-even needs a node price" in i.value for i in at.info) and not at.error
    show(app, "screens/performance.py")
    show(app, "screens/workloads.py")


# -- workloads ---------------------------------------------------------------------------


def upload(at: AppTest, name: str, data: bytes, mime="text/csv") -> AppTest:
    at.file_uploader(key="wl_upload").set_value((name, data, mime))
    return run(at)


def test_good_upload_previews_commits_and_refuses_a_duplicate(app):
    at = show(app, "screens/workloads.py")
    assert "bundled sample" in texts(at.caption)
    assert [b.label for b in at.get("download_button")][:2] == ["Template (CSV)", "Template (XLSX)"]
    upload(at, "workloads_sample.csv", SAMPLE.read_bytes())
    assert "7 workloads read from workloads_sample.csv with no problems" in texts(at.success)
    preview = table(at, "wl_preview")
    assert len(preview) == 7 and preview["workload_id"].iloc[0] == "kyc-overnight"
    click(at, "wl_commit")
    assert "committed version 1: 7 workloads from workloads_sample.csv" in texts(at.success)
    assert "version 1" in texts(at.caption)
    assert at.session_state["inventory_version"] is None
    versions = table(at, "wl_versions")
    assert versions["version"].tolist() == [1] and versions["file_name"].iloc[0] == "workloads_sample.csv"
    # Committed: its reports (its rows) are let go, and the page does not read the file again (issue 16).
    assert "wl_reads" not in at.session_state
    assert "Done with workloads_sample.csv. To commit another file, upload it here." in texts(at.caption)
    assert not [b for b in at.button if b.key == "wl_commit"]
    run(at)
    assert "wl_reads" not in at.session_state and "Done with workloads_sample.csv." in texts(at.caption)
    upload(at, "workloads_sample.csv", SAMPLE.read_bytes())  # the same file again
    assert "7 workloads read from workloads_sample.csv with no problems" in texts(at.success)
    click(at, "wl_commit")
    assert "identical to the latest version 1; nothing committed" in texts(at.info)
    assert "wl_reads" not in at.session_state
    assert list_versions(open_store())["version"].tolist() == [1]
    # An upload's reports hold its rows: kept while the Workloads page is shown, dropped on any other page,
    # where the uploader forgets the file anyway.
    upload(at, "workloads_sample.csv", SAMPLE.read_bytes())
    assert "wl_reads" in at.session_state
    show(at, "screens/pricing.py")
    assert "wl_reads" not in at.session_state
    show(at, "screens/workloads.py")
    assert at.file_uploader(key="wl_upload").value is None and not at.success


def test_bad_upload_lists_every_problem_and_offers_no_commit(app):
    at = show(app, "screens/workloads.py")
    bad = SAMPLE.read_text().replace(",100000,1,3000,", ",lots,1,3000,").replace("owned_only,extraction,0.88,0,Customer",
                                                                                 "on_prem,extraction,0.88,0,Customer")
    upload(at, "bad.csv", bad.encode())
    assert any("bad.csv: 2 problems" in e.value for e in at.error)
    errors = table(at, "wl_errors")
    assert list(errors.columns) == ["row", "column", "value", "problem"]
    assert errors[["row", "column", "value"]].values.tolist() == [[2, "requests_per_day", "lots"],
                                                                 [3, "data_policy", "on_prem"]]
    assert not [b for b in at.button if b.key == "wl_commit"]
    assert list_versions(open_store()).empty


def test_xlsx_template_round_trips_through_the_uploader(app):
    from core.inventory import template_bytes

    at = show(app, "screens/workloads.py")
    upload(at, "t.xlsx", template_bytes("xlsx"), "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
    assert "5 workloads read from t.xlsx" in texts(at.success)
    assert "XLSX" in texts(at.caption)


def test_edits_are_validated_then_saved_as_a_new_version(app):
    at = show(app, "screens/workloads.py")
    upload(at, "workloads_sample.csv", SAMPLE.read_bytes())
    click(at, "wl_commit")
    # A bad edit: the same checks as an upload, reported by table row, nothing saved.
    at.session_state["wl_editor_1"] = {"edited_rows": {0: {"requests_per_day": -5}}, "added_rows": [],
                                       "deleted_rows": []}
    click(at, "wl_save_edits")
    errors = table(at, "wl_errors")
    assert errors[["row", "column"]].values.tolist() == [[1, "requests_per_day"]]
    assert list_versions(open_store())["version"].tolist() == [1]
    # A good edit: a new version, and the routing follows it.
    at.session_state["wl_editor_1"] = {"edited_rows": {0: {"requests_per_day": 5000}}, "added_rows": [],
                                       "deleted_rows": [6]}
    click(at, "wl_save_edits")
    assert "committed version 2: 6 workloads from edited in the dashboard" in texts(at.success)
    diff = table(at, "wl_diff")
    assert diff.set_index("workload_id").loc["kyc-overnight", "fields"] == "requests_per_day"
    assert (diff["change"] == "removed").sum() == 1


def test_restore_adds_the_old_version_back_as_the_newest(app):
    s = open_store()
    frame = read_inventory(SAMPLE).frame
    commit_inventory(s, frame, file_name="all.csv")
    commit_inventory(s, frame.iloc[:2], file_name="two.csv")
    at = show(app, "screens/workloads.py")
    assert "version 2" in texts(at.caption) and "(2 workloads)" in texts(at.caption)
    at.selectbox(key="wl_restore_version").set_value(1)
    click(at, "wl_restore")
    assert "restored version 1 as version 3 (7 workloads)" in texts(at.success)
    assert "version 3" in texts(at.caption)
    assert table(at, "wl_versions")["restored_from"].tolist()[-1] == 1


# -- pricing -----------------------------------------------------------------------------


def aws_1y(nodes):
    return nodes.index[(nodes["provider"] == "AWS") & (nodes["instance"] == "p5.48xlarge")
                       & (nodes["pricing_option"] == "savings_1y")][0]


@pytest.mark.slow
def test_pricing_shows_dated_sources_and_stale_marks(app):
    at = show(app, "screens/pricing.py")
    nodes = table(at, "price_nodes_table")
    assert nodes["gpu"].iloc[0] == "H100 SXM"  # the scenario's GPU first
    assert nodes["as_of"].notna().all() and (nodes["source"].str.len() > 0).all()
    assert (nodes["stale"] == "⚠ stale").any()
    assert "older than 180 days" in texts(at.caption)
    apis = table(at, "price_apis_table")
    assert len(apis) >= 10 and {"usd_per_mtok_in", "usd_per_mtok_out", "as_of", "source", "confidence"} <= set(apis)
    tco = table(at, "price_tco_outputs")
    assert tco.set_index("name").loc["8×H100 SXM server (owned)", "full_usd_per_hour"] == pytest.approx(14.396, abs=1e-3)
    be = table(at, "price_be_table")
    assert len(be) == len(apis) and be["break_even_utilization"].is_monotonic_increasing
    assert any(t.startswith("Break-even utilization") for t in figures(at))
    assert "AWS p5.48xlarge (1-year savings plan) at $33.02/node-hour" in texts(at.caption)  # words, not ids


def test_saving_a_node_price_override_changes_the_shown_price(app):
    at = show(app, "screens/pricing.py")
    nodes = table(at, "price_nodes_table")
    i = next(k for k, label in enumerate(at.selectbox(key="price_node_row").options)
             if label.startswith("AWS p5.48xlarge (H100 SXM, 1-year plan"))
    at.selectbox(key="price_node_row").set_value(i)
    run(at)
    at.number_input(key=f"price_node_usd_{i}").set_value(29.5)
    at.text_input(key="price_source").set_value("AWS quote Q-1234")
    click(at, "price_save")
    # The message echoes the user's source through md(): its '$' is escaped so Markdown does not read LaTeX.
    assert "saved AWS p5.48xlarge (1-year savings plan) at $29.50/node-hour" in texts(at.success)
    after = table(at, "price_nodes_table")
    row = after.loc[aws_1y(after)]
    assert (row["usd_per_node_hour"], row["confidence"], row["source"]) == (29.5, "user", "AWS quote Q-1234")
    assert row["as_of"] is not None and row["stale"] == ""
    assert nodes.loc[aws_1y(nodes), "usd_per_node_hour"] == 33.02
    # The scenario (AWS, 1-year plan, H100) now uses the user's price.
    assert "at $29.50/node-hour" in texts(at.caption)


def test_an_override_without_a_source_is_refused(app):
    at = show(app, "screens/pricing.py")
    click(at, "price_save")
    assert any("say where the new price comes from" in e.value for e in at.error)
    assert (open_store().table("node_prices")["origin"] == "user").sum() == 0


def test_saving_an_api_price_override(app):
    at = show(app, "screens/pricing.py")
    at.radio(key="price_kind").set_value("API price")
    run(at)
    i = next(k for k, label in enumerate(at.selectbox(key="price_api_row").options)
             if label.startswith("OpenAI gpt-4.1-mini "))
    at.selectbox(key="price_api_row").set_value(i)
    run(at)
    at.number_input(key=f"price_api_in_{i}").set_value(0.2)
    at.number_input(key=f"price_api_out_{i}").set_value(0.8)
    at.text_input(key="price_source").set_value("enterprise agreement")
    click(at, "price_save")
    apis = table(at, "price_apis_table").set_index("model")
    assert (apis.loc["gpt-4.1-mini", "usd_per_mtok_in"], apis.loc["gpt-4.1-mini", "usd_per_mtok_out"]) == (0.2, 0.8)
    assert apis.loc["gpt-4.1-mini", "confidence"] == "user"


# -- performance -------------------------------------------------------------------------


def test_performance_shows_the_roofline_and_marks_measured_points(app):
    at = show(app, "screens/performance.py")
    charts = figures(at)
    (roof,) = [c for t, c in charts.items() if t.startswith("Roofline of H100 SXM")]
    assert roof["layout"]["xaxis"]["type"] == "log" and roof["layout"]["yaxis"]["type"] == "log"
    at.selectbox(key="perf_stack").set_value("mercury-class")
    run(at)
    assert "calibrated to 1 measured point: fit error" in texts(at.caption)
    charts = figures(at)
    (thr,) = [c for t, c in charts.items() if t.startswith("Throughput — mercury-class on 1 × H100 SXM")]
    names = [t["name"] for t in thr["data"]]
    assert "measured" in names and "estimated — tokens/s, whole replica" in names
    measured = next(t for t in thr["data"] if t["name"] == "measured")
    assert measured["x"] == [1.0] and measured["y"] == [pytest.approx(1109)]
    bench = table(at, "perf_bench_table")
    assert {"provenance", "tool", "source", "as_of"} <= set(bench.columns)


def test_benchmark_import_asks_for_what_the_file_lacks_then_adds_a_point(app):
    at = show(app, "screens/performance.py")
    before = len(table(at, "perf_bench_table"))
    at.file_uploader(key="perf_upload").set_value(("vllm_new.json", (BENCH / "vllm_new.json").read_bytes(),
                                                   "application/json"))
    run(at)
    click(at, "perf_import")
    assert any("fill in the 'Serving stack' field" in e.value for e in at.error)
    at.selectbox(key="perf_imp_stack").set_value("llama70b-fp8")
    at.selectbox(key="perf_imp_gpu").set_value("H100 SXM")
    at.selectbox(key="perf_imp_gpus").set_value(2)
    click(at, "perf_import")
    assert "imported 1 benchmark point from vllm_new.json" in texts(at.success)
    bench = table(at, "perf_bench_table")
    assert len(bench) == before + 1
    new = bench[bench["source"].str.startswith("vllm_new.json")].iloc[0]
    assert (new["provenance"], new["tool"], new["route"]) == ("measured", "vllm bench serve", "H100 SXM ×2")
    click(at, "perf_import")  # the same file again
    assert any("already imported" in i.value for i in at.info)
    assert len(table(at, "perf_bench_table")) == before + 1


# -- caches shared by sessions -----------------------------------------------------------


def new_session(page: str) -> AppTest:
    """Another browser tab: a new AppTest (own session state) in the same process (shared caches)."""
    at = AppTest.from_file(str(APP), default_timeout=60)
    run(at)
    return show(at, page)


@pytest.mark.slow
def test_another_sessions_writes_reach_the_shared_figures(app):
    first = show(app, "screens/performance.py")
    first.selectbox(key="perf_stack").set_value("llama70b-fp8")
    run(first)
    # The seed holds 2 TensorRT-LLM vendor claims for this route on 2 x H100 (1,000/1,000 and 5,000/500 tokens).
    assert "calibrated to 2 vendor-claim points" in texts(first.caption)
    pricing = new_session("screens/pricing.py")  # warms the break-even cache before the writes
    assert "at $33.02/node-hour" in texts(pricing.caption)
    # The first session imports a measured point for the same route and overrides the node price.
    first.file_uploader(key="perf_upload").set_value(("vllm_new.json", (BENCH / "vllm_new.json").read_bytes(),
                                                      "application/json"))
    run(first)
    first.selectbox(key="perf_imp_stack").set_value("llama70b-fp8")
    first.selectbox(key="perf_imp_gpu").set_value("H100 SXM")
    first.selectbox(key="perf_imp_gpus").set_value(2)
    click(first, "perf_import")
    assert "imported 1 benchmark point" in texts(first.success)
    s = open_store()
    base = next(p for p in s.node_prices() if p.provider == "AWS" and p.gpu == "H100 SXM"
                and p.pricing_option.value == "savings_1y")
    save_override(s, node_price_override(base, 30.0, "quote", dt.date.today()))
    st.cache_data.clear()  # what bump_data_version() does in the writing session
    # A new tab sees both, although its own data version is still 0.
    other = new_session("screens/performance.py")
    other.selectbox(key="perf_stack").set_value("llama70b-fp8")
    run(other)
    assert "calibrated to 1 measured and 2 vendor-claim points" in texts(other.caption)
    again = new_session("screens/pricing.py")
    assert "at $30.00/node-hour" in texts(again.caption)


@pytest.mark.slow
def test_pricing_page_enters_a_licence_fee_the_plan_then_uses(app):
    """mercury-class has licensed weights and no fee: entering $2,000/GPU-month on the Pricing page stores a
    dated user row; an empty source is refused on the page and stores nothing."""
    from core.store import open_store

    at = show(app, "screens/pricing.py")
    at.selectbox(key="price_licence_stack").set_value("mercury-class")
    at.number_input(key="price_licence_fee").set_value(2000.0)
    at.button(key="FormSubmitter:price_licence_form-Save licence fee").click()
    run(at)
    assert any("where the licence fee comes from" in e.value for e in at.error)
    at.text_input(key="price_licence_source").set_value("vendor quote Q-7")
    at.button(key="FormSubmitter:price_licence_form-Save licence fee").click()
    run(at)
    assert any("Saved the licence fee of mercury-class" in s.value for s in at.success)
    mercury = next(s for s in open_store().serving_stacks() if s.stack_id == "mercury-class")
    assert mercury.licence_usd_per_gpu_month == 2000.0 and mercury.confidence.value == "user"
