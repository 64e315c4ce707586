"""`hangover bench import|list|remove|errors`: bring your own benchmark files into the store, see them, take them out."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

from core.errorlog import shorten
from core.errors import InputError
from core.performance.bench_import import import_benchmark_file, remove_import
from core.performance.calibration import error_by_regime, error_report
from core.store import Store, default_db_path
from core.store.benchmarks import list_imports


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `bench` command group."""
    p = sub.add_parser("bench", help="import benchmark files (vLLM, GuideLLM, GenAI-Perf, llmperf) and list benchmarks")
    bsub = p.add_subparsers(dest="bench_command", metavar="ACTION", required=True)

    imp = bsub.add_parser(
        "import",
        help="import one benchmark result file (format detected from its content)",
        description=(
            "Import a vLLM `vllm bench serve` / benchmark_serving.py JSON, a GuideLLM report JSON, "
            "an NVIDIA GenAI-Perf CSV or JSON, or a ray llmperf summary JSON. Name the serving stack "
            "and GPU it measured; importing the same file twice adds nothing."
        ),
    )
    imp.add_argument("file", help="the benchmark file")
    imp.add_argument("--stack", help="serving stack id the file measured (see `hangover perf --help` for ids)")
    imp.add_argument("--gpu", help="GPU name, e.g. 'H100 SXM'")
    imp.add_argument("--gpus-per-replica", type=int, help="GPUs serving one model replica (default: what the file says, else 1)")
    imp.add_argument("--concurrency", type=float, help="requests in flight, when the file does not say")
    imp.add_argument("--input-tokens", type=float, help="mean input tokens per request, when the file does not say")
    imp.add_argument("--output-tokens", type=float, help="mean output tokens per request, when the file does not say")
    imp.add_argument("--as-of", help="date of the measurement, YYYY-MM-DD (default: the file's date, else today)")
    imp.set_defaults(func=cmd_import)

    lst = bsub.add_parser("list", help="benchmark points in the store, with provenance and source")
    lst.add_argument("--stack", help="only this serving stack")
    lst.add_argument("--gpu", help="only this GPU")
    lst.add_argument("--json", action="store_true", help="print JSON records instead of a table")
    lst.set_defaults(func=cmd_list)

    rem = bsub.add_parser(
        "remove",
        help="remove every point of one imported file (by its import id); without an id, list the imports",
        description=("Remove the points one `hangover bench import` added, in one transaction. IMPORT_ID is the "
                     "file's sha256 or its first 8+ characters, as `hangover bench remove` (no id) lists them. "
                     "Bundled points cannot be removed."),
    )
    rem.add_argument("import_id", nargs="?", metavar="IMPORT_ID", help="the import to remove (8+ characters of its id)")
    rem.set_defaults(func=cmd_remove)

    err = bsub.add_parser(
        "errors",
        help="the model's error at every benchmark point and per regime (batch-1, concurrency, speculative, MoE, "
             "diffusion): default physics, calibrated, and predicting a held-out point",
    )
    err.add_argument("--json", action="store_true", help="print JSON records instead of a table")
    err.add_argument("--summary", action="store_true", help="only the median and worst error per regime")
    err.set_defaults(func=cmd_errors)


def _open(args: argparse.Namespace) -> Store:
    return Store(args.db or default_db_path())


def _date(text: str | None) -> dt.date | None:
    if text is None:
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise InputError(f"--as-of must be a date like 2025-06-30; got {text!r}") from None


def cmd_import(args: argparse.Namespace) -> int:
    """Import one file; print what was added (or that it was already there)."""
    path = Path(args.file).expanduser()
    if not path.is_file():
        raise InputError(f"no such file: {path}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    result = import_benchmark_file(
        _open(args),
        data,
        str(path),
        stack_id=args.stack,
        gpu=args.gpu,
        gpus_per_replica=args.gpus_per_replica,
        as_of=_date(args.as_of),
        concurrency=args.concurrency,
        input_tokens=args.input_tokens,
        output_tokens=args.output_tokens,
    )
    print(result.message)
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    """Remove one import's points, or list the imports when no id is given."""
    store = _open(args)
    if not args.import_id:
        df = list_imports(store)
        if df.empty:
            print("no imported benchmark files (bundled points cannot be removed)")
            return 0
        print(f"{'import id':<14} {'points':>7}  {'tool':<18} {'as of':<10}  source")
        for r in df.itertuples(index=False):
            print(f"{r.import_id[:12]:<14} {r.points:>7,}  {str(r.tool)[:18]:<18} {str(r.last_as_of)[:10]:<10}  "
                  f"{shorten(r.source, 80)}")
        print("remove one with: hangover bench remove IMPORT_ID")
        return 0
    print(remove_import(store, args.import_id))
    return 0


def _fmt(v: object, digits: int = 0) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return str(v)


def cmd_list(args: argparse.Namespace) -> int:
    """Print every benchmark point (seed and yours), optionally filtered."""
    df = _open(args).table("benchmarks")
    if args.stack:
        df = df[df["stack_id"] == args.stack]
    if args.gpu:
        df = df[df["gpu"].str.lower() == args.gpu.strip().lower()]
    cols = [
        "stack_id", "gpu", "gpus_per_replica", "concurrency", "input_tokens", "output_tokens",
        "output_tokens_per_s_total", "output_tokens_per_s_per_stream", "ttft_ms_p50", "e2e_ms_p50",
        "e2e_ms_p95", "provenance", "tool", "source", "as_of", "origin", "note",
    ]
    df = df[cols].assign(as_of=df["as_of"].astype(str).str[:10])
    if args.json:
        print(json.dumps(json.loads(df.to_json(orient="records")), indent=2))
        return 0
    if df.empty:
        print("no benchmark points match")
        return 0
    header = f"{'stack':<20} {'gpu':<14} {'g':>2} {'conc':>6} {'in/out':>11} {'tok/s tot':>10} {'tok/s/str':>9} {'ttft p50':>9} {'e2e p50':>9}  {'provenance':<12} {'origin':<6} source"
    print(header)
    for r in df.itertuples(index=False):
        print(
            f"{r.stack_id:<20} {r.gpu:<14} {r.gpus_per_replica:>2} {_fmt(r.concurrency, 1):>6} "
            f"{_fmt(r.input_tokens) + '/' + _fmt(r.output_tokens):>11} {_fmt(r.output_tokens_per_s_total):>10} "
            f"{_fmt(r.output_tokens_per_s_per_stream, 1):>9} {_fmt(r.ttft_ms_p50):>9} {_fmt(r.e2e_ms_p50):>9}  "
            f"{r.provenance:<12} {r.origin:<6} {r.source} ({r.as_of})"
        )
    print(f"{len(df)} point(s); 'measured' = your files or published measurements, 'vendor_claim' = the vendor's own figure")
    return 0


def _pct(v: float) -> str:
    return "-" if v != v else f"{v:+.1%}"


def cmd_errors(args: argparse.Namespace) -> int:
    """Print the error table and its summary by regime (what docs/performance-model.md quotes for the seed data)."""
    store = _open(args)
    df = error_report(store.serving_stacks(), store.gpus(), store.benchmarks())
    by_regime = error_by_regime(df) if not df.empty else None
    if args.json:  # one record per figure (each with its regime), or with --summary one per regime
        table = (by_regime if by_regime is not None else df.iloc[0:0]) if args.summary else df
        print(json.dumps(json.loads(table.to_json(orient="records")), indent=2))
        return 0
    if df.empty or by_regime is None:  # by_regime is None only for an empty table
        print("no measured or vendor-claim benchmark points in the store")
        return 0
    if not args.summary:
        print(f"{'stack':<18} {'gpu':<14} {'g':>2} {'conc':>5} {'metric':<31} {'measured':>9} {'default':>8} {'fitted':>8} {'held out':>8}  {'regime':<16} provenance")
        for r in df.itertuples(index=False):
            print(
                f"{r.stack_id:<18} {r.gpu:<14} {r.gpus_per_replica:>2} {r.concurrency:>5g} {r.metric:<31} "
                f"{r.measured:>9,.1f} {_pct(r.default_error):>8} {_pct(r.fit_error):>8} {_pct(r.holdout_error):>8}  "
                f"{r.regime:<16} {r.provenance}"
            )
        print()
    print("|error| by regime (median / worst):")
    print(f"{'regime':<17} {'figures':>7} {'default physics':>17} {'calibrated':>17} {'held out':>17} {'default bias':>13}")
    for r in by_regime.itertuples(index=False):
        def pair(m: float, w: float) -> str:
            return "-" if m != m else f"{m:.1%} / {w:.1%}"
        print(f"{r.regime:<17} {r.figures:>7} {pair(r.default_median, r.default_worst):>17} "
              f"{pair(r.calibrated_median, r.calibrated_worst):>17} {pair(r.held_out_median, r.held_out_worst):>17} "
              f"{r.default_bias:>12.2f}x")
    held = df["holdout_error"].abs().dropna()
    print(
        f"all {len(df)} figures: default physics median {df['default_error'].abs().median():.1%}, "
        f"worst {df['default_error'].abs().max():.1%}; calibrated median {df['fit_error'].abs().median():.1%}, "
        f"worst {df['fit_error'].abs().max():.1%}"
        + (f"; held out median {held.median():.1%}, worst {held.max():.1%} ({len(held)} figures)" if len(held) else "")
    )
    print("default = roofline with default efficiency; calibrated = fitted to the route's points; "
          "held out = fitted to the route's other points, predicting this one; bias = model / measured "
          "(geometric mean; above 1 = optimistic)")
    return 0
