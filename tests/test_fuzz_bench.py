"""Fuzz suite for benchmark import (issue 16): >= 100 generated files, seeded, 0 tracebacks, 0 accepted-but-wrong.

Every sample file of every format (tests/data/bench) is mutated in structured
ways — each numeric field the file holds set to NaN, Infinity, 1e400, a
400-digit integer, a boolean, text, a negative, an ambiguous or decimal-comma
string, or a value-preserving rewrite of itself — plus semantic impossibilities
(p50 above p95, per-stream above total, concurrency 1e300, year 9999), deep
nesting, truncation and random bytes. Each file is imported into one store:

- a refusal must be an InputError (one message, no traceback) and leave the
  store file byte-identical;
- an acceptance must store exactly the points the unmutated file gives (every
  mutation here either keeps the value the importer reads or makes the file
  invalid; a field the importer does not read may change freely), and is then
  removed again with `bench remove`.

Seeded (random.Random(16)); bounded to well under 60 s on the CI machine.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import random
import re
from pathlib import Path

import pytest

from core.errors import HangoverError, InputError
from core.performance import bench_import as bi
from core.store import Store
from core.store.benchmarks import remove_import

BENCH = Path(__file__).parent / "data" / "bench"
KW = {"stack_id": "llama8b-bf16", "gpu": "H100 SXM", "gpus_per_replica": 1}
SAMPLES = {  # file -> extra settings the file needs
    "vllm_new.json": {},
    "guidellm_report.json": {},
    "genai_perf.json": {},
    "llmperf_summary.json": {},
    "genai_perf.csv": {"concurrency": 8},
}
FIELDS = ("stack_id", "gpu", "gpus_per_replica", "concurrency", "input_tokens", "output_tokens",
          "output_tokens_per_s_total", "output_tokens_per_s_per_stream", "ttft_ms_p50", "ttft_ms_p95",
          "e2e_ms_p50", "e2e_ms_p95", "as_of")
SEED = 16


# -- mutations -------------------------------------------------------------------------------

# Raw JSON text replacing a number: each makes the value invalid (refusal expected if the field is read).
INVALID_LITERALS = ("NaN", "Infinity", "-Infinity", "1e400", "-1e400", "9" * 400, "true", "false", '"abc"',
                    '"1,383"', '"nan"', '"inf"', "[1]", '{"a": 1}', '"1.38.3"')


def _paths(obj, prefix=()):
    """Paths of every numeric leaf (not booleans) in a parsed JSON value."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))
    elif isinstance(obj, int | float) and not isinstance(obj, bool):
        yield prefix


def _set(obj, path, value):
    o = obj
    for k in path[:-1]:
        o = o[k]
    o[path[-1]] = value


def _get(obj, path):
    for k in path:
        obj = obj[k]
    return obj


_MARK = "__FUZZ_LITERAL__"


def _with_literal(obj, path, literal: str) -> bytes:
    """The JSON text with one value replaced by a raw literal (NaN, 1e400, 400 digits, ...)."""
    o = copy.deepcopy(obj)
    _set(o, path, _MARK)
    return json.dumps(o, indent=1).replace(f'"{_MARK}"', literal).encode()


def _decimal_comma(x: float) -> str | None:
    """x written as a German/French spreadsheet would ('1.383,64'), only where that is unambiguous."""
    if x != x or abs(x) < 1000 or x != round(x, 2):
        return None
    whole, frac = f"{abs(x):,.2f}".split(".")
    return ("-" if x < 0 else "") + whole.replace(",", ".") + "," + frac


def json_mutations(name: str, rng: random.Random) -> list[tuple[str, bytes]]:
    """Structured mutations of one JSON sample."""
    base = json.loads((BENCH / name).read_bytes())
    paths = list(_paths(base))
    out: list[tuple[str, bytes]] = []
    for path in rng.sample(paths, min(len(paths), 7)):
        literal = rng.choice(INVALID_LITERALS)
        out.append((f"{name}: {'.'.join(map(str, path))} = {literal[:20]}", _with_literal(base, path, literal)))
    for path in rng.sample(paths, min(len(paths), 4)):  # value-preserving rewrites: as text, with separators
        x = _get(base, path)
        for text in (repr(float(x)), _decimal_comma(float(x)), f"{float(x):,.2f}" if x == round(x, 2) else None):
            if text is not None:
                o = copy.deepcopy(base)
                _set(o, path, text)
                out.append((f"{name}: {'.'.join(map(str, path))} as text {text!r}", json.dumps(o).encode()))
                break
    for path in rng.sample(paths, min(len(paths), 2)):  # impossible magnitudes and signs
        for value in (-abs(_get(base, path)) - 1.0, 1e300):
            o = copy.deepcopy(base)
            _set(o, path, value)
            out.append((f"{name}: {'.'.join(map(str, path))} = {value:g}", json.dumps(o).encode()))
    out.append((f"{name}: nested 5,000 deep", ('{"x": ' * 5000 + json.dumps(base) + "}" * 5000).encode()))
    out.append((f"{name}: nested 100 deep", ('{"x": ' * 100 + json.dumps(base) + "}" * 100).encode()))
    text = json.dumps(base)
    out.append((f"{name}: truncated", text[: rng.randrange(1, len(text) - 1)].encode()))
    return out


def semantic_mutations() -> list[tuple[str, bytes]]:
    """Files whose every number is finite but whose content is impossible."""
    v = json.loads((BENCH / "vllm_new.json").read_bytes())
    g = json.loads((BENCH / "guidellm_report.json").read_bytes())
    lp = json.loads((BENCH / "llmperf_summary.json").read_bytes())
    cases = {
        "vllm: p50 TTFT above p95": v | {"median_ttft_ms": v["p95_ttft_ms"] * 2},
        "vllm: median e2e above p95": v | {"median_e2el_ms": v["p95_e2el_ms"] * 3},
        "vllm: TTFT above e2e": v | {"median_ttft_ms": v["median_e2el_ms"] * 1.5, "p95_ttft_ms": v["p95_e2el_ms"] * 1.5},
        "vllm: per-stream far above total": v | {"output_throughput": 10.0},
        "vllm: throughput above the roofline": v | {"output_throughput": 5e6},
        "vllm: per-stream above the roofline": v | {"median_tpot_ms": 0.01},
        "vllm: year 9999": v | {"date": "99991231-120000"},
        "vllm: year 1999": v | {"date": "19990101-120000"},
        "vllm: concurrency 1e300": v | {"max_concurrency": 1e300, "num_prompts": 1e301},
        "vllm: output_throughput true": v | {"output_throughput": True},
        "vllm: output_throughput '1,383'": v | {"output_throughput": "1,383"},
        "llmperf: concurrency 1e300": lp | {"num_concurrent_requests": 1e300},
        "llmperf: negative concurrency": lp | {"num_concurrent_requests": -4},
        "llmperf: timestamp year 9999": lp | {"timestamp": 253402300799},
        "llmperf: p95 below p50": lp | {"results_end_to_end_latency_s_quantiles_p95":
                                        lp["results_end_to_end_latency_s_quantiles_p50"] / 2},
    }
    g2 = copy.deepcopy(g)
    g2["benchmarks"][1]["metrics"]["time_to_first_token_ms"]["successful"]["percentiles"]["p95"] = 0.5
    cases["guidellm: one run's TTFT p95 below its median"] = g2
    g3 = copy.deepcopy(g)
    g3["benchmarks"][2]["config"]["strategy"]["streams"] = 10**6
    cases["guidellm: a million streams"] = g3
    return [(k, json.dumps(d).encode()) for k, d in cases.items()]


def csv_mutations(rng: random.Random) -> list[tuple[str, bytes]]:
    """Cells of the GenAI-Perf CSV replaced by invalid text, and value-preserving rewrites."""
    lines = (BENCH / "genai_perf.csv").read_text().splitlines()
    numeric = [(i, j) for i, line in enumerate(lines) for j, c in enumerate(line.split(","))
               if j > 0 and _is_number(c)]
    out = []
    for i, j in rng.sample(numeric, 10):
        bad = rng.choice(("NaN", "inf", "-inf", "1e400", "9" * 400, "true", "abc", '"1,383"', "1.38.3"))
        out.append((f"genai_perf.csv: line {i + 1} cell {j} = {bad[:20]}", _replace_cell(lines, i, j, bad)))
    for i, j in rng.sample(numeric, 4):
        x = float(lines[i].split(",")[j])
        dc = _decimal_comma(x)
        text = f'"{dc}"' if dc else f" {x!r} "
        out.append((f"genai_perf.csv: line {i + 1} cell {j} as {text!r}", _replace_cell(lines, i, j, text)))
    body = "\n".join(lines)
    out.append(("genai_perf.csv: truncated", body[: rng.randrange(20, len(body) // 3)].encode()))
    return out


def _is_number(c: str) -> bool:
    try:
        return math.isfinite(float(c))
    except ValueError:
        return False


def _replace_cell(lines: list[str], i: int, j: int, text: str) -> bytes:
    cells = lines[i].split(",")
    cells[j] = text
    return "\n".join([*lines[:i], ",".join(cells), *lines[i + 1:]]).encode()


def random_files(rng: random.Random) -> list[tuple[str, bytes]]:
    """Random bytes, random text, and sample files with random bytes flipped."""
    out = [(f"random bytes #{k}", rng.randbytes(rng.randrange(1, 4000))) for k in range(8)]
    out += [(f"random printable #{k}", "".join(rng.choice("{}[]:,\"0123456789.eE+-abc \n") for _ in range(300)).encode())
            for k in range(4)]
    for name in SAMPLES:
        data = bytearray((BENCH / name).read_bytes())
        for _ in range(3):
            data[rng.randrange(len(data))] = rng.randrange(256)
        out.append((f"{name} with 3 random bytes", bytes(data)))
    return out


def all_cases() -> list[tuple[str, str, bytes, dict]]:
    """(id, file name, bytes, extra settings) for every generated file."""
    rng = random.Random(SEED)
    cases = []
    for name, extra in SAMPLES.items():
        if name.endswith(".json"):
            cases += [(label, name, data, extra) for label, data in json_mutations(name, rng)]
    cases += [(label, "vllm_new.json", data, {}) for label, data in semantic_mutations()]
    cases += [(label, "genai_perf.csv", data, {"concurrency": 8}) for label, data in csv_mutations(rng)]
    cases += [(label, "file.json", data, {}) for label, data in random_files(rng)]
    return cases


# -- the run ---------------------------------------------------------------------------------


def _points(bms) -> list[dict]:
    return [{f: getattr(b, f) for f in FIELDS} for b in bms]


def _close(a: list[dict], b: list[dict]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        for f in FIELDS:
            u, v = x[f], y[f]
            if isinstance(u, float) and isinstance(v, float):
                if not math.isclose(u, v, rel_tol=1e-9, abs_tol=1e-9):
                    return False
            elif u != v:
                return False
    return True


@pytest.mark.slow
def test_fuzzed_benchmark_files(tmp_path):
    """>= 100 files: each refused with an InputError (store byte-identical) or accepted with the right values."""
    cases = all_cases()
    assert len(cases) >= 100, len(cases)
    db = tmp_path / "fuzz.duckdb"
    store = Store(db)
    expected = {name: _points(bi.parse_benchmark_file((BENCH / name).read_bytes(), name, **KW, **extra))
                for name, extra in SAMPLES.items()}
    expected["file.json"] = None  # random files have no right answer: refusal is the only right outcome
    tracebacks, wrong, changed, accepted, refused = [], [], [], 0, 0
    for label, name, data, extra in cases:
        before = hashlib.sha256(db.read_bytes()).hexdigest()
        try:
            res = bi.import_benchmark_file(store, data, name, **KW, **extra)
        except InputError as exc:
            refused += 1
            msg = str(exc)
            if "\n" in msg.strip() or len(msg) > 1200 or "Traceback" in msg:
                wrong.append((label, f"refusal is not one short message: {msg[:200]!r}"))
            if hashlib.sha256(db.read_bytes()).hexdigest() != before:
                changed.append(label)
            continue
        except HangoverError as exc:  # a store error would be a bug here
            tracebacks.append((label, repr(exc)[:300]))
            continue
        except Exception as exc:  # noqa: BLE001 - the point of the suite
            tracebacks.append((label, f"{type(exc).__name__}: {str(exc)[:300]}"))
            continue
        accepted += 1
        want = expected[name]
        got = _points(res.benchmarks)
        if res.duplicate or want is None or not _close(got, want):
            wrong.append((label, f"accepted: {got[:1]} (expected {want[:1] if want else 'a refusal'})"))
        if not res.duplicate:
            remove_import(store, res.import_id)
    store.close()
    assert not tracebacks, tracebacks
    assert not wrong, wrong
    assert not changed, changed
    assert refused >= 50 and accepted >= 20, (refused, accepted)  # both outcomes are exercised (60 and 61 today)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "1e400", "9" * 400, "true"], ids=["nan", "inf", "1e400", "400-digits", "true"])
def test_each_non_finite_literal_in_a_read_field_is_refused_naming_it(literal):
    """The field the importer reads is named in the refusal, with what was wrong."""
    data = re.sub(r'"output_throughput": [0-9.]+', f'"output_throughput": {literal}', (BENCH / "vllm_new.json").read_text())
    assert literal in data
    with pytest.raises(InputError, match=r"vllm_new\.json: 'output_throughput' is "):
        bi.parse_benchmark_file(data.encode(), "vllm_new.json", **KW)


@pytest.mark.parametrize("text", ["1.383,6", "1,383.6", "1383,6", " 1 383,6 ", "1383.6"])
def test_separators_are_read_right_never_as_1_38(text):
    """'1.383,6' (a German spreadsheet's 1383.6) is 1383.6, never 1.38; so are the other spellings."""
    d = json.loads((BENCH / "vllm_new.json").read_bytes()) | {"output_throughput": text}
    (p,) = bi.parse_benchmark_file(json.dumps(d).encode(), "v.json", **KW)
    assert p.output_tokens_per_s_total == 1383.6


@pytest.mark.parametrize("text", ["1,383", "1.383.6", "1,38,3"])
def test_ambiguous_separators_are_refused_naming_the_field(text):
    d = json.loads((BENCH / "vllm_new.json").read_bytes()) | {"output_throughput": text}
    with pytest.raises(InputError, match=r"'output_throughput' is '.*': (ambiguous|its separators)"):
        bi.parse_benchmark_file(json.dumps(d).encode(), "v.json", **KW)
