"""Read-only views over an Evaluation for people: KPI figures, the summary in words, provenance lines, chart-ready frames."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core.decision import contract
from core.decision.engine import Evaluation
from core.decision.mixfleet import top as top_fleet
from core.decision.records import with_smallest
from core.presentation.format import (
    duration_ms,
    fmt,
    hour_of_day,
    integer,
    money,
    number,
    percent,
    plain,
)
from core.presentation.served import served_words

ARCHITECTURE_ORDER = ("autoregressive", "speculative", "moe", "diffusion")
ARCHITECTURE_LABELS = {"autoregressive": "Autoregressive", "speculative": "Speculative", "moe": "MoE",
                       "diffusion": "Diffusion"}
NO_ROUTE = "no feasible route"
QUIET_UTILIZATION = 0.05  # an hour under 5 % busy counts as quiet in the summary


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{integer(n)} {one if n == 1 else (many or one + 's')}"


# -- groups --------------------------------------------------------------------

def verdict_group(architecture: str, hosting: str) -> str:
    """The engine's verdict-mix key: 'moe (owned)', 'autoregressive (API)' or 'no feasible route'."""
    if not hosting:
        return NO_ROUTE
    return f"{architecture} ({'API' if hosting == 'api' else 'owned'})"


def group_label(group: str) -> str:
    """'moe (owned)' -> 'MoE, owned'; for legends."""
    if group == NO_ROUTE:
        return "No feasible route"
    arch, _, rest = group.partition(" (")
    return f"{ARCHITECTURE_LABELS.get(arch, arch)}, {rest.rstrip(')')}"


# -- overview ------------------------------------------------------------------

def api_equivalent_usd_per_mtok(ev: Evaluation) -> float | None:
    """What the owned fleet's output tokens would cost from the cheapest API meeting each workload's floor.

    Token-weighted over workloads whose verdict is an owned route:
    Σ(value $/M × output tokens/day) / Σ(output tokens/day). Data policy is
    ignored on purpose: this is the value of the token, not a feasible route. Read from the verdicts, not the
    verdicts frame: the frame's sensitivity columns plan both ends of the ranges, and the overview's headline
    waited for them (issue 31: the headline first).
    """
    w = ev.workloads
    tokens = w["requests_per_day"].to_numpy(dtype=float) * w["output_tokens"].to_numpy(dtype=float)
    if ev.scenario.mixed:  # the chosen mix's routes and figures (core.decision.mixrows)
        vf = contract.verdicts_frame(ev)
        owned = (vf["hosting"] == "owned").to_numpy()
        value = vf["value_usd_per_mtok"].to_numpy(dtype=float)
    else:
        hosting = np.array([r.hosting == "owned" for r in ev.routes] + [False])
        owned = hosting[np.where(ev.verdict >= 0, ev.verdict, len(ev.routes))]
        value = np.asarray(ev.value_usd_per_mtok, dtype=float)
    use = owned & np.isfinite(value) & (tokens > 0)
    if not use.any():
        return None
    return float((value[use] * tokens[use]).sum() / tokens[use].sum())


def overview_kpis(ev: Evaluation) -> dict:
    """The overview's KPI row as plain numbers (None where a figure does not apply); the chosen mix's in a mixed
    scenario."""
    f = top_fleet(ev)
    return {
        "owned_nodes": int(f.owned_nodes),
        "gpus_per_node": int(f.gpus_per_node),
        "gpu": f.gpu,
        "nodes_needed": int(f.nodes_needed),
        # Over every node in the plan (owned and to buy), so a fleet of zero owned nodes still shows its idle share.
        "utilization": float(f.utilization) if f.nodes_in_plan else None,
        "idle_usd_per_month": float(f.idle_usd_per_month),
        "owned_usd_per_mtok_out": f.owned_usd_per_mtok_out,
        "api_usd_per_mtok_out": api_equivalent_usd_per_mtok(ev),
        "owned_monthly_usd": float(f.owned_monthly_usd),
        "total_monthly_usd": float(f.total_monthly_usd),
        "inventory": f.inventory or "given",
        "workloads": int(len(ev.workloads)),
    }


def _plan_hosting(ev: Evaluation, vf: pd.DataFrame) -> pd.Series:
    """Each workload's hosting in the shown plan ("owned", "api", "" unserved): the chosen mix's in a mixed
    scenario, else the verdicts'."""
    if not ev.scenario.mixed:
        return vf["hosting"]
    from core.decision import mixfleet

    rows = mixfleet.by_workload(ev)
    return pd.Series(["owned" if r["gpu"] else "api" if r["route_id"] else "" for r in rows], index=vf.index)


def _plan_architecture(ev: Evaluation, vf: pd.DataFrame) -> pd.Series:
    """Each workload's architecture in the shown plan (the chosen mix's route in a mixed scenario)."""
    if not ev.scenario.mixed:
        return vf["architecture"]
    from core.decision import mixfleet

    arch = {r.route_id: r.architecture for r in ev.routes}
    return pd.Series([arch.get(r["route_id"] or "", "") for r in mixfleet.by_workload(ev)], index=vf.index)


def _quiet_window(util: list[float]) -> tuple[int, int] | None:
    """Longest run of quiet hours (wrapping past midnight) as (first hour, hours long), or None."""
    quiet = [u < QUIET_UTILIZATION for u in util]
    if all(quiet) or not any(quiet):
        return None
    start = quiet.index(False)  # walk from a busy hour so a run across midnight stays whole
    best, run_start, run = (0, 0), 0, 0  # run_start is set as each quiet run begins
    for k in range(1, 25):
        h = (start + k) % 24
        if quiet[h]:
            run_start = h if run == 0 else run_start
            run += 1
            if run > best[1]:
                best = (run_start, run)
        else:
            run = 0
    return best if best[1] >= 2 else None


def inventory_words(label: str) -> str:
    """'bundled sample' -> 'the bundled sample inventory'; 'version 3' -> 'inventory version 3'."""
    if label == "bundled sample":
        return "the bundled sample inventory (no inventory uploaded yet)"
    if label.startswith("version"):
        return f"inventory {label}"
    return f"the {label} inventory"


def overview_summary(ev: Evaluation) -> list[str]:
    """A few sentences a finance reader can quote: idle cost, quiet hours, nodes needed, where the work goes."""
    f = top_fleet(ev)
    k = overview_kpis(ev)
    vf = contract.verdicts_frame(ev)
    owned, needed, gpn = k["owned_nodes"], k["nodes_needed"], k["gpus_per_node"]
    out: list[str] = []
    fleet_words = f"{_plural(owned, 'owned node')} ({gpn} × {k['gpu']} each)"
    plan_nodes = int(f.nodes_in_plan)
    if owned:
        # Utilization and idle cost cover every node in the plan (issue 11): name them when more than owned.
        subject = (f"Your {fleet_words} {'is' if owned == 1 else 'are'}" if plan_nodes <= owned else
                   f"The plan's {_plural(plan_nodes, 'node')} ({integer(owned)} owned, {integer(plan_nodes - owned)} "
                   f"to buy; {gpn} × {k['gpu']} each) are")
        out.append(f"{subject} busy {percent(k['utilization'])} of the time "
                   f"on average and idle {percent(1 - k['utilization'])}: {money(k['idle_usd_per_month'])} a month "
                   f"pays for idle GPUs at {money(f.full_usd_per_node_hour)} per node-hour.")
        without = list(f.hourly_utilization_without_batch)
        peak_h = int(np.argmax(without))
        quiet = _quiet_window(without)
        if max(without) > 0:
            line = f"Interactive work peaks at {percent(without[peak_h])} of the fleet around {hour_of_day(peak_h)}"
            if quiet:
                start, n = quiet
                line += (f"; from {hour_of_day(start)} to {hour_of_day(start + n)} it uses under "
                         f"{percent(QUIET_UTILIZATION)}")
            out.append(line + ".")
        if f.offline_gpu_hours_per_day > 0:
            batch = vf.loc[(vf["hosting"] == "owned") & ~vf["interactive"], "workload_id"].astype(str).tolist()
            extra = f.nodes_needed_offline_extra
            out.append(f"Batch work ({', '.join(batch[:4])}{'…' if len(batch) > 4 else ''}: "
                       f"{number(f.offline_gpu_hours_per_day, decimals=1)} GPU-hours a day) fills the quiet hours first"
                       + (f" and still needs {_plural(extra, 'extra node')}." if extra
                          else " and needs no extra node."))
    else:
        out.append("You own no nodes in this scenario: every owned route would run on new nodes.")
    if needed > owned:
        # What each node is for (in a mix the latency targets may hold fewer nodes than the plan: an owned node
        # of another GPU kept for batch work alone is one of them).
        inter, extra = int(f.nodes_needed_interactive), int(f.nodes_needed_offline_extra)
        uses = [f"{integer(inter)} hold{'s' if inter == 1 else ''} every latency target at peak"]
        if extra:
            uses.append(f"{integer(extra)} more fit{'s' if extra == 1 else ''} the batch work")
        if (rest := needed - inter - extra) > 0:
            uses.append(f"{integer(rest)} run{'s' if rest == 1 else ''} batch work only")
        line = (f"The plan needs {_plural(needed, 'node')} ({'; '.join(uses)}): {integer(needed - owned)} more "
                f"than you own, about {money(f.extra_nodes_monthly_usd)} a month at full price.")
        drivers = node_drivers(ev)
        saving = drivers.dropna(subset=["saves_usd_per_month"])
        saving = saving[saving["saves_usd_per_month"] > 0.5].sort_values("saves_usd_per_month", ascending=False)
        if len(saving):
            top = saving.iloc[0]
            line += (f" The biggest lever: {top['workload_id']} ({top['target']}): {top['change']} saves "
                     f"{money(top['saves_usd_per_month'])} a month.")
        from core.decision.explain import purchase_cause_words

        if cause := purchase_cause_words(f):
            line += " " + cause
        out.append(line)
    elif needed < owned:
        out.append(f"The recommended mix needs {_plural(needed, 'node')} of your {integer(owned)}; "
                   f"{_plural(owned - needed, 'node')} could be released or given more work.")
    elif owned:
        out.append(f"The recommended mix fits on the {_plural(owned, 'node')} you own.")
    n = len(vf)
    hosting = _plan_hosting(ev, vf)
    n_owned, n_api = int((hosting == "owned").sum()), int((hosting == "api").sum())
    by_arch = vf.assign(architecture=_plan_architecture(ev, vf)).loc[hosting == "owned", "architecture"].value_counts()
    arch_words = ", ".join(f"{c} on {ARCHITECTURE_LABELS.get(a, a).lower() if a != 'moe' else 'MoE'}"
                           for a, c in by_arch.items())
    line = f"{n_owned} of {_plural(n, 'workload')} run on owned GPUs in the plan" + (f" ({arch_words})" if arch_words else "")
    if n_api:
        line += f", {n_api} on public APIs ({money(f.api_monthly_usd)} a month)"
    out.append(line + ".")
    none = vf.loc[hosting == "", "workload_id"].astype(str).tolist()
    if none:
        out.append(f"{_plural(len(none), 'workload')} {'has' if len(none) == 1 else 'have'} no feasible route: "
                   f"{', '.join(none[:5])}{'…' if len(none) > 5 else ''} (see Routing).")
    out.append(f"The plan's cash bill is {money(f.total_monthly_usd)} a month (it "
               f"{served_words(f.workloads_served, f.workloads_total)}): owned nodes "
               f"{money(f.owned_monthly_usd)}, new nodes {money(f.extra_nodes_monthly_usd)}, public APIs "
               f"{money(f.api_monthly_usd)}; {money(f.unallocated_usd_per_month)} of it is charged to no "
               "workload (spare GPUs and hours, whole-node rounding).")
    out += licensed_words(ev)
    eff, api = k["owned_usd_per_mtok_out"], k["api_usd_per_mtok_out"]
    if eff is not None and api is not None:
        out.append(f"At this utilization an owned output token costs {money(eff)} per million, against "
                   f"{money(api)} from the cheapest API that meets each of those workloads' quality floor.")
    out.append(f"Workloads: {inventory_words(k['inventory'])}, {_plural(k['workloads'], 'workload')}. "
               "Performance and quality figures are estimates unless marked calibrated.")
    return out


# -- provenance ----------------------------------------------------------------

def node_price_note(ev: Evaluation) -> str:
    """'Node price: AWS p5.48xlarge (1-year savings plan) $33.02/hour, as of 2026-01-01, source …, confidence …'."""
    from core.presentation.pricing_views import node_rate_label

    p = contract.scenario_dict(ev)["node_price"]
    when = f", as of {p['as_of']}" if p["as_of"] else ""
    return (f"Node price: {node_rate_label(p['label'])} {money(p['usd_per_node_hour'])}/hour{when}, source: {p['source']}, "
            f"confidence {p['confidence']}. Basis: {p['basis']}.")


def api_prices_note(ev: Evaluation) -> str:
    """One line on the API list prices used: how many, dates, sources, confidence, scale."""
    apis = contract.scenario_dict(ev)["api_prices"]
    if not apis:
        return "API prices: none in the store."
    dates = sorted({a["as_of"] for a in apis})
    sources = sorted({a["source"] for a in apis})
    conf = sorted({a["confidence"] for a in apis})
    when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    return (f"API prices: {len(apis)} list prices as of {when}; sources: {'; '.join(sources)}; "
            f"confidence {', '.join(conf)}; scaled × {plain(ev.scenario.api_price_scale)}.")


def performance_note(ev: Evaluation) -> str:
    """Which serving stacks' throughput and latency are roofline estimates and which are calibrated."""
    stacks = contract.scenario_dict(ev)["serving_stacks"]
    calibrated = [s["name"] for s in stacks if "calibrated" in s["performance"]]
    if not calibrated:
        return (f"Throughput and latency: roofline estimates for all {len(stacks)} serving stacks "
                "(no matching benchmarks for this GPU). Quality per task class: estimates from the seed data.")
    return (f"Throughput and latency: calibrated to benchmarks for {', '.join(calibrated)}; roofline estimates "
            f"for the other {len(stacks) - len(calibrated)}. Quality per task class: estimates from the seed data.")


def provenance_notes(ev: Evaluation) -> list[tuple[str, str]]:
    """Every outside number behind the page as (confidence or provenance word, sentence with date and source)."""
    sd = contract.scenario_dict(ev)
    a = sd["assumptions"]
    # Several API confidences: show the weakest, since the line speaks for all of them.
    weakest = ("user", "primary", "secondary", "unverified", "estimate")
    api_conf = max((p["confidence"] for p in sd["api_prices"]), key=lambda c: weakest.index(c) if c in weakest else 9,
                   default="estimate")
    calibrated = any("calibrated" in s["performance"] for s in sd["serving_stacks"])
    return [
        (sd["node_price"]["confidence"], node_price_note(ev)),
        (api_conf, api_prices_note(ev)),
        ("calibrated" if calibrated else "estimated", performance_note(ev)),
        ("estimate", f"Queueing model: {a['queueing_model']}; traffic: {a['traffic_shape']}; API p95 = "
                     f"{plain(a['api_p95_over_typical'])} × typical latency (estimate)."),
    ]


# -- routing -------------------------------------------------------------------

def routing_map(ev: Evaluation) -> pd.DataFrame:
    """The routing picture's points: batchability (SLA, or batch window in ms) against the value of the token."""
    vf = contract.verdicts_frame(ev)
    window_ms = vf["batch_window_hours"].to_numpy(dtype=float) * 3.6e6
    batch_ms = np.where(vf["interactive"].to_numpy(), vf["latency_slo_ms"].to_numpy(dtype=float), window_ms)
    return pd.DataFrame({
        "workload_id": vf["workload_id"].astype(str),
        "name": vf["name"].astype(str),
        "batchability_ms": batch_ms,
        "batchability": np.where(vf["interactive"], "latency target", "batch window"),
        "value_usd_per_mtok": vf["value_usd_per_mtok"].to_numpy(dtype=float),
        "group": [verdict_group(a, h) for a, h in zip(vf["architecture"], vf["hosting"], strict=True)],
        "route": vf["route"].astype(str),
        "monthly_usd": vf["monthly_usd"].to_numpy(dtype=float),
    })


def scored_routes_note(ev: Evaluation, i: int) -> str | None:
    """In a mixed scenario, which plan scored workload i's routes below its verdict (the one-kind plan, the
    sidebar's GPU alone) and which picked its verdict (the chosen mix); None otherwise."""
    if not ev.scenario.mixed:
        return None
    v = int(ev.verdict[i])
    picked = ev.routes[v].label if v >= 0 else "no route"
    return (f"The verdict and its reasons are the chosen mix's. The routes below are scored on {ev.gpu_name} alone "
            f"(the one-kind plan, which picked {picked}); the mix plans each GPU type with its own figures.")


def route_alternatives(ev: Evaluation, i: int) -> tuple[pd.DataFrame, list[tuple[list[str], str]]]:
    """For workload i: (feasible routes, cheapest first; rejected routes grouped by their identical reason).

    Grouping keeps an owned-only workload's thirteen identical "data may not
    leave" refusals to one line. A feasible route the plan may not use (licensed weights whose fee is not
    entered: its figures leave the fee out) says so in its name, or a reader takes the cheapest row for the plan's.
    """
    rf = contract.routes_frame(ev, i)
    ok = rf[rf["feasible"]].sort_values(["usd_per_request", "p95_latency_ms"], na_position="last")
    barred = ~ok["permitted"].astype(bool)
    ok.loc[barred, "route"] = ok.loc[barred, "route"] + " (not in the plan: licence fee not entered)"
    rejected: dict[str, list[str]] = {}
    for route, why in zip(rf.loc[~rf["feasible"], "route"], rf.loc[~rf["feasible"], "why_not"], strict=True):
        rejected.setdefault(str(why or "infeasible"), []).append(str(route))
    return ok.reset_index(drop=True), [(routes, why) for why, routes in rejected.items()]


# -- fleet ---------------------------------------------------------------------

def fingerprint(ev: Evaluation) -> str:
    """A short digest of an evaluation's inventory, verdicts and money, for cache keys shared across sessions."""
    import hashlib

    h = hashlib.sha256()
    h.update(str(ev.fleet.inventory).encode())
    h.update(np.ascontiguousarray(ev.verdict).tobytes())
    h.update(np.nan_to_num(np.ascontiguousarray(ev.a["usd_per_request"])).tobytes())
    h.update(repr((ev.fleet.total_monthly_usd, ev.fleet.nodes_needed, ev.rate)).encode())
    h.update(ev.workloads["workload_id"].astype(str).str.cat(sep="\x00").encode())
    return h.hexdigest()[:16]


def nodes_by_route(ev: Evaluation) -> pd.DataFrame:
    """Owned routes in use: GPUs held (offline work as its daily average), pooled nodes, monthly $."""
    f = top_fleet(ev)
    labels = {r.route_id: (r.label, r.architecture) for r in ev.routes}
    rows = []
    for rid, gpus in f.gpus_by_route.items():
        label, arch = labels.get(rid, (rid, ""))
        rows.append({"route_id": rid, "route": label, "architecture": arch, "gpus": float(gpus),
                     "nodes": f.nodes_by_route.get(rid), "monthly_usd": f.monthly_usd_by_route.get(rid)})
    out = pd.DataFrame(rows, columns=["route_id", "route", "architecture", "gpus", "nodes", "monthly_usd"])
    return out.sort_values("gpus", ascending=False).reset_index(drop=True)


def cash_bill(ev: Evaluation) -> pd.DataFrame:
    """The monthly cash bill line by line, then how it splits between workloads and what no workload is charged.

    The first lines add up to the bill; the last two add up to it as well (attributed + not attributed).
    """
    f = top_fleet(ev)
    new = f.new_nodes
    owned_what, new_what = (f"{_plural(int(f.owned_nodes), 'node')} × {money(f.full_usd_per_node_hour)}/node-hour "
                            "× 730 h, paid whatever runs on them", f"{_plural(new, 'node')} bought whole at the same "
                            "price")
    if ev.scenario.mixed:
        owned_what, new_what = _mix_bill_words(ev)
    rows = [
        ("Owned nodes", owned_what, float(f.owned_monthly_usd)),
        ("New nodes", new_what, float(f.extra_nodes_monthly_usd)),
        ("Public APIs", "per request, at list price × the scenario's scale", float(f.api_monthly_usd)),
        ("Licences", "licensed weights, per GPU-month", float(f.licence_monthly_usd)),
        ("Cash bill", "the same under either cost basis", float(f.total_monthly_usd)),
        ("Attributed to workloads", "interactive: share of reserved GPUs at peak; batch: GPU-hours used "
         f"({ev.scenario.cost_basis.value} basis)", float(f.attributed_usd_per_month)),
        ("Not attributed", "idle GPUs, idle hours, whole-node rounding", float(f.unallocated_usd_per_month)),
    ]
    return pd.DataFrame(_energy_rows(rows, f), columns=["line", "what", "usd_per_month"])


def _energy_rows(rows: list[tuple[str, str, float]], f) -> list[tuple[str, str, float]]:
    """Nodes priced at their TCO: their energy as its own line (core.decision.energy), taken out of the owned and
    new node lines in proportion to their nodes, in cents, so the lines still add up to the bill."""
    e = f.energy
    if e is None or e.nodes <= 0:
        return rows
    owned_e = round(e.usd_per_month * min(f.owned_nodes, e.nodes) / e.nodes, 2)
    new_e = round(e.usd_per_month - owned_e, 2)
    (o_line, o_what, o_usd), (n_line, n_what, n_usd) = rows[0], rows[1]
    return [
        (f"{o_line}, without energy", f"{o_what}, less their energy", round(o_usd - owned_e, 2)),
        (f"{n_line}, without energy", f"{n_what}, less their energy", round(n_usd - new_e, 2)),
        ("Energy", f"{_plural(e.nodes, 'node')} × {number(e.kw_per_node, decimals=2)} kW (idle "
         f"{number(e.idle_kw, decimals=1)} + (busy {number(e.busy_kw, decimals=1)} − idle) × utilization "
         f"{percent(e.utilization)}) × PUE {number(e.pue, decimals=2)} × {money(e.usd_per_kwh)}/kWh × 730 h "
         "(estimate)", float(e.usd_per_month)),
        *rows[2:],
    ]


def _mix_bill_words(ev: Evaluation) -> tuple[str, str]:
    """The owned and new node lines of a mixed plan's bill in words: each kind, count and price."""
    from core.decision import mix
    from core.models import PricingOption

    best = mix.of(ev).best
    owned = "; ".join(f"{integer(k)} × {g}" for g, k in best.owned_nodes_by_gpu.items())
    new = "; ".join(f"{integer(n.nodes)} × {n.gpu}, {mix.OPTION_WORDS[PricingOption(n.option)]}, "
                    f"{money(n.usd_per_node_hour)}/node-hour" for n in best.new_nodes if n.nodes)
    return (f"{owned}, each at its own node price × 730 h, paid whatever runs on them (kept on their GPU)",
            new or "none")


def node_drivers(ev: Evaluation) -> pd.DataFrame:
    """Why each node beyond those owned is bought: the workload and target, and what relaxing it saves a month."""
    rows = []
    # With each driver's smallest_target relaxation where the smallest change was searched (it is not searched here).
    # In a mixed scenario: the chosen mix's (its smallest change is the one-kind plan's, not shown against it).
    f = top_fleet(ev) if ev.scenario.mixed else with_smallest(ev.fleet, ev.answers.known("smallest_change"))
    for d in f.node_drivers:
        target = (f"{integer(d.latency_slo_ms)} ms p95" if d.latency_slo_ms is not None
                  else f"{number(d.batch_window_hours, decimals=1)} h window")
        for change, saves in [(r.change, r.saves_usd_per_month) for r in d.relaxations] or [("—", None)]:
            # The engine names the data policy by its id; a person reads what it means.
            change = change.replace("(owned_only data)", "(its data may not leave your hardware)")
            rows.append({"workload_id": d.workload_id, "route": d.route, "target": target,
                         "nodes_forced": d.nodes_forced, "change": change, "saves_usd_per_month": saves})
    return pd.DataFrame(rows, columns=["workload_id", "route", "target", "nodes_forced", "change",
                                       "saves_usd_per_month"])


def pool_drivers(ev: Evaluation) -> pd.DataFrame:
    """The pools that hold GPUs where the plan buys nodes (fleet.pool_drivers): the nodes each forces and what its
    workloads would cost on their next-best routes off its stack."""
    from core.decision.explain import pool_elsewhere_words

    f = top_fleet(ev) if ev.scenario.mixed else ev.fleet
    # GPUs: whole for an interactive pool's replicas, a batch pool's GPU-hours a day / 24 to one decimal.
    rows = [{"route": p.route, "gpus_per_replica": p.gpus_per_replica,
             "gpus": integer(p.gpus) if abs(p.gpus - round(p.gpus)) < 1e-9 else number(p.gpus, decimals=1),
             "workloads": p.workloads,
             "nodes_forced": p.nodes_forced, "elsewhere": pool_elsewhere_words(p)} for p in f.pool_drivers]
    return pd.DataFrame(rows, columns=["route", "gpus_per_replica", "gpus", "workloads", "nodes_forced", "elsewhere"])


def deployment_why(ev: Evaluation) -> list[str]:
    """Per interactive pool with traffic: why it has its replicas, in words (core.decision.explain)."""
    from core.decision.explain import deployment_why_words

    return [deployment_why_words(d) for d in top_fleet(ev).deployments if d.why is not None]


def deployments(ev: Evaluation) -> pd.DataFrame:
    """The owned deployments of the plan: who shares each, its replicas, GPUs and whole nodes."""
    # A stack may run a pool per concurrency tier (core.decision.plan.CAP_BANDS): the tier names which.
    # A pool of zero-traffic workloads holds nothing: it reads "no traffic", not "0 replicas".
    gpus = _deployment_gpus(ev)
    rows = [{"route": d.label + (f" ({d.tier})" if d.tier else "") + (f" on {gpus[k]}" if gpus else ""),
             "gpus_per_replica": d.gpus_per_replica,
             "replicas": NO_TRAFFIC if _idle(d) else integer(d.replicas),
             "concurrency_cap": d.concurrency_cap, "gpus": d.gpus, "nodes": d.nodes,
             "offline_gpu_hours_per_day": d.offline_gpu_hours_per_day,
             "workloads": ", ".join(d.workloads[:8]) + (f" and {len(d.workloads) - 8} more"
                                                        if len(d.workloads) > 8 else "")}
            for k, d in enumerate(top_fleet(ev).deployments)]
    return pd.DataFrame(rows, columns=["route", "gpus_per_replica", "replicas", "concurrency_cap", "gpus", "nodes",
                                       "offline_gpu_hours_per_day", "workloads"])


def _deployment_gpus(ev: Evaluation) -> list[str]:
    """Each shown deployment's GPU in a mixed scenario (owned or new), in order; [] for the one-kind plan."""
    if not ev.scenario.mixed:
        return []
    from core.decision import mix

    return [f"{d.gpu} ({'owned' if d.on_owned_nodes else 'new'})" for d in mix.of(ev).best.deployments]


NO_TRAFFIC = "no traffic"


def _idle(d) -> bool:
    """A deployment with no work at all (its workloads have no traffic)."""
    return d.replicas == 0 and d.offline_gpu_hours_per_day == 0 and d.gpus == 0


def routing_table(vf: pd.DataFrame) -> pd.DataFrame:
    """The routing table as the Routing page shows it: a workload with no traffic says so beside its verdict and
    shows no nodes (not '0')."""
    out = vf.copy()
    idle = ~(out["requests_per_day"].to_numpy(dtype=float) > 0)
    if idle.any():
        out.loc[idle, "route"] = out.loc[idle, "route"].astype(str) + f" — {NO_TRAFFIC}"
        out.loc[idle, ["nodes", "p95_latency_ms"]] = np.nan
    return out


def licensed_words(ev: Evaluation) -> list[str]:
    """One sentence per licensed stack whose fee is not entered: what it would unlock or save."""
    out = []
    from core.decision.fleet import licensed_routes

    # A page that shows them asks for them (the break-even waits for that above break_even_max_workloads).
    for lic in (top_fleet(ev).licensed_routes if ev.scenario.mixed else licensed_routes(ev, force=True)) or ():
        if lic.serves_unserved:
            out.append(f"{lic.label} is the only route that can serve {', '.join(lic.serves_unserved[:5])}; "
                       "its weights need a licence: enter the fee (Pricing) to let the plan use it.")
        if lic.break_even_usd_per_gpu_month:
            also = "On the workloads the plan serves without it, " if lic.serves_unserved else ""
            out.append(f"{also}{lic.label} would pay for itself at a licence fee up to "
                       f"{money(lic.break_even_usd_per_gpu_month)} per GPU-month (break-even; it would save "
                       f"{money(lic.saves_usd_per_month_at_zero_fee)} a month at no fee).")
        elif not lic.serves_unserved:
            out.append(f"{lic.label} (licensed weights, fee not entered) would not lower the bill here.")
    return out


def costliest_interactive(ev: Evaluation, n: int) -> list[str]:
    """Ids of the n interactive workloads worth a chart: those without a route first (a reader must look at them),
    at most half of the n (rounded up) while served ones are left, then the served ones whose verdict costs most a month. All
    unserved first filled the chart with columns of crosses on a generated 100-workload inventory (11 unserved)."""
    vf = contract.verdicts_frame(ev)
    live = vf[vf["interactive"]].sort_values("monthly_usd", ascending=False, na_position="first", kind="stable")
    none = live["monthly_usd"].isna().to_numpy()
    served = int((~none).sum())
    take = min(int(none.sum()), max((n + 1) // 2, n - served))
    ids = live["workload_id"].astype(str).to_numpy()
    return [*ids[none][:take].tolist(), *ids[~none][:n - take].tolist()]


def architecture_side_by_side(comparison: pd.DataFrame) -> pd.DataFrame:
    """Per interactive workload and architecture, its best owned route: the cheapest feasible one the plan may
    use; else the cheapest feasible one it may not (licensed weights whose fee is not entered, `permitted`
    False: shown so a reader sees what a fee would unlock, never as the plan's); else the fastest.

    Takes analysis.architecture_comparison(ev); one row per (workload, architecture) in a fixed order.
    """
    cols = ["workload_id", "architecture", "route", "feasible", "permitted", "nodes", "gpus_per_replica",
            "max_concurrency_within_sla", "p95_latency_ms", "monthly_usd", "why_not"]
    if comparison.empty:
        return pd.DataFrame(columns=cols)
    c = comparison.copy()
    c["_w"] = pd.Categorical(c["workload_id"], categories=list(dict.fromkeys(c["workload_id"])))
    c["_a"] = pd.Categorical(c["architecture"], categories=list(ARCHITECTURE_ORDER))
    c["_cost"] = c["monthly_usd"].fillna(np.inf)
    # A licensed route without its fee looked cheapest (its bill leaves the fee out): on the sample a 1-node
    # diffusion bar for code-completion, whose diffusion route the plan may use needs 3 nodes alone.
    feasible = c["feasible"].astype(bool)
    c["_rank"] = np.where(feasible & c["permitted"].astype(bool), 0, np.where(feasible, 1, 2))
    c = c.sort_values(["_w", "_a", "_rank", "_cost", "p95_latency_ms"], ascending=True)
    best = c.groupby(["_w", "_a"], observed=True, sort=True).head(1)[cols].reset_index(drop=True)
    # A route that cannot run at all has no p95: missing (shown "—"), never "Infinity" on the page.
    best["p95_latency_ms"] = best["p95_latency_ms"].astype(float).replace([np.inf, -np.inf], np.nan)
    return best


# -- static tables ---------------------------------------------------------------

# A table this short is drawn as a static table (it wraps long text) rather than a scrolling grid (which cuts it).
STATIC_TABLE_ROWS = 60


def table_text(frame: pd.DataFrame, columns: dict[str, tuple[str, str]]) -> pd.DataFrame:
    """A frame as the words a person reads, for a static table: {column: (header, kind)}, in that order.

    Kinds are the formatter's report kinds (core.presentation.format.FORMATS: 'usd', 'int', 'num_1', 'text', …)
    plus 'ms' (a duration from milliseconds) and 'arch' (an architecture id in words: 'moe' -> 'MoE'). Missing,
    NaN and infinite values read '—', never 'None' or 'Infinity'.
    """
    out = {}
    for col, (header, kind) in columns.items():
        values: list[Any] = frame[col].tolist() if col in frame else [None] * len(frame)  # cells of any type
        if kind == "ms":
            out[header] = [duration_ms(v) for v in values]
        elif kind == "arch":
            out[header] = [ARCHITECTURE_LABELS.get(v, fmt(v, "text")) for v in values]
        else:
            out[header] = [fmt(v, kind) for v in values]
    return pd.DataFrame(out, index=frame.index)


# -- export --------------------------------------------------------------------

def routing_csv(ev: Evaluation) -> bytes:
    """The routing table (verdicts_frame) as UTF-8 CSV, for a spreadsheet; formula-like text neutralised."""
    from core.presentation.csv_export import routing_csv as frame_csv

    return frame_csv(contract.verdicts_frame(ev))
