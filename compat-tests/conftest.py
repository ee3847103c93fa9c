"""Fixtures for the compatibility tests: real clients against a real kafkalite process.

- ``broker`` (module scope): one ``python -m kafkalite serve`` process on port 0 with a fresh data dir. A test
  module sets ``KAFKALITE_EMULATE = "2.8"`` to run its broker with ``--emulate-kafka 2.8``, and
  ``KAFKALITE_ARGS = [...]`` for more command-line arguments (``--override K=V``).
- ``broker_factory`` (function scope): start extra brokers (own data dir) for restart/crash tests.
- ``client`` / ``get_client``: drivers from ``harness.clients``; a client missing on this machine skips the
  test loudly, or FAILS it under ``CI=true``.
- ``topic``: a unique topic name per test; ``create_topic`` creates one through confluent-kafka's admin.

``KAFKALITE_COMPAT_BROKER=kafka`` (``make matrix-reference``) runs the same tests against Apache Kafka 4.4
(``harness/reference.py``). A test that needs what only kafkalite has is marked
``@pytest.mark.kafkalite_only("reason")`` (or its module sets ``KAFKALITE_ONLY = "reason"``) and is skipped
there with that reason; tests using the in-process ``kafkalite_cluster`` fixture are kafkalite-only (a test that
asks for ``cluster_control`` runs on either: a kafkalite cluster, or a 3-node Kafka shared by its module).

On any failure the broker's log (stdout+stderr) written during that test is attached to the report as a
section, as are the Java/kafkajs driver logs.
"""

from __future__ import annotations

import importlib.util
import itertools
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from harness import reference  # noqa: E402
from harness.broker import BrokerProcess, reference_run  # noqa: E402
from harness.clients import NEW_CLIENTS, Client, make_client  # noqa: E402

from kafkalite.tests.support.requires import missing  # noqa: E402  (skip loudly; fail under CI=true)

_LIVE: list[BrokerProcess] = []
_DRIVER_LOGS: list[Path] = []
_LOG_POS = pytest.StashKey[dict[str, int]]()
_counter = itertools.count()




def _broker_missing() -> str | None:
    import os

    if reference_run():
        return reference.missing()
    if os.environ.get("KAFKALITE_COMPAT_PEER"):
        return None
    if importlib.util.find_spec("kafkalite.__main__") is None:
        return "kafkalite has no __main__ yet (python -m kafkalite serve)"
    return None


# -- broker fixtures --------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def compat_log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("compat-logs")


def _start_broker(base: Path, emulate: str | None, extra_args: list[str] | None = None) -> BrokerProcess:
    reason = _broker_missing()
    if reason:
        missing(reason)
    b = BrokerProcess(base / "data", base / "broker.log", emulate=emulate, extra_args=extra_args)
    _LIVE.append(b)
    try:
        b.start()
    except reference.ReferenceUnsupported as e:
        _LIVE.remove(b)
        b.kill()
        pytest.fail(f"this test asks the reference broker for {e}: mark it kafkalite_only with the reason",
                    pytrace=False)
    except BaseException:
        _LIVE.remove(b)  # the error message carries the log tail
        b.kill()
        raise
    return b


@pytest.fixture(scope="module")
def broker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    emulate = getattr(request.module, "KAFKALITE_EMULATE", None)
    base = tmp_path_factory.mktemp(f"broker-{request.module.__name__.rsplit('.', 1)[-1]}")
    b = _start_broker(base, emulate, getattr(request.module, "KAFKALITE_ARGS", None))
    try:
        yield b
        rc = b.stop()  # SIGTERM: a graceful drain must end with exit status 0
        if rc not in (0, None):
            pytest.fail(f"kafkalite exited with status {rc} on SIGTERM after this module", pytrace=False)
    finally:
        b.kill()
        _LIVE.remove(b)


@pytest.fixture(scope="module")
def kafka_cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[reference.ReferenceCluster]:
    """Apache Kafka 4.4 as a KRaft cluster of 3 combined broker+controller nodes on loopback, for the module;
    whatever KAFKALITE_COMPAT_BROKER says (it is a target of its own, e.g. for ``kafkalite migrate``). A module
    sets ``KAFKA_CLUSTER = {"nodes": 3, "sasl_users": {"admin": "..."}, "overrides": {...}}`` to shape it
    (``harness.reference.AUTHORIZER`` turns on the StandardAuthorizer). Its nodes' logs are attached to a failed
    test's report like the broker's."""
    reason = reference.missing()
    if reason:
        missing(reason)
    spec = dict(getattr(request.module, "KAFKA_CLUSTER", {}))
    base = tmp_path_factory.mktemp(f"kafka-cluster-{request.module.__name__.rsplit('.', 1)[-1]}")
    cluster = reference.ReferenceCluster(base, spec.pop("nodes", 3), **spec)
    _LIVE.extend(cluster.nodes)
    try:
        cluster.start()
        yield cluster
        codes = cluster.stop()
        if any(c not in (0, None) for c in codes):
            pytest.fail(f"a Kafka node exited with {codes} on SIGTERM after this module", pytrace=False)
    finally:
        cluster.kill()
        for n in cluster.nodes:
            _LIVE.remove(n)


@pytest.fixture
def cluster_control(request: pytest.FixtureRequest) -> Iterator[object]:
    """Three brokers and the actions a cluster test takes on them (``harness.cluster.ClusterControl``: move a
    leader or a coordinator, stop/start a broker): a fresh in-process ``kafkalite_cluster`` per test (its
    ``@pytest.mark.kafkalite_cluster(...)`` marker applies), or with KAFKALITE_COMPAT_BROKER=kafka the module's
    3-node ``kafka_cluster`` (shaped by the module's ``KAFKA_CLUSTER``), whose stopped nodes are started again
    before each test."""
    from harness.cluster import KafkaControl, KafkaliteControl

    if reference_run():
        ctl = KafkaControl(request.getfixturevalue("kafka_cluster"))
        ctl.heal()
        yield ctl
    else:
        yield KafkaliteControl(request.getfixturevalue("kafkalite_cluster"))


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[Callable[..., BrokerProcess]]:
    started: list[BrokerProcess] = []

    def factory(emulate: str | None = None, extra_args: list[str] | None = None) -> BrokerProcess:
        b = _start_broker(tmp_path / f"b{len(started)}", emulate, extra_args)
        started.append(b)
        return b

    yield factory
    for b in started:
        b.kill()
        _LIVE.remove(b)


@pytest.fixture(autouse=True)
def _known_client_gaps(request: pytest.FixtureRequest) -> None:
    """A module's ``KNOWN_CLIENT_GAPS = {node name: reason}`` marks those tests xfail(strict=True); every
    entry must be a gap written down in MATRIX.md with its root cause."""
    reason = getattr(request.module, "KNOWN_CLIENT_GAPS", {}).get(request.node.name)
    if reason:
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))


# -- clients ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def _client_pool(compat_log_dir: Path) -> Iterator[dict[str, Client]]:
    pool: dict[str, Client] = {}
    yield pool
    for c in pool.values():
        c.close()


@pytest.fixture(scope="session")
def get_client(_client_pool: dict[str, Client], compat_log_dir: Path) -> Callable[[str], Client]:
    def get(name: str) -> Client:
        if name not in _client_pool:
            c = make_client(name, compat_log_dir)
            reason = c.missing()
            if reason:
                missing(f"client {name}: {reason}")
            _client_pool[name] = c
            for log in ("java-driver.log", "kafkajs-driver.log", f"{name}-driver.log"):
                if (compat_log_dir / log) not in _DRIVER_LOGS:
                    _DRIVER_LOGS.append(compat_log_dir / log)
        return _client_pool[name]
    return get


@pytest.fixture
def client(client_name: str, get_client: Callable[[str], Client]) -> Client:
    """The client named by the test's ``client_name`` parameter."""
    return get_client(client_name)


# -- topics ----------------------------------------------------------------------------------------------
@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name)[:180].strip("-")
    return f"{name}-{next(_counter)}"


# -- logs on failure --------------------------------------------------------------------------------------
def _log_key(b: BrokerProcess) -> str:
    return str(b.log_path)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    pos = {_log_key(b): b.log_size() for b in _LIVE}
    for p in _DRIVER_LOGS:
        pos[str(p)] = p.stat().st_size if p.exists() else 0
    item.stash[_LOG_POS] = pos


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    rep = outcome.get_result()
    if not rep.failed:
        return
    pos = item.stash.get(_LOG_POS, {})
    for b in _LIVE:
        text = b.log_since(pos.get(_log_key(b), 0))
        rep.sections.append((f"{b.kind} broker log ({b.log_path}) during {rep.when}", text or "(empty)"))
    for p in _DRIVER_LOGS:
        if p.exists():
            start = pos.get(str(p), 0)
            with open(p, "rb") as f:
                f.seek(start)
                data = f.read()[-20_000:]
            if data:
                rep.sections.append((f"client driver log {p.name}", data.decode(errors="replace")))


# -- metadata for MATRIX.md (make_matrix.py reads these from the junit report) ------------------------------
_MATRIX_PARAMS = ("client_name", "producer", "consumer", "codec", "sig")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kafkalite_only(reason): the test needs what only kafkalite has; "
                                       "skipped when KAFKALITE_COMPAT_BROKER=kafka")


def kafkalite_only_reason(item: pytest.Item) -> str | None:
    """Why ``item`` cannot run against Apache Kafka, or None."""
    marker = item.get_closest_marker("kafkalite_only")
    if marker is not None:
        return str(marker.args[0] if marker.args else marker.kwargs.get("reason", "kafkalite-only"))
    reason = getattr(getattr(item, "module", None), "KAFKALITE_ONLY", None)
    if reason:
        return str(reason)
    if "kafkalite_cluster" in getattr(item, "fixturenames", ()):
        return ("a kafkalite.cluster.Cluster in the test's process (a Kafka cluster is the kafka_cluster fixture, "
                "a target of its own)")
    return None


# The scenarios `make test` runs for each client added in #24 (Java 4.4, Go, Rust): the rest of their cases
# (compression besides zstd, limits, many partitions, cross-client cells, faults, clusters, restarts) carry the
# `matrix` marker: `make matrix` runs them, `make test` deselects them (-m "not matrix"), keeping its share bounded.
NEW_CLIENT_CORE = {"test_roundtrip", "test_idempotent_producer", "test_metadata", "test_topic_lifecycle",
                   "test_list_offsets", "test_group_reads_commits_and_resumes", "test_transactional_commit_abort",
                   "test_consumer_protocol_group_reads_commits_and_resumes"}


def _new_client_of(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec else {}
    for k in ("client_name", "producer", "consumer", "kind"):
        if params.get(k) in NEW_CLIENTS:
            return str(params[k])
    return None


def _core_case(item: pytest.Item) -> bool:
    if getattr(getattr(item, "module", None), "KAFKALITE_EMULATE", None):
        return False   # the --emulate-kafka profiles: make matrix
    name = getattr(item, "originalname", item.name)
    if name == "test_compression":
        return item.callspec.params.get("codec") == "zstd"   # type: ignore[attr-defined]
    return name in NEW_CLIENT_CORE


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    ref = reference_run()
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents and _new_client_of(item) and not _core_case(item):
            item.add_marker(pytest.mark.matrix)
    for item in items:
        if HERE not in Path(str(item.fspath)).resolve().parents:
            continue
        if ref:
            reason = kafkalite_only_reason(item)
            if reason:
                item.add_marker(pytest.mark.skip(reason=f"kafkalite-only: {reason}"))
            item.user_properties.append(("broker", "kafka-" + reference.KAFKA_VERSION))
    for item in items:
        if HERE not in Path(str(item.fspath)).resolve().parents:
            continue
        callspec = getattr(item, "callspec", None)
        params = callspec.params if callspec else {}
        for k in _MATRIX_PARAMS:
            if k in params:
                v = params[k]
                item.user_properties.append((k, getattr(v, "name", str(v))))
        profile = getattr(getattr(item, "module", None), "KAFKALITE_EMULATE", None) or "default"
        item.user_properties.append(("profile", profile))
