"""Plausibility bounds on imported benchmark figures, from the roofline where possible; each refusal names field and bound.

What a file may claim for a (stack, GPU, GPUs per replica) route:

- concurrency at most `CONCURRENCY_MARGIN` x the sequences whose KV cache fits beside the weights
  (physics.max_concurrency at the file's input + output tokens). A client may keep more requests in
  flight than the server batches (they queue), hence the margin; 1e300 is not a benchmark.
- total output tokens/s at most `THROUGHPUT_MARGIN` x the roofline bound with perfect efficiency
  (every byte at full HBM bandwidth, every FLOP at dense peak, no overheads, KV cache ignored) at the
  concurrency the memory allows; per-stream tokens/s likewise at one stream. The margin covers a
  stack named more conservatively than what ran (FP8 weights or speculative decoding on a stack
  stored as BF16 autoregressive).
- per-stream tokens/s at most the total: one stream cannot outrun all streams together, except that
  the per-stream speed excludes the first token (TTFT) and, below one request in flight, the idle
  time: allowed = total x (e2e / (e2e - TTFT) where both are given, else 2) / min(concurrency, 1) x 1.25.
- p50 <= p95 for TTFT and end-to-end latency; TTFT <= end-to-end at the same percentile (every
  request's first token comes before its last).
- absolute ceilings on token lengths and latencies (a day), and finite numbers only (common.number).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from core.errors import InputError
from core.models import Benchmark, GpuSpec, ServingStack
from core.performance import physics

CONCURRENCY_MARGIN = 8.0
THROUGHPUT_MARGIN = 4.0
PER_STREAM_SLACK = 1.25
MAX_INPUT_TOKENS = 10_000_000  # the longest context windows offered (2025) are 10M tokens
MAX_OUTPUT_TOKENS = 1_000_000
MAX_LATENCY_MS = 86_400_000.0  # one day
MAX_CONCURRENCY = 1_000_000.0  # before any physics: no single replica holds a million requests in flight

# The roofline with nothing lost (every peak reached, no fixed cost): an upper bound on what any engine reaches.
PERFECT = physics.PERFECT_EFFICIENCY


def _fail(where: str, text: str) -> None:
    raise InputError(f"{where}: {text}")


def check_shape(p: Benchmark, where: str) -> None:
    """Bounds that need no physics: orderings of percentiles, per-stream against total, absolute ceilings."""
    figures = {
        "concurrency": p.concurrency, "input_tokens": p.input_tokens, "output_tokens": p.output_tokens,
        "output_tokens_per_s_total": p.output_tokens_per_s_total,
        "output_tokens_per_s_per_stream": p.output_tokens_per_s_per_stream,
        "ttft_ms_p50": p.ttft_ms_p50, "ttft_ms_p95": p.ttft_ms_p95, "e2e_ms_p50": p.e2e_ms_p50, "e2e_ms_p95": p.e2e_ms_p95,
    }
    for name, v in figures.items():
        if v is not None and not math.isfinite(v):
            _fail(where, f"{name} is {v!r}; only finite numbers are accepted")
    if p.concurrency > MAX_CONCURRENCY:
        _fail(where, f"concurrency {p.concurrency:g} is above {MAX_CONCURRENCY:,.0f} requests in flight")
    if p.input_tokens > MAX_INPUT_TOKENS:
        _fail(where, f"input_tokens {p.input_tokens:g} is above {MAX_INPUT_TOKENS:,} (the longest context offered)")
    if p.output_tokens > MAX_OUTPUT_TOKENS:
        _fail(where, f"output_tokens {p.output_tokens:g} is above {MAX_OUTPUT_TOKENS:,} per request")
    for name in ("ttft_ms_p50", "ttft_ms_p95", "e2e_ms_p50", "e2e_ms_p95"):
        v = figures[name]
        if v is not None and v > MAX_LATENCY_MS:
            _fail(where, f"{name} is {v:,.0f} ms, above one day ({MAX_LATENCY_MS:,.0f} ms)")
    for lo, hi in (("ttft_ms_p50", "ttft_ms_p95"), ("e2e_ms_p50", "e2e_ms_p95"),
                   ("ttft_ms_p50", "e2e_ms_p50"), ("ttft_ms_p95", "e2e_ms_p95")):
        a, b = figures[lo], figures[hi]
        if a is not None and b is not None and a > b * (1 + 1e-9):
            _fail(where, f"{lo} ({a:,.6g} ms) is above {hi} ({b:,.6g} ms); it must be at most {hi}")
    total, per = p.output_tokens_per_s_total, p.output_tokens_per_s_per_stream
    if total is not None and per is not None:
        ttft, e2e = p.ttft_ms_p50, p.e2e_ms_p50
        share = e2e / (e2e - ttft) if ttft is not None and e2e is not None and e2e > ttft else 2.0
        allowed = total * share / min(p.concurrency, 1.0) * PER_STREAM_SLACK
        if per > allowed:
            _fail(where, f"output_tokens_per_s_per_stream ({per:,.6g}) is above the total "
                         f"({total:,.6g} tok/s; at most {allowed:,.6g} allowing for the first token and idle time): "
                         "one stream cannot outrun all streams together")


@lru_cache(maxsize=1024)
def roofline_limits(stack: ServingStack, gpu: GpuSpec, gpus: int, input_tokens: float, output_tokens: float) -> dict[str, float]:
    """The physics side of the bounds for one route: sequences that fit, best-case total and per-stream tokens/s."""
    fits = float(physics.max_concurrency(stack, gpu, gpus, input_tokens + output_tokens))
    b = max(fits, 1.0)
    committed = physics.tokens_committed_per_step(stack, PERFECT)
    step1 = float(physics.decode_step(stack, gpu, gpus, 1.0, 0.0, PERFECT)[0])
    step_b = float(physics.decode_step(stack, gpu, gpus, b, 0.0, PERFECT)[0])
    return {
        "fits": fits,
        "max_concurrency": max(fits, 1.0) * CONCURRENCY_MARGIN,
        "max_total": b * committed / step_b * 1e3 * THROUGHPUT_MARGIN,
        "max_per_stream": committed / step1 * 1e3 * THROUGHPUT_MARGIN,
    }


def check_physics(p: Benchmark, stack: ServingStack, gpu: GpuSpec, where: str) -> None:
    """Concurrency within memory x margin; total and per-stream tokens/s under the roofline x margin."""
    lim = roofline_limits(stack, gpu, p.gpus_per_replica, p.input_tokens, p.output_tokens)
    route = f"{stack.stack_id} on {p.gpus_per_replica} x {gpu.name}"
    if p.concurrency > lim["max_concurrency"]:
        _fail(where, f"concurrency {p.concurrency:,.6g} is above {lim['max_concurrency']:,.0f} "
                     f"({CONCURRENCY_MARGIN:g} x the {lim['fits']:,.0f} sequences of {p.input_tokens + p.output_tokens:,.0f} "
                     f"tokens whose KV cache fits in memory for {route})")
    if p.output_tokens_per_s_total is not None and p.output_tokens_per_s_total > lim["max_total"]:
        _fail(where, f"output_tokens_per_s_total {p.output_tokens_per_s_total:,.6g} is above {lim['max_total']:,.0f} tok/s "
                     f"({THROUGHPUT_MARGIN:g} x the roofline bound for {route} at full bandwidth and peak compute)")
    if p.output_tokens_per_s_per_stream is not None and p.output_tokens_per_s_per_stream > lim["max_per_stream"]:
        _fail(where, f"output_tokens_per_s_per_stream {p.output_tokens_per_s_per_stream:,.6g} is above "
                     f"{lim['max_per_stream']:,.0f} tok/s ({THROUGHPUT_MARGIN:g} x the roofline bound for one stream "
                     f"of {route})")


def plausible_mask(concurrency: np.ndarray, figures: dict[str, np.ndarray]) -> np.ndarray:
    """Rows whose figures are finite and under the absolute ceilings (vectorised; the read-side guard)."""
    ok = np.isfinite(concurrency) & (concurrency > 0) & (concurrency <= MAX_CONCURRENCY)
    for v in figures.values():
        ok &= np.isnan(v) | (np.isfinite(v) & (v <= 1e12))
    return ok
