"""ray llmperf *_summary.json: flat `results_*` keys, latencies in seconds."""

from __future__ import annotations

from core.errors import InputError
from core.performance.bench_formats.common import Raw, Source, date_from, hints, number, records

NAME = "llmperf"
TOOL = "ray llmperf"


def detect(src: Source) -> bool:
    """A JSON object with llmperf's mean output throughput key, or its concurrency key and `results_*` keys."""
    recs = records(src.obj) if src.is_json else []
    d = recs[0] if recs else {}
    return "results_mean_output_throughput_token_per_s" in d or (
        "num_concurrent_requests" in d and any(isinstance(k, str) and k.startswith("results_") for k in d))


def parse(src: Source) -> list[Raw]:
    """One Raw: concurrency, mean token counts, throughput, per-stream speed from inter-token latency."""
    obj = records(src.obj)[0]
    where = src.name

    def num(key: str) -> float | None:
        return number(obj.get(key), f"{where}: '{key}'")

    def q(metric: str, stat: str) -> float | None:
        return num(f"results_{metric}_{stat}")

    raw = Raw(hints=hints(obj, where), date=date_from(obj.get("timestamp")))
    done = num("results_num_completed_requests")
    if done is not None and done <= 0:
        raise InputError(f"{where}: 'results_num_completed_requests' is {done:g}: no request finished")
    raw.concurrency = num("num_concurrent_requests")
    raw.input_tokens = q("number_input_tokens", "mean") or num("mean_input_tokens")
    raw.output_tokens = q("number_output_tokens", "mean") or num("mean_output_tokens")
    raw.total = num("results_mean_output_throughput_token_per_s")
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
    err = num("results_error_rate")
    if err:
        raw.notes.append(f"{err:.1%} of requests failed")
    return [raw]
