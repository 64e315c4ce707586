"""Fuzz suite for telemetry files and model configs (issue 34): generated inputs, each with its intended verdict.

Every generated cell is drawn from a pool of plausible and impossible values,
each tagged with whether the seeded catalog's bounds accept it (nodes of 8
GPUs, at most 262,144 MiB and 2,000 W without --gpu; times 2000-01-01 .. now +
1 day). A file is meant to be accepted exactly when every cell is plausible and
no (GPU, time) repeats. The suite asserts:

- nothing but InputError ever escapes the import or the config reader;
- a file is accepted exactly when intended, and a refused one leaves no rows;
- a config.json gives finite, positive sizes below 100 T parameters, or an
  InputError naming a key it holds.

Bounded: a fixed number of examples per property, no deadline.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import InputError
from core.performance.hf_config import MAX_PARAMS, read_config
from core.store import Store
from core.telemetry import import_telemetry

FUZZ = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# (cell as written, plausible?)
INDEX = [("0", True), ("3", True), ("7", True), ("8", False), ("-3", False), ("1e300", False), ("1.5", False),
         ("64", False)]
UTIL = [("50 %", True), ("0 %", True), ("100 %", True), ("[N/A]", True), ("101 %", False), ("-1 %", False),
        ("nan %", False), ("1e308 %", False), ("50", False)]
MEMORY = [("4096 MiB", True), ("262144 MiB", True), ("[Not Supported]", True), ("262145 MiB", False),
          ("1e308 MiB", False), ("-5 MiB", False), ("inf MiB", False)]
POWER = [("300.5 W", True), ("2000 W", True), ("2001 W", False), ("1e400 W", False), ("NaN W", False)]
DAY = [("2026/11/02", True), ("2000/01/01", True), ("1999/12/31", False), ("9999/11/02", False),
       ("2026/02/30", False)]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    s = Store(tmp_path_factory.mktemp("fuzz") / "f.duckdb")
    yield s
    s.close()


def _imports(store: Store) -> int:
    with store.cursor() as cur:
        return cur.execute("SELECT count(*) FROM telemetry_imports").fetchall()[0][0]


def _verdict(store: Store, path, **kw) -> bool:
    """True when imported, False when refused with an InputError that left no import behind."""
    before = _imports(store)
    try:
        import_telemetry(store, path, **kw)
    except InputError:
        assert _imports(store) == before
        return False
    assert _imports(store) == before + 1
    return True


smi_row = st.tuples(st.sampled_from(DAY), st.integers(0, 3), st.sampled_from(INDEX), st.sampled_from(UTIL),
                    st.sampled_from(MEMORY), st.sampled_from(POWER))


@pytest.mark.slow
@FUZZ
@given(rows=st.lists(smi_row, min_size=1, max_size=8), tag=st.integers(0, 10**9))
def test_fuzzed_nvidia_smi_logs_are_accepted_exactly_when_plausible(seeded, tmp_path_factory, rows, tag):
    lines = ["timestamp, index, utilization.gpu [%], memory.used [MiB], power.draw [W]"]
    plausible, seen = True, set()
    for (day, ok_day), minute, (gpu, ok_gpu), (u, ok_u), (m, ok_m), (p, ok_p) in rows:
        lines.append(f"{day} 09:0{minute}:00.{tag % 1000:03d}, {gpu}, {u}, {m}, {p}")
        plausible &= ok_day and ok_gpu and ok_u and ok_m and ok_p and (day, minute, gpu) not in seen
        seen.add((day, minute, gpu))
    path = tmp_path_factory.mktemp("smi") / "gpu.csv"
    path.write_text("\n".join(lines) + "\n")
    assert _verdict(seeded, path, node=f"n{tag}") == plausible


DCGM_VALUES = {  # field -> [(value as written, plausible?)]
    "DCGM_FI_DEV_GPU_UTIL": [("45", True), ("100", True), ("100.5", False), ("-1", False)],
    "DCGM_FI_PROF_SM_ACTIVE": [("0.42", True), ("1", True), ("1.5", False), ("+Inf", False)],
    "DCGM_FI_DEV_POWER_USAGE": [("400", True), ("2000", True), ("2000.5", False), ("1e308", False)],
    "DCGM_FI_DEV_FB_USED": [("81559", True), ("262144", True), ("262145", False), ("1e308", False)],
}
MS = [(1793610000000, True), (946684800000, True), (946684799999, False), (100000000000000000, False)]
dcgm_line = st.tuples(st.sampled_from(sorted(DCGM_VALUES)), st.sampled_from(INDEX[:5]), st.integers(0, 3),
                      st.sampled_from(MS), st.integers(0, 3))


@pytest.mark.slow
@FUZZ
@given(items=st.lists(dcgm_line, min_size=1, max_size=8), tag=st.integers(0, 10**9))
def test_fuzzed_dcgm_scrapes_are_accepted_exactly_when_plausible(seeded, tmp_path_factory, items, tag):
    lines, plausible, seen = [f"# scrape {tag}"], True, set()
    for field, (gpu, ok_gpu), k, (ms, ok_ms), step in items:
        value, ok_value = DCGM_VALUES[field][k]
        stamp = ms + 60_000 * step if ok_ms and ms > TS_FLOOR else ms
        lines.append(f'{field}{{gpu="{gpu}",Hostname="h"}} {value} {stamp}')
        plausible &= ok_gpu and ok_ms and ok_value and (field, gpu, stamp) not in seen
        seen.add((field, gpu, stamp))
    path = tmp_path_factory.mktemp("dcgm") / "s.prom"
    path.write_text("\n".join(lines) + "\n")
    assert _verdict(seeded, path) == plausible


TS_FLOOR = 946684800000  # a stamp at the floor stays there (a step would not leave the window; kept simple)


@pytest.mark.slow
@FUZZ
@given(points=st.lists(st.tuples(st.sampled_from(INDEX[:5]), st.sampled_from(DCGM_VALUES["DCGM_FI_DEV_FB_USED"]),
                                 st.integers(0, 3)), min_size=1, max_size=6), tag=st.integers(0, 10**9))
def test_fuzzed_prometheus_memory_series_are_accepted_exactly_when_plausible(seeded, tmp_path_factory, points, tag):
    """One series per point (its own pod label), so a repeated (GPU, time) is a repeat across series."""
    result, plausible, seen = [], True, set()
    for k, ((gpu, ok_gpu), (value, ok_value), minute) in enumerate(points):
        ts = 1793610000 + 60 * minute
        result.append({"metric": {"__name__": "DCGM_FI_DEV_FB_USED", "gpu": gpu, "Hostname": "h", "pod": f"p{k}"},
                       "values": [[ts, value]]})
        plausible &= ok_gpu and ok_value and (gpu, ts) not in seen
        seen.add((gpu, ts))
    path = tmp_path_factory.mktemp("prom") / "r.json"
    path.write_text(json.dumps({"status": "success", "tag": tag, "data": {"resultType": "matrix", "result": result}}))
    assert _verdict(seeded, path) == plausible


BASE = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 128256, "intermediate_size": 14336}
HOSTILE = [math.inf, -math.inf, math.nan, -1, 0, 1.5, 10**30, 10**400, "4096", True, None, [], {}, 1 << 17, 7]


@FUZZ
@given(changes=st.dictionaries(st.sampled_from([*BASE, "head_dim", "num_local_experts", "num_experts_per_tok",
                                                 "kv_lora_rank", "mlp_only_layers"]),
                               st.sampled_from(HOSTILE), max_size=4))
def test_fuzzed_configs_give_finite_sizes_or_name_a_key(changes):
    """Infinity, NaN, negatives, 1e30, a 401-digit number, strings, booleans in any size field: either finite
    positive sizes under 100 T parameters, or one InputError naming a key of the config (or the sizes)."""
    cfg = {**BASE, **changes}
    text = json.dumps(cfg)  # Infinity and NaN as Python's json writes (and reads) them
    try:
        shape = read_config(text)
    except InputError as exc:
        message = str(exc)
        assert any(f"'{key}'" in message for key in cfg) or "parameters" in message, message
        return
    assert 0 < shape.params_active_b <= shape.params_total_b <= MAX_PARAMS / 1e9
    for value in (shape.hidden_size, shape.n_layers, shape.n_heads, shape.n_kv_heads, shape.head_dim,
                  shape.vocab_size, shape.kv_elements_per_token):
        assert isinstance(value, int) and 0 < value < 1 << 40


@pytest.mark.parametrize(("key", "value", "why"), [
    ("hidden_size", "Infinity", r"'hidden_size' must be a whole number; got inf"),
    ("hidden_size", "NaN", r"'hidden_size' must be a whole number; got nan"),
    ("hidden_size", "-4096", r"'hidden_size' must be at least 1; got -4096"),
    ("hidden_size", "1e30", r"'hidden_size' is 1e\+30, beyond any model this plans for \(at most 131,072\)"),
    ("vocab_size", "1" + "0" * 400, r"'vocab_size' is 1000000000000000000000000000000000000\.\.\., beyond any model"),
    ("num_local_experts", "-Infinity", r"'num_local_experts' must be a whole number; got -inf"),
])
def test_each_bad_config_size_is_refused_naming_the_field(key, value, why):
    text = json.dumps(BASE)[:-1] + f', "{key}": {value}}}'
    with pytest.raises(InputError, match=rf"^config.json: {why}"):
        read_config(text)


def test_sizes_that_are_each_allowed_but_give_an_absurd_model_are_refused():
    """hidden 131,072 x 4,096 layers x intermediate 1,048,576: 3 x 131,072 x 1,048,576 x 4,096 = 1.7e18 parameters
    in the MLPs alone, far past 100 T."""
    cfg = {**BASE, "hidden_size": 1 << 17, "num_hidden_layers": 1 << 12, "intermediate_size": 1 << 20,
           "num_attention_heads": 128, "num_key_value_heads": 8}
    with pytest.raises(InputError, match=r"give [\d,]+ T parameters, beyond any model this plans for \(at most 100 T\)"):
        read_config(json.dumps(cfg))
