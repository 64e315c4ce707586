"""Reading inventory files: decoding and sniffing CSV text, finding the sheet and header in a workbook, never a silent loss.

Every file is read whole or refused with one message naming what and where:
an encoding that changes mid-file, a quote left open at the end, a row count
the fast reader and the careful count disagree on, a cell longer than Excel
allows, more rows than MAX_ROWS, a workbook whose stored size hides rows.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import re
import tempfile
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from core.inventory.columns import (
    HEADER_SCAN_ROWS,
    MAX_CELL_CHARS,
    MAX_ROWS,
    MAX_ROWS_ENV,
    MIN_HEADER_MATCHES,
    echo,
    known_count,
)
from core.inventory.raw import FileProblem, Raw, release_unused_memory
from core.inventory.report import InventoryReport, some, unreadable
from core.inventory.validate import cell_text, validate

_XLSX_MAGIC = b"PK\x03\x04"
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_DELIMITERS = ",;\t|"
_DELIMITER_NAMES = {",": "','", ";": "';'", "\t": "tab", "|": "'|'"}
_COMMA_RULE = "comma-separated: Excel writes ',' between cells only where '.' is the decimal separator"
DECIMALS = (",", ".")


# progress(fraction done 0..1, what is being done): how core reports a long read or commit to the CLI or a page.
Progress = Callable[[float, str], None]


def read_inventory(source: str | Path | bytes, file_name: str | None = None, sheet: str | None = None,
                   decimal: str | None = None, progress: Progress | None = None) -> InventoryReport:
    """Read a CSV or XLSX inventory and validate it; never raises for bad content (see `errors`).

    `sheet` picks a workbook sheet (default: the sheet whose header matches the
    inventory columns). `decimal` ("," or ".") settles numbers such as 40.000
    that the file itself leaves ambiguous (see core.inventory.numbers).
    `progress` is told when reading starts, when the cells are being checked
    and when the report is ready (a 2,000,000-row file takes several seconds).
    """
    def tell(fraction: float, what: str) -> None:
        if progress is not None:
            progress(fraction, what)

    if decimal is not None and decimal not in DECIMALS:
        return unreadable(f"the decimal separator must be ',' or '.', not {echo(decimal, 10)!r}")
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
                raise FileProblem(f"no such file: {path}") from None
            except IsADirectoryError:
                raise FileProblem(f"{path} is a folder, not a file") from None
            except PermissionError:
                raise FileProblem(f"cannot read {path}: permission denied") from None
        tell(0.0, f"reading {echo(file_name or 'the file', 60)} ({len(data) / 1e6:,.1f} MB)")
        raw = _read_bytes(data, file_name or "", sheet, path, decimal)
    except FileProblem as exc:
        tell(1.0, "the file cannot be read")
        return unreadable(str(exc))
    tell(0.6, f"checking every cell of {len(raw.rows):,} rows")
    n = len(raw.rows)
    report = validate(raw)
    del raw, data
    release_unused_memory()
    tell(1.0, f"checked {n:,} rows")
    return report


def _read_bytes(data: bytes, file_name: str, sheet: str | None, path: Path | None, decimal: str | None) -> Raw:
    suffix = Path(file_name).suffix.lower()
    if not data:
        raise FileProblem("the file is empty (0 bytes); download the template, fill it in and upload it again")
    if data.startswith(_XLSX_MAGIC):
        raw = _read_xlsx(data, sheet, decimal)
        if suffix not in (".xlsx", ".xlsm", ""):
            raw.warnings.append(f"{echo(file_name)} is an Excel workbook despite its name; read it as .xlsx")
        return raw
    if data.startswith(_OLE_MAGIC):
        raise FileProblem("this is an old Excel 97-2003 (.xls) or other Office binary file; "
                          "save it as .xlsx or as 'CSV UTF-8' and upload that")
    if suffix in (".xlsx", ".xlsm"):
        raise FileProblem(f"{echo(file_name)} is named .xlsx but is not an Excel workbook; save it again from Excel")
    if sheet is not None:
        raise FileProblem(f"a sheet name ({echo(sheet)!r}) applies to .xlsx workbooks only; this file is CSV text")
    return _read_csv(data, path, decimal)


# -- XLSX ---------------------------------------------------------------------------------


def _header_in(rows: list[tuple]) -> tuple[int, int]:
    """(index of the row naming most inventory columns among the first rows, how many it names)."""
    best, score = 0, -1
    for k, r in enumerate(rows):
        n = known_count(cell_text(v) for v in r)
        if n > score:
            best, score = k, n
    return best, max(score, 0)


def _read_xlsx(data: bytes, sheet: str | None, decimal: str | None) -> Raw:
    """Read a workbook with calamine (Rust): every cell the sheets hold, whatever their stored <dimension> says.

    openpyxl read cell by cell in Python (a 100,000-row workbook took 21-24 s,
    holding the GIL all along, so other dashboard sessions stalled); calamine
    parses the sheet XML natively and the cells cross into Python once.
    """
    from python_calamine import CalamineWorkbook  # imported here: only workbooks need it

    try:
        wb = CalamineWorkbook.from_filelike(io.BytesIO(data))
    except Exception as exc:  # calamine raises several kinds for a damaged zip or XML
        raise FileProblem(f"cannot open the workbook ({type(exc).__name__}: {echo(exc)}); "
                          "save it again as .xlsx") from None
    try:
        return _read_workbook(wb, data, sheet, decimal)
    finally:
        with contextlib.suppress(Exception):
            wb.close()


def _load_sheet(wb, name: str):
    try:
        return wb.get_sheet_by_name(name)
    except Exception as exc:  # damaged sheet XML, a chart sheet, ...
        raise FileProblem(f"cannot read sheet {echo(name, 40)!r} ({type(exc).__name__}: {echo(exc)}); "
                          "save the workbook again as .xlsx") from None


def _read_workbook(wb, data: bytes, sheet: str | None, decimal: str | None) -> Raw:
    from python_calamine import SheetTypeEnum

    names = [m.name for m in wb.sheets_metadata if m.typ == SheetTypeEnum.WorkSheet]
    if not names:
        raise FileProblem("the workbook has no worksheet")
    if sheet is not None:
        match = ([n for n in names if n == sheet]
                 or [n for n in names if n.strip().lower() == sheet.strip().lower()])
        if not match:
            raise FileProblem(f"no sheet named {echo(sheet)!r}; the workbook has: "
                              f"{', '.join(echo(n, 40) for n in names[:30])}")
    # Find the inventory: in each sheet, the row among the first ones that names most columns.
    scores: list[tuple[int, int, int]] = []  # (score, -position, header index)
    loaded = {}
    for pos, name in enumerate(names):
        ws = _load_sheet(wb, name)
        head = ws.to_python(skip_empty_area=False, nrows=HEADER_SCAN_ROWS)
        k, n = _header_in(head)
        scores.append((n, -pos, k))
        if sheet is None or name == match[0]:
            loaded[name] = ws
    matching = [n for n, s in zip(names, scores, strict=True) if s[0] >= MIN_HEADER_MATCHES]
    best = [names[-s[1]] for s in sorted(scores, reverse=True) if s[0] >= MIN_HEADER_MATCHES]
    warnings: list[str] = []
    if sheet is not None:
        chosen = match[0]
    elif matching:
        chosen = best[0]
        if len(matching) > 1:
            others = ", ".join(repr(echo(m, 40)) for m in best[1:6])
            warnings.append(f"several sheets hold an inventory header; read {echo(chosen, 40)!r} (the closest "
                            f"match), not {others}; choose another with --sheet NAME (the sheet choice in "
                            "the dashboard)")
        elif chosen != names[0]:
            warnings.append(f"read sheet {echo(chosen, 40)!r}: its header names the inventory columns "
                            f"(the first sheet, {echo(names[0], 40)!r}, does not)")
    else:
        chosen = names[0]
    ws = loaded[chosen]
    loaded.clear()  # the other sheets' cells are not needed any more
    position = names.index(chosen)
    header_index = scores[position][2] if scores[position][0] >= MIN_HEADER_MATCHES else None
    if ws.total_height > MAX_ROWS + HEADER_SCAN_ROWS + 1:
        raise FileProblem(f"sheet {echo(chosen, 40)!r} has more than {MAX_ROWS:,} rows; one inventory "
                          f"may hold at most {MAX_ROWS:,} workloads ({MAX_ROWS_ENV} sets this limit): split it "
                          "or remove unused rows")
    records = ws.to_python(skip_empty_area=False)
    _restore_error_cells(data, chosen, records)

    def filled(r: list) -> bool:
        return any(v != "" and not (isinstance(v, str) and not v.strip()) for v in r)

    # Trailing rows with nothing in them are not part of the sheet (Excel keeps formatted empty rows).
    while records and not filled(records[-1]):
        records.pop()
    if header_index is None:
        header_index = next((k for k, r in enumerate(records) if filled(r)), None)
        if header_index is None:
            raise FileProblem(f"sheet {echo(chosen, 40)!r} is empty; its first row must name the columns")
    real_rows = len(records)
    real_cols = ws.end[1] + 1 if ws.end is not None else 0
    max_row, max_col = _stated_dimension(data, chosen)
    if max_row is not None and (real_rows > max_row or real_cols > (max_col or 0)):
        warnings.append(f"sheet {echo(chosen, 40)!r} says it ends at row {max_row:,}, column {max_col or 0} (its "
                        f"stored dimension), but holds values up to row {real_rows:,}, column {real_cols}; "
                        "every row was read")
    header_row = header_index + 1
    if real_rows - header_row > MAX_ROWS:
        raise FileProblem(f"sheet {echo(chosen, 40)!r} has {real_rows - header_row:,} rows below the header; one "
                          f"inventory may hold at most {MAX_ROWS:,} workloads ({MAX_ROWS_ENV} sets this limit): split it")
    if header_row > 1:
        warnings.append(f"header found on row {header_row}; the {header_row - 1} row(s) above it (titles or blank) "
                        "were skipped")
    header = [cell_text(v) or "" for v in records[header_index]]
    # calamine pads every row to the sheet's width: the header's last named cell ends the table.
    width = max((j + 1 for j, h in enumerate(header) if h.strip()), default=len(header))
    header = header[:width]
    body = records[header_index + 1:]
    del records
    cols: list[pa.Array] = []
    exact: list[np.ndarray | None] = []
    for i in range(width):
        cells = [r[i] for r in body]
        text, typed = _sheet_column(cells)
        cols.append(text)
        exact.append(typed)
    over = [k + header_row + 1 for k, r in enumerate(body) if len(r) > width and filled(r[width:])]
    where = f"XLSX, sheet {echo(chosen, 40)!r}" + (f", header on row {header_row}" if header_row > 1 else "")
    raw = Raw(header=header, columns=cols, rows=np.arange(header_row + 1, header_row + 1 + len(body), dtype=np.int64),
              header_row=header_row, decimal=decimal, decimal_reason="your choice" if decimal else "",
              dialect=where, kind="xlsx", exact=exact, sheet=chosen, sheets=tuple(matching),
              warnings=warnings)
    if over:
        raw.warnings.append(f"values right of the last named column were ignored in row(s) {some(np.array(over))}")
    return raw


def _sheet_column(cells: list) -> tuple[pa.Array, np.ndarray]:
    """(the cells as text, blank = null; mask of cells that were real numbers) for one workbook column."""
    n = len(cells)
    kinds = np.fromiter(map(type, cells), dtype=object, count=n)

    def of(kind: type) -> np.ndarray:  # compared in C, cell by cell (a Python loop cost more than the read)
        return np.equal(kinds, np.array(kind, dtype=object))

    is_str = of(str)
    if is_str.all():  # text only (ids, names, choices): no per-cell conversion
        return pa.array(cells, pa.string()), np.zeros(n, dtype=bool)
    is_float = of(float)
    exact = is_float | of(int)
    values = np.empty(n, dtype=object)
    values[:] = cells
    out = np.full(n, None, dtype=object)
    out[is_str] = values[is_str]
    # Numbers as cell_text writes them, a whole column at once: whole numbers below 1e15 as integers, others
    # in Arrow's shortest round-trip form (it parses back to the very same double).
    f = values[is_float].astype(np.float64)
    whole = (f == np.floor(f)) & (np.abs(f) < 1e15)
    texts = np.empty(len(f), dtype=object)
    texts[whole] = pa.array(f[whole].astype(np.int64)).cast(pa.string()).to_numpy(zero_copy_only=False)
    texts[~whole] = pa.array(f[~whole]).cast(pa.string()).to_numpy(zero_copy_only=False)
    out[is_float] = texts
    other = np.flatnonzero(~is_str & ~is_float)  # ints, booleans, dates, times: few, one by one
    out[other] = [cell_text(values[i]) for i in other]
    return pa.array(out, pa.string()), exact


_DIMENSION = re.compile(rb"<(?:\w+:)?dimension\s+ref=\"([A-Za-z]*)([0-9]*)(?::([A-Za-z]*)([0-9]*))?\"")
_ERROR_CELL = re.compile(rb"<(?:\w+:)?c\s([^>]*?\bt=\"e\"[^>]*)>(.*?)</(?:\w+:)?c>", re.S)
_CELL_REF = re.compile(rb"\br=\"([A-Z]+)([0-9]+)\"")
_VALUE = re.compile(rb"<(?:\w+:)?v>([^<]*)</(?:\w+:)?v>")


def _sheet_part(data: bytes, name: str) -> tuple[zipfile.ZipFile, str] | None:
    """(the open zip, the path of a sheet's XML part), from the workbook's own relationships; None if not found."""
    import xml.etree.ElementTree as ET

    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        book = ET.fromstring(zf.read("xl/workbook.xml"))
        rels = ET.fromstring(zf.read("xl/_rels/workbook.xml.rels"))
    except (KeyError, zipfile.BadZipFile, ET.ParseError, OSError):
        return None
    rid = next((el.get(f"{{{_REL_NS}}}id") for el in book.iter() if el.tag.endswith("}sheet")
                and el.get("name") == name), None)
    target = next((el.get("Target") for el in rels.iter() if el.get("Id") == rid), None)
    if rid is None or target is None:
        return None
    part = target.lstrip("/") if target.startswith("/") else "xl/" + target
    return (zf, part) if part in zf.namelist() else None


_REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def _column_number(letters: bytes) -> int:
    n = 0
    for ch in letters.upper():
        n = n * 26 + ch - 64
    return n


def _stated_dimension(data: bytes, name: str) -> tuple[int | None, int | None]:
    """The (last row, last column) a sheet's stored <dimension> claims, or (None, None) when it states none."""
    found = _sheet_part(data, name)
    if found is None:
        return None, None
    zf, part = found
    with zf.open(part) as f:
        head = f.read(65536)  # the dimension comes before the sheet data
    m = _DIMENSION.search(head)
    if m is None:
        return None, None
    col, row = (m.group(3), m.group(4)) if m.group(3) is not None else (m.group(1), m.group(2))
    return (int(row) if row else None), (_column_number(col) if col else None)


def _restore_error_cells(data: bytes, name: str, records: list[list]) -> None:
    """Put back the text of cells showing a formula error (#N/A, #DIV/0!), which calamine reads as blank.

    openpyxl gave them as text and validation reports them ("not a number
    '#N/A'"); read as blank, an optional column would silently take its
    default. The sheet XML is searched in 16 MiB pieces; almost no file has
    such a cell, and then only the search is paid.
    """
    found = _sheet_part(data, name)
    if found is None:
        return
    zf, part = found
    tail = b""
    with zf.open(part) as f:
        while piece := f.read(16 * 2**20):
            chunk = tail + piece
            # Keep an unfinished cell for the next piece: cut after the last closed cell.
            cut = chunk.rfind(b"</c>")
            cut = len(chunk) if cut < 0 else cut + 4
            body, tail = chunk[:cut], chunk[cut:]
            if b't="e"' in body:
                _error_cells_in(body, name, records)
    if b't="e"' in tail:
        _error_cells_in(tail, name, records)


def _error_cells_in(xml: bytes, name: str, records: list[list]) -> None:
    for m in _ERROR_CELL.finditer(xml):
        ref = _CELL_REF.search(m.group(1))
        value = _VALUE.search(m.group(2))
        if ref is None:
            raise FileProblem(f"sheet {echo(name, 40)!r} holds cells showing a formula error (such as #N/A) "
                              "without a cell reference; fix those formulas or save the sheet as 'CSV UTF-8'")
        r, c = int(ref.group(2)) - 1, _column_number(ref.group(1)) - 1
        if r < len(records) and c < len(records[r]):
            records[r][c] = value.group(1).decode("utf-8", "replace") if value else "#VALUE!"


# -- text: encodings ------------------------------------------------------------------------

_WIDE_BOMS = ((b"\xff\xfe\x00\x00", "utf-32-le", "UTF-32"), (b"\x00\x00\xfe\xff", "utf-32-be", "UTF-32"),
              (b"\xff\xfe", "utf-16-le", "UTF-16"), (b"\xfe\xff", "utf-16-be", "UTF-16"))
# Control bytes (tab, LF and CR aside); Windows-1252 and UTF-8 agree on all of them. A cell may hold a
# few (Excel's CHAR(27) is kept as typed), but a file made of them is not text.
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_CONTROL_SHARE = 0.05
# A well-formed UTF-8 sequence of two or more bytes: Windows-1252 text almost never contains one.
_UTF8_MULTI = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]{2}"
                         rb"|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}"
                         rb"|\xf4[\x80-\x8f][\x80-\xbf]{2}")


def _line_of(data: bytes, pos: int) -> int:
    """1-based line of a byte position (CR-only files count CRs)."""
    head = data[:pos]
    return (head.count(b"\n") if b"\n" in data else head.count(b"\r")) + 1


def _wide_without_bom(data: bytes) -> tuple[str, str] | None:
    """UTF-16/UTF-32 text without a BOM, told by where the zero bytes of ASCII characters fall."""
    sample = np.frombuffer(data[: 4096 - 4096 % 4], dtype=np.uint8)
    if len(sample) < 4:
        return None
    zero = sample == 0

    def share(offset: int, step: int) -> float:
        return float(zero[offset::step].mean())

    if share(1, 4) > 0.9 and share(2, 4) > 0.9 and share(3, 4) > 0.9 and share(0, 4) < 0.5:
        return "utf-32-le", "UTF-32"
    if share(0, 4) > 0.9 and share(1, 4) > 0.9 and share(2, 4) > 0.9 and share(3, 4) < 0.5:
        return "utf-32-be", "UTF-32"
    if share(1, 2) > 0.7 and share(0, 2) < 0.3:
        return "utf-16-le", "UTF-16"
    if share(0, 2) > 0.7 and share(1, 2) < 0.3:
        return "utf-16-be", "UTF-16"
    return None


_BINARY = ("this is not a CSV text file ({why}; it looks binary); export the sheet as 'CSV UTF-8' "
           "or upload the .xlsx workbook")


def _not_binary(data: bytes) -> None:
    """Refuse text whose first 4 KB are more than 5 % control bytes (random or binary data)."""
    sample = data[:4096]
    found = _CONTROL.findall(sample)
    if len(found) > _CONTROL_SHARE * len(sample) and (first := _CONTROL.search(sample)) is not None:
        raise FileProblem(_BINARY.format(why=f"{len(found)} of its first {len(sample):,} bytes are control bytes, "
                                             f"the first on line {_line_of(data, first.start())}"))


def decode(data: bytes) -> tuple[str, bytes]:
    """(encoding label, UTF-8 bytes without BOM), or a FileProblem naming the line that cannot be read."""
    wide = next(((enc, label, len(bom)) for bom, enc, label in _WIDE_BOMS if data.startswith(bom)), None)
    if wide is None and b"\x00" in data:
        guess = _wide_without_bom(data)
        if guess is None:
            raise FileProblem(_BINARY.format(why="it contains NUL bytes"))
        wide = (*guess, 0)
    if wide is not None:
        enc, label, skip = wide
        body = data[skip:]
        unit = 4 if label == "UTF-32" else 2
        if len(body) % unit:
            raise FileProblem(f"the file is {label} text but its length ({len(data):,} bytes) is not a multiple of "
                              f"{unit}: it is cut off or damaged; save it again (as 'CSV UTF-8' if you can)")
        try:
            text = body.decode(enc)
        except UnicodeDecodeError as exc:
            line = body[: exc.start - exc.start % unit].decode(enc, errors="replace").count("\n") + 1
            raise FileProblem(f"line {line} is not valid {label} text; the file is damaged: save it again "
                              "as 'CSV UTF-8'") from None
        if "\x00" in text:
            raise FileProblem(_BINARY.format(why=f"it contains NUL characters after decoding it as {label}"))
        out = text.encode("utf-8")
        _not_binary(out)
        return f"{label}{' with BOM' if skip else ''}", out
    if data.endswith(b"\x1a"):  # a DOS end-of-file mark
        data = data[:-1]
    _not_binary(data)
    if data.startswith(b"\xef\xbb\xbf"):
        label, body = "UTF-8 with BOM", data[3:]
    else:
        label, body = "UTF-8", data
    if body.isascii():
        return label, body
    try:
        body.decode("utf-8")
        return label, body
    except UnicodeDecodeError as exc:
        bad_line = _line_of(body, exc.start)
        good = _UTF8_MULTI.search(body)
    if label == "UTF-8 with BOM" or good is not None:
        # Text pasted from two sources: decoding either way would turn part of it into mojibake.
        where = (f"line {_line_of(body, good.start())} is UTF-8 but line {bad_line} is not"
                 if good is not None else f"the file says it is UTF-8, but line {bad_line} is not")
        raise FileProblem(f"mixed text encodings: {where} (Windows-1252?); save the whole file again as "
                          "'CSV UTF-8'")
    try:
        text = body.decode("cp1252")
    except UnicodeDecodeError as exc:
        raise FileProblem(f"line {_line_of(body, exc.start)} is neither UTF-8 nor Windows-1252 text; "
                          "save the file as 'CSV UTF-8'") from None
    return "Windows-1252", text.encode("utf-8")


# -- text: layout -----------------------------------------------------------------------------


def _scan_header(head: str) -> tuple[str, int, int, int, list[str]]:
    """(delimiter, header record index, physical lines before it, columns it names, the header) from the first records."""
    lines = head.splitlines()[:HEADER_SCAN_ROWS]
    try:
        guess = csv.Sniffer().sniff("\n".join(lines), delimiters=_DELIMITERS).delimiter
    except csv.Error:
        guess = None
    found = {}
    for d in _DELIMITERS:
        reader = csv.reader(io.StringIO(head, newline=""), delimiter=d)
        best: tuple[int, int, int, list[str]] = (-1, 0, 0, [])  # (score, record index, lines before, record)
        before = 0
        try:
            for k, rec in enumerate(reader):
                if k >= HEADER_SCAN_ROWS:
                    break
                n = known_count(rec)
                if n > best[0]:
                    best = (n, k, before, rec)
                before = reader.line_num
        except csv.Error:
            pass
        found[d] = best
    first = lines[0] if lines else ""
    best_d = max(_DELIMITERS, key=lambda d: (found[d][0], d == guess, first.count(d)))
    score, index, before, record = found[best_d]
    if score >= MIN_HEADER_MATCHES:
        return best_d, index, before, score, record
    # No row names enough columns: the first row is the header, and the report says what is missing.
    delimiter = best_d if guess is None or found[best_d][0] > found[guess][0] else guess
    first_record = next(csv.reader(io.StringIO(head, newline=""), delimiter=delimiter), [])
    return delimiter, 0, 0, max(score, 0), first_record


def _record_layout(body: bytes) -> tuple[int, np.ndarray | None]:
    """(number of records, mask of empty records or None when none is empty), counted without parsing.

    With RFC 4180 quoting (a quote inside a field is doubled) a newline ends a
    record exactly when an even number of quotes precede it. An odd number of
    quotes in all means the file ends inside a quoted cell: refused, naming the
    line where that record starts.
    """
    quotes_total = body.count(b'"')
    if quotes_total == 0:
        n = body.count(b"\n") + (0 if body.endswith(b"\n") else 1)
        if not re.search(rb"\n\r?\n", body):
            return n, None
    buf = np.frombuffer(body, dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)
    quotes = np.flatnonzero(buf == 34) if quotes_total else np.array([], dtype=np.int64)
    ends = newlines[np.searchsorted(quotes, newlines) % 2 == 0] if quotes_total else newlines
    if quotes_total % 2:
        start = int(ends[-1]) + 1 if len(ends) else 0
        line = body.count(b"\n", 0, start) + 1
        raise FileProblem(f"the file ends inside a quoted cell: the quote opened in the row starting on line {line} "
                          "is never closed; close it (or remove the stray \") and save again")
    if len(ends) == 0 or ends[-1] != len(buf) - 1:
        ends = np.append(ends, len(buf))  # last record without a final newline
    starts = np.concatenate(([0], ends[:-1] + 1))
    length = ends - starts
    cr_only = (length == 1) & (buf[np.minimum(starts, len(buf) - 1)] == 13)
    empty = (length == 0) | cr_only
    return len(ends), (empty if empty.any() else None)


def _read_csv(data: bytes, path: Path | None, decimal: str | None) -> Raw:
    encoding, body = decode(data)
    line_ends = ""
    if b"\r" in body and b"\n" not in body:
        # Excel for Mac's "CSV (Macintosh)": CR alone ends a line.
        body = body.replace(b"\r", b"\n")
        line_ends = ", line ends CR (Mac)"
    # The first lines (however wide: 10,000 columns make a long header), for the delimiter and the header row.
    end = -1
    for _ in range(HEADER_SCAN_ROWS + 1):
        nxt = body.find(b"\n", end + 1)
        if nxt < 0:
            end = len(body) - 1
            break
        end = nxt
    head = body[: max(end + 1, min(65536, len(body)))].decode("utf-8", errors="ignore")
    if end + 1 < len(body) and "\n" in head:
        head = head[: head.rfind("\n") + 1]
    sep_lines = 0
    first_line = head.split("\n", 1)[0].strip()
    if re.fullmatch(r"(?i)sep=.", first_line) and first_line[4] in _DELIMITERS:
        # Excel's "sep=;" hint line: obey it, and count it as row 1.
        sep_lines = 1
        head = head.split("\n", 1)[1] if "\n" in head else ""
    delimiter, header_index, lines_before, score, header = _scan_header(head)
    if sep_lines and first_line[4] != delimiter:
        # The hint wins over the guess: read the header again with the delimiter it names.
        delimiter, header_index, lines_before, score = first_line[4], 0, 0, 0
        header = next(csv.reader(io.StringIO(head, newline=""), delimiter=delimiter), [])
    if score < MIN_HEADER_MATCHES and (not header or not any(h.strip() for h in header)):
        raise FileProblem("the first row is empty; it must name the columns (download the template to see them)")
    skip = sep_lines + lines_before
    header_records = sep_lines + header_index + 1
    utf8_on_disk = encoding in ("UTF-8", "UTF-8 with BOM") and not line_ends

    def within_limit(layout: tuple[int, np.ndarray | None]) -> tuple[int, np.ndarray | None]:
        if layout[0] - header_records > MAX_ROWS:
            raise FileProblem(f"the file has {layout[0] - header_records:,} rows below the header; one inventory "
                              f"may hold at most {MAX_ROWS:,} workloads ({MAX_ROWS_ENV} sets this limit): split it")
        return layout

    # The careful count of every record (it refuses an open quote, and rows past the limit) runs
    # alongside the fast reader: both release the GIL.
    with ThreadPoolExecutor(max_workers=1) as pool:
        counting = pool.submit(_record_layout, body)
        raw = _read_csv_duckdb(body, path if utf8_on_disk else None, header, delimiter, skip, header_records,
                               lambda: within_limit(counting.result()))
        within_limit(counting.result())
    if raw is None:
        raw = _read_csv_python(body, header, delimiter, header_records)
    raw.header_row = header_records
    if decimal is not None:
        raw.decimal, raw.decimal_reason = decimal, "your choice"
    elif delimiter == ",":
        raw.decimal, raw.decimal_reason = ".", _COMMA_RULE
    else:
        raw.decimal, raw.decimal_reason = None, ""
    header_note = f", header on row {header_records}" if header_index else ""
    raw.dialect = f"CSV, delimiter {_DELIMITER_NAMES[delimiter]}, encoding {encoding}{line_ends}{header_note}"
    raw.kind = "csv"
    raw.announce = encoding not in ("UTF-8", "UTF-8 with BOM") or delimiter != "," or bool(line_ends)
    if header_index:
        raw.warnings.append(f"header found on row {header_records}; the {header_index} row(s) above it "
                            "(titles or blank) were skipped")
    return raw


def _read_csv_duckdb(body: bytes, path: Path | None, header: list[str], delimiter: str, skip: int,
                     header_records: int, layout) -> Raw | None:
    """Fast path: DuckDB's parallel CSV reader, every cell as text; None when the careful path must decide.

    Its row count is checked against the careful count of records (`layout()`
    gives it: records, and which are empty): any difference (a row it dropped
    or split) sends the file the careful way.
    """
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
    n_records, empty = layout()
    numbers = np.arange(1, n_records + 1, dtype=np.int64)
    if empty is None:
        body_rows, blank_rows = numbers[header_records:], np.array([], dtype=np.int64)
    else:
        body_rows = numbers[header_records:][~empty[header_records:]]
        blank_rows = numbers[header_records:][empty[header_records:]]
    if len(body_rows) != table.num_rows:
        return None  # the reader and the count disagree: let the careful path decide
    # One contiguous array per column, each column's chunks dropped as soon as it is combined: the whole table
    # is never held twice (a 2,000,000-row file is about 300 MB of text).
    arrays = []
    for _ in range(len(header)):
        arrays.append(table.column(0).combine_chunks())
        table = table.remove_column(0)
    return Raw(header=header, columns=arrays, rows=body_rows, blank_rows=blank_rows)


def _read_csv_python(body: bytes, header: list[str], delimiter: str, header_records: int) -> Raw:
    """Careful path: Python's csv module, record by record; ragged rows become cell errors later."""
    text = body.decode("utf-8")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, quotechar='"', doublequote=True)
    width = len(header)
    cells: list[list[str | None]] = [[] for _ in range(width)]
    rows: list[int] = []
    long_rows: list[int] = []
    line = 0
    try:
        for number, record in enumerate(reader, start=1):
            line = reader.line_num
            if number <= header_records:
                continue
            if len(record) > width and any(v.strip() for v in record[width:]):
                long_rows.append(number)
            rows.append(number)
            for i in range(width):
                cells[i].append(record[i] if i < len(record) and record[i] != "" else None)
    except csv.Error as exc:
        if "field larger than field limit" in str(exc):
            raise FileProblem(f"the row starting on line {line + 1} holds a cell of more than "
                              f"{csv.field_size_limit():,} characters; the limit is {MAX_CELL_CHARS:,} "
                              "characters per cell (Excel's own limit)") from None
        raise FileProblem(f"cannot read the CSV near line {reader.line_num}: {exc}") from None
    if long_rows:
        hint = (" (a number with a ',' thousands separator must be in quotes, or save with ';' between cells)"
                if delimiter == "," else "")
        raise FileProblem(f"row(s) {some(np.array(long_rows))} have more values than the header has columns "
                          f"({width}); add the missing column names to the header or remove the extra values"
                          + hint)
    return Raw(header=header, columns=[pa.array(c, pa.string()) for c in cells], rows=np.array(rows, dtype=np.int64))
