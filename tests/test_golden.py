"""Golden files: `hangover evaluate --format json` and the three report formats on three scenarios.

The scenarios (tests/golden/regen.py SCENARIOS): the bundled sample under the
full and the marginal cost basis, and a 2-node fleet under the marginal basis.
Each is regenerated into a temp folder through the real commands and compared
with tests/golden/<scenario>/: JSON (the contract, the workbook's cell values
read back with openpyxl, the one-pager's chart traces) within a relative
tolerance of 1e-6 (money: or half a cent,
so another numpy or BLAS passes); the Markdown brief and the one-pager's text extract line by
line, with the generation timestamp normalised (the report clock is also fixed
through SOURCE_DATE_EPOCH).

A number that changes on purpose: regenerate with

    python tests/golden/regen.py

review `git diff tests/golden`, and name the change in the commit message.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
from pathlib import Path

import pytest

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
_spec = importlib.util.spec_from_file_location("golden_regen", GOLDEN_DIR / "regen.py")
regen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(regen)

REGEN_HINT = "if the change is deliberate: python tests/golden/regen.py, review git diff, name it in the commit"


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Path:
    """Every golden artefact regenerated once into a temp folder."""
    out = tmp_path_factory.mktemp("golden")
    regen.generate(out, work_dir=tmp_path_factory.mktemp("golden-work"))
    return out


CASES = [(s, a) for s in regen.SCENARIOS for a in regen.ARTEFACTS]


def test_every_golden_file_is_stored():
    missing = [f"{s}/{a}" for s, a in CASES if not (GOLDEN_DIR / s / a).is_file()]
    assert not missing, f"golden files missing: {missing}; {REGEN_HINT}"


@pytest.mark.slow
@pytest.mark.parametrize(("scenario", "artefact"), CASES, ids=[f"{s}/{a}" for s, a in CASES])
def test_matches_golden(fresh, scenario, artefact):
    golden = (GOLDEN_DIR / scenario / artefact).read_text(encoding="utf-8")
    new = (fresh / scenario / artefact).read_text(encoding="utf-8")
    if artefact.endswith(".json"):
        diffs = regen.same_json(json.loads(golden), json.loads(new))
        assert not diffs, f"{scenario}/{artefact}: {len(diffs)} difference(s):\n" + "\n".join(diffs[:40]) + \
            f"\n{REGEN_HINT}"
    else:
        golden, new = regen.normalise_stamps(golden), regen.normalise_stamps(new)
        if golden != new:
            diff = "\n".join(difflib.unified_diff(golden.splitlines(), new.splitlines(), "golden", "new",
                                                  lineterm="", n=1))
            pytest.fail(f"{scenario}/{artefact} differs:\n{diff[:6000]}\n{REGEN_HINT}")


def test_the_clock_is_fixed_and_stamps_normalised(fresh):
    """The fixed clock reaches the reports (dates do not move) and the stamp is then normalised away."""
    md = (fresh / "sample_full" / "report.md").read_text(encoding="utf-8")
    assert "Generated [generated]" in md
    cells = json.loads((fresh / "sample_full" / "report.xlsx.json").read_text(encoding="utf-8"))
    assert cells["Summary"][1][0].startswith("Generated [generated]")
    assert regen.normalise_stamps("Generated 2026-01-15 09:00 UTC · x") == "Generated [generated] · x"


def test_same_json_tolerance():
    assert regen.same_json({"a": [1.0, 2]}, {"a": [1.0 + 1e-12, 2.0]}) == []
    assert regen.same_json({"a": 1.0}, {"a": 1.0001}) == ["$.a: 1.0 != 1.0001"]
    assert regen.same_json({"a": 1.0}, {"a": 1.0 + 5e-7}) == []  # another BLAS: iterative solves move ~1e-7
    assert regen.same_json({"a": 1.0}, {"a": 1.0 + 2e-6}) == ["$.a: 1.0 != 1.000002"]
    assert regen.same_json({"monthly_usd": 10.0}, {"monthly_usd": 10.004}) == []  # within half a cent
    assert regen.same_json({"monthly_usd": 10.0}, {"monthly_usd": 10.01}) == ["$.monthly_usd: 10.0 != 10.01"]
    assert regen.same_json({"a": 1}, {"b": 1}) == ["$: key 'a' only in golden", "$: key 'b' only in new"]
    assert regen.same_json([True], [1]) == ["$[0]: True != 1"]
