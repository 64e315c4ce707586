"""The shape every telemetry format is read into: metric names, their units, and what a parser hands the store."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

import pyarrow as pa

from core.errors import InputError
from core.telemetry.plausible import FORMAT_ONLY, Plausible

# Columns of a raw sample (one GPU at one instant), in the order the Parquet files keep them.
# Utilization-type metrics are shares 0-1; power in watts; memory in MiB.
METRICS: tuple[str, ...] = ("gpu_util", "sm_active", "tensor_active", "dram_active", "power_w", "memory_used_mib")

# Which figure counts as "utilization", most honest first (FACTS.md "GPU utilization telemetry"):
# - sm_active (DCGM_FI_PROF_SM_ACTIVE): share of time x share of SMs with work resident. It falls when
#   kernels are small or few, so batch-1 decode reads low, as the chip is in fact starved.
# - tensor_active (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE): share of cycles the tensor pipes are busy. Stricter
#   still: it counts only matrix math, so it would call memory-bound work that serves tokens idle; used
#   only when SM activity is absent.
# - gpu_util (nvidia-smi utilization.gpu, DCGM_FI_DEV_GPU_UTIL): share of time any kernel runs, however
#   little of the chip it uses; batch-1 decode reads ~100 %. The fallback, named as such.
UTILIZATION_METRICS: tuple[str, ...] = ("sm_active", "tensor_active", "gpu_util")

METRIC_LABELS: dict[str, str] = {
    "gpu_util": "GPU utilization (time any kernel runs: utilization.gpu / DCGM_FI_DEV_GPU_UTIL)",
    "sm_active": "SM activity (DCGM_FI_PROF_SM_ACTIVE)",
    "tensor_active": "tensor-pipe activity (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE)",
    "dram_active": "memory-bandwidth activity (DCGM_FI_PROF_DRAM_ACTIVE)",
    "power_w": "power draw, W",
    "memory_used_mib": "memory used, MiB",
}

METRIC_SHORT: dict[str, str] = {
    "gpu_util": "GPU utilization (any kernel running)",
    "sm_active": "SM activity",
    "tensor_active": "tensor-pipe activity",
}

# Node names become folder names (node=<name>) in the Parquet layout and on object storage.
_NODE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}$")


def check_node(name: str, where: str = "") -> str:
    """A node name safe as a folder name (host names, IPs, `host:port`), or InputError naming it."""
    name = str(name).strip()
    if not _NODE_RE.match(name):
        raise InputError(
            f"{where + ': ' if where else ''}node name {name!r} is not usable: letters, digits and . _ - : @ only, "
            "starting with a letter or digit, at most 128 characters (name the node with --node)"
        )
    return name


def sample_schema() -> pa.Schema:
    """The raw-sample table every parser returns: one row per GPU per instant (node kept beside it)."""
    return pa.schema(
        [("ts", pa.timestamp("ms")), ("node", pa.string()), ("gpu", pa.string())]
        + [(m, pa.float64()) for m in METRICS]
    )


@dataclass(frozen=True)
class CsvColumn:
    """One value column of an nvidia-smi CSV: where it is, what it becomes, its unit and scale."""

    position: int  # 0-based column in the file
    header: str  # as the file spells it, e.g. "utilization.gpu [%]"
    metric: str  # one of METRICS
    unit: str  # unit suffix the values carry ("" for nounits files)
    divide_by: float  # 100 for percentages (stored as 0-1 shares), else 1
    low: float  # smallest valid value as written (before divide_by)
    high: float | None  # largest valid value as written, None = no bound


@dataclass(frozen=True)
class CsvPlan:
    """How to read an nvidia-smi CSV in bulk (the store runs it with DuckDB's CSV reader)."""

    n_columns: int
    header_line: int  # physical line of the header (1-based); data starts after it
    header_first_cell: str  # a repeated header (logs appended across restarts) is skipped by this
    ts_position: int
    gpu_position: int
    columns: tuple[CsvColumn, ...]
    ignored: tuple[str, ...] = ()  # header cells not read (name, pci.bus_id, clocks, ...)
    ts_format: str | None = None  # the one strptime format every sniffed timestamp had exactly, else None
    gpu_is_index: bool = False  # the GPU column is `index` (bounded by GPUs per node), not a UUID or bus id
    bounds: Plausible = FORMAT_ONLY  # the catalog's plausibility bounds (index, memory, power)


@dataclass(frozen=True)
class ParsedTelemetry:
    """What a format parser hands on: a sample table, or a plan for the store's bulk CSV reader."""

    file_format: str
    time_basis: str  # how timestamps read: "node local time (as nvidia-smi writes it)" or a time zone name
    table: pa.Table | None = None  # sample_schema() rows (DCGM text, Prometheus JSON)
    csv: CsvPlan | None = None  # nvidia-smi CSV
    node: str | None = None  # the node all rows belong to (nvidia-smi: given by the user)
    notes: tuple[str, ...] = field(default_factory=tuple)


# Plausible sample times: from 2000-01-01 (before any GPU this product plans for) to one day after now (a
# node clock running ahead, or a time zone, is forgiven; a year-9999 or epoch-1e17 stamp is not).
TS_MIN_MS = 946_684_800_000  # 2000-01-01T00:00:00Z
TS_AHEAD_MS = 86_400_000


def ts_window_naive() -> tuple[dt.datetime, dt.datetime]:
    """The plausible window as naive wall-clock times (nvidia-smi logs): 2000-01-01 .. now (UTC) + 1 day.

    A node's local clock is at most 14 h ahead of UTC, inside the day's grace.
    """
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    return dt.datetime(2000, 1, 1), now + dt.timedelta(milliseconds=TS_AHEAD_MS)


def ts_problem(epoch_ms: int) -> str | None:
    """None for a plausible sample time in epoch milliseconds, else why not (the field named)."""
    import time

    if TS_MIN_MS <= epoch_ms <= int(time.time() * 1000) + TS_AHEAD_MS:
        return None
    return f"timestamp {epoch_ms} ms is outside 2000-01-01 .. now + 1 day"


def to_wall_clock(epoch_ms, tz: str | None):
    """Epoch milliseconds -> naive wall-clock timestamps in `tz` (default UTC), as an Arrow array.

    Hour-of-day profiles are about office hours, so times are kept as the clock
    on the wall read them; the import records which clock.
    """
    import pandas as pd

    ts = pd.to_datetime(pd.Series(epoch_ms, dtype="int64"), unit="ms", utc=True)
    if tz and tz.upper() != "UTC":
        try:
            ts = ts.dt.tz_convert(tz)
        except Exception:  # pytz/zoneinfo raise several kinds; one message for all
            raise InputError(f"unknown time zone {tz!r}; use an IANA name such as Europe/London or UTC") from None
    return pa.array(ts.dt.tz_localize(None).astype("datetime64[ms]"), type=pa.timestamp("ms"))


def parse_at(text: str | None) -> dt.datetime | None:
    """`--at` for scrapes saved without timestamps: an ISO date-time, or InputError."""
    if text is None:
        return None
    try:
        return dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise InputError(f"--at must be a date and time like 2026-11-02T09:00; got {text!r}") from None
