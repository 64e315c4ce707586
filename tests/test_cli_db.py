"""`hangover db init|info|seed` through core.cli.main, and user errors as one line with exit code 2."""

from __future__ import annotations

import csv
from pathlib import Path

import duckdb
import pytest

from core.cli import main
from core.store.seed import SEED_TABLES

DATA_DIR = Path(__file__).resolve().parents[1] / "data"


def _csv_facts(table: str) -> tuple[int, str]:
    """Row count and oldest as_of of one seed CSV, read straight from the file."""
    with (DATA_DIR / f"{table}.csv").open(newline="", encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    return len(rows), min(r["as_of"] for r in rows)


def _info_lines(out: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in out.splitlines() if line and line.split()[0] in {*SEED_TABLES, "inventory_versions", "workloads"}}


def test_db_init_then_info_lists_every_table(tmp_path, capsys):
    db = str(tmp_path / "h.duckdb")
    assert main(["--db", db, "db", "init"]) == 0
    out = capsys.readouterr().out
    assert f"store ready at {db}" in out
    assert "migrations: m001_reference_tables, m002_benchmarks, m003_inventory_versions" in out

    assert main(["--db", db, "db", "info"]) == 0
    lines = _info_lines(capsys.readouterr().out)
    assert set(lines) == {*SEED_TABLES, "inventory_versions", "workloads"}
    for table in SEED_TABLES:
        rows, oldest = _csv_facts(table)
        assert lines[table][1:] == [str(rows), "0", oldest], table
    assert lines["workloads"][1:] == ["0", "0", "-"]


def test_db_seed_keeps_user_rows(tmp_path, capsys):
    db = tmp_path / "h.duckdb"
    assert main(["--db", str(db), "db", "init"]) == 0
    con = duckdb.connect(str(db))
    con.execute(
        "INSERT INTO gpus (name, hbm_gb, hbm_tb_per_s, bf16_tflops, tdp_w, source, as_of, origin) "
        "VALUES ('Mine', 1, 1, 1, 1, 'my lab', DATE '2026-06-01', 'user')"
    )
    con.close()
    capsys.readouterr()

    assert main(["--db", str(db), "db", "seed"]) == 0
    out = capsys.readouterr().out
    expected = ", ".join(f"{t} {_csv_facts(t)[0]}" for t in SEED_TABLES)
    assert out.strip() == f"seeded: {expected}"

    assert main(["--db", str(db), "db", "info"]) == 0
    gpus = _info_lines(capsys.readouterr().out)["gpus"]
    assert gpus[1:3] == [str(_csv_facts("gpus")[0] + 1), "1"]


def test_db_commands_use_hangover_db_without_flag(tmp_path, monkeypatch, capsys):
    target = tmp_path / "from-env" / "store.duckdb"
    monkeypatch.setenv("HANGOVER_DB", str(target))
    assert main(["db", "info"]) == 0
    assert f"store: {target}" in capsys.readouterr().out
    assert target.is_file()


@pytest.mark.parametrize("action", ["init", "info", "seed"])
def test_unwritable_db_path_is_a_clear_error_not_a_traceback(tmp_path, capsys, action):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert main(["--db", str(blocker / "h.duckdb"), "db", action]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"hangover: error: cannot create the store at {blocker / 'h.duckdb'}")
    assert "Traceback" not in captured.err
    assert captured.out == ""


def test_db_under_proc_is_a_clear_error(capsys):
    assert main(["--db", "/proc/gpu-hangover-test/h.duckdb", "db", "init"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hangover: error: ")
    assert err.count("\n") == 1


def test_bad_seed_cell_exits_2_naming_file_row_column(data_copy, tmp_path, capsys):
    path = data_copy / "owned_hardware.csv"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = lines[2].replace(",1.3,", ",0.3,", 1)  # PUE below 1 on file line 3
    path.write_text("".join(lines), encoding="utf-8")
    assert main(["--db", str(tmp_path / "h.duckdb"), "db", "init"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hangover: error: owned_hardware.csv row 3, column 'pue': Input should be greater than or equal to 1")


def test_missing_action_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["db"])
    assert info.value.code == 2
    assert "usage: hangover db" in capsys.readouterr().err


def test_the_hangover_process_runs_main_with_the_imports_frozen(tmp_path):
    """The console script and `python -m core.cli` go through core.cli.run: main()'s exit code, with the objects the
    imports made frozen out of the collector's walks and a larger young generation (why: its docstring). A user
    error still exits 2 through it; main() itself, which tests call in one process, leaves the collector alone."""
    import gc
    import subprocess
    import sys
    import tomllib

    root = DATA_DIR.parent
    assert tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]["hangover"] == "core.cli:run"
    probe = ("import gc, sys, core.cli as c\n"
             "seen = []\n"
             "main = c.main\n"
             "c.main = lambda *a, **k: seen.append((gc.get_freeze_count(), gc.get_threshold())) or main(*a, **k)\n"
             "code = c.run()\n"
             "print(seen[0][0] > 100_000, *seen[0][1], code)\n")
    db = str(tmp_path / "h.duckdb")
    for argv, code in ((["--db", db, "db", "init"], 0),
                       (["--db", db, "evaluate", "--workloads", str(tmp_path / "absent.csv")], 2)):
        got = subprocess.run([sys.executable, "-c", f"import sys; sys.argv = ['hangover', *{argv!r}]\n" + probe],
                             capture_output=True, text=True, cwd=root)
        assert got.stdout.split()[-5:] == ["True", "10000", "20", "10", str(code)], got.stdout + got.stderr
    before = gc.get_threshold(), gc.get_freeze_count()
    assert main(["--db", db, "db", "info"]) == 0
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
