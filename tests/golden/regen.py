"""Regenerate the golden files (run from the repo root): `python tests/golden/regen.py`.

Three scenarios, each run through the real commands on a fresh store seeded
from data/ (so the bundled sample is read, never a stored inventory):
`hangover evaluate --format json` and `hangover report --out` in .xlsx,
.html and .md. The report clock is fixed (SOURCE_DATE_EPOCH = GENERATED) so
dates inside the files do not move; the generation timestamp is normalised
as well. Each artefact is stored in a small, diffable golden form:

- `evaluate.json`: the JSON contract (re-indented: one short object per line);
- `report.md`: the brief, timestamp normalised;
- `report.html.txt` and `report.html.charts.json`: the one-pager's text
  (headings, paragraphs, tables as pipe rows) and the chart traces; the
  ~5 MB of inline plotly.js is not stored;
- `report.xlsx.json`: every sheet's cell values, read back with openpyxl.

tests/test_golden.py regenerates into a temp folder and compares. A number
that changes on purpose: run this script, review the diff, name the change in
the commit message.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import html
import io
import json
import math
import os
import re
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

GOLDEN_DIR = Path(__file__).resolve().parent
REPO_ROOT = GOLDEN_DIR.parents[1]

# Scenario name -> the scenario flags given to both commands.
SCENARIOS: dict[str, list[str]] = {
    "sample_full": ["--cost-basis", "full"],
    "sample_marginal": ["--cost-basis", "marginal"],
    # The fleet-option defect of issue 10 showed with 2 owned nodes under the marginal basis.
    "fleet2_marginal": ["--fleet-nodes", "2", "--cost-basis", "marginal"],
}
# The fixed report clock (any date works; this one is after every as_of in data/).
GENERATED = dt.datetime(2026, 1, 15, 9, 0, tzinfo=dt.UTC)
ARTEFACTS = ("evaluate.json", "report.md", "report.html.txt", "report.html.charts.json", "report.xlsx.json")

# "Generated 2026-01-15 09:00 UTC" in every format, and the HTML's <meta name="date">.
_STAMP = re.compile(r"(Generated:? )\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2})?( ?(UTC|[+-]\d{2}:?\d{2}|Z))?")
_META_DATE = re.compile(r'(<meta name="date" content=")[^"]*(")')


def normalise_stamps(text: str) -> str:
    """Replace the generation timestamp with a fixed marker (belt and braces: the clock is fixed too)."""
    return _META_DATE.sub(r"\1[generated]\2", _STAMP.sub(r"\1[generated]", text))


class _TextExtract(HTMLParser):
    """The one-pager's visible text: one line per heading, paragraph, list item and table row."""

    BLOCKS = {"h1", "h2", "h3", "p", "li", "tr", "title", "footer", "header", "div", "table", "ol", "ul", "tbody"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self._buf: list[str] = []
        self._cells: list[str] | None = None
        self._skip = 0

    def _flush(self):
        text = " ".join("".join(self._buf).split())
        if text:
            self.lines.append(text)
        self._buf = []

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self._skip += 1
        elif tag == "br":
            self._buf.append(" ")
        elif tag == "tr":
            self._flush()
            self._cells = []
        elif tag in ("td", "th") and self._cells is not None:
            self._buf = []
        elif tag in self.BLOCKS:
            self._flush()
            if tag in ("h1", "h2", "h3"):
                self._buf.append("#" * int(tag[1]) + " ")

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._skip -= 1
        elif tag in ("td", "th") and self._cells is not None:
            self._cells.append(" ".join("".join(self._buf).split()))
            self._buf = []
        elif tag == "tr" and self._cells is not None:
            self.lines.append("| " + " | ".join(self._cells) + " |")
            self._cells = None
            self._buf = []
        elif tag in self.BLOCKS:
            self._flush()

    def handle_data(self, data):
        if not self._skip:
            self._buf.append(data)


def html_text(html_doc: str) -> str:
    """Headings, paragraphs and table rows of the one-pager as plain lines (scripts and styles left out)."""
    p = _TextExtract()
    p.feed(html_doc)
    p.close()
    return normalise_stamps("\n".join(p.lines) + "\n")


def _decode_typed(obj):
    """Plotly's binary arrays ({'dtype', 'bdata'}) back to plain lists, so goldens read as numbers."""
    if isinstance(obj, dict):
        if set(obj) >= {"dtype", "bdata"}:
            import numpy as np

            arr = np.frombuffer(base64.b64decode(obj["bdata"]), dtype=obj["dtype"])
            if "shape" in obj:
                arr = arr.reshape([int(n) for n in str(obj["shape"]).split(",")])
            return arr.tolist()
        return {k: _decode_typed(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_decode_typed(v) for v in obj]
    return obj


def html_charts(html_doc: str) -> list[dict]:
    """Every chart's id, title and data: inline SVG charts (issue 14) by their <title> texts (the chart's title,
    then one per bar: 'route: $72,314/month', '09:00: 15% interactive + 0% batch'); Plotly.newPlot calls by
    their traces."""
    charts = []
    for m in re.finditer(r'<svg id="([^"]+)"[^>]*>(.*?)</svg>', html_doc, re.S):
        titles = [html.unescape(t) for t in re.findall(r"<title[^>]*>(.*?)</title>", m.group(2), re.S)]
        charts.append({"id": m.group(1), "title": titles[0] if titles else None, "bars": titles[1:]})
    dec = json.JSONDecoder()
    for m in re.finditer(r"Plotly\.newPlot\(\s*", html_doc):
        pos = m.end()
        values = []
        for _ in range(3):  # div id, data, layout
            value, end = dec.raw_decode(html_doc, pos)
            values.append(value)
            pos = end
            while html_doc[pos] in " \n\t,":
                pos += 1
        div_id, data, layout = values
        charts.append({"id": div_id, "title": (layout.get("title") or {}).get("text"),
                       "traces": _decode_typed(data)})
    return charts


def _cell_value(v):
    if isinstance(v, dt.datetime):
        return v.date().isoformat() if v.time() == dt.time(0) else v.isoformat()
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, str):
        return normalise_stamps(v)
    return v


def xlsx_cells(data: bytes) -> dict[str, list[list]]:
    """Every sheet's cell values (rows with trailing blanks trimmed), read back through openpyxl."""
    import openpyxl

    wb = openpyxl.load_workbook(io.BytesIO(data), data_only=True)
    out = {}
    for ws in wb.worksheets:
        rows = []
        for row in ws.iter_rows(values_only=True):
            vals = [_cell_value(v) for v in row]
            while vals and vals[-1] is None:
                vals.pop()
            rows.append(vals)
        while rows and not rows[-1]:
            rows.pop()
        out[ws.title] = rows
    return out


def _compact(obj, indent: str = "", width: int = 160) -> str:
    """JSON with every value that fits in `width` characters on one line: small files, line-per-row diffs."""
    flat = json.dumps(obj, ensure_ascii=False)
    if len(flat) + len(indent) <= width or not isinstance(obj, dict | list) or not obj:
        return flat
    if isinstance(obj, list) and not any(isinstance(v, dict | list) for v in obj):
        return flat  # a sheet row stays one line however long
    inner = indent + " "
    if isinstance(obj, dict):
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {_compact(v, inner, width).lstrip()}"
                 for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    items = [inner + _compact(v, inner, width).lstrip() for v in obj]
    return "[\n" + ",\n".join(items) + "\n" + indent + "]"


def _dump(obj) -> str:
    return _compact(obj) + "\n"


def _run_cli(argv: list[str]) -> str:
    from core.cli import main

    # A text stream over bytes: commands may write through sys.stdout.buffer (binary formats).
    raw, err = io.BytesIO(), io.StringIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    out.flush()
    if code != 0:
        raise RuntimeError(f"hangover {' '.join(argv)} exited {code}: {err.getvalue().strip()}")
    return raw.getvalue().decode("utf-8")


@contextlib.contextmanager
def _fixed_clock():
    old = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = str(int(GENERATED.timestamp()))
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("SOURCE_DATE_EPOCH", None)
        else:
            os.environ["SOURCE_DATE_EPOCH"] = old


def generate(out_dir: Path, work_dir: Path | None = None) -> list[Path]:
    """Write every scenario's golden artefacts under out_dir/<scenario>/; returns the files written."""
    out_dir = Path(out_dir)
    written = []
    with tempfile.TemporaryDirectory() as tmp, _fixed_clock():
        work = Path(work_dir or tmp)
        db = str(work / "golden.duckdb")  # fresh store: seeded from data/, no stored inventory
        for name, flags in SCENARIOS.items():
            target = out_dir / name
            target.mkdir(parents=True, exist_ok=True)
            raw = _run_cli(["--db", db, "evaluate", "--format", "json", *flags])
            files = {"evaluate.json": _dump(json.loads(raw))}
            # One evaluation writes the three formats (report --out repeated), as a user asking for all three would.
            reports = {ext: work / f"{name}.{ext}" for ext in ("md", "html", "xlsx")}
            outs = [arg for path in reports.values() for arg in ("--out", str(path))]
            _run_cli(["--db", db, "report", *outs, *flags])
            files["report.md"] = normalise_stamps(reports["md"].read_text(encoding="utf-8"))
            html_doc = reports["html"].read_text(encoding="utf-8")
            files["report.html.txt"] = html_text(html_doc)
            files["report.html.charts.json"] = _dump(html_charts(html_doc))
            files["report.xlsx.json"] = _dump(xlsx_cells(reports["xlsx"].read_bytes()))
            for fname, text in files.items():
                p = target / fname
                p.write_text(text, encoding="utf-8")
                written.append(p)
    return written


# Another numpy/BLAS moves the iterative solves (p95, sizing) at ~1e-7 relative; 1e-6 still catches a real
# change. Money also passes within half a cent (a $0.004 move on a $46k line is noise, not a new number).
REL_TOL = 1e-6
USD_ABS_TOL = 0.005


def same_json(a, b, rel: float = REL_TOL, where: str = "$") -> list[str]:
    """Differences between two parsed JSON values; numbers equal within a relative tolerance (money: or half a cent)."""
    if isinstance(a, bool) or isinstance(b, bool):  # True == 1 in Python; not in the contract
        return [] if type(a) is type(b) and a == b else [f"{where}: {a!r} != {b!r}"]
    if isinstance(a, int | float) and isinstance(b, int | float):
        abs_tol = USD_ABS_TOL if "usd" in where.rsplit(".", 1)[-1] else 1e-12
        if a == b or math.isclose(a, b, rel_tol=rel, abs_tol=abs_tol) or (a != a and b != b):  # NaN == NaN here
            return []
        return [f"{where}: {a!r} != {b!r}"]
    if isinstance(a, dict) and isinstance(b, dict):
        diffs = [f"{where}: key {k!r} only in {'golden' if k in a else 'new'}" for k in sorted(set(a) ^ set(b))]
        for k in a:
            if k in b:
                diffs += same_json(a[k], b[k], rel, f"{where}.{k}")
        return diffs
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: length {len(a)} != {len(b)}"]
        diffs = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            diffs += same_json(x, y, rel, f"{where}[{i}]")
        return diffs
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def main() -> int:
    """Regenerate tests/golden/<scenario>/* in place."""
    sys.path.insert(0, str(REPO_ROOT))
    for p in generate(GOLDEN_DIR):
        print(f"wrote {p.relative_to(REPO_ROOT)} ({p.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
