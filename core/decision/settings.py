"""SearchSettings: every knob that steers the plan's search, the latency numerics and the inventory-size cut-offs.

One frozen record instead of module constants scattered over the planner, the latency model and the
simulation: each field carries its default and a help text (`SearchSettings.help()`), and the planner takes a
record (`Planner(inp, settings=...)`) that its sub-searches inherit. None of these is a fact about the world:
they trade plan quality against CPU time, or precision against CPU time, and are chosen by measurement
(docs/performance.md, docs/design/fleet_plan.md). The defaults are the figures the golden files were made with.

Who reads which field:
- the search (core.decision.search) and its sizing (core.decision.sizing): the fields under "search";
- the latency model (core.decision.latency) and the simulation (core.decision.simulate): "latency numerics"
  and "simulation", bound at import from DEFAULT (numerics, not choices: the same for every plan);
- the inventory-size cut-offs: engine.py (plan size limit), fleet.py (restarts, break-even, background) and
  sensitivity.py (when the ranges are planned, and where) read them from PLAN when they run.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any


def _knob(default: Any, help: str) -> Any:  # noqa: A002 - the name vidur's and argparse's settings use
    """A settings field with its help text."""
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class SearchSettings:
    """What steers the search and the latency numerics; `DEFAULT` is the product's (see the module docstring)."""

    # -- search: candidates ----------------------------------------------------------------------
    shadow_prices: tuple[float, ...] = _knob(
        (0.0, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.7, 0.85, 1.0, 1.25, 1.6, 2.0, 3.0),
        "Shadow prices tried, as multiples of the full $/GPU-hour: each gives one start (every workload on its "
        "cheapest route at that price). 0 fills owned nodes, 1 makes a node pay for itself.")
    shadow_prices_large: tuple[float, ...] = _knob(
        (0.0, 0.1, 0.35, 0.7, 1.0, 1.6, 3.0),
        "The shadow prices above large_rows workloads: fewer rungs where one exact pricing costs more.")
    large_rows: int = _knob(20_000, "Above this many workloads (search rows) the shorter ladder of shadow prices.")
    max_repair_rounds: int = _knob(
        6, "Rounds of barring (workload, pool) pairings a pooled deployment cannot hold and choosing the "
           "candidates again, while no candidate can be sized at all.")
    # -- search: moves ---------------------------------------------------------------------------
    single_move_rows: int = _knob(
        400, "Up to this many workloads the search also moves each workload alone to every allowed route "
             "(exact, and most of the search's time at a few hundred workloads); above, members at the edge "
             "of their target are evicted from the biggest pools instead.")
    merge_pool_rows: int = _knob(
        400, "Up to this many workloads each pass of moves also tries every ordered pair of running interactive "
             "pools merged into one (while the plan buys nodes); above, once the search ends (polish_rows).")
    polish_rows: int = _knob(
        50_000, "Above merge_pool_rows up to this many workloads, where the plan buys nodes: the plan's search "
                "ends with a descent from the plan every restart reached with pool merges and budgeted single "
                "moves (single_move_pricings, single_move_patience) in every pass (Planner.polish; read by "
                "fleet). 0 turns it off. Above, it costs more than a plan may: at 100,000 generated workloads "
                "996 -> 950 nodes, but 26 -> 90 CPU s and 1.66 -> 3.2 GB for the evaluation.")
    budget_move_rows: int = _knob(
        400, "Above this many workloads (and up to single_move_rows) the single moves of a pass are priced in "
             "the order of their expected saving (a member's share of its pool's cost against its cheapest "
             "alternative on the linear view), at most single_move_pricings of them, and the search ends only "
             "after one pass of every move; up to it, every move in row order each pass (exhaustive). Off by "
             "default (= single_move_rows): at 60 it took ~1.5-3x less CPU but planned some inventories "
             "dearer (docs/design/fleet_plan.md \"Single moves\").")
    single_move_pricings: int = _knob(
        400, "Above budget_move_rows: exact pricings of single moves per pass, the most promising first (a "
             "count, not a clock, so the plan does not depend on the machine).")
    single_move_patience: int = _knob(
        120, "Above budget_move_rows: a pass of single moves also ends after this many exact pricings in a row "
             "that lowered neither the bill nor the GPU-hours.")
    whole_moves_restart: bool = _knob(
        True, "Where the restart from faster routes runs (the central plan of a whole search above multi_start_rows, "
              "buying nodes): one more restart after it, from the cheapest shadow-price candidate moved by whole "
              "deployments until none helps, then by every move (read by fleet).")
    full_move_rows: int = _knob(
        12, "Up to this many workloads single moves try every plan column (every tier of every stack); above, "
            "of another stack only the top tier.")
    max_passes: int = _knob(6, "Passes of improving moves at most (a pass that improves nothing ends the search).")
    speculate_moves: int = _knob(
        8, "Candidate moves sized together ahead of pricing them one by one: enough for most of a batch's "
           "saving, few enough that a move taken midway wastes little. Only fills the cache: the plan is the "
           "same at any value.")
    drop_node_margins: tuple[float, ...] = _knob(
        (1.0, 1.25, 1.6, 2.0, 3.0),
        "A node fewer: GPUs moved off to an API, as multiples of what a node fewer needs (one candidate each).")
    drop_node_pools: int = _knob(6, "A node fewer: pools that alone free a node's worth tried as one move each.")
    evict_pricings: int = _knob(
        60, "Above single_move_rows: exact pricings spent moving members at the edge of their target out of "
            "the biggest pools, per search (a count, not a clock, so the plan does not depend on the machine).")
    evict_deployments: int = _knob(8, "Evictions: the deployments holding the most GPUs looked at per pass.")
    evict_groups: tuple[int, ...] = _knob(
        tuple(2**k for k in range(13)), "Evictions: how many of a pool's members closest to the edge move at once.")
    # -- search: restarts ------------------------------------------------------------------------
    multi_start_rows: int = _knob(
        60, "Up to this many workloads moves also start from multi_starts more shadow-price candidates, and "
            "restart without the stacks holding the most GPUs and from tighter targets.")
    multi_starts: int = _knob(3, "Shadow-price candidates improved besides the cheapest (up to multi_start_rows).")
    exclude_stacks: int = _knob(
        2, "Up to multi_start_rows: restarts without each of this many stacks holding the most GPUs.")
    restart_rows: int = _knob(
        100, "Up to this many workloads, one restart without the biggest stack where the plan buys nodes (and "
             "the licensed stacks' break-even re-plan also searches without them: fleet.py reads it).")
    dearer_api_rows: int = _knob(
        5000, "Above dearer_api_min_rows up to this many workloads, where the plan buys nodes: restarts from the "
              "plan searched with every API dearer (dearer_apis).")
    dearer_api_min_rows: int = _knob(
        12, "Above this many workloads up to dearer_api_rows, where the plan buys nodes: restarts from the plan "
            "searched with every API dearer (dearer_apis). On 60 generated inventories of 10-59 workloads, "
            "running them from 13 workloads (not 61) saved a node on three and raised no plan.")
    dearer_apis: tuple[float, ...] = _knob((1.5, 2.25), "The API price multiples of those restarts, one each.")
    room_rows: int = _knob(
        400, "Up to this many workloads, where the searched plan buys nodes: a node fewer by moving one pool's "
             "members one by one into the running pools' room and onto APIs (Planner.fewer_nodes), then every "
             "move. 0: none.")
    room_rounds: int = _knob(2, "Nodes fewer Planner.fewer_nodes may find in a row (each followed by a descent).")
    faster_restart: bool = _knob(
        True, "Above multi_start_rows up to dearer_api_rows workloads, where the plan buys nodes: a restart from the "
              "plan searched with every owned route at the fast end of its efficiency range (read by engine).")
    tighter_targets: float = _knob(
        0.8, "Up to multi_start_rows: a restart from the plan searched at targets this many times as tight.")
    parallel_rows: int = _knob(
        20_000, "From this many workloads the standalone view of each stack is computed in threads (numpy "
                "releases the GIL); engine.py's PARALLEL_ROWS is the same cut-off for the scoring.")
    # -- latency numerics (core.decision.latency) ------------------------------------------------
    gauss_legendre_nodes: int = _knob(
        16, "Gauss–Legendre nodes per panel of the wait + service convolution (two panels): 16 put "
            "P(E + S > t) within 3e-7 (relative) of 64 and of adaptive quadrature (tests/test_latency.py).")
    chain_points: int = _knob(
        256, "Points of the requests-in-system chain per configuration: one per state up to this many slots, "
             "a grid of this many points above.")
    block_terms: int = _knob(
        64, "Blocks summed exactly in the wait + service convolution of block-wise (diffusion) service; the "
            "blocks further below are bounded above.")
    block_sum: int = _knob(
        64, "Blocks summed exactly for E[ceil(N / L)] and E[ceil(N / L)^2]; beyond, the rounding is uniform "
            "on average.")
    candidates_per_row: int = _knob(
        8, "min_replicas: workload rows per configuration checked in the replica search before all are verified.")
    # -- simulation (core.decision.simulate) -----------------------------------------------------
    warmup_share: float = _knob(0.05, "Simulation: share of requests discarded while the empty deployment fills.")
    sections: int = _knob(20, "Simulation: sections of the run for the percentile's confidence interval.")
    min_requests: int = _knob(20_000, "Simulation: requests simulated at least (a quiet deployment's p95 within ~2 %).")
    max_requests: int = _knob(200_000, "Simulation: requests simulated at most.")
    target_ci: float = _knob(0.02, "Simulation: the p95's 95 % interval is to be within +- this share of it.")
    # -- the plan checked by simulation (core.decision.closeloop) --------------------------------
    close_loop_requests: int = _knob(
        3_000_000, "Simulated requests the plan's check may spend in all (each interactive pool simulated at its "
                   "peak hour, seed 0, again after each replica added; ~0.4 µs of CPU a request): past it the "
                   "remaining pools keep their analytic sizing. A count, not a clock, so the plan does not depend "
                   "on the machine. 0 turns the check off.")
    close_loop_z: float = _knob(
        2.0, "A pool's simulation check finds a member under its target share only where the run says so at the "
             "one-sided level of this many standard errors (Phi(-z), 2.3 % at 2), exact binomial, shared among the "
             "pool's members (close_loop_familywise): a miss the run cannot tell from noise buys no replica.")
    close_loop_familywise: bool = _knob(
        True, "The simulation check's level is for a pool's members together (Bonferroni: Phi(-z) / members), not "
              "for each alone: a pool of thousands of members always has some that look under by chance.")
    close_loop_max_added: int = _knob(
        4, "Replicas the simulation check may add to one pool at most.")
    close_loop_alternatives: int = _knob(
        8, "Where the simulation check adds replicas: the cheapest plans the search's descents ended at, at most "
           "this many, each checked in turn while its analytic bill is below the best checked one, the cheapest "
           "checked plan kept. 0: the checked plan as it is.")
    close_loop_repairs: int = _knob(
        2, "Where the kept checked plan still holds replicas the check added: descents by every move from it, "
           "the raised pools priced at their checked size, each end checked in turn and kept while the checked "
           "plan gets cheaper, at most this many (generated 300's pessimistic end: the first end raised again, "
           "9 nodes; the second holds at 8). 0: none.")
    sub_second_ms: float = _knob(
        1000.0, "Interactive members with a p95 target under this (ms) may not run in a stack's throughput tier "
                "(caps of 64 and up) where a lower tier of it holds them: at such caps a few ms of batching noise "
                "is a share of the target the analytic model does not see (a 400 ms member at cap 256 held 94.6 % "
                "in simulation).")
    # -- inventory-size cut-offs held by other modules (listed with their defaults) --------------
    max_plan_rows: int = _knob(
        100_000, "Largest inventory planned without HANGOVER_MAX_PLAN_ROWS raised (engine.DEFAULT_MAX_PLAN_ROWS).")
    side_by_side_rows: int = _knob(
        40, "From this many workloads the ranges' low end is planned in a forked process beside the high end "
            "(read by sensitivity).")
    kept_sizings_rows: int = _knob(
        1_000, "Up to this many workloads an evaluation keeps its pools' sizings with its catalog, for the next "
               "evaluation of the same pools (another owned-node count or price on the dashboard, the smallest "
               "change's re-plans): the same plan, sized once (read by engine).")
    ranges_max_workloads: int = _knob(
        1_000, "Up to this many workloads the performance ranges are planned automatically "
               "(read by sensitivity).")
    smallest_change_max_workloads: int = _knob(
        40, "Up to this many workloads the smallest change (smallest_target, stay_on_owned) is searched "
            "automatically; above, only on demand (read by smallest; each re-plan is a whole plan).")
    sla_sweep_max_workloads: int = _knob(
        20, "Up to this many workloads the Fleet sizing page sweeps the SLA scales as it draws; above, only when "
            "asked (read by service.sla_sweep_automatic: each scale is a whole evaluation with every fleet option "
            "planned, ~2.5 CPU s a scale at 20 generated workloads, ~6 at 40, ~14 at 100).")
    smallest_change_replans: int = _knob(
        40, "Re-plans the smallest change may spend in all (its targets' searches and the stay-on-owned search).")
    smallest_target_replans: int = _knob(
        11, "Re-plans one workload's smallest_target search may spend (upper bound, bisection to 1 %, check).")
    smallest_change_light_replans: int = _knob(
        80, "Exploring re-plans (moves from the plan, a fraction of a search each) the smallest change may spend "
            "before its answers are checked on whole re-plans (read by smallest).")
    smallest_target_max_factor: float = _knob(
        4.0, "The smallest_target search looks up to this multiple of the workload's target (read by smallest).")
    background_rows: int = _knob(
        20_000, "From this many workloads the break-even re-plan runs beside the attribution "
                "(read by fleet).")
    break_even_max_workloads: int = _knob(
        40, "Up to this many workloads the licensed stacks' break-even re-plan (fleet.licensed_routes) is made with "
            "the plan; above, only when asked (`hangover evaluate --break-even`, the report, the Fleet sizing page: "
            "fleet.licensed_routes): it only advises, and cost ~20 % of a 100-300-workload evaluation.")
    break_even_refine_rows: int = _knob(
        5000, "Above this many workloads the break-even licence fee is the one-step estimate "
              "(read by fleet).")

    def __post_init__(self) -> None:
        for name in ("large_rows", "single_move_rows", "merge_pool_rows", "polish_rows", "full_move_rows", "multi_start_rows", "restart_rows",
                     "dearer_api_rows", "dearer_api_min_rows", "room_rows", "room_rounds", "budget_move_rows", "single_move_pricings",
                     "single_move_patience", "max_passes", "speculate_moves", "evict_pricings", "multi_starts",
                     "exclude_stacks", "max_repair_rounds", "gauss_legendre_nodes", "chain_points",
                     "block_terms", "block_sum", "candidates_per_row", "sections", "min_requests",
                     "max_requests", "smallest_change_max_workloads", "sla_sweep_max_workloads", "smallest_change_replans",
                     "smallest_target_replans", "smallest_change_light_replans", "break_even_max_workloads", "close_loop_requests", "close_loop_max_added", "close_loop_alternatives", "close_loop_repairs",
                     "close_loop_z"):
            if getattr(self, name) < 0:
                raise ValueError(f"SearchSettings.{name} must not be negative, not {getattr(self, name)}")
        if self.speculate_moves < 1 or self.max_passes < 1 or self.max_repair_rounds < 1:
            raise ValueError("SearchSettings: speculate_moves, max_passes and max_repair_rounds must be at least 1")

    @classmethod
    def help(cls) -> dict[str, str]:
        """Each field's help text, by name (in declaration order)."""
        return {f.name: f.metadata["help"] for f in fields(cls)}

    def but(self, **changes: Any) -> SearchSettings:
        """A copy with some fields changed (unknown names fail loudly)."""
        return replace(self, **changes)


DEFAULT = SearchSettings()
# The record a planner made without settings reads (at construction, not import): the entry points of the
# other modules (engine.evaluate -> fleet -> Planner) do not pass settings yet, so tests that need another
# threshold through them set this one record for the test (monkeypatch.setattr(settings, "PLAN", ...)).
PLAN = DEFAULT


def current() -> SearchSettings:
    """The record a planner built without settings uses (PLAN, read now)."""
    return PLAN
