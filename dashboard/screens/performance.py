"""Performance page: the roofline of the chosen GPU, latency/throughput curves with provenance, benchmark import."""

import datetime as dt

import streamlit as st

from core.bounds import input_limits
from core.errors import HangoverError
from core.models import REFERENCE_TOKENS, Workload
from core.performance.bench_import import remove_import
from core.performance.hf_config import PRECISIONS, add_stack_from_config
from core.presentation.charts_inputs import (
    TP_OPTIONS,
    benchmark_table,
    curve_view,
    data_key,
    default_stack,
    import_benchmarks,
    latency_chart,
    perf_defaults,
    roofline_chart,
    roofline_frame,
    throughput_chart,
)
from core.presentation.format import column_format, integer, number, plain
from core.presentation.peer_view import peer_blocker, peer_view
from core.service import benchmark_imports
from dashboard import signin
from dashboard.format import md
from dashboard.state import bump_data_version, catalog, data_version, store

FROM_FILE = "(as the file says)"


# Figures are cached as resources (shared, never copied): building a Plotly figure validates every
# property (~0.1-0.5 s here), and cache_data would rebuild it on every read by unpickling it. Being
# shared by all sessions, they are keyed on the data's content (data_key), not on a session's version.
@st.cache_resource(show_spinner=False, max_entries=16)
def _roofline(key: int, gpu_name: str, _cat):
    gpu = _cat.gpu(gpu_name)
    points = roofline_frame(_cat.stacks, gpu, _cat.benchmarks)
    return roofline_chart(points, gpu), points.attrs.get("skipped", [])


@st.cache_resource(show_spinner=False, max_entries=64)
def _curves(key: int, stack_id: str, gpu_name: str, gpus: int, n_in: float, n_out: float, _cat):
    cat = _cat
    stack = next(s for s in cat.stacks if s.stack_id == stack_id)
    curve, note = curve_view(stack, cat.gpu(gpu_name), gpus, n_in, n_out, cat.benchmarks)
    # Two lines: on one, the title ran past a half-width chart at 1280 px and was cut off.
    title = f"{stack_id} on {gpus} × {gpu_name}<br>{integer(n_in)} in / {integer(n_out)} out tokens per request"
    return latency_chart(curve, f"Latency — {title}"), throughput_chart(curve, f"Throughput — {title}"), curve, note


@st.cache_data(show_spinner=False, max_entries=4)
def _benchmarks(data_ver: int, today: str):
    return benchmark_table(catalog(data_ver).benchmarks, dt.date.fromisoformat(today))


version = data_version()
cat = catalog(version)
key = data_key(cat.gpus, cat.stacks, cat.benchmarks)
gpu_name = st.session_state["sc_gpu"]

st.title("Performance")
st.caption(f"GPU: **{md(gpu_name)}** (change it in the sidebar). Figures are roofline **estimates** unless marked "
           "*measured* or *vendor claim*; where benchmarks exist for a stack on this GPU, the estimate is calibrated "
           "to them and the curve passes through them.")
if saved := st.session_state.pop("perf_flash", None):
    st.success(md(saved))

# -- roofline ----------------------------------------------------------------------------
st.subheader("Where each stack sits on the roofline")
try:
    gpu = cat.gpu(gpu_name)
    fig, skipped = _roofline(key, gpu_name, cat)
    st.plotly_chart(fig, width="stretch", key="perf_roofline")
    st.caption(
        f"Left of the ridge a decode step waits on memory: every weight is read from HBM "
        f"({plain(gpu.hbm_tb_per_s)} TB/s) for little arithmetic, so the chip idles. Batching many requests per weight "
        "read moves a stack right; text diffusion refines a block of tokens per pass and starts far right even at "
        "batch 1. Points are estimated achieved FLOP/s (decode, 1,000 input / 256 output tokens) on the GPU count "
        "with the most tokens/s per GPU; the roof is the most the chip allows at that intensity. "
        f"Datasheet: {md(gpu.source)} ({gpu.as_of:%Y-%m-%d}, {gpu.confidence.value}).")
    if skipped:
        st.caption(md(f"Not shown (do not fit on 8 × {gpu_name}): {', '.join(skipped)}."))
except HangoverError as exc:
    st.error(md(str(exc)))

# -- curves ------------------------------------------------------------------------------
st.subheader("Latency and throughput against concurrency")
stack_ids = [s.stack_id for s in cat.stacks]
c1, c2, c3, c4 = st.columns([2, 1, 1, 1])
first = default_stack(cat.stacks, cat.gpu(gpu_name), cat.benchmarks)
stack_id = c1.selectbox("Serving stack", stack_ids, key="perf_stack", index=stack_ids.index(first),
                        format_func=lambda sid: next(f"{s.name} ({sid})" for s in cat.stacks if s.stack_id == sid))
stack = next(s for s in cat.stacks if s.stack_id == stack_id)
try:
    g0, in0, out0 = perf_defaults(stack, cat.gpu(gpu_name), cat.benchmarks)
except HangoverError:
    g0, (in0, out0) = 1, REFERENCE_TOKENS
# Keys carry the stack and GPU: each route opens at its own defaults (where its benchmarks were taken).
route = f"{stack_id}_{gpu_name}"
gpus = c2.selectbox("GPUs per replica", TP_OPTIONS, index=TP_OPTIONS.index(g0) if g0 in TP_OPTIONS else 0,
                    key=f"perf_gpus_{route}")
n_in = c3.number_input("Input tokens", value=int(in0), step=100, key=f"perf_in_{route}",
                       **input_limits(Workload, "input_tokens", whole=True))
n_out = c4.number_input("Output tokens", value=int(out0), step=32, key=f"perf_out_{route}",
                        **input_limits(Workload, "output_tokens", whole=True))
try:
    lat_fig, thr_fig, curve, note = _curves(key, stack_id, gpu_name, int(gpus), float(n_in), float(n_out), cat)
    left, right = st.columns(2)
    left.plotly_chart(lat_fig, width="stretch", key="perf_latency")
    right.plotly_chart(thr_fig, width="stretch", key="perf_throughput")
    st.caption(md(note))
    with st.expander("The curve as a table (each row with its provenance)"):
        st.dataframe(
            curve, hide_index=True, placeholder="—", width="stretch", key="perf_curve_table",
            column_order=["concurrency", "ttft_ms", "e2e_ms", "e2e_ms_p95", "output_tokens_per_s_total",
                          "output_tokens_per_s_per_stream", "fits", "provenance", "source"],
            column_config={
                "concurrency": st.column_config.NumberColumn("concurrency", format=column_format("plain")),
                "ttft_ms": st.column_config.NumberColumn("TTFT", format=column_format("ms")),
                "e2e_ms": st.column_config.NumberColumn("median e2e", format=column_format("ms")),
                "e2e_ms_p95": st.column_config.NumberColumn("p95 e2e", format=column_format("ms")),
                "output_tokens_per_s_total": st.column_config.NumberColumn("tok/s, replica", format=column_format("int")),
                "output_tokens_per_s_per_stream": st.column_config.NumberColumn("tok/s, stream", format=column_format("num_1")),
                "fits": st.column_config.CheckboxColumn("fits in memory"),
                "provenance": st.column_config.TextColumn("provenance", width="medium"),
                "source": st.column_config.TextColumn("source", width="large"),
            },
        )
    # The second opinion is asked for, never computed on load: about a CPU second per concurrency the first time.
    if blocked := peer_blocker(stack, gpu_name):
        st.caption(md(blocked))
    elif st.toggle("Compare with NVIDIA AIConfigurator (a second estimate; slow the first time, then cached)",
                   key="perf_peer"):
        view = peer_view(stack, gpu_name, int(gpus), curve, float(n_in), float(n_out))
        st.caption(md(view.line))
        if view.table is not None:
            ratio = st.column_config.NumberColumn("ratio", format=column_format("num_2"))
            st.dataframe(view.table, hide_index=True, placeholder="—", width="stretch", key="perf_peer_table", column_config={
                "concurrency": st.column_config.NumberColumn("concurrency", format=column_format("plain")),
                "per_stream_roofline": st.column_config.NumberColumn("tok/s, stream", format=column_format("num_1")),
                "per_stream_peer": st.column_config.NumberColumn("AIConfigurator", format=column_format("num_1")),
                "per_stream_ratio": ratio,
                "ttft_roofline": st.column_config.NumberColumn("TTFT", format=column_format("ms")),
                "ttft_peer": st.column_config.NumberColumn("AIConfigurator", format=column_format("ms")),
                "ttft_ratio": ratio,
                "total_roofline": st.column_config.NumberColumn("tok/s, replica", format=column_format("int")),
                "total_peer": st.column_config.NumberColumn("AIConfigurator", format=column_format("int")),
                "total_ratio": ratio,
            })
        if view.note:
            st.caption(md(view.note))
except HangoverError as exc:
    st.error(md(str(exc)))

# -- your own model ----------------------------------------------------------------------
with st.expander("Add your own model from its config.json", expanded=False):
    st.caption("Upload or paste a Hugging Face config.json (Llama, Qwen2/3, Mistral/Mixtral, DeepSeek). Its layers, "
               "hidden size, attention heads and experts give total and active parameters and KV bytes per token. "
               "Quality per task class is copied from the stack you name and labelled an estimate. The stack is "
               "stored as your own row and kept when the bundled data is reloaded (`hangover stacks` does the same).")
    cfg_up = st.file_uploader("config.json", type=["json"], key="perf_cfg_upload", disabled=signin.read_only())
    cfg_text = st.text_area("…or paste it", key="perf_cfg_text", height=120)
    c1, c2, c3, c4 = st.columns(4)
    cfg_id = c1.text_input("Stack id", key="perf_cfg_id", placeholder="qwen25-72b-fp8")
    cfg_precision = c2.selectbox("Precision", list(PRECISIONS), index=1, key="perf_cfg_precision")
    cfg_engine = c3.selectbox("Engine", ["vllm", "sglang", "trtllm"], key="perf_cfg_engine")
    cfg_quality = c4.selectbox("Quality copied from", stack_ids, key="perf_cfg_quality")
    if st.button("Add stack", key="perf_cfg_add", disabled=signin.read_only() or not ((cfg_up or cfg_text.strip()) and cfg_id.strip())):
        try:
            added = add_stack_from_config(
                store(), cfg_up.getvalue() if cfg_up else cfg_text, stack_id=cfg_id, precision=cfg_precision,
                engine=cfg_engine, quality_from=cfg_quality,
                config_name=cfg_up.name if cfg_up else "pasted config.json")
            st.session_state["perf_flash"] = (
                f"Added {added.stack_id}: {added.architecture.value}, {number(added.params_total_b, decimals=2)} B parameters "
                f"({number(added.params_active_b, decimals=2)} B active), {integer(added.kv_bytes_per_token)} KV bytes "
                "per token.")
            bump_data_version()
            st.rerun()
        except HangoverError as exc:
            st.error(md(str(exc)))

# -- benchmarks --------------------------------------------------------------------------
st.subheader("Benchmarks")
with st.expander("Import your own benchmark file", expanded=False):
    st.caption("vLLM `vllm bench serve` / benchmark_serving.py JSON, GuideLLM report JSON, NVIDIA GenAI-Perf CSV or "
               "JSON, ray llmperf *_summary.json. Most files do not say which stack or GPU they measured: name them "
               "here. The same file imported twice adds nothing.")
    signin.read_only_note()
    up = st.file_uploader("Benchmark file", type=["json", "csv"], key="perf_upload", disabled=signin.read_only())
    c1, c2, c3 = st.columns(3)
    imp_stack = c1.selectbox("Serving stack", [FROM_FILE, *stack_ids], key="perf_imp_stack")
    imp_gpu = c2.selectbox("GPU", [FROM_FILE, *[g.name for g in cat.gpus]], key="perf_imp_gpu")
    imp_gpus = c3.selectbox("GPUs per replica", [FROM_FILE, 1, 2, 4, 8, 16], key="perf_imp_gpus")
    c1, c2, c3 = st.columns(3)
    imp_conc = c1.number_input("Concurrency (0 = as the file says)", min_value=0, value=0, key="perf_imp_conc")
    imp_in = c2.number_input("Mean input tokens (0 = as the file says)", min_value=0, value=0, key="perf_imp_in")
    imp_out = c3.number_input("Mean output tokens (0 = as the file says)", min_value=0, value=0, key="perf_imp_out")
    if st.button("Import", key="perf_import", type="primary", disabled=up is None or signin.read_only()):
        try:
            result = import_benchmarks(
                store(), up.getvalue(), up.name,
                stack_id=None if imp_stack == FROM_FILE else imp_stack,
                gpu=None if imp_gpu == FROM_FILE else imp_gpu,
                gpus_per_replica=None if imp_gpus == FROM_FILE else int(imp_gpus),
                concurrency=float(imp_conc) or None, input_tokens=float(imp_in) or None,
                output_tokens=float(imp_out) or None,
            )
            if result.duplicate:
                st.info(md(result.message))
            else:
                st.session_state["perf_flash"] = result.message
                bump_data_version()
                st.rerun()
        except HangoverError as exc:
            st.error(md(str(exc)))

imports = benchmark_imports(store())
if not imports.empty:
    with st.expander("Remove an imported file", expanded=False):
        labels = {r.import_id: f"{r.source} — {integer(r.points)} point(s), {r.tool} (id {r.import_id[:12]})"
                  for r in imports.itertuples(index=False)}
        chosen = st.selectbox("Imported file", list(labels), format_func=labels.get, key="perf_remove_choice")
        if st.button("Remove its points", key="perf_remove", disabled=signin.read_only()):
            try:
                st.session_state["perf_flash"] = remove_import(store(), chosen)
                bump_data_version()
                st.rerun()
            except HangoverError as exc:
                st.error(md(str(exc)))

bench = _benchmarks(version, dt.date.today().isoformat())
# Pixel widths keep the table inside the main column at 1280 px (no sideways scrolling; issue 14).
st.dataframe(
    bench, hide_index=True, width="stretch", height="content", key="perf_bench_table", placeholder="—",
    column_order=["stack_id", "route", "concurrency", "tokens_in_out", "output_tokens_per_s_total", "provenance_words",
                  "tool", "source", "dated"],
    column_config={
        "stack_id": st.column_config.TextColumn("stack", width=150),
        "route": st.column_config.TextColumn("GPU × per replica", width=108),
        "concurrency": st.column_config.NumberColumn("conc.", format=column_format("plain"), width=48),
        "tokens_in_out": st.column_config.TextColumn("tokens in / out", width=95),
        "output_tokens_per_s_total": st.column_config.NumberColumn("tok/s total", format=column_format("int"), width=70),
        "provenance_words": st.column_config.TextColumn("provenance", width=90),
        "tool": st.column_config.TextColumn("tool", width=80),
        "source": st.column_config.TextColumn("source", width=82, help="The whole citation: the Export's workbook "
                                              "(Assumptions) or `hangover bench list`."),
        "dated": st.column_config.TextColumn("as of", width=95, help="⚠ = older than 180 days"),
    },
)
st.caption("Only *measured* and *vendor claim* points calibrate the model, and only for the same stack, GPU and "
           "GPU count. Vendor claims are the vendor's best case; treat them as an upper bound.")
