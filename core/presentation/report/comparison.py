"""A comparison of saved scenarios as its own export: an XLSX workbook, a Markdown section, plain text and JSON."""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

import pandas as pd
import xlsxwriter

from core.errors import InputError
from core.presentation import palette
from core.presentation.report.content import Column, Table
from core.presentation.report.markdown import render_table
from core.presentation.report.numbers import FORMATS, fmt
from core.presentation.report.xlsx import (
    WORKBOOK_OPTIONS,
    _print_setup,
    _set_widths,
    _Styles,
    write_table,
)
from core.scenarios import FIGURE_ROWS, Comparison

TITLE = "GPU Hangover — scenarios compared"
MAX_MARKDOWN_ROWS = 50  # verdict changes listed in the Markdown section; the workbook has every workload


def figures_table(cmp: Comparison) -> Table:
    """One row per figure (cash bill, nodes, idle, …), one column per scenario, with its settings and inventory."""
    cols = [Column("label", "Figure", "text", width=44)]
    cols += [Column(f"s{i}", s.name, "mixed", width=max(16, min(len(s.name) + 2, 40)), wrap=True)
             for i, s in enumerate(cmp.scenarios)]
    rows = []
    for _, r in cmp.figures_frame().iterrows():
        row = {"label": r["label"]}
        for i, s in enumerate(cmp.scenarios):
            row[f"s{i}"] = r[s.name]
            row[f"s{i}:kind"] = r["kind"]
        rows.append(row)
    for label, attr in (("Settings", "settings"), ("Inventory evaluated", "inventory")):
        row = {"label": label}
        for i, s in enumerate(cmp.scenarios):
            row[f"s{i}"], row[f"s{i}:kind"] = getattr(s, attr), "text"
        rows.append(row)
    return Table("ScenarioFigures", "Scenarios side by side", cols, rows,
                 note=f"Cash bill = what is paid a month (owned and new nodes, API spend, licences); unserved work "
                      "is not in it, so a scenario that serves less reads cheaper: the bill with unserved work priced "
                      "adds it at its cheapest route after the smallest change (estimate); "
                      f"'routed differently' counts workloads whose verdict differs from {cmp.names[0]!r}.")


def figures_display(cmp: Comparison) -> pd.DataFrame:
    """The figures side by side as text (one formatter for every figure): 'Figure', then one column per scenario."""
    t = figures_table(cmp)
    rows = [{"Figure": r["label"], **{s.name: fmt(r[f"s{i}"], t.kind_of(r, t.columns[i + 1]))
                                       for i, s in enumerate(cmp.scenarios)}} for r in t.rows]
    return pd.DataFrame(rows, columns=["Figure", *cmp.names])


def verdicts_table(cmp: Comparison, *, only_changed: bool = False) -> Table:
    """One row per workload: the route and its monthly cost in each scenario, and whether the verdict changes."""
    n = len(cmp.scenarios)
    cols = [Column("workload_id", "Workload", "text"), Column("name", "Name", "text", width=28)]
    cols += [Column(f"r{i}", f"Route: {s.name}", "text", width=36, wrap=True) for i, s in enumerate(cmp.scenarios)]
    cols += [Column(f"m{i}", f"$/month: {s.name}", "usd", width=16) for i, s in enumerate(cmp.scenarios)]
    cols.append(Column("changed", "Verdict changes", "text", width=10))
    v = cmp.verdicts[cmp.verdicts["changed"]] if only_changed else cmp.verdicts
    data = {"workload_id": v["workload_id"].astype(str).tolist(), "name": v["name"].astype(str).tolist(),
            "changed": ["yes" if c else "" for c in v["changed"].tolist()]}
    for i in range(n):
        data[f"r{i}"] = v[f"route_{i}"].astype(str).tolist()
        data[f"m{i}"] = v[f"monthly_usd_{i}"].tolist()
    keys = list(data)
    rows = [dict(zip(keys, vals, strict=True)) for vals in zip(*data.values(), strict=True)]
    return Table("VerdictsCompared", "Verdict per workload in each scenario", cols, rows,
                 note=f"{cmp.changed_count} of {len(cmp.verdicts)} workloads are not routed the same way in every "
                      "scenario; they are listed first.")


def _stamp(generated: dt.datetime | None) -> dt.datetime:
    return generated or dt.datetime.now(dt.UTC)


def build_comparison_xlsx(cmp: Comparison, *, generated: dt.datetime | None = None) -> bytes:
    """A workbook with a 'Comparison' sheet (figures and a chart) and a 'Verdicts' sheet (every workload)."""
    when = _stamp(generated)
    buf = io.BytesIO()
    wb = xlsxwriter.Workbook(buf, WORKBOOK_OPTIONS)
    wb.set_properties({"title": TITLE, "subject": "Scenario comparison", "author": "GPU Hangover",
                       "created": when.astimezone(dt.UTC).replace(tzinfo=None)})
    styles = _Styles(wb)
    figures = figures_table(cmp)
    ws = wb.add_worksheet("Comparison")
    ws.write_string(0, 0, TITLE, styles.title)
    ws.write_string(1, 0, f"Generated {when:%Y-%m-%d %H:%M %Z}".strip() + f" · {len(cmp.scenarios)} scenarios: "
                    + ", ".join(cmp.names), styles.subtitle)
    header = write_table(ws, styles, figures, 3)
    _set_widths(ws, figures)
    _print_setup(ws, header)
    chart = wb.add_chart({"type": "column"})
    last_col = len(cmp.scenarios)
    # Bill, idle cost and API spend in the colours of the scenario comparison chart (core.presentation.palette).
    for row_offset, color in ((1, palette.HOSTING["owned"]), (4, palette.ALERT), (6, palette.HOSTING["api"])):
        chart.add_series({
            "name": ["Comparison", header + row_offset, 0],
            "categories": ["Comparison", header, 1, header, last_col],
            "values": ["Comparison", header + row_offset, 1, header + row_offset, last_col],
            "fill": {"color": color},
            "data_labels": {"value": True, "num_format": FORMATS["usd"].excel},
        })
    chart.set_title({"name": "Cash bill, idle cost and API spend per month", "name_font": {"size": 11}})
    chart.set_y_axis({"num_format": FORMATS["usd"].excel, "major_gridlines": {"visible": True}})
    chart.set_legend({"position": "bottom"})
    chart.set_size({"width": 720, "height": 340})
    ws.insert_chart(header + len(figures.rows) + 2, 0, chart)

    verdicts = verdicts_table(cmp)
    ws2 = wb.add_worksheet("Verdicts")
    ws2.write_string(0, 0, f"{verdicts.title} — {TITLE}", styles.title)
    ws2.write_string(1, 0, verdicts.note, styles.note)
    header2 = write_table(ws2, styles, verdicts, 2, titled=False)
    _set_widths(ws2, verdicts)
    ws2.freeze_panes(header2 + 1, 1)
    _print_setup(ws2, header2)
    wb.close()
    return buf.getvalue()


def build_comparison_markdown(cmp: Comparison, *, generated: dt.datetime | None = None) -> str:
    """A Markdown section: the figures side by side, then the workloads whose verdict changes."""
    when = _stamp(generated)
    figures = figures_table(cmp)
    changed = verdicts_table(cmp, only_changed=True)
    keys = ["workload_id", "name"] + [f"r{i}" for i in range(len(cmp.scenarios))]
    out = [
        "## Scenarios compared",
        "",
        f"Generated {when:%Y-%m-%d %H:%M %Z}".strip() + f" · {len(cmp.scenarios)} scenarios",
        "",
        render_table(figures, [c.key for c in figures.columns]),
        "",
        *[f"- {line}" for line in cmp.bill_lines()],
        "",
        f"### Verdicts that change ({cmp.changed_count} of {len(cmp.verdicts)} workloads)",
        "",
    ]
    if not changed.rows:
        out.append("Every workload gets the same verdict in every scenario.")
    else:
        out.append(render_table(changed, keys, changed.rows[:MAX_MARKDOWN_ROWS]))
        if len(changed.rows) > MAX_MARKDOWN_ROWS:
            out += ["", f"…and {len(changed.rows) - MAX_MARKDOWN_ROWS} more (every workload is in the workbook)."]
    return "\n".join(out) + "\n"


def comparison_text(cmp: Comparison, *, max_rows: int = 40) -> str:
    """A plain-text side-by-side table for the terminal."""
    width = max([len(n) for n in cmp.names] + [14])
    label_w = max(len(lbl) for _, lbl, _ in FIGURE_ROWS)
    lines = [f"{'':<{label_w}}  " + "  ".join(f"{n[:width]:>{width}}" for n in cmp.names)]
    for key, label, kind in FIGURE_ROWS:
        lines.append(f"{label:<{label_w}}  " + "  ".join(
            f"{fmt(getattr(s, key), kind):>{width}}" for s in cmp.scenarios))
    lines.append("")
    lines += cmp.bill_lines()
    lines.append("")
    for s in cmp.scenarios:
        lines.append(f"{s.name}: {s.settings}; inventory {s.inventory}")
    lines += ["", f"Verdicts that change: {cmp.changed_count} of {len(cmp.verdicts)} workloads"]
    v = cmp.verdicts[cmp.verdicts["changed"]].head(max_rows)
    for r in v.to_dict("records"):
        routes = "  |  ".join(f"{s.name}: {r[f'route_{i}']}" for i, s in enumerate(cmp.scenarios))
        lines.append(f"  {str(r['workload_id'])[:24]:<24} {routes}")
    if cmp.changed_count > max_rows:
        lines.append(f"  …and {cmp.changed_count - max_rows} more (--format json lists every workload)")
    return "\n".join(lines)


def comparison_dict(cmp: Comparison) -> dict:
    """JSON-ready: each scenario's figures, then every workload's route and monthly cost per scenario."""
    scenarios = [{
        "name": s.name, "settings": s.settings, "inventory": s.inventory,
        "cash_bill_usd_per_month": s.cash_bill_usd_per_month, "nodes_needed": s.nodes_needed,
        "owned_nodes": s.owned_nodes, "idle_usd_per_month": s.idle_usd_per_month, "utilization": s.utilization,
        "api_usd_per_month": s.api_usd_per_month, "verdicts_changed_from_first": s.verdicts_changed,
        "workloads_served": s.workloads_served, "workloads_total": s.workloads_total,
        "bill_with_unserved_usd_per_month": s.bill_with_unserved_usd_per_month,
    } for s in cmp.scenarios]
    workloads = []
    for r in cmp.verdicts.to_dict("records"):
        per = {}
        for i, s in enumerate(cmp.scenarios):
            m = r[f"monthly_usd_{i}"]
            rid = r[f"route_id_{i}"]
            per[s.name] = {"route_id": None if rid != rid else rid, "route": r[f"route_{i}"],
                           "hosting": None if r[f"hosting_{i}"] != r[f"hosting_{i}"] else r[f"hosting_{i}"],
                           "monthly_usd": None if m != m else float(m)}
        workloads.append({"workload_id": r["workload_id"], "name": r["name"], "changed": bool(r["changed"]),
                          "scenarios": per})
    return {"scenarios": scenarios, "bill_lines": cmp.bill_lines(), "changed_count": cmp.changed_count,
            "workloads": workloads}


COMPARISON_FORMATS = {".xlsx": "xlsx", ".md": "markdown"}


def write_comparison(cmp: Comparison, path: str | Path) -> Path:
    """Write FILE.xlsx or FILE.md (the extension picks the format); nothing is written for another extension."""
    p = Path(path)
    kind = COMPARISON_FORMATS.get(p.suffix.lower())
    if kind is None:
        raise InputError(f"cannot write a comparison as {p.name!r}: use a .xlsx or .md file name")
    data = build_comparison_xlsx(cmp) if kind == "xlsx" else build_comparison_markdown(cmp).encode("utf-8")
    try:
        p.write_bytes(data)
    except OSError as exc:
        raise InputError(f"cannot write {p}: {exc.strerror or exc}") from None
    return p
