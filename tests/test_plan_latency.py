"""The fleet plan sizes on the latency model, and the simulation confirms it (issue 12, "Done when")."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.decision import contract, latency
from core.decision.checks import check_plan, deployment_loads, within
from core.decision.engine import evaluate
from core.decision.plan import _binding_candidates
from core.decision.simulate import simulate_deployment
from core.models import Architecture, Scenario
from core.store.seed import sample_workloads_path

REQUESTS = None  # the simulation's own choice, as `hangover simulate` makes it: the peak hour, 20,000-200,000 a deployment
SEED = 7


def _generated_inventory(n: int = 50, seed: int = 3) -> pd.DataFrame:
    """n interactive workloads that must stay on owned GPUs (owned_only), so they share a few deployments."""
    rng = np.random.default_rng(seed)
    tasks = rng.choice(["chat", "code_completion", "extraction"], n)
    slo = np.where(tasks == "code_completion", rng.uniform(800, 2000, n),
                   np.where(tasks == "chat", rng.uniform(6000, 15000, n), rng.uniform(3000, 8000, n)))
    out = rng.uniform(40, 400, n).round()
    return pd.DataFrame({
        "workload_id": [f"w{i:02d}" for i in range(n)], "name": [f"generated {i}" for i in range(n)],
        "requests_per_day": rng.uniform(2_000, 40_000, n).round(), "peak_factor": rng.uniform(1.5, 4.0, n),
        "input_tokens": rng.uniform(200, 3000, n).round(), "output_tokens": out,
        # Every fifth gives its own p95 (a wider spread than the default for some).
        "output_tokens_p95": np.where(np.arange(n) % 5 == 0, (out * rng.uniform(1.3, 3.0, n)).round(), np.nan),
        "latency_slo_ms": slo.round(), "data_policy": "owned_only", "task_class": tasks,
        "min_quality": 0.5,
    })


@pytest.fixture(scope="module")
def catalog(seed_catalog):
    return seed_catalog


@pytest.fixture(scope="module")
def sample_check(catalog):
    ev = evaluate(catalog, pd.read_csv(sample_workloads_path()), Scenario(fleet_nodes=1))
    return ev, check_plan(ev, requests=REQUESTS, seed=SEED)


@pytest.fixture(scope="module")
def generated_check(catalog):
    ev = evaluate(catalog, _generated_inventory(), Scenario(fleet_nodes=1))
    return ev, check_plan(ev, requests=REQUESTS, seed=SEED)


@pytest.fixture(scope="module")
def generated_ar_check(catalog):
    """The same 50 workloads planned without the diffusion stacks: the whole plan on autoregressive, MoE and
    speculative pools (with them, it runs on LLaDA-8B pools: tests below)."""
    no_diffusion = dataclasses.replace(catalog, stacks=tuple(s for s in catalog.stacks
                                                               if s.architecture != Architecture.DIFFUSION))
    ev = evaluate(no_diffusion, _generated_inventory(), Scenario(fleet_nodes=1))
    return ev, check_plan(ev, requests=REQUESTS, seed=SEED)


def _arch(ev, deployment_id: str) -> str:
    return next(d.architecture for d in ev.fleet.deployments if d.route_id == deployment_id.split("@")[0])


def _assert_plan_holds(ev, check, min_members: int = 1, architectures=None, agree: bool = True):
    rows = [r for r in check.workloads(detail=True)
            if architectures is None or _arch(ev, r["deployment_id"]) in architectures]
    assert len(rows) >= min_members
    deployments = {d["deployment_id"]: d for d in check.deployments()
                   if architectures is None or _arch(ev, d["deployment_id"]) in architectures}
    by_dep: dict[str, list[dict]] = {}
    for r in rows:
        by_dep.setdefault(r["deployment_id"], []).append(r)
        # The analytic p95 of wait + service agrees with the simulated one within +-10 % (of the simulated
        # p95's 95 % interval: a quiet workload has only a few hundred requests in the run).
        lo, hi = r["simulated_p95_ci_ms"]
        lo, hi = (r["simulated_p95_ms"],) * 2 if lo is None else (min(lo, r["simulated_p95_ms"]), hi)
        if agree:
            assert 0.9 * lo <= r["analytic_p95_ms"] <= 1.1 * hi, r
        # Every interactive owned workload is within its target >= 95 % of the time (binomial interval allowed).
        assert within(r["share_within_slo"], r["requests"]), r
        # The analytic p95 the plan sized on meets the target.
        assert r["analytic_p95_ms"] <= r["slo_ms"] * (1 + 1e-4)
    # One replica fewer is never shown to do wherever there is more than one replica (short, or within the
    # run's noise: the run is sized for the pool, so a quiet member's share with one fewer may read either side).
    members = check.workloads(detail=True)
    for dep_id, d in deployments.items():
        if d["replicas"] > 1:
            mine = [r for r in members if r["deployment_id"] == dep_id]
            assert check.one_fewer({**d, "share_within_slo_one_replica_fewer": min(
                r["share_within_slo_one_replica_fewer"] for r in mine)}, mine) != "would do", (dep_id, d)
    return rows


def test_sample_plan_holds_under_simulation(sample_check):
    """The sample's plan holds in simulation, and is tight: on a run long enough for its quiet member (200,000
    requests, ~3,500 of them its), one replica fewer leaves some member under 95 % (94.5 %)."""
    ev, check = sample_check
    rows = _assert_plan_holds(ev, check)
    for load in deployment_loads(ev):
        if load.replicas > 1:
            long = simulate_deployment(load, requests=200_000, seed=SEED)
            assert long.share_within_slo_one_replica_fewer < 0.95, load.deployment_id
    # The plan reports the same analytic p95 it sized on (the verdict's p95 cell).
    vf = contract.verdicts_frame(ev).set_index("workload_id")
    for r in rows:
        assert vf.loc[r["workload_id"], "p95_latency_ms"] == pytest.approx(r["analytic_p95_ms"], rel=1e-6)


@pytest.mark.slow
def test_generated_fifty_workloads_share_a_few_deployments_and_hold(generated_ar_check):
    ev, check = generated_ar_check
    rows = _assert_plan_holds(ev, check, min_members=10, architectures={"autoregressive", "moe", "speculative"})
    per_dep = pd.Series([r["deployment_id"] for r in check.workloads()]).value_counts()
    assert len(per_dep) <= 8 and per_dep.max() >= 5  # pooled, not one deployment per workload
    assert len(rows) >= 10


@pytest.mark.slow
def test_generated_fifty_workloads_fit_one_node(generated_check):
    """With the diffusion stacks, the 50 latency-bound workloads (owned only) fit the owned node: LLaDA-8B pools
    of 1 x 1 GPU (latency tier, 4 members), 2 x 1 GPU (middle tier, 15) and 1 x 2 GPUs (latency tier, 6),
    Llama-3.1-8B 1 x 2 GPUs (throughput tier, 19) and Qwen3-30B-A3B 1 x 1 GPU (throughput tier, 6) = 8 GPUs
    -> 1 node, 33.02 x 730 = $24,104.60, every workload within its target in simulation. (All on LLaDA-8B
    pools, 9 GPUs and 2 nodes, until the search restarted from dearer APIs below 61 workloads too: a start of
    another shape, though these workloads have no API to go to.)"""
    ev, check = generated_check
    f = ev.fleet
    assert (f.nodes_needed, round(f.total_monthly_usd, 2)) == (1, 24104.60)
    assert sorted((d.route_id, d.gpus_per_replica, d.replicas, len(d.workloads)) for d in f.deployments) == [
        ("owned:llada-8b", 1, 1, 4), ("owned:llada-8b", 1, 2, 15), ("owned:llada-8b", 2, 1, 6),
        ("owned:llama8b-bf16", 2, 1, 19), ("owned:qwen3-30b-a3b-fp8", 1, 1, 6)]
    assert sum(d.interactive_gpus for d in f.deployments) == 8
    assert not any(d.replicas_added_by_simulation for d in f.deployments)
    _assert_plan_holds(ev, check, min_members=50, agree=False)


def test_generated_diffusion_deployments_hold(generated_check):
    """Compute-bound diffusion deployments (step time growing with the batch, large prefills) hold their
    targets in simulation (>= 95 % within target, the analytic p95 within target, one replica fewer misses).

    Before the requests-in-system chain put prefill time in the busy states, their analytic p95 ran
    1-57 % under the simulated one (P(wait) 0.001 analytic against 0.076 simulated on one of them) and
    some simulated 79 % within target.
    """
    ev, check = generated_check
    _assert_plan_holds(ev, check, min_members=1, architectures={"diffusion"}, agree=False)


def test_generated_diffusion_deployments_agree_within_ten_percent(generated_check):
    """The analytic p95 of the diffusion deployments agrees with the simulated one within +-10 %.

    The simulation runs as many requests as `hangover simulate` does (the peak hour, 20,000-200,000 a deployment).
    History: at 20,000 a deployment it failed on the cap-4 pool by sampling noise at the edge (w07: analytic 771 ms
    against an interval of 589-698; 300,000 requests put it at 1.06 of the simulated p95), after failing
    for a model error: 10-19 % under on a 1-replica cap-32 LLaDA-8B pool, the plan of an earlier search.
    Agreement across five generated inventories (bench/bench_latency_agreement.py --inventories 3,11,12,13,14,
    docs/design/latency_model.md): 0.95-1.19 while the wait's scale read the service's spread (over on 1-replica cap-4
    pools: their prefills' common stall read as each slot's spread), 0.946-1.104 since it reads the drain's.
    """
    ev, check = generated_check
    _assert_plan_holds(ev, check, min_members=1, architectures={"diffusion"})


def test_deployment_loads_replay_the_plan(sample_check):
    """Each DeploymentLoad carries the plan's replicas and cap, and its analytic p95 is the plan's."""
    ev, _ = sample_check
    loads = deployment_loads(ev)
    # A route may hold two pools (the sample's LLaDA2.0-flash: a throughput tier and an edge pool): match each
    # load to a deployment of its route with the same replicas and cap.
    assert loads
    for load in loads:
        d = [v for v in ev.fleet.deployments if v.route_id == load.deployment_id.split("@")[0]
             and v.replicas == load.replicas and v.concurrency_cap == load.concurrency_cap]
        assert d
        assert len(load.step_ms) == load.concurrency_cap
        assert all(b >= a for a, b in zip(load.step_ms, load.step_ms[1:], strict=False))  # steps grow with batch


@pytest.mark.slow
def test_wider_output_spread_never_needs_fewer_replicas(catalog):
    """Giving a p95 of 3x the mean (cv well above the default 0.5) can only add replicas."""
    inv = _generated_inventory(20, seed=11)
    inv["output_tokens_p95"] = np.nan
    base = evaluate(catalog, inv, Scenario(fleet_nodes=1))
    wide = inv.assign(output_tokens_p95=inv["output_tokens"] * 3.0)
    wider = evaluate(catalog, wide, Scenario(fleet_nodes=1))
    assert sum(d.replicas * d.gpus_per_replica for d in wider.fleet.deployments) >= \
        sum(d.replicas * d.gpus_per_replica for d in base.fleet.deployments)


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=2, max_value=40), st.integers(min_value=0, max_value=10_000))
def test_pruned_members_give_the_same_replicas_as_all(n, seed):
    """Checking only the Pareto front of (slack, mu) while every member loads the queue sizes exactly as checking all."""
    rng = np.random.default_rng(seed)
    lam = rng.uniform(0.05, 3.0, n)
    pre = rng.uniform(5, 300, n)
    out = rng.uniform(20, 600, n)
    p95 = np.where(rng.random(n) < 0.3, out * 2.0, np.nan)  # two sigma groups: default and p95 = 2 x mean
    slo = rng.uniform(1500, 20000, n)
    esc = np.where(rng.random(n) < 0.2, rng.uniform(0.01, 0.04, n), 0.0)
    extra = np.where(esc > 0, rng.uniform(100, 3000, n), 0.0)
    step = 10.0 + 0.15 * np.arange(64)
    common = dict(prefill_ms=pre, output_mean_tokens=out, output_p95_tokens=p95, slo_ms=slo,
                  escalated_share=esc, escalated_extra_ms=extra, step_ms=step[None, :], concurrency_cap=16,
                  arrival_rate_per_s=lam)
    full = latency.PooledDeployments.build(row=np.zeros(n), **common)
    keep = _binding_candidates(slo - pre, full.output_mu, full.output_sigma, esc > 0, np.ones(n, bool))
    assert keep.size <= n
    sub = latency.PooledDeployments.build(
        row=np.zeros(keep.size), **{k: (v[keep] if isinstance(v, np.ndarray) and v.shape == (n,) else v)
                                    for k, v in common.items()}).with_load_of(full)
    assert latency.min_replicas(sub).replicas[0] == latency.min_replicas(full).replicas[0]


def test_simulation_of_one_planned_deployment_is_fast(sample_check):
    """One deployment's peak hour (default request count) simulates in under 2 s of CPU."""
    import time

    ev, _ = sample_check
    load = max(deployment_loads(ev), key=lambda d: d.arrival_rate_per_s)
    t = time.process_time()
    simulate_deployment(load, seed=SEED, one_replica_fewer=False)
    assert time.process_time() - t < 2.0


@settings(max_examples=20, deadline=None)
@given(st.integers(min_value=2, max_value=30), st.integers(min_value=0, max_value=10_000), st.sampled_from([1, 32]))
def test_a_load_at_several_caps_is_the_configurations_built_for_them(n, seed, block):
    """PooledDeployments.at_caps (the fleet plan's sizing: one deployment's load at each candidate cap,
    checking a few rows) gives the arrays build(...).with_load_of(load) gives, and the same replicas; AR and
    diffusion blocks of 32 tokens."""
    rng = np.random.default_rng(seed)
    step = 10.0 + 0.15 * np.arange(64)
    common = dict(prefill_ms=rng.uniform(5, 300, n), output_mean_tokens=rng.uniform(20, 600, n),
                  output_p95_tokens=np.where(rng.random(n) < 0.5, rng.uniform(700, 1500, n), np.nan),
                  slo_ms=rng.uniform(1500, 20000, n), escalated_share=np.where(rng.random(n) < 0.2, 0.03, 0.0),
                  escalated_extra_ms=np.full(n, 500.0), arrival_rate_per_s=rng.uniform(0.05, 3.0, n))
    load = latency.PooledDeployments.build(row=np.zeros(n), step_ms=step[None, :], concurrency_cap=64,
                                           steps_per_token=0.5, block_tokens=block, **common)
    rows = np.sort(rng.choice(n, size=max(1, n // 3), replace=False))
    caps = np.array([4, 16, 64])
    built = latency.PooledDeployments.build(
        row=np.repeat(np.arange(3), rows.size), step_ms=np.broadcast_to(step, (3, 64)), concurrency_cap=caps,
        steps_per_token=0.5, block_tokens=block, **{k: np.tile(v[rows], 3) for k, v in common.items()}
    ).with_load_of(load)
    fast = load.at_caps(rows, caps)
    for name in ("row", "arrival_rate_per_s", "prefill_ms", "slo_ms", "escalated_share", "escalated_extra_ms",
                 "concurrency_cap", "steps_per_token", "block_tokens", "output_mu", "output_sigma",
                 "row_block_tokens"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(built, name), err_msg=name)
    np.testing.assert_array_equal(fast.step_ms, built.step_ms)  # NaN past each cap in both
    for f in ("lam", "pre", "pre2", "n", "pre_n", "n2"):
        np.testing.assert_array_equal(getattr(fast.moments, f), getattr(built.moments, f), err_msg=f)
    np.testing.assert_array_equal(latency.min_replicas(fast).replicas, latency.min_replicas(built).replicas)
    with pytest.raises(ValueError, match="beyond"):
        load.at_caps(rows, np.array([128]))


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=5), st.integers(min_value=0, max_value=10_000))
def test_pools_built_as_one_load_give_each_pools_own_configurations(sizes, seed):
    """The fleet plan builds a batch's pools as one load, one configuration each (Sizer._size_loads), and takes
    each pool's caps from it (at_caps_many): the arrays, sums and replicas are those of each pool built alone
    and taken at its caps, concatenated, to the bit (sums over a pool's own members in their order)."""
    rng = np.random.default_rng(seed)
    alone, picks, steps, caps_all = [], [], [], []
    width = 0
    pools = []
    for k, n in enumerate(sizes):
        b_max = int(rng.choice([4, 16, 64]))
        step = 10.0 + rng.uniform(0.05, 0.3) * np.arange(b_max)
        pool = dict(prefill_ms=rng.uniform(5, 300, n), output_mean_tokens=rng.uniform(20, 600, n),
                    output_p95_tokens=np.where(rng.random(n) < 0.5, rng.uniform(700, 1500, n), np.nan),
                    slo_ms=rng.uniform(1500, 20000, n), escalated_share=np.where(rng.random(n) < 0.2, 0.03, 0.0),
                    escalated_extra_ms=np.full(n, 500.0), arrival_rate_per_s=rng.uniform(0.05, 3.0, n))
        spt, block = float(rng.choice([1.0, 0.5])), float(rng.choice([1, 32]))
        load = latency.PooledDeployments.build(row=np.zeros(n), step_ms=step[None, :], concurrency_cap=b_max,
                                               steps_per_token=spt, block_tokens=block, **pool)
        rows = np.sort(rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False))
        caps = np.array(sorted(rng.choice([c for c in (1, 2, 4, 8, 16, 32, 64) if c <= b_max],
                                          size=int(rng.integers(1, 3)), replace=False)))
        alone.append(load.at_caps(rows, caps))
        pools.append((pool, spt, block, load))
        steps.append(step)
        caps_all.append(b_max)
        picks.append((k, rows, caps))
        width = max(width, b_max)
    step = np.full((len(sizes), width), np.nan)
    for k, s in enumerate(steps):
        step[k, :s.size] = s
    names = list(pools[0][0])
    joint = latency.PooledDeployments.build(
        row=np.repeat(np.arange(len(sizes)), sizes), step_ms=step, concurrency_cap=np.array(caps_all),
        steps_per_token=np.array([p[1] for p in pools]), block_tokens=np.array([p[2] for p in pools]),
        row_moments=tuple(np.concatenate([getattr(p[3], f) for p in pools]) for f in (
            "output_mu", "output_sigma", "effective_mean_tokens", "effective_second_moment")),
        **{name: np.concatenate([p[0][name] for p in pools]) for name in names})
    at = 0
    offsets = []
    for n in sizes:
        offsets.append(at)
        at += n
    fast = joint.at_caps_many([(k, o + rows, caps) for (k, rows, caps), o in zip(picks, offsets, strict=True)])
    reference = latency.PooledDeployments.concat(alone)
    for name in ("row", "arrival_rate_per_s", "prefill_ms", "output_mean_tokens", "slo_ms", "escalated_share",
                 "escalated_extra_ms", "concurrency_cap", "steps_per_token", "block_tokens", "output_mu",
                 "output_sigma", "row_block_tokens", "effective_mean_tokens", "effective_second_moment"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(reference, name), err_msg=name)
    np.testing.assert_array_equal(fast.step_ms, reference.step_ms)  # NaN past each cap in both
    for f in ("lam", "pre", "pre2", "n", "pre_n", "n2"):
        np.testing.assert_array_equal(getattr(fast.moments, f), getattr(reference.moments, f), err_msg=f)
    np.testing.assert_array_equal(latency.min_replicas(fast).replicas, latency.min_replicas(reference).replicas)
