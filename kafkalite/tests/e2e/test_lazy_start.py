"""What a broker imports at start, and what it leaves for first use.

A broker started with no optional feature configured (no authorizer, no metrics endpoint, no console, PLAINTEXT)
must not import the handler modules of APIs nobody has asked for, the share-group coordinator (no
``__share_group_state`` yet), the metrics endpoint or the console: each is imported when first used. These
checks run the broker in a fresh interpreter, since this test process has imported everything already.
The handler index (``kafkalite.handlers._index``), from which ApiVersions is answered before a handler
module is loaded, must equal what the modules' ``@handler`` decorators register.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from kafkalite.handlers import _index, load_all, registry

_SCRIPT = textwrap.dedent('''
    import json, sys, trio
    from kafkalite.config.broker import BrokerConfig
    from kafkalite.server.serve import serve
    from kafkalite.tests.support.rawclient import RawClient
    from kafkalite_wire.messages import ApiVersionsRequest, ListGroupsRequest, MetadataRequest, ShareGroupHeartbeatRequest

    config = BrokerConfig.load(None, {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": sys.argv[1]})
    out = {}

    async def main():
        stop = trio.Event()
        async with trio.open_nursery() as nursery:
            addrs = await nursery.start(lambda task_status: serve(config, shutdown=stop, task_status=task_status))
            out["started"] = sorted(sys.modules)
            host, port = addrs[0]
            def requests():
                with RawClient(host, port) as c:
                    out["api_keys"] = sorted(k.api_key for k in c.request(ApiVersionsRequest(), 3).api_keys)
                    c.request(MetadataRequest(topics=None), 12)
                    out["groups"] = len(c.request(ListGroupsRequest(), 5).groups)   # asks share groups too
                    out["served"] = sorted(sys.modules)
                    hb = c.request(ShareGroupHeartbeatRequest(group_id="g", member_id="m" * 22, member_epoch=0,
                                                              subscribed_topic_names=["t"]), 1)
                    out["share_error"] = hb.error_code
                    out["shared"] = sorted(sys.modules)
            with trio.fail_after(60):
                await trio.to_thread.run_sync(requests)
            stop.set()

    trio.run(main)
    print(json.dumps(out))
''')

# imported only when configured / first used
NOT_AT_START = [
    "kafkalite.handlers.produce", "kafkalite.handlers.fetch", "kafkalite.handlers.create_acls",
    "kafkalite.handlers.share_fetch", "kafkalite.handlers.alter_user_scram_credentials",
    "kafkalite.handlers.describe_client_quotas", "kafkalite_wire.messages._gen_share_fetch", "kafkalite_wire.messages._gen_produce",
    "kafkalite.coordinator.share.service", "kafkalite.coordinator.share.partition",
    # no __consumer_offsets / __transaction_state yet: the coordinators start on the first group / producer-id
    # request (kafkalite.server.serve.OnFirstUse)
    "kafkalite.coordinator.classic.service", "kafkalite.coordinator.consumer.service",
    "kafkalite.coordinator.txn.service",
    # no partition log open yet (a fresh data dir): storage's log, segment and producer-state modules wait for one
    "kafkalite_storage.log", "kafkalite_storage.segment", "kafkalite_storage.producer_state",
    "kafkalite.metrics", "kafkalite.metrics.http", "kafkalite.console", "kafkalite.console.http",
    "kafkalite.handlers.error_response", "kafkalite.security.scram",
    # BrokerState builds these on first use (no authorizer configured, no quota file saved)
    "kafkalite.authz", "kafkalite.quotas", "kafkalite.metadata.group_configs", "kafkalite.metadata.features",
]


def test_broker_start_leaves_unused_features_unimported(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, str(tmp_path / "data")], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[3])
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    started = set(out["started"])
    assert [m for m in NOT_AT_START if m in started] == []
    # ApiVersions advertises every API from the index, loaded or not
    assert out["api_keys"] == sorted(_index.INDEX)
    served = set(out["served"])
    assert {"kafkalite.handlers.api_versions", "kafkalite.handlers.metadata"} <= served
    assert "kafkalite.coordinator.share.service" not in served   # ListGroups did not need it
    assert out["groups"] == 0
    # a share-group request imports and starts the share coordinator, which answers it (no load in progress)
    assert out["share_error"] == 0
    assert {"kafkalite.handlers.share_group_heartbeat", "kafkalite.coordinator.share.service"} <= set(out["shared"])


def test_handler_index_matches_registrations() -> None:
    load_all()
    registered = {key: (spec.fn.__module__.rsplit(".", 1)[1], spec.min_version, spec.max_version)
                  for key, spec in dict.items(registry.HANDLERS)}
    table = "\n".join(f"    {k}: {v!r}," for k, v in sorted(registered.items()))
    assert registered == _index.INDEX, f"kafkalite/handlers/_index.py should read:\n{table}"


def test_lookup_imports_a_handler_module_on_first_use() -> None:
    spec = registry.lookup(0)
    assert spec is not None and spec.name == "Produce" and spec.fn.__module__ == "kafkalite.handlers.produce"
    assert registry.lookup(9999) is None
    assert 0 in registry.HANDLERS and registry.HANDLERS[0] is spec


def test_a_handler_missing_from_the_index_is_still_served() -> None:
    """A handler module whose line is missing from _index.py (a merge that forgot it) is found by importing
    every handler module once; the index test above names the missing line."""
    code = textwrap.dedent('''
        import sys
        from kafkalite.handlers import _index, registry
        del _index.INDEX[0]
        assert "kafkalite.handlers.produce" not in sys.modules
        spec = registry.lookup(0)
        assert spec is not None and spec.name == "Produce", spec
        assert registry.lookup(0) is spec
        print("ok")
    ''')
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[3])
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


_TRIO_SCRIPT = textwrap.dedent('''
    import ctypes.util, subprocess, sys
    spawned = []
    real_popen = subprocess.Popen
    class Recording(real_popen):
        def __init__(self, args, *a, **k):
            spawned.append(args)
            super().__init__(args, *a, **k)
    subprocess.Popen = Recording
    search = ctypes.util.find_library
    from kafkalite.runtime.trio_import import import_trio
    import_trio()
    import trio._core._thread_cache as cache
    print(repr((spawned, cache.set_os_thread_name is not None, ctypes.util.find_library is search,
                "trio" in sys.modules)))
''')


def test_serve_imports_trio_without_a_subprocess() -> None:
    """trio's import asks ctypes.util.find_library("pthread"), which runs `ldconfig -p` in a subprocess;
    kafkalite serve answers it from the dynamic loader (kafkalite.runtime.trio_import): no subprocess, thread names
    still set, find_library itself again afterwards."""
    proc = subprocess.run([sys.executable, "-c", _TRIO_SCRIPT], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[3])
    assert proc.returncode == 0, proc.stderr[-3000:]
    spawned, named, restored, imported = eval(proc.stdout.strip().splitlines()[-1])
    assert spawned == [] and named and restored and imported


_DEFERRED_SCRIPT = textwrap.dedent('''
    import sys
    from kafkalite.runtime.trio_import import DEFERRED, import_trio
    import_trio()
    loaded = sorted(n for n in ("ssl", "_ssl", "hmac", "_hashlib", "idna") if n in sys.modules)
    import hmac, ssl
    import trio._dtls, trio._socket, trio._ssl
    print(repr((loaded, DEFERRED, trio._ssl._stdlib_ssl.SSLError is ssl.SSLError and sys.modules["ssl"] is ssl,
                trio._dtls.hmac.compare_digest is hmac.compare_digest,
                trio._socket._idna.encode("bücher.example", uts46=True))))
''')


def test_trio_is_imported_without_openssl_and_idna_which_load_on_first_use() -> None:
    """trio imports ssl, hmac and idna at the top of its modules for TLS, DTLS and non-ASCII host names only;
    kafkalite serve imports trio with stand-ins that import the real module when trio first uses one."""
    proc = subprocess.run([sys.executable, "-c", _DEFERRED_SCRIPT], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[3])
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded, deferred, same_ssl, same_hmac, idna = eval(proc.stdout.strip().splitlines()[-1])
    assert loaded == [] and deferred == ("ssl", "hmac", "idna")
    assert same_ssl and same_hmac and idna == b"xn--bcher-kva.example"


_SERVE_SCRIPT = textwrap.dedent('''
    import atexit, json, runpy, sys
    atexit.register(lambda: sys.stderr.write("MODULES " + json.dumps(sorted(sys.modules)) + "\\n"))
    sys.argv = ["kafkalite", "serve", "--listen", "127.0.0.1:0", "--data-dir", sys.argv[1], "--log-level", "WARNING"]
    runpy.run_module("kafkalite", run_name="__main__", alter_sys=True)
''')


def test_a_plaintext_broker_answers_without_loading_openssl(tmp_path: Path) -> None:
    """`kafkalite serve` on a PLAINTEXT listener starts and answers ApiVersions and Metadata without ssl, hmac,
    hashlib or idna; a TLS listener's modules import ssl themselves (kafkalite.server.tls, security.tls_config)."""
    import json
    import re
    import signal

    from kafkalite.tests.support.rawclient import RawClient
    from kafkalite_wire.messages import ApiVersionsRequest, MetadataRequest

    proc = subprocess.Popen([sys.executable, "-c", _SERVE_SCRIPT, str(tmp_path / "data")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[3])
    try:
        assert proc.stdout is not None
        m = re.search(r"ready on ([0-9.]+):(\d+)", proc.stdout.readline())
        assert m, proc.stderr.read() if proc.stderr else ""
        with RawClient(m.group(1), int(m.group(2))) as c:
            assert c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3).error_code == 0
            assert c.request(MetadataRequest(topics=None), 12).brokers
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err[-3000:]
    modules = set(json.loads(err.split("MODULES ", 1)[1].splitlines()[0]))
    assert {"kafkalite.handlers.api_versions", "kafkalite.handlers.metadata"} <= modules
    assert sorted(modules & {"ssl", "_ssl", "hmac", "hashlib", "_hashlib", "idna"}) == []
