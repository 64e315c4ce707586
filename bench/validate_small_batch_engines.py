"""Default physics (no calibration) against one harness's small-batch measurements of three engines, not in data/.

Run: PYTHONPATH=. python bench/validate_small_batch_engines.py   (prints the table quoted in docs/performance-model.md)
Published figures: GPUStack performance lab, "Optimizing Qwen3-8B Latency on NVIDIA H100 GPUs"
(gpustack/gpustack docs/performance-lab/qwen3-8b/h100-latency.md; vLLM v0.11.0, SGLang v0.5.3.post3,
TensorRT-LLM v1.2.0rc1, one H100 SXM, `vllm bench serve` on ShareGPT, 100 prompts, 23,260 input and 22,061
output tokens in all). Mean TPOT (time per output token after the first) at a fixed request concurrency: one
harness, one GPU, one model, so the engines' and the precisions' differences are the engines' and precisions'
own. Per-stream speed is compared as 1,000 / TPOT against the model's decode rate of one stream; TTFT is the
harness's mean (HTTP, chat template and tokenizer included; the model's is the GPU's prefill and queue only).
No constant of the model is fitted to these figures.
"""

from __future__ import annotations

import numpy as np

from core.performance import physics
from core.store.seed import load_seed

# Qwen3-8B (config.json: 36 layers, hidden 4,096, 32 query heads x 128, 8 KV heads x 128; 8.19 B parameters),
# built on the seed's Llama-3.1-8B stack (same width); BF16 KV cache in both precisions (SGLang's default).
QWEN3_8B = {"stack_id": "qwen3-8b", "params_total_b": 8.19, "params_active_b": 8.19, "n_layers": 36,
            "hidden_size": 4096, "attention_width": 4096, "kv_bytes_per_token": 2 * 36 * 8 * 128 * 2}
N_IN, N_OUT = 23260 / 100, 22061 / 100
# (engine, bytes per weight, concurrency, mean TPOT ms, mean TTFT ms)
CASES = [
    ("vllm", 2, 1, 7.28, 59.01),
    ("vllm", 2, 2, 7.37, 63.78),
    ("vllm", 2, 4, 7.38, 64.00),
    ("vllm", 2, 8, 7.71, 74.57),
    ("sglang", 2, 4, 7.19, 27.70),
    ("trtllm", 2, 4, 7.67, 51.61),
    ("sglang", 1, 4, 5.65, 39.66),  # Qwen/Qwen3-8B-FP8 (128 x 128 block-scaled FP8 weights)
]


def main() -> None:
    """Print one Markdown row per case and the summary line."""
    seed = load_seed()
    base = next(s for s in seed["serving_stacks"] if s.stack_id == "llama8b-bf16")
    gpu = next(g for g in seed["gpus"] if g.name == "H100 SXM")
    errs = []
    print("| engine | weights | streams | published ms/token | model ms/token | speed error | TTFT published / model |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for engine, bpp, b, tpot, ttft in CASES:
        stack = base.model_copy(update={**QWEN3_8B, "engine": engine, "bytes_per_param": bpp})
        est = physics.estimate(stack, gpu, 1, float(b), N_IN, N_OUT)
        model_ms = 1e3 / float(est["output_tokens_per_s_per_stream"])
        err = tpot / model_ms - 1.0  # speed: model tok/s over published tok/s
        errs.append(err)
        print(f"| {engine} | {'FP8' if bpp == 1 else 'BF16'} | {b} | {tpot:.2f} | {model_ms:.2f} | {err:+.0%} | "
              f"{ttft:.0f} / {float(est['ttft_ms']):.0f} ms |")
    e = np.abs(np.array(errs))
    print(f"{len(e)} figures: median |error| {np.median(e):.1%}, worst {e.max():.1%} "
          f"(speed error = model tok/s a stream / published - 1; above 0 = optimistic)")


if __name__ == "__main__":
    main()
