"""The wait of requests that queue for a slot, simulated against the latency model (Kimura's k and Allen–Cunneen's).

Run by hand: python bench/bench_wait_scale.py [--requests 200000] [--seed 1]
One workload on replicas x cap slots, a flat 1 ms step (no batching effect), lognormal output lengths of mean
200 tokens and cv 0.5 / 1.0 / 1.5, at 40 / 60 / 80 % load, then one replica of 4 slots with prefills of 10-50 ms
(cv 0.5 / 1.0 / 1.5), then on 1 x 4 slots a mixture of three members whose means differ (50 / 200 / 350 tokens)
against one workload of the mixture's mean and cv^2.
A queued request is admitted at the step boundary where its slot frees: its admission time is replayed from the
simulation's completion times (admission_times: FIFO, each completion frees one slot).
Prints per case: the share that queued (simulated, analytic), the mean wait of those (simulated, the model's
1 / theta, and what Allen–Cunneen's (1 + cv^2) / 2 of the service's cv^2 gives), a queued request's mean service
(simulated, model) and the analytic / simulated p95 of time in system (a mixture: lowest-highest over members).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.decision import latency, queueing, simulate  # noqa: E402


def workload(name: str, lam: float, prefill: float, mean: float, cv: float) -> simulate.WorkloadLoad:
    """A workload of lognormal output lengths with this mean and cv (its p95 set to match)."""
    sigma = np.sqrt(np.log1p(cv**2))
    return simulate.WorkloadLoad(name, lam, prefill, mean, 1e9,
                                 output_p95_tokens=mean * np.exp(1.6448536 * sigma - sigma**2 / 2))


def case(cap: int, replicas: int, lam: float, cv: float, prefill: float, requests: int, seed: int) -> str:
    """One table row: simulated against analytic for one workload of mean 200 tokens at `lam` requests/s."""
    d = simulate.DeploymentLoad(replicas, cap, tuple([1.0] * cap), (workload("w", lam, prefill, 200.0, cv),))
    return row(d, f"{cv:g}", requests, seed)


def row(d: simulate.DeploymentLoad, spread: str, requests: int, seed: int) -> str:
    """One table row for deployment d (several members: the queued service over all of them, the p95 ratio's
    lowest-highest over the members)."""
    cap, replicas = d.concurrency_cap, d.replicas
    arrival, which, steps, pre, _ = simulate.draw_requests(d, requests, seed)
    done, waited = simulate.run_requests(d.step_ms, cap, replicas, arrival, steps, pre)
    admitted = admission_times(arrival, done, waited)
    keep = slice(requests // 20, None)
    t, q, member = (done - arrival)[keep], waited[keep], which[keep]
    wait = (admitted - arrival)[keep][q]
    service = (done - admitted)[keep][q]
    dep = d.pooled()
    st = latency.pooled_state(dep, np.array([float(replicas)]))
    theta, cv2 = st.wait_rate_per_ms[0], st.full_service_cv2[0]
    # theta = D_eff (1 - r_q) / k, k read from the drain's cv^2: Allen–Cunneen's wait (the service's cv^2) is the
    # model's times its k over the model's k.
    k_model = float(queueing.wait_scale(cap * replicas, _r_q(d), st.drain_cv2[0]))
    rates = dep.arrival_rate_per_s
    queued_service = float((rates * st.service_full(dep).mean_ms).sum() / rates.sum())
    an = simulate.analytic_p95(d)
    ratios = [an[i] / np.percentile(t[member == i], 95) for i in range(len(d.workloads))]
    ratio = f"{ratios[0]:.3f}" if len(ratios) == 1 else f"{min(ratios):.3f}-{max(ratios):.3f}"
    prefill = "-".join(sorted({f"{w.prefill_ms:.0f}" for w in d.workloads}, key=float))
    return (f"| {replicas} x {cap} | {prefill} | {spread} | {d.arrival_rate_per_s:.1f} | {q.mean():.3f} / "
            f"{st.p_wait[0]:.3f} | {wait.mean():.1f} | {1.0 / theta:.1f} | {(1.0 + cv2) / 2.0 / k_model / theta:.1f} | "
            f"{service.mean():.1f} / {queued_service:.1f} | {ratio} |")


def _r_q(d: simulate.DeploymentLoad) -> float:
    """The chain's load with every slot busy, as latency.pooled_state computes it (one workload)."""
    m = d.pooled().moments
    lam = float(m.lam[0])
    step_cap = float(d.step_ms[d.concurrency_cap - 1])
    tau_cap = d.steps_per_token * float(m.n[0]) / lam * step_cap + step_cap / 2.0
    return lam / 1000.0 * (tau_cap / (d.replicas * d.concurrency_cap) + float(m.pre[0]) / lam / d.replicas)


def admission_times(arrival: np.ndarray, done: np.ndarray, waited: np.ndarray) -> np.ndarray:
    """When each request got its slot: its arrival if one was free, else (FIFO) the first completion after its
    arrival that no request queued before it took (every completion frees one slot, and while anyone queues the
    head of the queue takes it at that step boundary)."""
    frees = np.sort(done)
    out = np.array(arrival, dtype=float)
    j = 0
    for i in np.flatnonzero(waited):  # arrival order is the queue's order
        while j < len(frees) and frees[j] < arrival[i]:
            j += 1
        out[i] = frees[j] if j < len(frees) else np.nan
        j += 1
    return out


def main() -> None:
    """Print the table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    print("| replicas x cap | prefill ms | output cv | requests/s | queued sim / model | wait sim | wait model "
          "| wait Allen-Cunneen | queued service sim / model | p95 model / sim |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---|---:|")
    for cap, replicas in ((4, 1), (4, 2), (16, 1)):
        for cv in (0.5, 1.0, 1.5):
            for rho in (0.4, 0.6, 0.8):
                lam = rho * cap * replicas / 0.2  # 200 tokens x 1 ms = 0.2 s a request
                print(case(cap, replicas, lam, cv, 0.0, args.requests, args.seed))
    for cv in (0.5, 1.0, 1.5):
        for prefill, rates in ((10.0, (8.0, 11.0)), (25.0, (6.0, 8.0, 11.0)), (50.0, (4.0, 5.0, 8.0))):
            for lam in rates:
                print(case(4, 1, lam, cv, prefill, args.requests, args.seed))
    # Mixtures: three members of output means 50 / 200 / 350 tokens (cv 0.4 each, equal rates; the mixture's cv^2
    # is 0.595), without and with 25 ms prefills, against one workload of that mean and cv^2 (cv 0.771).
    for prefill, rates in ((0.0, (8.0, 12.0, 16.0)), (25.0, (6.0, 8.0, 11.0))):
        for lam in rates:
            members = tuple(workload(f"m{m}", lam / 3, prefill, m, 0.4) for m in (50.0, 200.0, 350.0))
            d = simulate.DeploymentLoad(1, 4, (1.0,) * 4, members)
            print(row(d, "mix 50/200/350", args.requests, args.seed))
            print(case(4, 1, lam, 0.771, prefill, args.requests, args.seed))


if __name__ == "__main__":
    main()
