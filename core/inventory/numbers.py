"""Numbers as Excel writes them in every locale: one rule table, and no guess where a cell is ambiguous.

A cell is read by the first rule that matches its own form ("0,85", "1.234,5",
"1,234.5", "1 234", "1'234.5", "1,00,000", "1.5E3"). Only a cell with one
separator followed by exactly three digits ("40.000", "1,000") can be read two
ways: forty thousand where that separator groups thousands, forty where it is
the decimal point. Such a cell is settled, in this order, by

1. the decimal separator the user chose (``decimal=","`` or ``"."``);
2. a comma-separated CSV: Excel writes ',' between cells only where '.' is the
   decimal separator (locales with a decimal comma use ';'), so '.' it is;
3. the file's own unambiguous cells, when they all agree: "0,85", "1.234,5" or
   "1.234.567" say the decimal separator is ','; "0.85", "1,234.5" or
   "1,234,567" say '.';
4. otherwise nothing: the cell is reported as ambiguous, naming its column, and
   the user is asked to choose.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core.inventory.raw import WHITESPACE, trim

_SIGN = r"^[+-]?"
PLAIN = _SIGN + r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$"
AMBIGUOUS = _SIGN + r"[1-9]\d{0,2}[.,]\d{3}$"
_DOT_GROUPS = _SIGN + r"[1-9]\d{0,2}(?:\.\d{3})+(?:,\d*)?$"
_COMMA_GROUPS = _SIGN + r"[1-9]\d{0,2}(?:,\d{3})+(?:\.\d*)?$"
_INDIAN_GROUPS = _SIGN + r"[1-9]\d?(?:,\d{2})+,\d{3}(?:\.\d*)?$"  # en-IN: 1,00,000
_SPACE_CHARS = " \u00a0\u202f'\u2019"
_SPACE_GROUPS = _SIGN + r"[1-9]\d{0,2}(?:[" + _SPACE_CHARS + r"]\d{3})+(?:[.,]\d*)?$"
DECIMAL_COMMA = _SIGN + r"(?:\d+,\d*|,\d+)(?:[eE][+-]?\d+)?$"
# Cells that settle the decimal separator (the ambiguous form excluded by the caller).
_SAYS_COMMA = (DECIMAL_COMMA, _SIGN + r"[1-9]\d{0,2}(?:\.\d{3})+,\d*$", _SIGN + r"[1-9]\d{0,2}(?:\.\d{3}){2,}$",
               _SIGN + r"[1-9]\d{0,2}(?:[" + _SPACE_CHARS + r"]\d{3})+,\d*$")
_SAYS_POINT = (_SIGN + r"\d*\.\d+(?:[eE][+-]?\d+)?$", _SIGN + r"[1-9]\d{0,2}(?:,\d{3})+\.\d*$",
               _SIGN + r"[1-9]\d{0,2}(?:,\d{3}){2,}$", _INDIAN_GROUPS,
               _SIGN + r"[1-9]\d{0,2}(?:[" + _SPACE_CHARS + r"]\d{3})+\.\d*$")
_PERCENT = r"[\s\x{00a0}\x{202f}]*%$"


def match(a: pa.Array, pattern: str) -> np.ndarray:
    """Mask of cells matching a regular expression (null = no)."""
    return pc.fill_null(pc.match_substring_regex(a, pattern), False).to_numpy(zero_copy_only=False)


def contains(a: pa.Array, text: str) -> np.ndarray:
    """Mask of cells containing `text` (null = no)."""
    return pc.fill_null(pc.match_substring(a, text), False).to_numpy(zero_copy_only=False)


def valid(a: pa.Array) -> np.ndarray:
    """Mask of non-null cells."""
    return pc.is_valid(a).to_numpy(zero_copy_only=False)


def _candidates(a: pa.Array, exact: np.ndarray | None) -> np.ndarray:
    """Cells that hold a '.' or ',' (typed spreadsheet numbers excluded): the only ones that can be ambiguous."""
    m = contains(a, ".") | contains(a, ",")
    if exact is not None:
        m &= ~exact
    return m


def is_ambiguous(sub: pa.Array) -> np.ndarray:
    """Mask of trimmed cells such as "40.000" or "1,000" (one separator, three digits after it).

    The regular expression runs only on cells whose first separator stands
    three characters from the end (two cheap kernels), so a million-row
    column costs milliseconds.
    """
    out = np.zeros(len(sub), dtype=bool)
    length = pc.utf8_length(sub)
    cand = np.zeros(len(sub), dtype=bool)
    for sep in ".,":
        pos = pc.find_substring(sub, sep)
        hit = pc.and_(pc.greater(pos, 0), pc.equal(pc.subtract(length, pos), 4))
        cand |= pc.fill_null(hit, False).to_numpy(zero_copy_only=False)
    if cand.any():
        idx = np.flatnonzero(cand)
        out[idx] = match(sub.take(pa.array(idx)), AMBIGUOUS)
    return out


def ambiguous_cells(a: pa.Array, exact: np.ndarray | None = None, share: bool = False) -> np.ndarray:
    """Mask of cells such as "40.000" or "1,000" (typed workbook numbers never are)."""
    t = trim(a)
    if share and contains(t, "%").any():
        t = _strip_percent(t)[0]
    out = is_ambiguous(t)
    if exact is not None:
        out &= ~exact
    return out


def decide_decimal(columns: Sequence[tuple[pa.Array, np.ndarray | None, bool]]) -> tuple[str | None, str]:
    """The decimal separator the file's own cells agree on, and an example cell saying so ('' if none or both)."""
    comma: str | None = None
    point: str | None = None
    for a, exact, share in columns:
        cand = _candidates(a, exact)
        if not cand.any():
            continue
        sub = trim(a.filter(pa.array(cand)))
        if share:
            sub = _strip_percent(sub)[0]
        unambiguous = ~is_ambiguous(sub)
        for patterns, side in ((_SAYS_COMMA, ","), (_SAYS_POINT, ".")):
            hit = np.zeros(len(sub), dtype=bool)
            for p in patterns:
                hit |= match(sub, p)
            hit &= unambiguous
            if hit.any():
                example = sub[int(np.flatnonzero(hit)[0])].as_py()
                if side == "," and comma is None:
                    comma = example
                if side == "." and point is None:
                    point = example
    if comma is not None and point is None:
        return ",", comma
    if point is not None and comma is None:
        return ".", point
    return None, ""


def _strip_percent(a: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """("95 %" -> "95", mask of cells that carried a percent sign)."""
    pct = match(a, _PERCENT)
    if not pct.any():
        return a, pct
    stripped = pc.utf8_trim(pc.replace_substring_regex(a, _PERCENT, ""), characters=WHITESPACE)
    return pc.if_else(pa.array(pct), stripped, a), pct


def parse_numbers(a: pa.Array, decimal: str | None, *, exact: np.ndarray | None = None,
                  share: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Text as typed (null = blank) -> (float64 values, NaN for blank/bad/ambiguous; bad; present; ambiguous).

    `exact` marks cells that were real numbers in a workbook (their text is the
    number's own digits, never ambiguous). `share` accepts "95%" as 0.95.
    """
    n = len(a)
    given = valid(a)
    values = np.full(n, np.nan)
    present = given.copy()
    if exact is not None and (typed := given & exact).any():
        # A workbook's typed numbers: their own digits in the plain form, never ambiguous, never careful.
        values[typed] = pc.cast(a.filter(pa.array(typed)), pa.float64()).to_numpy(zero_copy_only=False)
        given = given & ~exact
    # Fast path: Arrow's cast reads exactly the plain form (digits, sign, '.', exponent;
    # plus nan/inf, caught below). Cells with a comma, or a '.' where '.' may group
    # thousands, go the careful way, as does every cell of a column where the cast
    # fails (padding, text, locale forms, percentages).
    risky = contains(a, ",")
    if decimal != ".":
        risky |= contains(a, ".")
    fast = given & ~risky
    careful = given & risky
    if fast.any():
        try:
            if not careful.any() and exact is None:  # the usual case: cast the whole column, blanks stay NaN
                values = np.array(pc.cast(a, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
            else:
                values[fast] = pc.cast(a.filter(pa.array(fast)), pa.float64()).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            careful = given
    bad = np.zeros(n, dtype=bool)
    ambiguous = np.zeros(n, dtype=bool)
    rest = np.flatnonzero(careful)
    if len(rest):
        sub = trim(a.take(pa.array(rest)))
        pct = np.zeros(len(sub), dtype=bool)
        if share:
            sub, pct = _strip_percent(sub)
        parsed, ok, amb = parse_careful(sub, decimal)
        if pct.any():
            # 95% -> 0.95 exactly as float("0.95"): shift the decimal text, not the binary value.
            parsed[pct] = np.nan
            ok[pct] &= ~amb[pct]
            shifted = _percent_values(sub, pct & ok, decimal)
            parsed[pct & ok] = shifted
            ok[pct] &= ~np.isnan(parsed[pct])
        values[rest] = parsed
        blank = ~valid(sub)
        present[rest[blank]] = False
        ambiguous[rest[amb & ~blank]] = True
        bad[rest[~ok & ~amb & ~blank]] = True
    # inf/nan from "1e999" or "nan" are not usable figures; -0.0 + 0.0 == 0.0 keeps checksums stable.
    bad |= present & ~ambiguous & ~np.isfinite(values)
    values[bad | ambiguous] = np.nan
    return values + 0.0, bad, present, ambiguous


def _percent_values(sub: pa.Array, mask: np.ndarray, decimal: str | None) -> np.ndarray:
    """Values of percentage cells, from their canonical text with the exponent lowered by two."""
    if not mask.any():
        return np.array([], dtype=np.float64)
    canon = _canonical(sub.filter(pa.array(mask)), decimal)
    has_exponent = contains(canon, "e") | contains(canon, "E")
    text = pc.binary_join_element_wise(canon, pa.scalar("e-2"), "")
    out = np.array(pc.cast(pc.if_else(pa.array(has_exponent), pa.scalar(None, pa.string()), text),
                           pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
    return out


def parse_careful(sub: pa.Array, decimal: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Locale forms, rule by rule (first match wins): (values, mask of cells a rule read, mask of ambiguous cells)."""
    if decimal != ".":
        # Most cells of a decimal-comma file read "0,85". No earlier rule reads such a cell
        # differently (an ambiguous "1,000" aside, left to the rules), so the last rule's answer
        # is given at once.
        quick = match(sub, DECIMAL_COMMA)
        if decimal is None and quick.any():
            quick &= ~is_ambiguous(sub)
        if quick.any():
            values = np.full(len(sub), np.nan)
            values[quick] = pc.cast(pc.replace_substring(sub.filter(pa.array(quick)), ",", "."),
                                    pa.float64()).to_numpy(zero_copy_only=False)
            rest = np.flatnonzero(~quick)
            amb = np.zeros(len(sub), dtype=bool)
            if len(rest):
                values[rest], ok, amb_rest = parse_rules(sub.take(pa.array(rest)), decimal)
                quick[rest] = ok
                amb[rest] = amb_rest
            return values, quick, amb
    return parse_rules(sub, decimal)


def _canonical(sub: pa.Array, decimal: str | None) -> pa.Array:
    """Every cell rewritten in the plain form Arrow casts (null where no rule reads it)."""
    canon, _, _ = _rules(sub, decimal)
    return canon


def _rules(sub: pa.Array, decimal: str | None) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    canon = pa.nulls(len(sub), pa.string())
    done = np.zeros(len(sub), dtype=bool)

    def rule(pattern: str | np.ndarray, converted: pa.Array) -> None:
        nonlocal canon
        hit = (match(sub, pattern) if isinstance(pattern, str) else pattern) & ~done
        if hit.any():
            canon = pc.if_else(pa.array(hit), converted, canon)
            done[hit] = True

    amb = is_ambiguous(sub)
    if decimal == ".":
        rule(amb, pc.replace_substring(sub, ",", ""))
    elif decimal == ",":
        rule(amb, pc.replace_substring(pc.replace_substring(sub, ".", ""), ",", "."))
    else:
        done |= amb  # left unread: reported as ambiguous
    no_spaces = pc.replace_substring_regex(sub, "[" + _SPACE_CHARS + "]", "")
    rule(PLAIN, sub)
    rule(_DOT_GROUPS, pc.replace_substring(pc.replace_substring(sub, ".", ""), ",", "."))
    rule(_COMMA_GROUPS, pc.replace_substring(sub, ",", ""))
    rule(_INDIAN_GROUPS, pc.replace_substring(sub, ",", ""))
    rule(_SPACE_GROUPS, pc.replace_substring(no_spaces, ",", "."))
    rule(DECIMAL_COMMA, pc.replace_substring(sub, ",", "."))
    unread = amb if decimal is None else np.zeros(len(sub), dtype=bool)
    return canon, done & ~unread, unread


def parse_rules(sub: pa.Array, decimal: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The full rule cascade: (values, mask of cells a rule read, mask of ambiguous cells left unread)."""
    canon, done, amb = _rules(sub, decimal)
    values = np.full(len(sub), np.nan)
    if done.any():
        values[done] = pc.cast(canon.filter(pa.array(done)), pa.float64()).to_numpy(zero_copy_only=False)
    return values, done, amb
