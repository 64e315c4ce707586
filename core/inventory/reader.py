"""Workload inventory files: read CSV/XLSX, validate whole columns at once, write the template."""

from __future__ import annotations

import csv
import datetime as dt
import io
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core.models import DEFAULT_MIN_QUALITY, TASK_CLASSES, DataPolicy, Workload
from core.textsafety import FORMULA_PREFIXES

# -- the contract: columns, rules, help ------------------------------------------------

COLUMNS: tuple[str, ...] = tuple(Workload.model_fields)
NUMERIC_COLUMNS: tuple[str, ...] = (
    "requests_per_day",
    "peak_factor",
    "input_tokens",
    "output_tokens",
    "latency_slo_ms",
    "batch_window_hours",
    "min_quality",
    "cached_input_share",
)
ENUM_VALUES: dict[str, tuple[str, ...]] = {
    "data_policy": tuple(p.value for p in DataPolicy),
    "task_class": TASK_CLASSES,
}
TEXT_COLUMNS: tuple[str, ...] = ("workload_id", "name", "team", "notes")
OPTIONAL_TEXT_COLUMNS: tuple[str, ...] = ("team", "notes")
REQUIRED_COLUMNS: tuple[str, ...] = tuple(c for c, f in Workload.model_fields.items() if f.is_required())
DEFAULTS: dict[str, float] = {"peak_factor": float(Workload.model_fields["peak_factor"].default)}
SLO_OR_WINDOW = ("latency_slo_ms", "batch_window_hours")


@dataclass(frozen=True)
class NumberRule:
    """Allowed range of one numeric column (mirrors the bounds on core.models.Workload)."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    allowed: str = ""

    def outside(self, v: np.ndarray) -> np.ndarray:
        """Mask of values outside the range (NaN = blank, never outside)."""
        bad = np.zeros(v.shape, dtype=bool)
        with np.errstate(invalid="ignore"):
            if self.ge is not None:
                bad |= v < self.ge
            if self.gt is not None:
                bad |= v <= self.gt
            if self.le is not None:
                bad |= v > self.le
        return bad


NUMBER_RULES: dict[str, NumberRule] = {
    "requests_per_day": NumberRule(ge=0, allowed="a number >= 0 (requests per day)"),
    "peak_factor": NumberRule(ge=1, allowed="a number >= 1 (peak-hour rate / mean rate; blank = 3)"),
    "input_tokens": NumberRule(ge=0, allowed="a number >= 0 (mean input tokens per request)"),
    "output_tokens": NumberRule(ge=1, allowed="a number >= 1 (mean output tokens per request)"),
    "latency_slo_ms": NumberRule(gt=0, allowed="a number > 0 (p95 end-to-end target, ms)"),
    "batch_window_hours": NumberRule(gt=0, le=24, allowed="a number > 0 and <= 24 (hours)"),
    "min_quality": NumberRule(ge=0, le=1, allowed="a share between 0 and 1, or blank for the task-class default"),
    "cached_input_share": NumberRule(ge=0, le=1, allowed="a share between 0 and 1, or blank"),
}

# One line per column for the template's "Columns" sheet and the docs.
COLUMN_HELP: dict[str, tuple[str, str]] = {
    "workload_id": ("required", "Unique short id, e.g. kyc-overnight. Used to compare versions."),
    "name": ("required", "What the work is, in words a finance reader knows."),
    "team": ("optional", "Owning team."),
    "requests_per_day": ("required", "Requests per day, a number >= 0."),
    "peak_factor": ("optional (3)", "Peak-hour request rate / mean rate, >= 1. Blank means 3."),
    "input_tokens": ("required", "Mean input (prompt) tokens per request, >= 0."),
    "output_tokens": ("required", "Mean output (generated) tokens per request, >= 1."),
    "latency_slo_ms": (
        "one of two",
        "Interactive work: p95 end-to-end latency target in ms, > 0. Leave blank for offline work.",
    ),
    "batch_window_hours": (
        "one of two",
        "Offline work: hours the day's queue may take, > 0 and <= 24. Leave blank for interactive work.",
    ),
    "data_policy": ("required", "external_ok (may use a public API) or owned_only (must stay on your GPUs)."),
    "task_class": ("required", "extraction, code_completion, chat, agentic_step or reasoning."),
    "min_quality": (
        "optional",
        "Quality floor 0-1 as a share of a strong frontier model. Blank = default per task class: "
        + ", ".join(f"{k} {v:g}" for k, v in DEFAULT_MIN_QUALITY.items())
        + ".",
    ),
    "cached_input_share": ("optional", "Share of input tokens served from a prompt cache, 0-1."),
    "notes": ("optional", "Free text. Unknown extra columns are added here as 'column: value'."),
}

# One example per task class; the template shows them and the tests read them back.
EXAMPLE_ROWS: tuple[dict[str, object], ...] = (
    {"workload_id": "invoice-extract", "name": "Overnight invoice field extraction", "team": "Finance ops",
     "requests_per_day": 50000, "peak_factor": 1, "input_tokens": 2500, "output_tokens": 300,
     "batch_window_hours": 8, "data_policy": "owned_only", "task_class": "extraction",
     "cached_input_share": 0, "notes": "Example row: replace with your own"},
    {"workload_id": "ide-complete", "name": "Developer code completion", "team": "Engineering",
     "requests_per_day": 200000, "peak_factor": 4, "input_tokens": 2000, "output_tokens": 60,
     "latency_slo_ms": 500, "data_policy": "owned_only", "task_class": "code_completion",
     "min_quality": 0.8, "cached_input_share": 0.6, "notes": "Example row: replace with your own"},
    {"workload_id": "staff-chat", "name": "Internal chat assistant", "team": "All staff",
     "requests_per_day": 30000, "peak_factor": 3, "input_tokens": 1500, "output_tokens": 350,
     "latency_slo_ms": 8000, "data_policy": "external_ok", "task_class": "chat",
     "cached_input_share": 0.3, "notes": "Example row: replace with your own"},
    {"workload_id": "payments-agent", "name": "Payments operations agent step", "team": "Operations",
     "requests_per_day": 60000, "peak_factor": 3, "input_tokens": 4000, "output_tokens": 150,
     "latency_slo_ms": 2000, "data_policy": "owned_only", "task_class": "agentic_step",
     "min_quality": 0.85, "cached_input_share": 0.5, "notes": "Example row: replace with your own"},
    {"workload_id": "credit-memos", "name": "Credit-decision memos", "team": "Credit risk",
     "requests_per_day": 800, "peak_factor": 2, "input_tokens": 12000, "output_tokens": 1500,
     "batch_window_hours": 4, "data_policy": "external_ok", "task_class": "reasoning",
     "min_quality": 0.95, "notes": "Example row: replace with your own"},
)

# -- results -------------------------------------------------------------------

ERROR_COLUMNS = ("row", "column", "value", "problem")


@dataclass(frozen=True, eq=False)
class InventoryReport:
    """What reading or validating an inventory found.

    `frame` holds the validated workloads (exactly COLUMNS, index = row number
    as the user saw it) and is empty whenever `errors` is not. In `errors`,
    row 0 with an empty column means the file as a whole.
    """

    frame: pd.DataFrame
    errors: pd.DataFrame
    warnings: list[str] = field(default_factory=list)
    dialect: str = ""

    @property
    def ok(self) -> bool:
        """True when there is no error (the frame may be committed)."""
        return self.errors.empty

    def error_lines(self) -> list[str]:
        """One readable line per error, in row order."""
        out = []
        for r in self.errors.itertuples(index=False):
            if r.row == 0 and not r.column:
                out.append(f"file: {r.problem}")
            else:
                value = f" {r.value!r}:" if r.value != "" else ""
                out.append(f"row {r.row}, column '{r.column}':{value} {r.problem}")
        return out


def empty_frame() -> pd.DataFrame:
    """A frame with the inventory's columns and dtypes and no rows."""
    table = pa.table({c: pa.array([], pa.float64() if c in NUMERIC_COLUMNS else pa.string()) for c in COLUMNS})
    return frame_from_arrow(table, np.array([], dtype=np.int64))


def frame_from_arrow(table: pa.Table, row_numbers: np.ndarray) -> pd.DataFrame:
    """The one place the inventory frame is built: float64 numbers, required text as str, optional text as object/None."""
    index = pd.Index(np.asarray(row_numbers, dtype=np.int64), name="row")
    data: dict[str, pd.Series] = {}
    for c in COLUMNS:
        col = table.column(c)
        if c in NUMERIC_COLUMNS:
            values = np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)
            data[c] = pd.Series(values, index=index, dtype=np.float64, copy=False)
        elif c in OPTIONAL_TEXT_COLUMNS:
            # object, not pandas' str dtype: str would turn None into NaN.
            data[c] = pd.Series(col.to_numpy(zero_copy_only=False), index=index, dtype=object)
        else:
            data[c] = pd.Series(col.cast(pa.string()).to_pandas().array, index=index)
    return pd.DataFrame(data, index=index)


def _errors_frame(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """All error rows, sorted by row and then by the contract's column order."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame({c: pd.Series([], dtype=np.int64 if c == "row" else object) for c in ERROR_COLUMNS})
    out = pd.concat(parts, ignore_index=True)[list(ERROR_COLUMNS)]
    order = {c: i for i, c in enumerate(COLUMNS)}
    key = out["column"].astype(str).str.partition("/")[0].map(order).fillna(len(order))
    out = out.iloc[np.lexsort((key.to_numpy(), out["row"].to_numpy()))].reset_index(drop=True)
    out["row"] = out["row"].astype(np.int64)
    return out.astype({"column": object, "value": object, "problem": object})


def _error(row: int, column: str, value: str, problem: str) -> pd.DataFrame:
    return pd.DataFrame({"row": [row], "column": [column], "value": [value], "problem": [problem]})


def _cell_errors(rows: np.ndarray, column: str, values: pa.Array, mask: np.ndarray, problem: str) -> pd.DataFrame:
    """Error rows for every cell where `mask` is set (the raw text, as the user typed it)."""
    idx = np.flatnonzero(mask)
    if not len(idx):
        return pd.DataFrame()
    shown = values.take(pa.array(idx)).fill_null("").to_pylist()
    return pd.DataFrame({"row": rows[idx], "column": column, "value": shown, "problem": problem})


# -- raw table: what a reader hands to validation --------------------------------------


@dataclass
class _Raw:
    """Cells as text, one Arrow string array per file column, and the row number of each row."""

    header: list[str]
    columns: list[pa.Array]
    rows: np.ndarray
    header_row: int = 1
    decimal: str = "."
    dialect: str = ""
    warnings: list[str] = field(default_factory=list)
    blank_rows: np.ndarray = field(default_factory=lambda: np.array([], dtype=np.int64))  # dropped by the reader


class _FileProblem(Exception):
    """The file as a whole cannot be read; the message says what to do."""


# Python's str.strip() set, so stored text equals what pydantic (str_strip_whitespace) keeps.
_WHITESPACE = "".join(ch for ch in map(chr, range(sys.maxunicode + 1)) if ch.isspace())


def _trim(a: pa.Array) -> pa.Array:
    """Strip like str.strip(); blank cells become null."""
    t = pc.utf8_trim(a, characters=_WHITESPACE)
    empty = pc.equal(t, "")
    if not pc.any(empty).as_py():  # the usual case: DuckDB already made empty cells null
        return t
    return pc.if_else(empty, pa.scalar(None, pa.string()), t)


def _key(header: str) -> str:
    """Header matching ignores case, spaces, hyphens and underscores."""
    return re.sub(r"[\s_\-]+", "", str(header).lower())


_KNOWN = {_key(c): c for c in COLUMNS}

# -- numbers ---------------------------------------------------------------------
# Excel writes numbers the locale's way. A cell is read by the first rule that
# matches; only "1,000" and "1.000" (one group of three digits) are ambiguous,
# and the file's decimal separator settles those.
_SIGN = r"^[+-]?"
_PLAIN = _SIGN + r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$"
_DOT_GROUPS_ONLY = _SIGN + r"[1-9]\d{0,2}(?:\.\d{3})+$"
_COMMA_ONE_GROUP = _SIGN + r"[1-9]\d{0,2},\d{3}$"
_COMMA_GROUPS = _SIGN + r"[1-9]\d{0,2}(?:,\d{3})+(?:\.\d*)?$"
_DOT_GROUPS = _SIGN + r"[1-9]\d{0,2}(?:\.\d{3})+(?:,\d*)?$"
_SPACE_CHARS = " \u00a0\u202f'\u2019"
_SPACE_GROUPS = _SIGN + r"[1-9]\d{0,2}(?:[" + _SPACE_CHARS + r"]\d{3})+(?:[.,]\d*)?$"
_DECIMAL_COMMA = _SIGN + r"(?:\d+,\d*|,\d+)(?:[eE][+-]?\d+)?$"


def _match(a: pa.Array, pattern: str) -> np.ndarray:
    return pc.fill_null(pc.match_substring_regex(a, pattern), False).to_numpy(zero_copy_only=False)


def _contains(a: pa.Array, text: str) -> np.ndarray:
    return pc.fill_null(pc.match_substring(a, text), False).to_numpy(zero_copy_only=False)


def _valid(a: pa.Array) -> np.ndarray:
    return pc.is_valid(a).to_numpy(zero_copy_only=False)


def _parse_numbers(a: pa.Array, decimal: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Text as typed (null = blank) -> (float64, NaN for blank or bad; mask of bad cells; mask of non-blank cells)."""
    n = len(a)
    given = _valid(a)
    values = np.full(n, np.nan)
    # Fast path: Arrow's cast reads exactly the plain form (digits, sign, '.', exponent;
    # plus nan/inf, caught below). Cells with a comma, or a '.' in a decimal-comma
    # file, may be grouped numbers and go the careful way, as does every cell of a
    # column where the cast fails (padding, text, locale forms).
    risky = _contains(a, ",")
    if decimal == ",":
        risky |= _contains(a, ".")
    fast = given & ~risky
    careful = given & risky
    if fast.any():
        try:
            if not careful.any():  # the usual case: cast the whole column, blanks stay null -> NaN
                values = np.array(pc.cast(a, pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
            else:
                values[fast] = pc.cast(a.filter(pa.array(fast)), pa.float64()).to_numpy(zero_copy_only=False)
        except pa.ArrowInvalid:
            careful = given
    present = given.copy()
    bad = np.zeros(n, dtype=bool)
    rest = np.flatnonzero(careful)
    if len(rest):
        sub = _trim(a.take(pa.array(rest)))
        parsed, ok = _parse_careful(sub, decimal)
        values[rest] = parsed
        blank = ~_valid(sub)
        present[rest[blank]] = False
        bad[rest[~ok & ~blank]] = True
    # inf/nan from "1e999" or "nan" are not usable figures; -0.0 + 0.0 == 0.0 keeps checksums stable.
    bad |= present & ~np.isfinite(values)
    values[bad] = np.nan
    return values + 0.0, bad, present


def _parse_careful(sub: pa.Array, decimal: str) -> tuple[np.ndarray, np.ndarray]:
    """Locale forms, rule by rule (first match wins): (values, mask of cells a rule accepted)."""
    if decimal == ",":
        # Most cells of a decimal-comma file read "0,85". No earlier rule takes such a
        # cell in a decimal-comma file, so the last rule's answer can be given at once.
        quick = _match(sub, _DECIMAL_COMMA)
        if quick.any():
            values = np.full(len(sub), np.nan)
            hit = pa.array(quick)
            values[quick] = pc.cast(pc.replace_substring(sub.filter(hit), ",", "."),
                                    pa.float64()).to_numpy(zero_copy_only=False)
            rest = np.flatnonzero(~quick)
            if len(rest):
                values[rest], ok = _parse_rules(sub.take(pa.array(rest)), decimal)
                quick[rest] = ok
            return values, quick
    return _parse_rules(sub, decimal)


def _parse_rules(sub: pa.Array, decimal: str) -> tuple[np.ndarray, np.ndarray]:
    canon = pa.nulls(len(sub), pa.string())
    done = np.zeros(len(sub), dtype=bool)

    def rule(pattern: str, converted: pa.Array, exclude: np.ndarray | None = None) -> None:
        nonlocal canon
        hit = _match(sub, pattern) & ~done
        if exclude is not None:
            hit &= ~exclude
        if hit.any():
            canon = pc.if_else(pa.array(hit), converted, canon)
            done[hit] = True

    no_spaces = pc.replace_substring_regex(sub, "[" + _SPACE_CHARS + "]", "")
    rule(_PLAIN, sub, exclude=_match(sub, _DOT_GROUPS_ONLY) if decimal == "," else None)
    rule(_DOT_GROUPS, pc.replace_substring(pc.replace_substring(sub, ".", ""), ",", "."))
    rule(_COMMA_GROUPS, pc.replace_substring(sub, ",", ""),
         exclude=_match(sub, _COMMA_ONE_GROUP) if decimal == "," else None)
    rule(_SPACE_GROUPS, pc.replace_substring(no_spaces, ",", "."))
    rule(_DECIMAL_COMMA, pc.replace_substring(sub, ",", "."))
    values = np.full(len(sub), np.nan)
    if done.any():
        values[done] = pc.cast(canon.filter(pa.array(done)), pa.float64()).to_numpy(zero_copy_only=False)
    return values, done


def _sniff_decimal(columns: Sequence[pa.Array], default: str) -> str:
    """Decimal separator from unambiguous cells in a sample ("0,85" says comma, "0.85" says point)."""
    comma = point = 0
    for s in columns:
        comma += int((_match(s, _DECIMAL_COMMA) & ~_match(s, _COMMA_ONE_GROUP)).sum())
        comma += int(_match(s, _SIGN + r"[1-9]\d{0,2}(?:\.\d{3})+,\d*$").sum())
        point += int((_match(s, _PLAIN) & ~_match(s, _DOT_GROUPS_ONLY) & _contains(s, ".")).sum())
        point += int(_match(s, _SIGN + r"[1-9]\d{0,2}(?:,\d{3})+\.\d*$").sum())
    if comma and not point:
        return ","
    if point and not comma:
        return "."
    return default


# -- validation -------------------------------------------------------------------------


@dataclass
class _Column:
    """One file column after the per-column pass."""

    typed: pa.Array | np.ndarray  # trimmed text (null = blank) or float64 values
    present: np.ndarray  # cell is not blank
    bad: np.ndarray | None = None  # numbers: cell is not a usable number
    formula: np.ndarray | None = None  # text: cell starts like a formula
    unique: bool | None = None  # ids: no value repeats (blanks aside)


def _text_column(a: pa.Array, *, is_id: bool = False) -> _Column:
    t = _trim(a)
    # =, +, - and @ are one byte in UTF-8: compare the first byte, no decoding needed.
    first = pc.binary_slice(t.cast(pa.binary()), 0, 1)
    formula = pc.fill_null(pc.is_in(first, _FORMULA_BYTES), False).to_numpy(zero_copy_only=False)
    unique = None
    if is_id:  # hashing a million ids takes a while: do it here, alongside the other columns
        distinct = pc.unique(t)
        unique = len(distinct) - distinct.null_count == len(t) - t.null_count
    return _Column(typed=t, present=_valid(t), formula=formula, unique=unique)


def _number_column(a: pa.Array, decimal: str) -> _Column:
    values, bad, present = _parse_numbers(a, decimal)
    return _Column(typed=values, present=present, bad=bad)


_FORMULA_BYTES = pa.array([p.encode() for p in FORMULA_PREFIXES if p.strip()], pa.binary())


class _Checker:
    """Runs the column checks of one table and collects error rows and warnings."""

    def __init__(self, raw: _Raw):
        self.raw = raw
        self.warnings = list(raw.warnings)
        self.errors: list[pd.DataFrame] = []
        self.mapped: dict[str, int] = {}
        self.extras: list[int] = []

    def error_cells(self, column: str, values: pa.Array, mask: np.ndarray, problem: str) -> None:
        self.errors.append(_cell_errors(self.rows, column, values, mask, problem))

    def header(self) -> None:
        """Map file columns onto the contract (case-, space- and underscore-blind)."""
        raw, row = self.raw, self.raw.header_row
        for i, h in enumerate(raw.header):
            name = _KNOWN.get(_key(h))
            if name is None:
                self.extras.append(i)
            elif name in self.mapped:
                self.errors.append(_error(row, name, str(h), f"column appears twice (columns "
                                          f"{self.mapped[name] + 1} and {i + 1}); keep one"))
            else:
                self.mapped[name] = i
        seen = ", ".join(str(h) for h in raw.header if str(h).strip()) or "(nothing)"
        for c in REQUIRED_COLUMNS:
            if c not in self.mapped:
                self.errors.append(_error(row, c, "", f"required column is missing; the header row has: {seen}"))
        if not any(c in self.mapped for c in SLO_OR_WINDOW):
            self.errors.append(_error(row, "/".join(SLO_OR_WINDOW), "",
                                      "the file needs a latency_slo_ms column (interactive work), a "
                                      "batch_window_hours column (offline work), or both"))

    def columns(self) -> None:
        """Trim or parse every column, columns in parallel (Arrow releases the GIL), then drop blank rows."""
        numeric = {i for c, i in self.mapped.items() if c in NUMERIC_COLUMNS}
        decimal = self.raw.decimal
        id_column = self.mapped.get("workload_id")

        def work(i: int) -> _Column:
            a = self.raw.columns[i]
            return _number_column(a, decimal) if i in numeric else _text_column(a, is_id=i == id_column)

        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            self.cols = list(pool.map(work, range(len(self.raw.columns))))
        self.cells = list(self.raw.columns)
        self.rows = self.raw.rows
        # Rows with every cell blank (Excel leaves them about) are skipped and reported.
        if self.cols:
            blank = ~np.logical_or.reduce([col.present for col in self.cols])
        else:
            blank = np.ones(len(self.rows), dtype=bool)
        skipped = np.sort(np.concatenate([self.raw.blank_rows, self.rows[blank]]))
        if len(skipped):
            self.warnings.append(f"skipped {len(skipped)} blank row(s): {_some(skipped)}")
        if blank.any():
            keep, keep_np = pa.array(~blank), ~blank
            self.cols = [_Column(typed=c.typed[keep_np] if isinstance(c.typed, np.ndarray) else c.typed.filter(keep),
                                 present=c.present[keep_np],
                                 bad=None if c.bad is None else c.bad[keep_np],
                                 formula=None if c.formula is None else c.formula[keep_np],
                                 unique=c.unique) for c in self.cols]  # blank rows hold no id
            self.cells = [a.filter(keep) for a in self.cells]
            self.rows = self.rows[keep_np]
        self.n = len(self.rows)
        if self.n == 0:
            self.errors.append(_error(0, "", "", "the file has no workload rows below the header"))
        # Unknown columns with a name or a value are kept in notes; unnamed empty ones are Excel litter.
        self.extras = [i for i in self.extras if str(self.raw.header[i]).strip() or self.cols[i].present.any()]
        if self.extras:
            names = ", ".join(repr(_extra_label(self.raw.header, i)) for i in self.extras)
            self.warnings.append(f"unknown column(s) {names} kept in notes as 'column: value'")

    def col(self, c: str) -> _Column | None:
        return self.cols[self.mapped[c]] if c in self.mapped else None

    def typed_text(self, c: str) -> pa.Array:
        col = self.col(c)
        return pa.nulls(self.n, pa.string()) if col is None else col.typed

    def as_typed(self, c: str) -> pa.Array:
        """The cells of a contract column as the user typed them (for error reports)."""
        return self.cells[self.mapped[c]] if c in self.mapped else pa.nulls(self.n, pa.string())

    def numbers(self) -> dict[str, np.ndarray]:
        """Range-check every numeric column; blanks take the default where there is one."""
        note = f" (decimal separator '{self.raw.decimal}' in this file)" if self.raw.decimal != "." else ""
        out = {}
        for c in NUMERIC_COLUMNS:
            col, rule = self.col(c), NUMBER_RULES[c]
            if col is None:
                values = np.full(self.n, np.nan)
            else:
                r = self.as_typed(c)
                values = col.typed
                self.error_cells(c, r, col.bad, f"not a number{note}; allowed: {rule.allowed}")
                if c in REQUIRED_COLUMNS:
                    self.error_cells(c, r, ~col.present, f"required; allowed: {rule.allowed}")
                self.error_cells(c, r, rule.outside(values), f"out of range; allowed: {rule.allowed}")
            if c in DEFAULTS:
                blank = np.isnan(values) if col is None else ~col.present
                values = np.where(blank, DEFAULTS[c], values)
            out[c] = values
        return out

    def enums(self) -> dict[str, pa.Array]:
        """data_policy and task_class: case, spaces and hyphens forgiven ('Code completion' -> code_completion)."""
        out = {}
        for c, allowed in ENUM_VALUES.items():
            t, choices = self.typed_text(c), pa.array(allowed)
            exact = pc.fill_null(pc.is_in(t, choices), True).to_numpy(zero_copy_only=False)
            norm = t if exact.all() else pc.replace_substring_regex(pc.utf8_lower(t), r"[\s\-]+", "_")
            if c in self.mapped:
                r = self.as_typed(c)
                self.error_cells(c, r, ~self.col(c).present, f"required; allowed: {', '.join(allowed)}")
                if not exact.all():
                    unknown = ~pc.fill_null(pc.is_in(norm, choices), True).to_numpy(zero_copy_only=False)
                    self.error_cells(c, r, unknown, f"unknown value; allowed: {', '.join(allowed)}")
            out[c] = norm
        return out

    def texts(self) -> dict[str, pa.Array]:
        out = {}
        for c in TEXT_COLUMNS:
            if c in REQUIRED_COLUMNS and c in self.mapped:
                self.error_cells(c, self.as_typed(c), ~self.col(c).present, "required; allowed: any text")
            out[c] = self.typed_text(c)
        return out

    def slo_or_window(self) -> None:
        """Exactly one of latency_slo_ms / batch_window_hours, judged on what was typed."""
        if not any(c in self.mapped for c in SLO_OR_WINDOW):
            return
        cols = [self.col(c) for c in SLO_OR_WINDOW]
        has_slo, has_win = (np.zeros(self.n, dtype=bool) if c is None else c.present for c in cols)
        column = "/".join(SLO_OR_WINDOW)
        idx = np.flatnonzero(has_slo & has_win)
        if len(idx):
            take = pa.array(idx)
            slo_raw, win_raw = (self.as_typed(c).take(take).to_pylist() for c in SLO_OR_WINDOW)
            shown = [f"latency_slo_ms={a}, batch_window_hours={b}" for a, b in zip(slo_raw, win_raw, strict=True)]
            self.errors.append(pd.DataFrame({
                "row": self.rows[idx], "column": column, "value": shown,
                "problem": "both given; allowed: exactly one of latency_slo_ms (interactive) "
                           "or batch_window_hours (offline)"}))
        self.error_cells(column, pa.nulls(self.n, pa.string()), ~has_slo & ~has_win,
                         "neither given; allowed: exactly one of latency_slo_ms (interactive: p95 "
                         "target, ms) or batch_window_hours (offline: hours, <= 24)")

    def duplicates(self, ids: pa.Array) -> None:
        """Every repeat of a workload_id names the row that used it first."""
        if "workload_id" not in self.mapped or not self.n or self.col("workload_id").unique:
            return
        s = pd.Series(ids.to_pandas().array)
        repeat = (s.duplicated(keep="first") & s.notna()).to_numpy()
        if not repeat.any():
            return
        firsts = pd.Series(self.rows[~repeat], index=s[~repeat].array)
        firsts = firsts[firsts.index.notna()]
        where = firsts.reindex(s[repeat].array).to_numpy()
        idx = np.flatnonzero(repeat)
        self.errors.append(pd.DataFrame({
            "row": self.rows[idx], "column": "workload_id", "value": s[repeat].tolist(),
            "problem": [f"duplicate workload_id (first used in row {w}); allowed: each id once" for w in where]}))

    def formulas(self) -> None:
        """Formula-like text is kept exactly but flagged; exports neutralise it (core.textsafety)."""
        sources = [(c, self.mapped[c]) for c in TEXT_COLUMNS if c in self.mapped]
        sources += [(_extra_label(self.raw.header, i), i) for i in self.extras]
        for label, i in sources:
            hit = np.flatnonzero(self.cols[i].formula)
            t = self.cols[i].typed
            for j in hit[:20]:
                value = t[int(j)].as_py()
                self.warnings.append(f"row {self.rows[j]}, column '{label}': {value!r} starts with {value[0]!r}, "
                                     "which a spreadsheet may run as a formula; kept as text (exports neutralise it)")
            if len(hit) > 20:
                self.warnings.append(f"column '{label}': {len(hit) - 20} more formula-like cell(s), in rows "
                                     f"{_some(self.rows[hit[20:]])}")


def _validate(raw: _Raw) -> InventoryReport:
    """Column checks over the whole table; every bad cell becomes one error row."""
    check = _Checker(raw)
    check.header()
    check.columns()
    out: dict[str, object] = {}
    out.update(check.numbers())
    out.update(check.enums())
    texts = check.texts()
    out.update(texts)
    check.slo_or_window()
    check.duplicates(texts["workload_id"])
    check.formulas()
    if check.extras:
        out["notes"] = _merge_notes(texts["notes"], [(_extra_label(raw.header, i), check.cols[i].typed)
                                                     for i in check.extras])
    errors = _errors_frame(check.errors)
    if not errors.empty:
        return InventoryReport(frame=empty_frame(), errors=errors, warnings=check.warnings, dialect=raw.dialect)
    table = pa.table({c: out[c] for c in COLUMNS})
    return InventoryReport(frame=frame_from_arrow(table, check.rows), errors=errors, warnings=check.warnings,
                           dialect=raw.dialect)


def _extra_label(header: list[str], i: int) -> str:
    h = str(header[i]).strip()
    return h if h else f"column {i + 1}"


def _merge_notes(notes: pa.Array, extras: list[tuple[str, pa.Array]]) -> pa.Array:
    """notes; header: value; header: value (blank parts left out), column by column."""
    acc = pd.Series(notes.to_pandas().array, dtype="str")
    for label, values in extras:
        v = pd.Series(values.to_pandas().array, dtype="str")
        part = label + ": " + v  # NaN where the cell is blank
        acc = (acc + "; " + part).fillna(acc).fillna(part)
    return pa.array(acc.to_numpy(dtype=object, na_value=None), pa.string())


def _some(rows: np.ndarray, limit: int = 10) -> str:
    shown = ", ".join(str(int(r)) for r in rows[:limit])
    return shown + (f" and {len(rows) - limit} more" if len(rows) > limit else "")


# -- readers ---------------------------------------------------------------------------

_XLSX_MAGIC = b"PK\x03\x04"
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def read_inventory(source: str | Path | bytes, file_name: str | None = None, sheet: str | None = None) -> InventoryReport:
    """Read a CSV or XLSX inventory and validate it; never raises for bad content (see `errors`)."""
    path: Path | None = None
    try:
        if isinstance(source, bytes | bytearray | memoryview):
            data = bytes(source)
        elif hasattr(source, "read"):  # an open file or Streamlit's UploadedFile
            data = source.read()
            file_name = file_name or getattr(source, "name", None)
        else:
            path = Path(source)
            file_name = file_name or path.name
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                raise _FileProblem(f"no such file: {path}") from None
            except IsADirectoryError:
                raise _FileProblem(f"{path} is a folder, not a file") from None
            except PermissionError:
                raise _FileProblem(f"cannot read {path}: permission denied") from None
        raw = _read_bytes(data, file_name or "", sheet, path)
    except _FileProblem as exc:
        return InventoryReport(frame=empty_frame(), errors=_errors_frame([_error(0, "", "", str(exc))]),
                               dialect="unreadable")
    return _validate(raw)


def validate_frame(df: pd.DataFrame, row_numbers: Sequence[int] | np.ndarray | None = None) -> InventoryReport:
    """The same checks on a DataFrame (e.g. the dashboard's edited table).

    Row numbers default to the frame's index when it is integer, else 1..n.
    """
    if row_numbers is None:
        if pd.api.types.is_integer_dtype(df.index):
            row_numbers = df.index.to_numpy()
        else:
            row_numbers = np.arange(1, len(df) + 1)
    rows = np.asarray(row_numbers, dtype=np.int64)
    if len(rows) != len(df):
        raise ValueError(f"row_numbers has {len(rows)} entries for {len(df)} rows")
    columns = [_as_text(df.iloc[:, i]) for i in range(df.shape[1])]
    raw = _Raw(header=[str(c) for c in df.columns], columns=columns, rows=rows, header_row=0,
               decimal=".", dialect="table")
    return _validate(raw)


def _as_text(s: pd.Series) -> pa.Array:
    """A column of any dtype as text cells; numbers keep every digit (repr), missing -> null."""
    if pd.api.types.is_string_dtype(s) and not pd.api.types.is_object_dtype(s):
        return pa.array(s.to_numpy(dtype=object, na_value=None), pa.string())
    if pd.api.types.is_float_dtype(s) or pd.api.types.is_integer_dtype(s):
        # Arrow writes the shortest text that reads back to the same double.
        return pa.array(s.to_numpy(), from_pandas=True).cast(pa.string())
    return pa.array([_cell_text(v) for v in s.to_numpy(dtype=object)], pa.string())


def _cell_text(v: object) -> str | None:
    """One spreadsheet or DataFrame cell as the text validation reads."""
    if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, bool | np.bool_):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int | np.integer):
        return str(int(v))
    if isinstance(v, float | np.floating):
        f = float(v)
        return str(int(f)) if f.is_integer() and abs(f) < 1e15 else repr(f)
    if isinstance(v, dt.datetime | dt.date | dt.time):
        return v.isoformat()
    return str(v)


def _read_bytes(data: bytes, file_name: str, sheet: str | None, path: Path | None) -> _Raw:
    suffix = Path(file_name).suffix.lower()
    if not data:
        raise _FileProblem("the file is empty (0 bytes); download the template, fill it in and upload it again")
    if data.startswith(_XLSX_MAGIC):
        raw = _read_xlsx(data, sheet)
        if suffix not in (".xlsx", ".xlsm", ""):
            raw.warnings.append(f"{file_name} is an Excel workbook despite its name; read it as .xlsx")
        return raw
    if data.startswith(_OLE_MAGIC):
        raise _FileProblem("this is an old Excel 97-2003 (.xls) or other Office binary file; "
                           "save it as .xlsx or as 'CSV UTF-8' and upload that")
    if suffix in (".xlsx", ".xlsm"):
        raise _FileProblem(f"{file_name} is named .xlsx but is not an Excel workbook; save it again from Excel")
    if sheet is not None:
        raise _FileProblem(f"a sheet name ({sheet!r}) applies to .xlsx workbooks only; this file is CSV text")
    return _read_csv(data, path)


# -- XLSX ---------------------------------------------------------------------------------


def _read_xlsx(data: bytes, sheet: str | None) -> _Raw:
    import openpyxl  # imported here: only workbooks need it

    try:
        wb = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many kinds for a damaged zip
        raise _FileProblem(f"cannot open the workbook ({type(exc).__name__}: {exc}); save it again as .xlsx") from None
    try:
        names = wb.sheetnames
        if sheet is None:
            ws = wb.worksheets[0]
        else:
            match = [n for n in names if n == sheet] or [n for n in names if n.strip().lower() == sheet.strip().lower()]
            if not match:
                raise _FileProblem(f"no sheet named {sheet!r}; the workbook has: {', '.join(names)}")
            ws = wb[match[0]]
        records = [list(r) for r in ws.iter_rows(values_only=True)]
    finally:
        wb.close()
    if not records or not any(v is not None and str(v).strip() for v in records[0]):
        raise _FileProblem(f"sheet {ws.title!r} has no header row in row 1; the first row must name the columns")
    header = [_cell_text(v) or "" for v in records[0]]
    width = len(header)
    body = records[1:]
    cols = []
    for i in range(width):
        cols.append(pa.array([_cell_text(r[i]) if i < len(r) else None for r in body], pa.string()))
    over = [(k + 2, len(r)) for k, r in enumerate(body) if len(r) > width and any(v is not None for v in r[width:])]
    raw = _Raw(header=header, columns=cols, rows=np.arange(2, len(body) + 2, dtype=np.int64), header_row=1,
               decimal=".", dialect=f"XLSX, sheet {ws.title!r}")
    if over:
        raw.warnings.append(f"values right of the last named column were ignored in row(s) {_some(np.array([o[0] for o in over]))}")
    return raw


# -- CSV ----------------------------------------------------------------------------------


def _decode(data: bytes) -> tuple[str, bytes]:
    """(encoding label, UTF-8 bytes without BOM), or a _FileProblem for binaries."""
    if data.startswith(b"\xff\xfe") or data.startswith(b"\xfe\xff"):
        # Excel's "Unicode text" export: UTF-16 with a BOM (and NUL bytes, which are fine here).
        text = data.decode("utf-16")
        return "UTF-16", text.encode("utf-8")
    if b"\x00" in data:
        raise _FileProblem("this is not a CSV text file (it contains NUL bytes; it looks binary); "
                           "export the sheet as 'CSV UTF-8' or upload the .xlsx workbook")
    if data.startswith(b"\xef\xbb\xbf"):
        label, body = "UTF-8 with BOM", data[3:]
    else:
        label, body = "UTF-8", data
    if not body.isascii():
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            if label == "UTF-8 with BOM":
                raise _FileProblem("the file says it is UTF-8 but is not; save it again as 'CSV UTF-8'") from None
            try:
                text = data.decode("cp1252")
            except UnicodeDecodeError:
                raise _FileProblem("cannot read the text: it is neither UTF-8 nor Windows-1252; "
                                   "save it as 'CSV UTF-8'") from None
            return "Windows-1252", text.encode("utf-8")
    return label, body


def _sniff_delimiter(sample: str) -> str:
    """csv.Sniffer on a sample, checked against the header (the contract's names are known)."""
    lines = sample.splitlines()[:50]
    try:
        guess = csv.Sniffer().sniff("\n".join(lines), delimiters=",;\t|").delimiter
    except csv.Error:
        guess = None
    first = lines[0] if lines else ""

    def known(d: str) -> int:
        fields = next(csv.reader([first], delimiter=d), [])
        return sum(1 for f in fields if _key(f) in _KNOWN)

    best = max(",;\t|", key=lambda d: (known(d), d == guess, first.count(d)))
    if guess is None or known(best) > known(guess):
        return best
    return guess


def _read_csv(data: bytes, path: Path | None) -> _Raw:
    encoding, body = _decode(data)
    head = body[:65536].decode("utf-8", errors="ignore")
    if len(body) > 65536 and "\n" in head:
        head = head[: head.rfind("\n") + 1]
    skip = 0
    first_line = head.split("\n", 1)[0].strip()
    if re.fullmatch(r"(?i)sep=.", first_line):
        # Excel's "sep=;" hint line: obey it, and count it as row 1.
        delimiter, skip = first_line[4], 1
        head = head.split("\n", 1)[1] if "\n" in head else ""
    else:
        delimiter = _sniff_delimiter(head)
    header = next(csv.reader(io.StringIO(head), delimiter=delimiter), [])
    if not header or not any(h.strip() for h in header):
        raise _FileProblem("the first row is empty; it must name the columns (download the template to see them)")
    names = {",": "','", ";": "';'", "\t": "tab", "|": "'|'"}
    header_row = 1 + skip
    raw = _read_csv_duckdb(body, path if encoding in ("UTF-8", "UTF-8 with BOM") else None, header, delimiter, skip)
    if raw is None:
        raw = _read_csv_python(body, header, delimiter, skip)
    raw.header_row = header_row
    default_decimal = "," if delimiter == ";" else "."
    numeric_idx = [i for i, h in enumerate(header) if _KNOWN.get(_key(h)) in NUMERIC_COLUMNS]
    raw.decimal = _sniff_decimal([_trim(raw.columns[i].slice(0, 2000)) for i in numeric_idx], default_decimal)
    thousands = "'.' or space" if raw.decimal == "," else "',' or space"
    raw.dialect = (f"CSV, delimiter {names[delimiter]}, encoding {encoding}, decimal separator "
                   f"'{raw.decimal}' (thousands {thousands})")
    if encoding not in ("UTF-8", "UTF-8 with BOM") or raw.decimal == "," or delimiter != ",":
        raw.warnings.insert(0, f"read as {raw.dialect}")
    return raw


def _read_csv_duckdb(body: bytes, path: Path | None, header: list[str], delimiter: str, skip: int) -> _Raw | None:
    """Fast path: DuckDB's parallel CSV reader, every cell as text. None when the file needs the careful path."""
    columns = {f"c{i}": "VARCHAR" for i in range(len(header))}
    tmp = None
    try:
        if path is None:  # bytes from an upload, or text re-encoded to UTF-8
            fd, tmp = tempfile.mkstemp(suffix=".csv", prefix="hangover-inventory-")
            with os.fdopen(fd, "wb") as fh:
                fh.write(body)
        target = str(path) if tmp is None else tmp
        con = duckdb.connect()
        try:
            table = None
            for parallel in (True, False):
                try:
                    table = con.sql(
                        "SELECT * FROM read_csv($path, auto_detect=false, header=true, skip=$skip, delim=$delim, "
                        "quote='\"', escape='\"', columns=$columns, null_padding=true, parallel=$parallel)",
                        params={"path": target, "skip": skip, "delim": delimiter, "columns": columns,
                                "parallel": parallel},
                    ).to_arrow_table()
                    break
                except duckdb.Error as exc:
                    # Quoted line breaks need the sequential reader; anything else goes the careful way.
                    if not parallel or "parallel" not in str(exc):
                        return None
        finally:
            con.close()
    finally:
        if tmp is not None:
            os.unlink(tmp)
    if table is None:
        return None
    found = _record_rows(body, skip + 1, table.num_rows)
    if found is None:
        return None
    rows, blank_rows = found
    return _Raw(header=header, columns=[table.column(i).combine_chunks() for i in range(len(header))], rows=rows,
                blank_rows=blank_rows)


def _record_rows(body: bytes, header_records: int, n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Row numbers of the non-empty and of the empty records (DuckDB drops empty lines; Excel counts them).

    With RFC 4180 quoting (a quote inside a field is doubled) a newline ends a
    record exactly when an even number of quotes precede it, so the count of
    quotes before each newline finds the record ends without parsing.
    """
    first = header_records + 1
    if not re.search(rb"\n\r?\n", body):
        return np.arange(first, first + n, dtype=np.int64), np.array([], dtype=np.int64)
    buf = np.frombuffer(body, dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)
    quotes = np.flatnonzero(buf == 34)
    ends = newlines[np.searchsorted(quotes, newlines) % 2 == 0]
    if len(ends) == 0 or ends[-1] != len(buf) - 1:
        ends = np.append(ends, len(buf))  # last record without a final newline
    starts = np.concatenate(([0], ends[:-1] + 1))
    length = ends - starts
    cr_only = (length == 1) & (buf[np.minimum(starts, len(buf) - 1)] == 13)
    empty = (length == 0) | cr_only
    numbers = np.arange(1, len(ends) + 1, dtype=np.int64)
    body_rows = numbers[header_records:][~empty[header_records:]]
    if len(body_rows) != n:
        return None  # the reader and the count disagree: let the careful path decide
    return body_rows, numbers[header_records:][empty[header_records:]]


def _read_csv_python(body: bytes, header: list[str], delimiter: str, skip: int) -> _Raw:
    """Careful path: Python's csv module, record by record; ragged rows become cell errors later."""
    text = body.decode("utf-8")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, quotechar='"', doublequote=True)
    width = len(header)
    cells: list[list[str | None]] = [[] for _ in range(width)]
    rows: list[int] = []
    long_rows: list[int] = []
    try:
        for number, record in enumerate(reader, start=1):
            if number <= skip + 1:
                continue
            if len(record) > width and any(v.strip() for v in record[width:]):
                long_rows.append(number)
            rows.append(number)
            for i in range(width):
                cells[i].append(record[i] if i < len(record) and record[i] != "" else None)
    except csv.Error as exc:
        raise _FileProblem(f"cannot read the CSV near line {reader.line_num}: {exc}") from None
    if long_rows:
        hint = (" (a number with a ',' thousands separator must be in quotes, or save with ';' between cells)"
                if delimiter == "," else "")
        raise _FileProblem(f"row(s) {_some(np.array(long_rows))} have more values than the header has columns "
                           f"({width}); add the missing column names to the header or remove the extra values"
                           + hint)
    return _Raw(header=header, columns=[pa.array(c, pa.string()) for c in cells], rows=np.array(rows, dtype=np.int64))


# -- template ------------------------------------------------------------------------------


def template_bytes(fmt: str) -> bytes:
    """The inventory template as 'csv' (UTF-8 with BOM, so Excel shows accents) or 'xlsx' bytes."""
    fmt = fmt.lower().lstrip(".")
    if fmt == "csv":
        out = io.StringIO()
        w = csv.writer(out)
        w.writerow(COLUMNS)
        for r in EXAMPLE_ROWS:
            w.writerow(["" if r.get(c) is None else r.get(c) for c in COLUMNS])
        return out.getvalue().encode("utf-8-sig")
    if fmt == "xlsx":
        return _template_xlsx()
    raise ValueError(f"template format must be 'csv' or 'xlsx', not {fmt!r}")


def write_template(path: str | Path) -> Path:
    """Write the template; the format follows the suffix (.csv or .xlsx)."""
    p = Path(path)
    suffix = p.suffix.lower().lstrip(".")
    if suffix not in ("csv", "xlsx"):
        from core.errors import InputError

        raise InputError(f"template file must end in .csv or .xlsx, not {p.name!r}")
    p.write_bytes(template_bytes(suffix))
    return p


def _template_xlsx() -> bytes:
    import xlsxwriter

    buf = io.BytesIO()
    wb = xlsxwriter.Workbook(buf, {"in_memory": True, "strings_to_numbers": False, "strings_to_formulas": False})
    bold = wb.add_format({"bold": True, "bg_color": "#DDE5F0", "border": 1})
    wrap = wb.add_format({"text_wrap": True, "valign": "top"})
    ws = wb.add_worksheet("Workloads")
    for j, c in enumerate(COLUMNS):
        ws.write_string(0, j, c, bold)
        ws.set_column(j, j, max(12, len(c) + 2))
    for i, r in enumerate(EXAMPLE_ROWS, start=1):
        for j, c in enumerate(COLUMNS):
            v = r.get(c)
            if v is None:
                continue
            if isinstance(v, int | float):
                ws.write_number(i, j, v)
            else:
                ws.write_string(i, j, str(v))
    ws.freeze_panes(1, 0)
    for c, allowed in ENUM_VALUES.items():
        j = COLUMNS.index(c)
        ws.data_validation(1, j, 100_000, j, {"validate": "list", "source": list(allowed)})
    info = wb.add_worksheet("Columns")
    for j, h in enumerate(("column", "required", "allowed", "meaning")):
        info.write_string(0, j, h, bold)
    for i, c in enumerate(COLUMNS, start=1):
        need, meaning = COLUMN_HELP[c]
        if c in NUMBER_RULES:
            allowed = NUMBER_RULES[c].allowed
        elif c in ENUM_VALUES:
            allowed = " | ".join(ENUM_VALUES[c])
        else:
            allowed = "text"
        info.write_string(i, 0, c)
        info.write_string(i, 1, need)
        info.write_string(i, 2, allowed, wrap)
        info.write_string(i, 3, meaning, wrap)
    note_row = len(COLUMNS) + 2
    info.write_string(note_row, 0, "Rules", bold)
    for k, line in enumerate((
        "Column names are matched ignoring case and spaces; unknown columns are kept in notes.",
        "Give exactly one of latency_slo_ms (interactive work) or batch_window_hours (offline work) per row.",
        "A file with any error commits nothing; the report lists every bad cell with its row and column.",
        "Each upload becomes a new inventory version; older versions can be listed, compared and restored.",
    ), start=1):
        info.write_string(note_row + k, 0, line)
    info.set_column(0, 0, 22)
    info.set_column(1, 1, 14)
    info.set_column(2, 2, 45)
    info.set_column(3, 3, 80)
    wb.close()
    return buf.getvalue()
