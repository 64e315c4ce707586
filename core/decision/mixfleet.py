"""The chosen mix as the top-level fleet record: one cash bill over several node kinds, attributed to the cent.

A mixed scenario (owned nodes named by GPU, candidate GPUs or purchase options) is planned as chains of one-type
plans (core.decision.mix); the cheapest chain is the plan. This module turns that chain into the FleetPlan record
every page and export reads (`fleet.*` of the JSON contract), so the headline, the attribution, the drivers, the
deployments (each on its GPU), the served counts, the estimate range and the staged purchase describe the mix.

Money. The bill is the mix's: owned nodes at their rate, new nodes at the option's, API spend and licences, each
in cents. Each workload's attributed share comes from the stage that placed it: its API spend and licence share
as that stage's plan attributed them, and its node share re-priced at the mix's money for that stage's nodes
(a fill stage plans with new nodes barred at a prohibitive price; the candidate stage's own price is the mix's
unless an owned node of the candidate GPU is priced otherwise): node share x (mix's node money for the stage /
the stage plan's node money). What no workload uses (idle owned capacity, owned types the mix leaves empty) is,
under full allocation, shared by the workloads on nodes by their node share (as the one-type plan shares it);
under marginal cost it is the unallocated line. Either way attributed + unallocated = bill to the cent.

Nodes. Nodes of one GPU type do not stand in for another's: with new nodes, nodes needed = every owned node +
the new ones; without, the nodes the kept deployments hold.
"""

from __future__ import annotations

import numpy as np

from core.decision.economics import DAYS_PER_MONTH, HOURS_PER_MONTH, to_cents
from core.decision.records import FleetPlan, PerformanceRange
from core.models import CostBasis

KEY = "mix_fleet"


def record(ev) -> FleetPlan | None:
    """The top-level fleet record of a mixed scenario (the chosen mix), computed once; None for the one-kind
    shorthand (ev.fleet is the plan)."""
    if not ev.scenario.mixed:
        return None
    return ev.answers.get(KEY, lambda: _record(ev))


def top(ev) -> FleetPlan:
    """The fleet record every page and export shows: the chosen mix in a mixed scenario, else the plan's own."""
    return record(ev) or ev.fleet


def attributed(ev) -> np.ndarray:
    """Each workload's attributed $ a month in the chosen mix (inventory order, cents; 0 where unserved)."""
    from core.decision import mix

    return ev.answers.get("mix_attributed", lambda: plan_attributed(mix.of(ev).best, len(ev.workloads),
                                                                     ev.scenario.cost_basis))


def plan_attributed(p, n: int, basis: CostBasis) -> np.ndarray:
    """Each of n workloads' attributed $ a month in the mixed plan `p` (any buy-options row; inventory order,
    cents, 0 where unserved); under the full basis the node money no pool uses is spread over the workloads on
    nodes, as the one-type plan spreads it."""
    out = _attributed(p, n)
    return _spread_idle(p, out) if basis is CostBasis.FULL else out


def _spread_idle(best, out: np.ndarray) -> np.ndarray:
    """Full allocation, as the one-type plan does it: the node money no pool uses (idle owned capacity, owned types
    the mix leaves empty) is shared by the workloads on nodes, by their node share, so attributed = bill to the
    cent (largest remainder) and only a plan with nothing on nodes leaves an unallocated line."""
    from core.decision.showback import largest_remainder_cents

    on_nodes = np.zeros(out.size, dtype=bool)
    api = np.zeros(out.size)
    for st in best.stages:
        on_nodes[st.rows[st.keep][_on_owned(st)]] = True
        e = st.ev
        if e.plan is not None and e.plan.row_api is not None:
            api[st.rows[st.keep]] = e.plan.row_api[st.keep]
    total_c = int(round(best.total_usd * 100))
    have_c = int(round(float(out.sum()) * 100))
    weights = np.where(on_nodes, np.maximum(out - api, 0.0), 0.0)
    if total_c <= have_c or not on_nodes.any():
        return out
    if weights.sum() <= 0:
        weights = on_nodes.astype(float)
    extra = largest_remainder_cents(total_c - have_c, weights)
    return np.round(out + extra / 100.0, 2)


def _attributed(best, n: int) -> np.ndarray:
    """Per workload: its API spend as its stage planned it, plus its share of its pools (module docstring)."""
    out = np.zeros(n)
    for st in best.stages:
        e = st.ev
        api = e.plan.row_api if e.plan is not None and e.plan.row_api is not None else np.zeros(len(e.workloads))
        out[st.rows[st.keep]] = api[st.keep]
        pools = _stage_pools(st) if st.candidate else _fill_pools(st)
        out[st.rows[st.keep]] += pools
    # In cents by largest remainder: rounding each share alone can carry the sum a cent past the bill.
    return to_cents(out)


def _pool_parts(e) -> np.ndarray:
    """Each row's share of its stage plan's pools (nodes and licences): its attributed $ less its API spend."""
    rows = np.arange(len(e.workloads))
    v = e.verdict
    share = np.where(v >= 0, e.a["monthly_usd"][rows, np.where(v >= 0, v, 0)], 0.0)
    api = e.plan.row_api if e.plan is not None and e.plan.row_api is not None else np.zeros(len(rows))
    return np.maximum(share - api, 0.0)


def _stage_pools(st) -> np.ndarray:
    """The candidate stage: its plan's pool shares, the node part at the mix's money for its nodes (the same
    money, so the same shares, unless an owned node of this GPU is priced otherwise)."""
    e = st.ev
    pool = _pool_parts(e)[st.keep]
    lic = float(sum(d.licence_usd_per_month for d in st.kept))
    total = float(pool.sum())
    lic_share = pool * (lic / total) if total > 0 else np.zeros(pool.size)
    node_money = float(e.fleet.owned_monthly_usd + e.fleet.extra_nodes_monthly_usd)
    scale = st.node_usd_per_month / node_money if node_money > 0 else 0.0
    return lic_share + (pool - lic_share) * scale


def _fill_pools(st) -> np.ndarray:
    """A fill stage: each kept pool costs its GPUs at the mix's rate for this GPU's owned nodes (interactive GPUs
    reserved; offline GPU-hours charged only beyond the reservations, as the one-type plan charges them) plus its
    licence, shared among its members as the stage plan shared it (by work where it charged them nothing)."""
    e = st.ev
    gpn = e.fleet.gpus_per_node
    gpu_month = st.node_usd_per_month / (st.owned_nodes * gpn) if st.owned_nodes and gpn else 0.0
    reserved = sum(d.interactive_gpus for d in st.kept)
    hours = sum(d.offline_gpu_hours_per_day for d in st.kept)
    charged = min(1.0, max(st.owned_nodes * gpn - reserved, 0) * 24.0 / hours) if hours > 0 else 0.0
    parts = _pool_parts(e)
    w = e.workloads
    work = w["requests_per_day"].to_numpy(dtype=float) * w["output_tokens"].to_numpy(dtype=float)
    pos = {str(wid): k for k, wid in enumerate(w["workload_id"].astype(str))}
    out = np.zeros(len(w))
    for d in st.kept:
        cost = (d.interactive_gpus + d.offline_gpu_hours_per_day / 24.0 * charged) * gpu_month \
            + d.licence_usd_per_month
        members = np.array([pos[x] for x in d.workloads], dtype=np.intp)
        weight = parts[members] if parts[members].sum() > 0 else work[members]
        weight = weight if weight.sum() > 0 else np.ones(members.size)
        out[members] += cost * weight / weight.sum()
    return out[st.keep]


def _record(ev) -> FleetPlan:
    from core.decision import mix
    from core.decision.fleet import licensed_routes

    best = mix.of(ev).best
    base = ev.fleet
    gpn = base.gpus_per_node
    att = attributed(ev)
    owned = sum(best.owned_nodes_by_gpu.values())
    new = best.new_node_count
    kept = [d for st in best.stages for d in st.kept]
    # Per GPU type: a fill stage's kept deployments' nodes, the candidate stage's plan's.
    used = sum(st.ev.fleet.nodes_needed if st.candidate else
               int(np.ceil(sum(mix._gpus_held(d) for d in st.kept) / gpn - 1e-9)) for st in best.stages)
    nodes_needed = owned + new if new else int(used)
    nodes_in_plan = max(owned, nodes_needed)
    node_money = best.owned_usd + best.new_nodes_usd
    node_rate = node_money / (nodes_in_plan * HOURS_PER_MONTH) if nodes_in_plan else base.full_usd_per_node_hour
    busy, busy_without = np.zeros(24), np.zeros(24)
    interactive_nodes = 0
    for st in best.stages:
        f = st.ev.fleet
        # A fill stage's plan may hold deployments the mix moved on: its hours scaled to the GPUs kept.
        all_held = sum(mix._gpus_held(d) for d in f.deployments)
        part = sum(mix._gpus_held(d) for d in st.kept) / all_held if all_held else 0.0
        cap = f.nodes_in_plan * f.gpus_per_node
        busy += np.asarray(f.hourly_utilization) * cap * part
        busy_without += np.asarray(f.hourly_utilization_without_batch) * cap * part
        interactive_nodes += f.nodes_needed_interactive if st.candidate else \
            int(np.ceil(sum(d.interactive_gpus for d in st.kept) / gpn - 1e-9))
    cap = nodes_in_plan * gpn
    util_with = np.minimum(busy / cap, 1.0) if cap else np.zeros(24)
    util_without = np.minimum(busy_without / cap, 1.0) if cap else np.zeros(24)
    utilization = float(np.mean(util_with)) if cap else 0.0
    on_nodes_rows = np.concatenate([st.rows[st.keep][_on_owned(st)] for st in best.stages]) \
        if best.stages else np.zeros(0, dtype=np.intp)
    w = ev.workloads
    tokens = float((w["output_tokens"].to_numpy(dtype=float) * w["requests_per_day"].to_numpy(dtype=float))
                   [on_nodes_rows].sum()) * DAYS_PER_MONTH
    owned_cash = node_money + best.licence_usd
    route_of, mix_words = _routes(best, len(w))
    by_route: dict[str, float] = {}
    for i in np.flatnonzero(route_of != ""):
        by_route[route_of[i]] = round(by_route.get(route_of[i], 0.0) + float(att[i]), 2)
    nodes_by_route: dict[str, int] = {}
    gpus_by_route: dict[str, float] = {}
    for d in kept:
        if d.nodes:
            nodes_by_route[d.route_id] = nodes_by_route.get(d.route_id, 0) + d.nodes
        gpus_by_route[d.route_id] = gpus_by_route.get(d.route_id, 0.0) + d.interactive_gpus + \
            d.offline_gpu_hours_per_day / 24.0
    candidate = next((st for st in best.stages if st.candidate), None)
    cand_fleet = candidate.ev.fleet if candidate is not None else None
    gpus = list(dict.fromkeys([*best.owned_nodes_by_gpu, *(n.gpu for n in best.new_nodes if n.nodes)]))
    total_attributed = round(float(att.sum()), 2)
    return FleetPlan(
        gpu=" + ".join(gpus) or base.gpu, traffic_shape=base.traffic_shape, gpus_per_node=gpn, owned_nodes=owned,
        nodes_needed=int(nodes_needed), workloads_served=best.served_on_nodes + best.served_by_api,
        workloads_total=len(w), nodes_in_plan=int(nodes_in_plan),
        nodes_needed_interactive=int(min(interactive_nodes, nodes_needed)),
        # Nodes bought for batch work beyond the interactive ones, as a one-type plan counts them: only the new
        # GPU's plan buys. An owned node kept for batch work alone is not one (it read "batch work still needs
        # 1 extra node" on the sample's H100 + B200 mix, whose batch runs on the owned H100).
        nodes_needed_offline_extra=int(cand_fleet.nodes_needed_offline_extra) if cand_fleet is not None else 0,
        nodes_by_route=nodes_by_route, gpus_by_route=gpus_by_route, utilization=utilization,
        hourly_utilization=tuple(float(x) for x in util_with),
        hourly_utilization_without_batch=tuple(float(x) for x in util_without),
        offline_gpu_hours_per_day=float(sum(d.offline_gpu_hours_per_day for d in kept)),
        usd_per_node_hour=node_rate, full_usd_per_node_hour=node_rate, usd_per_gpu_hour=node_rate / gpn,
        attribution_usd_per_gpu_hour=node_rate / gpn,
        owned_monthly_usd=best.owned_usd, idle_usd_per_month=cap * HOURS_PER_MONTH * node_rate / gpn * (1.0 - utilization),
        extra_nodes_monthly_usd=best.new_nodes_usd, api_monthly_usd=best.api_usd,
        licence_monthly_usd=best.licence_usd, total_monthly_usd=best.total_usd,
        attributed_usd_per_month=total_attributed,
        # The power within the node lines (new nodes bought outright at their stage plan's utilization, owned nodes
        # under owned-hardware pricing at the TCO's average draw); its detail is in fleet.mix / buy_options.
        energy_usd_per_month=best.energy_usd,
        unallocated_usd_per_month=round(best.total_usd - total_attributed, 2),
        owned_usd_per_mtok_out=owned_cash / tokens * 1e6 if tokens > 0 and owned_cash > 0 else None,
        monthly_usd_by_route=by_route, deployments=tuple(kept),
        node_drivers=cand_fleet.node_drivers if cand_fleet is not None and new else (),
        pool_drivers=cand_fleet.pool_drivers if cand_fleet is not None and new else (),
        licensed_routes=licensed_routes(candidate.ev) if candidate is not None else base.licensed_routes,
        verdict_mix=mix_words, source=base.source)


def by_workload(ev) -> list[dict]:
    """`fleet.attribution_by_workload` of the mix: each workload's GPU (its stage's; "" on no node), route and
    attributed $ a month; with fleet.unallocated_usd_per_month they add up to the bill to the cent."""
    from core.decision import mix

    best = mix.of(ev).best
    att = attributed(ev)
    route_of, _ = _routes(best, len(ev.workloads))
    gpu = np.full(len(ev.workloads), "", dtype=object)
    for st in best.stages:
        gpu[st.rows[st.keep][_on_owned(st)]] = st.gpu
    ids = ev.workloads["workload_id"].astype(str).to_numpy()
    return [{"workload_id": str(ids[i]), "gpu": gpu[i] or None, "route_id": route_of[i] or None,
             "monthly_usd": float(att[i])} for i in range(len(ids))]


def _on_owned(st) -> np.ndarray:
    """Of a stage's placed positions, those on its nodes (not an API)."""
    e = st.ev
    v = e.verdict[st.keep]
    hosting = np.array([r.hosting for r in e.routes] + [""], dtype=object)
    return hosting[np.where(v >= 0, v, len(e.routes))] == "owned"


def _routes(best, n: int) -> tuple[np.ndarray, dict[str, int]]:
    """Each workload's route id in the mix ("" unserved; buy-nothing rows on an API carry no stage route), and the
    verdict mix in the fleet record's keys."""
    route_of = np.full(n, "", dtype=object)
    kinds = np.full(n, "no feasible route", dtype=object)
    for st in best.stages:
        e = st.ev
        for k, i in zip(st.keep, st.rows[st.keep], strict=True):
            v = int(e.verdict[k])
            if v >= 0:
                r = e.routes[v]
                route_of[i] = r.route_id
                kinds[i] = r.architecture + (" (API)" if r.hosting == "api" else " (owned)")
    counts: dict[str, int] = {}
    for k in kinds:
        counts[k] = counts.get(k, 0) + 1
    return route_of, dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def performance(ev) -> PerformanceRange | None:
    """The chosen mix at each end of the performance estimates (its chain re-planned at each efficiency end);
    None when the ends were not computed."""
    from core.decision import mix

    bo = mix.of(ev)
    ends = bo.ends.get(bo.best.label)
    if ends is None:
        return None
    best = bo.best
    owned = sum(best.owned_nodes_by_gpu.values())
    central = set(best.served_rows.tolist())

    def nodes_of(p) -> int:
        return owned + p.new_node_count if p.new_node_count else min(owned, top(ev).nodes_needed)

    nodes = {}
    moved = {}
    more = dict(zip(("optimistic", "pessimistic"), bo.ends_with_added.get(best.label, (None, None)), strict=True))
    dropped = bo.dropped(best)  # the workloads an end cannot serve, priced as every row's range prices them
    for name, p in zip(("optimistic", "pessimistic"), ends, strict=True):
        nodes[name] = nodes_of(p)
        there = set(p.served_rows.tolist())
        # The ends are planned for the chosen mix's work (mix.buy_options); what only an end serves, from its
        # plan serving that too.
        whole = more[name]
        added = len(set(whole.served_rows.tolist()) - central) if whole is not None else len(there - central)
        moved[name] = (dropped[f"dropped_{name}"], dropped[f"dropped_{name}_usd"], added)
    fast, slow = ends
    return PerformanceRange(
        nodes_needed_optimistic=nodes["optimistic"], nodes_needed_pessimistic=nodes["pessimistic"],
        total_monthly_usd_optimistic=fast.total_usd, total_monthly_usd_pessimistic=slow.total_usd,
        unserved_optimistic=fast.unserved, unserved_central=best.unserved, unserved_pessimistic=slow.unserved,
        dropped_optimistic=moved["optimistic"][0], dropped_optimistic_usd=moved["optimistic"][1],
        dropped_pessimistic=moved["pessimistic"][0], dropped_pessimistic_usd=moved["pessimistic"][1],
        added_optimistic=moved["optimistic"][2], added_pessimistic=moved["pessimistic"][2],
        nodes_needed_optimistic_with_added=None if more["optimistic"] is None else nodes_of(more["optimistic"]),
        nodes_needed_pessimistic_with_added=None if more["pessimistic"] is None else nodes_of(more["pessimistic"]),
        total_monthly_usd_optimistic_with_added=None if more["optimistic"] is None else more["optimistic"].total_usd,
        total_monthly_usd_pessimistic_with_added=None if more["pessimistic"] is None else
        more["pessimistic"].total_usd,
        basis="the chosen mix's chain re-planned with every owned route at the optimistic, then the pessimistic "
              "end of its efficiency range, for the work the chosen mix serves (estimates)")


def range_words(ev) -> str | None:
    """The Overview's estimate-range line for the chosen mix (None: not computed)."""
    from core.decision.sensitivity import end_caveats
    from core.format import integer, money

    pr = performance(ev)
    if pr is None:
        return None

    def end(n, usd):
        return f"{integer(n)} node{'s' if n != 1 else ''} and {money(usd)} a month"

    line = (f"Estimate range of the chosen mix across the performance estimates, for the work it serves: "
            f"{end(pr.nodes_needed_optimistic, pr.total_monthly_usd_optimistic)} at the optimistic end, "
            f"{end(pr.nodes_needed_pessimistic, pr.total_monthly_usd_pessimistic)} at the pessimistic end")
    if not pr.unserved_optimistic == pr.unserved_central == pr.unserved_pessimistic:
        line += (f" (workloads without a route: {pr.unserved_optimistic} optimistic, {pr.unserved_central} central, "
                 f"{pr.unserved_pessimistic} pessimistic)")
    line += "."
    for word in ("pessimistic", "optimistic"):
        line += "".join(f" The {word} end's bill {part}." for part in end_caveats(pr, word))
    return line


def purchase_subject(ev) -> str:
    """What a mixed scenario's staged purchase counts, to put before its sentences: its figures are the new nodes'
    plan alone ('0 owned' there means none of that GPU), so they name the GPU and option: 'New B200 nodes
    (bought outright (TCO)), beside the owned nodes kept on their GPU: '; '' for one GPU type."""
    if not ev.scenario.mixed:
        return ""
    from core.decision import mix
    from core.models import PricingOption

    best = mix.of(ev).best
    option = mix.OPTION_WORDS[PricingOption(best.option)] if best.option else ""
    return f"New {best.gpu} nodes ({option}), beside the owned nodes kept on their GPU: "


def staged_purchase(ev, purchase_settings=None):
    """The staged purchase of the mix's new nodes (core.decision.purchase on the stage that buys them: the
    candidate GPU's plan); None when the mix buys nothing or it was skipped."""
    from core.decision import mix
    from core.decision.purchase import purchase

    best = mix.of(ev).best
    stage = next((st for st in best.stages if st.candidate), None)
    if stage is None or not best.new_node_count:
        return None
    return purchase(stage.ev, purchase_settings)


def purchase_json(ev, purchase_settings=None) -> dict | None:
    """The staged purchase of the mix's new nodes: the candidate stage's (the only one that buys), its GPU and
    option named; None when the mix buys nothing or it was not computed."""
    from core.decision import mix
    from core.decision.purchase import purchase_json

    p = staged_purchase(ev, purchase_settings)
    best = mix.of(ev).best
    return None if p is None else {"gpu": best.gpu, "option": best.option, **purchase_json(p)}


def unserved_mask(ev) -> np.ndarray:
    """True for the workloads (inventory order) the chosen mix leaves unserved."""
    from core.decision import mix

    mask = np.ones(len(ev.workloads), dtype=bool)
    mask[mix.of(ev).best.served_rows] = False
    return mask


def unserved_json(ev) -> dict:
    """`fleet.unserved_work` of the mix: the workloads the mix leaves unserved, each with its cheapest route after
    the smallest change that gives it one (unserved.shown_unserved: a standalone estimate; route null: none found),
    and the mix's bill with them."""
    from core.decision import mix
    from core.decision.unserved import shown_unserved

    best = mix.of(ev).best
    left = shown_unserved(ev)
    return {"priced_monthly_usd": left.priced_usd_per_month, "unpriced": left.unpriced,
            "total_monthly_usd_with_unserved": round(best.total_usd + left.priced_usd_per_month, 2),
            "workloads": [{"workload_id": r.workload_id, "route_id": r.route_id, "route": r.route,
                           "change": r.change, "monthly_usd": r.monthly_usd} for r in left.routes]}
