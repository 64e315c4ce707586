"""`hangover simulate`: check the plan's latency by simulating each owned interactive deployment's peak hour."""

from __future__ import annotations

import argparse
import json
import sys

from core.commands.evaluate import add_scenario_arguments, scenario_and_workloads


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `simulate` command."""
    p = sub.add_parser(
        "simulate",
        help="simulate the plan's owned deployments at the peak hour: analytic vs simulated p95 per workload",
        description="Evaluate a scenario (same flags as `hangover evaluate`), then replay every owned interactive "
                    "deployment's peak hour in a discrete-event simulation of continuous batching (Poisson "
                    "arrivals, admission up to the concurrency cap, step time at the running batch, prefill "
                    "interference), with the planned replicas and with one fewer.",
    )
    add_scenario_arguments(p)
    p.add_argument("--requests", type=int, metavar="N",
                   help="requests simulated per deployment (default: the peak hour's, at least 20,000, "
                        "more if the pool's p95 of time over target, its workloads together, has a 95 %% "
                        "interval wider than +-2 %%)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0): the same seed gives the same run")
    p.add_argument("--deployment", metavar="ROUTE_ID", help="simulate only this deployment (e.g. owned:llama70b-fp8)")
    p.add_argument("--format", choices=["table", "json"], default="table", help="table (default) or json")
    p.set_defaults(func=cmd_simulate)


def cmd_simulate(args: argparse.Namespace) -> int:
    """Print analytic vs simulated p95 per workload and, per deployment, whether one replica fewer would do."""
    from core.decision.checks import check_plan
    from core.errors import InputError
    from core.service import evaluate_store
    from core.store import Store, default_db_path

    if args.requests is not None and not 1_000 <= args.requests <= 2_000_000:
        raise InputError(f"--requests {args.requests}: give between 1,000 and 2,000,000 requests per deployment")
    store = Store(args.db or default_db_path())
    scenario, workloads = scenario_and_workloads(args, store)
    ev = evaluate_store(store, scenario, version=args.version, workloads=workloads)
    check = check_plan(ev, requests=args.requests, seed=args.seed, deployment=args.deployment)
    if args.format == "json":
        sys.stdout.write(json.dumps(check.to_dict(), indent=2) + "\n")
        return 0
    print(format_table(check))
    return 0


def format_table(check) -> str:
    """Plain-text tables: per workload, then per deployment."""
    from core.presentation.format import integer, percent

    lines = [f"{'workload':<24} {'deployment':<30} {'target ms':>9} {'analytic p95':>12} {'simulated p95':>13} "
             f"{'95% interval':>15} {'within target':>13}"]
    for w in check.workloads():
        lo, hi = w["simulated_p95_ci_ms"]
        ci = f"{integer(lo)}-{integer(hi)}" if lo is not None and hi is not None else "n/a"
        lines.append(f"{w['workload_id'][:24]:<24} {w['deployment_id'][:30]:<30} {integer(w['slo_ms']):>9} "
                     f"{integer(w['analytic_p95_ms']):>12} {integer(w['simulated_p95_ms']):>13} {ci:>15} "
                     f"{percent(w['share_within_slo'], decimals=1):>13}")
    if len(lines) == 1:
        return "No owned deployment serves interactive work in this plan: nothing to simulate."
    lines += ["", f"{'deployment':<30} {'replicas':>8} {'cap':>5} {'one replica fewer: worst share within target':>45}"]
    members, noisy = check.workloads(detail=True), False
    for d in check.deployments(detail=True):
        fewer = d["share_within_slo_one_replica_fewer"]
        said = check.one_fewer(d, [w for w in members if w["deployment_id"] == d["deployment_id"]])
        say = "n/a (one replica)" if said == "one replica" else f"{percent(fewer, decimals=1)} ({said})"
        lines.append(f"{d['deployment_id'][:30]:<30} {d['replicas']:>8} {d['concurrency_cap']:>5} {say:>45}")
        noisy = noisy or said == "within noise"
    if noisy:
        lines += ["", "within noise: with one replica fewer this run shows neither a workload under its target share "
                  "nor every workload at or above it; --requests 200000 runs longer."]
    lines += ["", "Estimates: the simulation replays the plan's own latency model (physics step times, lognormal "
              "output lengths); it checks the queueing arithmetic, not the physics."]
    return "\n".join(lines)
