"""User text made inert: no spreadsheet formula in a CSV/XLSX/report, no link or markup on a dashboard page or chart."""

from __future__ import annotations

import re

import pandas as pd

from core.format import integer

# OWASP "CSV Injection": a cell starting with one of these may be evaluated by
# Excel, LibreOffice or Google Sheets (=, +, -, @ start formulas; tab and CR
# are used to smuggle them past naive checks).
FORMULA_PREFIXES: tuple[str, ...] = ("=", "+", "-", "@", "\t", "\r")

# Leading spaces do not stop some spreadsheets from evaluating " =1+1".
_FORMULA_PATTERN = r"^ *[=+\-@\t\r]"


def is_formula_like(s: str) -> bool:
    """True when a spreadsheet could read this text as a formula."""
    if not isinstance(s, str):
        return False
    head = s.lstrip(" ")
    return bool(head) and head[0] in FORMULA_PREFIXES


def neutralise(s: str) -> str:
    """Prefix a single quote to formula-like text (OWASP) so it is shown, not run; other text is unchanged."""
    return "'" + s if is_formula_like(s) else s


def neutralise_series(series: pd.Series) -> pd.Series:
    """`neutralise` over a whole column; missing values and non-text columns pass through unchanged."""
    if not (pd.api.types.is_object_dtype(series) or pd.api.types.is_string_dtype(series)):
        return series
    try:
        # On object columns .str yields NaN for non-text cells (numbers stay numbers): na=False skips them.
        risky = series.str.contains(_FORMULA_PATTERN, regex=True, na=False).astype(bool)
    except AttributeError:  # an object column holding no text at all
        return series
    if not risky.any():
        return series
    out = series.copy()
    out[risky] = "'" + series[risky].astype(str)
    return out


def neutralise_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of the frame with every text cell and every column name neutralised (numbers stay numbers)."""
    out = frame.copy()
    for c in out.columns:
        out[c] = neutralise_series(out[c])
    out.columns = [neutralise(c) if isinstance(c, str) else c for c in out.columns]
    return out


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """The frame as UTF-8 CSV with formula-like text neutralised: the one way the product writes a CSV."""
    return neutralise_frame(frame).to_csv(index=False).encode("utf-8")


# -- text shown in the dashboard ---------------------------------------------------------

# What can turn text into a link, an image or markup when Streamlit renders it as Markdown (CommonMark +
# GFM + its own directives), each escaped with a backslash (CommonMark shows an escaped character as itself):
# code, emphasis, links and images ([ ]), raw HTML and <autolinks>, LaTeX ($), tables (|), strikethrough (~);
# ':' before a letter or '/' (Streamlit's :red[...] / :material/x: directives, emoji codes, "http://"); '@'
# (GFM email autolinks); the '.' of "www." (GFM www autolinks); '_' at a word's edge (intraword underscores,
# as in savings_1y, are not emphasis); and a line's leading '#', '>', '-', '+', '=' or "1." (headings,
# quotes, lists). Plain words, numbers and punctuation are left as they are, so messages read the same.
_ALWAYS = re.compile(r"([\\`*\[\]<>$|~@])")
_COLON = re.compile(r":(?=[A-Za-z/])")
_WWW = re.compile(r"(?i)\b(www)\.")
_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_LINE_START = re.compile(r"^(\s*)([#>+=-]|\d+[.)])")


def _escape_line_start(m: re.Match) -> str:
    mark = m[2]
    return m[1] + (mark[:-1] + "\\" + mark[-1] if mark[0].isdigit() else "\\" + mark)


def escape_markdown(text: object) -> str:
    """User text made literal for st.markdown / st.caption / st.warning / st.error: never a link, image or markup.

    Line breaks stay line breaks; ordinary words, numbers and punctuation are unchanged.
    """
    lines = str(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out = []
    for line in lines:
        line = _ALWAYS.sub(r"\\\1", line)
        line = _COLON.sub(r"\\:", line)
        line = _WWW.sub(r"\1\\.", line)
        line = _EDGE_UNDERSCORE.sub(r"\\_", line)
        line = _LINE_START.sub(_escape_line_start, line)
        out.append(line)
    return "  \n".join(out)


def escape_markdown_frame(frame) -> pd.DataFrame:
    """A copy of a frame (or records) for st.table, whose cells and headers Streamlit renders as Markdown: every
    text cell and every column name through escape_markdown (numbers and missing values stay as they are)."""
    out = frame.copy() if isinstance(frame, pd.DataFrame) else pd.DataFrame(frame)
    for c in out.columns:
        col = out[c]
        if pd.api.types.is_object_dtype(col) or pd.api.types.is_string_dtype(col):
            out[c] = col.map(lambda v: escape_markdown(v) if isinstance(v, str) else v).astype(object)
    out.columns = [escape_markdown(c) if isinstance(c, str) else c for c in out.columns]
    return out


def escape_plotly(value):
    """User text for Plotly text, hover and labels: '<', '>' and '&' as entities, so '<a href>' stays text.

    Accepts a string, a pandas Series or any iterable of values (non-text values pass through).
    """
    if isinstance(value, pd.Series):
        if not (pd.api.types.is_object_dtype(value) or pd.api.types.is_string_dtype(value)):
            return value
        return value.map(lambda v: _escape_plotly_one(v) if isinstance(v, str) else v)
    if isinstance(value, str):
        return _escape_plotly_one(value)
    if isinstance(value, list | tuple):
        return type(value)(escape_plotly(v) for v in value)
    try:
        import numpy as np

        if isinstance(value, np.ndarray) and value.dtype == object:
            return np.array([escape_plotly(v) for v in value.tolist()], dtype=object).reshape(value.shape)
    except ImportError:  # pragma: no cover - numpy ships with pandas
        pass
    return value


def _escape_plotly_one(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# Longest piece of outside text (a URL parameter, a name) quoted back in a message; the rest is counted.
QUOTE_MAX_CHARS = 60


def clip(text: object, limit: int = QUOTE_MAX_CHARS) -> str:
    """Text quoted in a message, cut to `limit` characters with the full length said (a 20,000-character URL
    parameter must not fill the sidebar)."""
    s = str(text)
    return s if len(s) <= limit else f"{s[:limit]}… ({integer(len(s))} characters)"

