"""Import one telemetry file: detect its format, parse it, stage Parquet, commit the hourly aggregates at once.

The import id is the file's sha256: the same file twice adds nothing. A bad
file raises InputError naming every bad line (up to 20) and leaves the store
and the telemetry folder exactly as they were.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid
from dataclasses import dataclass
from pathlib import Path

import duckdb

from core.errors import InputError, StoreError
from core.format import integer
from core.store import telemetry as tstore
from core.telemetry import dcgm, nvidia_smi, plausible, prometheus
from core.telemetry.formats import detect_format
from core.telemetry.samples import METRIC_SHORT, check_node

_HEAD_BYTES = 256 * 1024  # enough for a header and a couple of hundred rows to sniff units from


@dataclass(frozen=True)
class TelemetryImport:
    """What an import did (or that the file was already there)."""

    import_id: str
    file_name: str
    file_format: str
    duplicate: bool
    message: str
    nodes: tuple[str, ...] = ()
    gpus: int = 0
    samples: int = 0
    first_ts: dt.datetime | None = None
    last_ts: dt.datetime | None = None
    metrics: tuple[str, ...] = ()
    time_basis: str = ""


def file_sha256(path: Path) -> str:
    """sha256 of a file, read in 4 MiB blocks (hashlib releases the GIL on blocks this size)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
    return h.hexdigest()


def import_telemetry(store, source: bytes | str | Path, file_name: str | None = None, *, node: str | None = None,
                     tz: str | None = None, at: dt.datetime | None = None, gpu: str | None = None) -> TelemetryImport:
    """Import an nvidia-smi CSV, a DCGM exporter scrape or a Prometheus query JSON (detected from the content).

    source: the file's path, or its bytes (an upload). node: the node's name;
    required for nvidia-smi logs, else it overrides the Hostname/instance
    labels. tz: IANA time zone that epoch timestamps (DCGM, Prometheus) are
    shown in (default UTC; nvidia-smi already writes the node's local time).
    at: the time of a DCGM scrape saved without timestamps. gpu: the catalog GPU
    the node holds, for its own plausibility bounds (else the catalog's widest).
    """
    with store.held():  # the duplicate check, the commit and the read-back share one open of the file
        return _import(store, source, file_name, node=node, tz=tz, at=at, gpu=gpu)


def _import(store, source: bytes | str | Path, file_name: str | None, *, node: str | None, tz: str | None,
            at: dt.datetime | None, gpu: str | None = None) -> TelemetryImport:
    # A path's file, or an upload's bytes (b"" for a path: never read then).
    path = None if isinstance(source, bytes | bytearray) else Path(source).expanduser()
    upload = source if isinstance(source, bytes | bytearray) else b""
    name = file_name or (path.name if path else "upload")
    if path is not None:
        if not path.is_file():
            raise InputError(f"no such file: {path}")
        try:
            import_id = file_sha256(path)
            with open(path, "rb") as f:
                head_bytes = f.read(_HEAD_BYTES)
        except OSError as exc:
            raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    else:
        import_id = hashlib.sha256(upload).hexdigest()
        head_bytes = bytes(upload[:_HEAD_BYTES])
    head = _decode(head_bytes, name, partial=True)
    if not head.strip():
        raise InputError(f"{name} is empty")
    if (old := tstore.find_import(store, import_id)) is not None:
        return _duplicate(import_id, name, detect_format(head, name), old)
    node = check_node(node) if node else None
    fmt = detect_format(head, name)
    bounds = plausible.from_store(store, gpu)
    tstore.check_writable(store)
    staging = tstore.staging_dir(store, f"{import_id}-{uuid.uuid4().hex[:8]}")
    try:
        staging.mkdir(parents=True, exist_ok=True)
        if fmt == nvidia_smi.FORMAT:
            if node is None:
                raise InputError(f"{name}: an nvidia-smi log does not say which node wrote it; name it with --node")
            parsed = nvidia_smi.plan(head, name, bounds)
            csv_path = path
            if csv_path is None:  # an upload: DuckDB's reader wants a file
                csv_path = staging / "upload.csv"
                csv_path.write_bytes(upload)
            staged = _stage_csv(csv_path, parsed.csv, node, staging / "parquet", name)
        else:
            text = _decode(path.read_bytes() if path else bytes(upload), name)
            parsed = (prometheus.parse(text, name, node=node, tz=tz, bounds=bounds) if fmt == prometheus.FORMAT
                      else dcgm.parse(text, name, node=node, tz=tz, at=at, bounds=bounds))
            staged = tstore.stage_table(parsed.table, staging / "parquet")
        if staged.rows == 0:
            raise InputError(f"{name} has a header but no samples")
        done = tstore.commit_import(store, import_id=import_id, staged=staged, file_name=name,
                                    file_format=fmt, time_basis=parsed.time_basis, note="; ".join(parsed.notes))
    finally:
        tstore.discard(staging)
    if done is None:  # another session imported the same file meanwhile
        return _duplicate(import_id, name, fmt, tstore.find_import(store, import_id) or {})
    return TelemetryImport(
        import_id, name, fmt, False, _message(name, fmt, done, parsed.time_basis, parsed.notes),
        done.nodes, done.gpus, done.samples, done.first_ts, done.last_ts, done.metrics, parsed.time_basis,
    )


def _stage_csv(csv_path: Path, plan, node: str, out: Path, name: str) -> tstore.Staged:
    """The fast strict read; if it fails, the lenient one (odd spacing); if that fails, name every bad line."""
    try:
        try:
            return tstore.stage_nvidia_smi(csv_path, plan, node, out, strict=True)
        except duckdb.IOException:
            raise
        except duckdb.Error:
            tstore.discard(out)
            return tstore.stage_nvidia_smi(csv_path, plan, node, out, strict=False)
    except duckdb.IOException as exc:
        raise StoreError(f"cannot write the telemetry folder {out.parent}: {str(exc).strip().splitlines()[0]}") from None
    except tstore.Repeated as exc:
        tstore.discard(out)
        with open(csv_path, encoding="utf-8-sig", errors="replace", newline="") as f:
            where = nvidia_smi.repeated_lines(f, plan, exc.gpu, exc.ts)
        raise InputError(
            f"{name} line {where}: {integer(exc.count)} reading(s) repeat a GPU and time already in the file "
            f"(index {exc.gpu} at {exc.ts:%Y/%m/%d %H:%M:%S} here); fields index and timestamp repeat "
            "(a log appended to itself?)") from None
    except (duckdb.Error, tstore.OutOfRange) as exc:
        tstore.discard(out)
        with open(csv_path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(size - 1, 0))
            ends_with_newline = f.read(1) in (b"\n", b"")
        with open(csv_path, encoding="utf-8-sig", errors="replace", newline="") as f:
            problems = nvidia_smi.diagnose(f, plan, name, ends_with_newline=ends_with_newline)
        if problems:
            raise InputError("\n".join(problems)) from None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{name}: cannot be read as an nvidia-smi CSV: {first}") from None


def _decode(data: bytes, name: str, *, partial: bool = False) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if partial and exc.start >= len(data) - 4:  # the head was cut inside a multi-byte character
            return data[: exc.start].decode("utf-8-sig")
        raise InputError(f"{name} is not a text file (not UTF-8 at byte {integer(exc.start)})") from None


def _duplicate(import_id: str, name: str, fmt: str, old: dict) -> TelemetryImport:
    when = old.get("imported_at")
    since = f" on {when:%Y-%m-%d %H:%M}" if isinstance(when, dt.datetime) else ""
    return TelemetryImport(
        import_id, name, fmt, True,
        f"{name} was already imported{since} (as {old.get('file_name', name)!r}, {integer(old.get('samples', 0))} samples; "
        f"sha256 {import_id[:12]}…): nothing added",
    )


def _message(name: str, fmt: str, done, basis: str, notes) -> str:
    used = next((METRIC_SHORT[m] for m in ("sm_active", "tensor_active", "gpu_util") if m in done.metrics), "none")
    lines = [
        f"{name} ({fmt}): {integer(done.samples)} samples from {done.gpus} GPU(s) on {', '.join(done.nodes)}, "
        f"{done.first_ts:%Y-%m-%d %H:%M} to {done.last_ts:%Y-%m-%d %H:%M} ({basis}); "
        f"utilization read from {used}",
    ]
    if done.overlapping_gpu_hours:
        lines.append(f"{integer(done.overlapping_gpu_hours)} GPU-hour(s) were already covered by an earlier import; "
                     "their samples are pooled")
    lines += list(notes)
    return "\n".join(lines)
