"""The exact tier, part 1: pooled deployments and their requests-in-system chain (batch, service, wait).

The second of the latency model's two tiers (core.decision.latency): the members of a pooled deployment
share its replicas, so their wait depends on everyone's traffic. `PooledDeployments` holds many deployment
configurations as flat arrays; `pooled_state` solves each one's birth–death chain of requests in system and
gives the batch a request joins, its per-token time and the wait's distribution. core.decision.latency.exact
turns that into each member's percentile of time in system and the fewest replicas meeting every target.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
from scipy import special

from core.decision import queueing
from core.decision.latency.service import (
    SLO_TAIL,
    Z95,
    ServiceTime,
    effective_tokens_moments,
    output_lognormal,
)
from core.decision.settings import DEFAULT as SETTINGS  # the numerics below (SearchSettings' help)

# Points of the requests-in-system chain per configuration: exact (one per state) up to this many slots,
# a grid of this many points above (its log density is smooth there, and sums become integrals).
_CHAIN_POINTS = SETTINGS.chain_points


# build's per-row arrays and their ranges (a bound of the smallest positive float: > 0; NaN is out of range
# everywhere but output_p95_tokens, where it means the default spread).
_ROW_ARRAYS = ("arrival_rate_per_s", "prefill_ms", "output_mean_tokens", "output_p95_tokens", "slo_ms",
               "escalated_share", "escalated_extra_ms")
_TINY = float(np.nextafter(0.0, 1.0))
_ROW_LO = np.array([0.0, 0.0, _TINY, _TINY, _TINY, 0.0, 0.0])[:, None]
_ROW_HI = np.array([np.inf, np.inf, np.inf, np.inf, np.inf, 1.0, np.inf])[:, None]
_P95 = _ROW_ARRAYS.index("output_p95_tokens")


@dataclass(frozen=True, eq=False)
class PooledDeployments:
    """R deployment configurations and the I workload rows that share them (row[i] in 0..R-1).

    Per configuration: `step_ms[r, b - 1]` is one decode step at running batch b
    for b = 1..B (entries past the cap are ignored), `concurrency_cap[r]` slots per
    replica, `steps_per_token[r]` decode steps per output token (1 for AR; 1 / tokens
    committed per step for speculative or diffusion serving), `block_tokens[r]` tokens
    per block of block-wise decoding (diffusion: L, each block taking L x steps_per_token
    steps; 1: no rounding). Per workload row: peak
    arrival rate, prefill ms on this deployment, output-length mean and p95 (NaN: the
    default spread), latency target, the share escalated to a fallback and the latency
    that adds; and the tail (share of requests allowed over the target) every target is held at. Build it with `PooledDeployments.build(...)`, which checks the arrays.
    """

    row: np.ndarray
    arrival_rate_per_s: np.ndarray
    prefill_ms: np.ndarray
    output_mean_tokens: np.ndarray
    output_p95_tokens: np.ndarray
    slo_ms: np.ndarray
    escalated_share: np.ndarray
    escalated_extra_ms: np.ndarray
    step_ms: np.ndarray
    concurrency_cap: np.ndarray
    steps_per_token: np.ndarray
    block_tokens: np.ndarray | None = None  # (R,); None: 1 (set by build)
    # The share of requests allowed over their target: 1 - the percentile the targets refer to (the
    # scenario's sla_percentile; 0.05 for a 95th percentile). The exact tier's misses and percentiles read it.
    tail: float = SLO_TAIL
    # Derived once: output-length lognormal per workload row, its effective length's moments
    # (whole blocks), and per-configuration sums of the traffic's moments (everything the
    # pooled queue needs from the workloads).
    output_mu: np.ndarray = field(init=False, repr=False)
    output_sigma: np.ndarray = field(init=False, repr=False)
    row_block_tokens: np.ndarray = field(init=False, repr=False)
    effective_mean_tokens: np.ndarray = field(init=False, repr=False)
    effective_second_moment: np.ndarray = field(init=False, repr=False)
    moments: _Moments = field(init=False, repr=False)
    # (mu, sigma, E N_eff, E N_eff^2) per row, computed before (build's row_moments); not kept.
    preset: tuple | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.block_tokens is None:
            object.__setattr__(self, "block_tokens", np.ones(self.step_ms.shape[0]))
        L = self.block_tokens[self.row]
        object.__setattr__(self, "row_block_tokens", L)
        if self.preset is not None:
            mu, sigma, m1, m2 = self.preset
            object.__setattr__(self, "preset", None)
        else:
            mu, sigma = output_lognormal(self.output_mean_tokens, self.output_p95_tokens)
            m1, m2 = effective_tokens_moments(mu, sigma, L)
        object.__setattr__(self, "output_mu", mu)
        object.__setattr__(self, "output_sigma", sigma)
        object.__setattr__(self, "effective_mean_tokens", m1)
        object.__setattr__(self, "effective_second_moment", m2)
        object.__setattr__(self, "moments", _Moments.of(self))

    @classmethod
    def build(cls, *, row, arrival_rate_per_s, prefill_ms, output_mean_tokens, slo_ms, step_ms, concurrency_cap,
              output_p95_tokens=None, escalated_share=0.0, escalated_extra_ms=0.0,
              steps_per_token=1.0, block_tokens=1.0, row_moments=None, tail=SLO_TAIL) -> PooledDeployments:
        """Broadcast and check the arrays; a bad one raises ValueError naming it.

        row_moments: (mu, sigma, E N_eff, E N_eff^2) per row as output_lognormal and effective_tokens_moments
        give them for these rows' lengths and block size, when the caller holds them already (the fleet plan
        sizes the same members thousands of times)."""
        row = np.asarray(row, dtype=np.int64).ravel()
        n = row.size
        step = np.atleast_2d(np.asarray(step_ms, dtype=float))
        r_count = step.shape[0]
        cap = _per(concurrency_cap, r_count, np.int64)
        spt = _per(steps_per_token, r_count, float)
        blk = _per(block_tokens, r_count, float)

        # The seven per-row arrays as the rows of one block (one allocation; a value for all broadcast by the
        # assignment), checked in three comparisons over the block: ~35 small numpy calls per build were a
        # sizing's largest fixed cost (thousands of sizings per plan).
        given = (arrival_rate_per_s, prefill_ms, output_mean_tokens, output_p95_tokens, slo_ms, escalated_share,
                 escalated_extra_ms)
        block = np.empty((len(_ROW_ARRAYS), n))
        for k, (name, x) in enumerate(zip(_ROW_ARRAYS, given, strict=True)):
            arr = np.asarray(np.nan if x is None else x, dtype=float)
            try:
                block[k] = arr
            except ValueError:
                raise ValueError(f"PooledDeployments: {name} has shape {arr.shape}, "
                                 f"not one value per workload row ({n})") from None
        in_range = (block >= _ROW_LO) & (block <= _ROW_HI)
        in_range[_P95] = ~(block[_P95] <= 0)  # NaN: the default spread
        arrays = dict(zip(_ROW_ARRAYS, block, strict=True))
        used = np.arange(step.shape[1])[None, :] < cap[:, None]
        checks = {
            "row": bool(((row >= 0) & (row < r_count)).all()),
            "concurrency_cap": bool(((cap >= 1) & (cap <= step.shape[1])).all()),
            "step_ms": bool((np.isfinite(step) & (step > 0))[used].all()),
            "steps_per_token": bool((spt > 0).all()),
            "block_tokens": bool(((blk >= 1) & (blk == np.round(blk))).all()),
            "tail": bool(0.0 < tail < 0.5),
        }
        if not in_range.all():
            checks.update({name: bool(ok.all()) for name, ok in zip(_ROW_ARRAYS, in_range, strict=True)})
        bad = [k for k, ok in checks.items() if not ok]
        if bad:
            raise ValueError(f"PooledDeployments: out-of-range or non-finite values in {', '.join(bad)}")
        return cls(row=row, step_ms=np.where(used, step, np.nan), concurrency_cap=cap, steps_per_token=spt,
                   block_tokens=blk, preset=row_moments, tail=float(tail), **arrays)

    def _shallow(self) -> PooledDeployments:
        """A shallow copy whose fields the caller replaces (copy.copy's value, in a quarter of its time: a sizing
        makes one or two)."""
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        return out

    @property
    def rows(self) -> int:
        """Number of deployment configurations R."""
        return self.step_ms.shape[0]

    @classmethod
    def concat(cls, parts: list[PooledDeployments]) -> PooledDeployments:
        """Several deployments' configurations as one (configurations in order, rows renumbered), each keeping its
        own traffic sums: min_replicas and pooled_state treat configurations independently, so the fleet plan
        sizes many deployments in one call (numpy's per-call overhead is most of a small sizing's time)."""
        if len(parts) == 1:
            return parts[0]
        if len({p.tail for p in parts}) > 1:
            raise ValueError("PooledDeployments.concat: the parts hold their targets at different tails")
        width = max(p.step_ms.shape[1] for p in parts)
        offsets = np.cumsum([0] + [p.rows for p in parts])[:-1]

        def cat(name):
            return np.concatenate([getattr(p, name) for p in parts])

        out = parts[0]._shallow()
        # Entries past a configuration's cap are NaN (build) and never read. One NaN block filled part by
        # part: np.pad per part was ~20 us each, most of a batch's concatenation.
        step = np.full((int(offsets[-1]) + parts[-1].rows, width), np.nan)
        for p, o in zip(parts, offsets, strict=True):
            step[o:o + p.rows, :p.step_ms.shape[1]] = p.step_ms
        arrays: dict[str, Any] = {
            "row": np.concatenate([p.row + o for p, o in zip(parts, offsets, strict=True)]),
            "step_ms": step,
            "moments": _Moments(*(np.concatenate([getattr(p.moments, f) for p in parts])
                                  for f in ("lam", "pre", "pre2", "n", "pre_n", "n2"))),
        }
        for name in ("arrival_rate_per_s", "prefill_ms", "output_mean_tokens", "output_p95_tokens", "slo_ms",
                     "escalated_share", "escalated_extra_ms", "concurrency_cap", "steps_per_token", "block_tokens",
                     "output_mu", "output_sigma", "row_block_tokens", "effective_mean_tokens",
                     "effective_second_moment"):
            arrays[name] = cat(name)
        for name, value in arrays.items():
            object.__setattr__(out, name, value)
        return out

    def at_caps(self, rows: np.ndarray, caps: np.ndarray) -> PooledDeployments:
        """This one configuration (a deployment's whole load, its step curve up to the largest cap) at each of
        `caps`, checking workload rows `rows` only: what build(...).with_load_of(self) gives for those rows,
        taken from this one's arrays instead of deriving the lognormals and block moments again (a sizing
        builds both, thousands of times per plan)."""
        if self.rows != 1:
            raise ValueError("at_caps: the load must be one configuration")
        return self.at_caps_many([(0, np.asarray(rows), caps)])

    def at_caps_many(self, picks) -> PooledDeployments:
        """Several configurations of this load, each at several caps: for each (configuration k, workload rows of
        k to check, caps) in `picks`, what at_caps gives for a load of configuration k alone, all concatenated
        (concat's order and renumbering): the fleet plan builds the loads of a batch of pools as one."""
        width = self.step_ms.shape[1]
        caps_all = np.concatenate([np.asarray(caps, dtype=np.int64) for _, _, caps in picks])
        if ((caps_all < 1) | (caps_all > width)).any():
            raise ValueError("at_caps: a cap beyond the load's step curve")
        counts = [np.asarray(caps).size for _, _, caps in picks]
        config = np.repeat(np.array([k for k, _, _ in picks], dtype=np.int64), counts)
        out = self._shallow()
        tiled = np.concatenate([np.tile(rows, j) for (_, rows, _), j in zip(picks, counts, strict=True)])
        arrays: dict[str, Any] = {name: getattr(self, name)[tiled] for name in (
            "arrival_rate_per_s", "prefill_ms", "output_mean_tokens", "output_p95_tokens", "slo_ms",
            "escalated_share", "escalated_extra_ms", "output_mu", "output_sigma", "row_block_tokens",
            "effective_mean_tokens", "effective_second_moment")}
        first = np.cumsum([0] + counts)[:-1]
        arrays["row"] = np.concatenate([o + np.arange(j, dtype=np.int64).repeat(np.asarray(rows).size)
                                        for o, j, (_, rows, _) in zip(first, counts, picks, strict=True)])
        # Past a configuration's own cap its step curve is NaN (build): the caps never reach it.
        arrays["step_ms"] = np.where(np.arange(width)[None, :] < caps_all[:, None], self.step_ms[config], np.nan)
        arrays["concurrency_cap"] = caps_all
        arrays["steps_per_token"] = self.steps_per_token[config]
        arrays["block_tokens"] = np.asarray(self.block_tokens)[config]
        m = self.moments
        arrays["moments"] = _Moments(*(getattr(m, f)[config] for f in ("lam", "pre", "pre2", "n", "pre_n", "n2")))
        for name, value in arrays.items():
            object.__setattr__(out, name, value)
        return out

    def with_load_of(self, load: PooledDeployments) -> PooledDeployments:
        """The same configurations and checked rows, queueing under `load`'s traffic (one configuration, tiled).

        The queue reads the traffic only through per-configuration sums (_Moments), so a
        sizing may check a few rows (those that can bind) while every row's traffic loads it.
        """
        if load.rows != 1:
            raise ValueError("with_load_of: the load must be one configuration")
        m = load.moments
        tiled = _Moments(*(np.repeat(getattr(m, f), self.rows) for f in ("lam", "pre", "pre2", "n", "pre_n", "n2")))
        out = self._shallow()
        object.__setattr__(out, "moments", tiled)
        return out


_FMAX = float(np.finfo(float).max)


def _per(x, count: int, dtype) -> np.ndarray:
    """x as `count` values of `dtype` (one given for all, or one each), a fresh array."""
    arr = np.asarray(x, dtype=dtype)
    if arr.ndim == 0:
        return np.full(count, arr)
    return np.broadcast_to(arr, (count,)).copy()


@dataclass(frozen=True, eq=False)
class _Moments:
    """Per configuration: sums over its workloads of lambda x (1, p, p^2, E N_eff, p E N_eff, E N_eff^2) (p = prefill ms)."""

    lam: np.ndarray
    pre: np.ndarray
    pre2: np.ndarray
    n: np.ndarray
    pre_n: np.ndarray
    n2: np.ndarray

    @classmethod
    def of(cls, dep: PooledDeployments) -> _Moments:
        R, r, lam = dep.step_ms.shape[0], dep.row, dep.arrival_rate_per_s
        en, en2 = dep.effective_mean_tokens, dep.effective_second_moment
        p = dep.prefill_ms

        def s(x):
            return np.bincount(r, lam * x, minlength=R)

        return cls(s(np.ones_like(p)), s(p), s(p * p), s(en), s(p * en), s(en2))


def _step_at(step_ms, b):
    """step_ms(b) by linear interpolation between integer batches, and its slope d step / d b.

    b has one value per configuration (R,) or a row of values per configuration (R, G).
    """
    # np.minimum/np.maximum rather than np.clip: this runs thousands of times on a few values per plan,
    # where np.clip's dispatch costs more than the arithmetic. b >= 1, so truncation is the floor.
    top = step_ms.shape[1]
    b = np.minimum(np.maximum(b, 1.0), float(top))
    lo = np.minimum(np.maximum(np.asarray(b).astype(np.int64), 1), top)  # bounded even for a NaN batch
    hi = np.minimum(lo + 1, top)
    idx = np.arange(step_ms.shape[0]).reshape((-1,) + (1,) * (np.ndim(b) - 1))
    s_lo, s_hi = step_ms[idx, lo - 1], step_ms[idx, hi - 1]
    frac = b - lo
    slope = np.where((hi > lo) & np.isfinite(s_hi), s_hi - s_lo, 0.0)
    return s_lo + frac * slope, slope


@dataclass(frozen=True, eq=False)
class PooledState:
    """Deployment configurations at given replica counts: arrays over the R configurations.

    A workload row i on configuration r is served in a + c N_eff ms: a request that
    found a free slot with a = prefill_i + join_ms[r], c = ms_per_token[r] x X, X the
    batch it finds (lognormal, mean 1, cv^2 batch_cv2[r], folded into N's spread);
    one that waited with a = prefill_i + full_join_ms[r], c = waited_ms_per_token[r]
    (the full batch, the cap).
    """

    replicas: np.ndarray
    arrival_rate_per_s: np.ndarray
    batch: np.ndarray  # mean running batch a request that finds a free slot joins (itself included)
    prefill_share: np.ndarray  # phi: share of a replica's time spent on prefill steps
    prefill_stretch: np.ndarray  # 1 / (1 - phi_t): own prefill and decode stretched by others' prefills
    offered_load: np.ndarray  # requests in service on average (Erlangs)
    join_ms: np.ndarray
    ms_per_token: np.ndarray  # mean over the states a request that finds a free slot arrives in
    batch_cv2: np.ndarray  # cv^2 of that per-token time over those states
    # Variance rate of the others' prefills landing on a request's replica while it decodes:
    # lambda_t E[p^2] ms^2 per ms (lambda_t = lambda_r shared: the arrivals its replica takes).
    interference_var_per_ms: np.ndarray
    full_join_ms: np.ndarray  # none: one that waited is admitted at the boundary where its slot frees
    full_ms_per_token: np.ndarray  # while a queue waits (the wait's completions): each one admits a prefill
    waited_ms_per_token: np.ndarray  # a request that waited, over its service: the queue drains meanwhile
    service_mean_ms: np.ndarray  # rate-weighted mean service of requests that find a free slot
    full_service_mean_ms: np.ndarray  # the same at the full batch, where a queue forms
    full_service_cv2: np.ndarray  # cv^2 of the service mixture at the full batch
    drain_cv2: np.ndarray  # cv^2 of the work a request brings to the queue's drain (the wait's scale)
    p_wait: np.ndarray  # C: P(a request waits for a slot)
    wait_rate_per_ms: np.ndarray  # theta: the waiting time of one that waits is Exp(theta)
    stable: np.ndarray

    def take(self, start: int, stop: int) -> PooledState:
        """Configurations start..stop-1 (one deployment's share of a state computed for several)."""
        return PooledState(**{f.name: getattr(self, f.name)[start:stop] for f in fields(self)})

    def service(self, dep: PooledDeployments, idx=None) -> ServiceTime:
        """Service time of workload rows idx (default all) when they find a free slot (the batch's spread folded in)."""
        idx = np.arange(dep.row.size) if idx is None else idx
        r = dep.row[idx]
        # The others' prefills arrive as a compound Poisson stream: over a decode of T ms (its tail
        # length's) they add phi_t T / (1 - phi_t) on average (the stretch in ms_per_token) with
        # variance v T / (1 - phi_t)^3: a cv^2 of v / ((1 - phi_t) T) on its decode time.
        keep = 1.0 / self.prefill_stretch[r]  # 1 - phi_t
        L = dep.row_block_tokens[idx]
        # Its length at the targets' percentile (ndtri(0.95) is Z95 to the last bit).
        z = Z95 if dep.tail == SLO_TAIL else float(special.ndtri(1.0 - dep.tail))
        n95 = np.exp(dep.output_mu[idx] + z * dep.output_sigma[idx])
        n95 = np.where(L > 1, L * np.maximum(np.ceil(n95 / L - 1e-12), 1.0), n95)
        t_ref = self.ms_per_token[r] * keep * n95
        with np.errstate(divide="ignore", invalid="ignore"):
            cv2_int = np.where(t_ref > 0, self.interference_var_per_ms[r] / (keep * t_ref), 0.0)
        # np.nan_to_num(cv2_int, nan=0.0, posinf=0.0)'s values (-inf to the lowest float) without its ~10 calls.
        cv2_int = np.where(np.isnan(cv2_int) | (cv2_int == np.inf), 0.0, np.maximum(cv2_int, -_FMAX))
        s2 = np.log1p(self.batch_cv2[r]) + np.log1p(cv2_int)
        a = dep.prefill_ms[idx] * self.prefill_stretch[r] + self.join_ms[r]
        if not (L > 1).any():  # X N is one lognormal: fold it here, once, rather than in every survival
            return ServiceTime(a, self.ms_per_token[r], dep.output_mu[idx] - s2 / 2.0,
                               np.sqrt(dep.output_sigma[idx] ** 2 + s2), L)
        # A spread of the per-token time (X in ServiceTime), not of the length: whole blocks round N only.
        return ServiceTime(a, self.ms_per_token[r], dep.output_mu[idx], dep.output_sigma[idx], L, np.sqrt(s2))

    def service_full(self, dep: PooledDeployments, idx=None) -> ServiceTime:
        """Service time of workload rows idx (default all) when they waited (full batch)."""
        idx = np.arange(dep.row.size) if idx is None else idx
        r = dep.row[idx]
        return ServiceTime(dep.prefill_ms[idx] + self.full_join_ms[r], self.waited_ms_per_token[r], dep.output_mu[idx],
                           dep.output_sigma[idx], dep.row_block_tokens[idx])


def pooled_state(dep: PooledDeployments, replicas, only: np.ndarray | None = None, chain: bool = True) -> PooledState:
    """Requests in system, batch, service and wait distribution of every configuration with `replicas` replicas:
    pooled_state_py's figures (its docstring derives them), from the compiled loop (core.decision.latency.chainloop).

    only: a (R,) mask of the configurations a caller reads (the others NaN; each configuration's figures are
    its own, so those solved are the same as when all are). chain=False: the closed forms at the cap only
    (full_service_mean_ms and the wait's rate; the fields that read the chain NaN), without solving it."""
    from core.decision.latency.chainloop import (  # numba: imported when first solved
        OUTPUTS,
        chain_kernel,
    )

    m = dep.moments
    n = np.asarray(replicas, dtype=float)
    # A fresh float array of one count per configuration (broadcast_to only where one count is given for all).
    n = n.astype(float) if n.shape == (dep.rows,) else np.broadcast_to(n, (dep.rows,)).astype(float)

    def f64(x):  # one compiled signature: bincount of no rows gives int64, a slice is not contiguous
        a = np.ascontiguousarray(x, dtype=np.float64)
        return a if a.flags.writeable else a.copy()  # numba types a read-only array apart (another compile)

    out = chain_kernel(f64(n), f64(m.lam), f64(m.pre), f64(m.pre2), f64(m.n), f64(m.pre_n), f64(m.n2),
                       np.ascontiguousarray(dep.concurrency_cap, dtype=np.int64), f64(dep.steps_per_token),
                       f64(dep.step_ms), float(_CHAIN_POINTS),
                       np.ones(dep.rows, dtype=np.bool_) if only is None else np.ascontiguousarray(only, dtype=np.bool_),
                       bool(chain))
    got = dict(zip(OUTPUTS, out, strict=True))
    got["stable"] = got["stable"] > 0.5
    return PooledState(**got)


def pooled_state_py(dep: PooledDeployments, replicas) -> PooledState:
    """Requests in system, batch, service and wait distribution of every configuration with `replicas` replicas
    (the reference pooled_state's compiled loop follows).

    The birth–death chain (module docstring) over k requests in system on n replicas x
    cap slots: pi(k) / pi(k - 1) = lambda tau(b_k) / k + lambda E[p] / min(k, n), b_k =
    k / n the replicas' batch (shortest-queue routing keeps them within one of it),
    tau(b) = steps per token x step_ms(b) x E[N_eff] + step_ms(b) / 2 the decode time
    at that batch plus the wait for a step boundary. Above n cap the ratio stays at
    r_q = lambda tau(cap) / (n cap) + lambda E[p] / n (a geometric queue; stable while
    r_q < 1). It has no free parameter: with no prefill and exponential service it is
    the M/M/c chain with batch-dependent speed (exact), with prefills it puts their time
    where it is spent, in the busy states.

    By PASTA an arrival sees the chain's distribution: C = P(k >= n cap) waits, any
    other joins the least-loaded replica at batch floor(k / n) + 1, where a token takes
    c_k = steps per token x step_ms(b) / (1 - phi), phi = lambda E[p] / n (the others'
    prefills interleave), after a join wait for the step in progress (none on an idle
    replica). One that waited is served at the cap, where each completion admits the
    next request, so the prefill share there is f_q = phi / r_q, of which the other
    cap - 1 slots' prefills stall it; it is admitted where its slot frees (no join wait).

    The wait of one that waits is Exp(theta), theta = D_eff (1 - r_q) / k: D_eff the
    completions per ms with every slot busy, k = queueing.wait_scale (Kimura 1994) read
    from the cv^2 of the drain, not of a slot's service. In heavy traffic the mean wait
    of M/G/c is (1 + cv^2) / 2 over M/M/c's, cv^2 the variability of the departures
    while every server is busy (Köllerström 1974; Iglehart & Whitt 1970, "Multiple
    channel queues in heavy traffic", Adv. Appl. Prob. 2): there the n cap slots'
    decodes complete as c superposed renewal streams (per departure, variance Var d / c^2
    on a mean E d / c), and each admission's prefill stalls its replica's cap slots
    together (p / n of the pool's time). So a departure costs w / (n cap), w = cap p + d,
    and k reads cv^2(w) over the traffic's members (each member's p with its own N_eff:
    E w^2 from the sums of lambda p^2, p N_eff and N_eff^2). No constant is fitted. No
    prefill: cv^2(w) = cv^2(N_eff), the service's, as before; exponential service
    without prefills gives k = 1 (M/M/c, exact); one slot (n = cap = 1): w = p + d is the
    service, k = (1 + cv^2) / 2 (Pollaczek–Khinchine, exact). The service's cv^2
    (full_service_cv2, read before) counts the others' prefills as spread of a slot's
    own service: on 1 x 4 slots with 25-50 ms prefills and output cv 1.5 the mean wait
    was 1.5-1.8 x the simulated (now 1.15-1.2 x), on generated seed 14's 14-member pool
    1.22 x (now 1.03 x) (bench/bench_wait_scale.py, tests/test_simulate.py).

    Long (170 lines) on purpose: one pass of array arithmetic in which the chain, the arrivals' view and the
    state at the cap share some twenty intermediate arrays; cut into functions they would travel as a bag of
    arguments, and every line here is one step of the derivation above.
    """
    m = dep.moments
    R = dep.rows
    n = np.broadcast_to(np.asarray(replicas, dtype=float), (R,)).astype(float)
    lam = m.lam
    has = lam > 0
    safe_lam = np.where(has, lam, 1.0)
    pbar, p2 = m.pre / safe_lam, m.pre2 / safe_lam
    lam_ms = lam / 1000.0
    live = n > 0
    safe_n = np.where(live, n, 1.0)
    phi = np.where(live, lam_ms * pbar / safe_n, np.inf)
    cap = dep.concurrency_cap.astype(float)
    servers = safe_n * cap
    spt = dep.steps_per_token
    en = m.n / safe_lam  # mixture E[N_eff]
    # The step in progress when a request is admitted: a decode step (share 1 - phi, mean
    # residual step / 2) or a prefill step (share phi, size-biased residual E[p^2] / 2 E[p]).
    pre_resid = np.divide(p2, 2.0 * pbar, out=np.zeros(R), where=pbar > 0)

    # The chain on a grid: point g stands for the states (k_{g-1}, k_g], k_g = g x delta.
    delta = np.maximum(servers / _CHAIN_POINTS, 1.0)
    # Small deployments need only their own states (most plans: a few replicas x a cap of 4-64).
    points = int(min(_CHAIN_POINTS, np.ceil(np.max(servers, initial=1.0))))
    g = np.arange(points + 1, dtype=float)[None, :]
    k = g * delta[:, None]
    inside = k <= servers[:, None] * (1.0 + 1e-12)
    x = np.maximum(k - (delta[:, None] - 1.0) / 2.0, 1.0)  # the middle state of the points' interval
    b_x = np.minimum(np.maximum(x / safe_n[:, None], 1.0), cap[:, None])
    step_x, _ = _step_at(dep.step_ms, b_x)
    tau_x = (spt * en)[:, None] * step_x + step_x / 2.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = lam_ms[:, None] * (tau_x / np.minimum(x, servers[:, None]) + pbar[:, None] / np.minimum(x, safe_n[:, None]))
        log_r = np.where(inside & (g > 0), np.log(np.where(has[:, None], ratio, 1.0)), 0.0)
    log_end = np.cumsum(log_r * delta[:, None], axis=1)  # log pi(k_g) / pi(0)
    log_mid = log_end - (delta[:, None] - 1.0) / 2.0 * log_r  # log pi at the middle of the point's interval
    step_cap, _ = _step_at(dep.step_ms, cap)
    tau_cap = spt * en * step_cap + step_cap / 2.0
    r_q = np.where(live, lam_ms * (tau_cap / servers + pbar / safe_n), np.inf)
    stable = live & (r_q < 1.0)
    last = inside & (k >= servers[:, None] * (1.0 - 1e-12))
    # Weights of the points for arrivals that find a free slot (k < n cap), and the queue's mass.
    w = np.where(g == 0, 1.0, np.where(inside & ~last, delta[:, None], np.where(last, delta[:, None] - 1.0, 0.0)))
    log_last = np.where(last, log_end, -np.inf).max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_queue = np.where(stable, log_last - np.log1p(-np.minimum(r_q, 1.0 - 1e-300)), np.inf)
        log_w = np.where(w > 0, np.log(np.maximum(w, 1e-300)) + log_mid, -np.inf)
    top = np.maximum(log_w.max(axis=1), np.where(np.isfinite(log_queue), log_queue, -np.inf))
    top = np.where(np.isfinite(top), top, 0.0)
    pw = np.exp(log_w - top[:, None])
    free_mass = pw.sum(axis=1)
    queue_mass = np.where(stable, np.exp(np.minimum(log_queue - top, 700.0)), 0.0)
    cw = np.where(has, np.where(stable, queue_mass / (free_mass + queue_mass), 1.0), 0.0)
    # What an arrival that finds a free slot sees: the batch it joins, the per-token time there, the join wait.
    k_arr = np.where(g == 0, 0.0, np.round(k - (delta[:, None] - 1.0) / 2.0))
    b_arr = np.minimum(np.floor(k_arr / safe_n[:, None]) + 1.0, cap[:, None])
    step_arr = np.take_along_axis(dep.step_ms, b_arr.astype(np.int64) - 1, axis=1)  # whole batches: no interpolation
    phi_c = np.minimum(phi, 1.0)
    busy = k_arr >= safe_n[:, None]  # every replica runs something: wait for the step in progress
    # Arriving at a busy replica: the step in progress, or the prefill queue's M/G/1 wait.
    phi_q = np.minimum(phi, 1.0 - 1e-9)
    join_arr = busy * ((1.0 - phi_q)[:, None] * step_arr / 2.0 + (phi_q * pre_resid / (1.0 - phi_q))[:, None])
    pf = pw / np.where(free_mass > 0, free_mass, 1.0)[:, None]
    # Others' arrivals join the tagged request's replica only where no replica runs fewer (shortest
    # queue): with n - 1 or more others in system. Their prefills stall it, during its own prefill
    # (a busy period: p / (1 - phi_t)) and during its decode (the stretch 1 / (1 - phi_t)).
    shared = (pf * (k_arr >= safe_n[:, None] - 1.0)).sum(axis=1)
    phi_t = np.minimum(phi * shared, 1.0 - 1e-9)
    pre_stretch = 1.0 / (1.0 - phi_t)
    interference = lam_ms / safe_n * shared * p2
    c_arr = step_arr * (spt * pre_stretch)[:, None]
    with np.errstate(invalid="ignore"):
        c = (pf * c_arr).sum(axis=1)
        c2 = (pf * c_arr**2).sum(axis=1)
        batch_cv2 = np.where(c > 0, np.maximum(c2 / np.where(c > 0, c, 1.0) ** 2 - 1.0, 0.0), 0.0)
        batch_cv2 = np.where(np.isfinite(batch_cv2), batch_cv2, 0.0)
        join = (pf * join_arr).sum(axis=1)
        batch = (pf * b_arr).sum(axis=1)
        s_bar = pbar * pre_stretch + join + c * en
    a_load = lam * s_bar / 1000.0
    # At the cap: each completion admits the next waiting request, so prefills take f_q of the time.
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        queued = stable & has
        f_q = np.where(queued, np.minimum(phi / np.where(r_q > 0, r_q, 1.0), 1.0 - 1e-9), phi_c)
        f_q = np.maximum(f_q, phi_c)
        # A request decoding at the cap is stalled by the prefills of the requests admitted into the other
        # cap - 1 slots of its replica, not by its own (which it ran before): per ms of decode, (cap - 1) / cap
        # of the f_q / (1 - f_q) ms of prefill each completion brings. (The whole f_q / (1 - f_q) counted a
        # request's own prefill twice: one prefill's time too many, the most on a cap of 4; on one replica of
        # cap 4 with 25 ms prefills a waited request's service was 323 ms against 293 simulated.)
        c_dec = spt * step_cap  # per token at the cap, without prefills
        c_full = np.where(f_q < 1.0, c_dec * (1.0 + (cap - 1.0) / cap * f_q / (1.0 - f_q)), np.inf)
        # One that waited is admitted at the step boundary where its slot frees: no wait to join.
        join_full = np.zeros(R)
        s_full = pbar + c_full * en
        # E[S^2] = sum lambda_i E[(p_i + c N_eff,i)^2] / lambda.
        pn2, n2 = 2.0 * m.pre_n / safe_lam, m.n2 / safe_lam
        second = p2 + c_full * (pn2 + c_full * n2)
        cv2_full = np.where(queued, np.maximum(second / s_full**2 - 1.0, 0.0), 1.0)
        # The wait's scale reads the spread of the queue's drain, not of a slot's service (docstring): with
        # every slot busy a request costs the pool p / n (its prefill stalls its replica's cap slots) +
        # d / (n cap) (its decode, d = steps per token x step_ms(cap) x N_eff, holds one slot), i.e.
        # w / (n cap), w = cap p + d; E[w^2] from the traffic's sums (a member's p with its own N_eff).
        w1 = cap * pbar + c_dec * en
        w2 = cap * (cap * p2 + c_dec * pn2) + c_dec * c_dec * n2
        drain_cv2 = np.where(queued, np.maximum(w2 / (w1 * w1) - 1.0, 0.0), 1.0)
        kk = queueing.wait_scale(servers, r_q, drain_cv2)
        d_eff = servers / tau_cap * (1.0 - f_q)  # completions per ms with every slot busy
        theta = np.where(stable, d_eff * (1.0 - r_q) / kk, 0.0)
        # A request that waited starts at the cap, where each completion admits a waiting request's prefill
        # (share f_q). That lasts while the lam / theta that arrived during its wait are admitted, at the next
        # completions (rate d_eff); then prefills come as arrivals do (share phi_t, as for one that found a
        # slot). Its per-token time blends the two by the share of its decode before that. (f_q for the whole
        # decode put the analytic p95 8-14 % over the simulated one on 1-2 replica cap-4 pools; measured
        # per-token excess over a free-slot request 0.07-0.10 ms, f_q gave 0.28-0.33, this 0.12-0.15.)
        live_q = stable & (theta > 0) & (d_eff > 0)
        t_queue = np.where(live_q, lam_ms / np.where(live_q, theta * d_eff, 1.0), np.inf)
        c_top = spt * step_cap * pre_stretch
        u = np.clip(np.where(c_full * en > 0, t_queue / (c_full * en), 1.0), 0.0, 1.0)
        c_waited = np.where(np.isfinite(c_full), u * c_full + (1.0 - u) * c_top, c_full)
    return PooledState(
        replicas=n, arrival_rate_per_s=lam, batch=batch, prefill_share=phi, prefill_stretch=pre_stretch, offered_load=a_load,
        join_ms=join, ms_per_token=c, batch_cv2=batch_cv2, interference_var_per_ms=interference, full_join_ms=join_full, full_ms_per_token=c_full,
        waited_ms_per_token=c_waited,
        service_mean_ms=s_bar, full_service_mean_ms=s_full, full_service_cv2=cv2_full, drain_cv2=drain_cv2,
        p_wait=cw, wait_rate_per_ms=theta, stable=stable,
    )
