"""The house rules that a machine checks: no import cycles in wire, storage or kafkalite (imports inside functions
included), and no module left under a name from before the 2026-11 reorganisation (tools/move_modules.py).

This file spells old module names on purpose (tools/move_modules.py skips it).
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]


def _tool(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_house_{name}", ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


cycles = _tool("import_cycles")
moves = _tool("move_modules")


def test_no_import_cycles_in_the_three_packages() -> None:
    known = cycles.modules()
    assert "kafkalite.server.connection" in known and "kafkalite_storage.log" in known
    edges, lazy = cycles.graph(known)
    assert lazy, "imports inside functions are part of the graph"
    assert cycles.strongly_connected(edges) == []


def test_cycle_finder_sees_a_cycle_behind_a_function_level_import() -> None:
    edges = {"a": {"b": 1}, "b": {"c": 3}, "c": {"a": 9}, "d": {"a": 1}, "e": {}}
    assert cycles.strongly_connected(edges) == [["a", "b", "c"]]
    assert cycles.strongly_connected({"a": {"b": 1}, "b": {}}) == []


def test_type_checking_imports_do_not_count(tmp_path: Path) -> None:
    import ast

    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import x\nelse:\n    import y\n"
                     "def f():\n    import z\n")
    found = [(n.names[0].name, lazy) for n, lazy in cycles._imports(tree) if n.names[0].name != "TYPE_CHECKING"]
    assert found == [("y", False), ("z", True)]


def test_nothing_is_left_under_an_old_name() -> None:
    assert moves.pending_moves() == []
    assert moves.main(["--check"]) == 0


def test_rename_rules() -> None:
    r = moves.rename
    assert r("kafkalite.connection.Connection") == "kafkalite.server.connection.Connection"
    assert r("kafkalite.config.BrokerConfig") == "kafkalite.config.broker.BrokerConfig"
    assert r("kafkalite.config.addresses.Listener") == "kafkalite.config.addresses.Listener"   # a new module
    assert r("kafkalite.config.broker.BrokerConfig") == "kafkalite.config.broker.BrokerConfig"
    assert r("kafkalite.server") == "kafkalite.server"          # the package now
    assert r("kafkalite.coordinator.service.GroupService") == "kafkalite.coordinator.classic.service.GroupService"
    assert r("kafkalite.coordinator.share.manager") == "kafkalite.coordinator.share.manager"
    src = ("from kafkalite import server, embedded\nfrom kafkalite.server import serve\n"
           "from kafkalite.server import connection\nfrom kafkalite.tools import wireclient as wc\n")
    assert moves.rewrite_python(src) == (
        "from kafkalite import embedded\nfrom kafkalite.server import serve as server\n"
        "from kafkalite.server.serve import serve\nfrom kafkalite.server import connection\n"
        "from kafkalite.client import wire as wc\n")
