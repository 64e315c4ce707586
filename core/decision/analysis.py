"""What-if views over an evaluation: fleet options side by side, SLA sweeps, price sensitivity."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict

import numpy as np
import pandas as pd

from core.catalog import Catalog
from core.decision.economics import cash_bill
from core.decision.engine import Evaluation, evaluate
from core.decision.explain import why_not
from core.decision.fleet import route_permitted
from core.decision.records import FleetOption
from core.models import Scenario

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
    """The cash bill of each fleet option, planned with the same search and priced by the same rule as the plan.

    Each option may use only some routes; its plan is optimised over those
    routes and priced exactly (whole nodes, owned nodes at their full rate
    whatever the basis, new nodes bought, API spend, licence fees). Workloads
    an option cannot serve are counted and named, never silently dropped.
    The options are planned once per evaluation (kept in `ev.answers`, under a lock: the Fleet page and a
    report asking at once plan them once); each call returns a new frame of them.
    """
    return pd.DataFrame([asdict(o) for o in option_records(ev)])


def option_records(ev: Evaluation) -> tuple[FleetOption, ...]:
    """The fleet options as records, planned on first request and kept in the evaluation's answers."""
    return ev.answers.get("options", lambda: _plan_options(ev))


def _plan_options(ev: Evaluation) -> tuple[FleetOption, ...]:
    from core.decision.closeloop import cheapest_checked, close_polished
    from core.decision.fleet import restrict
    from core.decision.plan import Planner
    from core.decision.unserved import priced

    rows = []
    ids = ev.workloads["workload_id"].to_numpy()
    inp = ev.plan_inputs
    for name, kinds in FLEET_OPTIONS.items():
        if name == "Recommended mix":
            plan = ev.plan
        else:
            planner = getattr(ev, "planner", None)
            # Same owned routes as the plan's: its standalone view and sizings are shared, not recomputed.
            opt = Planner(restrict(inp, _allowed(ev, kinds)), None if planner is None else planner._gpu_hours_month,
                          cache=None if planner is None else planner._cache)
            # Polished and checked by simulation as the plan is (core.decision.closeloop), so options compare like
            # for like (an option of a large inventory searched without the polish was whole nodes dear).
            plan = cheapest_checked(opt, close_polished(opt, opt.optimise())).plan
        has = plan.assignment >= 0
        left = priced(ev, ~has)
        bill = cash_bill(ev.scenario.fleet_nodes, plan.nodes_needed, inp.full_usd_per_node_hour, plan.api_monthly,
                         plan.licence_monthly)
        rows.append(FleetOption(
            option=name,
            monthly_usd=bill.total,  # what the search minimised (plan.bill), by the same rule
            owned_monthly_usd=bill.nodes_usd,
            api_monthly_usd=plan.api_monthly,
            licence_monthly_usd=plan.licence_monthly,
            nodes_needed=int(plan.nodes_needed),
            owned_nodes=int(max(plan.nodes_needed, ev.scenario.fleet_nodes)),
            workloads_served=int(has.sum()),
            workloads_unserved=int((~has).sum()),
            unserved=", ".join(ids[~has][:10].astype(str)) + (f" and {int((~has).sum()) - 10} more"
                                                                if (~has).sum() > 10 else ""),
            workloads_total=int(len(has)),
            unserved_priced_usd=left.priced_usd_per_month,
            unserved_unpriced=left.unpriced,
            unserved_routes=left.words(),
            monthly_usd_with_unserved=bill.total + left.priced_usd_per_month,
        ))
    return tuple(rows)


def architecture_comparison(ev: Evaluation, *, explain: str = "fastest") -> pd.DataFrame:
    """For each interactive workload, every owned route side by side: nodes, concurrency within the SLA, p95.

    Built from the engine's arrays without a loop over workloads. `permitted`: whether the plan may use the
    route (licensed weights whose fee is not entered may not: their figures leave the fee out). `why_not` is
    worded only where a reader sees it: with explain="fastest", for the
    fastest refused route of an architecture that has no feasible route for
    that workload (what the side-by-side view shows) and for every feasible route the plan may not use;
    "all" words every refusal; "none" words nothing.
    """
    cols = ["workload_id", "route", "architecture", "feasible", "permitted", "nodes", "gpus_per_replica",
            "max_concurrency_within_sla", "p95_latency_ms", "monthly_usd", "why_not"]
    rows = np.flatnonzero(ev.workloads["latency_slo_ms"].notna().to_numpy())
    owned = [r for r, route in enumerate(ev.routes) if route.hosting == "owned"]
    if rows.size == 0 or not owned:
        return pd.DataFrame(columns=cols)
    ii, rr = np.repeat(rows, len(owned)), np.tile(owned, rows.size)
    ok = ev.a["feasible"][ii, rr]

    def where_ok(name):
        return np.where(ok, ev.values(name, ii, rr), np.nan)  # float64 also where ev.a holds float32

    out = pd.DataFrame({
        "workload_id": ev.workloads["workload_id"].to_numpy()[ii],
        "route": np.array([ev.routes[r].label for r in owned], dtype=object)[np.tile(np.arange(len(owned)), rows.size)],
        "architecture": np.array([ev.routes[r].architecture for r in owned], dtype=object)[
            np.tile(np.arange(len(owned)), rows.size)],
        "feasible": ok,
        "permitted": np.array([route_permitted(ev.routes[r]) for r in owned], dtype=bool)[
            np.tile(np.arange(len(owned)), rows.size)],
        "nodes": where_ok("nodes"),
        "gpus_per_replica": where_ok("gpus_per_replica"),
        "max_concurrency_within_sla": where_ok("concurrency"),
        "p95_latency_ms": np.where(ok, ev.a["p95_ms"][ii, rr], ev.a["best_p95_ms"][ii, rr]),
        "monthly_usd": where_ok("monthly_usd"),
        "why_not": None,
    })
    if explain == "none":
        return out
    refused = ~ok
    if explain == "fastest":
        key = out["workload_id"].astype(str) + "\x00" + out["architecture"]
        any_ok = out.groupby(key)["feasible"].transform("any").to_numpy()
        fastest = out.assign(_k=key, _p=out["p95_latency_ms"].fillna(np.inf)).groupby("_k")["_p"].transform("min")
        refused &= ~any_ok & (out["p95_latency_ms"].fillna(np.inf).to_numpy() <= fastest.to_numpy())
    for k in np.flatnonzero(refused):
        out.at[k, "why_not"] = why_not(ev, int(ii[k]), int(rr[k]))
    for k in np.flatnonzero(ok & ~out["permitted"].to_numpy()):
        out.at[k, "why_not"] = (f"{ev.routes[int(rr[k])].label} could hold it, but its weights need a licence whose "
                                "fee is not entered, so the plan may not use it (its figures here leave the fee "
                                "out): enter the fee on Pricing.")
    return out


def sla_sweep_rows(catalog: Catalog, workloads: pd.DataFrame, scenario: Scenario, scale: float) -> list[dict]:
    """One scale of sla_sweep: one row per fleet option, from a full evaluation with every latency target × scale."""
    ev = evaluate(catalog, workloads, scenario.model_copy(update={"sla_scale": float(scale)}))
    opts = fleet_options(ev).set_index("option")
    keep = ("workloads_served", "workloads_total", "workloads_unserved", "unserved_priced_usd", "unserved_unpriced",
            "monthly_usd_with_unserved", "unserved_routes")
    return [{"sla_scale": float(scale), "option": name, "owned_nodes": int(opts.loc[name, "owned_nodes"]),
             "monthly_usd": float(opts.loc[name, "monthly_usd"]),
             **{k: opts.loc[name, k].item() if hasattr(opts.loc[name, k], "item") else opts.loc[name, k]
                for k in keep}} for name in FLEET_OPTIONS]


def sla_sweep(catalog: Catalog, workloads: pd.DataFrame, scenario: Scenario,
              scales=(0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0), *,
              rows_at: Callable[[float], list[dict]] | None = None) -> pd.DataFrame:
    """Owned nodes each fleet option needs as every latency target is scaled (tighter to the left).

    Each scale is its own evaluation (sla_sweep_rows); `rows_at(scale)` may
    supply a scale's rows instead, so a caller can cache them one scale at a
    time (the Fleet page: narrowing or widening the range reuses every scale
    already computed).
    """
    def computed(s: float) -> list[dict]:
        return sla_sweep_rows(catalog, workloads, scenario, s)

    rows = rows_at or computed
    return pd.DataFrame([row for s in scales for row in rows(float(s))])


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
            "total_monthly_usd": ev.fleet.total_monthly_usd,
            "api_monthly_usd": ev.fleet.api_monthly_usd,
            "nodes_needed": ev.fleet.nodes_needed,
            "verdicts_changed": int(changed.sum()),
            "changed_workloads": ", ".join(ev.workloads["workload_id"].to_numpy()[changed][:10].astype(str)),
        })
    return pd.DataFrame(rows)
