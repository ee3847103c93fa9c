"""The handler registry: one async function per API key, each with the version range it serves.

    @handler(ProduceRequest, min_version=3, max_version=11)
    async def produce(ctx: RequestContext, req: ProduceRequest) -> ProduceResponse | None: ...

The API key and name come from ``kafkalite_wire.messages.REGISTRY`` (the request class identifies the API). ApiVersions
is built from this registry (``advertised()``), so what we advertise and what we serve cannot drift.

Handler modules are imported on demand: ``lookup(key)`` (and ``HANDLERS[key]``) imports the module that
``kafkalite.handlers._index`` names for the key the first time it is asked for, so a broker starts without
importing sixty handler modules and their generated message classes (share groups, ACLs, SCRAM, quotas,
KIP-848 ... cost nothing until a client uses them). ``advertised()`` reads the index for APIs not loaded yet;
a test keeps the index equal to what the decorators register.
Handlers run on the trio thread: code between two ``await``s is atomic, so check-then-mutate needs no lock.
"""
from __future__ import annotations

import importlib
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkalite.errors import StartupError
from kafkalite.handlers._index import INDEX
from kafkalite.runtime.gcpolicy import freeze_long_lived
from kafkalite.security.principal import ANONYMOUS, KafkaPrincipal
from kafkalite_wire.messages import REGISTRY

if TYPE_CHECKING:
    from kafkalite.security.authenticator import SaslAuthenticator
    from kafkalite.state import BrokerState
    from kafkalite_wire.headers import RequestHeader

log = logging.getLogger(__name__)

HandlerFn = Callable[["RequestContext", Any], Awaitable[Any]]


@dataclass(slots=True)
class RequestContext:
    """What a handler knows about the request besides its body."""

    header: RequestHeader
    broker: BrokerState
    client_host: str = ""
    client_port: int = 0
    listener: str = "PLAINTEXT"
    connection_id: int = 0
    # who the connection authenticated as, and its listener's security protocol (kafkalite.security)
    principal: KafkaPrincipal = ANONYMOUS
    security_protocol: str = "PLAINTEXT"
    # the connection's SASL exchange (SaslHandshake, SaslAuthenticate) on a SASL listener, else None
    sasl: SaslAuthenticator | None = None

    @property
    def version(self) -> int:
        return int(self.header.api_version)

    @property
    def client_id(self) -> str | None:
        return self.header.client_id

    @staticmethod
    def now_ms() -> int:
        return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class HandlerSpec:
    api_key: int
    name: str
    min_version: int
    max_version: int
    request_class: type
    fn: HandlerFn


class _Handlers(dict[int, HandlerSpec]):
    """api_key -> HandlerSpec; a key of ``_index.INDEX`` not registered yet imports its module on access."""

    def __missing__(self, key: int) -> HandlerSpec:
        entry = INDEX.get(key)
        if entry is None:
            raise KeyError(key)
        importlib.import_module(f"kafkalite.handlers.{entry[0]}")
        return dict.__getitem__(self, key)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in INDEX

    def get(self, key: int, default: Any = None) -> Any:
        spec = dict.get(self, key)
        if spec is None and key in INDEX:
            return self.__missing__(key)
        return default if spec is None else spec


HANDLERS: dict[int, HandlerSpec] = _Handlers()
_BROKEN: set[int] = set()   # api keys not served: no handler module, or its module failed to import


def _api_info_for(request_class: type) -> Any:
    # Look up by API_KEY: scanning REGISTRY for the class would import every generated message module.
    info = REGISTRY.get(getattr(request_class, "API_KEY", -1))
    if info is not None and info.request_class is request_class:
        return info
    raise LookupError(f"{request_class.__name__} is not a request class in kafkalite_wire.messages.REGISTRY")


def handler(request_class: type, *, min_version: int, max_version: int) -> Callable[[HandlerFn], HandlerFn]:
    """Register ``fn`` as the handler of ``request_class``'s API for versions [min_version, max_version]."""
    info = _api_info_for(request_class)
    if not (info.min_version <= min_version <= max_version <= info.max_version):
        raise ValueError(
            f"{info.name}: handler range {min_version}-{max_version} outside the codec's "
            f"{info.min_version}-{info.max_version}"
        )

    def register(fn: HandlerFn) -> HandlerFn:
        existing = dict.get(HANDLERS, info.key)   # not HANDLERS.get: that would import the module being imported
        if existing is not None and existing.fn is not fn and existing.fn.__qualname__ != fn.__qualname__:
            raise ValueError(f"two handlers for {info.name} (key {info.key}): {existing.fn!r} and {fn!r}")
        HANDLERS[info.key] = HandlerSpec(info.key, info.name, min_version, max_version, request_class, fn)
        return fn

    return register


def lookup(api_key: int) -> HandlerSpec | None:
    """The handler of ``api_key`` (its module imported on first use), or None if no handler serves it."""
    spec = dict.get(HANDLERS, api_key)
    if spec is not None or api_key in _BROKEN:
        return spec
    if api_key not in INDEX:
        # an api key no indexed module serves: import every handler module once, so a module missing from the
        # index (kafkalite/tests/e2e/test_lazy_start.py names it) is still served; a truly unknown key stays None
        from kafkalite.handlers import load_all

        load_all()
        _BROKEN.add(api_key)   # do not look again
        return dict.get(HANDLERS, api_key)
    try:
        spec = HANDLERS[api_key]
    except Exception:   # a broken handler module: that API is not served, nor advertised from now on; logged once
        _BROKEN.add(api_key)
        log.exception("failed to load the handler module of api key %d (%s)", api_key, INDEX[api_key][0])
        return None
    freeze_long_lived()   # the module's functions and classes live as long as the process, like those loaded at start
    return spec


def _versions() -> dict[int, tuple[int, int]]:
    """(min, max) served per API key: registered handlers, and the index for modules not imported yet."""
    out = {key: (lo, hi) for key, (_module, lo, hi) in INDEX.items() if key not in _BROKEN}
    out.update((key, (spec.min_version, spec.max_version)) for key, spec in dict.items(HANDLERS))
    return out


def check_index() -> None:
    """Every handler module the index names is there (found, not imported: they load on first use). A missing
    one stops the start with one line, instead of a broker that advertises an API it cannot serve."""
    import os

    here = {name.rsplit(".", 1)[0] for name in os.listdir(os.path.dirname(__file__)) if name.endswith(".py")}
    missing = [f"{module} (api key {key})" for key, (module, _lo, _hi) in sorted(INDEX.items())
               if module not in here and f"kafkalite.handlers.{module}" not in sys.modules]
    if missing:
        raise StartupError(f"handler modules missing: {', '.join(missing)}")


def advertised(table: dict[int, tuple[int, int]] | None = None,
               below_served: dict[int, int] | None = None) -> list[tuple[int, int, int]]:
    """``(api_key, min_version, max_version)`` for every registered API: the overlap of what its handler serves
    with ``table`` (the emulated release's ranges, ``kafkalite.config.releases.table_for``).

    An API the table lacks, or whose overlap is empty, is left out, as that release would not have it.
    ``below_served``: APIs the release advertises from a version lower than any it serves (Kafka 4.x's Produce
    v0, KAFKA-18659): their minimum is the table's.
    """
    out: list[tuple[int, int, int]] = []
    versions = _versions()
    for key in sorted(versions):
        lo, hi = versions[key]
        if table is not None:
            if key not in table:
                continue
            tlo, thi = table[key]
            lo, hi = max(lo, tlo), min(hi, thi)
            if lo > hi:
                continue
            if below_served and below_served.get(key) == tlo:
                lo = tlo
        out.append((key, lo, hi))
    return out
