"""AppTest of the Workloads page's upload choices (issues 14, 16): the sheet picker and the decimal-separator choice."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
import streamlit as st
import xlsxwriter
from streamlit.testing.v1 import AppTest

from core.inventory import COLUMNS
from core.inventory.versions import list_versions
from core.store import open_store

APP = Path(__file__).resolve().parents[1] / "dashboard" / "app.py"
HEADER = list(COLUMNS)
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


@pytest.fixture
def at(monkeypatch, tmp_path):
    """The Workloads page on a fresh store."""
    monkeypatch.setenv("HANGOVER_DB", str(tmp_path / "fresh.duckdb"))
    st.cache_resource.clear()
    st.cache_data.clear()
    app = AppTest.from_file(str(APP), default_timeout=60)
    app.run()
    app.switch_page("screens/workloads.py").run()
    assert not app.exception, [e.value for e in app.exception]
    yield app
    st.cache_resource.clear()
    st.cache_data.clear()


def run(app: AppTest) -> AppTest:
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def book_row(i: int) -> list[object]:
    r = {"workload_id": f"w{i}", "name": "Chat", "requests_per_day": 1000 * i, "input_tokens": 1500,
         "output_tokens": 300, "latency_slo_ms": 2000, "data_policy": "owned_only", "task_class": "chat"}
    return [r.get(c) for c in HEADER]


def two_inventory_sheets() -> bytes:
    buf = io.BytesIO()
    wb = xlsxwriter.Workbook(buf, {"in_memory": True})
    wb.add_worksheet("Cover").write_string(0, 0, "Q3 GPU plan")
    for name, rows in (("Q2", [book_row(1)]), ("Q3", [book_row(2), book_row(3)])):
        ws = wb.add_worksheet(name)
        ws.write_string(0, 0, f"{name} inventory")  # a title row above the header
        for j, c in enumerate(HEADER):
            ws.write_string(1, j, c)
        for i, r in enumerate(rows, start=2):
            for j, v in enumerate(r):
                if isinstance(v, str):
                    ws.write_string(i, j, v)
                elif v is not None:
                    ws.write_number(i, j, v)
    wb.close()
    return buf.getvalue()


def test_a_workbook_with_two_inventory_sheets_offers_a_picker(at):
    data = two_inventory_sheets()
    at.file_uploader(key="wl_upload").set_value(("plan.xlsx", data, XLSX))
    run(at)
    picker = next(s for s in at.selectbox if s.key.startswith("wl_sheet_"))
    assert list(picker.options) == ["Q2", "Q3"] and picker.value == "Q2"
    assert "1 workloads read from plan.xlsx" in texts(at.success)
    picker.select("Q3")
    run(at)
    assert "2 workloads read from plan.xlsx" in texts(at.success)
    assert "sheet 'Q3', header on row 2" in texts(at.caption)
    at.button(key="wl_commit").click()
    run(at)
    assert list_versions(open_store())["row_count"].tolist() == [2]


def test_an_ambiguous_file_asks_for_the_decimal_separator(at):
    out = io.StringIO()
    w = csv.writer(out, delimiter=";")
    w.writerow(HEADER)
    cells = {"workload_id": "a", "name": "Chat", "requests_per_day": "40.000", "input_tokens": "1500",
             "output_tokens": "300", "latency_slo_ms": "2000", "data_policy": "owned_only", "task_class": "chat"}
    w.writerow([cells.get(c, "") for c in HEADER])
    at.file_uploader(key="wl_upload").set_value(("de.csv", out.getvalue().encode(), "text/csv"))
    run(at)
    assert "ambiguous number" in texts(at.error) or any("ambiguous number" in str(d.value) for d in at.dataframe)
    assert not [b for b in at.button if b.key == "wl_commit"]
    choice = next(r for r in at.radio if r.key.startswith("wl_decimal_"))
    assert choice.value is None
    choice.set_value(",")
    run(at)
    assert "1 workloads read from de.csv with no problems" in texts(at.success)
    preview = next(d.value for d in at.dataframe if "requests_per_day" in d.value.columns
                   and d.editing_mode == "read_only")  # AppTest gives tables no key: the preview by its columns
    assert preview["requests_per_day"].tolist() == [40_000.0]
