"""Verdict sensitivity (issue 13): does each workload's verdict hold across the performance ranges, or flip inside them?

Method. Every owned route's speed is an estimate with a range
(`Catalog.efficiency_bounds`: low = the slower end, high = the faster end, and
the assumption that drives the range). The engine is run twice more, once with
every owned route at its low efficiency and once with every owned route at its
high efficiency (`Catalog.at_efficiency_end`), on the same workloads, scenario
and node price; a workload whose verdict route differs between the three runs is
*sensitive*. Moving every route to the same end at once is the practical
reading of "the model is optimistic / pessimistic across the board"; it does
not explore one route slow while another is fast, so a verdict decided between
two owned routes may flip under a mix of ends that this does not show. The
plan pools workloads on shared nodes, so a verdict can also move because
another one did (a workload left without a route frees capacity already paid
for, which a neighbour then fills); the driver then names the route it moves to.

Cost. The two extra runs are two more plans (without the licensed stacks'
break-even re-plan, which they do not show), so ranges are computed
automatically only for inventories of at most SearchSettings.ranges_max_workloads workloads
(when the verdicts, reasons or exports are first read); above that, only on
demand (`ranges(ev, force=True)`, `hangover evaluate --ranges`). The answer is kept in the evaluation's
`answers` under a lock: two sessions asking at once plan the ends once and read the same record. Where a fork
is safe (the CLI's main thread) the two ends run side by side, one per core.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from core import background
from core.decision import settings as settings_mod
from core.decision.engine import _evaluate
from core.decision.records import PerformanceRange, VerdictRanges
from core.decision.sizing import shared_sizings

# Above this many workloads ranges are computed only when asked (they triple the engine time).
# From this many workloads the pessimistic end is planned in a forked process beside the optimistic one (below it
# an end takes well under a second and a fork costs more than it saves).

END_WORDS = {"low": "pessimistic", "high": "optimistic"}


@dataclass(frozen=True)
class EndView:
    """What the ranges read of one end's evaluation: its routes, verdicts, each route's GPUs per replica and p95
    alone, nodes and bill. Small and picklable (an Evaluation holds its search, closures included), so an end
    planned in another process can be sent back, and a shared evaluation does not hold two more searches.

    Two plans where the end could serve workloads the central plan leaves without a route (end_evaluations):
    `nodes_needed`, `total_monthly_usd` and `same_work_verdict` are the end's plan of the work the central plan
    serves; `verdict` and the `*_with_added` figures its plan serving those workloads too. One plan otherwise (the
    `*_with_added` figures None, `same_work_verdict` the verdicts)."""

    routes: list
    verdict: np.ndarray
    a: dict[str, np.ndarray]
    nodes_needed: int
    total_monthly_usd: float
    scenario: object
    same_work_verdict: np.ndarray | None = None
    nodes_needed_with_added: int | None = None
    total_monthly_usd_with_added: float | None = None

    @classmethod
    def of(cls, ev, same_work=None) -> EndView:
        """The view of a finished evaluation; same_work: the end's plan of only the central plan's work, where
        ev serves more."""
        view = cls(routes=ev.routes, verdict=ev.verdict, scenario=ev.scenario,
                   a={k: ev.a[k] for k in ("gpus_per_replica", "best_p95_ms")},
                   nodes_needed=int(ev.fleet.nodes_needed), total_monthly_usd=float(ev.fleet.total_monthly_usd))
        if same_work is None:
            return view
        return replace(view, same_work_verdict=same_work.verdict, nodes_needed=int(same_work.fleet.nodes_needed),
                       total_monthly_usd=float(same_work.fleet.total_monthly_usd),
                       nodes_needed_with_added=view.nodes_needed,
                       total_monthly_usd_with_added=view.total_monthly_usd)

    @property
    def served_verdict(self) -> np.ndarray:
        """The verdicts of the plan `nodes_needed` and `total_monthly_usd` are of."""
        return self.verdict if self.same_work_verdict is None else self.same_work_verdict


def _end(catalog, workloads: pd.DataFrame, scenario, rate, which: str, start_keys=None,
         other_starts: tuple = (), hold: np.ndarray | None = None) -> EndView:
    """The engine re-run with every owned route at one efficiency end, without the break-even re-plan
    (start_keys: a search of one start, the best of the central plan, other_starts and the shadow-price
    candidates, without restarts: fleet.plan_evaluation).

    hold (the rows the central plan leaves without a route): planned first without them, so the end's nodes and
    bill are for the work the central plan serves (a range of the same purchase: on generated 1,000 workloads the
    optimistic end serving 4 more workloads needed 27 nodes against the central 14); where the end can serve some
    of them, planned again serving them too, from that plan (its verdicts are the end's verdicts, and its
    figures are given beside: EndView)."""
    end = catalog.at_efficiency_end(which, peer_ranges=bool(getattr(scenario, "peer_ranges", False)))

    def plan(start, others, held=None):
        return _evaluate(end, workloads, scenario, rate, break_even=False, start_keys=start, candidates=True,
                         other_starts=others, hold=held)

    if hold is None or not hold.any():
        return EndView.of(plan(start_keys, other_starts))
    same = plan(start_keys, other_starts, hold)
    servable = same.answers.known("held_servable")
    if servable is None or not servable.any():
        return EndView.of(same)
    from core.decision.fleet import plan_start_keys

    # The better of that plan (the held rows on their cheapest column), the other starts and the shadow-price
    # candidates, improved by moves: moves alone from it planned 2 nodes where 1 does when one workload of a
    # generated 39 was split into ten.
    return EndView.of(plan(plan_start_keys(same.plan_inputs, same.plan.assignment), other_starts), same_work=same)


def _central_start(base_ev):
    """The central plan as a start for the ends' searches (None: no plan to start from)."""
    from core.decision.fleet import plan_start_keys

    if getattr(base_ev, "plan", None) is None or getattr(base_ev, "plan_inputs", None) is None:
        return None
    return plan_start_keys(base_ev.plan_inputs, base_ev.plan.assignment)


def end_evaluations(catalog, workloads: pd.DataFrame, scenario, base_ev) -> tuple[EndView, EndView]:
    """(low, high): the engine re-run with every owned route at its slow, then its fast efficiency end.

    `workloads` are the prepared rows of `base_ev` (the same order), and the node
    price is `base_ev.rate`, so only the speed of owned routes differs. From
    SearchSettings.side_by_side_rows workloads the low end is planned in a forked process while
    this one plans the high end (background.in_background: only where a fork is safe).
    """
    from core.decision.engine import kept_sizings

    start = _central_start(base_ev)
    # The sizings kept for this catalog and scenario (engine.kept_sizings: keyed by the physics they read, so
    # the ends' own are apart from the central plan's), where they are kept: the next scenario's ends reuse them.
    kept = kept_sizings(catalog, scenario, len(workloads))

    # The ends are planned for the work the central plan serves (_end): its rows without a route held there.
    hold = None if start is None else np.asarray(base_ev.verdict) < 0

    def low_end():
        with shared_sizings(kept) if kept is not None else contextlib.nullcontext():
            return _end(catalog, workloads, scenario, base_ev.rate, "low", start, hold=hold)

    low = background.in_background(low_end, len(workloads) >= settings_mod.PLAN.side_by_side_rows)
    # The central plan's restart from faster routes (engine) searched these very inputs whole: a start too.
    fast = base_ev.answers.known("faster_start_keys")
    # ... and its pools' sizings, keyed by content (the same physics and members give the same sizing): taken,
    # so the evaluation does not hold them once the ends are planned (the kept store, where there is one).
    sizings = base_ev.answers.take("faster_sizings")
    sizings = kept if sizings is None else sizings
    with shared_sizings(sizings) if sizings is not None else contextlib.nullcontext():
        high = _end(catalog, workloads, scenario, base_ev.rate, "high", start, () if fast is None else (fast,), hold)
    return low(), high


def _verdict_ids(ev) -> np.ndarray:
    ids = np.array([r.route_id for r in ev.routes] + [""], dtype=object)
    return ids[np.where(ev.verdict >= 0, ev.verdict, len(ev.routes))]


def _drivers(catalog, ev) -> np.ndarray:
    """Per workload, the dominant speed assumption of its verdict route at its GPUs per replica ("" for APIs, none)."""
    gpu = catalog.gpu(ev.scenario.gpu)
    W = len(ev.verdict)
    out = np.full(W, "", dtype=object)
    has = ev.verdict >= 0
    rows = np.flatnonzero(has)
    g = np.nan_to_num(ev.a["gpus_per_replica"][rows, ev.verdict[rows]], nan=0).astype(int)
    for v, gg in set(zip(ev.verdict[rows].tolist(), g.tolist(), strict=True)):  # a few distinct (route, g) pairs
        stack = ev.routes[v].stack
        if stack is None or gg < 1:
            continue
        driver = catalog.efficiency_bounds(stack, gpu, gg).driver
        out[rows[(ev.verdict[rows] == v) & (g == gg)]] = driver
    return out


def verdict_ranges(catalog, workloads: pd.DataFrame, scenario, base_ev, *, ends=None) -> pd.DataFrame:
    """One row per workload: its verdict route at the central, low and high efficiency ends, and whether it flips.

    Columns: workload_id; verdict_central, verdict_low, verdict_high (route ids, "" = no feasible route);
    label_low, label_high (route labels, "no feasible route"); sensitive (bool: the three differ);
    driver (the dominant assumption of the route whose speed decides the flip: the central verdict's route
    when it is owned, else the route it moves to; "" when not sensitive). Pure: nothing is mutated.
    `ends` = (low, high) evaluations already computed (`end_evaluations`), else they are run here.
    """
    low, high = ends if ends is not None else end_evaluations(catalog, workloads, scenario, base_ev)
    c_id, lo_id, hi_id = _verdict_ids(base_ev), _verdict_ids(low), _verdict_ids(high)
    sensitive = (lo_id != c_id) | (hi_id != c_id)
    d_c, d_lo, d_hi = _drivers(catalog, base_ev), _drivers(catalog, low), _drivers(catalog, high)
    # The route whose speed moves the verdict: the central one if owned, else the one it moves to.
    moved_lo = lo_id != c_id
    fallback = np.where(moved_lo & (d_lo != ""), d_lo, d_hi)
    driver = np.where(d_c != "", d_c, fallback)
    driver = np.where(sensitive, driver, "")
    labels = {r.route_id: r.label for r in base_ev.routes}
    labels[""] = "no feasible route"
    return pd.DataFrame({
        "workload_id": base_ev.workloads["workload_id"].to_numpy(),
        "verdict_central": c_id,
        "verdict_low": lo_id,
        "verdict_high": hi_id,
        "label_low": [labels[x] for x in lo_id],
        "label_high": [labels[x] for x in hi_id],
        "sensitive": sensitive.astype(bool),
        "driver": driver.astype(object),
    })


def performance_range(base_ev, low_ev: EndView, high_ev: EndView) -> PerformanceRange:
    """The whole fleet at each efficiency end: nodes needed and the monthly cash bill.

    `*_optimistic` is the figure at the optimistic efficiency end (the low end of
    the estimate), `*_pessimistic` at the pessimistic end, each for the work the
    central plan serves (EndView). An end may serve less (a slower route can miss
    a latency target a faster one meets), so the count left without a route is
    given at each end: a pessimistic end serving fewer workloads can need fewer
    nodes. `dropped_*` counts the workloads the central plan serves that have no
    route at that end, and `dropped_*_usd` their attributed share of the central
    bill ($ a month): the part of the central bill that end's bill leaves out;
    `added_*` the workloads without a route in the central plan that end could
    serve, and `*_with_added` that end's nodes and bill serving them too.
    """
    def unserved(verdict):
        return int((verdict < 0).sum())

    def dropped(end) -> tuple[int, float]:
        """Workloads the central plan serves that have no route at this end, and their attributed share of the
        central bill: an end's bill leaves their cost out, so it can look cheaper while it serves less."""
        rows = np.flatnonzero((base_ev.verdict >= 0) & (end.served_verdict < 0))
        usd = float(np.nansum(base_ev.a["monthly_usd"][rows, base_ev.verdict[rows]])) if rows.size else 0.0
        return int(rows.size), round(usd, 2)

    dropped_optimistic, dropped_optimistic_usd = dropped(high_ev)
    dropped_pessimistic, dropped_pessimistic_usd = dropped(low_ev)

    def added(end) -> int:
        return int(((base_ev.verdict < 0) & (end.verdict >= 0)).sum())

    return PerformanceRange(
        nodes_needed_optimistic=int(high_ev.nodes_needed),
        nodes_needed_pessimistic=int(low_ev.nodes_needed),
        total_monthly_usd_optimistic=float(high_ev.total_monthly_usd),
        total_monthly_usd_pessimistic=float(low_ev.total_monthly_usd),
        unserved_optimistic=unserved(high_ev.served_verdict),
        unserved_central=unserved(base_ev.verdict),
        unserved_pessimistic=unserved(low_ev.served_verdict),
        dropped_optimistic=dropped_optimistic,
        dropped_optimistic_usd=dropped_optimistic_usd,
        dropped_pessimistic=dropped_pessimistic,
        dropped_pessimistic_usd=dropped_pessimistic_usd,
        added_optimistic=added(high_ev),
        added_pessimistic=added(low_ev),
        nodes_needed_optimistic_with_added=high_ev.nodes_needed_with_added,
        nodes_needed_pessimistic_with_added=low_ev.nodes_needed_with_added,
        total_monthly_usd_optimistic_with_added=high_ev.total_monthly_usd_with_added,
        total_monthly_usd_pessimistic_with_added=low_ev.total_monthly_usd_with_added,
        basis="optimistic: every owned route at the fast end of its efficiency range; pessimistic: at the slow "
              "end; each end planned for the work the central plan serves (estimates; core/decision/sensitivity.py)",
    )


def ranges(ev, *, force: bool = False) -> VerdictRanges | None:
    """The evaluation's verdict ranges and performance range, computed once and kept in `ev.answers`; None when
    skipped (nothing is written into the evaluation).

    Rule: automatic for inventories of at most SearchSettings.ranges_max_workloads workloads;
    larger ones only with force=True (`hangover evaluate --ranges`). Two threads asking at once: the second
    waits for the first's answer (the ends are planned once).
    """
    def compute() -> VerdictRanges | None:
        if not force and len(ev.workloads) > settings_mod.PLAN.ranges_max_workloads:
            return None
        low, high = end_evaluations(ev.catalog, ev.workloads, ev.scenario, ev)
        frame = verdict_ranges(ev.catalog, ev.workloads, ev.scenario, ev, ends=(low, high))
        return VerdictRanges.of(frame, performance_range(ev, low, high))

    return ev.answers.get("ranges", compute)


def sentence(row) -> str:
    """The reasons line for a sensitive verdict (a row of `verdict_ranges`); "" when it holds across the range."""
    if not row["sensitive"]:
        return ""
    driver = row["driver"] or "performance"
    what = driver if driver.startswith("calibration") else f"{driver} assumption"
    def where(end):
        return f"it moves to {row['label_' + end]}" if row["verdict_" + end] else "no route meets its constraints"

    ends = [end for end in ("low", "high") if row["verdict_" + end] != row["verdict_central"]]
    if len(ends) == 2 and row["verdict_low"] == row["verdict_high"]:  # the plan re-pools: both ends agree
        moves = [f"at either end of the range {where('low')}"]
    else:
        moves = [f"at the {END_WORDS[end]} end {where(end)}" for end in ends]
    return f"Verdict sensitive to the {what}: {'; '.join(moves)}; measure it."


def flag_text(row) -> str:
    """Short routing-table text: where the verdict goes at each end that moves it ("" when it holds)."""
    if not row["sensitive"]:
        return ""
    parts = [f"{END_WORDS[end]}: {row['label_' + end]}" for end in ("low", "high")
             if row["verdict_" + end] != row["verdict_central"]]
    return f"{'; '.join(parts)} ({row['driver']})" if row["driver"] else "; ".join(parts)


def estimate_range_words(ev) -> str | None:
    """The Overview's one line: nodes and cash bill at the two ends of the performance ranges (None when not computed)."""
    from core.format import integer, money

    rg = ranges(ev)
    if rg is None:
        return None
    pr = rg.performance

    def end(n, usd):
        return f"{integer(n)} node{'s' if n != 1 else ''} and {money(usd)} a month"

    flips = int(rg.sensitive.sum())
    line = (f"Estimate range across the performance estimates, for the work the central plan serves: "
            f"{end(pr.nodes_needed_optimistic, pr.total_monthly_usd_optimistic)} at the optimistic end, "
            f"{end(pr.nodes_needed_pessimistic, pr.total_monthly_usd_pessimistic)} at the pessimistic end")
    if not pr.unserved_optimistic == pr.unserved_central == pr.unserved_pessimistic:
        line += (f" (workloads without a route: {pr.unserved_optimistic} optimistic, {pr.unserved_central} central, "
                 f"{pr.unserved_pessimistic} pessimistic)")
    line += f"; {flips} verdict{'s' if flips != 1 else ''} flip{'' if flips != 1 else 's'} inside it (Routing)."
    for word in ("pessimistic", "optimistic"):
        line += "".join(f" The {word} end's bill {part}." for part in end_caveats(pr, word))
    return line


def end_caveats(pr: PerformanceRange, which: str) -> list[str]:
    """What one end's bill ("optimistic" or "pessimistic") leaves out against the central plan, as clauses
    ("leaves out 1 workload the central plan serves, ..."); none when both serve the same workloads. An end that
    cannot serve work the central plan serves bills less for it, and one that could serve more is given serving
    that too: both said beside its figure."""
    from core.format import integer, money

    out = []
    n, usd = pr.dropped_at(which)
    if n:
        out.append(f"leaves out {integer(n)} workload{'s' if n != 1 else ''} the central plan serves, which "
                   f"{'have' if n != 1 else 'has'} no route there ({money(usd)} a month of "
                   f"the central bill)")
    n = pr.added_at(which)
    more = pr.with_added_at(which)
    if n and more is not None:
        out.append(f"leaves out {integer(n)} workload{'s' if n != 1 else ''} the central plan leaves without a route "
                   f"and this end could serve; serving {'them' if n != 1 else 'it'} too takes {integer(more[0])} "
                   f"node{'s' if more[0] != 1 else ''} and {money(more[1])} a month")
    return out
