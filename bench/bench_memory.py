"""Peak resident memory and time of one session holding a 2,000,000-row inventory: read, validate, commit, evaluate.

Run by hand (not part of the test suite):
    python bench/bench_memory.py [--rows 2000000] [--no-evaluate] [--keep FILE.csv]

Issue 16 asks that one session holding a 2M-row inventory stays under 2 GB
resident. The script writes a valid inventory CSV (bench_inventory_import's
generator: quoted names with commas, blank optional cells), then does in one
process what the dashboard does for an upload: the uploaded bytes are read and
validated (`read_inventory`), committed (`commit_inventory`), the report is
dropped, the latest version is loaded back (`latest_inventory`) and the fleet
is evaluated as the pages do (`evaluate_store` with the store's catalog), then
one workload's reasons and routes are worded as the Routing page does, and what
the evaluation holds is listed by part (numpy arrays, each counted once). Peak
RSS is measured per stage (Linux: VmHWM, reset between stages through
/proc/self/clear_refs; resetting it resets ru_maxrss too, so the run's peak is
the largest stage peak), in MiB. A thread ticking every 10 ms beside each
stage (as another session's thread would run) reports the longest it waited.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import duckdb  # noqa: E402
import pyarrow  # noqa: E402
from bench_inventory_import import write_inventory_csv  # noqa: E402

MIB = 2**20


def _status(field: str) -> int | None:
    """A VmRSS/VmHWM figure of this process in bytes (Linux), else None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _max_rss() -> int:
    """Peak RSS of the whole run so far, bytes (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


PEAKS: list[int] = []  # every stage's peak (resetting VmHWM resets ru_maxrss too)


def stage(name: str, fn, *args, **kwargs):
    """Run one stage; print its wall and CPU seconds, its peak RSS and the RSS after it."""
    gc.collect()
    PEAKS.append(_max_rss())
    resettable = _reset_peak()
    before = _status("VmRSS") or 0
    # Another session's thread, as Streamlit runs one per session: how long is it kept waiting for the GIL?
    done = threading.Event()
    longest = [0.0]

    def tick() -> None:
        last = time.perf_counter()
        while not done.wait(0.01):
            now = time.perf_counter()
            longest[0] = max(longest[0], now - last - 0.01)
            last = now

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn(*args, **kwargs)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    done.set()
    ticker.join()
    peak = _status("VmHWM") if resettable else None
    PEAKS.append(peak or _max_rss())
    after = _status("VmRSS") or 0
    peak_text = f"{peak / MIB:8,.0f}" if peak else "       –"
    print(f"  {name:<44} {wall:7.1f} s wall {cpu:7.1f} s CPU   RSS before {before / MIB:7,.0f}  "
          f"peak {peak_text}  after {after / MIB:7,.0f} MiB   other thread waited at most {longest[0]:.2f} s",
          flush=True)
    return result


def _array_bytes(obj, seen: set[int], depth: int = 0) -> int:
    """Bytes of the numpy arrays reachable from obj (dicts, lists, records), each buffer counted once."""
    import numpy as np

    if depth > 6 or id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        root = obj
        while isinstance(root.base, np.ndarray):
            root = root.base
        if root is not obj and id(root) in seen:
            return 0
        seen.add(id(root))
        return root.nbytes
    if isinstance(obj, dict):
        return sum(_array_bytes(v, seen, depth + 1) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_array_bytes(v, seen, depth + 1) for v in obj)
    if hasattr(obj, "__dict__") and not isinstance(obj, type):
        return sum(_array_bytes(v, seen, depth + 1) for v in vars(obj).values())
    return 0


def _held_by_part(ev) -> None:
    """What the evaluation holds, by part: its arrays, the plan inputs, the planner's own arrays, the rest."""
    seen: set[int] = set()
    n = len(ev.workloads)
    rest = {k: v for k, v in vars(ev).items() if k not in ("a", "plan_inputs", "planner", "workloads")}
    parts = [("ev.a", _array_bytes(ev.a, seen)), ("plan inputs", _array_bytes(ev.plan_inputs, seen)),
             ("planner (beyond its inputs)", _array_bytes(ev.planner, seen)),
             ("workloads frame", int(ev.workloads.memory_usage(deep=True).sum())),
             ("the rest (arrays)", _array_bytes(rest, seen))]
    for name, b in [*parts, ("held by the evaluation", sum(b for _, b in parts))]:
        print(f"    {name:<30} {b / MIB:8,.1f} MiB  {b / n / 1024:5.2f} KB per workload")


def _routing_page_words(ev) -> None:
    """One workload's reasons and its routes with why not, as the Routing page shows them."""
    from core.decision import contract, explain

    explain.reasons(ev, 0)
    contract.routes_frame(ev, 0)


def _workloads_page():
    """The real app (router, sidebar, page) in-process, switched to the Workloads page."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "dashboard" / "app.py"), default_timeout=900)
    at.switch_page("screens/workloads.py").run()  # straight to it: the default page would evaluate the fleet
    if at.exception:
        raise SystemExit(f"the page failed: {[e.value for e in at.exception]}")
    return at


def _rerun(at) -> None:
    at.run()
    if at.exception:
        raise SystemExit(f"the page failed: {[e.value for e in at.exception]}")


def main(argv: list[str] | None = None) -> int:
    """Print one line per stage and the run's peak; exit 1 when the peak exceeds --limit-mib."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--no-evaluate", action="store_true", help="stop after loading the committed version back")
    ap.add_argument("--keep", type=Path, default=None, help="write (or reuse) the CSV at this path")
    ap.add_argument("--fleet-nodes", type=int, default=8)
    ap.add_argument("--limit-mib", type=float, default=2048.0, help="fail above this peak (default 2 GiB)")
    ap.add_argument("--page", action="store_true",
                    help="then open the Workloads page on that store through AppTest (first run and a rerun)")
    ap.add_argument("--upload", action="store_true",
                    help="instead: upload the file on the Workloads page (AppTest), commit it there, rerun, "
                         "then go to the Pricing page")
    args = ap.parse_args(argv)

    from core.catalog import Catalog
    from core.errors import InputError
    from core.inventory import read_inventory
    from core.inventory.versions import commit_inventory, latest_inventory
    from core.models import Scenario
    from core.service import evaluate_store
    from core.store import Store

    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"duckdb {duckdb.__version__}, pyarrow {pyarrow.__version__}; load average at start "
          f"{os.getloadavg()[0]:.2f}; RSS after imports {(_status('VmRSS') or 0) / MIB:,.0f} MiB")
    with tempfile.TemporaryDirectory(prefix="hangover-bench-mem-") as d:
        work = Path(d)
        csv_path = args.keep or work / "inventory.csv"
        if not csv_path.exists():
            t = time.perf_counter()
            write_inventory_csv(csv_path, args.rows)
            print(f"wrote {csv_path.name}: {args.rows:,} rows, {csv_path.stat().st_size / 1e6:,.0f} MB "
                  f"in {time.perf_counter() - t:.1f} s")
        store = Store(work / "store.duckdb")
        if args.upload:
            store.close()
            os.environ["HANGOVER_DB"] = str(store.path)
            at = stage("Workloads page, first run (AppTest)", _workloads_page)
            at.file_uploader(key="wl_upload").set_value((csv_path.name, csv_path.read_bytes(), "text/csv"))
            stage("upload: read, check, preview", _rerun, at)
            at.button(key="wl_commit").click()
            stage("commit button (commit, then the page again)", _rerun, at)
            for k in range(3):
                stage(f"rerun {k + 1}", _rerun, at)
            print(f"    {' '.join(str(c.value) for c in at.caption)[:160]}")
            at.switch_page("screens/pricing.py")  # the user moves on: what does the session still hold?
            stage("to the Pricing page", _rerun, at)
            stage("Pricing page, rerun", _rerun, at)
            # The plan pages: an inventory above the plan limit (HANGOVER_MAX_PLAN_ROWS) is refused there in one
            # line, before it is loaded; at or below it, they plan it.
            for page, title in (("screens/overview.py", "Overview"), ("screens/routing.py", "Routing"),
                                ("screens/fleet.py", "Fleet sizing")):
                at.switch_page(page)
                stage(f"to the {title} page", _rerun, at)
                print(f"    {' | '.join(e.value for e in at.error)[:160] or 'no error shown'}")
            del at
            return _peak_report(args.limit_mib)
        data = csv_path.read_bytes()  # what the dashboard's uploader hands over

        report = stage("read_inventory (read + validate)", read_inventory, data, file_name=csv_path.name)
        if not report.ok:
            print("\n".join(report.error_lines()[:10]))
            return 2
        result = stage("commit_inventory", commit_inventory, store, report.frame, file_name=csv_path.name)
        print(f"    {result.message}")
        del report, data
        version, frame = stage("latest_inventory (load the version back)", latest_inventory, store)
        print(f"    version {version}: {len(frame):,} rows, frame {frame.memory_usage(deep=True).sum() / MIB:,.0f} MiB")
        del frame
        if args.page:
            store.close()
            os.environ["HANGOVER_DB"] = str(store.path)
            at = stage("Workloads page, first run (AppTest)", _workloads_page)
            stage("Workloads page, rerun", _rerun, at)
            del at
        if not args.no_evaluate:
            catalog = stage("Catalog.from_store", Catalog.from_store, store)
            try:
                ev = stage("evaluate_store (as the pages do)", evaluate_store, store,
                           Scenario(fleet_nodes=args.fleet_nodes), catalog=catalog)
            except InputError as exc:  # above the plan limit (HANGOVER_MAX_PLAN_ROWS): refused before loading
                print(f"    refused: {exc}")
                store.close()
                return _peak_report(args.limit_mib)
            print(f"    {len(ev.workloads):,} workloads on {len(ev.routes)} routes")
            stage("one workload's reasons and routes (Routing page)", _routing_page_words, ev)
            _held_by_part(ev)
            del ev
        store.close()
    return _peak_report(args.limit_mib)


def _peak_report(limit_mib: float) -> int:
    peak = max([*PEAKS, _max_rss()])
    print(f"peak RSS of the whole run (the largest stage peak): {peak / MIB:,.0f} MiB; load average at end "
          f"{os.getloadavg()[0]:.2f}")
    if peak / MIB > limit_mib:
        print(f"OVER the limit of {limit_mib:,.0f} MiB")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
