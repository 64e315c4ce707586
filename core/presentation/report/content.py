"""What the procurement summary says: headline figures, recommended changes and the tables behind them.

Built once from an evaluation; the XLSX, HTML and Markdown writers only lay
it out, so the three formats cannot disagree on a number.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from core.decision import contract, explain
from core.decision.analysis import fleet_options, sensitivity
from core.decision.engine import API_P95_OVER_TYPICAL, Evaluation
from core.decision.mixrows import plan_reasons, stage_of
from core.decision.records import NodeDriver
from core.decision.sensitivity import ranges as performance_ranges
from core.decision.showback import showback as team_showback
from core.models import DEFAULT_MIN_QUALITY, HOURS_PER_MONTH, TASK_CLASSES, PricingOption
from core.presentation.pricing_views import node_rate_label
from core.presentation.report.numbers import fmt
from core.presentation.served import served_words, unserved_figures, with_unserved_note
from core.presentation.views import NO_ROUTE, licensed_words, routing_table
from core.scenarios import BASIS_LABELS, PRICING_LABELS

TITLE = "GPU Hangover — procurement summary"
CHANGES_NOTE = ("Each move is priced as its effect on the plan's cash bill, re-priced exactly with the workload on "
                "its cheapest route of another kind (API, owned autoregressive, owned diffusion); the attributed "
                "share is what the workload is charged in the plan (estimates).")
# Moves listed one by one; the rest are summed in one line (inventories can hold thousands).
MAX_MOVES = 10

ESTIMATES_NOTE = (
    "Estimates: owned latency, throughput and cost per workload come from a roofline model "
    "(\"estimated\", or \"calibrated\" where your benchmarks tuned it); API latencies are typical "
    f"published figures × {API_P95_OVER_TYPICAL:g} for p95 (estimate); quality figures are estimates. "
    "Prices are dated snapshots: each one's date and source is under Assumptions."
)

_ARCH_WORDS = {"autoregressive": "autoregressive", "speculative": "speculative decoding", "moe": "MoE",
               "diffusion": "diffusion"}
_API, _OWNED_AR, _OWNED_DIFFUSION = 0, 1, 2
# How the engine's reasons open for a workload no route can serve (core.decision.explain); the next reason is
# the closest failure.
NO_ROUTE_LEAD = "No route the plan may use meets every constraint"
_KIND_WORDS = {_API: "API", _OWNED_AR: "owned autoregressive", _OWNED_DIFFUSION: "owned diffusion"}


@dataclass(frozen=True)
class Figure:
    """One headline figure: a label, a value of a format kind (see numbers.FORMATS) and a note."""

    key: str
    label: str
    value: float | int | str | None
    kind: str
    note: str = ""

    @property
    def text(self) -> str:
        """The value as every format shows it."""
        return fmt(self.value, self.kind)


@dataclass(frozen=True)
class Change:
    """One recommended change in plain words, with its effect on the monthly bill where one applies."""

    action: str
    text: str
    usd_per_month: float | None = None  # + adds to the bill, − saves


@dataclass(frozen=True)
class Column:
    """A table column: row key, header, format kind ('mixed': each row names its kind in `<key>:kind`)."""

    key: str
    header: str
    kind: str
    width: int | None = None  # characters; None = fit the content
    wrap: bool = False


@dataclass
class Table:
    """A titled table of plain rows (dicts keyed by column key)."""

    name: str  # Excel table name: letters and digits only
    title: str
    columns: list[Column]
    rows: list[dict]
    note: str = ""

    def kind_of(self, row: dict, col: Column) -> str:
        """The format kind of one cell."""
        return row.get(f"{col.key}:kind", "text") if col.kind == "mixed" else col.kind

    def column(self, key: str) -> Column:
        """A column by key."""
        return next(c for c in self.columns if c.key == key)


@dataclass
class ProcurementSummary:
    """Everything the three report formats show, in the order they show it."""

    generated: dt.datetime
    inventory: str
    scenario_line: str
    headline: list[Figure]
    changes: list[Change]
    cost_by_route: Table
    options: Table
    workloads: Table
    fleet_routes: Table
    hourly: Table
    assumptions: Table
    sensitivity: Table
    title: str = TITLE
    estimates_note: str = ESTIMATES_NOTE
    workload_count: int = 0
    extras: dict = field(default_factory=dict)
    showback: Any = None  # core.decision.showback.Showback by team (the workbook's Showback sheet); None: left out
    purchase: Table | None = None  # the staged purchase under the ranges (None: not computed)

    def figure(self, key: str) -> Figure:
        """A headline figure by key."""
        return next(f for f in self.headline if f.key == key)

    @property
    def generated_text(self) -> str:
        """When the report was made, to the minute, with its time zone."""
        return self.generated.strftime("%Y-%m-%d %H:%M %Z").strip()


# ---------------------------------------------------------------------------
# building blocks
# ---------------------------------------------------------------------------

def _energy_figures(f) -> list:
    """Nodes priced at their TCO: the energy of the node lines at the plan's utilization (core.decision.energy)."""
    e = f.energy
    if e is None:
        return []
    return [Figure("energy_usd_per_month", "Energy of the owned and new nodes, $/month", float(e.usd_per_month), "usd",
                   f"of the node lines above: {e.nodes} × {fmt(e.kw_per_node, 'num_2')} kW (idle {fmt(e.idle_kw, 'num_1')} "
                   f"+ (busy {fmt(e.busy_kw, 'num_1')} − idle) × utilization {fmt(e.utilization, 'pct')}) × PUE "
                   f"{fmt(e.pue, 'num_2')} × {fmt(e.usd_per_kwh, 'usd_2')}/kWh × {HOURS_PER_MONTH:g} h; at the flat "
                   f"{fmt(e.flat_kw_per_node, 'num_1')} kW average it would be {fmt(e.flat_usd_per_month, 'usd')} "
                   f"(estimate; {e.source}, {e.as_of})")]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _route_kinds(ev: Evaluation) -> np.ndarray:
    return np.array([_API if r.hosting == "api" else _OWNED_DIFFUSION if r.architecture == "diffusion"
                     else _OWNED_AR for r in ev.routes], dtype=int)


def _top(ev: Evaluation):
    """The fleet record the report shows: the chosen mix in a mixed scenario (core.decision.mixfleet), else the plan."""
    from core.decision import mixfleet

    return mixfleet.top(ev)


def _plan_routes(ev: Evaluation, vf: pd.DataFrame) -> pd.DataFrame:
    """Each workload's route id in the plan the report shows (the mix's in a mixed scenario; "" unserved)."""
    if not ev.scenario.mixed:
        return vf[["workload_id", "route_id"]]
    from core.presentation.report import mixed

    return mixed.plan_routes(ev)


def _node_words(ev: Evaluation) -> str:
    return f"{ev.scenario.gpus_per_node}×{ev.gpu_name}"


def _rate_label(rate) -> str:
    """The node price's name in plain words: 'AWS p5.48xlarge (1-year savings plan)', never '(savings_1y)'."""
    return node_rate_label(rate)


def _mix_words(mix: Mapping[str, int]) -> str:
    """The verdict mix in words: '2 on a public API (autoregressive), 1 on owned GPUs (MoE), 3 with no route'."""
    parts = []
    for key, n in mix.items():
        if key == NO_ROUTE:
            parts.append(f"{n} with no feasible route")
            continue
        arch, _, hosting = key.partition(" (")
        where = "a public API" if hosting.rstrip(")") == "API" else "owned GPUs"
        parts.append(f"{n} on {where} ({_ARCH_WORDS.get(arch, arch)})")
    return ", ".join(parts)


def _few(option: dict, shown: int = 4) -> str:
    """An option's unserved workloads for a headline note: up to `shown` ids, else a few and a count."""
    n = int(option.get("workloads_unserved") or 0)
    if n <= shown:
        return option["unserved"]
    ids = option["unserved"].split(" and ")[0].split(", ")[:shown - 1]
    return f"{', '.join(ids)} and {n - len(ids)} more (Options table)"


def _ids(values, limit: int = 10) -> str:
    values = [str(v) for v in values]
    more = len(values) - limit
    return ", ".join(values[:limit]) + (f" and {more} more" if more > 0 else "")


# ---------------------------------------------------------------------------
# recommended changes
# ---------------------------------------------------------------------------

def recommended_changes(ev: Evaluation) -> list[Change]:
    """Plain sentences a procurement request can quote: nodes to buy or release, where each workload goes.

    Each workload's move is priced against the cheapest feasible route of
    another kind (API, owned autoregressive family, owned diffusion), so a
    diffusion verdict is compared with the best AR/speculative/MoE or API
    option, not with a near-identical sibling. Owned costs are allocated
    (GPUs held x $/GPU-hour), an estimate.
    """
    f = _top(ev)
    sc = ev.scenario
    out: list[Change] = []
    node = _node_words(ev)
    owned, needed = int(f.owned_nodes), int(f.nodes_needed)
    if sc.mixed:
        from core.presentation.report import mixed

        out += mixed.buy_change(ev, f)
    elif needed > owned:
        n = needed - owned
        out.append(Change(
            "Buy nodes",
            f"Buy {n} more {node} node{'s' if n != 1 else ''}: the recommended routing needs {needed}, "
            f"you own {owned}; about {fmt(f.extra_nodes_monthly_usd, 'usd')}/month at "
            f"{fmt(ev.rate.full_usd_per_node_hour, 'usd_2')}/node-hour." + _driver_words(f),
            float(f.extra_nodes_monthly_usd)))
        # The smallest change (core.decision.smallest), where it was searched (`hangover report` asks for it).
        answer = ev.answers.known("smallest_change")
        out += [Change("Smallest change", line) for line in
                (explain.smallest_change_words(f, answer) if answer is not None else [])]
    elif needed < owned:
        n = owned - needed
        saving = n * ev.rate.full_usd_per_node_hour * HOURS_PER_MONTH
        verb = {PricingOption.ON_DEMAND: f"Release {n} idle {node} node{'s' if n != 1 else ''}",
                PricingOption.OWNED: f"Repurpose or sell {n} idle {node} node{'s' if n != 1 else ''}"}.get(
            sc.pricing_option, f"Do not renew {n} idle reserved {node} node{'s' if n != 1 else ''}")
        tail = (f"saves {fmt(saving, 'usd')}/month at {fmt(ev.rate.full_usd_per_node_hour, 'usd_2')}/node-hour"
                + ("" if sc.pricing_option is PricingOption.ON_DEMAND else " once the commitment ends"))
        out.append(Change("Release nodes", f"{verb} (or give them other work): the recommended routing needs "
                          f"{needed} of the {owned} owned; {tail}.", -saving if saving > 0 else None))

    if sc.mixed:
        from core.presentation.report import mixed

        out += mixed.placements(ev)
    else:
        out += _moves(ev)
    for line in licensed_words(ev):  # every view states the break-even fee of licensed weights (issue 11)
        out.append(Change("Licence", line))

    unserved = _unserved_rows(ev)
    if len(unserved):
        ids = ev.workloads["workload_id"].to_numpy()[unserved]
        out.append(Change("No route", f"No route meets every target for {_ids(ids)}: relax a latency target or "
                          "quality floor, or allow an API; the reasons are in the routing table."))
    return out


def _unserved_rows(ev: Evaluation) -> np.ndarray:
    """Positions of the workloads the shown plan leaves without a route (the chosen mix's in a mixed scenario)."""
    if not ev.scenario.mixed:
        return np.flatnonzero(ev.verdict < 0)
    from core.presentation.report import mixed

    return mixed.unserved_rows(ev)


def _batch_only(f) -> str:
    """' + 1 running batch work only' where the nodes needed are more than the interactive ones and those bought
    for batch (a batch replica's minimum GPUs; in a mix, an owned node kept for batch alone), else ''."""
    rest = int(f.nodes_needed) - int(f.nodes_needed_interactive) - int(f.nodes_needed_offline_extra)
    return f" + {rest} running batch work only" if rest > 0 else ""


def _driver_words(f) -> str:
    """What forces the purchase, and what relaxing each cause would save (fleet.node_drivers): only workloads
    without which the plan needs fewer nodes (a batch job filling hours bought anyway forces nothing); where none
    does alone, the pools that need the nodes (fleet.pool_drivers, explain.purchase_cause_words)."""
    if cause := explain.purchase_cause_words(f):
        return " " + cause
    parts = []
    for d in [x for x in f.node_drivers if x.nodes_forced is None or x.nodes_forced > 0][:3]:
        best = d.best_relaxation()
        target = (f"its {fmt(d.latency_slo_ms, 'int')} ms target" if d.latency_slo_ms is not None
                  else f"its {fmt(d.batch_window_hours, 'num_1')} h window")
        if best is not None and (best.saves_usd_per_month or 0.0) > 0.5:
            parts.append(f"{d.workload_id} ({target}{_forced(d)}): {best.change} saves "
                         f"{fmt(best.saves_usd_per_month, 'usd')}/month")
        else:
            parts.append(f"{d.workload_id} ({target}{_forced(d)})")
    return (" What forces it: " + "; ".join(parts) + ".") if parts else ""


def _forced(d: NodeDriver) -> str:
    """", 2 nodes without it" for a driver whose nodes forced are priced ("" otherwise)."""
    if not d.nodes_forced:
        return ""
    return f"; {fmt(d.nodes_forced, 'int')} node{'s' if d.nodes_forced != 1 else ''} fewer without it"


def _moves(ev: Evaluation) -> list[Change]:
    """Where each workload goes, and what the cash bill would do if it went to its best route of another kind.

    The alternative is re-priced exactly with the plan's own pricing (pooled
    deployments, whole nodes): a workload riding on nodes the plan needs anyway
    costs nothing extra there, and sending it elsewhere saves nothing, whatever
    its attributed share. Exact re-pricing is done for the costliest workloads
    (by attributed share); the rest are counted in one line.
    """
    v = ev.verdict
    has = np.flatnonzero(v >= 0)
    if not len(has) or ev.planner is None:
        return []
    kinds = _route_kinds(ev)
    monthly = ev.a["monthly_usd"]
    col_route = ev.plan_inputs.col_route
    col_kinds = kinds[col_route]
    cost = ev.planner.standalone_cost()  # (W, plan columns)
    own_usd = monthly[has, v[has]]
    order = has[np.argsort(-np.nan_to_num(own_usd))]
    ids = ev.workloads["workload_id"].to_numpy()
    bill = ev.plan.bill
    from core.decision.closeloop import raised_columns

    raised = raised_columns(ev.planner, ev.plan)  # a move into or out of a raised pool: not priced
    items = []
    for i in order[:MAX_MOVES]:
        route = ev.routes[int(v[i])]
        where = (f"owned {_ARCH_WORDS.get(route.architecture, route.architecture)} — {route.label}"
                 if route.hosting == "owned" else route.label)
        verb = "Keep" if route.hosting == "owned" and ev.scenario.fleet_nodes > 0 else \
            ("Run" if route.hosting == "owned" else "Send")
        prep = "to" if verb == "Send" else "on"
        share = float(monthly[i, v[i]])
        alt_cost = np.where(col_kinds != kinds[v[i]], cost[i], np.inf)
        k = int(np.argmin(alt_cost))
        if np.isfinite(alt_cost[k]) and (int(ev.plan.assignment[i]) in raised or k in raised):
            text = (f"{verb} {ids[i]} {prep} {where} ({fmt(share, 'usd')}/month attributed); a move is not priced: "
                    "its pool's size includes a replica the simulation check added for its members as they are.")
            items.append(Change(f"{verb} {ids[i]}", text, None))
        elif np.isfinite(alt_cost[k]):
            moved = ev.plan.assignment.copy()
            moved[i] = k
            alt = ev.planner.price(moved)
            a = ev.routes[int(col_route[k])]
            alt_words = a.label if a.hosting == "api" else f"owned {a.label}"
            if not alt.feasible:
                text = f"{verb} {ids[i]} {prep} {where} ({fmt(share, 'usd')}/month attributed)."
                items.append(Change(f"{verb} {ids[i]}", text, None))
                continue
            delta = alt.bill - bill
            if abs(delta) < 0.5:
                text = (f"{verb} {ids[i]} {prep} {where} ({fmt(share, 'usd')}/month attributed): moving it to "
                        f"{alt_words} would leave the cash bill unchanged (it rides on capacity the plan holds "
                        "anyway, or costs the same).")
            else:
                text = (f"{verb} {ids[i]} {prep} {where} ({fmt(share, 'usd')}/month attributed): moving it to "
                        f"{alt_words} would {'raise' if delta > 0 else 'cut'} the cash bill by "
                        f"{fmt(abs(delta), 'usd')}/month.")
            items.append(Change(f"{verb} {ids[i]}", text, -float(delta)))
        else:
            missing = " or ".join(_KIND_WORDS[x] for x in (_API, _OWNED_AR, _OWNED_DIFFUSION) if x != kinds[v[i]])
            text = (f"{verb} {ids[i]} {prep} {where} ({fmt(share, 'usd')}/month attributed); no {missing} route "
                    "meets its targets and policy.")
            items.append(Change(f"{verb} {ids[i]}", text, None))
    rest = len(order) - MAX_MOVES
    if rest > 0:
        items.append(Change("More workloads", f"…and {_plural(rest, 'more workload')} routed as the routing "
                            "table shows.", None))
    return items


# ---------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------

def _options(ev: Evaluation) -> tuple[Table, dict[str, dict]]:
    opts = fleet_options(ev)
    rows = []
    n = len(ev.workloads)
    for r in opts.itertuples(index=False):
        # The option's cash bill exactly as analysis.fleet_options prices it (the Fleet page shows the same).
        rows.append({"option": r.option, "monthly_usd": float(r.monthly_usd),
                     "owned_nodes": int(r.owned_nodes), "owned_monthly_usd": float(r.owned_monthly_usd),
                     "api_monthly_usd": float(r.api_monthly_usd), "served": f"{r.workloads_served} of {n}",
                     "workloads_unserved": int(r.workloads_unserved), "unserved": r.unserved or "",
                     "monthly_usd_with_unserved": float(r.monthly_usd_with_unserved),
                     "unserved_work": r.unserved_routes or ""})
    base = next((row["monthly_usd"] for row in rows if row["option"] == "Recommended mix"), np.nan)
    for row in rows:
        row["vs_recommended_usd"] = row["monthly_usd"] - base
    # Column order shared by the Summary sheet's stacked tables: label, money, wide text, then small figures.
    cols = [
        Column("option", "Option", "text"),
        Column("monthly_usd", "Total $/month", "usd"),
        Column("unserved", "Cannot serve", "text", width=40, wrap=True),
        Column("vs_recommended_usd", "vs recommended", "usd"),
        Column("owned_nodes", "Owned nodes", "int"),
        Column("owned_monthly_usd", "Owned nodes $/month", "usd"),
        Column("api_monthly_usd", "APIs $/month", "usd"),
        Column("served", "Workloads served", "text"),
        Column("monthly_usd_with_unserved", "With unserved work priced $/month", "usd"),
        Column("unserved_work", "Unserved work: cheapest route if relaxed or allowed", "text", width=60, wrap=True),
    ]
    note = ("Each option is planned on its own routes and priced as a cash bill: the nodes it holds (at least "
            "those owned) at the full node price, new nodes bought whole, API spend and licence fees. An option "
            "that leaves workloads unserved is cheaper only because it drops them: 'With unserved work priced' adds "
            "that work at its cheapest route after the smallest change (a route outside the option, a relaxed "
            "target, a licence fee entered, data allowed to an API; standalone estimates).")
    if ev.scenario.mixed:
        note += (f" These options are planned on the sidebar's GPU alone ({ev.gpu_name}): 'Recommended mix' here is "
                 "the one-kind plan; the chosen mix of GPU types is under What to buy next.")
    return Table("Options", "Fleet options compared", cols, rows, note), {r["option"]: r for r in rows}


def _cost_by_route(ev: Evaluation, vf: pd.DataFrame) -> Table:
    f = _top(ev)
    by_route = f.monthly_usd_by_route
    labels = {r.route_id: r for r in ev.routes}
    plan = _plan_routes(ev, vf)
    rows: list[dict] = []
    for rid, usd in sorted(by_route.items(), key=lambda kv: -kv[1]):
        route = labels[rid]
        ids = plan.loc[plan["route_id"] == rid, "workload_id"].tolist()
        rows.append({"route": route.label, "hosting": route.hosting,
                     "architecture": _ARCH_WORDS.get(route.architecture, route.architecture),
                     "workloads": _ids(ids), "monthly_usd": float(usd)})
    gap = float(f.unallocated_usd_per_month)
    if abs(gap) >= 0.005:
        rows.append({"route": "Not attributed: idle GPUs, idle hours, whole-node rounding", "hosting": "owned",
                     "architecture": "", "workloads": "", "monthly_usd": gap})
    total = sum(r["monthly_usd"] for r in rows)
    for r in rows:
        r["share"] = r["monthly_usd"] / total if total else np.nan
    cols = [
        Column("route", "Route", "text", width=46, wrap=True),
        Column("monthly_usd", "$/month", "usd"),
        Column("workloads", "Workloads", "text", width=60, wrap=True),
        Column("hosting", "Hosting", "text"),
        Column("architecture", "Architecture", "text"),
        Column("share", "Share", "pct"),
    ]
    note = ("Each route carries its workloads' attributed shares (interactive: share of the deployment's "
            "reserved GPUs at peak; batch: GPU-hours used; estimates); the last line is what no workload is "
            "charged for, so the column adds up to the cash bill exactly.")
    return Table("CostByRoute", "Monthly cost by route", cols, rows, note)


def _latency_basis(ev: Evaluation, route_id: str, gpus_per_replica) -> str:
    """Where a verdict's latency figure comes from: the roofline estimate (calibrated or not) or API typicals."""
    route = next((r for r in ev.routes if r.route_id == route_id), None)
    if route is None:
        return ""
    if route.stack is None:
        return f"typical × {API_P95_OVER_TYPICAL:g} (estimate)"
    labels = ev.efficiency_labels.get(route.stack.stack_id, "estimated")
    if isinstance(labels, dict):  # per GPUs-per-replica option
        g = int(gpus_per_replica) if gpus_per_replica == gpus_per_replica else 0
        return labels.get(g, "estimated")
    return str(labels)


def _first_reason(reasons: list[str]) -> str:
    """A workload's reason in one line: the first, or for a workload without a route its closest failure."""
    if not reasons:
        return ""
    if reasons[0].startswith(NO_ROUTE_LEAD) and len(reasons) > 1:
        return f"No route meets every constraint; the closest: {reasons[1]}"
    return reasons[0]


def _workloads(ev: Evaluation, vf: pd.DataFrame) -> Table:
    w = ev.workloads
    rows = []
    for i, r in enumerate(routing_table(vf).to_dict("records")):  # no traffic: said, not "0 nodes"
        src = w.iloc[i]
        reasons = plan_reasons(ev, i)
        rows.append({
            **r,
            "team": src.get("team") if isinstance(src.get("team"), str) else "",
            "notes": src.get("notes") if isinstance(src.get("notes"), str) else "",
            "min_quality": float(src["min_quality"]),
            "mode": "interactive" if r["interactive"] else "batch",
            "architecture": _ARCH_WORDS.get(r["architecture"], r["architecture"]),
            "latency_basis": _latency_basis(stage_of(ev, i)[0], r["route_id"], r["gpus_per_replica"]),
            "reasons": " ".join(reasons),
            "why_first": _first_reason(reasons),  # the one-pager's line under each workload
            "nodes": r["nodes"] if r["hosting"] == "owned" else np.nan,
            "sensitivity": ("holds" if not r["sensitivity"] else r["sensitivity"]) if pd.notna(r["sensitive"])
            else "not computed (large inventory: hangover evaluate --ranges)",
        })
    cols = [
        Column("workload_id", "Workload", "text"),
        Column("name", "Name", "text", width=36, wrap=True),
        Column("team", "Team", "text"),
        Column("task_class", "Task class", "text"),
        Column("data_policy", "Data policy", "text"),
        Column("mode", "Mode", "text"),
        Column("latency_slo_ms", "p95 target, ms", "int"),
        Column("batch_window_hours", "Batch window, h", "num_1"),
        Column("requests_per_day", "Requests/day", "int"),
        Column("min_quality", "Quality floor", "num_2"),
        Column("route", "Verdict", "text", width=36, wrap=True),
        Column("hosting", "Hosting", "text"),
        Column("architecture", "Architecture", "text"),
        Column("usd_per_request", "$/request", "usd_price"),
        Column("usd_per_mtok_out", "$/M output tokens", "usd_2"),
        Column("monthly_usd", "$/month", "usd"),
        Column("p95_latency_ms", "p95 latency, ms (estimate)", "int"),
        Column("latency_basis", "Latency basis", "text", width=24, wrap=True),
        Column("concurrency", "Requests per replica", "int"),
        Column("gpus_per_replica", "GPUs per replica", "int"),
        Column("nodes", "Nodes (alone)", "int"),
        Column("fallback_share", "Escalated for quality", "pct"),
        Column("value_usd_per_mtok", "Cheapest API meeting floor, $/M", "usd_2"),
        Column("near_ties", "Within 10 % of best", "text", width=30, wrap=True),
        Column("sensitivity", "Verdict across the performance range (estimate)", "text", width=40, wrap=True),
        Column("reasons", "Why", "text", width=90, wrap=True),
        Column("notes", "Notes", "text", width=40, wrap=True),
    ]
    note = ("One row per workload: where it should run and why. Nodes (alone) is what the workload would need "
            "by itself; the fleet total pools workloads on shared replicas.")
    if ev.scenario.mixed:
        note += (" Verdicts and $/month are the chosen mix's: the GPU named after an owned route, the money its "
                 "attributed share (the JSON's fleet.attribution_by_workload).")
    return Table("Workloads", "Routing table", cols, rows, note)


def _fleet(ev: Evaluation, vf: pd.DataFrame) -> tuple[Table, Table]:
    f = _top(ev)
    routes = {r.route_id: r for r in ev.routes}
    plan = _plan_routes(ev, vf)
    rows = []
    for rid in sorted(set(f.gpus_by_route) | set(f.nodes_by_route), key=lambda k: -f.gpus_by_route.get(k, 0)):
        sel = plan["route_id"] == rid
        rows.append({"route": routes[rid].label,
                     "architecture": _ARCH_WORDS.get(routes[rid].architecture, routes[rid].architecture),
                     "nodes": f.nodes_by_route.get(rid, np.nan), "gpus": f.gpus_by_route.get(rid, np.nan),
                     "workloads": _ids(plan.loc[sel, "workload_id"].tolist()),
                     "monthly_usd": f.monthly_usd_by_route.get(rid, np.nan)})
    route_cols = [
        Column("route", "Owned route", "text", width=40, wrap=True),
        Column("architecture", "Architecture", "text"),
        Column("nodes", "Nodes for interactive work", "int"),
        Column("gpus", "GPUs held (batch: day average)", "num_1"),
        Column("workloads", "Workloads", "text", width=40, wrap=True),
        Column("monthly_usd", "Allocated $/month", "usd"),
    ]
    gpus = f.owned_nodes * f.gpus_per_node
    hourly = [{"hour": f"{h:02d}:00", "without_batch": u0, "batch_fill": max(u - u0, 0.0), "with_batch": u,
               "busy_gpus": u * gpus}
              for h, (u, u0) in enumerate(zip(f.hourly_utilization, f.hourly_utilization_without_batch,
                                              strict=True))]
    hour_cols = [
        Column("hour", "Hour", "text"),
        Column("without_batch", "Interactive", "pct"),
        Column("batch_fill", "Batch fill", "pct"),
        Column("with_batch", "Utilization, total", "pct"),
        Column("busy_gpus", f"Busy GPUs (of {gpus} owned)", "num_1"),
    ]
    return (
        Table("FleetRoutes", "Nodes per owned route", route_cols, rows,
              f"Interactive routes share nodes: the fleet needs {_plural(int(f.nodes_needed), 'node')} in all "
              f"({f.nodes_needed_interactive} interactive + {f.nodes_needed_offline_extra} more for batch"
              f"{_batch_only(f)})."),
        Table("Hourly", "Hourly utilization of the owned fleet (estimate)", hour_cols, hourly,
              f"Interactive traffic: {f.traffic_shape}, "
              "scaled to each workload's peak factor; batch work fills the idlest hours."),
    )


def _sensitivity(ev: Evaluation, frame: pd.DataFrame | None) -> Table:
    s = frame if frame is not None else sensitivity(ev.catalog, ev.workloads, ev)
    base = float(s["total_monthly_usd"].iloc[0])
    rows = []
    for r in s.itertuples(index=False):
        rows.append({"case": r.case, "total_monthly_usd": float(r.total_monthly_usd),
                     "change_usd": float(r.total_monthly_usd) - base,
                     "change_share": (float(r.total_monthly_usd) - base) / base if base else np.nan,
                     "api_monthly_usd": float(r.api_monthly_usd), "nodes_needed": int(r.nodes_needed),
                     "verdicts_changed": int(r.verdicts_changed), "changed_workloads": r.changed_workloads or ""})
    cols = [
        Column("case", "Case", "text"),
        Column("total_monthly_usd", "Total $/month", "usd"),
        Column("change_usd", "Change, $/month", "usd"),
        Column("change_share", "Change", "pct"),
        Column("api_monthly_usd", "APIs $/month", "usd"),
        Column("nodes_needed", "Nodes needed", "int"),
        Column("verdicts_changed", "Verdicts changed", "int"),
        Column("changed_workloads", "Workloads that move", "text", width=40, wrap=True),
    ]
    note = ("Every conclusion moves with two prices you don't control. Each case re-runs the whole evaluation "
            "with every API price, or the node price, halved or doubled.")
    return Table("Sensitivity", "Sensitivity to API and node prices", cols, rows, note)






def _date(text) -> dt.date | None:
    if isinstance(text, dt.date):
        return text
    try:
        return dt.date.fromisoformat(str(text)) if text else None
    except ValueError:
        return None


def _assumptions(ev: Evaluation, generated: dt.datetime) -> Table:
    """Every price, speed, quality and benchmark figure the evaluation read, with its date and source."""
    rows: list[dict] = []
    today = generated.date()

    def add(section, item, figure, value, kind, unit="", as_of=None, source="", confidence="", note=""):
        rows.append({"section": section, "item": item, "figure": figure, "value": value, "value:kind": kind,
                     "unit": unit, "as_of": _date(as_of), "source": source, "confidence": confidence,
                     "note": note or ""})

    _node_price_rows(add, ev, today)
    _gpu_rows(add, ev)
    _api_rows(add, ev)
    _stack_rows(add, ev)
    _benchmark_rows(add, ev)
    _default_and_scenario_rows(add, ev, today)
    _engine_rows(add, ev)

    cols = [
        Column("section", "Section", "text"),
        Column("item", "Item", "text", width=40, wrap=True),
        Column("figure", "Figure", "text", width=34, wrap=True),
        Column("value", "Value", "mixed", width=22, wrap=True),
        Column("unit", "Unit", "text"),
        Column("as_of", "As of", "date"),
        Column("source", "Source", "text", width=60, wrap=True),
        Column("confidence", "Confidence", "text"),
        Column("note", "Note", "text", width=50, wrap=True),
    ]
    note = ("Every price, speed, quality and benchmark figure the evaluation read, with its date and source. "
            "Confidence: primary, secondary, unverified, estimate (ours), user (yours).")
    return Table("Assumptions", "Assumptions", cols, rows, note)


QUALITY_NOTE = "share of a strong frontier model's score on this task class (estimate)"


def _node_price_rows(add, ev: Evaluation, today: dt.date) -> None:
    """The node price used (dated; an override the day of the report) and the owned-hardware figures behind it."""
    sc, rate = ev.scenario, ev.rate
    override = sc.node_usd_per_hour is not None
    # An override has no date of its own: it is dated the day it was used for this report.
    rate_date = today if override else rate.as_of
    add("Node price", _rate_label(rate), "Price used, $ per node-hour", rate.usd_per_node_hour, "usd_2", "$/node-hour",
        rate_date, rate.source, rate.confidence, rate.basis_note)
    if rate.full_usd_per_node_hour != rate.usd_per_node_hour:
        add("Node price", _rate_label(rate), "Full price (new nodes), $ per node-hour", rate.full_usd_per_node_hour,
            "usd_2", "$/node-hour", rate_date, rate.source, rate.confidence)
    if sc.pricing_option is PricingOption.OWNED and not override:
        hw = sc.owned_hardware or next((h for h in ev.catalog.owned_hardware if h.gpu == sc.gpu), None)
        if hw is not None:
            for figure, value, kind, unit in (
                ("Capex per node", hw.capex_usd_per_node, "usd", "$"),
                ("Depreciation", hw.depreciation_years, "num_g", "years"),
                ("Cost of capital", hw.cost_of_capital_rate, "pct_1", "per year"),
                ("Power per node", hw.kw_per_node, "num_1", "kW"),
                ("PUE", hw.pue, "num_2", ""),
                ("Electricity", hw.usd_per_kwh, "usd_price", "$/kWh"),
                ("Support and colocation", hw.support_usd_per_year, "usd", "$/year"),
            ):
                add("Owned hardware", hw.name, figure, value, kind, unit, hw.as_of, hw.source, hw.confidence.value,
                    hw.note)


def _gpu_rows(add, ev: Evaluation) -> None:
    """The scenario's GPU: memory, bandwidth, compute, power."""
    gpu = ev.catalog.gpu(ev.scenario.gpu)
    for figure, value, unit in (("Memory", gpu.hbm_gb, "GB"), ("Memory bandwidth", gpu.hbm_tb_per_s, "TB/s"),
                                ("Dense BF16", gpu.bf16_tflops, "TFLOP/s"), ("Dense FP8", gpu.fp8_tflops, "TFLOP/s"),
                                ("Board power", gpu.tdp_w, "W")):
        if value is not None:
            add("GPU", gpu.name, figure, value, "num_g", unit, gpu.as_of, gpu.source, gpu.confidence.value, gpu.note)


def _api_rows(add, ev: Evaluation) -> None:
    """Each public API's prices, typical speed and quality by task class."""
    sc = ev.scenario
    for r in ev.routes:
        if r.api is None:
            continue
        api = r.api
        common = {"as_of": api.as_of, "source": api.source}
        for figure, value in (("Input, $ per million tokens", api.usd_per_mtok_in),
                              ("Cached input, $ per million tokens", api.usd_per_mtok_cached_in),
                              ("Output, $ per million tokens", api.usd_per_mtok_out)):
            if value is not None:
                add("API price", r.label, figure, value, "usd_price", "$/M tokens", confidence=api.confidence.value,
                    note=api.note or (f"list price × {sc.api_price_scale:g} in this scenario"
                                      if sc.api_price_scale != 1 else ""), **common)
        add("API speed", r.label, "Typical time to first token", api.ttft_ms, "int", "ms", confidence="estimate",
            note=f"typical figure; p95 taken as × {API_P95_OVER_TYPICAL:g} (estimate)", **common)
        add("API speed", r.label, "Typical output speed", api.output_tokens_per_s, "int", "tokens/s",
            confidence="estimate", note="typical figure (estimate)", **common)
        for t in TASK_CLASSES:
            add("Quality", r.label, f"Quality: {t}", api.quality_for(t), "num_2", "0-1", confidence="estimate",
                note=QUALITY_NOTE, **common)


def _stack_rows(add, ev: Evaluation) -> None:
    """Each serving stack's architecture, performance provenance, sizes and quality by task class."""
    # The engine words each stack's provenance (which GPUs-per-replica options are calibrated).
    performance = {d["stack_id"]: d["performance"] for d in contract.scenario_dict(ev)["serving_stacks"]}
    for r in ev.routes:
        if r.stack is None:
            continue
        s = r.stack
        common = {"as_of": s.as_of, "source": s.source}
        perf = performance.get(s.stack_id, "estimated")
        add("Serving stack", s.name, "Architecture", _ARCH_WORDS.get(s.architecture.value, s.architecture.value),
            "text", confidence=s.confidence.value, note=s.note, **common)
        add("Serving stack", s.name, "Performance", perf, "text", confidence="estimate",
            note="roofline model; calibrated only where your benchmarks match this stack and GPU", **common)
        for figure, value, unit in (
            ("Parameters, total", s.params_total_b, "billion"), ("Parameters, active per token", s.params_active_b, "billion"),
            ("Bytes per parameter", s.bytes_per_param, "bytes"), ("KV cache per token", s.kv_bytes_per_token, "bytes"),
            ("Diffusion block length", s.diffusion_block_tokens, "tokens"),
            ("Diffusion steps per block", s.diffusion_steps_per_block, "steps"),
            ("Speculative draft length", s.spec_draft_tokens, "tokens"),
            ("Speculative acceptance", s.spec_acceptance, "share"),
            ("Routed experts", s.n_experts, "experts"), ("Experts per token", s.experts_per_token, "experts"),
        ):
            if value is not None:
                add("Serving stack", s.name, figure, value, "num_g", unit, confidence=s.confidence.value, **common)
        for t in TASK_CLASSES:
            add("Quality", s.name, f"Quality: {t}", s.quality_for(t), "num_2", "0-1", confidence="estimate",
                note=QUALITY_NOTE, **common)


def _benchmark_rows(add, ev: Evaluation) -> None:
    """The imported benchmarks on the scenario's GPU."""
    gpu = ev.catalog.gpu(ev.scenario.gpu)
    for b in ev.catalog.benchmarks:
        if b.gpu != gpu.name:
            continue  # benchmarks on other GPUs do not enter this scenario
        item = f"{b.stack_id} on {b.gpus_per_replica}× {b.gpu}, {b.concurrency:g} in flight"
        note = "; ".join(x for x in (b.provenance.value, b.tool, b.note) if x)
        for figure, value, unit in (("Output tokens/s, all streams", b.output_tokens_per_s_total, "tokens/s"),
                                    ("Output tokens/s, per stream", b.output_tokens_per_s_per_stream, "tokens/s"),
                                    ("End-to-end p95", b.e2e_ms_p95, "ms"), ("Time to first token p95", b.ttft_ms_p95, "ms")):
            if value is not None:
                add("Benchmark", item, figure, value, "num_1", unit, b.as_of, b.source, b.confidence.value, note)


def _default_and_scenario_rows(add, ev: Evaluation, today: dt.date) -> None:
    """The workload defaults, then every scenario setting and the inventory (dated the day of the report)."""
    sc = ev.scenario
    value: object  # each setting's value: a number, None (not stated) or words
    defaults = "GPU Hangover default (core/models.py); a workload's own floor wins"
    for t, q in DEFAULT_MIN_QUALITY.items():
        add("Workload default", t, "Quality floor when none is given", q, "num_2", "0-1",
            source=defaults, confidence="estimate")
    add("Workload default", "all", "Peak factor when none is given", 3.0, "num_g", "× mean rate",
        source="GPU Hangover default (core/engine.py)", confidence="estimate")

    labels = {"gpu": "GPU", "fleet_nodes": "Owned nodes", "gpus_per_node": "GPUs per node",
              "pricing_option": "Pricing option", "cost_basis": "Cost basis", "node_provider": "Node provider",
              "node_usd_per_hour": "Node price override, $/hour", "api_price_scale": "API price multiplier",
              "sla_scale": "Latency target multiplier", "max_fallback_share": "Largest share escalated for quality",
              "near_tie_share": "Near-tie band", "sla_percentile": "Latency percentile"}
    kinds = {"fleet_nodes": "int", "gpus_per_node": "int", "node_usd_per_hour": "usd_2", "api_price_scale": "num_g",
             "sla_scale": "num_g", "max_fallback_share": "pct", "near_tie_share": "pct", "sla_percentile": "pct"}
    settings = sc.model_dump(mode="json")
    # Option ids in words (the CLI flag's value is in the scenario's JSON, not in a report a person reads).
    settings["pricing_option"] = PRICING_LABELS.get(settings["pricing_option"], settings["pricing_option"])
    settings["cost_basis"] = BASIS_LABELS.get(settings["cost_basis"], settings["cost_basis"])
    for key, label in labels.items():
        value = settings.get(key)
        if value is None:
            value, kind = "(default)", "text"
        else:
            kind = kinds.get(key, "text")
        add("Scenario", "this report", label, value, kind, as_of=today, source="scenario settings",
            confidence="user")
    add("Scenario", "this report", "Inventory", str(ev.fleet.inventory or ""), "text", as_of=today,
        source="scenario settings", confidence="user")


def _engine_rows(add, ev: Evaluation) -> None:
    """The engine's modelling assumptions (scenario_dict's assumptions)."""
    engine = contract.scenario_dict(ev)["assumptions"]
    for key, label, kind, conf in (
        ("api_p95_over_typical", "API p95 over typical latency", "num_g", "estimate"),
        ("service_cv2", "Squared variation of service time", "num_g", "estimate"),
        ("queueing_model", "Queueing model", "text", "method"),
        ("traffic_shape", "Traffic shape", "text", "estimate"),
        ("hours_per_month", "Hours per month", "num_g", "convention"),
    ):
        if key in engine:
            add("Engine", "model", label, engine[key], kind, source="GPU Hangover engine (core/engine.py)",
                confidence=conf)


# ---------------------------------------------------------------------------
# headline
# ---------------------------------------------------------------------------

def _headline(ev: Evaluation, options: dict[str, dict]) -> list[Figure]:
    f = _top(ev)
    rate = ev.rate
    n = len(ev.workloads)
    api_routes = sum(1 for k in ev.verdict if k >= 0 and ev.routes[k].hosting == "api")
    figs = [
        Figure("owned_nodes", "Owned nodes", int(f.owned_nodes), "int",
               f"{_node_words(ev)} each; {_rate_label(rate)}"),
        Figure("nodes_needed", "Nodes needed for the recommended routing", int(f.nodes_needed), "int",
               f"{f.nodes_needed_interactive} to hold the latency targets at peak + "
               f"{f.nodes_needed_offline_extra} more for batch work{_batch_only(f)} (estimate)"),
        Figure("utilization", "Average utilization of the nodes in the plan", float(f.utilization), "pct",
               f"{fmt(float(np.mean(f.hourly_utilization_without_batch)), 'pct')} from interactive work alone; "
               "batch work fills idle hours (estimate)"),
        Figure("idle_usd_per_month", "Idle capacity, $/month", float(f.idle_usd_per_month), "usd",
               "GPU-hours of every node in the plan × full $/GPU-hour × (1 − utilization)"),
        Figure("total_monthly_usd", "Cash bill, $/month (recommended plan)", float(f.total_monthly_usd), "usd",
               f"{served_words(f.workloads_served, f.workloads_total)}; "
               f"owned nodes {fmt(f.owned_monthly_usd, 'usd')} + new nodes "
               f"{fmt(f.extra_nodes_monthly_usd, 'usd')} + APIs {fmt(f.api_monthly_usd, 'usd')}"
               f" + licences {fmt(f.licence_monthly_usd, 'usd')}; the same under either cost basis"),
        *(Figure(*t) for t in unserved_figures(ev)),
        Figure("unallocated_usd_per_month", "Not attributed to a workload, $/month",
               float(f.unallocated_usd_per_month), "usd",
               "idle GPUs, idle hours and whole-node rounding; workloads' shares + this = the cash bill"),
        Figure("owned_monthly_usd", "Owned nodes, $/month", float(f.owned_monthly_usd), "usd",
               f"{f.owned_nodes} × {fmt(f.full_usd_per_node_hour, 'usd_2')}/node-hour × {HOURS_PER_MONTH:g} h "
               f"(paid whatever runs on them); attribution: {rate.basis_note}"),
        Figure("extra_nodes_monthly_usd", "New nodes, $/month", float(f.extra_nodes_monthly_usd), "usd",
               f"{f.new_nodes} × "
               f"{fmt(f.full_usd_per_node_hour, 'usd_2')}/node-hour (full price)"),
        *_energy_figures(f),
        Figure("api_monthly_usd", "Public APIs, $/month", float(f.api_monthly_usd), "usd",
               f"{_plural(api_routes, 'workload')} sent to an API"),
        Figure("owned_usd_per_mtok_out", "Owned cost per million output tokens", f.owned_usd_per_mtok_out,
               "usd_2", "owned fleet cost ÷ tokens generated on it, idle hours included"),
    ]
    if ev.scenario.mixed:
        from core.presentation.report import mixed

        figs = mixed.notes(ev, figs)
    pr = _performance(ev)
    if pr is not None:  # the bill at both ends of the performance estimates, with what each end serves otherwise
        from core.decision.sensitivity import end_caveats

        for which, speed in (("pessimistic", "slow"), ("optimistic", "fast")):
            nodes = pr.nodes_at(which)
            figs.append(Figure(
                f"range_{which}_monthly_usd", f"Cash bill at the {which} end of the performance estimates, $/month",
                pr.bill_at(which), "usd",
                "; ".join([f"{_plural(nodes, 'node')} needed; every owned route at the {speed} end of its "
                           "efficiency range (estimate)"] + [f"this bill {c}" for c in end_caveats(pr, which)])))
    alt = options.get("All on public APIs")
    if alt:
        figs.append(Figure("all_api_monthly_usd", "Alternative: all on public APIs, $/month", alt["monthly_usd"],
                           "usd", f"serves {alt['served']} workloads"
                           + (f"; cannot serve {_few(alt)}" if alt["unserved"] else "") + with_unserved_note(alt)))
    alt = options.get("Owned, autoregressive only")
    if alt:
        figs.append(Figure("all_owned_ar_monthly_usd", "Alternative: owned autoregressive only, $/month",
                           alt["monthly_usd"], "usd",
                           f"{_plural(alt['owned_nodes'], 'node')}; serves {alt['served']} workloads"
                           + (f"; cannot serve {_few(alt)}" if alt["unserved"] else "") + with_unserved_note(alt)))
    as_of = rate.as_of or "the report date (your override)"
    figs.append(Figure("node_usd_per_hour", "Node price used, $/node-hour", rate.usd_per_node_hour, "usd_2",
                       f"{_rate_label(rate)}, as of {as_of}, {rate.confidence}; source: {rate.source}"))
    measured = f.measured
    if measured:  # the hangover as it is, dated, beside the plan's estimate (issue 15)
        figs.append(Figure("measured_utilization", "Measured utilization (GPU telemetry)", measured.utilization,
                           "pct", f"{measured.label}, {measured.metric}; {fmt(measured.gpus, 'int')} GPUs"))
        figs.append(Figure("measured_idle_usd_per_month", "Measured idle capacity, $/month",
                           measured.idle_usd_per_month, "usd", "measured GPUs × 730 h × full $/GPU-hour × "
                           "(1 − measured utilization), at this scenario's node price"))
    mix = _mix_words(f.verdict_mix)
    figs.append(Figure("workloads", "Workloads evaluated", n, "int", f"verdicts: {mix}"))
    return figs


def _performance(ev: Evaluation):
    """The shown plan's performance range: the chosen mix's in a mixed scenario, else the plan's (None: not
    computed)."""
    if ev.scenario.mixed:
        from core.decision import mixfleet

        return mixfleet.performance(ev)
    rg = performance_ranges(ev)
    return None if rg is None else rg.performance


def scenario_line(ev: Evaluation) -> str:
    """The scenario in one line."""
    sc = ev.scenario
    return (f"{sc.fleet_nodes} × {_node_words(ev)} owned · {PRICING_LABELS[sc.pricing_option.value]} · "
            f"{BASIS_LABELS[sc.cost_basis.value].lower()} cost basis · API prices × {sc.api_price_scale:g} · "
            f"latency targets × {sc.sla_scale:g} · quality escalation up to {fmt(sc.max_fallback_share, 'pct')}")


def build_summary(ev: Evaluation, *, generated: dt.datetime | None = None,
                  sensitivity_frame: pd.DataFrame | None = None) -> ProcurementSummary:
    """Everything the report shows, from one evaluation (re-evaluates 4 times for the sensitivity cases).

    `sensitivity_frame` (analysis.sensitivity's output) skips those re-runs when
    the caller has it already; `generated` defaults to now (UTC).
    """
    from core.presentation.report import buying  # it reads this module's tables

    generated = generated or dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)
    vf = contract.verdicts_frame(ev)
    options, by_option = _options(ev)
    fleet_routes, hourly = _fleet(ev, vf)
    return ProcurementSummary(
        generated=generated,
        inventory=str(ev.fleet.inventory or "given"),
        scenario_line=scenario_line(ev),
        headline=_headline(ev, by_option),
        changes=recommended_changes(ev),
        cost_by_route=_cost_by_route(ev, vf),
        options=options,
        workloads=_workloads(ev, vf),
        fleet_routes=fleet_routes,
        hourly=hourly,
        assumptions=_assumptions(ev, generated),
        sensitivity=_sensitivity(ev, sensitivity_frame),
        workload_count=len(vf),
        showback=team_showback(ev, by="team"),
        purchase=buying.purchase_table(ev),
        extras={**buying.purchase_extras(ev), **buying.buy_extras(ev), **buying.burst_extras(ev)},
    )


BUY_KEYS = ["row", "buy", "total_usd", "estimate_range", "usd_per_mtok_out", "on_nodes", "by_api", "unserved"]




def headline_table(summary: ProcurementSummary) -> Table:
    """The headline figures as a table (figure, value, note)."""
    rows = [{"figure": f.label, "value": f.value, "value:kind": f.kind, "note": f.note, "key": f.key}
            for f in summary.headline]
    cols = [Column("figure", "Figure", "text", width=46, wrap=True), Column("value", "Value", "mixed"),
            Column("note", "Note", "text", width=64, wrap=True)]
    return Table("Headline", "Headline", cols, rows, f"Generated {summary.generated_text}; inventory: "
                 f"{summary.inventory}; {summary.workload_count} workloads.")


def changes_table(summary: ProcurementSummary) -> Table:
    """The recommended changes as a table (what, effect on the monthly bill, the sentence)."""
    rows = [{"action": c.action, "usd_per_month": c.usd_per_month, "text": c.text} for c in summary.changes]
    if not rows:
        rows = [{"action": "None", "usd_per_month": None, "text": "No change: the owned fleet matches the need."}]
    cols = [Column("action", "Change", "text", width=46, wrap=True),
            Column("usd_per_month", "$/month (− saves)", "usd"),
            Column("text", "Recommendation", "text", width=64, wrap=True)]
    return Table("Changes", "Recommended changes", cols, rows,
                 CHANGES_NOTE)


def api_prices_table(summary: ProcurementSummary) -> Table:
    """The API prices from Assumptions, one row per API (for the one-pager and the brief)."""
    by_api: dict[str, dict] = {}
    figures = {"Input, $ per million tokens": "in", "Cached input, $ per million tokens": "cached",
               "Output, $ per million tokens": "out"}
    for r in summary.assumptions.rows:
        if r["section"] == "API price" and r["figure"] in figures:
            row = by_api.setdefault(r["item"], {"api": r["item"], "as_of": r["as_of"], "source": r["source"],
                                                "confidence": r["confidence"]})
            row[figures[r["figure"]]] = r["value"]
    cols = [Column("api", "API", "text"), Column("in", "$/M in", "usd_price"),
            Column("cached", "$/M cached in", "usd_price"), Column("out", "$/M out", "usd_price"),
            Column("as_of", "As of", "date"), Column("source", "Source", "text"),
            Column("confidence", "Confidence", "text")]
    return Table("ApiPrices", "API prices (list, per million tokens)", cols, list(by_api.values()))


def stacks_table(summary: ProcurementSummary) -> Table:
    """The owned serving stacks from Assumptions: architecture, how their performance was obtained, provenance."""
    by_stack: dict[str, dict] = {}
    for r in summary.assumptions.rows:
        if r["section"] == "Serving stack" and r["figure"] in ("Architecture", "Performance"):
            row = by_stack.setdefault(r["item"], {"stack": r["item"], "as_of": r["as_of"], "source": r["source"]})
            row[r["figure"].lower()] = r["value"]
            if r["figure"] == "Architecture":
                row["confidence"] = r["confidence"]
    cols = [Column("stack", "Owned serving stack", "text"), Column("architecture", "Architecture", "text"),
            Column("performance", "Performance", "text"), Column("as_of", "As of", "date"),
            Column("source", "Source", "text"), Column("confidence", "Confidence", "text")]
    return Table("Stacks", "Owned serving stacks (model figures)", cols, list(by_stack.values()))


def engine_rows(summary: ProcurementSummary) -> list[dict]:
    """The engine's own modelling assumptions (queueing model, latency multipliers)."""
    return [r for r in summary.assumptions.rows if r["section"] == "Engine"]
