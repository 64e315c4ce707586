"""`hangover perf`: latency, tokens/s and arithmetic intensity per concurrency for one stack on one GPU, with provenance."""

from __future__ import annotations

import argparse
import json

from core.errors import InputError
from core.models import REFERENCE_TOKENS
from core.performance import physics
from core.performance.calibration import (
    check_fits,
    efficiency_bounds,
    performance_curve,
    route_points,
)
from core.presentation.format import integer
from core.presentation.peer_view import peer_view, text_lines
from core.store import Store, default_db_path

DEFAULT_CONCURRENCY = "1,2,4,8,16,32,64,128,256"
DEFAULT_TOKENS = REFERENCE_TOKENS  # (input, output) when the route has no benchmark


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `perf` command."""
    p = sub.add_parser(
        "perf",
        help="latency and throughput curve of one serving stack on one GPU",
        description=(
            "Roofline estimate of one replica, calibrated to the measured and vendor-claimed "
            "benchmarks of the same stack, GPU and GPU count; rows at measured concurrencies "
            "reproduce the measurement. Every row says where it came from."
        ),
    )
    p.add_argument("--stack", required=True, help="serving stack id, e.g. llama70b-fp8")
    p.add_argument("--gpu", required=True, help="GPU name, e.g. 'H100 SXM'")
    p.add_argument("--gpus-per-replica", type=int, help="GPUs per replica (default: the smallest count that fits)")
    p.add_argument("--concurrency", default=DEFAULT_CONCURRENCY, help=f"comma-separated concurrencies (default {DEFAULT_CONCURRENCY})")
    p.add_argument("--input-tokens", type=float, help=f"mean input tokens (default: those of the route's benchmarks, else {integer(DEFAULT_TOKENS[0])})")
    p.add_argument("--output-tokens", type=float, help=f"mean output tokens (default: those of the route's benchmarks, else {integer(DEFAULT_TOKENS[1])})")
    p.add_argument("--json", action="store_true", help="print the curve as JSON records")
    p.add_argument("--peer", action="store_true",
                   help="also show NVIDIA AIConfigurator's estimate beside the roofline (optional extra: "
                        "pip install -e \".[peer]\"), or one line saying why it has none")
    p.set_defaults(func=cmd_perf)


def parse_concurrency(text: str) -> list[float]:
    """'1,2,4' -> [1.0, 2.0, 4.0]; each must be a positive number."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            v = float(part)
        except ValueError:
            raise InputError(f"--concurrency: {part!r} is not a number (give e.g. 1,2,4,8)") from None
        if not v > 0 or v == float("inf"):
            raise InputError(f"--concurrency: {part} is not a positive number of requests in flight")
        out.append(v)
    if not out:
        raise InputError("--concurrency: give at least one value, e.g. 1,2,4,8")
    return out


def _stack(store: Store, stack_id: str):
    stacks = {s.stack_id: s for s in store.serving_stacks()}
    if stack_id not in stacks:
        raise InputError(f"unknown serving stack {stack_id!r}; known: {', '.join(sorted(stacks))}")
    return stacks[stack_id]


def cmd_perf(args: argparse.Namespace) -> int:
    """Print the curve (table or JSON)."""
    store = Store(args.db or default_db_path())
    stack = _stack(store, args.stack)
    gpu = store.gpu(args.gpu)
    concurrency = parse_concurrency(args.concurrency)
    benchmarks = store.benchmarks()

    notes = []
    gpus = args.gpus_per_replica
    if gpus is None:
        gpus = physics.min_gpus_to_fit(stack, gpu, max_gpus=64)
        if gpus is None:
            check_fits(stack, gpu, 64)  # raises with the sizes
        notes.append(f"GPUs per replica not given: using {gpus}, the smallest power-of-two count that fits")
    elif gpus < 1:
        raise InputError(f"--gpus-per-replica must be at least 1; got {gpus}")

    used, _ = route_points(stack, gpu, gpus, benchmarks)
    n_in, n_out = args.input_tokens, args.output_tokens
    if n_in is None or n_out is None:
        ref = used[0] if used else None
        n_in = n_in if n_in is not None else (ref.input_tokens if ref else DEFAULT_TOKENS[0])
        n_out = n_out if n_out is not None else (ref.output_tokens if ref else DEFAULT_TOKENS[1])
        why = "those of the route's first benchmark" if ref else "the defaults"
        notes.append(f"token lengths {n_in:g} in / {n_out:g} out are {why} (--input-tokens/--output-tokens to change)")

    df = performance_curve(stack, gpu, gpus, concurrency, n_in, n_out, benchmarks)
    cal = df.attrs["calibration"]
    # The range: the curve times how far the pessimistic / optimistic efficiency moves the roofline.
    bounds = efficiency_bounds(stack, gpu, gpus, benchmarks)
    b = df["concurrency"].to_numpy(dtype=float)
    low, mid, high = (physics.estimate(stack, gpu, gpus, b, n_in, n_out, e) for e in bounds)
    for col in ("output_tokens_per_s_total", "e2e_ms"):
        df[f"{col}_low"] = df[col] * low[col] / mid[col]
        df[f"{col}_high"] = df[col] * high[col] / mid[col]
    view = peer_view(stack, gpu.name, gpus, df, n_in, n_out) if args.peer else None
    if args.json:
        records = json.loads(df.to_json(orient="records"))
        if view is None:
            print(json.dumps(records, indent=2))
        else:  # --peer: the curve and the peer side by side (records stay as without --peer)
            peer = json.loads(view.table.to_json(orient="records")) if view.table is not None else None
            print(json.dumps({"curve": records, "peer": {"line": view.line, "note": view.note, "rows": peer}},
                             indent=2))
        return 0

    print(f"{stack.stack_id} ({stack.architecture.value}) on {gpus} x {gpu.name}, {n_in:g} input / {n_out:g} output tokens")

    ridge = physics.ridge_point(stack, gpu)
    print(f"ridge point {ridge:.0f} FLOP/byte: below it a decode step waits on memory, above it on compute")
    if cal.fit:
        print(cal.fit.describe(physics.gemm_prefill_share(stack, gpu, cal.efficiency)))
    else:
        print("no measured or vendor-claim points for this route: default efficiency (estimate)")
    print()
    print(f"range ({bounds.basis}); widest for: {bounds.driver}")
    print(f"{'conc':>6} {'TTFT ms':>9} {'e2e ms':>10} {'e2e p95':>10} {'tok/s total':>12} {'(low - high)':>19} "
          f"{'tok/s/stream':>12} {'FLOP/byte':>10} {'fits':>4}  provenance")
    for r in df.itertuples(index=False):
        span = f"{r.output_tokens_per_s_total_low:,.0f} - {r.output_tokens_per_s_total_high:,.0f}"
        print(
            f"{r.concurrency:>6g} {r.ttft_ms:>9,.0f} {r.e2e_ms:>10,.0f} {r.e2e_ms_p95:>10,.0f} "
            f"{r.output_tokens_per_s_total:>12,.1f} {span:>19} {r.output_tokens_per_s_per_stream:>12,.1f} "
            f"{r.arithmetic_intensity:>10,.1f} {'yes' if r.fits else 'NO':>4}  {r.provenance}"
        )
    measured = df[df["measured_fields"] != ""]
    for r in measured.itertuples(index=False):
        print(f"  at {r.concurrency:g}: measured {r.measured_fields} from {r.source}")
    if not df["fits"].all():
        cap = physics.engine_batch_cap(stack, gpus)
        print(f"  fits = NO: weights plus KV cache for that many sequences exceed the GPUs' memory (90 % usable), "
              f"or the engine's running-batch cap ({stack.engine.value}: {cap:,} sequences)")
    for n in [*notes, *cal.notes]:
        print(f"  note: {n}")
    if view is not None:
        print()
        for line in text_lines(view):
            print(line)
    return 0
