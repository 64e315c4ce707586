"""Latency model of a pooled deployment: service-time distribution, p95 of wait + service, replicas for every target.

One service-time model, used both for the p95 check and for queueing (docs/design/latency_model.md;
issue 12), and replayed by the simulation (core.decision.simulate):

- **Output length** N of a workload is lognormal, fitted to its mean and
  `output_tokens_p95` (or to `DEFAULT_OUTPUT_CV` when no p95 is given).
- **Decode steps** are the physics' (core.performance.physics.decode_steps):
  N x steps per token for autoregressive, speculative and MoE serving; whole
  blocks for text diffusion, ceil(N / L) x S passes, so the service is affine
  in the effective length N_eff = L ceil(N / L) (N_eff = N when L = 1).
- **Service time** of a request (admission to last token) is S = a + c N_eff,
  where c = decode steps per token x step_ms(b) / (1 - phi) is the wall time per
  token at the running batch b, stretched by the share phi of the replica's time
  spent on other requests' prefills, and a = own prefill + the wait for the step
  in progress to end.
- **Requests in system** follow a birth–death chain over the pooled slots
  (replicas x concurrency cap, shortest-queue routing): with k in system the
  replicas complete decodes at D(k) = k / tau(b) (tau: a request's decode time at
  the batch b = k / replicas), and every admission first runs its prefill, which
  stalls its replica. Prefill time is spent in the state the admission enters,
  so the chain's ratio is pi(k) / pi(k - 1) = lambda / D(k) + lambda E[p] / min(k, n):
  the busier the deployment, the larger the share of its time in prefills. (A
  stretch 1 / (1 - phi) on the mean instead, as before issue 12's follow-up,
  left the busy states too light: compute-bound diffusion deployments queued
  4-8 x more often in simulation than that model said, and their p95 ran up to
  57 % over the analytic one.)
- **A request that finds a free slot** (probability 1 - C from the chain) sees
  the batch of the state it arrives in; the spread of the per-token time over
  those states multiplies N's (a lognormal factor with that mean and cv^2).
  **One that waits** (C, the chain's mass at or above every slot busy) waits
  Exp(theta), theta = D_eff (1 - r_q) / k, r_q the chain's ratio above the slots,
  k from the n cap slots and the cv^2 of the queue's drain with every slot busy
  (queueing.wait_scale: Kimura's interpolation between M/M/c and M/D/c, which is
  Allen–Cunneen's (1 + cv^2) / 2 on one slot), and is served at the full batch.
  The drain's cv^2 is that of the work each request brings, cap p + d over the
  traffic mixture: its prefill p stalls all cap slots of its replica once, its
  decode d holds one slot (pooled_state). The others' prefills, which stretch a
  slot's service, stall every slot of the replica together: a common pace, not
  spread between slots (reading the service's cv^2 put waits with 25-50 ms
  prefills and output cv 1.5 at 1.5-1.8 x the simulated ones).
- **p95 of time in system** T = W + S (+ the escalated requests' extra latency,
  one tail budget: 1 - the scenario's percentile, 5 % by default): solved numerically from P(T > t).

Everything is numpy over flat arrays: `PooledDeployments` holds R deployment
configurations (e.g. every owned route x candidate concurrency cap) and the I
workload rows on them (`row` says which configuration each belongs to).

The model comes in two tiers, one module each, over one service-time distribution (`service`):
- the **screen** (`core.decision.latency.screen`): closed form, per workload alone on a route: the quantile
  of its service alone, the replicas its own traffic would need (Erlang C). The engine's feasibility sweeps
  over every workload x route x GPU count use it, and the search's linear view;
- the **exact** model (`core.decision.latency.chain` and `.exact`): the pooled requests-in-system chain of a
  deployment many workloads share, each member's tail of time in system, and the fewest replicas meeting
  every member's target. The plan sizes every pool with it, and the simulation checks it
  (core.decision.simulate).
Both read the tail from their inputs: 1 - the scenario's percentile (`Scenario.sla_percentile`, 0.95 by
default: SLO_TAIL).
"""

from __future__ import annotations

from core.decision.latency.chain import (
    _CHAIN_POINTS,
    PooledDeployments,
    PooledState,
    _step_at,
    pooled_state,
)
from core.decision.latency.exact import (
    ReplicaSizing,
    _j_bounds,
    _misses,
    _p_items,
    min_replicas,
    p95_ms,
    p_exceed,
    percentile_ms,
)
from core.decision.latency.screen import length_ratios, replicas_for_sla, service_p95_alone_ms
from core.decision.latency.service import (
    _BLOCK_SUM,
    _BLOCK_TERMS,
    _GL_W,
    _GL_X,
    DEFAULT_OUTPUT_CV,
    SLO_TAIL,
    Z95,
    ServiceTime,
    _p_exceed_with_wait,
    _survival,
    block_tokens_of,
    effective_tokens_moments,
    output_lognormal,
    service_time,
)

__all__ = [
    "DEFAULT_OUTPUT_CV", "SLO_TAIL", "Z95", "PooledDeployments", "PooledState", "ReplicaSizing", "ServiceTime",
    "block_tokens_of", "effective_tokens_moments", "length_ratios", "min_replicas", "output_lognormal",
    "p95_ms", "p_exceed", "percentile_ms", "pooled_state", "replicas_for_sla", "service_p95_alone_ms",
    "service_time", "_BLOCK_SUM", "_BLOCK_TERMS", "_CHAIN_POINTS", "_GL_W", "_GL_X", "_j_bounds", "_misses",
    "_p_exceed_with_wait", "_p_items", "_step_at", "_survival",
]
