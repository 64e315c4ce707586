"""Times `hangover bench errors` on a store holding 6,000 benchmark points (issue 16: it grew quadratically).

Run by hand: python bench/bench_bench_errors.py [N]  (not part of the test suite)

The points are synthetic (the roofline at default efficiency x a seeded +-15 % scatter) on four
routes, stored as one user import, so the timing covers the real path: the store read (validated,
non-finite rows skipped), error_report's fits per route, and printing the table.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.models import Benchmark  # noqa: E402
from core.performance import physics  # noqa: E402
from core.performance.calibration import error_report  # noqa: E402
from core.store import Store  # noqa: E402

ROUTES = [("llama8b-bf16", "H100 SXM", 1), ("llama8b-bf16", "H200 SXM", 1), ("llama70b-fp8", "H100 SXM", 2),
          ("llama70b-bf16", "H100 SXM", 4)]


def points(n: int, store: Store) -> list[Benchmark]:
    """n measured points spread over ROUTES, concurrency 1..128, lengths 200..4,000 in / 64..1,024 out."""
    rng = random.Random(16)
    stacks = {s.stack_id: s for s in store.serving_stacks()}
    out = []
    for i in range(n):
        sid, gname, g = ROUTES[i % len(ROUTES)]
        stack, gpu = stacks[sid], store.gpu(gname)
        c, n_in, n_out = float(rng.choice([1, 2, 4, 8, 16, 32, 64, 128])), float(rng.randrange(200, 4000)), float(rng.randrange(64, 1024))
        est = physics.estimate(stack, gpu, g, c, n_in, n_out)
        k = lambda: rng.uniform(0.85, 1.15)  # noqa: E731
        out.append(Benchmark(
            stack_id=sid, gpu=gpu.name, gpus_per_replica=g, concurrency=c, input_tokens=n_in, output_tokens=n_out,
            output_tokens_per_s_total=float(est["output_tokens_per_s_total"]) * k(),
            output_tokens_per_s_per_stream=float(est["output_tokens_per_s_per_stream"]) * k(),
            ttft_ms_p50=float(est["ttft_ms"]) * k(), e2e_ms_p50=float(est["e2e_ms"]) * k(),
            provenance="measured", tool="synthetic", source=f"bench_bench_errors point {i}", as_of="2026-01-01",
            confidence="user"))
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 6000
    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "bench.duckdb"
        store = Store(db)
        store.add("benchmarks", points(n, store), origin="user", import_id="bench")
        t0 = time.perf_counter()
        bms = store.benchmarks()
        t1 = time.perf_counter()
        df = error_report(store.serving_stacks(), store.gpus(), bms)
        t2 = time.perf_counter()
        store.close()
        # A fresh process, as a user runs it (in this one the fits above are cached).
        run = subprocess.run([sys.executable, "-m", "core.cli", "--db", str(db), "bench", "errors"],
                             capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
        t3 = time.perf_counter()
        rc, lines = run.returncode, len(run.stdout.splitlines())
        print(f"{n:,} points ({len(bms):,} read back, {len(df):,} figures): store read {t1 - t0:.1f} s, "
              f"error_report {t2 - t1:.1f} s; `hangover bench errors` end to end {t3 - t2:.1f} s "
              f"(exit {rc}, {lines:,} lines); cores {os.cpu_count()}, "
              f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
