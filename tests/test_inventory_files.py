"""Inventory files as they arrive (issues 14 and 16): never a guessed number, never a lost row, workbooks as finance keeps them."""

from __future__ import annotations

import csv
import io
import math
import re
import zipfile

import pytest
import xlsxwriter

from core.cli import main
from core.inventory import (
    COLUMNS,
    MAX_CELL_CHARS,
    MAX_LISTED_ERRORS,
    NUMBER_RULES,
    read_inventory,
    template_bytes,
    validate_frame,
)
from core.inventory import files as inventory_files

HEADER = list(COLUMNS)


def row(**over: object) -> dict[str, object]:
    base = {"workload_id": "wl-1", "name": "Customer chat", "team": "", "requests_per_day": "1000",
            "peak_factor": "3", "input_tokens": "1500", "output_tokens": "300", "latency_slo_ms": "2000",
            "batch_window_hours": "", "data_policy": "external_ok", "task_class": "chat", "min_quality": "",
            "cached_input_share": "", "notes": ""}
    base.update({k: ("" if v is None else v) for k, v in over.items()})
    return base


def csv_bytes(rows, *, delimiter=",", encoding="utf-8", lineterminator="\r\n", header=None) -> bytes:
    header = header or HEADER
    out = io.StringIO()
    w = csv.writer(out, delimiter=delimiter, lineterminator=lineterminator)
    w.writerow(header)
    for r in rows:
        w.writerow([r.get(c, "") for c in header])
    return out.getvalue().encode(encoding)


def workbook(sheets: dict[str, list[list[object]]]) -> bytes:
    buf = io.BytesIO()
    wb = xlsxwriter.Workbook(buf, {"in_memory": True})
    for name, rows in sheets.items():
        ws = wb.add_worksheet(name)
        for i, r in enumerate(rows):
            for j, v in enumerate(r):
                if isinstance(v, str):
                    ws.write_string(i, j, v)
                elif v is not None:
                    ws.write_number(i, j, v)
    wb.close()
    return buf.getvalue()


def book_row(i: int, **over: object) -> list[object]:
    r = {"workload_id": f"w{i}", "name": "Chat", "requests_per_day": 1000, "peak_factor": 3, "input_tokens": 1500,
         "output_tokens": 300, "latency_slo_ms": 2000, "data_policy": "owned_only", "task_class": "chat"}
    r.update(over)
    return [r.get(c) for c in HEADER]


# -- separators: never guessed ---------------------------------------------------------------


def test_semicolon_file_with_dot_thousands_and_no_decimal_comma_is_refused_naming_column_and_cell():
    """40.000 in a ';' file: forty thousand from a German Excel, forty from a Swiss one; the file does not say."""
    data = csv_bytes([row(requests_per_day="40.000"), row(workload_id="b", requests_per_day="12.500")],
                     delimiter=";")
    report = read_inventory(data, "x.csv")
    assert not report.ok and report.needs_decimal and report.frame.empty
    assert [(r[0], r[1], r[2]) for r in report.errors.itertuples(index=False)] == [(2, "requests_per_day", "40.000")]
    problem = report.errors.loc[0, "problem"]
    assert problem.startswith("ambiguous number: 40,000 if '.' groups thousands, 40 if '.' is the decimal separator")
    assert "(1 more cell(s) in this column read the same way)" in problem and "--decimal" in problem


@pytest.mark.parametrize(("decimal", "values"), [(",", [40_000.0, 12_500.0]), (".", [40.0, 12.5])])
def test_the_decimal_choice_settles_ambiguous_cells(decimal, values):
    data = csv_bytes([row(requests_per_day="40.000"), row(workload_id="b", requests_per_day="12.500")],
                     delimiter=";")
    report = read_inventory(data, "x.csv", decimal=decimal)
    assert report.ok, report.error_lines()
    assert report.frame["requests_per_day"].tolist() == values
    assert report.decimal == decimal and "your choice" in report.dialect


def test_the_files_own_cells_settle_the_separator_and_the_report_says_which_cell():
    german = csv_bytes([row(requests_per_day="40.000", min_quality="0,85")], delimiter=";")
    report = read_inventory(german, "x.csv")
    assert report.ok and report.frame.iloc[0]["requests_per_day"] == 40_000.0
    assert "decimal separator ','" in report.dialect and "'0,85'" in report.dialect
    swiss = csv_bytes([row(requests_per_day="40.000", input_tokens="1'234.5")], delimiter=";")
    report = read_inventory(swiss, "x.csv")
    assert report.ok and report.frame.iloc[0][["requests_per_day", "input_tokens"]].tolist() == [40.0, 1234.5]


def test_conflicting_cells_settle_nothing():
    data = csv_bytes([row(requests_per_day="40.000", min_quality="0,85", cached_input_share="0.5")], delimiter=";")
    report = read_inventory(data, "x.csv")
    assert report.needs_decimal and [r[1] for r in report.errors.itertuples(index=False)] == ["requests_per_day"]


def test_comma_separated_file_reads_a_dot_as_the_decimal_point_by_stated_rule():
    report = read_inventory(csv_bytes([row(requests_per_day="40.000", input_tokens="1,500")]), "x.csv")
    assert report.ok and report.frame.iloc[0][["requests_per_day", "input_tokens"]].tolist() == [40.0, 1500.0]
    assert "Excel writes ',' between cells only where '.' is the decimal separator" in report.dialect


def test_a_decimal_choice_other_than_comma_or_point_is_refused():
    report = read_inventory(csv_bytes([row()]), "x.csv", decimal=";")
    assert report.error_lines() == ["file: the decimal separator must be ',' or '.', not ';'"]


def test_workbook_text_numbers_are_settled_but_typed_numbers_never_ambiguous():
    """A typed 40.125 is a number; the text '40.000' needs the book's own text cells (or a choice)."""
    typed = workbook({"S": [HEADER, book_row(1, requests_per_day=40.125)]})
    assert read_inventory(typed, "b.xlsx").frame.iloc[0]["requests_per_day"] == 40.125
    text = workbook({"S": [HEADER, book_row(1, requests_per_day="40.000", min_quality=0.5)]})
    report = read_inventory(text, "b.xlsx")
    assert report.needs_decimal  # the typed 0.5 says nothing about how text was typed
    assert read_inventory(text, "b.xlsx", decimal=",").frame.iloc[0]["requests_per_day"] == 40_000.0


# -- percentages -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "delimiter", "value"), [
    ("95%", ",", 0.95), ("95 %", ";", 0.95), ("12,5\u00a0%", ";", 0.125), ("12.5%", ",", 0.125), ("100%", ",", 1.0),
    ("0%", ";", 0.0), ("7.25%", ",", 0.0725),
])
def test_percentages_are_shares_exactly(text, delimiter, value):
    report = read_inventory(csv_bytes([row(min_quality=text, cached_input_share=text)], delimiter=delimiter), "x.csv")
    assert report.ok, report.error_lines()
    assert report.frame.iloc[0][["min_quality", "cached_input_share"]].tolist() == [value, value]


def test_percentages_in_a_workbook_and_out_of_range():
    data = workbook({"S": [HEADER, book_row(1, min_quality="95%", cached_input_share=0.3),
                           book_row(2, min_quality="120%")]})
    report = read_inventory(data, "b.xlsx")
    assert [(r[0], r[1], r[2]) for r in report.errors.itertuples(index=False)] == [(3, "min_quality", "120%")]
    fixed = read_inventory(workbook({"S": [HEADER, book_row(1, min_quality="95%")]}), "b.xlsx")
    assert fixed.frame.iloc[0]["min_quality"] == 0.95


def test_a_percentage_where_no_share_is_asked_is_refused_with_the_reason():
    report = read_inventory(csv_bytes([row(requests_per_day="95%")]), "x.csv")
    assert report.errors.loc[0, "problem"].startswith("a percentage is allowed only for shares")


# -- bounds from the model ------------------------------------------------------------------


@pytest.mark.parametrize("column", ["requests_per_day", "peak_factor", "input_tokens", "output_tokens",
                                    "latency_slo_ms"])
@pytest.mark.parametrize("text", ["1e25", "1e308", "1.7976931348623157e308"])
def test_absurd_numbers_are_refused_naming_row_and_column(column, text):
    report = read_inventory(csv_bytes([row(), row(workload_id="b", **{column: text})]), "x.csv")
    assert [(r[0], r[1], r[2]) for r in report.errors.itertuples(index=False)] == [(3, column, text)]
    assert report.errors.loc[0, "problem"] == f"out of range; allowed: {NUMBER_RULES[column].allowed}"


def test_every_numeric_column_has_an_upper_bound_from_the_model():
    from core.models import Workload

    for column, rule in NUMBER_RULES.items():
        assert rule.le is not None, column
        assert f"{rule.le:,.0f}" in rule.allowed or f"{rule.le:g}" in rule.allowed
        # The model refuses just above the bound, too: one source for both.
        assert not validate_frame(_one_row(column, rule.le * 1.5)).ok
        with pytest.raises(ValueError, match=column):
            rec = {**_valid(), column: rule.le * 1.5}
            if column == "batch_window_hours":
                del rec["latency_slo_ms"]
            Workload.model_validate(rec)


def _valid() -> dict[str, object]:
    return {"workload_id": "a", "name": "n", "requests_per_day": 1.0, "input_tokens": 1.0, "output_tokens": 1.0,
            "latency_slo_ms": 100.0, "data_policy": "owned_only", "task_class": "chat"}


def _one_row(column: str, value: float):
    import pandas as pd

    rec = _valid()
    if column == "batch_window_hours":
        rec["latency_slo_ms"] = None
    rec[column] = value
    return pd.DataFrame([rec])


# -- rows never lost ----------------------------------------------------------------------------


def test_a_workbook_whose_dimension_says_one_row_gives_every_row_and_warns():
    data = workbook({"S": [HEADER] + [book_row(i) for i in range(7)]})
    lying = _rewrite(data, lambda b: re.sub(rb'<dimension ref="[^"]*"/>', b'<dimension ref="A1:N1"/>', b))
    report = read_inventory(lying, "b.xlsx")
    assert report.ok and len(report.frame) == 7 and report.frame.index.tolist() == list(range(2, 9))
    assert any("says it ends at row 1" in w and "holds values up to row 8" in w for w in report.warnings)


def _rewrite(data: bytes, fn) -> bytes:
    zin = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zout:
        for item in zin.infolist():
            body = zin.read(item.filename)
            zout.writestr(item, fn(body) if item.filename.startswith("xl/worksheets/sheet") else body)
    return out.getvalue()


@pytest.mark.slow
def test_a_last_row_with_a_32_mb_cell_is_refused_not_dropped():
    data = csv_bytes([row(), row(workload_id="b"), row(workload_id="c", notes="x" * 32_000_000)])
    report = read_inventory(data, "x.csv")
    assert not report.ok
    assert report.error_lines() == [
        f"file: the row starting on line 4 holds a cell of more than 131,072 characters; the limit is "
        f"{MAX_CELL_CHARS:,} characters per cell (Excel's own limit)"]


def test_a_cell_over_excels_limit_is_an_error_on_its_row_and_column():
    report = read_inventory(csv_bytes([row(), row(workload_id="c", notes="x" * (MAX_CELL_CHARS + 1))]), "x.csv")
    assert [(r[0], r[1]) for r in report.errors.itertuples(index=False)] == [(3, "notes")]
    assert report.errors.loc[0, "problem"].startswith(f"cell of {MAX_CELL_CHARS + 1:,} characters")


def test_the_fast_reader_count_is_checked_against_the_careful_count(monkeypatch):
    """If DuckDB returned one row fewer than the records counted, the careful reader decides (same rows, same values)."""
    body = csv_bytes([row(), row(workload_id="b"), row(workload_id="c")])
    n_records, empty = inventory_files._record_layout(body)
    assert n_records == 4 and empty is None
    # One record more than DuckDB returns (as when it drops a row): the fast result is not used.
    assert inventory_files._read_csv_duckdb(body, None, HEADER, ",", 0, 1, lambda: (n_records + 1, empty)) is None
    real = inventory_files._read_csv_duckdb

    def count_one_more(*args):
        return real(*args[:6], lambda: (args[6]()[0] + 1, None))

    monkeypatch.setattr(inventory_files, "_read_csv_duckdb", count_one_more)
    report = read_inventory(csv_bytes([row(), row(workload_id="b"), row(workload_id="c")]), "x.csv")
    assert report.ok and report.frame["workload_id"].tolist() == ["wl-1", "b", "c"]


def test_a_file_ending_inside_an_open_quote_is_refused_naming_the_line():
    data = csv_bytes([row(), row(workload_id="b")]) + b'c,"Unfinished name,1000,3\r\n'
    assert read_inventory(data, "x.csv").error_lines() == [
        "file: the file ends inside a quoted cell: the quote opened in the row starting on line 4 is never closed; "
        "close it (or remove the stray \") and save again"]


def test_mixed_encodings_are_refused_naming_the_lines_never_mojibake():
    utf8 = csv_bytes([row(name="Überweisung")])
    cp1252_row = csv_bytes([row(workload_id="b", name="Überweisung")], encoding="cp1252").split(b"\r\n", 1)[1]
    report = read_inventory(utf8 + cp1252_row, "x.csv")
    assert report.error_lines() == ["file: mixed text encodings: line 2 is UTF-8 but line 3 is not (Windows-1252?); "
                                    "save the whole file again as 'CSV UTF-8'"]
    whole = read_inventory(csv_bytes([row(name="Überweisung")], encoding="cp1252"), "x.csv")
    assert whole.ok and whole.frame.iloc[0]["name"] == "Überweisung"


def test_cr_only_line_ends_of_excel_for_mac_are_read():
    data = csv_bytes([row(), row(workload_id="b", requests_per_day="7")], lineterminator="\r")
    report = read_inventory(data, "x.csv")
    assert report.ok and report.frame["requests_per_day"].tolist() == [1000.0, 7.0]
    assert report.frame.index.tolist() == [2, 3] and "line ends CR (Mac)" in report.dialect


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"])
def test_wide_encodings_with_or_without_bom_are_read(encoding):
    report = read_inventory(csv_bytes([row(name="Ünïcode €")], delimiter="\t", encoding=encoding), "x.txt")
    assert report.ok, report.error_lines()
    assert report.frame.iloc[0]["name"] == "Ünïcode €"


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32"])
def test_a_cut_wide_file_is_refused(encoding):
    data = csv_bytes([row()], delimiter="\t", encoding=encoding)[:-1]
    problem = read_inventory(data, "x.txt").errors.loc[0, "problem"]
    assert "is not a multiple of" in problem and "cut off or damaged" in problem


@pytest.mark.parametrize("seed", range(5))
def test_random_bytes_are_refused_in_one_line(seed):
    import random

    rng = random.Random(seed)
    data = bytes(rng.getrandbits(8) for _ in range(3000))
    for name in ("x.csv", "x.xlsx", "x"):
        report = read_inventory(data, name)
        assert not report.ok and len(report.error_lines()) == 1 and report.errors.loc[0, "row"] == 0


def test_the_row_limit_refuses_a_larger_upload(monkeypatch):
    monkeypatch.setattr(inventory_files, "MAX_ROWS", 3)
    report = read_inventory(csv_bytes([row(workload_id=str(i)) for i in range(4)]), "x.csv")
    assert report.error_lines() == ["file: the file has 4 rows below the header; one inventory may hold at most "
                                    "3 workloads (HANGOVER_MAX_ROWS sets this limit): split it"]
    assert read_inventory(csv_bytes([row(workload_id=str(i)) for i in range(3)]), "x.csv").ok
    book = workbook({"S": [HEADER] + [book_row(i) for i in range(60)]})
    assert "has more than 3 rows" in read_inventory(book, "b.xlsx").errors.loc[0, "problem"]


@pytest.mark.slow
def test_ten_thousand_columns_give_a_bounded_report():
    header = HEADER + [f"extra {i}" for i in range(10_000)]
    rows = [dict(row(workload_id=str(i), requests_per_day="x"), **{f"extra {j}": "v" for j in range(10_000)})
            for i in range(3)]
    report = read_inventory(csv_bytes(rows, header=header), "x.csv")
    text = "\n".join(report.error_lines() + report.warnings)
    assert len(text) < 5_000 and "and 9990 more" in text
    many = [row(workload_id=str(i), requests_per_day="x", input_tokens="y") for i in range(600)]
    report = read_inventory(csv_bytes(many), "x.csv")
    assert report.error_count == 1200 and len(report.errors) == MAX_LISTED_ERRORS
    assert report.error_lines()[-1].startswith(f"... and {1200 - MAX_LISTED_ERRORS:,} more error(s) not listed")


# -- workbooks as finance keeps them (issue 14) --------------------------------------------------


def test_cover_sheet_and_title_rows_are_passed_over_and_the_report_says_where_it_read():
    data = workbook({"Cover": [["Q3 GPU plan"], ["prepared by finance"]],
                     "Inventory": [["Workload inventory, Q3"], [], HEADER, book_row(1), book_row(2)]})
    report = read_inventory(data, "b.xlsx")
    assert report.ok and report.frame.index.tolist() == [4, 5]
    assert (report.sheet, report.sheets, report.header_row) == ("Inventory", ("Inventory",), 3)
    assert report.dialect.startswith("XLSX, sheet 'Inventory', header on row 3")
    assert "read sheet 'Inventory': its header names the inventory columns (the first sheet, 'Cover', does not)" \
        in report.warnings
    assert "header found on row 3; the 2 row(s) above it (titles or blank) were skipped" in report.warnings


def test_several_inventory_sheets_are_reported_for_a_choice():
    data = workbook({"Q2": [HEADER, book_row(1)], "Q3": [["Q3"], HEADER, book_row(2), book_row(3)]})
    report = read_inventory(data, "b.xlsx")
    assert report.sheet == "Q2" and report.sheets == ("Q2", "Q3")
    assert any(w.startswith("several sheets hold an inventory header; read 'Q2'") for w in report.warnings)
    chosen = read_inventory(data, "b.xlsx", sheet="Q3")
    assert chosen.sheet == "Q3" and chosen.frame["workload_id"].tolist() == ["w2", "w3"]
    assert chosen.frame.index.tolist() == [3, 4]


def test_csv_title_rows_are_passed_over():
    data = b"Workload inventory Q3;;\r\n\r\n" + csv_bytes([row(), row(workload_id="b")], delimiter=";")
    report = read_inventory(data, "x.csv")
    assert report.ok and report.frame.index.tolist() == [4, 5] and report.header_row == 3


def test_the_cli_imports_a_finance_workbook_without_sheet(tmp_path, capsys):
    path = tmp_path / "plan.xlsx"
    path.write_bytes(workbook({"Cover": [["Q3 GPU plan"]], "Inventory": [["Workloads"], HEADER, book_row(1)]}))
    code = main(["--db", str(tmp_path / "t.duckdb"), "workloads", "import", str(path)])
    out = capsys.readouterr().out
    assert code == 0 and out.splitlines()[-1] == "committed version 1: 1 workloads from plan.xlsx"
    assert out.splitlines()[0] == "plan.xlsx: XLSX, sheet 'Inventory', header on row 2"


def test_the_cli_asks_for_the_decimal_and_takes_it(tmp_path, capsys):
    path = tmp_path / "de.csv"
    path.write_bytes(csv_bytes([row(requests_per_day="40.000")], delimiter=";"))
    db = str(tmp_path / "t.duckdb")
    assert main(["--db", db, "workloads", "import", str(path)]) == 2
    err = capsys.readouterr().err
    assert "ambiguous number: 40,000" in err and "run again with --decimal , or --decimal ." in err
    assert main(["--db", db, "workloads", "import", str(path), "--decimal", ","]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "committed version 1: 1 workloads from de.csv"


def test_template_still_reads_back_with_its_columns_sheet_left_alone():
    report = read_inventory(template_bytes("xlsx"), "t.xlsx")
    assert report.ok and report.sheet == "Workloads" and report.sheets == ("Workloads",)
    assert not math.isnan(report.frame["requests_per_day"].iloc[0])


def test_a_typed_number_stays_exact_beside_a_bad_text_cell_in_its_column():
    """The column's one-shot cast fails on 'abc'; the typed 40.125 must still never count as ambiguous."""
    data = workbook({"S": [HEADER, book_row(1, requests_per_day=40.125), book_row(2, requests_per_day="abc")]})
    report = read_inventory(data, "b.xlsx")
    assert not report.needs_decimal
    assert [(r[0], r[1], r[2]) for r in report.errors.itertuples(index=False)] == [(3, "requests_per_day", "abc")]


# -- workbooks read by calamine (issue 16: a 100k-row workbook took 21 s through openpyxl) ---------


def test_formula_error_cells_are_read_as_their_text_never_as_blank():
    """calamine reads #N/A as blank: an optional column would quietly take its default. They are put back."""
    buf = io.BytesIO()
    wb = xlsxwriter.Workbook(buf, {"in_memory": True})
    ws = wb.add_worksheet("S")
    for j, c in enumerate(HEADER):
        ws.write_string(0, j, c)
    for i in (1, 2):
        for j, v in enumerate(book_row(i)):
            if isinstance(v, str):
                ws.write_string(i, j, v)
            elif v is not None:
                ws.write_number(i, j, v)
    ws.write_formula(1, HEADER.index("min_quality"), "=NA()", None, "#N/A")
    ws.write_formula(2, HEADER.index("name"), "=1/0", None, "#DIV/0!")
    wb.close()
    report = read_inventory(buf.getvalue(), "b.xlsx")
    assert [(r[0], r[1], r[2]) for r in report.errors.itertuples(index=False)] == [(2, "min_quality", "#N/A")]
    assert report.errors.loc[0, "problem"].startswith("not a number")


def test_workbook_cells_at_excels_limit_pass_and_formula_text_is_kept_and_flagged():
    at_limit = "x" * MAX_CELL_CHARS
    data = workbook({"S": [HEADER, book_row(1, notes=at_limit, name="=cmd|' /C calc'!A0"), book_row(2)]})
    report = read_inventory(data, "b.xlsx")
    assert report.ok, report.error_lines()
    assert report.frame.loc[2, "notes"] == at_limit and report.frame.loc[2, "name"] == "=cmd|' /C calc'!A0"
    assert any(w.startswith("row 2, column 'name':") and "formula" in w for w in report.warnings)
    # xlsxwriter (like Excel) will not write a longer cell: lengthen it in the shared strings afterwards.
    book = workbook({"S": [HEADER, book_row(1, notes="y" * MAX_CELL_CHARS)]})
    zin, out = zipfile.ZipFile(io.BytesIO(book)), io.BytesIO()
    with zipfile.ZipFile(out, "w") as zout:
        for item in zin.infolist():
            body = zin.read(item.filename)
            zout.writestr(item, body.replace(b"y" * MAX_CELL_CHARS, b"y" * (MAX_CELL_CHARS + 1)))
    report = read_inventory(out.getvalue(), "b.xlsx")
    assert [(r[0], r[1]) for r in report.errors.itertuples(index=False)] == [(2, "notes")]
    assert f"the limit is {MAX_CELL_CHARS:,}" in report.errors.loc[0, "problem"]


def test_workbook_numbers_text_and_other_cells_read_as_openpyxl_read_them():
    """Whole numbers as integers, fractions exactly, booleans TRUE/FALSE, dates ISO; typed numbers never ambiguous."""
    import datetime as dt

    buf = io.BytesIO()
    wb = xlsxwriter.Workbook(buf, {"in_memory": True})
    ws = wb.add_worksheet("S")
    for j, c in enumerate(HEADER):
        ws.write_string(0, j, c)
    values = [1000, 40.125, 1e-5, 2.5e9, 1 / 3]
    for i, v in enumerate(values, start=1):
        for j, cell in enumerate(book_row(i)):
            if isinstance(cell, str):
                ws.write_string(i, j, cell)
            elif cell is not None:
                ws.write_number(i, j, cell)
        ws.write_number(i, HEADER.index("requests_per_day"), v)
    ws.write_boolean(1, HEADER.index("notes"), True)
    ws.write_datetime(2, HEADER.index("notes"), dt.datetime(2026, 1, 2), wb.add_format({"num_format": "yyyy-mm-dd"}))
    wb.close()
    report = read_inventory(buf.getvalue(), "b.xlsx")
    assert report.ok, report.error_lines()
    assert report.frame["requests_per_day"].tolist() == values
    assert report.frame["notes"].tolist()[:2] == ["TRUE", "2026-01-02"]


def test_the_row_limit_is_configured_in_the_environment():
    from core.inventory.columns import DEFAULT_MAX_ROWS, configured_max_rows

    assert configured_max_rows({}) == DEFAULT_MAX_ROWS == 2_000_000
    assert configured_max_rows({"HANGOVER_MAX_ROWS": "500,000"}) == 500_000
    assert configured_max_rows({"HANGOVER_MAX_ROWS": "250_000"}) == 250_000
    # Nonsense, zero, or more than the default (the memory bound is measured at 2M) keep the default.
    for bad in ("", "lots", "-5", "0", "3e6", "5000000"):
        assert configured_max_rows({"HANGOVER_MAX_ROWS": bad}) == DEFAULT_MAX_ROWS


def test_the_progress_callback_hears_the_read_and_the_check():
    seen: list[tuple[float, str]] = []
    report = read_inventory(csv_bytes([row(), row(workload_id="b")]), "x.csv",
                            progress=lambda f, what: seen.append((f, what)))
    assert report.ok
    assert [f for f, _ in seen] == [0.0, 0.6, 1.0]
    assert seen[0][1].startswith("reading x.csv (") and seen[-1][1] == "checked 2 rows"
    seen.clear()
    assert not read_inventory(b"", "x.csv", progress=lambda f, what: seen.append((f, what))).ok
    assert seen[-1] == (1.0, "the file cannot be read")
