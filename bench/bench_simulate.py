"""Times the peak-hour simulation of one deployment and the analytic sizing (min_replicas, p95) at scale.

Run by hand: python bench/bench_simulate.py  (not part of the test suite)
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np

from core.decision import latency
from core.decision.simulate import (
    DeploymentLoad,
    WorkloadLoad,
    simulate_deployment,
    simulate_latencies,
)


def peak_hour_deployment() -> DeploymentLoad:
    """Three workloads at 36 requests/s in all (129,600 in the peak hour), sized by min_replicas, cap 32.

    Step time 8 ms + 0.06 ms per running request (an 8B-class model on one H100-class
    GPU, memory-bound: an estimate of the shape physics gives, not a measurement).
    """
    cap = 32
    step = [8.0 + 0.06 * b for b in range(1, cap + 1)]
    ws = [WorkloadLoad("chat", 12.0, 20.0, 250.0, 6000.0),
          WorkloadLoad("code", 20.0, 8.0, 60.0, 1500.0, output_p95_tokens=150.0),
          WorkloadLoad("agent", 4.0, 40.0, 600.0, 15000.0, escalated_share=0.1, escalated_extra_ms=1500.0)]
    dep = DeploymentLoad(1, cap, step, ws, deployment_id="bench")
    n = int(latency.min_replicas(dep.pooled()).replicas[0])
    return dep.with_replicas(n)


def inventory(workloads: int, routes: int, caps: np.ndarray, seed: int = 0) -> latency.PooledDeployments:
    """`workloads` generated workloads spread over `routes` deployments, each tried at every cap."""
    rng = np.random.default_rng(seed)
    route = rng.integers(0, routes, workloads)
    base, slope = rng.uniform(5, 20, routes), rng.uniform(0.02, 0.5, routes)
    b = int(caps.max())
    step = np.array([[base[r] + slope[r] * k for k in range(1, b + 1)] for r in range(routes) for _ in caps])
    lam = rng.lognormal(-2, 1.5, workloads)
    pre = rng.uniform(0.25, 10, workloads)
    mean = rng.uniform(20, 1500, workloads)
    slo = (pre + mean * base[route]) * rng.uniform(2.5, 6, workloads) + 1500
    esc = np.where(rng.random(workloads) < 0.1, 0.1, 0.0)
    rows = (route[:, None] * len(caps) + np.arange(len(caps))[None, :]).ravel()

    def rep(x):
        return np.repeat(x, len(caps))

    return latency.PooledDeployments.build(
        row=rows, arrival_rate_per_s=rep(lam), prefill_ms=rep(pre), output_mean_tokens=rep(mean), slo_ms=rep(slo),
        step_ms=step, concurrency_cap=np.tile(caps, routes), escalated_share=rep(esc), escalated_extra_ms=1500.0)


def median_time(fn, runs: int = 3) -> tuple[float, float]:
    """(median wall s, median CPU s of this process): on a shared machine the CPU time is the steadier figure."""
    wall, cpu = [], []
    for _ in range(runs):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    print(f"load average at start: {os.getloadavg()[0]:.1f} (2 cores)")
    dep = peak_hour_deployment()
    hour = int(dep.arrival_rate_per_s * 3600)
    print(f"deployment: {dep.replicas} replicas x {dep.concurrency_cap} slots, {hour:,} requests in the peak hour")
    t_one, c_one = median_time(lambda: simulate_latencies(dep, hour, seed=0))
    print(f"one peak-hour simulation ({hour:,} requests): median {t_one:.2f} s wall, {c_one:.2f} s CPU "
          f"({c_one / hour * 1e6:.1f} us CPU/request)")
    c = time.process_time()
    res = simulate_deployment(dep, seed=0)
    print(f"simulate_deployment (default size, plus one replica fewer): {res.seconds:.2f} s wall, "
          f"{time.process_time() - c:.2f} s CPU, {res.requests:,} requests per run")
    for w in res.workloads:
        lo, hi = w.simulated_p95_ci_ms
        print(f"  {w.workload_id:6s} analytic p95 {w.analytic_p95_ms:7.0f} ms, simulated {w.simulated_p95_ms:7.0f} "
              f"[{lo:.0f}, {hi:.0f}], within target {w.share_within_slo:.3f}")
    print(f"  worst share within target with one replica fewer: {res.share_within_slo_one_replica_fewer:.3f}")

    caps = np.array([1, 2, 4, 8, 16, 32, 64, 128])
    for workloads, caps_used in ((100_000, caps[5:6]), (100_000, caps)):
        inv = inventory(workloads, 10, caps_used)
        t_min, c_min = median_time(lambda inv=inv: latency.min_replicas(inv))
        n = np.maximum(latency.min_replicas(inv).replicas, 1).astype(float)
        t_p95, c_p95 = median_time(lambda inv=inv, n=n: latency.p95_ms(inv, n), runs=1)
        print(f"min_replicas, {workloads:,} workloads x {len(caps_used)} caps on 10 routes "
              f"({inv.row.size:,} rows): median {t_min:.2f} s wall / {c_min:.2f} s CPU; "
              f"p95 of every row: {t_p95:.2f} s wall / {c_p95:.2f} s CPU")
    chain_per_call()


def chain_per_call(calls: int = 2000) -> None:
    """CPU per pooled_state call, compiled and the numpy reference, on the pool sizes the plan's search solves
    (one pool at one cap, and 3 pools x 6 caps: a batch of sized moves)."""
    from core.decision.latency.chain import pooled_state_py

    latency.pooled_state(inventory(10, 1, np.array([8])), np.ones(1))  # the compiled loop loaded or compiled
    for configs, caps in ((1, np.array([32])), (18, np.array([2, 4, 8, 16, 32, 64]))):
        dep = inventory(9 * configs, configs // len(caps) or 1, caps, seed=1)
        n = np.full(dep.rows, 3.0)
        per = []
        for fn in (latency.pooled_state, pooled_state_py):
            c = time.process_time()
            for _ in range(calls):
                fn(dep, n)
            per.append((time.process_time() - c) / calls * 1e6)
        print(f"pooled_state on {dep.rows} configuration(s): {per[0]:.0f} us CPU a call compiled, "
              f"{per[1]:.0f} us the numpy reference ({per[1] / per[0]:.1f}x)")


if __name__ == "__main__":
    main()
