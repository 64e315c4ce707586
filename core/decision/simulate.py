"""Discrete-event simulation of continuous batching on one pooled deployment at the peak hour.

What it simulates (the checks the analytic model in `core.decision.latency` must pass):

- Poisson arrivals per workload at its peak rate; output lengths drawn from the
  workload's lognormal (the same distribution the analytic model uses), decoded in
  the physics' steps: N x steps per token, or for block-wise (diffusion) decoding
  whole blocks, ceil(N / L) x L x steps per token (the analytic model's N_eff);
- one shared FIFO queue in front of `replicas` replicas of `concurrency_cap`
  slots each (the pooled M/G/c of the analytic model): an arrival that finds a
  free slot joins the least-loaded replica; otherwise it waits in the queue, and
  the head of the queue takes the first slot that frees, on that replica;
- each replica runs steps: a decode step advances every running request by one
  decode step and lasts step_ms(b) for the b requests running; a request admitted
  while a step runs starts at the next step boundary with its prefill, and a
  prefill occupies the replica's step (the running requests pause; prefills
  admitted at the same boundary run together, their times added);
- a request's time in system runs from arrival to its last decode step, plus the
  fallback's extra latency for an escalated request (drawn with its share).

Between two events (an admission or a completion) a replica's batch is fixed, so
the loop jumps from event to event (a heap of the next event per replica) instead
of stepping: O(requests log replicas), about 0.4 µs of CPU per request compiled (core.decision.simloop;
bench/bench_simulate.py).
"""

from __future__ import annotations

import heapq
import math
import time
from collections import deque
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import special

from core.decision import latency
from core.decision.settings import DEFAULT as SETTINGS  # the numerics below (SearchSettings' help)

# Requests discarded at the start while the empty deployment fills (share of all simulated).
WARMUP_SHARE = SETTINGS.warmup_share
# Sections for the confidence interval of a percentile (Asmussen & Glynn's sectioning):
# the run is cut into this many consecutive sections and the spread of the
# sections' p95 gives the interval around the whole run's p95.
SECTIONS = SETTINGS.sections
_T_975_19 = 2.093  # Student t, 97.5 %, 19 degrees of freedom
# Requests simulated by default: the peak hour's arrivals, but at least MIN_REQUESTS (so a
# quiet deployment still gets a p95 within about +-2 %) and at most MAX_REQUESTS (past which
# the interval is far inside +-2 % and only the run time grows).
MIN_REQUESTS = SETTINGS.min_requests
MAX_REQUESTS = SETTINGS.max_requests
TARGET_CI = SETTINGS.target_ci  # the p95's 95 % interval should be within +-2 % of it


@dataclass(frozen=True)
class WorkloadLoad:
    """One workload's traffic on a deployment at the peak hour."""

    workload_id: str
    arrival_rate_per_s: float
    prefill_ms: float
    output_mean_tokens: float
    slo_ms: float
    output_p95_tokens: float | None = None  # None: latency.DEFAULT_OUTPUT_CV
    escalated_share: float = 0.0
    escalated_extra_ms: float = 0.0


@dataclass(frozen=True)
class DeploymentLoad:
    """One owned deployment: replicas x concurrency cap slots, the step-time curve, and its workloads.

    step_ms[b - 1] is one decode step with b requests running (b = 1..cap), from
    physics; steps_per_token is decode steps per output token (1 for AR); block_tokens
    is L for block-wise (diffusion) decoding, whose requests run whole blocks (1: none).
    sla_tail is the share of requests allowed over their target (1 - the scenario's percentile): the
    analytic and the simulated percentile compared are both taken at 1 - sla_tail.
    """

    replicas: int
    concurrency_cap: int
    step_ms: tuple[float, ...]
    workloads: tuple[WorkloadLoad, ...]
    steps_per_token: float = 1.0
    deployment_id: str = ""
    block_tokens: int = 1
    sla_tail: float = latency.SLO_TAIL

    def __post_init__(self):
        object.__setattr__(self, "step_ms", tuple(float(s) for s in self.step_ms))
        object.__setattr__(self, "workloads", tuple(self.workloads))
        problems = []
        if self.replicas < 0:
            problems.append(f"replicas {self.replicas} < 0")
        if self.concurrency_cap < 1:
            problems.append(f"concurrency_cap {self.concurrency_cap} < 1")
        if self.block_tokens < 1 or int(self.block_tokens) != self.block_tokens:
            problems.append(f"block_tokens {self.block_tokens} is not a whole number >= 1")
        if not 0.0 < self.sla_tail < 0.5:
            problems.append(f"sla_tail {self.sla_tail} is not in (0, 0.5)")
        if len(self.step_ms) < self.concurrency_cap:
            problems.append(f"step_ms has {len(self.step_ms)} entries, concurrency_cap is {self.concurrency_cap}")
        if any(not (s > 0 and math.isfinite(s)) for s in self.step_ms[: self.concurrency_cap]):
            problems.append("step_ms must be positive and finite")
        if not self.workloads:
            problems.append("no workloads")
        for w in self.workloads:
            if not (w.arrival_rate_per_s >= 0 and w.prefill_ms >= 0 and w.output_mean_tokens > 0 and w.slo_ms > 0
                    and 0 <= w.escalated_share <= 1 and w.escalated_extra_ms >= 0):
                problems.append(f"workload {w.workload_id!r}: a rate, time, length or share out of range")
        if problems:
            raise ValueError(f"deployment {self.deployment_id!r}: " + "; ".join(problems))

    @property
    def arrival_rate_per_s(self) -> float:
        return float(sum(w.arrival_rate_per_s for w in self.workloads))

    def with_replicas(self, replicas: int) -> DeploymentLoad:
        return DeploymentLoad(replicas, self.concurrency_cap, self.step_ms, self.workloads, self.steps_per_token,
                              self.deployment_id, self.block_tokens, self.sla_tail)

    def pooled(self) -> latency.PooledDeployments:
        """The same deployment as one configuration of the analytic model."""
        ws = self.workloads
        return latency.PooledDeployments.build(
            row=np.zeros(len(ws), dtype=np.int64),
            arrival_rate_per_s=[w.arrival_rate_per_s for w in ws],
            prefill_ms=[w.prefill_ms for w in ws],
            output_mean_tokens=[w.output_mean_tokens for w in ws],
            output_p95_tokens=[np.nan if w.output_p95_tokens is None else w.output_p95_tokens for w in ws],
            slo_ms=[w.slo_ms for w in ws],
            escalated_share=[w.escalated_share for w in ws],
            escalated_extra_ms=[w.escalated_extra_ms for w in ws],
            step_ms=np.asarray(self.step_ms[: self.concurrency_cap])[None, :],
            concurrency_cap=self.concurrency_cap,
            steps_per_token=self.steps_per_token,
            block_tokens=self.block_tokens,
            tail=self.sla_tail,
        )


@dataclass(frozen=True)
class WorkloadSimulation:
    """Simulated and analytic latency of one workload on its deployment."""

    workload_id: str
    slo_ms: float
    analytic_p95_ms: float
    simulated_p50_ms: float
    simulated_p95_ms: float
    simulated_p99_ms: float
    simulated_p95_ci_ms: tuple[float, float]
    share_within_slo: float
    share_within_slo_one_replica_fewer: float
    requests: int


@dataclass(frozen=True)
class SimulationResult:
    """One deployment simulated at its peak hour, and again with one replica fewer (is the plan tight?)."""

    deployment_id: str
    replicas: int
    concurrency_cap: int
    workloads: tuple[WorkloadSimulation, ...]
    share_within_slo: float  # the worst workload's
    share_within_slo_one_replica_fewer: float  # the worst workload's (0 when there is only one replica)
    simulated_p_wait: float  # share of requests that queued for a slot
    analytic_p_wait: float
    requests: int
    seed: int
    seconds: float = field(compare=False)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class RawRun:
    """Per-request output of one simulation run (after the warm-up is dropped)."""

    workload: np.ndarray  # index into the deployment's workloads
    latency_ms: np.ndarray
    waited: np.ndarray  # queued for a slot

    def by_workload(self, workloads: int) -> list[np.ndarray]:
        """Each workload's latencies in arrival order (one stable sort, not a mask over the run per workload:
        a pool of 14,000 members on 200,000 requests took ~9 s a run that way)."""
        order = np.argsort(self.workload, kind="stable")
        ends = np.cumsum(np.bincount(self.workload, minlength=workloads))
        return np.split(self.latency_ms[order], ends[:-1])


def draw_requests(deployment: DeploymentLoad, requests: int, seed: int, output_distribution: str = "lognormal"):
    """Arrival times (ms), workload index, decode steps and prefill ms of `requests` Poisson arrivals.

    output_distribution "exponential" draws output lengths from an exponential of the
    same mean instead (the M/M/c check: constant step time, exponential service).
    """
    rng = np.random.default_rng(seed)
    rates = np.array([w.arrival_rate_per_s for w in deployment.workloads])
    # Requests are dealt to the members in an order fixed by what each member is, not by where it sits in the
    # pool (the inventory's row order): dealt in the pool's order, a generated 17-workload inventory's check
    # added a replica (4 nodes) that the same rows shuffled did not (3 nodes). Copies (a workload split into
    # equal parts) are dealt as one member of their rate together, then among themselves from a stream of
    # their own: the pool's requests are the same however a workload is split (a generated 20-workload
    # inventory with one workload split into ten was checked a node dearer).
    copies: dict[tuple, list[int]] = {}
    for j, w in enumerate(deployment.workloads):
        copies.setdefault(_member_key(w)[:-2], []).append(j)
    groups = sorted(copies.values(), key=lambda g: (float(rates[g].sum()), *_member_key(deployment.workloads[g[0]])[1:]))
    group_rates = np.array([rates[g].sum() for g in groups])
    lam = group_rates.sum()
    if lam <= 0:
        raise ValueError(f"deployment {deployment.deployment_id!r}: no traffic to simulate")
    arrival = np.cumsum(rng.exponential(1000.0 / lam, requests))
    group = rng.choice(len(groups), size=requests, p=group_rates / lam)
    which = np.array([g[0] for g in groups], dtype=np.int64)[group]
    among = None
    for k, g in enumerate(groups):
        if len(g) > 1:
            among = among or np.random.default_rng([seed, 1])
            at = np.flatnonzero(group == k)
            which[at] = np.asarray(g)[among.integers(0, len(g), size=at.size)]
    means = np.array([w.output_mean_tokens for w in deployment.workloads])
    if output_distribution == "exponential":
        tokens = rng.exponential(means[which])
    elif output_distribution == "lognormal":
        p95 = np.array([np.nan if w.output_p95_tokens is None else w.output_p95_tokens for w in deployment.workloads])
        mu, sigma = latency.output_lognormal(means, p95)
        tokens = np.maximum(np.rint(np.exp(mu[which] + sigma[which] * rng.standard_normal(requests))), 1.0)
    else:
        raise ValueError(f"output_distribution must be 'lognormal' or 'exponential', not {output_distribution!r}")
    blk = int(deployment.block_tokens)
    if blk > 1:  # whole blocks (physics.decode_steps): ceil(N / L) blocks of L x steps per token passes each
        tokens = np.ceil(tokens / blk) * blk
    steps = np.maximum(np.ceil(tokens * deployment.steps_per_token - 1e-9), 1).astype(np.int64)
    prefill = np.array([w.prefill_ms for w in deployment.workloads])[which]
    escalated = rng.random(requests) < np.array([w.escalated_share for w in deployment.workloads])[which]
    extra = np.where(escalated, np.array([w.escalated_extra_ms for w in deployment.workloads])[which], 0.0)
    return arrival, which, steps, prefill, extra


def _member_key(w: WorkloadLoad) -> tuple:
    """A member's place in the order requests are dealt (draw_requests): its load, then its target and id."""
    return (w.arrival_rate_per_s, w.output_mean_tokens, -1.0 if w.output_p95_tokens is None else w.output_p95_tokens,
            w.prefill_ms, w.escalated_share, w.escalated_extra_ms, w.slo_ms, w.workload_id)


def run_requests(step_ms, concurrency_cap: int, replicas: int, arrival, steps, prefill):
    """The event loop: completion time (ms) and whether it queued, for every request (arrival-ordered input).

    Runs the compiled loop (core.decision.simloop): the same events in the same order as run_requests_py,
    ~50x faster (bench/bench_simulate.py).
    """
    if replicas <= 0:
        return np.full(len(arrival), np.inf), np.ones(len(arrival), dtype=bool)
    # numba is imported when a simulation first runs, not with the planner.
    from core.decision.simloop import run_requests_compiled

    cap = int(concurrency_cap)
    step = np.concatenate(([0.0], np.asarray(step_ms, dtype=np.float64)[:cap]))
    if step.size < cap + 1:
        raise IndexError(f"step_ms has {step.size - 1} entries, the concurrency cap is {cap}")
    return run_requests_compiled(step, cap, int(replicas), np.ascontiguousarray(arrival, dtype=np.float64),
                                 np.ascontiguousarray(steps, dtype=np.int64),
                                 np.ascontiguousarray(prefill, dtype=np.float64))


def run_requests_py(step_ms, concurrency_cap: int, replicas: int, arrival, steps, prefill):
    """The event loop in plain Python: the reference run_requests' compiled loop is checked against.

    Per replica: `run` is a heap of (decode-step count at which a request finishes,
    request); `k0` and `t0` are the step count and the time at which the current
    stretch of decode steps at a fixed batch starts. Admitting requests at a step
    boundary t runs their prefills first, so that stretch starts at t + their prefill
    times; requests arriving meanwhile wait for its start (the next boundary).

    One function over 80 lines on purpose: it is the simulation's per-event hot loop, kept in local
    variables; helpers called per event would add a Python call to every step of every request.
    """
    n_req = len(arrival)
    done = [math.nan] * n_req
    waited = [False] * n_req
    if replicas <= 0:
        return np.full(n_req, np.inf), np.ones(n_req, dtype=bool)
    cap = int(concurrency_cap)
    step = [0.0] + [float(s) for s in step_ms[:cap]]  # step[b] for b = 1..cap
    arr = arrival.tolist()
    nsteps = steps.tolist()
    pre = prefill.tolist()
    R = int(replicas)
    run: list[list[tuple[int, int]]] = [[] for _ in range(R)]  # heaps of (finishing step count, request)
    pending: list[list[int]] = [[] for _ in range(R)]  # requests waiting for the next boundary
    load = [0] * R
    k0 = [0] * R
    t0 = [0.0] * R
    nxt = [math.inf] * R
    ver = [0] * R
    events: list = []  # (time, version, replica)
    queue: deque = deque()
    free_total = R * cap
    heappush, heappop = heapq.heappush, heapq.heappop

    def boundary(r, t):
        """Replica r is at a step boundary at time t: finish, admit, start the next stretch."""
        nonlocal free_total
        rr = run[r]
        k = k0[r]
        if rr and t > t0[r]:
            k += int(round((t - t0[r]) / step[len(rr)]))
            while rr and rr[0][0] <= k:
                done[heappop(rr)[1]] = t
                load[r] -= 1
                free_total += 1
        pend = pending[r]
        while queue and load[r] < cap:
            pend.append(queue.popleft())
            load[r] += 1
            free_total -= 1
        start = t
        if pend:
            for q in pend:
                start += pre[q]
                heappush(rr, (k + nsteps[q], q))
            pending[r] = []
        k0[r] = k
        t0[r] = start
        if rr:
            tn = start + (rr[0][0] - k) * step[len(rr)]
            ver[r] += 1
            nxt[r] = tn
            heappush(events, (tn, ver[r], r))
        else:
            nxt[r] = math.inf

    i = 0
    while i < n_req or events:
        t_arr = arr[i] if i < n_req else math.inf
        if events and events[0][0] <= t_arr:
            t, v, r = heappop(events)
            if v == ver[r]:
                boundary(r, t)
            continue
        q, t = i, t_arr
        i += 1
        if free_total > 0:
            r = load.index(min(load)) if R > 1 else 0
            load[r] += 1
            free_total -= 1
            pending[r].append(q)
            if not run[r]:
                boundary(r, t)  # idle: its prefill starts now
            elif len(pending[r]) == 1:
                s = step[len(run[r])]
                tb = t0[r] + max(math.ceil((t - t0[r]) / s - 1e-9), 0) * s  # the next step boundary
                if tb < nxt[r]:
                    ver[r] += 1
                    nxt[r] = tb
                    heappush(events, (tb, ver[r], r))
        else:
            waited[q] = True
            queue.append(q)
    return np.asarray(done), np.asarray(waited)


def simulate_latencies(deployment: DeploymentLoad, requests: int, seed: int, replicas: int | None = None,
                       output_distribution: str = "lognormal") -> RawRun:
    """Time in system of every request after the warm-up (escalations' extra latency included)."""
    arrival, which, steps, prefill, extra = draw_requests(deployment, requests, seed, output_distribution)
    n = deployment.replicas if replicas is None else replicas
    done, waited = run_requests(deployment.step_ms, deployment.concurrency_cap, n, arrival, steps, prefill)
    keep = slice(int(requests * WARMUP_SHARE), None)
    return RawRun(which[keep], (done - arrival + extra)[keep], waited[keep])


def percentile_ci(values: np.ndarray, q: float = 95.0, sections: int = SECTIONS) -> tuple[float, float, float]:
    """(estimate, lo, hi): the q-th percentile of the whole run, with a 95 % interval by sectioning.

    The run (in arrival order) is cut into `sections` consecutive parts; the spread
    of the parts' percentiles over sqrt(sections), times Student's t, is the
    half-width. Consecutive sections of a long run are nearly independent, which is
    what makes this valid for queueing output, where single requests are not.
    A workload too quiet for sections (under 20 requests a section) gets the
    distribution-free interval of an order statistic instead: the values ranked
    n q / 100 -+ 1.96 sqrt(n q (1 - q)) / 100 (binomial; it treats the requests as
    independent, so it is too narrow for strongly queued ones; NaN under 20 requests).
    """
    if values.size == 0:
        return math.nan, math.nan, math.nan
    est = float(np.percentile(values, q))
    if values.size < 20 * sections:
        n = values.size
        if n < 20:
            return est, math.nan, math.nan
        p = q / 100.0
        half = 1.96 * math.sqrt(n * p * (1.0 - p))
        ranked = np.sort(values)
        lo_i, hi_i = max(int(math.floor(n * p - half)) - 1, 0), min(int(math.ceil(n * p + half)) - 1, n - 1)
        return est, min(float(ranked[lo_i]), est), max(float(ranked[hi_i]), est)
    # The sections np.array_split makes (the first n % sections one longer), each size's as the rows of one
    # array: one np.percentile call per size, not one per section (~40 us each, thousands per plan check).
    k, longer = divmod(values.size, sections)
    cut = longer * (k + 1)
    parts = np.concatenate([np.percentile(values[:cut].reshape(longer, k + 1), q, axis=1),
                            np.percentile(values[cut:].reshape(sections - longer, k), q, axis=1)])
    if not np.isfinite(parts).all():
        return est, math.nan, math.nan
    half = _T_975_19 * parts.std(ddof=1) / math.sqrt(sections)
    return est, est - half, est + half


def _relative_half_width(values: np.ndarray, q: float = 95.0) -> float:
    """Half-width of the q-th percentile's interval over it (inf when there are too few requests to tell)."""
    est, lo, hi = percentile_ci(values, q)
    if not (np.isfinite(lo) and np.isfinite(hi)) or est <= 0:
        return math.inf if values.size else 0.0
    return (hi - lo) / 2.0 / est


def _pool_half_width(raw: RawRun, deployment: DeploymentLoad, q: float) -> float:
    """Relative half-width of the interval on the pool's q-th percentile of time over target: every member's
    requests together, each latency over its member's target (at or under 1 is within target).

    The run's length follows this, not the quietest member's own interval: a pool's evidence (and so whether
    the plan's check finds it short: under_share) must not depend on how its traffic is split into workloads.
    Sized by each member's interval, the sample with every workload split into ten copies of a tenth of its
    traffic simulated one pool on 128,189 requests instead of 33,333 and bought a replica the unsplit
    inventory did not (94.8 % within target: p = 0.002 against 0.074). Members without a finite target are
    left out; a pool of only those is judged on its latencies."""
    slo = np.array([w.slo_ms for w in deployment.workloads], dtype=float)
    finite = np.isfinite(slo)
    if not finite.any():
        return _relative_half_width(raw.latency_ms, q)
    keep = finite[raw.workload]
    return _relative_half_width(raw.latency_ms[keep] / slo[raw.workload[keep]], q)


def under_share(shares: np.ndarray, counts: np.ndarray, target: float, z: float, familywise: bool = True) -> bool:
    """Whether the run shows some member holding under its target share by more than its sampling error.

    Member j had k_j = n_j (1 - share_j) of its n_j simulated requests over its target. Were it exactly at its
    share, k_j would be Binomial(n_j, 1 - target); the chance of k_j or more (exact: a member with 14 requests
    is nowhere near a normal share) is its p-value. With two members or more, the pool's misses together are one
    more test (were every member at or above its share, sum k_j would be at most Binomial(sum n_j, 1 - target)):
    it sees a pool of many quiet members run short as a whole, which no member's few requests can show. The
    pool misses where the smallest p-value is below Phi(-z) / tests (Bonferroni; familywise=False: Phi(-z) for
    each alone). Without the division, a pool of 14,366 members on 200,000 simulated requests (~14 each) had
    555 members "under" at z = 2, and 183 still after four replicas more, while its requests as a whole held
    95.7 % within target: at its size some members always look under by chance, so the loop bought replicas up
    to its limit for noise. NaN shares (a member with no request in the run) have nothing to hold."""
    live = ~np.isnan(shares)
    m = int(np.count_nonzero(live))
    if m == 0:
        return False
    n = np.rint(counts[live]).astype(np.int64)
    k = np.rint((1.0 - shares[live]) * n).astype(np.int64)
    if m > 1:
        n, k = np.append(n, n.sum()), np.append(k, k.sum())
    # P(K >= k) = P(K > k - 1); no miss at all is no evidence (p = 1).
    p = np.where(k >= 1, special.bdtrc(np.maximum(k - 1, 0), n, 1.0 - target), 1.0)
    alpha = float(special.ndtr(-z)) / (len(k) if familywise else 1)
    return bool(p.min() < alpha)


def over_share(shares: np.ndarray, counts: np.ndarray, target: float, z: float) -> bool:
    """Whether the run shows every member at or above its target share beyond its sampling error: the
    evidence a replica cut needs, the other way round from under_share. Member j with k_j misses of n_j
    requests shows it where P(K <= k_j) < Phi(-z), K ~ Binomial(n_j, 1 - target) (exact). All of them must
    (an intersection: no division among members). A quiet member shows it only well above its share (553
    requests at 95 %: 96.9 % or better at z = 2); no live member shows nothing."""
    live = ~np.isnan(shares)
    if not live.any():
        return False
    n = np.rint(counts[live]).astype(np.int64)
    k = np.rint((1.0 - shares[live]) * n).astype(np.int64)
    return bool((special.bdtr(k, n, 1.0 - target) < special.ndtr(-z)).all())


def analytic_p95(deployment: DeploymentLoad, replicas: int | None = None) -> np.ndarray:
    """The analytic percentile of time in system the targets refer to (p95 at the default tail; ms) of each
    workload, in the deployment's workload order."""
    n = deployment.replicas if replicas is None else replicas
    return latency.p95_ms(deployment.pooled(), np.array([float(n)]))


def simulate_deployment(deployment: DeploymentLoad, requests: int | None = None, seed: int = 0,
                        one_replica_fewer: bool = True, target_ci: float = TARGET_CI) -> SimulationResult:
    """Simulate the deployment's peak hour and compare with the analytic p95.

    requests None: the peak hour's arrivals within [MIN_REQUESTS, MAX_REQUESTS]; if the pool's p95 of time
    over target (its members' requests together: _pool_half_width) then has an interval wider than
    +-target_ci, once more with enough requests for it (the width shrinks as 1 / sqrt(requests)), up to
    MAX_REQUESTS. A quiet member's own interval may stay wider (it is reported as it is).
    Per workload: simulated p50/p95/p99 with a 95 % interval on the p95 (the "p95" figures are taken at the
    percentile the targets refer to, 1 - deployment.sla_tail: the 95th by default), share within
    its target, the analytic p95; per deployment: the worst share within target with
    the planned replicas and with one replica fewer (same seed: the same requests).
    """
    started = time.perf_counter()
    q = 100.0 * (1.0 - deployment.sla_tail)  # the percentile the targets refer to (95 by default)
    adaptive = requests is None
    if requests is None:
        requests = min(max(int(round(deployment.arrival_rate_per_s * 3600.0)), MIN_REQUESTS), MAX_REQUESTS)
    if requests < 1:
        raise ValueError(f"requests must be at least 1, not {requests}")
    W = len(deployment.workloads)
    raw = simulate_latencies(deployment, requests, seed)
    if adaptive and requests < MAX_REQUESTS:
        width = _pool_half_width(raw, deployment, q)
        if width > target_ci:
            # Too few requests for an interval at all (inf): as many as allowed.
            requests = MAX_REQUESTS if not math.isfinite(width) else \
                min(int(requests * (width / target_ci) ** 2 * 1.1) + 1, MAX_REQUESTS)
            raw = simulate_latencies(deployment, requests, seed)
    lats = raw.by_workload(W)
    cis = [percentile_ci(lat, q) for lat in lats]
    fewer = None
    if one_replica_fewer and deployment.replicas > 1:
        fewer = simulate_latencies(deployment, requests, seed, replicas=deployment.replicas - 1).by_workload(W)
    pooled = deployment.pooled()
    state = latency.pooled_state(pooled, np.array([float(deployment.replicas)]))
    analytic = latency.p95_ms(pooled, state.replicas, state)
    rows = []
    for j, w in enumerate(deployment.workloads):
        lat = lats[j]
        p95, lo, hi = cis[j]
        if fewer is not None:
            lat_f = fewer[j]
            share_f = float(np.mean(lat_f <= w.slo_ms)) if lat_f.size else math.nan
        else:
            share_f = 0.0 if one_replica_fewer else math.nan
        rows.append(WorkloadSimulation(
            workload_id=w.workload_id, slo_ms=w.slo_ms, analytic_p95_ms=float(analytic[j]),
            simulated_p50_ms=float(np.percentile(lat, 50)) if lat.size else math.nan,
            simulated_p95_ms=p95, simulated_p99_ms=float(np.percentile(lat, 99)) if lat.size else math.nan,
            simulated_p95_ci_ms=(lo, hi),
            share_within_slo=float(np.mean(lat <= w.slo_ms)) if lat.size else math.nan,
            share_within_slo_one_replica_fewer=share_f, requests=int(lat.size),
        ))
    shares = [x.share_within_slo for x in rows if not math.isnan(x.share_within_slo)]
    shares_f = [x.share_within_slo_one_replica_fewer for x in rows
                if not math.isnan(x.share_within_slo_one_replica_fewer)]
    return SimulationResult(
        deployment_id=deployment.deployment_id, replicas=deployment.replicas,
        concurrency_cap=deployment.concurrency_cap, workloads=tuple(rows),
        share_within_slo=min(shares) if shares else math.nan,
        share_within_slo_one_replica_fewer=min(shares_f) if shares_f else math.nan,
        simulated_p_wait=float(raw.waited.mean()), analytic_p_wait=float(state.p_wait[0]),
        requests=requests, seed=seed, seconds=time.perf_counter() - started,
    )
