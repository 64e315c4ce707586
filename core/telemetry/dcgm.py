"""DCGM exporter scrapes (Prometheus text exposition format) into raw samples.

A line reads ``DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-…",Hostname="bank-node-1",…} 0.42 1730538000000``:
metric, labels, value and an optional timestamp in milliseconds since the epoch.
Scrapes saved with curl carry no timestamps; then the time of the scrape is
given (`at`). Lines of metrics not read here (clocks, temperatures, …) and
comments are skipped; a malformed line of a metric read here is an error.
"""

from __future__ import annotations

import datetime as dt
import math
import re

import pyarrow as pa

from core.errors import InputError
from core.format import integer
from core.telemetry.plausible import FORMAT_ONLY, Plausible
from core.telemetry.samples import (
    METRICS,
    ParsedTelemetry,
    check_node,
    sample_schema,
    to_wall_clock,
    ts_problem,
)

FORMAT = "DCGM exporter (Prometheus text)"

# DCGM field -> (metric, divide_by). GPU_UTIL is a percentage; PROF_* fields are ratios 0-1; power in W; FB in MiB.
DCGM_FIELDS: dict[str, tuple[str, float]] = {
    "DCGM_FI_DEV_GPU_UTIL": ("gpu_util", 100.0),
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": ("gpu_util", 1.0),  # the profiling-module twin of GPU_UTIL
    "DCGM_FI_PROF_SM_ACTIVE": ("sm_active", 1.0),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": ("tensor_active", 1.0),
    "DCGM_FI_PROF_DRAM_ACTIVE": ("dram_active", 1.0),
    "DCGM_FI_DEV_POWER_USAGE": ("power_w", 1.0),
    "DCGM_FI_DEV_FB_USED": ("memory_used_mib", 1.0),
}
SHARE_METRICS = ("gpu_util", "sm_active", "tensor_active", "dram_active")
GPU_LABELS = ("gpu", "UUID", "device")  # first present names the GPU
NODE_LABELS = ("Hostname", "hostname", "kubernetes_node", "node", "instance")  # first present names the node

_LINE = re.compile(
    r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)\s*(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+(?P<ts>-?\d+))?\s*$"
)
_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')
MAX_REPORTED = 20
_NO_TS = ("no timestamp (a scrape saved with curl carries none); give the time of the scrape with "
          "--at 2026-11-02T09:00")


def detect(head: str) -> bool:
    """True when the text has DCGM exporter metric lines."""
    return any(line.lstrip().startswith("DCGM_FI_") or line.startswith("# HELP DCGM_FI_")
               or line.startswith("# TYPE DCGM_FI_") for line in head.splitlines()[:200])


def parse_labels(text: str) -> dict[str, str] | None:
    """Label text between the braces -> dict, or None when it is malformed."""
    out, pos = {}, 0
    text = text.strip()
    while pos < len(text):
        m = _LABEL.match(text, pos)
        if not m:
            return None
        out[m[1]] = m[2].replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
        pos = m.end()
    return out


def node_from_labels(labels: dict[str, str]) -> str | None:
    """The node a series belongs to: Hostname, else the scrape target's host (instance without its port)."""
    for key in NODE_LABELS:
        value = labels.get(key)
        if value:
            return value.rsplit(":", 1)[0] if key == "instance" and value.count(":") == 1 else value
    return None


def gpu_from_labels(labels: dict[str, str]) -> str | None:
    """The GPU a series belongs to: its index, else its UUID, else its device name."""
    return next((labels[k] for k in GPU_LABELS if labels.get(k)), None)


def index_problem(labels: dict[str, str], bounds: Plausible = FORMAT_ONLY) -> str | None:
    """None when the `gpu` label is absent or a GPU index the node can have; else why not, naming the field."""
    raw = labels.get("gpu")
    return bounds.index_problem(raw, "gpu label") if raw else None


def _epoch_ms(at: dt.datetime, tz: str | None) -> int:
    if at.tzinfo is None:  # a wall-clock time in the import's clock
        import pandas as pd

        return int(pd.Timestamp(at).tz_localize(tz or "UTC").value // 1_000_000)
    return int(at.timestamp() * 1000)


def parse(text: str, file_name: str, *, node: str | None = None, tz: str | None = None,
          at: dt.datetime | None = None, bounds: Plausible = FORMAT_ONLY) -> ParsedTelemetry:
    """Every sample of the metrics read here, pivoted to one row per (time, node, GPU); InputError naming bad lines.

    A second reading of one metric of one GPU at one instant is refused with both lines (issue 34: they were
    averaged without a word); so is a reading outside the catalog's bounds (`bounds`).
    """
    problems: list[str] = []
    seen: dict[tuple, int] = {}  # (ts, node, gpu, DCGM field) -> line
    n_bad = 0
    at_ms = _epoch_ms(at, tz) if at is not None else None
    ts_col, node_col, gpu_col, metric_col, value_col = [], [], [], [], []
    lines = text.splitlines()
    for n, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        name = stripped.split("{", 1)[0].split(None, 1)[0]
        if name not in DCGM_FIELDS:
            if not re.match(r"^[A-Za-z_:][A-Za-z0-9_:]*$", name):
                why = f"not a metric line: {_short(stripped)}"
            else:
                continue  # a metric this import does not read
        else:
            why, row = _parse_line(stripped, name, node, at_ms, bounds)
            if row is not None and (first := seen.setdefault((*row[:3], name), n)) != n:
                why = (f"{name}: a second reading of GPU {row[2]} on {row[1]} at {row[0]} ms (the first is on line "
                       f"{first}); fields gpu and timestamp repeat")
            elif row is not None:
                ts_col.append(row[0])
                node_col.append(row[1])
                gpu_col.append(row[2])
                metric_col.append(row[3])
                value_col.append(row[4])
                continue
            if why is None:
                continue  # NaN: the exporter had no reading
        if why.endswith(_NO_TS):  # the whole scrape lacks them: say it once
            raise InputError(f"{file_name} line {n}: {why}")
        n_bad += 1
        if len(problems) < MAX_REPORTED:
            cut = " (the file ends mid-line: it looks cut short)" if n == len(lines) and not text.endswith("\n") else ""
            problems.append(f"{file_name} line {n}: {why}{cut}")
    if n_bad:
        more = [f"… and {integer(n_bad - len(problems))} more bad line(s)"] if n_bad > len(problems) else []
        raise InputError("\n".join(problems + more))
    if not ts_col:
        raise InputError(f"{file_name} has no DCGM utilization or power samples "
                         f"(looked for {', '.join(DCGM_FIELDS)})")
    table = pivot(ts_col, node_col, gpu_col, metric_col, value_col, tz)
    basis = tz or "UTC"
    return ParsedTelemetry(FORMAT, basis, table=table)


def _short(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _parse_line(line: str, name: str, node: str | None, at_ms: int | None, bounds: Plausible):
    """(why, None) for a bad line, (None, (ts_ms, node, gpu, metric, value)) for a good one."""
    m = _LINE.match(line)
    if not m:
        return f"{name}: expected `{name}{{labels}} value [timestamp]`, got {_short(line)!r}", None
    labels = parse_labels(m["labels"] or "")
    if labels is None:
        return f"{name}: labels are malformed: {_short(m['labels'] or '')!r}", None
    gpu = gpu_from_labels(labels)
    if gpu is None:
        return f"{name}: no gpu, UUID or device label says which GPU", None
    if (bad_index := index_problem(labels, bounds)) is not None:
        return f"{name}: {bad_index}", None
    where = node or node_from_labels(labels)
    if where is None:
        return f"{name}: no Hostname or instance label says which node; name it with --node", None
    try:
        value = float(m["value"])
    except ValueError:
        return f"{name}: value {m['value']!r} is not a number", None
    metric, divide_by = DCGM_FIELDS[name]
    if math.isnan(value):
        return None, None  # the exporter had no reading; not a sample
    value /= divide_by
    if not math.isfinite(value) or value < 0 or (metric in SHARE_METRICS and value > 1.0 + 1e-9):
        bound = "0 to 100" if divide_by == 100 else ("0 to 1" if metric in SHARE_METRICS else "at least 0")
        return f"{name}: value {m['value']!r} is out of range ({bound})", None
    if (implausible := bounds.value_problem(metric, value)) is not None:
        return f"{name}: value {implausible}", None
    if m["ts"] is not None:
        ts = int(m["ts"])
        if (bad := ts_problem(ts)) is not None:
            return f"{name}: {bad}", None
    elif at_ms is not None:
        ts = at_ms
    else:
        return f"{name}: {_NO_TS}", None
    return None, (ts, where, gpu, metric, value)


def pivot(ts_ms: list[int], node: list[str], gpu: list[str], metric: list[str], value: list[float],
          tz: str | None) -> pa.Table:
    """Long samples -> one row per (time, node, GPU) with a column per metric (sample_schema)."""
    import pandas as pd

    long = pd.DataFrame({"ts": ts_ms, "node": node, "gpu": gpu, "metric": metric, "value": value})
    for name in set(long["node"]):
        check_node(name)
    # The parsers refuse a repeated (time, node, GPU, field); "last" only picks between twin fields of one
    # metric (GPU_UTIL and GR_ENGINE_ACTIVE).
    wide = long.pivot_table(index=["ts", "node", "gpu"], columns="metric", values="value", aggfunc="last")
    wide = wide.reset_index().sort_values(["ts", "node", "gpu"], kind="stable")
    cols = {"ts": to_wall_clock(wide["ts"].to_numpy(), tz), "node": pa.array(wide["node"], pa.string()),
            "gpu": pa.array(wide["gpu"].astype(str), pa.string())}
    for m in METRICS:
        cols[m] = pa.array(wide[m].to_numpy(dtype="float64"), pa.float64(), from_pandas=True) \
            if m in wide else pa.nulls(len(wide), pa.float64())
    return pa.table(cols, schema=sample_schema())
