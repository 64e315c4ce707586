"""Calibrates the roofline to measured benchmarks and builds latency/throughput curves with provenance.

Two steps, kept apart so each number can say where it came from:

1. `fit_efficiency`: the roofline's efficiency factors (HBM share, compute
   share, prefill share, fixed per-step costs) are fitted to the measured and
   vendor-claimed points of one route (stack, GPU, GPUs per replica) by least
   squares on log errors, with a weak pull towards the defaults so that one or
   two points move as few factors as they must. The fit error it reports is the
   calibrated model's own error at those points.
2. `performance_curve`: the calibrated roofline, multiplied by a correction
   interpolated in log-concurrency between the measured points (fading back to 1
   within a factor of four below the lowest, constant beyond the highest), so the curve passes exactly
   through what was measured and the physics fills the gaps. Each row says
   whether it is measured, a vendor claim or an estimate.

Calibration stays local (core/performance/locality.py): the fit also holds the
operating points no measured point covers within the uncalibrated range.

The decision engine calls `calibrated_efficiency` once per route and then
`physics.estimate` vectorised with that Efficiency; `measured_corrections`
gives it the same pass-through factors, vectorised, if it wants them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import pandas as pd

from core.errors import InputError
from core.models import Architecture, Benchmark, Engine, GpuSpec, Provenance, ServingStack
from core.performance import locality, physics
from core.performance.physics import DEFAULT_EFFICIENCY, Efficiency

# Measured field -> estimate key it is compared with. TTFT p95 is used only when
# the file has no median (the model's TTFT has no queueing tail of its own).
FIT_FIELDS: tuple[tuple[str, str], ...] = (
    ("output_tokens_per_s_total", "output_tokens_per_s_total"),
    ("output_tokens_per_s_per_stream", "output_tokens_per_s_per_stream"),
    ("ttft_ms_p50", "ttft_ms"),
    ("ttft_ms_p95", "ttft_ms_p95"),
    ("e2e_ms_p50", "e2e_ms"),
    ("e2e_ms_p95", "e2e_ms_p95"),
)

# Curve columns that measured points correct (arithmetic intensity and `fits` are physics only).
CORRECTED = (
    "ttft_ms",
    "e2e_ms",
    "e2e_ms_p95",
    "output_tokens_per_s_total",
    "output_tokens_per_s_per_stream",
    "requests_per_s",
)

CURVE_COLUMNS = (
    "concurrency",
    "ttft_ms",
    "e2e_ms",
    "e2e_ms_p95",
    "output_tokens_per_s_total",
    "output_tokens_per_s_per_stream",
    "requests_per_s",
    "arithmetic_intensity",
    "memory_bound",
    "fits",
    "provenance",
    "measured_fields",
    "source",
)

# A measured point speaks for a requested workload when both token lengths are within 25 %.
LENGTH_TOLERANCE = 0.25

# Fitted factors: (Efficiency field, lower bound, upper bound). Shares of a peak cannot exceed 1;
# the fixed per-step costs (overhead, all-reduce, MoE routing) scale together.
_BOUNDS = {"mem": (0.02, 1.0), "compute": (0.02, 1.0), "prefill_compute": (0.02, 1.0), "overhead": (1e-3, 1e3)}
_OVERHEAD_FIELDS = (
    "step_overhead_ms", "comm_ms_per_doubling", "moe_overhead_ms", "allreduce_us_per_doubling",
    "alltoall_us_per_doubling", "moe_layer_overhead_us", "draft_step_overhead_ms", "host_us_per_seq",
    "layer_overhead_us",
)
# Weight of the pull towards the defaults, per log-unit of change (small: data wins).
_PRIOR_WEIGHT = 0.03


@dataclass(frozen=True)
class PointError:
    """One measured figure against the fitted model (and the uncalibrated default)."""

    concurrency: float
    input_tokens: float
    output_tokens: float
    metric: str
    measured: float
    fitted: float
    default: float
    provenance: str
    source: str

    @property
    def rel_error(self) -> float:
        """(fitted - measured) / measured."""
        return self.fitted / self.measured - 1.0

    @property
    def default_rel_error(self) -> float:
        """(default roofline - measured) / measured."""
        return self.default / self.measured - 1.0


@dataclass(frozen=True)
class Fit:
    """Efficiency fitted to one route's points, with the real error at each of them."""

    stack_id: str
    gpu: str
    gpus: int
    efficiency: Efficiency
    n_points: int
    n_measured: int
    n_vendor_claim: int
    errors: tuple[PointError, ...]
    notes: tuple[str, ...] = ()

    @property
    def max_abs_error(self) -> float:
        """Largest |relative error| of the fitted model over every measured figure."""
        return max(abs(e.rel_error) for e in self.errors)

    @property
    def mean_abs_error(self) -> float:
        """Mean |relative error| of the fitted model over every measured figure."""
        return float(np.mean([abs(e.rel_error) for e in self.errors]))

    @property
    def default_max_abs_error(self) -> float:
        """Largest |relative error| of the uncalibrated roofline (default efficiency)."""
        return max(abs(e.default_rel_error) for e in self.errors)

    @property
    def default_mean_abs_error(self) -> float:
        """Mean |relative error| of the uncalibrated roofline (default efficiency)."""
        return float(np.mean([abs(e.default_rel_error) for e in self.errors]))

    @property
    def basis(self) -> str:
        """'2 measured points', '1 vendor-claim point', '1 measured and 2 vendor-claim points'."""
        return _describe_counts(self.n_measured, self.n_vendor_claim)

    def frame(self) -> pd.DataFrame:
        """One row per (point, metric): measured, fitted, default and both relative errors."""
        return pd.DataFrame(
            [
                {
                    "concurrency": e.concurrency,
                    "input_tokens": e.input_tokens,
                    "output_tokens": e.output_tokens,
                    "metric": e.metric,
                    "measured": e.measured,
                    "fitted": e.fitted,
                    "fit_error": e.rel_error,
                    "default": e.default,
                    "default_error": e.default_rel_error,
                    "provenance": e.provenance,
                    "source": e.source,
                }
                for e in self.errors
            ]
        )

    def describe(self, prefill_share: float | None = None) -> str:
        """One line a reader can quote. prefill_share: the share of the route's peak prefill reaches with these
        factors (physics.prefill_share; BF16 tensor cores reach 1.3 x prefill_compute); default prefill_compute."""
        eff = self.efficiency
        prefill = eff.prefill_compute if prefill_share is None else prefill_share
        return (
            f"calibrated to {self.basis}: fit error max {self.max_abs_error:.1%}, "
            f"mean {self.mean_abs_error:.1%} (uncalibrated roofline: max {self.default_max_abs_error:.1%}); "
            f"HBM {eff.mem:.2f}, compute {eff.compute:.2f}, prefill {prefill:.2f}, "
            f"step overhead {eff.step_overhead_ms:.2f} ms"
        )


@dataclass(frozen=True)
class Anchor:
    """A measured (or claimed) point the curve must pass through, as factors on the calibrated model."""

    concurrency: float
    input_tokens: float
    output_tokens: float
    provenance: str
    factors: dict[str, float]
    measured_fields: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class Calibration:
    """Everything known about one route: efficiency, fit (if any points) and pass-through anchors."""

    stack_id: str
    gpu: str
    gpus: int
    efficiency: Efficiency
    fit: Fit | None
    anchors: tuple[Anchor, ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def estimated_label(self) -> str:
        """Provenance of a point that no measurement speaks for."""
        if self.fit is None:
            return Provenance.ESTIMATED.value
        return f"{Provenance.ESTIMATED.value} (calibrated to {self.fit.basis})"


# -- selecting points ------------------------------------------------------------------


def _same_gpu(a: str, b: str) -> bool:
    return a.strip().lower() == b.strip().lower()


def route_points(stack: ServingStack, gpu: GpuSpec, gpus: int, benchmarks: Iterable[Benchmark]) -> tuple[list[Benchmark], list[str]]:
    """Points usable for this route (measured or vendor claim), and notes on the stack's points left out.

    Points for the same stack on another GPU or GPU count are not used: the
    efficiency of a GPU and of a tensor-parallel split is what is being fitted.
    Points marked 'estimated' are not evidence and are never fitted.
    """
    used, estimated = [], 0
    other: dict[str, int] = {}  # "GPU xN" -> points there
    for b in benchmarks:
        if b.stack_id != stack.stack_id:
            continue
        if not _same_gpu(b.gpu, gpu.name) or b.gpus_per_replica != gpus:
            key = f"{b.gpu} x{b.gpus_per_replica}"
            other[key] = other.get(key, 0) + 1
            continue
        if b.provenance is Provenance.ESTIMATED:
            estimated += 1
            continue
        used.append(b)
    notes = []
    if other:
        where = ", ".join(f"{k} ({n})" for k, n in sorted(other.items()))
        notes.append(
            f"{sum(other.values())} point(s) for {stack.stack_id} on other GPUs or GPU counts were not used "
            f"for {gpu.name} x{gpus}: {where}"
        )
    if estimated:
        notes.append(f"{estimated} point(s) marked 'estimated' were not used as evidence")
    return used, notes


def _describe_counts(measured: int, vendor: int) -> str:
    def n(k: int, what: str) -> str:
        return f"{k} {what} point{'s' if k != 1 else ''}"

    if measured and vendor:
        return f"{measured} measured and {n(vendor, 'vendor-claim')}"
    if vendor:
        return n(vendor, "vendor-claim")
    return n(measured, "measured")


# -- fitting ---------------------------------------------------------------------------


def _with_factors(base: Efficiency, x: np.ndarray, fixed: Efficiency) -> Efficiency:
    """base with the fitted shares, and every fixed cost of `fixed` (the stack's defaults) times one scale."""
    mem, comp, pre, over = np.exp(x)
    return base.scaled(
        mem=float(mem),
        compute=float(comp),
        prefill_compute=float(pre),
        **{f: getattr(fixed, f) * float(over) for f in _OVERHEAD_FIELDS},
    )


def _observations(points: Sequence[Benchmark]) -> list[tuple[int, str, str, float]]:
    """(point index, measured field, estimate key, measured value) for every figure a point has."""
    obs = []
    for i, p in enumerate(points):
        for fld, key in FIT_FIELDS:
            v = getattr(p, fld)
            if v is None:
                continue
            if fld == "ttft_ms_p95" and p.ttft_ms_p50 is not None:
                continue
            obs.append((i, fld, key, float(v)))
    return obs


def _predict(stack, gpu, gpus, b, n_in, n_out, eff: Efficiency) -> dict[str, np.ndarray]:
    est = physics.estimate(stack, gpu, gpus, b, n_in, n_out, eff)
    est["ttft_ms_p95"] = est["ttft_ms"] * eff.p95_over_mean
    return est


def _p95_ratio(points: Sequence[Benchmark]) -> float | None:
    """Tail over median of end-to-end latency where a file gives both (geometric mean)."""
    ratios = [p.e2e_ms_p95 / p.e2e_ms_p50 for p in points if p.e2e_ms_p95 and p.e2e_ms_p50]
    if not ratios:
        return None
    return float(np.clip(np.exp(np.mean(np.log(ratios))), 1.0, 5.0))


def fit_efficiency(stack: ServingStack, gpu: GpuSpec, gpus: int, points: Sequence[Benchmark]) -> Fit:
    """Fit the efficiency factors of one route to its measured/vendor points.

    Points for another stack, GPU or GPU count, and points marked 'estimated',
    are left out (the Fit's notes say so). Raises InputError if none remain.
    """
    used, notes = route_points(stack, gpu, gpus, points)
    if not used:
        raise InputError(
            f"no measured or vendor-claim points for {stack.stack_id} on {gpu.name} x{gpus} to calibrate against"
            + (f" ({'; '.join(notes)})" if notes else "")
        )
    return _fit_cached(stack, gpu, gpus, tuple(used), tuple(notes))


@lru_cache(maxsize=512)
def _fit_cached(stack: ServingStack, gpu: GpuSpec, gpus: int, used: tuple[Benchmark, ...], notes: tuple[str, ...]) -> Fit:
    b = np.array([p.concurrency for p in used], dtype=float)
    n_in = np.array([p.input_tokens for p in used], dtype=float)
    n_out = np.array([p.output_tokens for p in used], dtype=float)
    obs = _observations(used)
    idx = np.array([o[0] for o in obs])
    keys = [o[2] for o in obs]
    measured = np.array([o[3] for o in obs])

    base = DEFAULT_EFFICIENCY.for_stack(stack)
    ratio = _p95_ratio(used)
    if ratio is not None:
        base = base.scaled(p95_over_mean=ratio)

    x0 = np.log([base.mem, base.compute, base.prefill_compute, 1.0])
    lo = np.log([_BOUNDS[k][0] for k in ("mem", "compute", "prefill_compute", "overhead")])
    hi = np.log([_BOUNDS[k][1] for k in ("mem", "compute", "prefill_compute", "overhead")])

    # Regimes no point covers are held within the uncalibrated range (core/performance/locality.py).
    refs = locality.reference_points(stack, gpu, gpus, used)
    estimated = _estimated_bounds(stack, gpu, gpus, DEFAULT_EFFICIENCY.for_stack(stack))
    ref_range = locality.range_at(stack, gpu, gpus, refs, estimated.low, estimated.high)
    weight = locality.HINGE_WEIGHT * math.sqrt(len(obs))
    n = len(used)
    all_b, all_in, all_out = (np.concatenate([v, r]) for v, r in zip((b, n_in, n_out), refs, strict=True))

    def evaluate(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        est = _predict(stack, gpu, gpus, all_b, all_in, all_out, _with_factors(base, x, base))
        at_points = np.array([est[k][i] for k, i in zip(keys, idx, strict=True)])
        return at_points, locality.hinge({m: est[m][n:] for m in ref_range}, ref_range, weight)

    def predicted(x: np.ndarray) -> np.ndarray:
        return evaluate(x)[0]

    def residuals(x: np.ndarray) -> np.ndarray:
        at_points, outside = evaluate(x)
        return np.concatenate([np.log(at_points / measured), outside, _PRIOR_WEIGHT * (x - x0)])

    # Two starts (defaults, and a fast/lean corner) guard against the max() kinks of the roofline.
    # A second start (a fast, lean corner) guards against the roofline's max() kinks; it runs
    # only when the first leaves a visible misfit, so a route usually costs one small solve.
    best = None
    for start in (x0, np.log([0.95, 0.9, 0.9, 0.2])):
        # Imported here: scipy.optimize costs every command ~1 s at start-up, and only a refit uses it.
        from scipy.optimize import least_squares

        # Central differences: with forward ones (scipy's default) the fit stopped where the Jacobian's own error
        # left it, and a 1e-12 nudge to a measurement (another CPU's exp or log) moved the fitted factors by
        # 1.3e-6, more than the goldens' 1e-6; central ones hold it to ~2e-9 (tests/test_calibration.py).
        res = least_squares(residuals, np.clip(start, lo + 1e-9, hi - 1e-9), bounds=(lo, hi), method="trf",
                            jac="3-point", max_nfev=400)
        if best is None or res.cost < best.cost:
            best = res
        if np.max(np.abs(res.fun[: len(obs)])) < 0.01:
            break
    if best is None:  # the loop above always runs at least once
        raise RuntimeError(f"no calibration fit was run for {stack.stack_id} on {gpu.name}")
    eff = _with_factors(base, best.x, base)

    fitted = predicted(best.x)
    default_est = _predict(stack, gpu, gpus, b, n_in, n_out, DEFAULT_EFFICIENCY)
    errors = tuple(
        PointError(
            concurrency=float(b[i]),
            input_tokens=float(n_in[i]),
            output_tokens=float(n_out[i]),
            metric=fld,
            measured=float(v),
            fitted=float(fv),
            default=float(default_est[key][i]),
            provenance=used[i].provenance.value,
            source=used[i].source,
        )
        for (i, fld, key, v), fv in zip(obs, fitted, strict=True)
    )
    n_measured = sum(p.provenance is Provenance.MEASURED for p in used)
    return Fit(
        stack_id=stack.stack_id,
        gpu=gpu.name,
        gpus=gpus,
        efficiency=eff,
        n_points=len(used),
        n_measured=n_measured,
        n_vendor_claim=len(used) - n_measured,
        errors=errors,
        notes=notes,
    )


# -- anchors and corrections -----------------------------------------------------------


def _close(x, ref) -> np.ndarray:
    """Token lengths within LENGTH_TOLERANCE of each other (or both tiny)."""
    x, ref = np.asarray(x, dtype=float), np.asarray(ref, dtype=float)
    return (np.abs(x - ref) <= LENGTH_TOLERANCE * np.maximum(x, ref)) | (np.maximum(x, ref) < 32.0)


def _anchor(stack, gpu, gpus, p: Benchmark, eff: Efficiency) -> Anchor:
    est = _predict(stack, gpu, gpus, p.concurrency, p.input_tokens, p.output_tokens, eff)
    e = {k: float(v) for k, v in est.items()}
    f: dict[str, float] = {}
    if p.output_tokens_per_s_total:
        f["output_tokens_per_s_total"] = p.output_tokens_per_s_total / e["output_tokens_per_s_total"]
    if p.output_tokens_per_s_per_stream:
        f["output_tokens_per_s_per_stream"] = p.output_tokens_per_s_per_stream / e["output_tokens_per_s_per_stream"]
    f.setdefault("output_tokens_per_s_total", f.get("output_tokens_per_s_per_stream", 1.0))
    f.setdefault("output_tokens_per_s_per_stream", f["output_tokens_per_s_total"])
    f["requests_per_s"] = f["output_tokens_per_s_total"]
    if p.e2e_ms_p50:
        f["e2e_ms"] = p.e2e_ms_p50 / e["e2e_ms"]
    elif p.e2e_ms_p95:
        f["e2e_ms"] = p.e2e_ms_p95 / e["e2e_ms_p95"]
    else:
        # Little's law: total = b x n_out / e2e, so latency moves opposite to throughput.
        f["e2e_ms"] = 1.0 / f["output_tokens_per_s_total"]
    f["e2e_ms_p95"] = p.e2e_ms_p95 / e["e2e_ms_p95"] if p.e2e_ms_p95 else f["e2e_ms"]
    if p.ttft_ms_p50:
        f["ttft_ms"] = p.ttft_ms_p50 / e["ttft_ms"]
    elif p.ttft_ms_p95:
        f["ttft_ms"] = p.ttft_ms_p95 / e["ttft_ms_p95"]
    else:
        f["ttft_ms"] = 1.0  # throughput says nothing about prefill: keep the model
    fields = {
        "output_tokens_per_s_total": "output_tokens_per_s_total",
        "output_tokens_per_s_per_stream": "output_tokens_per_s_per_stream",
        "e2e_ms_p50": "e2e_ms",
        "e2e_ms_p95": "e2e_ms_p95",
        "ttft_ms_p50": "ttft_ms",
    }
    measured = tuple(col for fld, col in fields.items() if getattr(p, fld) is not None)
    if p.ttft_ms_p95 is not None and p.ttft_ms_p50 is None:
        measured += ("ttft_ms (from p95)",)
    tool = f" ({p.tool})" if p.tool else ""
    return Anchor(
        concurrency=float(p.concurrency),
        input_tokens=float(p.input_tokens),
        output_tokens=float(p.output_tokens),
        provenance=p.provenance.value,
        factors=f,
        measured_fields=measured,
        source=f"{p.source}{tool}",
    )


def _anchors(stack, gpu, gpus, used: Sequence[Benchmark], eff: Efficiency) -> tuple[Anchor, ...]:
    """Anchors for every point; a vendor claim at the concurrency and lengths of a measured point gives way."""
    measured = [p for p in used if p.provenance is Provenance.MEASURED]
    keep = []
    for p in used:
        if p.provenance is not Provenance.MEASURED and any(
            math.isclose(m.concurrency, p.concurrency, rel_tol=1e-9)
            and bool(_close(m.input_tokens, p.input_tokens))
            and bool(_close(m.output_tokens, p.output_tokens))
            for m in measured
        ):
            continue
        keep.append(p)
    return tuple(_anchor(stack, gpu, gpus, p, eff) for p in keep)


def calibrate(stack: ServingStack, gpu: GpuSpec, gpus: int, benchmarks: Iterable[Benchmark]) -> Calibration:
    """Efficiency, fit and pass-through anchors for one route (cached on its points)."""
    used, notes = route_points(stack, gpu, gpus, benchmarks)
    return _calibrate_cached(stack, gpu, int(gpus), tuple(used), tuple(notes))


@lru_cache(maxsize=512)
def _calibrate_cached(stack, gpu, gpus, used: tuple[Benchmark, ...], notes: tuple[str, ...]) -> Calibration:
    if not used:
        return Calibration(stack.stack_id, gpu.name, gpus, DEFAULT_EFFICIENCY, None, (), notes)
    from core.performance.fitcache import cached_fit

    fit = cached_fit(stack, gpu, gpus, used, notes, lambda: _fit_cached(stack, gpu, gpus, used, notes))
    return Calibration(stack.stack_id, gpu.name, gpus, fit.efficiency, fit, _anchors(stack, gpu, gpus, used, fit.efficiency), notes)


def calibrated_efficiency(store_or_benchmarks, stack: ServingStack, gpu: GpuSpec, gpus: int) -> tuple[Efficiency, Fit | None]:
    """(Efficiency to use for this route, its Fit or None when no points exist); cheap after the first call.

    Accepts a Store (its benchmarks are read) or any iterable of Benchmarks.
    """
    benchmarks = store_or_benchmarks.benchmarks() if hasattr(store_or_benchmarks, "benchmarks") else store_or_benchmarks
    cal = calibrate(stack, gpu, gpus, benchmarks)
    return cal.efficiency, cal.fit


def _interp_factors(anchors: Sequence[Anchor], log_b: np.ndarray) -> dict[str, np.ndarray]:
    """Log-linear interpolation of each factor between anchors, fading to 1 below the lowest (locality.fade)."""
    xs = np.log([a.concurrency for a in anchors])
    order = np.argsort(xs, kind="stable")
    xs = xs[order]
    ux, inv = np.unique(xs, return_inverse=True)
    out = {}
    for m in CORRECTED:
        ys = np.log([anchors[i].factors[m] for i in order])
        # Several points at one concurrency (re-runs, near lengths): their geometric mean.
        uy = np.bincount(inv, weights=ys) / np.bincount(inv)
        out[m] = np.exp(locality.fade(log_b, ux, uy))
    return out


def measured_corrections(cal: Calibration, concurrency, input_tokens, output_tokens) -> dict[str, np.ndarray]:
    """Factors that make the calibrated estimate pass through the measured points; broadcasts like estimate().

    Only points whose token lengths are within 25 % of a workload's speak for
    it; elsewhere the factor is 1 (the calibrated roofline alone).
    """
    b = np.asarray(concurrency, dtype=float)
    n_in = np.asarray(input_tokens, dtype=float)
    n_out = np.asarray(output_tokens, dtype=float)
    shape = np.broadcast_shapes(b.shape, n_in.shape, n_out.shape)
    out = {m: np.ones(shape) for m in CORRECTED}
    if not cal.anchors:
        return out
    tok_shape = np.broadcast_shapes(n_in.shape, n_out.shape)
    ii = np.broadcast_to(n_in, tok_shape).reshape(-1)
    oo = np.broadcast_to(n_out, tok_shape).reshape(-1)
    a_in = np.array([a.input_tokens for a in cal.anchors])
    a_out = np.array([a.output_tokens for a in cal.anchors])
    near = _close(ii[:, None], a_in[None, :]) & _close(oo[:, None], a_out[None, :])
    patterns, inverse = np.unique(near, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    log_b = np.log(np.maximum(b, 1e-12))
    for k, pattern in enumerate(patterns):
        if not pattern.any():
            continue
        mask = (inverse == k).reshape(tok_shape)
        factors = _interp_factors([cal.anchors[i] for i in np.flatnonzero(pattern)], log_b)
        for m in CORRECTED:
            out[m] = np.where(mask, factors[m], out[m])
    return out


# -- ranges ----------------------------------------------------------------------------

# Least uncertainty a calibrated route keeps however well it fits: a measured point
# repeats within a few per cent; a vendor's claim is its best case.
MEASURED_FLOOR = 0.05
VENDOR_CLAIM_FLOOR = 0.10
# Reference operating points the range driver is judged at (batch 1 and a busy batch).
_REF_TOKENS = (1000.0, 256.0)
_REF_CONCURRENCY = (1.0, 64.0)


@dataclass(frozen=True)
class EfficiencyBounds:
    """Pessimistic, central and optimistic efficiency for one route; unpacks as (low, central, high).

    low is the slower end. `driver` names the assumption that moves the figures
    most (one line for reasons and exports); `basis` says where the range came from.
    """

    low: Efficiency
    central: Efficiency
    high: Efficiency
    driver: str
    basis: str

    def __iter__(self):
        return iter((self.low, self.central, self.high))


def _ref_throughput(stack, gpu, gpus, eff) -> np.ndarray:
    n_in, n_out = _REF_TOKENS
    cap = float(physics.max_concurrency(stack, gpu, gpus, n_in + n_out, eff))
    b = np.array([min(c, max(cap, 1.0)) for c in _REF_CONCURRENCY])
    return physics.estimate(stack, gpu, gpus, b, n_in, n_out, eff)["output_tokens_per_s_total"]


def _effects(stack, gpu, gpus, eff) -> list[tuple[str, float, float]]:
    """(assumption, log throughput lost at its slow end, gained at its fast end), each alone, at the reference points."""
    base = np.log(_ref_throughput(stack, gpu, gpus, eff))
    out = []
    for a in physics.applicable_assumptions(stack, gpus):
        lo = np.log(_ref_throughput(stack, gpu, gpus, physics.shifted(eff, stack, (a,), "slow")))
        hi = np.log(_ref_throughput(stack, gpu, gpus, physics.shifted(eff, stack, (a,), "fast")))
        out.append((a.name, float(np.max(base - lo)), float(np.max(hi - base))))
    return out


def range_driver(stack: ServingStack, gpu: GpuSpec, gpus: int, eff: Efficiency = DEFAULT_EFFICIENCY) -> str:
    """The assumption whose stated range, alone, moves throughput most (at batch 1 and at 64, 1000/256 tokens)."""
    effects = _effects(stack, gpu, gpus, eff)
    return max(effects, key=lambda e: e[1] + e[2])[0] if effects else ""


def _rss_power(effects: list[tuple[str, float, float]], k: int) -> float:
    """Share of the way to move every assumption so the combined shift equals the root-sum-square of their effects.

    Independent uncertainties do not all sit at their worst at once: moving each
    one by the same share s of its log range gives about s x (sum of effects);
    s = sqrt(sum effect^2) / sum effect makes that the root-sum-square.
    """
    d = np.array([abs(float(e[k])) for e in effects])  # k is 1 or 2, a float column
    return float(np.sqrt(np.sum(d**2)) / np.sum(d)) if d.sum() > 0 else 1.0


@lru_cache(maxsize=512)
def _estimated_bounds(stack: ServingStack, gpu: GpuSpec, gpus: int, central: Efficiency) -> EfficiencyBounds:
    """The range of a route without points: every assumption towards its ends, combined root-sum-square."""
    assumptions = physics.applicable_assumptions(stack, gpus)
    effects = _effects(stack, gpu, gpus, central)
    return EfficiencyBounds(
        low=physics.shifted(central, stack, assumptions, "slow", _rss_power(effects, 1)),
        central=central,
        high=physics.shifted(central, stack, assumptions, "fast", _rss_power(effects, 2)),
        driver=max(effects, key=lambda e: e[1] + e[2])[0] if effects else "",
        basis="estimated: the stated range of each assumption, combined as independent (root-sum-square)",
    )


def efficiency_bounds(stack: ServingStack, gpu: GpuSpec, gpus: int, benchmarks: Iterable[Benchmark] = ()) -> EfficiencyBounds:
    """(low, central, high) Efficiency for a route.

    - No measured or vendor-claim points: every assumption that applies to the
      stack moved towards its stated slow / fast end (physics.ASSUMPTIONS; the
      reasons are in docs/performance-model.md), each by the same share of its
      range, so that together they move throughput by the root-sum-square of
      their separate effects (independent uncertainties are not all at their
      worst at once).
    - Calibrated route: the fitted efficiency, every speed factor scaled down / up
      together by the fit's worst error at its own points, but never less than
      5 % (measured) or 10 % (vendor claim only); the driver is then the fit's
      residual error.
    """
    cal = calibrate(stack, gpu, gpus, benchmarks)
    central = cal.efficiency.for_stack(stack)
    if cal.fit is None:
        return _estimated_bounds(stack, gpu, gpus, central)
    fit = cal.fit
    floor = MEASURED_FLOOR if fit.n_measured else VENDOR_CLAIM_FLOOR
    u = float(min(max(fit.max_abs_error, floor), 0.5))
    return EfficiencyBounds(
        low=physics.scaled_speed(central, stack, 1.0 - u),
        central=central,
        high=physics.scaled_speed(central, stack, 1.0 / (1.0 - u)),
        driver=f"calibration error at {fit.basis} (±{u:.0%})",
        basis=f"calibrated to {fit.basis}",
    )


# -- curves ----------------------------------------------------------------------------


def _check_inputs(stack, gpu, gpus, concurrency, input_tokens, output_tokens) -> np.ndarray:
    c = np.atleast_1d(np.asarray(concurrency, dtype=float))
    if c.size == 0:
        raise InputError("give at least one concurrency")
    bad = c[~np.isfinite(c) | (c <= 0)]
    if bad.size:
        raise InputError(f"concurrency must be a positive number of requests in flight; got {bad[0]:g}")
    if not np.isfinite(input_tokens) or input_tokens < 0:
        raise InputError(f"input tokens must be 0 or more; got {input_tokens:g}")
    if not np.isfinite(output_tokens) or output_tokens < 1:
        raise InputError(f"output tokens must be at least 1; got {output_tokens:g}")
    if int(gpus) != gpus or gpus < 1:
        raise InputError(f"GPUs per replica must be a whole number of at least 1; got {gpus}")
    check_fits(stack, gpu, int(gpus), input_tokens + output_tokens)
    return c


def check_fits(stack: ServingStack, gpu: GpuSpec, gpus: int, context_tokens: float = 0.0) -> None:
    """Raise InputError naming the sizes when the weights plus one sequence do not fit in g GPUs."""
    if physics.max_concurrency(stack, gpu, gpus, context_tokens) >= 1:
        return
    eff = DEFAULT_EFFICIENCY
    usable = gpus * gpu.hbm_gb * eff.memory_headroom
    weights = physics.resident_weight_bytes(stack) / 1e9
    smallest = physics.min_gpus_to_fit(stack, gpu, max(context_tokens, 1.0), max_gpus=64)
    hint = f"; the smallest power-of-two count that fits is {smallest}" if smallest else f"; it does not fit on up to 64 x {gpu.name}"
    kv = f" plus KV cache for one {context_tokens:g}-token sequence" if context_tokens >= 1 else ""
    raise InputError(
        f"{stack.stack_id} does not fit on {gpus} x {gpu.name}: it needs weights of {weights:.1f} GB{kv}, "
        f"but only {usable:.1f} GB is usable "
        f"({eff.memory_headroom:.0%} of {gpus} x {gpu.hbm_gb:g} GB){hint} (--gpus-per-replica)"
    )


def performance_curve(
    stack: ServingStack,
    gpu: GpuSpec,
    gpus: int,
    concurrency,
    input_tokens: float,
    output_tokens: float,
    benchmarks: Iterable[Benchmark] = (),
    *,
    include_measured: bool = True,
) -> pd.DataFrame:
    """Latency and throughput per concurrency for one route, each row with its provenance.

    Rows at a concurrency where a measured (or vendor-claimed) point exists for
    token lengths within 25 % carry that point's provenance and reproduce its
    figures; other rows are the calibrated roofline times the interpolated
    correction and say "estimated (calibrated to N ... points)", or plain
    "estimated" when the route has no points. With include_measured, the
    concurrencies of such points are added to the grid. The Calibration is in
    `df.attrs["calibration"]`.
    """
    c = _check_inputs(stack, gpu, gpus, concurrency, float(input_tokens), float(output_tokens))
    gpus = int(gpus)
    cal = calibrate(stack, gpu, gpus, benchmarks)
    near = [
        a for a in cal.anchors if bool(_close(input_tokens, a.input_tokens)) and bool(_close(output_tokens, a.output_tokens))
    ]
    grid = set(c.tolist())
    if include_measured:
        grid |= {a.concurrency for a in near}
    b = np.array(sorted(grid), dtype=float)
    est = physics.estimate(stack, gpu, gpus, b, float(input_tokens), float(output_tokens), cal.efficiency)
    corr = measured_corrections(cal, b, float(input_tokens), float(output_tokens))
    df = pd.DataFrame({"concurrency": b})
    for col in CORRECTED:
        df[col] = est[col] * corr[col]
    df["arithmetic_intensity"] = est["arithmetic_intensity"]
    df["memory_bound"] = est["memory_bound"]
    df["fits"] = est["fits"]

    eff = cal.efficiency
    # The prefill share in use (BF16 tensor cores reach 1.3 x prefill_compute: physics.prefill_share).
    share = physics.gemm_prefill_share(stack, gpu, eff)
    model = (
        f"roofline, calibrated (HBM {eff.mem:.2f}, compute {eff.compute:.2f}, prefill {share:.2f}, "
        f"overhead {eff.step_overhead_ms:.2f} ms)"
        if cal.fit
        else f"roofline, default efficiency (HBM {eff.mem:.2f}, compute {eff.compute:.2f})"
    )
    if (fp8 := physics.weight_stream_share(stack, eff.for_stack(stack))) != 1.0:
        model += f"; FP8 weights stream at {fp8:.2f} of the HBM share ({Engine(stack.engine).value}'s FP8 kernels)"
    if near:
        span = ", ".join(f"{a.concurrency:g}" for a in sorted(near, key=lambda a: a.concurrency))
        model += f" x correction through the points at concurrency {span}"
    prov, fields, source = [], [], []
    for x in b:
        here = [a for a in near if math.isclose(a.concurrency, x, rel_tol=1e-9)]
        meas = [a for a in here if a.provenance == Provenance.MEASURED.value]
        here = meas or here
        if here:
            prov.append(here[0].provenance)
            fields.append(", ".join(dict.fromkeys(f for a in here for f in a.measured_fields)))
            scaled = any(
                not (math.isclose(a.input_tokens, input_tokens) and math.isclose(a.output_tokens, output_tokens)) for a in here
            )
            src = "; ".join(dict.fromkeys(a.source for a in here))
            if scaled:
                lengths = ", ".join(dict.fromkeys(f"{a.input_tokens:g}/{a.output_tokens:g}" for a in here))
                src += f" (measured at {lengths} tokens in/out, scaled by the model to {input_tokens:g}/{output_tokens:g})"
            source.append(src)
        else:
            prov.append(cal.estimated_label)
            fields.append("")
            source.append(model)
    df["provenance"] = prov
    df["measured_fields"] = fields
    df["source"] = source
    df.attrs["calibration"] = cal
    return df[list(CURVE_COLUMNS)]


# -- known error -----------------------------------------------------------------------


# Held-out errors: each route's points are split into at most this many folds, and each fold
# is predicted by a fit to the others: leave-one-out for small routes, and linear in the
# number of points for large ones (leave-one-out refits n times on n - 1 points: quadratic).
HOLDOUT_FOLDS = 5

REGIMES = ("batch-1", "mid concurrency", "high concurrency", "speculative", "MoE", "diffusion")
# At or above this many requests in flight a point counts as high concurrency.
HIGH_CONCURRENCY = 32


def regime(stack: ServingStack, concurrency: float) -> str:
    """Which part of the model a point tests: diffusion, speculative, MoE, else batch-1 / mid / high concurrency."""
    if stack.architecture is Architecture.DIFFUSION:
        return "diffusion"
    if stack.architecture is Architecture.SPECULATIVE:
        return "speculative"
    if stack.n_experts:
        return "MoE"
    if concurrency <= 1.5:
        return "batch-1"
    return "high concurrency" if concurrency >= HIGH_CONCURRENCY else "mid concurrency"


def error_report(stacks: Iterable[ServingStack], gpus: Iterable[GpuSpec], benchmarks: Iterable[Benchmark]) -> pd.DataFrame:
    """The model's error at every measured / vendor-claimed figure, route by route.

    Three errors per figure, each (model - measured) / measured:
    - default_error: the roofline with default efficiency (what a route without
      any measurement gets);
    - fit_error: the roofline calibrated to all of its route's points (in-sample);
    - holdout_error: calibrated to the route's other points only, then asked to
      predict this one: leave-one-out up to HOLDOUT_FOLDS points, K-fold beyond
      (NaN when the route has a single point).
    Each figure also carries its `regime`. Points whose stack or GPU is unknown are
    skipped. Cost: at most 1 + HOLDOUT_FOLDS fits per route, each linear in its points.
    """
    by_stack = {s.stack_id: s for s in stacks}
    by_gpu = {g.name.lower(): g for g in gpus}
    groups: dict[tuple, list[Benchmark]] = {}
    for b in benchmarks:
        if b.provenance is not Provenance.ESTIMATED:
            groups.setdefault((b.stack_id, b.gpu.lower(), b.gpus_per_replica), []).append(b)
    frames = []
    for (sid, gname, g), used in sorted(groups.items(), key=lambda kv: kv[0]):
        stack, gpu = by_stack.get(sid), by_gpu.get(gname)
        if stack is None or gpu is None:
            continue
        df = _fit_cached(stack, gpu, g, tuple(used), ()).frame()
        holdout = np.full(len(df), np.nan)
        obs = [_observations([p]) for p in used]
        starts = np.concatenate([[0], np.cumsum([len(o) for o in obs])]).astype(int)
        k = min(len(used), HOLDOUT_FOLDS)
        if k > 1:
            fold = np.arange(len(used)) % k
            for f in range(k):
                rest = tuple(p for p, q in zip(used, fold, strict=True) if q != f)
                eff = _fit_cached(stack, gpu, g, rest, ()).efficiency
                idx = np.flatnonzero(fold == f)
                est = _predict(stack, gpu, g, np.array([used[i].concurrency for i in idx], dtype=float),
                               np.array([used[i].input_tokens for i in idx], dtype=float),
                               np.array([used[i].output_tokens for i in idx], dtype=float), eff)
                for j, i in enumerate(idx):
                    for m, (_, _, key, v) in enumerate(obs[i]):
                        holdout[starts[i] + m] = float(np.asarray(est[key]).reshape(-1)[j]) / v - 1.0
        df.insert(0, "gpus_per_replica", g)
        df.insert(0, "gpu", gpu.name)
        df.insert(0, "stack_id", sid)
        df["holdout_error"] = holdout
        df["regime"] = [regime(stack, c) for c in df["concurrency"]]
        frames.append(df)
    cols = ["stack_id", "gpu", "gpus_per_replica", "concurrency", "input_tokens", "output_tokens", "metric",
            "measured", "default", "default_error", "fitted", "fit_error", "holdout_error", "provenance", "source",
            "regime"]
    if not frames:
        return pd.DataFrame(columns=cols)
    return pd.concat(frames, ignore_index=True)[cols]


def error_by_regime(report: pd.DataFrame) -> pd.DataFrame:
    """Median and worst |error| per regime: default physics, calibrated (in sample) and held out.

    `default_bias` is the geometric mean of default model / measured: above 1 the
    uncalibrated model is optimistic in that regime.
    """
    rows = []
    for name in REGIMES:
        part = report[report["regime"] == name]
        if part.empty:
            continue
        row = {"regime": name, "figures": len(part)}
        for col, label in (("default_error", "default"), ("fit_error", "calibrated"), ("holdout_error", "held_out")):
            v = part[col].astype(float).abs().dropna()
            row[f"{label}_median"] = float(v.median()) if len(v) else np.nan
            row[f"{label}_worst"] = float(v.max()) if len(v) else np.nan
        row["default_bias"] = float(np.exp(np.log1p(part["default_error"].astype(float)).mean()))
        rows.append(row)
    return pd.DataFrame(rows)
