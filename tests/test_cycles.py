"""No import cycle among dspark_tui's modules: every module can be read bottom-up.

grimp sees every import, those under `if TYPE_CHECKING:` and inside functions included, so a
cycle hidden by either still counts (a type-only import is still a dependency of the design).
A package's __init__ counts as the module of its name.
"""

from __future__ import annotations

import grimp


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    modules = sorted(m for m in graph.modules if m.startswith("dspark_tui"))
    edges = {m: sorted(i for i in graph.find_modules_directly_imported_by(m) if i.startswith("dspark_tui"))
             for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            targets = edges[node]
            if i < len(targets):
                work.append((node, i + 1))
                target = targets[i]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def _named(graph: grimp.ImportGraph, component: list[str]) -> str:
    """One cycle through the component, as a chain of imports."""
    first, *rest = component
    for other in rest:
        there = graph.find_shortest_chain(importer=first, imported=other)
        back = graph.find_shortest_chain(importer=other, imported=first)
        if there and back:
            return " -> ".join([*there, *back[1:]])
    return ", ".join(component)


def test_no_import_cycle():
    graph = grimp.build_graph("dspark_tui", cache_dir=None)
    cycles = [_named(graph, component) for component in _cycles(graph)]
    assert cycles == [], "import cycles:\n" + "\n".join(cycles)


def test_a_cycle_is_found():
    graph = grimp.build_graph("dspark_tui", cache_dir=None)
    graph.add_import(importer="dspark_tui.model", imported="dspark_tui.stats")
    graph.add_import(importer="dspark_tui.stats", imported="dspark_tui.model")
    assert _cycles(graph) == [["dspark_tui.model", "dspark_tui.stats"]]
