"""Refresh constraints.txt: install the project with its test extra into a fresh venv and freeze it."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADER = """# Versions the suite last passed with (pip freeze of a fresh venv after pip install -e ".[test]").
# pyproject.toml keeps the loose minimums; this file pins what was tested, so a new machine gets the same
# numpy/BLAS/pandas the goldens were made on. Refresh: python bench/lock.py  (writes this file).
"""


def main() -> int:
    """Build the venv, freeze it (without the project itself) and write constraints.txt."""
    with tempfile.TemporaryDirectory() as tmp:
        venv.create(tmp, with_pip=True)
        py = str(Path(tmp) / "bin" / "python")
        subprocess.run([py, "-m", "pip", "install", "-q", "-e", f"{ROOT}[test]"], check=True)
        frozen = subprocess.run([py, "-m", "pip", "freeze", "--exclude-editable"], check=True,
                                capture_output=True, text=True).stdout
    (ROOT / "constraints.txt").write_text(HEADER + frozen, encoding="utf-8")
    print(f"wrote constraints.txt ({len(frozen.splitlines())} packages); run the suite, then commit it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
