"""The layering, read from the code with `ast`: decision imports no presentation or command module; pages import
nothing from the store or the decision modules (they go through core.service); no import cycle among core modules
at module level.

Module level means what runs when a module is imported: its top-level statements (also inside a top-level
`if`/`try`), not `if TYPE_CHECKING:` blocks and not imports inside functions. The first two rules read every
import, function-level ones included: a function-level import still makes the lower layer depend on the upper.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Module-level imports allowed to close a cycle, each with the reason. Keep it empty unless a cycle cannot be
# broken in the module that closes it; an entry that no longer closes a cycle fails
# test_the_cycle_allow_list_holds_only_live_entries.
CYCLE_ALLOW: dict[tuple[str, str], str] = {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules(folder: str) -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((ROOT / folder).rglob("*.py"))}


CORE = _modules("core")
DASHBOARD = _modules("dashboard")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _top_level(body: list[ast.stmt]):
    """The statements that run on import: the body, and the bodies of top-level if/try/with (not TYPE_CHECKING)."""
    for node in body:
        if isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _top_level(node.body)
            yield from _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _top_level(block)
        elif isinstance(node, ast.With):
            yield from _top_level(node.body)
        else:
            yield node


def _targets(node: ast.stmt, known: dict[str, Path]) -> list[str]:
    """The modules an import statement names: `from a.b import c` is a.b.c when that is a module, else a.b."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        return [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module for a in node.names]
    return []


def imports(path: Path, *, module_level: bool, known: dict[str, Path]) -> set[str]:
    """The modules one file imports (every import, or only those that run on import)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = _top_level(tree.body) if module_level else ast.walk(tree)
    return {t for node in nodes for t in _targets(node, known)}


def _under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_decision_imports_no_presentation_or_command_module():
    bad = sorted((m, t) for m, p in CORE.items() if _under(m, "core.decision")
                 for t in imports(p, module_level=False, known=CORE)
                 if _under(t, "core.presentation") or _under(t, "core.commands"))
    assert not bad, f"decision imports upward: {bad}"


def test_pages_go_through_the_service():
    """Every read and write of a page goes through core.service: no dashboard module imports the store or the
    decision modules (at any level)."""
    bad = sorted((m, t) for m, p in DASHBOARD.items() for t in imports(p, module_level=False, known=CORE)
                 if _under(t, "core.store") or _under(t, "core.decision"))
    assert not bad, f"pages reach past core.service: {bad}"


def _graph() -> dict[str, set[str]]:
    graph = {m: {t for t in imports(p, module_level=True, known=CORE) if t in CORE and t != m}
             for m, p in CORE.items()}
    for edge in CYCLE_ALLOW:
        graph[edge[0]].discard(edge[1])
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_among_core_modules():
    cycles = _cycles(_graph())
    assert not cycles, f"module-level import cycles: {cycles}"


def test_the_cycle_allow_list_holds_only_live_entries():
    for (src, dst), why in CYCLE_ALLOW.items():
        assert src in CORE and dst in imports(CORE[src], module_level=True, known=CORE), (src, dst, why)


def test_the_checks_see_what_they_check():
    """The reader finds what it must: the engine imports the planner at module level, a page imports the service,
    a TYPE_CHECKING import is not module level, and a constructed cycle is found."""
    engine = imports(CORE["core.decision.engine"], module_level=True, known=CORE)
    assert "core.decision.fleet" in engine and "core.format" in engine
    assert "core.decision.engine" not in imports(CORE["core.decision.fleet"], module_level=True, known=CORE)
    assert any(_under(t, "core.service") for p in DASHBOARD.values() for t in imports(p, module_level=False,
                                                                                       known=CORE))
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
