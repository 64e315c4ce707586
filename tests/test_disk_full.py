"""A write that fails part-way (disk full, file-size limit) during an import: failure reported, last committed state kept.

Issue 34: an import on a nearly full disk left the file ending part-way through a
new block; every later command then called the store damaged and advised `db init`,
which would have thrown away every version. Run for real: on a small tmpfs where
this process may mount one (root), and under a file-size limit (RLIMIT_FSIZE,
SIGXFSZ ignored so the write fails with EFBIG) everywhere.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "workloads_sample.csv"


def _cli(db: Path, *argv: str, limit: int | None = None) -> subprocess.CompletedProcess:
    def cap() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([sys.executable, "-m", "core.cli", "--db", str(db), *argv], capture_output=True,
                          text=True, timeout=600, cwd=ROOT, preexec_fn=cap, env=os.environ | {"HANGOVER_LOCK_WAIT_S": "0"})


def _big_inventory(path: Path, rows: int) -> Path:
    df = pd.read_csv(SAMPLE)
    big = pd.concat([df] * (rows // len(df) + 1)).head(rows).reset_index(drop=True)
    big["workload_id"] = [f"w{i}" for i in range(rows)]
    big.to_csv(path, index=False)
    return path


def _assert_failed_cleanly(out: subprocess.CompletedProcess) -> None:
    assert out.returncode == 2, (out.stdout, out.stderr)
    errors = [line for line in out.stderr.splitlines() if line.startswith("hangover: error:")]
    assert len(errors) == 1 and "Traceback" not in out.stderr, out.stderr
    assert "committed" not in out.stdout.replace("nothing was committed", "")
    assert "db init" not in out.stderr


def _assert_last_committed_state(db: Path) -> None:
    """Version 1 (the sample's 7 workloads) is still there and no command calls the store damaged."""
    listed = _cli(db, "workloads", "list")
    assert listed.returncode == 0, listed.stderr
    versions = [line.lstrip("* ").split()[0] for line in listed.stdout.splitlines()[1:] if line.strip()]
    assert versions == ["1"], listed.stdout
    assert "db init" not in listed.stderr and "damaged" not in listed.stderr
    info = _cli(db, "db", "info")
    assert info.returncode == 0, info.stderr
    assert "latest inventory version: 1" in info.stdout
    assert [line.split()[1] for line in info.stdout.splitlines() if line.startswith("workloads ")] == ["7"]


def _first_version(db: Path) -> None:
    out = _cli(db, "workloads", "import", str(SAMPLE))
    assert out.returncode == 0 and "committed version 1" in out.stdout, out.stderr


@pytest.mark.slow
def test_an_import_past_the_file_size_limit_fails_and_keeps_the_last_version(tmp_path):
    db = tmp_path / "h.duckdb"
    _first_version(db)
    big = _big_inventory(tmp_path / "big.csv", 30_000)
    out = _cli(db, "workloads", "import", str(big), limit=db.stat().st_size + 300_000)
    _assert_failed_cleanly(out)
    _assert_last_committed_state(db)
    again = _cli(db, "workloads", "import", str(big))  # no limit now: the same import goes through
    assert again.returncode == 0 and "committed version 2: 30000 workloads" in again.stdout, again.stderr


@contextlib.contextmanager
def _tmpfs(where: Path, size_mib: int):
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; the file-size-limit test covers this case")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs", str(where)],
                             capture_output=True, text=True)
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


@pytest.mark.slow
def test_an_import_onto_a_full_disk_fails_and_keeps_the_last_version(tmp_path):
    big = _big_inventory(tmp_path / "big.csv", 30_000)
    with _tmpfs(tmp_path / "disk", 32) as disk:
        db = disk / "h.duckdb"
        _first_version(db)
        filler = disk / "filler"
        free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
        filler.write_bytes(b"\0" * max(0, free - 300_000))  # leave ~300 kB: the import needs more
        out = _cli(db, "workloads", "import", str(big))
        _assert_failed_cleanly(out)
        assert "disk holding the store is full" in out.stderr
        _assert_last_committed_state(db)  # still full: reads work, and nobody is told to run `db init`
        filler.unlink()
        _assert_last_committed_state(db)
        again = _cli(db, "workloads", "import", str(big))
        assert again.returncode == 0 and "committed version 2: 30000 workloads" in again.stdout, again.stderr
