"""Telemetry import (issue 15): each format round-trips a known pattern; bad files name the line and write nothing."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import InputError
from core.store import Store
from core.store import telemetry as tstore
from core.telemetry import import_telemetry, measured_profile, summarize
from core.telemetry.formats import detect_format
from core.telemetry.profile import date_span, measured_vs_plan

DATA = Path(__file__).parent / "data" / "telemetry"
MON = dt.datetime(2026, 11, 2)  # a Monday


def nvidia_smi_week(gpus: int = 4, every_min: int = 10, *, units: bool = True) -> str:
    """Mon 2 - Sun 8 Nov 2026, one line per GPU every `every_min` minutes, as nvidia-smi writes it.

    utilization.gpu = 80 % on weekdays 09:00-16:59, else 10 %, plus 2 points per GPU index.
    """
    pct, mib, w = (" %", " MiB", " W") if units else ("", "", "")
    lines = ["timestamp, index, utilization.gpu [%], memory.used [MiB], power.draw [W]"]
    for minute in range(0, 7 * 24 * 60, every_min):
        t = MON + dt.timedelta(minutes=minute)
        busy = t.weekday() < 5 and 9 <= t.hour < 17
        for g in range(gpus):
            u = (80 if busy else 10) + 2 * g
            lines.append(f"{t:%Y/%m/%d %H:%M:%S}.{g:03d}, {g}, {u}{pct}, 4096{mib}, 300.5{w}")
    return "\n".join(lines) + "\n"


def dcgm_day(*, timestamps: bool = True) -> str:
    """Mon 2 Nov 2026 UTC, two nodes (Hostname a-1, b-2) x two GPUs, a scrape every 15 min.

    GPU_UTIL reads 100 % throughout (a kernel always runs); SM_ACTIVE is 0.5 from 09:00 to 16:59 UTC and 0.1
    otherwise; tensor activity 0.2; power 400 W.
    """
    out = []
    for k in range(96):
        t = dt.datetime(2026, 11, 2, tzinfo=dt.UTC) + dt.timedelta(minutes=15 * k)
        ms = f" {int(t.timestamp() * 1000)}" if timestamps else ""
        sm = 0.5 if 9 <= t.hour < 17 else 0.1
        for host in ("a-1", "b-2"):
            for g in range(2):
                labels = f'gpu="{g}",UUID="GPU-{host}-{g}",device="nvidia{g}",Hostname="{host}"'
                out += [f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} 100{ms}",
                        f"DCGM_FI_PROF_SM_ACTIVE{{{labels}}} {sm}{ms}",
                        f"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{labels}}} 0.2{ms}",
                        f"DCGM_FI_DEV_POWER_USAGE{{{labels}}} 400.0{ms}"]
    return "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n" + "\n".join(out) + "\n"


def prometheus_range(gpus: int = 8, minutes: int = 120) -> str:
    """A query_range result: DCGM_FI_PROF_SM_ACTIVE of 8 GPUs on instance 10.0.0.7:9400, every 60 s for 2 h.

    GPU g reads g/10 throughout, from Fri 6 Nov 2026 09:00 UTC.
    """
    start = int(dt.datetime(2026, 11, 6, 9, tzinfo=dt.UTC).timestamp())
    result = [{"metric": {"__name__": "DCGM_FI_PROF_SM_ACTIVE", "gpu": str(g), "instance": "10.0.0.7:9400"},
               "values": [[start + 60 * i, str(g / 10)] for i in range(minutes)]} for g in range(gpus)]
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8", newline="")
    return p


def nothing_written(store: Store) -> None:
    """No rows in either telemetry table, and no file (nor staging folder) under the telemetry folder."""
    with store.cursor() as cur:
        assert cur.execute("SELECT count(*) FROM telemetry_imports").fetchall()[0][0] == 0
        assert cur.execute("SELECT count(*) FROM telemetry_hourly").fetchall()[0][0] == 0
    root = tstore.telemetry_root(store)
    assert not root.exists() or not any(p.is_file() or p.name.startswith(".staging") for p in root.rglob("*"))


# -- round trips --------------------------------------------------------------------------


def test_nvidia_smi_week_round_trips_the_known_pattern(store, tmp_path):
    """4 GPUs x 7 days x 24 h x 6 samples = 4,032 samples.

    Weekdays 09-17 (8 h x 5 days = 40 of 168 h) read 80 %, the rest 10 %, plus 2 points per GPU (mean +3):
    utilization = (40 x 80 + 128 x 10) / 168 + 3 = 4480 / 168 + 3 = 29.667 %.
    10:00 = (5 x 80 + 2 x 10) / 7 + 3 = 63 %; 03:00 = 13 %; Monday 10:00 = 83 %; Saturday 10:00 = 13 %.
    """
    path = write(tmp_path, "gpu.csv", nvidia_smi_week())
    result = import_telemetry(store, path, node="bank-node-1")
    assert not result.duplicate and result.samples == 4032 and result.gpus == 4
    assert result.file_format == "nvidia-smi CSV" and result.nodes == ("bank-node-1",)
    p = measured_profile(store)
    assert p.gpus == 4 and p.samples == 4032 and p.gpu_hours == 4 * 168
    assert p.utilization == pytest.approx(4480 / 168 / 100 + 0.03)
    assert p.hourly_utilization[10] == pytest.approx(0.63)
    assert p.hourly_utilization[3] == pytest.approx(0.13)
    assert p.by_weekday_hour[0, 10] == pytest.approx(0.83) and p.by_weekday_hour[5, 10] == pytest.approx(0.13)
    assert p.metric == "gpu_util" and p.label == "measured 2 – 8 Nov 2026 on bank-node-1"
    assert (p.date_from, p.date_to) == (dt.date(2026, 11, 2), dt.date(2026, 11, 8))
    raw = tstore.read_samples(store)
    assert len(raw) == 4032 and set(raw["month"]) == {"2026-11"}
    assert raw["gpu_util"].mean() == pytest.approx(p.utilization)  # equal samples per GPU-hour
    assert raw["power_w"].eq(300.5).all() and raw["memory_used_mib"].eq(4096).all()
    files = list(tstore.telemetry_root(store).rglob("*.parquet"))
    assert [f.relative_to(tstore.telemetry_root(store)).as_posix() for f in files] == [
        f"node=bank-node-1/month=2026-11/{result.import_id}.parquet"]


def test_nounits_file_reads_the_same(store, tmp_path):
    """`--format=csv,nounits`: the header keeps its units, the values do not; same figures as with units."""
    import_telemetry(store, write(tmp_path, "gpu.csv", nvidia_smi_week(units=False)), node="n")
    assert measured_profile(store).utilization == pytest.approx(4480 / 168 / 100 + 0.03)


def test_units_na_and_a_repeated_header(store):
    """97 and 95 % at 09:00 on GPU 0, 3 and 5 % on GPU 1, 40 and 0 % at 10:00: hourly means 0.96, 0.04, 0.40, 0.00.

    Utilization = (0.96 + 0.04 + 0.40 + 0.00) / 4 = 0.35; [N/A] power is no reading, not an error.
    """
    result = import_telemetry(store, DATA / "nvidia_smi_units.csv", node="bank-node-1")
    assert result.samples == 6 and result.gpus == 2
    assert measured_profile(store).utilization == pytest.approx(0.35)
    raw = tstore.read_samples(store)
    assert raw["power_w"].isna().sum() == 1 and raw["gpu_util"].tolist()[:2] == [0.97, 0.03]
    assert raw["ts"].iloc[0] == dt.datetime(2026, 11, 2, 9, 0, 0, 123000)


def test_odd_spacing_crlf_and_blank_lines(store):
    """Padded cells, CRLF, a blank line, nounits: read by the lenient pass; 97/95 % and 3/5 % -> 0.5."""
    result = import_telemetry(store, DATA / "nvidia_smi_nounits.csv", node="n")
    assert result.samples == 4
    raw = tstore.read_samples(store)
    assert sorted(raw["gpu"]) == ["0", "0", "1", "1"] and raw["gpu_util"].tolist() == [0.97, 0.03, 0.95, 0.05]
    assert measured_profile(store).utilization == pytest.approx(0.5)


def test_dcgm_prefers_sm_activity_and_reads_nodes_from_labels(store, tmp_path):
    """GPU_UTIL says 100 %; SM activity (8 h x 0.5 + 16 h x 0.1) / 24 = 0.2333 is the figure used.

    2 nodes x 2 GPUs x 96 scrapes = 384 samples.
    """
    result = import_telemetry(store, write(tmp_path, "scrape.prom", dcgm_day()))
    assert result.nodes == ("a-1", "b-2") and result.gpus == 4 and result.samples == 384
    assert {"gpu_util", "sm_active", "tensor_active", "power_w"} <= set(result.metrics)
    p = measured_profile(store)
    assert p.metric == "sm_active" and p.metric_label == "SM activity"
    assert p.utilization == pytest.approx((8 * 0.5 + 16 * 0.1) / 24)
    assert p.hourly_utilization[9] == pytest.approx(0.5) and p.hourly_utilization[8] == pytest.approx(0.1)
    assert measured_profile(store, metric="gpu_util").utilization == pytest.approx(1.0)
    assert measured_profile(store, metric="tensor_active").utilization == pytest.approx(0.2)
    one = measured_profile(store, node="b-2")
    assert one.gpus == 2 and one.samples == 192 and one.label == "measured 2 Nov 2026 on b-2"


def test_dcgm_times_shown_in_the_time_zone_asked(store, tmp_path):
    """Busy 09:00-16:59 UTC is 04:00-11:59 in New York on 2 Nov 2026 (EST, UTC-5)."""
    import_telemetry(store, write(tmp_path, "scrape.prom", dcgm_day()), tz="America/New_York")
    p = measured_profile(store)
    assert p.hourly_utilization[4] == pytest.approx(0.5) and p.hourly_utilization[12] == pytest.approx(0.1)
    assert tstore.list_imports(store)["time_basis"].tolist() == ["America/New_York"]


def test_dcgm_scrape_without_timestamps_needs_at(store):
    with pytest.raises(InputError, match=r"^dcgm_scrape.prom line 10: DCGM_FI_DEV_POWER_USAGE: no timestamp.*--at 2026-11-02T09:00$"):
        import_telemetry(store, DATA / "dcgm_scrape.prom")
    nothing_written(store)
    result = import_telemetry(store, DATA / "dcgm_scrape.prom", at=dt.datetime(2026, 11, 2, 9, 30))
    assert result.gpus == 2 and result.samples == 2 and result.first_ts == dt.datetime(2026, 11, 2, 9, 30)
    raw = tstore.read_samples(store)
    assert raw["sm_active"].tolist() == [0.3125, 0.0] and raw["dram_active"].tolist() == [0.701, 0.0]


def test_prometheus_range_round_trips(store, tmp_path):
    """8 GPUs reading g/10 for 120 one-minute steps: utilization = mean(0, 0.1, ..., 0.7) = 0.35; node from instance."""
    result = import_telemetry(store, write(tmp_path, "q.json", prometheus_range()))
    assert result.nodes == ("10.0.0.7",) and result.gpus == 8 and result.samples == 960
    p = measured_profile(store)
    assert p.utilization == pytest.approx(0.35) and p.gpu_hours == 16 and p.metric == "sm_active"
    assert p.hourly_utilization[9] == pytest.approx(0.35) and np.isnan(p.hourly_utilization[8])


def test_prometheus_nan_reading_is_skipped_and_node_overrides(store):
    """GPU 1's NaN step is no sample: SM means 0.5 (GPU 0) and 0.1 (GPU 1) -> 0.3."""
    result = import_telemetry(store, DATA / "prometheus_range.json", node="bank-node-1")
    assert result.nodes == ("bank-node-1",) and result.samples == 6
    assert measured_profile(store).utilization == pytest.approx(0.3)


# -- bad files: the line, and nothing written ----------------------------------------------


def test_truncated_nvidia_smi_names_the_last_line_and_writes_nothing(store, tmp_path):
    text = nvidia_smi_week(gpus=2, every_min=60)
    cut = text[: text.rindex("\n", 0, len(text) - 1) + 30]  # the last line cut after 29 characters
    n_lines = cut.count("\n") + 1
    with pytest.raises(InputError) as err:
        import_telemetry(store, write(tmp_path, "gpu.csv", cut), node="n")
    assert str(err.value).startswith(f"gpu.csv line {n_lines}: ")
    assert "cut short" in str(err.value)
    nothing_written(store)


def test_bad_values_name_every_line_and_write_nothing(store, tmp_path):
    lines = nvidia_smi_week(gpus=2, every_min=60).splitlines()
    lines[5] = lines[5].replace(" %,", " pct,")
    lines[9] = lines[9].replace("4096 MiB", "4096")
    lines[11] = lines[11].replace(", 10 %", ", 101 %")
    with pytest.raises(InputError) as err:
        import_telemetry(store, write(tmp_path, "gpu.csv", "\n".join(lines) + "\n"), node="n")
    msg = str(err.value).splitlines()
    assert msg[0].startswith("gpu.csv line 6: utilization.gpu [%] '10 pct' lacks its unit '%'")
    assert msg[1] == "gpu.csv line 10: memory.used [MiB] '4096' lacks its unit 'MiB'"
    assert msg[2] == "gpu.csv line 12: utilization.gpu [%] '101 %' is out of range (0 to 100)"
    nothing_written(store)


def test_bad_dcgm_and_json_lines_are_named(store, tmp_path):
    text = dcgm_day().splitlines()
    text[2] = text[2].replace(" 0.1 ", " high ")
    with pytest.raises(InputError, match=r"^s.prom line 3: DCGM_FI_PROF_SM_ACTIVE: value .high. is not a number\ns.prom line 1537: .*cut short\)$"):
        import_telemetry(store, write(tmp_path, "s.prom", "\n".join(text[:-1]) + "\n" + text[-1][:40]))
    with pytest.raises(InputError, match=r"q.json line 1, column \d+: not valid JSON.*cut short"):
        import_telemetry(store, write(tmp_path, "q.json", prometheus_range()[:500]))
    doc = json.loads(prometheus_range(gpus=1, minutes=3))
    doc["data"]["result"][0]["values"][1][1] = "1.7"
    with pytest.raises(InputError, match=r"series 1 \(DCGM_FI_PROF_SM_ACTIVE, gpu 0\), point 2: value '1.7'"):
        import_telemetry(store, write(tmp_path, "r.json", json.dumps(doc)))
    nothing_written(store)


def test_a_failure_inside_the_transaction_leaves_no_files(store, tmp_path, monkeypatch):
    """The files are moved into place inside the transaction; when its last insert fails, they go again."""
    real = tstore.commit_import

    def failing(store_, **kw):
        def boom(*a, **k):
            raise RuntimeError("disk full")
        monkeypatch.setattr(tstore.os, "replace", _then(tstore.os.replace, boom))
        return real(store_, **kw)

    monkeypatch.setattr(tstore, "commit_import", failing)
    text = nvidia_smi_week(gpus=2, every_min=60).replace("2026/11/08", "2026/10/08")  # two months: two files
    with pytest.raises(RuntimeError, match="disk full"):
        import_telemetry(store, write(tmp_path, "gpu.csv", text), node="n")
    nothing_written(store)


def _then(first, then):
    """Call `first` once, then `then` for every later call (the second file's move fails)."""
    calls = []

    def call(*a, **k):
        calls.append(1)
        return first(*a, **k) if len(calls) == 1 else then(*a, **k)
    return call


def test_reimport_is_a_no_op(store, tmp_path):
    path = write(tmp_path, "gpu.csv", nvidia_smi_week(gpus=2, every_min=60))
    first = import_telemetry(store, path, node="n")
    files = sorted(tstore.telemetry_root(store).rglob("*"))
    again = import_telemetry(store, path, node="other-name")
    assert again.duplicate and again.import_id == first.import_id and "nothing added" in again.message
    assert sorted(tstore.telemetry_root(store).rglob("*")) == files
    assert len(tstore.list_imports(store)) == 1 and tstore.nodes(store) == ["n"]
    upload = import_telemetry(store, path.read_bytes(), "copy.csv", node="n")  # the same bytes as an upload
    assert upload.duplicate


def test_overlapping_imports_pool_their_samples(store, tmp_path):
    """Two logs of the same GPU-hours (80 % and 20 %) merge into one 50 % hour, and the import says so."""
    head = "timestamp, index, utilization.gpu [%]\n"
    a = import_telemetry(store, write(tmp_path, "a.csv", head + "2026/11/02 09:00:00.000, 0, 80 %\n"), node="n")
    b = import_telemetry(store, write(tmp_path, "b.csv", head + "2026/11/02 09:30:00.000, 0, 20 %\n"), node="n")
    assert not a.duplicate and "already covered by an earlier import" in b.message
    p = measured_profile(store)
    assert p.utilization == pytest.approx(0.5) and p.samples == 2 and p.gpus == 1


def test_detection_and_user_errors(store, tmp_path):
    assert detect_format(nvidia_smi_week(gpus=1, every_min=600), "x") == "nvidia-smi CSV"
    assert detect_format(dcgm_day()[:2000], "x") == "DCGM exporter (Prometheus text)"
    assert detect_format(prometheus_range()[:2000], "x") == "Prometheus query JSON"
    with pytest.raises(InputError, match="not a telemetry file .* starts 'workload_id,name'"):
        import_telemetry(store, write(tmp_path, "w.csv", "workload_id,name\nx,y\n"))
    with pytest.raises(InputError, match="does not say which node wrote it; name it with --node"):
        import_telemetry(store, write(tmp_path, "gpu.csv", nvidia_smi_week(gpus=1, every_min=600)))
    with pytest.raises(InputError, match="without its header line"):
        import_telemetry(store, write(tmp_path, "nh.csv", "2026/11/02 09:00:00.000, 0, 5 %\n"), node="n")
    with pytest.raises(InputError, match="node name 'a/b' is not usable"):
        import_telemetry(store, write(tmp_path, "g.csv", nvidia_smi_week(gpus=1, every_min=600)), node="a/b")
    with pytest.raises(InputError, match="no GPU telemetry"):
        measured_profile(store)
    nothing_written(store)


def test_summary_json_and_idle_cost(store, tmp_path):
    """Idle $ = 4 GPUs x 730 h x ($40/h / 8 GPUs) x (1 - 0.29667) = 14,600 x 0.70333 = $10,268.67."""
    import_telemetry(store, write(tmp_path, "gpu.csv", nvidia_smi_week()), node="bank-node-1")
    s = summarize(store, node_usd_per_hour=40.0)
    out = s.to_json()
    assert set(out) >= {"gpus", "samples", "from", "to", "utilization", "hourly_utilization", "idle_usd_per_month",
                        "metric"}
    assert out["gpus"] == 4 and out["samples"] == 4032 and out["metric"] == "gpu_util"
    assert out["from"] == "2026-11-02 00:00:00" and out["to"] == "2026-11-08 23:50:00.003000"
    assert len(out["hourly_utilization"]) == 24 and out["hourly_utilization"][10] == pytest.approx(0.63)
    assert out["idle_usd_per_month"] == pytest.approx(4 * 730 * 5.0 * (1 - (4480 / 168 / 100 + 0.03)), abs=0.01)
    day = summarize(store, date_from=dt.date(2026, 11, 7), date_to=dt.date(2026, 11, 7)).profile
    assert day.utilization == pytest.approx(0.13) and day.label == "measured 7 Nov 2026 on bank-node-1"


def test_measured_vs_plan_line(store, tmp_path):
    from core.decision.economics import NodeRate

    rate = NodeRate(40.0, 40.0, 8, "test", "test", "2026-01-01", "user", "")
    assert measured_vs_plan(store, 0.6, rate) is None
    import_telemetry(store, write(tmp_path, "gpu.csv", nvidia_smi_week()), node="bank-node-1")
    line = measured_vs_plan(store, 0.6, rate)
    assert line.startswith("As it is: 30% busy, measured 2 – 8 Nov 2026 on bank-node-1 (4 GPUs")
    assert "idle $10,269 a month" in line and "the plan above models 60%" in line


def test_date_span_words():
    assert date_span(dt.date(2026, 11, 2), dt.date(2026, 11, 9)) == "2 – 9 Nov 2026"
    assert date_span(dt.date(2026, 10, 28), dt.date(2026, 11, 4)) == "28 Oct – 4 Nov 2026"
    assert date_span(dt.date(2025, 12, 28), dt.date(2026, 1, 4)) == "28 Dec 2025 – 4 Jan 2026"


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.integers(0, 100), min_size=1, max_size=6), min_size=1, max_size=4))
def test_utilization_is_the_mean_of_gpu_hour_means(tmp_path_factory, per_gpu):
    """Any readings: utilization = mean over GPU-hours of each hour's mean reading (one hour per GPU here)."""
    folder = tmp_path_factory.mktemp("prop")
    lines = ["timestamp, index, utilization.gpu [%]"]
    for g, readings in enumerate(per_gpu):
        lines += [f"2026/11/02 09:{i:02d}:00.000, {g}, {u} %" for i, u in enumerate(readings)]
    s = Store(folder / "p.duckdb", seed=False)  # no reference data needed: faster examples
    try:
        result = import_telemetry(s, write(folder, "p.csv", "\n".join(lines) + "\n"), node="n")
        assert result.samples == sum(map(len, per_gpu)) and result.gpus == len(per_gpu)
        expected = np.mean([np.mean(r) / 100 for r in per_gpu])
        assert measured_profile(s).utilization == pytest.approx(expected)
    finally:
        s.close()


@pytest.mark.parametrize("stamp", ["100000000000000000", "253402300800000", "-62135596800000", "946684799999"])
def test_a_dcgm_timestamp_outside_the_window_is_refused_naming_the_field(store, tmp_path, stamp):
    """DCGM timestamp 1e17 ms, year 10000, year 1 and a millisecond before 2000 (issue 34: 1e17 ended in the
    generic 'unexpected error' line): refused with the line and the field, nothing imported."""
    text = dcgm_day().splitlines()
    i = next(n for n, line in enumerate(text) if line.startswith("DCGM_FI_PROF_SM_ACTIVE"))
    head, _, _ = text[i].rpartition(" ")
    text[i] = f"{head} {stamp}"
    with pytest.raises(InputError, match=rf"^s.prom line {i + 1}: DCGM_FI_PROF_SM_ACTIVE: timestamp {stamp} ms is "
                                         r"outside 2000-01-01 \.\. now \+ 1 day$"):
        import_telemetry(store, write(tmp_path, "s.prom", "\n".join(text)))


@pytest.mark.parametrize("stamp", [1e14, 253402300800, -62135596800, 946684799])
def test_a_prometheus_timestamp_outside_the_window_is_refused_naming_the_field(store, tmp_path, stamp):
    """Seconds since the epoch far in the future, year 10000, year 1 and a second before 2000: refused naming the
    series, point and field; nothing imported."""
    doc = json.loads(prometheus_range(gpus=1, minutes=3))
    doc["data"]["result"][0]["values"][1][0] = stamp
    with pytest.raises(InputError, match=rf"series 1 \(DCGM_FI_PROF_SM_ACTIVE, gpu 0\), point 2: timestamp "
                                         rf"{stamp!r} s is outside 2000-01-01 \.\. now \+ 1 day"):
        import_telemetry(store, write(tmp_path, "r.json", json.dumps(doc)))
    nothing_written(store)


@pytest.mark.parametrize("index", ["-3", "1e300", "64", "8", "1.5"])
def test_an_impossible_gpu_index_is_refused_naming_the_field(store, tmp_path, index):
    """GPU index -3 or 1e300 (issue 34: counted as extra GPUs, inflating idle $), or 8 where the catalog's nodes
    hold at most 8 GPUs: refused in DCGM text (with its line) and in Prometheus JSON (with its series), nothing
    imported."""
    text = dcgm_day().splitlines()
    i = next(n for n, line in enumerate(text) if line.startswith("DCGM_FI_PROF_SM_ACTIVE"))
    text[i] = text[i].replace('gpu="0"', f'gpu="{index}"', 1).replace('gpu="1"', f'gpu="{index}"', 1)
    with pytest.raises(InputError, match=rf"^s.prom line {i + 1}: DCGM_FI_PROF_SM_ACTIVE: gpu label '{re.escape(index)}' "
                                         r"is not a GPU index \(a whole number 0 to 7: 8 GPUs per node"):
        import_telemetry(store, write(tmp_path, "s.prom", "\n".join(text)))
    doc = json.loads(prometheus_range(gpus=1, minutes=3))
    doc["data"]["result"][0]["metric"]["gpu"] = index
    with pytest.raises(InputError, match=r"series 1 \(DCGM_FI_PROF_SM_ACTIVE, gpu .*\): gpu label .* is not a GPU index"):
        import_telemetry(store, write(tmp_path, "r.json", json.dumps(doc)))
    nothing_written(store)
