"""core.collector.settle in the processes that plan: the dashboard's server settles the collector once, after its imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str) -> list[str]:
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert got.returncode == 0, got.stderr
    return got.stdout.split()


def test_settle_freezes_what_is_alive_and_widens_the_young_generation():
    """Every object alive when it runs leaves the collector's walks (gc.get_objects lists none of them), objects made
    after are tracked as usual, and young collections wait for 10,000 net allocations."""
    out = _run("import gc\n"
               "from core.collector import settle\n"
               "before = len(gc.get_objects())\n"
               "settle()\n"
               "after = len(gc.get_objects())\n"
               "new = [[] for _ in range(100)]\n"
               "print(gc.get_freeze_count() >= before, after < 100, len(gc.get_objects()) - after >= 100, *gc.get_threshold())\n")
    assert out == ["True", "True", "True", "10000", "20", "10"]


def test_the_dashboard_settles_the_collector_once_after_its_imports():
    """Importing dashboard.state (the module every page reads, imported once per server process) settles the
    collector with the engine already imported: the engine's objects are among the frozen ones."""
    out = _run("import gc, sys\n"
               "import dashboard.state\n"
               "engine = sys.modules['core.decision.engine']\n"
               "tracked = {id(o) for o in gc.get_objects()}\n"
               "print(gc.get_freeze_count() > 100_000, id(engine.__dict__) not in tracked, *gc.get_threshold())\n")
    assert out == ["True", "True", "10000", "20", "10"]
