"""Browser end-to-end: a headless Streamlit server, Debian's Chromium through Playwright, every page by URL."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.e2e_support import (
    CHROMIUM,
    REPO_ROOT,
    SCREENSHOT_WIDTHS,
    chromium_page,
    screenshot_widths,
    screenshots_wanted,
    streamlit_server,
    wait_until_idle,
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (Debian's chromium package drives these tests)"),
]
pytest.importorskip("playwright.sync_api", reason="python playwright is not installed (pip install playwright)")

SAMPLE = REPO_ROOT / "data" / "workloads_sample.csv"
# (url path, title, screenshot name); Workloads first, so the other pages show the uploaded version.
PAGES = [
    ("/workloads", "Workloads", "workloads"),
    ("/overview", "Overview", "overview"),
    ("/routing", "Routing", "routing"),
    ("/fleet", "Fleet sizing", "fleet"),
    ("/showback", "Showback", "showback"),
    ("/pricing", "Pricing", "pricing"),
    ("/performance", "Performance", "performance"),
    ("/telemetry", "Telemetry", "telemetry"),
    ("/scenarios", "Scenarios", "scenarios"),
    ("/export", "Export", "export"),
]


def no_exception(page) -> None:
    errors = page.locator('[data-testid="stException"]')
    assert errors.count() == 0, errors.first.inner_text()[:2000]


def main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def _fill_for_screenshots(db: Path, tmp_path: Path) -> None:
    """Two saved scenarios and a week of GPU telemetry, so the Scenarios and Telemetry pages show their full layout."""
    from core.scenarios import save_scenario, scenario_from_inputs
    from core.store import Store
    from core.telemetry import import_telemetry
    from tests.test_telemetry import nvidia_smi_week, write

    store = Store(db)
    try:
        save_scenario(store, "One node, 1-year plan", scenario_from_inputs({}), created_by="e2e")
        save_scenario(store, "Three nodes, 3-year plan", scenario_from_inputs({"fleet_nodes": 3, "pricing": "savings_3y"}),
                      created_by="e2e", note="what finance asked for")
        import_telemetry(store, write(tmp_path, "gpu.csv", nvidia_smi_week()), node="bank-node-1")
    finally:
        store.close()


@pytest.mark.slow
def test_every_page_in_chromium(tmp_path):
    """Every page by URL in Chromium; with HANGOVER_SCREENSHOTS=DIR, each page whole at 1280 and 1440 px into DIR.

    For screenshots the store first gets two saved scenarios and a week of
    telemetry (otherwise those pages show only their empty state).
    """
    shots = screenshots_wanted()
    db = tmp_path / "e2e.duckdb"
    if shots:
        print(f"\nscreenshots: {shots}")
        _fill_for_screenshots(db, tmp_path)
    t0 = time.monotonic()
    with streamlit_server(db) as url, chromium_page() as page:
        # The entry page first, as a user arrives; deep links are tested on their own below.
        page.goto(url + "/")
        wait_until_idle(page)
        no_exception(page)
        for path, title, name in PAGES:
            page.goto(url + path)
            wait_until_idle(page)
            no_exception(page)
            assert page.get_by_role("heading", name=title, exact=True).first.is_visible()

            if path == "/workloads":
                assert "bundled sample" in main_text(page)
                page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(str(SAMPLE))
                wait_until_idle(page)
                page.get_by_text("7 workloads read from workloads_sample.csv with no problems").wait_for()
                page.get_by_role("button", name="Commit workloads_sample.csv as a new version").click()
                wait_until_idle(page)
                page.get_by_text("committed version 1: 7 workloads from workloads_sample.csv").wait_for()
                assert "The routing uses version 1" in main_text(page)
                no_exception(page)
            elif path == "/routing":
                table = page.locator('[data-testid="stDataFrame"]').first
                table.wait_for()
                assert table.bounding_box()["height"] > 100
                assert "inventory version 1" in main_text(page).lower()  # the committed upload, not the sample
            elif path == "/fleet":
                # Open the architectures table (issue 14: it showed "Infinity" and cut "Why not" off).
                page.get_by_text("Best route of each architecture", exact=False).first.click()
                page.get_by_role("columnheader", name="Why not").first.wait_for()
                text = main_text(page)
                assert "Infinity" not in text and "NaN" not in text
            elif path == "/pricing":
                assert "⚠ stale" in main_text(page) or page.locator('[data-testid="stDataFrame"]').count() >= 4
            elif path == "/performance":
                # Plotly draws in the browser after the script is idle: on a loaded machine the count ran ahead of it.
                charts = page.locator('[data-testid="stPlotlyChart"]')
                charts.nth(2).wait_for(timeout=60_000)
                assert charts.count() >= 3
            elif path == "/export":
                button = page.get_by_role("button", name=re.compile(r"CSV", re.I)).first
                with page.expect_download() as info:
                    button.click()
                saved = Path(info.value.path())
                assert saved.stat().st_size > 0, "the exported CSV is empty"
                assert info.value.suggested_filename.endswith(".csv")
                assert "workload_id" in saved.read_text(encoding="utf-8-sig").splitlines()[0]
            screenshot_widths(page, shots, name)
    if shots:
        want = {f"{n}-{w}.png" for _, _, n in PAGES for w in SCREENSHOT_WIDTHS}
        assert want <= {p.name for p in shots.glob("*.png")}
    print(f"e2e: {len(PAGES)} pages in {time.monotonic() - t0:.1f} s")


@pytest.mark.slow
def test_a_deep_link_on_a_fresh_server_goes_through_the_router(tmp_path):
    with streamlit_server(tmp_path / "deep.duckdb") as url, chromium_page() as page:
        page.goto(url + "/pricing")
        wait_until_idle(page)
        no_exception(page)
        assert page.get_by_role("heading", name="Scenario").is_visible()  # the router's sidebar
