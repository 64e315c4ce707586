"""Keeps a calibration local: regimes no measured point speaks for stay within their estimate range.

A route's fit moves four global factors (HBM share, GEMM share, prefill share,
fixed costs). Points measured at 4-32 streams constrain them only in that regime;
left free, a fit that lifts the HBM share to 1.0 to meet them also lifts batch 1
far past anything the stated assumptions allow (issue 29: 130 -> 360 tok/s for
Qwen3-235B, AIConfigurator 117). So the fit sees, beside the measured figures,
a set of reference operating points that no point covers, each with a hinge
residual that is zero inside the uncalibrated range (the assumptions' slow and
fast ends) and grows in log units outside it. The pass-through correction of
`performance_curve` fades back to 1 the same distance away from the points.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.models import Benchmark, GpuSpec, ServingStack
from core.performance import physics
from core.performance.physics import Efficiency

# Points speak for their own concurrencies, one doubling below the lowest, and above; below
# that, the estimate range holds.
NEAR_FACTOR = 2.0
# Distance in log-concurrency over which a measured correction fades to 1 below the lowest point:
# gone at a quarter of its concurrency, so a point at 4 streams leaves batch 1 alone.
FADE_LOG = float(np.log(4.0))
# Operating points checked for the range: batch 1 to a busy batch, at the reference lengths and at
# every measured point's own lengths (the fit moves factors that govern all of them).
REF_CONCURRENCY = (1.0, 4.0, 16.0, 64.0, 256.0)
REF_TOKENS = ((1000.0, 256.0), (4000.0, 512.0))
# Figures kept within range at the reference points (per-stream speed and first-token time).
REF_METRICS = ("output_tokens_per_s_per_stream", "ttft_ms")
# Weight of one log unit outside the range, per square root of the number of measured figures:
# strong enough that a handful of points cannot buy a misfit elsewhere, soft enough to solve.
HINGE_WEIGHT = 10.0


def covered(concurrency: float, points: Sequence[Benchmark]) -> bool:
    """A concurrency at or above the lowest point's, less one doubling, is a regime the points speak for.

    Below it the engine leaves the measured regime: with fewer streams, weight streaming
    and fixed per-step costs dominate, which busy points barely see, so a fit to them says
    little there. Above the highest point the same batched GEMMs and KV reads keep
    dominating, so the fitted shares carry on. Token lengths do not enter: the fitted
    factors are shares of the GPU's peaks; the pass-through corrections stay length-local.
    """
    return concurrency >= min(float(p.concurrency) for p in points) / NEAR_FACTOR - 1e-9


def reference_points(stack: ServingStack, gpu: GpuSpec, gpus: int,
                     points: Sequence[Benchmark]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(concurrency, input, output) of the reference operating points no point covers, within memory."""
    pairs = list(dict.fromkeys([*REF_TOKENS, *((float(p.input_tokens), float(p.output_tokens)) for p in points)]))
    out = []
    for n_in, n_out in pairs:
        cap = float(physics.max_concurrency(stack, gpu, gpus, n_in + n_out))
        for c in REF_CONCURRENCY:
            if c > max(cap, 1.0):
                continue
            if not covered(c, points):
                out.append((c, n_in, n_out))
    if not out:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    arr = np.array(out, dtype=float)
    return arr[:, 0], arr[:, 1], arr[:, 2]


def range_at(stack: ServingStack, gpu: GpuSpec, gpus: int, refs: tuple[np.ndarray, np.ndarray, np.ndarray],
             low: Efficiency, high: Efficiency) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per reference metric, (least, greatest) value between the range's two ends."""
    b, n_in, n_out = refs
    if b.size == 0:
        return {}
    lo = physics.estimate(stack, gpu, gpus, b, n_in, n_out, low)
    hi = physics.estimate(stack, gpu, gpus, b, n_in, n_out, high)
    return {m: (np.minimum(lo[m], hi[m]), np.maximum(lo[m], hi[m])) for m in REF_METRICS}


def hinge(est: dict[str, np.ndarray], bounds: dict[str, tuple[np.ndarray, np.ndarray]], weight: float) -> np.ndarray:
    """weight x log-distance outside [least, greatest] per reference metric (0 inside)."""
    if not bounds:
        return np.zeros(0)
    parts = []
    for m, (least, greatest) in bounds.items():
        v = np.asarray(est[m], dtype=float)
        parts.append(weight * (np.maximum(np.log(v / greatest), 0.0) + np.maximum(np.log(least / v), 0.0)))
    return np.concatenate(parts)


def fade(log_b: np.ndarray, xs: np.ndarray, log_factor: np.ndarray) -> np.ndarray:
    """Log correction interpolated between points (sorted unique `xs`), fading linearly to 0 over FADE_LOG below them.

    Below the lowest point the engine leaves the regime measured (fewer streams: weight
    streaming and fixed costs, not batched GEMMs), so the correction fades out. Above the
    highest it is kept: a busier engine stays in the saturating regime its last point measured,
    and a fade there would bend the curve back (throughput falling, first-token time dipping).
    """
    inside = np.interp(log_b, xs, log_factor)
    below = np.maximum(xs[0] - log_b, 0.0)
    return inside * np.clip(1.0 - below / FADE_LOG, 0.0, 1.0)
