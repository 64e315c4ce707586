"""Golden numbers and properties of the roofline model (core/physics.py), with the arithmetic written out."""

from __future__ import annotations

import datetime as dt

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


def make_gpu(name: str, hbm_gb: float, tb_s: float, bf16: float, fp8: float | None) -> GpuSpec:
    return GpuSpec(name=name, hbm_gb=hbm_gb, hbm_tb_per_s=tb_s, bf16_tflops=bf16, fp8_tflops=fp8, tdp_w=700, **SOURCED)


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
ALL_STACKS = [LLAMA70_FP8, LLAMA70_BF16, LLAMA8_BF16, SPEC, QWEN_MOE, LLADA]


def one(x) -> float:
    return float(np.asarray(x).reshape(-1)[0])


# -- the four figures of issue 3 --------------------------------------------------------


def test_70b_fp8_on_one_h100_cannot_exceed_48_tokens_per_s_at_batch_1():
    """Every generated token streams all weights from HBM once.

    70 B params x 1 byte (FP8) = 70 GB; one H100 moves 3.35 TB/s:
        step >= 70e9 / 3.35e12 s = 20.90 ms  ->  at most 1000 / 20.90 = 47.86 tokens/s.
    KV for a 150-token context (150 x 163,840 B = 24.6 MB) adds 0.007 ms: ~47.84.
    With the default efficiency (80 % of bandwidth, 0.3 ms per step):
        70.0246e9 / (3.35e12 x 0.8) = 26.13 ms + 0.3 = 26.43 ms  ->  37.84 tokens/s.
    """
    ideal = physics.estimate(LLAMA70_FP8, H100, 1, 1, 100, 100, IDEAL)
    assert one(ideal["output_tokens_per_s_per_stream"]) <= 48.0
    assert one(ideal["output_tokens_per_s_per_stream"]) == pytest.approx(47.84, rel=0.002)
    real = physics.estimate(LLAMA70_FP8, H100, 1, 1, 100, 100)
    assert one(real["output_tokens_per_s_per_stream"]) == pytest.approx(37.84, rel=0.005)
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
    """Llama-70B FP8 on one H200 (4.8 TB/s, 1,979 TFLOP/s FP8), k = 4 drafts, acceptance 0.8, 1 B draft.

    Tokens per verify step = (1 - 0.8^5) / (1 - 0.8) = (1 - 0.32768) / 0.2 = 3.3616.
    Batch 1, 1000 in / 1000 out (context 1500 tokens, KV 1500 x 163,840 B = 0.246 GB):
      AR step   = (70.6e9 + 0.246e9) / (4.8e12 x 0.8) = 18.45 ms + 0.3 = 18.75 ms
      spec step = the same target read (its 5-token compute, 0.6 ms, hides under it)
                  + 4 draft steps x (1e9 / 3.84e12 = 0.26 ms + 0.3) = 18.75 + 2.24 = 20.99 ms
      speed-up  = 3.3616 x 18.75 / 20.99 = 3.00  (>= 2)
    Batch 128: AR step = max((70.6e9 + 128 x 0.246e9) / 3.84e12 = 26.58 ms,
                             2 x 70.6e9 x 128 / (1979e12 x 0.6) = 15.22 ms) + 0.3 = 26.88 ms
      spec step = max(26.58, 5 x 15.22 = 76.11) + 0.3 + 4 x (max(0.26, 0.22) + 0.3) = 78.65 ms
      decode speed-up = 3.3616 x 26.88 / 78.65 = 1.15 (<= 1.2); per stream, with the
      identical prefills of the other requests counted, it is lower still.
    """
    k1 = physics.estimate(SPEC, H200, 1, 1, 1000, 1000)
    a1 = physics.estimate(LLAMA70_FP8_706, H200, 1, 1, 1000, 1000)
    assert physics.tokens_committed_per_step(SPEC) == pytest.approx(3.3616)
    assert one(a1["step_ms"]) == pytest.approx(18.75, abs=0.01)
    assert one(k1["step_ms"]) == pytest.approx(20.99, abs=0.01)
    speedup_1 = one(k1["output_tokens_per_s_per_stream"]) / one(a1["output_tokens_per_s_per_stream"])
    assert speedup_1 >= 2.0
    assert speedup_1 == pytest.approx(3.00, rel=0.01)

    k128 = physics.estimate(SPEC, H200, 1, 128, 1000, 1000)
    a128 = physics.estimate(LLAMA70_FP8_706, H200, 1, 128, 1000, 1000)
    assert not one(k128["memory_bound"]) and one(a128["memory_bound"])
    assert one(a128["step_ms"]) == pytest.approx(26.88, abs=0.02)
    assert one(k128["step_ms"]) == pytest.approx(78.65, abs=0.05)
    decode_speedup = 3.3616 * one(a128["step_ms"]) / one(k128["step_ms"])
    assert decode_speedup == pytest.approx(1.15, abs=0.01)
    speedup_128 = one(k128["output_tokens_per_s_per_stream"]) / one(a128["output_tokens_per_s_per_stream"])
    assert speedup_128 <= 1.2

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
    """Prefill of 1000 tokens of an 8 B BF16 model on one H100: 2 x 8e9 x 1000 / (989e12 x 0.5) = 32.36 ms + 0.3."""
    est = physics.estimate(LLAMA8_BF16, H100, 1, 1, 1000, 100)
    assert one(est["prefill_ms"]) == pytest.approx(32.36 + 0.3, abs=0.01)
    assert one(est["ttft_ms"]) == pytest.approx(one(est["prefill_ms"]) + 0.5 * one(est["step_ms"]))


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
    st.sampled_from([H100, H200, A100]),
    st.sampled_from([1, 2, 4, 8]),
    st.floats(0, 16000),
    st.floats(1, 4000),
)
pairs = st.tuples(st.floats(1, 512), st.floats(1, 512)).map(sorted)


@settings(max_examples=300, deadline=None)
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


@settings(max_examples=200, deadline=None)
@given(routes, pairs)
def test_total_throughput_never_falls_with_concurrency_even_compute_bound(route, pair):
    """Every step cost is a max of affine terms with non-negative intercepts, so e2e/b never rises: total tokens/s = b n / e2e never falls."""
    stack, gpu, g, n_in, n_out = route
    est = physics.estimate(stack, gpu, g, np.array(pair), n_in, n_out)
    assert est["output_tokens_per_s_total"][1] >= est["output_tokens_per_s_total"][0] * (1 - 1e-9)


@settings(max_examples=200, deadline=None)
@given(routes, st.floats(1, 256))
def test_a_better_efficiency_is_never_slower(route, b):
    """More bandwidth, more compute and less overhead can only help."""
    stack, gpu, g, n_in, n_out = route
    slow = physics.estimate(stack, gpu, g, b, n_in, n_out, Efficiency(mem=0.5, compute=0.4, prefill_compute=0.3, step_overhead_ms=1.0))
    fast = physics.estimate(stack, gpu, g, b, n_in, n_out, Efficiency(mem=0.9, compute=0.7, prefill_compute=0.6, step_overhead_ms=0.2))
    assert one(fast["e2e_ms"]) <= one(slow["e2e_ms"])
    assert one(fast["output_tokens_per_s_total"]) >= one(slow["output_tokens_per_s_total"])
