"""gregor's modules form no import circles, and the layers point one way.

Every import counts, the ones inside functions too (they hide a tie but tie all the same);
only imports under `if TYPE_CHECKING:` are left out, since they never run. The graph is read
from the source with ast, so nothing is imported to check it.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "gregor"

# Layering: a module under the first prefix never imports one under the second.
FORBIDDEN = [
    ("gregor.broker.cluster", "gregor.broker.apis"),    # handlers use the cluster, not back
    ("gregor.protocol", "gregor.broker"),
    ("gregor.protocol", "gregor.client"),
    ("gregor.log", "gregor.broker"),
    ("gregor.log", "gregor.client"),
    ("gregor.client", "gregor.broker"),
]

# Circles still to fold, each named so the list can only shrink (a circle that is gone must
# leave this list, a new one fails the test). Empty: keep it so.
KNOWN_CIRCLES: set[frozenset[str]] = set()
KNOWN_LAYER_BREAKS: set[tuple[str, str]] = set()


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skip.update(id(n) for n in ast.walk(child))
    return skip


def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text())
        skip = _type_checking_nodes(tree)
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        deps: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[:len(package) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                # `from pkg import module` depends on the module, else on pkg itself
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    dep = sub if sub in mods else target
                    if dep in mods and dep != name:
                        deps.add(dep)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in mods and a.name != name)
        graph[name] = deps
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[frozenset[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = set()
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.add(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    out.append(frozenset(comp))
    return out


def test_the_checker_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [frozenset({"a", "b", "c"})]


def test_no_new_import_circles():
    found = set(circles(import_graph()))
    new = found - KNOWN_CIRCLES
    assert not new, "new import circles (fold them: move the shared piece into a module both " \
                    f"sides import): {[sorted(c) for c in new]}"
    gone = KNOWN_CIRCLES - found
    assert not gone, f"these circles are folded: remove them from KNOWN_CIRCLES: " \
                     f"{[sorted(c) for c in gone]}"


def test_layers_point_one_way():
    graph = import_graph()
    breaks = {(m, d) for m, deps in graph.items() for d in deps
              for low, high in FORBIDDEN
              if (m == low or m.startswith(low + ".")) and (d == high or d.startswith(high + "."))}
    assert breaks - KNOWN_LAYER_BREAKS == set(), sorted(breaks - KNOWN_LAYER_BREAKS)
    assert KNOWN_LAYER_BREAKS - breaks == set(), "fixed: remove from KNOWN_LAYER_BREAKS"
