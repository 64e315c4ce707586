"""`hangover evaluate`: route every workload and size the fleet; table or the stable JSON contract."""

from __future__ import annotations

import argparse
import json
import sys

from core.models import DEFAULT_GPU, CostBasis, PricingOption


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
    )
    if saved is not None:  # the saved inputs, each flag given on top
        flags = {**saved.model_dump(exclude={"owned_hardware"}),
                 **({} if owned_inputs else {"owned_hardware": saved.owned_hardware}),
                 **{k: v for k, v in flags.items() if v is not None}}
    scenario = make_scenario(owned_inputs=owned_inputs, **flags)
    workloads = read_workloads_file(args.workloads, args.sheet) if args.workloads else None
    return scenario, workloads


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
    p.add_argument("--detail", choices=["routes", "verdicts"], default="routes",
                   help="json: every route per workload (default) or verdicts only (large inventories)")
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of standard output (needed for parquet)")
    p.add_argument("--ranges", action="store_true",
                   help="compute each verdict at both ends of the performance ranges even above 1,000 workloads "
                        "(automatic up to 5,000; triples the engine time)")
    p.add_argument("--smallest-change", action="store_true",
                   help="search the smallest change that avoids new nodes (smallest_target, stay_on_owned) even "
                        "above 40 workloads (automatic up to 40; up to 40 re-plans)")
    p.set_defaults(func=cmd_evaluate)


def cmd_evaluate(args: argparse.Namespace) -> int:
    """Print the routing table and the fleet plan, the JSON contract, or the routing table as CSV/Parquet."""
    from core.decision import contract
    from core.errors import InputError
    from core.service import evaluate_store
    from core.store import Store, default_db_path

    if args.format == "parquet" and not args.out:
        raise InputError("--format parquet writes a binary file: give --out FILE.parquet")
    store = Store(args.db or default_db_path())
    scenario, workloads = scenario_and_workloads(args, store)
    # Every format shows the verdict ranges: their end plans start beside the central one.
    ev = evaluate_store(store, scenario, version=args.version, workloads=workloads, ranges_ahead=True)
    if getattr(args, "ranges", False):
        from core.decision.sensitivity import ranges

        ranges(ev, force=True)
    if args.format in ("csv", "parquet"):
        from core.presentation.csv_export import routing_csv, routing_parquet

        vf = contract.verdicts_frame(ev)
        data = routing_csv(vf) if args.format == "csv" else routing_parquet(vf)
        return _emit(data, args.out)
    from core.decision.smallest import smallest_change

    # The JSON and the table show it: automatic up to SearchSettings.smallest_change_max_workloads workloads.
    smallest_change(ev, force=getattr(args, "smallest_change", False))
    if args.format == "json":
        text = json.dumps(contract.to_dict(ev, detail=args.detail), indent=2 if args.detail == "routes" else None,
                          ensure_ascii=False)
        return _emit((text + "\n").encode(), args.out)
    return _emit((format_table(ev) + "\n").encode(), args.out)


def _emit(data: bytes, out: str | None) -> int:
    """Write bytes to --out (through a temporary file, renamed) or to standard output."""
    if not out:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return 0
    import os
    import tempfile
    from pathlib import Path

    path = Path(out)
    fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return 0


def format_table(ev) -> str:
    """A plain-text routing table and the fleet plan's cash bill."""
    from core.decision import contract
    from core.presentation.format import integer, money, percent

    vf = contract.verdicts_frame(ev)
    f = ev.fleet
    lines = [
        f"Inventory: {f.inventory or ''}; {len(vf)} workloads; GPU {f.gpu}; "
        f"node price {money(f.full_usd_per_node_hour)}/hour ({ev.rate.label}, as of {ev.rate.as_of or 'n/a'})",
        "",
        f"{'workload':<22} {'verdict':<44} {'$/request':>10} {'$/M out':>9} {'$/month':>10} {'p95 ms':>9} {'nodes':>5}",
    ]
    for r in vf.itertuples():
        lines.append(
            f"{str(r.workload_id)[:22]:<22} {str(r.route)[:44]:<44} {money(r.usd_per_request):>10} "
            f"{money(r.usd_per_mtok_out):>9} {money(r.monthly_usd):>10} {integer(r.p95_latency_ms):>9} "
            f"{integer(r.nodes):>5}"
        )
    lines += [
        "",
        f"Owned nodes {f.owned_nodes}, needed {f.nodes_needed}; utilization {percent(f.utilization)} "
        f"of the {f.nodes_in_plan} in the plan; idle {money(f.idle_usd_per_month)}/month",
        f"Cash bill per month: owned nodes {money(f.owned_monthly_usd)} + new nodes "
        f"{money(f.extra_nodes_monthly_usd)} + APIs {money(f.api_monthly_usd)} + licences "
        f"{money(f.licence_monthly_usd)} = {money(f.total_monthly_usd)}",
        f"Attributed to workloads {money(f.attributed_usd_per_month)} + not attributed (idle, rounding) "
        f"{money(f.unallocated_usd_per_month)}",
    ]
    from core.decision.sensitivity import estimate_range_words

    if (estimate := estimate_range_words(ev)) is not None:
        lines.append(estimate)
    for d in f.node_drivers[:3]:
        best = d.best_relaxation()
        if best:
            lines.append(f"Node driver: {d.workload_id}: {best.change} saves "
                         f"{money(best.saves_usd_per_month)}/month")
    if (answer := ev.answers.known("smallest_change")) is not None:
        from core.decision.explain import smallest_change_words

        lines += [f"Smallest change: {line}" for line in smallest_change_words(f, answer)]
    for lic in f.licensed_routes:
        fee = lic.break_even_usd_per_gpu_month
        parts = [f"the only route for {', '.join(lic.serves_unserved)}"] if lic.serves_unserved else []
        if fee:
            parts.append(f"break-even {money(fee)} per GPU-month")
        tail = f" ({'; '.join(parts)})" if parts else " (would not save money)"
        lines.append(f"Licensed, fee not entered: {lic.label}{tail}")
    return "\n".join(lines)
