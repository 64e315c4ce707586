"""Imports benchmark result files (vLLM, GuideLLM, GenAI-Perf CSV/JSON, llmperf), detected by content.

Every parsed point is a `Benchmark` with provenance "measured", the tool named,
the file name as source and the file's own date where it has one. Files rarely
say which serving stack or GPU they measured: the user names them. Where a file
lacks the concurrency or the token lengths, the user passes them, and the error
says which one is missing. An import is one transaction keyed by the file's
sha256, so importing the same file twice adds nothing.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from core.errors import InputError, describe_validation_error
from core.models import Benchmark, Confidence, Provenance

# Detected format -> tool name stored with each point.
FORMATS: dict[str, str] = {
    "vllm": "vllm bench serve",
    "guidellm": "GuideLLM",
    "genai_perf_csv": "NVIDIA GenAI-Perf",
    "genai_perf_json": "NVIDIA GenAI-Perf",
    "llmperf": "ray llmperf",
}

_EXPECTED = (
    "a vLLM `vllm bench serve` / benchmark_serving.py result JSON, a GuideLLM report JSON "
    "(with 'benchmarks'), an NVIDIA GenAI-Perf profile_export_genai_perf CSV or JSON, "
    "or a ray llmperf *_summary.json"
)


@dataclass
class _Raw:
    """One run as read from a file, before the user's settings are applied."""

    label: str = ""
    concurrency: float | None = None
    input_tokens: float | None = None
    output_tokens: float | None = None
    total: float | None = None
    per_stream: float | None = None
    ttft_p50: float | None = None
    ttft_p95: float | None = None
    e2e_p50: float | None = None
    e2e_p95: float | None = None
    date: dt.date | None = None
    notes: list[str] = field(default_factory=list)
    hints: dict[str, object] = field(default_factory=dict)  # stack/GPU/GPU count a file states


@dataclass(frozen=True)
class ImportResult:
    """What an import did."""

    rows_added: int
    duplicate: bool
    message: str
    import_id: str
    file_format: str
    benchmarks: tuple[Benchmark, ...] = ()


# -- reading -----------------------------------------------------------------------------


def file_sha256(data: bytes) -> str:
    """The import id: sha256 of the file's bytes."""
    return hashlib.sha256(data).hexdigest()


def _text(data: bytes, file_name: str) -> str:
    if not data or not data.strip():
        raise InputError(f"{_name(file_name)} is empty")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{_name(file_name)} is not a text file (not UTF-8); expected {_EXPECTED}") from None


def _name(file_name: str) -> str:
    return Path(file_name).name or file_name


def _load_json(text: str, file_name: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            # vLLM --append-result writes one JSON object per line.
            try:
                return [json.loads(line) for line in text.splitlines() if line.strip()]
            except json.JSONDecodeError:
                pass
        end = text.rstrip()
        cut = exc.pos >= len(end) - 1 or not end.endswith(("}", "]"))
        why = "the JSON stops part-way (truncated file?)" if cut else "it is not valid JSON"
        raise InputError(
            f"{_name(file_name)} cannot be read: {why}: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None


def _looks_json(text: str) -> bool:
    return text.lstrip()[:1] in ("{", "[")


def _records(obj: object) -> list[dict]:
    if isinstance(obj, dict):
        return [obj]
    if isinstance(obj, list) and obj and all(isinstance(r, dict) for r in obj):
        return obj
    return []


def _detect_json(obj: object, file_name: str) -> str:
    recs = _records(obj)
    if not recs:
        raise InputError(f"{_name(file_name)}: a JSON {type(obj).__name__} of unknown shape; expected {_EXPECTED}")
    d = recs[0]
    if isinstance(d.get("benchmarks"), list):
        return "guidellm"
    if "results_mean_output_throughput_token_per_s" in d or (
        "num_concurrent_requests" in d and any(k.startswith("results_") for k in d)
    ):
        return "llmperf"
    if "output_throughput" in d and ({"completed", "total_output_tokens", "endpoint_type", "backend"} & d.keys()):
        return "vllm"
    if isinstance(d.get("output_token_throughput"), dict) or isinstance(d.get("request_throughput"), dict):
        return "genai_perf_json"
    keys = ", ".join(list(d)[:8])
    raise InputError(f"{_name(file_name)}: JSON of unknown shape (top-level keys: {keys}); expected {_EXPECTED}")


def detect_format(data: bytes, file_name: str) -> str:
    """Which tool wrote the file, from its content: one of FORMATS, or InputError naming what was seen."""
    text = _text(data, file_name)
    if _looks_json(text):
        return _detect_json(_load_json(text, file_name), file_name)
    first = next((line for line in text.splitlines() if line.strip()), "")
    cells = [c.strip().lower() for c in next(csv.reader([first]))]
    if cells and cells[0] == "metric" and ("avg" in cells or "value" in cells):
        return "genai_perf_csv"
    shown = first[:60] + ("..." if len(first) > 60 else "")
    raise InputError(f"{_name(file_name)}: not a benchmark file this tool knows (it starts with {shown!r}); expected {_EXPECTED}")


# -- small helpers -----------------------------------------------------------------------


def _num(v: object) -> float | None:
    """A finite number, or None for missing / 'N/A' / null / NaN."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, str):
        s = v.strip().replace(",", "")
        if s.lower() in ("", "n/a", "na", "nan", "none", "null", "inf", "-inf"):
            return None
        try:
            x = float(s)
        except ValueError:
            return None
        return x if math.isfinite(x) else None
    return None


def _date_from(v: object) -> dt.date | None:
    """vLLM '20250401-153012', ISO dates, or epoch seconds/milliseconds."""
    if v is None:
        return None
    if isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
        secs = v / 1000.0 if v > 1e11 else float(v)
        try:
            return dt.datetime.fromtimestamp(secs, tz=dt.UTC).date()
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(v, str):
        s = v.strip()
        m = re.match(r"^(\d{4})(\d{2})(\d{2})-\d{6}$", s)
        if m:
            try:
                return dt.date(int(m[1]), int(m[2]), int(m[3]))
            except ValueError:
                return None
        try:
            return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).date()
        except ValueError:
            return None
    return None


def _concurrency_from_path(file_name: str) -> float | None:
    """GenAI-Perf artifact folders are named like 'model-openai-chat-concurrency16'."""
    m = re.search(r"concurrency[_\-]?(\d+)", file_name, flags=re.IGNORECASE)
    return float(m[1]) if m else None


def _littles_law(req_per_s: float | None, mean_latency_ms: float | None) -> float | None:
    """Mean requests in flight = arrival rate x mean time in the system."""
    if req_per_s and mean_latency_ms and req_per_s > 0 and mean_latency_ms > 0:
        return round(req_per_s * mean_latency_ms / 1000.0, 2)
    return None


def _hints(rec: dict) -> dict[str, object]:
    """Stack, GPU and GPU count where a file states them (e.g. vLLM --metadata key=value)."""
    out: dict[str, object] = {}
    for key in ("stack_id", "stack", "hangover_stack"):
        if isinstance(rec.get(key), str) and rec[key].strip():
            out["stack_id"] = rec[key].strip()
    for key in ("gpu", "gpu_name", "gpu_type"):
        if isinstance(rec.get(key), str) and rec[key].strip():
            out["gpu"] = rec[key].strip()
    for key in ("gpus_per_replica", "tensor_parallel_size", "tp_size", "tp"):
        n = _num(rec.get(key))
        if n is not None:
            out["gpus_per_replica"] = n
            break
    model = rec.get("model_id") or rec.get("model")
    if isinstance(model, str):
        out["model"] = model
    return out


# -- vLLM ------------------------------------------------------------------------------


def _parse_vllm(obj: object, file_name: str) -> list[_Raw]:
    out = []
    recs = _records(obj)
    for i, rec in enumerate(recs):
        raw = _Raw(label=f"run {i + 1}" if len(recs) > 1 else "", hints=_hints(rec), date=_date_from(rec.get("date")))
        completed = _num(rec.get("completed"))
        if completed is not None and completed <= 0:
            raise InputError(f"{_where(file_name, raw)}: 'completed' is {completed:g}: no request finished, so nothing was measured")
        if completed:
            tin, tout = _num(rec.get("total_input_tokens")), _num(rec.get("total_output_tokens"))
            raw.input_tokens = tin / completed if tin is not None else None
            raw.output_tokens = tout / completed if tout is not None else None
        raw.total = _num(rec.get("output_throughput"))
        tpot = _num(rec.get("median_tpot_ms")) or _num(rec.get("mean_tpot_ms"))
        if tpot and tpot > 0:
            raw.per_stream = 1000.0 / tpot  # TPOT excludes the first token, as the model's per-stream speed does
        raw.ttft_p50 = _num(rec.get("median_ttft_ms"))
        raw.ttft_p95 = _num(rec.get("p95_ttft_ms"))
        raw.e2e_p50 = _num(rec.get("median_e2el_ms"))
        raw.e2e_p95 = _num(rec.get("p95_e2el_ms"))
        p99 = {m: _num(rec.get(f"p99_{m}_ms")) for m in ("ttft", "e2el")}
        if raw.ttft_p95 is None and raw.e2e_p95 is None and any(v is not None for v in p99.values()):
            shown = ", ".join(f"{'TTFT' if m == 'ttft' else 'e2e'} p99 {v:.0f} ms" for m, v in p99.items() if v is not None)
            raw.notes.append(f"file has p99 only ({shown}); no p95 stored")

        max_c = _num(rec.get("max_concurrency"))
        rate = rec.get("request_rate")
        unlimited = rate is None or (isinstance(rate, str) and rate.strip().lower() == "inf") or (
            isinstance(rate, int | float) and math.isinf(rate)
        )
        little = _littles_law(_num(rec.get("request_throughput")), _num(rec.get("mean_e2el_ms")))
        prompts = _num(rec.get("num_prompts")) or completed
        if max_c is not None and max_c <= 0:
            raise InputError(f"{_where(file_name, raw)}: 'max_concurrency' is {max_c:g}; a benchmark needs at least one request in flight")
        if max_c is not None and unlimited:
            raw.concurrency = min(max_c, prompts) if prompts else max_c
        elif little is not None:
            raw.concurrency = min(little, max_c) if max_c else little
            raw.notes.append(
                f"concurrency {raw.concurrency:g} from Little's law (request throughput x mean e2e latency); "
                f"the run was paced at {rate} req/s" + (f" with at most {max_c:g} in flight" if max_c else "")
            )
        elif max_c is not None:
            raw.concurrency = max_c
            raw.notes.append(f"concurrency is the run's max_concurrency ({max_c:g}); the rate limit may have kept fewer in flight")
        out.append(raw)
    return out


# -- GuideLLM --------------------------------------------------------------------------


def _gl_stat(metrics: dict, name: str, stat: str = "mean") -> float | None:
    """A GuideLLM status-split distribution: successful requests first, else all."""
    dist = metrics.get(name)
    if not isinstance(dist, dict):
        return None
    part = next((dist[k] for k in ("successful", "total") if isinstance(dist.get(k), dict)), dist)
    if stat.startswith("p") and stat[1:].isdigit():
        pct = part.get("percentiles")
        return _num(pct.get(stat)) if isinstance(pct, dict) else None
    return _num(part.get(stat))


def _parse_guidellm(obj: dict, file_name: str) -> list[_Raw]:
    out = []
    benches = obj.get("benchmarks") or []
    if not benches:
        raise InputError(f"{_name(file_name)}: a GuideLLM report with no benchmarks in it")
    for j, bm in enumerate(benches):
        if not isinstance(bm, dict) or not isinstance(bm.get("metrics"), dict):
            raise InputError(f"{_name(file_name)}, benchmark {j + 1}: has no 'metrics' section")
        m = bm["metrics"]
        cfg = bm.get("config") if isinstance(bm.get("config"), dict) else bm.get("args") if isinstance(bm.get("args"), dict) else {}
        strategy = cfg.get("strategy") if isinstance(cfg.get("strategy"), dict) else bm.get("strategy") if isinstance(bm.get("strategy"), dict) else {}
        kind = str(strategy.get("type_") or strategy.get("type") or "")
        streams, rate = _num(strategy.get("streams")), _num(strategy.get("rate"))
        raw = _Raw(label=f"benchmark {j + 1}" + (f" ({kind})" if kind else ""))
        if kind == "concurrent" and streams is not None:
            raw.concurrency = streams
        elif kind == "synchronous":
            raw.concurrency = 1.0
        else:
            mean_c = _gl_stat(m, "request_concurrency")
            if mean_c is not None:
                raw.concurrency = round(mean_c, 2)
                raw.notes.append(
                    f"concurrency {raw.concurrency:g} is the measured mean requests in flight"
                    + (f" of a {kind} run" if kind else "") + (f" at {rate:g} req/s" if rate else "")
                )
        raw.input_tokens = _gl_stat(m, "prompt_token_count")
        raw.output_tokens = _gl_stat(m, "output_token_count")
        raw.total = _gl_stat(m, "output_tokens_per_second")
        itl = _gl_stat(m, "inter_token_latency_ms", "median")
        if itl and itl > 0:
            raw.per_stream = 1000.0 / itl
        raw.ttft_p50 = _gl_stat(m, "time_to_first_token_ms", "median")
        raw.ttft_p95 = _gl_stat(m, "time_to_first_token_ms", "p95")
        # GuideLLM states request latency in seconds.
        for attr, stat in (("e2e_p50", "median"), ("e2e_p95", "p95")):
            v = _gl_stat(m, "request_latency", stat)
            setattr(raw, attr, v * 1000.0 if v is not None else None)
        start = bm.get("start_time")
        if start is None and isinstance(bm.get("run_stats"), dict):
            start = bm["run_stats"].get("start_time")
        raw.date = _date_from(start)
        out.append(raw)
    return out


# -- GenAI-Perf --------------------------------------------------------------------------


def _metric_key(name: str) -> tuple[str, str]:
    """'Time To First Token (ms)' -> ('time to first token', 'ms')."""
    m = re.match(r"^\s*(.*?)\s*(?:\(([^)]*)\))?\s*$", name)
    return (m[1].lower(), (m[2] or "").lower()) if m else (name.lower(), "")


def _to_ms(v: float | None, unit: str) -> float | None:
    if v is None:
        return None
    return {"ns": v / 1e6, "us": v / 1e3, "s": v * 1e3, "sec": v * 1e3}.get(unit.strip().lower(), v)


def _parse_genai_csv(text: str, file_name: str) -> list[_Raw]:
    table: dict[str, tuple[str, dict[str, float | None]]] = {}
    header: list[str] | None = None
    for row in csv.reader(io.StringIO(text)):
        if not row or not any(c.strip() for c in row):
            header = None
            continue
        if row[0].strip().lower() == "metric":
            header = [c.strip().lower() for c in row]
            continue
        if header is None:
            continue
        key, unit = _metric_key(row[0])
        table[key] = (unit, {h: _num(v) for h, v in zip(header[1:], row[1:], strict=False)})
    if not table:
        raise InputError(f"{_name(file_name)}: a GenAI-Perf CSV with no metric rows")

    def get(metric: str, stat: str = "avg") -> float | None:
        if metric not in table:
            return None
        unit, vals = table[metric]
        v = vals.get(stat, vals.get("value")) if stat == "avg" else vals.get(stat)
        return _to_ms(v, unit) if unit in ("ns", "us", "s", "sec", "ms") else v

    raw = _Raw()
    raw.input_tokens = get("input sequence length")
    raw.output_tokens = get("output sequence length")
    raw.total = get("output token throughput")
    raw.per_stream = get("output token throughput per user")
    itl = get("inter token latency")
    if raw.per_stream is None and itl and itl > 0:
        raw.per_stream = 1000.0 / itl
    raw.ttft_p50, raw.ttft_p95 = get("time to first token", "p50"), get("time to first token", "p95")
    raw.e2e_p50, raw.e2e_p95 = get("request latency", "p50"), get("request latency", "p95")
    raw.concurrency = _concurrency_from_path(file_name)
    return [raw]


def _find_key(obj: object, key: str) -> object:
    """First value under `key` anywhere in nested dicts (GenAI-Perf moved its settings around)."""
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            found = _find_key(v, key)
            if found is not None:
                return found
    return None


def _parse_genai_json(obj: dict, file_name: str) -> list[_Raw]:
    def get(metric: str, stat: str = "avg") -> float | None:
        d = obj.get(metric)
        if not isinstance(d, dict):
            return None
        v = _num(d.get(stat))
        unit = str(d.get("unit", "")).lower()
        return _to_ms(v, unit) if unit in ("ns", "us", "s", "sec", "ms") else v

    raw = _Raw(hints=_hints(obj.get("input_config") or {}))
    raw.input_tokens = get("input_sequence_length")
    raw.output_tokens = get("output_sequence_length")
    raw.total = get("output_token_throughput")
    raw.per_stream = get("output_token_throughput_per_user")
    itl = get("inter_token_latency")
    if raw.per_stream is None and itl and itl > 0:
        raw.per_stream = 1000.0 / itl
    raw.ttft_p50, raw.ttft_p95 = get("time_to_first_token", "p50"), get("time_to_first_token", "p95")
    raw.e2e_p50, raw.e2e_p95 = get("request_latency", "p50"), get("request_latency", "p95")
    c = _num(_find_key(obj.get("input_config"), "concurrency"))
    raw.concurrency = c if c is not None else _concurrency_from_path(file_name)
    return [raw]


# -- llmperf -----------------------------------------------------------------------------


def _parse_llmperf(obj: dict, file_name: str) -> list[_Raw]:
    def q(metric: str, stat: str) -> float | None:
        return _num(obj.get(f"results_{metric}_{stat}"))

    raw = _Raw(hints=_hints(obj), date=_date_from(obj.get("timestamp")))
    done = _num(obj.get("results_num_completed_requests"))
    if done is not None and done <= 0:
        raise InputError(f"{_name(file_name)}: 'results_num_completed_requests' is {done:g}: no request finished")
    raw.concurrency = _num(obj.get("num_concurrent_requests"))
    raw.input_tokens = q("number_input_tokens", "mean") or _num(obj.get("mean_input_tokens"))
    raw.output_tokens = q("number_output_tokens", "mean") or _num(obj.get("mean_output_tokens"))
    raw.total = _num(obj.get("results_mean_output_throughput_token_per_s"))
    itl = q("inter_token_latency_s", "quantiles_p50") or q("inter_token_latency_s", "mean")
    if itl and itl > 0:
        raw.per_stream = 1.0 / itl
    for attr, metric, stat in (
        ("ttft_p50", "ttft_s", "quantiles_p50"),
        ("ttft_p95", "ttft_s", "quantiles_p95"),
        ("e2e_p50", "end_to_end_latency_s", "quantiles_p50"),
        ("e2e_p95", "end_to_end_latency_s", "quantiles_p95"),
    ):
        v = q(metric, stat)
        setattr(raw, attr, v * 1000.0 if v is not None else None)
    err = _num(obj.get("results_error_rate"))
    if err:
        raw.notes.append(f"{err:.1%} of requests failed")
    return [raw]


# -- building Benchmarks -----------------------------------------------------------------


def _where(file_name: str, raw: _Raw) -> str:
    return _name(file_name) + (f", {raw.label}" if raw.label else "")


def _resolve_name(value: str, known: Iterable[str] | None, what: str, flag: str) -> str:
    if known is None:
        return value
    known = list(known)
    by_lower = {k.lower(): k for k in known}
    if value.strip().lower() in by_lower:
        return by_lower[value.strip().lower()]
    raise InputError(f"unknown {what} {value!r} ({flag}); known: {', '.join(sorted(known))}")


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
    fmt = detect_format(data, file_name)
    text = _text(data, file_name)
    parsers = {
        "vllm": lambda: _parse_vllm(_load_json(text, file_name), file_name),
        "guidellm": lambda: _parse_guidellm(_records(_load_json(text, file_name))[0], file_name),
        "genai_perf_csv": lambda: _parse_genai_csv(text, file_name),
        "genai_perf_json": lambda: _parse_genai_json(_records(_load_json(text, file_name))[0], file_name),
        "llmperf": lambda: _parse_llmperf(_records(_load_json(text, file_name))[0], file_name),
    }
    raws = parsers[fmt]()
    if concurrency is not None and len({r.concurrency for r in raws}) > 1:
        raise InputError(
            f"{_name(file_name)} holds {len(raws)} runs at different concurrencies; --concurrency cannot override them all"
        )
    for name, v in (("concurrency", concurrency), ("input tokens", input_tokens), ("output tokens", output_tokens)):
        if v is not None and (not math.isfinite(v) or v < 0 or (v == 0 and name != "input tokens")):
            raise InputError(f"{name} must be {'0 or more' if name == 'input tokens' else 'more than 0'}; got {v:g}")
    return [
        _build(raw, fmt, file_name, stack_id, gpu, gpus_per_replica, as_of, concurrency, input_tokens, output_tokens, known_stacks, known_gpus)
        for raw in raws
    ]


def _build(raw: _Raw, fmt, file_name, stack_id, gpu, gpus_per_replica, as_of, concurrency, input_tokens, output_tokens, known_stacks, known_gpus) -> Benchmark:
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
    g = gpus_per_replica if gpus_per_replica is not None else raw.hints.get("gpus_per_replica")
    if g is None:
        g = 1
        notes.append("GPUs per replica not stated: assumed 1 (pass --gpus-per-replica if not)")
    if float(g) != int(float(g)) or not 1 <= int(float(g)) <= 72:
        raise InputError(f"{where}: GPUs per replica must be a whole number from 1 to 72; got {g}")

    if concurrency is not None:
        if raw.concurrency is not None and not math.isclose(raw.concurrency, concurrency):
            notes.append(f"concurrency {concurrency:g} from --concurrency (the file suggests {raw.concurrency:g})")
        c = concurrency
    else:
        c = raw.concurrency
    n_in = input_tokens if input_tokens is not None else raw.input_tokens
    n_out = output_tokens if output_tokens is not None else raw.output_tokens
    missing = [flag for flag, v in (("--concurrency", c), ("--input-tokens", n_in), ("--output-tokens", n_out)) if v is None]
    if missing:
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
    latencies = {"ttft_ms_p50": raw.ttft_p50, "ttft_ms_p95": raw.ttft_p95, "e2e_ms_p50": raw.e2e_p50, "e2e_ms_p95": raw.e2e_p95}
    for k, v in list(latencies.items()):
        if v is not None and v < 0:
            raise InputError(f"{where}: {k} is {v:g} ms; a latency cannot be negative")
        if v == 0:
            latencies[k] = None
            notes.append(f"{k} is 0 in the file: left out")

    date = as_of or raw.date or dt.date.today()
    try:
        return Benchmark(
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
        raise InputError(describe_validation_error(exc, where=where)) from None


# -- storing -----------------------------------------------------------------------------


def import_benchmark_file(store, data: bytes, file_name: str, **kw) -> ImportResult:
    """Parse a file and add its points to the store in one transaction; the same file twice adds nothing.

    Keyword arguments are those of parse_benchmark_file (stack_id, gpu,
    gpus_per_replica, as_of, concurrency, input_tokens, output_tokens). The
    stack must fit on the GPUs named (else InputError: usually a missing
    --gpus-per-replica).
    """
    # Imported lazily: the store imports the seed, which is heavier than parsing needs.
    from core.performance.calibration import check_fits
    from core.store import insert_rows

    import_id = file_sha256(data)
    name = _name(file_name)
    fmt = detect_format(data, file_name)
    existing = _count_import(store, import_id)
    if existing:
        return ImportResult(0, True, _dup_message(name, existing, import_id), import_id, fmt)

    stacks = {s.stack_id: s for s in store.serving_stacks()}
    gpus = {g.name: g for g in store.gpus()}
    points = parse_benchmark_file(data, file_name, known_stacks=list(stacks), known_gpus=list(gpus), **kw)
    for p in {(p.stack_id, p.gpu, p.gpus_per_replica) for p in points}:
        check_fits(stacks[p[0]], gpus[p[1]], p[2])

    def work(cur) -> tuple[int, int]:
        # Checked again inside the transaction: another session may have imported it meanwhile.
        # fetchall, not fetchone: DuckDB refuses further work on a cursor with an unfinished result.
        n = cur.execute("SELECT count(*) FROM benchmarks WHERE import_id = ?", [import_id]).fetchall()[0][0]
        if n:
            return 0, n
        return insert_rows(cur, "benchmarks", points, origin="user", import_id=import_id), 0

    added, existing = store.write(work)
    if existing:
        return ImportResult(0, True, _dup_message(name, existing, import_id), import_id, fmt)
    p0 = points[0]
    conc = ", ".join(f"{p.concurrency:g}" for p in points)
    noted = [p.note for p in points if p.note]
    msg = (
        f"imported {added} benchmark point{'s' if added != 1 else ''} from {name} ({FORMATS[fmt]}) for "
        f"{p0.stack_id} on {p0.gpu} x{p0.gpus_per_replica} at concurrency {conc}"
    )
    if noted:
        msg += "\nnotes: " + " | ".join(dict.fromkeys(noted))
    return ImportResult(added, False, msg, import_id, fmt, tuple(points))


def _count_import(store, import_id: str) -> int:
    df = store.frame("SELECT count(*) AS n FROM benchmarks WHERE import_id = ?", [import_id])
    return int(df["n"].iloc[0])


def _dup_message(name: str, n: int, import_id: str) -> str:
    return f"{name} was already imported ({n} point{'s' if n != 1 else ''}, sha256 {import_id[:12]}...): nothing added"
