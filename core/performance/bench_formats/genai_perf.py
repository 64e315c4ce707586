"""NVIDIA GenAI-Perf profile_export_genai_perf: the CSV (stats table plus Metric,Value table) and the JSON."""

from __future__ import annotations

import csv
import io
import re

from core.errors import InputError
from core.performance.bench_formats.common import Raw, Source, hints, number, records, to_ms

TOOL = "NVIDIA GenAI-Perf"
_TIME_UNITS = ("ns", "us", "s", "sec", "ms")


def _concurrency_from_path(file_name: str) -> float | None:
    """GenAI-Perf artifact folders are named like 'model-openai-chat-concurrency16'."""
    m = re.search(r"concurrency[_\-]?(\d{1,9})", file_name, flags=re.IGNORECASE)
    return float(m[1]) if m else None


def _metric_key(name: str) -> tuple[str, str]:
    """'Time To First Token (ms)' -> ('time to first token', 'ms')."""
    m = re.match(r"^\s*(.*?)\s*(?:\(([^)]*)\))?\s*$", name)
    return (m[1].lower(), (m[2] or "").lower()) if m else (name.lower(), "")


# -- CSV ---------------------------------------------------------------------------------


def detect_csv(src: Source) -> bool:
    """Text whose first non-blank line is a 'Metric,avg,...' or 'Metric,Value' header."""
    if src.is_json:
        return False
    first = next((line for line in src.text.splitlines() if line.strip()), "")[:4096]
    cells = [c.strip().lower() for c in next(csv.reader([first]), [])]
    return bool(cells) and cells[0] == "metric" and ("avg" in cells or "value" in cells)


def parse_csv(src: Source) -> list[Raw]:
    """One Raw from the two tables; the concurrency comes from the artifact folder's name, if anywhere."""
    table: dict[str, tuple[str, dict[str, str]]] = {}
    header: list[str] | None = None
    for row in csv.reader(io.StringIO(src.text)):
        if not row or not any(c.strip() for c in row):
            header = None
            continue
        if row[0].strip().lower() == "metric":
            header = [c.strip().lower() for c in row]
            continue
        if header is None:
            continue
        key, unit = _metric_key(row[0][:200])
        table[key] = (unit, dict(zip(header[1:], row[1:], strict=False)))
    if not table:
        raise InputError(f"{src.name}: a GenAI-Perf CSV with no metric rows")

    def get(metric: str, stat: str = "avg") -> float | None:
        if metric not in table:
            return None
        unit, vals = table[metric]
        cell = vals.get(stat, vals.get("value")) if stat == "avg" else vals.get(stat)
        v = number(cell, f"{src.name}: '{metric}' {stat}")
        return to_ms(v, unit) if unit in _TIME_UNITS else v

    raw = Raw()
    raw.input_tokens = get("input sequence length")
    raw.output_tokens = get("output sequence length")
    raw.total = get("output token throughput")
    raw.per_stream = get("output token throughput per user")
    itl = get("inter token latency")
    if raw.per_stream is None and itl and itl > 0:
        raw.per_stream = 1000.0 / itl
    raw.ttft_p50, raw.ttft_p95 = get("time to first token", "p50"), get("time to first token", "p95")
    raw.e2e_p50, raw.e2e_p95 = get("request latency", "p50"), get("request latency", "p95")
    raw.concurrency = _concurrency_from_path(src.file_name)
    return [raw]


# -- JSON --------------------------------------------------------------------------------


def detect_json(src: Source) -> bool:
    """A JSON object whose output_token_throughput or request_throughput is a {avg, unit, ...} record."""
    recs = records(src.obj) if src.is_json else []
    d = recs[0] if recs else {}
    return isinstance(d.get("output_token_throughput"), dict) or isinstance(d.get("request_throughput"), dict)


def _find_key(obj: object, key: str) -> object:
    """First value under `key` in nested dicts, depth first (GenAI-Perf moved its settings around); iterative."""
    todo = [obj]
    while todo:
        o = todo.pop()
        if isinstance(o, dict):
            if key in o:
                return o[key]
            todo.extend(reversed([v for v in o.values() if isinstance(v, dict)]))
    return None


def parse_json(src: Source) -> list[Raw]:
    """One Raw from the metric records; concurrency from input_config, else the artifact folder's name."""
    obj = records(src.obj)[0]

    def get(metric: str, stat: str = "avg") -> float | None:
        d = obj.get(metric)
        if not isinstance(d, dict):
            return None
        v = number(d.get(stat), f"{src.name}: {metric} {stat}")
        unit = str(d.get("unit", ""))[:10].lower()
        return to_ms(v, unit) if unit in _TIME_UNITS else v

    cfg = c if isinstance(c := obj.get("input_config"), dict) else {}
    raw = Raw(hints=hints(cfg, src.name))
    raw.input_tokens = get("input_sequence_length")
    raw.output_tokens = get("output_sequence_length")
    raw.total = get("output_token_throughput")
    raw.per_stream = get("output_token_throughput_per_user")
    itl = get("inter_token_latency")
    if raw.per_stream is None and itl and itl > 0:
        raw.per_stream = 1000.0 / itl
    raw.ttft_p50, raw.ttft_p95 = get("time_to_first_token", "p50"), get("time_to_first_token", "p95")
    raw.e2e_p50, raw.e2e_p95 = get("request_latency", "p50"), get("request_latency", "p95")
    c = number(_find_key(cfg, "concurrency"), f"{src.name}: input_config concurrency")
    raw.concurrency = c if c is not None else _concurrency_from_path(src.file_name)
    return [raw]
