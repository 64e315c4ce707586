"""The HTML one-pager: headline, changes, two Plotly charts and the routing table, self-contained and printable."""

from __future__ import annotations

import html

from core.presentation import palette
from core.presentation.format import duration_h, duration_ms
from core.presentation.report.charts import COLORS, cost_by_route_figure, hourly_utilization_figure
from core.presentation.report.content import (
    CHANGES_NOTE,
    ProcurementSummary,
    Table,
    api_prices_table,
    engine_rows,
    headline_table,
    stacks_table,
)
from core.presentation.report.numbers import NUMERIC_KINDS, fmt
from core.textsafety import neutralise

# The one-pager lists the costliest workloads; the workbook always has all of them.
MAX_ROUTING_ROWS = 30

# Page width is the printable width of A4 (210 mm - 2 x 12 mm); Letter is wider, so both print uncut.
ROOT_CSS = (f":root {{ --ink: {palette.INK}; --muted: {palette.MUTED}; --line: {palette.LINE}; "
            f"--surface: {palette.SURFACE}; --owned: {COLORS['owned']}; --api: {COLORS['api']}; }}")
CSS = ROOT_CSS + """
* { box-sizing: border-box; }
html { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
       color: var(--ink); margin: 0 auto; padding: 10mm 0; max-width: 186mm; font-size: 10pt; line-height: 1.35; }
h1 { font-size: 17pt; margin: 0 0 1.5mm; }
h2 { font-size: 12pt; margin: 6mm 0 2mm; padding-bottom: 1mm; border-bottom: 1px solid var(--line);
     break-after: avoid; page-break-after: avoid; }
p { margin: 1mm 0; }
.meta { color: var(--muted); font-size: 9pt; }
.note { color: var(--muted); font-size: 8.5pt; font-style: italic; }
table { width: 100%; border-collapse: collapse; table-layout: fixed; font-size: 8.5pt; margin: 1mm 0 2mm; }
th, td { border-bottom: 1px solid var(--line); padding: 1mm 1.2mm; text-align: left; vertical-align: top;
         overflow-wrap: break-word; word-wrap: break-word; hyphens: auto; }
th { font-weight: 600; background: var(--surface); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
thead { display: table-header-group; }
tr, tbody.workload { break-inside: avoid; page-break-inside: avoid; }
tbody.workload td { border-bottom: none; }
tbody.workload tr.why td { border-bottom: 1px solid var(--line); color: var(--muted); font-size: 8pt;
                           padding-top: 0; }
ol.changes { margin: 1mm 0; padding-left: 6mm; }
ol.changes li { margin-bottom: 1mm; break-inside: avoid; page-break-inside: avoid; }
.chart { margin: 2mm 0; break-inside: avoid; page-break-inside: avoid; }
.estimate { color: var(--muted); font-size: 8pt; }
footer { margin-top: 6mm; border-top: 1px solid var(--line); padding-top: 2mm; }
@page { margin: 12mm; }
@media print {
  body { padding: 0; max-width: none; }
  h2 { margin-top: 4mm; }
  .modebar-container { display: none !important; }
}
"""


def esc(value) -> str:
    """Text for HTML: formula-like text gets its quote (it may be pasted into a spreadsheet), then escaped."""
    return html.escape(neutralise(str(value)), quote=True)


def _cell(table: Table, row: dict, key: str) -> str:
    col = table.column(key)
    kind = table.kind_of(row, col)
    value = row.get(key)
    if kind in NUMERIC_KINDS and not isinstance(value, str):
        return f'<td class="num">{html.escape(fmt(value, kind))}</td>'
    return f"<td>{esc(fmt(value, kind))}</td>"


def render_table(table: Table, keys: list[str], widths: list[int], *, caption_note: bool = False,
                 rows: list[dict] | None = None) -> str:
    """An HTML table of the chosen columns; widths are percentages (fixed layout: long text wraps, never overflows)."""
    cols = [table.column(k) for k in keys]
    out = ["<table>", "<colgroup>" + "".join(f'<col style="width:{w}%">' for w in widths) + "</colgroup>",
           "<thead><tr>"]
    for c in cols:
        cls = ' class="num"' if c.kind in NUMERIC_KINDS or c.kind == "mixed" else ""
        out.append(f"<th{cls}>{esc(c.header)}</th>")
    out.append("</tr></thead><tbody>")
    for row in table.rows if rows is None else rows:
        out.append("<tr>" + "".join(_cell(table, row, k) for k in keys) + "</tr>")
    out.append("</tbody></table>")
    if caption_note and table.note:
        out.append(f'<p class="note">{esc(table.note)}</p>')
    return "".join(out)


def _routing(s: ProcurementSummary) -> str:
    t = s.workloads
    rows = t.rows
    note = ""
    if len(rows) > MAX_ROUTING_ROWS:
        rows = sorted(rows, key=lambda r: -(r["monthly_usd"] if r["monthly_usd"] == r["monthly_usd"] else 0))
        rows = rows[:MAX_ROUTING_ROWS]
        note = (f'<p class="note">The {MAX_ROUTING_ROWS} costliest of {len(t.rows)} workloads; '
                "the workbook lists every one.</p>")
    widths = [20, 17, 25, 10, 9, 11, 8]
    out = ["<table>", "<colgroup>" + "".join(f'<col style="width:{w}%">' for w in widths) + "</colgroup>",
           "<thead><tr><th>Workload</th><th>Demand</th><th>Verdict</th><th class=\"num\">$/month</th>"
           "<th class=\"num\">$/M output tokens</th><th class=\"num\">p95 latency</th>"
           "<th class=\"num\">Nodes (alone)</th></tr></thead>"]
    for r in rows:
        if r["interactive"]:
            demand = f"{fmt(r['requests_per_day'], 'int')} requests/day; p95 target {duration_ms(r['latency_slo_ms'])}"
        else:
            demand = (f"{fmt(r['requests_per_day'], 'int')} requests/day; "
                      f"{duration_h(r['batch_window_hours'])} batch window")
        where = r["route"] if r["hosting"] != "owned" else f"{r['route']} (owned {r['architecture']})"
        p95 = duration_ms(r["p95_latency_ms"])
        out.append(
            '<tbody class="workload"><tr>'
            f"<td><strong>{esc(r['workload_id'])}</strong><br>{esc(r['name'])}</td>"
            f"<td>{esc(demand)}<br><span class=\"estimate\">{esc(r['task_class'])} · {esc(r['data_policy'])}</span></td>"
            f"<td>{esc(where)}<br><span class=\"estimate\">latency {esc(r['latency_basis'])}</span></td>"
            f'<td class="num">{html.escape(fmt(r["monthly_usd"], "usd"))}</td>'
            f'<td class="num">{html.escape(fmt(r["usd_per_mtok_out"], "usd_2"))}</td>'
            f'<td class="num">{html.escape(p95)}</td>'
            f'<td class="num">{html.escape(fmt(r["nodes"], "int"))}</td>'
            f'</tr><tr class="why"><td colspan="7">{esc(r["reasons"])}</td></tr></tbody>'
        )
    out.append("</table>")
    return "".join(out) + note + f'<p class="note">{esc(t.note)}</p>'


def _charts(s: ProcurementSummary) -> tuple[str, str]:
    rows = s.cost_by_route.rows
    cost = cost_by_route_figure(
        routes=[r["route"] for r in rows], monthly_usd=[r["monthly_usd"] for r in rows],
        groups=["api" if r["hosting"] == "api" else "owned" if r["architecture"] else "unallocated" for r in rows])
    hours = s.hourly.rows
    util = hourly_utilization_figure(hours=[r["hour"] for r in hours], interactive=[r["without_batch"] for r in hours],
                                     with_batch=[r["with_batch"] for r in hours])
    config = {"displayModeBar": False, "responsive": False}
    # plotly.js goes inline once, with the first chart, so the file opens offline.
    first = cost.to_html(full_html=False, include_plotlyjs=True, config=config, div_id="chart-cost-by-route")
    second = util.to_html(full_html=False, include_plotlyjs=False, config=config, div_id="chart-hourly-utilization")
    return first, second


def build_html_text(s: ProcurementSummary) -> str:
    """The whole one-pager as one HTML document (plotly.js inline, no external files, fonts or scripts)."""
    cost_chart, util_chart = _charts(s)
    head = headline_table(s)
    changes = "".join(f"<li>{esc(c.text)}</li>" for c in s.changes) or "<li>No change: the owned fleet matches the need.</li>"
    node = next(r for r in s.assumptions.rows if r["section"] == "Node price")
    engine = "; ".join(f"{r['figure']}: {fmt(r['value'], r['value:kind'])}" for r in engine_rows(s))
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(s.title)}</title>",
        f'<meta name="generator" content="GPU Hangover"><meta name="date" content="{esc(s.generated.isoformat())}">',
        f"<style>{CSS}</style></head><body>",
        f"<header><h1>{esc(s.title)}</h1>",
        f'<p class="meta">Generated {esc(s.generated_text)} · inventory: {esc(s.inventory)} · '
        f"{s.workload_count} workloads</p>",
        f'<p class="meta">Scenario: {esc(s.scenario_line)}</p></header>',
        "<h2>Headline</h2>",
        render_table(head, ["figure", "value", "note"], [34, 13, 53]),
        "<h2>Recommended changes</h2>",
        f'<ol class="changes">{changes}</ol>',
        f'<p class="note">{esc(CHANGES_NOTE)}</p>',
        f'<div class="chart">{cost_chart}</div>',
        f'<p class="note">{esc(s.cost_by_route.note)}</p>',
        f'<div class="chart">{util_chart}</div>',
        f'<p class="note">{esc(s.hourly.note)}</p>',
        "<h2>Fleet options compared</h2>",
        render_table(s.options, ["option", "monthly_usd", "vs_recommended_usd", "owned_nodes", "served", "unserved"],
                     [24, 12, 15, 9, 11, 29], caption_note=True),
        "<h2>Routing table</h2>",
        _routing(s),
        "<h2>Sensitivity to prices you don't control</h2>",
        render_table(s.sensitivity, ["case", "total_monthly_usd", "change_usd", "change_share", "nodes_needed",
                                     "verdicts_changed", "changed_workloads"], [20, 13, 13, 9, 9, 10, 26],
                     caption_note=True),
        "<h2>Assumptions</h2>",
        f"<p><strong>Node price:</strong> {esc(fmt(node['value'], 'usd_2'))} per node-hour, {esc(node['item'])}, "
        f"as of {esc(fmt(node['as_of'], 'date'))} ({esc(node['confidence'])}); source: {esc(node['source'])}; "
        f"{esc(node['note'])}.</p>",
        render_table(api_prices_table(s), ["api", "in", "cached", "out", "as_of", "source", "confidence"],
                     [22, 8, 9, 8, 11, 30, 12]),
        render_table(stacks_table(s), ["stack", "architecture", "performance", "as_of", "source", "confidence"],
                     [22, 13, 22, 11, 22, 10]),
        f'<p class="note">Model: {esc(engine)}.</p>',
        "<p class=\"note\">Quality per task class, GPU figures, benchmarks and the scenario's settings, each with "
        "its date and source, are on the workbook's Assumptions sheet.</p>",
        f'<footer><p class="note">{esc(s.estimates_note)}</p></footer>',
        "</body></html>",
    ]
    return "\n".join(parts)
