"""The layout rules of docs/layout.md that lint-imports does not check: no import loops inside
``domain`` or ``services`` (TYPE_CHECKING imports included), and domain modules of one concept
each (none much over 300 lines)."""

from __future__ import annotations

from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _loops(package: str) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), in module order."""
    graph = grimp.build_graph(package)
    modules = sorted(m for m in graph.modules if m.split(".")[0] == package)
    edges = {m: sorted(x for x in graph.find_modules_directly_imported_by(m) if x in modules) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    loops: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in edges[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = stack[stack.index(module) :]
            del stack[stack.index(module) :]
            if len(group) > 1:
                loops.append(sorted(group))

    for module in modules:
        if module not in index:
            visit(module)
    return loops


@pytest.mark.parametrize("package", ["domain", "services"])
def test_no_import_loops(package: str) -> None:
    assert _loops(package) == []


def test_domain_modules_stay_small() -> None:
    sizes = {p.relative_to(ROOT).as_posix(): len(p.read_text().splitlines()) for p in (ROOT / "domain").rglob("*.py")}
    assert {path: n for path, n in sizes.items() if n > 320} == {}
