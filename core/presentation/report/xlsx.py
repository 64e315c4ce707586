"""The procurement workbook: Summary, Workloads, Fleet, Assumptions, Sensitivity, Purchase, What to buy and Showback
sheets (xlsxwriter)."""

from __future__ import annotations

import datetime as dt
import io

import xlsxwriter

from core.presentation import palette
from core.presentation.report.charts import COLORS
from core.presentation.report.content import (
    ProcurementSummary,
    Table,
    changes_table,
    headline_table,
)
from core.presentation.report.numbers import FORMATS, excel_format, fmt, is_missing

# Never let a cell's text turn into a formula, link or number: user text (workload names, notes,
# sources) is written as the literal string it is (issue 7; OWASP "CSV injection").
WORKBOOK_OPTIONS = {
    "in_memory": True,
    "strings_to_formulas": False,
    "strings_to_urls": False,
    "strings_to_numbers": False,
}
MAX_CELL_TEXT = 32_767  # Excel's limit per cell
TABLE_STYLE = "Table Style Light 9"
# Summary tables are stacked on one sheet and share its columns: label, money, wide text, small figures.
SUMMARY_WIDTHS = [46, 16, 64, 16, 14, 18, 16, 16]


class _Styles:
    """Cell formats, made once per workbook (xlsxwriter keeps every format object it is given)."""

    def __init__(self, wb: xlsxwriter.Workbook):
        self.wb = wb
        self._cache: dict[tuple, object] = {}
        self.title = wb.add_format({"bold": True, "font_size": 14})
        self.subtitle = wb.add_format({"font_color": palette.INK})
        self.section = wb.add_format({"bold": True, "font_size": 12})
        self.note = wb.add_format({"italic": True, "font_color": palette.MUTED})
        self.header = wb.add_format({"bold": True, "text_wrap": True, "valign": "top"})

    def cell(self, kind: str, wrap: bool = False, value=None):
        # A per-request cost or token price gets its own places (format.money's rule), so the cell
        # reads as the HTML and Markdown do; every other kind has one code per column.
        code = excel_format(kind, value if kind == "usd_price" else None) if kind != "text" else None
        key = (kind, wrap, code)
        if key not in self._cache:
            props: dict[str, object] = {"valign": "top"}
            if code is not None:
                props["num_format"] = code
            if wrap:
                props["text_wrap"] = True
            self._cache[key] = self.wb.add_format(props)
        return self._cache[key]


def _write_cell(ws, styles: _Styles, row: int, col: int, value, kind: str, wrap: bool) -> None:
    style = styles.cell(kind, wrap, value)
    if is_missing(value):
        ws.write_blank(row, col, None, style)
    elif isinstance(value, str) or kind == "text":
        ws.write_string(row, col, str(value)[:MAX_CELL_TEXT], styles.cell("text", wrap))
    elif kind == "date":
        ws.write_datetime(row, col, value, style)
    else:
        ws.write_number(row, col, float(value), style)


def _fit_width(table: Table, ci: int) -> float:
    col = table.columns[ci]
    if col.width:
        return col.width
    longest_word = max((len(w) for w in col.header.split()), default=4)
    texts = [fmt(r.get(col.key), table.kind_of(r, col)) for r in table.rows]
    return min(max([len(t) for t in texts] + [longest_word, 8]) + 2, 60)


def write_table(ws, styles: _Styles, table: Table, top: int, left: int = 0, *, titled: bool = True) -> int:
    """Title, note and an Excel table (filters on) from row `top`; returns the header row index."""
    r = top
    if titled:
        ws.write_string(r, left, table.title, styles.section)
        r += 1
        if table.note:
            ws.write_string(r, left, table.note, styles.note)
            r += 1
    header = r
    rows = table.rows or [{table.columns[0].key: "(none)"}]
    last = header + len(rows)
    ws.add_table(header, left, last, left + len(table.columns) - 1, {
        "name": table.name, "style": TABLE_STYLE, "autofilter": True,
        "columns": [{"header": c.header, "header_format": styles.header} for c in table.columns],
    })
    for i, row in enumerate(rows, start=1):
        for j, col in enumerate(table.columns):
            _write_cell(ws, styles, header + i, left + j, row.get(col.key), table.kind_of(row, col), col.wrap)
    return header


def _set_widths(ws, table: Table, left: int = 0) -> None:
    for j in range(len(table.columns)):
        ws.set_column(left + j, left + j, _fit_width(table, j))


def _print_setup(ws, header_row: int) -> None:
    ws.set_landscape()
    ws.fit_to_pages(1, 0)  # one page wide, as many tall as it takes
    ws.repeat_rows(header_row)


def _sheet_with_table(wb, styles: _Styles, name: str, table: Table, summary: ProcurementSummary,
                      freeze_cols: int = 0):
    ws = wb.add_worksheet(name)
    ws.write_string(0, 0, f"{table.title} — {summary.title}", styles.title)
    ws.write_string(1, 0, f"{table.note} Generated {summary.generated_text}; inventory: {summary.inventory}.",
                    styles.note)
    header = write_table(ws, styles, table, 2, titled=False)
    _set_widths(ws, table)
    ws.freeze_panes(header + 1, freeze_cols)
    _print_setup(ws, header)
    return ws, header


def _summary_sheet(wb, styles: _Styles, s: ProcurementSummary) -> None:
    ws = wb.add_worksheet("Summary")
    for j, w in enumerate(SUMMARY_WIDTHS):
        ws.set_column(j, j, w)
    ws.write_string(0, 0, s.title, styles.title)
    ws.write_string(1, 0, f"Generated {s.generated_text} · inventory: {s.inventory} · {s.workload_count} workloads",
                    styles.subtitle)
    ws.write_string(2, 0, f"Scenario: {s.scenario_line}", styles.subtitle)
    ws.write_string(3, 0, s.estimates_note, styles.note)
    ws.freeze_panes(4, 0)  # the title block stays in view; each table below has its own header
    r = 5
    first_header = None
    for table in (headline_table(s), changes_table(s), s.cost_by_route, s.options):
        header = write_table(ws, styles, table, r)
        first_header = first_header if first_header is not None else header
        if table is s.cost_by_route:
            route_rows = (header + 1, header + max(len(table.rows), 1))
        r = header + max(len(table.rows), 1) + 2
    _print_setup(ws, 3)

    chart = wb.add_chart({"type": "bar"})
    first, last = route_rows
    colors = [COLORS["api"] if row["hosting"] == "api" else COLORS["unallocated"] if not row["architecture"]
              else COLORS["owned"] for row in s.cost_by_route.rows]
    chart.add_series({
        "name": "Monthly cost",
        "categories": ["Summary", first, 0, last, 0],
        "values": ["Summary", first, 1, last, 1],
        "points": [{"fill": {"color": c}} for c in colors],
        "data_labels": {"value": True, "num_format": FORMATS["usd"].excel},
    })
    words = palette.COLOR_WORDS
    chart.set_title({"name": f"Monthly cost by route ({words['owned']} owned, {words['api']} API, "
                             f"{words['unallocated']} unallocated)",
                     "name_font": {"size": 11}})
    chart.set_x_axis({"num_format": FORMATS["usd"].excel, "major_gridlines": {"visible": True}})
    chart.set_y_axis({"reverse": True})  # the table's order, largest first, top to bottom
    chart.set_legend({"none": True})
    chart.set_size({"width": 720, "height": 140 + 36 * max(len(s.cost_by_route.rows), 1)})
    # Beside the headline (which uses columns A-C only); fixed size, so taller wrapped rows never stretch it
    # over the tables below that use the further columns.
    ws.insert_chart(first_header, 3, chart, {"x_offset": 12, "object_position": 3})


def _fleet_sheet(wb, styles: _Styles, s: ProcurementSummary) -> None:
    ws = wb.add_worksheet("Fleet")
    ws.write_string(0, 0, f"Fleet — {s.title}", styles.title)
    ws.write_string(1, 0, f"{s.fleet_routes.note} {s.hourly.note}", styles.note)
    header = write_table(ws, styles, s.fleet_routes, 2, titled=False)
    _set_widths(ws, s.fleet_routes)
    left = len(s.fleet_routes.columns) + 1
    write_table(ws, styles, s.hourly, 2, left, titled=False)
    _set_widths(ws, s.hourly, left)
    ws.freeze_panes(header + 1, 0)
    _print_setup(ws, header)

    chart = wb.add_chart({"type": "column", "subtype": "stacked"})
    first, last = header + 1, header + len(s.hourly.rows)
    cats = ["Fleet", first, left, last, left]
    chart.add_series({"name": "Interactive", "categories": cats, "values": ["Fleet", first, left + 1, last, left + 1],
                      "fill": {"color": COLORS["interactive"]}, "gap": 30})
    chart.add_series({"name": "Batch fill", "categories": cats, "values": ["Fleet", first, left + 2, last, left + 2],
                      "fill": {"color": COLORS["batch"]}})
    chart.set_title({"name": "Utilization by hour: interactive and with batch fill (estimate)",
                     "name_font": {"size": 11}})
    chart.set_y_axis({"num_format": FORMATS["pct"].excel, "max": 1, "min": 0})
    chart.set_size({"width": 720, "height": 320})
    ws.insert_chart(header + max(len(s.fleet_routes.rows), 1) + 3, 0, chart)


def build_workbook_bytes(s: ProcurementSummary) -> bytes:
    """Write the workbook (six sheets with the staged purchase) for a summary and return the .xlsx bytes."""
    buf = io.BytesIO()
    wb = xlsxwriter.Workbook(buf, WORKBOOK_OPTIONS)
    created = s.generated.astimezone(dt.UTC).replace(tzinfo=None)
    wb.set_properties({"title": s.title, "subject": "Procurement summary", "author": "GPU Hangover",
                       "comments": f"Generated {s.generated_text}; inventory: {s.inventory}", "created": created})
    styles = _Styles(wb)
    _summary_sheet(wb, styles, s)
    _sheet_with_table(wb, styles, "Workloads", s.workloads, s, freeze_cols=1)
    _fleet_sheet(wb, styles, s)
    _sheet_with_table(wb, styles, "Assumptions", s.assumptions, s)
    _sheet_with_table(wb, styles, "Sensitivity", s.sensitivity, s)
    if s.purchase is not None:
        _sheet_with_table(wb, styles, "Purchase", s.purchase, s)
    if "buy_sheet" in s.extras:
        buy_sheet(wb, styles, s)
    if s.showback is not None:
        showback_sheet(wb, styles, s.showback, f"Generated {s.generated_text}")
    wb.close()
    return buf.getvalue()


def buy_sheet(wb, styles: _Styles, s: ProcurementSummary) -> None:
    """The What to buy sheet (a mixed scenario): the choices side by side in money formats, the source line under
    the table."""
    ws, header = _sheet_with_table(wb, styles, "What to buy", s.extras["buy_sheet"], s, freeze_cols=1)
    ws.write_string(header + max(len(s.extras["buy_sheet"].rows), 1) + 2, 0, f"Source: {s.extras['buy_source']}.",
                    styles.note)


def showback_sheet(wb, styles: _Styles, sb, generated: str) -> None:
    """The Showback sheet as a controller reads it: title, how the idle is keyed, one row per group in money
    formats, a bold totals row under a rule (values, not formulas: the workbook holds no formula anywhere), and
    the source line under the table."""
    from core.presentation.report.showback import showback_table, showback_totals

    table = showback_table(sb)
    ws = wb.add_worksheet("Showback")
    ws.write_string(0, 0, f"{table.title} — monthly cash bill {fmt(sb.total_monthly_usd, 'usd_2')}", styles.title)
    ws.write_string(1, 0, f"{table.note} {generated}; inventory: {sb.inventory}.", styles.note)
    header = write_table(ws, styles, table, 3, titled=False)
    total = header + max(len(table.rows), 1) + 1
    totals = showback_totals(sb)
    for j, c in enumerate(table.columns):
        code = excel_format(c.kind, totals[c.key] if c.kind == "usd_price" else None) if c.kind != "text" else None
        style = styles.wb.add_format({"bold": True, "top": 2, "valign": "top", **({"num_format": code} if code else {})})
        value = totals[c.key]
        if is_missing(value):
            ws.write_blank(total, j, None, style)
        elif isinstance(value, str):
            ws.write_string(total, j, value, style)
        else:
            ws.write_number(total, j, float(value), style)
    ws.write_string(total + 2, 0, f"Source: {sb.source}.", styles.note)
    ws.write_string(total + 3, 0, "API $: the cheapest API each workload may use (data policy, quality floor, latency "
                                  "target); blank where none may. Internal − API compares only those workloads.",
                    styles.note)
    _set_widths(ws, table)
    ws.freeze_panes(header + 1, 1)
    _print_setup(ws, header)


def build_showback_workbook_bytes(sb, generated: str) -> bytes:
    """A workbook holding the Showback sheet alone (`hangover showback --format xlsx`)."""
    buf = io.BytesIO()
    wb = xlsxwriter.Workbook(buf, WORKBOOK_OPTIONS)
    wb.set_properties({"title": f"Showback by {sb.by}", "author": "GPU Hangover", "comments": sb.source})
    showback_sheet(wb, _Styles(wb), sb, generated)
    wb.close()
    return buf.getvalue()
