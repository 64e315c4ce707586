"""The tables and the JSON contract of an evaluation: the routing table, every route for one workload, and the
stable JSON of `hangover evaluate --format json`, as functions of a finished (frozen) evaluation."""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pandas as pd

from core.decision import latency
from core.decision.economics import HOURS_PER_MONTH
from core.decision.engine import API_P95_OVER_TYPICAL, Evaluation
from core.decision.explain import near_ties, range_row, reasons, why_not
from core.decision.records import finite as _num
from core.decision.records import fleet_json as record_fleet_json
from core.decision.sensitivity import flag_text, ranges


def verdicts_frame(ev: Evaluation) -> pd.DataFrame:
    """One row per workload: the verdict and its figures (the routing table); in a mixed scenario the chosen
    mix's (core.decision.mixrows: its route, GPU and attributed $, two more columns `gpu` and `plan`)."""
    if ev.scenario.mixed:
        from core.decision import mixrows

        return mixrows.verdicts_frame(ev)
    w = ev.workloads
    idx = ev.verdict
    has = idx >= 0
    rows = np.arange(len(w))
    safe = np.where(has, idx, 0)

    def pick(name):
        return np.where(has, ev.values(name, rows, safe), np.nan)

    labels = np.array([r.label for r in ev.routes] + ["no feasible route"], dtype=object)
    ids = np.array([r.route_id for r in ev.routes] + [""], dtype=object)
    hosting = np.array([r.hosting for r in ev.routes] + [""], dtype=object)
    arch = np.array([r.architecture for r in ev.routes] + [""], dtype=object)
    j = np.where(has, idx, len(ev.routes))
    return pd.DataFrame({
        "workload_id": w["workload_id"].to_numpy(),
        "name": w["name"].to_numpy(),
        "task_class": w["task_class"].to_numpy(),
        "data_policy": w["data_policy"].to_numpy(),
        "interactive": w["latency_slo_ms"].notna().to_numpy(),
        "latency_slo_ms": ev.slo_ms,
        "batch_window_hours": w["batch_window_hours"].to_numpy(dtype=float),
        "requests_per_day": w["requests_per_day"].to_numpy(dtype=float),
        "route_id": ids[j],
        "route": labels[j],
        "hosting": hosting[j],
        "architecture": arch[j],
        "usd_per_request": pick("usd_per_request"),
        "usd_per_mtok_out": pick("usd_per_mtok_out"),
        "monthly_usd": pick("monthly_usd"),
        "p95_latency_ms": pick("p95_ms"),
        "concurrency": pick("concurrency"),
        "gpus_per_replica": pick("gpus_per_replica"),
        "nodes": pick("nodes"),
        "fallback_share": pick("fallback_share"),
        "value_usd_per_mtok": ev.value_usd_per_mtok,
        "near_ties": [", ".join(ev.routes[k].label for k in near_ties(ev, i)) for i in range(len(w))]
        if len(w) <= 5000 else "",
        **_sensitivity_columns(ev),
    })


def _sensitivity_columns(ev: Evaluation) -> dict:
    """`sensitive` (True/False; missing when ranges were not computed) and `sensitivity` (where it moves)."""
    rg = ranges(ev)
    if rg is None:
        return {"sensitive": pd.array([pd.NA] * len(ev.workloads), dtype="boolean"), "sensitivity": ""}
    return {"sensitive": rg.sensitive, "sensitivity": [flag_text(rg.row(i)) for i in range(len(rg.frame))]}


def routes_frame(ev: Evaluation, i: int) -> pd.DataFrame:
    """Every route for workload i: figures, feasibility, whether the plan may use it (licensed weights need
    their fee entered) and why not (for the expander)."""
    from core.decision.fleet import route_permitted

    out = []
    for r, route in enumerate(ev.routes):
        out.append({
            "route_id": route.route_id,
            "route": route.label,
            "hosting": route.hosting,
            "architecture": route.architecture,
            "feasible": bool(ev.a["feasible"][i, r]),
            "permitted": route_permitted(route),
            "why_not": None if ev.a["feasible"][i, r] else why_not(ev, i, r),
            "usd_per_request": _num(ev.a["usd_per_request"][i, r]),
            "usd_per_mtok_out": _num(ev.values("usd_per_mtok_out", i, r)),
            "monthly_usd": _num(ev.a["monthly_usd"][i, r]),
            "p95_latency_ms": _num(ev.a["p95_ms"][i, r]),
            "concurrency": _num(ev.a["concurrency"][i, r]),
            "gpus_per_replica": _num(ev.a["gpus_per_replica"][i, r]),
            "nodes": _num(ev.a["nodes"][i, r]) if route.hosting == "owned" else None,
            "quality": _num(ev.values("quality", i, r)),
            "fallback_share": _num(ev.a["fallback_share"][i, r]),
        })
    return pd.DataFrame(out)


def fleet_json(ev: Evaluation, purchase_settings=None) -> dict:
    """The contract's `fleet` object: the fleet record, its performance range and smallest change where computed,
    and the staged purchase (core.decision.purchase: default settings unless given)."""
    from core.decision.purchase import purchase, purchase_json

    if ev.scenario.mixed:  # what to buy next (issue 33): the top-level plan is the chosen mix
        return mixed_fleet_json(ev, purchase_settings)
    from dataclasses import replace

    from core.decision.fleet import licensed_routes

    rg = ev.answers.known("ranges")
    p = purchase(ev, purchase_settings)
    # licensed_routes null: not computed (above SearchSettings.break_even_max_workloads and not asked).
    out = record_fleet_json(replace(ev.fleet, licensed_routes=licensed_routes(ev)), None if rg is None else rg.performance, None if p is None else purchase_json(p),
                           ev.answers.known("smallest_change"))
    out["unserved_work"] = unserved_json(ev)
    out["burst"] = burst_json(ev)
    return out


def mixed_fleet_json(ev: Evaluation, purchase_settings=None) -> dict:
    """`fleet` of a mixed scenario: the chosen mix's record (bill, attribution, drivers, deployments each on its
    GPU, served counts, estimate range, staged purchase of its new nodes), the what-to-buy keys, and the one-kind
    plan's headline under `one_kind` (the shorthand's plan, for comparison)."""
    from core.decision import mix, mixfleet

    rec = mixfleet.record(ev)
    assert rec is not None
    out = record_fleet_json(rec, mixfleet.performance(ev), mixfleet.purchase_json(ev, purchase_settings))
    out["deployments"] = [mix.deployment_json(d) for d in mix.of(ev).best.deployments]
    out["attribution_by_workload"] = mixfleet.by_workload(ev)
    out.update(mix.fleet_keys(ev))
    one = ev.fleet
    out["one_kind"] = {"gpu": one.gpu, "owned_nodes": one.owned_nodes, "nodes_needed": one.nodes_needed,
                       "new_nodes": one.new_nodes, "total_monthly_usd": one.total_monthly_usd,
                       "workloads_served": one.workloads_served}
    out["unserved_work"] = mixfleet.unserved_json(ev)
    # Burst is priced on one GPU type's nodes: the one-kind plan's figure sits with its headline, not beside the mix.
    out["burst"] = {"priced": False, "verdict": "Not priced for a mixed fleet: see one_kind.burst (the one-kind plan)."}
    out["one_kind"]["burst"] = burst_json(ev)
    return out


def burst_json(ev: Evaluation) -> dict:
    """`fleet.burst`: the peak hours rented on demand instead of owning every node (core.decision.burst)."""
    from core.decision import burst

    return burst.burst_json(ev)


def unserved_json(ev: Evaluation) -> dict:
    """`fleet.unserved_work`: the unserved workloads, each with its cheapest route after the smallest change that
    gives it one (a standalone estimate; route null: none found), their total, and the bill with it."""
    from core.decision.unserved import plan_unserved

    left = plan_unserved(ev)
    return {"priced_monthly_usd": _num(left.priced_usd_per_month), "unpriced": left.unpriced,
            "total_monthly_usd_with_unserved": _num(ev.fleet.total_monthly_usd + left.priced_usd_per_month),
            "workloads": [{"workload_id": r.workload_id, "route_id": r.route_id, "route": r.route,
                           "change": r.change, "monthly_usd": _num(r.monthly_usd)} for r in left.routes]}


def to_dict(ev: Evaluation, detail: str = "routes", purchase_settings=None) -> dict:
    """The stable JSON contract of `hangover evaluate --format json`.

    detail="routes" (default) lists every route for every workload with why it was refused, the
    reasons in words and the near-ties; detail="verdicts" keeps each workload's verdict figures and
    token value only, built column-wise (no sentence per row), for large inventories: the words are
    one `--detail routes` run, or the Routing page, away.
    """
    if detail == "verdicts":
        return {"scenario": scenario_dict(ev), "workloads": _verdict_records(ev),
                "fleet": fleet_json(ev, purchase_settings)}
    return {"scenario": scenario_dict(ev), "workloads": list(_workload_records(ev, detail == "routes")),
            "fleet": fleet_json(ev, purchase_settings)}


class _Lazy(list):
    """A list the JSON encoder walks without holding it: its items are made one at a time as it iterates (the
    pure-Python encoder, used whenever an indent is set, only asks it for truth and iteration)."""

    def __init__(self, make, n: int):
        super().__init__()
        self._make, self._n = make, n

    def __iter__(self):
        return iter(self._make())

    def __len__(self) -> int:
        return self._n


def iter_json(ev: Evaluation, detail: str = "routes", indent: int | None = 2, purchase_settings=None) -> Iterator[str]:
    """`to_dict(ev, detail)` as JSON text in pieces, the same characters as `json.dumps(to_dict(...), indent=
    indent, ensure_ascii=False)`, with the workloads' records made while they are written: the per-route detail
    of 100,000 workloads is ~1.5 GB of text that is never held at once."""
    if detail == "verdicts":
        doc = to_dict(ev, detail, purchase_settings)
    else:
        doc = {"scenario": scenario_dict(ev),
               "workloads": _Lazy(lambda: _workload_records(ev, detail == "routes"), len(ev.workloads)),
               "fleet": None}
        # The fleet's record is built last, as to_dict builds it, after the workloads' words.
        doc = _FleetLast(doc, lambda: fleet_json(ev, purchase_settings))
    encoder = json.JSONEncoder(indent=indent if indent is not None else None, ensure_ascii=False,
                               separators=None if indent is not None else (", ", ": "))
    return encoder.iterencode(doc)


class _FleetLast(dict):
    """The document's dict, whose "fleet" value is computed when the encoder reaches it."""

    def __init__(self, doc: dict, fleet):
        super().__init__(doc)
        self._fleet = fleet

    def items(self):
        for k, v in super().items():
            yield k, (self._fleet() if k == "fleet" else v)


def _workload_records(ev: Evaluation, with_routes: bool) -> Iterator[dict]:
    """workloads[] of the routes/words detail, one record at a time (a mixed scenario's: the chosen mix's)."""
    if ev.scenario.mixed:
        from core.decision import mixrows

        yield from mixrows.workload_records(ev, with_routes)
        return
    vf = verdicts_frame(ev)
    for i, row in enumerate(vf.itertuples(index=False)):
        v = int(ev.verdict[i])
        item = {
            "workload_id": row.workload_id,
            "name": row.name,
            "verdict": _route_fields(ev, i, v) if v >= 0 else None,
            "value_usd_per_mtok": _num(row.value_usd_per_mtok),
            "near_ties": [ev.routes[k].route_id for k in near_ties(ev, i)],
            "reasons": reasons(ev, i),
            "verdict_range": verdict_range(ev, i),
        }
        if with_routes:
            item["routes"] = [{**_route_fields(ev, i, r), "feasible": bool(ev.a["feasible"][i, r]),
                               "why_not": None if ev.a["feasible"][i, r] else why_not(ev, i, r)}
                              for r in range(len(ev.routes))]
        yield item


def _verdict_records(ev: Evaluation) -> list[dict]:
    """workloads[] with the verdict's fields, vectorised over rows (the same fields as _route_fields)."""
    if ev.scenario.mixed:
        from core.decision import mixrows

        return list(mixrows.workload_records(ev, False, words=False))
    W = len(ev.workloads)
    v = ev.verdict
    has = v >= 0
    rows = np.arange(W)
    safe = np.where(has, v, 0)
    owned = np.array([r.hosting == "owned" for r in ev.routes] + [False])[np.where(has, v, len(ev.routes))]

    def col(name, only_owned=False):
        x = ev.values(name, rows, safe) if len(ev.routes) else np.full(W, np.nan)
        ok = has & np.isfinite(x) & (owned if only_owned else True)
        return np.where(ok, x, np.nan).astype(object)

    def clean(a):
        a = a.astype(object)
        a[pd.isna(a)] = None
        return a

    fields = {k: clean(col(n, o)) for k, n, o in (
        ("usd_per_request", "usd_per_request", False), ("usd_per_mtok_out", "usd_per_mtok_out", False),
        ("monthly_usd", "monthly_usd", False), ("nodes", "nodes", True),
        ("gpus_per_replica", "gpus_per_replica", True), ("p95_latency_ms", "p95_ms", False),
        ("concurrency", "concurrency", False), ("quality", "quality", False),
        ("fallback_share", "fallback_share", False))}
    meta = [(r.route_id, r.label, r.hosting, r.architecture) for r in ev.routes]
    value = clean(np.where(np.isfinite(ev.value_usd_per_mtok), ev.value_usd_per_mtok, np.nan).astype(object))
    ids = ev.workloads["workload_id"].to_numpy()
    names = ev.workloads["name"].to_numpy()
    # Verdict ranges: computed up to SearchSettings.ranges_max_workloads rows (or forced), else None per row.
    ranged = [verdict_range(ev, i) for i in range(W)] if ranges(ev) is not None else [None] * W
    out = []
    for i in range(W):
        verdict = None
        if has[i]:
            rid, label, hosting, arch = meta[v[i]]
            verdict = {"route_id": rid, "label": label, "hosting": hosting, "architecture": arch,
                       **{k: f[i] for k, f in fields.items()}}
        out.append({"workload_id": ids[i], "name": names[i], "verdict": verdict, "value_usd_per_mtok": value[i],
                    "verdict_range": ranged[i]})
    return out


def verdict_range(ev: Evaluation, i: int) -> dict | None:
    """{low, high, sensitive, driver}: the verdict route id at each efficiency end (None: ranges not computed)."""
    row = range_row(ev, i)
    if row is None:
        return None
    return {"low": row["verdict_low"] or None, "high": row["verdict_high"] or None,
            "sensitive": bool(row["sensitive"]), "driver": row["driver"] or None}


def _route_fields(ev: Evaluation, i: int, r: int) -> dict:
    route = ev.routes[r]
    owned = route.hosting == "owned"
    return {
        "route_id": route.route_id,
        "label": route.label,
        "hosting": route.hosting,
        "architecture": route.architecture,
        "usd_per_request": _num(ev.a["usd_per_request"][i, r]),
        "usd_per_mtok_out": _num(ev.values("usd_per_mtok_out", i, r)),
        "monthly_usd": _num(ev.a["monthly_usd"][i, r]),
        "nodes": _num(ev.a["nodes"][i, r]) if owned else None,
        "gpus_per_replica": _num(ev.a["gpus_per_replica"][i, r]) if owned else None,
        "p95_latency_ms": _num(ev.a["p95_ms"][i, r]),
        "concurrency": _num(ev.a["concurrency"][i, r]),
        "quality": _num(ev.values("quality", i, r)),
        "fallback_share": _num(ev.a["fallback_share"][i, r]),
    }


def _unset_mix_fields(sc) -> set[str]:
    """What-to-buy fields left unset: not in the contract (a one-kind scenario's JSON is as before)."""
    return {f for f in ("owned_nodes_by_gpu", "buy_gpus", "buy_pricing") if getattr(sc, f) is None}


def scenario_dict(ev: Evaluation) -> dict:
    """Every input used, with the date and source of each price."""
    apis = [{"route_id": r.route_id, "usd_per_mtok_in": r.api.usd_per_mtok_in,
             "usd_per_mtok_cached_in": r.api.usd_per_mtok_cached_in, "usd_per_mtok_out": r.api.usd_per_mtok_out,
             "as_of": r.api.as_of.isoformat(), "source": r.api.source, "confidence": r.api.confidence.value}
            for r in ev.routes if r.api is not None]
    stacks = [{"route_id": r.route_id, "stack_id": r.stack.stack_id, "name": r.stack.name,
               "as_of": r.stack.as_of.isoformat(), "source": r.stack.source,
               "confidence": r.stack.confidence.value,
               "performance": performance_label(ev.efficiency_labels.get(r.stack.stack_id, {}))}
              for r in ev.routes if r.stack is not None]
    return {
        **ev.scenario.model_dump(mode="json", exclude=_unset_mix_fields(ev.scenario)),
        "node_price": {"usd_per_node_hour": ev.rate.usd_per_node_hour,
                       "full_usd_per_node_hour": ev.rate.full_usd_per_node_hour,
                       "label": ev.rate.label, "as_of": ev.rate.as_of, "source": ev.rate.source,
                       "confidence": ev.rate.confidence, "basis": ev.rate.basis_note},
        "api_prices": apis,
        "serving_stacks": stacks,
        "workload_count": int(len(ev.workloads)),
        "assumptions": {
            "api_p95_over_typical": API_P95_OVER_TYPICAL,
            "output_length_cv_default": latency.DEFAULT_OUTPUT_CV,
            "queueing_model": "pooled slots (replicas × concurrency cap) as a birth–death chain of the requests "
                              "in system, prefills stalling their replica; service = prefill + decode steps of a "
                              "lognormal output length (whole blocks for diffusion); p95 of wait + service in "
                              "one 5 % budget",
            "traffic_shape": "office-hours profile scaled to each workload's peak factor",
            "hours_per_month": HOURS_PER_MONTH,
        },
    }


def performance_label(by_gpus: dict[int, str]) -> str:
    """Where a stack's speed figures come from, per GPUs-per-replica option (calibrated ones named)."""
    calibrated = {g: lab for g, lab in by_gpus.items() if lab != "estimated"}
    if not calibrated:
        return "estimated (roofline with default efficiencies)"
    parts = [f"{g} GPU{'s' if g > 1 else ''}/replica: {lab}" for g, lab in sorted(calibrated.items())]
    rest = sorted(set(by_gpus) - set(calibrated))
    if rest:
        parts.append(f"{', '.join(map(str, rest))} GPUs/replica: estimated")
    return "; ".join(parts)
