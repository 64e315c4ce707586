"""Impossible telemetry refused by the GPU catalog's bounds, and repeated readings refused (issue 34).

The seeded catalog's bounds: nodes of at most 8 GPUs (every node price and
owned server lists 8); an H100 SXM has 80 GB, read as 80 x 1,024 = 81,920 MiB
(nvidia-smi shows 81,559), and a 700 W TDP, so at most 2 x 700 = 1,400 W.
Without --gpu the widest: MI325X's 256 GB = 262,144 MiB and B200/MI325X's
1,000 W TDP, so 2,000 W.
"""

from __future__ import annotations

import json
import re

import pytest

from core.cli import main
from core.errors import InputError
from core.store import Store
from core.telemetry import import_telemetry
from core.telemetry.plausible import from_store
from tests.test_telemetry import dcgm_day, nothing_written, prometheus_range, write

HEADER = "timestamp, index, utilization.gpu [%], memory.used [MiB], power.draw [W]"


def smi(*rows: str) -> str:
    """An nvidia-smi CSV with these data rows (line 1 is the header, so row k is on line k + 1)."""
    return "\n".join([HEADER, *rows]) + "\n"


GOOD = [f"2026/11/02 09:0{m}:00.000, {g}, 50 %, 4096 MiB, 300 W" for m in range(3) for g in range(2)]


def test_catalog_bounds_are_read_from_the_seeded_catalog(store):
    """8 GPUs per node; H100 SXM 81,920 MiB and 1,400 W; the widest 262,144 MiB and 2,000 W (docstring above)."""
    h100 = from_store(store, "h100 sxm")
    assert (h100.gpus_per_node, h100.memory_mib, h100.power_w) == (8, 81_920, 1_400)
    widest = from_store(store)
    assert (widest.gpus_per_node, widest.memory_mib, widest.power_w) == (8, 262_144, 2_000)


@pytest.mark.parametrize(("row", "why"), [
    ("2026/11/02 09:05:00.000, 8, 50 %, 4096 MiB, 300 W",
     r"index '8' is not a GPU index \(a whole number 0 to 7: 8 GPUs per node, H100 SXM, catalog\)"),
    ("2026/11/02 09:05:00.000, 0, 50 %, 1e308 MiB, 300 W",
     r"memory.used \[MiB\] '1e308 MiB': 1e\+308 is above the GPU's memory = 81,920 MiB \(H100 SXM, catalog\)"),
    ("2026/11/02 09:05:00.000, 0, 50 %, 81921 MiB, 300 W",
     r"memory.used \[MiB\] '81921 MiB': 81,921 is above the GPU's memory = 81,920 MiB \(H100 SXM, catalog\)"),
    ("2026/11/02 09:05:00.000, 0, 50 %, 4096 MiB, 1401 W",
     r"power.draw \[W\] '1401 W': 1,401 is above 2 x TDP = 1,400 W \(H100 SXM, catalog\)"),
    ("9999/11/02 09:05:00.000, 0, 50 %, 4096 MiB, 300 W",
     r"timestamp '9999/11/02 09:05:00.000' is outside 2000-01-01 \.\. now \+ 1 day"),
    ("1999/12/31 23:59:59.000, 0, 50 %, 4096 MiB, 300 W",
     r"timestamp '1999/12/31 23:59:59.000' is outside 2000-01-01 \.\. now \+ 1 day"),
])
def test_nvidia_smi_impossible_readings_are_refused_with_line_and_field(store, tmp_path, row, why):
    """Each impossible value on line 8 (after six good rows) is refused naming the line and the field."""
    with pytest.raises(InputError, match=rf"^gpu.csv line 8: {why}$"):
        import_telemetry(store, write(tmp_path, "gpu.csv", smi(*GOOD, row)), node="n", gpu="H100 SXM")
    nothing_written(store)


def test_nvidia_smi_bounds_at_the_limit_are_accepted(store, tmp_path):
    """Index 7, 81,920 MiB and exactly 1,400 W on an H100 SXM are plausible: the bounds are inclusive."""
    row = "2026/11/02 09:05:00.000, 7, 100 %, 81920 MiB, 1400 W"
    result = import_telemetry(store, write(tmp_path, "gpu.csv", smi(*GOOD, row)), node="n", gpu="H100 SXM")
    assert result.samples == 7 and result.gpus == 3


def test_without_gpu_the_widest_catalog_bounds_apply(store, tmp_path):
    """1,401 W passes without --gpu (widest: 2,000 W); 2,001 W does not."""
    ok = "2026/11/02 09:05:00.000, 0, 50 %, 4096 MiB, 1401 W"
    assert import_telemetry(store, write(tmp_path, "a.csv", smi(*GOOD, ok)), node="n").samples == 7
    bad = "2026/11/02 09:06:00.000, 0, 50 %, 4096 MiB, 2001 W"
    with pytest.raises(InputError, match=r"line 8: power.draw \[W\] '2001 W': 2,001 is above 2 x TDP = 2,000 W "
                                         r"\(the widest GPU in the catalog"):
        import_telemetry(store, write(tmp_path, "b.csv", smi(*GOOD, bad)), node="n")


def test_nvidia_smi_repeated_reading_is_refused_with_both_lines(store, tmp_path):
    """GPU 1 at 09:01 twice (lines 5 and 8): refused with the count, the lines and the fields; nothing written."""
    text = smi(*GOOD, GOOD[3])
    with pytest.raises(InputError, match=r"^gpu.csv line 5 and 8: 1 reading\(s\) repeat a GPU and time already in "
                                         r"the file \(index 1 at 2026/11/02 09:01:00 here\); fields index and "
                                         r"timestamp repeat"):
        import_telemetry(store, write(tmp_path, "gpu.csv", text), node="n")
    nothing_written(store)


def test_a_log_appended_to_itself_counts_every_repeat(store, tmp_path):
    """The six rows twice: six repeats counted."""
    with pytest.raises(InputError, match=r"6 reading\(s\) repeat"):
        import_telemetry(store, write(tmp_path, "gpu.csv", smi(*GOOD, *GOOD)), node="n")


def test_unknown_gpu_is_refused_naming_the_option(store, tmp_path):
    with pytest.raises(InputError, match=r"^--gpu 'H900' is not in the GPU catalog; known GPUs: A100 40GB SXM"):
        import_telemetry(store, write(tmp_path, "gpu.csv", smi(*GOOD)), node="n", gpu="H900")


def test_a_store_without_catalog_keeps_the_format_bounds(tmp_path):
    """No GPU table: index 9 and 1e9 MiB pass (no catalog to bound them); index 64 is still refused."""
    s = Store(tmp_path / "bare.duckdb", seed=False)
    try:
        ok = "2026/11/02 09:05:00.000, 9, 50 %, 1e9 MiB, 300 W"
        assert import_telemetry(s, write(tmp_path, "a.csv", smi(*GOOD, ok)), node="n").gpus == 3
        bad = "2026/11/02 09:06:00.000, 64, 50 %, 4096 MiB, 300 W"
        with pytest.raises(InputError, match=r"line 8: index '64' is not a GPU index \(a whole number 0 to 63"):
            import_telemetry(s, write(tmp_path, "b.csv", smi(*GOOD, bad)), node="n")
    finally:
        s.close()


def _dcgm_with(line_no_metric: str, replace: tuple[str, str]) -> tuple[list[str], int]:
    text = dcgm_day().splitlines()
    i = next(n for n, line in enumerate(text) if line.startswith(line_no_metric))
    text[i] = text[i].replace(*replace)
    return text, i


def test_dcgm_power_and_memory_beyond_the_catalog_are_refused(store, tmp_path):
    """400 W -> 1401 W on an H100 SXM; an FB_USED of 1e308 MiB; each named with its line and field."""
    text, i = _dcgm_with("DCGM_FI_DEV_POWER_USAGE", (" 400.0 ", " 1401 "))
    with pytest.raises(InputError, match=rf"^s.prom line {i + 1}: DCGM_FI_DEV_POWER_USAGE: value 1,401 is above "
                                         r"2 x TDP = 1,400 W \(H100 SXM, catalog\)$"):
        import_telemetry(store, write(tmp_path, "s.prom", "\n".join(text)), gpu="H100 SXM")
    text.append('DCGM_FI_DEV_FB_USED{gpu="0",Hostname="a-1"} 1e308 1793610000000')
    with pytest.raises(InputError, match=rf"s.prom line {len(text)}: DCGM_FI_DEV_FB_USED: value 1e\+308 is above "
                                         r"the GPU's memory = 262,144 MiB"):
        import_telemetry(store, write(tmp_path, "s.prom", "\n".join(text)))
    nothing_written(store)


def test_dcgm_repeated_reading_is_refused_with_both_lines(store, tmp_path):
    """A scrape line repeated at the end (same GPU, field and timestamp): refused naming both lines."""
    text = dcgm_day().splitlines()
    text += [text[2], ""]
    with pytest.raises(InputError, match=rf"^s.prom line {len(text) - 1}: DCGM_FI_PROF_SM_ACTIVE: a second reading of "
                                         r"GPU 0 on a-1 at \d+ ms \(the first is on line 3\); fields gpu and "
                                         r"timestamp repeat$"):
        import_telemetry(store, write(tmp_path, "s.prom", "\n".join(text)))
    nothing_written(store)


def test_prometheus_repeated_series_and_memory_are_refused(store, tmp_path):
    """Two series of GPU 0's SM activity (two exporters): refused naming both series; FB 1e308 MiB refused."""
    doc = json.loads(prometheus_range(gpus=2, minutes=3))
    twin = json.loads(json.dumps(doc["data"]["result"][0]))
    twin["metric"]["pod"] = "exporter-b"
    doc["data"]["result"].append(twin)
    with pytest.raises(InputError, match=r"^r.json series 3 \(DCGM_FI_PROF_SM_ACTIVE, gpu 0\): 3 reading\(s\) of GPU 0 "
                                         r"on 10.0.0.7 at times series 1 already has \(first at \d+ s\); fields gpu "
                                         r"and timestamp repeat$"):
        import_telemetry(store, write(tmp_path, "r.json", json.dumps(doc)))
    doc = json.loads(prometheus_range(gpus=1, minutes=3))
    doc["data"]["result"][0]["metric"]["__name__"] = "DCGM_FI_DEV_FB_USED"
    doc["data"]["result"][0]["values"][2][1] = "1e308"
    with pytest.raises(InputError, match=r"series 1 \(DCGM_FI_DEV_FB_USED, gpu 0\), point 3: value 1e\+308 is above "
                                         r"the GPU's memory = 81,920 MiB"):
        import_telemetry(store, write(tmp_path, "r.json", json.dumps(doc)), gpu="H100 SXM")
    nothing_written(store)


def test_cli_gpu_option_and_its_refusal(tmp_path, capsys):
    """`telemetry import --gpu`: an unknown GPU and a reading past its bound are one line each, exit code 2."""
    db = str(tmp_path / "h.duckdb")
    path = write(tmp_path, "gpu.csv", smi(*GOOD, "2026/11/02 09:05:00.000, 0, 50 %, 4096 MiB, 800 W"))
    assert main(["--db", db, "telemetry", "import", str(path), "--node", "n", "--gpu", "L40S"]) == 2
    assert re.search(r"gpu.csv line 8: power.draw \[W\] '800 W': 800 is above 2 x TDP = 700 W \(L40S, catalog\)",
                     capsys.readouterr().err)
    assert main(["--db", db, "telemetry", "import", str(path), "--node", "n", "--gpu", "H100 SXM"]) == 0
