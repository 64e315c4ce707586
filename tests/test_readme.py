"""The README's commands stay true: CI runs its test command verbatim, and the CLI it documents exists."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from core.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CI = ROOT / ".ci" / "run"

TEST_COMMAND = 'pip install -c constraints.txt -e ".[test]" && python -m pytest'
DASHBOARD_COMMAND = "pip install -c constraints.txt -e . && hangover dashboard"


def _quick_start_commands() -> list[str]:
    """The indented command lines of the README's Quick start section."""
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [line.strip() for line in section.splitlines() if line.startswith("    ") and line.strip()]


def test_quick_start_has_exactly_the_two_commands():
    assert _quick_start_commands() == [DASHBOARD_COMMAND, TEST_COMMAND]


def test_ci_runs_the_readme_test_command_verbatim():
    script = CI.read_text(encoding="utf-8")
    assert any(line.strip() == TEST_COMMAND for line in script.splitlines())
    assert "set -euo pipefail" in script
    assert "ruff check ." in script
    assert "python -m mypy" in script  # the type check over core/ (issue 10); config in pyproject.toml
    assert os.access(CI, os.X_OK), ".ci/run must be executable"


@pytest.mark.parametrize("command", sorted(set(re.findall(r"`hangover (db \w+)`", README))))
def test_documented_db_commands_exist(command, capsys):
    with pytest.raises(SystemExit) as info:
        main([*command.split(), "--help"])
    assert info.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: hangover {command}")


def test_constraints_pin_every_dependency_at_or_above_its_minimum():
    """constraints.txt (the tested versions) pins each pyproject dependency, test extra included, at a version
    its loose minimum admits: a pin below the minimum would make the README's command fail to resolve."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[name.strip().lower().replace("_", "-")] = version.strip()
    for spec in [*project["dependencies"], *project["optional-dependencies"]["test"]]:
        req = Requirement(spec)
        name = req.name.lower().replace("_", "-")
        assert name in pins, f"{name} is not pinned in constraints.txt (python bench/lock.py)"
        assert req.specifier.contains(pins[name], prereleases=True), f"{name}=={pins[name]} is outside {req.specifier}"
