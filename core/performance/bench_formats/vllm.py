"""vLLM `vllm bench serve` / benchmark_serving.py result JSON (one object, or one per line with --append-result)."""

from __future__ import annotations

import math

from core.errors import InputError
from core.performance.bench_formats.common import (
    NonFinite,
    Raw,
    Source,
    date_from,
    hints,
    littles_law,
    number,
    records,
)

NAME = "vllm"
TOOL = "vllm bench serve"


def detect(src: Source) -> bool:
    """A JSON record with `output_throughput` and one of vLLM's run keys."""
    recs = records(src.obj) if src.is_json else []
    d = recs[0] if recs else {}
    return "output_throughput" in d and bool({"completed", "total_output_tokens", "endpoint_type", "backend"} & d.keys())


def parse(src: Source) -> list[Raw]:
    """One Raw per run: means from totals / completed, per-stream speed from TPOT, p50/p95 latencies."""
    out = []
    recs = records(src.obj)
    for i, rec in enumerate(recs):
        label = f"run {i + 1}" if len(recs) > 1 else ""
        where = src.name + (f", {label}" if label else "")

        def num(key: str, rec=rec, where=where) -> float | None:
            return number(rec.get(key), f"{where}: '{key}'")

        raw = Raw(label=label, hints=hints(rec, where), date=date_from(rec.get("date")))
        completed = num("completed")
        if completed is not None and completed <= 0:
            raise InputError(f"{where}: 'completed' is {completed:g}: no request finished, so nothing was measured")
        if completed:
            tin, tout = num("total_input_tokens"), num("total_output_tokens")
            raw.input_tokens = tin / completed if tin is not None else None
            raw.output_tokens = tout / completed if tout is not None else None
        raw.total = num("output_throughput")
        tpot = num("median_tpot_ms") or num("mean_tpot_ms")
        if tpot and tpot > 0:
            raw.per_stream = 1000.0 / tpot  # TPOT excludes the first token, as the model's per-stream speed does
        raw.ttft_p50 = num("median_ttft_ms")
        raw.ttft_p95 = num("p95_ttft_ms")
        raw.e2e_p50 = num("median_e2el_ms")
        raw.e2e_p95 = num("p95_e2el_ms")
        p99 = {m: num(f"p99_{m}_ms") for m in ("ttft", "e2el")}
        if raw.ttft_p95 is None and raw.e2e_p95 is None and any(v is not None for v in p99.values()):
            shown = ", ".join(f"{'TTFT' if m == 'ttft' else 'e2e'} p99 {v:.0f} ms" for m, v in p99.items() if v is not None)
            raw.notes.append(f"file has p99 only ({shown}); no p95 stored")

        max_c = num("max_concurrency")
        rate = rec.get("request_rate")
        unlimited = rate is None or (isinstance(rate, str) and rate.strip().lower() in ("inf", "infinity")) or (
            isinstance(rate, float) and math.isinf(rate)
        ) or (isinstance(rate, NonFinite) and rate.literal == "Infinity")
        if not unlimited:
            rate = number(rate, f"{where}: 'request_rate'")
        little = littles_law(num("request_throughput"), num("mean_e2el_ms"))
        prompts = num("num_prompts") or completed
        if max_c is not None and max_c <= 0:
            raise InputError(f"{where}: 'max_concurrency' is {max_c:g}; a benchmark needs at least one request in flight")
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
