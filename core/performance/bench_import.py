"""Imports benchmark result files (vLLM, GuideLLM, GenAI-Perf CSV/JSON, llmperf), detected by content.

Every parsed point is a `Benchmark` with provenance "measured", the tool named,
the file name as source and the file's own date where it has one. Files rarely
say which serving stack or GPU they measured: the user names them. Where a file
lacks the concurrency or the token lengths, the user passes them, and the error
says which one is missing. Every figure must be a finite number within the
bounds of `bench_formats.bounds` (from the roofline where possible). An import
is one transaction keyed by the file's sha256, so importing the same file twice
adds nothing. The formats live in `core.performance.bench_formats` (one module
per tool); the SQL in `core.store.benchmarks`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from core.errorlog import shorten
from core.errors import InputError, describe_validation_error
from core.models import Benchmark, Confidence, Provenance
from core.performance import bench_formats
from core.performance.bench_formats import FORMATS, Raw, bounds
from core.performance.bench_formats.common import check_date, display_name

__all__ = ["FORMATS", "ImportResult", "detect_format", "file_sha256", "import_benchmark_file", "parse_benchmark_file",
           "remove_import"]

_IMPORT_OPTIONS = {"stack_id", "gpu", "gpus_per_replica", "as_of", "concurrency", "input_tokens", "output_tokens"}

# Distinct concurrencies named in an import summary before it says "N concurrencies from a to b".
_SUMMARY_ITEMS = 12


@dataclass(frozen=True)
class ImportResult:
    """What an import did."""

    rows_added: int
    duplicate: bool
    message: str
    import_id: str
    file_format: str
    benchmarks: tuple[Benchmark, ...] = ()


def file_sha256(data: bytes) -> str:
    """The import id: sha256 of the file's bytes."""
    return hashlib.sha256(data).hexdigest()


def _name(file_name: str) -> str:
    return display_name(file_name)


def detect_format(data: bytes, file_name: str) -> str:
    """Which tool wrote the file, from its content: one of FORMATS, or InputError naming what was seen."""
    return bench_formats.detect(bench_formats.load(data, file_name)).name


# -- building Benchmarks -----------------------------------------------------------------


def _where(file_name: str, raw: Raw) -> str:
    return _name(file_name) + (f", {raw.label}" if raw.label else "")


def _resolve_name(value: str, known: Iterable[str] | None, what: str, flag: str) -> str:
    if known is None:
        return value
    by_lower = _by_lower(tuple(known))
    if value.strip().lower() in by_lower:
        return by_lower[value.strip().lower()]
    raise InputError(f"unknown {what} {shorten(repr(value), 80)} ({flag}); known: {', '.join(sorted(known))}")


@lru_cache(maxsize=64)
def _by_lower(known: tuple[str, ...]) -> dict[str, str]:
    return {k.lower(): k for k in known}


def parse_benchmark_file(
    data: bytes,
    file_name: str,
    *,
    stack_id: str | None = None,
    gpu: str | None = None,
    gpus_per_replica: int | None = None,
    as_of: dt.date | None = None,
    concurrency: float | None = None,
    input_tokens: float | None = None,
    output_tokens: float | None = None,
    known_stacks: Iterable[str] | None = None,
    known_gpus: Iterable[str] | None = None,
) -> list[Benchmark]:
    """Parse one benchmark file into measured Benchmarks (nothing is stored).

    The user's stack, GPU, GPU count, concurrency and token lengths win over
    what the file says; a setting neither gives is an InputError naming the
    option to pass. With known_stacks / known_gpus, names are checked (GPU
    names case-insensitively, returned as the store spells them).
    """
    fmt, raws = _read_runs(data, file_name, concurrency, input_tokens, output_tokens)
    return [
        _build(raw, fmt.name, file_name, stack_id, gpu, gpus_per_replica, as_of, concurrency, input_tokens, output_tokens, known_stacks, known_gpus)
        for raw in raws
    ]


def _read_runs(data: bytes, file_name: str, concurrency, input_tokens, output_tokens) -> tuple[bench_formats.Format, list[Raw]]:
    """The file's runs and format, with the user's overrides checked; no store needed (a bad file fails here)."""
    fmt, raws = bench_formats.parse(bench_formats.load(data, file_name))
    if concurrency is not None and len({r.concurrency for r in raws}) > 1:
        raise InputError(
            f"{_name(file_name)} holds {len(raws)} runs at different concurrencies; --concurrency cannot override them all"
        )
    for name, v in (("concurrency", concurrency), ("input tokens", input_tokens), ("output tokens", output_tokens)):
        if v is not None and (not math.isfinite(v) or v < 0 or (v == 0 and name != "input tokens")):
            raise InputError(f"{name} must be {'0 or more' if name == 'input tokens' else 'more than 0'}; got {v:g}")
    return fmt, raws


def _build(raw: Raw, fmt, file_name, stack_id, gpu, gpus_per_replica, as_of, concurrency, input_tokens, output_tokens, known_stacks, known_gpus) -> Benchmark:
    where = _where(file_name, raw)
    notes = list(raw.notes)
    model = raw.hints.get("model")
    model_note = f" (the file's model is {model!r})" if model else ""

    stack = stack_id or raw.hints.get("stack_id")
    if not stack:
        known = f"; known stacks: {', '.join(sorted(known_stacks))}" if known_stacks is not None else ""
        raise InputError(f"{where}: the file does not name a serving stack{model_note}; pass --stack{known}")
    stack = _resolve_name(str(stack), known_stacks, "serving stack", "--stack")
    gpu_name = gpu or raw.hints.get("gpu")
    if not gpu_name:
        known = f"; known GPUs: {', '.join(sorted(known_gpus))}" if known_gpus is not None else ""
        raise InputError(f"{where}: the file does not name the GPU; pass --gpu{known}")
    gpu_name = _resolve_name(str(gpu_name), known_gpus, "GPU", "--gpu")
    # Any: the flag's int, or whatever the file's hint holds (checked just below).
    g: Any = gpus_per_replica if gpus_per_replica is not None else raw.hints.get("gpus_per_replica")
    if g is None:
        g = 1
        notes.append("GPUs per replica not stated: assumed 1 (pass --gpus-per-replica if not)")
    if not math.isfinite(float(g)) or float(g) != int(float(g)) or not 1 <= int(float(g)) <= 72:
        raise InputError(f"{where}: GPUs per replica must be a whole number from 1 to 72; got {shorten(g, 40)}")

    if concurrency is not None:
        if raw.concurrency is not None and not math.isclose(raw.concurrency, concurrency):
            notes.append(f"concurrency {concurrency:g} from --concurrency (the file suggests {raw.concurrency:g})")
        c = concurrency
    else:
        c = raw.concurrency
    n_in = input_tokens if input_tokens is not None else raw.input_tokens
    n_out = output_tokens if output_tokens is not None else raw.output_tokens
    missing = [flag for flag, v in (("--concurrency", c), ("--input-tokens", n_in), ("--output-tokens", n_out)) if v is None]
    if missing or c is None or n_in is None or n_out is None:  # None only when missing names it
        what = {"--concurrency": "the concurrency", "--input-tokens": "the mean input tokens", "--output-tokens": "the mean output tokens"}
        raise InputError(f"{where}: the file does not give {' or '.join(what[m] for m in missing)}; pass {' '.join(missing)}")
    if c <= 0:
        raise InputError(f"{where}: concurrency is {c:g}; a benchmark needs at least one request in flight")
    if n_out <= 0:
        raise InputError(f"{where}: mean output tokens is {n_out:g}; the run generated nothing")
    if n_in < 0:
        raise InputError(f"{where}: mean input tokens is {n_in:g}; it cannot be negative")

    for label, v in (("output token throughput (total)", raw.total), ("output tokens/s per stream", raw.per_stream)):
        if v is not None and v <= 0:
            raise InputError(f"{where}: {label} is {v:g} tok/s; a measured throughput must be more than 0")
    if raw.total is None and raw.per_stream is None:
        raise InputError(f"{where}: the file has no output token throughput (total or per stream)")
    latencies: dict[str, Any] = {"ttft_ms_p50": raw.ttft_p50, "ttft_ms_p95": raw.ttft_p95, "e2e_ms_p50": raw.e2e_p50, "e2e_ms_p95": raw.e2e_p95}
    for k, v in list(latencies.items()):
        if v is not None and v < 0:
            raise InputError(f"{where}: {k} is {v:g} ms; a latency cannot be negative")
        if v == 0:
            latencies[k] = None
            notes.append(f"{k} is 0 in the file: left out")

    date = as_of or raw.date or dt.date.today()
    check_date(date, where, "the --as-of date" if as_of else "the file's date")
    try:
        point = Benchmark(
            stack_id=stack,
            gpu=gpu_name,
            gpus_per_replica=int(float(g)),
            concurrency=float(c),
            input_tokens=float(n_in),
            output_tokens=float(n_out),
            output_tokens_per_s_total=raw.total,
            output_tokens_per_s_per_stream=raw.per_stream,
            provenance=Provenance.MEASURED,
            tool=FORMATS[fmt],
            source=_name(file_name) + (f", {raw.label}" if raw.label else ""),
            as_of=date,
            confidence=Confidence.USER,
            note="; ".join(notes) or None,
            **latencies,
        )
    except ValidationError as exc:
        raise InputError(shorten(describe_validation_error(exc, where=where), 1000)) from None
    bounds.check_shape(point, where)
    return point


# -- storing -----------------------------------------------------------------------------


def _summary(added: int, name: str, fmt: str, points: list[Benchmark]) -> str:
    """One short paragraph whatever the file's size (a 100k-point import once printed a 458 KB line)."""
    p0 = points[0]
    conc = sorted({p.concurrency for p in points})
    if len(conc) <= _SUMMARY_ITEMS:
        at = "at concurrency " + ", ".join(f"{c:g}" for c in conc)
    else:
        at = f"at {len(conc):,} concurrencies from {conc[0]:g} to {conc[-1]:g}"
    routes = {(p.stack_id, p.gpu, p.gpus_per_replica) for p in points}
    route = (f"for {p0.stack_id} on {p0.gpu} x{p0.gpus_per_replica}" if len(routes) == 1
             else f"for {len(routes)} stack/GPU combinations")
    msg = (f"imported {added:,} benchmark point{'s' if added != 1 else ''} from {name} ({FORMATS[fmt]}) "
           f"{route} {at}")
    noted = list(dict.fromkeys(p.note for p in points if p.note))
    if noted:
        shown = " | ".join(shorten(n) for n in noted[:3])
        more = f" (and {len(noted) - 3:,} more notes)" if len(noted) > 3 else ""
        msg += "\nnotes: " + shown + more
    return msg


def import_benchmark_file(store, data: bytes, file_name: str, **kw) -> ImportResult:
    """Parse a file, check every point against the roofline, and add them in one transaction; the same file twice adds nothing.

    Keyword arguments are those of parse_benchmark_file (stack_id, gpu,
    gpus_per_replica, as_of, concurrency, input_tokens, output_tokens). The
    stack must fit on the GPUs named (else InputError: usually a missing
    --gpus-per-replica), and every figure within the bounds of
    `bench_formats.bounds` (else InputError naming the field and the bound).
    """
    # Imported lazily: the store imports the seed, which is heavier than parsing needs.
    from core.performance.calibration import check_fits
    from core.store import benchmarks as stored

    unknown = set(kw) - _IMPORT_OPTIONS
    if unknown:
        raise TypeError(f"import_benchmark_file() got unexpected keyword arguments {sorted(unknown)}")
    import_id = file_sha256(data)
    name = _name(file_name)
    # The file is read (and refused if broken) before the store is touched.
    fmt, raws = _read_runs(data, file_name, kw.get("concurrency"), kw.get("input_tokens"), kw.get("output_tokens"))
    with store.held():  # one open of the file for the reads and the write
        existing = stored.count_import(store, import_id)
        if existing:
            return ImportResult(0, True, _dup_message(name, existing, import_id), import_id, fmt.name)
        stacks = {s.stack_id: s for s in store.serving_stacks()}
        gpus = {g.name: g for g in store.gpus()}
        points = [
            _build(raw, fmt.name, file_name, kw.get("stack_id"), kw.get("gpu"), kw.get("gpus_per_replica"), kw.get("as_of"),
                   kw.get("concurrency"), kw.get("input_tokens"), kw.get("output_tokens"), list(stacks), list(gpus))
            for raw in raws
        ]
        for key in {(p.stack_id, p.gpu, p.gpus_per_replica) for p in points}:
            check_fits(stacks[key[0]], gpus[key[1]], key[2])
        for p in points:
            bounds.check_physics(p, stacks[p.stack_id], gpus[p.gpu], p.source)
        added, existing = stored.insert_import(store, points, import_id)
    if existing:
        return ImportResult(0, True, _dup_message(name, existing, import_id), import_id, fmt.name)
    msg = _summary(added, name, fmt.name, points) + f"\nimport id {import_id[:12]} (undo with: hangover bench remove {import_id[:12]})"
    return ImportResult(added, False, msg, import_id, fmt.name, tuple(points))


def remove_import(store, import_id: str) -> str:
    """Delete every point of one import (by its id or a unique prefix of 8+ characters); a sentence saying what went."""
    from core.store import benchmarks as stored

    full, n, source = stored.remove_import(store, import_id)
    return f"removed {n:,} benchmark point{'s' if n != 1 else ''} of import {full[:12]}... ({shorten(source, 80)})"


def _dup_message(name: str, n: int, import_id: str) -> str:
    return f"{name} was already imported ({n} point{'s' if n != 1 else ''}, sha256 {import_id[:12]}...): nothing added"
