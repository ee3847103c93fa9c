#!/usr/bin/env python3
"""Import cycles in kafkalite_wire, kafkalite_storage and kafkalite, counting imports inside functions.

import-linter's ``layers`` contract keeps the rooms in order, but a cycle between two modules of one room (or one
hidden behind an import inside a function, which Python resolves late and so never fails at start) is invisible
to it. This script builds the whole module graph from the sources with ``ast``:

- every ``import`` and ``from ... import`` statement counts, at module level or inside a function or class;
- statements under ``if TYPE_CHECKING:`` do not (they never run);
- ``from a.b import c`` is an edge to ``a.b.c`` when that is a module, else to ``a.b``; ``import a.b.c`` is an
  edge to ``a.b.c`` (no edges to the parent packages Python also runs: those would make every package's
  ``__init__`` part of every cycle through it);

then prints each strongly connected component of more than one module (Tarjan), with the edges that close it
and their line numbers, and exits 1 if there is any. ``make test`` runs it.

    python tools/import_cycles.py            # exit 1 and list the cycles, if any
    python tools/import_cycles.py --lazy     # also list every function-level import of a project module

Imports inside functions are kept where they pay (start-up time, optional extras), always pointing downward (the
layers contract checks the direction) and each with a one-line reason: a comment on the import's line or the line
above it. Those without one are counted per file against ``tools/lazy-imports-baseline.json``, which may only
shrink (``--update-lazy`` lowers it); a file that gains an unexplained one fails.
"""
from __future__ import annotations

import argparse
import ast
import json
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAZY_BASELINE = ROOT / "tools" / "lazy-imports-baseline.json"
#: import name -> folder in the repository
PACKAGES = {"kafkalite_wire": "wire", "kafkalite_storage": "storage", "kafkalite": "kafkalite"}


def modules() -> dict[str, Path]:
    """Every module of the three packages: dotted name -> file. A C extension's source (``_walk.c`` next to
    the package it is built into, see setup.py) is a module too, one that imports nothing of the project."""
    found: dict[str, Path] = {}
    for name, folder in PACKAGES.items():
        base = ROOT / folder
        for path in [*base.rglob("*.py"), *base.rglob("*.c")]:
            if "__pycache__" in path.parts or "node_modules" in path.parts:
                continue
            rel = path.relative_to(base).with_suffix("")
            parts = [name, *rel.parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """(statement, inside a function) for every import that can run."""
    def visit(node: ast.AST, in_func: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, in_func
            return
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            children: list[ast.AST] = list(node.orelse)   # the TYPE_CHECKING branch never runs
        else:
            children = list(ast.iter_child_nodes(node))
        inner = in_func or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for child in children:
            yield from visit(child, inner)

    yield from visit(tree, False)


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is a project module."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        prefix = ".".join(parts[:i])
        if prefix in known:
            return prefix
    return None


def graph(known: dict[str, Path]) -> tuple[dict[str, dict[str, int]], list[tuple[str, int, str]]]:
    """module -> {imported module: first line}, and the function-level imports (module, line, target)."""
    edges: dict[str, dict[str, int]] = {m: {} for m in known}
    lazy: list[tuple[str, int, str]] = []
    for mod, path in known.items():
        if path.suffix != ".py":   # a C extension: a leaf
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_pkg = path.name == "__init__.py"
        for node, in_func in _imports(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    pkg = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    pkg = pkg[:len(pkg) - node.level + 1]
                    base = ".".join([*pkg, base] if base else pkg)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            for t in targets:
                r = _resolve(t, known)
                if r is None or r == mod:
                    continue
                edges[mod].setdefault(r, node.lineno)
                if in_func:
                    lazy.append((mod, node.lineno, r))
    return edges, lazy


def strongly_connected(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components of more than one module, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(edges[nxt])))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return sorted(out, key=len, reverse=True)


def unexplained(known: dict[str, Path], lazy: list[tuple[str, int, str]]) -> dict[str, int]:
    """Per file of the product (not its tests), the function-level imports of project modules with no comment on
    their line or the line above."""
    out: dict[str, int] = {}
    texts: dict[str, list[str]] = {}
    for mod, line, _target in sorted(set(lazy)):
        if ".tests" in mod:   # a test imports what it needs where it needs it: no start-up to protect
            continue
        rel = str(known[mod].relative_to(ROOT))
        lines = texts.setdefault(rel, known[mod].read_text(encoding="utf-8").splitlines())
        here, above = lines[line - 1], lines[line - 2] if line >= 2 else ""
        if "#" not in here and not above.strip().startswith("#"):
            out[rel] = out.get(rel, 0) + 1
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--lazy", action="store_true", help="list the function-level imports of project modules")
    ap.add_argument("--update-lazy", action="store_true", help="record today's unexplained lazy imports per file")
    args = ap.parse_args(argv)
    known = modules()
    edges, lazy = graph(known)
    if args.lazy:
        for mod, line, target in sorted(lazy):
            print(f"{known[mod].relative_to(ROOT)}:{line}: {target}")
    counts = unexplained(known, lazy)
    if args.update_lazy:
        LAZY_BASELINE.write_text(json.dumps(dict(sorted(counts.items())), indent=1) + "\n", encoding="utf-8")
    baseline = json.loads(LAZY_BASELINE.read_text(encoding="utf-8")) if LAZY_BASELINE.exists() else {}
    worse = {f: n for f, n in counts.items() if n > baseline.get(f, 0)}
    for f, n in sorted(worse.items()):
        print(f"{f}: {n} imports inside functions without a one-line reason (a comment), baseline "
              f"{baseline.get(f, 0)}: say why each is lazy")
    cycles = strongly_connected(edges)
    for comp in cycles:
        members = set(comp)
        print(f"import cycle of {len(comp)} modules:")
        for m in comp:
            for t, line in sorted(edges[m].items()):
                if t in members:
                    print(f"  {m} -> {t}   ({known[m].relative_to(ROOT)}:{line})")
    n_edges = sum(len(v) for v in edges.values())
    print(f"{len(known)} modules, {n_edges} import edges ({len(lazy)} inside functions, "
          f"{sum(counts.values())} without a reason; baseline {sum(baseline.values())}), {len(cycles)} cycles",
          file=sys.stderr)
    return 1 if cycles or worse else 0


if __name__ == "__main__":
    sys.exit(main())
