"""Procurement summary export (issue 7): workbook, HTML one-pager, Markdown brief, the changes they recommend, the CLI."""

from __future__ import annotations

import datetime as dt
import importlib.util
import io
import re
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import openpyxl
import pandas as pd
import pytest

from core.cli import main
from core.decision import contract
from core.decision.analysis import fleet_options
from core.decision.economics import NodeRate
from core.decision.engine import Evaluation, Route
from core.models import Scenario
from core.presentation.format import excel_format
from core.presentation.report import (
    FORMATS,
    build_html,
    build_markdown,
    build_summary,
    build_xlsx,
    fmt,
    recommended_changes,
    report_format,
)
from core.presentation.report.charts import cost_by_route_svg, hourly_utilization_svg
from core.presentation.report.markdown import md_text
from core.service import evaluate_store, make_scenario
from core.store import Store
from core.store.seed import sample_workloads_path

ROOT = Path(__file__).resolve().parents[1]
GENERATED = dt.datetime(2026, 3, 2, 9, 30, tzinfo=dt.UTC)
HOSTILE_NAME = '=HYPERLINK("http://x","y")'
SHEETS = ["Summary", "Workloads", "Fleet", "Assumptions", "Sensitivity", "Purchase", "Showback"]
USD = FORMATS["usd"].excel
KIND_BY_EXCEL = {f.excel: k for k, f in FORMATS.items() if k not in ("text", "num_g")}


# ---------------------------------------------------------------------------
# fixtures: one evaluation of the bundled sample, one of a hostile inventory (built once: ~1 s each)
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def report_store(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("report") / "r.duckdb")
    yield s
    s.close()


def _hostile_frame() -> pd.DataFrame:
    w = pd.read_csv(sample_workloads_path())
    w.loc[w["workload_id"] == "internal-chat", "name"] = HOSTILE_NAME
    w.loc[w["workload_id"] == "credit-memos", "team"] = "-2+3"
    w.loc[w["workload_id"] == "kyc-overnight", "notes"] = "@SUM(1+1) | <b>bold</b> [x](http://evil)"
    return w


@pytest.fixture(scope="module")
def sample(report_store):
    """(evaluation, summary, xlsx bytes, html, markdown) for the bundled sample under the default scenario."""
    ev = evaluate_store(report_store, make_scenario())
    s = build_summary(ev, generated=GENERATED)
    return ev, s, build_xlsx(ev, summary=s), build_html(ev, summary=s), build_markdown(ev, summary=s)


@pytest.fixture(scope="module")
def hostile(report_store):
    ev = evaluate_store(report_store, make_scenario(), workloads=_hostile_frame())
    s = build_summary(ev, generated=GENERATED)
    return ev, s, build_xlsx(ev, summary=s), build_html(ev, summary=s), build_markdown(ev, summary=s)


def _wb(data: bytes) -> openpyxl.Workbook:
    return openpyxl.load_workbook(io.BytesIO(data))


def _table_rows(ws, name: str) -> tuple[list[str], list[list]]:
    """Header and data cells of a named Excel table."""
    cells = list(ws[ws.tables[name].ref])
    return [c.value for c in cells[0]], [list(r) for r in cells[1:]]


# ---------------------------------------------------------------------------
# one formatting function
# ---------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "kind", "text"), [
    (19629.597, "usd", "$19,630"),
    (0.5, "usd", "$1"),  # Excel rounds half away from zero; Python's f"{0.5:.0f}" would say "0"
    (2.5, "usd", "$3"),
    (1.005, "usd_2", "$1.01"),  # 1.005 is 1.00499999... in binary; Excel (15 digits) shows 1.01
    (-481.914, "usd", "-$482"),
    (0.025, "usd_price", "$0.025"),
    (0.1, "usd_price", "$0.10"),
    # per-request costs and token prices: format.money's rule (3 significant digits below $1, whole dollars from $100)
    (0.0000671, "usd_price", "$0.0000671"),
    (1234.5, "usd_price", "$1,235"),
    (0.1856, "pct", "19%"),
    (0.285, "pct", "29%"),
    (0.0098, "pct_1", "1.0%"),
    (200000.0, "int", "200,000"),
    (0.0681, "num_1", "0.1"),
    (1.3, "num_g", "1.3"),
    (None, "usd", "—"),
    (float("nan"), "int", "—"),
    (dt.date(2026, 1, 1), "date", "2026-01-01"),
])
def test_fmt_matches_the_excel_format(value, kind, text):
    assert fmt(value, kind) == text


# ---------------------------------------------------------------------------
# recommended changes, on a hand-made evaluation (every figure checked by hand)
# ---------------------------------------------------------------------------

RATE = NodeRate(33.02, 33.02, 8, "AWS p5.48xlarge (savings_1y)", "seed", "2026-01-01", "unverified", "full")
ROUTES = [Route("owned:ar", "AR 70B", "owned", "autoregressive"),
          Route("owned:dif", "Diffusion coder", "owned", "diffusion"),
          Route("api:x/y", "X y (API)", "api", "autoregressive")]
INF = np.inf


def _fake_ev(monthly, verdict, *, p95=None, fleet_nodes=1, needed=1, pricing="savings_1y", rate=RATE,
             cost_basis="full") -> Evaluation:
    monthly = np.array(monthly, dtype=float)
    feasible = np.isfinite(monthly)
    ids = [f"w{i + 1}" for i in range(len(monthly))]
    sc = Scenario(fleet_nodes=fleet_nodes, pricing_option=pricing, cost_basis=cost_basis)
    # The fleet record's fields recommended_changes reads (a stand-in: no plan behind it).
    fleet = SimpleNamespace(owned_nodes=fleet_nodes, nodes_needed=needed, node_drivers=(), licensed_routes=(),
                            extra_nodes_monthly_usd=max(needed - fleet_nodes, 0) * rate.full_usd_per_node_hour * 730.0)
    a = {"feasible": feasible, "monthly_usd": np.where(feasible, monthly, np.nan),
         "p95_ms": np.array(p95, dtype=float) if p95 is not None else np.full(monthly.shape, 500.0)}
    return Evaluation(scenario=sc, rate=rate, gpu_name="H100 SXM", workloads=pd.DataFrame({"workload_id": ids}),
                      routes=ROUTES, a=a, verdict=np.array(verdict), value_usd_per_mtok=np.zeros(len(ids)),
                      fleet=fleet, catalog=None)


@pytest.mark.slow
def test_recommended_changes_name_what_forces_the_purchase(sample):
    """The sample on 1 owned node needs n > 1 (issue 11): buy n - 1 at 33.02 x 730 = 24,104.6 each, and say
    which workload's target forces them (the plan's first node driver), with what relaxing it saves."""
    ev, s, *_ = sample
    n = ev.fleet.nodes_needed
    first = s.changes[0]
    assert n > 1
    assert first.text.startswith(f"Buy {n - 1} more 8×H100 SXM node")
    driver = ev.fleet.node_drivers[0].workload_id
    assert f"needs {n}, you own 1" in first.text and f"What forces it: {driver} (its " in first.text
    assert first.usd_per_month == pytest.approx((n - 1) * 24104.6)
    # Every move is worded as its exact effect on the cash bill (never "saves" an attributed share).
    moves = [c.text for c in s.changes[1:]]
    assert any("would leave the cash bill unchanged" in t or "would raise the cash bill" in t for t in moves)


@pytest.mark.parametrize(("pricing", "verb"), [
    ("savings_1y", "Do not renew 6 idle reserved 8×H100 SXM nodes"),
    ("on_demand", "Release 6 idle 8×H100 SXM nodes"),
])
def test_idle_nodes_to_release_are_priced_at_the_scenario_rate(pricing, verb):
    """8 owned, 2 needed: 6 x 33.02 x 730 = 144,627.6 -> $144,628 a month."""
    ev = _fake_ev([[100.0, INF, INF]], [0], fleet_nodes=8, needed=2, pricing=pricing)
    first = recommended_changes(ev)[0]
    tail = "" if pricing == "on_demand" else " once the commitment ends"
    assert first.text == (f"{verb} (or give them other work): the recommended routing needs 2 of the 8 owned; "
                          f"saves $144,628/month at $33.02/node-hour{tail}.")
    assert first.usd_per_month == pytest.approx(-144627.6)


# ---------------------------------------------------------------------------
# the summary agrees with the engine
# ---------------------------------------------------------------------------

def test_cost_by_route_adds_up_to_the_monthly_total(sample):
    ev, s, *_ = sample
    assert sum(r["monthly_usd"] for r in s.cost_by_route.rows) == pytest.approx(ev.fleet.total_monthly_usd)
    assert s.figure("total_monthly_usd").value == pytest.approx(ev.fleet.total_monthly_usd)
    assert s.figure("idle_usd_per_month").value == pytest.approx(ev.fleet.idle_usd_per_month)


def test_alternatives_come_from_fleet_options(sample):
    """Under the full basis every node costs the scenario rate, so the report's options equal analysis.fleet_options."""
    ev, s, *_ = sample
    opts = fleet_options(ev).set_index("option")
    assert s.figure("all_api_monthly_usd").value == pytest.approx(opts.loc["All on public APIs", "monthly_usd"])
    assert s.figure("all_owned_ar_monthly_usd").value == pytest.approx(
        opts.loc["Owned, autoregressive only", "monthly_usd"])
    assert "serves 2 of 7 workloads" in s.figure("all_api_monthly_usd").note  # 5 are owned_only


def test_sensitivity_has_the_four_price_cases(sample):
    _, s, *_ = sample
    cases = [r["case"] for r in s.sensitivity.rows]
    assert cases == ["As assumed", "API prices × 0.5", "API prices × 2", "Node prices × 0.5", "Node prices × 2"]
    base = s.sensitivity.rows[0]["total_monthly_usd"]
    assert [r["change_usd"] for r in s.sensitivity.rows] == pytest.approx(
        [r["total_monthly_usd"] - base for r in s.sensitivity.rows])


# ---------------------------------------------------------------------------
# the workbook
# ---------------------------------------------------------------------------

def test_workbook_sheets_tables_headers_and_frozen_rows(sample):
    wb = _wb(sample[2])
    assert wb.sheetnames == SHEETS
    for ws in wb.worksheets:
        assert ws.tables, f"{ws.title} has no Excel table (filters)"
        assert ws.freeze_panes is not None, ws.title
    header, _ = _table_rows(wb["Workloads"], "Workloads")
    assert header[:2] == ["Workload", "Name"] and "$/month" in header and "Why" in header
    assert wb["Workloads"].freeze_panes == "B4"  # header row and the workload column stay in view
    header, _ = _table_rows(wb["Assumptions"], "Assumptions")
    assert header == ["Section", "Item", "Figure", "Value", "Unit", "As of", "Source", "Confidence", "Note"]
    assert set(wb["Summary"].tables) == {"Headline", "Changes", "CostByRoute", "Options"}
    assert set(wb["Fleet"].tables) == {"FleetRoutes", "Hourly"}


def test_money_columns_carry_currency_formats(sample):
    ev, _, data, *_ = sample
    ws = _wb(data)["Workloads"]
    header, rows = _table_rows(ws, "Workloads")
    for name, excel in (("$/month", USD), ("$/M output tokens", FORMATS["usd_2"].excel),
                        ("Escalated for quality", "0%"), ("Requests/day", "#,##0")):
        col = header.index(name)
        assert {r[col].number_format for r in rows} == {excel}, name
    # A per-request cost carries its own places, so the cell reads as format.money words it (issue 10).
    col = header.index("$/request")
    for r in rows:
        if r[col].value is not None:
            assert r[col].number_format == excel_format("usd_price", r[col].value)
    col = header.index("$/month")
    cells = [np.nan if r[col].value is None else r[col].value for r in rows]  # an unserved workload: blank
    np.testing.assert_allclose(cells, contract.verdicts_frame(ev)["monthly_usd"].to_numpy(dtype=float), rtol=1e-9)
    _, rows = _table_rows(_wb(data)["Sensitivity"], "Sensitivity")
    assert all(r[1].number_format == USD and isinstance(r[1].value, int | float) for r in rows)


def test_summary_sheet_has_a_chart_of_monthly_cost_by_route(sample):
    data = sample[2]
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        charts = [n for n in z.namelist() if n.startswith("xl/charts/chart")]
        summary_chart = next(z.read(n).decode() for n in charts if "Summary!$A$" in z.read(n).decode())
    ws = _wb(data)["Summary"]
    ref = ws.tables["CostByRoute"].ref  # e.g. A37:F43: categories A38:A43, values B38:B43
    first, last = int(re.findall(r"\d+", ref)[0]) + 1, int(re.findall(r"\d+", ref)[1])
    assert f"Summary!$A${first}:$A${last}" in summary_chart
    assert f"Summary!$B${first}:$B${last}" in summary_chart


def test_every_price_used_is_on_assumptions_with_date_and_source(sample):
    ev, _, data, *_ = sample
    _, rows = _table_rows(_wb(data)["Assumptions"], "Assumptions")
    facts = {(r[1].value, r[2].value): r for r in rows}
    assert ev.rate.label == "AWS p5.48xlarge (savings_1y)"  # the engine's label; the report says it in words
    node = facts[("AWS p5.48xlarge (1-year savings plan)", "Price used, $ per node-hour")]
    assert node[3].value == pytest.approx(ev.rate.usd_per_node_hour)
    assert node[5].value.date().isoformat() == ev.rate.as_of and node[6].value == ev.rate.source
    for route in ev.routes:
        if route.api is None:
            continue
        api = route.api
        prices = {"Input, $ per million tokens": api.usd_per_mtok_in, "Output, $ per million tokens": api.usd_per_mtok_out}
        if api.usd_per_mtok_cached_in is not None:
            prices["Cached input, $ per million tokens"] = api.usd_per_mtok_cached_in
        for figure, value in prices.items():
            row = facts[(route.label, figure)]
            assert row[3].value == pytest.approx(value)
            assert row[3].number_format == excel_format("usd_price", value)
            assert row[5].value.date() == api.as_of, (route.label, figure)
            assert row[6].value == api.source and row[7].value == api.confidence.value
    quality = [r for r in rows if r[0].value == "Quality"]
    assert quality and {r[7].value for r in quality} == {"estimate"}
    # Performance is labelled as the engine words it: estimated, and where calibrated, on which points.
    stacks = {r[1].value: r[3].value for r in rows if r[0].value == "Serving stack" and r[2].value == "Performance"}
    assert stacks == {d["name"]: d["performance"] for d in contract.scenario_dict(ev)["serving_stacks"]}
    assert all("estimated" in v for v in stacks.values())


@pytest.mark.slow
def test_a_node_price_override_is_dated_the_day_of_the_report(report_store):
    ev = evaluate_store(report_store, make_scenario(node_usd_per_hour=40.0))
    s = build_summary(ev, generated=GENERATED, sensitivity_frame=pd.DataFrame(
        {"case": ["As assumed"], "total_monthly_usd": [1.0], "api_monthly_usd": [0.0], "nodes_needed": [1],
         "verdicts_changed": [0], "changed_workloads": [""]}))
    node = next(r for r in s.assumptions.rows if r["section"] == "Node price")
    assert node["value"] == 40.0 and node["as_of"] == GENERATED.date() and node["source"] == "scenario override"


@pytest.mark.slow
def test_formula_like_workload_text_arrives_as_inert_text_in_the_workbook(hostile):
    data = hostile[2]
    ws = _wb(data)["Workloads"]
    header, rows = _table_rows(ws, "Workloads")
    by_id = {r[0].value: r for r in rows}
    name = by_id["internal-chat"][header.index("Name")]
    assert name.value == HOSTILE_NAME and name.data_type == "s"
    assert by_id["credit-memos"][header.index("Team")].value == "-2+3"
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        for n in z.namelist():
            if n.startswith("xl/worksheets/sheet"):
                xml = z.read(n).decode()
                assert "<f>" not in xml and "<f " not in xml, f"{n} holds a formula"
                assert "HYPERLINK" not in xml  # the text lives in the shared strings, not as a formula
        assert "HYPERLINK" in z.read("xl/sharedStrings.xml").decode()


# ---------------------------------------------------------------------------
# HTML one-pager
# ---------------------------------------------------------------------------

class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.open: list[str] = []
        self.cells: list[str] = []
        self._cell: list[str] | None = None
        self.styles: list[str] = []
        self._in_style = False
        self.scripts: list[int] = []
        self._script = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag in ("table", "tbody", "thead", "tr", "td", "th", "div", "ol", "li"):
            self.open.append(tag)
        if tag in ("td", "th"):
            self._cell = []
        self._in_style = tag == "style"
        if tag == "script":
            self._script = 0

    def handle_endtag(self, tag):
        if tag in ("table", "tbody", "thead", "tr", "td", "th", "div", "ol", "li"):
            assert self.open and self.open[-1] == tag, f"</{tag}> closes <{self.open[-1] if self.open else None}>"
            self.open.pop()
        if tag in ("td", "th") and self._cell is not None:
            self.cells.append("".join(self._cell))
            self._cell = None
        if tag == "style":
            self._in_style = False
        if tag == "script":
            self.scripts.append(self._script or 0)
            self._script = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._in_style:
            self.styles.append(data)
        if self._script is not None:
            self._script += len(data)


def _parse(html_text: str) -> _Collect:
    p = _Collect()
    p.feed(html_text)
    p.close()
    assert not p.open, f"unclosed: {p.open}"
    return p


def test_html_parses_holds_both_charts_and_needs_no_network(sample):
    """Both charts are inline SVG (issue 14: plotly.js inline made the file 4.9 MB); no script at all."""
    html_text = sample[3]
    p = _parse(html_text)
    ids = {a.get("id") for t, a in p.tags if t == "svg"}
    assert ids == {"chart-cost-by-route", "chart-hourly-utilization"}
    assert not p.scripts and "<script" not in html_text
    assert len(html_text.encode("utf-8")) < 300_000
    for tag, attrs in p.tags:
        assert not (tag == "script" and "src" in attrs), attrs
        assert tag not in ("link", "iframe", "img", "object", "embed"), tag
    css = "".join(p.styles)
    assert "http" not in css and "@import" not in css and "@font-face" not in css
    assert "@media print" in css and "table-layout: fixed" in css and "break-inside: avoid" in css


def test_html_escapes_user_text_and_defuses_formulas(hostile):
    html_text = hostile[3]
    p = _parse(html_text)
    assert HOSTILE_NAME not in html_text  # quotes escaped
    assert any(c.endswith("'" + HOSTILE_NAME) for c in p.cells)  # shown, with the OWASP quote
    assert not any(c.startswith(("=", "+", "@")) for c in p.cells)


def test_html_headline_numbers_match_the_workbook(sample):
    """Every headline row the one-pager shows reads as in the workbook; the rows it leaves to the figures above
    the table, the options table and the header line (html.ONE_PAGER_LEAVES_OUT) are the only ones missing."""
    from core.presentation.report.html import ONE_PAGER_LEAVES_OUT

    _, s, data, html_text, _ = sample
    cells = _parse(html_text).cells
    left_out = {f.label for f in s.headline if f.key in ONE_PAGER_LEAVES_OUT}
    shown = [(label, text) for label, text in _workbook_headline(data) if label not in left_out]
    assert len(shown) >= 10
    for label, text in shown:
        i = cells.index(label)
        assert cells[i + 1] == text, label
    assert not left_out & set(cells)


# ---------------------------------------------------------------------------
# Markdown brief
# ---------------------------------------------------------------------------

def _workbook_headline(data: bytes) -> list[tuple[str, str]]:
    """(label, the text Excel shows) for every headline row, via the one shared formatter."""
    _, rows = _table_rows(_wb(data)["Summary"], "Headline")
    out = []
    for label, value, _note in rows:
        kind = KIND_BY_EXCEL.get(value.number_format, "num_g")
        out.append((label.value, fmt(value.value, kind)))
    return out


def test_markdown_headline_numbers_are_identical_to_the_workbook(sample):
    _, s, data, _, md = sample
    headline = _workbook_headline(data)
    assert len(headline) == len(s.headline) >= 12
    for label, text in headline:
        assert f"| {md_text(label)} | {text} |" in md, label
    # Hand-checked: one owned node at $33.02/hour for 730 hours a month.
    assert "| Owned nodes, \\$/month | $24,105 |" in md  # the label's "$" escaped (GitHub reads $...$ as math)


def test_markdown_states_date_inventory_and_dated_prices(sample):
    ev, s, *_, md = sample
    assert "Generated 2026-03-02 09:30 UTC · inventory: bundled sample · 7 workloads" in md
    for route in ev.routes:
        if route.api is not None:
            line = next(line for line in md.splitlines() if line.startswith(f"| {md_text(route.label)} |"))
            assert route.api.as_of.isoformat() in line
    assert "estimate" in md.lower()


def test_markdown_neutralises_and_escapes_user_text(hostile):
    md = hostile[4]
    assert "| " + md_text(HOSTILE_NAME) + " |" in md and md_text(HOSTILE_NAME).startswith("'=HYPERLINK")
    assert "http://" not in md_text(HOSTILE_NAME)  # a GFM autolink no more
    rows = [line for line in md.splitlines() if line.startswith("| internal-chat |") or line.startswith("| Workload |")]
    assert len({line.count(" | ") for line in rows}) == 1  # no stray column
    assert md_text("a|b <i>[x](y)</i>") == r"a\|b \<i\>\[x\](y)\</i\>"
    assert md_text("-2+3") == "'-2+3"


# ---------------------------------------------------------------------------
# charts
# ---------------------------------------------------------------------------

def _svg(text: str):
    import xml.etree.ElementTree as ET

    root = ET.fromstring(text)  # well-formed XML, so browsers and printers draw it as it is
    ns = "{http://www.w3.org/2000/svg}"
    return root, ns


def test_cost_chart_sorts_colours_and_escapes_labels():
    """Largest bar on top, one palette colour per group, each bar's $ at its end, label text escaped."""
    from core.presentation import palette

    svg = cost_by_route_svg(routes=["B (API)", "A <a href='x'>", "Unallocated"], monthly_usd=[50.0, 300.0, 20.0],
                            groups=["api", "owned", "unallocated"])
    assert "<a href" not in svg and "&lt;a href=&#x27;x&#x27;&gt;" in svg
    root, ns = _svg(svg)
    bars = [r for r in root.iter(f"{ns}rect") if r.find(f"{ns}title") is not None]
    assert [b.find(f"{ns}title").text for b in bars] == ["A <a href='x'>: $300/month", "B (API): $50/month",
                                                         "Unallocated: $20/month"]
    assert [b.get("fill") for b in bars] == [palette.HOSTING["owned"], palette.HOSTING["api"], palette.UNALLOCATED]
    ys = [float(b.get("y")) for b in bars]
    widths = [float(b.get("width")) for b in bars]
    assert ys == sorted(ys) and widths[0] > widths[1] > widths[2]  # top to bottom, largest first
    assert widths[1] / widths[0] == pytest.approx(50 / 300, rel=1e-3)  # bars to scale from zero
    texts = [t.text for t in root.iter(f"{ns}text")]
    assert {"$300", "$50", "$20"} <= set(texts) and {"Owned GPUs", "Public API", "Owned, not attributed"} <= set(texts)


def test_cost_chart_wraps_long_route_names_instead_of_cutting_them():
    name = "Llama 3.3 70B Instruct (FP8) + speculative draft on 8 GPUs per replica"
    root, ns = _svg(cost_by_route_svg(routes=[name], monthly_usd=[1.0], groups=["owned"]))
    lines = [t.text for t in root.iter(f"{ns}text") if t.text and t.text in name]
    assert len(lines) > 1 and " ".join(lines) == name


def test_hourly_chart_stacks_batch_fill_on_interactive_load():
    """Hour 00: 0 % interactive + 20 % batch; hour 01: 40 % interactive, nothing to fill; plot height 80 units."""
    root, ns = _svg(hourly_utilization_svg(hours=["00:00", "01:00"], interactive=[0.0, 0.4], with_batch=[0.2, 0.4]))
    tips = [r.find(f"{ns}title").text for r in root.iter(f"{ns}rect") if r.find(f"{ns}title") is not None]
    assert tips == ["00:00: 0% interactive + 20% batch", "00:00: 0% interactive + 20% batch",
                    "01:00: 40% interactive + 0% batch"]
    heights = [float(r.get("height")) for r in root.iter(f"{ns}rect") if r.find(f"{ns}title") is not None]
    assert heights == pytest.approx([0.0, 16.0, 32.0])


JARGON = re.compile(r"savings_1y|savings_3y|on_demand|\b\w+ \((?:owned|API)\) \d")


def _visible_text(html_text: str) -> str:
    body = html_text.split("<body>", 1)[1]
    return re.sub(r"<[^>]+>", " ", body)


def test_one_pager_and_brief_say_options_in_words(sample):
    """No option ids (savings_1y) or engine keys ('moe (owned) 2') in what a reader sees (issue 14)."""
    ev, s, _, html_text, md = sample
    for text in (_visible_text(html_text), md):
        assert not JARGON.search(text), JARGON.search(text).group(0)
    assert "1-year savings plan · full allocation cost basis" in s.scenario_line
    assert " with no feasible route" in s.figure("workloads").note and " on owned GPUs (" in s.figure("workloads").note
    assert "AWS p5.48xlarge (1-year savings plan)" in s.figure("node_usd_per_hour").note


@pytest.mark.e2e
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="Debian's chromium prints the one-pager")
def test_one_pager_prints_on_two_a4_pages(sample, tmp_path):
    """The sample's one-pager, printed by headless Chromium to PDF (A4, as @page asks), is at most 2 pages."""
    import subprocess

    page = tmp_path / "one-pager.html"
    page.write_text(sample[3], encoding="utf-8")
    pdf = tmp_path / "one-pager.pdf"
    subprocess.run(["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", f"--print-to-pdf={pdf}", page.as_uri()],
                   check=True, capture_output=True, timeout=120)
    pages = len(re.findall(rb"/Type\s*/Page[^s]", pdf.read_bytes()))
    assert 1 <= pages <= 2, f"{pages} printed pages"


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------

@pytest.mark.slow
def test_report_command_writes_each_format_from_one_evaluation(tmp_path, capsys):
    """--out repeated: the three formats from one evaluation, one line per file, in the order asked."""
    outs = [tmp_path / name for name in ("r.xlsx", "r.html", "r.md")]
    argv = ["--db", str(tmp_path / "h.duckdb"), "report", "--fleet-nodes", "2"]
    for out in outs:
        argv += ["--out", str(out)]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0] for line in lines] == [f"wrote {out}" for out in outs]
    assert _wb(outs[0].read_bytes()).sheetnames == SHEETS
    for out in outs[1:]:
        text = out.read_text(encoding="utf-8")
        assert "inventory: bundled sample" in text and "2 × 8×H100 SXM owned" in text


def test_report_command_checks_every_extension_before_any_work(tmp_path, capsys):
    argv = ["--db", str(tmp_path / "h.duckdb"), "report", "--out", str(tmp_path / "r.md"),
            "--out", str(tmp_path / "r.pdf")]
    assert main(argv) == 2
    assert "cannot write a report to 'r.pdf'" in capsys.readouterr().err
    assert not (tmp_path / "r.md").exists()


def test_report_command_refuses_an_unknown_extension(tmp_path, capsys):
    assert main(["--db", str(tmp_path / "h.duckdb"), "report", "--out", str(tmp_path / "r.pdf")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hangover: error: cannot write a report to 'r.pdf'") and ".xlsx, .html, .htm, .md" in err
    assert not (tmp_path / "r.pdf").exists()
    with pytest.raises(Exception, match="must end in"):
        report_format("summary.docx")


@pytest.mark.slow
def test_report_command_on_a_workloads_file_labels_it(tmp_path, capsys):
    src = tmp_path / "inv.csv"
    _hostile_frame().to_csv(src, index=False)
    out = tmp_path / "r.md"
    assert main(["--db", str(tmp_path / "h.duckdb"), "report", "--out", str(out), "--workloads", str(src)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "inventory: file inv.csv" in text and md_text(HOSTILE_NAME) in text


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("core.commands.workloads") is None,
                    reason="`hangover workloads import` not available yet")
def test_report_command_on_an_imported_inventory_version(tmp_path, capsys):
    db = str(tmp_path / "h.duckdb")
    src = tmp_path / "inv.csv"
    _hostile_frame().to_csv(src, index=False)
    assert main(["--db", db, "workloads", "import", str(src)]) == 0
    out = tmp_path / "r.html"
    assert main(["--db", db, "report", "--out", str(out), "--version", "1"]) == 0
    text = out.read_text(encoding="utf-8")
    assert "inventory: version 1" in text and "&#x27;=HYPERLINK(&quot;" in text


# ---------------------------------------------------------------------------
# README and examples
# ---------------------------------------------------------------------------

def test_readme_links_an_example_of_each_format():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Procurement summary", 1)[1]
    links = re.findall(r"\]\((docs/examples/[^)]+)\)", section)
    assert {Path(link).suffix for link in links} >= {".xlsx", ".html", ".md"}
    for link in links:
        assert (ROOT / link).is_file(), link
