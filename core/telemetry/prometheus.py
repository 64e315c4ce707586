"""Prometheus HTTP API query results (range `matrix` or instant `vector`) of DCGM metrics into raw samples.

``{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":
"DCGM_FI_PROF_SM_ACTIVE","gpu":"0","Hostname":"bank-node-1",…},"values":[[1730538000,"0.42"],…]}]}}``:
timestamps in seconds since the epoch, values as strings. A series must keep
its metric name (`__name__`): a query through rate() or avg() drops it, and
the figure could then be anything.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd

from core.errors import InputError
from core.format import integer
from core.telemetry.dcgm import (
    DCGM_FIELDS,
    SHARE_METRICS,
    gpu_from_labels,
    index_problem,
    node_from_labels,
    pivot,
)
from core.telemetry.plausible import FORMAT_ONLY, Plausible
from core.telemetry.samples import TS_AHEAD_MS, TS_MIN_MS, ParsedTelemetry

FORMAT = "Prometheus query JSON"
MAX_REPORTED = 20


def detect(head: str) -> bool:
    """True when the text opens like a Prometheus API response."""
    h = head.lstrip()[:4096]
    return h.startswith("{") and '"resultType"' in h or ('"status"' in h and '"data"' in h and '"result"' in h)


def parse(text: str, file_name: str, *, node: str | None = None, tz: str | None = None,
          bounds: Plausible = FORMAT_ONLY) -> ParsedTelemetry:
    """Every point of every DCGM series; InputError naming the series and point of each bad value.

    Values beyond the catalog's bounds (`bounds`) and a second series of one metric of one GPU with a point at
    the same instant are refused (issue 34: they were averaged without a word).
    """
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        cut = " (the file looks cut short)" if not text.rstrip().endswith(("}", "]")) else ""
        raise InputError(f"{file_name} line {exc.lineno}, column {exc.colno}: not valid JSON: {exc.msg}{cut}") from None
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, dict) or not isinstance(data.get("result"), list):
        raise InputError(f"{file_name}: not a Prometheus query response (expected {{\"status\": \"success\", "
                         "\"data\": {\"resultType\": \"matrix\", \"result\": [...]}})")
    if doc.get("status") not in (None, "success"):
        raise InputError(f"{file_name}: the query failed (status {doc.get('status')!r}: {doc.get('error', '')})")
    kind = data.get("resultType")
    if kind not in ("matrix", "vector"):
        raise InputError(f"{file_name}: resultType {kind!r}; export a range query (matrix) or an instant one (vector)")
    problems: list[str] = []
    n_bad = 0
    parts: list[pd.DataFrame] = []
    skipped: set[str] = set()
    for k, series in enumerate(data["result"], start=1):
        labels = series.get("metric") if isinstance(series, dict) else None
        if not isinstance(labels, dict):
            problems.append(f"{file_name} series {k}: no \"metric\" labels")
            n_bad += 1
            continue
        name = labels.get("__name__")
        where = f"{file_name} series {k} ({name or 'no name'}, gpu {labels.get('gpu', '?')})"
        if name is None:
            n_bad += 1
            problems.append(f"{where}: the series has no __name__ (a query through rate() or avg() drops it); "
                            "query the DCGM metric itself, e.g. DCGM_FI_PROF_SM_ACTIVE")
            continue
        if name not in DCGM_FIELDS:
            skipped.add(name)
            continue
        gpu = gpu_from_labels(labels)
        host = node or node_from_labels(labels)
        if gpu is None or host is None:
            n_bad += 1
            problems.append(f"{where}: no {'gpu/UUID' if gpu is None else 'Hostname/instance'} label"
                            + ("; name the node with --node" if host is None else ""))
            continue
        if (bad_index := index_problem(labels, bounds)) is not None:
            n_bad += 1
            problems.append(f"{where}: {bad_index}")
            continue
        points = series.get("values") if kind == "matrix" else [series.get("value")]
        frame, bad = _points(points, name, bounds)
        for i, why in bad[: MAX_REPORTED]:
            problems.append(f"{where}, point {i + 1}: {why}")
        n_bad += len(bad)
        if not bad and len(frame):
            parts.append(frame.assign(node=host, gpu=gpu, metric=DCGM_FIELDS[name][0], field=name, series=k))
    if n_bad:
        shown = problems[:MAX_REPORTED]
        more = [f"… and {integer(n_bad - len(shown))} more bad value(s)"] if n_bad > len(shown) else []
        raise InputError("\n".join(shown + more))
    if not parts:
        seen = f" (it has {', '.join(sorted(skipped)[:5])})" if skipped else ""
        raise InputError(f"{file_name} has no DCGM utilization or power series{seen}; "
                         f"query one of {', '.join(DCGM_FIELDS)}")
    long = pd.concat(parts, ignore_index=True)
    _refuse_repeats(long, file_name)
    table = pivot(long["ts"].tolist(), long["node"].tolist(), long["gpu"].tolist(), long["metric"].tolist(),
                  long["value"].tolist(), tz)
    notes = (f"series not read: {', '.join(sorted(skipped))}",) if skipped else ()
    return ParsedTelemetry(FORMAT, tz or "UTC", table=table, notes=notes)


def _refuse_repeats(long: pd.DataFrame, file_name: str) -> None:
    """InputError naming each series that repeats readings of an earlier one (time, node, GPU, field), with counts."""
    key = ["ts", "node", "gpu", "field"]
    repeat = long.duplicated(key, keep="first")
    if not repeat.any():
        return
    first = long.drop_duplicates(key).set_index(key)["series"].rename("first")
    rep = long[repeat].join(first, on=key)
    lines = []
    for (series, earlier), g in rep.groupby(["series", "first"], sort=True):
        r = g.iloc[0]
        lines.append(f"{file_name} series {series} ({r.field}, gpu {r.gpu}): {integer(len(g))} reading(s) of GPU "
                     f"{r.gpu} on {r.node} at times series {earlier} already has (first at {r.ts // 1000} s); "
                     "fields gpu and timestamp repeat")
    shown = lines[:MAX_REPORTED]
    more = [f"… and {integer(len(lines) - len(shown))} more series"] if len(lines) > len(shown) else []
    raise InputError("\n".join(shown + more))


def _points(points, name: str, bounds: Plausible = FORMAT_ONLY) -> tuple[pd.DataFrame, list[tuple[int, str]]]:
    """[[ts, "v"], …] -> frame of (ts ms, value) without NaN readings, and [(index, why)] for bad points."""
    if not isinstance(points, list) or not all(isinstance(p, list) and len(p) == 2 for p in points):
        return pd.DataFrame(), [(0, "values are not [timestamp, \"value\"] pairs")]
    arr = np.asarray(points, dtype=object).reshape(-1, 2)
    ts = pd.to_numeric(pd.Series(arr[:, 0]), errors="coerce")
    raw = pd.Series(arr[:, 1])
    value = pd.to_numeric(raw, errors="coerce")
    metric, divide_by = DCGM_FIELDS[name]
    nan_reading = raw.astype(str).str.lower().isin(["nan"])
    value = value / divide_by
    high = 1.0 + 1e-9 if metric in SHARE_METRICS else (bounds.high(metric) or np.inf)
    ts_ms = ts.to_numpy(dtype="float64") * 1000
    with np.errstate(invalid="ignore"):
        out_of_window = ~np.isnan(ts_ms) & ((ts_ms < TS_MIN_MS) | (ts_ms > time.time() * 1000 + TS_AHEAD_MS))
    bad_ts = ts.isna().to_numpy() | out_of_window
    bad_value = ~nan_reading.to_numpy() & (value.isna() | (value < 0) | (value > high) | ~np.isfinite(value)).to_numpy()
    bad = []
    for i in np.flatnonzero(bad_ts | bad_value)[:MAX_REPORTED]:
        if out_of_window[i]:
            bad.append((int(i), f"timestamp {arr[i, 0]!r} s is outside 2000-01-01 .. now + 1 day"))
        elif bad_ts[i]:
            bad.append((int(i), f"timestamp {arr[i, 0]!r} is not a number of seconds"))
        elif np.isfinite(value.iloc[i]) and (implausible := bounds.value_problem(metric, float(value.iloc[i]))):
            bad.append((int(i), f"value {implausible}"))
        else:
            rng = "0 to 100" if divide_by == 100 else ("0 to 1" if metric in SHARE_METRICS else "at least 0")
            bad.append((int(i), f"value {arr[i, 1]!r} is not a number in range ({rng})"))
    n_bad = int((bad_ts | bad_value).sum())
    bad += [(-1, "")] * (n_bad - len(bad))  # counted, not named
    keep = ~nan_reading.to_numpy()
    ms = np.round(ts.to_numpy(dtype="float64")[keep] * 1000).astype("int64") if not n_bad else np.array([], "int64")
    return pd.DataFrame({"ts": ms, "value": value.to_numpy()[keep] if not n_bad else []}), bad
