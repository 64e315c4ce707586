"""Side by side: hangover's roofline against NVIDIA AIConfigurator on a grid of models, GPUs, lengths and loads.

Run with a Python that has the optional extra installed (``pip install -e ".[peer]"``):

    python bench/compare_peer.py                     # the default grid: every row, then a summary per family
    python bench/compare_peer.py --summary --ep      # the summary only; MoE also with expert parallelism
    python bench/compare_peer.py --csv out.csv       # also every row as CSV
    python bench/compare_peer.py --peer-only --csv /work/notes/aic_grid.csv   # AIConfigurator's figures alone

Both sides are estimates. AIConfigurator's come from its measured kernel database (aggregated serving,
in-flight batching); hangover's from ``core.performance.calibration.performance_curve`` with the
bundled benchmarks. Models hangover has no stack for (Qwen3-32B, Mixtral-8x7B) get a stack built from
the config.json AIConfigurator bundles, through ``core.performance.hf_config`` (the same path as
``hangover stacks add --from-config``). Ratios are hangover / AIConfigurator.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.models import Architecture, Engine, ServingStack  # noqa: E402
from core.performance import peer as peer_mod  # noqa: E402
from core.performance import physics  # noqa: E402
from core.performance.peer import PeerConfig, PeerPoint  # noqa: E402


@dataclass(frozen=True)
class GridModel:
    """One model of the grid: how AIConfigurator names it and which hangover stack (if any) it is."""

    label: str
    family: str
    model_path: str
    precision: str  # bf16 | fp8
    stack_id: str  # hangover's stack, or '' when the stack is built from the bundled config.json
    moe: bool
    tps: dict[str, tuple[int, ...]]  # hangover GPU name -> GPUs per replica to ask
    quant: tuple[tuple[str, str], ...] = ()
    backends: tuple[str, ...] = ("trtllm",)
    engine: str = "trtllm"  # engine of a stack built here


FP8_OVERRIDE = (("gemm_quant_mode", "fp8"), ("moe_quant_mode", "fp8"), ("kvcache_quant_mode", "fp8"))
H100, H200 = "H100 SXM", "H200 SXM"

# TP: the count hangover picks by default (smallest power of two that fits) plus the next one up where the
# smallest leaves little room for KV cache; vllm rows too for the stacks hangover runs on vLLM.
GRID: tuple[GridModel, ...] = (
    GridModel("Llama-3.1-8B BF16", "dense 8B", "meta-llama/Meta-Llama-3.1-8B", "bf16", "llama8b-bf16", False,
              {H100: (1,), H200: (1,)}, backends=("trtllm", "vllm")),
    GridModel("Qwen3-32B BF16", "dense 32B", "Qwen/Qwen3-32B", "bf16", "", False, {H100: (2,), H200: (1, 2)}),
    GridModel("Qwen3-32B FP8", "dense 32B", "Qwen/Qwen3-32B-FP8", "fp8", "", False, {H100: (1, 2), H200: (1,)}),
    GridModel("Llama-3.1-70B BF16", "dense 70B", "meta-llama/Meta-Llama-3.1-70B", "bf16", "llama70b-bf16", False,
              {H100: (2, 4), H200: (2, 4)}, backends=("trtllm", "vllm")),
    GridModel("Llama-3.1-70B FP8", "dense 70B", "nvidia/Llama-3.1-70B-Instruct-FP8", "fp8", "llama70b-fp8", False,
              {H100: (1, 2, 4, 8), H200: (1, 2, 4)}),
    GridModel("Qwen3-30B-A3B FP8", "MoE 30B-A3B", "Qwen/Qwen3-30B-A3B-FP8", "fp8", "qwen3-30b-a3b-fp8", True,
              {H100: (1, 2), H200: (1,)}, backends=("trtllm", "vllm")),
    GridModel("Qwen3-235B-A22B FP8", "MoE 235B-A22B", "Qwen/Qwen3-235B-A22B-FP8", "fp8", "qwen3-235b-a22b-fp8",
              True, {H100: (4, 8), H200: (2, 4)}),
    GridModel("Mixtral-8x7B FP8", "MoE 8x7B", "mistralai/Mixtral-8x7B-v0.1", "fp8", "", True,
              {H100: (1, 2), H200: (1, 2)}, quant=FP8_OVERRIDE),
)
CONCURRENCY = (1, 2, 4, 8, 16, 32, 64, 128)
LENGTHS = ((1000, 256), (4000, 512))

PEER_COLUMNS = [
    "model", "hangover_stack_id", "gpu", "precision", "gpus_per_replica", "backend", "backend_version",
    "input_tokens", "output_tokens", "concurrency", "per_stream_tok_s", "ttft_ms", "tpot_ms", "total_tok_s",
    "source", "as_of", "moe_parallel", "note",
]


def peer_rows(peer, models, gpus, lengths, concurrency, *, ep: bool) -> tuple[list[dict], list[str]]:
    """AIConfigurator's figures over the grid, and one line per configuration it could not cover."""
    rows, missed = [], []
    today = dt.date.today().isoformat()
    for m in models:
        for gpu, tps in m.tps.items():
            if gpu not in gpus:
                continue
            system = peer_mod.SYSTEMS[gpu]
            for backend in m.backends:
                for g in tps:
                    for par in (("tp", "ep") if (m.moe and ep and g > 1) else ("tp",) if m.moe else ("",)):
                        for n_in, n_out in lengths:
                            cfg = PeerConfig(m.model_path, system, backend, g, n_in, n_out, moe=m.moe,
                                             expert_parallel=par == "ep", quant=m.quant)
                            points, why = peer_mod.ask(peer, cfg, concurrency)
                            if why:
                                why = why.split(". ")[0]  # its OOM message goes on with advice
                                missed.append(f"{m.label} on {g} x {gpu}, {backend}, {n_in}/{n_out}"
                                              f"{' ' + par.upper() if par else ''}: {why}")
                            for p in points:
                                rows.append(_peer_row(m, gpu, g, backend, n_in, n_out, p, par, peer.version, today))
    return rows, missed


def _peer_row(m: GridModel, gpu, g, backend, n_in, n_out, p: PeerPoint, par, version, today) -> dict:
    return {
        "model": m.label, "hangover_stack_id": m.stack_id, "gpu": gpu, "precision": m.precision.upper(),
        "gpus_per_replica": g, "backend": backend, "backend_version": p.backend_version,
        "input_tokens": n_in, "output_tokens": n_out, "concurrency": p.concurrency,
        "per_stream_tok_s": round(p.per_stream_tok_s, 2), "ttft_ms": round(p.ttft_ms, 2),
        "tpot_ms": round(p.tpot_ms, 3), "total_tok_s": round(p.total_tok_s, 1),
        "source": f"aiconfigurator {version} ({backend} {p.backend_version} kernel database, "
                  f"{peer_mod.SYSTEMS[gpu]}, SILICON, aggregated serving)",
        "as_of": today, "moe_parallel": {"tp": "moe_tp", "ep": "moe_ep"}.get(par, ""), "note": p.note,
    }


def write_csv(path: str, rows: list[dict], columns: list[str]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


# ---- hangover's side --------------------------------------------------------------------------------------


def _bundled_stack(m: GridModel) -> ServingStack:
    """A hangover stack for a model hangover does not ship, from the config.json AIConfigurator bundles."""
    from importlib import resources

    from core.performance import hf_config

    name = m.model_path.replace("/", "--") + "_config.json"
    text = (resources.files("aiconfigurator_core") / "model_configs" / name).read_text()
    shape = hf_config.read_config(text, where=name)
    quality = {f"quality_{k}": 0.8 for k in ("extraction", "code_completion", "chat", "agentic_step", "reasoning")}
    sid = m.label.lower().replace(" ", "-").replace(".", "")
    return hf_config.build_stack(shape, stack_id=sid, precision=m.precision, quality=quality,
                                 quality_note="placeholder (speed comparison only)",
                                 source=f"{m.model_path} config.json as bundled with aiconfigurator",
                                 engine=m.engine)


def grid_stack(store, m: GridModel, engine=None) -> ServingStack:
    """hangover's stack for a grid model (bundled in data/, else built from the peer's config.json), on `engine`."""
    stacks = {s.stack_id: s for s in store.serving_stacks()}
    stack = stacks[m.stack_id] if m.stack_id else _bundled_stack(m)
    if engine and stack.engine.value != engine:
        stack = stack.model_copy(update={"engine": Engine(engine)})
    assert stack.architecture in (Architecture.AUTOREGRESSIVE, Architecture.MOE)
    return stack


def hangover_curve(store, m: GridModel, gpu_name: str, g: int, n_in: int, n_out: int, concurrency, engine=None):
    """hangover's curve for one configuration (the same call `hangover perf` makes), on the peer's engine."""
    from core.performance.calibration import performance_curve

    return performance_curve(grid_stack(store, m, engine), store.gpu(gpu_name), g, [float(c) for c in concurrency],
                             n_in, n_out, store.benchmarks())


def _gemm_split(peer, r: dict, m: GridModel, backend: str) -> tuple[float, float, float]:
    """(TPOT, decode-only step, its dense GEMMs) in ms from the peer's per-operation breakdown of one point."""
    import contextlib
    import io
    import warnings

    g = int(r["gpus_per_replica"])
    moe: dict[str, int] = {}
    if m.moe:
        moe = {"moe_tp_size": 1, "moe_ep_size": g} if r["moe_parallel"] == "moe_ep" else {"moe_tp_size": g, "moe_ep_size": 1}
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), peer_mod._quiet_logs(), \
            peer_mod._quiet_fd2():
        warnings.simplefilter("ignore")
        x = peer._api.cli_estimate(peer._model(m.model_path), peer_mod.SYSTEMS[r["gpu"]], mode="agg",
                                   backend_name=backend, isl=int(r["input_tokens"]), osl=int(r["output_tokens"]),
                                   batch_size=int(r["concurrency"]), tp_size=g, **moe, **dict(m.quant))
    step = x.per_ops_data["genonly_step"]
    # The weight GEMMs (QKV, output projection, MLP); the router and logits GEMMs are BF16 on every engine.
    gemm = sum(v for k, v in step.items() if k.endswith("_gemm") and "router" not in k and "logits" not in k)
    return float(x.tpot), float(x.per_ops_data["scheduling"]["genonly_step_latency_ms"]), float(gemm)


def gemm_swapped(peer, rows: list[dict], models: list[GridModel]) -> None:
    """For vLLM rows, the peer's per-stream tok/s with its vLLM dense-GEMM times replaced by its TensorRT-LLM
    ones for the same shapes (``aic_trt_gemm_tok_s``): its vLLM FP8 block-scaled GEMM table holds ~60-90 us a
    call whatever the shape (docs/performance-model.md), which this isolates. Cached beside the peer's answers."""
    import json

    by_label = {m.label: m for m in models}
    path = (peer_mod.cache_path() or Path("/nonexistent")).with_name("gemm-swap.json")
    cache: dict[str, list[float]] = {}
    if path.is_file():
        cache = json.loads(path.read_text())
    for r in rows:
        if r["backend"] != "vllm" or r["note"]:
            continue
        m = by_label[r["model"]]
        split = {}
        for backend in ("vllm", "trtllm"):
            key = "|".join(str(r[k]) for k in ("model", "gpu", "gpus_per_replica", "input_tokens", "output_tokens",
                                               "concurrency", "moe_parallel")) + f"|{backend}|{peer.version}"
            if key not in cache:
                try:
                    cache[key] = list(_gemm_split(peer, r, m, backend))
                except Exception:  # the peer refuses one side (memory): no swapped figure for the row
                    cache[key] = []
            split[backend] = cache[key]
        if split["vllm"] and split["trtllm"]:
            tpot, step, gemm = split["vllm"]
            # Under load TPOT mixes decode-only and prefill steps: scale it by the decode step's change.
            swapped = tpot * (step - gemm + split["trtllm"][2]) / step
            r["aic_trt_gemm_tok_s"] = 1000.0 / swapped
    if peer_mod.cache_path() is not None:
        path.write_text(json.dumps(cache))


def gemm_table(system: str = "h100_sxm") -> list[str]:
    """The peer's measured FP8 dense-GEMM times (us) for a few weight shapes and token counts, by engine and kernel
    family, beside the time to read the weights at the datasheet bandwidth (H100 SXM: 3.35 TB/s)."""
    from importlib import resources

    import pandas as pd

    base = resources.files("aiconfigurator_core") / "systems" / "data" / system / "gemm"
    tables = {"vllm": "vllm/0.24.0", "trtllm": "trtllm/1.3.0rc20", "sglang": "sglang/0.5.14"}
    frames = {k: pd.read_parquet(str(base / v / "gemm_perf.parquet")) for k, v in tables.items()}
    cols = [("vllm", "fp8_block"), ("vllm", "fp8"), ("trtllm", "fp8_block"), ("sglang", "fp8_block")]
    lines = [f"{'n x k':>12} {'m':>4} " + " ".join(f"{e + ' ' + d:>17}" for e, d in cols) + f" {'weights at HBM':>15}"]
    for n, k in ((5120, 2048), (10240, 8192), (8192, 8192)):
        for m in (1, 8, 64):
            cells = []
            for e, d in cols:
                f = frames[e]
                hit = f[(f.gemm_dtype == d) & (f.n == n) & (f.k == k) & (f.m == m)].latency
                cells.append(f"{hit.min() * 1e3:>17.1f}" if len(hit) else f"{'-':>17}")
            lines.append(f"{n:>6}x{k:<5} {m:>4} " + " ".join(cells) + f" {n * k / 3.35e12 * 1e6:>15.1f}")
    # One layer's weight GEMMs (QKV, output, gate and up, down) of three models: the share of HBM bandwidth the
    # weights stream at (bytes / the GEMMs' summed time), by precision: the roofline streams every precision at
    # one share (Efficiency.mem).
    layers = {"Llama-3.1-8B / Qwen3-8B": ((6144, 4096), (4096, 4096), (12288, 4096), (12288, 4096), (4096, 12288)),
              "Llama-3.1-70B on 4 GPUs": ((2560, 8192), (8192, 2048), (7168, 8192), (7168, 8192), (8192, 7168)),
              "Qwen3-30B-A3B attention": ((5120, 2048), (2048, 4096))}
    kinds = ("bfloat16", "fp8", "fp8_block")
    lines += ["", "share of HBM bandwidth one layer's weight GEMMs reach (bytes / summed time):",
              f"{'layer':<24} {'engine':<7} {'m':>3} " + " ".join(f"{k:>9}" for k in kinds)]
    for name, shapes in layers.items():
        for e in ("trtllm", "sglang", "vllm"):
            best = frames[e].groupby(["gemm_dtype", "n", "k", "m"]).latency.min()
            for m in (1, 16, 64):
                cells = []
                for kind in kinds:
                    try:
                        ms = sum(best[(kind, n, k, m)] for n, k in shapes)
                    except KeyError:
                        cells.append(f"{'-':>9}")
                        continue
                    nbytes = sum(n * k * (2 if kind == "bfloat16" else 1) for n, k in shapes)
                    cells.append(f"{nbytes / (ms * 1e-3) / 3.35e12:>9.0%}")
                lines.append(f"{name:<24} {e:<7} {m:>3} " + " ".join(cells))
    return lines


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("nan")


def compare_rows(peer_side: list[dict], models: list[GridModel]) -> list[dict]:
    """Each peer row with hangover's figures at the same point and the ratios hangover / AIConfigurator."""
    from core.store import Store, default_db_path

    store = Store(default_db_path())
    by_label = {m.label: m for m in models}
    groups: dict[tuple, list[dict]] = {}
    for r in peer_side:
        key = (r["model"], r["gpu"], r["gpus_per_replica"], r["backend"], r["input_tokens"], r["output_tokens"],
               r["moe_parallel"])
        groups.setdefault(key, []).append(r)
    out = []
    for (label, gpu, g, backend, n_in, n_out, _), rows in groups.items():
        m = by_label[label]
        # hangover's engine overhead follows the engine AIConfigurator was asked about.
        m_engine = GridModel(**{**m.__dict__, "engine": backend})
        try:
            df = hangover_curve(store, m_engine, gpu, g, n_in, n_out, [r["concurrency"] for r in rows],
                                engine=backend)
        except Exception as exc:  # e.g. does not fit at all: say so, keep going
            print(f"  hangover cannot estimate {label} on {g} x {gpu}: {exc}")
            continue
        # The curve may add rows (a calibrated route's measured concurrencies): match on concurrency.
        at = {float(h.concurrency): h for h in df.itertuples(index=False)}
        # MoE: the peer is asked for both layouts; hangover models one per engine and GPU count (experts whole
        # on GPUs where the engine places them so, else sliced). Rows of the other layout compare two layouts.
        ep = physics.expert_parallel(grid_stack(store, m_engine, backend), int(g))
        for r in rows:
            h = at[float(r["concurrency"])]
            same = not r["moe_parallel"] or r["moe_parallel"] == ("moe_ep" if ep else "moe_tp")
            out.append({**r, "family": f"{m.family} {m.precision.upper()}" if not m.moe else m.family,
                        "same_layout": same,
                        "h_per_stream_tok_s": float(h.output_tokens_per_s_per_stream), "h_ttft_ms": float(h.ttft_ms),
                        "h_total_tok_s": float(h.output_tokens_per_s_total), "h_fits": bool(h.fits),
                        "r_per_stream": _ratio(h.output_tokens_per_s_per_stream, r["per_stream_tok_s"]),
                        "r_ttft": _ratio(h.ttft_ms, r["ttft_ms"]),
                        "r_total": _ratio(h.output_tokens_per_s_total, r["total_tok_s"]),
                        "r_swap": _ratio(h.output_tokens_per_s_per_stream,
                                         r.get("aic_trt_gemm_tok_s", r["per_stream_tok_s"]))})
    return out


def _worst(ratios: list[float]) -> float:
    """The ratio furthest from 1 on a log scale (0.5 and 2.0 are equally far)."""
    import math

    return max(ratios, key=lambda x: abs(math.log(x)))


def summary(rows: list[dict], band=(0.75, 1.33), same_layout: bool = False, per_stream: str = "r_per_stream") -> list[str]:
    """Per family (and over all): median and worst ratio of per-stream tok/s, TTFT, total tok/s; share in band.
    same_layout: MoE rows only where the peer's layout is the one hangover models for that engine and g;
    per_stream: the per-stream ratio to summarise (r_swap: against the peer with TensorRT-LLM's GEMM times)."""
    rows = [r for r in rows if r.get("same_layout", True)] if same_layout else rows
    lines = [f"{'family':<16} {'points':>6} {'per-stream med':>14} {'worst':>6} {'in band':>8} "
             f"{'TTFT med':>9} {'worst':>6} {'total med':>9} {'worst':>6}"]
    fams = sorted({r["family"] for r in rows}) + ["all"]
    for fam in fams:
        sel = [r for r in rows if (fam == "all" or r["family"] == fam) and r["h_fits"] and not r["note"]]
        if not sel:
            continue
        ps, tt, tot = ([r[k] for r in sel] for k in (per_stream, "r_ttft", "r_total"))
        inband = sum(band[0] <= x <= band[1] for x in ps) / len(ps)
        lines.append(f"{fam:<16} {len(sel):>6} {statistics.median(ps):>14.2f} {_worst(ps):>6.2f} {inband:>8.0%} "
                     f"{statistics.median(tt):>9.2f} {_worst(tt):>6.2f} {statistics.median(tot):>9.2f} "
                     f"{_worst(tot):>6.2f}")
    return lines


def compare(rows: list[dict], missed: list[str], models: list[GridModel], args, peer=None) -> int:
    """Print the rows (with --rows), the per-family summary, and what the peer could not cover."""
    if args.gemm_swap:
        gemm_swapped(peer, rows, models)
    both = compare_rows(rows, models)
    if args.csv:
        cols = PEER_COLUMNS + ["family", "same_layout", "h_per_stream_tok_s", "h_ttft_ms", "h_total_tok_s", "h_fits",
                               "r_per_stream", "r_ttft", "r_total"] + (["aic_trt_gemm_tok_s", "r_swap"] if args.gemm_swap else [])
        write_csv(args.csv, both, cols)
    if not args.summary:
        print(f"{'model':<22} {'gpu':<9} {'g':>2} {'backend':<7} {'in/out':>9} {'conc':>4} {'par':<6} "
              f"{'tok/s/str h':>11} {'aic':>7} {'ratio':>5} {'TTFT h':>7} {'aic':>7} {'ratio':>5} "
              f"{'total h':>8} {'aic':>8} {'ratio':>5}")
        for r in both:
            print(f"{r['model']:<22} {r['gpu']:<9} {r['gpus_per_replica']:>2} {r['backend']:<7} "
                  f"{r['input_tokens']:>4}/{r['output_tokens']:<4} {r['concurrency']:>4} {r['moe_parallel']:<6} "
                  f"{r['h_per_stream_tok_s']:>11.1f} {r['per_stream_tok_s']:>7.1f} {r['r_per_stream']:>5.2f} "
                  f"{r['h_ttft_ms']:>7.0f} {r['ttft_ms']:>7.0f} {r['r_ttft']:>5.2f} "
                  f"{r['h_total_tok_s']:>8.0f} {r['total_tok_s']:>8.0f} {r['r_total']:>5.2f}"
                  f"{'' if r['h_fits'] else '  (hangover: does not fit)'}{'  (aic: ' + r['note'][:40] + ')' if r['note'] else ''}")
        print()
    excluded = sum(1 for r in both if not r["h_fits"] or r["note"])
    print(f"hangover / AIConfigurator {rows[0]['source'].split(' (')[0] if rows else ''}, "
          f"{len(both)} points ({excluded} left out of the summary: hangover says the batch does not fit, "
          f"or AIConfigurator warns its KV cache cannot hold it); band = -25 %/+33 %")
    for line in summary(both):
        print(line)
    print("the same, MoE rows on the layout hangover models (experts whole on GPUs on TensorRT-LLM at g > 1 for "
          ">= 64 experts, else sliced):")
    for line in summary(both, same_layout=True):
        print(line)
    if args.gemm_swap:
        print("the same, vLLM rows against AIConfigurator with its vLLM dense-GEMM times replaced by its TensorRT-LLM "
              "ones for the same shapes:")
        for line in summary(both, same_layout=True, per_stream="r_swap"):
            print(line)
    if missed:
        print("not covered by AIConfigurator:")
        for line in missed:
            print(f"  {line}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", help="comma-separated substrings of model labels (default: all)")
    ap.add_argument("--gpus", default=f"{H100},{H200}", help="comma-separated hangover GPU names")
    ap.add_argument("--concurrency", default=",".join(map(str, CONCURRENCY)))
    ap.add_argument("--lengths", default=",".join(f"{a}/{b}" for a, b in LENGTHS),
                    help="comma-separated input/output pairs")
    ap.add_argument("--ep", action="store_true", help="also ask for MoE with expert parallelism (g > 1)")
    ap.add_argument("--peer-only", action="store_true", help="only AIConfigurator's figures (needs --csv)")
    ap.add_argument("--csv", help="write every row here")
    ap.add_argument("--summary", action="store_true", help="print only the summary per family, not every row")
    ap.add_argument("--gemm-table", action="store_true",
                    help="print the peer's measured FP8 dense-GEMM times by engine for a few shapes, then stop")
    ap.add_argument("--gemm-swap", action="store_true",
                    help="also compare vLLM rows against the peer with TensorRT-LLM's dense-GEMM times")
    args = ap.parse_args(argv)

    peer, why = peer_mod._load()
    if peer is None:
        print(why)
        return 2
    if args.gemm_table:
        print("AIConfigurator's measured FP8 dense GEMMs on H100 SXM (us a call; its database, per engine):")
        print("\n".join(gemm_table()))
        return 0
    models = [m for m in GRID if not args.models or any(s.lower() in m.label.lower() for s in args.models.split(","))]
    gpus = [g.strip() for g in args.gpus.split(",")]
    conc = [int(c) for c in args.concurrency.split(",")]
    lengths = [tuple(int(x) for x in p.split("/")) for p in args.lengths.split(",")]
    rows, missed = peer_rows(peer, models, gpus, lengths, conc, ep=args.ep)
    if args.peer_only:
        if args.csv:
            write_csv(args.csv, rows, PEER_COLUMNS)
        print(f"{len(rows)} AIConfigurator points; not covered:")
        for line in missed:
            print(f"  {line}")
        return 0
    return compare(rows, missed, models, args, peer)


if __name__ == "__main__":
    raise SystemExit(main())
