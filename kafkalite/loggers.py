"""The broker's loggers as Kafka's BROKER_LOGGER config resource (KIP-412), and Kafka's request logger.

``kafka-configs --entity-type broker-loggers --entity-name 1 --describe`` lists every logger of the broker
process with its effective level; ``--alter --add-config NAME=LEVEL`` / ``--delete-config NAME`` change one
at run time (DescribeConfigs / IncrementalAlterConfigs on resource type 8). As in Kafka the change lives in
memory only (a restart goes back to the configured levels), levels are Kafka's names (TRACE, DEBUG, INFO,
WARN, ERROR, FATAL; Python's WARNING and CRITICAL are shown as WARN and FATAL), deleting a logger's level makes
it inherit again, and the root logger's level cannot be deleted. The answers, errors and messages are Kafka
4.4's (compared by ``compat-tests/differential``). Python's logging is per process: in a ``--brokers N`` cluster
run in one process, a change made through one broker applies to all of them.

``kafka.request.logger`` is Kafka's name for the per-request log, and kafkalite's too: at DEBUG one line per
completed request (API and version, correlation and client id, connection, principal, listener, size, time,
throttle), at TRACE the decoded request as well. It starts at WARN, as Kafka's shipped log4j configuration
sets it, so ``--log-level DEBUG`` alone does not turn it on: ``kafka-configs ... --add-config
kafka.request.logger=DEBUG`` does, or ``logging.getLogger("kafka.request.logger").setLevel("DEBUG")`` in an
embedded broker's process.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from kafkalite_wire.errors import ErrorCode

REQUEST_LOGGER = "kafka.request.logger"
request_log = logging.getLogger(REQUEST_LOGGER)
request_log.setLevel(logging.WARNING)

TRACE = 5
#: Kafka's LogLevelConfig.VALID_LOG_LEVELS, in the order its error message lists them
KAFKA_LEVELS = {"DEBUG": logging.DEBUG, "ERROR": logging.ERROR, "FATAL": logging.CRITICAL, "INFO": logging.INFO,
                "TRACE": TRACE, "WARN": logging.WARNING}
ROOT = "root"
DYNAMIC_BROKER_LOGGER_CONFIG = 6   # ConfigSource
_UNKNOWN_TYPE = 0                  # ConfigType: Kafka gives logger entries no type
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def kafka_level(levelno: int) -> str:
    """Kafka's name for a Python level (a level between two of Kafka's takes the more verbose one's name)."""
    for name, number in (("TRACE", TRACE), ("DEBUG", logging.DEBUG), ("INFO", logging.INFO),
                         ("WARN", logging.WARNING), ("ERROR", logging.ERROR)):
        if levelno <= number:
            return name
    return "FATAL"


def _logger(name: str) -> logging.Logger:
    return logging.getLogger() if name == ROOT else logging.getLogger(name)


def logger_names() -> list[str]:
    """Every logger the process has (intermediate names included), root first, the rest sorted."""
    return [ROOT, *sorted(logging.Logger.manager.loggerDict)]


def exists(name: str) -> bool:
    return name == ROOT or name in logging.Logger.manager.loggerDict


def describe(keys: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """(logger, Kafka level name) of every logger, or of those of ``keys`` that exist."""
    names = logger_names() if keys is None else [k for k in keys if exists(k)]
    return [(n, kafka_level(_logger(n).getEffectiveLevel())) for n in names]


def node_id_error(resource_name: str, node_id: int, *, describing: bool) -> tuple[int, str | None]:
    """Kafka's INVALID_REQUEST for a BROKER_LOGGER resource that does not name this broker (its wording differs
    between DescribeConfigs and IncrementalAlterConfigs)."""
    word, Word = ("broker", "Broker") if describing else ("node", "Node")
    if describing and resource_name == "":
        return ErrorCode.INVALID_REQUEST, "Broker id must not be empty"
    try:
        wanted = int(resource_name)
    except ValueError:
        return ErrorCode.INVALID_REQUEST, f"{Word} id must be an integer, but it is: {resource_name}"
    if wanted != node_id:
        if describing:
            return ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {node_id} but received {wanted}"
        return ErrorCode.INVALID_REQUEST, f"Unexpected {word} id. Expected {node_id}, but received {wanted}"
    return ErrorCode.NONE, None


def alter(configs: Sequence[Any], validate_only: bool) -> tuple[int, str | None]:
    """IncrementalAlterConfigs' ``configs`` (name, config_operation, value) on the loggers: every entry is
    checked before any is applied, as Kafka does; (error code, message)."""
    if len({c.name for c in configs}) != len(configs):
        return ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"
    changes: list[tuple[str, int]] = []
    for c in configs:
        op = c.config_operation
        if op in (APPEND, SUBTRACT):
            return ErrorCode.INVALID_REQUEST, \
                f"{'APPEND' if op == APPEND else 'SUBTRACT'} operation is not allowed for the BROKER_LOGGER resource"
        if op == SET:
            if c.value is None:
                return ErrorCode.INVALID_REQUEST, f"Null value not supported for : {c.name}"
            if not exists(c.name):
                return ErrorCode.INVALID_CONFIG, f"Logger {c.name} does not exist!"
            if c.value not in KAFKA_LEVELS:
                return ErrorCode.INVALID_CONFIG, (
                    f"Cannot set the log level of {c.name} to {c.value} as it is not a supported log level. "
                    f"Valid log levels are {', '.join(KAFKA_LEVELS)}")
            changes.append((c.name, KAFKA_LEVELS[c.value]))
        elif op == DELETE:
            if not exists(c.name):
                return ErrorCode.INVALID_CONFIG, f"Logger {c.name} does not exist!"
            if c.name == ROOT:
                return ErrorCode.INVALID_REQUEST, "Removing the log level of the root logger is not allowed"
            changes.append((c.name, logging.NOTSET))
        else:
            return ErrorCode.INVALID_REQUEST, f"Unknown config operation {op}"
    if not validate_only:
        for name, level in changes:
            if level == TRACE and logging.getLevelName(TRACE) != "TRACE":
                logging.addLevelName(TRACE, "TRACE")
            _logger(name).setLevel(level)
            logging.getLogger(__name__).info("log level of %s set to %s", name,
                                             kafka_level(_logger(name).getEffectiveLevel()) if level else
                                             f"{kafka_level(_logger(name).getEffectiveLevel())} (inherited)")
    return ErrorCode.NONE, None
