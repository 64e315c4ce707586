"""Frames and pure Plotly builders for the input pages: roofline, latency/throughput curves, benchmarks, break-even."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.decision.engine import CONCURRENCY_GRID, TP_OPTIONS
from core.errors import InputError
from core.models import REFERENCE_TOKENS, Benchmark, GpuSpec, ServingStack
from core.performance import physics
from core.performance.bench_import import ImportResult, import_benchmark_file
from core.performance.calibration import Calibration, calibrate, performance_curve, route_points
from core.presentation import palette
from core.presentation.format import D3, hover, integer, percent, plain
from core.presentation.pricing_views import stale_marks
from core.textsafety import escape_plotly

ARCH_COLORS: dict[str, str] = dict(palette.ARCHITECTURE)
# Measured points and vendor claims must never look like estimates (docs/design/README.md: provenance never mixed silently).
PROVENANCE_STYLE: dict[str, dict[str, object]] = {
    "measured": {"name": "measured", "symbol": "circle", "color": palette.INK},
    "vendor_claim": {"name": "vendor claim", "symbol": "diamond-open", "color": palette.ALERT},
}
TIER_COLORS = dict(palette.TIER)
ESTIMATE_COLOR = palette.HOSTING["owned"]  # the model's curve for an owned route
DEFAULT_TOKENS = REFERENCE_TOKENS  # (input, output) tokens per request when no workload is chosen

_LAYOUT = {"template": "plotly_white", "margin": {"l": 60, "r": 20, "t": 50, "b": 50}, "hovermode": "closest"}


def data_key(*tables: Sequence[object]) -> int:
    """A key that changes whenever the content of any given reference table changes.

    For caches shared by every session (figures cached as resources): a
    session's own data version does not see another session's writes, the
    content does. Rows are frozen pydantic models, hashed by value.
    """
    return hash(tuple(tuple(t) for t in tables))


# -- performance frames ------------------------------------------------------------------


def _best_option(stack: ServingStack, gpu: GpuSpec, bench: tuple[Benchmark, ...], input_tokens: float,
                 output_tokens: float) -> tuple[int, int, Calibration, dict] | None:
    """(GPUs per replica, grid index, calibration, estimate) with the most output tokens/s per GPU that fits; None if nothing fits."""
    choice = None
    for g in TP_OPTIONS:
        if physics.max_concurrency(stack, gpu, g, input_tokens + output_tokens) < 1:
            continue
        cal = calibrate(stack, gpu, g, bench)
        est = physics.estimate(stack, gpu, g, CONCURRENCY_GRID, input_tokens, output_tokens, cal.efficiency)
        tps = np.where(est["fits"], est["output_tokens_per_s_total"], -np.inf)
        i = int(np.argmax(tps))
        if choice is None or tps[i] / g > choice[0]:
            choice = (tps[i] / g, g, i, cal, est)
    return None if choice is None else choice[1:]


def roofline_frame(
    stacks: Sequence[ServingStack],
    gpu: GpuSpec,
    benchmarks: Iterable[Benchmark] = (),
    input_tokens: float = DEFAULT_TOKENS[0],
    output_tokens: float = DEFAULT_TOKENS[1],
) -> pd.DataFrame:
    """Each stack on the GPU at batch 1 and at its best batch: intensity, estimated achieved and attainable FLOP/s per GPU.

    Best batch = the concurrency on the engine's grid, and the GPUs per replica
    (1/2/4/8), with the most output tokens/s per GPU whose KV cache fits (the
    engine's own choice); batch 1 uses the same GPU count. Efficiency is
    calibrated where benchmarks exist. Attainable = the roof
    min(peak, HBM bandwidth x intensity) at the stack's precision; achieved =
    decode FLOPs / step time (overheads included). Stacks that fit on no
    option are listed in ``attrs["skipped"]``.
    """
    rows, skipped = [], []
    bench = tuple(benchmarks)
    ctx = float(input_tokens) + 0.5 * float(output_tokens)
    bw = gpu.hbm_tb_per_s * 1e12
    for s in stacks:
        choice = _best_option(s, gpu, bench, input_tokens, output_tokens)
        if choice is None:
            skipped.append(s.stack_id)
            continue
        g, best_i, cal, est = choice
        peak = physics.peak_flops(s, gpu)
        for label, i in (("batch 1", 0), ("best batch", best_i)):
            b = float(CONCURRENCY_GRID[i])
            step_ms, flops, moved, mem_bound = physics.decode_step(s, gpu, g, b, ctx, cal.efficiency)
            intensity = float(flops / moved)
            rows.append({
                "stack_id": s.stack_id,
                "name": s.name,
                "architecture": s.architecture.value,
                "gpus_per_replica": g,
                "point": label,
                "concurrency": b,
                "arithmetic_intensity": intensity,
                "achieved_flops_per_gpu": float(flops / (float(step_ms) / 1e3) / g),
                "attainable_flops_per_gpu": min(peak, bw * intensity),
                "peak_flops_per_gpu": peak,
                "precision": "FP8" if peak != gpu.bf16_tflops * 1e12 else "BF16",
                "memory_bound": bool(mem_bound),
                "output_tokens_per_s_total": float(est["output_tokens_per_s_total"][i]),
                "provenance": cal.estimated_label,
            })
    df = pd.DataFrame(rows, columns=[
        "stack_id", "name", "architecture", "gpus_per_replica", "point", "concurrency", "arithmetic_intensity",
        "achieved_flops_per_gpu", "attainable_flops_per_gpu", "peak_flops_per_gpu", "precision", "memory_bound",
        "output_tokens_per_s_total", "provenance",
    ])
    df.attrs["skipped"] = skipped
    return df


def default_stack(stacks: Sequence[ServingStack], gpu: GpuSpec, benchmarks: Iterable[Benchmark]) -> str:
    """The stack to open the curves with: the first one with measured or claimed points on this GPU, else the first."""
    bench = tuple(benchmarks)
    for s in stacks:
        for g in sorted({b.gpus_per_replica for b in bench if b.stack_id == s.stack_id}):
            if route_points(s, gpu, g, bench)[0]:
                return s.stack_id
    return stacks[0].stack_id


def perf_defaults(stack: ServingStack, gpu: GpuSpec, benchmarks: Iterable[Benchmark]) -> tuple[int, float, float]:
    """(GPUs per replica, input tokens, output tokens) to open the curves with.

    The route with the most measured or claimed points for this stack and GPU,
    at its first point's token lengths, so the curve meets the evidence; with
    no points, the GPU count with the most tokens/s per GPU at 1000 in / 256 out.
    """
    bench = tuple(benchmarks)
    best: tuple[int, list[Benchmark]] | None = None
    for g in sorted({b.gpus_per_replica for b in bench if b.stack_id == stack.stack_id}):
        used, _ = route_points(stack, gpu, g, bench)
        if used and (best is None or len(used) > len(best[1])):
            best = (g, used)
    if best is not None:
        g, used = best
        return g, float(used[0].input_tokens), float(used[0].output_tokens)
    choice = _best_option(stack, gpu, bench, *DEFAULT_TOKENS)
    return (choice[0] if choice else 1), *DEFAULT_TOKENS


def curve_note(cal: Calibration, prefill_share: float | None = None) -> str:
    """What the curve rests on: the fit and its error when calibrated, else that it is a plain estimate
    (prefill_share: Fit.describe's)."""
    if cal.fit is not None:
        text = cal.fit.describe(prefill_share)
    else:
        text = (f"no measured or vendor-claim points for {cal.stack_id} on {cal.gpu} x{cal.gpus}: the whole curve is "
                f"the roofline estimate with default efficiency (HBM {percent(cal.efficiency.mem)}, compute "
                f"{percent(cal.efficiency.compute)} of peak)")
    return "; ".join([text, *cal.notes])


def curve_view(stack: ServingStack, gpu: GpuSpec, gpus: int, input_tokens: float, output_tokens: float,
               benchmarks: Iterable[Benchmark]) -> tuple[pd.DataFrame, str]:
    """(curve over the engine's concurrencies, the note on what it rests on) for one route; the frame carries no attrs."""
    curve = performance_curve(stack, gpu, gpus, CONCURRENCY_GRID, input_tokens, output_tokens, benchmarks)
    cal = curve.attrs["calibration"]
    note = curve_note(cal, physics.gemm_prefill_share(stack, gpu, cal.efficiency))
    curve.attrs = {}  # the Calibration object is not table data (Streamlit would try to serialise it)
    return curve, note


def benchmark_table(benchmarks: Sequence[Benchmark], today: dt.date) -> pd.DataFrame:
    """Every benchmark point with provenance, tool, source, as_of and a stale flag; by stack, GPU and concurrency.

    Also `route` ("H100 SXM ×2") and `tokens_in_out` ("1,000 / 256") labels for compact display.
    """
    cols = ["stack_id", "gpu", "gpus_per_replica", "concurrency", "input_tokens", "output_tokens",
            "output_tokens_per_s_total", "output_tokens_per_s_per_stream", "ttft_ms_p50", "e2e_ms_p50",
            "e2e_ms_p95", "provenance", "tool", "source", "as_of", "confidence", "note"]
    df = pd.DataFrame([b.model_dump(mode="python") for b in benchmarks], columns=[*cols, "ttft_ms_p95"])[cols]
    num = ["concurrency", "input_tokens", "output_tokens", "output_tokens_per_s_total", "output_tokens_per_s_per_stream",
           "ttft_ms_p50", "e2e_ms_p50", "e2e_ms_p95"]
    df[num] = df[num].apply(pd.to_numeric, errors="coerce").astype(float)
    df["provenance"] = df["provenance"].map(lambda p: getattr(p, "value", p))
    df["confidence"] = df["confidence"].map(lambda c: getattr(c, "value", c))
    df.insert(df.columns.get_loc("as_of") + 1, "stale", stale_marks(df["as_of"], today) if len(df) else [])
    # Compact labels so the table fits the page: "H100 SXM ×2", "1,000 / 256".
    df["route"] = df["gpu"] + " ×" + df["gpus_per_replica"].astype(str)
    df["tokens_in_out"] = [f"{integer(i)} / {integer(o)}" for i, o in zip(df["input_tokens"], df["output_tokens"], strict=True)]
    # Words for people ("vendor claim", not "vendor_claim") and the date with its stale mark in one column.
    df["provenance_words"] = df["provenance"].astype(str).str.replace("_", " ")
    df["dated"] = [f"{d} ⚠" if m else d for d, m in zip(df["as_of"].astype(str), df["stale"], strict=True)]
    return df.sort_values(["stack_id", "gpu", "gpus_per_replica", "concurrency"], kind="stable").reset_index(drop=True)


# The import's errors name CLI flags; on the page the same settings are fields with these labels.
IMPORT_FIELDS = {
    "--stack": "the 'Serving stack' field",
    "--gpus-per-replica": "the 'GPUs per replica' field",
    "--gpu": "the 'GPU' field",
    "--concurrency": "the 'Concurrency' field",
    "--input-tokens": "the 'Mean input tokens' field",
    "--output-tokens": "the 'Mean output tokens' field",
}


def import_benchmarks(store, data: bytes, file_name: str, *, stack_id: str | None = None, gpu: str | None = None,
                      gpus_per_replica: int | None = None, concurrency: float | None = None,
                      input_tokens: float | None = None, output_tokens: float | None = None) -> ImportResult:
    """Import one benchmark file (core.performance.bench_import) with the page's settings; None means "as the file says".

    InputError messages are reworded to name the page's fields instead of CLI flags.
    """
    try:
        return import_benchmark_file(store, data, file_name, stack_id=stack_id, gpu=gpu,
                                     gpus_per_replica=gpus_per_replica, concurrency=concurrency,
                                     input_tokens=input_tokens, output_tokens=output_tokens)
    except InputError as exc:
        msg = re.sub(r"pass ((?:--[a-z-]+\s*)+)",
                     lambda m: "fill in " + " and ".join(IMPORT_FIELDS.get(f, f) for f in m.group(1).split()), str(exc))
        msg = re.sub(r"--[a-z-]+", lambda m: IMPORT_FIELDS.get(m.group(0), m.group(0)), msg)
        raise InputError(msg) from None


# -- figures -----------------------------------------------------------------------------


# Marker shapes that tell stacks of one architecture (one colour) apart on the roofline.
STACK_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "hexagon", "star")


def roofline_chart(points: pd.DataFrame, gpu: GpuSpec) -> go.Figure:
    """Log-log roofline of one GPU: the roofs (BF16, and FP8 where the GPU has it) and each stack at batch 1 and best batch."""
    bw = gpu.hbm_tb_per_s * 1e12
    peaks = [("BF16", gpu.bf16_tflops * 1e12)] + ([("FP8", gpu.fp8_tflops * 1e12)] if gpu.fp8_tflops else [])
    lo = 0.25
    hi = max(4.0 * max(p / bw for _, p in peaks), 2.0 * float(points["arithmetic_intensity"].max()) if len(points) else 1.0)
    x = np.geomspace(lo, hi, 200)
    fig = go.Figure()
    for (label, peak), dash in zip(peaks, ("solid", "dash"), strict=False):
        fig.add_trace(go.Scatter(
            x=x, y=np.minimum(peak, bw * x) / 1e12, mode="lines",
            # The ridge is named here, not by an arrow on the chart: the two ridge labels printed over each other.
            name=f"roof at {label} peak ({integer(peak / 1e12)} TFLOP/s; ridge at {integer(peak / bw)} FLOP/B)",
            line={"color": palette.INK, "dash": dash, "width": 2},
            hovertemplate=("intensity " + hover("x", "num_1") + " FLOP/byte<br>attainable " + hover("y", "num_1")
                           + " TFLOP/s<extra>roof</extra>"),
        ))
    # Points carry no text labels (they overprinted one another, issue 14): each stack is a legend entry, told
    # apart within its architecture's colour by its marker shape; hover gives the figures.
    for arch, grp in points.groupby("architecture", sort=False):
        color = ARCH_COLORS.get(arch, palette.UNKNOWN)
        for k, (sid, s) in enumerate(grp.groupby("stack_id", sort=False)):
            s = s.sort_values("concurrency")
            shape = STACK_SYMBOLS[k % len(STACK_SYMBOLS)]
            best = s[s["point"] == "best batch"]["concurrency"]
            name = f"{sid} ({arch}" + (f", best batch {plain(best.iloc[0])})" if len(best) else ")")
            fig.add_trace(go.Scatter(
                x=s["arithmetic_intensity"], y=s["achieved_flops_per_gpu"] / 1e12, mode="lines+markers",
                name=name, legendgroup=arch,
                line={"color": color, "width": 1, "dash": "dot"},
                marker={"color": color, "size": 11,
                        "symbol": [f"{shape}-open" if p == "batch 1" else shape for p in s["point"]],
                        "line": {"width": 2, "color": color}},
                customdata=np.stack([s["point"], s["concurrency"], s["gpus_per_replica"], s["attainable_flops_per_gpu"] / 1e12,
                                     s["output_tokens_per_s_total"], s["provenance"]], axis=-1),
                hovertemplate=(f"<b>{sid}</b> ({arch})<br>%{{customdata[0]}}: concurrency %{{customdata[1]}} on "
                               "%{customdata[2]} GPU(s)<br>intensity " + hover("x", "num_1") + " FLOP/byte<br>"
                               "achieved " + hover("y", "num_1") + " TFLOP/s per GPU (estimate)<br>roof "
                               + hover("customdata[3]", "int") + " TFLOP/s<br>" + hover("customdata[4]", "int")
                               + " output tok/s per replica<br>%{customdata[5]}<extra></extra>"),
            ))
    fig.update_xaxes(type="log", dtick=1, tickformat=D3["grouped"],
                     title="arithmetic intensity, FLOP per byte moved from HBM (log)")
    fig.update_yaxes(type="log", dtick=1, tickformat=D3["grouped"], title="TFLOP/s per GPU (log)")
    fig.update_layout(**_LAYOUT, height=640,
                      title=(f"Roofline of {gpu.name}: line = attainable; points = estimated achieved, "
                             "open = batch 1, filled = best batch"),
                      legend={"orientation": "h", "yanchor": "top", "y": -0.14, "x": 0, "font": {"size": 11}})
    return fig


# Which measured field makes a curve point "measured" for each plotted metric.
_MEASURED_BY = {
    "e2e_ms_p95": ("e2e_ms_p95",),
    "e2e_ms": ("e2e_ms",),
    "ttft_ms": ("ttft_ms", "ttft_ms (from p95)"),
    "output_tokens_per_s_total": ("output_tokens_per_s_total", "output_tokens_per_s_per_stream"),
    "output_tokens_per_s_per_stream": ("output_tokens_per_s_per_stream", "output_tokens_per_s_total"),
}


def _measured_rows(curve: pd.DataFrame, metric: str, provenance: str) -> pd.DataFrame:
    fields = _MEASURED_BY[metric]
    has = curve["measured_fields"].map(lambda s: any(f in [x.strip() for x in str(s).split(",")] for f in fields))
    return curve[(curve["provenance"] == provenance) & has]


def _curve_traces(fig: go.Figure, curve: pd.DataFrame, metric: str, label: str, unit: str, dash: str,
                  secondary: bool | None = None, over_at: float | None = None) -> None:
    """An estimated line (where memory allows), grey markers where it does not (at `over_at` when given: a
    concurrency that does not fit has no figure to plot), and measured/claimed points on top."""
    kw = {} if secondary is None else {"secondary_y": secondary}
    ok = curve[curve["fits"]]
    over = curve[~curve["fits"]]
    if over_at is not None:
        over = over.assign(**{metric: over_at})
    fig.add_trace(go.Scatter(
        x=ok["concurrency"], y=ok[metric], mode="lines+markers", name=f"estimated — {label}",
        legendgroup="estimated", line={"color": ESTIMATE_COLOR, "dash": dash, "width": 2}, marker={"size": 5},
        customdata=ok[["provenance"]],
        hovertemplate=(f"{label}<br>concurrency " + hover("x", "num_g") + ": " + hover("y", "int")
                       + f" {unit}<br>%{{customdata[0]}}<extra></extra>"),
    ), **kw)
    if len(over):
        fig.add_trace(go.Scatter(
            x=over["concurrency"], y=over[metric], mode="markers", name="exceeds GPU memory (not feasible)",
            legendgroup="over", showlegend=not any(t.name == "exceeds GPU memory (not feasible)" for t in fig.data),
            marker={"symbol": "x", "color": palette.FAINT, "size": 8},
            hovertemplate=f"{label}<br>concurrency " + hover("x", "num_g") + ": KV cache does not fit<extra></extra>",
        ), **kw)
    for prov, style in PROVENANCE_STYLE.items():
        pts = _measured_rows(curve, metric, prov)
        if pts.empty:
            continue
        fig.add_trace(go.Scatter(
            x=pts["concurrency"], y=pts[metric], mode="markers", name=str(style["name"]), legendgroup=prov,
            showlegend=not any(t.name == style["name"] for t in fig.data),
            marker={"symbol": style["symbol"], "color": style["color"], "size": 13, "line": {"width": 2, "color": style["color"]}},
            customdata=np.stack([escape_plotly(pts["source"].astype(str)), pts["measured_fields"]], axis=-1),
            hovertemplate=(f"<b>{style['name']}</b> — {label}<br>concurrency " + hover("x", "num_g") + ": "
                           + hover("y", "int") + f" {unit}<br>fields: %{{customdata[1]}}<br>%{{customdata[0]}}"
                           "<extra></extra>"),
        ), **kw)


def latency_chart(curve: pd.DataFrame, title: str = "") -> go.Figure:
    """End-to-end latency (p95 and median) and time to first token against concurrency; measured points marked."""
    fig = go.Figure()
    # Concurrencies whose KV cache does not fit are marked along the top of the feasible curve's range, not at
    # their estimated latencies: those ran to several times the feasible ones and flattened the curve.
    metrics = (("e2e_ms_p95", "p95 end-to-end", "solid"), ("e2e_ms", "median end-to-end", "dash"),
               ("ttft_ms", "time to first token", "dot"))
    fits = curve[curve["fits"]]
    top = max((float(fits[m].max()) for m, _, _ in metrics if len(fits) and fits[m].notna().any()), default=None)
    for metric, label, dash in metrics:
        _curve_traces(fig, curve, metric, label, "ms", dash, over_at=None if top is None else top * 1.1)
    fig.update_xaxes(type="log", dtick=1, tickformat=D3["grouped"],  # 1, 10, 100: not "1 2 5 10 2 5"
                     title="requests in flight per replica (concurrency, log)")
    fig.update_yaxes(title="latency, ms", rangemode="tozero", tickformat=D3["grouped"])
    fig.update_layout(**_LAYOUT, height=420, title=title or "Latency vs concurrency",
                      legend={"orientation": "h", "yanchor": "top", "y": -0.2, "x": 0})
    fig.update_layout(margin_t=80)  # room for a two-line title
    return fig


def throughput_chart(curve: pd.DataFrame, title: str = "") -> go.Figure:
    """Output tokens/s of the replica (left axis) and per stream (right axis) against concurrency; measured points marked."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    _curve_traces(fig, curve, "output_tokens_per_s_total", "tokens/s, whole replica", "tok/s", "solid", secondary=False)
    _curve_traces(fig, curve, "output_tokens_per_s_per_stream", "tokens/s, per stream", "tok/s", "dash", secondary=True)
    fig.update_xaxes(type="log", dtick=1, tickformat=D3["grouped"],  # 1, 10, 100: not "1 2 5 10 2 5"
                     title="requests in flight per replica (concurrency, log)")
    fig.update_yaxes(title="output tokens/s, whole replica", rangemode="tozero", tickformat=D3["grouped"],
                     secondary_y=False)
    # Its own round ticks (tickmode auto): the dashboard's theme synced them to the left axis's grid, which put
    # them at 14.9, 29.9, 44.8, 59.7.
    fig.update_yaxes(title="output tokens/s, per stream (dashed)", rangemode="tozero", tickformat=D3["sig3"],
                     secondary_y=True, showgrid=False, tickmode="auto", nticks=6)
    fig.update_layout(**_LAYOUT, height=420, title=title or "Throughput vs concurrency",
                      legend={"orientation": "h", "yanchor": "top", "y": -0.2, "x": 0})
    fig.update_layout(margin_t=80)  # room for a two-line title
    return fig


def break_even_chart(table: pd.DataFrame, cap: float = 1.5) -> go.Figure:
    """Break-even utilization of the owned node against each API (bars, capped at `cap`), with the 100 % line."""
    df = table.iloc[::-1]  # cheapest-to-beat at the top
    u = df["break_even_utilization"].to_numpy(dtype=float)
    shown = np.clip(np.nan_to_num(u, posinf=cap), 0.0, cap)
    labels = df["provider"] + " " + df["model"]
    text = [percent(v) if np.isfinite(v) and v <= cap else ("never" if not np.isfinite(v) else f"{percent(v)} ▶")
            for v in u]
    fig = go.Figure(go.Bar(
        x=shown, y=labels, orientation="h", text=text, textposition="outside",
        marker={"color": [TIER_COLORS.get(t, palette.UNKNOWN) for t in df["tier"]]},
        customdata=np.stack([df["tier"], df["api_usd_per_mtok_out_all_in"], df["verdict"]], axis=-1),
        hovertemplate=("<b>%{y}</b> (%{customdata[0]})<br>API all-in $" + hover("customdata[1]", "usd_2")
                       + " per M output tokens<br>%{customdata[2]}<extra></extra>"),
        name="break-even utilization",
    ))
    fig.add_vline(x=1.0, line={"color": palette.ALERT, "dash": "dash"}, annotation_text="100 % busy",
                  annotation_position="top")
    fig.update_xaxes(title="utilization the owned node needs to beat the API", tickformat=D3["pct"],
                     range=[0, cap * 1.12])
    fig.update_yaxes(title=None, automargin=True)
    fig.update_layout(**_LAYOUT, height=max(300, 28 * len(df) + 120), showlegend=False,
                      title="Break-even utilization: owned node vs each API (shorter bar = owned wins sooner)")
    return fig


__all__ = [
    "ARCH_COLORS",
    "CONCURRENCY_GRID",
    "TP_OPTIONS",
    "PROVENANCE_STYLE",
    "benchmark_table",
    "break_even_chart",
    "curve_note",
    "curve_view",
    "data_key",
    "default_stack",
    "import_benchmarks",
    "latency_chart",
    "perf_defaults",
    "roofline_chart",
    "roofline_frame",
    "throughput_chart",
]
