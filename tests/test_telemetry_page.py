"""AppTest of the Telemetry page and the Overview's measured-vs-plan line, through dashboard/app.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from core.store import open_store
from core.telemetry import import_telemetry
from tests.apptest_support import figures
from tests.test_telemetry import nvidia_smi_week, write

APP = Path(__file__).resolve().parents[1] / "dashboard" / "app.py"
PAGE = "screens/telemetry.py"


@pytest.fixture
def app(monkeypatch, tmp_path):
    """The app on a fresh store, after its first run (the Overview)."""
    monkeypatch.setenv("HANGOVER_DB", str(tmp_path / "fresh.duckdb"))
    monkeypatch.setenv("HANGOVER_RAISE_ERRORS", "1")
    st.cache_resource.clear()
    st.cache_data.clear()
    at = AppTest.from_file(str(APP), default_timeout=90)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    yield at
    st.cache_resource.clear()
    st.cache_data.clear()


def run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.slow
def test_empty_page_invites_an_import(app):
    run(app.switch_page(PAGE))
    assert any("No telemetry yet" in i.value for i in app.info)
    assert not app.metric


@pytest.mark.slow
def test_page_shows_measured_figures_heatmap_and_profile(app, tmp_path):
    """4 GPUs, 4,032 samples, 29.7 % (see test_telemetry's golden), 83 % on Monday 10:00, 13 % on Saturday."""
    import_telemetry(open_store(), write(tmp_path, "gpu.csv", nvidia_smi_week()), node="bank-node-1")
    run(app.switch_page(PAGE))
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Measured utilization"] == "30%" and metrics["GPUs"] == "4" and metrics["Samples"] == "4,032"
    assert metrics["Idle cost a month"].startswith("$")
    assert app.subheader[0].value == "Measured 2 – 8 Nov 2026 on bank-node-1"
    figs = figures(app)
    heat = figs["Hour of day × day of week — measured 2 – 8 Nov 2026 on bank-node-1"]["data"][0]
    assert heat["z"][0][10] == pytest.approx(0.83) and heat["z"][5][10] == pytest.approx(0.13)
    profile = figs["Utilization by hour of day — measured 2 – 8 Nov 2026 on bank-node-1"]["data"]
    assert profile[0]["y"][10] == pytest.approx(0.63) and len(profile) == 2  # measured bars and the plan's line
    assert app.dataframe[0].value["file_name"].tolist() == ["gpu.csv"]


@pytest.mark.slow
def test_date_filter_narrows_the_window(app, tmp_path):
    import datetime as dt

    import_telemetry(open_store(), write(tmp_path, "gpu.csv", nvidia_smi_week()), node="bank-node-1")
    run(app.switch_page(PAGE))
    app.date_input(key="tel_dates").set_value((dt.date(2026, 11, 7), dt.date(2026, 11, 8)))
    run(app)
    assert {m.label: m.value for m in app.metric}["Measured utilization"] == "13%"  # a weekend: 10 % + 3
    assert app.subheader[0].value == "Measured 7 – 8 Nov 2026 on bank-node-1"


@pytest.mark.slow
def test_overview_line_only_with_telemetry(app, tmp_path):
    assert not [i for i in app.info if "As it is" in i.value]
    import_telemetry(open_store(), write(tmp_path, "gpu.csv", nvidia_smi_week()), node="bank-node-1")
    run(app)
    line = [i.value for i in app.info if "As it is" in i.value]
    assert len(line) == 1 and "measured 2 – 8 Nov 2026 on bank-node-1" in line[0] and "As planned" in line[0]
