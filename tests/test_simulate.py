"""The continuous-batching simulation: a hand-traced run, Erlang C, and agreement with the analytic p95."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.decision import latency
from core.decision.queueing import erlang_c
from core.decision.simulate import (
    MAX_REQUESTS,
    DeploymentLoad,
    WorkloadLoad,
    analytic_p95,
    draw_requests,
    percentile_ci,
    run_requests,
    run_requests_py,
    simulate_deployment,
    simulate_latencies,
    under_share,
)


def test_event_loop_hand_traced():
    """One replica, 2 slots, step 10 ms alone / 12 ms for two, prefill 5 ms each.

    q0 arrives at 0 (3 steps): idle, prefill 0-5, decodes from 5.
    q1 arrives at 1 (2 steps): admitted at the next boundary, 5 (end of q0's prefill):
      its prefill 5-10 pauses q0. From 10, two decode at 12 ms a step: q1 ends at 10 + 2 x 12 = 34;
      q0 has 1 step left alone at 10 ms: ends at 44.
    q2 arrives at 100 (1 step): idle, prefill 100-105, one step: ends at 115.
    Nobody queued (a slot was always free).
    """
    done, waited = run_requests([10.0, 12.0], 2, 1, np.array([0.0, 1.0, 100.0]), np.array([3, 2, 1]),
                                np.array([5.0, 5.0, 5.0]))
    assert done.tolist() == [44.0, 34.0, 115.0]
    assert not waited.any()


def test_event_loop_queue_takes_the_freed_slot():
    """One replica, 1 slot, step 10 ms, no prefill: q1 (arrives at 1) waits for q0's 2 steps (ends 20), then
    runs 2 steps (ends 40); q2 (arrives at 2) waits for it, ends 60. FIFO, and the two later ones queued."""
    done, waited = run_requests([10.0], 1, 1, np.array([0.0, 1.0, 2.0]), np.array([2, 2, 2]), np.zeros(3))
    assert done.tolist() == [20.0, 40.0, 60.0]
    assert waited.tolist() == [False, True, True]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), cap=st.integers(1, 24), replicas=st.integers(1, 5),
       n=st.integers(1, 1500), load=st.floats(0.05, 3.0), grid=st.booleans(), prefills=st.booleans())
def test_compiled_loop_equals_the_python_loop(seed, cap, replicas, n, load, grid, prefills):
    """The compiled event loop (core.decision.simloop) gives every request the same completion time, bit for
    bit, and the same queued flag as the Python reference, from idle to overloaded pools. `grid` puts arrivals
    and step times on whole milliseconds, so events tie in time and the (time, version, replica) order decides."""
    rng = np.random.default_rng(seed)
    step = np.sort(rng.uniform(5.0, 40.0, cap))
    gaps = rng.exponential(step[-1] * 40.0 / (load * replicas * cap), n)
    arrival = np.cumsum(gaps)
    if grid:
        step, arrival = np.round(step), np.floor(arrival)
    steps = rng.integers(1, 120, n)
    prefill = rng.uniform(0.0, 60.0, n) if prefills else np.zeros(n)
    want = run_requests_py(step, cap, replicas, arrival, steps, prefill)
    got = run_requests(step, cap, replicas, arrival, steps, prefill)
    assert np.array_equal(got[0], want[0], equal_nan=True)
    assert np.array_equal(got[1], want[1])
    assert np.isfinite(got[0]).all()  # every request finished


@pytest.mark.parametrize("replicas, cap, rate", [(3, 4, 20.0), (2, 8, 28.0)])
def test_mmc_wait_probability_matches_erlang_c(replicas, cap, rate):
    """Constant 1 ms step, no prefill, exponential output lengths (mean 500): each slot is an M/M/1
    server of mean service E[ceil(Exp(500))] = 1 / (1 - e^{-1/500}) = 500.5 ms, pooled behind one queue,
    i.e. M/M/c with c = replicas x cap. The share of requests that queue is Erlang C's P(wait) within 2 %."""
    dep = DeploymentLoad(replicas, cap, [1.0] * cap, [WorkloadLoad("w", rate, 0.0, 500.0, 5000.0)])
    raw = simulate_latencies(dep, 200_000, seed=1, output_distribution="exponential")
    service_s = 1.0 / (1.0 - np.exp(-1.0 / 500.0)) / 1000.0
    want = float(erlang_c(replicas * cap, rate * service_s))
    assert 0.3 < want < 0.8
    assert raw.waited.mean() == pytest.approx(want, rel=0.02)


@pytest.mark.parametrize("cv, lam, want_ms", [(1.5, 8.0, 112.3), (0.5, 8.0, 59.9), (0.5, 14.0, 109.5)])
def test_wait_of_those_who_wait_matches_the_wait_scale(cv, lam, want_ms):
    """One replica of 4 slots, 1 ms step, no prefill, lognormal outputs (mean 200 tokens, cv 0.5 or 1.5): a
    request that queues is admitted at the step its slot frees and then decodes its tokens, so its wait is
    its time in system minus its steps. The model's mean wait 1 / theta (queueing.wait_scale) is within 8 %
    of the simulated one. Allen–Cunneen's (1 + cv^2) / 2 says 136.0, 52.3 and 105.0 ms here, the simulated
    waits are 108.0, 60.5 and 113.5: it misses the first two by 26 % and 14 % (docs/design/latency_model.md "The
    wait's scale")."""
    sigma = np.sqrt(np.log1p(cv**2))
    p95 = 200.0 * np.exp(1.6448536 * sigma - sigma**2 / 2)
    dep = DeploymentLoad(1, 4, [1.0] * 4, [WorkloadLoad("w", lam, 0.0, 200.0, 1e6, output_p95_tokens=p95)])
    arrival, _, steps, prefill, _ = draw_requests(dep, 200_000, seed=1)
    done, waited = run_requests(dep.step_ms, 4, 1, arrival, steps, prefill)
    keep = slice(10_000, None)
    wait = (done - arrival - steps * 1.0)[keep][waited[keep]]
    theta = latency.pooled_state(dep.pooled(), [1.0]).wait_rate_per_ms[0]
    assert 1.0 / theta == pytest.approx(want_ms, abs=0.1)  # the model's figure, as in the docstring
    assert wait.mean() == pytest.approx(1.0 / theta, rel=0.08)


def queued_waits(dep: DeploymentLoad, requests: int, seed: int) -> tuple[float, float]:
    """Share that queued and the mean wait of those, simulated: a queued request takes (FIFO) the first slot
    that frees after its arrival and that no request queued before it took (each completion frees one slot)."""
    arrival, _, steps, prefill, _ = draw_requests(dep, requests, seed)
    done, waited = run_requests(dep.step_ms, dep.concurrency_cap, dep.replicas, arrival, steps, prefill)
    frees = np.sort(done)
    admitted = arrival.copy()
    j = 0
    for i in np.flatnonzero(waited):
        while frees[j] < arrival[i]:
            j += 1
        admitted[i] = frees[j]
        j += 1
    keep = slice(requests // 20, None)
    return waited[keep].mean(), (admitted - arrival)[keep][waited[keep]].mean()


def _spread(mean: float, cv: float) -> float:
    """The output p95 of a lognormal of this mean and cv."""
    sigma = np.sqrt(np.log1p(cv**2))
    return mean * np.exp(1.6448536 * sigma - sigma**2 / 2)


@pytest.mark.parametrize("cv, prefill, lam, want_ms", [(1.5, 25.0, 6.0, 136.8), (1.5, 50.0, 5.0, 165.3),
                                                         (0.5, 25.0, 8.0, 112.9), (1.0, 50.0, 8.0, 322.4)])
def test_wait_with_long_prefills_reads_the_drains_spread(cv, prefill, lam, want_ms):
    """One replica of 4 slots, 1 ms step, lognormal outputs of mean 200 tokens, 25-50 ms prefills. While a queue
    waits, every completion admits a prefill that stalls the whole replica: the pool drains at a pace whose
    spread is that of cap p + d (the prefill once per replica, the decode per slot), not that of a slot's
    service, whose per-token time carries the others' prefills. Simulated (200k requests, bench_wait_scale):
    113.6, 140.2, 116.6 and 328.1 ms; the model says 136.8, 165.3, 112.9 and 322.4 (with the service's cv^2,
    as before, 175.5, 251.2, 121.9 and 447.6: 1.5 x, 1.8 x, 1.05 x and 1.4 x the simulated)."""
    dep = DeploymentLoad(1, 4, [1.0] * 4, [WorkloadLoad("w", lam, prefill, 200.0, 1e6, _spread(200.0, cv))])
    theta = latency.pooled_state(dep.pooled(), [1.0]).wait_rate_per_ms[0]
    assert 1.0 / theta == pytest.approx(want_ms, abs=0.1)
    _, sim = queued_waits(dep, 100_000, seed=3)
    assert 0.93 * sim < 1.0 / theta < 1.3 * sim  # simulated here (100k, seed 3): 110.5, 139.5, 118.9, 320.9


def test_wait_of_a_mixture_of_lengths():
    """One replica of 4 slots (diffusion: blocks of 32 tokens, 4 steps each) pooling 14 workloads whose output
    means run from 41 to 352 tokens, prefills 8-33 ms (generated inventory, seed 14): the mixture's service
    cv^2 is 0.71 (0.25 with every mean equal), the drain's 0.40. Simulated (the plan's inputs, 200k requests)
    22.0 % queue and wait 111.7 ms; the model says 21.1 % and 115.4 ms (with the service's cv^2, as before:
    136.6 ms, 1.22 x). With the inputs rounded as here: 115.5 ms, simulated (100k, seed 3) 21.6 % and 108.9 ms."""
    members = [(0.6232, 22.35, 42.0, 65.0), (0.2308, 24.2, 352.0, None), (0.0942, 31.25, 322.0, None),
               (0.866, 8.14, 332.0, None), (1.1318, 7.67, 47.0, None), (0.665, 28.66, 190.0, 492.0),
               (1.1455, 30.6, 298.0, None), (0.738, 31.59, 76.0, None), (0.0965, 21.57, 45.0, None),
               (0.3013, 27.08, 334.0, 748.0), (0.8418, 14.6, 41.0, None), (0.4236, 18.99, 188.0, None),
               (1.161, 32.79, 73.0, 192.0), (0.472, 9.99, 251.0, None)]
    ws = [WorkloadLoad(f"w{i}", lam, pre, mean, 1e6, p95) for i, (lam, pre, mean, p95) in enumerate(members)]
    dep = DeploymentLoad(1, 4, [3.4285, 3.5965, 3.7645, 3.9325], ws, steps_per_token=0.25, block_tokens=32)
    st = latency.pooled_state(dep.pooled(), [1.0])
    assert st.full_service_cv2[0] == pytest.approx(0.71, abs=0.01)
    assert st.drain_cv2[0] == pytest.approx(0.40, abs=0.01)
    assert 1.0 / st.wait_rate_per_ms[0] == pytest.approx(115.5, abs=0.1)
    share, sim = queued_waits(dep, 100_000, seed=3)
    assert share == pytest.approx(st.p_wait[0], rel=0.1)
    assert 1.0 / st.wait_rate_per_ms[0] == pytest.approx(sim, rel=0.1)


def pooled(n: int, cap: int, slope: float, rho: float) -> DeploymentLoad:
    """Three workloads (short code completions with their own p95, chat, long agent steps with 10 %
    escalated) on n replicas, scaled so the full-batch utilisation lambda E[S_full] / (n cap) is rho."""
    step = [7.0 + slope * b for b in range(1, cap + 1)]
    ws = [WorkloadLoad("chat", 3.0, 20.0, 300.0, 8000.0),
          WorkloadLoad("code", 8.0, 8.0, 60.0, 1500.0, output_p95_tokens=150.0),
          WorkloadLoad("agent", 1.0, 40.0, 800.0, 20000.0, escalated_share=0.1, escalated_extra_ms=1500.0)]
    scale = 1.0
    for _ in range(6):
        scaled = [WorkloadLoad(w.workload_id, w.arrival_rate_per_s * scale, w.prefill_ms, w.output_mean_tokens,
                               w.slo_ms, w.output_p95_tokens, w.escalated_share, w.escalated_extra_ms) for w in ws]
        dep = DeploymentLoad(n, cap, step, scaled, deployment_id=f"n{n}-cap{cap}")
        st = latency.pooled_state(dep.pooled(), [float(n)])
        now = st.arrival_rate_per_s[0] * st.full_service_mean_ms[0] / 1000.0 / (n * cap)
        scale *= rho / now
    return dep


@pytest.mark.parametrize("n, cap, slope, rho", [(1, 32, 0.08, 0.5), (3, 32, 0.08, 0.85), (1, 16, 0.5, 0.7),
                                                (3, 8, 1.0, 0.7)])
def test_analytic_p95_agrees_with_simulation(n, cap, slope, rho):
    """The analytic p95 of every workload is within 10 % of the simulated one (100k requests)."""
    dep = pooled(n, cap, slope, rho)
    res = simulate_deployment(dep, 100_000, seed=5, one_replica_fewer=False)
    sim = np.array([w.simulated_p95_ms for w in res.workloads])
    ana = analytic_p95(dep)
    assert ana == pytest.approx(np.array([w.analytic_p95_ms for w in res.workloads]))
    assert np.abs(ana / sim - 1.0).max() < 0.10


def test_simulation_result_fields_and_one_replica_fewer():
    """A deployment sized by min_replicas holds its targets in simulation; with one replica fewer the worst
    workload's share within target drops; the same seed gives the same result."""
    dep = pooled(3, 16, 0.3, 0.7)
    sized = latency.min_replicas(dep.pooled())
    n = int(sized.replicas[0])
    dep = dep.with_replicas(n)
    res = simulate_deployment(dep, 40_000, seed=2)
    assert res.replicas == n and res.concurrency_cap == 16 and res.requests == 40_000
    d = res.to_dict()
    assert {"workload_id", "analytic_p95_ms", "simulated_p95_ms", "simulated_p95_ci_ms", "share_within_slo"} \
        <= set(d["workloads"][0])
    assert "share_within_slo_one_replica_fewer" in d
    for w in res.workloads:
        lo, hi = w.simulated_p95_ci_ms
        assert lo <= w.simulated_p95_ms <= hi
        assert w.simulated_p50_ms < w.simulated_p95_ms < w.simulated_p99_ms
        assert w.share_within_slo >= 0.95 - 0.01  # sized analytically: holds in simulation (within noise)
    assert res.share_within_slo_one_replica_fewer < res.share_within_slo
    again = simulate_deployment(dep, 40_000, seed=2)
    assert again.workloads == res.workloads


def test_confidence_interval_within_two_percent_at_the_default_size():
    """At the default size (peak hour, at least 20k requests, more if need be) the pool's p95 of time over
    target, its three workloads' requests together, is known to +-2 %; its busiest member's own p95 to
    within a few % (18k of the run's requests are its)."""
    dep = pooled(2, 16, 0.3, 0.6)
    res = simulate_deployment(dep, seed=3, one_replica_fewer=False)
    raw = simulate_latencies(dep, res.requests, seed=3)
    slo = np.array([w.slo_ms for w in dep.workloads])
    est, lo, hi = percentile_ci(raw.latency_ms / slo[raw.workload], 95.0)
    assert (hi - lo) / 2 <= 0.02 * est
    busiest = max(res.workloads, key=lambda w: w.requests)
    lo, hi = busiest.simulated_p95_ci_ms
    assert (hi - lo) / 2 <= 0.04 * busiest.simulated_p95_ms


def test_run_length_is_set_by_the_pool_not_how_its_traffic_is_split():
    """One workload, and the same traffic as ten copies of a tenth each: the run simulates about as many
    requests either way (the pool's interval sets it), and the plan's test reads the same verdict.

    Sized by each member's interval, the ten quieter copies ran ~4x the requests (each member's p95 interval
    is ~sqrt(10) x wider at the same run length; (sqrt(10))^2 ~ 10x, capped by MAX_REQUESTS): the sample split
    into ten bought a replica at its pessimistic end that the sample itself did not."""
    one = pooled(1, 16, 0.3, 0.9)
    w = one.workloads[1]
    tenth = [WorkloadLoad(f"code-{i}", w.arrival_rate_per_s / 10, w.prefill_ms, w.output_mean_tokens, w.slo_ms,
                          w.output_p95_tokens) for i in range(10)]
    single = DeploymentLoad(1, 16, one.step_ms, [w])
    split = DeploymentLoad(1, 16, one.step_ms, tenth)
    a = simulate_deployment(single, seed=0, one_replica_fewer=False)
    b = simulate_deployment(split, seed=0, one_replica_fewer=False)
    assert 0.8 <= b.requests / a.requests <= 1.25, (a.requests, b.requests)
    assert b.requests < MAX_REQUESTS
    share_a = np.array([x.share_within_slo for x in a.workloads])
    count_a = np.array([float(x.requests) for x in a.workloads])
    share_b = np.array([x.share_within_slo for x in b.workloads])
    count_b = np.array([float(x.requests) for x in b.workloads])
    together = 1 - (count_b * (1 - share_b)).sum() / count_b.sum()
    assert together == pytest.approx(share_a[0], abs=0.01)
    for target in (together - 0.02, together - 0.01, together + 0.01, together + 0.02):
        assert under_share(share_a, count_a, target, 2.0) == under_share(share_b, count_b, target, 2.0), target


def test_members_in_another_order_get_the_same_requests():
    """The pool's members listed in any order are simulated alike: each workload's figures are the same.

    Requests were dealt to members by their place in the pool (the inventory's row order): a generated
    17-workload inventory's plan check added a replica with its rows in one order and not in another."""
    dep = pooled(2, 16, 0.3, 0.8)
    res = simulate_deployment(dep, 20_000, seed=4)
    for order in ([2, 0, 1], [1, 2, 0]):
        moved = DeploymentLoad(dep.replicas, dep.concurrency_cap, dep.step_ms,
                               tuple(dep.workloads[k] for k in order), deployment_id=dep.deployment_id)
        again = simulate_deployment(moved, 20_000, seed=4)
        assert {w.workload_id: w for w in again.workloads} == {w.workload_id: w for w in res.workloads}
        assert again.share_within_slo_one_replica_fewer == res.share_within_slo_one_replica_fewer


def test_a_member_split_into_equal_copies_draws_the_same_requests():
    """The code workload as ten copies of a tenth of its traffic each: the pool's simulated requests, and so
    every request's latency, are the same as with the one workload (the copies' requests together are its).
    Dealt one member at a time, the copies shifted every later request's draw: a generated 20-workload
    inventory with one workload split into ten was checked a node dearer."""
    dep = pooled(2, 16, 0.3, 0.8)
    w = dep.workloads[1]
    tenth = [WorkloadLoad(f"code-{i}", w.arrival_rate_per_s / 10, w.prefill_ms, w.output_mean_tokens, w.slo_ms,
                          w.output_p95_tokens) for i in range(10)]
    split = DeploymentLoad(dep.replicas, dep.concurrency_cap, dep.step_ms, (dep.workloads[0], *tenth, dep.workloads[2]))
    a, b = simulate_latencies(dep, 20_000, seed=4), simulate_latencies(split, 20_000, seed=4)
    # The same to the last bits the rates' sum leaves (ten tenths of a rate are not always the rate).
    np.testing.assert_allclose(b.latency_ms, a.latency_ms, rtol=1e-9, atol=0)
    code = np.isin(b.workload, np.arange(1, 11))
    assert np.array_equal(a.workload == 1, code)
    assert len(np.unique(b.workload[code])) == 10


def test_bad_deployment_is_refused_with_its_name():
    with pytest.raises(ValueError, match="'d1'.*step_ms"):
        DeploymentLoad(1, 4, [10.0, 11.0], [WorkloadLoad("w", 1.0, 5.0, 100.0, 1000.0)], deployment_id="d1")
    with pytest.raises(ValueError, match="workload 'w'"):
        DeploymentLoad(1, 1, [10.0], [WorkloadLoad("w", -1.0, 5.0, 100.0, 1000.0)])
