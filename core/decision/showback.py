"""Showback: each team's (or any text column's) monthly $ with the idle recovered, its $/M tokens and its API price.

A finished plan already attributes every workload its share of the cash bill (docs/design/fleet_plan.md,
"Attribution"): interactive work its share of the pool reserved at the peak, batch work its GPU-hours, API work
its API spend. What no workload is charged (idle GPUs, idle hours, packing; under the marginal basis the part of
the owned nodes' rate it leaves out) is the plan's *unallocated* $. Showback hands that rest to the workloads by
a stated key and sums by group:

    idle_i        = U × k_i / Σk         U = bill − Σ attributed (cents); k = the key
    monthly_i     = attributed_i + idle_i
    key "gpu_hours": k_i = GPU-hours a month the plan reserves for workload i on owned GPUs
                           (interactive: its share of its pool's offered load at the peak × the pool's GPUs ×
                           730 h; batch: its GPU-hours a day × 365/12; escalated shares on the pool they go to)
    key "tokens":    k_i = tokens (input + output) a month workload i sends to owned GPUs
    tokens_i      = requests/day × (input + output tokens) × 365/12 (0 for a workload the plan cannot serve)
    $/M tokens    = monthly $ ÷ tokens × 10⁶
    api_i         = the cheapest API route workload i may use (feasible: data policy, quality, latency) for the
                    same requests; none when no API is allowed (data may not leave)
    difference    = Σ monthly_i − Σ api_i over the group's workloads that have an allowed API
                    (positive: the own fleet costs the group more than the API would)

Every share is in whole cents; the idle is split by largest remainder (the workloads whose exact share has
the largest fraction of a cent get the cent), so the groups add up to the cash bill to the cent. When no
workload carries any of the key (nothing runs on owned GPUs) the idle is split by all tokens; with no tokens
either, equally by workload (an evaluation always has at least one workload).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from core.decision.economics import DAYS_PER_MONTH
from core.decision.engine import Evaluation
from core.errors import InputError
from core.models import HOURS_PER_MONTH

IDLE_KEYS = {
    "gpu_hours": "GPU-hours reserved on owned GPUs",
    "tokens": "tokens sent to owned GPUs",
}
NOTES_COLUMN = "notes"


@dataclass(frozen=True, slots=True)
class GroupShowback:
    """One group's (team's) month: what it is charged, the tokens it sends, what an API would charge it."""

    team: str
    workloads: int
    tokens_per_month: float
    output_tokens_per_month: float
    attributed_usd: float  # its workloads' attributed shares of the plan
    idle_usd: float  # its share of the unallocated $ by the key
    monthly_usd: float  # attributed + idle (cents)
    usd_per_mtok: float | None  # monthly $ / tokens × 1e6 (None: no tokens)
    api_usd_per_month: float | None  # same requests on the cheapest allowed API (None: no workload may use one)
    api_workloads: int  # its workloads that have an allowed API
    unserved_workloads: int  # its workloads with no feasible route (no $, no tokens counted)
    difference_usd_per_month: float | None  # monthly $ of those workloads − their API $


@dataclass(frozen=True, slots=True)
class Showback:
    """Groups of one text column, with the bill they add up to and how the idle was keyed."""

    by: str
    idle_key: str
    idle_key_note: str
    total_monthly_usd: float
    unallocated_usd: float
    teams: tuple[GroupShowback, ...]
    inventory: str
    source: str  # one line: which plan, which prices (dated)

    @property
    def sum_usd(self) -> float:
        """The groups' monthly $ summed in cents (equals total_monthly_usd)."""
        return sum(round(t.monthly_usd * 100) for t in self.teams) / 100.0


def largest_remainder_cents(total_cents: int, weights: np.ndarray) -> np.ndarray:
    """`total_cents` split in proportion to `weights` (≥ 0, not all 0) in whole cents that add up exactly: each
    gets the floor of its exact share, the rest go one cent each to the largest fractions (ties by position).
    A negative total is split as its absolute value, negated."""
    w = np.asarray(weights, dtype=float)
    sign = -1 if total_cents < 0 else 1
    total = abs(int(total_cents))
    exact = total * w / w.sum()
    low = np.floor(exact + 1e-9)  # an exact share that float noise puts a hair under a whole cent keeps it
    rest = total - int(low.sum())
    if rest > 0:
        low[np.argsort(-(exact - low), kind="stable")[:rest]] += 1.0
    return sign * low.astype(np.int64)


def group_columns(ev: Evaluation) -> list[str]:
    """The text columns a showback may group by: the inventory's text columns, and the extra columns kept in
    notes as 'column: value' (cost centre, product, …)."""
    w = ev.workloads
    cols = [c for c in ("team", "name", "workload_id", "task_class", "data_policy") if c in w.columns]
    return cols + sorted(set(_note_keys(w)) - set(cols))


def _note_keys(w: pd.DataFrame) -> list[str]:
    if NOTES_COLUMN not in w.columns:
        return []
    keys: set[str] = set()
    for text in w[NOTES_COLUMN].dropna().astype(str):
        for part in text.split("; "):
            key, sep, _ = part.partition(": ")
            if sep and key.strip():
                keys.add(key.strip())
    return sorted(keys)


def group_values(ev: Evaluation, by: str) -> np.ndarray:
    """Each workload's group under `by`; a blank is '(no <by>)'."""
    w = ev.workloads
    if by in w.columns and by != NOTES_COLUMN:
        raw = w[by]
    elif by in _note_keys(w):
        prefix = f"{by}: "
        raw = w[NOTES_COLUMN].map(lambda t: next((p[len(prefix):] for p in str(t).split("; ")
                                                   if p.startswith(prefix)), None) if isinstance(t, str) else None)
    else:
        raise InputError(f"no column {by!r} to group by; the inventory has: {', '.join(group_columns(ev))}")
    text = raw.astype("string").str.strip()
    return text.mask(text.isna() | (text == ""), f"(no {by})").astype(object).to_numpy()


def workload_showback(ev: Evaluation, idle_key: str = "gpu_hours") -> pd.DataFrame:
    """One row per workload: attributed $, its idle share (cents), tokens, its key and its cheapest allowed API."""
    if idle_key not in IDLE_KEYS:
        raise InputError(f"idle key is one of {', '.join(IDLE_KEYS)}, not {idle_key!r}")
    w = ev.workloads
    W = len(w)
    if ev.scenario.mixed:  # the chosen mix's verdicts, shares and bill (core.decision.mixrows)
        from core.decision.mixrows import showback_inputs

        has, attributed, owned_route, gpu_hours, bill = showback_inputs(ev)
    else:
        has, attributed, owned_route, gpu_hours, bill = _plan_inputs(ev)
    attributed_c = np.round(attributed * 100.0).astype(np.int64)  # the plan's shares are in cents already
    rpd = np.where(has, w["requests_per_day"].to_numpy(dtype=float), 0.0)  # unserved work sends no tokens
    tokens = rpd * (w["input_tokens"].to_numpy(dtype=float) + w["output_tokens"].to_numpy(dtype=float)) \
        * DAYS_PER_MONTH
    out_tokens = rpd * w["output_tokens"].to_numpy(dtype=float) * DAYS_PER_MONTH
    key = gpu_hours if idle_key == "gpu_hours" else np.where(owned_route, tokens, 0.0)
    bill_c = int(round(bill * 100.0))
    unallocated_c = bill_c - int(attributed_c.sum())
    weights = next((k for k in (key, tokens, np.ones(W)) if W and np.nansum(k) > 0), None)
    idle_c = largest_remainder_cents(unallocated_c, np.nan_to_num(weights)) if weights is not None \
        else np.zeros(W, dtype=np.int64)
    return pd.DataFrame({
        "workload_id": w["workload_id"].to_numpy(),
        "served": has,
        "attributed_usd": attributed_c / 100.0,
        "idle_usd": idle_c / 100.0,
        "monthly_usd": (attributed_c + idle_c) / 100.0,
        "tokens_per_month": tokens,
        "output_tokens_per_month": out_tokens,
        "gpu_hours_per_month": gpu_hours,
        "key": np.nan_to_num(key),
        "api_usd_per_month": cheapest_api_monthly(ev),
    })


def _plan_inputs(ev: Evaluation) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """(served, attributed $, on owned GPUs, reserved GPU-hours a month, the bill) per workload of the plan."""
    W = len(ev.workloads)
    has = ev.verdict >= 0
    safe = np.where(has, ev.verdict, 0)
    attributed = np.where(has, np.nan_to_num(ev.values("monthly_usd", np.arange(W), safe)), 0.0) if W \
        else np.zeros(0)
    owned_route = np.array([r.hosting == "owned" for r in ev.routes] + [False])[np.where(has, ev.verdict, -1)]
    return has, attributed, owned_route, reserved_gpu_hours(ev), float(ev.fleet.total_monthly_usd)


def reserved_gpu_hours(ev: Evaluation) -> np.ndarray:
    """GPU-hours a month the plan reserves for each workload on owned GPUs (the module docstring's k_i): as the
    plan attributes its pools (core.decision.fleet._pools), in hours instead of dollars."""
    W = len(ev.workloads)
    out = np.zeros(W)
    inp, plan, planner = ev.plan_inputs, ev.plan, ev.planner
    if inp is None or plan is None or W == 0:
        return out
    rows_all = np.arange(W)
    v = plan.assignment.astype(int)
    has = v >= 0
    safe = np.where(has, v, 0)
    f = np.where(has, inp.fallback_share_r[rows_all, inp.col_route[safe]], 0.0)
    fb = inp.fallback_route
    fb_owned = planner._fb_owned if planner is not None else np.zeros(W, dtype=bool)
    esc = has & (f > 0) & (fb >= 0)
    for pos, route in enumerate(inp.owned):
        d = plan.sizes.get(pos)
        if d is not None and d.feasible and d.gpus:
            np.add.at(out, d.rows, d.load_shares(inp.lam_peak) * d.gpus * HOURS_PER_MONTH)
        prim = has & (v == route.index)
        extra = esc & fb_owned & (fb == route.index)
        off = np.flatnonzero((prim | extra) & ~inp.interactive)
        if off.size:
            share = np.where(prim[off], 1.0, f[off])
            hours = np.nan_to_num(inp.gpu_hours_day_r[off, inp.col_route[route.index]]) * share
            np.add.at(out, off, hours * DAYS_PER_MONTH)
    return out


def cheapest_api_monthly(ev: Evaluation) -> np.ndarray:
    """Each workload's monthly $ on the cheapest API route it may use (NaN: none allowed)."""
    W = len(ev.workloads)
    api = [j for j, r in enumerate(ev.routes) if r.hosting == "api"]
    if not api or W == 0:
        return np.full(W, np.nan)
    cost = np.asarray(ev.a["monthly_usd"][:, api], dtype=float)
    ok = np.asarray(ev.a["feasible"][:, api], dtype=bool) & np.isfinite(cost)
    with np.errstate(all="ignore"):
        best = np.where(ok, cost, np.inf).min(axis=1)
    return np.where(np.isfinite(best), best, np.nan)


def showback(ev: Evaluation, by: str = "team", idle_key: str = "gpu_hours") -> Showback:
    """The plan's cash bill by group of `by` (largest monthly $ first), the idle recovered by `idle_key`."""
    per = workload_showback(ev, idle_key)
    per["group"] = group_values(ev, by)
    groups = []
    for name, g in per.groupby("group", sort=False):
        cents = int(np.round(g["monthly_usd"] * 100).sum())
        tokens = float(g["tokens_per_month"].sum())
        allowed = g["api_usd_per_month"].notna()
        api = float(g.loc[allowed, "api_usd_per_month"].sum()) if allowed.any() else None
        diff = None if api is None else int(np.round(g.loc[allowed, "monthly_usd"] * 100).sum()) / 100.0 - api
        groups.append(GroupShowback(
            team=str(name), workloads=len(g), tokens_per_month=tokens,
            output_tokens_per_month=float(g["output_tokens_per_month"].sum()),
            attributed_usd=int(np.round(g["attributed_usd"] * 100).sum()) / 100.0,
            idle_usd=int(np.round(g["idle_usd"] * 100).sum()) / 100.0, monthly_usd=cents / 100.0,
            usd_per_mtok=cents / 100.0 / tokens * 1e6 if tokens > 0 else None,
            api_usd_per_month=api, api_workloads=int(allowed.sum()), difference_usd_per_month=diff,
            unserved_workloads=int((~g["served"]).sum())))
    from core.decision.mixfleet import top

    f = top(ev)  # the chosen mix in a mixed scenario
    attributed_c = int(np.round(per["attributed_usd"] * 100).sum())
    unallocated = (int(round(f.total_monthly_usd * 100)) - attributed_c) / 100.0
    groups.sort(key=lambda t: (-t.monthly_usd, t.team))
    return Showback(by=by, idle_key=idle_key, idle_key_note=_key_note(per, idle_key),
                    total_monthly_usd=float(f.total_monthly_usd), unallocated_usd=unallocated,
                    teams=tuple(groups), inventory=str(f.inventory or "given"), source=source_line(ev))


def _key_note(per: pd.DataFrame, idle_key: str) -> str:
    if len(per) and per["key"].sum() > 0:
        return f"unallocated $ shared by {IDLE_KEYS[idle_key]}"
    if len(per) and per["tokens_per_month"].sum() > 0:
        return f"no workload has {IDLE_KEYS[idle_key]}: unallocated $ shared by all tokens"
    return "unallocated $ shared equally by workload"


def source_line(ev: Evaluation) -> str:
    """Where the figures come from: the plan's inventory and the dated prices it read."""
    apis = sorted({r.api.as_of.isoformat() for r in ev.routes if r.api is not None})
    api_dates = f"API prices as of {apis[0]}" + (f" to {apis[-1]}" if len(apis) > 1 else "") if apis else \
        "no API prices"
    return (f"GPU Hangover plan of inventory {ev.fleet.inventory or 'given'}; {_node_prices(ev)}; {api_dates}; cost basis {ev.scenario.cost_basis.value}; "
            f"shares are estimates from the plan, not metered usage")


def _node_prices(ev: Evaluation) -> str:
    """The node prices the shown plan read: the one-kind plan's, or the chosen mix's per GPU type and option."""
    rate = ev.rate
    if not ev.scenario.mixed:
        return f"node price {rate.label} (as of {rate.as_of or 'n/a'}, {rate.source})"
    from core.decision import mix

    best = mix.of(ev).best
    owned = ", ".join(f"{n} owned {g}" for g, n in best.owned_nodes_by_gpu.items()) or "no owned nodes"
    new = "; ".join(f"{n.nodes} new {n.gpu} at {n.price} (as of {n.as_of or 'n/a'}, {n.source})"
                    for n in best.new_nodes if n.nodes)
    return f"the chosen mix {best.label}: {owned}" + (f"; {new}" if new else "")


def showback_json(sb: Showback) -> dict:
    """The `hangover showback --format json` object: `teams[]` with every field of GroupShowback."""
    from core.decision.records import jsonable

    return jsonable({
        "by": sb.by, "idle_key": sb.idle_key, "idle_key_note": sb.idle_key_note,
        "total_monthly_usd": sb.total_monthly_usd, "unallocated_usd": sb.unallocated_usd,
        "inventory": sb.inventory, "source": sb.source,
        "teams": [{fl.name: getattr(t, fl.name) for fl in fields(t)} for t in sb.teams],
    })


def showback_frame(sb: Showback) -> pd.DataFrame:
    """The groups as a table (the CSV and the page)."""
    return pd.DataFrame([{fl.name: getattr(t, fl.name) for fl in fields(t)} for t in sb.teams],
                        columns=[fl.name for fl in fields(GroupShowback)])
