"""Decision engine: scores every workload against every route, picks verdicts, sizes the fleet.

Vectorised over workloads: each route is evaluated for the whole inventory at
once as (workloads x concurrency) arrays; nothing loops over workloads in
Python. Text (reasons, why-not) is produced only when asked for.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np
import pandas as pd

from core.catalog import Catalog
from core.decision import fleet as planning
from core.decision import latency
from core.decision import settings as settings_mod
from core.decision.economics import (
    DAYS_PER_MONTH,
    HOURS_PER_MONTH,
    NodeRate,
    api_usd_per_request,
    node_rate,
)
from core.decision.queueing import replicas_for_sla
from core.decision.records import (
    Answers,
    Deployment,
    FleetPlan,
)
from core.decision.sizing import shared_sizings, shared_store
from core.errors import InputError
from core.format import integer
from core.models import (
    DEFAULT_MIN_QUALITY,
    TASK_CLASSES,
    ApiPrice,
    Architecture,
    Scenario,
    ServingStack,
    Weights,
)
from core.performance import physics

# Concurrency grid per replica (continuous batching slots).
CONCURRENCY_GRID = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512], dtype=float)
TP_OPTIONS = (1, 2, 4, 8)
API_P95_OVER_TYPICAL = 1.3  # estimate: public APIs' p95 over their typical latency
PARALLEL_ROWS = 20_000  # below this, threads cost more than they save

# Why a route cannot serve a workload (codes in the (W, R) `code` array).
OK, DATA_POLICY, LATENCY, QUALITY, WINDOW, NO_FIT, NO_TRAFFIC = 0, 1, 2, 3, 4, 5, 6
CODE_NAMES = {OK: "feasible", DATA_POLICY: "data_policy", LATENCY: "latency", QUALITY: "quality",
              WINDOW: "batch_window", NO_FIT: "does_not_fit", NO_TRAFFIC: "no_traffic"}

# Evaluation.a once evaluate() returns: (workloads, routes) arrays, except fallback_route (one per workload).
# A shared evaluation holds them for as long as it is cached (issue 16: bounded memory), so only what is read
# after the plan is kept. Money, latencies and shares stay float64 (attributed costs reconcile to the cent;
# the JSON contract carries every digit); SMALL_WHOLE arrays hold only small whole numbers or NaN, exact in
# float32. DERIVED figures are computed where read (Evaluation.values): quality from each route's table by
# task class, usd_per_mtok_out from usd_per_request; the share of outputs a route would escalate is worded
# from quality and fallback_route (Evaluation.needed_fallback).
ROUTE_ARRAYS = ("usd_per_request", "monthly_usd", "p95_ms", "concurrency", "gpus_per_replica", "replicas", "nodes",
                "gpu_hours_per_day", "best_p95_ms", "best_gpus", "code", "fallback_share", "fallback_route",
                "feasible")
DERIVED = ("quality", "usd_per_mtok_out")
SMALL_WHOLE = {"concurrency": np.float32, "gpus_per_replica": np.float32, "best_gpus": np.float32}
# Read by the plan search only (base_usd_per_request), or written by the plan and read by nothing
# (service_s, wait_budget_s, and usd_per_mtok_out, which Evaluation.values derives the same way).
PLAN_ONLY = ("base_usd_per_request", "service_s", "wait_budget_s", "usd_per_mtok_out")

@dataclass(frozen=True)
class Route:
    """One place a workload can run."""

    route_id: str
    label: str
    hosting: str  # "owned" | "api"
    architecture: str
    stack: ServingStack | None = None
    api: ApiPrice | None = None

    def quality(self, task_class: str) -> float:
        """Quality of this route on a task class (0-1; an estimate, see the seed data)."""
        src = self.stack if self.stack is not None else self.api
        if src is None:
            raise ValueError(f"route {self.route_id} has neither a serving stack nor an API price")
        return src.quality_for(task_class)

    @property
    def owned_stack(self) -> ServingStack:
        """The serving stack of an owned route; a ValueError naming the route where there is none."""
        if self.stack is None:
            raise ValueError(f"owned route {self.route_id} has no serving stack")
        return self.stack


@dataclass(frozen=True)
class Evaluation:
    """Everything the engine decided, as arrays over (workloads, routes) plus the fleet record; built once.

    Frozen: nothing rebinds a field after `evaluate` returns. What is read from a finished evaluation on request
    (the verdict ranges, the fleet options) is kept in `answers`, one lock per answer, never written into it;
    `with_source` gives a copy naming the inventory it read. Memoised views of its own arrays (quality table,
    the last row's record) are derived values kept in its __dict__.

    Its words are functions of it in core/decision/explain.py (why-not, reasons), its tables and JSON contract
    in core/decision/contract.py, its verdict ranges in core/decision/sensitivity.py (`ranges(ev)`).
    """

    scenario: Scenario
    rate: NodeRate
    gpu_name: str
    workloads: pd.DataFrame
    routes: list[Route]
    a: dict[str, np.ndarray]  # (W, R) arrays: ROUTE_ARRAYS
    verdict: np.ndarray  # (W,) route index or -1
    value_usd_per_mtok: np.ndarray  # (W,) price of the cheapest API meeting the floor
    fleet: FleetPlan
    catalog: Catalog = field(repr=False)
    efficiency_labels: dict = field(default_factory=dict)
    plan: Any = field(default=None, repr=False)  # plan.PlanCost: the chosen assignment, priced exactly
    plan_inputs: Any = field(default=None, repr=False)  # plan.PlanInputs: what the search read
    planner: Any = field(default=None, repr=False)  # plan.Planner: prices other assignments (options, drivers)
    answers: Answers = field(default_factory=Answers, repr=False, compare=False)  # ranges, options: once, locked

    def with_source(self, inventory: str, measured: Any = None) -> Evaluation:
        """A copy naming the inventory it read (and the telemetry measured beside it); arrays, plan and answers
        are shared with this one, not copied."""
        from core.decision.records import Source

        return replace(self, fleet=replace(self.fleet, source=Source(inventory, measured)))

    @property
    def slo_ms(self) -> np.ndarray:
        """Each workload's p95 target as the plan holds it (latency_targets_ms; NaN for batch work)."""
        t = self.__dict__.get("_slo_ms")
        if t is None:
            t = latency_targets_ms(self.workloads, self.scenario)
            self.__dict__["_slo_ms"] = t
        return t

    # -- the arrays ------------------------------------------------------
    def values(self, name: str, rows, cols) -> np.ndarray:
        """`a[name][rows, cols]` as float64, or a DERIVED figure computed for those cells only: quality from
        the routes' tables by task class (what the engine scored with), usd_per_mtok_out from usd_per_request
        the way the plan prices it ($ per request / output tokens x 1e6)."""
        if name == "quality":
            codes, table = self._quality_table()
            return table[codes[rows], cols]
        if name == "usd_per_mtok_out":
            n_out = self.workloads["output_tokens"].to_numpy(dtype=float)[rows]
            with np.errstate(divide="ignore", invalid="ignore"):
                return self.a["usd_per_request"][rows, cols] / n_out * 1e6
        return np.asarray(self.a[name][rows, cols], dtype=float)

    def _quality_table(self) -> tuple[np.ndarray, np.ndarray]:
        """(each workload's task-class code, quality of every route on every task class): a few numbers per
        route instead of a (W, R) array."""
        qt = self.__dict__.get("_quality")
        if qt is None:
            codes = pd.Categorical(self.workloads["task_class"], categories=list(TASK_CLASSES)).codes
            table = np.array([[route.quality(t) for route in self.routes] for t in TASK_CLASSES],
                             dtype=float).reshape(len(TASK_CLASSES), len(self.routes))
            qt = (codes, table)
            self.__dict__["_quality"] = qt
        return qt

    def needed_fallback(self, i: int, r: int) -> float:
        """Share of workload i's outputs route r would escalate to reach its quality floor (0 when it meets the
        floor, inf when no route the plan may use meets it), as the engine's quality fallback computed it."""
        q = self.values("quality", i, r)
        floor = self.workloads["min_quality"].to_numpy(dtype=float)[i]
        if q >= floor - 1e-12:
            return 0.0
        fb = int(self.a["fallback_route"][i])
        if fb < 0:
            return float("inf")
        with np.errstate(divide="ignore", invalid="ignore"):
            return float((floor - q) / (self.values("quality", i, fb) - q))

    # -- one workload -----------------------------------------------------
    def record(self, i: int) -> dict:
        """Workload i as a plain dict, the values `workloads.to_dict("records")[i]` holds.

        Read from the columns' arrays (iloc per sentence is slow at scale) and kept for the last row asked
        (a sentence and its 22 why-nots read one row): a dict for every row was 90 MiB per 100,000 workloads,
        held by the shared evaluation once one workload's reasons were shown.
        """
        last = self.__dict__.get("_last_record")  # (i, record): one tuple, so threads sharing it read a pair
        if last is not None and last[0] == i:
            return last[1]
        cols = self.__dict__.get("_columns")
        if cols is None:
            cols = {c: self.workloads[c].array for c in self.workloads.columns}  # views, not copies
            self.__dict__["_columns"] = cols
        rec = {c: _native(arr[i]) for c, arr in cols.items()}
        self.__dict__["_last_record"] = (i, rec)
        return rec

    def deployment(self, i: int) -> Deployment | None:
        """The plan's deployment workload i runs on (primary member), if it runs on an owned route."""
        by_id = self.__dict__.get("_deployment_by_id")
        if by_id is None:
            by_id = {wid: d for d in self.fleet.deployments for wid in d.workloads}
            self.__dict__["_deployment_by_id"] = by_id
        return by_id.get(str(self.record(i)["workload_id"]))


def _native(x):
    """A numpy scalar as the Python value to_dict("records") gives (float, int, bool); anything else as is."""
    return x.item() if isinstance(x, np.generic) else x






# ---------------------------------------------------------------------------
# evaluation
# ---------------------------------------------------------------------------

def latency_targets_ms(workloads: pd.DataFrame, scenario: Scenario) -> np.ndarray:
    """Each workload's p95 target in ms as planned: its latency_slo_ms x the scenario's SLA scale (NaN: batch
    work). The one place the scale is applied; the plan, the routing table and the words read this."""
    return workloads["latency_slo_ms"].to_numpy(dtype=float) * scenario.sla_scale


def build_routes(catalog: Catalog) -> list[Route]:
    """Owned stacks first, then APIs (stable order = stable route indices)."""
    routes = [Route(f"owned:{s.stack_id}", s.name, "owned", s.architecture.value, stack=s) for s in catalog.stacks
              if s.weights is not Weights.API_ONLY]
    routes += [Route(a.route_id, f"{a.provider} {a.model} (API)", "api", a.architecture.value, api=a) for a in catalog.apis]
    return routes


def prepare_workloads(df: pd.DataFrame) -> pd.DataFrame:
    """Apply defaults (quality floor per task class, cached share 0, peak factor 3) without touching the input."""
    if df is None or len(df) == 0:
        raise InputError("the inventory has no rows: upload or import at least one workload")
    w = df.reset_index(drop=True).copy()
    for col in ("latency_slo_ms", "batch_window_hours", "min_quality", "cached_input_share", "peak_factor",
                "output_tokens_p95"):
        if col not in w:
            w[col] = np.nan
        w[col] = pd.to_numeric(w[col], errors="coerce")
    w["peak_factor"] = w["peak_factor"].fillna(3.0)
    w["cached_input_share"] = w["cached_input_share"].fillna(0.0)
    defaults = w["task_class"].map(DEFAULT_MIN_QUALITY)
    w["min_quality"] = w["min_quality"].fillna(defaults)
    bad = ~w["task_class"].isin(TASK_CLASSES)
    if bad.any():
        raise InputError(f"unknown task_class {w.loc[bad, 'task_class'].iloc[0]!r} in workload "
                         f"{w.loc[bad, 'workload_id'].iloc[0]!r}; allowed: {', '.join(TASK_CLASSES)}")
    slo = w["latency_slo_ms"]
    if (slo.notna() & (slo <= 0)).any():
        raise InputError("latency_slo_ms must be greater than 0 ms")
    return w


# Largest inventory one fleet plan covers. Planning holds per-workload arrays for every plan column: measured
# (docs/performance.md "Plan size limit") a 100,000-workload plan peaks at 1.7 GB and takes ~25 s, 300,000 at
# 4.8 GB and 75 s, so 2,000,000 (the largest inventory an upload may hold) would need ~32 GB and the server
# would be killed for every session. At the default a session that plans stays under 2 GB (issue 16); a
# server with more memory raises it in the environment.
DEFAULT_MAX_PLAN_ROWS = settings_mod.DEFAULT.max_plan_rows
MAX_PLAN_ROWS_ENV = "HANGOVER_MAX_PLAN_ROWS"


def configured_max_plan_rows(environ: Mapping[str, str] | None = None) -> int:
    """HANGOVER_MAX_PLAN_ROWS when it is a whole number of at least 1 (commas or underscores allowed), else the
    default. Read at each plan, so a server's setting applies without a restart."""
    text = (os.environ if environ is None else environ).get(MAX_PLAN_ROWS_ENV, "")
    text = text.replace(",", "").replace("_", "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else settings_mod.PLAN.max_plan_rows


def check_plan_size(workloads: int) -> None:
    """Refuse, before anything is loaded or computed, an inventory larger than one plan may cover."""
    limit = configured_max_plan_rows()
    if workloads > limit:
        raise InputError(
            f"this inventory has {integer(workloads)} workloads; one fleet plan covers at most {integer(limit)} on "
            "this server "
            f"(planning needs about 17 KB of memory per workload: 100,000 took 1.7 GB and 25 s). Plan it in parts "
            f"(one inventory per team or business unit), or set {MAX_PLAN_ROWS_ENV} higher on a server with more "
            "memory.")


def evaluate(catalog: Catalog, workloads: pd.DataFrame, scenario: Scenario, *,
             break_even: bool | str = True) -> Evaluation:
    """Score every workload on every route, then plan the fleet (see docs/design/fleet_plan.md).

    The plan minimises the monthly cash bill, in which owned nodes are paid
    for whatever runs on them and a new node costs its full price; the cost
    basis changes only how that bill is attributed to workloads. break_even="later": the licensed stacks'
    break-even re-plan waits until asked whatever the size (fleet.plan_evaluation).
    """
    check_plan_size(len(workloads))
    w = prepare_workloads(workloads)
    catalog.gpu(scenario.gpu)  # an unknown GPU is named before any price is looked up
    rate = node_rate(scenario, list(catalog.node_prices), list(catalog.owned_hardware))
    store = kept_sizings(catalog, scenario, len(w))
    with shared_sizings(store) if store is not None else nullcontext():
        return _evaluate(catalog, w, scenario, rate, break_even=break_even)


# Scenario fields no pool sizing reads (what a replica costs, how many nodes are owned, how the bill is attributed):
# scenarios differing only in these share one kept store. The others are in the key of every sizing anyway
# (sizing.Sizer._shared_key); they separate stores so that each stays small.
_NOT_SIZED = {"fleet_nodes", "pricing_option", "cost_basis", "node_provider", "node_usd_per_hour", "owned_hardware",
              "api_price_scale", "near_tie_share", "buy_pricing"}


def kept_sizings(catalog: Catalog, scenario: Scenario, workloads: int) -> dict | None:
    """The store of pool sizings plans of this catalog and scenario share (Catalog.kept_sizings), up to
    settings.kept_sizings_rows workloads; None above, or inside a caller's own store (the smallest change's)."""
    cut = settings_mod.current()
    if shared_store() is not None or workloads > cut.kept_sizings_rows:
        return None
    # The search's settings too: a sizing reads none of them, but a bench that changes them compares plans
    # made from scratch.
    return catalog.kept_sizings(scenario.model_dump_json(exclude=_NOT_SIZED) + repr(cut))


@dataclass(frozen=True)
class _Columns:
    """The inventory's columns the scoring reads, as float arrays (one per workload)."""

    rpd: np.ndarray  # requests per day
    pf: np.ndarray  # peak factor
    n_in: np.ndarray
    n_out: np.ndarray
    out_p95: np.ndarray
    slo: np.ndarray  # p95 target as planned (latency_targets_ms), NaN for batch work
    window_h: np.ndarray
    interactive: np.ndarray
    owned_only: np.ndarray
    floor: np.ndarray  # quality floor
    cached: np.ndarray  # cached input share
    lam_peak: np.ndarray  # requests per second at the peak
    task_codes: np.ndarray

    @classmethod
    def of(cls, w: pd.DataFrame, scenario: Scenario) -> _Columns:
        rpd = w["requests_per_day"].to_numpy(dtype=float)
        pf = w["peak_factor"].to_numpy(dtype=float)
        slo = latency_targets_ms(w, scenario)
        return cls(rpd=rpd, pf=pf, n_in=w["input_tokens"].to_numpy(dtype=float),
                   n_out=w["output_tokens"].to_numpy(dtype=float),
                   out_p95=w["output_tokens_p95"].to_numpy(dtype=float), slo=slo,
                   window_h=w["batch_window_hours"].to_numpy(dtype=float), interactive=np.isfinite(slo),
                   owned_only=(w["data_policy"] == "owned_only").to_numpy(),
                   floor=w["min_quality"].to_numpy(dtype=float), cached=w["cached_input_share"].to_numpy(dtype=float),
                   lam_peak=rpd / 86400.0 * pf,
                   task_codes=pd.Categorical(w["task_class"], categories=list(TASK_CLASSES)).codes)


@dataclass(frozen=True)
class Scores:
    """Every workload scored on every route, before the plan: the (W, R) arrays (and the per-row fallback
    route), each row's token value and the calibration labels. Each row's scores read only that row, so the
    scores of a few rows scored alone can replace theirs (with_rows; tests/test_smallest.py checks it: equal
    but for numpy's last-bit rounding, which already differs with where a row sits in an inventory)."""

    routes: list[Route]
    a: dict[str, np.ndarray]
    value: np.ndarray
    eff_labels: dict[str, dict[int, str]]

    def with_rows(self, rows: np.ndarray, part: Scores) -> Scores:
        """A copy with `rows` holding part's scores (part scored on those rows alone, in that order)."""
        a = {k: np.array(v, order="F" if v.ndim == 2 else "C") for k, v in self.a.items()}
        for k, v in part.a.items():
            a[k][rows] = v
        value = self.value.copy()
        value[rows] = part.value
        return Scores(self.routes, a, value, {k: dict(v) for k, v in self.eff_labels.items()})


def score_routes(catalog: Catalog, w: pd.DataFrame, scenario: Scenario, rate: NodeRate) -> Scores:
    """Score every workload on every route (column by column) and fold in quality escalation: what the plan
    reads (_evaluate)."""
    gpu = catalog.gpu(scenario.gpu)
    gpn = scenario.gpus_per_node
    routes = build_routes(catalog)
    W, R = len(w), len(routes)
    c = _Columns.of(w, scenario)

    shape = (W, R)
    # Column-major: each route fills one column, which is then contiguous in memory. Small whole numbers
    # (grid concurrencies, GPUs per replica) are exact in float32, at half the memory (see ROUTE_ARRAYS).
    a = {k: np.full(shape, np.nan, dtype=SMALL_WHOLE.get(k, float), order="F") for k in (
        "usd_per_request", "monthly_usd", "p95_ms", "concurrency", "gpus_per_replica", "replicas", "nodes",
        "gpu_hours_per_day", "service_s", "wait_budget_s", "best_p95_ms", "best_gpus")}
    a["code"] = np.zeros(shape, dtype=np.int8, order="F")
    a["quality"] = np.zeros(shape, order="F")
    blend: dict[int, np.ndarray] = {}  # API route -> $ per million output tokens, input included (token value)
    eff_labels: dict[str, dict[int, str]] = {}  # stack id -> GPUs per replica -> calibration label

    def score(r: int, route: Route) -> None:
        """Fill column r of every array (columns are disjoint, so routes can run side by side)."""
        qtab = np.array([route.quality(t) for t in TASK_CLASSES])
        a["quality"][:, r] = qtab[c.task_codes]
        if route.hosting == "api":
            if route.api is None:
                raise ValueError(f"API route {route.route_id} has no API price")
            blend[r] = _score_api(a, r, route.api, w, c.n_in, c.n_out, c.cached, c.slo, c.interactive,
                                  c.owned_only, scenario)
            return
        _score_owned(a, r, route.owned_stack, c, catalog, gpu, scenario, rate.usd_per_gpu_hour, eff_labels)

    for route in routes:  # calibration first, in this thread: it is cached and not worth racing for
        if route.stack is not None:
            for g in TP_OPTIONS:
                if g <= gpn:
                    catalog.efficiency(route.stack, gpu, g)
    if W >= PARALLEL_ROWS:
        # numpy releases the GIL on large arrays: two threads use both cores of a small machine.
        with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
            list(pool.map(lambda rr: score(*rr), enumerate(routes)))
    else:
        for r, route in enumerate(routes):
            score(r, route)
    _price_and_escalate(a, routes, c, scenario)
    value = _token_value(a, blend, c)
    blend.clear()  # not held through the plan search
    for k in DERIVED:  # the plan reads none of them; Evaluation.values derives them
        a.pop(k, None)
    return Scores(routes, a, value, eff_labels)


def _evaluate(catalog: Catalog, w: pd.DataFrame, scenario: Scenario, rate: NodeRate, *,
              break_even: bool | str = True, checked: bool = True,
              start_keys: list | None = None, candidates: bool = False, faster_restart: bool = True,
              polish: bool = True, hold: np.ndarray | None = None,
              other_starts: tuple = (), scores: Scores | None = None) -> Evaluation:
    """Score every workload on every route (column by column), fold in quality escalation, then plan
    (start_keys, candidates, other_starts: a search from those plans, fleet.plan_evaluation; faster_restart
    False: without the restart from the plan at the fast end of the efficiency ranges, the search that makes
    that plan; polish False: without large inventories' last descent with pool merges; hold: rows kept without a
    route, fleet.plan_evaluation). Where that restart ran, its plan's start keys are kept as the answer "faster_start_keys": the
    ranges' optimistic end starts from it (sensitivity.end_evaluations). scores: score_routes of these very
    inputs, made beforehand (the smallest change splices a changed row's into the base's); consumed here."""
    gpu = catalog.gpu(scenario.gpu)
    W = len(w)
    c = _Columns.of(w, scenario)
    if scores is None:
        scores = score_routes(catalog, w, scenario, rate)
    routes, a, value, eff_labels = scores.routes, scores.a, scores.value, scores.eff_labels

    # The scores the plan reads; the evaluation is built once the plan has decided (fleet: set just below).
    scored = Evaluation(scenario=scenario, rate=rate, gpu_name=gpu.name, workloads=w, routes=routes, a=a,
                        verdict=np.full(W, -1), value_usd_per_mtok=value, fleet=cast(FleetPlan, None),
                        catalog=catalog, efficiency_labels=eff_labels)
    cut = settings_mod.current()
    faster = None
    made: dict[str, Any] = {}
    if faster_restart and start_keys is None and cut.faster_restart \
            and cut.multi_start_rows < W <= cut.dearer_api_rows:
        def faster() -> list:
            """The plan of these workloads with every owned route at the fast end of its range (a whole search),
            as a start for this plan's (fleet.plan_evaluation restart_from)."""
            fast = catalog.at_efficiency_end("high", peer_ranges=bool(getattr(scenario, "peer_ranges", False)))
            # Its pools' sizings are kept for the ranges' optimistic end, a search of the same inputs from this
            # plan (sensitivity.end_evaluations): its first pass of moves is the one this search ended with.
            outer = shared_store()  # a store of the caller's (the smallest change's re-plans), else its own
            sizings = outer if outer is not None else {}
            with shared_sizings(sizings):
                ev = _evaluate(fast, w, scenario, rate, break_even=False, checked=False, faster_restart=False,
                               polish=False)
            made["keys"] = planning.plan_start_keys(ev.plan_inputs, ev.plan.assignment)
            made["sizings"] = sizings
            return made["keys"]
    planned = planning.plan_evaluation(scored, gpu, c.lam_peak, c.rpd, c.n_in, c.n_out, c.slo, c.interactive, c.pf,
                                       grid=CONCURRENCY_GRID, tp_options=TP_OPTIONS, break_even=break_even,
                                       checked=checked, start_keys=start_keys,
                                       candidates=candidates, restart_from=faster, other_starts=other_starts,
                                       polish=polish, hold=hold)
    answers = Answers({"licensed_routes": planned.licensed_job} if planned.licensed_job is not None else None)
    if planned.held_servable is not None:
        answers.get("held_servable", lambda: planned.held_servable)
    if "keys" in made:
        answers.get("faster_start_keys", lambda: made["keys"])
        if cut.ranges_max_workloads >= W:  # the ranges are planned automatically and take it; above, not kept
            answers.get("faster_sizings", lambda: made["sizings"])
    ev = replace(scored, verdict=planned.verdict, fleet=planned.fleet, plan=planned.plan,
                 plan_inputs=planned.plan_inputs, planner=planned.planner, answers=answers)
    # What only the plan read, and what the plan wrote that nothing reads: held by a shared evaluation for as
    # long as it is cached, so dropped here (ROUTE_ARRAYS lists what stays).
    for k in PLAN_ONLY:
        a.pop(k, None)
    return ev


def _score_owned(a: dict[str, np.ndarray], r: int, stack: ServingStack, c: _Columns, catalog: Catalog, gpu,
                 scenario: Scenario, gpu_rate: float, eff_labels: dict[str, dict[int, str]]) -> None:
    """Fill owned route r's column: per workload, the GPUs-per-replica option needing the fewest GPU-hours."""
    W, gpn = len(c.rpd), scenario.gpus_per_node
    # Rows this route cannot serve even escalating the maximum share to a perfect route
    # (q (1 - s) < Q - s) are out for quality: skip their physics.
    s_max = scenario.max_fallback_share
    hopeless = a["quality"][:, r] * (1.0 - s_max) < c.floor - s_max - 1e-12
    best = None  # per workload: the GPUs-per-replica option needing the fewest GPU-hours
    for g in TP_OPTIONS:
        if g > gpn or physics.max_concurrency(stack, gpu, g, 1024.0) < 1:
            continue
        eff, label = catalog.efficiency(stack, gpu, g)
        eff_labels.setdefault(stack.stack_id, {})[g] = label
        rows = ~hopeless
        if best is not None:
            # An interactive workload already served by one replica of fewer GPUs cannot do better here.
            rows &= ~c.interactive | (best["_score"] > g * 24.0)
        cand = _owned_subset(np.flatnonzero(rows), W, stack, gpu, g, eff, c.n_in, c.n_out, c.out_p95, c.slo,
                             c.window_h, c.interactive, c.rpd, c.lam_peak, 1.0 - scenario.sla_percentile)
        best = cand if best is None else _better(best, cand)
    if best is None:
        a["code"][:, r] = NO_FIT
        return
    best["code"] = np.where(hopeless, QUALITY, best["code"]).astype(np.int8)
    for k in ("p95_ms", "concurrency", "gpus_per_replica", "replicas", "gpu_hours_per_day", "service_s",
              "wait_budget_s", "best_p95_ms", "best_gpus"):
        a[k][:, r] = best[k]
    gpus_total = best["replicas"] * best["gpus_per_replica"]
    monthly = np.where(c.interactive, gpus_total * gpu_rate * HOURS_PER_MONTH,
                       best["gpu_hours_per_day"] * gpu_rate * DAYS_PER_MONTH)
    a["monthly_usd"][:, r] = monthly
    a["nodes"][:, r] = np.ceil(np.where(c.interactive, gpus_total, best["offline_gpus"]) / gpn)
    a["code"][:, r] = best["code"]


def _price_and_escalate(a: dict[str, np.ndarray], routes: list[Route], c: _Columns, scenario: Scenario) -> None:
    """Cost per request of every cell, then the quality escalation folded in (its cost, and the codes it
    refuses); `feasible` and the monthly $ at the end."""
    rpd = c.rpd
    per_month_requests = rpd * DAYS_PER_MONTH
    owned_cols = np.array([rt.hosting == "owned" for rt in routes])
    # In place: a (W, R) temporary here stayed alive through the whole plan search.
    with np.errstate(divide="ignore", invalid="ignore"):
        a["usd_per_request"][:, owned_cols] = a["monthly_usd"][:, owned_cols] / per_month_requests[:, None]
    a["usd_per_request"][~(rpd > 0), :] = 0.0

    a["base_usd_per_request"] = a["usd_per_request"].copy()  # before escalation costs are folded in
    # Escalation goes only where the plan may send work (not to licensed weights with no fee entered).
    _apply_quality(a, c.floor, c.owned_only, c.interactive, c.slo, scenario,
                   np.array([planning.route_permitted(rt) for rt in routes], dtype=bool))
    a["feasible"] = a["code"] == OK
    a["monthly_usd"] = np.where(owned_cols[None, :] & (a["fallback_share"] == 0), a["monthly_usd"],
                                a["usd_per_request"] * per_month_requests[:, None])


def _token_value(a: dict[str, np.ndarray], blend: dict[int, np.ndarray], c: _Columns) -> np.ndarray:
    """Token value: the cheapest API meeting the quality floor and the latency target (data policy aside),
    one API column at a time (a min over columns is exact in any order; NaN propagates as in a row min)."""
    value = np.full(len(c.rpd), np.inf if blend else np.nan)
    for r, usd_per_mtok in blend.items():
        ok = (a["quality"][:, r] >= c.floor - 1e-12) & (~c.interactive | (a["best_p95_ms"][:, r] <= c.slo))
        value = np.minimum(value, np.where(ok, usd_per_mtok, np.inf))
    return np.where(np.isfinite(value), value, np.nan)


def _score_api(a, r, api: ApiPrice, w, n_in, n_out, cached, slo, interactive, owned_only, scenario) -> np.ndarray:
    """Fill API route r's column; return its $ per million output tokens, input included (the token value)."""
    per_req = api_usd_per_request(api, n_in, n_out, cached, scale=scenario.api_price_scale)
    a["usd_per_request"][:, r] = per_req
    # Hidden thinking tokens are generated (and billed) before the visible answer.
    p95 = (api.ttft_ms + n_out * (1.0 + api.hidden_tokens_per_output_token) / api.output_tokens_per_s * 1e3
           ) * API_P95_OVER_TYPICAL
    a["p95_ms"][:, r] = p95
    a["best_p95_ms"][:, r] = p95
    a["concurrency"][:, r] = 1.0
    a["monthly_usd"][:, r] = per_req * w["requests_per_day"].to_numpy(dtype=float) * DAYS_PER_MONTH
    code = np.where(owned_only, DATA_POLICY, np.where(interactive & (p95 > slo), LATENCY, OK))
    a["code"][:, r] = code
    return per_req / n_out * 1e6


_DEFAULTS = {"code": NO_FIT, "best_p95_ms": np.inf, "_score": np.inf}


def _owned_subset(sub, W, stack, gpu, g, eff, n_in, n_out, out_p95, slo, window_h, interactive, rpd,
                  lam_peak, tail=latency.SLO_TAIL) -> dict:
    """_owned_option on the rows `sub` only, scattered back to W rows (others: does not fit, infinitely slow)."""
    res = _owned_option(stack, gpu, g, eff, n_in[sub], n_out[sub], out_p95[sub], slo[sub], window_h[sub],
                        interactive[sub], rpd[sub], lam_peak[sub], tail)
    if len(sub) == W:  # every row evaluated: nothing to scatter
        return res
    out = {}
    for k, v in res.items():
        full = np.full(W, _DEFAULTS.get(k, np.nan), dtype=np.int8 if k == "code" else float)
        full[sub] = v
        out[k] = full
    return out


def _owned_option(stack, gpu, g, eff, n_in, n_out, out_p95, slo, window_h, interactive, rpd, lam_peak,
                  tail=latency.SLO_TAIL) -> dict:
    """Operating point and replicas of one (stack, GPUs per replica) option, for every workload.

    Latency grows with concurrency and total throughput never falls with it
    (b / (a + c b) is increasing), so: interactive work finds b*, the largest
    grid concurrency whose p95 meets the SLA, by bisection; offline work runs
    at the largest concurrency that fits in memory. Each evaluation touches
    only the rows still undecided (vectors, never a Python loop over rows).

    Service time is the latency model's (core.decision.latency, one distribution
    everywhere): the physics' mean timeline at batch b, with the b prefills it
    charges (its own and the others') fixed and the decode part scaled by the
    workload's output length (lognormal from output_tokens_p95 or the default
    spread; whole blocks for diffusion): p95 = fixed + decode x q_ratio, and the
    queue's wait scale (queueing.wait_scale) reads the same distribution's cv^2.
    """
    W = len(n_in)
    grid = CONCURRENCY_GRID
    q_ratio, e_ratio, v_ratio = latency.length_ratios(n_out, out_p95, latency.block_tokens_of(stack), 1.0 - tail)
    pre = physics.prefill_ms(stack, gpu, g, n_in, eff)
    maxc = physics.max_concurrency(stack, gpu, g, n_in + n_out, eff)
    jmax = np.searchsorted(grid, maxc, side="right") - 1  # -1: not even one sequence fits

    def lat(rows, j):
        """Mean end-to-end ms for `rows` at grid index j (array or scalar), at the mean output length."""
        return physics.e2e_ms(stack, gpu, g, grid[j], n_in[rows], n_out[rows], eff, prefill=pre[rows])

    def service(rows, j, e2e):
        """(p95, mean, cv^2) of the service time of `rows` at grid index j, from the physics mean e2e (ms)."""
        fixed = grid[j] * pre[rows]
        decode = np.maximum(e2e - fixed, 0.0)
        mean = fixed + decode * e_ratio[rows]
        return fixed + decode * q_ratio[rows], mean, decode**2 * v_ratio[rows] / mean**2

    def p95(rows, j):
        return service(rows, j, lat(rows, j))[0]

    fits = jmax >= 0
    alone = np.full(W, np.inf)
    sel = np.flatnonzero(fits)
    alone[sel] = p95(sel, 0)  # p95 alone on a replica: the floor of latency

    # Interactive: bisection for b* over grid indices [0, jmax].
    live = interactive & fits & (alone <= slo)
    lo = np.where(live, 0, -1)  # largest index known to meet the SLA
    hi = np.where(live, jmax, -1)  # largest index that might
    for _ in range(len(grid)):
        sel = np.flatnonzero(hi > lo)
        if sel.size == 0:
            break
        mid = (lo[sel] + hi[sel] + 1) // 2
        good = p95(sel, mid) <= slo[sel]
        lo[sel[good]] = mid[good]
        hi[sel[~good]] = mid[~good] - 1

    reps, pick, p95_at, svc_at = _queue_replicas(live, lo, lam_peak, slo, grid, lat, service, tail)
    inter_ok = live & np.isfinite(reps)

    off_e2e, off_p95, b_off, gpu_hours, reps_off, off_ok = _offline_option(~interactive & fits, jmax, window_h, rpd,
                                                                           g, grid, lat, service)

    code = np.where(~fits, NO_FIT, np.where(interactive, np.where(inter_ok, OK, LATENCY),
                                             np.where(off_ok, OK, WINDOW))).astype(np.int8)
    return {
        "code": code,
        "p95_ms": np.where(interactive, p95_at, off_p95),
        "concurrency": np.where(interactive, grid[np.maximum(pick, 0)], b_off),
        "gpus_per_replica": np.full(W, float(g)),
        "replicas": np.where(interactive, np.where(inter_ok, reps, np.nan), reps_off),
        "gpu_hours_per_day": np.where(interactive, np.nan, gpu_hours),
        "offline_gpus": np.where(interactive, 0.0, reps_off * g),
        "service_s": np.where(interactive, svc_at, off_e2e / 1e3),
        "wait_budget_s": np.where(interactive, (slo - p95_at) / 1e3, np.nan),
        "best_p95_ms": alone,
        "best_gpus": np.full(W, float(g)),
        # GPUs held around the clock (interactive) or GPU-hours used (offline): the smaller option wins.
        "_score": np.where(code == OK, np.where(interactive, reps * g * 24.0, gpu_hours), np.inf),
    }


def _offline_option(offline, jmax, window_h, rpd, g, grid, lat, service):
    """Offline work at the largest concurrency that fits (the most requests per second): (mean e2e ms, p95 ms,
    concurrency, GPU-hours a day, replicas to finish inside the window, whether it does) per workload."""
    W = len(offline)
    off = np.flatnonzero(offline)
    off_e2e = np.full(W, np.nan)
    off_p95 = np.full(W, np.nan)
    if off.size:
        off_e2e[off] = lat(off, jmax[off])
        off_p95[off] = service(off, jmax[off], off_e2e[off])[0]
    b_off = grid[np.maximum(jmax, 0)]
    win = np.where(np.isfinite(window_h), window_h, 24.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rps_off = b_off / off_e2e * 1e3
        gpu_hours = rpd / rps_off / 3600.0 * g
        # A window over a day spreads the queue over every day in it: per day, win/24 days of work.
        reps_off = np.ceil(rpd * np.maximum(win, 24.0) / 24.0 / (rps_off * win * 3600.0))
    return off_e2e, off_p95, b_off, gpu_hours, reps_off, offline & (off_p95 <= win * 3.6e6)


def _queue_replicas(live, lo, lam_peak, slo, grid, lat, service, tail):
    """Replicas for each live interactive workload on its queue: try b* (grid index `lo`), then smaller
    concurrencies, while they could still need fewer replicas. (replicas, grid index, p95 of service, mean
    service in s) per workload; inf / -1 / NaN where none holds the target."""
    W = len(live)
    reps = np.full(W, np.inf)
    pick = np.full(W, -1)
    p95_at = np.full(W, np.nan)
    svc_at = np.full(W, np.nan)
    for back in range(len(grid)):
        j = lo - back
        floor_reps = np.full(W, np.inf)
        cand = np.flatnonzero(live & (j >= 0))
        if cand.size == 0:
            break
        s95, mean, cv2 = service(cand, j[cand], lat(cand, j[cand]))
        mean = mean / 1e3
        slots = grid[j[cand]]
        floor_reps[cand] = np.maximum(np.floor(lam_peak[cand] * mean / slots) + 1.0, 1.0)
        keep = floor_reps[cand] < reps[cand]
        cand, mean, slots, s95, cv2 = cand[keep], mean[keep], slots[keep], s95[keep], cv2[keep]
        if cand.size == 0:
            break
        n = replicas_for_sla(lam_peak[cand], mean, slots, (slo[cand] - s95) / 1e3, tail=tail,
                             service_cv2=cv2).astype(float)
        n = np.where(n < 0, np.inf, np.maximum(n, 1.0))  # a live service keeps at least one replica
        better = n < reps[cand]
        rows = cand[better]
        reps[rows], pick[rows] = n[better], j[rows]
        p95_at[rows], svc_at[rows] = s95[better], mean[better]
    return reps, pick, p95_at, svc_at


def _better(prev: dict, cand: dict) -> dict:
    """Per workload, keep the option with fewer GPU-hours; failing both, the faster one (for why-not)."""
    take = cand["_score"] < prev["_score"]
    both_fail = ~np.isfinite(cand["_score"]) & ~np.isfinite(prev["_score"])
    faster = both_fail & (cand["best_p95_ms"] < prev["best_p95_ms"])
    take = take | faster
    out = {}
    for k in prev:
        if k == "g":
            continue
        out[k] = np.where(take, cand[k], prev[k])
    # A route is no-fit only if no option fits; otherwise the better code wins.
    out["code"] = np.where(take, cand["code"], prev["code"]).astype(np.int8)
    fit_any = (prev["code"] != NO_FIT) | (cand["code"] != NO_FIT)
    out["code"] = np.where(fit_any & (out["code"] == NO_FIT), LATENCY, out["code"]).astype(np.int8)
    return out


def _apply_quality(a, floor, owned_only, interactive, slo, scenario, permitted):
    """Quality fallback: f = (Q - q) / (q_fb - q) of outputs escalated to the route meeting the floor that makes
    escalating cheapest.

    Per workload, the fallback is the route meeting the floor that minimises the cheapest escalating route's cost
    per request, c_r + f_r c_fb, over the pairs (r, fb) within the share cap and, where the escalated share reaches
    the latency tail, within the target. A better fallback escalates a smaller share, so the cheapest route per
    request is not always the cheapest to escalate to; and a minimum over pairs can only rise when a tighter
    target or policy removes routes (the bill is monotone in them). Workloads with no escalating pair keep the
    cheapest route meeting the floor (it is shown, and used by no route).
    """
    W, R = a["code"].shape
    q = a["quality"]
    meets = q >= floor[:, None] - 1e-12
    pure_ok = (a["code"] == OK) & meets & permitted[None, :]
    fb_cost = np.where(pure_ok, a["usd_per_request"], np.inf)
    fb = np.argmin(fb_cost, axis=1)
    rows = np.arange(W)
    _cheapest_escalation(a, fb, pure_ok, ~meets & (a["code"] == OK), floor, interactive, slo, scenario)
    has_fb = np.isfinite(fb_cost[rows, fb])
    q_fb = np.where(has_fb, q[rows, fb], np.nan)
    c_fb = np.where(has_fb, a["usd_per_request"][rows, fb], np.nan)
    l_fb = np.where(has_fb, a["p95_ms"][rows, fb], np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = (floor[:, None] - q) / (q_fb[:, None] - q)
    f = np.where(meets, 0.0, np.where(has_fb[:, None], f, np.inf))  # Evaluation.needed_fallback words one cell
    needs = ~meets & (a["code"] == OK)
    too_much = needs & (f > scenario.max_fallback_share)
    a["code"] = np.where(too_much, QUALITY, a["code"]).astype(np.int8)
    use = needs & ~too_much
    a["usd_per_request"] = np.where(use, a["usd_per_request"] + f * c_fb[:, None], a["usd_per_request"])
    in_tail = use & (f > 1.0 - scenario.sla_percentile)
    a["p95_ms"] = np.where(in_tail, a["p95_ms"] + l_fb[:, None], a["p95_ms"])
    late = in_tail & interactive[:, None] & (a["p95_ms"] > slo[:, None])
    a["code"] = np.where(late, LATENCY, a["code"]).astype(np.int8)
    a["fallback_share"] = np.where(use, f, 0.0)
    a["fallback_route"] = np.where(has_fb, fb, -1)


def _cheapest_escalation(a, fb, pure_ok, needs, floor, interactive, slo, scenario) -> None:
    """Set fb (in place) to the fallback that makes each workload's cheapest escalating route cheapest."""
    cand_rows = np.flatnonzero(needs.any(axis=1) & pure_ok.any(axis=1))
    if cand_rows.size == 0:
        return
    q = a["quality"][cand_rows]
    usd = a["usd_per_request"][cand_rows]
    p95 = a["p95_ms"][cand_rows]
    nd = needs[cand_rows]
    fl, inter, s = floor[cand_rows], interactive[cand_rows], slo[cand_rows]
    best = np.full(cand_rows.size, np.inf)
    best_fb = fb[cand_rows].copy()
    # Ties go to the cheaper fallback per request (then the lower column): visit them in that order.
    order_cost = np.where(pure_ok[cand_rows], usd, np.inf)
    for j in np.flatnonzero(pure_ok[cand_rows].any(axis=0)):
        ok_j = pure_ok[cand_rows, j]
        with np.errstate(divide="ignore", invalid="ignore"):
            f = (fl[:, None] - q) / (q[:, j][:, None] - q)
            valid = nd & ok_j[:, None] & (f > 0) & (f <= scenario.max_fallback_share)
            in_tail = f > 1.0 - scenario.sla_percentile
            late = in_tail & inter[:, None] & (p95 + p95[:, j][:, None] > s[:, None])
            cost = np.where(valid & ~late, usd + f * usd[:, j][:, None], np.inf).min(axis=1)
        tie = np.isclose(cost, best, rtol=1e-12, atol=0.0) & np.isfinite(cost)
        cheaper_fb = order_cost[:, j] < order_cost[np.arange(cand_rows.size), best_fb]
        take = (cost < best) & ~tie | tie & cheaper_fb
        best = np.where(take, cost, best)
        best_fb = np.where(take, j, best_fb)
    fb[cand_rows] = np.where(np.isfinite(best), best_fb, fb[cand_rows])


# Architectures a stack can have, for grouping in the UI.
ARCHITECTURES = tuple(a.value for a in Architecture)
