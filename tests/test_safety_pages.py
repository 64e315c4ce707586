"""Every page, chart and export over an inventory, scenarios and a stack full of hostile text (issue 34, item 2).

The store holds workload ids, names, teams and notes, scenario names, notes and
authors, and a serving-stack label written by an attacker: Markdown links and
images, raw HTML, `javascript:` URLs, autolinks, Streamlit directives. Every
page is run (AppTest) and every text Streamlit renders as Markdown is read
back: with backslash-escaped characters set aside, none may still form a link,
an image, an autolink or an HTML tag. Plotly figures may hold no <a> or <img>
tag, and the HTML and Markdown one-pagers none from the user's text.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
import streamlit
from streamlit.testing.v1 import AppTest

from core import scenarios as S
from core.cli import main
from core.store import Store
from core.store.seed import sample_workloads_path

APP = Path(__file__).resolve().parents[1] / "dashboard" / "app.py"
CONFIGS = Path(__file__).parent / "data" / "configs"
STACK_FROM = "llama70b-fp8"
PAGES = ["overview", "routing", "fleet", "workloads", "pricing", "performance", "telemetry", "scenarios", "export"]

HOSTILE = [
    "[click me](javascript:alert(1))",
    "![beacon](https://evil.example/beacon.png)",
    "<img src=x onerror=alert(1)>",
    "<a href='https://evil.example/x'>win</a>",
    "<script>alert(1)</script>",
    "javascript:alert(document.cookie)",
    "see https://evil.example/phish or www.evil.example",
    "mail ops@evil.example",
    ":red[ALARM] :material/warning: **bold** `code` $x^2$",
    "# heading\n> quote\n- item",
]

# What would still be live once escaped characters (a backslash and the one after it) are set aside.
_LIVE = re.compile(
    r"!\[|\]\(|<\s*/?\s*[A-Za-z!?]|[A-Za-z][A-Za-z0-9+.-]*://|(?i:javascript):|(?i:www)\.[a-z]|\S@\S|:[a-z]+\[|"
    r":material/"
)


def _live(text: str) -> list[str]:
    """The live constructs left in Markdown `text` (escaped characters do not count)."""
    return _LIVE.findall(re.sub(r"\\.", "\u00a7", text, flags=re.S))


def _hostile_inventory(tmp_path: Path) -> Path:
    """The bundled sample plus one copy of a sample workload per payload, with it as id, name, team and notes."""
    rows = list(csv.DictReader(io.StringIO(sample_workloads_path().read_text(encoding="utf-8"))))
    for i, text in enumerate(HOSTILE):
        row = dict(rows[i % len(rows)])
        row["name"], row["team"], row["notes"] = text, text, text
        row["workload_id"] = f"w{i} {text}".replace("\n", " ")
        rows.append(row)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path = tmp_path / "hostile.csv"
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


@pytest.fixture
def hostile_db(app_db, tmp_path, capsys):
    """The app's store with the hostile inventory, hostile scenarios and a stack with a hostile label."""
    assert main(["--db", str(app_db), "workloads", "import", str(_hostile_inventory(tmp_path))]) == 0
    assert main(["--db", str(app_db), "stacks", "add", "--from-config", str(CONFIGS / "qwen3-30b-a3b.json"),
                 "--stack-id", "evil-stack", "--precision", "fp8", "--quality-from", STACK_FROM,
                 "--name", HOSTILE[1] + " " + HOSTILE[3]]) == 0
    store = Store(app_db)
    try:
        for i, text in enumerate(HOSTILE[:4]):
            # Names keep to letters, digits and a few marks (core.scenarios.check_name); notes and authors are free.
            S.save_scenario(store, f"plan ({i}) & co", S.scenario_from_inputs({}), created_by=text, note=text)
    finally:
        store.close()
    capsys.readouterr()
    streamlit.cache_resource.clear()
    streamlit.cache_data.clear()
    yield app_db
    streamlit.cache_resource.clear()
    streamlit.cache_data.clear()


def _rendered_markdown(at: AppTest) -> list[str]:
    """Every text the page hands Streamlit's Markdown renderer: bodies, alerts, titles, labels, options."""
    out = []
    for kind in ("markdown", "caption", "title", "header", "subheader", "warning", "error", "info", "success",
                 "toast"):
        out += [str(e.value) for e in at.get(kind)]
    for kind in ("expander", "tab", "metric", "button", "download_button", "checkbox", "toggle", "text_input",
                 "number_input", "selectbox", "multiselect", "radio", "slider", "select_slider", "text_area",
                 "date_input", "file_uploader"):
        for e in at.get(kind):
            proto = getattr(e, "proto", None)
            out += [str(getattr(proto, f)) for f in ("label", "help", "body", "value")
                    if proto is not None and hasattr(proto, f) and isinstance(getattr(proto, f), str)]
            if kind == "radio":  # radio options are rendered as Markdown
                out += [str(o) for o in getattr(e, "options", [])]
            if kind == "metric":
                out += [str(getattr(e, "value", "")), str(getattr(e, "delta", "") or "")]
    for e in at.get("table"):  # st.table renders every cell and header as Markdown
        frame = e.value
        out += [str(c) for c in frame.columns] + [str(v) for v in frame.to_numpy().ravel() if isinstance(v, str)]
    return out


def _figure_strings(at: AppTest) -> list[str]:
    return [chart.proto.spec for chart in at.get("plotly_chart")]


def _check_page(at: AppTest, page: str) -> int:
    assert not at.exception, (page, at.exception)
    texts = _rendered_markdown(at)
    live = {t[:120]: _live(t) for t in texts if _live(t)}
    assert not live, (page, live)
    for spec in _figure_strings(at):
        # Plotly turns only tags into markup (<a href>, <b>, ...); a bare "javascript:" in a label is text.
        assert not re.search(r"<\s*(a|img|script|iframe|svg)\b", spec, flags=re.I), page
    return sum("evil" in t or "alert" in t for t in texts)


def test_the_live_markup_detector_sees_each_payload_raw_and_none_escaped():
    """The detector the page test relies on: every payload is live as written, none once escaped."""
    from core.textsafety import escape_markdown

    for text in HOSTILE[:-2]:
        assert _live(text), text
    for text in HOSTILE:
        assert not _live(escape_markdown(text)), text


@pytest.mark.slow
def test_every_page_shows_hostile_text_as_text(hostile_db):
    """All nine pages, with the hostile scenario loaded from the Scenarios page: no link, image or HTML."""
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.run()
    # Two SLA scales of the Fleet page's sweep, not eight (each a whole evaluation): x0.25 leaves work unserved,
    # whose names its table shows.
    at.session_state["fleet_sla_scales"] = (0.25, 1.0)
    shown = 0
    for page in PAGES:
        at.switch_page(f"screens/{page}.py").run()
        shown += _check_page(at, page)
        if page == "scenarios":
            picks = [s for s in at.selectbox if any("plan (1) & co" in str(o) for o in s.options)]
            for pick in picks[:1]:
                pick.set_value(next(o for o in pick.options if "plan (1) & co" in str(o))).run()
                shown += _check_page(at, page)
    assert shown, "the hostile text reached no page at all: the test would prove nothing"


@pytest.mark.slow
def test_one_pagers_carry_no_markup_from_user_text(hostile_db):
    """The HTML one-pager has no <a>, <img>, <script> or javascript: from the inventory; the Markdown one has no
    live link or image."""
    from core.presentation.report import build_html, build_markdown
    from core.service import evaluate_store, make_scenario

    store = Store(hostile_db)
    try:
        ev = evaluate_store(store, make_scenario())
        html = build_html(ev).decode("utf-8") if isinstance(build_html(ev), bytes) else build_html(ev)
        markdown = build_markdown(ev)
        markdown = markdown.decode("utf-8") if isinstance(markdown, bytes) else markdown
    finally:
        store.close()
    assert "evil" in html and "evil" in markdown  # the text is there, as text
    assert not re.search(r"<\s*(a|img|script|iframe)\b", html, flags=re.I)
    assert not re.search(r"=\s*['\"]?\s*javascript:", html, flags=re.I)
    assert not _live(markdown), _live(markdown)
