"""Benchmark imports in the store: count, insert (one transaction per file), list, remove, and the guarded read."""

from __future__ import annotations

import pandas as pd
from pydantic import ValidationError

from core.errorlog import log_error, shorten
from core.errors import InputError
from core.models import Benchmark

_FIGURES = ("input_tokens", "output_tokens", "output_tokens_per_s_total", "output_tokens_per_s_per_stream",
            "ttft_ms_p50", "ttft_ms_p95", "e2e_ms_p50", "e2e_ms_p95")


def count_import(store, import_id: str) -> int:
    """Points already stored under this import id (the file's sha256)."""
    df = store.frame("SELECT count(*) AS n FROM benchmarks WHERE import_id = ?", [import_id])
    return int(df["n"].iloc[0])


def insert_import(store, points: list[Benchmark], import_id: str) -> tuple[int, int]:
    """(added, already there): the points in one transaction, unless another session imported the file meanwhile."""
    from core.store import store as store_module

    def work(cur) -> tuple[int, int]:
        # Checked again inside the transaction: another session may have imported it meanwhile.
        # fetchall, not fetchone: DuckDB refuses further work on a cursor with an unfinished result.
        n = cur.execute("SELECT count(*) FROM benchmarks WHERE import_id = ?", [import_id]).fetchall()[0][0]
        if n:
            return 0, n
        return store_module.insert_rows(cur, "benchmarks", points, origin="user", import_id=import_id), 0

    return store.write(work)


def list_imports(store) -> pd.DataFrame:
    """One row per imported file: import id, points, tool, first source, routes, oldest and newest date."""
    return store.frame(
        "SELECT import_id, count(*) AS points, min(tool) AS tool, min(source) AS source, "
        "string_agg(DISTINCT stack_id || ' on ' || gpu || ' x' || gpus_per_replica, ', ') AS routes, "
        "min(as_of) AS first_as_of, max(as_of) AS last_as_of "
        "FROM benchmarks WHERE import_id IS NOT NULL GROUP BY import_id ORDER BY min(row_id)"
    )


def remove_import(store, import_id: str) -> tuple[str, int, str]:
    """Delete one import's points in one transaction: (full id, points removed, its source).

    `import_id` may be the full sha256 or a unique prefix of at least 8 characters
    (the CLI and the Performance page show the first 12). Seed rows have no import id
    and cannot be removed this way.
    """
    key = import_id.strip().lower()
    if len(key) < 8 or any(c not in "0123456789abcdef" for c in key):
        raise InputError(f"import id {shorten(repr(import_id), 80)} must be 8 or more hexadecimal characters "
                         "(`hangover bench remove` without an id lists them)")

    def work(cur) -> tuple[str, int, str]:
        found = cur.execute(
            "SELECT import_id, count(*), min(source) FROM benchmarks WHERE starts_with(import_id, ?) "
            "GROUP BY import_id", [key]).fetchall()
        if not found:
            raise InputError(f"no imported benchmark file has id {key[:64]}... (`hangover bench remove` without an id lists them)")
        if len(found) > 1:
            raise InputError(f"import id {key[:64]} matches {len(found)} imports; give more characters")
        full, n, source = found[0]
        cur.execute("DELETE FROM benchmarks WHERE import_id = ?", [full])
        return full, int(n), str(source)

    return store.write(work)


def readable_benchmarks(store, df: pd.DataFrame) -> list[Benchmark]:
    """Rows of the benchmarks table as models, skipping (and logging) any that are invalid or not finite.

    Vectorised screen first (finite, positive concurrency, under absolute ceilings), then each
    remaining row is validated; a row that fails is skipped, never raised, so one bad
    import cannot break every page (issue 16).
    """
    from core.performance.bench_formats.bounds import plausible_mask
    from core.store.store import _clean

    if df.empty:
        return []
    conc = pd.to_numeric(df["concurrency"], errors="coerce").to_numpy(dtype=float)
    figs = {c: pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float) for c in _FIGURES if c in df}
    ok = plausible_mask(conc, figs)
    fields = list(Benchmark.model_fields)
    out, skipped = [], []
    for keep, rec in zip(ok, df[fields].to_dict("records"), strict=True):
        if not keep:
            skipped.append(rec)
            continue
        try:
            out.append(Benchmark.model_validate(_clean(rec)))
        except ValidationError:
            skipped.append(rec)
    if skipped:
        log_error(f"{len(skipped)} stored benchmark row(s) skipped as invalid or not finite, e.g. "
                  f"{shorten({k: skipped[0].get(k) for k in ('stack_id', 'gpu', 'concurrency', 'source')}, 300)}",
                  store_path=getattr(store, "path", None))
    return out


__all__ = ["count_import", "insert_import", "list_imports", "readable_benchmarks", "remove_import"]
