"""Scaffolding that used to hide a bug now stops the start with one line: a coordinator service that cannot be
imported, a handler module the index names but the package lacks. A handler module that fails on first use is no
longer advertised. Config defaults come only from the definition table (no literal repeats them)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalite.config.defs import BROKER
from kafkalite.embedded import Broker, BrokerStartError
from kafkalite.handlers import registry
from kafkalite.server import serve as server
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.messages import ApiVersionsRequest

ROOT = Path(__file__).resolve().parents[3]


def test_a_missing_coordinator_service_stops_the_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = (("kafkalite.coordinator.classic.no_such_service", "GroupService", "groups"), *server.SERVICES[1:])
    monkeypatch.setattr(server, "SERVICES", bad)
    with pytest.raises(BrokerStartError, match="cannot start the GroupService"):
        Broker(data_dir=tmp_path).start()


def test_a_missing_deferred_service_stops_the_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = (*server.SERVICES[:2], ("kafkalite.coordinator.share.no_such_service", "ShareService", "shares"))
    monkeypatch.setattr(server, "SERVICES", bad)
    with pytest.raises(BrokerStartError, match="no module kafkalite.coordinator.share.no_such_service"):
        Broker(data_dir=tmp_path).start()


def test_a_handler_module_missing_from_the_package_stops_the_start(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.INDEX, 67, ("no_such_handler", 0, 0))
    with pytest.raises(BrokerStartError, match=r"handler modules missing: no_such_handler \(api key 67\)"):
        Broker(data_dir=tmp_path).start()


def test_a_handler_module_that_fails_on_first_use_is_no_longer_advertised(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    key = 61   # DescribeProducers, as if its module were broken
    with Broker(data_dir=tmp_path) as b:
        # after the start check: the module is found, then fails to import on first use
        _module, lo, hi = registry.INDEX[key]
        monkeypatch.setitem(registry.INDEX, key, ("broken_for_test", lo, hi))
        monkeypatch.delitem(registry.HANDLERS, key)
        monkeypatch.setitem(sys.modules, "kafkalite.handlers.broken_for_test", None)   # import raises
        monkeypatch.setattr(registry, "_BROKEN", set())
        with RawClient(b.host, b.port) as c:
            keys = {k.api_key for k in c.request(ApiVersionsRequest(), 3).api_keys}
            assert key in keys   # advertised from the index until first use
        assert registry.lookup(key) is None   # the import failed: logged, not served
        with RawClient(b.host, b.port) as c:
            assert key not in {k.api_key for k in c.request(ApiVersionsRequest(), 3).api_keys}


def _literal_defaults() -> list[str]:
    """Calls ``get_int/get/get_str/get_bool("<a key of the BROKER table>", <default>)`` in kafkalite's code (the
    client-side rooms read client properties of the same names, with the clients' defaults: not broker config)."""
    files = subprocess.run(["git", "ls-files", "kafkalite/*.py"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    found = []
    for rel in files:
        if "/tests/" in rel or rel.startswith(("kafkalite/client/", "kafkalite/tools/", "kafkalite/spark/",
                                                  "kafkalite/migration/")):
            continue
        for node in ast.walk(ast.parse((ROOT / rel).read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("get_int", "get", "get_str", "get_bool") and len(node.args) >= 2
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                d = BROKER.get(node.args[0].value)
                if d is not None and d.default:
                    found.append(f"{rel}:{node.lineno} {ast.unparse(node)}")
    return found


def test_config_defaults_come_only_from_the_definition_table() -> None:
    assert _literal_defaults() == []
