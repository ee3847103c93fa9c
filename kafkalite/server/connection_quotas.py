"""Connection limits per client address and for the whole broker (Kafka's ``ConnectionQuotas``, SocketServer.scala).

- ``max.connections.per.ip`` (default 2^31-1) and ``max.connections.per.ip.overrides`` (``host:count`` pairs,
  comma-separated; a host name is resolved once, at start, as Kafka resolves it with InetAddress.getByName):
  a new connection from an address that already has its maximum is accepted and closed at once, with Kafka's
  log line "Rejected connection from <ip>, address already has the configured maximum of <n> connections."
  A limit of 0 refuses every connection from that address.
- ``max.connections`` (default 2^31-1): the broker-wide limit. When it is reached the listeners stop
  accepting (new connections wait in the kernel's accept backlog, as they wait on Kafka's blocked acceptor)
  and go on as soon as a connection closes.

Kafka also lets the inter-broker listener take a slot by closing another listener's least recently used
connection, and caps connection creation *rates*; a single kafkalite broker has no inter-broker listener, and
the rate caps are not implemented. The limits are read at start (Kafka can change them dynamically).

Everything runs on the trio thread: ``wait_for_slot`` before ``accept``, ``admit`` right after it, and
``release`` when the connection's task ends.
"""
from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Mapping

import trio

log = logging.getLogger(__name__)

UNLIMITED = 2**31 - 1


def normalize(host: str) -> str:
    """The address as the counts key it: IPv4-mapped IPv6 addresses (dual-stack listeners) as plain IPv4."""
    if host.startswith("::ffff:") and "." in host:
        return host[7:]
    return host


def parse_overrides(text: str) -> dict[str, int]:
    """``host:count,host:count`` (Kafka's map syntax) -> {address: count}; ValueError names a bad entry."""
    out: dict[str, int] = {}
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        host, sep, count = entry.rpartition(":")
        if not sep or not host or not count.strip().lstrip("-").isdigit():
            raise ValueError(f"Invalid value {text} for configuration max.connections.per.ip.overrides: "
                             f"entry {entry!r} is not host:count")
        limit = int(count)
        if limit < 0:
            raise ValueError(f"Invalid value {text} for configuration max.connections.per.ip.overrides: "
                             f"{limit} for {host} is below 0")
        out[_address(host.strip())] = limit
    return out


def _address(host: str) -> str:
    try:
        return normalize(str(ipaddress.ip_address(host.strip("[]"))))
    except ValueError:
        return socket.gethostbyname(host)   # a host name: resolved once, at start


class ConnectionQuotas:
    __slots__ = ("_freed", "counts", "max_per_ip", "max_total", "overrides", "rejected", "total")

    def __init__(self, max_total: int = UNLIMITED, max_per_ip: int = UNLIMITED,
                 overrides: Mapping[str, int] | None = None) -> None:
        self.max_total = max_total
        self.max_per_ip = max_per_ip
        self.overrides = dict(overrides or {})
        self.counts: dict[str, int] = {}
        self.total = 0
        self.rejected = 0
        self._freed = trio.Event()

    @classmethod
    def from_config(cls, config: object) -> ConnectionQuotas:
        get_int = config.get_int  # type: ignore[attr-defined]
        get_str = config.get_str  # type: ignore[attr-defined]
        overrides = parse_overrides(get_str("max.connections.per.ip.overrides") or "")
        return cls(get_int("max.connections"), get_int("max.connections.per.ip"), overrides)

    @property
    def unlimited(self) -> bool:
        return self.max_total >= UNLIMITED and self.max_per_ip >= UNLIMITED and not self.overrides

    def limit_for(self, host: str) -> int:
        return self.overrides.get(host, self.max_per_ip)

    async def wait_for_slot(self) -> None:
        """Return once the broker has fewer than ``max.connections`` connections (accept nothing until then)."""
        while self.total >= self.max_total:
            if self._freed.is_set():
                self._freed = trio.Event()
            await self._freed.wait()

    def admit(self, host: str) -> bool:
        """Count a just-accepted connection from ``host``; False (counted nowhere) when its address is at its
        limit: the caller closes it."""
        host = normalize(host)
        count = self.counts.get(host, 0)
        limit = self.limit_for(host)
        if count >= limit:
            self.rejected += 1
            log.info("Rejected connection from %s, address already has the configured maximum of %d connections.",
                     host, limit)
            return False
        self.counts[host] = count + 1
        self.total += 1
        return True

    def release(self, host: str) -> None:
        host = normalize(host)
        count = self.counts.get(host, 0)
        if count <= 1:
            self.counts.pop(host, None)
        else:
            self.counts[host] = count - 1
        if count:
            self.total -= 1
            self._freed.set()
