"""The HTML one-pager: headline, changes, two inline SVG charts and the routing table, self-contained, two A4 pages."""

from __future__ import annotations

import html

from core.presentation import palette
from core.presentation.format import duration_h, duration_ms, integer
from core.presentation.report.charts import COLORS, cost_by_route_svg, hourly_utilization_svg
from core.presentation.report.content import (
    CHANGES_NOTE,
    ProcurementSummary,
    Table,
    api_prices_table,
    headline_table,
)
from core.presentation.report.numbers import NUMERIC_KINDS, fmt
from core.textsafety import neutralise

# The one-pager lists the costliest workloads and changes so that it prints on two A4 pages; the workbook
# always has all of them.
# Up to MAX_ROUTING_ROWS workloads are all listed; a larger inventory shows its ROUTING_ROWS_SHOWN costliest.
MAX_ROUTING_ROWS = 8
ROUTING_ROWS_SHOWN = 6
MAX_CHANGES = 7
# Changes always shown whatever the limit: what to buy or release, licences, workloads with no route.
KEY_CHANGES = ("Buy nodes", "Release nodes", "Licence", "No route")
# The headline figures shown large at the top (the rest are in the table under them).
KEY_FIGURES = {"total_monthly_usd": "Cash bill a month", "nodes_needed": "Nodes needed",
               "utilization": "Average utilization (estimate)", "idle_usd_per_month": "Idle capacity a month (estimate)"}

# Headline rows the one-pager leaves to the figures above it, the options table and the header line (the brief
# and the workbook keep them): it prints on two A4 pages.
ONE_PAGER_LEAVES_OUT = ("utilization", "idle_usd_per_month", "all_api_monthly_usd", "all_owned_ar_monthly_usd",
                        "workloads")

# Page width is the printable width of A4 (210 mm - 2 x 12 mm); Letter is wider, so both print uncut.
ROOT_CSS = (f":root {{ --ink: {palette.INK}; --muted: {palette.MUTED}; --line: {palette.LINE}; "
            f"--surface: {palette.SURFACE}; --owned: {COLORS['owned']}; --api: {COLORS['api']}; }}")
CSS = ROOT_CSS + """
* { box-sizing: border-box; }
html { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
       color: var(--ink); margin: 0 auto; padding: 8mm 0; max-width: 186mm; font-size: 7.8pt; line-height: 1.22; }
h1 { font-size: 15pt; margin: 0 0 1mm; }
h2 { font-size: 10pt; margin: 3mm 0 1mm; padding-bottom: 0.6mm; border-bottom: 1px solid var(--line);
     break-after: avoid; page-break-after: avoid; }
p { margin: 0.8mm 0; }
.meta { color: var(--muted); font-size: 8pt; margin: 0.3mm 0; }
.note { color: var(--muted); font-size: 7.5pt; font-style: italic; }
.kpis { display: grid; grid-template-columns: repeat(4, 1fr); gap: 2mm; margin: 2mm 0 1mm; }
.kpi { border: 1px solid var(--line); border-radius: 1.5mm; padding: 0.8mm 2mm; background: var(--surface); }
.kpi .label { font-size: 7.5pt; color: var(--muted); }
.kpi .value { font-size: 13pt; font-weight: 600; font-variant-numeric: tabular-nums; }
table { width: 100%; border-collapse: collapse; table-layout: fixed; font-size: 7pt; margin: 0.6mm 0 0.8mm; }
th, td { border-bottom: 1px solid var(--line); padding: 0.45mm 1mm; text-align: left; vertical-align: top;
         overflow-wrap: break-word; word-wrap: break-word; hyphens: auto; }
th { font-weight: 600; background: var(--surface); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
thead { display: table-header-group; }
tr, tbody.workload { break-inside: avoid; page-break-inside: avoid; }
tbody.workload td { border-bottom: none; padding-bottom: 0; }
tbody.workload tr.why td { border-bottom: 1px solid var(--line); color: var(--muted); font-size: 6.8pt;
                           padding-top: 0.2mm; padding-bottom: 0.6mm; }
ol.changes { margin: 0.5mm 0; padding-left: 5mm; }
ol.changes li { margin-bottom: 0.6mm; break-inside: avoid; page-break-inside: avoid; }
.charts { display: grid; grid-template-columns: 1fr 1fr; gap: 5mm; margin: 2mm 0 0; break-inside: avoid;
          page-break-inside: avoid; }
.chart { break-inside: avoid; page-break-inside: avoid; }
.chart svg { display: block; width: 100%; height: auto; }
.estimate { color: var(--muted); font-size: 7pt; }
footer { margin-top: 2mm; border-top: 1px solid var(--line); padding-top: 1mm; }
@page { size: A4; margin: 10mm; }
@media print {
  body { padding: 0; max-width: none; }
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


def _buy_section(s: ProcurementSummary) -> list[str]:
    """What to buy next: the choice in one sentence (GPU type, option, count) and the choices side by side."""
    # One line (the one-pager prints on two A4 pages): the verdict; the price and basis are in the brief.
    burst = [f"<p><strong>Burst instead of buy:</strong> {esc(s.extras['burst_short'])}</p>"] \
        if "burst_short" in s.extras else []
    if "buy" not in s.extras:
        return burst
    sentence, table = s.extras["buy"]
    from core.presentation.report.content import BUY_KEYS

    return ["<h2>What to buy next</h2>", f"<p>{esc(sentence)}</p>",
            render_table(table, BUY_KEYS, [12, 17, 9, 32, 8, 7, 7, 8]),
            f'<p class="note">{esc(table.note)} The fleet options (all on APIs, owned only, …) are in the brief and '
            "the workbook's Summary sheet.</p>", *burst]


def _options_section(s: ProcurementSummary) -> list[str]:
    """The fleet options side by side (a scenario without what to buy next: that section takes this place, so the
    one-pager still prints on two A4 pages; the brief and the workbook keep both)."""
    # The one-pager names the unserved workloads; their priced routes are in the brief and the workbook.
    return ["<h2>Fleet options compared</h2>",
            render_table(s.options, ["option", "monthly_usd", "vs_recommended_usd", "owned_nodes", "served",
                                     "monthly_usd_with_unserved", "unserved"],
                         [21, 9, 11, 7, 8, 12, 32], caption_note=True, rows=_short_unserved(s.options.rows))]


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


def _first_reason(r: dict) -> str:
    """The reason a workload goes where it goes, in its first sentence; the workbook has every reason."""
    return r.get("why_first") or r["reasons"]


def _routing(s: ProcurementSummary) -> str:
    t = s.workloads
    rows = t.rows
    note = ""
    if len(rows) > MAX_ROUTING_ROWS:
        rows = sorted(rows, key=lambda r: -(r["monthly_usd"] if r["monthly_usd"] == r["monthly_usd"] else 0))
        rows = rows[:ROUTING_ROWS_SHOWN]
        note = f"The {ROUTING_ROWS_SHOWN} costliest of {integer(len(t.rows))} workloads; the workbook lists every one. "
    widths = [30, 37, 11, 10, 12]
    out = ["<table>", "<colgroup>" + "".join(f'<col style="width:{w}%">' for w in widths) + "</colgroup>",
           "<thead><tr><th>Workload</th><th>Verdict</th><th class=\"num\">$/month</th>"
           "<th class=\"num\">$/M output tokens</th><th class=\"num\">p95 latency (estimate)</th>"
           "</tr></thead>"]
    for r in rows:
        if r["interactive"]:
            demand = f"{fmt(r['requests_per_day'], 'int')} requests/day; p95 target {duration_ms(r['latency_slo_ms'])}"
        else:
            demand = (f"{fmt(r['requests_per_day'], 'int')} requests/day; "
                      f"{duration_h(r['batch_window_hours'])} batch window")
        if r["hosting"] == "owned":
            nodes = fmt(r["nodes"], "int")
            where = f"{r['route']} on owned GPUs ({nodes} node{'' if nodes == '1' else 's'} on its own)"
        else:
            where = r["route"]
        out.append(
            '<tbody class="workload"><tr>'
            f"<td><strong>{esc(r['workload_id'])}</strong> {esc(r['name'])}</td>"
            f"<td>{esc(where)}</td>"
            f'<td class="num">{html.escape(fmt(r["monthly_usd"], "usd"))}</td>'
            f'<td class="num">{html.escape(fmt(r["usd_per_mtok_out"], "usd_2"))}</td>'
            f'<td class="num">{html.escape(duration_ms(r["p95_latency_ms"]))}</td>'
            f'</tr><tr class="why"><td colspan="5"><strong>{esc(demand)}.</strong> {esc(_first_reason(r))}</td>'
            "</tr></tbody>"
        )
    out.append("</table>")
    return "".join(out) + f'<p class="note">{esc(note)}Under each workload: its demand and the first of its ' \
        "reasons (all of them: the workbook's Workloads sheet). Nodes on its own: what the workload would need by " \
        "itself; the fleet pools workloads on shared replicas.</p>"


def _charts(s: ProcurementSummary) -> tuple[str, str]:
    rows = s.cost_by_route.rows
    cost = cost_by_route_svg(
        routes=[r["route"] for r in rows], monthly_usd=[r["monthly_usd"] for r in rows],
        groups=["api" if r["hosting"] == "api" else "owned" if r["architecture"] else "unallocated" for r in rows])
    hours = s.hourly.rows
    util = hourly_utilization_svg(hours=[r["hour"] for r in hours], interactive=[r["without_batch"] for r in hours],
                                  with_batch=[r["with_batch"] for r in hours])
    return cost, util


def _short_unserved(rows: list[dict], shown: int = 4) -> list[dict]:
    """Options' 'cannot serve' lists cut to a few ids and a count (the workbook names up to ten), to fit the page."""
    out = []
    for r in rows:
        n = int(r.get("workloads_unserved") or 0)
        if n > shown:
            ids = r["unserved"].split(" and ")[0].split(", ")[:shown - 1]
            r = {**r, "unserved": f"{', '.join(ids)} and {n - len(ids)} more"}
        out.append(r)
    return out


def _changes_shown(changes: list) -> list:
    """Every key change, and workload moves (costliest first) up to MAX_CHANGES in all, in their order."""
    key = [c for c in changes if c.action in KEY_CHANGES]
    room = max(MAX_CHANGES - len(key), 3)
    moves = [c for c in changes if c.action not in KEY_CHANGES and c.action != "More workloads"][:room]
    keep = {id(c) for c in key + moves}
    return [c for c in changes if id(c) in keep]


def _kpis(s: ProcurementSummary) -> str:
    """The four figures a reader wants first, large."""
    cells = []
    for key, label in KEY_FIGURES.items():
        f = next((x for x in s.headline if x.key == key), None)
        if f is not None:
            cells.append(f'<div class="kpi"><div class="label">{esc(label)}</div>'
                         f'<div class="value">{esc(f.text)}</div></div>')
    return f'<div class="kpis">{"".join(cells)}</div>'


def _used_apis(s: ProcurementSummary) -> str:
    """The list prices of the APIs the plan uses, dated and sourced, in one sentence (the workbook has every API)."""
    used = {r["route"] for r in s.cost_by_route.rows if r["hosting"] == "api"}
    rows = [r for r in api_prices_table(s).rows if r["api"] in used]
    if not rows:
        return "<p><strong>API prices:</strong> the plan sends no workload to a public API.</p>"
    parts = []
    for r in rows:
        cached = f", cached {fmt(r.get('cached'), 'usd_price')}" if r.get("cached") == r.get("cached") and \
            r.get("cached") is not None else ""
        parts.append(f"{r['api']}: {fmt(r.get('in'), 'usd_price')} in{cached}, {fmt(r.get('out'), 'usd_price')} out "
                     f"per million tokens, as of {fmt(r['as_of'], 'date')} ({r['confidence']}; source: {r['source']})")
    return f"<p><strong>API list prices the plan uses:</strong> {esc('; '.join(parts))}.</p>"


def _purchase(s: ProcurementSummary) -> list[str]:
    """The staged purchase section (none when not computed)."""
    short = s.extras.get("purchase_short")
    # One line: the one-pager prints on two A4 pages; what to measure is in the brief and the workbook.
    return [f"<p><strong>Staged purchase:</strong> {esc(short)}</p>"] if short else []


def build_html_text(s: ProcurementSummary) -> str:
    """The whole one-pager as one HTML document (inline SVG charts; no script, font or file from elsewhere)."""
    cost_chart, util_chart = _charts(s)
    head = headline_table(s)
    changes = _changes_shown(s.changes)
    more = len(s.changes) - len(changes)
    items = "".join(f"<li>{esc(c.text)}</li>" for c in changes) or \
        "<li>No change: the owned fleet matches the need.</li>"
    if more > 0:
        items += "<li>…and more workloads routed as the routing table and the workbook's Summary sheet say.</li>"
    node = next(r for r in s.assumptions.rows if r["section"] == "Node price")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(s.title)}</title>",
        f'<meta name="generator" content="GPU Hangover"><meta name="date" content="{esc(s.generated.isoformat())}">',
        f"<style>{CSS}</style></head><body>",
        f"<header><h1>{esc(s.title)}</h1>",
        f'<p class="meta">Generated {esc(s.generated_text)} · inventory: {esc(s.inventory)} · '
        f"{integer(s.workload_count)} workloads</p>",
        f'<p class="meta">Scenario: {esc(s.scenario_line)}</p></header>',
        _kpis(s),
        *_purchase(s),
        "<h2>Headline</h2>",
        render_table(head, ["figure", "value", "note"], [29, 10, 61],
                     rows=[r for r in head.rows if r["key"] not in ONE_PAGER_LEAVES_OUT]),
        "<h2>Recommended changes</h2>",
        f'<ol class="changes">{items}</ol>',
        f'<p class="note">{esc(CHANGES_NOTE)}</p>',
        f'<div class="charts"><div class="chart">{cost_chart}</div><div class="chart">{util_chart}</div></div>',
        f'<p class="note">Cost by route: {esc(s.cost_by_route.note)} Utilization: {esc(s.hourly.note)}</p>',
        *(_buy_section(s) or _options_section(s)),
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
        _used_apis(s),
        f'<footer><p class="note">{esc(s.estimates_note)} Every other figure, dated and sourced, is on the '
        "workbook's Assumptions sheet.</p></footer>",
        "</body></html>",
    ]
    return "\n".join(parts)
