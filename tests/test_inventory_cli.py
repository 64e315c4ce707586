"""`hangover workloads`: the template -> fill -> import -> list -> diff -> restore round trip, and exit codes."""

from __future__ import annotations

import csv
import io

import openpyxl
import pytest

from core.cli import main
from core.inventory import NUMBER_RULES
from core.inventory.versions import list_versions, load_version
from core.store import Store


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "t.duckdb")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def read_rows(path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))))


def write_rows(path, rows: list[dict[str, str]], delimiter: str = ",") -> None:
    with path.open("w", encoding="utf-8-sig", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]), delimiter=delimiter)
        w.writeheader()
        w.writerows(rows)


@pytest.mark.slow
def test_round_trip_template_fill_import_list_diff_restore(tmp_path, db, capsys):
    template = tmp_path / "inventory.csv"
    code, out, _ = run(capsys, "--db", db, "workloads", "template", str(template))
    assert code == 0 and out.startswith(f"wrote {template} (5 example rows")

    # Fill: keep three example rows, change one, add our own (as a finance team would in Excel).
    rows = read_rows(template)[:3]
    rows[0]["requests_per_day"] = "75000"
    rows.append(dict(rows[2], workload_id="claims-triage", name="Claims triage", task_class="extraction",
                     latency_slo_ms="", batch_window_hours="6", notes=""))
    first = tmp_path / "q3.csv"
    write_rows(first, rows)
    code, out, err = run(capsys, "--db", db, "workloads", "import", str(first), "--by", "ana", "--comment", "Q3")
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == "committed version 1: 4 workloads from q3.csv"

    # The same content again, semicolon-separated as a German Excel saves it: nothing new.
    same = tmp_path / "q3-de.csv"
    write_rows(same, rows, delimiter=";")
    code, out, _ = run(capsys, "--db", db, "workloads", "import", str(same))
    assert code == 0 and out.splitlines()[-1] == "identical to the latest version 1; nothing committed"

    # Second version: one workload removed, one changed.
    rows2 = [r for r in rows if r["workload_id"] != "staff-chat"]
    rows2[0]["peak_factor"] = "5"
    second = tmp_path / "q4.csv"
    write_rows(second, rows2)
    code, out, _ = run(capsys, "--db", db, "workloads", "import", str(second), "--by", "bo")
    assert code == 0 and out.splitlines()[-1] == "committed version 2: 3 workloads from q4.csv"

    code, out, _ = run(capsys, "--db", db, "workloads", "list")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 3
    assert lines[1].split()[:2] == ["1", lines[1].split()[1]] and "ana" in lines[1] and "q3.csv" in lines[1]
    assert lines[1].rstrip().endswith("Q3")
    assert lines[2].startswith("*") and "bo" in lines[2] and "q4.csv" in lines[2]

    code, out, _ = run(capsys, "--db", db, "workloads", "diff", "1", "2")
    assert code == 0
    assert out.splitlines() == [
        "~ invoice-extract (changed): peak_factor",
        "- staff-chat (removed)",
        "version 1 -> 2: 0 added, 1 removed, 1 changed",
    ]

    code, out, _ = run(capsys, "--db", db, "workloads", "restore", "1", "--by", "cy")
    assert (code, out) == (0, "restored version 1 as version 3 (4 workloads)\n")
    code, out, _ = run(capsys, "--db", db, "workloads", "diff", "1", "3")
    assert out.splitlines() == ["version 1 -> 3: 0 added, 0 removed, 0 changed"]

    store = Store(db)
    try:
        versions = list_versions(store)
        assert versions["version"].tolist() == [1, 2, 3]
        assert versions["restored_from"].tolist()[2] == 1
        assert load_version(store)["workload_id"].tolist() == [
            "invoice-extract", "ide-complete", "staff-chat", "claims-triage"]
        assert load_version(store).loc[2, "requests_per_day"] == 75000.0
    finally:
        store.close()


def test_invalid_file_exits_2_with_every_error_and_commits_nothing(tmp_path, db, capsys):
    template = tmp_path / "t.csv"
    run(capsys, "--db", db, "workloads", "template", str(template))
    rows = read_rows(template)
    rows[0]["requests_per_day"] = "-3"
    rows[3]["task_class"] = "poetry"
    rows[4]["workload_id"] = rows[0]["workload_id"]
    bad = tmp_path / "bad.csv"
    write_rows(bad, rows)
    code, out, err = run(capsys, "--db", db, "workloads", "import", str(bad))
    assert code == 2
    assert err.splitlines() == [
        "bad.csv: 3 error(s); nothing was committed. Fix these and import again:",
        f"  row 2, column 'requests_per_day': '-3': out of range; allowed: {NUMBER_RULES['requests_per_day'].allowed}",
        "  row 5, column 'task_class': 'poetry': unknown value; allowed: extraction, code_completion, chat, "
        "agentic_step, reasoning",
        "  row 6, column 'workload_id': 'invoice-extract': duplicate workload_id (first used in row 2); "
        "allowed: each id once",
    ]
    store = Store(db)
    try:
        assert list_versions(store).empty
    finally:
        store.close()


def test_empty_file_exits_2(tmp_path, db, capsys):
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    code, _, err = run(capsys, "--db", db, "workloads", "import", str(empty))
    assert code == 2 and "file: the file is empty (0 bytes)" in err


def test_dry_run_commits_nothing(tmp_path, db, capsys):
    template = tmp_path / "t.xlsx"
    run(capsys, "--db", db, "workloads", "template", str(template))
    code, out, _ = run(capsys, "--db", db, "workloads", "import", str(template), "--dry-run")
    assert code == 0 and out.splitlines() == ["t.xlsx: XLSX, sheet 'Workloads'",
                                              "valid: 5 workloads; dry run, nothing committed"]
    code, out, _ = run(capsys, "--db", db, "workloads", "list")
    assert out.startswith("no inventory version yet")


def test_sheet_option_reads_a_named_sheet(tmp_path, db, capsys):
    template = tmp_path / "t.xlsx"
    run(capsys, "--db", db, "workloads", "template", str(template))
    wb = openpyxl.load_workbook(template)
    wb.move_sheet("Workloads", offset=1)  # the data sheet is no longer first
    wb["Workloads"].title = "Q3 inventory"
    wb.save(template)
    # Without --sheet the sheet whose header names the columns is found (issue 14), and the output says so.
    code, out, err = run(capsys, "--db", db, "workloads", "import", str(template), "--dry-run")
    assert (code, err) == (0, "")
    assert "warning: read sheet 'Q3 inventory': its header names the inventory columns" in out
    code, out, _ = run(capsys, "--db", db, "workloads", "import", str(template), "--sheet", "q3 inventory")
    assert code == 0 and out.splitlines()[-1] == "committed version 1: 5 workloads from t.xlsx"
    code, _, err = run(capsys, "--db", db, "workloads", "import", str(template), "--sheet", "Nope")
    assert code == 2 and "no sheet named 'Nope'; the workbook has: Columns, Q3 inventory" in err


def test_unknown_versions_exit_2(db, capsys):
    code, _, err = run(capsys, "--db", db, "workloads", "diff", "1", "2")
    assert code == 2 and err == "hangover: error: no inventory version 1; the store has no inventory version yet\n"
    code, _, err = run(capsys, "--db", db, "workloads", "restore", "4")
    assert code == 2 and "no inventory version 4" in err


def test_template_needs_a_known_suffix(tmp_path, db, capsys):
    code, _, err = run(capsys, "--db", db, "workloads", "template", str(tmp_path / "t.ods"))
    assert code == 2 and "must end in .csv or .xlsx" in err


def test_import_shows_progress_on_a_terminal_and_nothing_when_piped(tmp_path, monkeypatch, capsys):
    """Issue 16: a long read and commit redraw one progress line on a terminal; piped output is unchanged."""
    import sys

    from core.commands.workloads import progress_line
    from core.store.seed import sample_workloads_path

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    path = tmp_path / "inv.csv"
    path.write_bytes(sample_workloads_path().read_bytes())
    assert main(["--db", str(tmp_path / "t.duckdb"), "workloads", "import", str(path)]) == 0
    shown = term.getvalue()
    for stage in ("reading inv.csv (", "checking every cell of 7 rows", "checked 7 rows", "checksum of the rows",
                  "writing 7 rows  100%\n"):
        assert stage in shown, stage
    monkeypatch.undo()
    assert progress_line(io.StringIO()) is None
    capsys.readouterr()
    assert main(["--db", str(tmp_path / "t2.duckdb"), "workloads", "import", str(path)]) == 0
    assert "checksum" not in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("value", ["1e-320", "4.9e-324", "2.2e-308"])
def test_a_subnormal_request_rate_evaluates_without_numpy_warnings(tmp_path, value):
    """requests_per_day=1e-320 (issue 34: numpy warnings with install paths): imported, evaluated, and no warning
    is printed even with RuntimeWarning turned into an error."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    rows = list(csv.reader((root / "data" / "workloads_sample.csv").open(encoding="utf-8")))
    rows[1][rows[0].index("requests_per_day")] = value
    inv = tmp_path / "tiny.csv"
    with inv.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    db = tmp_path / "s.duckdb"
    for argv in (["workloads", "import", str(inv)], ["evaluate", "--format", "json"]):
        out = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", "core.cli", "--db", str(db), *argv],
                             capture_output=True, text=True, timeout=300, cwd=root)
        assert out.returncode == 0, out.stderr
        assert "Warning" not in out.stderr and "site-packages" not in out.stderr, out.stderr
