"""The handler registry: one async function per API key, each with the version range it serves.

    @handler(ProduceRequest, min_version=3, max_version=11)
    async def produce(ctx: RequestContext, req: ProduceRequest) -> ProduceResponse | None: ...

The API key and name come from ``wire.messages.REGISTRY`` (the request class identifies the API). ApiVersions
is built from this registry (``advertised()``), so what we advertise and what we serve cannot drift.
Handlers run on the trio thread: code between two ``await``s is atomic, so check-then-mutate needs no lock.
"""
from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafkalite.security.principal import ANONYMOUS, KafkaPrincipal

if TYPE_CHECKING:
    from kafkalite.state import BrokerState
    from wire.headers import RequestHeader

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
    extra: dict[str, Any] = field(default_factory=dict)

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


HANDLERS: dict[int, HandlerSpec] = {}


def _api_info_for(request_class: type) -> Any:
    from wire.messages import REGISTRY

    # Look up by API_KEY: scanning REGISTRY for the class would import every generated message module.
    info = REGISTRY.get(getattr(request_class, "API_KEY", -1))
    if info is not None and info.request_class is request_class:
        return info
    raise LookupError(f"{request_class.__name__} is not a request class in wire.messages.REGISTRY")


def handler(request_class: type, *, min_version: int, max_version: int) -> Callable[[HandlerFn], HandlerFn]:
    """Register ``fn`` as the handler of ``request_class``'s API for versions [min_version, max_version]."""
    info = _api_info_for(request_class)
    if not (info.min_version <= min_version <= max_version <= info.max_version):
        raise ValueError(
            f"{info.name}: handler range {min_version}-{max_version} outside the codec's "
            f"{info.min_version}-{info.max_version}"
        )

    def register(fn: HandlerFn) -> HandlerFn:
        existing = HANDLERS.get(info.key)
        if existing is not None and existing.fn is not fn and existing.fn.__qualname__ != fn.__qualname__:
            raise ValueError(f"two handlers for {info.name} (key {info.key}): {existing.fn!r} and {fn!r}")
        HANDLERS[info.key] = HandlerSpec(info.key, info.name, min_version, max_version, request_class, fn)
        return fn

    return register


def lookup(api_key: int) -> HandlerSpec | None:
    return HANDLERS.get(api_key)


def advertised(caps: dict[int, int] | None = None,
               floors: dict[int, int] | None = None) -> list[tuple[int, int, int]]:
    """``(api_key, min_version, max_version)`` for every registered API, capped by ``caps`` (a release table)
    and raised to ``floors`` (the release's lowest served versions, KIP-896).

    An API whose cap is missing or below our minimum is left out, as that release would not have it.
    """
    out: list[tuple[int, int, int]] = []
    for key in sorted(HANDLERS):
        spec = HANDLERS[key]
        lo, hi = spec.min_version, spec.max_version
        if caps is not None:
            cap = caps.get(key)
            if cap is None or cap < spec.min_version:
                continue
            hi = min(hi, cap)
        if floors:
            lo = max(lo, floors.get(key, lo))
            if lo > hi:
                continue
        out.append((key, lo, hi))
    return out
