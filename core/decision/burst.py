"""Burst instead of buy: serve the peak hours on on-demand nodes rented for the hours they are needed.

The plan sizes every pool at its peak and pays for each node 730 hours a month. Where the traffic has peaks (the
scenario's hour-of-day shape: office hours, or measured telemetry), fewer nodes are needed in the other hours. A
base fleet of B nodes (at least those owned) is paid for 730 hours at the plan's node price; the nodes above B are
rented on demand only in the hours the traffic needs them. The base that makes the month cheapest is chosen; at
B = the plan's nodes nothing is rented (all owned), so the chosen cost is never above the all-owned one.

Nodes needed per hour (`hourly_nodes`): each interactive pool's replicas scale with its hourly traffic, its peak
replicas times its traffic at that hour over its traffic at its members' peak, rounded up (at least one while it
has traffic); GPUs to nodes: GPUs / GPUs per node, rounded up, plus the plan's own packing overhead (its nodes for
interactive work beyond that rounding). Batch work is not burst: its GPU-hours must fit in the base fleet's spare
GPU-hours of the day (it runs in the troughs), which sets the smallest base. The latency model is not re-run per
hour (an estimate: the hour's replicas hold the peak's requests per replica).

Billing: AWS bills Linux on-demand instances per second with a 60-second minimum (announced 2017-09-18); on whole
hours that minimum never binds. Each rented run also pays a warm-up (boot and model-weight load) before it serves:
WARMUP_HOURS, an estimate. On-demand capacity for 8-GPU nodes is not guaranteed at the hour it is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.decision.economics import HOURS_PER_MONTH

WARMUP_HOURS = 0.25  # estimate: instance boot (~5 min) plus loading tens of GB of weights (~10 min) per rented run
BILLING = ("AWS EC2 Linux on-demand: per-second billing, 60-second minimum (AWS announcement 2017-09-18); "
           "warm-up of 0.25 h per rented run is an estimate (boot plus model-weight load)")


@dataclass(frozen=True)
class BurstPlan:
    """The cheapest base fleet with on-demand bursts, against owning the plan's nodes for 730 hours."""

    nodes_needed: int  # the plan's nodes (sized at the peak)
    owned_nodes: int
    hourly_nodes: tuple[int, ...]  # nodes needed in each hour of the cycle (24: a day, 168: a week)
    base_nodes: int  # chosen base fleet (== max(owned, needed) when burst does not win)
    burst_node_hours: float  # per month, warm-up included
    base_usd_per_node_hour: float
    on_demand_usd_per_node_hour: float
    all_owned_usd: float  # max(owned, needed) x base rate x 730
    burst_usd: float  # base x base rate x 730 + burst node-hours x on-demand rate
    flat: bool  # the same nodes every hour: no peak to burst
    cost_by_base: tuple[tuple[int, float], ...]  # (base nodes, $ a month) for every base tried

    @property
    def wins(self) -> bool:
        """Burst is cheaper than owning the plan's nodes by at least a cent."""
        return self.base_nodes < max(self.nodes_needed, self.owned_nodes) and self.burst_usd < self.all_owned_usd

    @property
    def saves_usd(self) -> float:
        return round(self.all_owned_usd - self.burst_usd, 2) if self.wins else 0.0


def hourly_nodes(replicas: np.ndarray, gpus_per_replica: np.ndarray, load_ratio: np.ndarray, gpus_per_node: int,
                 nodes_interactive: int) -> np.ndarray:
    """(H,) nodes the interactive pools need each hour.

    replicas, gpus_per_replica: (D,) each pool at its peak; load_ratio: (D, H) its traffic each hour over its
    traffic at the peak (0..1). Replicas(h) = ceil(replicas x ratio), at least 1 while ratio > 0; nodes(h) =
    ceil(GPUs(h) / GPUs per node) + the plan's packing overhead (nodes_interactive - ceil(peak GPUs / per node)),
    never above nodes_interactive.
    """
    reps = np.asarray(replicas, dtype=float)[:, None]
    ratio = np.clip(np.asarray(load_ratio, dtype=float), 0.0, 1.0)
    reps_h = np.where(ratio > 0, np.maximum(np.ceil(reps * ratio - 1e-9), 1.0), 0.0)
    reps_h = np.minimum(reps_h, reps)
    g = np.asarray(gpus_per_replica, dtype=float)[:, None]
    gpus_h = (reps_h * g).sum(axis=0)
    peak_gpus = float((reps * g).sum())
    overhead = max(nodes_interactive - int(np.ceil(peak_gpus / gpus_per_node - 1e-9)), 0)
    nodes = np.ceil(gpus_h / gpus_per_node - 1e-9).astype(int) + overhead
    return np.minimum(nodes, nodes_interactive) if ratio.shape[1] else nodes


def burst_hours(need: np.ndarray, base: np.ndarray, warmup_hours: float = WARMUP_HOURS) -> np.ndarray:
    """Rented node-hours a month above each base fleet (vectorised over `base`).

    `need` is one cycle of H hours (24: a day, 168: a week), repeated 730 / H times a month. The k-th node above
    the base runs wherever need >= k; each of its runs (counted around the cycle: a run over midnight is one)
    pays its hours plus one warm-up. A node needed every hour never stops (no warm-up).
    """
    need = np.asarray(need, dtype=int)
    H = need.size
    top = int(need.max()) if H else 0
    levels = np.arange(1, top + 1)[:, None]  # (K, 1)
    on = need[None, :] >= levels  # (K, H)
    hours = on.sum(axis=1).astype(float)
    starts = (on & ~np.roll(on, 1, axis=1)).sum(axis=1).astype(float)  # runs around the cycle
    per_cycle = hours + starts * warmup_hours
    above = levels[:, 0][None, :] > np.asarray(base, dtype=int)[:, None]  # (B, K)
    return (above * per_cycle[None, :]).sum(axis=1) * (HOURS_PER_MONTH / H if H else 0.0)


def plan_burst(need, owned_nodes: int, base_usd_per_node_hour: float, on_demand_usd_per_node_hour: float, *,
               min_base: int = 0, nodes_needed: int | None = None, warmup_hours: float = WARMUP_HOURS) -> BurstPlan:
    """The base fleet that makes the month cheapest, from max(owned, min_base) up to the plan's nodes.

    cost(B) = B x base $/node-hour x 730 + burst_hours(B) x on-demand $/node-hour; ties go to the larger base
    (fewer rented hours). A flat profile (the same nodes every hour) never bursts: renting a node for every hour
    is a purchase option (fleet.buy_options), not a burst.

    Example (the tests' hand-worked one): 3 nodes from 09:00 to 13:00, 1 otherwise, 1 owned, $33.02 base, $55.04
    on demand, no warm-up. All owned: 3 x 33.02 x 730 = $72,313.80. Base 1: 2 nodes x 4 h x 730/24 = 243.33
    node-hours x 55.04 = $13,393.07, plus 1 x 33.02 x 730 = $24,104.60: $37,497.67. Base 2: 1 x 4 x 730/24 =
    121.67 h x 55.04 = $6,696.53 + $48,209.20 = $54,905.73. Base 1 wins, saving $34,816.13.
    """
    need = np.asarray(need, dtype=int)
    top = int(need.max()) if need.size else 0
    n_all = max(nodes_needed if nodes_needed is not None else top, top)
    full = max(owned_nodes, n_all)
    flat = bool(need.size == 0 or need.min() == need.max())
    lo = min(max(owned_nodes, min_base), full)
    bases = np.arange(lo, full + 1) if not flat else np.array([full])
    hours = burst_hours(need, bases, warmup_hours)
    cost = np.round(bases * base_usd_per_node_hour * HOURS_PER_MONTH + hours * on_demand_usd_per_node_hour, 2)
    # Ties to the larger base: the last minimum.
    k = int(len(cost) - 1 - np.argmin(cost[::-1]))
    all_owned = round(full * base_usd_per_node_hour * HOURS_PER_MONTH, 2)
    return BurstPlan(n_all, owned_nodes, tuple(int(x) for x in need), int(bases[k]), float(round(hours[k], 2)),
                     base_usd_per_node_hour, on_demand_usd_per_node_hour, all_owned, float(cost[k]), flat,
                     tuple((int(b), float(c)) for b, c in zip(bases, cost, strict=True)))


def min_base_for_batch(need_gpus: np.ndarray, offline_gpu_hours_per_cycle: float, offline_min_gpus: int,
                       gpus_per_node: int, top: int) -> int:
    """Smallest base fleet whose spare GPU-hours over the cycle hold the batch work (and its largest replica):
    spare(B) = sum over hours of max(B x GPUs per node - interactive GPUs(h), 0)."""
    if offline_gpu_hours_per_cycle <= 0 and offline_min_gpus <= 0:
        return 0
    bases = np.arange(0, top + 1)
    spare = np.maximum(bases[:, None] * gpus_per_node - np.asarray(need_gpus, dtype=float)[None, :], 0.0).sum(axis=1)
    ok = (spare >= offline_gpu_hours_per_cycle - 1e-9) & (bases * gpus_per_node >= offline_min_gpus)
    return int(bases[np.argmax(ok)]) if ok.any() else top


# ---------------------------------------------------------------------------------------------------------------
# on a finished evaluation
# ---------------------------------------------------------------------------------------------------------------

def _load_ratios(ev) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per interactive pool with replicas: (replicas, GPUs per replica, (D, 24) traffic each hour over its peak)."""
    from core.decision.fleet import hourly_profile, traffic_shape

    w = ev.workloads
    shape = traffic_shape(ev.scenario)[0]
    pos = {str(wid): k for k, wid in enumerate(w["workload_id"].astype(str))}
    rpd = w["requests_per_day"].to_numpy(dtype=float)
    pf = w["peak_factor"].astype(float).fillna(3.0).to_numpy() if "peak_factor" in w else np.full(len(w), 3.0)
    slo = w["latency_slo_ms"].astype(float).to_numpy() if "latency_slo_ms" in w else np.full(len(w), np.nan)
    reps, gs, ratios = [], [], []
    for d in ev.fleet.deployments:
        rows = np.array([pos[m] for m in d.workloads if m in pos and np.isfinite(slo[pos[m]])], dtype=np.intp)
        if d.replicas <= 0 or rows.size == 0:
            continue
        hourly = (rpd[rows, None] * hourly_profile(pf[rows], shape)).sum(axis=0)
        peak = float((rpd[rows] * pf[rows]).sum())
        reps.append(d.replicas)
        gs.append(d.gpus_per_replica)
        ratios.append(hourly / peak if peak > 0 else np.zeros_like(hourly))
    H = len(shape)
    return (np.array(reps, dtype=float), np.array(gs, dtype=float),
            np.array(ratios, dtype=float).reshape(len(ratios), H))


def on_demand_rate(ev):
    """The on-demand node price of the plan's GPU (the scenario's provider, else AWS, else the cheapest), or None."""
    from core.decision.economics import node_rate
    from core.errors import InputError
    from core.models import PricingOption

    sc = ev.scenario.model_copy(update={"pricing_option": PricingOption.ON_DEMAND, "node_usd_per_hour": None,
                                        "owned_hardware": None, "gpu": ev.gpu_name})
    try:
        return node_rate(sc, list(ev.catalog.node_prices), list(ev.catalog.owned_hardware))
    except InputError:
        return None


def instance_words(rate) -> str:
    """A node price's provider and instance, without the option id ('AWS p5.48xlarge')."""
    return rate.label.rsplit(" (", 1)[0]


def of(ev) -> BurstPlan | None:
    """The evaluation's burst plan (cached in its answers); None when the GPU has no on-demand price."""
    return ev.answers.get("burst", lambda: _compute(ev))


def _compute(ev) -> BurstPlan | None:
    od = on_demand_rate(ev)
    if od is None:
        return None
    f = ev.fleet
    reps, gs, ratios = _load_ratios(ev)
    need = hourly_nodes(reps, gs, ratios, f.gpus_per_node, f.nodes_needed_interactive) if reps.size \
        else np.zeros(ratios.shape[1], dtype=int)
    gpus_h = (np.where(ratios > 0, np.maximum(np.ceil(reps[:, None] * ratios - 1e-9), 1.0), 0.0) * gs[:, None]).sum(axis=0)
    off_min = max((d.offline_min_gpus for d in f.deployments), default=0)
    lo = min_base_for_batch(gpus_h, f.offline_gpu_hours_per_day, off_min, f.gpus_per_node, f.nodes_needed)
    return plan_burst(need, f.owned_nodes, f.full_usd_per_node_hour, od.full_usd_per_node_hour, min_base=lo,
                      nodes_needed=f.nodes_needed)


def verdict(b: BurstPlan | None, gpu: str = "") -> str:
    """The one-line answer: whether renting the peak hours on demand beats owning the plan's nodes."""
    from core.format import money, number

    if b is None:
        return f"Not priced: no on-demand price for {gpu or 'this GPU'} in the price rows."
    if b.nodes_needed <= b.owned_nodes:
        return "Nothing to rent: the owned nodes already cover the peak (nothing to buy)."
    if b.flat:
        return ("Renting the peaks cannot win: the plan needs the same nodes every hour (no peak), so a rented node would run "
                "all 730 hours at the on-demand price.")
    if b.wins:
        n = max(b.nodes_needed, b.owned_nodes) - b.base_nodes
        return (f"Renting the peaks wins: keep {_nodes(b.base_nodes)} all month and rent up to {n} on demand for "
                f"{number(b.burst_node_hours)} node-hours a month: {money(b.burst_usd, decimals=0)} instead of "
                f"{money(b.all_owned_usd, decimals=0)} ({money(b.saves_usd, decimals=0)} less).")
    return (f"Renting the peaks does not win: they last too long for the on-demand price "
            f"({money(b.on_demand_usd_per_node_hour, decimals=2)} vs {money(b.base_usd_per_node_hour, decimals=2)} "
            f"per node-hour); owning {_nodes(max(b.nodes_needed, b.owned_nodes))} is cheapest.")


def _nodes(n: int) -> str:
    return f"{n} node" if n == 1 else f"{n} nodes"


def burst_json(ev) -> dict:
    """`fleet.burst`: base nodes, burst node-hours, the on-demand price and its source, the month's cost against
    owning every node, and the verdict."""
    b = of(ev)
    od = on_demand_rate(ev)
    if b is None or od is None:
        return {"priced": False, "verdict": verdict(None, ev.gpu_name)}
    return {
        "priced": True, "wins": b.wins, "flat_profile": b.flat, "traffic_shape": ev.fleet.traffic_shape,
        "hourly_nodes": list(b.hourly_nodes), "nodes_needed": b.nodes_needed, "owned_nodes": b.owned_nodes,
        "base_nodes": b.base_nodes, "burst_node_hours_per_month": b.burst_node_hours,
        "base_usd_per_node_hour": b.base_usd_per_node_hour,
        "on_demand_usd_per_node_hour": b.on_demand_usd_per_node_hour,
        "on_demand_price": od.label, "on_demand_instance": instance_words(od), "on_demand_source": od.source, "on_demand_as_of": od.as_of,
        "on_demand_confidence": od.confidence, "billing": BILLING, "warmup_hours_per_run": WARMUP_HOURS,
        "all_owned_usd_per_month": b.all_owned_usd, "burst_usd_per_month": b.burst_usd,
        "saves_usd_per_month": b.saves_usd,
        "cost_by_base": [{"base_nodes": n, "usd_per_month": c} for n, c in b.cost_by_base],
        "basis": "estimate: each pool's replicas scale with its hourly traffic (the latency model is not re-run per "
                 "hour); batch work stays on the base fleet; nodes only (API and licences unchanged)",
        "verdict": verdict(b, ev.gpu_name),
    }
