"""Performance: what a serving stack does on a GPU.

- `physics`: the roofline model of one replica (latency, throughput, memory, intensity).
- `calibration`: efficiency factors fitted to benchmarks; performance curves with provenance.
- `bench_import`: benchmark result files (vLLM, GuideLLM, GenAI-Perf, llmperf) into Benchmark rows.
"""
