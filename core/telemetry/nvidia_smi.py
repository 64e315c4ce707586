"""nvidia-smi `--query-gpu=... --format=csv` logs: the header read in Python, the rows in bulk by the store.

nvidia-smi writes a header such as ``timestamp, index, utilization.gpu [%],
memory.used [MiB], power.draw [W]`` and values with their units (``45 %``,
``1234 MiB``, ``250.12 W``) unless asked for ``nounits`` (the header keeps the
units either way, so whether values carry them is read from the first rows).
Timestamps are the node's local wall clock, ``2026/11/02 09:00:00.123``.
Unsupported fields read ``[N/A]`` or ``[Not Supported]``: a missing value, not
an error. Logs appended across restarts (``-l 60 >> gpu.csv``) repeat the
header; repeats are skipped.

The millions of rows are parsed by DuckDB's CSV reader (`core.store.telemetry`),
which stops at the first bad value without saying on which line; `diagnose`
then walks the file with the same rules and names every bad line.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable

from core.errors import InputError
from core.format import integer, plain
from core.telemetry.plausible import FORMAT_ONLY, Plausible
from core.telemetry.samples import CsvColumn, CsvPlan, ParsedTelemetry, ts_window_naive

FORMAT = "nvidia-smi CSV"
TIME_BASIS = "node local time (as nvidia-smi writes it)"

# nvidia-smi query field -> (metric, divide_by, low, high as written). power.draw.* are newer drivers' names.
_VALUE_FIELDS: dict[str, tuple[str, float, float, float | None]] = {
    "utilization.gpu": ("gpu_util", 100.0, 0.0, 100.0),
    "memory.used": ("memory_used_mib", 1.0, 0.0, None),
    "power.draw": ("power_w", 1.0, 0.0, None),
    "power.draw.instant": ("power_w", 1.0, 0.0, None),
    "power.draw.average": ("power_w", 1.0, 0.0, None),
}
_GPU_FIELDS = ("index", "uuid", "gpu_uuid", "pci.bus_id", "gpu_bus_id")  # first present names the GPU
_HEADER_CELL = re.compile(r"^(?P<name>[a-z_][a-z0-9_.]*)\s*(?:\[(?P<unit>[^\]]*)\])?$", re.IGNORECASE)
_TS = re.compile(r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,3})?$")
_TS_MS = re.compile(r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$")
_TS_S = re.compile(r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}$")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_SNIFF_ROWS = 200  # data rows looked at to tell "45 %" files from nounits files
MAX_REPORTED = 20  # bad lines named in one message


def _split_header(line: str) -> list[tuple[str, str, str]] | None:
    """[(cell as written, field name lower-case, unit)] or None when the line is not a query header."""
    out = []
    for cell in line.split(","):
        cell = cell.strip()
        m = _HEADER_CELL.match(cell)
        if not m:
            return None
        out.append((cell, m["name"].lower(), (m["unit"] or "").strip()))
    return out


def _first_line(text: str) -> tuple[int, str]:
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            return n, line.lstrip("\ufeff")
    return 0, ""


def detect(head: str) -> bool:
    """True when the text starts like an nvidia-smi query CSV (with or without its header)."""
    _, line = _first_line(head)
    cells = _split_header(line)
    if cells is not None:
        names = {name for _, name, _ in cells}
        return "utilization.gpu" in names or ("timestamp" in names and bool(names & set(_GPU_FIELDS)))
    return bool(_TS.match(line.split(",")[0].strip()))


def plan(head: str, file_name: str, bounds: Plausible = FORMAT_ONLY) -> ParsedTelemetry:
    """Read the header and the first rows; return the plan the store's bulk reader runs, or InputError.

    `bounds` (the GPU catalog's) caps memory.used, power.draw and the GPU index.
    """
    header_line, line = _first_line(head)
    cells = _split_header(line)
    if cells is None:
        raise InputError(
            f"{file_name} line {header_line}: an nvidia-smi CSV without its header line (written with `noheader`?); "
            "write it with --format=csv so the columns are named, e.g. "
            "nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used,power.draw --format=csv -l 60"
        )
    names = [name for _, name, _ in cells]
    missing = [f for f in ("timestamp", "utilization.gpu") if f not in names]
    gpu_field = next((f for f in _GPU_FIELDS if f in names), None)
    if gpu_field is None:
        missing.append("index (or uuid)")
    if missing or gpu_field is None:  # gpu_field is None only when missing names it
        raise InputError(
            f"{file_name} line {header_line}: the header has no {', '.join(missing)} column; "
            f"query at least timestamp,index,utilization.gpu (header read: {line.strip()!r})"
        )
    rows = _sample_rows(head, header_line, len(cells), cells[0][0])
    columns, ignored, seen = [], [], set()
    for pos, (cell, name, unit) in enumerate(cells):
        spec = _VALUE_FIELDS.get(name)
        if spec is None or spec[0] in seen:
            if name not in ("timestamp", gpu_field):
                ignored.append(cell)
            continue
        seen.add(spec[0])
        metric, divide_by, low, high = spec
        has_units = bool(unit) and any(_value(r[pos]).endswith(unit) for r in rows)
        high = bounds.high(metric) if high is None else high  # as written = stored for W and MiB (divide_by 1)
        columns.append(CsvColumn(pos, cell, metric, unit if has_units else "", divide_by, low, high))
    ts_pos = names.index("timestamp")
    csv = CsvPlan(
        n_columns=len(cells), header_line=header_line, header_first_cell=cells[0][0],
        ts_position=ts_pos, gpu_position=names.index(gpu_field),
        columns=tuple(columns), ignored=tuple(ignored), ts_format=_ts_format([r[ts_pos] for r in rows]),
        gpu_is_index=gpu_field == "index", bounds=bounds,
    )
    notes = (f"columns not used: {', '.join(ignored)}",) if ignored else ()
    return ParsedTelemetry(FORMAT, TIME_BASIS, csv=csv, notes=notes)


def _ts_format(cells: list[str]) -> str | None:
    """The strptime format all these timestamp cells have exactly (no padding), or None."""
    for pattern, fmt in ((_TS_MS, "%Y/%m/%d %H:%M:%S.%g"), (_TS_S, "%Y/%m/%d %H:%M:%S")):
        if cells and all(pattern.match(c) for c in cells):
            return fmt
    return None


def _value(cell: str) -> str:
    return cell.strip()


def _sample_rows(head: str, header_line: int, n: int, header_first: str) -> list[list[str]]:
    rows = []
    for line in head.splitlines()[header_line:]:
        cells = line.split(",")
        if len(cells) == n and cells[0].strip() != header_first:
            rows.append(cells)
        if len(rows) >= _SNIFF_ROWS:
            break
    return rows


def check_line(cells: list[str], csv: CsvPlan) -> str | None:
    """Why one data row is bad, or None (the same rules the store's SQL applies)."""
    if len(cells) != csv.n_columns:
        return f"{len(cells)} cells where the header has {csv.n_columns}"
    ts = cells[csv.ts_position].strip()
    if not _TS.match(ts):
        return f"timestamp {ts!r} is not like 2026/11/02 09:00:00.123"
    try:
        when = dt.datetime.strptime(ts[:19], "%Y/%m/%d %H:%M:%S")
    except ValueError:
        return f"timestamp {ts!r} is not a real date and time"
    first, last = ts_window_naive()
    if not first <= when <= last:
        return f"timestamp {ts!r} is outside 2000-01-01 .. now + 1 day"
    gpu = cells[csv.gpu_position].strip()
    if not gpu:
        return "no GPU index"
    if csv.gpu_is_index and (bad := csv.bounds.index_problem(gpu, "index")) is not None:
        return bad
    for col in csv.columns:
        raw = cells[col.position].strip()
        if raw.startswith("["):  # [N/A], [Not Supported]: a missing value
            continue
        text = raw
        if col.unit:
            if not raw.endswith(col.unit):
                return f"{col.header} {raw!r} lacks its unit {col.unit!r}"
            text = raw[: -len(col.unit)].strip()
        if not _NUMBER.match(text):
            return f"{col.header} {raw!r} is not a number"
        v = float(text)
        if v >= col.low and (implausible := csv.bounds.value_problem(col.metric, v / col.divide_by)):
            return f"{col.header} {raw!r}: {implausible}"
        if v < col.low or (col.high is not None and v > col.high):
            bound = f"{plain(col.low)} to {plain(col.high)}" if col.high is not None else f"at least {plain(col.low)}"
            return f"{col.header} {raw!r} is out of range ({bound})"
    return None


def diagnose(lines: Iterable[str], csv: CsvPlan, file_name: str, *, ends_with_newline: bool) -> list[str]:
    """Every bad line (up to MAX_REPORTED, then a count) as 'FILE line N: why'; [] when all lines are good."""
    problems: list[tuple[int, str]] = []  # (line number, why)
    count, last_n = 0, 0
    for n, line in enumerate(lines, start=1):
        last_n = n
        if n <= csv.header_line:
            continue
        line = line.rstrip("\r\n")
        cells = line.split(",")
        if not line.strip() or cells[0].strip() == csv.header_first_cell:
            continue
        why = check_line(cells, csv)
        if why:
            count += 1
            if len(problems) < MAX_REPORTED:
                problems.append((n, why))
    out = []
    for n, why in problems:
        cut = " (the file ends mid-line: it looks cut short)" if n == last_n and not ends_with_newline else ""
        out.append(f"{file_name} line {n}: {why}{cut}")
    if count > len(problems):
        out.append(f"… and {integer(count - len(problems))} more bad line(s)")
    return out


def repeated_lines(lines: Iterable[str], csv: CsvPlan, gpu: str, when: dt.datetime) -> str:
    """'12 and 40': the lines holding the reading of `gpu` at `when` (a repeat the bulk reader found)."""
    prefix = f"{when:%Y/%m/%d %H:%M:%S}"
    found = []
    for n, line in enumerate(lines, start=1):
        if prefix not in line or n <= csv.header_line:
            continue
        cells = line.rstrip("\r\n").split(",")
        if len(cells) != csv.n_columns or cells[csv.gpu_position].strip() != gpu:
            continue
        ts = cells[csv.ts_position].strip()
        try:
            at = dt.datetime.strptime(ts, "%Y/%m/%d %H:%M:%S.%f" if "." in ts else "%Y/%m/%d %H:%M:%S")
        except ValueError:
            continue
        if at == when:
            found.append(str(n))
            if len(found) == 2:
                break
    return " and ".join(found) or "?"
