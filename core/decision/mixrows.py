"""Each workload's verdict in the chosen mix: its route, GPU, attributed $ and reasons, for every table and page.

In a mixed scenario (core.decision.mix) every workload is placed by one stage of the chosen chain: a fill stage
keeps it on owned nodes of one GPU type, or the candidate stage plans it on the candidate GPU (owned and new
nodes, its APIs, or no route). Its verdict is that stage's: the route, its physical figures (p95, batch, GPUs
per replica, escalated share) from the stage's plan, its money from the mix's attribution
(core.decision.mixfleet.attributed: the figure `fleet.attribution_by_workload` carries), so the routing table,
workloads[] of the JSON, the Routing page, showback and the report agree on each workload's route and $ and add up
with `fleet.unallocated_usd_per_month` to the mix's bill to the cent.

The scored routes of each workload (`--detail routes`, the Routing page's alternatives) stay as the one-kind plan
scored them (the sidebar's GPU alone); the records say so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.decision.economics import DAYS_PER_MONTH
from core.decision.mix import Stage
from core.decision.records import finite as _num

KEY = "mix_rows"


@dataclass(frozen=True)
class Placed:
    """Where the chosen mix placed one workload: its stage, its position in the stage's plan, its route there
    (-1: no route), and the plan in words."""

    stage: Stage
    k: int
    v: int
    plan: str


@dataclass(frozen=True)
class MixRows:
    """The chosen mix's per-workload verdicts: the placements (inventory order) and the routing table."""

    placed: tuple[Placed, ...]
    frame: pd.DataFrame


def rows(ev) -> MixRows:
    """The chosen mix's verdict per workload (computed once per evaluation)."""
    return ev.answers.get(KEY, lambda: _rows(ev))


def verdicts_frame(ev) -> pd.DataFrame:
    """The routing table of the chosen mix: contract.verdicts_frame's columns (route, figures, $ from the mix's
    attribution), then `gpu` (its GPU; "" on an API or no route) and `plan` (which plan of the chain picked it)."""
    return rows(ev).frame.copy()


def stage_of(ev, i: int):
    """(the stage plan's evaluation, workload i's position in it): where its verdict's figures come from (its GPU's
    performance labels too); (ev, i) without a mix."""
    if not ev.scenario.mixed:
        return ev, i
    p = rows(ev).placed[i]
    return p.stage.ev, p.k


def _stage_words(best, st) -> str:
    """Which plan of the chain placed a stage's workloads, e.g. "chosen mix: kept on the 1 owned H100 SXM node",
    "chosen mix: placed by the B200 plan (1 new, bought outright (TCO))"."""
    from core.decision import mix
    from core.format import integer

    if not st.candidate:
        return (f"chosen mix: kept on the {integer(st.owned_nodes)} owned {st.gpu} "
                f"node{'s' if st.owned_nodes != 1 else ''}")
    nodes = [f"{integer(st.owned_nodes)} owned"] if st.owned_nodes else []
    if st.new_nodes:
        nodes.append(f"{integer(st.new_nodes)} new, {mix.OPTION_WORDS[mix.PricingOption(best.option)]}")
    return f"chosen mix: placed by the {st.gpu} plan" + (f" ({', '.join(nodes)})" if nodes else "")


def _placements(ev) -> list[Placed]:
    from core.decision import mix

    best = mix.of(ev).best
    out: list[Placed | None] = [None] * len(ev.workloads)
    for st in best.stages:
        words = _stage_words(best, st)
        for k in st.keep:
            out[int(st.rows[k])] = Placed(st, int(k), int(st.ev.verdict[k]), words)
    missing = [i for i, p in enumerate(out) if p is None]
    if missing:  # every chain ends with the candidate stage of what the owned nodes did not keep
        raise AssertionError(f"the chosen mix placed no stage for rows {missing[:5]}")
    return [p for p in out if p is not None]


def _rows(ev) -> MixRows:
    from core.decision import mixfleet
    from core.decision.explain import near_ties

    placed = _placements(ev)
    w = ev.workloads
    n = len(w)
    att = mixfleet.attributed(ev)
    rpd = w["requests_per_day"].to_numpy(dtype=float)
    out_tok = w["output_tokens"].to_numpy(dtype=float)
    cols = ("p95_ms", "concurrency", "gpus_per_replica", "nodes", "fallback_share", "usd_per_request")
    fig = {c: np.full(n, np.nan) for c in cols}
    route_id, label, hosting, arch, gpu, plan, ties = ([""] * n for _ in range(7))
    slo = np.full(n, np.nan)
    for i, p in enumerate(placed):
        e = p.stage.ev
        slo[i] = e.slo_ms[p.k]
        plan[i] = p.plan
        if p.v < 0:
            label[i] = "no feasible route"
            continue
        r = e.routes[p.v]
        for c in cols:
            fig[c][i] = float(e.values(c, p.k, p.v))
        route_id[i], hosting[i], arch[i] = r.route_id, r.hosting, r.architecture
        gpu[i] = p.stage.gpu if r.hosting == "owned" else ""
        label[i] = f"{r.label} on {gpu[i]}" if gpu[i] else r.label
        if p.stage.candidate and n <= 5000:  # a fill stage's standalone costs are at a barred price
            ties[i] = ", ".join(e.routes[k].label for k in near_ties(e, p.k))
    served = np.array([p.v >= 0 for p in placed], dtype=bool)
    monthly = np.where(served, att, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_req = np.where(rpd > 0, monthly / (rpd * DAYS_PER_MONTH), fig["usd_per_request"])
        per_mtok = per_req / out_tok * 1e6
    sens = _sensitivity(ev, placed)
    frame = pd.DataFrame({
        "workload_id": w["workload_id"].to_numpy(), "name": w["name"].to_numpy(),
        "task_class": w["task_class"].to_numpy(), "data_policy": w["data_policy"].to_numpy(),
        "interactive": w["latency_slo_ms"].notna().to_numpy(), "latency_slo_ms": slo,
        "batch_window_hours": w["batch_window_hours"].to_numpy(dtype=float), "requests_per_day": rpd,
        "route_id": np.array(route_id, dtype=object), "route": np.array(label, dtype=object),
        "hosting": np.array(hosting, dtype=object), "architecture": np.array(arch, dtype=object),
        "usd_per_request": per_req, "usd_per_mtok_out": per_mtok, "monthly_usd": monthly,
        "p95_latency_ms": fig["p95_ms"], "concurrency": fig["concurrency"],
        "gpus_per_replica": fig["gpus_per_replica"], "nodes": fig["nodes"], "fallback_share": fig["fallback_share"],
        "value_usd_per_mtok": ev.value_usd_per_mtok, "near_ties": np.array(ties, dtype=object),
        "sensitive": sens[0], "sensitivity": sens[1],
        "gpu": np.array(gpu, dtype=object), "plan": np.array(plan, dtype=object),
    })
    return MixRows(tuple(placed), frame)


def _end_routes(plan, n: int) -> list[tuple[str, str]]:
    """(route id, GPU) per workload in one chain ("" where none)."""
    from core.decision import mixfleet

    route_of, _ = mixfleet._routes(plan, n)
    gpu = [""] * n
    for st in plan.stages:
        for i in st.rows[st.keep][mixfleet._on_owned(st)]:
            gpu[int(i)] = st.gpu
    return [(str(route_of[i]), gpu[i]) for i in range(n)]


def ends(ev) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[tuple[str, str]]] | None:
    """(central, optimistic, pessimistic) (route id, GPU) per workload of the chosen mix; None: ends not computed."""
    return ev.answers.get("mix_row_ends", lambda: _ends(ev))


def _ends(ev):
    from core.decision import mix

    bo = mix.of(ev)
    pair = bo.ends.get(bo.best.label)
    if pair is None:
        return None
    n = len(ev.workloads)
    return _end_routes(bo.best, n), _end_routes(pair[0], n), _end_routes(pair[1], n)


def _where(ev, rg: tuple[str, str]) -> str:
    labels = {r.route_id: r.label for r in ev.routes}
    rid, gpu = rg
    if not rid:
        return "no route"
    return labels.get(rid, rid) + (f" on {gpu}" if gpu else "")


def _sensitivity(ev, placed) -> tuple[object, list[str]]:
    """`sensitive` and `sensitivity` of the mix: whether its chain, re-planned at an end of the performance
    estimates, moves the workload (route or GPU), and where."""
    e = ends(ev)
    n = len(placed)
    if e is None:
        return pd.array([pd.NA] * n, dtype="boolean"), [""] * n
    central, fast, slow = e
    flags, words = [], []
    for i in range(n):
        moves = [f"{_where(ev, x)} at the {name} end" for name, x in (("pessimistic", slow[i]),
                                                                       ("optimistic", fast[i])) if x != central[i]]
        flags.append(bool(moves))
        words.append(("the chosen mix moves it to " + " and ".join(moves)) if moves else "")
    return pd.array(flags, dtype="boolean"), words


# ---------------------------------------------------------------------------------------------------------------
# words and the JSON contract's workloads[]
# ---------------------------------------------------------------------------------------------------------------

def reasons(ev, i: int) -> list[str]:
    """Workload i's reasons in the chosen mix: its stage plan's reasons, which plan of the chain placed it, the
    money at the mix's attribution (a fill stage's standalone comparisons, priced with new nodes barred, left out)."""
    from core.decision import mix
    from core.decision.explain import reasons as stage_reasons
    from core.format import money

    mr = rows(ev)
    p = mr.placed[i]
    row = mr.frame.iloc[i]
    st = p.stage
    where = p.plan.removeprefix("chosen mix: ")
    words = stage_reasons(st.ev, p.k, with_ranges=False)
    if p.v < 0:
        where = where.replace("placed by the", "in the")
        return [*words, f"Chosen mix ({mix.of(ev).best.label}): no route, {where}.", *_range_words(row)]
    lead = f"Chosen mix ({mix.of(ev).best.label}): {row['route']}, {where}."
    if row["hosting"] == "owned":
        money_words = (f"Attributed {money(row['monthly_usd'])} a month in the chosen mix "
                       f"({money(row['usd_per_request'])} per request): its share of the {row['gpu']} nodes at the "
                       "mix's price for them.")
    else:
        money_words = (f"Costs {money(row['monthly_usd'])} a month in the chosen mix: its API spend"
                       + (" and its escalations." if row["fallback_share"] > 0 else "."))
    standalone = ("Cheapest other route on its own", "Within ", "Without it the plan")
    drop = ("Attributed ", "Costs ") + (() if st.candidate else standalone)
    kept = [s for s in words if not s.startswith(drop)]
    return [*kept[:1], lead, money_words, *kept[1:], *_range_words(row)]


def _range_words(row) -> list[str]:
    text = row["sensitivity"]
    return [f"Across the performance estimates {text} (estimate)."] if text else []


def verdict_json(ev, i: int, cols: dict | None = None) -> dict | None:
    """workloads[i].verdict of the chosen mix: the route's fields (as contract._route_fields), its GPU and plan,
    its money at the mix's attribution; None when the mix gives it no route. cols: the frame's columns as arrays
    (read once for many rows: iloc per row is slow at scale)."""
    mr = rows(ev)
    p = mr.placed[i]
    if p.v < 0:
        return None
    e = p.stage.ev
    cols = cols if cols is not None else _columns(mr.frame)
    row = {c: a[i] for c, a in cols.items()}
    r = e.routes[p.v]
    owned = r.hosting == "owned"
    return {
        "route_id": r.route_id, "label": r.label, "hosting": r.hosting, "architecture": r.architecture,
        "usd_per_request": _num(row["usd_per_request"]), "usd_per_mtok_out": _num(row["usd_per_mtok_out"]),
        "monthly_usd": _num(row["monthly_usd"]),
        "nodes": _num(row["nodes"]) if owned else None,
        "gpus_per_replica": _num(row["gpus_per_replica"]) if owned else None,
        "p95_latency_ms": _num(row["p95_latency_ms"]), "concurrency": _num(row["concurrency"]),
        "quality": _num(e.values("quality", p.k, p.v)), "fallback_share": _num(row["fallback_share"]),
        "gpu": row["gpu"] or None, "plan": row["plan"],
    }


def _columns(frame: pd.DataFrame) -> dict:
    return {c: frame[c].to_numpy() for c in frame.columns}


def verdict_range(ev, i: int) -> dict | None:
    """{low, high, sensitive, driver} of the chosen mix: its route id at the pessimistic (low efficiency) and
    optimistic ends (None: ends not computed); driver: none named (the whole chain is re-planned)."""
    return _range_json(ends(ev), i)


def _range_json(e, i: int) -> dict | None:
    if e is None:
        return None
    central, fast, slow = e
    return {"low": slow[i][0] or None, "high": fast[i][0] or None,
            "sensitive": slow[i] != central[i] or fast[i] != central[i], "driver": None}


def workload_records(ev, with_routes: bool, words: bool = True):
    """workloads[] of a mixed scenario, one record at a time: each verdict the chosen mix's (route, GPU, plan,
    attributed $), its reasons and near ties in the mix; `routes` (with_routes) as the one-kind plan scored them,
    with the GPU they were scored on and the route that plan picked."""
    from core.decision.contract import _route_fields
    from core.decision.explain import near_ties, why_not

    mr = rows(ev)
    value = ev.value_usd_per_mtok
    cols = _columns(mr.frame)
    e_ends = ends(ev)
    for i in range(len(ev.workloads)):
        p = mr.placed[i]
        item = {"workload_id": cols["workload_id"][i], "name": cols["name"][i],
                "verdict": verdict_json(ev, i, cols), "value_usd_per_mtok": _num(value[i])}
        if words:
            e = p.stage.ev
            ties = [] if p.v < 0 or not p.stage.candidate else [e.routes[k].route_id for k in near_ties(e, p.k)]
            item.update({"near_ties": ties, "reasons": reasons(ev, i)})
        item["verdict_range"] = _range_json(e_ends, i)
        if with_routes:
            v = int(ev.verdict[i])
            item["routes_scored_on"] = (f"{ev.gpu_name} alone (the one-kind plan), which picked "
                                        f"{ev.routes[v].route_id if v >= 0 else 'no route'}")
            item["routes"] = [{**_route_fields(ev, i, r), "feasible": bool(ev.a["feasible"][i, r]),
                               "why_not": None if ev.a["feasible"][i, r] else why_not(ev, i, r)}
                              for r in range(len(ev.routes))]
        yield item


# ---------------------------------------------------------------------------------------------------------------
# showback
# ---------------------------------------------------------------------------------------------------------------

def showback_inputs(ev) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """(served, attributed $, on owned GPUs, GPU-hours a month reserved on owned GPUs, the bill) per workload in
    the chosen mix: each stage's reserved hours of the rows it placed (core.decision.showback's key)."""
    from core.decision import mixfleet
    from core.decision.showback import reserved_gpu_hours

    mr = rows(ev)
    served = np.array([p.v >= 0 for p in mr.placed], dtype=bool)
    owned = (mr.frame["hosting"] == "owned").to_numpy()
    hours = np.zeros(len(ev.workloads))
    for st in {id(p.stage): p.stage for p in mr.placed}.values():
        hours[st.rows[st.keep]] = reserved_gpu_hours(st.ev)[st.keep]
    att = np.where(served, mixfleet.attributed(ev), 0.0)
    return served, att, owned, hours, float(mixfleet.top(ev).total_monthly_usd)


def plan_reasons(ev, i: int) -> list[str]:
    """Workload i's reasons in the plan every page shows: the chosen mix's in a mixed scenario, else the plan's."""
    from core.decision.explain import reasons as plan_words

    return reasons(ev, i) if ev.scenario.mixed else plan_words(ev, i)
