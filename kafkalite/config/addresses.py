"""Addresses in settings: listener lists (``NAME://host:port``), the listener -> security protocol map, and the
``HOST:PORT`` of the HTTP sidecars. Pure parsers: the definition table validates with them, the server binds what
they return.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from kafkalite.errors import ConfigError

_LISTENER_RE = re.compile(r"^(?P<name>[A-Za-z0-9_]+)://(?P<host>\[[^\]]*\]|[^:]*):(?P<port>\d+)$")


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True, slots=True)
class Listener:
    """One entry of ``listeners`` / ``advertised.listeners``: ``NAME://host:port``."""

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


def parse_listeners(value: str) -> list[Listener]:
    out: list[Listener] = []
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        m = _LISTENER_RE.match(item)
        if not m:
            raise ConfigError(f"invalid listener {item!r}: expected NAME://host:port")
        port = int(m["port"])
        if port > 65535:
            raise ConfigError(f"invalid listener {item!r}: port {port} is outside 0-65535")
        host = m["host"].strip("[]")
        out.append(Listener(m["name"].upper(), host, port))
    names = [lst.name for lst in out]
    if len(set(names)) != len(names):
        raise ConfigError(f"invalid listeners {value!r}: each listener name must be used once")
    return out


def check_listener_list(value: str) -> str | None:
    """The ``listeners`` / ``advertised.listeners`` validator of the definition table."""
    try:
        parse_listeners(value)
    except ConfigError as exc:
        return str(exc)
    return None


def parse_protocol_map(value: str) -> dict[str, str]:
    """``listener.security.protocol.map``: ``NAME:PROTOCOL,...``."""
    out: dict[str, str] = {}
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, proto = item.partition(":")
        proto = proto.strip().upper()
        if not sep or not name.strip() or proto not in SECURITY_PROTOCOLS:
            raise ConfigError(f"Invalid value {value} for configuration listener.security.protocol.map: "
                              f"{item!r} is not NAME:PROTOCOL with PROTOCOL one of {', '.join(SECURITY_PROTOCOLS)}")
        out[name.strip().upper()] = proto
    return out


def parse_address(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT``) -> (host, port); ValueError with the reason otherwise."""
    host, sep, port = value.strip().rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]") or "127.0.0.1", int(port)
