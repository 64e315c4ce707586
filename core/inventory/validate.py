"""Whole-column checks of an inventory table: every bad cell becomes one error row naming its row and column."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core.inventory import numbers
from core.inventory.columns import (
    COLUMNS,
    DEFAULTS,
    ENUM_VALUES,
    KNOWN,
    MAX_CELL_CHARS,
    NUMBER_RULES,
    NUMERIC_COLUMNS,
    REQUIRED_COLUMNS,
    SHARE_COLUMNS,
    SLO_OR_WINDOW,
    TEXT_COLUMNS,
    echo,
    key,
)
from core.inventory.raw import Raw, release_unused_memory, trim
from core.inventory.report import (
    InventoryReport,
    cell_errors,
    empty_frame,
    error,
    errors_frame,
    frame_from_arrow,
    some,
)
from core.textsafety import FORMULA_PREFIXES

_FORMULA_BYTES = pa.array([p.encode() for p in FORMULA_PREFIXES if p.strip()], pa.binary())
_FORMULA_WARNINGS = 20  # formula-like cells named one by one; the rest are counted


@dataclass
class _Column:
    """One file column after the per-column pass."""

    typed: pa.Array | np.ndarray  # trimmed text (null = blank) or float64 values
    present: np.ndarray  # cell is not blank
    bad: np.ndarray | None = None  # numbers: cell is not a usable number
    ambiguous: np.ndarray | None = None  # numbers: "40.000" with no decimal separator settled
    formula: np.ndarray | None = None  # text: cell starts like a formula
    unique: bool | None = None  # ids: no value repeats (blanks aside)


def _kind_array(a: np.ndarray | None, what: str) -> np.ndarray:
    """A column's per-kind array (numbers: bad, ambiguous; text: formula), always set for that kind."""
    if a is None:
        raise ValueError(f"an inventory column without its {what} array (a number/text mix-up)")
    return a


def _text_column(a: pa.Array, *, is_id: bool = False) -> _Column:
    t = trim(a)
    # =, +, - and @ are one byte in UTF-8: compare the first byte, no decoding needed.
    first = pc.binary_slice(t.cast(pa.binary()), 0, 1)
    formula = pc.fill_null(pc.is_in(first, _FORMULA_BYTES), False).to_numpy(zero_copy_only=False)
    unique = None
    if is_id:  # hashing a million ids takes a while: do it here, alongside the other columns
        distinct = pc.unique(t)
        unique = len(distinct) - distinct.null_count == len(t) - t.null_count
    return _Column(typed=t, present=numbers.valid(t), formula=formula, unique=unique)


def _number_column(a: pa.Array, decimal: str | None, exact: np.ndarray | None, share: bool) -> _Column:
    values, bad, present, ambiguous = numbers.parse_numbers(a, decimal, exact=exact, share=share)
    return _Column(typed=values, present=present, bad=bad, ambiguous=ambiguous)


def _extra_label(header: list[str], i: int) -> str:
    h = str(header[i]).strip()
    return echo(h) if h else f"column {i + 1}"


class _Checker:
    """Runs the column checks of one table and collects error rows and warnings."""

    def __init__(self, raw: Raw):
        self.raw = raw
        self.warnings = list(raw.warnings)
        self.errors: list[pd.DataFrame] = []
        self.mapped: dict[str, int] = {}
        self.extras: list[int] = []
        self.decimal = raw.decimal
        self.decimal_reason = raw.decimal_reason
        self.needs_decimal = False

    def error_cells(self, column: str, values: pa.Array, mask: np.ndarray, problem: str) -> None:
        self.errors.append(cell_errors(self.rows, column, values, mask, problem))

    def exact(self, i: int) -> np.ndarray | None:
        return None if self.raw.exact is None else self.raw.exact[i]

    def header(self) -> None:
        """Map file columns onto the contract (case-, space- and underscore-blind)."""
        raw, row = self.raw, self.raw.header_row
        for i, h in enumerate(raw.header):
            name = KNOWN.get(key(h))
            if name is None:
                self.extras.append(i)
            elif name in self.mapped:
                self.errors.append(error(row, name, str(h), f"column appears twice (columns "
                                         f"{self.mapped[name] + 1} and {i + 1}); keep one"))
            else:
                self.mapped[name] = i
        named = [echo(str(h)) for h in raw.header if str(h).strip()]
        seen = ", ".join(named[:20]) + (f" and {len(named) - 20} more" if len(named) > 20 else "") or "(nothing)"
        for c in REQUIRED_COLUMNS:
            if c not in self.mapped:
                self.errors.append(error(row, c, "", f"required column is missing; the header row has: {seen}"))
        if not any(c in self.mapped for c in SLO_OR_WINDOW):
            self.errors.append(error(row, "/".join(SLO_OR_WINDOW), "",
                                     "the file needs a latency_slo_ms column (interactive work), a "
                                     "batch_window_hours column (offline work), or both"))

    def settle_decimal(self) -> None:
        """When the reader left the decimal separator open and a cell needs it, let the file's own cells settle it.

        Runs after the parallel column pass, which marks ambiguous cells as it
        parses, so a file without any (nearly all) pays nothing; columns with
        ambiguous cells are parsed again once the separator is known.
        """
        if self.decimal is not None:
            return
        numeric = [(c, i) for c, i in self.mapped.items() if c in NUMERIC_COLUMNS]
        needing = [(c, i) for c, i in numeric if (amb := self.cols[i].ambiguous) is not None and amb.any()]
        if not needing:
            self.decimal_reason = "no cell needed one" if self.raw.kind == "csv" else ""
            return
        decimal, example = numbers.decide_decimal(
            [(self.raw.columns[i], self.exact(i), c in SHARE_COLUMNS) for c, i in numeric])
        if decimal is None:
            return
        self.decimal = decimal
        self.decimal_reason = f"the file's own cells, such as {echo(example, 20)!r}, show it"
        for c, i in needing:
            self.cols[i] = _number_column(self.raw.columns[i], decimal, self.exact(i), c in SHARE_COLUMNS)

    def columns(self) -> None:
        """Trim or parse every column, columns in parallel (Arrow releases the GIL), then drop blank rows."""
        numeric = {i: c for c, i in self.mapped.items() if c in NUMERIC_COLUMNS}
        id_column = self.mapped.get("workload_id")

        def work(i: int) -> _Column:
            a = self.raw.columns[i]
            if i in numeric:
                return _number_column(a, self.decimal, self.exact(i), numeric[i] in SHARE_COLUMNS)
            return _text_column(a, is_id=i == id_column)

        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            self.cols = list(pool.map(work, range(len(self.raw.columns))))
        self.settle_decimal()
        self.cells = list(self.raw.columns)
        self.rows = self.raw.rows
        # Rows with every cell blank (Excel leaves them about) are skipped and reported.
        if self.cols:
            blank = ~np.logical_or.reduce([col.present for col in self.cols])
        else:
            blank = np.ones(len(self.rows), dtype=bool)
        skipped = np.sort(np.concatenate([self.raw.blank_rows, self.rows[blank]]))
        if len(skipped):
            self.warnings.append(f"skipped {len(skipped)} blank row(s): {some(skipped)}")
        if blank.any():
            keep, keep_np = pa.array(~blank), ~blank

            def cut(m: np.ndarray | None) -> np.ndarray | None:
                return None if m is None else m[keep_np]

            self.cols = [_Column(typed=c.typed[keep_np] if isinstance(c.typed, np.ndarray) else c.typed.filter(keep),
                                 present=c.present[keep_np], bad=cut(c.bad), ambiguous=cut(c.ambiguous),
                                 formula=cut(c.formula), unique=c.unique) for c in self.cols]  # blank rows hold no id
            self.cells = [a.filter(keep) for a in self.cells]
            self.rows = self.rows[keep_np]
        self.n = len(self.rows)
        if self.n == 0:
            self.errors.append(error(0, "", "", "the file has no workload rows below the header"))
        # Unknown columns with a name or a value are kept in notes; unnamed empty ones are Excel litter.
        self.extras = [i for i in self.extras if str(self.raw.header[i]).strip() or self.cols[i].present.any()]
        if self.extras:
            names = [repr(_extra_label(self.raw.header, i)) for i in self.extras]
            shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
            self.warnings.append(f"unknown column(s) {shown} kept in notes as 'column: value'")

    def cell_sizes(self) -> None:
        """No cell longer than Excel's own limit (a longer one was not written by Excel; it may hide a lost row)."""
        for i, a in enumerate(self.cells):
            # A cell has no more characters than bytes: the byte lengths (read off Arrow's offsets) rule
            # out almost every column before any character is counted.
            if not len(a) or (pc.max(pc.binary_length(a)).as_py() or 0) <= MAX_CELL_CHARS:
                continue
            lengths = pc.utf8_length(a)
            longest = pc.max(lengths).as_py()
            if longest is None or longest <= MAX_CELL_CHARS:
                continue
            mask = pc.fill_null(pc.greater(lengths, MAX_CELL_CHARS), False).to_numpy(zero_copy_only=False)
            idx = np.flatnonzero(mask)
            label = next((c for c, j in self.mapped.items() if j == i), None) or _extra_label(self.raw.header, i)
            sizes = lengths.take(pa.array(idx)).to_pylist()
            self.errors.append(pd.DataFrame({
                "row": self.rows[idx], "column": label, "value": "",
                "problem": [f"cell of {s:,} characters; the limit is {MAX_CELL_CHARS:,} (Excel's own limit per "
                            "cell); shorten it" for s in sizes]}))
            # Its own checks would echo the giant text again: treat the cells as blank from here on.
            col = self.cols[i]
            if isinstance(col.typed, np.ndarray):
                col.typed[idx] = np.nan
                for m in (col.bad, col.ambiguous):
                    if m is not None:
                        m[idx] = False
            if col.formula is not None:
                col.formula[idx] = False

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
        note = f" (decimal separator '{self.decimal}' in this file)" if self.decimal == "," else ""
        out = {}
        for c in NUMERIC_COLUMNS:
            col, rule = self.col(c), NUMBER_RULES[c]
            if col is None:
                values = np.full(self.n, np.nan)
            else:
                r = self.as_typed(c)
                values = col.typed
                bad = _kind_array(col.bad, "bad")
                if c not in SHARE_COLUMNS and bad.any():
                    pct = bad & numbers.match(r, r"%\s*$")
                    self.error_cells(c, r, pct, "a percentage is allowed only for shares (min_quality, "
                                                f"cached_input_share); allowed: {rule.allowed}")
                    bad = bad & ~pct
                self.error_cells(c, r, bad, f"not a number{note}; allowed: {rule.allowed}")
                self.ambiguous(c, r, _kind_array(col.ambiguous, "ambiguous"))
                if c in REQUIRED_COLUMNS:
                    self.error_cells(c, r, ~col.present, f"required; allowed: {rule.allowed}")
                self.error_cells(c, r, rule.outside(values), f"out of range; allowed: {rule.allowed}")
            if c in DEFAULTS:
                blank = np.isnan(values) if col is None else ~col.present
                values = np.where(blank, DEFAULTS[c], values)
            out[c] = values
        if "output_tokens_p95" in self.mapped and "output_tokens" in self.mapped:
            # The model's own rule (a percentile is never below the mean), judged where both are numbers.
            with np.errstate(invalid="ignore"):
                below = out["output_tokens_p95"] < out["output_tokens"]
            self.error_cells("output_tokens_p95", self.as_typed("output_tokens_p95"), below,
                             "below the mean output_tokens of its row; allowed: at least output_tokens")
        return out

    def ambiguous(self, c: str, typed: pa.Array, mask: np.ndarray) -> None:
        """One error per column for numbers such as 40.000 that nothing in the file settles."""
        idx = np.flatnonzero(mask)
        if not len(idx):
            return
        self.needs_decimal = True
        first = int(idx[0])
        example = str(typed[first].as_py()).strip()
        digits = example.replace("+", "").replace("-", "").rstrip("%").strip()
        sep = "." if "." in digits else ","
        big = digits.replace(sep, "")
        small = digits.split(sep)[0] + "." + digits.split(sep)[1]
        others = f" ({len(idx) - 1:,} more cell(s) in this column read the same way)" if len(idx) > 1 else ""
        self.errors.append(error(
            int(self.rows[first]), c, example,
            f"ambiguous number: {int(big):,} if '{sep}' groups thousands, {float(small):g} if '{sep}' is the "
            f"decimal separator, and nothing else in the file says which{others}; choose the decimal separator "
            "(--decimal , or --decimal . on the command line; the decimal choice in the dashboard)"))

    def enums(self) -> dict[str, pa.Array]:
        """data_policy and task_class: case, spaces and hyphens forgiven ('Code completion' -> code_completion)."""
        out = {}
        for c, allowed in ENUM_VALUES.items():
            t, choices = self.typed_text(c), pa.array(allowed)
            exact = pc.fill_null(pc.is_in(t, choices), True).to_numpy(zero_copy_only=False)
            norm = t if exact.all() else pc.replace_substring_regex(pc.utf8_lower(t), r"[\s\-]+", "_")
            if c in self.mapped:
                r = self.as_typed(c)
                self.error_cells(c, r, ~self.cols[self.mapped[c]].present, f"required; allowed: {', '.join(allowed)}")
                if not exact.all():
                    unknown = ~pc.fill_null(pc.is_in(norm, choices), True).to_numpy(zero_copy_only=False)
                    self.error_cells(c, r, unknown, f"unknown value; allowed: {', '.join(allowed)}")
            out[c] = norm
        return out

    def texts(self) -> dict[str, pa.Array]:
        out = {}
        for c in TEXT_COLUMNS:
            if c in REQUIRED_COLUMNS and c in self.mapped:
                self.error_cells(c, self.as_typed(c), ~self.cols[self.mapped[c]].present, "required; allowed: any text")
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
            shown = [f"latency_slo_ms={echo(a, 20)}, batch_window_hours={echo(b, 20)}"
                     for a, b in zip(slo_raw, win_raw, strict=True)]
            self.errors.append(pd.DataFrame({
                "row": self.rows[idx], "column": column, "value": shown,
                "problem": "both given; allowed: exactly one of latency_slo_ms (interactive) "
                           "or batch_window_hours (offline)"}))
        window = NUMBER_RULES["batch_window_hours"]
        self.error_cells(column, pa.nulls(self.n, pa.string()), ~has_slo & ~has_win,
                         "neither given; allowed: exactly one of latency_slo_ms (interactive: p95 "
                         f"target, ms) or batch_window_hours (offline: hours, <= {window.le:g})")

    def duplicates(self, ids: pa.Array) -> None:
        """Every repeat of a workload_id names the row that used it first."""
        if "workload_id" not in self.mapped or not self.n or self.cols[self.mapped["workload_id"]].unique:
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
        named = 0
        for label, i in sources:
            hit = np.flatnonzero(_kind_array(self.cols[i].formula, "formula"))
            t = self.cols[i].typed
            shown = hit[: max(_FORMULA_WARNINGS - named, 0)]
            for j in shown:
                value = t[int(j)].as_py()
                self.warnings.append(f"row {self.rows[j]}, column '{label}': {echo(value)!r} starts with "
                                     f"{value[0]!r}, which a spreadsheet may run as a formula; kept as text "
                                     "(exports neutralise it)")
            named += len(shown)
            if len(hit) > len(shown):
                self.warnings.append(f"column '{label}': {len(hit) - len(shown)} more formula-like cell(s), in rows "
                                     f"{some(self.rows[hit[len(shown):]])}")


def _dialect(raw: Raw, decimal: str | None, reason: str) -> str:
    if decimal is None:
        part = f"decimal separator: none needed ({reason})" if reason else ""
    else:
        thousands = "'.' or space" if decimal == "," else "',' or space"
        part = f"decimal separator '{decimal}' (thousands {thousands}; {reason})" if reason else (
            f"decimal separator '{decimal}' (thousands {thousands})")
    return ", ".join(p for p in (raw.dialect, part) if p)


def validate(raw: Raw) -> InventoryReport:
    """Column checks over the whole table; every bad cell becomes one error row."""
    check = _Checker(raw)
    check.header()
    check.columns()
    check.cell_sizes()
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
    dialect = _dialect(raw, check.decimal, check.decimal_reason) if raw.header_row else raw.dialect
    warnings = check.warnings
    if raw.announce or check.decimal == ",":
        warnings.insert(0, f"read as {dialect}")
    errors, count = errors_frame(check.errors)
    rows = check.rows
    common = dict(errors=errors, warnings=warnings, dialect=dialect, sheet=raw.sheet, sheets=raw.sheets,
                  header_row=raw.header_row, decimal=check.decimal, needs_decimal=check.needs_decimal,
                  error_count=count)
    if not errors.empty:
        return InventoryReport(frame=empty_frame(), **common)
    table = pa.table({c: out[c] for c in COLUMNS})
    if check.n >= 100_000:
        # The pages the checks freed sit in Arrow's allocator; the frame's Python strings come from another
        # allocator and would be added on top of them (2,000,000 rows: about 300 MiB more at the peak).
        del check, out, texts
        release_unused_memory()
    return InventoryReport(frame=frame_from_arrow(table, rows), **common)


def _merge_notes(notes: pa.Array, extras: list[tuple[str, pa.Array]]) -> pa.Array:
    """notes; header: value; header: value (blank parts left out), in one Arrow pass however many columns."""
    acc = notes
    for label, values in extras:
        part = pc.binary_join_element_wise(pa.scalar(f"{label}: "), values.cast(pa.string()), "")  # null if blank
        acc = pc.coalesce(pc.binary_join_element_wise(acc, part, "; "), acc, part)
    return acc


# -- a DataFrame (the dashboard's edited table, or code) -----------------------------------


def validate_frame(df: pd.DataFrame, row_numbers: Sequence[int] | np.ndarray | None = None) -> InventoryReport:
    """The same checks on a DataFrame (e.g. the dashboard's edited table); numbers in it use '.' as decimal point.

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
    columns = [as_text(df.iloc[:, i]) for i in range(df.shape[1])]
    raw = Raw(header=[str(c) for c in df.columns], columns=columns, rows=rows, header_row=0,
              decimal=".", dialect="table")
    return validate(raw)


def as_text(s: pd.Series) -> pa.Array:
    """A column of any dtype as text cells; numbers keep every digit (repr), missing -> null."""
    if pd.api.types.is_string_dtype(s) and not pd.api.types.is_object_dtype(s):
        return pa.array(s.to_numpy(dtype=object, na_value=None), pa.string())
    if pd.api.types.is_float_dtype(s) or pd.api.types.is_integer_dtype(s):
        # Arrow writes the shortest text that reads back to the same double.
        return pa.array(s.to_numpy(), from_pandas=True).cast(pa.string())
    return pa.array([cell_text(v) for v in s.to_numpy(dtype=object)], pa.string())


def cell_text(v: object) -> str | None:
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
