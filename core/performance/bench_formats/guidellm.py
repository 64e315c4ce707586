"""GuideLLM report JSON: a `benchmarks` list, each with status-split metric distributions (latency in seconds)."""

from __future__ import annotations

from core.errors import InputError
from core.performance.bench_formats.common import Raw, Source, date_from, number, records

NAME = "guidellm"
TOOL = "GuideLLM"


def detect(src: Source) -> bool:
    """A JSON object whose `benchmarks` is a list."""
    recs = records(src.obj) if src.is_json else []
    return bool(recs) and isinstance(recs[0].get("benchmarks"), list)


def _stat(metrics: dict, name: str, stat: str, where: str) -> float | None:
    """A status-split distribution's statistic: successful requests first, else all."""
    dist = metrics.get(name)
    if not isinstance(dist, dict):
        return None
    part = next((dist[k] for k in ("successful", "total") if isinstance(dist.get(k), dict)), dist)
    what = f"{where}: {name} {stat}"
    if stat.startswith("p") and stat[1:].isdigit():
        pct = part.get("percentiles")
        return number(pct.get(stat), what) if isinstance(pct, dict) else None
    return number(part.get(stat), what)


def parse(src: Source) -> list[Raw]:
    """One Raw per benchmark: concurrent streams (or synchronous = 1, else the measured mean in flight)."""
    obj = records(src.obj)[0]
    out = []
    benches = obj.get("benchmarks") or []
    if not benches:
        raise InputError(f"{src.name}: a GuideLLM report with no benchmarks in it")
    for j, bm in enumerate(benches):
        if not isinstance(bm, dict) or not isinstance(bm.get("metrics"), dict):
            raise InputError(f"{src.name}, benchmark {j + 1}: has no 'metrics' section")
        m = bm["metrics"]
        # Walrus so the type checker sees each dict it tested.
        cfg = c if isinstance(c := bm.get("config"), dict) else a if isinstance(a := bm.get("args"), dict) else {}
        strategy = s if isinstance(s := cfg.get("strategy"), dict) else t if isinstance(t := bm.get("strategy"), dict) else {}
        kind = str(strategy.get("type_") or strategy.get("type") or "")[:40]
        raw = Raw(label=f"benchmark {j + 1}" + (f" ({kind})" if kind else ""))
        where = f"{src.name}, {raw.label}"
        streams = number(strategy.get("streams"), f"{where}: strategy streams")
        rate = number(strategy.get("rate"), f"{where}: strategy rate")
        if kind == "concurrent" and streams is not None:
            raw.concurrency = streams
        elif kind == "synchronous":
            raw.concurrency = 1.0
        else:
            mean_c = _stat(m, "request_concurrency", "mean", where)
            if mean_c is not None:
                raw.concurrency = round(mean_c, 2)
                raw.notes.append(
                    f"concurrency {raw.concurrency:g} is the measured mean requests in flight"
                    + (f" of a {kind} run" if kind else "") + (f" at {rate:g} req/s" if rate else "")
                )
        raw.input_tokens = _stat(m, "prompt_token_count", "mean", where)
        raw.output_tokens = _stat(m, "output_token_count", "mean", where)
        raw.total = _stat(m, "output_tokens_per_second", "mean", where)
        itl = _stat(m, "inter_token_latency_ms", "median", where)
        if itl and itl > 0:
            raw.per_stream = 1000.0 / itl
        raw.ttft_p50 = _stat(m, "time_to_first_token_ms", "median", where)
        raw.ttft_p95 = _stat(m, "time_to_first_token_ms", "p95", where)
        # GuideLLM states request latency in seconds.
        for attr, stat in (("e2e_p50", "median"), ("e2e_p95", "p95")):
            v = _stat(m, "request_latency", stat, where)
            setattr(raw, attr, v * 1000.0 if v is not None else None)
        start = bm.get("start_time")
        if start is None and isinstance(bm.get("run_stats"), dict):
            start = bm["run_stats"].get("start_time")
        raw.date = date_from(start)
        out.append(raw)
    return out
