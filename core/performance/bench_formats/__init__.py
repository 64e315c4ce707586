"""Benchmark file formats: one module per tool behind a small registry, each with detect(source) and parse(source).

- `vllm`: `vllm bench serve` / benchmark_serving.py result JSON (also one run per line).
- `guidellm`: GuideLLM report JSON.
- `genai_perf`: NVIDIA GenAI-Perf profile export, CSV and JSON.
- `llmperf`: ray llmperf *_summary.json.
- `common`: strict numbers (no NaN, no booleans, no guessed separators), dates, one run's `Raw` record.
- `bounds`: plausibility bounds on every figure, from the roofline where possible.

A format is a `Format(name, tool, detect, parse)`; `REGISTRY` is tried in order
and the first whose detect() says yes parses the file. Adding a tool is one
module and one line here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from core.errorlog import shorten
from core.errors import InputError
from core.performance.bench_formats import genai_perf, guidellm, llmperf, vllm
from core.performance.bench_formats.common import (
    NonFinite,
    Raw,
    Source,
    display_name,
    records,
)

__all__ = ["EXPECTED", "FORMATS", "REGISTRY", "Format", "Raw", "Source", "detect", "load", "parse"]


@dataclass(frozen=True)
class Format:
    """One file format: its name, the tool stored with each point, and how to recognise and read it."""

    name: str
    tool: str
    detect: Callable[[Source], bool]
    parse: Callable[[Source], list[Raw]]


# Order matters only where shapes overlap: GuideLLM's 'benchmarks' list and llmperf's 'results_*' keys are
# checked before vLLM's looser 'output_throughput' test.
REGISTRY: tuple[Format, ...] = (
    Format(guidellm.NAME, guidellm.TOOL, guidellm.detect, guidellm.parse),
    Format(llmperf.NAME, llmperf.TOOL, llmperf.detect, llmperf.parse),
    Format(vllm.NAME, vllm.TOOL, vllm.detect, vllm.parse),
    Format("genai_perf_json", genai_perf.TOOL, genai_perf.detect_json, genai_perf.parse_json),
    Format("genai_perf_csv", genai_perf.TOOL, genai_perf.detect_csv, genai_perf.parse_csv),
)

# Format name -> tool name stored with each point.
FORMATS: dict[str, str] = {f.name: f.tool for f in REGISTRY}

EXPECTED = (
    "a vLLM `vllm bench serve` / benchmark_serving.py result JSON, a GuideLLM report JSON "
    "(with 'benchmarks'), an NVIDIA GenAI-Perf profile_export_genai_perf CSV or JSON, "
    "or a ray llmperf *_summary.json"
)


def _text(data: bytes, name: str) -> str:
    if not data or not data.strip():
        raise InputError(f"{name} is empty")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{name} is not a text file (not UTF-8); expected {EXPECTED}") from None


def _json(text: str, name: str) -> object:
    """Parsed JSON; NaN/Infinity kept as NonFinite markers (refused if a field read holds one)."""
    try:
        return json.loads(text, parse_constant=NonFinite)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            # vLLM --append-result writes one JSON object per line.
            try:
                return [json.loads(line, parse_constant=NonFinite) for line in text.splitlines() if line.strip()]
            except json.JSONDecodeError:
                pass
        end = text.rstrip()
        cut = exc.pos >= len(end) - 1 or not end.endswith(("}", "]"))
        why = "the JSON stops part-way (truncated file?)" if cut else "it is not valid JSON"
        raise InputError(f"{name} cannot be read: {why}: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise InputError(f"{name} cannot be read: its JSON is nested too deeply (hundreds of levels)") from None
    except ValueError as exc:  # e.g. an integer literal longer than Python converts (4,300 digits)
        raise InputError(f"{name} cannot be read: {shorten(exc, 120)}") from None


def load(data: bytes, file_name: str) -> Source:
    """The file as text and, when it looks like JSON, parsed; InputError for empty, binary, broken or too-deep files."""
    name = display_name(file_name)
    text = _text(data, name)
    if text.lstrip()[:1] not in ("{", "["):
        return Source(file_name, text)
    # Too deep a nesting stops the decoder (RecursionError, refused in _json); nothing here recurses over the value.
    return Source(file_name, text, _json(text, name), is_json=True)


def detect(src: Source) -> Format:
    """The format whose detect() recognises the file, or an InputError naming what was seen."""
    for fmt in REGISTRY:
        if fmt.detect(src):
            return fmt
    if src.is_json:
        recs = records(src.obj)
        if not recs:
            raise InputError(f"{src.name}: a JSON {type(src.obj).__name__} of unknown shape; expected {EXPECTED}")
        keys = shorten(", ".join(str(k) for k in list(recs[0])[:8]), 120)
        raise InputError(f"{src.name}: JSON of unknown shape (top-level keys: {keys}); expected {EXPECTED}")
    first = next((line for line in src.text.splitlines() if line.strip()), "")
    shown = first[:60] + ("..." if len(first) > 60 else "")
    raise InputError(f"{src.name}: not a benchmark file this tool knows (it starts with {shown!r}); expected {EXPECTED}")


def parse(src: Source) -> tuple[Format, list[Raw]]:
    """Detect and parse: (format, one Raw per run in the file)."""
    fmt = detect(src)
    return fmt, fmt.parse(src)
