"""``kafkalite serve``: run the broker.

    kafkalite serve [--config FILE] [--override K=V ...] [--listen HOST:PORT] [--data-dir DIR]
                    [--emulate-kafka X.Y] [--metrics [HOST:PORT]] [--console [HOST:PORT]]
                    [--control [HOST:PORT] [--control-allow-remote]] [--schema-registry [HOST:PORT]]
                    [--brokers N]
                    [--log-level LEVEL] [--logger NAME=LEVEL ...]

Prints exactly one line to stdout, ``kafkalite ready on HOST:PORT`` (first listener; flushed), once clients
can connect (``--brokers N``: N brokers in this process, ``kafkalite ready on H:P,H:P,...``, one address per
broker, ports PORT, PORT+1, ... when ``--listen`` names one, data in ``DIR/broker-<id>``); logs go to stderr (with ``--metrics`` / ``--console``, one INFO line says where each is).
SIGINT/SIGTERM drain gracefully and close storage cleanly.
"""
from __future__ import annotations

import argparse
import gc
import logging
import signal
import sys
from typing import Any

from kafkalite.config.broker import BrokerConfig, parse_overrides
from kafkalite.config.releases import RELEASES
from kafkalite.errors import USAGE, ConfigError, describe

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def configure(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--config", metavar="FILE", help="a Kafka server.properties file")
    serve.add_argument("--override", metavar="K=V", action="append", default=[],
                       help="set a broker property (repeatable)")
    serve.add_argument("--listen", metavar="HOST:PORT", help="listen address (port 0 picks a free port)")
    serve.add_argument("--data-dir", metavar="DIR", help="log directory (log.dirs)")
    serve.add_argument("--emulate-kafka", metavar="X.Y", choices=sorted(RELEASES),
                       help="advertise only the API versions of this Kafka release")
    serve.add_argument("--metrics", metavar="HOST:PORT", nargs="?", const="127.0.0.1:9404",
                       help="serve Prometheus /metrics and /health here (default address 127.0.0.1:9404; "
                            "off unless given)")
    serve.add_argument("--console", metavar="HOST:PORT", nargs="?", const="127.0.0.1:8080",
                       help="serve the web console here (default address 127.0.0.1:8080; off unless given)")
    serve.add_argument("--control", metavar="HOST:PORT", nargs="?", const="127.0.0.1:9405",
                       help="serve the HTTP fault/cluster control API here (default address 127.0.0.1:9405; "
                            "off unless given; loopback only unless --control-allow-remote)")
    serve.add_argument("--control-allow-remote", action="store_true",
                       help="let --control bind a non-loopback address (anyone reaching it can inject faults)")
    serve.add_argument("--schema-registry", metavar="HOST:PORT", nargs="?", const="127.0.0.1:8081",
                       help="serve a Confluent-compatible Schema Registry here, kept in the _schemas topic (default "
                            "address 127.0.0.1:8081; off unless given)")
    serve.add_argument("--brokers", metavar="N", type=int, default=1,
                       help="run N brokers in this process with replicated partitions (kafkalite.cluster)")
    serve.add_argument("--log-level", default="INFO",
                       help=f"logging level: {', '.join(LOG_LEVELS)} (default INFO)")
    serve.add_argument("--logger", metavar="NAME=LEVEL", action="append", default=[],
                       help="the level of one logger, e.g. kafka.request.logger=DEBUG (one line per request) or "
                            "kafkalite.coordinator=DEBUG; TRACE, DEBUG, INFO, WARN, ERROR, FATAL (repeatable; "
                            "changeable at run time with kafka-configs --entity-type broker-loggers)")


def config_from_args(args: argparse.Namespace) -> BrokerConfig:
    overrides = parse_overrides(args.override)
    if args.listen:
        host, sep, port = args.listen.rpartition(":")
        if not sep or not port.isdigit():
            raise ConfigError(f"--listen {args.listen!r}: expected HOST:PORT")
        if int(port) > 65535:
            raise ConfigError(f"--listen {args.listen!r}: port {port} is outside 0-65535")
        overrides["listeners"] = f"PLAINTEXT://{host}:{port}"
    if args.data_dir:
        overrides["log.dirs"] = args.data_dir
    if args.emulate_kafka:
        overrides["kafkalite.emulate.kafka"] = args.emulate_kafka
    if getattr(args, "metrics", None):
        overrides["kafkalite.metrics.listen"] = args.metrics
    if getattr(args, "console", None):
        overrides["kafkalite.console.listen"] = args.console
    if getattr(args, "control", None):
        overrides["kafkalite.control.listen"] = args.control
    if getattr(args, "schema_registry", None):
        overrides["kafkalite.schema.registry.listen"] = args.schema_registry
    if getattr(args, "control_allow_remote", False):
        overrides["kafkalite.control.allow.remote"] = "true"
    return BrokerConfig.load(args.config, overrides)


async def _serve_until_signal(config: BrokerConfig, brokers: int = 1) -> None:
    import trio

    # serve only (tests import this module for config_from_args): the broker's GC policy
    from kafkalite.runtime.gcpolicy import allow_gc_freeze

    # serve only: the broker itself
    from kafkalite.server.serve import serve

    allow_gc_freeze()   # this process is the broker's own (an embedded Broker never freezes its host's heap)
    shutdown = trio.Event()
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            if brokers > 1:
                from pathlib import Path

                from kafkalite.cluster import serve_cluster  # --brokers N only: not at start of one broker

                values = dict(config.values)
                data_dir = Path(values.pop("log.dirs", None) or config.log_dir)
                cluster = await nursery.start(lambda task_status: serve_cluster(
                    brokers, values, data_dir, shutdown=shutdown, task_status=task_status))
                sys.stdout.write(f"kafkalite ready on {cluster.bootstrap_servers}\n")
            else:
                addrs = await nursery.start(lambda task_status: serve(config, shutdown=shutdown,
                                                                       task_status=task_status))
                host, port = addrs[0]
                shown = f"[{host}]" if ":" in host else host
                sys.stdout.write(f"kafkalite ready on {shown}:{port}\n")
            sys.stdout.flush()
            # Everything allocated so far (modules, classes, config, topic table) lives as long as the
            # process: move it out of the collector's reach, so a full collection later scans only what
            # requests allocate (a gen-2 pass over the startup heap took ~15 ms, a latency outlier). The collector
            # was off while the broker started (kafkalite.cli._serve): on from here; the start's little cyclic
            # garbage (~2,000 objects, measured with gc.collect() here) is frozen with the rest.
            gc.freeze()
            gc.enable()
            # freed request buffers go back to the OS once enough of them are free (kafkalite.runtime.malloc)
            from kafkalite.runtime.malloc import heap_trimmer, trim_loop

            trimmer = heap_trimmer()
            trimming = trio.CancelScope()
            if trimmer is not None:
                nursery.start_soon(_in_scope, trimming, trim_loop, trimmer)
            async for signum in signals:
                logging.getLogger("kafkalite").info("received %s; shutting down",
                                                   signal.Signals(signum).name)
                shutdown.set()
                break
            trimming.cancel()   # the broker drains and closes on its own


async def _in_scope(scope: Any, fn: Any, *args: Any) -> None:
    with scope:
        await fn(*args)


def _fail(code: int, message: str) -> int:
    for line in message.splitlines() or [message]:
        sys.stderr.write(f"kafkalite: error: {line}\n")
    sys.stderr.flush()
    return code


def _set_logger_levels(specs: list[str]) -> str | None:
    """``--logger NAME=LEVEL`` (Kafka's level names, or Python's WARNING/CRITICAL); the first bad one's message."""
    from kafkalite import loggers  # the CLI imports only the command being run: the broker's modules on use

    for spec in specs:
        name, sep, value = spec.partition("=")
        level = value.strip().upper()
        number = loggers.KAFKA_LEVELS.get(level) or {"WARNING": logging.WARNING,
                                                     "CRITICAL": logging.CRITICAL}.get(level)
        if not sep or not name.strip() or number is None:
            return (f"--logger {spec!r}: expected NAME=LEVEL with LEVEL one of "
                    f"{', '.join(sorted(loggers.KAFKA_LEVELS))}")
        if number == loggers.TRACE:
            logging.addLevelName(loggers.TRACE, "TRACE")
        logging.getLogger(None if name.strip() == loggers.ROOT else name.strip()).setLevel(number)
    return None


def run(args: argparse.Namespace) -> int:
    """Exit codes: 0 after a clean shutdown, 2 for a usage or configuration error, 1 when the broker could
    not run (address in use, data dir held by another broker, ...); each failure is one line on stderr."""
    level = str(args.log_level).upper()
    if level == "WARN":
        level = "WARNING"
    if level not in LOG_LEVELS:
        return _fail(USAGE, f"--log-level {args.log_level!r}: expected one of {', '.join(LOG_LEVELS)}")
    logging.basicConfig(level=getattr(logging, level), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    why = _set_logger_levels(args.logger)
    if why:
        return _fail(USAGE, why)
    try:
        config = config_from_args(args)
    except ConfigError as exc:
        return _fail(USAGE, str(exc))
    brokers = getattr(args, "brokers", 1)
    brokers = 1 if brokers is None else brokers
    if brokers < 1 or brokers > 64:
        return _fail(USAGE, f"--brokers {brokers}: expected 1-64")
    import trio

    # The event loop shares the GIL with the housekeeping worker threads (checkpoints, cleaner, retention):
    # a thread that holds it keeps every connection waiting for up to the switch interval (5 ms by
    # default), which a tailing consumer sees as latency. The broker owns this process, so ask for 1 ms.
    sys.setswitchinterval(0.001)
    try:
        trio.run(_serve_until_signal, config, brokers)
    except (Exception, ExceptionGroup) as exc:
        known = describe(exc)
        if known is None:
            raise       # a genuine bug: the traceback is the report
        logging.getLogger("kafkalite").debug("startup failure", exc_info=exc)
        code, message = known
        return _fail(code, f"cannot start: {message}" if code != USAGE else message)
    return 0


