"""What reading an inventory found: the typed frame, the (bounded) error table, warnings and how the file was read."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

from core.inventory.columns import (
    COLUMNS,
    MAX_LISTED_ERRORS,
    NUMERIC_COLUMNS,
    OPTIONAL_TEXT_COLUMNS,
    echo,
)

ERROR_COLUMNS = ("row", "column", "value", "problem")


@dataclass(frozen=True, eq=False)
class InventoryReport:
    """What reading or validating an inventory found.

    `frame` holds the validated workloads (exactly COLUMNS, index = row number
    as the user saw it) and is empty whenever `errors` is not. In `errors`,
    row 0 with an empty column means the file as a whole. At most
    MAX_LISTED_ERRORS errors are listed; `error_count` counts them all.

    For workbooks, `sheet` is the sheet read and `sheets` every sheet whose
    header matches the inventory columns (more than one: offer a choice).
    `needs_decimal` is set when a number such as 40.000 could be forty
    thousand or forty and nothing in the file says which: read it again with
    decimal="," or decimal=".".
    """

    frame: pd.DataFrame
    errors: pd.DataFrame
    warnings: list[str] = field(default_factory=list)
    dialect: str = ""
    sheet: str | None = None
    sheets: tuple[str, ...] = ()
    header_row: int = 1
    decimal: str | None = None
    needs_decimal: bool = False
    error_count: int = 0

    @property
    def ok(self) -> bool:
        """True when there is no error (the frame may be committed)."""
        return self.errors.empty

    @property
    def unlisted_errors(self) -> int:
        """Errors found but not listed (beyond MAX_LISTED_ERRORS)."""
        return max(self.error_count - len(self.errors), 0)

    def error_lines(self) -> list[str]:
        """One readable line per listed error, in row order, then how many more there are."""
        out = []
        for r in self.errors.itertuples(index=False):
            if r.row == 0 and not r.column:
                out.append(f"file: {r.problem}")
            else:
                value = f" {r.value!r}:" if r.value != "" else ""
                out.append(f"row {r.row}, column '{r.column}':{value} {r.problem}")
        if self.unlisted_errors:
            out.append(f"... and {self.unlisted_errors:,} more error(s) not listed (the first "
                       f"{len(self.errors):,} are shown; fix them and read the file again)")
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


def errors_frame(parts: list[pd.DataFrame]) -> tuple[pd.DataFrame, int]:
    """(the first MAX_LISTED_ERRORS error rows sorted by row and contract column order, the total count)."""
    parts = [p for p in parts if len(p)]
    if not parts:
        empty = pd.DataFrame({c: pd.Series([], dtype=np.int64 if c == "row" else object) for c in ERROR_COLUMNS})
        return empty, 0
    out = pd.concat(parts, ignore_index=True)[list(ERROR_COLUMNS)]
    order = {c: i for i, c in enumerate(COLUMNS)}
    key = out["column"].astype(str).str.partition("/")[0].map(order).fillna(len(order))
    out = out.iloc[np.lexsort((key.to_numpy(), out["row"].to_numpy()))]
    total = len(out)
    out = out.iloc[:MAX_LISTED_ERRORS].reset_index(drop=True)
    out["row"] = out["row"].astype(np.int64)
    out["value"] = [echo(v) for v in out["value"]]
    return out.astype({"column": object, "value": object, "problem": object}), total


def error(row: int, column: str, value: str, problem: str) -> pd.DataFrame:
    """One error row."""
    return pd.DataFrame({"row": [row], "column": [column], "value": [value], "problem": [problem]})


def cell_errors(rows: np.ndarray, column: str, values: pa.Array, mask: np.ndarray, problem: str) -> pd.DataFrame:
    """Error rows for every cell where `mask` is set (the raw text, as the user typed it, cut for display)."""
    idx = np.flatnonzero(mask)
    if not len(idx):
        return pd.DataFrame()
    # Only the cells that can be listed are turned into Python strings.
    shown = values.take(pa.array(idx[:MAX_LISTED_ERRORS])).fill_null("").to_pylist()
    shown += [""] * (len(idx) - len(shown))
    return pd.DataFrame({"row": rows[idx], "column": column, "value": shown, "problem": problem})


def unreadable(problem: str) -> InventoryReport:
    """The report for a file that cannot be read at all."""
    errors, n = errors_frame([error(0, "", "", problem)])
    return InventoryReport(frame=empty_frame(), errors=errors, dialect="unreadable", error_count=n)


def some(rows: np.ndarray, limit: int = 10) -> str:
    """'3, 4, 9 and 12 more': a short list of row numbers."""
    shown = ", ".join(str(int(r)) for r in rows[:limit])
    return shown + (f" and {len(rows) - limit} more" if len(rows) > limit else "")
