"""User text is inert everywhere (issue 16): no live formula in a CSV, no link or markup on a page or in a chart."""

from __future__ import annotations

import csv
import io
import re

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.inventory import read_inventory
from core.presentation import charts, views
from core.presentation.csv_export import routing_csv
from core.service import evaluate_store, make_scenario
from core.store.seed import sample_workloads_path
from core.textsafety import FORMULA_PREFIXES, csv_bytes, escape_markdown, escape_plotly, neutralise

FORMULA = "=cmd|' /C calc'!A0"
LINK = "<a href='https://evil.example/x'>w</a>"
IMAGE = "![x](https://evil.example/beacon.png)"


@pytest.fixture(scope="module")
def hostile_ev(tmp_path_factory):
    """The bundled sample with workload ids and names an attacker chose."""
    from core.store import Store

    store = Store(tmp_path_factory.mktemp("safety") / "s.duckdb")
    frame = read_inventory(sample_workloads_path()).frame.copy()
    frame.loc[frame.index[0], "workload_id"] = FORMULA
    frame.loc[frame.index[1], "workload_id"] = LINK
    frame.loc[frame.index[2], "name"] = "@SUM(A1:A9)"
    frame.loc[frame.index[3], "name"] = IMAGE
    frame.loc[frame.index[4], "team"] = "+1+1"
    ev = evaluate_store(store, make_scenario(), workloads=frame)
    yield ev
    store.close()


# -- CSV -------------------------------------------------------------------------------------


def _cells(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))


def test_the_dashboards_routing_csv_has_no_live_formula(hostile_ev):
    """Export page's "Download routing table (CSV)" (views.routing_csv): every risky cell starts with "'"."""
    rows = _cells(views.routing_csv(hostile_ev))
    cells = [c for r in rows for c in r]
    assert not [c for c in cells if c.lstrip(" ")[:1] in FORMULA_PREFIXES and not _is_number(c)]
    assert "'" + FORMULA in cells and "'@SUM(A1:A9)" in cells
    assert LINK in cells  # not a formula: kept exactly (a CSV cell is never a link)


def _is_number(c: str) -> bool:
    try:
        float(c)
        return True
    except ValueError:
        return False


def test_csv_bytes_neutralises_text_and_headers_but_not_numbers():
    frame = pd.DataFrame({"=HYPERLINK(\"x\")": ["=1+1", "-5 units", "plain", None], "n": [-1.5, 2.0, 3.0, 4.0]})
    rows = _cells(csv_bytes(frame))
    assert rows[0] == ["'=HYPERLINK(\"x\")", "n"]
    assert [r[0] for r in rows[1:]] == ["'=1+1", "'-5 units", "plain", ""]
    assert [r[1] for r in rows[1:]] == ["-1.5", "2.0", "3.0", "4.0"]  # negative numbers stay numbers
    assert routing_csv(frame) == csv_bytes(frame)


def test_every_csv_writer_goes_through_the_one_function():
    """No module writes a CSV of user text except through core.textsafety.csv_bytes (the template is ours)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    offenders = []
    for path in [*root.glob("core/**/*.py"), *root.glob("dashboard/**/*.py")]:
        text = path.read_text(encoding="utf-8")
        if ".to_csv(" in text and path.name != "textsafety.py":
            offenders.append(str(path.relative_to(root)))
    assert offenders == []


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=30))
def test_no_csv_cell_can_start_a_formula(text):
    rows = _cells(csv_bytes(pd.DataFrame({"c": [text]})))
    cell = rows[1][0] if len(rows) > 1 and rows[1] else ""
    assert cell.lstrip(" ")[:1] not in FORMULA_PREFIXES or cell.startswith("'")
    assert neutralise(neutralise(text)) == neutralise(text)


# -- Markdown on pages --------------------------------------------------------------------------

_UNESCAPED = re.compile(r"(?<!\\)[\[\]<>`*$|~@]")


@pytest.mark.parametrize("text", [
    IMAGE, "[click](https://evil.example)", "https://evil.example/x", "www.evil.example", "mail@evil.example",
    "<img src=x onerror=alert(1)>", ":red[alarm] :material/warning:", "$x^2$", "**bold** _it_ ~~s~~ `c`",
    "# heading", "- list item", "> quote", "1. numbered", "a | b",
])
def test_markdown_escaping_leaves_no_link_image_or_markup(text):
    out = escape_markdown(text)
    assert not _UNESCAPED.search(out), out
    assert "://" not in out.replace("\\://", "")  # no live URL scheme
    assert "www." not in out.lower().replace("www\\.", "")
    assert not re.match(r"\s*([#>+=-]|\d+[.)])", out)  # no heading, quote or list at the start


@settings(max_examples=80, deadline=None)
@given(st.text(max_size=60))
def test_markdown_escaping_shows_the_text_itself(text):
    """CommonMark shows a backslash-escaped character as itself: dropping the escapes gives the text back."""
    out = escape_markdown(text)
    shown = re.sub(r"\\(.)", r"\1", out, flags=re.S).replace("  \n", "\n")
    expected = text.replace("\r\n", "\n").replace("\r", "\n").replace("  \n", "\n")
    assert shown == expected
    assert not _UNESCAPED.search(out)


def test_md_in_pages_is_the_core_rule():
    from dashboard.format import md

    assert md(IMAGE) == escape_markdown(IMAGE)
    assert md("no savings_1y price") == "no savings_1y price"  # plain messages read the same


# -- Plotly -------------------------------------------------------------------------------------


def test_escape_plotly_turns_tags_into_text():
    assert escape_plotly(LINK) == "&lt;a href='https://evil.example/x'&gt;w&lt;/a&gt;"
    assert list(escape_plotly(pd.Series(["<b>x</b>", 3, None]))) == ["&lt;b&gt;x&lt;/b&gt;", 3, None]
    assert escape_plotly(["a&b", 1]) == ["a&amp;b", 1]
    assert escape_plotly("plain") == "plain"


def _strings(fig) -> list[str]:
    """Every text-like value a figure would draw: text, customdata, category axes, hover."""
    out = []
    for tr in fig.data:
        for attr in ("text", "customdata", "x", "y", "hovertext"):
            v = getattr(tr, attr, None)
            if v is None:
                continue
            flat = v if isinstance(v, str) else pd.Series(pd.DataFrame(v).to_numpy().ravel()) if hasattr(v, "__len__") else [v]
            out += [s for s in (flat if isinstance(flat, list) else flat.tolist()) if isinstance(s, str)]
    return out


def test_workload_ids_in_charts_cannot_become_links(hostile_ev):
    fig = charts.routing_map_chart(views.routing_map(hostile_ev))
    drawn = _strings(fig)
    assert any("&lt;a href=" in s for s in drawn)
    assert not any("<a " in s for s in drawn)


@pytest.mark.slow
def test_hostile_text_in_an_uploaded_inventory_is_escaped_on_the_page(tmp_path, monkeypatch):
    """A column header like ![x](https://…) is echoed in the upload warning as literal text."""
    import streamlit
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("HANGOVER_DB", str(tmp_path / "page.duckdb"))
    streamlit.cache_resource.clear()
    streamlit.cache_data.clear()
    from pathlib import Path

    app = Path(__file__).resolve().parents[1] / "dashboard" / "app.py"
    at = AppTest.from_file(str(app), default_timeout=90)
    at.run()
    at.switch_page("screens/workloads.py").run()
    sample = sample_workloads_path().read_text()
    header, rest = sample.split("\n", 1)
    lines = [header + "," + IMAGE] + [line + ",x" for line in rest.splitlines() if line]
    data = ("\n".join(lines) + "\n").encode()
    at.file_uploader(key="wl_upload").set_value(("evil.csv", data, "text/csv")).run()
    shown = [e.value for e in [*at.warning, *at.error, *at.caption, *at.success]]
    assert any("beacon" in s for s in shown), shown
    assert not any(re.search(r"(?<!\\)[\[\]]", s) or re.search(r"(?<!\\):/", s) for s in shown), shown
    streamlit.cache_resource.clear()
    streamlit.cache_data.clear()
