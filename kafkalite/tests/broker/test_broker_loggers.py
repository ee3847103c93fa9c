"""Broker loggers (KIP-412, ``kafkalite.loggers``) and ``kafka.request.logger``: DescribeConfigs and
IncrementalAlterConfigs on resource type 8 change the process's logging as Kafka's broker does (the answers and
messages are compared with Kafka 4.4 by compat-tests/differential, the tool by compat-tests/test_broker_loggers.py)."""
from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from kafkalite import loggers
from kafkalite.embedded import Broker
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
    MetadataRequest,
)

IAC = IncrementalAlterConfigsRequest


@pytest.fixture
def levels_restored() -> Iterator[None]:
    saved = {name: logging.getLogger(name).level for name in (loggers.REQUEST_LOGGER, "kafkalite")}
    yield
    for name, level in saved.items():
        logging.getLogger(name).setLevel(level)


def _alter(c: RawClient, *ops: tuple[str, int, str | None], validate_only: bool = False,
           name: str = "1") -> tuple[int, str | None]:
    r = c.request(IAC(resources=[IAC.AlterConfigsResource(resource_type=8, resource_name=name, configs=[
        IAC.AlterableConfig(name=n, config_operation=op, value=v) for n, op, v in ops])],
        validate_only=validate_only), 1)
    return r.responses[0].error_code, r.responses[0].error_message


def _levels(c: RawClient, keys: list[str] | None = None) -> dict[str, str]:
    r = c.request(DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=8, resource_name="1", configuration_keys=keys)]), 4)
    res = r.results[0]
    assert res.error_code == 0, res
    assert all(e.config_source == 6 and not e.read_only and not e.is_sensitive for e in res.configs)
    return {e.name: e.value for e in res.configs}


def test_loggers_listed_changed_and_request_lines_logged(levels_restored: None,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    with Broker() as b, RawClient(b.host, b.port) as c:
        listed = _levels(c)
        assert next(iter(listed)) == "root" and listed[loggers.REQUEST_LOGGER] == "WARN"
        assert "kafkalite.server.connection" in listed
        assert _levels(c, ["kafkalite", "no.such.logger"]).keys() == {"kafkalite"}
        caplog.set_level(logging.DEBUG, logger=loggers.REQUEST_LOGGER)   # the handler; the level is the broker's
        logging.getLogger(loggers.REQUEST_LOGGER).setLevel(logging.WARNING)
        c.request(MetadataRequest(topics=[]), 12)
        assert not [r for r in caplog.records if r.name == loggers.REQUEST_LOGGER]

        assert _alter(c, (loggers.REQUEST_LOGGER, 0, "DEBUG"), validate_only=True) == (0, None)
        assert _levels(c, [loggers.REQUEST_LOGGER])[loggers.REQUEST_LOGGER] == "WARN"   # validate only
        assert _alter(c, (loggers.REQUEST_LOGGER, 0, "DEBUG")) == (0, None)
        c.request(MetadataRequest(topics=[]), 12)
        lines = [r.getMessage() for r in caplog.records if r.name == loggers.REQUEST_LOGGER]
        assert any(x.startswith("Completed request: Metadata v12 correlation id ") and "listener" in x
                   and "; request: " not in x for x in lines), lines

        caplog.clear()
        assert _alter(c, (loggers.REQUEST_LOGGER, 0, "TRACE")) == (0, None)
        c.request(MetadataRequest(topics=[]), 12)
        lines = [r.getMessage() for r in caplog.records if r.name == loggers.REQUEST_LOGGER]
        assert any("; request: MetadataRequest(" in x for x in lines), lines

        # deleted: the logger inherits its parent's level again
        assert _alter(c, (loggers.REQUEST_LOGGER, 1, None)) == (0, None)
        root = _levels(c, ["root"])["root"]
        assert _levels(c, [loggers.REQUEST_LOGGER])[loggers.REQUEST_LOGGER] == root


def test_bad_alterations_change_nothing(levels_restored: None) -> None:
    with Broker() as b, RawClient(b.host, b.port) as c:
        before = _levels(c, ["kafkalite"])
        # one bad entry refuses the whole resource: the good one before it is not applied
        code, msg = _alter(c, ("kafkalite", 0, "TRACE"), ("no.such.logger", 0, "DEBUG"))
        assert (code, msg) == (ErrorCode.INVALID_CONFIG, "Logger no.such.logger does not exist!")
        assert _levels(c, ["kafkalite"]) == before
        assert _alter(c, ("kafkalite", 0, "warning"))[0] == ErrorCode.INVALID_CONFIG
        assert _alter(c, ("root", 1, None)) == (ErrorCode.INVALID_REQUEST,
                                                "Removing the log level of the root logger is not allowed")
        assert _alter(c, ("kafkalite", 3, "INFO"))[0] == ErrorCode.INVALID_REQUEST
        assert _alter(c, ("kafkalite", 0, "INFO"), name="7") == (
            ErrorCode.INVALID_REQUEST, "Unexpected node id. Expected 1, but received 7")
        assert _levels(c, ["kafkalite"]) == before


def test_kafka_level_names() -> None:
    assert [loggers.kafka_level(n) for n in (1, 5, 10, 15, 20, 30, 40, 50, 60)] == [
        "TRACE", "TRACE", "DEBUG", "INFO", "INFO", "WARN", "ERROR", "FATAL", "FATAL"]
