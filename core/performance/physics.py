"""Roofline model of one replica serving a stack: step time, latency, throughput, intensity.

Every function is plain numpy and broadcasts: pass concurrency as shape (1, B)
and token lengths as shape (W, 1) to evaluate W workloads at B concurrencies at
once. See docs/performance-model.md for the model, the source of every default
and its known error.

A decode step is a sequence of kernels, each bound by memory or by compute on
its own (they do not overlap one another):

    step = roofline(dense GEMMs) + roofline(expert GEMMs, at their own efficiency)
         + roofline(attention: KV read) + tensor-parallel all-reduces / all-to-alls
         + engine step overhead (+ MoE routing per layer) (+ speculative draft steps)
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TypeVar

import numpy as np

from core.models import Architecture, Engine, GpuSpec, ServingStack, SpecMethod

# Activations travel between GPUs in BF16 (vLLM, SGLang and TensorRT-LLM all-reduce in the model dtype).
ACTIVATION_BYTES = 2.0
# NVFP4 stores one FP8 (E4M3) scale per 16 FP4 values (plus one FP32 scale per tensor): 1/16 byte per
# parameter on top of the 0.5 (NVIDIA technical blog "Introducing NVFP4", 2025-06-24).
FP4_SCALE_BYTES_PER_PARAM = 1.0 / 16.0


# Engines spread experts whole over GPUs (with attention data parallelism) for fine-grained MoE (Qwen3, DeepSeek:
# 128-256 small experts, which sliced g ways leave GEMMs too thin); coarse MoE (Mixtral's 8 large experts) is
# sliced tensor-parallel like a dense layer (TensorRT-LLM performance overview: attention DP only in the
# DeepSeek/Qwen3 MoE configurations).
FINE_GRAINED_EXPERTS = 64


@dataclass(frozen=True)
class EngineProfile:
    """What a serving engine adds per decode step and how many sequences it runs at once (estimates, sourced in the docs)."""

    step_overhead_ms: float  # scheduling, sampling, kernel launches per step at small batch
    max_running_seqs: int  # default cap on the running batch (max_num_seqs and alike)
    source: str
    # Prompt tokens one step carries (chunked prefill: max_num_batched_tokens / max_num_tokens / chunked_prefill_size).
    prefill_chunk_tokens: int = 8192
    # CPU time per running sequence per step (scheduling, sampling bookkeeping, detokenising, stop checks).
    # The engines overlap it with the GPU's step, so it binds only when it outlasts the step.
    host_us_per_seq: float = 30.0
    # MoE on g > 1 GPUs with attention data parallelism: each GPU runs attention (and its own scheduler)
    # for its own share of the requests; only the experts are split, reached by all-to-all.
    moe_attention_dp: bool = False
    # GPU time lost at every kernel boundary of one layer's forward pass (launch, prologue, tail: no weights
    # stream meanwhile), per layer per pass: grows with depth, not with batch.
    layer_overhead_us: float = 30.0
    # Share of the weight-streaming bandwidth (Efficiency.mem) FP8 weights reach, relative to BF16 weights: the
    # engine's FP8 GEMM kernels at decode's few rows (scales, dequantisation, smaller tiles).
    fp8_weight_share: float = 1.0


ENGINES: dict[Engine, EngineProfile] = {
    Engine.VLLM: EngineProfile(
        1.0, 256, "vLLM engine arguments: max_num_seqs default 256; per step 1.0 ms plus 30 us per layer: "
        "Llama-3.2-1B BF16 at batch 1 on an H100 takes 2.5x the time of a megakernel at 78 % of HBM bandwidth "
        "(Hazy Research, 'Look Ma, No Bubbles!', 2025-05-27), 1.44 ms beyond the weight read, 0.48 ms of it the "
        "16 layers' kernel boundaries SGLang shows too, the rest the Python scheduler and sampler"),
    Engine.SGLANG: EngineProfile(
        0.02, 1024, "SGLang server arguments (max_running_requests derived from the KV pool; 1,024 is an estimate); "
        "per layer 30 us, per step 0.02 ms: Llama-3.2-1B BF16 at batch 1 on an H100 at 1.5x a megakernel's time "
        "(0.50 ms beyond the weight read over ~100 kernels, 6 a layer; Hazy Research 'Look Ma, No Bubbles!', "
        "2025-05-27); the overlap scheduler hides the CPU work; FP8 weights stream at 0.75 of BF16's share: "
        "Qwen3-8B FP8 (block-scaled) at 4 streams on an H100 takes 5.65 ms a token against 7.19 in BF16 "
        "(GPUStack performance lab, vllm bench serve, SGLang v0.5.3.post3), ~58 % of HBM bandwidth beside the "
        "BF16 80 %; AIConfigurator 0.12.0's SGLang 0.5.14 GEMM tables: one layer's FP8 weight GEMMs (per-tensor "
        "and block-scaled) 55-62 %, BF16 72-78 % (Llama-3.1-8B, Llama-3.1-70B on 4 GPUs, 1-64 rows)",
        fp8_weight_share=0.75),
    Engine.TRTLLM: EngineProfile(
        0.4, 2048, "TensorRT-LLM LLM API max_batch_size default 2,048; overhead per step an estimate (C++ runtime); "
        "per layer 8 us (fused kernels, programmatic dependent launch), set on Llama 3.3 70B FP8 at batch 1 on "
        "an H200 (51 tok/s, NVIDIA speculative-decoding blog, data/benchmarks.csv); "
        "MoE with attention data parallelism as in its performance overview (enable_attention_dp: true), the "
        "batch cap then per attention-DP rank (DeepSeek-R1 max throughput on 8 GPUs: --max_batch_size 384, "
        "--concurrency 3072; docs/source/blogs/Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md)",
        moe_attention_dp=True, layer_overhead_us=8.0),
    Engine.NIM: EngineProfile(
        0.5, 2048, "NVIDIA NIM for LLMs runs a TensorRT-LLM engine (vLLM for some models) behind its own API server: "
        "TensorRT-LLM's cap and per-layer cost; overhead an estimate (TensorRT-LLM's 0.4 ms plus the server's "
        "per-step share)", layer_overhead_us=8.0),
}


@dataclass(frozen=True)
class SpecDefaults:
    """Defaults per speculative method, used when a stack is added without its own figures (estimates)."""

    draft_tokens: int  # k
    acceptance: float  # per-token acceptance alpha
    verify_tokens: int | None  # positions verified per step; None = k + 1 (a chain)
    draft_layers: int  # layers of the drafter when the config does not say
    source: str


SPEC_DEFAULTS: dict[SpecMethod, SpecDefaults] = {
    SpecMethod.DRAFT: SpecDefaults(4, 0.70, None, 16, "Leviathan et al. 2023 (alpha 0.5-0.8 by task and draft)"),
    SpecMethod.MEDUSA: SpecDefaults(4, 0.60, 64, 1, "Medusa arXiv:2401.10774 (Medusa-1 ~2.2x, 63-node tree)"),
    SpecMethod.EAGLE: SpecDefaults(5, 0.75, None, 1, "EAGLE arXiv:2401.15077 / EAGLE-2 (3-4 tokens per step at T=0; "
                                   "serving engines draft a chain)"),
}


@dataclass(frozen=True)
class Efficiency:
    """Share of the datasheet peaks a real serving engine reaches, plus fixed costs.

    Defaults are estimates (docs/performance-model.md gives the reason for each);
    calibration against measured benchmarks replaces them per (stack, GPU, GPUs
    per replica). `step_overhead_ms=None` means "the stack's engine default".
    """

    mem: float = 0.80  # share of HBM bandwidth reached while streaming weights and KV
    compute: float = 0.50  # share of dense peak reached by decode GEMMs
    prefill_compute: float = 0.50  # share of dense peak reached by prefill
    step_overhead_ms: float | None = None  # kernel launches, sampling, scheduler, per step (None: engine default)
    comm_ms_per_doubling: float = 0.40  # TP cost per step per doubling, only for stacks without layers/hidden size
    moe_overhead_ms: float = 1.0  # MoE routing per step, only for stacks without a layer count
    link: float = 0.80  # share of one direction of the GPU link an all-reduce reaches (bus bandwidth)
    allreduce_us_per_doubling: float = 6.0  # latency of one small all-reduce, per doubling of GPUs
    alltoall_us_per_doubling: float = 3.5  # latency of one MoE dispatch or combine, per doubling of GPUs
    moe_expert: float = 0.90  # expert GEMMs' best share of the dense GEMM efficiency
    moe_expert_half_mparams: float = 10.0  # expert size (M params) at which that share halves
    moe_ep_efficiency: float = 0.26  # expert efficiency multiplier under expert parallelism (experts whole on g > 1 GPUs)
    moe_layer_overhead_us: float = 15.0  # router, top-k and token permutation per MoE layer per step
    moe_gemm_floor_us: float = 50.0  # least time of one MoE layer's grouped expert GEMMs, however few tokens
    moe_ep_gemm_floor_us: float = 25.0  # the same where experts sit whole on g > 1 GPUs (each runs a few)
    draft_step_overhead_ms: float = 0.15  # launches of one draft-model or draft-head step
    spec_acceptance_scale: float = 1.0  # multiplies the stack's acceptance (ranges: task and temperature)
    diffusion_progress_scale: float = 1.0  # multiplies tokens committed per pass (ranges)
    p95_over_mean: float = 1.15  # tail of end-to-end latency over its mean (no measured p95)
    memory_headroom: float = 0.90  # share of HBM usable for weights + KV (activations, fragmentation)
    fp4_compute: float = 0.55  # FP4 GEMMs' share of the FP4 peak, relative to FP8 GEMMs' share of theirs
    bf16_prefill: float = 1.3  # prefill's share of the BF16 peak, relative to prefill_compute (FP8's share of its peak)
    host_us_per_seq: float | None = None  # engine CPU time per running sequence per step (None: engine default)
    layer_overhead_us: float | None = None  # kernel-boundary time per layer per forward pass (None: engine default)
    fp8_weight_share: float | None = None  # FP8 weights' share of `mem`, relative to BF16's (None: engine default)

    def scaled(self, **changes: float) -> Efficiency:
        """A copy with some factors changed (used by calibration)."""
        return replace(self, **changes)

    def for_stack(self, stack: ServingStack) -> Efficiency:
        """The same factors with the engine's step overhead and host time filled in where they were left to the engine."""
        if self.step_overhead_ms is not None and self.host_us_per_seq is not None and self.layer_overhead_us is not None \
                and self.fp8_weight_share is not None:
            return self
        engine = ENGINES[Engine(stack.engine)]
        return replace(
            self,
            step_overhead_ms=engine.step_overhead_ms if self.step_overhead_ms is None else self.step_overhead_ms,
            host_us_per_seq=engine.host_us_per_seq if self.host_us_per_seq is None else self.host_us_per_seq,
            layer_overhead_us=engine.layer_overhead_us if self.layer_overhead_us is None else self.layer_overhead_us,
            fp8_weight_share=engine.fp8_weight_share if self.fp8_weight_share is None else self.fp8_weight_share,
        )


DEFAULT_EFFICIENCY = Efficiency()

# Nothing lost anywhere: every peak reached, no fixed cost, experts as efficient as dense GEMMs.
# An upper bound on what any engine can reach (plausibility checks of imported benchmarks).
PERFECT_EFFICIENCY = Efficiency(
    mem=1.0, compute=1.0, prefill_compute=1.0, step_overhead_ms=0.0, comm_ms_per_doubling=0.0, moe_overhead_ms=0.0,
    link=1.0, allreduce_us_per_doubling=0.0, alltoall_us_per_doubling=0.0, moe_expert=1.0, moe_expert_half_mparams=0.0,
    moe_layer_overhead_us=0.0, moe_gemm_floor_us=0.0, moe_ep_gemm_floor_us=0.0, draft_step_overhead_ms=0.0, memory_headroom=1.0, fp4_compute=1.0, host_us_per_seq=0.0,
    layer_overhead_us=0.0, bf16_prefill=1.0, fp8_weight_share=1.0,
)


def _eff(eff: Efficiency, stack: ServingStack) -> Efficiency:
    return eff.for_stack(stack)


def pass_overhead_ms(stack: ServingStack, eff: Efficiency = DEFAULT_EFFICIENCY) -> float:
    """Fixed GPU time of one forward pass (ms): the engine's per-step overhead plus its kernel-boundary time per layer.

    A pass is a few kernels per layer (norms, QKV, attention, output, MLP); each
    starts and drains without streaming weights, so the loss grows with the
    layer count (Llama-3.2-1B's ~100 kernels in 16 layers; Hazy Research 2025).
    Stacks without a layer count pay the per-step figure only.
    """
    eff = eff.for_stack(stack)
    layers = stack.n_layers or 0
    return (_set(eff.step_overhead_ms, "step_overhead_ms", stack)
            + layers * _set(eff.layer_overhead_us, "layer_overhead_us", stack) * 1e-3)


T = TypeVar("T")


def _set(value: T | None, name: str, stack: ServingStack) -> T:
    """A field that is optional on its record but required here (ServingStack's validator checks it per
    architecture, Efficiency.for_stack fills the engine defaults); None is a bug, named clearly."""
    if value is None:
        raise ValueError(f"{name} is not set for stack {stack.stack_id} ({stack.architecture.value})")
    return value


# -- precision and sizes ----------------------------------------------------------------


def peak_flops(stack: ServingStack, gpu: GpuSpec) -> float:
    """Dense FLOP/s of one GPU at the stack's precision: FP4 weights on FP4 tensor cores, FP8 on FP8, where present."""
    if stack.bytes_per_param <= 0.5 and gpu.fp4_tflops:
        return gpu.fp4_tflops * 1e12
    if stack.bytes_per_param <= 1.0 and gpu.fp8_tflops:
        return gpu.fp8_tflops * 1e12
    return gpu.bf16_tflops * 1e12


def on_fp4_cores(stack: ServingStack, gpu: GpuSpec) -> bool:
    """True when the stack's GEMMs run on FP4 tensor cores (0.5-byte weights on a GPU that has them)."""
    return bool(stack.bytes_per_param <= 0.5 and gpu.fp4_tflops)


def gemm_share(stack: ServingStack, gpu: GpuSpec, eff: Efficiency) -> float:
    """Multiplier on the GEMM efficiency for the stack's precision: fp4_compute on FP4 tensor cores, else 1.

    FP4 GEMMs quantise their activations on the fly, apply a scale per 16 values
    and, at the 100-1,000 rows a decode step has, are further from their (twice
    as high) peak than FP8 GEMMs are from theirs.
    """
    return eff.fp4_compute if on_fp4_cores(stack, gpu) else 1.0


def weight_stream_share(stack: ServingStack, eff: Efficiency) -> float:
    """Multiplier on Efficiency.mem while weights stream: fp8_weight_share (the engine's by default) for FP8
    weights, else 1."""
    if stack.bytes_per_param != 1.0:
        return 1.0
    share = eff.fp8_weight_share
    return ENGINES[Engine(stack.engine)].fp8_weight_share if share is None else share


def param_bytes(stack: ServingStack) -> float:
    """Bytes streamed per weight: the stack's bytes per parameter, plus NVFP4's block scales for 0.5-byte weights."""
    if stack.bytes_per_param <= 0.5:
        return stack.bytes_per_param + FP4_SCALE_BYTES_PER_PARAM
    return stack.bytes_per_param


def attention_peak_flops(stack: ServingStack, gpu: GpuSpec) -> float:
    """Attention runs at BF16, or FP8 for FP8/FP4 stacks where the GPU has it; never on FP4 tensor cores."""
    if stack.bytes_per_param <= 1.0 and gpu.fp8_tflops:
        return gpu.fp8_tflops * 1e12
    return gpu.bf16_tflops * 1e12


def spec_method(stack: ServingStack) -> SpecMethod:
    """The stack's speculative method (a stack stored before methods existed drafts with a model)."""
    return SpecMethod(stack.spec_method) if stack.spec_method else SpecMethod.DRAFT


def tokens_computed_per_step(stack: ServingStack) -> float:
    """Token positions one stream runs through the model per step.

    AR: 1. Speculative: the positions verified together (k + 1 for a chain, the
    tree size for Medusa-style trees). Diffusion: the positions one pass
    computes (the block of L with a cached prefix; more without a cache).
    """
    if stack.architecture is Architecture.SPECULATIVE:
        if stack.spec_verify_tokens:
            return float(stack.spec_verify_tokens)
        default = SPEC_DEFAULTS[spec_method(stack)].verify_tokens
        return float(default if default and stack.spec_method
                     else _set(stack.spec_draft_tokens, "spec_draft_tokens", stack) + 1)
    if stack.architecture is Architecture.DIFFUSION:
        return float(stack.diffusion_positions_per_pass
                     or _set(stack.diffusion_block_tokens, "diffusion_block_tokens", stack))
    return 1.0


def acceptance(stack: ServingStack, eff: Efficiency = DEFAULT_EFFICIENCY) -> float:
    """Per-token acceptance of drafted tokens, after the range scale (kept below 1)."""
    return float(min(_set(stack.spec_acceptance, "spec_acceptance", stack) * eff.spec_acceptance_scale, 0.999))


def tokens_committed_per_step(stack: ServingStack, eff: Efficiency = DEFAULT_EFFICIENCY) -> float:
    """Output tokens one stream gains per step.

    Speculative: expected accepted tokens (1 - a^(k+1)) / (1 - a) (Leviathan et al.).
    Diffusion: L / S tokens per denoising pass (times the range scale).
    """
    if stack.architecture is Architecture.SPECULATIVE:
        a, k = acceptance(stack, eff), _set(stack.spec_draft_tokens, "spec_draft_tokens", stack)
        if _set(stack.spec_acceptance, "spec_acceptance", stack) >= 1.0 and eff.spec_acceptance_scale >= 1.0:
            return float(k + 1)
        return (1.0 - a ** (k + 1)) / (1.0 - a)
    if stack.architecture is Architecture.DIFFUSION:
        return (_set(stack.diffusion_block_tokens, "diffusion_block_tokens", stack)
                / _set(stack.diffusion_steps_per_block, "diffusion_steps_per_block", stack) * eff.diffusion_progress_scale)
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


def _touched_share(stack: ServingStack, tokens) -> np.ndarray:
    share = _set(stack.experts_per_token, "experts_per_token", stack) / _set(stack.n_experts, "n_experts", stack)
    return 1.0 - np.power(1.0 - share, np.asarray(tokens, dtype=float))


def weight_bytes_read(stack: ServingStack, tokens_per_step: np.ndarray | float) -> np.ndarray:
    """Weight bytes streamed from HBM per step when `tokens_per_step` tokens pass through.

    Dense: all weights. MoE: the dense part plus the experts touched, where each
    of T tokens picks k of E experts: touched share = 1 - (1 - k/E)^T.
    """
    t = np.asarray(tokens_per_step, dtype=float)
    dense, experts = _expert_split(stack)
    if experts == 0.0:
        return np.full_like(t, stack.params_total_b * 1e9 * param_bytes(stack))
    return (dense + experts * _touched_share(stack, t)) * param_bytes(stack)


def expert_efficiency(stack: ServingStack, eff: Efficiency = DEFAULT_EFFICIENCY, gpus: int = 1) -> float:
    """Share of the dense GEMM efficiency an expert GEMM reaches: moe_expert x p / (p + p_half).

    p is one expert's size (all its matrices in one layer). Small experts (a few
    M params, as in Qwen3's 128-expert layers) are dominated by per-tile and
    per-expert fixed costs of grouped GEMMs; Mixtral-sized experts (176 M) are
    not. Without a layer count the size is unknown and the ceiling alone applies.
    """
    _, experts = _expert_split(stack)
    if experts == 0.0:
        return 1.0
    ep = eff.moe_ep_efficiency if expert_parallel(stack, gpus) else 1.0
    if not stack.n_layers:
        return eff.moe_expert * ep
    p_m = experts / (_set(stack.n_experts, "n_experts", stack) * stack.n_layers) / 1e6
    return eff.moe_expert * p_m / (p_m + eff.moe_expert_half_mparams) * ep


def resident_weight_bytes(stack: ServingStack) -> float:
    """Weight bytes that must sit in HBM: the model (with NVFP4 scales), plus the draft model or heads for speculative decoding."""
    draft = (stack.spec_draft_params_b or 0.0) if stack.architecture is Architecture.SPECULATIVE else 0.0
    return (stack.params_total_b + draft) * 1e9 * param_bytes(stack)


def engine_batch_cap(stack: ServingStack, gpus: int = 1) -> int:
    """Largest running batch the stack's engine admits on one replica of g GPUs: the stack's own cap, else the
    engine default, per scheduler. With attention data parallelism every GPU schedules its own requests
    (TensorRT-LLM's max_batch_size is per attention-DP rank), so the replica admits g times the cap."""
    per_scheduler = int(stack.max_running_seqs or ENGINES[Engine(stack.engine)].max_running_seqs)
    return per_scheduler * (gpus if attention_dp(stack, gpus) else 1)


def max_concurrency(stack: ServingStack, gpu: GpuSpec, gpus: int, context_tokens, eff: Efficiency = DEFAULT_EFFICIENCY):
    """Largest number of sequences whose KV cache fits beside the weights, at most the engine's batch cap (0 if the weights alone do not fit)."""
    usable = gpus * gpu.hbm_gb * 1e9 * eff.memory_headroom - resident_weight_bytes(stack)
    per_seq = np.maximum(np.asarray(context_tokens, dtype=float), 1.0) * max(stack.kv_bytes_per_token, 1.0)
    return np.minimum(np.floor(np.maximum(usable, 0.0) / per_seq), engine_batch_cap(stack, gpus))


# -- communication ----------------------------------------------------------------------


def _link_bytes_per_s(gpu: GpuSpec, eff: Efficiency) -> float | None:
    """One direction of the GPU's link, at the all-reduce share (datasheets quote both directions)."""
    return gpu.link_gb_per_s * 1e9 / 2.0 * eff.link if gpu.link_gb_per_s else None


def allreduce_ms(gpu: GpuSpec, gpus: int, nbytes, eff: Efficiency = DEFAULT_EFFICIENCY):
    """One ring all-reduce of `nbytes` over g GPUs: alpha + 2 (g - 1) / g x bytes / link bandwidth (ms).

    alpha grows with log2(g) (tree-like latency of NCCL/custom all-reduce kernels).
    """
    if gpus <= 1:
        return np.zeros_like(np.asarray(nbytes, dtype=float))
    bw = _link_bytes_per_s(gpu, eff)
    if bw is None:  # callers fall back to a fixed cost per doubling for such GPUs
        raise ValueError(f"{gpu.name} has no link bandwidth (link_gb_per_s): no all-reduce time")
    alpha = eff.allreduce_us_per_doubling * np.log2(gpus) * 1e-3
    return alpha + 2.0 * (gpus - 1) / gpus * np.asarray(nbytes, dtype=float) / bw * 1e3


def tp_comm_ms(stack: ServingStack, gpu: GpuSpec, gpus: int, tokens, eff: Efficiency = DEFAULT_EFFICIENCY):
    """Tensor-parallel communication of one forward pass over `tokens` token positions (ms).

    Dense layer, and MoE layer with every expert sliced across the GPUs: two
    all-reduces (after attention, after the MLP or experts) of tokens x hidden x
    2 bytes. MoE with attention data parallelism and experts whole on GPUs: a
    dispatch and a combine all-to-all, each sending every token's hidden state
    to the k experts' GPUs: per GPU tokens x k x hidden x 2 x (g - 1) / g^2
    bytes, plus a latency per doubling of GPUs. Stacks without a
    layer count or hidden size, or GPUs without a link figure, fall back to a
    fixed cost per doubling of GPUs.
    """
    t = np.asarray(tokens, dtype=float)
    if gpus <= 1:
        return np.zeros_like(t)
    bw = _link_bytes_per_s(gpu, eff)
    if not (stack.n_layers and stack.hidden_size and bw):
        return np.full_like(t, eff.comm_ms_per_doubling * np.log2(gpus))
    per_layer = t * stack.hidden_size * ACTIVATION_BYTES
    if not attention_dp(stack, gpus):
        # Dense, and MoE with every expert sliced across the GPUs: partial sums all-reduced after attention and
        # after the MLP or experts; no token leaves its GPU.
        return 2.0 * stack.n_layers * allreduce_ms(gpu, gpus, per_layer, eff)
    a2a_alpha = eff.alltoall_us_per_doubling * np.log2(gpus) * 1e-3
    a2a_bytes = per_layer * _set(stack.experts_per_token, "experts_per_token", stack) * (gpus - 1) / gpus**2
    return stack.n_layers * 2.0 * (a2a_alpha + a2a_bytes / bw * 1e3)


def _moe_gemm_floor_us(stack: ServingStack, gpus: int, eff: Efficiency) -> float:
    """Least time of one MoE layer's expert GEMMs: lower where experts sit whole on several GPUs (each GPU runs
    the few it holds) than where every expert is sliced across them or all sit on one GPU."""
    return eff.moe_ep_gemm_floor_us if expert_parallel(stack, gpus) else eff.moe_gemm_floor_us


def _moe_overhead_ms(stack: ServingStack, eff: Efficiency) -> float:
    if not stack.n_experts:
        return 0.0
    if stack.n_layers:
        return stack.n_layers * eff.moe_layer_overhead_us * 1e-3
    return eff.moe_overhead_ms


def _attention_flops(stack: ServingStack, context, positions):
    """QK^T and AV over the context: 4 x layers x attention width x context FLOPs per position (0 when sizes are unknown)."""
    width = attention_width(stack)
    if not (stack.n_layers and width):
        return 0.0
    return 4.0 * stack.n_layers * width * np.asarray(context, dtype=float) * positions


def attention_width(stack: ServingStack) -> int | None:
    """Query heads x head dimension: the stack's attention_width where given (Qwen3), else the hidden size."""
    return stack.attention_width or stack.hidden_size


# -- prefill and decode -----------------------------------------------------------------


def prefill_share(peak: float, gpu: GpuSpec, eff: Efficiency) -> float:
    """Share of `peak` (FLOP/s) prefill's kernels reach: prefill_compute, times bf16_prefill where `peak` is the
    BF16 one (never above the peak).

    At prefill's 1,000-8,000 rows BF16 GEMMs reach a larger share of their peak than FP8 GEMMs of theirs
    (twice as high): median over 81 weight shapes (n, k 4,096-57,344) in AIConfigurator 0.12.0's measured
    TensorRT-LLM 1.3.0rc20 GEMM tables, BF16 / FP8 0.79 / 0.60 on H100 SXM, 0.80 / 0.61 on H200, 0.66 / 0.50
    on B200 (A100: BF16 0.84): 1.3x on each GPU.
    """
    bf16 = abs(peak - gpu.bf16_tflops * 1e12) < 1.0
    return min(eff.prefill_compute * (eff.bf16_prefill if bf16 else 1.0), 1.0)


def gemm_prefill_share(stack: ServingStack, gpu: GpuSpec, eff: Efficiency) -> float:
    """prefill_share of the stack's GEMM peak on this GPU (what `perf` and the Performance page print)."""
    return prefill_share(peak_flops(stack, gpu), gpu, eff)


def prefill_ms(stack: ServingStack, gpu: GpuSpec, gpus: int, input_tokens, eff: Efficiency = DEFAULT_EFFICIENCY):
    """Prefill of one request (ms).

    Compute: 2 x P_dense x n + 2 x P_expert_active x n / expert efficiency +
    causal attention 2 x layers x attention width x n^2, at the prefill share of peak;
    never faster than one read of the weights; plus the all-reduces of n tokens
    per layer, the engine's step overhead and MoE routing.
    """
    eff = _eff(eff, stack)
    n = np.asarray(input_tokens, dtype=float)
    dense, experts = _expert_split(stack)
    active_experts = stack.params_active_b * 1e9 - dense
    flops = 2.0 * dense * n + 2.0 * active_experts * n / expert_efficiency(stack, eff, gpus)
    peak = peak_flops(stack, gpu)
    t_cmp = flops / (gpus * peak * prefill_share(peak, gpu, eff) * gemm_share(stack, gpu, eff))
    width = attention_width(stack)
    if stack.n_layers and width:
        attn = 2.0 * stack.n_layers * width * n * n
        peak = attention_peak_flops(stack, gpu)
        t_cmp = t_cmp + attn / (gpus * peak * prefill_share(peak, gpu, eff))
    t_mem = weight_bytes_read(stack, np.maximum(n, 1.0)) / (gpus * gpu.hbm_tb_per_s * 1e12 * eff.mem
                                                            * weight_stream_share(stack, eff))
    return (np.maximum(t_cmp, t_mem) * 1e3 + pass_overhead_ms(stack, eff)
            + tp_comm_ms(stack, gpu, gpus, n, eff) + _moe_overhead_ms(stack, eff))


def _draft_ms(stack: ServingStack, gpu: GpuSpec, gpus: int, b, bw: float, fl: float, eff: Efficiency):
    """Drafting per verify step: (ms, FLOPs, bytes).

    Draft model / EAGLE head: k sequential steps of the drafter (its weights, its
    FLOPs for b streams, its own all-reduces and launch overhead). Medusa: the
    heads run inside the target's forward, once per step.
    """
    pd = (stack.spec_draft_params_b or 0.0) * 1e9
    if pd == 0.0:
        return 0.0, 0.0, 0.0
    method = spec_method(stack)
    nbytes = pd * param_bytes(stack)
    flops = 2.0 * pd * b
    one = np.maximum(nbytes / bw, flops / fl) * 1e3
    if method is SpecMethod.MEDUSA:
        return one, flops, nbytes
    layers = stack.spec_draft_layers or SPEC_DEFAULTS[method].draft_layers
    comm = 0.0
    if gpus > 1 and stack.hidden_size and gpu.link_gb_per_s:
        comm = 2.0 * layers * allreduce_ms(gpu, gpus, b * stack.hidden_size * ACTIVATION_BYTES, eff)
    elif gpus > 1:
        comm = eff.comm_ms_per_doubling * np.log2(gpus)
    k = _set(stack.spec_draft_tokens, "spec_draft_tokens", stack)
    return k * (one + comm + eff.draft_step_overhead_ms), k * flops, k * nbytes


def attention_dp(stack: ServingStack, gpus: int) -> bool:
    """True when the stack's engine runs this MoE stack's attention data-parallel across its g > 1 GPUs.

    Such engines (TensorRT-LLM's MoE layout) also place experts whole on GPUs
    (expert parallelism) rather than slicing every expert across them.
    """
    return bool(gpus > 1 and stack.n_experts and stack.experts_per_token
                and stack.n_experts >= FINE_GRAINED_EXPERTS and ENGINES[Engine(stack.engine)].moe_attention_dp)


def expert_parallel(stack: ServingStack, gpus: int) -> bool:
    """True when the MoE stack's experts sit whole on g > 1 GPUs (with attention data parallelism)."""
    return attention_dp(stack, gpus)


def host_ms(stack: ServingStack, gpus: int, concurrency, eff: Efficiency = DEFAULT_EFFICIENCY):
    """CPU time the engine spends per step on b running sequences (ms): host_us_per_seq x b.

    Engines overlap it with the GPU's work on the step before (vLLM async
    scheduling, SGLang's overlap scheduler, TensorRT-LLM's overlap scheduler), so
    a step lasts max(GPU time, host time): invisible at 70 B, the ceiling for a
    small model at thousands of sequences (~1 / 30 us = 33,000 tokens/s per
    engine process, whatever the GPU).
    """
    eff = _eff(eff, stack)
    processes = gpus if attention_dp(stack, gpus) else 1
    return np.asarray(concurrency, dtype=float) / processes * _set(eff.host_us_per_seq, "host_us_per_seq", stack) * 1e-3


def decode_step(stack: ServingStack, gpu: GpuSpec, gpus: int, concurrency, context_tokens, eff: Efficiency = DEFAULT_EFFICIENCY):
    """One decode step for `concurrency` streams: (step_ms, flops, bytes, memory_bound).

    step = roofline(dense weights) + roofline(experts touched, at the expert
    efficiency) + roofline(KV read, attention FLOPs) + TP communication +
    engine overhead (+ MoE routing per layer) (+ drafting, for speculative).
    memory_bound says whether the bytes, at full bandwidth share, outweigh the FLOPs.
    """
    return _DecodeStep(stack, gpu, gpus, concurrency, eff).at(context_tokens)


def decode_step_curve(stack: ServingStack, gpu: GpuSpec, gpus: int, concurrency, eff: Efficiency = DEFAULT_EFFICIENCY):
    """decode_step's step_ms as a function of the context alone, what does not depend on it computed once: the
    fleet plan asks for one deployment's step curve at a new mean context thousands of times."""
    step = _DecodeStep(stack, gpu, gpus, concurrency, eff)
    return lambda context_tokens: step.at(context_tokens)[0]


class _DecodeStep:
    """decode_step in two parts: the weights' and overheads' terms (per concurrency), then the context's."""

    def __init__(self, stack: ServingStack, gpu: GpuSpec, gpus: int, concurrency, eff: Efficiency):
        eff = _eff(eff, stack)
        self.stack = stack
        b = self.b = np.asarray(concurrency, dtype=float)
        per_stream = tokens_computed_per_step(stack)
        tokens = self.tokens = b * per_stream
        bw = self.bw = gpus * gpu.hbm_tb_per_s * 1e12 * eff.mem
        wbw = bw * weight_stream_share(stack, eff)  # weights stream through the GEMMs; the KV cache at bw
        fl = gpus * peak_flops(stack, gpu) * eff.compute * gemm_share(stack, gpu, eff)

        dense, experts = _expert_split(stack)
        dense_bytes = dense * param_bytes(stack)
        dense_flops = 2.0 * dense * tokens
        # Under attention data parallelism every GPU holds the dense (attention) weights whole and streams them
        # each step for its own requests: the read takes one GPU's bandwidth, g copies are moved.
        copies = gpus if attention_dp(stack, gpus) else 1
        t_dense_mem = dense_bytes * copies / wbw
        t_dense = np.maximum(t_dense_mem, dense_flops / fl)
        moved = dense_bytes * copies + 0.0 * tokens
        flops = dense_flops
        t_mem: float | np.ndarray = t_dense_mem  # an array once experts add their per-token bytes
        t_cmp = dense_flops / fl
        if experts:
            ee = expert_efficiency(stack, eff, gpus)
            exp_bytes = experts * _touched_share(stack, tokens) * param_bytes(stack)
            exp_flops = 2.0 * (stack.params_active_b * 1e9 - dense) * tokens
            # The experts touched this step are streamed once at the GPU's bandwidth share like any weight; the
            # grouped GEMMs' losses (small experts, expert parallelism) slow their arithmetic, not the bytes.
            t_exp = np.maximum(exp_bytes / wbw, exp_flops / (fl * ee))
            floor = _moe_gemm_floor_us(stack, gpus, eff)
            if stack.n_layers and floor:
                t_exp = np.maximum(t_exp, stack.n_layers * floor * 1e-6)
            t_dense = t_dense + t_exp
            moved = moved + exp_bytes
            flops = flops + exp_flops
            t_mem, t_cmp = t_mem + exp_bytes / wbw, t_cmp + exp_flops / (fl * ee)
        self.t_dense, self.moved, self.flops, self.t_mem, self.t_cmp = t_dense, moved, flops, t_mem, t_cmp
        self.fl_attn = gpus * attention_peak_flops(stack, gpu) * eff.compute
        self.overheads = (pass_overhead_ms(stack, eff), tp_comm_ms(stack, gpu, gpus, tokens, eff),
                          _moe_overhead_ms(stack, eff))
        self.draft = _draft_ms(stack, gpu, gpus, b, wbw, fl, eff) \
            if stack.architecture is Architecture.SPECULATIVE else None
        self.host = host_ms(stack, gpus, b, eff)

    def at(self, context_tokens):
        """(step_ms, flops, bytes, memory_bound) at this mean context."""
        stack, b, bw, fl_attn = self.stack, self.b, self.bw, self.fl_attn
        ctx = np.asarray(context_tokens, dtype=float)
        kv = b * ctx * stack.kv_bytes_per_token
        attn = _attention_flops(stack, ctx, self.tokens)
        t_attn = np.maximum(kv / bw, attn / fl_attn)
        moved = self.moved + kv
        flops = self.flops + attn
        t_mem, t_cmp = self.t_mem + kv / bw, self.t_cmp + attn / fl_attn
        pass_ms, comm_ms, moe_ms = self.overheads
        step_ms = (self.t_dense + t_attn) * 1e3 + pass_ms + comm_ms + moe_ms
        if self.draft is not None:
            d_ms, d_flops, d_bytes = self.draft
            step_ms = step_ms + d_ms
            flops = flops + d_flops
            moved = moved + d_bytes
        step_ms = np.maximum(step_ms, self.host)
        return step_ms, flops, moved, t_mem >= t_cmp


def decode_steps(stack: ServingStack, output_tokens, eff: Efficiency = DEFAULT_EFFICIENCY):
    """Decode steps to produce n_out tokens: n_out / tokens committed per step; diffusion runs whole blocks."""
    n_out = np.asarray(output_tokens, dtype=float)
    if stack.architecture is Architecture.DIFFUSION:
        return np.ceil(n_out / stack.diffusion_block_tokens) * stack.diffusion_steps_per_block / eff.diffusion_progress_scale
    return n_out / tokens_committed_per_step(stack, eff)


def _timeline(stack, gpu, gpus, b, n_in, n_out, eff, pre=None):
    """Shared by estimate() and e2e_ms(): step, prefill, join time and end-to-end latency (ms)."""
    step_ms, flops, moved, mem_bound = decode_step(stack, gpu, gpus, b, n_in + 0.5 * n_out, eff)
    if pre is None:
        pre = prefill_ms(stack, gpu, gpus, n_in, eff)
    joined = pre + 0.5 * step_ms
    e2e = joined + decode_steps(stack, n_out, eff) * step_ms + np.maximum(b - 1.0, 0.0) * pre
    return step_ms, flops, moved, mem_bound, pre, joined, e2e


def ttft_under_load(stack: ServingStack, b, n_in, step_ms, pre, e2e, bare_step_ms=0.0):
    """Time to first token with b - 1 other requests in flight (ms), chunked prefill.

    - half a decode step to join the running step;
    - queueing behind the others' prefills: each of the b - 1 others holds
      the GPU for its prefill a share pre / e2e of its life, so the prefill
      load is rho = (b - 1) x pre / e2e; the M/D/1 wait rho x pre / (2 (1 - rho)),
      never more than all the others' prefills, (b - 1) x pre;
    - the own prefill, in ceil(n_in / chunk) steps that each also carry the
      others' decode: per chunk the decode step less what the prefill pays
      anyway (`bare_step_ms`, one step of one stream at no context: the weight
      read and the engine overhead), when b > 1.
    At b = 1 it is the lone prefill plus half a step, as before.
    """
    others = np.maximum(b - 1.0, 0.0)
    rho = np.minimum(others * pre / e2e, 0.95)
    wait = np.minimum(rho * pre / (2.0 * (1.0 - rho)), others * pre)
    chunks = np.ceil(np.maximum(n_in, 1.0) / ENGINES[Engine(stack.engine)].prefill_chunk_tokens)
    shared = chunks * np.maximum(step_ms - bare_step_ms, 0.0) * np.minimum(others, 1.0)
    return pre + 0.5 * step_ms + wait + shared


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
    - time to first token: the join time plus, under load, the queue behind
      the others' prefills and the decode steps its prefill chunks share
      (ttft_under_load); for diffusion the first tokens are final
      only once the first block has had its S denoising passes;
    - end-to-end: join time + decode steps x step time + the prefills of the
      other b - 1 requests, which steal the GPU during this request's life (in
      steady state b requests start per request lifetime);
    - per-stream speed: output tokens over the time from joining to the end;
    - diffusion commits L/S tokens per pass, in whole blocks;
    - `fits`: the weights, the KV cache of b sequences and the engine's batch cap allow b.
    """
    b = np.asarray(concurrency, dtype=float)
    n_in = np.asarray(input_tokens, dtype=float)
    n_out = np.maximum(np.asarray(output_tokens, dtype=float), 1.0)
    step_ms, flops, moved, mem_bound, pre, joined, e2e = _timeline(stack, gpu, gpus, b, n_in, n_out, eff)
    bare = decode_step(stack, gpu, gpus, 1.0, 0.0, eff)[0]
    ttft = ttft_under_load(stack, b, n_in, step_ms, pre, e2e, bare)
    if stack.architecture is Architecture.DIFFUSION:
        ttft = joined + (_set(stack.diffusion_steps_per_block, "diffusion_steps_per_block", stack)
                         / eff.diffusion_progress_scale * step_ms)
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


# -- ranges -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Assumption:
    """One estimated factor and its stated uncertainty, as multipliers on its central value."""

    name: str  # what a reader is told dominates the range
    fields: tuple[str, ...]  # Efficiency fields it moves
    slow: float  # multiplier giving the pessimistic end
    fast: float  # multiplier giving the optimistic end
    applies: str  # "all", "tp" (g > 1), "moe", "moe_tp", "moe_ep", "fp4", "speculative", "diffusion"


# Shares of a peak never exceed 1 (checked in _bounded). Sources and reasons: docs/performance-model.md.
ASSUMPTIONS: tuple[Assumption, ...] = (
    Assumption("HBM bandwidth share", ("mem",), 0.85, 1.10, "all"),
    Assumption("GEMM compute efficiency", ("compute",), 0.75, 1.25, "all"),
    Assumption("prefill compute efficiency", ("prefill_compute",), 0.75, 1.25, "all"),
    Assumption("engine step overhead", ("step_overhead_ms", "draft_step_overhead_ms", "host_us_per_seq",
                                        "layer_overhead_us"), 2.0, 0.6, "all"),
    Assumption("FP4 GEMM efficiency", ("fp4_compute",), 0.75, 1.3, "fp4"),
    Assumption("tensor-parallel all-reduce cost", ("allreduce_us_per_doubling",), 2.0, 0.6, "tp"),
    Assumption("GPU link bandwidth share", ("link",), 0.6, 1.15, "tp"),
    Assumption("MoE expert-GEMM efficiency", ("moe_expert",), 0.6, 1.1, "moe"),
    Assumption("MoE routing overhead", ("moe_layer_overhead_us", "moe_overhead_ms"), 2.0, 0.5, "moe"),
    Assumption("MoE expert-kernel floor", ("moe_gemm_floor_us", "moe_ep_gemm_floor_us"), 1.5, 0.6, "moe"),
    Assumption("MoE all-to-all latency", ("alltoall_us_per_doubling",), 2.0, 0.6, "moe_ep"),
    Assumption("MoE expert-parallel efficiency", ("moe_ep_efficiency",), 0.75, 1.25, "moe_ep"),
    Assumption("speculative acceptance rate", ("spec_acceptance_scale",), 0.85, 1.08, "speculative"),
    Assumption("diffusion tokens committed per pass", ("diffusion_progress_scale",), 0.75, 1.2, "diffusion"),
)
_CAPPED = {"mem", "compute", "prefill_compute", "link", "moe_expert", "fp4_compute", "moe_ep_efficiency"}


def applicable_assumptions(stack: ServingStack, gpus: int) -> tuple[Assumption, ...]:
    """The assumptions that move this stack's figures on g GPUs."""
    moe = bool(stack.n_experts and stack.experts_per_token)
    ok = {
        "all": True, "tp": gpus > 1, "moe": moe, "moe_tp": moe and gpus > 1,
        "moe_ep": expert_parallel(stack, gpus), "fp4": stack.bytes_per_param <= 0.5,
        "speculative": stack.architecture is Architecture.SPECULATIVE,
        "diffusion": stack.architecture is Architecture.DIFFUSION,
    }
    return tuple(a for a in ASSUMPTIONS if ok[a.applies])


def _bounded(eff: Efficiency, changes: dict[str, float]) -> Efficiency:
    out = {}
    for k, v in changes.items():
        out[k] = min(v, 0.98) if k in _CAPPED else v
    return replace(eff, **out)


def shifted(eff: Efficiency, stack: ServingStack, assumptions, end: str, power: float = 1.0) -> Efficiency:
    """`eff` with each assumption moved towards its 'slow' or 'fast' end (power 1: all the way; 0.5: half, in log terms)."""
    eff = eff.for_stack(stack)
    changes: dict[str, float] = {}
    for a in assumptions:
        m = (a.slow if end == "slow" else a.fast) ** power
        for f in a.fields:
            changes[f] = changes.get(f, getattr(eff, f)) * m
    return _bounded(eff, changes)


def scaled_speed(eff: Efficiency, stack: ServingStack, factor: float) -> Efficiency:
    """Every speed factor times `factor` and every fixed cost divided by it (factor < 1: slower).

    Used for the range of a calibrated route, whose factors were fitted together.
    """
    eff = eff.for_stack(stack)
    speeds = {f: getattr(eff, f) * factor for f in (
        "mem", "compute", "prefill_compute", "link", "moe_expert", "fp4_compute", "moe_ep_efficiency")}
    costs = {f: getattr(eff, f) / factor for f in (
        "step_overhead_ms", "comm_ms_per_doubling", "moe_overhead_ms", "allreduce_us_per_doubling",
        "alltoall_us_per_doubling", "moe_layer_overhead_us", "draft_step_overhead_ms", "host_us_per_seq",
        "layer_overhead_us")}
    return _bounded(eff, {**speeds, **costs})


EFFICIENCY_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Efficiency))
