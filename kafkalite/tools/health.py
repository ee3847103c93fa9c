"""``kafkalite health``: is the broker on this machine up? For container health checks (the image's
HEALTHCHECK runs it) and scripts.

    kafkalite health [--url URL] [--timeout SECONDS] [--config FILE] [--override K=V ...]

With metrics enabled (``--metrics``, ``KAFKALITE_METRICS_LISTEN``, ``kafkalite.metrics.listen``) it asks the
broker's ``GET /health``: 200 while serving, 503 once it drains for shutdown (a container then counts as
unhealthy rather than taking new clients). Without metrics it opens a TCP connection to the first listener,
which is all a Kafka client needs to start. The addresses come from the same configuration ``kafkalite
serve`` reads (file, ``--override``, ``KAFKALITE_*`` environment), a wildcard host meaning this machine.
Exit 0 healthy, 1 not (one line on stderr saying why), 2 a usage or configuration error.
"""
from __future__ import annotations

import argparse
import socket
import sys
import urllib.error
import urllib.request

from kafkalite.config.addresses import parse_address
from kafkalite.config.broker import BrokerConfig, parse_overrides
from kafkalite.config.sidecars import METRICS_LISTEN
from kafkalite.errors import ConfigError

_WILDCARD = {"", "0.0.0.0", "::", "[::]"}


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", help="ask this URL instead (e.g. http://127.0.0.1:9404/health)")
    p.add_argument("--timeout", type=float, default=3.0, help="seconds before giving up (default 3)")
    p.add_argument("--config", metavar="FILE", help="a Kafka server.properties file (as for serve)")
    p.add_argument("--override", metavar="K=V", action="append", default=[], help="a broker property")


def _local(host: str) -> str:
    host = host.strip("[]") if host not in _WILDCARD else ""
    if not host:
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def target(args: argparse.Namespace) -> tuple[str, str]:
    """("http", url) or ("tcp", "host:port"): what to ask, from --url or the broker's configuration."""
    if args.url:
        return "http", args.url
    config = BrokerConfig.load(args.config, parse_overrides(args.override))
    metrics = config.get(METRICS_LISTEN)
    if metrics:
        host, port = parse_address(metrics)
        return "http", f"http://{_local(host)}:{port}/health"
    first = config.listeners()[0]
    return "tcp", f"{_local(first.host)}:{first.port}"


def run(args: argparse.Namespace) -> int:
    try:
        kind, where = target(args)
    except (ConfigError, ValueError) as exc:
        print(f"kafkalite health: error: {exc}", file=sys.stderr)
        return 2
    if kind == "tcp":
        host, _, port = where.rpartition(":")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=args.timeout).close()
        except OSError as exc:
            print(f"kafkalite health: {where}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        print(f"ok (listener {where} accepts connections)")
        return 0
    try:
        with urllib.request.urlopen(where, timeout=args.timeout) as resp:
            body = resp.read(256).decode("utf-8", "replace").strip()
    except urllib.error.HTTPError as exc:
        print(f"kafkalite health: {where}: {exc.code} {exc.read(256).decode('utf-8', 'replace').strip()}",
              file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as exc:
        print(f"kafkalite health: {where}: {getattr(exc, 'reason', exc)}", file=sys.stderr)
        return 1
    print(f"{body} ({where})")
    return 0
