"""The Markdown brief: the headline, changes, routing table and dated prices, for a ticket or a wiki page."""

from __future__ import annotations

from core.presentation.report.content import (
    ProcurementSummary,
    Table,
    api_prices_table,
    engine_rows,
    headline_table,
    stacks_table,
)
from core.presentation.report.numbers import NUMERIC_KINDS, fmt
from core.textsafety import escape_markdown, neutralise

MAX_ROUTING_ROWS = 30


def md_text(value) -> str:
    """User or catalog text for Markdown: formula-like text gets its quote (OWASP), markup is escaped, one line.

    The one Markdown rule of the dashboard (core.textsafety.escape_markdown): a name holding `|` would split a
    table row; `<a>`, `[x](y)`, a bare https:// or www. address (GFM autolinks) or `$x$` (GitHub math) would
    become markup.
    """
    return escape_markdown(neutralise(" ".join(str(value).split())))


def _cell(table: Table, row: dict, key: str) -> str:
    col = table.column(key)
    kind = table.kind_of(row, col)
    value = row.get(key)
    if kind in NUMERIC_KINDS and not isinstance(value, str):
        return fmt(value, kind)
    return md_text(fmt(value, kind))


def render_table(table: Table, keys: list[str], rows: list[dict] | None = None) -> str:
    """A pipe table of the chosen columns; numbers right-aligned."""
    cols = [table.column(k) for k in keys]
    lines = ["| " + " | ".join(md_text(c.header) for c in cols) + " |",
             "|" + "|".join("---:" if c.kind in NUMERIC_KINDS or c.kind == "mixed" else "---" for c in cols) + "|"]
    for row in table.rows if rows is None else rows:
        lines.append("| " + " | ".join(_cell(table, row, k) for k in keys) + " |")
    return "\n".join(lines)


def _buy_section(s: ProcurementSummary) -> list[str]:
    """What to buy next: the choice in one sentence (GPU type, option, count) and the choices side by side."""
    burst = [md_text(s.extras["burst"]), ""] if "burst" in s.extras else []
    if "buy" not in s.extras:
        return ["## What to buy next", "", *burst] if burst else []
    sentence, table = s.extras["buy"]
    from core.presentation.report.content import BUY_KEYS

    return ["## What to buy next", "", md_text(sentence), "", render_table(table, BUY_KEYS), "",
            f"_{md_text(table.note)}_", "", *burst]


def build_markdown_text(s: ProcurementSummary) -> str:
    """The whole brief as Markdown text."""
    out = [
        f"# {md_text(s.title)}",
        "",
        f"Generated {md_text(s.generated_text)} · inventory: {md_text(s.inventory)} · {s.workload_count} workloads  ",
        f"Scenario: {md_text(s.scenario_line)}",
        "",
        "## Headline",
        "",
        render_table(headline_table(s), ["figure", "value", "note"]),
        "",
        "## Recommended changes",
        "",
    ]
    out += [f"{i}. {md_text(c.text)}" for i, c in enumerate(s.changes, start=1)] or [
        "No change: the owned fleet matches the need."]
    if s.purchase is not None:
        out += ["", "## Staged purchase under the estimate ranges", "", md_text(s.purchase.note), "",
                render_table(s.purchase, ["figure", "value", "note"])]
    out += [
        "",
        "## Fleet options compared",
        "",
        render_table(s.options, ["option", "monthly_usd", "vs_recommended_usd", "owned_nodes", "served",
                                "monthly_usd_with_unserved", "unserved_work"]),
        "",
        f"_{md_text(s.options.note)}_",
        "",
        *_buy_section(s),
        "## Routing table",
        "",
    ]
    rows = s.workloads.rows
    if len(rows) > MAX_ROUTING_ROWS:
        rows = sorted(rows, key=lambda r: -(r["monthly_usd"] if r["monthly_usd"] == r["monthly_usd"] else 0))
        rows = rows[:MAX_ROUTING_ROWS]
        out += [f"The {MAX_ROUTING_ROWS} costliest of {len(s.workloads.rows)} workloads; the workbook lists every one.", ""]
    out.append(render_table(s.workloads, ["workload_id", "name", "mode", "route", "monthly_usd", "usd_per_mtok_out",
                                          "p95_latency_ms", "latency_basis", "nodes"], rows))
    out += ["", "Why:", ""]
    out += [f"- **{md_text(r['workload_id'])}**: {md_text(r['reasons'])}" for r in rows]
    out += [
        "",
        "## Sensitivity to prices you don't control",
        "",
        render_table(s.sensitivity, ["case", "total_monthly_usd", "change_usd", "change_share", "nodes_needed",
                                     "verdicts_changed", "changed_workloads"]),
        "",
        "## Assumptions",
        "",
    ]
    node = next(r for r in s.assumptions.rows if r["section"] == "Node price")
    out += [
        f"Node price: {fmt(node['value'], 'usd_2')} per node-hour, {md_text(node['item'])}, as of "
        f"{fmt(node['as_of'], 'date')} ({md_text(node['confidence'])}); source: {md_text(node['source'])}; "
        f"{md_text(node['note'])}.",
        "",
        render_table(api_prices_table(s), ["api", "in", "cached", "out", "as_of", "source", "confidence"]),
        "",
        render_table(stacks_table(s), ["stack", "architecture", "performance", "as_of", "source", "confidence"]),
        "",
        "Model: " + md_text("; ".join(f"{r['figure']}: {fmt(r['value'], r['value:kind'])}" for r in engine_rows(s)))
        + ".",
        "",
        f"_{md_text(s.estimates_note)}_",
        "",
        "_Quality per task class, GPU figures, benchmarks and the scenario's settings, each with its date and "
        "source, are on the workbook's Assumptions sheet._",
        "",
    ]
    return "\n".join(out)
