"""Browser end-to-end (issue 14): the scenario lives in the URL, a refresh keeps it, a shared link opens it elsewhere."""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from tests.e2e_support import CHROMIUM, CHROMIUM_ARGS, VIEWPORT, streamlit_server, wait_until_idle

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (Debian's chromium package drives these tests)"),
]
pytest.importorskip("playwright.sync_api", reason="python playwright is not installed (pip install playwright)")


@contextlib.contextmanager
def chromium() -> Iterator[object]:
    """Headless Debian Chromium; the test opens as many separate contexts (no shared cookies or storage) as it needs."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[tuple[str, object]]:
    """One server and one browser for the tests that write nothing to the store, the browser for every test (each
    opens fresh browser contexts: no session, cookie or storage is shared); starting them was ~10 s of each test."""
    db = tmp_path_factory.mktemp("e2e-scenarios") / "e2e-scenarios.duckdb"
    with streamlit_server(db) as url, chromium() as browser:
        yield url, browser


def new_page(browser):
    page = browser.new_context(viewport=VIEWPORT, accept_downloads=True).new_page()
    page.set_default_timeout(30_000)
    return page


def opened(browser, url: str):
    """A page of a fresh browser context at `url`, drawn, with no exception shown."""
    page = new_page(browser)
    page.goto(url)
    wait_until_idle(page)
    no_exception(page)
    return page


def no_exception(page) -> None:
    errors = page.locator('[data-testid="stException"]')
    assert errors.count() == 0, errors.first.inner_text()[:2000]


def sidebar_shows(page, key: str, value: str) -> None:
    """Wait until a sidebar widget shows `value` (a selectbox is a combobox input holding the label).

    Right after a load the browser may draw the widget's default for a moment
    before the session's value arrives, so this retries (Playwright's expect).
    """
    from playwright.sync_api import expect

    expect(page.locator(f".st-key-{key} input").first).to_have_value(value, timeout=10_000)


def metric(page, label: str) -> str:
    """The value of the metric labelled exactly `label` ("Nodes needed", not "Nodes needed, 10th–90th
    percentile" of the staged purchase further down the page)."""
    exact = page.locator('[data-testid="stMetricLabel"]', has_text=re.compile(rf"^\s*{re.escape(label)}\s*$"))
    m = page.locator('[data-testid="stMetric"]').filter(has=exact).first
    return m.locator('[data-testid="stMetricValue"]').inner_text().strip()


def query(page) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlparse(page.url).query).items()}


@pytest.mark.slow
def test_a_shared_link_opens_the_same_scenario_in_a_new_browser(server):
    url, browser = server
    page = opened(browser, url + "/")
    assert metric(page, "Owned nodes") == "1"

    # Set the scenario as an analyst would: 3 nodes on the 3-year plan.
    nodes = page.locator(".st-key-sc_fleet_nodes input")
    nodes.fill("3")
    nodes.press("Enter")
    wait_until_idle(page)
    page.locator(".st-key-sc_pricing [data-testid='stSelectbox']").click()
    page.get_by_role("option", name="3-year savings plan").click()
    wait_until_idle(page)
    no_exception(page)
    assert metric(page, "Owned nodes") == "3"
    figures = {label: metric(page, label) for label in ("Owned nodes", "Idle cost a month", "Nodes needed")}
    params = query(page)
    assert params.get("sc_fleet_nodes") == "3" and params.get("sc_pricing") == "3-year savings plan", page.url

    # F5: the same scenario, the same figures.
    page.reload()
    wait_until_idle(page)
    no_exception(page)
    sidebar_shows(page, "sc_fleet_nodes", "3")
    sidebar_shows(page, "sc_pricing", "3-year savings plan")
    assert {label: metric(page, label) for label in figures} == figures

    # Moving to another page keeps the scenario in the address bar.
    page.get_by_role("link", name="Routing").first.click()
    wait_until_idle(page)
    assert urlparse(page.url).path.endswith("/routing")
    assert query(page).get("sc_fleet_nodes") == "3", page.url
    shared = page.url

    # A colleague opens the link in another browser (a fresh context: no session, no cookies).
    other = new_page(browser)
    other.goto(shared)
    wait_until_idle(other)
    no_exception(other)
    assert other.get_by_role("heading", name="Routing", exact=True).first.is_visible()
    sidebar_shows(other, "sc_fleet_nodes", "3")
    sidebar_shows(other, "sc_pricing", "3-year savings plan")
    other.goto(url + "/?" + urlparse(shared).query)
    wait_until_idle(other)
    assert {label: metric(other, label) for label in figures} == figures

    # The export downloads under a name that says which scenario it is.
    other.get_by_role("link", name="Export").first.click()
    wait_until_idle(other)
    with other.expect_download() as info:
        other.get_by_role("button", name=re.compile(r"routing table", re.I)).first.click()
    assert "3-nodes_savings-3y_full" in info.value.suggested_filename


@pytest.mark.slow
def test_page_paths_resolve_whatever_their_case(server):
    url, browser = server
    page = new_page(browser)
    for path, title in (("/overview", "Overview"), ("/Routing", "Routing"), ("/EXPORT", "Export"),
                        ("/Scenarios", "Scenarios")):
        page.goto(url + path + "?sc_fleet_nodes=2")
        wait_until_idle(page)
        no_exception(page)
        assert page.get_by_text("Page not found").count() == 0, path
        assert page.get_by_role("heading", name=title, exact=True).first.is_visible(), path
        sidebar_shows(page, "sc_fleet_nodes", "2")


@pytest.mark.slow
def test_a_garbled_link_opens_on_defaults_with_a_note(server):
    url, browser = server
    page = opened(browser, url + "/?sc_fleet_nodes=lots&sc_pricing=weekly&sc_whatever=1")
    note = page.locator('[data-testid="stSidebar"] [data-testid="stAlert"]', has_text="could not be used")
    assert note.count() == 1
    text = note.inner_text()
    assert "sc_fleet_nodes" in text and "sc_pricing" in text and "sc_whatever" in text
    assert metric(page, "Owned nodes") == "1"


@pytest.mark.slow
def test_saved_scenarios_load_and_compare_in_the_browser(tmp_path, server):
    import openpyxl

    from core import scenarios as S
    from core.store import Store

    db = tmp_path / "e2e-saved.duckdb"
    store = Store(db)
    S.save_scenario(store, "One node", S.scenario_from_inputs({}), created_by="alice")
    S.save_scenario(store, "Three nodes", S.scenario_from_inputs({"fleet_nodes": 3, "pricing": "savings_3y"}))
    store.close()
    browser = server[1]  # one Playwright per process: the shared browser, on a server of this test's own store
    with streamlit_server(db) as url:
        page = opened(browser, url + "/scenarios")
        main = page.locator('[data-testid="stMain"]')
        assert "Cash bill per month" in main.inner_text()

        # Load a saved scenario into the sidebar; the link follows.
        page.locator(".st-key-sc_manage_name button[aria-label='Open']").click()
        page.get_by_role("option", name="Three nodes", exact=True).click()
        wait_until_idle(page)
        page.get_by_role("button", name="Load into the sidebar").click()
        wait_until_idle(page)
        no_exception(page)
        page.get_by_text("Loaded 'Three nodes' into the sidebar").wait_for()
        sidebar_shows(page, "sc_fleet_nodes", "3")
        sidebar_shows(page, "sc_pricing", "3-year savings plan")
        assert query(page).get("sc_fleet_nodes") == "3", page.url

        # The comparison workbook is written when its download is clicked.
        with page.expect_download() as info:
            page.get_by_role("button", name="Comparison workbook (XLSX)").click()
        assert info.value.suggested_filename == "gpu-hangover_compare_one-node_vs_three-nodes.xlsx"
        wait_until_idle(page)
        data = io.BytesIO(Path(info.value.path()).read_bytes())
        assert openpyxl.load_workbook(data).sheetnames == ["Comparison", "Verdicts"]
