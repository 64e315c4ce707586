"""Times reading a 100,000-row inventory workbook (read_inventory on an .xlsx): the whole read and validation.

Run by hand (not part of the test suite):
    python bench/bench_xlsx.py [--rows 100000] [--repeat 3] [--keep FILE.xlsx]

The workbook is written as Excel keeps a finance team's inventory: a cover
sheet, two title rows above the header, typed numbers (some of them text, as
pasted), blank optional cells, names with commas. Timed: read_inventory on
the file's bytes (what the dashboard's uploader hands over), median of
--repeat runs after nothing else (the first run is counted: a user reads a
file once).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import xlsxwriter  # noqa: E402

from core.inventory import COLUMNS, read_inventory  # noqa: E402

TASKS = ("extraction", "code_completion", "chat", "agentic_step", "reasoning")


def write_workbook(path: Path, rows: int) -> None:
    """A cover sheet, then the inventory under two title rows; constant memory however many rows."""
    wb = xlsxwriter.Workbook(str(path), {"constant_memory": True})
    cover = wb.add_worksheet("Cover")
    cover.write_string(0, 0, "GPU plan, inventory of LLM workloads")
    ws = wb.add_worksheet("Inventory")
    ws.write_string(0, 0, "Workload inventory, Q3")
    for j, c in enumerate(COLUMNS):
        ws.write_string(2, j, c)
    for i in range(rows):
        r = 3 + i
        ws.write_string(r, 0, f"wl-{i:07d}")
        ws.write_string(r, 1, f"Workload {i}, team {i % 37}")
        if i % 5:
            ws.write_string(r, 2, f"Team {i % 37}")
        ws.write_number(r, 3, (i * 7919) % 1_000_000)
        ws.write_number(r, 4, 1 + (i % 40) / 10)
        if i % 11 == 0:  # pasted as text
            ws.write_string(r, 5, str((i * 31) % 20_000))
        else:
            ws.write_number(r, 5, (i * 31) % 20_000)
        ws.write_number(r, 6, 1 + (i * 17) % 4000)
        if i % 2 == 0:
            ws.write_number(r, 8, 100 + i % 20_000)
        else:
            ws.write_number(r, 9, 1 + i % 24)
        ws.write_string(r, 10, "external_ok" if i % 3 == 0 else "owned_only")
        ws.write_string(r, 11, TASKS[i % 5])
        if i % 4 == 0:
            ws.write_number(r, 12, (i % 100) / 100)
        ws.write_number(r, 13, (i % 100) / 100)
        if i % 7 == 0:
            ws.write_string(r, 14, f"queue {i}, nightly")
    wb.close()


def main(argv: list[str] | None = None) -> int:
    """Print the median and every run's seconds."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, default=None, help="write (or reuse) the workbook at this path")
    args = ap.parse_args(argv)
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"load average at start {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="hangover-bench-xlsx-") as d:
        path = args.keep or Path(d) / "inventory.xlsx"
        if not path.exists():
            write_workbook(path, args.rows)
        data = path.read_bytes()
        print(f"{path.name}: {args.rows:,} rows, {len(data) / 1e6:.1f} MB")
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            report = read_inventory(data, file_name=path.name)
            times.append(time.perf_counter() - t)
            if not report.ok:
                print("\n".join(report.error_lines()[:10]))
                return 2
        print(f"read_inventory: {len(report.frame):,} workloads from sheet {report.sheet!r}, header on row "
              f"{report.header_row}; median {statistics.median(times):.2f} s (runs: "
              f"{', '.join(f'{t:.2f}' for t in times)}); load average at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
