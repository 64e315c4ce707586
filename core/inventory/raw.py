"""The raw table a file reader hands to validation: every cell as text, with the row numbers the user sees."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


@dataclass
class Raw:
    """Cells as text, one Arrow string array per file column, and the row number of each row.

    `decimal` is the decimal separator the reader's context settles ('.' for a
    comma-separated CSV or a DataFrame, the user's choice when given), or None
    when the file's own cells must settle it (see core.inventory.numbers).
    `exact` marks, per column, cells that were real numbers in a workbook.
    """

    header: list[str]
    columns: list[pa.Array]
    rows: np.ndarray
    header_row: int = 1
    decimal: str | None = "."
    decimal_reason: str = ""
    dialect: str = ""
    kind: str = "table"  # "csv", "xlsx" or "table"
    announce: bool = False  # say "read as ..." in the warnings (not what a plain UTF-8 CSV would be)
    warnings: list[str] = field(default_factory=list)
    blank_rows: np.ndarray = field(default_factory=lambda: np.array([], dtype=np.int64))  # dropped by the reader
    exact: list[np.ndarray | None] | None = None
    sheet: str | None = None
    sheets: tuple[str, ...] = ()


class FileProblem(Exception):
    """The file as a whole cannot be read; the message says what to do."""


# Python's str.strip() set, so stored text equals what pydantic (str_strip_whitespace) keeps.
WHITESPACE = "".join(ch for ch in map(chr, range(sys.maxunicode + 1)) if ch.isspace())


def trim(a: pa.Array) -> pa.Array:
    """Strip like str.strip(); blank cells become null."""
    t = pc.utf8_trim(a, characters=WHITESPACE)
    empty = pc.equal(t, "")
    if not pc.any(empty).as_py():  # the usual case: DuckDB already made empty cells null
        return t
    return pc.if_else(empty, pa.scalar(None, pa.string()), t)
