"""Default physics (no calibration) against TensorRT-LLM's published max-load figures that the seed data does not contain.

Run: python bench/validate_perf_overview.py   (prints the table quoted in docs/performance-model.md)
Published figures: NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md (v1.0), vendor claims,
total output tokens/s at maximum load. The table states no concurrency: it is taken as what fits in memory
under TensorRT-LLM's 2,048-sequence cap (per attention-DP rank for the MoE rows). No constant of the model is fitted
to these figures.
"""

from __future__ import annotations

import numpy as np

from core.performance import physics
from core.store.seed import load_seed

# (label, seed stack, changes to it, GPU, GPUs, input tokens, output tokens, published tokens/s)
FP4 = {"bytes_per_param": 0.5}
# Llama 3.1 8B in FP8 (weights and KV) and Llama 3.1 405B (126 layers, hidden 16,384, 8 KV heads x 128; FP8 KV).
L8_FP8 = {"bytes_per_param": 1, "kv_bytes_per_token": 65536}
L405 = {"stack_id": "l405", "params_total_b": 405.8, "params_active_b": 405.8, "kv_bytes_per_token": 258048,
        "n_layers": 126, "hidden_size": 16384}
CASES = [
    ("Llama 3.3 70B FP8", "llama70b-fp8", {}, "H200 SXM", 1, 1000, 2000, 2994),
    ("Llama 3.3 70B FP8", "llama70b-fp8", {}, "H200 SXM", 1, 2048, 2048, 2003),
    ("Llama 3.3 70B FP8", "llama70b-fp8", {}, "H200 SXM", 1, 128, 128, 3803),
    ("Llama 3.3 70B FP8", "llama70b-fp8", {}, "H100 SXM", 2, 128, 2048, 6651),
    ("Llama 3.3 70B FP8", "llama70b-fp8", {}, "H100 SXM", 2, 2048, 2048, 3082),
    ("Llama 3.3 70B FP4", "llama70b-fp8", FP4, "B200", 1, 1000, 1000, 7007),
    ("Llama 3.3 70B FP4", "llama70b-fp8", FP4, "B200", 1, 128, 2048, 9922),
    ("Qwen3-235B-A22B FP8", "qwen3-235b-a22b-fp8", {}, "H100 SXM", 8, 1000, 1000, 14898),
    ("Qwen3-235B-A22B FP8", "qwen3-235b-a22b-fp8", {}, "H200 SXM", 8, 1000, 1000, 23789),
    ("Qwen3-235B-A22B FP8", "qwen3-235b-a22b-fp8", {}, "H100 SXM", 8, 128, 2048, 19658),
    ("Qwen3-235B-A22B FP4", "qwen3-235b-a22b-fp8", FP4, "B200", 8, 1000, 1000, 42391),
    ("Qwen3-30B-A3B FP4", "qwen3-30b-a3b-fp8", FP4, "B200", 1, 1000, 1000, 25828),
    ("Qwen3-30B-A3B FP4", "qwen3-30b-a3b-fp8", FP4, "B200", 1, 128, 2048, 37844),
    ("Llama 3.1 8B FP8", "llama8b-bf16", L8_FP8, "H100 SXM", 1, 1000, 1000, 15220),
    ("Llama 3.1 8B FP8", "llama8b-bf16", L8_FP8, "H200 SXM", 1, 1000, 1000, 17744),
    ("Llama 3.1 8B FP8", "llama8b-bf16", L8_FP8, "H100 SXM", 1, 128, 2048, 22714),
    ("Llama 3.1 405B FP8", "llama70b-fp8", L405, "H100 SXM", 8, 1000, 1000, 2919),
    ("Llama 3.1 405B FP8", "llama70b-fp8", L405, "H200 SXM", 8, 1000, 1000, 3330),
]


def main() -> None:
    """Print one Markdown row per case and the summary line."""
    seed = load_seed()
    stacks = {s.stack_id: s for s in seed["serving_stacks"]}
    gpus = {g.name: g for g in seed["gpus"]}
    ratios = []
    print("| model | GPU x g | in/out | conc | published | estimate | error |")
    print("|---|---|---|---:|---:|---:|---:|")
    for label, sid, changes, gname, g, n_in, n_out, published in CASES:
        stack = stacks[sid].model_copy(update={"engine": "trtllm", **changes})
        b = float(physics.max_concurrency(stack, gpus[gname], g, n_in + n_out))
        got = float(physics.estimate(stack, gpus[gname], g, b, n_in, n_out)["output_tokens_per_s_total"])
        ratios.append(got / published)
        print(f"| {label} | {gname} x{g} | {n_in}/{n_out} | {b:,.0f} | {published:,} | {got:,.0f} | {got / published - 1:+.0%} |")
    r = np.array(ratios)
    err = np.abs(r - 1)
    print(f"{len(r)} figures: median |error| {np.median(err):.1%}, worst {err.max():.1%}, "
          f"mean model / published {r.mean():.2f} (geometric mean {np.exp(np.log(r).mean()):.2f}; above 1 = optimistic)")


if __name__ == "__main__":
    main()
