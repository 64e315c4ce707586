"""The inventory template: the contract's columns with one example row per task class, as CSV or XLSX."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from core.errors import InputError
from core.inventory.columns import COLUMN_HELP, COLUMNS, ENUM_VALUES, EXAMPLE_ROWS, NUMBER_RULES


def template_bytes(fmt: str) -> bytes:
    """The inventory template as 'csv' (UTF-8 with BOM, so Excel shows accents) or 'xlsx' bytes."""
    fmt = fmt.lower().lstrip(".")
    if fmt == "csv":
        out = io.StringIO()
        w = csv.writer(out)
        w.writerow(COLUMNS)
        for r in EXAMPLE_ROWS:
            w.writerow(["" if r.get(c) is None else r.get(c) for c in COLUMNS])
        return out.getvalue().encode("utf-8-sig")
    if fmt == "xlsx":
        return _template_xlsx()
    raise ValueError(f"template format must be 'csv' or 'xlsx', not {fmt!r}")


def write_template(path: str | Path) -> Path:
    """Write the template; the format follows the suffix (.csv or .xlsx)."""
    p = Path(path)
    suffix = p.suffix.lower().lstrip(".")
    if suffix not in ("csv", "xlsx"):
        raise InputError(f"template file must end in .csv or .xlsx, not {p.name!r}")
    p.write_bytes(template_bytes(suffix))
    return p


def _template_xlsx() -> bytes:
    import xlsxwriter

    buf = io.BytesIO()
    wb = xlsxwriter.Workbook(buf, {"in_memory": True, "strings_to_numbers": False, "strings_to_formulas": False})
    bold = wb.add_format({"bold": True, "bg_color": "#DDE5F0", "border": 1})
    wrap = wb.add_format({"text_wrap": True, "valign": "top"})
    ws = wb.add_worksheet("Workloads")
    for j, c in enumerate(COLUMNS):
        ws.write_string(0, j, c, bold)
        ws.set_column(j, j, max(12, len(c) + 2))
    for i, r in enumerate(EXAMPLE_ROWS, start=1):
        for j, c in enumerate(COLUMNS):
            v = r.get(c)
            if v is None:
                continue
            if isinstance(v, int | float):
                ws.write_number(i, j, v)
            else:
                ws.write_string(i, j, str(v))
    ws.freeze_panes(1, 0)
    for c, allowed in ENUM_VALUES.items():
        j = COLUMNS.index(c)
        ws.data_validation(1, j, 100_000, j, {"validate": "list", "source": list(allowed)})
    info = wb.add_worksheet("Columns")
    for j, h in enumerate(("column", "required", "allowed", "meaning")):
        info.write_string(0, j, h, bold)
    for i, c in enumerate(COLUMNS, start=1):
        need, meaning = COLUMN_HELP[c]
        if c in NUMBER_RULES:
            allowed_text = NUMBER_RULES[c].allowed
        elif c in ENUM_VALUES:
            allowed_text = " | ".join(ENUM_VALUES[c])
        else:
            allowed_text = "text"
        info.write_string(i, 0, c)
        info.write_string(i, 1, need)
        info.write_string(i, 2, allowed_text, wrap)
        info.write_string(i, 3, meaning, wrap)
    note_row = len(COLUMNS) + 2
    info.write_string(note_row, 0, "Rules", bold)
    for k, line in enumerate((
        "Column names are matched ignoring case and spaces; unknown columns are kept in notes.",
        "Give exactly one of latency_slo_ms (interactive work) or batch_window_hours (offline work) per row.",
        "A file with any error commits nothing; the report lists every bad cell with its row and column.",
        "Each upload becomes a new inventory version; older versions can be listed, compared and restored.",
    ), start=1):
        info.write_string(note_row + k, 0, line)
    info.set_column(0, 0, 22)
    info.set_column(1, 1, 14)
    info.set_column(2, 2, 45)
    info.set_column(3, 3, 80)
    wb.close()
    return buf.getvalue()
