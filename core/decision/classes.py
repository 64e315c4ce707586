"""Workload classes: workloads the plan cannot tell apart but by their traffic are searched as one row.

Two workloads are in one class when every input of the plan search is the same
for both once their traffic is set aside: interactive or offline, allowed plan
columns, target, token lengths and their spread, hourly traffic shape,
escalation shares and fallback, and the per-request API spend and GPU-hours of
every route. Such workloads are served alike by any plan that serves them
well: a pooled deployment sizes two of them with half the traffic each exactly
as one with all of it, and every linear cost is a sum. So the search runs on one
row per class with the members' summed traffic and costs, and the plan it finds
is priced again, exactly, on the workloads themselves (plan.Planner.optimise).

This is what makes the plan independent of how an inventory is cut up: a
workload split into k parts of the same shape is one class with the unsplit
workload's inputs, so it gets the same plan whatever the inventory's size
(before, a 300-workload inventory split in two crossed the search's size
thresholds and came out 5 % dearer). The search's effort follows the number of
distinct workloads, not the number of rows.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from core.decision.plan import PlanInputs

_MANTISSA_BITS = 30  # per-request figures compared to ~9 significant digits (division leaves last-bit noise)
_FNV_PRIME = np.uint64(0x100000001B3)


def _sig(x: np.ndarray) -> np.ndarray:
    """x with its mantissa rounded to _MANTISSA_BITS bits (NaN and inf kept)."""
    m, e = np.frexp(x)
    with np.errstate(invalid="ignore"):
        out = np.ldexp(np.round(m * (1 << _MANTISSA_BITS)), e - _MANTISSA_BITS)
    return np.where(np.isfinite(x), out, x)


def _blocks(inp: PlanInputs):
    """The per-row features that must be equal within a class, one (W, k) float64 block at a time."""
    lam = np.asarray(inp.lam_mean, dtype=float)
    # Per request (a rate of 0: the totals themselves, which are 0 too where they scale with traffic).
    scale = np.where(lam > 0, lam, 1.0)[:, None]
    one_d = [inp.interactive, inp.fallback_route, inp.slo_ms, inp.input_tokens, inp.output_tokens,
             inp.output_p95_tokens, inp.fallback_extra_ms, lam > 0]
    yield np.column_stack([np.asarray(c, dtype=float) for c in one_d if c is not None])
    yield np.asarray(inp.profile, dtype=float)
    yield inp.allowed.astype(float)
    yield np.asarray(inp.fallback_share_r, dtype=float)
    yield _sig(np.asarray(inp.api_monthly_r, dtype=float) / scale)
    yield _sig(np.asarray(inp.gpu_hours_day_r, dtype=float) / scale)
    yield _sig(np.asarray(inp.fallback_api_monthly, dtype=float)[:, None] / scale)


def _clean(block: np.ndarray) -> np.ndarray:
    """NaN never equals NaN: map it (and -0.0) to fixed bit patterns before hashing and comparing."""
    return np.where(np.isnan(block), -1.5e300, block) + 0.0


def row_hashes(inp: PlanInputs) -> np.ndarray:
    """(W,) uint64: each workload's class features hashed (FNV-1a over the float bits); equal rows, equal hashes,
    wherever they sit in the inventory."""
    h = np.full(len(inp.workload_ids), 0xCBF29CE484222325, dtype=np.uint64)
    for block in _blocks(inp):
        bits = np.ascontiguousarray(_clean(block)).view(np.uint64)
        for j in range(bits.shape[1]):
            h = (h ^ bits[:, j]) * _FNV_PRIME  # uint64 arithmetic wraps, as the hash wants
    return h


def scale_classes(inp: PlanInputs) -> tuple[np.ndarray, np.ndarray] | None:
    """(class of each workload, first workload of each class), or None when every workload is its own class.

    Rows are hashed feature by feature (FNV-1a over the float bits) and every member is then compared with its
    class's first row, so a hash collision can only split a class, never merge two that differ.
    """
    W = len(inp.workload_ids)
    if W < 2:
        return None
    # Cheap first look: workloads with distinct target, lengths or traffic shape cannot share a class.
    quick = _clean(np.column_stack([np.asarray(inp.slo_ms, dtype=float), np.asarray(inp.output_tokens, dtype=float)
                                    if inp.output_tokens is not None else np.zeros(W),
                                    np.asarray(inp.input_tokens, dtype=float) if inp.input_tokens is not None
                                    else np.zeros(W), np.asarray(inp.profile, dtype=float).max(axis=1)]))
    if np.unique(quick.view(np.dtype((np.void, quick.dtype.itemsize * quick.shape[1]))).ravel()).size == W:
        return None
    _, first, cls = np.unique(row_hashes(inp), return_index=True, return_inverse=True)
    cls = cls.reshape(-1)
    ok = np.ones(W, dtype=bool)
    for block in _blocks(inp):
        b = _clean(block)
        ok &= (b == b[first[cls]]).all(axis=1)
    if not ok.all():
        # A collision: the rows that differ from their class's first row are grouped again by comparing
        # their features whole (few rows; a real 64-bit collision is a ~1e-10 event at 100k workloads).
        bad = np.flatnonzero(~ok)
        feats = np.column_stack([_clean(block[bad]) for block in _blocks(inp)])
        _, again_first, again = np.unique(feats, axis=0, return_index=True, return_inverse=True)
        cls[bad] = first.size + again.reshape(-1)
        first = np.r_[first, bad[again_first]]
    if first.size == W:
        return None
    # Classes numbered by their first member, so the class rows keep the inventory's order.
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[cls], first[order]


def class_inputs(inp: PlanInputs, cls: np.ndarray, first: np.ndarray) -> PlanInputs:
    """The plan inputs of the classes: the first member's shape, the members' summed traffic and costs.

    Sums are exact (API spend, GPU-hours a day, traffic, the busy-hours profile weighted by traffic); the
    offline work's GPUs needed at once is the members' largest, as a deployment holding them all takes it.
    """
    K = first.size
    order = np.argsort(cls, kind="stable")
    starts = np.r_[0, np.flatnonzero(np.diff(cls[order])) + 1]

    def total(x):
        x = np.asarray(x, dtype=float)
        return np.add.reduceat(x[order], starts, axis=0) if x.size else x[:K]

    def largest(x):
        x = np.asarray(x, dtype=float)
        return np.maximum.reduceat(x[order], starts, axis=0) if x.size else x[:K]

    lam_mean = total(inp.lam_mean)
    weighted = total(np.asarray(inp.lam_mean, dtype=float)[:, None] * inp.profile)
    with np.errstate(invalid="ignore", divide="ignore"):
        profile = np.where(lam_mean[:, None] > 0, weighted / lam_mean[:, None], inp.profile[first])
    sliced: dict[int, np.ndarray] = {}  # tiers of one stack share one service array: slice it once

    def rows_of(a):
        if a is None:
            return None
        if id(a) not in sliced:
            sliced[id(a)] = a[first]
        return sliced[id(a)]

    owned = tuple(replace(o, service_s=rows_of(o.service_s), prefill_ms=rows_of(o.prefill_ms)) for o in inp.owned)
    C = inp.allowed.shape[1]
    return replace(
        inp, workload_ids=inp.workload_ids[first], interactive=inp.interactive[first],
        lam_peak=total(inp.lam_peak), lam_mean=lam_mean, profile=profile, slo_ms=inp.slo_ms[first],
        allowed=inp.allowed[first], api_monthly_r=total(inp.api_monthly_r), gpu_hours_day_r=total(inp.gpu_hours_day_r),
        offline_min_gpus_r=largest(inp.offline_min_gpus_r),
        offline_gpus_per_replica=np.broadcast_to(np.asarray(inp.offline_gpus_per_replica)[:1], (K, C)),
        fallback_share_r=inp.fallback_share_r[first], fallback_route=inp.fallback_route[first],
        fallback_api_monthly=total(inp.fallback_api_monthly), latency_ms_r=inp.latency_ms_r[first], owned=owned,
        input_tokens=rows_of(inp.input_tokens), output_tokens=rows_of(inp.output_tokens),
        output_p95_tokens=rows_of(inp.output_p95_tokens), fallback_extra_ms=rows_of(inp.fallback_extra_ms),
        output_q_ratio=None if inp.output_q_ratio is None else {k: v[first] for k, v in inp.output_q_ratio.items()})
