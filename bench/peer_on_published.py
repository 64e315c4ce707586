"""The peer (NVIDIA AIConfigurator) and hangover's roofline side by side on the published points of data/benchmarks.csv.

Needs the optional extra (`pip install -e ".[peer]"`); answers are cached like `hangover perf --peer`'s.
For each published figure the peer covers (a bundled model config, an H100/H200 system, TensorRT-LLM), prints
the measured total output tok/s, the peer's and hangover's default-physics estimate at the same concurrency and
lengths, and each one's ratio to the measurement; then the median |error| of each.

    HANGOVER_PEER_CACHE=/tmp/peer/cache.json python bench/peer_on_published.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.performance import peer as peer_mod  # noqa: E402
from core.performance import physics  # noqa: E402
from core.store import Store, default_db_path  # noqa: E402


def main() -> int:
    """Print one row per covered published figure and the two median errors."""
    store = Store(default_db_path())
    stacks = {s.stack_id: s for s in store.serving_stacks()}
    peer, why = peer_mod._load()
    if peer is None:
        print(f"no peer: {why}")
        return 1
    print(f"{'stack':<20} {'gpu':<9} {'g':>2} {'conc':>5} {'in/out':>11} {'measured':>9} {'peer':>8} {'ratio':>6} "
          f"{'hangover':>9} {'ratio':>6}")
    errs_peer, errs_h = [], []
    for b in store.benchmarks():
        if b.stack_id not in peer_mod.MODELS or b.gpu not in ("H100 SXM", "H200 SXM") or not b.output_tokens_per_s_total:
            continue
        stack = stacks[b.stack_id]
        if stack.architecture not in (physics.Architecture.AUTOREGRESSIVE, physics.Architecture.MOE):
            continue
        moe = bool(stack.n_experts)
        cfg = peer_mod.PeerConfig(peer_mod.MODELS[b.stack_id], peer_mod.SYSTEMS[b.gpu], "trtllm", b.gpus_per_replica,
                                  int(b.input_tokens), int(b.output_tokens), moe=moe,
                                  expert_parallel=physics.expert_parallel(stack, b.gpus_per_replica))
        points, note = peer_mod.ask(peer, cfg, [int(b.concurrency)])
        h = float(physics.estimate(stack, store.gpu(b.gpu), b.gpus_per_replica, b.concurrency, b.input_tokens,
                                   b.output_tokens)["output_tokens_per_s_total"])
        rh = h / b.output_tokens_per_s_total
        lengths = f"{int(b.input_tokens)}/{int(b.output_tokens)}"
        if not points:
            print(f"{b.stack_id:<20} {b.gpu:<9} {b.gpus_per_replica:>2} {int(b.concurrency):>5} {lengths:>11} "
                  f"{b.output_tokens_per_s_total:>9,.0f} {'-':>8} {'-':>6} {h:>9,.0f} {rh:>6.2f}  (peer: {note[:60]})")
            continue
        rp = points[0].total_tok_s / b.output_tokens_per_s_total
        errs_peer.append(abs(rp - 1))
        errs_h.append(abs(rh - 1))
        print(f"{b.stack_id:<20} {b.gpu:<9} {b.gpus_per_replica:>2} {int(b.concurrency):>5} {lengths:>11} "
              f"{b.output_tokens_per_s_total:>9,.0f} {points[0].total_tok_s:>8,.0f} {rp:>6.2f} {h:>9,.0f} {rh:>6.2f}")
    if errs_peer:
        print(f"on the {len(errs_peer)} figures the peer covers: median |error| peer {statistics.median(errs_peer):.1%}, "
              f"hangover default physics {statistics.median(errs_h):.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
