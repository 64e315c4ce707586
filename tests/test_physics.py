"""Golden numbers and properties of the roofline model (core/physics.py), with the arithmetic written out."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.models import GpuSpec, ServingStack
from core.performance import physics
from core.performance.physics import DEFAULT_EFFICIENCY, Efficiency

# Stacks and GPUs are spelled out here (not read from data/) so the hand arithmetic stays true
# whatever the seed files say later.
QUALITY = dict.fromkeys(
    ("quality_extraction", "quality_code_completion", "quality_chat", "quality_agentic_step", "quality_reasoning"), 0.8
)
SOURCED = {"source": "test", "as_of": dt.date(2025, 1, 1)}

# Peak shares of 1 and no fixed costs: the datasheet ceiling itself.
IDEAL = Efficiency(mem=1.0, compute=1.0, prefill_compute=1.0, step_overhead_ms=0.0, comm_ms_per_doubling=0.0, moe_overhead_ms=0.0)


def make_stack(stack_id: str, **kw) -> ServingStack:
    return ServingStack(stack_id=stack_id, name=stack_id, **QUALITY, **SOURCED, **kw)


def make_gpu(name: str, hbm_gb: float, tb_s: float, bf16: float, fp8: float | None, **kw) -> GpuSpec:
    return GpuSpec(name=name, hbm_gb=hbm_gb, hbm_tb_per_s=tb_s, bf16_tflops=bf16, fp8_tflops=fp8, tdp_w=700, **SOURCED, **kw)


H100 = make_gpu("H100 SXM", 80, 3.35, 989, 1979)
H200 = make_gpu("H200 SXM", 141, 4.8, 989, 1979)
A100 = make_gpu("A100 80GB SXM", 80, 2.039, 312, None)

LLAMA70_FP8 = make_stack("l70-fp8", architecture="autoregressive", params_total_b=70, params_active_b=70, bytes_per_param=1, kv_bytes_per_token=163840)
LLAMA70_FP8_706 = make_stack("l70-fp8-706", architecture="autoregressive", params_total_b=70.6, params_active_b=70.6, bytes_per_param=1, kv_bytes_per_token=163840)
LLAMA70_BF16 = make_stack("l70-bf16", architecture="autoregressive", params_total_b=70.6, params_active_b=70.6, bytes_per_param=2, kv_bytes_per_token=327680)
LLAMA8_BF16 = make_stack("l8-bf16", architecture="autoregressive", params_total_b=8, params_active_b=8, bytes_per_param=2, kv_bytes_per_token=131072)
SPEC = make_stack(
    "l70-fp8-spec", architecture="speculative", params_total_b=70.6, params_active_b=70.6, bytes_per_param=1,
    kv_bytes_per_token=163840, spec_draft_tokens=4, spec_acceptance=0.8, spec_draft_params_b=1.0,
)
QWEN_MOE = make_stack(
    "qwen30-a3", architecture="moe", params_total_b=30.5, params_active_b=3.3, bytes_per_param=1,
    kv_bytes_per_token=49152, n_experts=128, experts_per_token=8,
)
LLADA = make_stack(
    "llada", architecture="diffusion", params_total_b=8, params_active_b=8, bytes_per_param=2,
    kv_bytes_per_token=524288, diffusion_block_tokens=32, diffusion_steps_per_block=8,
)
# With layer counts and hidden sizes (from the model cards): all-reduces, attention FLOPs, expert sizes.
H100_NV = make_gpu("H100 SXM NVLink", 80, 3.35, 989, 1979, link_gb_per_s=900)
B200 = make_gpu("B200", 180, 8.0, 2250, 4500, fp4_tflops=9000, link_gb_per_s=1800)
L70_TP = LLAMA70_FP8_706.model_copy(update={"stack_id": "l70-tp", "n_layers": 80, "hidden_size": 8192})
QWEN_MOE_L = QWEN_MOE.model_copy(update={"stack_id": "qwen30-l", "n_layers": 48, "hidden_size": 2048})
MIXTRAL = make_stack(
    "mixtral", architecture="moe", params_total_b=46.7, params_active_b=12.9, bytes_per_param=2,
    kv_bytes_per_token=131072, n_experts=8, experts_per_token=2, n_layers=32, hidden_size=4096,
)
MEDUSA = SPEC.model_copy(update={"stack_id": "l70-medusa", "spec_method": "medusa", "spec_acceptance": 0.6,
                                 "spec_draft_params_b": 0.3, "n_layers": 80, "hidden_size": 8192})
EAGLE = SPEC.model_copy(update={"stack_id": "l70-eagle", "spec_method": "eagle", "spec_draft_tokens": 5,
                                "spec_acceptance": 0.75, "spec_draft_params_b": 1.0, "n_layers": 80, "hidden_size": 8192})
LLADA_L = LLADA.model_copy(update={"stack_id": "llada-l", "n_layers": 32, "hidden_size": 4096})
ALL_STACKS = [LLAMA70_FP8, LLAMA70_BF16, LLAMA8_BF16, SPEC, QWEN_MOE, LLADA, L70_TP, QWEN_MOE_L, MIXTRAL, MEDUSA,
              EAGLE, LLADA_L]


def one(x) -> float:
    return float(np.asarray(x).reshape(-1)[0])


# -- the four figures of issue 3 --------------------------------------------------------


def test_70b_fp8_on_one_h100_cannot_exceed_48_tokens_per_s_at_batch_1():
    """Every generated token streams all weights from HBM once.

    70 B params x 1 byte (FP8) = 70 GB; one H100 moves 3.35 TB/s:
        step >= 70e9 / 3.35e12 s = 20.90 ms  ->  at most 1000 / 20.90 = 47.86 tokens/s.
    KV for a 150-token context (150 x 163,840 B = 24.6 MB) adds 0.007 ms: ~47.84.
    With the default efficiency (80 % of bandwidth) and vLLM's step overhead (1.0 ms, the default engine):
        70.0246e9 / (3.35e12 x 0.8) = 26.13 ms + 1.0 = 27.13 ms  ->  36.86 tokens/s.
    """
    ideal = physics.estimate(LLAMA70_FP8, H100, 1, 1, 100, 100, IDEAL)
    assert one(ideal["output_tokens_per_s_per_stream"]) <= 48.0
    assert one(ideal["output_tokens_per_s_per_stream"]) == pytest.approx(47.84, rel=0.002)
    real = physics.estimate(LLAMA70_FP8, H100, 1, 1, 100, 100)
    assert one(real["output_tokens_per_s_per_stream"]) == pytest.approx(36.86, rel=0.005)
    assert one(real["fits"])


@pytest.mark.parametrize("b", [1, 2, 4, 8, 16, 32])
def test_dense_ar_decode_intensity_is_about_b_flop_per_byte_for_2_byte_weights(b):
    """AR decode: FLOPs = 2 x P x b, bytes = 2 x P (BF16 weights) + KV.

    8 B params: FLOPs = 16e9 x b; weights 16e9 B; KV per sequence at a 65-token
    context (64 in + half of 2 out) = 65 x 131,072 B = 8.52 MB, so
        intensity = 16e9 b / (16e9 + 8.52e6 b) = b / (1 + 5.3e-4 b)
    -> 0.9995 at b=1, 7.97 at b=8, 31.5 at b=32: about b, a little under.
    """
    est = physics.estimate(LLAMA8_BF16, H100, 1, b, 64, 2)
    ai = one(est["arithmetic_intensity"])
    assert ai == pytest.approx(b / (1 + 8.52e6 * b / 16e9), rel=1e-3)
    assert 0.98 * b < ai < b


def test_diffusion_step_intensity_is_about_block_length_for_bf16():
    """Diffusion: each pass runs the whole block of L positions through the model.

    FLOPs = 2 x P x b x L; bytes = 2 x P (BF16) + KV, so at b=1 intensity ~ L:
      L=32  (8 B params, 80-token context, 524,288 B KV/token = 41.9 MB):
            2 x 8e9 x 32 / (16e9 + 41.9e6) = 31.92
      L=256 (whole-canvas block): 2 x 8e9 x 256 / (16e9 + 41.9e6) = 255.3
    "Hundreds" needs a block of ~100+ tokens (the seed mercury-class stack uses 128);
    AR at batch 1 is ~1, so a diffusion pass does ~L times more work per byte.
    """
    ai_32 = one(physics.estimate(LLADA, H100, 1, 1, 64, 32)["arithmetic_intensity"])
    assert ai_32 == pytest.approx(2 * 8e9 * 32 / (16e9 + 80 * 524288), rel=1e-3)
    assert 31 < ai_32 < 32
    canvas = LLADA.model_copy(update={"diffusion_block_tokens": 256, "diffusion_steps_per_block": 64})
    ai_256 = one(physics.estimate(canvas, H100, 1, 1, 64, 32)["arithmetic_intensity"])
    assert 250 < ai_256 < 256
    ai_ar = one(physics.estimate(LLAMA8_BF16, H100, 1, 1, 64, 32)["arithmetic_intensity"])
    assert ai_32 / ai_ar == pytest.approx(32, rel=0.01)


def test_speculative_speedup_is_over_2x_at_batch_1_and_fades_once_compute_bound():
    """Llama-70B FP8 on one H200 (4.8 TB/s, 1,979 TFLOP/s FP8), k = 4 drafts, acceptance 0.8, 1 B draft model.

    Tokens per verify step = (1 - 0.8^5) / (1 - 0.8) = (1 - 0.32768) / 0.2 = 3.3616.
    Batch 1, 1000 in / 1000 out (context 1500 tokens, KV 1500 x 163,840 B = 0.246 GB), vLLM overhead 1.0 ms:
      AR step   = (70.6e9 + 0.246e9) / (4.8e12 x 0.8) = 18.45 ms + 1.0 = 19.45 ms
      spec step = the same target read (its 5-token compute, 0.7 ms, hides under it)
                  + 4 draft steps x (1e9 / 3.84e12 = 0.26 ms + 0.15 draft launch) = 19.45 + 1.64 = 21.09 ms
      speed-up  = 3.3616 x 19.45 / 21.09 = 3.10  (>= 2)
    Batch 128 (weights and attention are separate kernels, each on its own roofline):
      AR step   = max(70.6e9 / 3.84e12 = 18.39 ms, 2 x 70.6e9 x 128 / (1979e12 x 0.5) = 18.27 ms)
                  + KV 128 x 0.246e9 / 3.84e12 = 8.19 ms + 1.0 = 27.58 ms
      spec step = max(18.39, 5 x 18.27 = 91.33) + 8.19 + 1.0 + 4 x (0.26 + 0.15) = 102.16 ms
      decode speed-up = 3.3616 x 27.58 / 102.16 = 0.91: once compute-bound, verifying 5 positions
      per stream costs more than the accepted tokens save.
    """
    k1 = physics.estimate(SPEC, H200, 1, 1, 1000, 1000)
    a1 = physics.estimate(LLAMA70_FP8_706, H200, 1, 1, 1000, 1000)
    assert physics.tokens_committed_per_step(SPEC) == pytest.approx(3.3616)
    assert one(a1["step_ms"]) == pytest.approx(19.45, abs=0.01)
    assert one(k1["step_ms"]) == pytest.approx(21.09, abs=0.01)
    speedup_1 = one(k1["output_tokens_per_s_per_stream"]) / one(a1["output_tokens_per_s_per_stream"])
    assert speedup_1 >= 2.0
    assert speedup_1 == pytest.approx(3.10, rel=0.01)

    k128 = physics.estimate(SPEC, H200, 1, 128, 1000, 1000)
    a128 = physics.estimate(LLAMA70_FP8_706, H200, 1, 128, 1000, 1000)
    assert not one(k128["memory_bound"]) and one(a128["memory_bound"])
    assert one(a128["step_ms"]) == pytest.approx(27.58, abs=0.02)
    assert one(k128["step_ms"]) == pytest.approx(102.16, abs=0.05)
    decode_speedup = 3.3616 * one(a128["step_ms"]) / one(k128["step_ms"])
    assert decode_speedup == pytest.approx(0.91, abs=0.01)
    speedup_128 = one(k128["output_tokens_per_s_per_stream"]) / one(a128["output_tokens_per_s_per_stream"])
    assert speedup_128 <= 1.0

    b = np.array([1, 2, 4, 8, 16, 32, 64, 128], dtype=float)
    ratio = physics.estimate(SPEC, H200, 1, b, 1000, 1000)["output_tokens_per_s_per_stream"] / physics.estimate(
        LLAMA70_FP8_706, H200, 1, b, 1000, 1000
    )["output_tokens_per_s_per_stream"]
    assert np.all(np.diff(ratio) <= 1e-12), "the gain only fades as the batch grows"


# -- MoE, memory, shapes ------------------------------------------------------------------


def test_moe_experts_touched_grow_with_batch():
    """Qwen3-30B-A3B: 30.5 B total, 3.3 B active, 128 experts, 8 per token, FP8.

    total = dense + experts, active = dense + experts x 8/128:
        experts = (30.5 - 3.3) / (1 - 1/16) = 29.013 B, dense = 1.487 B.
    T tokens in a step touch a share 1 - (15/16)^T of the experts:
        T=1:  1.487 + 29.013 / 16            =  3.30 GB  (= the active params)
        T=16: 1.487 + 29.013 x (1 - 0.35607)  = 20.17 GB
        T=64: 1.487 + 29.013 x (1 - 0.01608)  = 30.03 GB  (-> 30.5 GB, all weights)
    """
    got = physics.weight_bytes_read(QWEN_MOE, np.array([1.0, 16.0, 64.0, 4096.0])) / 1e9
    assert got == pytest.approx([3.30, 20.17, 30.03, 30.5], abs=0.01)
    b = np.array([1, 2, 4, 8, 16, 32, 64], dtype=float)
    est = physics.estimate(QWEN_MOE, H100, 1, b, 1000, 200)
    assert np.all(np.diff(est["step_ms"]) > 0)
    # A dense model of the same total size reads everything at every batch: MoE is cheap only at small b.
    assert one(physics.weight_bytes_read(LLAMA8_BF16, 1.0)) == pytest.approx(16e9)


def test_70b_bf16_does_not_fit_one_h100_and_fits_four_sequences_on_two():
    """70.6 B x 2 bytes = 141.2 GB of weights; 90 % of HBM is usable.

    1 x H100: 80 x 0.9 = 72 GB < 141.2 GB                 -> 0 sequences (does not fit)
    2 x H100: 160 x 0.9 = 144 GB; 144 - 141.2 = 2.8 GB left;
              one 2048-token sequence holds 2048 x 327,680 B = 671.1 MB of KV;
              2.8e9 / 671.1e6 = 4.17                       -> 4 sequences
    """
    assert physics.max_concurrency(LLAMA70_BF16, H100, 1, 2048) == 0
    assert physics.max_concurrency(LLAMA70_BF16, H100, 2, 2048) == 4
    assert physics.min_gpus_to_fit(LLAMA70_BF16, H100, 2048) == 2
    est = physics.estimate(LLAMA70_BF16, H100, 1, 1, 1024, 1024)
    assert not one(est["fits"])


def test_speculative_draft_weights_take_memory_too():
    """The 1 B FP8 draft lives in HBM beside the 70.6 B target: 1 GB less for KV.

    H200: 141 x 0.9 = 126.9 GB; AR: (126.9 - 70.6) / (2000 x 163,840 B = 327.68 MB) = 171.8 -> 171;
    with the draft: (126.9 - 71.6) / 327.68 MB = 168.8 -> 168.
    """
    assert physics.max_concurrency(LLAMA70_FP8_706, H200, 1, 2000) == 171
    assert physics.max_concurrency(SPEC, H200, 1, 2000) == 168


def test_diffusion_first_tokens_wait_for_the_first_block():
    """A diffusion block's tokens are final after its S passes: TTFT = prefill + half a step + S steps."""
    est = physics.estimate(LLADA, H100, 1, 1, 500, 256)
    join = one(est["prefill_ms"]) + 0.5 * one(est["step_ms"])
    assert one(est["ttft_ms"]) == pytest.approx(join + 8 * one(est["step_ms"]))
    # 256 tokens = 8 blocks x 8 passes = 64 passes after joining
    assert one(est["e2e_ms"]) == pytest.approx(join + 64 * one(est["step_ms"]))
    assert one(est["output_tokens_per_s_per_stream"]) == pytest.approx(256 / (64 * one(est["step_ms"])) * 1e3)


def test_ar_ttft_is_prefill_plus_half_a_step():
    """Prefill of 1000 tokens of an 8 B BF16 model on one H100, at prefill_compute 0.5 x bf16_prefill 1.3 = 0.65 of the
    BF16 peak: 2 x 8e9 x 1000 / (989e12 x 0.65) = 24.89 ms + 1.0 (vLLM)."""
    est = physics.estimate(LLAMA8_BF16, H100, 1, 1, 1000, 100)
    assert one(est["prefill_ms"]) == pytest.approx(24.89 + 1.0, abs=0.01)
    assert one(est["ttft_ms"]) == pytest.approx(one(est["prefill_ms"]) + 0.5 * one(est["step_ms"]))


def test_prefill_reaches_a_larger_share_of_the_bf16_peak_than_of_the_fp8_one():
    """prefill_compute (0.5) is the share of the FP8 peak; on BF16 tensor cores prefill reaches 1.3 x that, 0.65
    (AIConfigurator's measured GEMM tables: BF16 / FP8 0.79 / 0.60 of peak on H100). An FP8 stack on a GPU without
    FP8 (A100) runs at the BF16 peak, so at the BF16 share; the share never passes the peak. Prefill of 1,000
    tokens of a 70 B FP8 model on one H100: 2 x 70e9 x 1000 / (1979e12 x 0.5) = 141.49 ms; of the same model in
    BF16: 2 x 70.6e9 x 1000 / (989e12 x 0.65) = 219.65 ms (at 0.5 it was 285.54 ms)."""
    bare = replace(DEFAULT_EFFICIENCY, step_overhead_ms=0.0, layer_overhead_us=0.0, host_us_per_seq=0.0)
    assert physics.prefill_share(1979e12, H100, bare) == 0.5
    assert physics.prefill_share(989e12, H100, bare) == pytest.approx(0.65)
    assert physics.prefill_share(312e12, A100, bare) == pytest.approx(0.65)
    assert physics.prefill_share(989e12, H100, replace(bare, prefill_compute=0.9)) == 1.0
    assert physics.prefill_share(989e12, H100, physics.PERFECT_EFFICIENCY) == 1.0
    fp8 = float(physics.prefill_ms(LLAMA70_FP8, H100, 1, 1000.0, bare))
    bf16 = float(physics.prefill_ms(LLAMA70_BF16, H100, 1, 1000.0, bare))
    assert fp8 == pytest.approx(2 * 70e9 * 1000 / (1979e12 * 0.5) * 1e3, rel=1e-9)
    assert bf16 == pytest.approx(2 * 70.6e9 * 1000 / (989e12 * 0.65) * 1e3, rel=1e-9)
    assert bf16 == pytest.approx(219.65, abs=0.01) and fp8 == pytest.approx(141.49, abs=0.01)


def test_ttft_under_load_queues_behind_the_others_prefills_and_shares_steps():
    """Hand-worked ttft_under_load at b = 5, 9,000 input tokens, prefill 100 ms, step 20 ms (bare 8 ms), e2e 2,000 ms.

    rho = (5 - 1) x 100 / 2000 = 0.2; wait = 0.2 x 100 / (2 x 0.8) = 12.5 ms (under 4 x 100);
    chunks = ceil(9000 / 8192) = 2 (vLLM), each carrying the others' decode beyond the bare step: 2 x (20 - 8) = 24 ms;
    TTFT = 100 + 0.5 x 20 + 12.5 + 24 = 146.5 ms. At b = 1 it is the lone prefill plus half a step: 110 ms.
    """
    got = physics.ttft_under_load(LLAMA8_BF16, np.array([1.0, 5.0]), 9000.0, 20.0, 100.0, 2000.0, 8.0)
    assert got == pytest.approx([110.0, 146.5])


def test_ttft_grows_with_load_and_is_the_lone_prefill_at_one_stream():
    """estimate(): TTFT at 1 stream is prefill + half a step; at 64 streams it is longer by the queue and shared steps."""
    est = physics.estimate(LLAMA8_BF16, H100, 1, np.array([1.0, 8.0, 64.0]), 1000, 100)
    assert est["ttft_ms"][0] == pytest.approx(est["prefill_ms"][0] + 0.5 * est["step_ms"][0])
    assert est["ttft_ms"][0] < est["ttft_ms"][1] < est["ttft_ms"][2]
    assert est["ttft_ms"][2] > est["prefill_ms"][2] + 0.5 * est["step_ms"][2]


def test_attention_flops_read_the_attention_width_where_it_is_not_the_hidden_size():
    """Qwen3-30B-A3B shape (48 layers, hidden 2,048, 32 heads x 128 = 4,096): QK^T and AV over 1,000 tokens of
    context cost 4 x 48 x 4,096 x 1,000 = 786.4 MFLOP per position, twice what the hidden size would give."""
    wide = QWEN_MOE_L.model_copy(update={"attention_width": 4096})
    assert physics._attention_flops(wide, 1000.0, 1.0) == pytest.approx(4 * 48 * 4096 * 1000)
    assert physics._attention_flops(QWEN_MOE_L, 1000.0, 1.0) == pytest.approx(4 * 48 * 2048 * 1000)
    assert one(physics.prefill_ms(wide, H100, 1, 8000.0)) > one(physics.prefill_ms(QWEN_MOE_L, H100, 1, 8000.0))


def test_fp8_uses_fp8_tensor_cores_only_where_the_gpu_has_them():
    """Ridge point = peak FLOP/s / bandwidth: H100 FP8 1979e12 / 3.35e12 = 590.7; A100 (no FP8) 312e12 / 2.039e12 = 153.0."""
    assert physics.ridge_point(LLAMA70_FP8, H100) == pytest.approx(590.7, abs=0.1)
    assert physics.ridge_point(LLAMA70_FP8, A100) == pytest.approx(153.0, abs=0.1)
    assert physics.ridge_point(LLAMA70_BF16, H100) == pytest.approx(295.2, abs=0.1)


def test_engine_shapes_broadcast_workloads_by_concurrencies():
    """The engine passes concurrency (1, B) and token lengths (W, 1) and reads (W, B) arrays."""
    b = np.array([[1.0, 4.0, 16.0, 64.0]])
    n_in = np.array([[100.0], [1000.0], [8000.0]])
    n_out = np.array([[50.0], [500.0], [2000.0]])
    for s in ALL_STACKS:
        est = physics.estimate(s, H100, 4, b, n_in, n_out, DEFAULT_EFFICIENCY)
        for key in ("e2e_ms_p95", "ttft_ms", "output_tokens_per_s_total", "output_tokens_per_s_per_stream", "requests_per_s", "fits", "arithmetic_intensity"):
            assert est[key].shape == (3, 4), (s.stack_id, key)
            if key != "fits":
                assert np.all(np.isfinite(est[key])) and np.all(est[key] > 0)


# -- properties ---------------------------------------------------------------------------


routes = st.tuples(
    st.sampled_from(ALL_STACKS),
    st.sampled_from([H100, H200, A100, H100_NV, B200]),
    st.sampled_from([1, 2, 4, 8]),
    st.floats(0, 16000),
    st.floats(1, 4000),
)
pairs = st.tuples(st.floats(1, 512), st.floats(1, 512)).map(sorted)


@settings(max_examples=60, deadline=None)
@given(routes, pairs)
def test_latency_intensity_and_total_throughput_never_fall_as_concurrency_grows(route, pair):
    """More requests in flight never shorten a request, never lower FLOP/byte, and (memory-bound) never lower total tokens/s."""
    stack, gpu, g, n_in, n_out = route
    b = np.array(pair)
    est = physics.estimate(stack, gpu, g, b, n_in, n_out)
    tol = 1e-9
    assert est["e2e_ms"][1] >= est["e2e_ms"][0] * (1 - tol)
    assert est["e2e_ms_p95"][1] >= est["e2e_ms_p95"][0] * (1 - tol)
    assert est["ttft_ms"][1] >= est["ttft_ms"][0] * (1 - tol)
    assert est["arithmetic_intensity"][1] >= est["arithmetic_intensity"][0] * (1 - tol)
    if est["memory_bound"].all():
        assert est["output_tokens_per_s_total"][1] >= est["output_tokens_per_s_total"][0] * (1 - tol)
        assert est["output_tokens_per_s_per_stream"][1] <= est["output_tokens_per_s_per_stream"][0] * (1 + tol)


@settings(max_examples=50, deadline=None)
@given(routes, pairs)
def test_total_throughput_never_falls_with_concurrency_even_compute_bound(route, pair):
    """Every step cost is a max of affine terms with non-negative intercepts, so e2e/b never rises: total tokens/s = b n / e2e never falls."""
    stack, gpu, g, n_in, n_out = route
    est = physics.estimate(stack, gpu, g, np.array(pair), n_in, n_out)
    assert est["output_tokens_per_s_total"][1] >= est["output_tokens_per_s_total"][0] * (1 - 1e-9)


@settings(max_examples=50, deadline=None)
@given(routes, st.floats(1, 256))
def test_a_better_efficiency_is_never_slower(route, b):
    """More bandwidth, more compute and less overhead can only help."""
    stack, gpu, g, n_in, n_out = route
    slow = physics.estimate(stack, gpu, g, b, n_in, n_out, Efficiency(mem=0.5, compute=0.4, prefill_compute=0.3, step_overhead_ms=1.0))
    fast = physics.estimate(stack, gpu, g, b, n_in, n_out, Efficiency(mem=0.9, compute=0.7, prefill_compute=0.6, step_overhead_ms=0.2))
    assert one(fast["e2e_ms"]) <= one(slow["e2e_ms"])
    assert one(fast["output_tokens_per_s_total"]) >= one(slow["output_tokens_per_s_total"])


# -- refinements of issue 13, one test each ----------------------------------------------


def test_tp_allreduce_is_latency_plus_bytes_over_link_and_grows_with_batch():
    """Llama-70B (80 layers, hidden 8192) on 8 x H100 with NVLink 900 GB/s (450 GB/s one way, 80 % reached = 360 GB/s).

    Two all-reduces per layer = 160 per step; alpha = 6 us x log2(8) = 18 us; ring factor 2 x 7/8 = 1.75.
      batch 1:   16,384 B each -> 18 us + 1.75 x 16,384 / 360e9 = 18.080 us; x 160 = 2.893 ms
      batch 256: 4,194,304 B   -> 18 us + 20.39 us              = 38.39 us;  x 160 = 6.143 ms
      prefill of 1,000 tokens: 16.38 MB each -> 18 + 79.6 = 97.6 us; x 160 = 15.62 ms
    One GPU: no communication at all. The layer-less copy below also skips the 80 layers' kernel
    boundaries (vLLM 30 us each = 2.4 ms), so the step differs by 2.893 + 2.4 = 5.293 ms.
    """
    comm = physics.tp_comm_ms(L70_TP, H100_NV, 8, np.array([1.0, 256.0]))
    assert comm == pytest.approx([2.893, 6.143], abs=0.002)
    assert physics.tp_comm_ms(L70_TP, H100_NV, 8, 1000.0) == pytest.approx(15.62, abs=0.01)
    assert float(physics.tp_comm_ms(L70_TP, H100_NV, 1, 256.0)) == 0.0
    # The step carries it: the same step on 8 GPUs minus the all-reduces equals the roofline alone.
    step8 = one(physics.decode_step(L70_TP, H100_NV, 8, 1, 1500)[0])
    no_comm = one(physics.decode_step(L70_TP.model_copy(update={"n_layers": None}), H100_NV, 8, 1, 1500,
                                      Efficiency(comm_ms_per_doubling=0.0))[0])
    # (at batch 1 the attention FLOPs, 4 x 80 x 8192 x 1500 = 3.9 GFLOP, hide under the KV read either way)
    assert step8 - no_comm == pytest.approx(2.893 + 2.4, abs=0.01)
    pre = physics.prefill_ms(L70_TP, H100_NV, 8, 1000.0)
    pre_1gpu_share = physics.prefill_ms(L70_TP.model_copy(update={"n_layers": None, "hidden_size": None}), H100_NV, 8,
                                        1000.0, Efficiency(comm_ms_per_doubling=0.0))
    assert one(pre) > one(pre_1gpu_share) + 15.6


def test_moe_expert_gemms_run_at_an_efficiency_set_by_expert_size():
    """Expert efficiency = 0.9 x p / (p + 10 M), p = one expert's params in one layer.

    Qwen3-30B-A3B: experts 29.013 B / (128 experts x 48 layers) = 4.722 M -> 0.9 x 4.722 / 14.722 = 0.2887.
    Mixtral 8x7B: experts (46.7 - 12.9) / (1 - 2/8) = 45.07 B / (8 x 32) = 176.0 M -> 0.9 x 176 / 186 = 0.8516.
    The efficiency slows the expert GEMMs' arithmetic, never their bytes: the experts touched are streamed at the
    GPU's bandwidth share like any weight, but no MoE layer's grouped GEMMs take less than the 50 us floor.
    Batch 1 on one H100 (FP8 Qwen): dense 1.487 GB / 2.68 TB/s = 0.555 ms; experts 1.813 GB / 2.68 TB/s = 0.677 ms,
    under the floor 48 layers x 50 us = 2.4 ms; KV 1500 x 49,152 B = 0.074 GB -> 0.0275 ms; + 1.0 ms (vLLM)
    + 48 layers x 30 us kernel boundaries (vLLM) = 1.44 ms + 48 layers x 15 us routing = 0.72 ms: step = 6.1425 ms.
    At 64 streams the experts touched are 1 - (1 - 8/128)^64 = 98.4 % of 29.013 GB = 28.55 GB -> 10.65 ms at
    2.68 TB/s, over the floor; the old reading (bytes at 0.2887 of the bandwidth) would have been 36.9 ms.
    """
    assert physics.expert_efficiency(QWEN_MOE_L) == pytest.approx(0.2887, abs=1e-4)
    assert physics.expert_efficiency(MIXTRAL) == pytest.approx(0.8516, abs=1e-4)
    assert physics.expert_efficiency(LLAMA8_BF16) == 1.0
    step = one(physics.decode_step(QWEN_MOE_L, H100, 1, 1, 1500)[0])
    assert step == pytest.approx(0.555 + 2.4 + 0.0275 + 1.0 + 1.44 + 0.72, abs=0.01)
    dense_b, experts_b = physics._expert_split(QWEN_MOE_L)
    touched = 1 - (1 - 8 / 128) ** 64
    assert touched == pytest.approx(0.9839, abs=1e-4)
    exp_ms = experts_b * touched * physics.param_bytes(QWEN_MOE_L) / (3.35e12 * 0.8) * 1e3
    assert exp_ms == pytest.approx(10.65, abs=0.05)
    step64 = one(physics.decode_step(QWEN_MOE_L, H100, 1, 64, 1500)[0])
    assert step64 > exp_ms + 0.555 and step64 < 20.0  # well under the 36.9 ms the bytes at 0.2887 would take


def test_moe_all_to_all_per_layer_on_several_gpus():
    """Qwen3-30B-A3B (48 layers, hidden 2048, k = 8) on 8 x H100 NVLink, one token.

    TensorRT-LLM (attention data parallel, experts whole on GPUs): per layer a dispatch and a combine,
    2 x (3.5 us x 3 = 10.5 us + 4,096 B x 8 x 7/64 / 360e9 = 0.01 us) = 21.02 us; 48 layers: 1.009 ms.
    vLLM (every expert sliced over the 8 GPUs): no token leaves its GPU, two all-reduces a layer like a dense
    model of the same shape: 48 x 2 x (18 us + 1.75 x 4,096 B / 360e9 = 18.02 us) = 1.730 ms.
    """
    trt = QWEN_MOE_L.model_copy(update={"engine": "trtllm"})
    assert physics.attention_dp(trt, 8) and not physics.attention_dp(QWEN_MOE_L, 8)
    assert float(physics.tp_comm_ms(trt, H100_NV, 8, 1.0)) == pytest.approx(1.009, abs=0.001)
    assert float(physics.tp_comm_ms(QWEN_MOE_L, H100_NV, 8, 1.0)) == pytest.approx(1.730, abs=0.002)
    dense_shape = QWEN_MOE_L.model_copy(update={"n_experts": None, "experts_per_token": None,
                                                "architecture": "autoregressive", "params_active_b": 30.5})
    assert float(physics.tp_comm_ms(dense_shape, H100_NV, 8, 1.0)) == pytest.approx(1.730, abs=0.002)


def test_attention_data_parallel_reads_the_dense_weights_on_every_gpu():
    """Under attention data parallelism each GPU streams the dense (attention) weights whole every step.

    Qwen3-30B-A3B on TensorRT-LLM, 8 x H100, one stream: the dense part's read takes one GPU's bandwidth,
    not eight GPUs'; the step's bytes count eight copies. The same stack sliced (vLLM) reads 1/8 per GPU.
    """
    trt = QWEN_MOE_L.model_copy(update={"engine": "trtllm"})
    dense, _ = physics._expert_split(trt)
    one_gpu = dense * physics.param_bytes(trt) / (H100_NV.hbm_tb_per_s * 1e12 * 0.8) * 1e3
    step_dp, _, moved_dp, _ = physics.decode_step(trt, H100_NV, 8, 1, 0)
    sliced = trt.model_copy(update={"engine": "vllm"})
    step_tp, _, moved_tp, _ = physics.decode_step(sliced, H100_NV, 8, 1, 0)
    assert float(moved_dp) - float(moved_tp) == pytest.approx(7 * dense * physics.param_bytes(trt))
    # One GPU's read of the dense weights is in the step (with floors and fixed costs around it).
    assert float(step_dp) > one_gpu


def test_engine_batch_cap_bounds_concurrency():
    """Llama-8B BF16 on one H200: (126.9 - 16) GB / (2,000 x 131,072 B) = 423 sequences fit in memory.

    vLLM admits 256 (max_num_seqs), TensorRT-LLM 2,048 (max_batch_size), so memory decides there;
    a stack's own max_running_seqs = 64 wins over both.
    """
    assert physics.max_concurrency(LLAMA8_BF16, H200, 1, 2000) == 256
    assert physics.max_concurrency(LLAMA8_BF16.model_copy(update={"engine": "trtllm"}), H200, 1, 2000) == 423
    assert physics.max_concurrency(LLAMA8_BF16.model_copy(update={"max_running_seqs": 64}), H200, 1, 2000) == 64
    assert not one(physics.estimate(LLAMA8_BF16, H200, 1, 300, 1000, 1000)["fits"])


def test_the_batch_cap_is_per_attention_data_parallel_rank():
    """TensorRT-LLM's max_batch_size binds each scheduler; with attention data parallelism each of the g GPUs
    schedules its own requests. Qwen3-235B-A22B FP8 (235e9 weight bytes, 96,256 KV bytes a token) on 8 x H200
    at 2,000 tokens of context: (8 x 141e9 x 0.9 - 235e9) / (2,000 x 96,256) = 780.2e9 / 192.5e6 = 4,052.7, so
    4,052 fit; the replica admits 8 x 2,048 = 16,384, so memory decides (a cap per replica stopped it at 2,048).
    On 8 x H100: (576e9 - 235e9) / 192.5e6 = 1,771 either way. On vLLM (experts sliced, one scheduler) 256; a
    stack's own cap of 100 admits 800 on 8 ranks."""
    assert physics.engine_batch_cap(Q235_TRT, 8) == 16_384 and physics.engine_batch_cap(Q235_TRT, 1) == 2_048
    assert physics.max_concurrency(Q235_TRT, H200, 8, 2000) == 4_052
    assert physics.max_concurrency(Q235_TRT, H100, 8, 2000) == 1_771
    assert physics.max_concurrency(Q235_VLLM, H200, 8, 2000) == 256
    assert physics.max_concurrency(Q235_TRT.model_copy(update={"max_running_seqs": 100}), H200, 8, 2000) == 800
    assert physics.engine_batch_cap(LLAMA8_BF16.model_copy(update={"engine": "trtllm"}), 8) == 2_048  # dense: TP


def test_fp8_weights_stream_at_the_engines_share_of_bf16s():
    """Llama-8B in FP8 (8.0e9 weight bytes) at batch 1 on one H100: the weights stream at 3.35e12 x 0.80 = 2.68e12
    B/s on vLLM (2.985 ms), at 0.75 of that on SGLang: 8.0e9 / 2.01e12 = 3.980 ms, 0.995 ms more; SGLang's step is
    otherwise 0.98 ms cheaper than vLLM's (test above). The KV cache (1,000 tokens x 131,072 B = 0.131 GB) streams
    at the full share on both. BF16 weights on SGLang, an explicit share of 1 and the perfect efficiency are
    unaffected."""
    fp8 = LLAMA8_BF16.model_copy(update={"bytes_per_param": 1.0})
    vllm = one(physics.decode_step(fp8, H100, 1, 1, 1000)[0])
    sgl = one(physics.decode_step(fp8.model_copy(update={"engine": "sglang"}), H100, 1, 1, 1000)[0])
    assert sgl - vllm == pytest.approx(8.0e9 / 2.01e12 * 1e3 - 8.0e9 / 2.68e12 * 1e3 - 0.98, rel=1e-9)
    assert sgl - vllm == pytest.approx(0.0150, abs=5e-4)
    bf16 = {e: one(physics.decode_step(LLAMA8_BF16.model_copy(update={"engine": e}), H100, 1, 1, 1000)[0])
            for e in ("vllm", "sglang")}
    assert bf16["sglang"] - bf16["vllm"] == pytest.approx(-0.98)
    plain = one(physics.decode_step(fp8.model_copy(update={"engine": "sglang"}), H100, 1, 1, 1000,
                                    Efficiency(fp8_weight_share=1.0))[0])
    assert plain == pytest.approx(vllm - 0.98)
    perfect = physics.PERFECT_EFFICIENCY
    assert one(physics.decode_step(fp8.model_copy(update={"engine": "sglang"}), H100, 1, 1, 1000, perfect)[0]) == \
        pytest.approx(one(physics.decode_step(fp8, H100, 1, 1, 1000, perfect)[0]))
    # The curve says so where it applies (the source column of `perf` and the Performance page).
    from core.performance.calibration import performance_curve

    def source(stack):
        return performance_curve(stack, H100, 1, [1.0], 1000, 256, ())["source"].iloc[0]
    assert "FP8 weights stream at 0.75 of the HBM share (sglang's" in source(fp8.model_copy(update={"engine": "sglang"}))
    assert "FP8 weights" not in source(fp8) and "FP8 weights" not in source(LLAMA8_BF16.model_copy(update={"engine": "sglang"}))


def test_engine_step_overhead_differs_by_engine():
    """Batch-1 step of Llama-8B BF16 on one H100: 16.0e9 + KV / 2.68e12 plus the engine's per-step and per-layer costs.

    Without a layer count: 1.0 (vLLM), 0.02 (SGLang), 0.4 (TRT-LLM) or 0.5 ms (NIM).
    With Llama-8B's 32 layers: + 32 x 30 us = 0.96 ms (vLLM, SGLang) or 32 x 8 us = 0.256 ms (TRT-LLM, NIM):
    vLLM 1.96, SGLang 0.98, TRT-LLM 0.656, NIM 0.756 ms.
    """
    steps = {e: one(physics.decode_step(LLAMA8_BF16.model_copy(update={"engine": e}), H100, 1, 1, 1000)[0])
             for e in ("vllm", "sglang", "trtllm", "nim")}
    assert steps["nim"] - steps["trtllm"] == pytest.approx(0.1)
    assert steps["vllm"] - steps["sglang"] == pytest.approx(0.98)
    assert steps["sglang"] - steps["trtllm"] == pytest.approx(-0.38)
    layered = {e: one(physics.decode_step(LLAMA8_BF16.model_copy(update={"engine": e, "n_layers": 32}), H100, 1, 1,
                                          1000)[0]) for e in ("vllm", "sglang", "trtllm", "nim")}
    assert layered["vllm"] - steps["vllm"] == pytest.approx(0.96)
    assert layered["trtllm"] - steps["trtllm"] == pytest.approx(0.256)
    assert layered["vllm"] - layered["sglang"] == pytest.approx(0.98)
    assert layered["nim"] - layered["trtllm"] == pytest.approx(0.1)
    # An explicit overhead (calibration, or the user's) overrides the engine default.
    assert one(physics.decode_step(LLAMA8_BF16, H100, 1, 1, 1000, Efficiency(step_overhead_ms=0.0))[0]) == pytest.approx(
        steps["vllm"] - 1.0)


def test_speculative_methods_draft_differently():
    """Llama-70B FP8 on one H200 at batch 1, context 1,500 (target read 18.45 ms as above, vLLM 1.0 ms).

    Draft model (k=4, 1 B): + 4 x (0.26 + 0.15) = 1.64 ms -> 21.09 ms; 3.36 tokens per step.
    Medusa (k=4, heads 0.3 B, alpha 0.6, 64-node tree): heads read once inside the target's pass,
      0.3e9 / 3.84e12 = 0.078 ms; the tree's 64 positions: 2 x 70.6e9 x 64 / (1979e12 x 0.5) = 9.13 ms of
      compute hides under the 18.39 ms weight read, but their attention does not hide under the KV read:
      4 x 80 layers x 8192 x 1500 x 64 / 989.5e12 = 0.254 ms instead of 0.064 ms (+0.190);
      tokens (1 - 0.6^5) / 0.4 = 2.306.
    EAGLE (k=5, 1 B head, alpha 0.75): + 5 x (0.26 + 0.15) = 2.05 ms -> 21.50 ms; tokens (1 - 0.75^6) / 0.25 = 3.288.
    Medusa and EAGLE carry the 80 layers the layer-less target lacks: + 80 x 30 us (vLLM) = 2.4 ms of kernel boundaries.
    """
    steps = {s.stack_id: one(physics.decode_step(s, H200, 1, 1, 1500)[0]) for s in (SPEC, MEDUSA, EAGLE)}
    target = one(physics.decode_step(LLAMA70_FP8_706, H200, 1, 1, 1500)[0])
    assert steps["l70-fp8-spec"] - target == pytest.approx(4 * (1e9 / 3.84e12 * 1e3 + 0.15), abs=1e-6)
    assert steps["l70-medusa"] - target == pytest.approx(0.3e9 / 3.84e12 * 1e3 + 0.190 + 2.4, abs=0.002)
    assert steps["l70-eagle"] - target == pytest.approx(5 * (1e9 / 3.84e12 * 1e3 + 0.15) + 2.4, abs=1e-6)
    assert physics.tokens_computed_per_step(MEDUSA) == 64
    assert physics.tokens_committed_per_step(MEDUSA) == pytest.approx(2.306, abs=1e-3)
    assert physics.tokens_committed_per_step(EAGLE) == pytest.approx(3.288, abs=1e-3)
    # Medusa's tree makes a busy batch compute-bound early: at 16 streams it verifies 1,024 positions.
    assert not one(physics.decode_step(MEDUSA, H200, 1, 16, 1500)[3])


def test_speculative_draft_model_pays_its_own_all_reduces_under_tp():
    """The seed draft (Llama 3.2 1B, 16 layers) on 8 x H100 NVLink: each of its k = 4 steps all-reduces twice per layer.

    4 steps x 32 all-reduces x (18 us + 1.75 x 16,384 B / 360e9) = 128 x 18.08 us = 2.314 ms more than without layers.
    """
    spec = SPEC.model_copy(update={"n_layers": 80, "hidden_size": 8192, "spec_draft_layers": 16})
    no_tp = spec.model_copy(update={"spec_draft_params_b": None})
    extra = one(physics.decode_step(spec, H100_NV, 8, 1, 1500)[0]) - one(physics.decode_step(no_tp, H100_NV, 8, 1, 1500)[0])
    draft_roofline = 4 * (1e9 / (8 * 3.35e12 * 0.8) * 1e3 + 0.15)
    assert extra == pytest.approx(draft_roofline + 2.314, abs=0.002)


def test_diffusion_computes_positions_per_pass_and_commits_l_over_s():
    """LLaDA-8B without a prefix cache recomputes the whole 544-token canvas (512 prompt + block 32) every pass.

    FLOPs per pass at batch 1: 2 x 8e9 x 544 = 8.70e12 (block-cached: 2 x 8e9 x 32 = 5.12e11), i.e. 17x;
    both commit 32 / 8 = 4 tokens per pass, so the uncached stack is slower per token.
    """
    nocache = LLADA.model_copy(update={"diffusion_positions_per_pass": 544})
    f_cached = one(physics.decode_step(LLADA, H100, 1, 1, 600)[1])
    f_full = one(physics.decode_step(nocache, H100, 1, 1, 600)[1])
    assert f_cached == pytest.approx(2 * 8e9 * 32)
    assert f_full == pytest.approx(2 * 8e9 * 544)
    assert physics.tokens_committed_per_step(nocache) == physics.tokens_committed_per_step(LLADA) == 4.0
    cached = physics.estimate(LLADA, H100, 1, 1, 512, 256)["output_tokens_per_s_per_stream"]
    full = physics.estimate(nocache, H100, 1, 1, 512, 256)["output_tokens_per_s_per_stream"]
    assert one(full) < 0.5 * one(cached)


def test_fp4_uses_the_fp4_peak_only_where_the_gpu_has_one():
    """Ridge point of an FP4 stack: B200 9,000e12 / 8e12 = 1,125 FLOP/byte; on an H100 (no FP4) the FP8 peak: 590.7."""
    fp4 = LLAMA70_FP8.model_copy(update={"stack_id": "l70-fp4", "bytes_per_param": 0.5})
    assert physics.ridge_point(fp4, B200) == pytest.approx(1125.0)
    assert physics.ridge_point(fp4, H100) == pytest.approx(590.7, abs=0.1)
    assert physics.ridge_point(LLAMA70_FP8, B200) == pytest.approx(562.5)


def test_assumption_ranges_bracket_the_central_estimate():
    """Every assumption at its slow end is never faster, at its fast end never slower, for every stack shape."""
    for stack in ALL_STACKS:
        for g in (1, 8):
            assumptions = physics.applicable_assumptions(stack, g)
            lo = physics.shifted(DEFAULT_EFFICIENCY, stack, assumptions, "slow")
            hi = physics.shifted(DEFAULT_EFFICIENCY, stack, assumptions, "fast")
            b = np.array([1.0, 16.0, 128.0])
            tput = [physics.estimate(stack, H100_NV, g, b, 1000, 256, e)["output_tokens_per_s_total"]
                    for e in (lo, DEFAULT_EFFICIENCY, hi)]
            assert np.all(tput[0] <= tput[1] * (1 + 1e-9)) and np.all(tput[1] <= tput[2] * (1 + 1e-9)), stack.stack_id
    names = {a.name for a in physics.applicable_assumptions(QWEN_MOE_L, 8)}
    assert {"MoE expert-GEMM efficiency", "tensor-parallel all-reduce cost"} <= names
    assert "MoE all-to-all latency" not in names  # sliced experts: no all-to-all
    ep_names = {a.name for a in physics.applicable_assumptions(QWEN_MOE_L.model_copy(update={"engine": "trtllm"}), 8)}
    assert {"MoE all-to-all latency", "MoE expert-parallel efficiency"} <= ep_names
    assert "MoE expert-GEMM efficiency" not in {a.name for a in physics.applicable_assumptions(LLAMA8_BF16, 1)}


def test_perfect_efficiency_is_never_slower_than_any_default():
    """PERFECT_EFFICIENCY (for plausibility bounds) beats the defaults and both range ends for every stack shape."""
    assert physics.expert_efficiency(QWEN_MOE_L, physics.PERFECT_EFFICIENCY) == 1.0
    for stack in ALL_STACKS:
        fast = physics.shifted(DEFAULT_EFFICIENCY, stack, physics.applicable_assumptions(stack, 8), "fast")
        for eff in (DEFAULT_EFFICIENCY, fast):
            slow = physics.estimate(stack, H100_NV, 8, 16.0, 1000, 256, eff)["output_tokens_per_s_total"]
            best = physics.estimate(stack, H100_NV, 8, 16.0, 1000, 256, physics.PERFECT_EFFICIENCY)["output_tokens_per_s_total"]
            assert float(best) >= float(slow), stack.stack_id


# -- issue 13, accuracy: FP4, host time, attention data parallelism, expert parallelism --

FP4_70 = LLAMA70_FP8_706.model_copy(update={"stack_id": "l70-fp4", "bytes_per_param": 0.5, "engine": "trtllm"})
L8_FP8_TRT = LLAMA8_BF16.model_copy(update={"stack_id": "l8-fp8-trt", "bytes_per_param": 1, "kv_bytes_per_token": 65536,
                                            "engine": "trtllm"})
Q235_TRT = make_stack(
    "q235-trt", architecture="moe", params_total_b=235, params_active_b=22, bytes_per_param=1, kv_bytes_per_token=96256,
    n_experts=128, experts_per_token=8, n_layers=94, hidden_size=4096, engine="trtllm",
)
Q235_VLLM = Q235_TRT.model_copy(update={"stack_id": "q235-vllm", "engine": "vllm"})


def test_fp4_weights_carry_block_scales_and_fp4_gemms_reach_a_lower_share_of_their_peak():
    """Llama-70B (70.6 B) in NVFP4 on one B200, 256 streams, no context, TensorRT-LLM:

    bytes per weight 0.5 + 1/16 (one FP8 scale per 16 values) = 0.5625; resident 70.6e9 x 0.5625 = 39.71 GB;
    weights 39.71 GB / (8 TB/s x 0.8) = 6.205 ms; GEMMs 2 x 70.6e9 x 256 = 36.15 TFLOP at
    9,000 TFLOP/s x 0.5 x 0.55 (fp4_compute) = 2,475 TFLOP/s -> 14.605 ms (compute-bound);
    + 0.4 ms (trtllm) = 15.005 ms. Host 256 x 30 us = 7.68 ms < step: not binding.
    At fp4_compute 1 the GEMMs would take 8.033 ms: the step 8.433 ms.
    """
    assert physics.param_bytes(FP4_70) == pytest.approx(0.5625)
    assert physics.param_bytes(LLAMA70_FP8_706) == 1.0
    assert physics.resident_weight_bytes(FP4_70) / 1e9 == pytest.approx(39.7125)
    assert physics.gemm_share(FP4_70, B200, DEFAULT_EFFICIENCY) == 0.55
    assert physics.gemm_share(FP4_70, H100, DEFAULT_EFFICIENCY) == 1.0  # no FP4 cores: FP8 GEMMs, full share
    assert one(physics.decode_step(FP4_70, B200, 1, 256, 0.0)[0]) == pytest.approx(15.005, abs=1e-3)
    full = DEFAULT_EFFICIENCY.scaled(fp4_compute=1.0)
    assert one(physics.decode_step(FP4_70, B200, 1, 256, 0.0, full)[0]) == pytest.approx(8.433, abs=1e-3)


def test_host_time_per_sequence_caps_a_small_model_at_thousands_of_streams():
    """Llama-8B FP8 on one H100 (TensorRT-LLM), no context:

    b = 2,048: GPU 2 x 8e9 x 2,048 / (1,979e12 x 0.5) = 33.116 ms + 0.4 = 33.516 ms; host 2,048 x 30 us = 61.44 ms:
    the step is the host's 61.44 ms, i.e. at most 1 / 30 us = 33,333 tokens/s whatever the GPU.
    b = 64: weights 8 GB / 2.68 TB/s = 2.985 ms + 0.4 = 3.385 ms > host 1.92 ms: the GPU's.
    """
    assert one(physics.decode_step(L8_FP8_TRT, H100, 1, 2048, 0.0)[0]) == pytest.approx(61.44)
    assert one(physics.decode_step(L8_FP8_TRT, H100, 1, 64, 0.0)[0]) == pytest.approx(3.385, abs=1e-3)
    assert one(physics.decode_step(L8_FP8_TRT, H200, 1, 2048, 0.0)[0]) == pytest.approx(61.44)  # more bandwidth, same cap
    assert one(physics.host_ms(L8_FP8_TRT, 1, 2048, physics.PERFECT_EFFICIENCY)) == 0.0


def test_attention_data_parallel_moe_splits_host_work_and_drops_the_attention_all_reduce():
    """Qwen3-235B-A22B (94 layers, hidden 4096, k = 8) on 8 x H100 NVLink, 1,000 tokens per pass:

    TensorRT-LLM (attention data parallel): host 1,600 / 8 x 30 us = 6.0 ms (vLLM, one scheduler: 48 ms).
    per layer, dispatch + combine only: bytes 1,000 x 4,096 x 2 x 8 x 7/64 = 7.168 MB / 360 GB/s = 19.91 us;
      2 x (3.5 us x 3 + 19.91 us) = 60.82 us; x 94 = 5.717 ms.
    vLLM (tensor parallel, every expert sliced): two all-reduces a layer, after attention and after the experts,
      each 18 us + 1.75 x 8.192 MB / 360 GB/s = 57.82 us: 94 x 115.64 us = 10.870 ms.
    """
    assert physics.attention_dp(Q235_TRT, 8) and not physics.attention_dp(Q235_TRT, 1)
    assert not physics.attention_dp(Q235_VLLM, 8) and not physics.attention_dp(L70_TP, 8)
    assert one(physics.host_ms(Q235_TRT, 8, 1600)) == pytest.approx(6.0)
    assert one(physics.host_ms(Q235_VLLM, 8, 1600)) == pytest.approx(48.0)
    assert float(physics.tp_comm_ms(Q235_TRT, H100_NV, 8, 1000.0)) == pytest.approx(5.717, abs=1e-3)
    assert float(physics.tp_comm_ms(Q235_VLLM, H100_NV, 8, 1000.0)) == pytest.approx(10.870, abs=1e-3)


def test_expert_parallel_moe_runs_its_experts_at_the_ep_share():
    """Qwen3-235B-A22B experts: (235 - 22) / (1 - 8/128) = 227.2 B / (128 x 94) = 18.88 M each:

    0.9 x 18.88 / 28.88 = 0.5884; whole experts on 8 GPUs (TensorRT-LLM, expert parallel): x 0.26 = 0.1530
    (0.26 refitted on the seven TensorRT-LLM perf-overview Qwen3-235B points once the share slowed GEMMs only).
    One GPU, or vLLM's tensor-parallel experts, keep 0.5884.
    """
    assert physics.expert_efficiency(Q235_TRT, DEFAULT_EFFICIENCY, 8) == pytest.approx(0.1530, abs=1e-4)
    assert physics.expert_efficiency(Q235_TRT, DEFAULT_EFFICIENCY, 1) == pytest.approx(0.5884, abs=1e-4)
    assert physics.expert_efficiency(Q235_VLLM, DEFAULT_EFFICIENCY, 8) == pytest.approx(0.5884, abs=1e-4)
    names = {a.name for a in physics.applicable_assumptions(Q235_TRT, 8)}
    assert "MoE expert-parallel efficiency" in names
    assert "MoE expert-parallel efficiency" not in {a.name for a in physics.applicable_assumptions(Q235_VLLM, 8)}
    assert "FP4 GEMM efficiency" in {a.name for a in physics.applicable_assumptions(FP4_70, 1)}
    assert "FP4 GEMM efficiency" not in {a.name for a in physics.applicable_assumptions(LLAMA70_FP8, 1)}
    for stack, gpu, g in ((Q235_TRT, H100_NV, 8), (FP4_70, B200, 1)):
        assumptions = physics.applicable_assumptions(stack, g)
        lo, hi = (physics.shifted(DEFAULT_EFFICIENCY, stack, assumptions, end) for end in ("slow", "fast"))
        t = [float(physics.estimate(stack, gpu, g, 256.0, 1000, 1000, e)["output_tokens_per_s_total"])
             for e in (lo, DEFAULT_EFFICIENCY, hi)]
        assert t[0] < t[1] < t[2], stack.stack_id



def test_fp4_share_keeps_the_b200_over_h200_ratio_at_the_mlperf_figure():
    """Llama-70B at max load (TensorRT-LLM, what fits, 700 in / 291 out), NVFP4 on one B200 over FP8 on one H200.

    MLPerf Inference v4.1 Llama 2 70B Offline, one GPU each: 11,264 / 4,488 = 2.51 tokens/s ratio.
    fp4_compute 0.55 gives 2.41 (just under it); FP4 GEMMs at FP8's share (1.0) would give ~4.0.
    """
    l70 = L70_TP.model_copy(update={"stack_id": "l70-trt", "engine": "trtllm"})
    fp4 = l70.model_copy(update={"stack_id": "l70-trt-fp4", "bytes_per_param": 0.5})

    def ratio(eff: Efficiency) -> float:
        b8 = float(physics.max_concurrency(l70, H200, 1, 991, eff))
        b4 = float(physics.max_concurrency(fp4, B200, 1, 991, eff))
        t8 = float(physics.estimate(l70, H200, 1, b8, 700, 291, eff)["output_tokens_per_s_total"])
        return float(physics.estimate(fp4, B200, 1, b4, 700, 291, eff)["output_tokens_per_s_total"]) / t8

    assert ratio(DEFAULT_EFFICIENCY) == pytest.approx(2.41, abs=0.03)
    assert ratio(DEFAULT_EFFICIENCY) < 11264 / 4488
    assert ratio(DEFAULT_EFFICIENCY.scaled(fp4_compute=1.0)) > 3.5
