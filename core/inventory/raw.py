"""The raw table a file reader hands to validation: every cell as text, with the row numbers the user sees."""

from __future__ import annotations

import ctypes
import ctypes.util
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


# Python's str.strip() set, so stored text equals what pydantic (str_strip_whitespace) keeps. Written out: scanning
# every code point for it took ~60 ms of each process's start (tests/test_inventory.py checks it is that set).
WHITESPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
              "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


def trim(a: pa.Array) -> pa.Array:
    """Strip like str.strip(); blank cells become null."""
    t = pc.utf8_trim(a, characters=WHITESPACE)
    if len(a) and pc.sum(pc.binary_length(t)).as_py() == pc.sum(pc.binary_length(a)).as_py():
        t = a  # nothing was trimmed (the usual case): keep the cells, not a second copy of every column
    empty = pc.equal(t, "")
    if not pc.any(empty).as_py():  # the usual case: DuckDB already made empty cells null
        return t
    return pc.if_else(empty, pa.scalar(None, pa.string()), t)


def _libc_trim():
    """glibc's malloc_trim, or None where the C library has none (macOS, musl)."""
    try:
        name = ctypes.util.find_library("c")
        return getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    except OSError:
        return None


_MALLOC_TRIM = _libc_trim()


def release_unused_memory() -> None:
    """Hand the memory a large read or commit freed back to the system.

    Arrow's allocator (mimalloc) and glibc's malloc keep freed pages for
    reuse: after reading a 2,000,000-row file the process stayed ~550 MiB
    above what it still held (issue 16: a dashboard session must stay under
    2 GB). Both are asked to return them; a few milliseconds.
    """
    pa.default_memory_pool().release_unused()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)
