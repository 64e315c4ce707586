"""The latency model: output-length spread, service time, p95 of wait + service, replicas per target."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from core.decision import latency as L
from core.decision.queueing import erlang_c, p_wait_exceeds


def one(**kw) -> L.PooledDeployments:
    """One deployment (constant 10 ms step, cap 4) with one workload; keywords override."""
    args = dict(row=[0], arrival_rate_per_s=2.0, prefill_ms=20.0, output_mean_tokens=100.0, slo_ms=5000.0,
                step_ms=[[10.0] * 4], concurrency_cap=4)
    args.update(kw)
    return L.PooledDeployments.build(**args)


def three(scale: float = 1.0, cap: int = 16) -> L.PooledDeployments:
    """Three workloads of different lengths and targets pooled on one deployment (step grows with the batch)."""
    return L.PooledDeployments.build(
        row=[0, 0, 0], arrival_rate_per_s=np.array([3.0, 8.0, 1.0]) * scale, prefill_ms=[20.0, 8.0, 40.0],
        output_mean_tokens=[300.0, 60.0, 800.0], output_p95_tokens=[np.nan, 150.0, np.nan],
        slo_ms=[8000.0, 1500.0, 20000.0], escalated_share=[0.0, 0.0, 0.1], escalated_extra_ms=[0.0, 0.0, 1500.0],
        step_ms=[[7.0 + 0.3 * b for b in range(1, cap + 1)]], concurrency_cap=cap)


# --------------------------------------------------------------------------- output length and service time

def test_default_output_spread_golden():
    """Mean 100 tokens, no p95: cv 0.5, sigma^2 = ln(1 + 0.25) = 0.22314, sigma = 0.47238,
    mu = ln 100 - 0.22314 / 2 = 4.49360; p95 = exp(4.49360 + 1.64485 x 0.47238) = exp(5.27060) = 194.53."""
    mu, sigma = L.output_lognormal(100.0)
    assert sigma == pytest.approx(0.47238, abs=1e-5)
    assert mu == pytest.approx(4.49360, abs=1e-5)
    assert np.exp(mu + L.Z95 * sigma) == pytest.approx(194.53, abs=0.01)


def test_output_spread_fits_the_given_p95():
    """Mean 100, p95 250: ln 2.5 = 0.91629 = 1.64485 s - s^2 / 2, s = 1.64485 - sqrt(2.70554 - 1.83258) = 0.71053."""
    mu, sigma = L.output_lognormal([100.0, 100.0, 100.0], [250.0, 100.0, 1000.0])
    assert sigma[0] == pytest.approx(0.71053, abs=1e-5)
    assert np.exp(mu + L.Z95 * sigma)[0] == pytest.approx(250.0)
    assert np.exp(mu + sigma**2 / 2) == pytest.approx([100.0] * 3)
    assert sigma[1] == 0.0  # p95 = mean: every request the mean length
    assert sigma[2] == pytest.approx(L.Z95)  # beyond what a lognormal of mean 100 reaches: capped


def test_service_time_mean_and_cv2_golden():
    """S = 50 ms + 10 ms/token x N, E[N] = 100, cv_N = 0.5 (default):
    E[S] = 50 + 10 x 100 = 1050 ms; Var S = (10 x 100 x 0.5)^2 = 250,000 ms^2; cv^2 = 250,000 / 1050^2 = 0.226757."""
    svc = L.service_time(50.0, 10.0, 100.0)
    assert svc.mean_ms == pytest.approx(1050.0)
    assert svc.var_ms2 == pytest.approx(250_000.0)
    assert svc.cv2 == pytest.approx(0.226757, abs=1e-6)
    # The p95 is a plus c times the output p95: 50 + 10 x 194.53 = 1995.3 ms.
    assert svc.quantile(0.95) == pytest.approx(1995.3, abs=0.1)
    assert svc.survival(svc.quantile(0.95)) == pytest.approx(0.05)


def test_pooled_state_golden():
    """One workload, 2/s, prefill 20 ms, 100 tokens (cv 0.5), constant 10 ms step, 2 replicas x 4 slots.

    A request decodes in tau = 10 x 100 + 10 / 2 = 1005 ms (with the wait for a step boundary). The chain's
    ratio pi(k) / pi(k - 1) = 0.002/ms x (1005 / k + 20 / min(k, 2)):
    k = 1..8: 2.05, 1.025, 0.69, 0.5225, 0.422, 0.355, 0.307143, 0.27125 (the last is r_q, above 8 too), so
    pi(0..7) ~ 1, 2.05, 2.10125, 1.449863, 0.757553, 0.319687, 0.113489, 0.034857 (sum 7.826699) and the
    queue holds pi(8) / (1 - r_q) = 0.009455 / 0.72875 = 0.012974: C = 0.012974 / 7.839673 = 0.0016550.
    Free slot: phi = 2/s x 0.020 s / 2 = 0.02; others join its replica when k >= n - 1 = 1 (mass
    6.826699 of 7.826699 = 0.872232), so phi_t = 0.02 x 0.872232 = 0.0174446 and a token (and its own
    prefill) takes 1 / (1 - phi_t) = 1.017754 x longer: 10.17754 ms. The join wait
    0.98 x 10 / 2 + 0.02 x E[p^2] / (2 E[p]) / 0.98 = 5.10408 ms when every replica is busy (k >= 2:
    mass 4.776699 of 7.826699 = 0.61031), so 3.1151 ms; the step is flat, so the batch adds no spread.
    Others' prefills land at 0.001/ms x 0.872232 with E[p^2] = 400: 0.34889 ms^2 per ms of variance.
    Full batch: f_q = phi / r_q = 0.073733 of the time in prefills, 3 of each 4 the other slots': a token takes
    10 x (1 + 3/4 x 0.073733 / 0.926267) = 10.59701 ms; admitted where its slot frees, no join wait;
    E[S_full] = 20 + 1059.701 = 1079.701 ms, cv^2 = (10.59701 x 50)^2 / 1079.701^2 = 0.240824. The wait's
    scale reads the drain's spread: each request brings cap p + d = 4 x 20 + 10 x N ms (in units of
    1 / (n cap) ms), mean 1080, standard deviation 10 x 50: cv^2 = 500^2 / 1080^2 = 0.214335 (the others'
    prefills are the pool's common stall, not spread of a slot's service). Kimura:
    h = 0.5 (1 + 0.72875 x 7 x (sqrt(44) - 2) / (16 x 0.27125 x 8)) = 0.840371,
    k = 1.214335 / (2 x 0.214335 + 0.785665 / 0.840371) = 0.890554;
    theta = 8 / 1005 x 0.926267 x (1 - 0.27125) / 0.890554 = 6.0336 /s.
    """
    st_ = L.pooled_state(one(), [2.0])
    assert st_.prefill_share[0] == pytest.approx(0.02)
    assert st_.p_wait[0] == pytest.approx(0.0016550, abs=1e-7)
    assert st_.prefill_stretch[0] == pytest.approx(1.017754, abs=1e-6)
    assert st_.ms_per_token[0] == pytest.approx(10.17754, abs=1e-5)
    assert st_.batch_cv2[0] == pytest.approx(0.0, abs=1e-12)
    assert st_.join_ms[0] == pytest.approx(3.1151, abs=1e-4)
    assert st_.interference_var_per_ms[0] == pytest.approx(0.34889, abs=1e-5)
    assert st_.full_ms_per_token[0] == pytest.approx(10.59701, abs=1e-5)
    assert st_.full_join_ms[0] == 0.0
    assert st_.full_service_mean_ms[0] == pytest.approx(1079.701, abs=1e-3)
    assert st_.full_service_cv2[0] == pytest.approx(0.240824, abs=1e-6)
    assert st_.drain_cv2[0] == pytest.approx(0.214335, abs=1e-6)
    assert st_.wait_rate_per_ms[0] * 1000 == pytest.approx(6.0336, abs=1e-4)


def test_drain_spread_golden_and_one_slot():
    """The wait's scale reads the spread of w = cap p + d, d = steps per token x step_ms(cap) x N_eff, over the
    traffic (a member's p with its own N). Two members at 0.5/s, prefills 10 and 40 ms, 100 and 300 tokens
    (cv 0.5: E N^2 = 1.25 m^2), 1 replica x 4 slots of 10 ms: w = 4 p + 10 N has mean 40 + 1000 = 1040 and
    3160, E w^2 = 1040^2 + 1000^2 / 4 = 1,331,600 and 3160^2 + 3000^2 / 4 = 12,235,600; the mixture
    E w = 2100, E w^2 = 6,783,600, cv^2 = 6,783,600 / 2100^2 - 1 = 0.538231. On one slot the drain is the
    service, p + d: the same cv^2 as the service's (Pollaczek–Khinchine's k = (1 + cv^2) / 2 exactly)."""
    dep = L.PooledDeployments.build(row=[0, 0], arrival_rate_per_s=[0.5, 0.5], prefill_ms=[10.0, 40.0],
                                    output_mean_tokens=[100.0, 300.0], slo_ms=5000.0, step_ms=[[10.0] * 4],
                                    concurrency_cap=4)
    assert L.pooled_state(dep, [1.0]).drain_cv2[0] == pytest.approx(0.538231, abs=1e-6)
    st1 = L.pooled_state(L.PooledDeployments.build(row=[0, 0], arrival_rate_per_s=[0.2, 0.2], prefill_ms=[10.0, 40.0],
                                                   output_mean_tokens=[100.0, 300.0], slo_ms=5000.0,
                                                   step_ms=[[10.0]], concurrency_cap=1), [1.0])
    assert st1.stable[0]
    assert st1.drain_cv2[0] == pytest.approx(st1.full_service_cv2[0], rel=1e-12)


def test_chain_without_prefill_is_erlang_c():
    """No prefill, flat step: the chain is M/M/c on n x cap slots with A = lambda tau, so C is Erlang C exactly."""
    dep = one(prefill_ms=0.0, arrival_rate_per_s=6.0)
    st_ = L.pooled_state(dep, [2.0])
    assert st_.p_wait[0] == pytest.approx(float(erlang_c(8, 6.0 * 1.005)), rel=1e-9)


def test_prefill_time_weighs_on_the_busy_states():
    """Same work per request (1,110 ms: 5 ms prefill + 110 tokens, or 105 ms + 100 tokens), 1.5/s on 4 slots:
    with the larger prefill the queue forms 1.7 x as often (the mechanism behind issue 12's diffusion
    under-sizing): each admission stalls its replica, and admissions crowd into the busy states."""
    light = L.pooled_state(one(prefill_ms=5.0, arrival_rate_per_s=1.5, output_mean_tokens=110.0), [1.0])
    heavy = L.pooled_state(one(prefill_ms=105.0, arrival_rate_per_s=1.5, output_mean_tokens=100.0), [1.0])
    assert light.p_wait[0] == pytest.approx(0.1052, abs=1e-3)
    assert heavy.p_wait[0] == pytest.approx(0.1815, abs=1e-3)


def test_batch_spread_widens_the_free_service_when_the_step_grows_with_the_batch():
    """A compute-bound step curve: the per-token time a request finds varies with the batch, and that
    spread multiplies the output length's (sigma^2 grows by ln(1 + cv^2); here no prefill, so nothing else).
    Decoded in whole blocks, the same spread is the per-token time's (X), apart from the length's (not rounded)."""
    dep = one(arrival_rate_per_s=6.0, prefill_ms=0.0, step_ms=[[5.0 + 4.0 * b for b in range(1, 5)]])
    st_ = L.pooled_state(dep, [3.0])
    assert st_.batch_cv2[0] > 0.01
    svc = st_.service(dep)
    assert svc.sigma[0] ** 2 == pytest.approx(dep.output_sigma[0] ** 2 + np.log1p(st_.batch_cv2[0]))
    assert svc.mean_ms[0] == pytest.approx(st_.service_mean_ms[0], rel=1e-9)
    blk = one(arrival_rate_per_s=6.0, prefill_ms=0.0, step_ms=[[5.0 + 4.0 * b for b in range(1, 5)]],
              block_tokens=32)
    svc_b = L.pooled_state(blk, [3.0]).service(blk)
    assert svc_b.sigma[0] == blk.output_sigma[0]
    assert svc_b.spread_sigma[0] ** 2 == pytest.approx(np.log1p(L.pooled_state(blk, [3.0]).batch_cv2[0]))


# --------------------------------------------------------------------------- whole blocks (diffusion)

def test_whole_blocks_golden():
    """Every request 40 tokens (p95 = mean), blocks of 32: ceil(40 / 32) = 2 blocks, N_eff = 64 tokens;
    S = 50 + 2 x 64 = 178 ms for every request (the physics' ceil(n / L) x S passes)."""
    svc = L.service_time(50.0, 2.0, 40.0, 40.0, block_tokens=32)
    assert svc.mean_ms == pytest.approx(178.0)
    assert svc.var_ms2 == pytest.approx(0.0, abs=1e-9)
    assert svc.quantile(0.95) == pytest.approx(178.0)
    assert svc.survival(177.9) == 1.0 and svc.survival(178.0) == 0.0


def test_whole_blocks_match_monte_carlo():
    """Lognormal lengths in blocks of 32: moments, p95, P(S > t) and P(E + S > t) against 400k draws."""
    rng = np.random.default_rng(1)
    mu, sigma = L.output_lognormal(np.array([40.0, 300.0]))
    svc = L.ServiceTime(np.full(2, 50.0), np.full(2, 2.0), mu, sigma, np.full(2, 32.0))
    s = 50.0 + 2.0 * 32.0 * np.ceil(np.exp(mu[:, None] + sigma[:, None] * rng.standard_normal((2, 400_000))) / 32.0)
    assert svc.mean_ms == pytest.approx(s.mean(axis=1), rel=2e-3)
    assert svc.var_ms2 == pytest.approx(s.var(axis=1), rel=2e-2)
    assert svc.quantile(0.95) == pytest.approx(np.quantile(s, 0.95, axis=1))
    t, theta = np.array([300.0, 1500.0]), np.array([0.004, 0.002])
    assert svc.survival(t) == pytest.approx((s > t[:, None]).mean(axis=1), abs=2e-3)
    e = rng.exponential(1.0 / theta[:, None], s.shape)
    got = L._p_exceed_with_wait(t, svc.a_ms, svc.c_ms_per_token, mu, sigma, theta, svc.block_tokens)
    assert got == pytest.approx(((e + s) > t[:, None]).mean(axis=1), abs=3e-3)
    lo, hi = L._j_bounds(t, svc.a_ms, svc.c_ms_per_token, mu, sigma, theta, svc.block_tokens)
    j = got - svc.survival(t)
    assert (lo <= j + 1e-12).all() and (j <= hi + 1e-12).all()



def test_time_spread_is_not_rounded_to_whole_blocks():
    """Every request 40 tokens (2 blocks of 32, N_eff = 64), per-token time spread X ~ LogNormal(-s^2/2, s),
    s = 0.3: S = 50 + 2 x 64 x X, p95 = 50 + 128 exp(-0.045 + 1.6449 x 0.3) = 50 + 128 x 1.5659 = 250.4 ms.
    (Folded into the length and rounded, as before, 40 x 1.5659 = 62.6 tokens is still 2 blocks: 178 ms, no
    spread at all: the gap behind the diffusion deployments' short outputs, issue 12.)"""
    mu, sigma = L.output_lognormal(40.0, 40.0)
    svc = L.ServiceTime(np.array([50.0]), np.array([2.0]), mu[None], sigma[None], 32.0, 0.3)
    assert svc.quantile(0.95)[0] == pytest.approx(250.4, abs=0.1)
    assert svc.survival(svc.quantile(0.95))[0] == pytest.approx(0.05, abs=1e-9)
    assert svc.mean_ms[0] == pytest.approx(178.0)
    assert svc.var_ms2[0] == pytest.approx(128.0**2 * np.expm1(0.09))


def test_whole_blocks_with_a_time_spread_match_monte_carlo():
    """Lognormal lengths in blocks of 32 times a per-token spread: P(S > t), p95, moments against 400k draws;
    the closed-form quantile bounds bracket the p95."""
    rng = np.random.default_rng(2)
    mu, sigma = L.output_lognormal(np.array([40.0, 300.0, 2000.0]))
    sx = np.array([0.35, 0.2, 0.6])
    svc = L.ServiceTime(np.full(3, 50.0), np.full(3, 2.0), mu, sigma, np.full(3, 32.0), sx)
    n = np.exp(mu[:, None] + sigma[:, None] * rng.standard_normal((3, 400_000)))
    x = np.exp(-sx[:, None] ** 2 / 2 + sx[:, None] * rng.standard_normal((3, 400_000)))
    s = 50.0 + 2.0 * 32.0 * np.ceil(n / 32.0) * x
    assert svc.mean_ms == pytest.approx(s.mean(axis=1), rel=3e-3)
    assert svc.var_ms2 == pytest.approx(s.var(axis=1), rel=3e-2)
    assert svc.quantile(0.95) == pytest.approx(np.quantile(s, 0.95, axis=1), rel=3e-3)
    for q in (0.5, 0.95, 0.99):
        t = np.quantile(s, q, axis=1)
        assert svc.survival(t) == pytest.approx((s > t[:, None]).mean(axis=1), abs=2e-3)
    lo, hi = svc.quantile_bounds(0.95)
    assert (lo <= svc.quantile(0.95)).all() and (svc.quantile(0.95) <= hi).all()

def test_mmc_limit_is_erlang_c_with_the_wait_scale():
    """No prefill, constant step: P(W > t) of the model is queueing.p_wait_exceeds on n x cap servers, whose
    service is the chain's: 100 tokens x 10 ms plus the wait for a step boundary, 1005 ms."""
    dep = one(prefill_ms=0.0, arrival_rate_per_s=6.0)
    st_ = L.pooled_state(dep, [2.0])
    svc_s = (100 * 10.0 + 10.0 / 2) / 1000
    t_s = 0.3
    ours = st_.p_wait[0] * np.exp(-st_.wait_rate_per_ms[0] * t_s * 1000)
    # No prefill: the drain's spread is the service's.
    assert st_.drain_cv2[0] == pytest.approx(st_.full_service_cv2[0], rel=1e-12)
    theirs = p_wait_exceeds(8, 6.0, svc_s, t_s, service_cv2=st_.drain_cv2[0])
    # Same decay; C differs only by the half-step join wait in the free requests' service.
    assert ours == pytest.approx(theirs, rel=0.02)


# --------------------------------------------------------------------------- the wait + service convolution

def test_convolution_matches_adaptive_quadrature():
    """P(E + S > t) by the two-panel Gauss–Legendre rule against scipy's quad, on 20 random cases."""
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(20):
        a, c = rng.uniform(0, 300), rng.uniform(1, 30)
        sigma = rng.uniform(0.1, 1.2)
        mu = np.log(rng.uniform(20, 1000)) - sigma**2 / 2
        theta = 10 ** rng.uniform(-4, -0.5)
        t = a + c * np.exp(mu + sigma * rng.uniform(-1, 3))

        def dens(s, a=a, c=c, sigma=sigma, mu=mu, theta=theta, t=t):
            return stats.lognorm.pdf((s - a) / c, sigma, scale=np.exp(mu)) / c * np.exp(-theta * (t - s))

        pts = [p for p in (a + c * np.exp(mu + sigma * np.linspace(-6, 6, 25))) if a < p < t]
        j, _ = integrate.quad(dens, a, t, points=pts or None, limit=500, epsabs=1e-13, epsrel=1e-10)
        exact = L._survival(np.array(t), a, c, mu, sigma) + j
        got = L._p_exceed_with_wait(*(np.array([x]) for x in (t, a, c, mu, sigma, theta)))[0]
        worst = max(worst, abs(got - exact) / exact)
    assert worst < 1e-5


def test_closed_form_bounds_hold():
    """The lower and upper bounds used to skip the quadrature bracket it."""
    rng = np.random.default_rng(3)
    n = 20_000
    a, c = rng.uniform(0, 300, n), rng.uniform(1, 30, n)
    sigma = rng.uniform(0.05, 1.5, n)
    mu = np.log(rng.uniform(20, 1000, n)) - sigma**2 / 2
    theta = 10 ** rng.uniform(-5, 0, n)
    t = a + c * np.exp(mu + sigma * rng.uniform(-2, 4, n))
    j = L._p_exceed_with_wait(t, a, c, mu, sigma, theta) - L._survival(t, a, c, mu, sigma)
    lo, hi = L._j_bounds(t, a, c, mu, sigma, theta)
    assert (lo <= j + 1e-12).all() and (j <= hi + 1e-12).all()


def test_p95_without_waiting_is_the_service_p95():
    """A trickle of traffic on many slots: nobody waits, the p95 is the service time's own."""
    dep = one(arrival_rate_per_s=0.001)
    st_ = L.pooled_state(dep, [4.0])
    assert st_.p_wait[0] < 1e-12
    want = st_.service(dep).quantile(0.95)[0]
    assert L.p95_ms(dep, [4.0])[0] == pytest.approx(want, rel=1e-4)


def test_escalated_requests_share_the_one_budget():
    """4 % escalated with +10 s: P(T > t) = 0.96 P(S > t) + 0.04 P(S > t - 10 s); at the p95 that sums to 5 %.

    With no waiting the p95 solves 0.96 F(t) + 0.04 F(t - 10,000) = 0.05, where F(t - 10,000) = 1 for any
    t near the service p95 (about 2 s), so F(t) = 0.01 / 0.96: the service's 98.96th percentile.
    """
    dep = one(arrival_rate_per_s=0.001, escalated_share=0.04, escalated_extra_ms=10_000.0)
    svc = L.pooled_state(dep, [4.0]).service(dep)
    want = svc.quantile(1 - 0.01 / 0.96)[0]
    assert L.p95_ms(dep, [4.0])[0] == pytest.approx(want, rel=1e-4)


def test_unstable_deployment_has_no_p95():
    """More work than the slots can serve at the full batch: the p95 is infinite, P(T > t) is 1."""
    dep = one(arrival_rate_per_s=50.0)
    assert not L.pooled_state(dep, [1.0]).stable[0]
    assert np.isinf(L.p95_ms(dep, [1.0])[0])
    assert L.p_exceed(dep, [1.0], 1e9)[0] == 1.0


# --------------------------------------------------------------------------- sizing

def test_min_replicas_is_the_fewest_that_meets_every_target():
    dep = three(scale=4.0)
    sizing = L.min_replicas(dep)
    n = int(sizing.replicas[0])
    assert n >= 1
    assert (L.p_exceed(dep, [n], dep.slo_ms) <= L.SLO_TAIL).all()
    assert (L.p95_ms(dep, [n]) <= dep.slo_ms * (1 + 1e-4)).all()
    below = L.p_exceed(dep, [n - 1], dep.slo_ms)
    assert (below > L.SLO_TAIL).any()
    assert below[sizing.binding[0]] > L.SLO_TAIL


def test_no_replica_count_helps_when_the_service_tail_alone_misses():
    """A 1.5 s target for 800 tokens at >= 7.3 ms each (5.8 s on average): -1, and that workload binds."""
    dep = three()
    dep = L.PooledDeployments.build(
        row=dep.row, arrival_rate_per_s=dep.arrival_rate_per_s, prefill_ms=dep.prefill_ms,
        output_mean_tokens=dep.output_mean_tokens, output_p95_tokens=dep.output_p95_tokens,
        slo_ms=[8000.0, 1500.0, 1500.0], step_ms=dep.step_ms, concurrency_cap=dep.concurrency_cap)
    sizing = L.min_replicas(dep)
    assert sizing.replicas[0] == -1 and sizing.service_tail_misses[0]
    assert sizing.binding[0] == 2


def test_min_replicas_vectorised_equals_one_by_one():
    """Several configurations in one call give the same answers as each alone (rows do not leak)."""
    deps = [three(scale=s, cap=c) for s, c in ((1.0, 16), (3.0, 16), (6.0, 8), (0.5, 4))]
    b = max(d.step_ms.shape[1] for d in deps)
    step = np.full((len(deps), b), np.nan)
    for i, d in enumerate(deps):
        step[i, : d.step_ms.shape[1]] = d.step_ms[0]
    joined = L.PooledDeployments.build(
        row=np.repeat(np.arange(len(deps)), 3), arrival_rate_per_s=np.concatenate([d.arrival_rate_per_s for d in deps]),
        prefill_ms=np.tile(deps[0].prefill_ms, 4), output_mean_tokens=np.tile(deps[0].output_mean_tokens, 4),
        output_p95_tokens=np.tile(deps[0].output_p95_tokens, 4), slo_ms=np.tile(deps[0].slo_ms, 4),
        escalated_share=np.tile(deps[0].escalated_share, 4), escalated_extra_ms=np.tile(deps[0].escalated_extra_ms, 4),
        step_ms=step, concurrency_cap=[d.concurrency_cap[0] for d in deps])
    together = L.min_replicas(joined)
    alone = [int(L.min_replicas(d).replicas[0]) for d in deps]
    assert together.replicas.tolist() == alone
    assert (together.binding // 3 == np.arange(4)).all()


def test_min_replicas_many_workloads_many_configurations():
    """5,000 workloads on 4 routes x 3 caps: every configuration's answer passes and one fewer misses."""
    rng = np.random.default_rng(11)
    w, routes, caps = 5_000, 4, np.array([8, 16, 32])
    route = rng.integers(0, routes, w)
    base, slope = rng.uniform(5, 15, routes), rng.uniform(0.05, 0.4, routes)
    step = np.array([[base[r] + slope[r] * b for b in range(1, 33)] for r in range(routes) for _ in caps])
    mean = rng.uniform(20, 800, w)
    pre = rng.uniform(2, 30, w)
    slo = (pre + mean * base[route]) * rng.uniform(2.5, 6, w)
    rows = (route[:, None] * len(caps) + np.arange(len(caps))).ravel()
    rep = lambda x: np.repeat(x, len(caps))  # noqa: E731
    dep = L.PooledDeployments.build(row=rows, arrival_rate_per_s=rep(rng.lognormal(-3, 1, w)), prefill_ms=rep(pre),
                                    output_mean_tokens=rep(mean), slo_ms=rep(slo), step_ms=step,
                                    concurrency_cap=np.tile(caps, routes))
    n = L.min_replicas(dep).replicas
    assert (n > 0).all()
    ok_at = np.bincount(dep.row, L.p_exceed(dep, n, dep.slo_ms) > L.SLO_TAIL, minlength=dep.rows) == 0
    ok_below = np.bincount(dep.row, L.p_exceed(dep, n - 1, dep.slo_ms) > L.SLO_TAIL, minlength=dep.rows) == 0
    assert ok_at.all() and not ok_below.any()


deployments = st.builds(
    lambda scale, cap, slope, mean, slo_x: L.PooledDeployments.build(
        row=[0, 0], arrival_rate_per_s=[2.0 * scale, 5.0 * scale], prefill_ms=[15.0, 5.0],
        output_mean_tokens=[mean, 60.0], slo_ms=[(15.0 + mean * 8.0) * slo_x, 1500.0],
        step_ms=[[6.0 + slope * b for b in range(1, cap + 1)]], concurrency_cap=cap),
    st.floats(0.2, 8.0), st.sampled_from([4, 8, 16, 32]), st.floats(0.0, 0.6), st.floats(30.0, 600.0),
    st.floats(1.5, 5.0))


@settings(max_examples=25, deadline=None)
@given(deployments, st.integers(1, 40))
def test_more_replicas_never_raise_any_p95(dep, n):
    """Adding a replica lowers the batch, the prefill interference and the wait: no p95 goes up."""
    now, more = L.p95_ms(dep, [float(n)]), L.p95_ms(dep, [float(n + 1)])
    finite = np.isfinite(now)
    # The quantile is solved to a relative width of 1e-5 (percentile_ms): once a replica more changes
    # nothing (no wait, no interference left), two answers may differ by that much either way.
    assert (more[finite] <= now[finite] * (1 + 1e-5)).all()


@settings(max_examples=25, deadline=None)
@given(deployments, st.floats(0.5, 0.99))
def test_tighter_target_never_needs_fewer_replicas(dep, tighter):
    loose = int(L.min_replicas(dep).replicas[0])
    tight_dep = L.PooledDeployments.build(
        row=dep.row, arrival_rate_per_s=dep.arrival_rate_per_s, prefill_ms=dep.prefill_ms,
        output_mean_tokens=dep.output_mean_tokens, slo_ms=dep.slo_ms * tighter, step_ms=dep.step_ms,
        concurrency_cap=dep.concurrency_cap)
    tight = int(L.min_replicas(tight_dep).replicas[0])
    assert tight == -1 or (loose != -1 and tight >= loose)


random_pools = st.builds(
    lambda seed, configs, items, batches: _random_pool(np.random.default_rng(seed), configs, items, batches),
    st.integers(0, 2**32 - 1), st.integers(1, 10), st.integers(1, 25), st.sampled_from([1, 4, 16, 64, 256]))


def _random_pool(rng, R, n_items, B):
    """Pools of every shape the plan sizes: idle and busy members, no prefill, one slot to 256, AR and
    speculative/diffusion step counts, default and given output spreads."""
    dep = L.PooledDeployments.build(
        row=rng.integers(0, R, n_items),
        arrival_rate_per_s=rng.uniform(0, 5, n_items) * (rng.random(n_items) > 0.1),
        prefill_ms=rng.uniform(0, 500, n_items) * (rng.random(n_items) > 0.2),
        output_mean_tokens=rng.uniform(10, 800, n_items), slo_ms=rng.uniform(500, 20000, n_items),
        step_ms=np.sort(rng.uniform(5, 60, (R, B)), axis=1), concurrency_cap=rng.integers(1, B + 1, R),
        output_p95_tokens=np.where(rng.random(n_items) > 0.5, np.nan, rng.uniform(900, 3000, n_items)),
        steps_per_token=rng.choice([1.0, 0.5, 0.25], R))
    replicas = [rng.integers(0, 40, R).astype(float), np.full(R, 1e15), rng.integers(1, 3, R).astype(float),
                rng.integers(50, 500, R).astype(float)][int(rng.integers(0, 4))]
    return dep, replicas


@settings(max_examples=60, deadline=None)
@given(random_pools)
def test_compiled_chain_is_the_reference_chain(pool):
    """pooled_state (numba loops) gives pooled_state_py's figures (numpy arrays) to rounding: the loops sum in
    order where numpy sums pairwise, ~1e-13 relative at most (the stretch 1 / (1 - phi) near a full replica
    amplifies it); batch_cv2 = E c^2 / (E c)^2 - 1 cancels, so it compares absolutely."""
    from dataclasses import fields

    from core.decision.latency.chain import pooled_state_py

    dep, replicas = pool
    got, want = L.pooled_state(dep, replicas), pooled_state_py(dep, replicas)
    for f in fields(got):
        x, y = np.asarray(getattr(got, f.name), dtype=float), np.asarray(getattr(want, f.name), dtype=float)
        assert x.shape == y.shape
        if f.name == "batch_cv2":
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-12, err_msg=f.name)
        else:
            np.testing.assert_allclose(x, y, rtol=1e-11, atol=0, err_msg=f.name)


def test_compiled_chain_wait_scale_is_queueing_wait_scale():
    """The compiled loop inlines queueing.wait_scale: its wait rate theta = D_eff (1 - r_q) / k gives back
    the same k on deployments that queue."""
    from core.decision.queueing import wait_scale

    rng = np.random.default_rng(7)
    dep, _ = _random_pool(rng, 8, 20, 64)
    st_ = L.pooled_state(dep, np.full(8, 3.0))
    k = np.asarray(dep.concurrency_cap, dtype=float) * 3.0
    ok = st_.stable & (st_.wait_rate_per_ms > 0)
    assert ok.any()
    step_cap = dep.step_ms[np.arange(8), dep.concurrency_cap - 1]
    en = dep.moments.n / dep.moments.lam
    tau_cap = dep.steps_per_token * en * step_cap + step_cap / 2.0
    r_q = dep.moments.lam / 1000.0 * (tau_cap / k + dep.moments.pre / dep.moments.lam / 3.0)
    f_q = np.maximum(np.minimum(st_.prefill_share / r_q, 1.0 - 1e-9), np.minimum(st_.prefill_share, 1.0))
    d_eff = k / tau_cap * (1.0 - f_q)
    implied = d_eff * (1.0 - r_q) / st_.wait_rate_per_ms
    np.testing.assert_allclose(implied[ok], wait_scale(k, r_q, st_.drain_cv2)[ok], rtol=1e-12)


def test_compiled_tail_functions_are_scipys():
    """tailloop's ndtr (Cephes' formula on libm's erf/erfc) and erfcx (direct below 5, continued fraction above,
    reflection below 0) against scipy's over the range the bounds reach."""
    from scipy import special

    from core.decision.latency.tailloop import erfcx, ndtr

    xs = np.concatenate([np.linspace(-26.0, 60.0, 4001), [1e3, 1e8, 0.0, -0.0]])
    np.testing.assert_allclose([erfcx(x) for x in xs], special.erfcx(xs), rtol=1e-13)
    ys = np.linspace(-37.0, 9.0, 4001)
    np.testing.assert_allclose([ndtr(y) for y in ys], special.ndtr(ys), rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(random_pools, st.floats(0.3, 2.0), st.booleans(), st.sampled_from([(1.0,), (4.0, 1.0), (16.0, 32.0)]))
def test_compiled_bounds_are_the_reference_bounds(pool, at, escalates, blocks):
    """The closed-form bounds of P(T > t) from the compiled loop equal the numpy reference's: to ~1e-15 for
    token-by-token service; within 1e-9 where whole blocks are decoded with a spread of the per-token time (the
    geometric groups' edges are whole blocks floored from exp(), which numpy and libm may round a block apart:
    the grouping itself is an approximation within 3e-7). Escalated requests, unstable pools, calls mixing
    block sizes and a subset of the rows (the groups are the call's) included. Asked for the lower bound alone
    (lo_only: the sizing's first guess and worst misses), the loop gives the same lower bound to the bit."""
    from core.decision.latency.exact import _p_items

    dep, replicas = pool
    L_cfg = np.resize(np.asarray(blocks), dep.rows)
    dep = L.PooledDeployments.build(
        row=dep.row, arrival_rate_per_s=dep.arrival_rate_per_s, prefill_ms=dep.prefill_ms,
        output_mean_tokens=dep.output_mean_tokens, output_p95_tokens=dep.output_p95_tokens, slo_ms=dep.slo_ms,
        step_ms=np.nan_to_num(dep.step_ms, nan=1.0), concurrency_cap=dep.concurrency_cap,
        steps_per_token=dep.steps_per_token, block_tokens=L_cfg, escalated_extra_ms=1500.0,
        escalated_share=np.where(np.arange(dep.row.size) % 3 == 0, 0.1, 0.0) if escalates else 0.0)
    state = L.pooled_state(dep, replicas)
    for idx in (np.arange(dep.row.size), np.arange(0, dep.row.size, 2)):
        t = dep.slo_ms[idx] * at
        tol = 1e-9 if (dep.row_block_tokens[idx] > 1).any() else 1e-14
        for got, want in zip(_p_items(dep, state, idx, t, exact=False),
                             _p_items(dep, state, idx, t, exact=False, compiled=False), strict=True):
            np.testing.assert_allclose(got, want, rtol=0, atol=tol)
        np.testing.assert_array_equal(_p_items(dep, state, idx, t, exact=False, lo_only=True)[0],
                                      _p_items(dep, state, idx, t, exact=False)[0])


def test_a_configuration_without_members_is_solved():
    """No member rows at all (the traffic sums are then integer zeros from bincount): the compiled chain and tail
    bounds take them as floats: no traffic, nothing waits, no replica needed."""
    none = np.zeros(0)
    dep = L.PooledDeployments.build(row=np.zeros(0, dtype=int), arrival_rate_per_s=none, prefill_ms=none,
                                    output_mean_tokens=none, slo_ms=none, step_ms=[[10.0, 11.0]], concurrency_cap=2)
    state = L.pooled_state(dep, [1.0])
    assert state.p_wait[0] == 0.0 and bool(state.stable[0])
    assert L.min_replicas(dep).replicas.tolist() == [0]
    assert L.p95_ms(dep, [1.0]).size == 0


def test_bad_input_names_the_array():
    with pytest.raises(ValueError, match="slo_ms"):
        one(slo_ms=-1.0)
    with pytest.raises(ValueError, match="prefill_ms"):
        one(prefill_ms=[1.0, 2.0])
    with pytest.raises(ValueError, match="concurrency_cap"):
        one(concurrency_cap=9)


@pytest.mark.parametrize(("name", "bad"), [
    ("arrival_rate_per_s", -0.1), ("arrival_rate_per_s", np.nan), ("prefill_ms", -1.0),
    ("output_mean_tokens", 0.0), ("output_p95_tokens", 0.0), ("output_p95_tokens", -5.0), ("slo_ms", 0.0),
    ("slo_ms", np.nan), ("escalated_share", 1.01), ("escalated_share", -0.01), ("escalated_extra_ms", -1.0)])
def test_each_out_of_range_row_array_is_named_alone(name, bad):
    """Each per-row array's range, checked over one block (build): the bad one is named, and only it."""
    with pytest.raises(ValueError, match="values in " + name + "$"):
        one(**{name: bad})


def test_in_range_edges_and_a_missing_p95_are_accepted():
    """The edges build allows: no traffic, no prefill, everything escalated, a NaN p95 (the default spread), and
    one value for all rows broadcast to each."""
    dep = one(row=[0, 0], arrival_rate_per_s=0.0, prefill_ms=0.0, output_p95_tokens=[np.nan, 300.0],
              escalated_share=1.0, escalated_extra_ms=0.0, output_mean_tokens=[100.0, 200.0])
    assert dep.arrival_rate_per_s.tolist() == [0.0, 0.0] and dep.escalated_share.tolist() == [1.0, 1.0]
    assert np.isnan(dep.output_p95_tokens[0]) and dep.output_p95_tokens[1] == 300.0
    assert dep.output_mean_tokens.tolist() == [100.0, 200.0]
