"""Every dashboard grid shows a missing value as "—", never Streamlit's default grey "None".

st.dataframe draws missing cells with its default text unless given `placeholder`; the Showback table showed
"None" in its API $ and internal $/M columns for teams with no API spend. Grids are drawn on a canvas, so a
page test cannot read the cells' text: the calls themselves are checked.
"""

from __future__ import annotations

import ast
from pathlib import Path

SCREENS = Path(__file__).resolve().parents[1] / "dashboard"


def _dataframe_calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "dataframe" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "st":
            yield node


def test_every_dataframe_on_a_page_shows_missing_values_as_a_dash():
    missing, seen = [], 0
    for path in sorted(SCREENS.rglob("*.py")):
        for call in _dataframe_calls(ast.parse(path.read_text(encoding="utf-8"))):
            seen += 1
            given = {k.arg: k.value for k in call.keywords}
            ph = given.get("placeholder")
            if not (isinstance(ph, ast.Constant) and ph.value == "—"):
                missing.append(f"{path.relative_to(SCREENS.parent)}:{call.lineno}")
    assert seen >= 10  # the pages' grids were found (a renamed call would otherwise pass this vacuously)
    assert not missing, f"st.dataframe without placeholder='—': {', '.join(missing)}"
