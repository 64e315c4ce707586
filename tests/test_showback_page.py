"""AppTest of the Showback page (issue 35) through dashboard/app.py, and its link from the Overview."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[1] / "dashboard" / "app.py"
PAGE = "screens/showback.py"


@pytest.fixture
def app(monkeypatch, tmp_path):
    """The app on a fresh store, after its first run (the Overview)."""
    monkeypatch.setenv("HANGOVER_DB", str(tmp_path / "fresh.duckdb"))
    monkeypatch.setenv("HANGOVER_RAISE_ERRORS", "1")
    st.cache_resource.clear()
    st.cache_data.clear()
    at = AppTest.from_file(str(APP), default_timeout=120)
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
def test_showback_page_adds_up_and_regroups(app):
    """Every team of the sample, and a totals row equal to the Overview's bill; grouping by task class regroups."""
    assert any(link.proto.page.endswith("showback.py") or "showback" in link.proto.page
               for link in app.get("page_link"))
    run(app.switch_page(PAGE))
    frame = app.dataframe[0].value
    assert set(frame["team"]) >= {"Engineering", "Operations", "Retail banking", "Credit risk", "All staff",
                                  "Trade finance", "Total (the cash bill)"}
    body = frame[frame["team"] != "Total (the cash bill)"]
    total = frame.loc[frame["team"] == "Total (the cash bill)", "monthly_usd"].item()
    assert round(body["monthly_usd"].sum() * 100) == round(total * 100)
    app.selectbox(key="showback_by").set_value("task_class")
    run(app)
    assert "extraction" in set(app.dataframe[0].value["team"])
    app.radio(key="showback_idle_key").set_value("tokens")
    run(app)
    assert any("shared by tokens sent to owned GPUs" in c.value for c in app.caption)


@pytest.mark.slow
def test_plan_against_actual_section(app, tmp_path):
    """With a week of 8-GPU telemetry busy on weekday office hours: the variance components add up to the total,
    the shape differs from the plan's (a warning offering the re-plan), the toggle says what re-planning changes,
    and the hour-of-week heatmaps (measured beside plan) and idle $ by node are drawn."""
    from core.store import open_store
    from core.telemetry import import_telemetry
    from tests.apptest_support import figures
    from tests.test_telemetry import nvidia_smi_week, write

    run(app.switch_page(PAGE))
    assert any("No telemetry yet" in i.value for i in app.info)
    import_telemetry(open_store(), write(tmp_path, "gpu.csv", nvidia_smi_week(gpus=8)), node="bank-node-1")
    run(app)
    variance = app.dataframe[2].value
    parts = variance[variance["component"] != "Total (actual − plan)"]["usd"]
    total = variance.loc[variance["component"] == "Total (actual − plan)", "usd"].item()
    assert round(parts.sum() * 100) == round(total * 100) and total != 0
    assert any("differs" in w.value and "--replan" in w.value for w in app.warning)
    app.toggle(key="showback_replan").set_value(True)
    run(app)
    assert any("Planned on the measured shape" in w.value and "measured peak factor" in w.value
               for w in app.warning)
    figs = figures(app)
    heat = next(f for t, f in figs.items() if t.startswith("Utilization by hour of week"))
    assert len(heat["data"]) == 2 and len(heat["data"][0]["z"]) == 7
    assert heat["data"][1]["z"][0] == heat["data"][1]["z"][6]  # the plan: one day, every weekday
    idle = next(f for t, f in figs.items() if t.startswith("Idle $ by node"))
    assert idle["data"][0]["y"] == ["bank-node-1"] and idle["data"][0]["x"][0] > 0
