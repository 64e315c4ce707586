"""Helpers for AppTest page tests: read Plotly figures back from a page; open the app in a mixed scenario; Fleet
sizing without its SLA sweep."""

from __future__ import annotations

import base64
import json

import numpy as np
from streamlit.testing.v1 import AppTest


def figures(at: AppTest) -> dict[str, dict]:
    """Plotly charts on the page by title, as JSON with numeric arrays decoded."""
    out = {}
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        for trace in spec["data"]:
            for k, v in list(trace.items()):
                if isinstance(v, dict) and "bdata" in v:
                    trace[k] = np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).tolist()
        out[spec["layout"]["title"]["text"]] = spec
    return out


def sweep_on_demand(monkeypatch) -> None:
    """Fleet sizing without its SLA sweep as it draws (each scale a whole evaluation with every fleet option: ~60 %
    of the page's time on the sample), for tests that read its other sections; the sweep's own tests keep it."""
    from core.decision import settings as settings_mod

    monkeypatch.setattr(settings_mod, "PLAN", settings_mod.PLAN.but(sla_sweep_max_workloads=0))


def mixed_app(monkeypatch, tmp_path, buy: str, page: str, owned: str = "H100 SXM:1") -> AppTest:
    """The dashboard on a fresh store with owned nodes by GPU and candidate GPUs typed in the sidebar (a mixed
    scenario), switched to `page`; the caches emptied so no earlier test's evaluation is read."""
    from pathlib import Path

    import streamlit as st

    monkeypatch.setenv("HANGOVER_DB", str(tmp_path / "fresh.duckdb"))
    st.cache_resource.clear()
    st.cache_data.clear()
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "dashboard" / "app.py"), default_timeout=600)
    at.run()
    at.text_input(key="sc_owned_by_gpu").set_value(owned)
    at.text_input(key="sc_buy_gpus").set_value(buy).run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at
