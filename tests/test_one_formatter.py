"""One formatter, one palette (issue 10): no number formatting outside core/format.py and no
colour literal outside core/presentation/palette.py, in core/ and dashboard/.

Number formatting is found in the code's string literals (docstrings and comments are not code):
f-string format specs with grouping, precision or a numeric type (`{x:,.0f}`, `{u:.0%}`, `{h:02d}`,
`{n:,}`), the same specs inside plain strings (`.format` templates, Plotly `%{y:.0%}`), printf
codes (`%,.2f`, `%d` for Streamlit) and bare d3 codes (`",.0f"`). Alignment alone (`{name:<22}`)
and dates (`{d:%Y-%m-%d}`) are not number formatting. Colours are `#rrggbb` / `#rrggbbaa`,
`rgb(`/`rgba(`/`hsl(` in string literals; `.streamlit/config.toml` is not Python and keeps the theme.

Use core.format (re-exported by core.presentation.format: money, percent, number, integer, plain, duration_ms, hour_of_day,
fmt, D3/hover, column_format/input_format) and core.presentation.palette instead.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("core", "dashboard")
FORMATTER = "core/format.py"
PALETTE = "core/presentation/palette.py"

# Files still formatting numbers themselves, each with the reason; an entry ending in "/" covers a folder.
# Remove an entry once its files are clean (test_allowlists_hold_only_files_that_still_need_them fails on an
# entry that is no longer needed).
FORMAT_ALLOWLIST: dict[str, str] = {
    # TODO(issue 10): content.py is being rewritten against the fleet plan; use format.fmt/money there.
    "core/presentation/report/content.py": "mid-rewrite (issue 11)",
    # TODO(issue 10): owned by other engineers, mid-change when the formatter landed; their messages and
    # CLI tables should call core.presentation.format (integer, plain, percent, money, number).
    "core/inventory/": "restructuring (error messages: row counts, bounds)",
    "core/performance/": "bench formats, import, calibration and hf_config messages",
    "core/commands/bench.py": "CLI table",
    "core/commands/perf.py": "CLI table",
    "core/commands/report.py": "CLI summary line",
    "core/commands/scenario.py": "CLI list",
    "core/commands/stacks.py": "CLI table",
    "core/scenarios.py": "scenario words (issue 14)",
    "core/store/store.py": "lock-wait message",
    "core/errorlog.py": "log size",
    "dashboard/screens/scenarios.py": "row count (issue 14)",
}
COLOR_ALLOWLIST: dict[str, str] = {
    # TODO(issue 10): the inventory template's header fill; use palette.SURFACE once core/inventory settles.
    "core/inventory/template.py": "restructuring",
}

_SPEC = re.compile(r"^(?:.?[<>=^])?[-+ ]?z?#?0?(?P<width>\d+)?(?P<group>[,_])?(?:\.(?P<prec>\d+))?(?P<type>[bcdeEfFgGnosxX%])?$")
_BRACED = re.compile(r"\{[^{}:]*:(?P<spec>[^{}]*)\}")
# A conversion letter followed by more letters is prose ("95 % interval"), not a printf code.
_PRINTF = re.compile(r"%[-+ 0#]*(?P<group>,)?\d*(?P<prec>\.\d+)?[dfeEgGi](?![a-zA-Z])")
_D3_BARE = re.compile(r"^\$?,?\.\d+~?[a-zA-Z%]$|^\$?,[dfegs%]$")
_COLOR = re.compile(r"#[0-9a-fA-F]{6}(?:[0-9a-fA-F]{2})?\b|\b(?:rgba?|hsla?)\(")


def _numeric_spec(spec: str) -> bool:
    """A format spec that formats a number: grouping, precision or a numeric presentation type."""
    m = _SPEC.match(spec)
    if not m:
        return False  # strftime (%Y-%m-%d) and the like
    # s is text; b, c, o, x, X write an integer's bits (a hash as hex), not a figure for people.
    return bool(m["group"] or m["prec"] is not None or (m["type"] and m["type"] in "deEfFgGn%"))


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def _string_hits(text: str) -> list[str]:
    hits = [m.group(0) for m in _BRACED.finditer(text) if _numeric_spec(m["spec"])]
    printf = list(_PRINTF.finditer(text))
    for m in printf:
        whole = text.count("%") == 1  # "%d", "$%.3f": a printf code on its own, not a strftime pattern
        if m["group"] or m["prec"] or whole:
            hits.append(m.group(0))
    if _D3_BARE.match(text):
        hits.append(text)
    return hits


def number_formatting(source: str) -> list[tuple[int, str]]:
    """(line, what) for every piece of number formatting in a module's code."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    for node in ast.walk(tree):  # a spec's own text is judged as a spec below, not as a string
        if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            skip |= {id(p) for p in node.format_spec.values}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            parts = node.format_spec.values
            spec = "".join(p.value for p in parts if isinstance(p, ast.Constant))
            nested = any(isinstance(p, ast.FormattedValue) for p in parts)
            # A nested width ({name:<{w}}) is layout; nested places or a numeric type ({x:.{d}f}) are not.
            numeric = re.search(r"[.,_]|[deEfFgGn%]$", spec) if nested else _numeric_spec(spec)
            if numeric:
                out.append((node.lineno, ":" + spec + ("{…}" if nested else "")))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            out += [(node.lineno, h) for h in _string_hits(node.value)]
    return sorted(set(out))


def colour_literals(source: str) -> list[tuple[int, str]]:
    """(line, literal) for every colour written into a module's strings."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out += [(node.lineno, m.group(0)) for m in _COLOR.finditer(node.value)]
    return sorted(set(out))


def _modules():
    for top in SCANNED:
        for p in sorted((ROOT / top).rglob("*.py")):
            yield p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8")


def _report(found: dict[str, list[tuple[int, str]]]) -> str:
    return "\n".join(f"{path}:{line}: {what}" for path, hits in found.items() for line, what in hits[:8])


def _listed(path: str, allowlist: dict[str, str]) -> bool:
    return any(path == entry or (entry.endswith("/") and path.startswith(entry)) for entry in allowlist)


def test_no_number_formatting_outside_the_formatter():
    found = {path: hits for path, src in _modules()
             if path != FORMATTER and not _listed(path, FORMAT_ALLOWLIST) and (hits := number_formatting(src))}
    assert not found, ("number formatting outside core/presentation/format.py (use money, percent, number, "
                       "integer, plain, duration_ms, hover/D3 or column_format from there):\n" + _report(found))


def test_no_colour_literal_outside_the_palette():
    found = {path: hits for path, src in _modules()
             if path != PALETTE and not _listed(path, COLOR_ALLOWLIST) and (hits := colour_literals(src))}
    assert not found, "colour literals outside core/presentation/palette.py:\n" + _report(found)


def test_allowlists_hold_only_files_that_still_need_them():
    sources = dict(_modules())

    def needed(entry: str, allowlist: dict[str, str], detect) -> bool:
        return any(detect(src) for path, src in sources.items() if _listed(path, {entry: ""}))

    stale = [e for e in FORMAT_ALLOWLIST if not needed(e, FORMAT_ALLOWLIST, number_formatting)]
    stale += [e for e in COLOR_ALLOWLIST if not needed(e, COLOR_ALLOWLIST, colour_literals)]
    assert not stale, f"these files are clean now: remove them from the allowlist: {stale}"


def test_the_detector_finds_what_it_should_and_nothing_else():
    code = '''
"""Docstring with {x:,.0f} and #3355cc is not code."""
a = f"{x:,.0f} {u:.0%} {h:02d} {n:,} {y:g} {z:.{d}f}"
b = "%{y:.0%} and {0:.2f}"
c = ("$%,.2f", "%d", ",.0f", ".0%")
ok = f"{name:<22} {when:%Y-%m-%d} {v!r} {s}" + "%Y-%m-%d %H:%M" + "," + "100 % busy" + "{}"
'''
    what = [w for _, w in number_formatting(code)]
    assert {":,.0f", ":.0%", ":02d", ":,", ":g", ":.f{…}"} <= set(what)
    assert {"{y:.0%}", "{0:.2f}", "%,.2f", "%d", ",.0f", ".0%"} <= set(what)
    assert not [w for w in what if any(k in w for k in ("<22", "%Y", "%H", "!r"))]
    assert [w for _, w in colour_literals('c = "#3355cc"; d = "rgba(0,0,0,0.5)"; e = "issue #123"')] == \
        ["#3355cc", "rgba("]
