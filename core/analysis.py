"""What-if views over an evaluation: fleet options side by side, SLA sweeps, price sensitivity."""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.catalog import Catalog
from core.engine import Evaluation, evaluate
from core.models import HOURS_PER_MONTH, Scenario

# Fleet options a procurement reader compares: which routes each may use.
FLEET_OPTIONS: dict[str, tuple[str, ...]] = {
    "Recommended mix": ("owned", "api"),
    "All on public APIs": ("api",),
    "Owned, autoregressive only": ("owned:autoregressive",),
    "Owned, AR + speculative + MoE": ("owned:autoregressive", "owned:speculative", "owned:moe"),
    "Owned, diffusion only": ("owned:diffusion",),
}


def _allowed(ev: Evaluation, kinds: tuple[str, ...]) -> np.ndarray:
    mask = []
    for r in ev.routes:
        mask.append(r.hosting in kinds or f"{r.hosting}:{r.architecture}" in kinds)
    return np.array(mask, dtype=bool)


def restricted_choice(ev: Evaluation, allowed: np.ndarray) -> np.ndarray:
    """Per workload, the cheapest feasible route among the allowed ones (-1 where none)."""
    cost = np.where(ev.a["feasible"] & allowed[None, :], ev.a["usd_per_request"], np.inf)
    if cost.shape[1] == 0:
        return np.full(cost.shape[0], -1)
    pick = np.argmin(cost, axis=1)
    return np.where(np.isfinite(cost[np.arange(len(pick)), pick]), pick, -1)


def fleet_options(ev: Evaluation) -> pd.DataFrame:
    """Monthly cost and owned nodes of each fleet option, with the workloads it cannot serve.

    Owned GPUs are summed per option and packed into nodes (replicas of 1, 2,
    4 or 8 GPUs fill 8-GPU nodes without gaps): interactive routes hold their
    replicas all month, offline work adds its average GPUs over the day. Owned
    cost is nodes x $/node-hour x hours a month; API cost is per request.
    """
    rows = []
    W = len(ev.workloads)
    idx = np.arange(W)
    gpn = ev.scenario.gpus_per_node
    interactive = ev.workloads["latency_slo_ms"].notna().to_numpy()
    for name, kinds in FLEET_OPTIONS.items():
        pick = restricted_choice(ev, _allowed(ev, kinds))
        has = pick >= 0
        safe = np.where(has, pick, 0)
        monthly = np.where(has, ev.a["monthly_usd"][idx, safe], 0.0)  # API rows only, below
        owned = has & np.array([ev.routes[k].hosting == "owned" for k in safe])
        gpus = np.where(owned & interactive, ev.a["replicas"][idx, safe] * ev.a["gpus_per_replica"][idx, safe], 0.0)
        offline_gpus = np.where(owned & ~interactive, ev.a["gpu_hours_per_day"][idx, safe] / 24.0, 0.0)
        nodes = int(np.ceil((np.nansum(gpus) + np.nansum(offline_gpus)) / gpn - 1e-9))
        api = has & ~owned
        owned_monthly = nodes * ev.rate.usd_per_node_hour * HOURS_PER_MONTH
        api_monthly = float(np.nansum(np.where(api, monthly, 0.0)))
        rows.append({
            "option": name,
            "monthly_usd": owned_monthly + api_monthly,
            "owned_monthly_usd": owned_monthly,
            "api_monthly_usd": api_monthly,
            "owned_nodes": nodes,
            "workloads_served": int(has.sum()),
            "workloads_unserved": int((~has).sum()),
            "unserved": ", ".join(ev.workloads["workload_id"].to_numpy()[~has][:10].astype(str)),
        })
    return pd.DataFrame(rows)


def architecture_comparison(ev: Evaluation) -> pd.DataFrame:
    """For each interactive workload, every owned route side by side: nodes, concurrency within the SLA, p95."""
    out = []
    w = ev.workloads
    for i in np.flatnonzero(w["latency_slo_ms"].notna().to_numpy()):
        for r, route in enumerate(ev.routes):
            if route.hosting != "owned":
                continue
            ok = bool(ev.a["feasible"][i, r])
            out.append({
                "workload_id": w["workload_id"].iloc[i],
                "route": route.label,
                "architecture": route.architecture,
                "feasible": ok,
                "nodes": float(ev.a["nodes"][i, r]) if ok else np.nan,
                "gpus_per_replica": float(ev.a["gpus_per_replica"][i, r]) if ok else np.nan,
                "max_concurrency_within_sla": float(ev.a["concurrency"][i, r]) if ok else np.nan,
                "p95_latency_ms": float(ev.a["p95_ms"][i, r]) if ok else float(ev.a["best_p95_ms"][i, r]),
                "monthly_usd": float(ev.a["monthly_usd"][i, r]) if ok else np.nan,
                "why_not": None if ok else ev.why_not(i, r),
            })
    return pd.DataFrame(out)


def sla_sweep(catalog: Catalog, workloads: pd.DataFrame, scenario: Scenario,
              scales=(0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0)) -> pd.DataFrame:
    """Owned nodes each fleet option needs as every latency target is scaled (tighter to the left)."""
    rows = []
    for s in scales:
        ev = evaluate(catalog, workloads, scenario.model_copy(update={"sla_scale": float(s)}))
        opts = fleet_options(ev).set_index("option")
        for name in FLEET_OPTIONS:
            rows.append({"sla_scale": float(s), "option": name, "owned_nodes": int(opts.loc[name, "owned_nodes"]),
                         "monthly_usd": float(opts.loc[name, "monthly_usd"]),
                         "workloads_unserved": int(opts.loc[name, "workloads_unserved"])})
    return pd.DataFrame(rows)


SENSITIVITY_CASES: dict[str, dict[str, float]] = {
    "As assumed": {},
    "API prices × 0.5": {"api_price_scale": 0.5},
    "API prices × 2": {"api_price_scale": 2.0},
    "Node prices × 0.5": {"node_price_scale": 0.5},
    "Node prices × 2": {"node_price_scale": 2.0},
}


def sensitivity(catalog: Catalog, workloads: pd.DataFrame, base: Evaluation) -> pd.DataFrame:
    """Monthly cost and verdict changes when API or node prices halve or double."""
    rows = []
    base_ids = np.array([base.routes[k].route_id if k >= 0 else "" for k in base.verdict])
    for name, change in SENSITIVITY_CASES.items():
        update = {}
        if "api_price_scale" in change:
            update["api_price_scale"] = base.scenario.api_price_scale * change["api_price_scale"]
        if "node_price_scale" in change:
            # Scale the node's list price (under a marginal basis the routed rate may be 0).
            update["node_usd_per_hour"] = base.rate.full_usd_per_node_hour * change["node_price_scale"]
        ev = base if not update else evaluate(catalog, workloads, base.scenario.model_copy(update=update))
        ids = np.array([ev.routes[k].route_id if k >= 0 else "" for k in ev.verdict])
        changed = ids != base_ids
        rows.append({
            "case": name,
            "total_monthly_usd": ev.fleet["total_monthly_usd"],
            "api_monthly_usd": ev.fleet["api_monthly_usd"],
            "nodes_needed": ev.fleet["nodes_needed"],
            "verdicts_changed": int(changed.sum()),
            "changed_workloads": ", ".join(ev.workloads["workload_id"].to_numpy()[changed][:10].astype(str)),
        })
    return pd.DataFrame(rows)
