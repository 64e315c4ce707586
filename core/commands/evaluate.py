"""`hangover evaluate`: route every workload and size the fleet; table or the stable JSON contract."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

from core.models import DEFAULT_GPU, CostBasis, PricingOption

# Above this many workloads `--format json` leaves out the per-route lists and sentences unless --detail routes
# asks: they are ~15 KB a workload (1.5 GB at 100,000), the verdicts ~0.5 KB (docs/performance.md).
ROUTES_DETAIL_MAX_WORKLOADS = 10_000
ROUTES_DETAIL_BYTES_PER_WORKLOAD = 15_000


def flag_help(model, name: str, how: str = "", *, percent: bool = False) -> str:
    """A flag's help from the model field (core.bounds): what it is, its bounds, how to type it, its default."""
    from core.bounds import field_bounds
    from core.presentation.format import plain

    b = field_bounds(model, name)
    parts = [b.help.rstrip(".")]
    bounds = b.range_text(scale=100.0, unit=" %") if percent else b.range_text()
    parts += [p for p in (bounds, how) if p]
    if b.default is not None:
        parts.append(f"default {b.default!r}" if isinstance(b.default, str) else f"default {plain(b.default)}")
    return "; ".join(parts).replace("%", "%%")  # argparse reads % as a format code


def add_scenario_arguments(p: argparse.ArgumentParser) -> None:
    """Scenario flags shared by `evaluate` and `report`; bounds, defaults and help come from Scenario's fields."""
    from core.models import OwnedHardware, Scenario

    p.add_argument("--workloads", metavar="FILE", help="inventory CSV/XLSX (default: latest stored version, else the bundled sample)")
    p.add_argument("--sheet", help="sheet name when --workloads is an .xlsx")
    p.add_argument("--version", type=int, help="stored inventory version to evaluate")
    p.add_argument("--scenario", metavar="NAME",
                   help="start from a saved scenario (and the inventory it was saved on); other flags override it")
    p.add_argument("--fleet-nodes", type=int, help=flag_help(Scenario, "fleet_nodes"))
    p.add_argument("--gpu", help=flag_help(Scenario, "gpu"))
    p.add_argument("--pricing", choices=[o.value for o in PricingOption], help=flag_help(Scenario, "pricing_option"))
    p.add_argument("--cost-basis", choices=[c.value for c in CostBasis], help=flag_help(Scenario, "cost_basis"))
    p.add_argument("--node-usd-per-hour", type=float, help=flag_help(Scenario, "node_usd_per_hour"))
    p.add_argument("--api-price-scale", type=float, help=flag_help(Scenario, "api_price_scale", "e.g. 0.5, 2"))
    p.add_argument("--sla-scale", type=float, help=flag_help(Scenario, "sla_scale", "below 1 = tighter"))
    p.add_argument("--max-fallback-share", type=share_flag,
                   help=flag_help(Scenario, "max_fallback_share", "typed as 20%, 20 or 0.2", percent=True))
    p.add_argument("--traffic-profile", choices=["office_hours", "measured"],
                   help="interactive traffic over the day: assumed office hours (default) or measured telemetry")
    p.add_argument("--peer-ranges", action="store_true",
                   help=flag_help(Scenario, "peer_ranges", "reads answers cached by `perf --peer` or bench/compare_peer.py"))
    mix = p.add_argument_group("what to buy next (owned nodes keep their GPU; new nodes compared per GPU and option)")
    mix.add_argument("--owned", action="append", metavar="GPU:N",
                     help=flag_help(Scenario, "owned_nodes_by_gpu", 'typed "H100 SXM:1", repeated or "GPU:N,GPU:N"'))
    # Repeated flags add up (action="append"): a second --buy replacing the first dropped a candidate unsaid.
    mix.add_argument("--buy", action="append", metavar="GPU,GPU",
                     help=flag_help(Scenario, "buy_gpus", 'typed "H100 SXM,H200 SXM,B200", or repeated'))
    mix.add_argument("--buy-pricing", action="append", metavar="OPTION,OPTION",
                     help=flag_help(Scenario, "buy_pricing", "any of " + ", ".join(o.value for o in PricingOption)
                                    + ", or repeated"))
    owned = p.add_argument_group("owned hardware (with --pricing owned; unset figures keep the seed estimate)")
    for name, how in OWNED_FLAGS.items():
        owned.add_argument(f"--{name.replace('_', '-')}", type=share_flag if name in SHARE_FLAGS else float,
                           dest=f"own_{name}", help=flag_help(OwnedHardware, name, how, percent=name in SHARE_FLAGS))


# Owned-hardware flags (OwnedHardware fields) -> how to type them, beyond what the field says.
OWNED_FLAGS = {
    "capex_usd_per_node": "",
    "depreciation_years": "",
    "cost_of_capital_rate": "typed as 8%, 8 or 0.08",
    "kw_per_node": "",
    "pue": "",
    "usd_per_kwh": "",
    "support_usd_per_year": "",
}


SHARE_FLAGS = {"cost_of_capital_rate"}


def share_flag(text: str) -> float:
    """A share as people type it: '95%', '95' (percent) or 0.95 (issue 14); anything else is argparse's error."""
    from core.errors import InputError
    from core.scenarios import parse_share

    try:
        return parse_share(text, what="share")
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def scenario_and_workloads(args: argparse.Namespace, store):
    """Resolve the scenario and the inventory from parsed flags (shared with `report`)."""
    from core.catalog import Catalog
    from core.service import make_scenario, owned_hardware_defaults, read_workloads_file

    saved = _saved_scenario(args, store)
    given = {k: getattr(args, f"own_{k}", None) for k in OWNED_FLAGS}
    owned_inputs = None
    if any(v is not None for v in given.values()):
        if saved is not None and saved.owned_hardware is not None:  # a saved scenario's own figures, not the seed's
            base = {k: float(getattr(saved.owned_hardware, k)) for k in OWNED_FLAGS}
        else:
            base = owned_hardware_defaults(Catalog.from_store(store), args.gpu or (saved.gpu if saved else DEFAULT_GPU))
        owned_inputs = {**base, **{k: v for k, v in given.items() if v is not None}}
    flags = dict(
        gpu=args.gpu, fleet_nodes=args.fleet_nodes, pricing_option=args.pricing, cost_basis=args.cost_basis,
        node_usd_per_hour=args.node_usd_per_hour, api_price_scale=args.api_price_scale, sla_scale=args.sla_scale,
        max_fallback_share=args.max_fallback_share, traffic_profile=getattr(args, "traffic_profile", None),
        peer_ranges=True if getattr(args, "peer_ranges", False) else None,
    )
    flags.update(_mix_flags(args))
    if saved is not None:  # the saved inputs, each flag given on top
        flags = {**saved.model_dump(exclude={"owned_hardware"}),
                 **({} if owned_inputs else {"owned_hardware": saved.owned_hardware}),
                 **{k: v for k, v in flags.items() if v is not None}}
    scenario = make_scenario(owned_inputs=owned_inputs, **flags)
    workloads = read_workloads_file(args.workloads, args.sheet) if args.workloads else None
    return scenario, workloads


def _mix_flags(args: argparse.Namespace) -> dict:
    """--owned / --buy / --buy-pricing as Scenario fields. --owned without --gpu / --fleet-nodes makes its largest
    GPU type the one-kind shorthand too, so the plan's one-kind figures describe nodes the bank owns."""
    from core.scenarios import parse_gpu_list, parse_owned

    out: dict = {}
    if getattr(args, "owned", None):
        owned = parse_owned(args.owned)
        out["owned_nodes_by_gpu"] = owned
        main = max(owned, key=lambda g: owned[g])
        if args.gpu is None:
            out["gpu"] = main
        if args.fleet_nodes is None:
            out["fleet_nodes"] = owned.get(args.gpu or main, 0)
    if getattr(args, "buy", None):
        out["buy_gpus"] = parse_gpu_list(args.buy)
    if getattr(args, "buy_pricing", None):
        out["buy_pricing"] = parse_gpu_list(args.buy_pricing, what="purchase options")
    return out


def _saved_scenario(args: argparse.Namespace, store):
    """The Scenario saved under --scenario NAME (None without the flag).

    Unless --workloads or --version says otherwise, the evaluation runs on the
    inventory the scenario was saved on: its stored version, or the bundled
    sample file when it was saved before any inventory was committed.
    """
    name = getattr(args, "scenario", None)
    if not name:
        return None
    from core.scenarios import load_scenario
    from core.store.seed import sample_workloads_path

    saved = load_scenario(store, name)
    if args.workloads is None and args.version is None:
        if saved.inventory_version is not None:
            args.version = saved.inventory_version
        else:
            args.workloads = str(sample_workloads_path())
    return saved.scenario


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `evaluate` command."""
    p = sub.add_parser("evaluate", help="route every workload, plan the fleet, price the idle GPUs")
    add_scenario_arguments(p)
    p.add_argument("--format", choices=["table", "json", "csv", "parquet"], default="table",
                   help="table (default), json (the contract), csv or parquet (the routing table)")
    p.add_argument("--detail", choices=["routes", "verdicts"], default=None,
                   help="json: every route per workload with the reasons in words (the default up to "
                        "10,000 workloads) or verdicts only (the default above)")
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of standard output (needed for parquet)")
    p.add_argument("--ranges", action="store_true",
                   help="compute each verdict at both ends of the performance ranges even above 1,000 workloads "
                        "(automatic up to 5,000; triples the engine time)")
    add_purchase_arguments(p)
    p.add_argument("--break-even", action="store_true",
                   help="compute the licensed stacks' break-even fees (fleet.licensed_routes) even above 40 "
                        "workloads (automatic up to 40; one more search per licensed stack)")
    p.add_argument("--smallest-change", action="store_true",
                   help="search the smallest change that avoids new nodes (smallest_target, stay_on_owned) even "
                        "above 40 workloads (automatic up to 40; up to 40 re-plans)")
    p.set_defaults(func=cmd_evaluate)


def add_purchase_arguments(p: argparse.ArgumentParser) -> None:
    """The staged purchase's flags (core/decision/purchase.py): draws, seed, quantile, traffic growth."""
    g = p.add_argument_group("staged purchase (Monte Carlo over the estimate ranges)")
    g.add_argument("--purchase-draws", type=int, metavar="N",
                   help="draws over the ranges (1 to 100,000; default 1,000; given, it runs above 5,000 workloads too)")
    g.add_argument("--seed", type=int, help="seed of the draws (default 0: the same answer every run)")
    g.add_argument("--buy-quantile", metavar="SHARE",
                   help="buy now the nodes needed in at least this share of draws (above 50%% and below 100%%; default 90%%)")
    g.add_argument("--growth", metavar="RANGE",
                   help="traffic growth drawn uniformly over a range, e.g. 10-30%% or 20%% (default: none)")


def purchase_settings(args: argparse.Namespace):
    """PurchaseSettings from the flags; None when none was given (the default settings and rule apply)."""
    from core.decision.purchase import PurchaseSettings, parse_growth
    from core.errors import InputError

    given = {k: getattr(args, k, None) for k in ("purchase_draws", "seed", "buy_quantile", "growth")}
    if all(v is None for v in given.values()):
        return None
    d = PurchaseSettings()
    if given["buy_quantile"] is not None:
        given["buy_quantile"] = _buy_quantile(given["buy_quantile"])
    try:
        return PurchaseSettings(
            draws=d.draws if given["purchase_draws"] is None else given["purchase_draws"],
            seed=d.seed if given["seed"] is None else given["seed"],
            quantile=d.quantile if given["buy_quantile"] is None else given["buy_quantile"],
            growth=d.growth if given["growth"] is None else parse_growth(given["growth"]))
    except ValueError as exc:
        raise InputError(str(exc)) from None


def _buy_quantile(text: str) -> float:
    """--buy-quantile as typed ('90%', '90', 0.9), refused with the text the user typed, not the share it read as."""
    from core.errors import InputError
    from core.format import percent
    from core.scenarios import parse_share

    share = parse_share(text, what="--buy-quantile")
    if not 0.5 < share < 1.0:
        raise InputError(f"--buy-quantile: {text!r} reads as {percent(share, decimals=1)}; the buy-now quantile "
                         "must be above 50 % and below 100 % (write 90%, 90 or 0.9)")
    return share


def cmd_evaluate(args: argparse.Namespace) -> int:
    """Print the routing table and the fleet plan, the JSON contract, or the routing table as CSV/Parquet."""
    from core.decision import contract
    from core.errors import InputError
    from core.store import Store, default_db_path

    if args.format == "parquet" and not args.out:
        raise InputError("--format parquet writes a binary file: give --out FILE.parquet")
    store = Store(args.db or default_db_path())
    scenario, workloads = scenario_and_workloads(args, store)
    # Every format shows the verdict ranges: their end plans start beside the central one.
    ev = evaluated(store, scenario, args.version, workloads)
    if getattr(args, "ranges", False):
        from core.decision.sensitivity import ranges

        ranges(ev, force=True)
    settings = purchase_settings(args)
    if args.format in ("csv", "parquet"):
        from core.presentation.csv_export import routing_csv, routing_parquet

        vf = contract.verdicts_frame(ev)
        data = routing_csv(vf) if args.format == "csv" else routing_parquet(vf)
        return _emit(data, args.out)
    from core.decision.fleet import licensed_routes
    from core.decision.smallest import smallest_change

    if getattr(args, "break_even", False):
        licensed_routes(ev, force=True)
    # The JSON and the table show it: automatic up to SearchSettings.smallest_change_max_workloads workloads.
    smallest_change(ev, force=getattr(args, "smallest_change", False))
    if args.format == "json":
        detail = args.detail or _default_detail(len(ev.workloads))
        chunks = contract.iter_json(ev, detail, indent=2 if detail == "routes" else None,
                                    purchase_settings=settings)
        return _emit(_encoded(chunks), args.out)
    return _emit((format_table(ev, settings) + "\n").encode(), args.out)


def evaluated(store, scenario, version, workloads):
    """service.evaluate_store, a missing node price named with the flags that give one (evaluate and report)."""
    from core.errors import InputError, NoNodePrice
    from core.service import evaluate_store

    try:
        return evaluate_store(store, scenario, version=version, workloads=workloads)
    except NoNodePrice as exc:
        raise InputError(price_fix(exc, scenario)) from None


def price_fix(exc, scenario) -> str:
    """A missing node price in the flags that give one (the dashboard names its own widgets:
    scenarios.price_problem)."""
    fixes = [f"--pricing {' or '.join(exc.available)} (the options it has)"] if exc.available else []
    fixes.append("--node-usd-per-hour (what one node costs you)")
    why = ""
    if scenario.mixed and exc.gpu == scenario.gpu:
        why = (f" {exc.gpu} is the owned type with the most nodes: every choice is compared with buying more of it "
               "(the one-kind plan), which needs its price.")
    return (f"no {exc.option} node price for GPU {exc.gpu!r} in the dated price snapshot.{why} Give one with "
            f"{' or '.join(fixes)}, or add a dated price on the Pricing page.")


def _default_detail(n: int) -> str:
    """routes up to ROUTES_DETAIL_MAX_WORKLOADS workloads; above, verdicts, said on standard error."""
    if n <= ROUTES_DETAIL_MAX_WORKLOADS:
        return "routes"
    from core.format import integer

    print(f"{integer(n)} workloads: the JSON holds each workload's verdict only (every route with its reasons would "
          f"be ~{integer(n * ROUTES_DETAIL_BYTES_PER_WORKLOAD / 1e6)} MB); --detail routes writes them all.",
          file=sys.stderr)
    return "verdicts"


def _encoded(chunks, size: int = 1 << 20):
    """The JSON pieces as UTF-8 blocks of about `size` characters, ending with a newline."""
    buf: list[str] = []
    held = 0
    for piece in chunks:
        buf.append(piece)
        held += len(piece)
        if held >= size:
            yield "".join(buf).encode()
            buf, held = [], 0
    buf.append("\n")
    yield "".join(buf).encode()


def _emit(data: bytes | Iterable[bytes], out: str | None) -> int:
    """Write bytes (or blocks of bytes, as they are made) to --out (through a temporary file, renamed: a failure
    half-way leaves no partial file) or to standard output."""
    blocks = [data] if isinstance(data, bytes) else data
    if not out:
        sys.stdout.flush()
        for block in blocks:
            sys.stdout.buffer.write(block)
        sys.stdout.flush()
        return 0
    import os
    import tempfile
    from pathlib import Path

    path = Path(out)
    fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            for block in blocks:
                fh.write(block)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return 0


def format_table(ev, purchase_settings=None) -> str:
    """A plain-text routing table and the fleet plan's cash bill."""
    from core.decision import contract, mixfleet
    from core.presentation.format import integer, money, percent
    from core.presentation.served import served_words, unserved_priced_words

    vf = contract.verdicts_frame(ev)
    f = mixfleet.top(ev)  # the chosen mix in a mixed scenario
    price = (f"node price {money(f.full_usd_per_node_hour)}/hour ({ev.rate.label}, as of {ev.rate.as_of or 'n/a'})"
             if not ev.scenario.mixed else f"nodes at {money(f.full_usd_per_node_hour)}/hour on average (each kind "
             "at its own price: What to buy next)")
    lines = [
        f"Inventory: {f.inventory or ''}; {len(vf)} workloads; GPU {f.gpu}; {price}",
        "",
        f"{'workload':<22} {'verdict':<44} {'$/request':>10} {'$/M out':>9} {'$/month':>10} {'p95 ms':>9} {'nodes':>5}"
        + (" on GPU" if ev.scenario.mixed else ""),
    ]
    for r in vf.itertuples():
        figures = (f"{money(r.usd_per_request):>10} {money(r.usd_per_mtok_out):>9} {money(r.monthly_usd):>10} "
                   f"{integer(r.p95_latency_ms):>9} {integer(r.nodes):>5}") if r.requests_per_day > 0 or not r.route_id \
            else f"{'no traffic':>47}"
        # A mixed scenario's verdict is the chosen mix's; its GPU in a column of its own (the label is cut at 44).
        gpu = f" {getattr(r, 'gpu', '') or '-'}" if ev.scenario.mixed else ""
        lines.append(f"{str(r.workload_id)[:22]:<22} {str(r.route)[:44]:<44} {figures}{gpu}")
    lines += [
        "",
        f"Owned nodes {f.owned_nodes}, needed {f.nodes_needed}; utilization {percent(f.utilization)} "
        f"of the {f.nodes_in_plan} in the plan; idle {money(f.idle_usd_per_month)}/month",
        f"Cash bill per month: owned nodes {money(f.owned_monthly_usd)} + new nodes "
        f"{money(f.extra_nodes_monthly_usd)} + APIs {money(f.api_monthly_usd)} + licences "
        f"{money(f.licence_monthly_usd)} = {money(f.total_monthly_usd)} ({served_words(f.workloads_served, f.workloads_total)})",
        f"Attributed to workloads {money(f.attributed_usd_per_month)} + not attributed (idle, rounding) "
        f"{money(f.unallocated_usd_per_month)}",
    ]
    if (unserved := unserved_priced_words(ev)) is not None:
        lines.append(unserved)
    from core.decision.sensitivity import estimate_range_words

    mixed = ev.scenario.mixed
    if (estimate := mixfleet.range_words(ev) if mixed else estimate_range_words(ev)) is not None:
        lines.append(estimate)
    from core.decision.purchase import purchase, purchase_words

    staged = mixfleet.staged_purchase(ev, purchase_settings) if mixed else purchase(ev, purchase_settings)
    if staged is not None:
        lines.append(mixfleet.purchase_subject(ev) + purchase_words(staged))
    for d in f.node_drivers[:3]:
        best = d.best_relaxation()
        if best:
            lines.append(f"Node driver: {d.workload_id}: {best.change} saves "
                         f"{money(best.saves_usd_per_month)}/month")
    from core.decision.explain import purchase_cause_words

    if cause := purchase_cause_words(f):
        lines.append(cause)
    if not mixed and (answer := ev.answers.known("smallest_change")) is not None:
        from core.decision.explain import smallest_change_words

        lines += [f"Smallest change: {line}" for line in smallest_change_words(f, answer)]
    from core.decision import settings as settings_mod
    from core.decision.fleet import licensed_routes

    lics = f.licensed_routes if mixed else licensed_routes(ev)
    if lics is None:
        lines.append("Licensed stacks' break-even fees: not computed above "
                     f"{integer(settings_mod.PLAN.break_even_max_workloads)} workloads (--break-even)")
    for lic in lics or ():
        fee = lic.break_even_usd_per_gpu_month
        parts = [f"the only route for {', '.join(lic.serves_unserved)}"] if lic.serves_unserved else []
        if fee:
            parts.append(f"break-even {money(fee)} per GPU-month")
        tail = f" ({'; '.join(parts)})" if parts else " (would not save money)"
        lines.append(f"Licensed, fee not entered: {lic.label}{tail}")
    if ev.scenario.mixed:
        lines += _buy_lines(ev)
    return "\n".join(lines)


def _buy_lines(ev) -> list[str]:
    """What to buy next, one line per row side by side (core.decision.mix), the cheapest first named."""
    from core.decision import mix
    from core.presentation.format import money

    frame = mix.frame(ev)
    assert frame is not None  # a mixed scenario
    best = frame[frame["row"] == "best mix"].iloc[0]
    lines = [f"What to buy next: {best['buy']}, {money(best['total_usd'])}/month in all (owned nodes kept on "
             "their GPU)"]
    for r in frame.itertuples(index=False):
        lines.append(f"  {r.row}: {r.label}: new {r.buy}; {money(r.total_usd)}/month; on nodes {r.on_nodes}, "
                     f"by API {r.by_api}, unserved {r.unserved}" + (f"; range {r.estimate_range}" if r.estimate_range
                                                                   else ""))
    return lines
