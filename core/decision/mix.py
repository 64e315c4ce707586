"""What to buy next: owned nodes keep their GPU, candidate new nodes per GPU type and purchase option, side by side.

The fleet planner (core.decision.fleet) plans one GPU type: owned nodes and new ones alike. A fleet of several
kinds is planned here as a chain of one-type plans, each deployment on one GPU type (a replica never spans
types):

1. Fill stages, one per owned GPU type other than the candidate (most nodes first): the one-type plan of the
   workloads still to place on that GPU with its owned nodes, new nodes of it barred (priced out of reach, so
   the plan fills the owned nodes and sends the rest to its APIs). Its deployments that fit on the owned nodes
   are kept there; every other workload (on an API, unserved, or on a deployment that would need a node beyond
   those owned) goes on to the next stage.
2. The candidate stage: the one-type plan of what is left on the candidate GPU, with that GPU's owned nodes (if
   any) and new nodes at the purchase option's price: the planner weighs new nodes against APIs as it always
   does (the one cash bill).

Each (candidate GPU, option) is one chain; the plan takes the cheapest chain. With one candidate equal to the
only owned GPU the chain is the one-type plan itself, so the plan is today's (same nodes, same bill); a chain
per candidate means adding a candidate never raises the bill (the minimum over more chains).

What it does not explore: a pool split across GPU types; moving a workload back onto owned nodes once a later
stage bought new ones; new nodes of two GPU types in one plan; buying more of one owned type while another
owned type fills first in a different order. Kept deployments are sized by the fill stage's plan (their
escalations included); a kept workload escalating onto a deployment that moved on goes on with it.

Money: owned nodes are priced as owned (the scenario's node price for that GPU; the TCO when the scenario prices
owned hardware; none found: $0, sunk), the same in every chain. New nodes at the option's full price: buy = TCO
(capex over depreciation, cost of capital, power x PUE x $/kWh, support), reserved 1-y / 3-y, on-demand, from
the dated price rows. The bill's lines are each in cents and the total is their sum.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from core.catalog import Catalog
from core.decision.economics import DAYS_PER_MONTH, HOURS_PER_MONTH, node_rate
from core.decision.records import Deployment
from core.errors import InputError
from core.format import money
from core.models import CostBasis, PricingOption, Scenario

# New nodes of a fill stage: out of reach, so the plan fills the owned nodes and sends the rest to APIs.
BARRED_USD_PER_NODE_HOUR = 1e6
OPTION_ORDER = (PricingOption.OWNED, PricingOption.SAVINGS_3Y, PricingOption.SAVINGS_1Y, PricingOption.ON_DEMAND)
OPTION_WORDS = {PricingOption.OWNED: "bought outright (TCO)", PricingOption.SAVINGS_3Y: "3-year reserved",
                PricingOption.SAVINGS_1Y: "1-year reserved", PricingOption.ON_DEMAND: "on-demand"}

# engine.evaluate's shape; called with break_even="later" (the break-even re-plan made only for the chosen mix).
Evaluate = Callable[..., object]


@dataclass(frozen=True)
class NewNodes:
    """New nodes of one GPU type at one purchase option (fleet.new_nodes[])."""

    gpu: str
    option: str
    nodes: int
    usd_per_node_hour: float
    usd_per_month: float
    price: str  # which price row (or TCO) and its date
    source: str
    as_of: str
    energy_usd_per_month: float = 0.0  # of usd_per_month: power of nodes bought outright (cloud prices include it)


@dataclass(frozen=True)
class MixDeployment:
    """One deployment of a mixed plan: its GPU type, whether it runs on owned nodes, the pool itself."""

    gpu: str
    on_owned_nodes: bool
    deployment: Deployment


@dataclass(frozen=True)
class Stage:
    """One one-type plan of a chain as the mix uses it: which inventory rows it planned, its evaluation, the
    positions (within those rows) it placed, and what the mix pays for its GPU's nodes."""

    gpu: str
    rows: np.ndarray  # inventory positions the stage planned
    ev: Any  # its engine.Evaluation
    keep: np.ndarray  # positions within `rows` the mix places here (the candidate stage: all)
    owned_nodes: int  # owned nodes of this GPU
    new_nodes: int
    node_usd_per_month: float  # the mix's money for this stage's nodes (owned at their rate, new at the option's)
    candidate: bool
    kept: tuple[Deployment, ...] = ()  # the stage's deployments the mix keeps


@dataclass(frozen=True)
class MixPlan:
    """One plan of a fleet of several kinds (a fleet.buy_options row): what it buys and its cash bill."""

    label: str
    kind: str  # "candidate" (one GPU and option), "buy_nothing"
    gpu: str | None
    option: str | None
    owned_nodes_by_gpu: dict[str, int]
    new_nodes: tuple[NewNodes, ...]
    deployments: tuple[MixDeployment, ...]
    owned_usd: float
    new_nodes_usd: float
    api_usd: float
    licence_usd: float
    total_usd: float
    served_on_nodes: int
    served_by_api: int
    unserved: int
    output_mtok_per_month: float
    notes: tuple[str, ...] = ()
    energy_usd: float = 0.0  # of owned_usd + new_nodes_usd: the power of nodes priced at their TCO
    # The one-type plans it chains (core.decision.mixfleet builds the top-level fleet record from them).
    stages: tuple[Stage, ...] = field(default=(), repr=False, compare=False)
    served_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.intp), repr=False, compare=False)

    @property
    def new_node_count(self) -> int:
        return sum(n.nodes for n in self.new_nodes)

    @property
    def usd_per_mtok_out(self) -> float | None:
        """The bill per million output tokens served (None when nothing is served)."""
        return self.total_usd / self.output_mtok_per_month if self.output_mtok_per_month > 0 else None

    def as_json(self) -> dict:
        """The row as the contract's fleet.buy_options[] object."""
        from core.decision.records import jsonable

        return jsonable({
            "label": self.label, "kind": self.kind, "gpu": self.gpu, "option": self.option,
            "owned_nodes_by_gpu": dict(self.owned_nodes_by_gpu),
            "new_nodes": [{"gpu": n.gpu, "option": n.option, "nodes": n.nodes,
                           "usd_per_node_hour": n.usd_per_node_hour, "usd_per_month": n.usd_per_month,
                           "price": n.price, "source": n.source, "as_of": n.as_of} for n in self.new_nodes],
            "nodes_owned": sum(self.owned_nodes_by_gpu.values()), "nodes_new": self.new_node_count,
            "owned_usd_per_month": self.owned_usd, "new_nodes_usd_per_month": self.new_nodes_usd,
            "energy_usd_per_month": self.energy_usd,
            "api_usd_per_month": self.api_usd, "licence_usd_per_month": self.licence_usd,
            "total_monthly_usd": self.total_usd, "usd_per_mtok_out": self.usd_per_mtok_out,
            "served": {"on_nodes": self.served_on_nodes, "by_api": self.served_by_api, "unserved": self.unserved},
            "notes": list(self.notes),
        })


@dataclass(frozen=True)
class BuyOptions:
    """Every chain priced (per candidate GPU and option), the best per GPU, the best mix and buying nothing."""

    rows: tuple[MixPlan, ...]  # every (GPU, option) chain that could be priced
    best_per_gpu: dict[str, MixPlan]
    best: MixPlan
    buy_nothing: MixPlan
    skipped: tuple[str, ...] = field(default=())  # (GPU, option) pairs with no price, in words
    # Per shown row's label: the same chain with every owned route at its fast, then its slow efficiency end, for
    # the work the row serves (buy_options); where an end could serve more, that end serving it too, else None.
    ends: dict[str, tuple[MixPlan, MixPlan]] = field(default_factory=dict)
    ends_with_added: dict[str, tuple[MixPlan | None, MixPlan | None]] = field(default_factory=dict)
    workloads: int = 0  # rows of the inventory (what each row's attribution spans)
    cost_basis: CostBasis = CostBasis.FULL
    _dropped: dict[str, dict] = field(default_factory=dict, repr=False, compare=False)  # dropped(), per row label

    def shown(self) -> list[tuple[str, MixPlan]]:
        """The rows side by side: (row, plan) for each candidate GPU's best option, the best mix, buy nothing."""
        return [*(("best for this GPU", p) for p in self.best_per_gpu.values()), ("best mix", self.best),
                ("buy nothing", self.buy_nothing)]

    def estimate_range(self, p: MixPlan) -> dict | None:
        """A row's bill and new nodes at the optimistic (low) and pessimistic (high) ends of the performance
        estimates (core.decision.sensitivity's ends); None when not computed."""
        ends = self.ends.get(p.label)
        if ends is None:
            return None
        fast, slow = ends
        out = {"total_monthly_usd_optimistic": fast.total_usd, "total_monthly_usd_pessimistic": slow.total_usd,
               "nodes_new_optimistic": fast.new_node_count, "nodes_new_pessimistic": slow.new_node_count,
               "unserved_optimistic": fast.unserved, "unserved_pessimistic": slow.unserved,
               "basis": "optimistic: every owned route at the optimistic end of its efficiency range; pessimistic: at "
                        "the pessimistic end; the same chain re-planned at each for the work it serves (estimates)"}
        out.update(self.dropped(p))
        for name, more in zip(("optimistic", "pessimistic"), self.ends_with_added.get(p.label, (None, None)),
                              strict=True):
            out[f"added_{name}"] = 0 if more is None else len(set(more.served_rows.tolist())
                                                               - set(p.served_rows.tolist()))
            out[f"total_monthly_usd_{name}_with_added"] = None if more is None else more.total_usd
            out[f"nodes_new_{name}_with_added"] = None if more is None else more.new_node_count
        return out

    def dropped(self, p: MixPlan) -> dict:
        """Per end of a row's range (computed: estimate_range), the row's workloads it cannot serve and their share
        of the row's bill (its attribution, mixfleet.plan_attributed): an end serving less bills less for it.
        Computed once per row: dropped_optimistic, dropped_optimistic_usd, dropped_pessimistic, ..._usd."""
        got = self._dropped.get(p.label)
        if got is None:
            got, shares = {}, None
            for name, end in zip(("optimistic", "pessimistic"), self.ends[p.label], strict=True):
                rows = np.setdiff1d(p.served_rows, end.served_rows)
                if rows.size and shares is None:
                    from core.decision.mixfleet import plan_attributed

                    shares = plan_attributed(p, max(self.workloads, int(p.served_rows.max()) + 1), self.cost_basis)
                got[f"dropped_{name}"] = int(rows.size)
                got[f"dropped_{name}_usd"] = round(float(shares[rows].sum()), 2) if shares is not None \
                    and rows.size else 0.0
            self._dropped[p.label] = got
        return got

    def as_json(self) -> list[dict]:
        """fleet.buy_options: one row per candidate GPU (its best option), the best mix, then buy nothing;
        every priced (GPU, option) chain is in fleet.buy_options_all."""
        return [{**p.as_json(), "row": row, "estimate_range": self.estimate_range(p)} for row, p in self.shown()]


# ---------------------------------------------------------------------------------------------------------------
# the inputs: owned nodes, candidates, options
# ---------------------------------------------------------------------------------------------------------------

def owned_by_gpu(catalog: Catalog, sc: Scenario) -> dict[str, int]:
    """Owned nodes per GPU type (catalog spelling), most first; the one-kind shorthand without the field."""
    raw = sc.owned_nodes_by_gpu if sc.owned_nodes_by_gpu is not None else {sc.gpu: sc.fleet_nodes}
    out: dict[str, int] = {}
    for gpu, n in raw.items():
        name = catalog.gpu(gpu).name
        out[name] = out.get(name, 0) + int(n)
    return dict(sorted(((g, n) for g, n in out.items() if n > 0), key=lambda gn: (-gn[1], gn[0])))


def candidates(catalog: Catalog, sc: Scenario) -> tuple[str, ...]:
    """Candidate GPU types for new nodes (catalog spelling): the named ones, else the owned GPU."""
    names = sc.buy_gpus if sc.buy_gpus is not None else (next(iter(owned_by_gpu(catalog, sc)), sc.gpu),)
    return tuple(dict.fromkeys(catalog.gpu(g).name for g in names))


def options(sc: Scenario) -> tuple[PricingOption, ...]:
    """Purchase options compared: the named ones; else all four with candidates named, else the scenario's own."""
    if sc.buy_pricing is not None:
        return tuple(dict.fromkeys(PricingOption(o) for o in sc.buy_pricing))
    return OPTION_ORDER if sc.buy_gpus is not None else (sc.pricing_option,)


def stage_scenario(sc: Scenario, gpu: str, nodes: int, option: PricingOption | None) -> Scenario:
    """The one-type scenario of a stage: `nodes` owned of `gpu`, new ones at `option` (None: barred).

    The scenario's own GPU at its own option is the scenario itself with the owned count set, so the chain of
    the one-kind fleet is today's plan."""
    base = {"owned_nodes_by_gpu": None, "buy_gpus": None, "buy_pricing": None, "gpu": gpu, "fleet_nodes": nodes}
    if option is None:
        return sc.model_copy(update={**base, "node_usd_per_hour": BARRED_USD_PER_NODE_HOUR,
                                     "cost_basis": CostBasis.FULL})
    if gpu == sc.gpu and option == sc.pricing_option:
        return sc.model_copy(update=base)
    hw = sc.owned_hardware if sc.owned_hardware is not None and sc.owned_hardware.gpu == gpu else None
    return sc.model_copy(update={**base, "pricing_option": option, "node_usd_per_hour": None, "owned_hardware": hw})


def energy_usd_per_node_hour(catalog: Catalog, sc: Scenario, gpu: str) -> float:
    """Power of one node of `gpu` bought outright: kW x PUE x $/kWh at its average draw, from the scenario's own
    figures for that GPU or the dated seed row (data/owned_hardware.csv, an estimate); 0 when none is known."""
    if sc.owned_hardware is not None and sc.owned_hardware.gpu == gpu:
        return sc.owned_hardware.power_usd_per_hour
    hw = next((h for h in catalog.owned_hardware if h.gpu == gpu), None)
    return 0.0 if hw is None else hw.power_usd_per_hour


def owned_rate(catalog: Catalog, sc: Scenario, gpu: str) -> tuple[float, str]:
    """$/node-hour of an owned node of `gpu` as the bill counts it, and where it came from: the scenario's node
    price (its override, its option or its TCO figures) for that GPU; none known: $0 (sunk)."""
    one = sc.model_copy(update={"gpu": gpu, "owned_nodes_by_gpu": None, "buy_gpus": None, "buy_pricing": None,
                                "owned_hardware": sc.owned_hardware if sc.owned_hardware is not None
                                and sc.owned_hardware.gpu == gpu else None,
                                "node_usd_per_hour": sc.node_usd_per_hour if gpu == sc.gpu else None})
    try:
        r = node_rate(one, list(catalog.node_prices), list(catalog.owned_hardware))
    except InputError:
        return 0.0, f"no price for an owned {gpu} node: counted as sunk ($0 a month)"
    return r.full_usd_per_node_hour, r.label


# ---------------------------------------------------------------------------------------------------------------
# the chains
# ---------------------------------------------------------------------------------------------------------------

@dataclass
class _Placed:
    """What the stages so far placed: kept deployments and each placed row's monthly API and licence spend."""

    deployments: list[MixDeployment] = field(default_factory=list)
    rows: list[np.ndarray] = field(default_factory=list)  # row positions (of the whole inventory) placed
    api_usd: float = 0.0
    licence_usd: float = 0.0
    stages: list[Stage] = field(default_factory=list)


class Chains:
    """Prices chains of one-type plans over one inventory; stage plans are cached by (rows, stage scenario)."""

    def __init__(self, catalog: Catalog, workloads: pd.DataFrame, sc: Scenario, evaluate: Evaluate,
                 base_ev=None, serve: np.ndarray | None = None):
        self.catalog, self.sc, self._evaluate = catalog, sc, evaluate
        self.w = workloads.reset_index(drop=True)
        # serve: the rows the chains plan (positions; default all); the others are held without a route (a range
        # end planned for the work a chain at the central speeds serves: buy_options).
        self._serve = np.arange(len(self.w)) if serve is None else np.sort(np.asarray(serve, dtype=np.intp))
        self._held = len(self.w) - int(self._serve.size)
        self.owned = owned_by_gpu(catalog, sc)
        self._cache: dict[tuple, object] = {}
        if base_ev is not None:  # the scenario's own plan: the one-kind chain, evaluated already
            self._cache[(self._all_key(), stage_scenario(sc, sc.gpu, sc.fleet_nodes,
                                                         sc.pricing_option).model_dump_json())] = base_ev
        out_tok = self.w["output_tokens"].to_numpy(dtype=float) * self.w["requests_per_day"].to_numpy(dtype=float)
        self._mtok = out_tok * DAYS_PER_MONTH / 1e6
        self._rates = {g: owned_rate(catalog, sc, g) for g in self.owned}
        # The owned nodes' power where they are priced at their TCO (elsewhere their price includes it).
        self._owned_energy = round(sum(round(n * energy_usd_per_node_hour(catalog, sc, g) * HOURS_PER_MONTH, 2)
                                       for g, n in self.owned.items()), 2) \
            if sc.pricing_option is PricingOption.OWNED and sc.node_usd_per_hour is None else 0.0

    def _all_key(self) -> bytes:
        return np.arange(len(self.w)).tobytes()

    def _plan(self, rows: np.ndarray, stage: Scenario):
        key = (rows.tobytes(), stage.model_dump_json())
        ev = self._cache.get(key)
        if ev is None:
            # The licensed stacks' break-even waits until asked: only the chosen mix's stages are read
            # (buy_options asks for theirs); each stage plan of up to 40 workloads made it (~a sixth of the CPU).
            ev = self._cache[key] = self._evaluate(self.catalog, self.w.iloc[rows].reset_index(drop=True), stage,
                                                   break_even="later")
        return ev

    def _scores(self, rows: np.ndarray, stage: Scenario):
        """The rows scored on every route under `stage` (engine.score_routes), without a plan: what each may cost
        on each API (cached like the plans)."""
        from core.decision.engine import prepare_workloads, score_routes

        key = (rows.tobytes(), stage.model_dump_json(), "scores")
        got = self._cache.get(key)
        if got is None:
            rate = node_rate(stage, list(self.catalog.node_prices), list(self.catalog.owned_hardware))
            w = prepare_workloads(self.w.iloc[rows].reset_index(drop=True))
            got = self._cache[key] = score_routes(self.catalog, w, stage, rate)
        return got

    def _fill(self, rows: np.ndarray, gpu: str, nodes: int, placed: _Placed) -> np.ndarray:
        """One fill stage: keep on the owned nodes of `gpu` the deployments that fit; the rows left."""
        ev = self._plan(rows, stage_scenario(self.sc, gpu, nodes, None))
        gpn = ev.rate.gpus_per_node
        room = nodes * gpn
        ids = ev.workloads["workload_id"].astype(str).to_numpy()
        pos = {wid: k for k, wid in enumerate(ids)}
        kept: list[Deployment] = []
        # Smallest first: the most workloads on the owned nodes when not all fit.
        order = sorted(ev.fleet.deployments, key=lambda d: (_gpus_held(d), d.route_id))
        fits_all = ev.fleet.nodes_needed <= nodes
        for d in order:
            if fits_all or _gpus_held(d) <= room:
                kept.append(d)
                room -= _gpus_held(d)
        kept_ids = {wid for d in kept for wid in d.workloads}
        moved = {wid for d in ev.fleet.deployments if d not in kept for wid in d.workloads}
        # A kept workload escalating onto a deployment that moved on goes on with it.
        moved |= {wid for d in ev.fleet.deployments if d not in kept for wid in d.escalated_from}
        kept_ids -= moved
        keep = np.array(sorted(pos[w] for w in kept_ids), dtype=np.intp)
        row_api = ev.plan.row_api if ev.plan is not None and ev.plan.row_api is not None else None
        if keep.size:
            placed.api_usd += float(np.sum(row_api[keep])) if row_api is not None else 0.0
            placed.licence_usd += sum(d.licence_usd_per_month for d in kept)
            placed.rows.append(rows[keep])
            placed.deployments += [MixDeployment(gpu, True, d) for d in kept]
            placed.stages.append(Stage(gpu, rows, ev, keep, nodes, 0,
                                       round(nodes * self._rates[gpu][0] * HOURS_PER_MONTH, 2), False, tuple(kept)))
        rest = np.ones(len(rows), dtype=bool)
        rest[keep] = False
        return rows[rest]

    def _fill_all(self, skip: str | None) -> tuple[np.ndarray, _Placed]:
        """Every fill stage but `skip`'s GPU, in order: the rows left and what was placed."""
        rows = self._serve
        placed = _Placed()
        for gpu, nodes in self.owned.items():
            if gpu != skip and rows.size:
                rows = self._fill(rows, gpu, nodes, placed)
        return rows, placed

    def _owned_usd(self) -> float:
        return round(sum(round(n * self._rates[g][0] * HOURS_PER_MONTH, 2) for g, n in self.owned.items()), 2)

    def chain(self, gpu: str, option: PricingOption) -> MixPlan:
        """The chain for new nodes of `gpu` at `option`: fill the other owned types, then plan the rest on `gpu`."""
        rows, placed = self._fill_all(gpu)
        owned_here = self.owned.get(gpu, 0)
        new: tuple[NewNodes, ...] = ()
        api, licence = placed.api_usd, placed.licence_usd
        served_nodes = sum(r.size for r in placed.rows)
        served_api, unserved = 0, self._held
        mtok = float(self._mtok[np.concatenate(placed.rows)].sum()) if placed.rows else 0.0
        deployments = list(placed.deployments)
        stages = list(placed.stages)
        served = [*placed.rows]
        owned_power = 0.0  # the owned nodes of this GPU at TCO: their power at the stage plan's utilization, less flat
        if rows.size:
            ev = self._plan(rows, stage_scenario(self.sc, gpu, owned_here, option))
            f = ev.fleet
            n_new = max(f.nodes_needed - owned_here, 0)
            rate = ev.rate.full_usd_per_node_hour
            energy = energy_usd_per_node_hour(self.catalog, self.sc, gpu) if option is PricingOption.OWNED else 0.0
            if f.energy is not None:  # bought outright: power at this stage plan's utilization, as its own bill has it
                rate += f.energy.usd_per_node_hour_change
                energy = f.energy.kw_per_node * f.energy.pue * f.energy.usd_per_kwh
            new = (NewNodes(gpu, option.value, n_new, rate, round(n_new * rate * HOURS_PER_MONTH, 2), ev.rate.label,
                            ev.rate.source, ev.rate.as_of, round(n_new * energy * HOURS_PER_MONTH, 2)),)
            api += f.api_monthly_usd
            licence += f.licence_monthly_usd
            hosting = np.array([ev.routes[v].hosting if v >= 0 else "" for v in ev.verdict])
            served_nodes += int(np.sum(hosting == "owned"))
            served_api += int(np.sum(hosting == "api"))
            unserved += int(np.sum(hosting == ""))
            mtok += float(self._mtok[rows[hosting != ""]].sum())
            served.append(rows[hosting != ""])
            # The chosen owned nodes of this GPU first (a plan's owned share), then the new ones.
            deployments += [MixDeployment(gpu, owned_here > 0, d) for d in f.deployments]
            if f.energy is not None and owned_here and self._owned_energy:
                # Owned nodes priced at their TCO share the stage plan's utilization with the new ones (its bill
                # prices both so): with the owned GPU the only candidate the chain is then today's plan to the cent.
                owned_power = round(owned_here * f.energy.usd_per_node_hour_change * HOURS_PER_MONTH, 2)
            owned_money = round(owned_here * self._rates[gpu][0] * HOURS_PER_MONTH + owned_power, 2) \
                if owned_here else 0.0
            stages.append(Stage(gpu, rows, ev, np.arange(rows.size), owned_here, n_new,
                                round(owned_money + new[0].usd_per_month, 2), True, tuple(f.deployments)))
        label = f"{gpu}, {OPTION_WORDS[option]}"
        plan = self._priced(label, "candidate", gpu, option.value, new, tuple(deployments), api, licence,
                            served_nodes, served_api, unserved, mtok, owned_power=owned_power)
        return replace(plan, stages=tuple(stages), served_rows=_sorted_rows(served))

    def buy_nothing(self) -> MixPlan:
        """Every owned type filled, new nodes barred; what is left goes to its cheapest API the plan's rules allow
        (data policy, latency, quality), else stays unserved."""
        rows, placed = self._fill_all(None)
        api, mtok = placed.api_usd, (float(self._mtok[np.concatenate(placed.rows)].sum()) if placed.rows else 0.0)
        served_api = left = 0
        if rows.size:
            gpu = next(iter(self.owned), self.sc.gpu)
            cost = _cheapest_api(self._scores(rows, stage_scenario(self.sc, gpu, 0, None)))
            ok = np.isfinite(cost)
            api += float(np.sum(cost[ok]))
            served_api, left = int(ok.sum()), int((~ok).sum())
            mtok += float(self._mtok[rows[ok]].sum())
        unserved = left + self._held
        notes = (f"{left} workload(s) may not leave (data policy) or no API meets their targets: unserved",) \
            if left else ()
        plan = self._priced("buy nothing", "buy_nothing", None, None, (), tuple(placed.deployments), api,
                            placed.licence_usd, sum(r.size for r in placed.rows), served_api, unserved, mtok, notes)
        return replace(plan, stages=tuple(placed.stages),
                       served_rows=_sorted_rows([*placed.rows, *([rows[ok]] if rows.size else [])]))

    def _priced(self, label, kind, gpu, option, new, deployments, api, licence, on_nodes, by_api, unserved, mtok,
                notes=(), owned_power: float = 0.0) -> MixPlan:
        owned_usd = round(self._owned_usd() + owned_power, 2)
        new_usd = round(sum(n.usd_per_month for n in new), 2)
        api, licence = round(float(api), 2), round(float(licence), 2)
        notes = tuple(notes) + tuple(words for g, (r, words) in self._rates.items() if r == 0.0)
        energy = round(self._owned_energy + owned_power + sum(n.energy_usd_per_month for n in new), 2)
        return MixPlan(label, kind, gpu, option, dict(self.owned), new, deployments, owned_usd, new_usd, api,
                       licence, round(owned_usd + new_usd + api + licence, 2), on_nodes, by_api, unserved, mtok,
                       notes, energy)


def _sorted_rows(parts: list[np.ndarray]) -> np.ndarray:
    """Inventory positions placed by the stages, in order."""
    return np.sort(np.concatenate(parts)).astype(np.intp) if parts else np.zeros(0, dtype=np.intp)


def _gpus_held(d: Deployment) -> int:
    """GPUs a deployment holds on the owned nodes: its busiest, or its offline GPU-hours spread over the day."""
    return max(int(d.gpus), int(np.ceil(d.offline_gpu_hours_per_day / 24.0 - 1e-9)))


def _cheapest_api(ev) -> np.ndarray:
    """Per workload, the monthly $ of its cheapest API route the engine found feasible with no owned fallback
    (inf: none may take it), from an evaluation's or a scoring's routes and (W, R) arrays."""
    api_cols = np.array([r.hosting == "api" for r in ev.routes], dtype=bool)
    owned_cols = np.flatnonzero(~api_cols)
    fb = ev.a["fallback_route"].astype(int)
    fb_owned = np.isin(fb, owned_cols)
    ok = ev.a["feasible"] & api_cols[None, :] & ~((ev.a["fallback_share"] > 0) & fb_owned[:, None])
    return np.where(ok, ev.a["monthly_usd"], np.inf).min(axis=1) if ok.shape[1] else np.full(len(fb), np.inf)


def buy_options(catalog: Catalog, workloads: pd.DataFrame, sc: Scenario, evaluate: Evaluate,
                base_ev=None, *, with_ranges: bool = False) -> BuyOptions:
    """Every candidate GPU at every purchase option priced as a chain, the best per GPU, the best mix (the chain
    that leaves the fewest workloads unserved, then the cheapest; ties to the first candidate, then the option
    order) and buying nothing; with_ranges: each
    shown row's estimate range too (two more chains per row)."""
    chains = Chains(catalog, workloads, sc, evaluate, base_ev)
    rows: list[MixPlan] = []
    skipped: list[str] = []
    for gpu in candidates(catalog, sc):
        for option in options(sc):
            try:
                rows.append(chains.chain(gpu, option))
            except InputError as exc:  # no price row for this GPU and option
                skipped.append(f"{gpu}, {OPTION_WORDS[option]}: {exc}")
    if not rows:
        raise InputError("no candidate GPU has a price for any purchase option: " + "; ".join(skipped))
    best_per_gpu: dict[str, MixPlan] = {}
    for p in rows:
        assert p.gpu is not None
        if p.gpu not in best_per_gpu or _key(p) < _key(best_per_gpu[p.gpu]):
            best_per_gpu[p.gpu] = p
    best = min(rows, key=_key)
    from core.decision import settings as settings_mod
    from core.decision.fleet import licensed_routes

    # What the chosen mix shows: its stages' licensed stacks' break-even, made where a plan makes it with itself.
    for st in best.stages:
        if len(st.rows) <= settings_mod.PLAN.break_even_max_workloads:
            licensed_routes(st.ev, force=True)
    out = BuyOptions(tuple(rows), best_per_gpu, best, chains.buy_nothing(), tuple(skipped),
                     workloads=len(workloads), cost_basis=sc.cost_basis)
    if not with_ranges:
        return out
    # The estimate range of each shown row: its chain again at each efficiency end (the fill stages re-planned too),
    # for the work the row serves. An end that could serve more is planned again without those workloads (as the
    # one-kind plan's ends are, core.decision.sensitivity): serving them is not the same purchase; both are kept.
    ends = {end: catalog.at_efficiency_end(end) for end in ("high", "low")}
    at = {end: Chains(c, workloads, sc, evaluate) for end, c in ends.items()}

    def run(chains: Chains, p: MixPlan) -> MixPlan:
        if p.kind == "buy_nothing":
            return chains.buy_nothing()
        assert p.gpu is not None and p.option is not None
        return chains.chain(p.gpu, PricingOption(p.option))

    for _, p in out.shown():
        if p.label in out.ends:
            continue
        central = set(p.served_rows.tolist())
        same: list[MixPlan] = []
        more: list[MixPlan | None] = []
        for end in ("high", "low"):
            whole = run(at[end], p)
            if set(whole.served_rows.tolist()) <= central:
                same.append(whole)
                more.append(None)
            else:
                same.append(run(Chains(ends[end], workloads, sc, evaluate, serve=p.served_rows), p))
                more.append(whole)
        out.ends[p.label] = (same[0], same[1])
        out.ends_with_added[p.label] = (more[0], more[1])
    return out


def _key(p: MixPlan) -> tuple[int, float, int]:
    """Fewer workloads left unserved, then the bill (cents), then fewer new nodes. A plan serves every workload
    some allowed route can serve; a chain that is cheaper only because its GPU cannot serve one is not cheaper."""
    return (p.unserved, p.total_usd, p.new_node_count)


# ---------------------------------------------------------------------------------------------------------------
# on a finished evaluation: computed once, kept in its answers
# ---------------------------------------------------------------------------------------------------------------

def of(ev) -> BuyOptions:
    """The buy options of an evaluation's inventory and scenario (its own plan re-used as the one-kind chain)."""
    from core.decision.engine import evaluate

    return ev.answers.get("buy_options", lambda: buy_options(ev.catalog, ev.workloads, ev.scenario, evaluate,
                                                             base_ev=ev, with_ranges=True))


def deployment_json(d: MixDeployment) -> dict:
    """A mixed plan's deployment as the contract's object: the pool's fields, its GPU, whether on owned nodes."""
    from core.decision.records import jsonable, record_json

    return jsonable({"gpu": d.gpu, "on_owned_nodes": d.on_owned_nodes, **record_json(d.deployment)})


def fleet_keys(ev) -> dict:
    """The contract's what-to-buy keys of `fleet` (a scenario naming owned nodes by GPU or candidates):
    owned_nodes_by_gpu and new_nodes of the chosen mix, the mix itself with its deployments (each on one GPU),
    buy_options side by side, every priced chain, and the pairs with no price."""
    bo = of(ev)
    best = bo.best.as_json()
    return {
        "owned_nodes_by_gpu": best["owned_nodes_by_gpu"],
        "new_nodes": [{k: n[k] for k in ("gpu", "option", "nodes", "usd_per_month")} for n in best["new_nodes"]
                      if n["nodes"] > 0],
        "mix": {**best, "deployments": [deployment_json(d) for d in bo.best.deployments]},
        "buy_options": bo.as_json(),
        "buy_options_all": [p.as_json() for p in bo.rows],
        "buy_options_skipped": list(bo.skipped),
    }


def frame(ev, *, every: bool = False) -> pd.DataFrame | None:
    """The buy options as a table, one row per candidate GPU (its best option), the best mix, buy nothing (every:
    one row per priced GPU and option instead); None when the scenario names neither owned nodes by GPU nor
    candidates."""
    if not ev.scenario.mixed:
        return None
    bo = of(ev)
    rows = []
    for row, p in ([("", p) for p in bo.rows] if every else bo.shown()):
        new = [n for n in p.new_nodes if n.nodes > 0]
        rows.append({
            "row": row, "label": p.label, "gpu": p.gpu or "", "option": p.option or "",
            "buy": "; ".join(f"{n.nodes} × {n.gpu}, {OPTION_WORDS[PricingOption(n.option)]}" for n in new)
                   or "nothing",
            "nodes_owned": sum(p.owned_nodes_by_gpu.values()), "nodes_new": p.new_node_count,
            "owned_usd": p.owned_usd, "new_nodes_usd": p.new_nodes_usd, "api_usd": p.api_usd,
            "licence_usd": p.licence_usd, "total_usd": p.total_usd, "usd_per_mtok_out": p.usd_per_mtok_out,
            "energy_usd": p.energy_usd,
            "on_nodes": p.served_on_nodes, "by_api": p.served_by_api, "unserved": p.unserved,
            "price_source": "; ".join(f"{n.price} ({n.as_of})" for n in new),
            **_range_columns(bo.estimate_range(p), p.unserved),
        })
    return pd.DataFrame(rows)


def _range_columns(rg: dict | None, unserved: int | None = None) -> dict:
    """A row's estimate range as table columns (NaN where not computed) and in words; `unserved`: what the row's
    own plan leaves unserved (each end plans the row's work, and leaves more unserved where it cannot serve some)."""
    if rg is None:
        return {"total_usd_optimistic": np.nan, "total_usd_pessimistic": np.nan, "estimate_range": ""}
    lo, hi = rg["total_monthly_usd_optimistic"], rg["total_monthly_usd_pessimistic"]
    nodes = (f"{rg['nodes_new_optimistic']}" if rg["nodes_new_optimistic"] == rg["nodes_new_pessimistic"]
             else f"{rg['nodes_new_optimistic']}-{rg['nodes_new_pessimistic']}")
    words = f"{money(lo, decimals=0)} - {money(hi, decimals=0)} ({nodes} new node{'s' if nodes != '1' else ''})"
    uo, up = rg.get("unserved_optimistic"), rg.get("unserved_pessimistic")
    # An end that cannot serve some of the row's work bills less for it (both ends below the row's bill for serving
    # less read as a cheaper purchase): how many it leaves out and what they cost in the row, where priced.
    if "dropped_optimistic" in rg:
        fewer = [(end, n, money(rg[f"dropped_{end}_usd"], decimals=0)) for end in ("optimistic", "pessimistic")
                 if (n := int(rg[f"dropped_{end}"]))]
        if fewer:
            (end, n, usd), *rest = fewer
            words += f"; the {end} end serves {n} fewer ({usd} of this row's bill)"
            words += "".join(f", the {e} {k} ({u})" for e, k, u in rest)
    elif uo != up or (unserved is not None and uo != unserved):
        words += f"; unserved {uo} at the optimistic end, {up} at the pessimistic"
        words += f" ({unserved} in this row)" if unserved is not None else ""
    # (What an end could serve beyond the row's work is in the JSON, *_with_added, and for the chosen mix in the
    # Overview's range line: a table cell stays short, the one-pager prints on two pages.)
    return {"total_usd_optimistic": lo, "total_usd_pessimistic": hi, "estimate_range": words}
