"""The trio server: listeners, connections, background loops, storage lifecycle.

Structure (outermost first), so shutdown can unwind one layer at a time:

    background nursery     group coordinator, storage housekeeping (compaction, retention, checkpoints)
      connection nursery   one task per client connection (kafkalite.server.connection)
        accept nursery     one accept loop per listener

``serve(config, shutdown=event, task_status=...)`` opens storage in a worker thread (recovery can take a
while), binds every listener, starts the background services and reports the bound addresses through
``task_status.started([(host, port), ...])``. When ``shutdown`` is set it drains gracefully: stop accepting,
wake long polls, let in-flight requests finish (closing idle connections at once) within
``kafkalite.shutdown.drain.ms``, stop background loops, then close storage under a shielded cancel scope,
which writes checkpoints and the ``.kafka_cleanshutdown`` marker. Being cancelled from outside skips the
drain but still closes storage cleanly.

Every background loop and accept loop runs under the broker's :class:`~kafkalite.runtime.supervisor.Supervisor`
(``state.supervisor``): an exception is logged once with its traceback, recorded per task, and the loop is
restarted with a backoff; it never reaches a nursery. Only a deliberate shutdown (or cancellation) ends the
server.
"""
from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import logging
import os
import socket as _stdsocket
import uuid
from pathlib import Path
from typing import Any

import trio

from kafkalite import faults
from kafkalite.config.addresses import Listener
from kafkalite.config.broker import BrokerConfig
from kafkalite.config.sidecars import CONSOLE_LISTEN, CONTROL_LISTEN, METRICS_LISTEN, SCHEMA_REGISTRY_LISTEN
from kafkalite.errors import ConfigError, StartupError
from kafkalite.handlers.registry import check_index
from kafkalite.metadata import MetadataRoom, elr_configs
from kafkalite.runtime import loopwatch
from kafkalite.runtime.gcpolicy import freeze_long_lived
from kafkalite.security import listeners as security_listeners
from kafkalite.security.scram_store import ScramStore, ScramStoreError
from kafkalite.server.connection import Connection, RequestMemoryPool, reap_idle
from kafkalite.server.connection_quotas import ConnectionQuotas
from kafkalite.server.request_memory import relieve
from kafkalite.state import BrokerState
from kafkalite_storage import LogConfig, LogManager, handles

log = logging.getLogger(__name__)

_conn_ids = itertools.count(1)


def open_state(config: BrokerConfig, metadata: Any = None) -> BrokerState:
    """Open (and recover) storage and build the broker state. Blocking: call from a worker thread. Handler
    modules are not imported here: each is imported when its API is first requested (handlers.registry).
    ``metadata``: the shared metadata room of a cluster's brokers (kafkalite.cluster); None: the broker's own."""
    _descriptor_budget(config)
    log_dir = config.log_dir
    _prepare_log_dir(log_dir)
    cluster_id = getattr(metadata, "cluster_id", None)
    lm = LogManager.open(str(log_dir), LogConfig(), node_id=config.node_id, cluster_id=cluster_id)
    try:
        room = MetadataRoom(log_dir) if metadata is None else metadata
        state = BrokerState(config, lm, cluster_id=cluster_id, metadata=room,
                            authorizer=_authorizer(config, room), scram=_scram_store(room), make_quotas=_quota_manager)
        state.tokens = _token_manager(config, room)
        return state
    except BaseException:
        lm.close()
        raise


def _authorizer(config: BrokerConfig, room: MetadataRoom) -> Any:
    """The room's ACLs and their authorizer (kafkalite.authz), or None when ``authorizer.class.name`` is unset:
    then kafkalite.authz is not even imported. With one, the ACL file is read now (a bad file fails the start, and
    the first request is checked against the saved ACLs); a cluster's brokers share it."""
    if not config.get_str("authorizer.class.name").strip():
        return None
    from kafkalite import authz  # only with an authorizer configured: not at start

    return room.shared("authorizer", lambda: authz.from_config(config, room.dir))


def _scram_store(room: MetadataRoom) -> Any:
    """SCRAM credentials (AlterUserScramCredentials), one store per metadata room."""
    def make() -> ScramStore:
        try:
            return ScramStore(room.dir)
        except ScramStoreError as exc:
            raise StartupError(str(exc)) from None

    return room.shared("scram", make)


def _token_manager(config: BrokerConfig, room: MetadataRoom) -> Any:
    """Delegation tokens (kafkalite.security.tokens), one manager per metadata room; None (the module not even
    imported) unless ``delegation.token.secret.key`` is set and no token file is saved."""
    from kafkalite.security.tokens import FILE_NAME  # a name only; the manager only with tokens configured

    if not config.get("delegation.token.secret.key") and not (room.dir / FILE_NAME).exists():
        return None
    from kafkalite.security.tokens.manager import TokenManager, TokenStoreError  # as above

    def make() -> TokenManager:
        try:
            return TokenManager(room.dir, config)
        except TokenStoreError as exc:
            raise StartupError(str(exc)) from None

    return room.shared("tokens", make)


def _quota_manager(state: BrokerState) -> Any:
    """This broker's client quota manager (rates measured here) over the room's quota configs."""
    from kafkalite import quotas  # at start only with saved quotas, else on first use (BrokerState.quotas)

    return quotas.from_config(state.config, state.metadata.dir, state.metadata)


def _prepare_log_dir(log_dir: Path) -> None:
    """Create the log dir; a path that cannot be one is a configuration error naming it (exit code 2)."""
    if log_dir.exists() and not log_dir.is_dir():
        raise ConfigError(f"log.dirs: {log_dir} is not a directory (choose another --data-dir)")
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
    except PermissionError:
        raise ConfigError(f"log.dirs: cannot create {log_dir}: permission denied") from None
    except (FileExistsError, NotADirectoryError):
        raise ConfigError(f"log.dirs: cannot create {log_dir}: a parent is not a directory") from None
    except OSError as exc:
        raise ConfigError(f"log.dirs: cannot create {log_dir}: {exc.strerror or exc}") from None
    if not os.access(log_dir, os.W_OK | os.X_OK):
        raise ConfigError(f"log.dirs: {log_dir} is not writable (permission denied)")


def _descriptor_budget(config: BrokerConfig) -> None:
    """Raise the soft RLIMIT_NOFILE to the hard limit and size storage's cache of open files from it."""
    old, soft, hard = handles.raise_nofile_limit()
    capacity = handles.configure(config.get_int("kafkalite.storage.max.open.files"))
    log.info("RLIMIT_NOFILE soft limit %d -> %d (hard %d); storage keeps at most %d files open",
             old, soft, hard, capacity)


async def _bind(listener: Listener) -> tuple[trio.socket.SocketType, Listener]:
    host = listener.host or "0.0.0.0"
    where = f"{listener} ({host}:{listener.port})" if not listener.host else str(listener)
    try:
        # an ASCII host as bytes: CPython encodes a str host with the "idna" codec, whose import (with stringprep)
        # is ~0.5 ms of every start for nothing a plain address or name needs
        infos = await trio.socket.getaddrinfo(host.encode("ascii") if host.isascii() else host, listener.port,
                                              type=_stdsocket.SOCK_STREAM, flags=_stdsocket.AI_PASSIVE)
    except OSError as exc:
        raise ConfigError(f"listeners: cannot resolve the host of {where}: {exc.strerror or exc}") from None
    family, type_, proto, _, sockaddr = infos[0]
    sock = trio.socket.socket(family, type_, proto)
    try:
        sock.setsockopt(_stdsocket.SOL_SOCKET, _stdsocket.SO_REUSEADDR, 1)
        await sock.bind(sockaddr)
        sock.listen(511)
    except OSError as exc:
        sock.close()
        hint = " (another process is listening there; choose another port)" \
            if exc.errno == errno.EADDRINUSE else ""
        raise StartupError(f"cannot listen on {where}: {exc.strerror or exc}{hint}") from None
    except BaseException:
        sock.close()
        raise
    bound = sock.getsockname()
    return sock, Listener(listener.name, listener.host or str(bound[0]), int(bound[1]))


def _advertised(config: BrokerConfig, bound: list[Listener]) -> list[Listener]:
    explicit = {lst.name: lst for lst in config.advertised_listeners()}
    out = []
    for lst in bound:
        adv = explicit.get(lst.name)
        if adv is None:
            host = lst.host if lst.host not in ("", "0.0.0.0", "::") else _stdsocket.gethostname()
            adv = Listener(lst.name, host, lst.port)
        elif adv.port == 0:
            adv = Listener(adv.name, adv.host, lst.port)
        out.append(adv)
    return out


async def _accept_loop(state: BrokerState, sock: trio.socket.SocketType, listener: Listener,
                       conn_nursery: trio.Nursery, connections: set[Connection]) -> None:
    security = state.listener_security.get(listener.name)
    conn_class: type[Connection] = Connection
    if security is not None and security.tls:
        from kafkalite.server.tls import TlsConnection  # TLS listeners only: not at start otherwise

        conn_class = TlsConnection
    quotas = state.connection_quotas
    assert quotas is not None   # set by serve() before any listener accepts
    while True:
        await quotas.wait_for_slot()   # max.connections reached: accept nothing until a connection closes
        try:
            client, addr = await sock.accept()
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                log.error("accept failed (%s); pausing accepts briefly", exc)
                await trio.sleep(0.1)
                continue
            if exc.errno in (errno.ECONNABORTED, errno.EPROTO):
                continue
            raise
        host = str(addr[0]) if isinstance(addr, tuple) else ""
        if not quotas.admit(host):   # max.connections.per.ip (logged by the quotas): closed at once, as Kafka
            client.close()
            continue
        with contextlib.suppress(OSError):
            client.setsockopt(_stdsocket.IPPROTO_TCP, _stdsocket.TCP_NODELAY, 1)
        # the connection drives a plain non-blocking socket with trio's wait_readable/wait_writable
        raw = _stdsocket.socket(fileno=client.detach())
        raw.setblocking(False)
        if conn_class is not Connection:    # SSL / SASL_SSL: OpenSSL drives the same non-blocking socket
            assert security is not None and security.ssl_context is not None
            try:
                raw = security.ssl_context.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
            except OSError as exc:     # the peer is already gone
                log.debug("TLS wrap of a new connection failed: %s", exc)
                raw.close()
                quotas.release(host)
                continue
        conn = conn_class(state, raw, listener.name, next(_conn_ids), security)
        conn.quota_host = host
        connections.add(conn)
        conn_nursery.start_soon(_run_connection, conn, connections, quotas)


async def _run_connection(conn: Connection, connections: set[Connection], quotas: ConnectionQuotas) -> None:
    """One connection's task. A failure is that connection's alone: ``Connection.run`` closes it on any error
    in request handling; whatever might still escape (its own cleanup) is logged here and never reaches the
    connection nursery, which would otherwise take every other connection and the server with it."""
    try:
        await conn.run()
    except Exception:
        log.exception("%r: connection task failed; closing it", conn)
        if conn.sock.fileno() != -1:
            trio.lowlevel.notify_closing(conn.sock)
            conn.sock.close()
    finally:
        connections.discard(conn)
        quotas.release(conn.quota_host)


HOUSEKEEPING = (
    # (storage method, interval setting, default ms, first run after start): Kafka's schedulers for the same jobs
    ("cleanup", "log.cleaner.backoff.ms", 15_000, False),            # compaction, .deleted purge, flush.ms
    # LogManager.startup schedules kafka-log-retention and kafka-recovery-point-checkpoint
    # log.initial.task.delay.ms after start, then every interval (its cleaner threads are not delayed)
    ("enforce_retention", "log.retention.check.interval.ms", 300_000, True),
    ("checkpoint", "log.flush.offset.checkpoint.interval.ms", 60_000, True),
)
INITIAL_TASK_DELAY = ("log.initial.task.delay.ms", 30_000)


async def _periodic(state: BrokerState, method: str, interval_s: float, first_s: float | None = None,
                    ran: set[str] | None = None) -> None:
    """Run one storage housekeeping job ``first_s`` after the start (one interval when None), then every
    ``interval_s``, in a worker thread. A failure propagates to the supervisor, which logs and records it and
    starts this loop again: the job runs again one interval after the restart (``ran``, shared by the restarts,
    holds the jobs that have run once; the first delay is the broker start's, not the loop's)."""
    fn = getattr(state.logs, method, None)
    if fn is None:
        log.debug("storage has no %s(); not scheduled", method)
        return
    ran = set() if ran is None else ran
    delay = interval_s if first_s is None or method in ran else first_s
    while True:
        await trio.sleep(delay)
        ran.add(method)
        await trio.to_thread.run_sync(fn)
        delay = interval_s


async def _load_pending(state: BrokerState) -> None:
    """After a clean start storage registers partitions without loading them (quick start); load the rest in
    a worker thread, a slice at a time, so retention and compaction reach every log."""
    fn = getattr(state.logs, "load_pending", None)
    while fn is not None:
        before = getattr(state.logs, "pending_loads", 0)
        left = await trio.to_thread.run_sync(fn, 500)   # a failure: the supervisor logs it and retries
        if before > left:   # logs were loaded: they live until deleted
            freeze_long_lived()
        if not left:
            return
        await trio.sleep(0.01)


def _start_housekeeping(state: BrokerState, nursery: trio.Nursery) -> None:
    if hasattr(state.logs, "run_on_owner"):
        # retention runs in a worker thread; the roll of an expired active segment belongs to this thread, which
        # appends (a few file operations, as a roll during a produce)
        state.logs.run_on_owner = functools.partial(trio.from_thread.run_sync,
                                                    trio_token=trio.lowlevel.current_trio_token())
    state.supervisor.start_soon(nursery, "storage.load_pending", _load_pending, state)
    if state.tokens is not None:
        from kafkalite.security.tokens.manager import expiry_task  # only with delegation tokens configured

        state.supervisor.start_soon(nursery, "delegation-token-expiry", expiry_task, state.tokens)
    first, ran = state.config.get_int(*INITIAL_TASK_DELAY) / 1000, set[str]()
    for method, key, default, initial in HOUSEKEEPING:
        interval = max(state.config.get_int(key, default), 100) / 1000
        state.supervisor.start_soon(nursery, f"storage.{method}", _periodic, state, method, interval,
                                    first if initial else None, ran)


# Coordinators started in the background nursery when their modules exist: (module, class, state attribute).
# Each has ``async run(task_status)`` and ``close()`` (sync, or returning an awaitable); close runs before
# storage closes. An optional ``begin_drain()`` is called when shutdown starts (answer long polls now).
SERVICES = (
    ("kafkalite.coordinator.classic.service", "GroupService", "groups"),
    ("kafkalite.coordinator.txn.service", "TransactionService", "txns"),
    ("kafkalite.coordinator.share.service", "ShareService", "shares"),
)
# services with nothing to load while their state topic is absent: started on first use (see OnFirstUse). The
# group and transaction coordinators only on a broker of its own: a cluster's brokers move their coordinators
# between them (kafkalite.cluster.coordinators) and start them all.
DEFERRABLE = {"groups": "__consumer_offsets", "txns": "__transaction_state", "shares": "__share_group_state"}
CLUSTER_DEFERRABLE = {"shares"}


class OnFirstUse:
    """Stands in (as ``state.<attr>``) for a coordinator whose state topic did not exist at start, so there was
    nothing to load: its modules are imported, and the service built and started, when something first uses it.
    A broker that nobody has asked about groups, transactions or share groups yet then pays neither their imports
    (~12 ms of start for the group and transaction coordinators, ~15 ms for the share coordinator) nor their
    memory: a fresh broker answers its first request that much sooner.

    The service is then in the state a service started at boot with no topic reaches once ``run`` has read
    nothing back: loaded (``after_load`` done, ``loaded`` set), its timers started in the background nursery.
    ``run``'s own load is skipped: the service may have written its topic (synchronously, on this first use)
    before ``run`` first runs, and replaying that would apply the records twice.

    Until then ``close``/``begin_drain`` have nothing to stop; every other attribute is the service's own (the
    subclasses answer the few questions that need no service without starting one)."""

    def __init__(self, state: BrokerState, module: str, cls_name: str, topic: str, nursery: trio.Nursery) -> None:
        self._spec = (state, module, cls_name, topic, nursery)
        self._service: Any = None

    @property
    def started(self) -> bool:
        return self._service is not None

    def _start(self) -> Any:
        service = self._service
        if service is None:
            import importlib

            state, module, cls_name, topic, nursery = self._spec
            service = getattr(importlib.import_module(module), cls_name)(state)
            if topic not in state.topics:   # still nothing to load (else run() loads it, as at start)

                async def nothing_to_load() -> None:
                    return None

                def nothing_after() -> None:
                    return None

                service.after_load()   # answers from now on, as after a load that read nothing
                service.loaded.set()
                service.before_load = service.load = nothing_to_load
                service.after_load = nothing_after
            nursery.start_soon(service.run)
            self._service = service
            freeze_long_lived()   # its modules live as long as the process (see kafkalite.cli.serve)
            log.debug("%s started on first use", cls_name)
        return service

    def __getattr__(self, name: str) -> Any:   # anything else: the real service
        if name.startswith("__"):   # copy/pickle/introspection probes: not a use of the service
            raise AttributeError(name)
        return getattr(self._start(), name)

    def close(self) -> None:
        if self._service is not None:
            self._service.close()

    def begin_drain(self) -> None:
        drain = getattr(self._service, "begin_drain", None)   # optional, as for a service started at boot
        if drain is not None:
            drain()


class SharesOnFirstUse(OnFirstUse):
    """The share coordinator's stand-in: a deleted topic has no share state to drop, ListGroups lists no share
    group and DeleteGroups finds none, without starting anything. These keep the service's signatures
    (``ShareService``), which is how the stand-in satisfies ``BrokerState.shares: ShareService | None``."""

    def on_topic_deleted(self, topic_id: uuid.UUID) -> None:
        if self._service is not None:
            self._service.on_topic_deleted(topic_id)

    def is_share_group(self, group_id: str) -> bool:
        return self._service is not None and self._service.is_share_group(group_id)

    def list_groups(self, states: list[str] | None, types: list[str] | None) -> list[dict[str, str]]:
        return [] if self._service is None else self._service.list_groups(states, types)


class GroupsOnFirstUse(OnFirstUse):
    """The group coordinator's stand-in: a deleted topic has no committed offsets to drop yet."""

    def on_topics_deleted(self, topics: list[str]) -> None:
        if self._service is not None:
            self._service.on_topics_deleted(topics)


STAND_INS: dict[str, type[OnFirstUse]] = {"groups": GroupsOnFirstUse, "txns": OnFirstUse, "shares": SharesOnFirstUse}


async def _start_services(state: BrokerState, nursery: trio.Nursery, *, cluster: bool = False) -> None:
    """Start every coordinator service (or its stand-in until first use); a missing one stops the start with one
    line (StartupError) instead of a broker that answers COORDINATOR_NOT_AVAILABLE forever."""
    import importlib
    import importlib.util

    for module, cls_name, attr in SERVICES:
        topic = DEFERRABLE.get(attr) if not cluster or attr in CLUSTER_DEFERRABLE else None
        if topic is not None and topic not in state.topics:
            if importlib.util.find_spec(module) is None:   # started on first use: at least it must be there
                raise StartupError(f"cannot start the {cls_name}: no module {module}")
            setattr(state, attr, STAND_INS[attr](state, module, cls_name, topic, nursery))
            continue
        try:
            cls = getattr(importlib.import_module(module), cls_name)
        except (ImportError, AttributeError) as exc:   # a broker without its coordinator must not start
            raise StartupError(f"cannot start the {cls_name} ({module}): {exc}") from exc
        service = cls(state)
        setattr(state, attr, service)
        await nursery.start(service.run)


async def internal_request(state: BrokerState, api_key: int, version: int, request: Any) -> Any:
    """A request the broker sends itself (the share group DLQ's CreateTopics and Produce), answered by the handler
    a client's request goes to, as the broker's own PLAINTEXT principal (ANONYMOUS, as Kafka's inter-broker
    PLAINTEXT listener)."""
    from kafkalite.handlers import registry  # only when a share group DLQ writes: not at start
    from kafkalite_wire.headers import RequestHeader  # with it

    spec = registry.lookup(api_key)
    if spec is None:
        raise RuntimeError(f"no handler for api key {api_key}")
    ctx = registry.RequestContext(header=RequestHeader(api_key, version, 0, f"broker-{state.node_id}-internal"),
                                  broker=state, client_host="127.0.0.1")
    return await spec.fn(ctx, request)


async def _close_services(state: BrokerState, closed: set[str]) -> None:
    for _module, _cls, attr in reversed(SERVICES):
        service = getattr(state, attr, None)
        if service is None or attr in closed:
            continue
        closed.add(attr)
        try:
            result: Any = service.close()
            if hasattr(result, "__await__"):
                await result
        except Exception:
            log.exception("%s close failed", type(service).__name__)


async def serve(config: BrokerConfig, *, shutdown: trio.Event | None = None, metadata: Any = None,
                attach: Any = None,
                task_status: trio.TaskStatus[list[tuple[str, int]]] = trio.TASK_STATUS_IGNORED) -> None:
    """Run one broker until ``shutdown`` is set. A cluster's brokers (kafkalite.cluster) pass their shared
    ``metadata`` room and an ``attach(state)`` callback, called once the state exists, before anything runs."""
    shutdown = trio.Event() if shutdown is None else shutdown
    for line in config.startup_warnings():
        log.warning("%s", line)
    check_index()   # every API the broker will advertise has its handler module (imported on first use)
    state = await trio.to_thread.run_sync(open_state, config, metadata)
    state.internal_request = functools.partial(internal_request, state)
    if attach is not None:
        attach(state)
    # eligible leader replicas on (KIP-966): the cluster-level min.insync.replicas Kafka's bootstrap writes
    elr_configs.ensure_cluster_min_isr(state, at_start=True)
    try:   # TLS contexts and SASL settings per listener (reads key stores): a bad one is a config error
        state.listener_security = security_listeners.build_all(config, state.scram, state.tokens)
    except BaseException:
        state.logs.close()
        raise
    connections: set[Connection] = set()
    closed: set[str] = set()
    sockets: list[trio.socket.SocketType] = []
    try:
        bound: list[Listener] = []
        for lst in config.listeners():
            sock, actual = await _bind(lst)
            sockets.append(sock)
            bound.append(actual)
        state.listeners = bound
        state.request_pool = RequestMemoryPool(config.get_int("queued.max.request.bytes"))
        try:
            state.connection_quotas = ConnectionQuotas.from_config(config)
        except (ValueError, OSError) as exc:   # a bad overrides entry, or a host name that does not resolve
            raise ConfigError(str(exc)) from None
        state.advertised_listeners = _advertised(config, bound)

        state.connections = connections   # read by the metrics endpoint
        faults.attach(state)   # state.faults: inert until a fault is set (kafkalite.faults)
        async with trio.open_nursery() as background:
            # the metrics endpoint, the console and the control API (off unless their address is set) are
            # imported only then
            state.metrics = None
            if config.get_str(METRICS_LISTEN):
                from kafkalite import metrics  # only with a metrics address: not at start otherwise

                await metrics.start(state, background)
            if config.get_str(CONSOLE_LISTEN):
                from kafkalite import console  # only with a console address: not at start otherwise

                await console.start(state, background)
            if config.get_str(CONTROL_LISTEN):
                from kafkalite import control  # only with a control address: not at start otherwise

                await control.start(state, background)
            if config.get_str(SCHEMA_REGISTRY_LISTEN):
                from kafkalite import registry  # the schema registry (off unless set) is imported only then

                await registry.start(state, background)
            await _start_services(state, background, cluster=metadata is not None)
            _start_housekeeping(state, background)
            loopwatch.start(state, background)
            idle_ms = config.get_int("connections.max.idle.ms")
            body_ms = config.get_int("kafkalite.request.body.timeout.ms")
            state.supervisor.start_soon(background, "idle-connection-reaper", reap_idle, connections,
                                        idle_ms / 1000 if idle_ms > 0 else float("inf"),
                                        body_ms / 1000 if body_ms > 0 else float("inf"))
            stall_ms = config.get_int("kafkalite.request.stall.ms")
            if stall_ms > 0 and state.request_pool.capacity > 0:
                state.supervisor.start_soon(background, "request-memory-relief", relieve, state.request_pool,
                                            connections, stall_ms / 1000)
            async with trio.open_nursery() as conn_nursery:
                async with trio.open_nursery() as accept_nursery:
                    for sock, lst in zip(sockets, bound, strict=True):
                        state.supervisor.start_soon(accept_nursery, f"accept:{lst}", _accept_loop, state, sock,
                                                    lst, conn_nursery, connections)
                    log.info("kafkalite %s listening on %s (data in %s)", state.cluster_id,
                             ", ".join(str(b) for b in bound), config.log_dir)
                    task_status.started([(b.host, b.port) for b in bound])
                    await shutdown.wait()
                    accept_nursery.cancel_scope.cancel()
                # drain: no new connections; long polls answer now; idle connections close
                for sock in sockets:
                    sock.close()
                state.purgatory.begin_drain()
                for _module, _cls, attr in SERVICES:   # coordinators may answer their long polls now too
                    drain = getattr(getattr(state, attr, None), "begin_drain", None)
                    if drain is not None:
                        drain()
                for conn in list(connections):
                    conn.request_close()
                conn_nursery.cancel_scope.deadline = (
                    trio.current_time() + config.get_int("kafkalite.shutdown.drain.ms") / 1000)
            await _close_services(state, closed)
            background.cancel_scope.cancel()
    finally:
        faults.detach(state)
        for sock in sockets:
            sock.close()
        with trio.CancelScope(shield=True):
            await _close_services(state, closed)
            await trio.to_thread.run_sync(state.logs.close)
            log.info("kafkalite stopped; storage closed cleanly")
