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
    app.switch_page("screens/workloads.py").run()  # straight there: the default page would plan the fleet first
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


# -- large inventories and writes from the command line (issue 16) ----------------------------------


def sample_csv(tmp_path: Path) -> Path:
    from core.store.seed import sample_workloads_path

    path = tmp_path / "inventory.csv"
    path.write_bytes(sample_workloads_path().read_bytes())
    return path


def test_a_version_committed_from_the_command_line_shows_on_the_next_rerun(at, tmp_path):
    """The page's cached reads key on the store file's stamp, so a CLI write needs no dashboard write or restart."""
    from core.cli import main
    from core.models import GpuSpec
    from core.store import Store

    assert "bundled sample" in texts(at.caption)
    db = str(tmp_path / "fresh.duckdb")
    assert main(["--db", db, "workloads", "import", str(sample_csv(tmp_path))]) == 0
    run(at)
    assert "The routing uses **version 1**" in texts(at.caption)
    # Reference data too (the catalog): a GPU another program adds appears in the sidebar's choice.
    Store(db).add("gpus", [GpuSpec(name="Test GPU 9000", hbm_gb=1, hbm_tb_per_s=1, bf16_tflops=1, tdp_w=1,
                                   source="test", as_of="2026-12-01")])
    run(at)
    assert "Test GPU 9000" in at.selectbox(key="sc_gpu").options


def test_an_inventory_above_the_editor_limit_is_shown_read_only_a_page_at_a_time(at, tmp_path, monkeypatch):
    from core.cli import main
    from core.inventory import columns

    monkeypatch.setattr(columns, "EDITOR_MAX_ROWS", 5)
    monkeypatch.setattr(columns, "PAGE_ROWS", 3)
    assert main(["--db", str(tmp_path / "fresh.duckdb"), "workloads", "import", str(sample_csv(tmp_path))]) == 0
    run(at)
    assert not [e for e in at.get("arrow_data_frame") if e.editing_mode != "read_only"], "no editor above the limit"
    assert "holds 7 workloads, more than the 5 the editor takes" in texts(at.info)
    page = at.number_input(key="wl_page_1")
    assert page.max == 3 and page.value == 1
    shown = next(d.value for d in at.dataframe if d.value.index.name == "row")
    assert shown.index.tolist() == [2, 3, 4]
    assert "Workloads 1 to 3 of 7" in texts(at.caption)
    page.set_value(3)
    run(at)
    assert next(d.value for d in at.dataframe if d.value.index.name == "row").index.tolist() == [8]
    # An upload above the preview's rows sends only the first ones and says so.
    at.file_uploader(key="wl_upload").set_value(("inventory.csv", sample_csv(tmp_path).read_bytes(), "text/csv"))
    run(at)
    tables = [d.value.index.tolist() for d in at.dataframe if "requests_per_day" in d.value.columns]
    assert sorted(tables) == [[2, 3, 4], [8]]  # the preview's first rows beside the page in view
    assert "The first 3 of 7 rows are shown; all of them are committed." in texts(at.caption)
    # Comparing two large versions joins them whole: it runs when asked, not on every rerun.
    from core.inventory import commit_inventory, read_inventory

    commit_inventory(open_store(), read_inventory(sample_csv(tmp_path)).frame.iloc[:6], file_name="six.csv")
    run(at)
    assert "comparing them takes a while, so it runs when you ask" in texts(at.caption)
    assert not [d for d in at.dataframe if "change" in d.value.columns]
    at.button(key="wl_diff_ask").click()
    run(at)
    diff = next(d.value for d in at.dataframe if "change" in d.value.columns)
    assert diff["change"].tolist() == ["removed"]


@pytest.mark.slow
def test_the_shared_evaluation_follows_a_command_line_import(tmp_path, monkeypatch):
    """Issue 16: the cached evaluation was keyed on a `_version` Streamlit does not hash; a CLI import went unseen."""
    from core.cli import main

    monkeypatch.setenv("HANGOVER_DB", str(tmp_path / "fresh.duckdb"))
    st.cache_resource.clear()
    st.cache_data.clear()

    def page():
        import streamlit as st

        from dashboard import state

        ev = state._evaluation_for(state.scenario().model_dump_json(), state.data_version(), None)
        st.write(f"workloads: {len(ev.workloads)}")

    app = AppTest.from_function(page, default_timeout=60)
    assert "workloads: 7" in texts(run(app).markdown)  # the bundled sample
    path = tmp_path / "three.csv"
    lines = sample_csv(tmp_path).read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines[:4]) + "\n", encoding="utf-8")
    assert main(["--db", str(tmp_path / "fresh.duckdb"), "workloads", "import", str(path)]) == 0
    assert "workloads: 3" in texts(run(app).markdown)
    st.cache_resource.clear()
    st.cache_data.clear()
