"""The latency screen: each workload's p95 alone on a route, closed form, for the feasibility sweeps.

The first of the latency model's two tiers (core.decision.latency). The engine scores every workload on
every route and GPU count (millions of cells at 100,000 workloads), so the screen asks per workload, in
closed form and without quadrature: the quantile of its service alone at the target percentile, as a ratio
to the length the physics timed (`length_ratios`, `service_p95_alone_ms`), and the replicas an M/G/c queue
of its own traffic needs for its wait to stay within what the target leaves (`replicas_for_sla`, Erlang C
with Kimura's wait scale, core.decision.queueing). It decides what is feasible and gives the linear view the
plan's search starts from; it never sizes a pooled deployment (the exact tier does,
core.decision.latency.exact). Both tiers read the same service-time distribution
(core.decision.latency.service) and the tail the scenario's percentile gives.
"""

from __future__ import annotations

import numpy as np

from core.decision.latency.service import (
    SLO_TAIL,
    ServiceTime,
    _blocks,
    effective_tokens_moments,
    output_lognormal,
)
from core.decision.queueing import replicas_for_sla

__all__ = ["length_ratios", "replicas_for_sla", "service_p95_alone_ms"]


def length_ratios(mean_tokens, p95_tokens=None, block_tokens=None, q: float = 1.0 - SLO_TAIL):
    """The service distribution behind a physics mean, as ratios to the length the physics timed.

    physics.e2e_ms times one request of the mean output length n (in whole blocks for
    diffusion: N_eff(n) = L ceil(n / L)). With S = fixed + c N_eff and c fixed by that
    mean (c = (e2e - fixed) / N_eff(n)), the q-quantile, mean and variance of S are
    fixed + D x q_ratio, fixed + D x e_ratio and D^2 x v_ratio, D = e2e - fixed, where
    (q_ratio, e_ratio, v_ratio) = (N_eff quantile, E N_eff, Var N_eff) / N_eff(n): this returns
    them per row. The engine scores every workload x route with them (vectorised, no
    quadrature); it is the same lognormal, block-rounded length the plan sizes on.
    """
    m = np.asarray(mean_tokens, dtype=float)
    mu, sigma = output_lognormal(m, p95_tokens)
    L = _blocks(block_tokens, m.shape)
    at_mean = np.where(L > 1, L * np.maximum(np.ceil(m / L - 1e-12), 1.0), m)
    svc = ServiceTime(np.zeros(m.shape), np.ones(m.shape), mu, sigma, L)
    m1, m2 = effective_tokens_moments(mu, sigma, L)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (svc.quantile(q) / at_mean, m1 / at_mean, np.maximum(m2 - m1**2, 0.0) / at_mean**2)


def service_p95_alone_ms(service_s: np.ndarray, prefill_ms: np.ndarray | None, output_tokens: np.ndarray,
                         output_p95_tokens: np.ndarray | None, block_tokens: int = 1,
                         q_ratio: np.ndarray | None = None, q: float = 1.0 - SLO_TAIL) -> np.ndarray:
    """(W, G, B) p95 of each workload's service alone at each grid concurrency, ms: the decode part scaled by
    its output length's p95 over the length the physics timed (length_ratios: the latency model's
    lognormal, in whole blocks for diffusion), the prefill as it is. q_ratio: that ratio, if already computed
    for these workloads and this block size; else computed at percentile q (the targets' percentile: the
    scenario's sla_percentile, 0.95 by default)."""
    if q_ratio is None:
        q_ratio = length_ratios(output_tokens, output_p95_tokens, block_tokens, q)[0]
    pre = np.nan_to_num(prefill_ms, nan=0.0)[:, None, None] if prefill_ms is not None else 0.0
    return pre + (service_s * 1e3 - pre) * q_ratio[:, None, None]
