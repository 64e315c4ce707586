"""Roofline model of one replica serving a stack: step time, latency, throughput, intensity.

Every function is plain numpy and broadcasts: pass concurrency as shape (1, B)
and token lengths as shape (W, 1) to evaluate W workloads at B concurrencies at
once. See docs/performance-model.md for the model and its known error.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from core.models import Architecture, GpuSpec, ServingStack


@dataclass(frozen=True)
class Efficiency:
    """Share of the datasheet peaks a real serving engine reaches, plus fixed costs.

    Defaults are estimates (typical of vLLM/TensorRT-LLM on Hopper); calibration
    against measured benchmarks replaces them per (stack, GPU, GPUs per replica).
    """

    mem: float = 0.80  # share of HBM bandwidth reached while streaming weights and KV
    compute: float = 0.60  # share of dense peak reached by decode GEMMs
    prefill_compute: float = 0.50  # share of dense peak reached by prefill
    step_overhead_ms: float = 0.30  # kernel launches, sampling, scheduler, per step
    comm_ms_per_doubling: float = 0.40  # tensor-parallel all-reduces per step, per doubling of GPUs
    moe_overhead_ms: float = 2.50  # MoE routing and grouped-GEMM launches per step (estimate)
    p95_over_mean: float = 1.15  # tail of end-to-end latency over its mean (no measured p95)
    memory_headroom: float = 0.90  # share of HBM usable for weights + KV (activations, fragmentation)

    def scaled(self, **changes: float) -> Efficiency:
        """A copy with some factors changed (used by calibration)."""
        return replace(self, **changes)


DEFAULT_EFFICIENCY = Efficiency()


def peak_flops(stack: ServingStack, gpu: GpuSpec) -> float:
    """Dense FLOP/s of one GPU at the stack's precision (FP8 weights use FP8 tensor cores if present)."""
    if stack.bytes_per_param <= 1.0 and gpu.fp8_tflops:
        return gpu.fp8_tflops * 1e12
    return gpu.bf16_tflops * 1e12


def tokens_computed_per_step(stack: ServingStack) -> float:
    """Token positions one stream runs through the model per step.

    AR: 1. Speculative: the k drafted tokens plus one are verified together.
    Diffusion: the whole block of L positions is refined every pass.
    """
    if stack.architecture is Architecture.SPECULATIVE:
        return float(stack.spec_draft_tokens + 1)
    if stack.architecture is Architecture.DIFFUSION:
        return float(stack.diffusion_block_tokens)
    return 1.0


def tokens_committed_per_step(stack: ServingStack) -> float:
    """Output tokens one stream gains per step.

    Speculative: expected accepted tokens (1 - a^(k+1)) / (1 - a) (Leviathan et al.).
    Diffusion: L / S tokens per denoising pass.
    """
    if stack.architecture is Architecture.SPECULATIVE:
        a, k = stack.spec_acceptance, stack.spec_draft_tokens
        return float(k + 1) if a >= 1.0 else (1.0 - a ** (k + 1)) / (1.0 - a)
    if stack.architecture is Architecture.DIFFUSION:
        return stack.diffusion_block_tokens / stack.diffusion_steps_per_block
    return 1.0


def _expert_split(stack: ServingStack) -> tuple[float, float]:
    """(dense params, all routed-expert params) in units of parameters.

    From total = dense + experts and active = dense + experts * k / E.
    """
    total, active = stack.params_total_b * 1e9, stack.params_active_b * 1e9
    if not stack.n_experts or not stack.experts_per_token or total <= active:
        return total, 0.0
    share = stack.experts_per_token / stack.n_experts
    experts = (total - active) / (1.0 - share)
    return total - experts, experts


def weight_bytes_read(stack: ServingStack, tokens_per_step: np.ndarray | float) -> np.ndarray:
    """Weight bytes streamed from HBM per step when `tokens_per_step` tokens pass through.

    Dense: all weights. MoE: the dense part plus the experts touched, where each
    of T tokens picks k of E experts: touched share = 1 - (1 - k/E)^T.
    """
    t = np.asarray(tokens_per_step, dtype=float)
    dense, experts = _expert_split(stack)
    if experts == 0.0:
        return np.full_like(t, stack.params_total_b * 1e9 * stack.bytes_per_param)
    share = stack.experts_per_token / stack.n_experts
    touched = 1.0 - np.power(1.0 - share, t)
    return (dense + experts * touched) * stack.bytes_per_param


def resident_weight_bytes(stack: ServingStack) -> float:
    """Weight bytes that must sit in HBM: the model, plus the draft model for speculative decoding."""
    draft = (stack.spec_draft_params_b or 0.0) if stack.architecture is Architecture.SPECULATIVE else 0.0
    return stack.weight_bytes + draft * 1e9 * stack.bytes_per_param


def max_concurrency(stack: ServingStack, gpu: GpuSpec, gpus: int, context_tokens, eff: Efficiency = DEFAULT_EFFICIENCY):
    """Largest number of sequences whose KV cache fits beside the weights (0 if the weights alone do not fit)."""
    usable = gpus * gpu.hbm_gb * 1e9 * eff.memory_headroom - resident_weight_bytes(stack)
    per_seq = np.maximum(np.asarray(context_tokens, dtype=float), 1.0) * max(stack.kv_bytes_per_token, 1.0)
    return np.floor(np.maximum(usable, 0.0) / per_seq)


def _comm_ms(gpus: int, eff: Efficiency) -> float:
    return eff.comm_ms_per_doubling * np.log2(gpus) if gpus > 1 else 0.0


def prefill_ms(stack: ServingStack, gpu: GpuSpec, gpus: int, input_tokens, eff: Efficiency = DEFAULT_EFFICIENCY):
    """Prefill of one request: compute-bound 2 * P_active * n_in, but never faster than one weight read."""
    n = np.asarray(input_tokens, dtype=float)
    flops = 2.0 * stack.params_active_b * 1e9 * n
    t_cmp = flops / (gpus * peak_flops(stack, gpu) * eff.prefill_compute)
    t_mem = weight_bytes_read(stack, np.maximum(n, 1.0)) / (gpus * gpu.hbm_tb_per_s * 1e12 * eff.mem)
    return np.maximum(t_cmp, t_mem) * 1e3 + eff.step_overhead_ms + _comm_ms(gpus, eff)


def decode_step(stack: ServingStack, gpu: GpuSpec, gpus: int, concurrency, context_tokens, eff: Efficiency = DEFAULT_EFFICIENCY):
    """One decode step for `concurrency` streams: (step_ms, flops, bytes, memory_bound).

    step = max((W + KV) / (g * BW * eta_mem), FLOPs / (g * F * eta_cmp)) + overhead,
    plus, for speculative decoding, k sequential draft-model steps.
    """
    b = np.asarray(concurrency, dtype=float)
    ctx = np.asarray(context_tokens, dtype=float)
    per_stream = tokens_computed_per_step(stack)
    weights = weight_bytes_read(stack, b * per_stream)
    kv = b * ctx * stack.kv_bytes_per_token
    moved = weights + kv
    flops = 2.0 * stack.params_active_b * 1e9 * b * per_stream
    bw = gpus * gpu.hbm_tb_per_s * 1e12 * eff.mem
    fl = gpus * peak_flops(stack, gpu) * eff.compute
    t_mem, t_cmp = moved / bw, flops / fl
    step_ms = np.maximum(t_mem, t_cmp) * 1e3 + eff.step_overhead_ms + _comm_ms(gpus, eff)
    if stack.n_experts:
        step_ms = step_ms + eff.moe_overhead_ms
    if stack.architecture is Architecture.SPECULATIVE and stack.spec_draft_params_b:
        draft_bytes = stack.spec_draft_params_b * 1e9 * stack.bytes_per_param
        draft_flops = 2.0 * stack.spec_draft_params_b * 1e9 * b
        one = np.maximum(draft_bytes / bw, draft_flops / fl) * 1e3 + eff.step_overhead_ms
        step_ms = step_ms + stack.spec_draft_tokens * one
        flops = flops + stack.spec_draft_tokens * draft_flops
        moved = moved + stack.spec_draft_tokens * draft_bytes
    return step_ms, flops, moved, t_mem >= t_cmp


def decode_steps(stack: ServingStack, output_tokens):
    """Decode steps to produce n_out tokens: n_out / tokens committed per step; diffusion runs whole blocks."""
    n_out = np.asarray(output_tokens, dtype=float)
    if stack.architecture is Architecture.DIFFUSION:
        return np.ceil(n_out / stack.diffusion_block_tokens) * stack.diffusion_steps_per_block
    return n_out / tokens_committed_per_step(stack)


def _timeline(stack, gpu, gpus, b, n_in, n_out, eff, pre=None):
    """Shared by estimate() and e2e_ms(): step, prefill, join time and end-to-end latency (ms)."""
    step_ms, flops, moved, mem_bound = decode_step(stack, gpu, gpus, b, n_in + 0.5 * n_out, eff)
    if pre is None:
        pre = prefill_ms(stack, gpu, gpus, n_in, eff)
    joined = pre + 0.5 * step_ms
    e2e = joined + decode_steps(stack, n_out) * step_ms + np.maximum(b - 1.0, 0.0) * pre
    return step_ms, flops, moved, mem_bound, pre, joined, e2e


def e2e_ms(stack: ServingStack, gpu: GpuSpec, gpus: int, concurrency, input_tokens, output_tokens,
           eff: Efficiency = DEFAULT_EFFICIENCY, prefill=None):
    """Mean end-to-end latency only (the engine's hot path); the same model as estimate().

    `prefill` may pass prefill_ms() already computed for these input lengths.
    """
    n_out = np.maximum(np.asarray(output_tokens, dtype=float), 1.0)
    b = np.asarray(concurrency, dtype=float)
    return _timeline(stack, gpu, gpus, b, np.asarray(input_tokens, dtype=float), n_out, eff, pre=prefill)[-1]


def estimate(
    stack: ServingStack,
    gpu: GpuSpec,
    gpus: int,
    concurrency,
    input_tokens,
    output_tokens,
    eff: Efficiency = DEFAULT_EFFICIENCY,
) -> dict[str, np.ndarray]:
    """Latency and throughput of one replica at steady state; all outputs broadcast.

    - decode context: input plus half the output on average;
    - a request joins the running batch after its prefill plus, on average,
      half a decode step of waiting;
    - time to first token: that join time for AR, speculative and MoE (the
      prefill yields the first token); for diffusion the first tokens are final
      only once the first block has had its S denoising passes;
    - end-to-end: join time + decode steps x step time + the prefills of the
      other b - 1 requests, which steal the GPU during this request's life (in
      steady state b requests start per request lifetime);
    - per-stream speed: output tokens over the time from joining to the end;
    - diffusion commits L/S tokens per pass, in whole blocks.
    """
    b = np.asarray(concurrency, dtype=float)
    n_in = np.asarray(input_tokens, dtype=float)
    n_out = np.maximum(np.asarray(output_tokens, dtype=float), 1.0)
    step_ms, flops, moved, mem_bound, pre, joined, e2e = _timeline(stack, gpu, gpus, b, n_in, n_out, eff)
    ttft = joined
    if stack.architecture is Architecture.DIFFUSION:
        ttft = joined + stack.diffusion_steps_per_block * step_ms
    fits = b <= max_concurrency(stack, gpu, gpus, n_in + n_out, eff)
    per_stream = n_out / (e2e - joined) * 1e3
    return {
        "concurrency": b * np.ones_like(e2e),
        "step_ms": step_ms * np.ones_like(e2e),
        "prefill_ms": pre * np.ones_like(e2e),
        "ttft_ms": ttft,
        "e2e_ms": e2e,
        "e2e_ms_p95": e2e * eff.p95_over_mean,
        "output_tokens_per_s_per_stream": per_stream,
        "output_tokens_per_s_total": b * n_out / e2e * 1e3,
        "requests_per_s": b / e2e * 1e3,
        "arithmetic_intensity": (flops / moved) * np.ones_like(e2e),
        "memory_bound": mem_bound * np.ones_like(e2e, dtype=bool),
        "fits": fits * np.ones_like(e2e, dtype=bool),
    }


def ridge_point(stack: ServingStack, gpu: GpuSpec) -> float:
    """FLOP per byte where the GPU turns from memory- to compute-bound (peak / bandwidth)."""
    return peak_flops(stack, gpu) / (gpu.hbm_tb_per_s * 1e12)


def min_gpus_to_fit(stack: ServingStack, gpu: GpuSpec, context_tokens: float = 4096.0, max_gpus: int = 8, eff: Efficiency = DEFAULT_EFFICIENCY) -> int | None:
    """Smallest power-of-two GPU count holding the weights and one sequence of KV (None if none up to max_gpus)."""
    g = 1
    while g <= max_gpus:
        if max_concurrency(stack, gpu, g, context_tokens, eff) >= 1:
            return g
        g *= 2
    return None
