"""The engine's modules import one another one way: no module reaches itself through imports,
counting imports inside functions (a lazy import is still a dependency)."""

from __future__ import annotations

import grimp


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Each set of modules that import one another in a circle (Tarjan's components > 1)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for nxt in sorted(graph.find_modules_directly_imported_by(module)):
            if nxt not in index:
                visit(nxt)
                low[module] = min(low[module], low[nxt])
            elif nxt in on_stack:
                low[module] = min(low[module], index[nxt])
        if low[module] == index[module]:
            component = []
            while True:
                m = stack.pop()
                on_stack.discard(m)
                component.append(m)
                if m == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_the_engine_has_no_import_cycle() -> None:
    graph = grimp.build_graph("orchestrator", cache_dir=None)
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_one() -> None:
    graph = grimp.ImportGraph()
    for a, b in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")):
        graph.add_import(importer=a, imported=b)
    assert _cycles(graph) == [["p.a", "p.b", "p.c"]]
