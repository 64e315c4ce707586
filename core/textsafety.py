"""Spreadsheet formula injection: spot text a spreadsheet would run as a formula, and defuse it."""

from __future__ import annotations

import pandas as pd

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
