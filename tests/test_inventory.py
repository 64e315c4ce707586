"""Workload inventory (issue 5): reading what Excel writes, column checks, versions, formula safety."""

from __future__ import annotations

import csv
import io
import math

import duckdb
import numpy as np
import openpyxl
import pandas as pd
import pytest
import xlsxwriter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import core.inventory.versions as inventory_store
from core.errors import InputError
from core.inventory import (
    COLUMNS,
    EXAMPLE_ROWS,
    NUMBER_RULES,
    NUMERIC_COLUMNS,
    read_inventory,
    template_bytes,
    validate_frame,
    write_template,
)
from core.inventory.versions import (
    checksum,
    commit_inventory,
    diff_versions,
    latest_inventory,
    list_versions,
    load_version,
    restore_version,
)
from core.models import TASK_CLASSES, Workload
from core.store import Store, inventories
from core.store.seed import sample_workloads_path
from core.textsafety import is_formula_like, neutralise, neutralise_series

HEADER = list(COLUMNS)
ALLOWED = {c: rule.allowed for c, rule in NUMBER_RULES.items()}  # bounds come from core.models.Workload


def row(**over: object) -> dict[str, object]:
    """A valid interactive workload row; keyword arguments override cells."""
    base = {
        "workload_id": "wl-1", "name": "Customer chat", "team": "Retail", "requests_per_day": "1000",
        "peak_factor": "3", "input_tokens": "1500", "output_tokens": "300", "latency_slo_ms": "2000",
        "batch_window_hours": "", "data_policy": "external_ok", "task_class": "chat", "min_quality": "",
        "cached_input_share": "", "notes": "",
    }
    base.update({k: ("" if v is None else v) for k, v in over.items()})
    return base


def csv_bytes(rows: list[dict[str, object]], *, header: list[str] | None = None, delimiter: str = ",",
              encoding: str = "utf-8", lineterminator: str = "\r\n") -> bytes:
    header = header or HEADER
    out = io.StringIO()
    w = csv.writer(out, delimiter=delimiter, lineterminator=lineterminator)
    w.writerow(header)
    for r in rows:
        w.writerow([r.get(c, "") for c in header])
    return out.getvalue().encode(encoding)


def errors_of(report) -> list[tuple[int, str, str, str]]:
    return [tuple(r) for r in report.errors[["row", "column", "value", "problem"]].itertuples(index=False)]


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "t.duckdb")
    yield s
    s.close()


def snapshot(store: Store) -> tuple[list, list]:
    """Every row of the two inventory tables, for 'unchanged' assertions."""
    versions = store.frame("SELECT * FROM inventory_versions ORDER BY version").to_dict("records")
    workloads = store.frame("SELECT * FROM workloads ORDER BY version, row_number").astype(object)
    return versions, workloads.where(workloads.notna(), None).to_dict("records")


# -- the good paths -------------------------------------------------------------------


def test_bundled_sample_validates_cleanly_with_the_contract_shape():
    report = read_inventory(sample_workloads_path())
    assert report.ok, report.error_lines()
    frame = report.frame
    assert list(frame.columns) == list(Workload.model_fields)
    assert all(frame[c].dtype == np.float64 for c in NUMERIC_COLUMNS)
    assert frame.index.name == "row" and frame.index.tolist() == list(range(2, 2 + len(frame)))
    assert frame.loc[2, "workload_id"] == "kyc-overnight"
    assert math.isnan(frame.loc[2, "latency_slo_ms"]) and frame.loc[2, "batch_window_hours"] == 8.0
    # Every row is a valid Workload as the engine will build it.
    for rec in frame.to_dict("records"):
        Workload.model_validate({k: v for k, v in rec.items() if not (isinstance(v, float) and math.isnan(v))})


def test_blank_optional_text_is_none_and_blank_peak_factor_defaults_to_3():
    report = read_inventory(csv_bytes([row(team="", peak_factor="", notes="")]), "x.csv")
    assert report.ok, report.error_lines()
    rec = report.frame.iloc[0]
    assert rec["team"] is None and rec["notes"] is None
    assert rec["peak_factor"] == 3.0
    assert math.isnan(rec["min_quality"])  # stored as given; the engine applies the task-class default


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_template_has_one_example_per_task_class_and_reads_back_cleanly(fmt, tmp_path):
    path = write_template(tmp_path / f"inventory.{fmt}")
    report = read_inventory(path)
    assert report.ok, report.error_lines()
    assert sorted(report.frame["task_class"]) == sorted(TASK_CLASSES)
    assert len(report.frame) == len(EXAMPLE_ROWS)
    if fmt == "csv":
        assert path.read_bytes().startswith(b"\xef\xbb\xbf" + b"workload_id,name,team")


def test_xlsx_template_describes_every_column_on_a_second_sheet():
    wb = openpyxl.load_workbook(io.BytesIO(template_bytes("xlsx")))
    assert wb.sheetnames == ["Workloads", "Columns"]
    assert [c.value for c in wb["Workloads"][1]] == HEADER
    described = [r[0] for r in wb["Columns"].iter_rows(min_row=2, max_row=1 + len(HEADER), values_only=True)]
    assert described == HEADER
    meanings = {r[0]: r[3] for r in wb["Columns"].iter_rows(min_row=2, max_row=1 + len(HEADER), values_only=True)}
    assert f"<= {NUMBER_RULES['batch_window_hours'].le:g}" in meanings["batch_window_hours"]


def test_csv_and_xlsx_templates_give_the_same_frame_and_checksum():
    a = read_inventory(template_bytes("csv"), "t.csv")
    b = read_inventory(template_bytes("xlsx"), "t.xlsx")
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert checksum(a.frame) == checksum(b.frame)


def test_template_rejects_other_formats(tmp_path):
    with pytest.raises(InputError, match=r"\.csv or \.xlsx"):
        write_template(tmp_path / "inventory.ods")


# -- bad input: each case names row and column -------------------------------------------


def test_missing_required_column_is_reported_on_the_header_row():
    header = [c for c in HEADER if c != "output_tokens"]
    report = read_inventory(csv_bytes([row()], header=header), "x.csv")
    assert not report.ok and report.frame.empty
    assert errors_of(report) == [
        (1, "output_tokens", "", "required column is missing; the header row has: " + ", ".join(header))
    ]


def test_duplicate_workload_id_names_the_row_that_used_it_first():
    rows = [row(workload_id="a"), row(workload_id="b"), row(workload_id="a"), row(workload_id="a")]
    report = read_inventory(csv_bytes(rows), "x.csv")
    assert errors_of(report) == [
        (4, "workload_id", "a", "duplicate workload_id (first used in row 2); allowed: each id once"),
        (5, "workload_id", "a", "duplicate workload_id (first used in row 2); allowed: each id once"),
    ]


def test_negative_number_is_out_of_range():
    report = read_inventory(csv_bytes([row(), row(workload_id="b", requests_per_day="-5")]), "x.csv")
    assert errors_of(report) == [
        (3, "requests_per_day", "-5", f"out of range; allowed: {ALLOWED['requests_per_day']}")
    ]


def test_non_numeric_number_is_reported_with_the_text_as_typed():
    report = read_inventory(csv_bytes([row(input_tokens="about 2k"), row(workload_id="b", output_tokens="0")]),
                            "x.csv")
    assert errors_of(report) == [
        (2, "input_tokens", "about 2k", f"not a number; allowed: {ALLOWED['input_tokens']}"),
        (3, "output_tokens", "0", f"out of range; allowed: {ALLOWED['output_tokens']}"),
    ]


@pytest.mark.parametrize("text", ["inf", "nan", "1e999", "12abc", "1_000", "0x10", "--1", "1.2.3", "12 %"])
def test_numbers_that_are_not_usable_figures_are_rejected(text):
    report = read_inventory(csv_bytes([row(requests_per_day=text)]), "x.csv")
    assert [(r[0], r[1], r[2]) for r in errors_of(report)] == [(2, "requests_per_day", text)]
    problem = report.errors.loc[0, "problem"]
    if text.endswith("%"):
        assert problem.startswith("a percentage is allowed only for shares")
    else:
        assert problem.startswith("not a number")


def test_both_latency_and_window_is_an_error():
    report = read_inventory(csv_bytes([row(latency_slo_ms="1000", batch_window_hours="8")]), "x.csv")
    assert errors_of(report) == [
        (2, "latency_slo_ms/batch_window_hours", "latency_slo_ms=1000, batch_window_hours=8",
         "both given; allowed: exactly one of latency_slo_ms (interactive) or batch_window_hours (offline)")
    ]


def test_neither_latency_nor_window_is_an_error():
    report = read_inventory(csv_bytes([row(latency_slo_ms="", batch_window_hours=" ")]), "x.csv")
    assert [(r[0], r[1]) for r in errors_of(report)] == [(2, "latency_slo_ms/batch_window_hours")]
    assert report.errors.loc[0, "problem"].startswith("neither given; allowed: exactly one of latency_slo_ms")


def test_window_must_be_within_its_bound():
    too_long = f"{NUMBER_RULES['batch_window_hours'].le + 1:g}"
    report = read_inventory(csv_bytes([row(latency_slo_ms="", batch_window_hours=too_long)]), "x.csv")
    assert errors_of(report) == [
        (2, "batch_window_hours", too_long, f"out of range; allowed: {ALLOWED['batch_window_hours']}")
    ]


def test_unknown_task_class_and_data_policy_list_what_is_allowed():
    report = read_inventory(csv_bytes([row(task_class="poetry", data_policy="cloud")]), "x.csv")
    assert errors_of(report) == [
        (2, "data_policy", "cloud", "unknown value; allowed: external_ok, owned_only"),
        (2, "task_class", "poetry",
         "unknown value; allowed: extraction, code_completion, chat, agentic_step, reasoning"),
    ]


def test_enum_values_forgive_case_spaces_and_hyphens():
    report = read_inventory(csv_bytes([row(task_class="Code Completion", data_policy="Owned-Only")]), "x.csv")
    assert report.ok, report.error_lines()
    assert report.frame.iloc[0][["task_class", "data_policy"]].tolist() == ["code_completion", "owned_only"]


def test_zero_byte_file_says_it_is_empty(tmp_path):
    p = tmp_path / "inventory.csv"
    p.write_bytes(b"")
    report = read_inventory(p)
    assert errors_of(report) == [
        (0, "", "", "the file is empty (0 bytes); download the template, fill it in and upload it again")
    ]
    assert report.error_lines() == [
        "file: the file is empty (0 bytes); download the template, fill it in and upload it again"
    ]


def test_binary_file_renamed_csv_is_refused(tmp_path):
    p = tmp_path / "inventory.csv"
    p.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4)
    report = read_inventory(p)
    assert not report.ok and len(report.errors) == 1
    assert report.errors.loc[0, "row"] == 0
    assert "not a CSV text file" in report.errors.loc[0, "problem"]
    assert "NUL bytes" in report.errors.loc[0, "problem"]


def test_old_xls_workbook_is_refused_with_advice():
    report = read_inventory(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 512, "inventory.xls")
    assert "save it as .xlsx" in report.errors.loc[0, "problem"]


def test_header_only_file_has_no_rows():
    report = read_inventory(csv_bytes([]), "x.csv")
    assert errors_of(report) == [(0, "", "", "the file has no workload rows below the header")]


def test_every_error_is_listed_not_just_the_first():
    rows = [
        row(workload_id="a", requests_per_day="-1"),
        row(workload_id="b", name="", task_class="poem"),
        row(workload_id="a", peak_factor="0.5", cached_input_share="2"),
    ]
    report = read_inventory(csv_bytes(rows), "x.csv")
    assert [(r[0], r[1]) for r in errors_of(report)] == [
        (2, "requests_per_day"),
        (3, "name"),
        (3, "task_class"),
        (4, "workload_id"),
        (4, "peak_factor"),
        (4, "cached_input_share"),
    ]
    assert report.frame.empty


def test_formula_like_text_is_kept_exactly_and_flagged():
    rows = [row(workload_id="a", name="=HYPERLINK(\"http://x\")"), row(workload_id="b", team="@ops"),
            row(workload_id="c", notes="-5 is fine"), row(workload_id="d", name="+1 call")]
    report = read_inventory(csv_bytes(rows), "x.csv")
    assert report.ok
    assert report.frame.loc[2, "name"] == '=HYPERLINK("http://x")'
    assert report.frame.loc[3, "team"] == "@ops"
    flagged = [w for w in report.warnings if "formula" in w]
    assert [w.split(":")[0] for w in flagged] == ["row 2, column 'name'", "row 5, column 'name'",
                                                  "row 3, column 'team'", "row 4, column 'notes'"]
    # ... and neutralised by the export helper.
    exported = neutralise_series(report.frame["name"])
    assert exported.tolist() == ["'=HYPERLINK(\"http://x\")", "Customer chat", "Customer chat", "'+1 call"]


def test_emoji_and_right_to_left_name_is_kept_exactly(store):
    name = "\u200fבדיקה 🚀 عربى — naïve ✓\u200e"
    report = read_inventory(csv_bytes([row(name=name, team="  צוות  ")]), "x.csv")
    assert report.ok
    assert report.frame.iloc[0]["name"] == name
    assert report.frame.iloc[0]["team"] == "צוות"  # outer whitespace trimmed, as the model does
    commit_inventory(store, report.frame, file_name="x.csv")
    assert load_version(store).iloc[0]["name"] == name


# -- what Excel writes ----------------------------------------------------------------


def test_excel_semicolon_bom_decimal_comma_and_thousands():
    rows = [row(requests_per_day="1.200.000", input_tokens="1.500", output_tokens="300,5",
                min_quality="0,85", cached_input_share=",25"),
            row(workload_id="b", requests_per_day="1 000", peak_factor="2,5", input_tokens="1\u00a0234,5",
                output_tokens="1000")]
    data = csv_bytes(rows, delimiter=";", encoding="utf-8-sig")
    report = read_inventory(data, "x.csv")
    assert report.ok, report.error_lines()
    f = report.frame
    assert f["requests_per_day"].tolist() == [1_200_000.0, 1000.0]
    assert f["input_tokens"].tolist() == [1500.0, 1234.5]
    assert f["output_tokens"].tolist() == [300.5, 1000.0]
    assert f.loc[2, "min_quality"] == 0.85 and f.loc[2, "cached_input_share"] == 0.25
    assert f["peak_factor"].tolist() == [3.0, 2.5]
    assert "delimiter ';'" in report.dialect and "UTF-8 with BOM" in report.dialect
    assert "decimal separator ','" in report.dialect
    assert any(w.startswith("read as CSV, delimiter ';'") for w in report.warnings)


def test_comma_file_reads_quoted_thousands_and_unambiguous_decimal_commas():
    rows = [row(requests_per_day="1,000", input_tokens="1,234,567.5", min_quality="0,9")]
    report = read_inventory(csv_bytes(rows), "x.csv")
    assert report.ok, report.error_lines()
    assert report.frame.iloc[0][["requests_per_day", "input_tokens", "min_quality"]].tolist() == [
        1000.0, 1234567.5, 0.9]


def test_semicolon_file_with_decimal_points_is_read_by_its_unambiguous_cells():
    rows = [row(min_quality="0.85", requests_per_day="1.000")]
    report = read_inventory(csv_bytes(rows, delimiter=";"), "x.csv")
    assert report.ok, report.error_lines()
    # "0.85" can only be a decimal point, so the file's "1.000" is one, too.
    assert "decimal separator '.'" in report.dialect
    assert report.frame.iloc[0][["min_quality", "requests_per_day"]].tolist() == [0.85, 1.0]


def test_windows_1252_tab_separated_file(tmp_path):
    p = tmp_path / "inventory.txt"
    p.write_bytes(csv_bytes([row(name="Résumé parsing €")], delimiter="\t", encoding="cp1252"))
    report = read_inventory(p)
    assert report.ok, report.error_lines()
    assert report.frame.iloc[0]["name"] == "Résumé parsing €"
    assert "delimiter tab" in report.dialect and "Windows-1252" in report.dialect


def test_utf16_unicode_text_export():
    report = read_inventory(csv_bytes([row(name="Ünïcode")], delimiter="\t", encoding="utf-16"), "x.txt")
    assert report.ok, report.error_lines()
    assert report.frame.iloc[0]["name"] == "Ünïcode" and "UTF-16" in report.dialect


def test_blank_rows_are_skipped_and_later_rows_keep_their_file_numbers():
    body = csv_bytes([row(workload_id="a")]).decode()
    body += "\r\n;;\r\n".replace(";", ",") + "\r\n" + "  \r\n"
    body += csv_bytes([row(workload_id="b", requests_per_day="x")]).decode().split("\r\n", 1)[1]
    body += ",,,,\r\n\r\n"
    report = read_inventory(body.encode(), "x.csv")
    # rows: 1 header, 2 a, 3 empty, 4 ",,", 5 empty, 6 "  ", 7 b, 8 ",,,,", 9 empty
    assert errors_of(report) == [(7, "requests_per_day", "x", f"not a number; allowed: {ALLOWED['requests_per_day']}")]
    assert "skipped 6 blank row(s): 3, 4, 5, 6, 8, 9" in report.warnings
    ok = read_inventory(body.replace(",x,", ",7,").encode(), "x.csv")
    assert ok.ok and ok.frame.index.tolist() == [2, 7]


def test_blank_row_warning_lists_the_rows():
    body = csv_bytes([row(workload_id="a")]) + b"\r\n\r\n" + csv_bytes([row(workload_id="b")]).split(b"\r\n", 1)[1]
    report = read_inventory(body, "x.csv")
    assert report.ok and report.frame.index.tolist() == [2, 5]
    assert "skipped 2 blank row(s): 3, 4" in report.warnings


def test_quoted_line_breaks_keep_spreadsheet_row_numbers():
    rows = [row(workload_id="a", notes="line one\nline two\n\nline four"), row(workload_id="b"),
            row(workload_id="c", output_tokens="zero")]
    report = read_inventory(csv_bytes(rows), "x.csv")
    assert [(r[0], r[1]) for r in errors_of(report)] == [(4, "output_tokens")]
    fixed = read_inventory(csv_bytes(rows[:2]), "x.csv")
    assert fixed.frame.loc[2, "notes"] == "line one\nline two\n\nline four"


def test_fast_and_careful_csv_readers_agree():
    """DuckDB's reader (fast path) and Python's csv module (fallback) see the same cells on the same rows."""
    from core.inventory import files

    rows = [row(workload_id="a", notes='say "hi"\r\nthen, go'), row(workload_id="b", name=" padded ")]
    body = csv_bytes(rows) + b"\r\n" + b"c,short\r\n" + b"\r\n"
    header = HEADER
    n_records, empty = files._record_layout(body)
    assert n_records == 6 and empty.tolist() == [False, False, False, True, False, True]
    fast = files._read_csv_duckdb(body, None, header, ",", 0, 1, lambda: (n_records, empty))
    careful = files._read_csv_python(body, header, ",", 1)
    assert fast is not None
    assert fast.rows.tolist() == [2, 3, 5] and careful.rows.tolist() == [2, 3, 4, 5, 6]
    assert fast.blank_rows.tolist() == [4, 6]
    keep = [0, 1, 3]
    for f, c in zip(fast.columns, careful.columns, strict=True):
        assert f.to_pylist() == [c.to_pylist()[k] for k in keep]


def test_excel_sep_hint_line_is_obeyed_and_counted():
    data = b"sep=;\r\n" + csv_bytes([row(), row(workload_id="b", data_policy="?")], delimiter=";")
    report = read_inventory(data, "x.csv")
    assert [(r[0], r[1]) for r in errors_of(report)] == [(4, "data_policy")]


def test_row_with_more_values_than_header_is_refused_by_row():
    data = csv_bytes([row()]) + (",".join(str(row(workload_id="b").get(c, "")) for c in HEADER) + ",surprise\r\n").encode()
    report = read_inventory(data, "x.csv")
    assert report.errors.loc[0, "row"] == 0
    assert (f"row(s) 3 have more values than the header has columns ({len(HEADER)})"
            in report.errors.loc[0, "problem"])
    assert "thousands separator must be in quotes" in report.errors.loc[0, "problem"]


def test_header_names_match_ignoring_case_and_spaces_and_extra_columns_go_to_notes():
    header = ["Workload ID", "NAME", "Team", "Requests per day", "peak_factor", "Input Tokens", "output_tokens",
              "latency_slo_ms", "data policy", "Task-Class", "Cost centre", "Owner"]
    rows = [{"Workload ID": "a", "NAME": "n", "Requests per day": "5", "Input Tokens": "1", "output_tokens": "1",
             "latency_slo_ms": "100", "data policy": "owned_only", "Task-Class": "chat", "Cost centre": "CC-12",
             "Owner": "=cmd|' /C calc'!A0"},
            {"Workload ID": "b", "NAME": "n", "Requests per day": "5", "Input Tokens": "1", "output_tokens": "1",
             "latency_slo_ms": "100", "data policy": "owned_only", "Task-Class": "chat"}]
    report = read_inventory(csv_bytes(rows, header=header), "x.csv")
    assert report.ok, report.error_lines()
    assert report.frame.loc[2, "notes"] == "Cost centre: CC-12; Owner: =cmd|' /C calc'!A0"
    assert report.frame.loc[3, "notes"] is None
    assert "unknown column(s) 'Cost centre', 'Owner' kept in notes as 'column: value'" in report.warnings
    assert any(w.startswith("row 2, column 'Owner'") for w in report.warnings)


def test_duplicate_header_is_an_error():
    header = HEADER + ["Workload_ID"]
    report = read_inventory(csv_bytes([row()], header=header), "x.csv")
    assert errors_of(report) == [(1, "workload_id", "Workload_ID", f"column appears twice (columns 1 and {len(HEADER) + 1}); keep one")]


def cells(**values: object) -> list[object]:
    """One workbook row in the contract's column order (None = empty cell)."""
    return [values.get(c) for c in HEADER]


def _xlsx(sheets: dict[str, list[list[object]]]) -> bytes:
    buf = io.BytesIO()
    wb = xlsxwriter.Workbook(buf, {"in_memory": True})
    for name, rows in sheets.items():
        ws = wb.add_worksheet(name)
        for i, r in enumerate(rows):
            for j, v in enumerate(r):
                if v is not None:
                    ws.write(i, j, v)
    wb.close()
    return buf.getvalue()


def test_xlsx_named_sheet_typed_numbers_text_numbers_and_blank_rows():
    good = [HEADER,
            cells(workload_id="a", name="Alpha", requests_per_day=1000, input_tokens=1500.5, output_tokens=300,
                  latency_slo_ms=2000, data_policy="owned_only", task_class="chat", min_quality=0.85),
            [None] * len(HEADER),
            cells(workload_id="b", name="Beta", team="T", requests_per_day="1.000", peak_factor="2", input_tokens="0,5",
                  output_tokens=1, batch_window_hours=8, data_policy="external_ok", task_class="extraction",
                  notes=12345)]
    data = _xlsx({"Readme": [["nothing here"]], "Inventory": good})
    report = read_inventory(data, "book.xlsx", sheet="inventory")
    assert report.ok, report.error_lines()
    f = report.frame
    assert f.index.tolist() == [2, 4]
    assert f.loc[2, "input_tokens"] == 1500.5 and f.loc[4, "input_tokens"] == 0.5
    # The sheet's own text "0,5" says ',' is its decimal separator, so the text "1.000" is a thousand.
    assert f.loc[4, "requests_per_day"] == 1000.0 and f.loc[4, "notes"] == "12345"
    assert report.dialect.startswith("XLSX, sheet 'Inventory', decimal separator ','")
    assert report.sheet == "Inventory" and report.sheets == ("Inventory",)
    assert "skipped 1 blank row(s): 3" in report.warnings


def test_xlsx_errors_use_spreadsheet_rows_and_unknown_sheet_lists_the_sheets():
    rows = [HEADER, cells(workload_id="a", name="Alpha", requests_per_day=-1, input_tokens=1, output_tokens=1,
                          latency_slo_ms=1, data_policy="owned_only", task_class="chat")]
    data = _xlsx({"Workloads": rows})
    assert [(r[0], r[1]) for r in errors_of(read_inventory(data, "b.xlsx"))] == [(2, "requests_per_day")]
    missing = read_inventory(data, "b.xlsx", sheet="Nope")
    assert missing.errors.loc[0, "problem"] == "no sheet named 'Nope'; the workbook has: Workloads"


def test_sheet_name_for_a_csv_file_is_refused():
    report = read_inventory(csv_bytes([row()]), "x.csv", sheet="Workloads")
    assert report.error_lines() == ["file: a sheet name ('Workloads') applies to .xlsx workbooks only; "
                                    "this file is CSV text"]


def test_xlsx_renamed_csv_is_read_as_a_workbook():
    report = read_inventory(template_bytes("xlsx"), "inventory.csv")
    assert report.ok and "Excel workbook despite its name" in " ".join(report.warnings)


def test_validate_frame_reports_the_editor_rows():
    frame = read_inventory(sample_workloads_path()).frame
    assert validate_frame(frame).ok
    edited = frame.reset_index(drop=True)
    edited.loc[1, "min_quality"] = 1.5
    edited.loc[4, "name"] = "   "
    report = validate_frame(edited)
    assert [(r[0], r[1]) for r in errors_of(report)] == [(1, "min_quality"), (4, "name")]


# -- numbers: one rule table ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "delimiter", "value"),
    [
        ("1,000", ",", 1000.0),  # comma-separated: '.' is the decimal separator, ',' groups thousands
        ("1.000", ",", 1.0),
        ("1.234.567", ",", 1234567.0),
        ("1,234,567", ";", 1234567.0),
        ("1.234,5", ",", 1234.5),
        ("1,234.5", ";", 1234.5),
        ("1 234 567,25", ";", 1234567.25),
        ("1'234.5", ",", 1234.5),
        ("0,75", ",", 0.75),
        ("1.5E3", ",", 1500.0),
        ("+7", ";", 7.0),
        ("-0", ",", 0.0),
        (" 42 ", ",", 42.0),
    ],
)
def test_number_forms(text, delimiter, value):
    report = read_inventory(csv_bytes([row(input_tokens=text)], delimiter=delimiter), "x.csv")
    assert report.ok, report.error_lines()
    got = report.frame.iloc[0]["input_tokens"]
    assert got == value and math.copysign(1, got) == 1


@settings(max_examples=200, deadline=None)
@given(cells=st.lists(st.text("0123456789,.+-eE '\u00a0", min_size=1, max_size=12).map(str.strip).filter(bool),
                      min_size=1, max_size=30))
def test_decimal_comma_shortcut_gives_what_the_rules_give(cells):
    """The quick path for "0,85"-style cells must agree with the full rule cascade, cell for cell."""
    import pyarrow as pa

    from core.inventory import numbers

    arr = pa.array(cells, pa.string())
    for decimal in (",", None):  # settled, or left to the file's cells
        quick_values, quick_ok, quick_amb = numbers.parse_careful(arr, decimal)
        rule_values, rule_ok, rule_amb = numbers.parse_rules(arr, decimal)
        assert quick_ok.tolist() == rule_ok.tolist()
        assert quick_amb.tolist() == rule_amb.tolist()
        if decimal == ",":
            assert not quick_amb.any()  # the decimal separator is settled: nothing is ambiguous
        np.testing.assert_array_equal(quick_values, rule_values)
    ambiguous = numbers.is_ambiguous(arr)
    assert ambiguous.tolist() == numbers.match(arr, numbers.AMBIGUOUS).tolist()  # the cheap filter misses none


# -- hypothesis: the column checks agree with the model -------------------------------

cell_text = st.one_of(
    st.just(""), st.just("  "),
    st.integers(-5, 10**7).map(str),
    st.floats(-2, 30).map(repr),
    st.sampled_from(["1e3", "abc", "0", "1", "24", "24.0001", "0.5", "-0.1", "1.5.2", "nan", "inf", "-inf",
                     "1e400", " 7 "]),
)
text_cell = st.one_of(st.just(""), st.just(" "), st.text(min_size=1, max_size=8))
enum_cell = st.sampled_from(["chat", "reasoning", "owned_only", "external_ok", "CHAT", "", "other"])


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cells=st.fixed_dictionaries({
    "workload_id": st.sampled_from(["a", " b ", ""]), "name": text_cell, "team": text_cell,
    "requests_per_day": cell_text, "peak_factor": cell_text, "input_tokens": cell_text,
    "output_tokens": cell_text, "latency_slo_ms": cell_text, "batch_window_hours": cell_text,
    "data_policy": enum_cell, "task_class": enum_cell, "min_quality": cell_text,
    "cached_input_share": cell_text, "notes": text_cell,
}))
def test_column_checks_accept_exactly_what_the_model_accepts(cells):
    """One row through validate_frame vs. pydantic on the same cells (blank -> missing, enums folded)."""
    df = pd.DataFrame([cells], dtype=object)
    report = validate_frame(df)
    given_cells = {}
    for k, v in cells.items():
        if v.strip() == "":
            continue
        if k in ("data_policy", "task_class"):
            v = v.strip().lower()
        given_cells[k] = v.strip() if k not in NUMERIC_COLUMNS else v
    try:
        model = Workload.model_validate({k: (float(v) if k in NUMERIC_COLUMNS else v)
                                         for k, v in given_cells.items()})
    except (ValidationError, ValueError):
        model = None
    assert report.ok == (model is not None), (report.error_lines(), cells)
    if model is not None:
        got = report.frame.iloc[0].to_dict()
        for k, v in model.model_dump(mode="json").items():
            if v is None:
                assert got[k] is None or (isinstance(got[k], float) and math.isnan(got[k])), k
            else:
                assert got[k] == v, k


# Any text a spreadsheet cell can hold (NUL cannot: a CSV with NUL bytes is refused as binary).
cell_chars = st.characters(codec="utf-8", exclude_categories=["Cs"], exclude_characters="\x00")
valid_rows = st.fixed_dictionaries({
    "name": st.text(cell_chars, min_size=1, max_size=12).filter(str.strip),
    "requests_per_day": st.floats(0, 1e9, allow_nan=False),
    "peak_factor": st.floats(1, 24, allow_nan=False),
    "input_tokens": st.integers(0, 200_000).map(float),
    "output_tokens": st.floats(1, 1e5, allow_nan=False),
    "slo": st.one_of(st.none(), st.floats(0.5, 1e6, allow_nan=False)),
    "window": st.floats(0.25, 24, allow_nan=False),
    "data_policy": st.sampled_from(["external_ok", "owned_only"]),
    "task_class": st.sampled_from(TASK_CLASSES),
    "min_quality": st.one_of(st.none(), st.floats(0, 1)),
    "notes": st.one_of(st.none(), st.text(cell_chars, max_size=20).filter(str.strip)),
})


def _frame_from(rows: list[dict]) -> pd.DataFrame:
    recs = []
    for i, r in enumerate(rows):
        recs.append({
            "workload_id": f"wl-{i}", "name": r["name"], "team": None, "requests_per_day": r["requests_per_day"],
            "peak_factor": r["peak_factor"], "input_tokens": r["input_tokens"], "output_tokens": r["output_tokens"],
            "latency_slo_ms": r["slo"], "batch_window_hours": None if r["slo"] is not None else r["window"],
            "data_policy": r["data_policy"], "task_class": r["task_class"], "min_quality": r["min_quality"],
            "cached_input_share": None, "notes": r["notes"],
        })
    return pd.DataFrame(recs, columns=HEADER)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(valid_rows, min_size=1, max_size=6), semicolon=st.booleans())
def test_any_valid_inventory_round_trips_through_csv_unchanged(rows, semicolon):
    """frame -> CSV as Excel would write it (repr numbers; semicolon files with decimal commas) -> same frame."""
    frame = validate_frame(_frame_from(rows), row_numbers=range(2, 2 + len(rows)))
    assert frame.ok, frame.error_lines()
    out = io.StringIO()
    w = csv.writer(out, delimiter=";" if semicolon else ",")
    w.writerow(HEADER)
    for rec in frame.frame.to_dict("records"):
        cells = []
        for c in HEADER:
            v = rec[c]
            if v is None or (isinstance(v, float) and math.isnan(v)):
                cells.append("")
            elif isinstance(v, float):
                text = repr(v)
                cells.append(text.replace(".", ",") if semicolon else text)
            else:
                cells.append(v)
        w.writerow(cells)
    back = read_inventory(out.getvalue().encode("utf-8-sig"), "x.csv")
    assert back.ok, back.error_lines()
    pd.testing.assert_frame_equal(back.frame, frame.frame)


# -- the store: versions ------------------------------------------------------------------


def test_commit_list_load_and_identical_upload(store):
    report = read_inventory(sample_workloads_path())
    first = commit_inventory(store, report.frame, file_name="sample.csv", created_by="ana", comment="Q3")
    assert first == inventory_store.CommitResult(1, True, "committed version 1: 7 workloads from sample.csv")
    again = commit_inventory(store, report.frame.iloc[::-1], file_name="again.csv")
    assert again == inventory_store.CommitResult(1, False, "identical to the latest version 1; nothing committed")
    versions = list_versions(store)
    assert versions[["version", "created_by", "file_name", "row_count", "comment", "is_latest"]].to_dict("records") == [
        {"version": 1, "created_by": "ana", "file_name": "sample.csv", "row_count": 7, "comment": "Q3",
         "is_latest": True}]
    assert versions.loc[0, "checksum"] == checksum(report.frame)
    pd.testing.assert_frame_equal(load_version(store, 1), report.frame)
    assert latest_inventory(store)[0] == 1


@pytest.mark.slow
def test_checksum_is_sha256_of_the_sorted_canonical_csv():
    """Slices hashed in parallel must equal one CSV of all rows sorted by workload_id (250,000 rows: 3 slices)."""
    import hashlib

    import pyarrow.csv as pacsv

    sample = read_inventory(sample_workloads_path()).frame
    big = sample.iloc[np.arange(250_000) % len(sample)].reset_index(drop=True)
    big["workload_id"] = [f"id-{i:06d}" for i in range(len(big))][::-1]
    buf = io.BytesIO()
    pacsv.write_csv(inventory_store._arrow(big).sort_by("workload_id"), buf)
    assert checksum(big) == hashlib.sha256(buf.getvalue()).hexdigest()
    assert buf.getvalue().startswith(b'"workload_id","name","team","requests_per_day"')
    assert checksum(big.iloc[::-1]) == checksum(big)  # order does not matter
    changed = big.copy()
    changed.loc[7, "min_quality"] = 0.5
    assert checksum(changed) != checksum(big)


def test_latest_inventory_falls_back_to_the_bundled_sample(store):
    version, frame = latest_inventory(store)
    assert version is None
    pd.testing.assert_frame_equal(frame, read_inventory(sample_workloads_path()).frame)
    with pytest.raises(InputError, match="no inventory version yet"):
        load_version(store)


def test_diff_and_restore(store):
    base = read_inventory(sample_workloads_path()).frame
    commit_inventory(store, base, file_name="v1.csv")
    edited = base.drop(index=3).copy()
    edited.loc[2, "requests_per_day"] = 5.0
    edited.loc[2, "notes"] = None
    extra = validate_frame(pd.DataFrame([row(workload_id="new-one")]), row_numbers=[20]).frame
    commit_inventory(store, pd.concat([edited, extra]), file_name="v2.csv")
    diff = diff_versions(store, 1, 2)
    assert diff.to_dict("records") == [
        {"workload_id": "kyc-overnight", "change": "changed", "fields": "requests_per_day, notes"},
        {"workload_id": "new-one", "change": "added", "fields": ""},
        {"workload_id": "onboarding-rt", "change": "removed", "fields": ""},
    ]
    assert diff.attrs["total"] == 3
    first = diff_versions(store, 1, 2, limit=2)  # a page shows the first changes and counts them all
    assert first["workload_id"].tolist() == ["kyc-overnight", "new-one"] and first.attrs["total"] == 3
    assert diff_versions(store, 2, 2).empty
    restored = restore_version(store, 1, created_by="bo")
    assert restored == inventory_store.CommitResult(3, True, "restored version 1 as version 3 (7 workloads)")
    assert diff_versions(store, 1, 3).empty
    pd.testing.assert_frame_equal(load_version(store), base)
    v = list_versions(store).set_index("version")
    assert v.loc[3, "restored_from"] == 1 and v.loc[3, "created_by"] == "bo" and v.loc[3, "is_latest"]
    assert v.loc[3, "checksum"] == v.loc[1, "checksum"]
    again = restore_version(store, 1)
    assert again.created is False and again.version == 3
    with pytest.raises(InputError, match="no inventory version 9; versions: 1, 2, 3"):
        restore_version(store, 9)
    with pytest.raises(InputError, match="no inventory version 0"):
        diff_versions(store, 0, 1)


def test_failure_mid_commit_leaves_the_store_exactly_as_it_was(store, monkeypatch):
    base = read_inventory(sample_workloads_path()).frame
    commit_inventory(store, base, file_name="v1.csv")
    before = snapshot(store)
    real_insert = inventories.insert_workloads

    def half_then_fail(cur, version, table, rows, **kwargs):
        real_insert(cur, version, table.slice(0, 3), rows[:3])  # the version row and 3 workloads are in
        raise RuntimeError("disk full")

    monkeypatch.setattr(inventories, "insert_workloads", half_then_fail)
    changed = base.copy()
    changed["requests_per_day"] = 1.0
    with pytest.raises(RuntimeError, match="disk full"):
        commit_inventory(store, changed, file_name="v2.csv")
    assert snapshot(store) == before
    monkeypatch.undo()
    assert commit_inventory(store, changed, file_name="v2.csv").version == 2


def test_a_commit_in_slices_reports_progress_and_a_failing_slice_leaves_the_store_as_it_was(store, monkeypatch):
    """Issue 16: large commits go in slices (bounded copies, progress); still one transaction."""
    from core.inventory import versions

    base = read_inventory(sample_workloads_path()).frame  # 7 rows: slices of 3, 3 and 1
    monkeypatch.setattr(versions, "COMMIT_SLICE_ROWS", 3)
    seen: list[tuple[float, str]] = []
    result = commit_inventory(store, base, file_name="v1.csv", progress=lambda f, what: seen.append((f, what)))
    assert result.version == 1
    pd.testing.assert_frame_equal(load_version(store, 1), base)
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(1.0) and len(fractions) == 3 + 3
    assert seen[0][1] == "checksum of the rows" and seen[-1][1] == "writing 7 rows"
    assert list_versions(store).loc[0, "checksum"] == checksum(base)  # the sliced checksum is the same
    before = snapshot(store)
    real_execute_calls = []
    real_insert = inventories.insert_workloads

    def fail_on_the_third_slice(cur, version, table, rows, *, slice_rows=None, progress=None):
        def tick(f):
            real_execute_calls.append(f)
            if len(real_execute_calls) == 2:
                raise RuntimeError("disk full")
        real_insert(cur, version, table, rows, slice_rows=slice_rows, progress=tick)

    monkeypatch.setattr(inventories, "insert_workloads", fail_on_the_third_slice)
    changed = base.copy()
    changed["requests_per_day"] = 1.0
    with pytest.raises(RuntimeError, match="disk full"):
        commit_inventory(store, changed, file_name="v2.csv")
    assert snapshot(store) == before


def test_latest_size_and_a_page_of_a_version(store):
    from core.inventory import latest_size, version_page

    base = read_inventory(sample_workloads_path()).frame
    assert latest_size(store) == (None, len(base))
    commit_inventory(store, base, file_name="v1.csv")
    assert latest_size(store) == (1, len(base))
    pd.testing.assert_frame_equal(version_page(store, 1, 2, 3), base.iloc[2:5])
    assert version_page(store, 1, 100, 3).empty
    with pytest.raises(InputError, match="no inventory version 9"):
        version_page(store, 9, 0, 3)


def test_commits_from_several_threads_get_distinct_versions(store):
    """Streamlit runs each session in its own thread; simultaneous uploads must not collide."""
    from concurrent.futures import ThreadPoolExecutor

    base = read_inventory(sample_workloads_path()).frame
    frames = []
    for k in range(6):
        f = base.copy()
        f["requests_per_day"] = float(k)
        frames.append(f)
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda f: commit_inventory(store, f, file_name="t.csv"), frames))
    assert sorted(r.version for r in results) == [1, 2, 3, 4, 5, 6]
    assert store.frame("SELECT count(*) AS n FROM workloads").loc[0, "n"] == 6 * len(base)
    for r, f in zip(results, frames, strict=True):
        pd.testing.assert_frame_equal(load_version(store, r.version), f)


def test_commit_refuses_an_empty_or_foreign_frame(store):
    before = snapshot(store)
    with pytest.raises(InputError, match="empty inventory"):
        commit_inventory(store, read_inventory(sample_workloads_path()).frame.iloc[0:0], file_name="x")
    with pytest.raises(InputError, match="lacks column"):
        commit_inventory(store, pd.DataFrame({"workload_id": ["a"]}), file_name="x")
    assert snapshot(store) == before


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(valid_rows, min_size=1, max_size=5))
def test_commit_then_load_returns_the_same_frame(tmp_path_factory, rows):
    store = Store(tmp_path_factory.mktemp("h") / "t.duckdb", seed=False)
    try:
        frame = validate_frame(_frame_from(rows), row_numbers=range(2, 2 + len(rows))).frame
        version = commit_inventory(store, frame, file_name="x.csv").version
        pd.testing.assert_frame_equal(load_version(store, version), frame)
    finally:
        store.close()


# -- text safety ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["=1+1", "+1", "-2", "@SUM(A1)", "\tx", "\rx", "  =cmd"])
def test_formula_like_text_is_neutralised(text):
    assert is_formula_like(text)
    assert neutralise(text) == "'" + text


@pytest.mark.parametrize("text", ["plain", "", "1+1", "a=b", "'=already"])
def test_ordinary_text_is_left_alone(text):
    assert not is_formula_like(text)
    assert neutralise(text) == text


def test_neutralise_series_leaves_numbers_and_missing_values():
    s = pd.Series(["=x", None, "ok", 5, -3.0], dtype=object)
    assert neutralise_series(s).tolist() == ["'=x", None, "ok", 5, -3.0]
    numbers = pd.Series([-1.0, 2.0])
    assert neutralise_series(numbers) is numbers


# -- a million rows ---------------------------------------------------------------------------


def write_big_csv(path, n: int) -> None:
    """n valid rows, half interactive and half offline, written by DuckDB (fast)."""
    con = duckdb.connect()
    con.execute(
        f"""COPY (SELECT 'wl-' || i AS workload_id, 'Workload ' || i AS name, 'Team ' || (i % 37) AS team,
                 (i * 7919) % 1000000 AS requests_per_day, 1 + (i % 40) / 10.0 AS peak_factor,
                 (i * 31) % 20000 AS input_tokens, 1 + (i * 17) % 4000 AS output_tokens,
                 CASE WHEN i % 2 = 0 THEN 100 + i % 20000 END AS latency_slo_ms,
                 CASE WHEN i % 2 = 1 THEN 1 + i % 24 END AS batch_window_hours,
                 CASE WHEN i % 3 = 0 THEN 'external_ok' ELSE 'owned_only' END AS data_policy,
                 ['extraction','code_completion','chat','agentic_step','reasoning'][1 + i % 5] AS task_class,
                 CASE WHEN i % 4 = 0 THEN (i % 100) / 100.0 END AS min_quality,
                 (i % 100) / 100.0 AS cached_input_share,
                 CASE WHEN i % 7 = 0 THEN 'notes for ' || i END AS notes
          FROM range({n}) t(i)) TO '{path}' (HEADER, DELIMITER ',')"""
    )
    con.close()


@pytest.mark.slow
def test_a_million_row_csv_imports(tmp_path, store):
    path = tmp_path / "big.csv"
    write_big_csv(path, 1_000_000)
    report = read_inventory(path)  # its speed is bench/bench_inventory_import.py's (no clock in the suite)
    assert report.ok, report.error_lines()[:5]
    assert len(report.frame) == 1_000_000
    assert report.frame.index[-1] == 1_000_001
    assert report.frame.loc[1_000_001, "workload_id"] == "wl-999999"
    result = commit_inventory(store, report.frame, file_name="big.csv")
    assert result.created and result.version == 1
    assert store.frame("SELECT count(*) AS n FROM workloads").loc[0, "n"] == 1_000_000


def test_the_written_out_whitespace_is_pythons_strip_set():
    """core.inventory.raw trims with a written-out set (scanning every code point cost each process ~60 ms at start);
    it must be exactly what str.isspace() (and so str.strip() and pydantic) treats as whitespace here."""
    import sys

    from core.inventory.raw import WHITESPACE

    assert set(WHITESPACE) == {ch for ch in map(chr, range(sys.maxunicode + 1)) if ch.isspace()}
    assert len(set(WHITESPACE)) == len(WHITESPACE)
