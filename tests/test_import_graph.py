"""The project's import graph: no cycle among its modules, and no Django app over its size budget.

grimp parses every import statement, those inside functions and under ``TYPE_CHECKING`` too, so a
cycle cannot hide behind a late import.
"""

from __future__ import annotations

from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("catalogs", "registry", "orchestrator")
MAX_APP_LINES = 6000


def _cycles() -> list[set[str]]:
    graph = grimp.build_graph(*PACKAGES, include_external_packages=False, cache_dir=None)
    modules = {m for m in graph.modules if ".migrations" not in m}
    edges = {m: graph.find_modules_directly_imported_by(m) & modules for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    counter = 0
    # Tarjan's strongly connected components, iteratively (the graph has thousands of modules).
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_no_import_cycle_among_the_projects_modules():
    cycles = _cycles()
    assert cycles == [], "import cycles: " + "; ".join(" <-> ".join(sorted(c)) for c in cycles)


def test_the_cycle_finder_finds_a_cycle(tmp_path, monkeypatch):
    package = tmp_path / "cyclepkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from cyclepkg import b\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import cyclepkg.a\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(__import__(__name__, fromlist=["x"]), "PACKAGES", ("cyclepkg",))
    assert _cycles() == [{"cyclepkg.a", "cyclepkg.b"}]


def test_no_django_app_is_over_its_size_budget():
    sizes = {}
    for apps_py in sorted(ROOT.glob("catalogs/**/apps.py")) + [ROOT / "registry" / "__init__.py"]:
        app = apps_py.parent
        nested = {p.parent for p in app.glob("*/**/apps.py")}
        lines = 0
        for source in app.rglob("*.py"):
            if "migrations" in source.parts or any(n in source.parents for n in nested):
                continue
            lines += len(source.read_text(encoding="utf-8").splitlines())
        sizes[str(app.relative_to(ROOT))] = lines
    over = {app: n for app, n in sizes.items() if n > MAX_APP_LINES}
    assert over == {}, f"apps over {MAX_APP_LINES} lines of Python: {over}"
    assert {"catalogs/publishing", "catalogs/trust", "catalogs/mirroring"} <= set(sizes)
