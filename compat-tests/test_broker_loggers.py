"""Broker loggers at run time (KIP-412) through Kafka 4.4's own tool, ``kafka-configs --entity-type broker-loggers``
(org.apache.kafka.tools.ConfigCommand), against the broker under test: the listing, a level changed and shown,
the tool's refusal of a logger the broker does not have, the root logger's level that cannot be deleted; and on
kafkalite, ``kafka.request.logger`` at DEBUG writing one line per request to the broker's log."""
from __future__ import annotations

import subprocess
import time

import pytest
from harness import reference
from harness.broker import BrokerProcess

from kafkalite_wire import messages as m


@pytest.fixture(autouse=True)
def _kafka_tools() -> None:
    why = reference.missing()   # Kafka 4.4's tools come with the reference broker's jars
    if why:
        from conftest import missing

        missing(why)


def configs(bs: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(reference.java_command("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", bs,
                                                 "--entity-type", "broker-loggers", "--entity-name", "1", *args),
                          capture_output=True, text=True, timeout=120)


def levels(bs: str) -> dict[str, str]:
    p = configs(bs, "--describe")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "Dynamic configs for broker-logger 1 are:" in p.stdout
    out = {}
    for line in p.stdout.splitlines()[1:]:
        name, _, rest = line.strip().partition("=")
        out[name] = rest.split(" ", 1)[0]
    return out


def test_kafka_configs_describes_and_alters_broker_loggers(broker: BrokerProcess) -> None:
    bs = broker.bootstrap
    before = levels(bs)
    assert before.get("root") in {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"}, before
    p = configs(bs, "--alter", "--add-config", "root=WARN")
    assert p.returncode == 0 and "Completed updating config for broker-logger 1" in p.stdout, p.stderr[-3000:]
    assert levels(bs)["root"] == "WARN"
    p = configs(bs, "--alter", "--add-config", "no.such.logger=DEBUG")   # the tool checks against the listing
    assert p.returncode != 0 and "Invalid broker logger(s): no.such.logger" in p.stderr + p.stdout
    p = configs(bs, "--alter", "--delete-config", "root")
    assert p.returncode != 0 and "Removing the log level of the root logger is not allowed" in p.stderr + p.stdout
    p = configs(bs, "--alter", "--add-config", f"root={before['root']}")
    assert p.returncode == 0, p.stderr[-3000:]
    assert levels(bs)["root"] == before["root"]


@pytest.mark.kafkalite_only("kafka.request.logger's lines go to kafkalite's log here; the reference's log4j "
                            "configuration does not define that logger")
def test_request_logger_at_debug_logs_each_request(broker: BrokerProcess) -> None:
    from differential.wireconn import WireConn

    bs = broker.bootstrap
    assert levels(bs)["kafka.request.logger"] == "WARN"   # off by default, as Kafka ships it
    p = configs(bs, "--alter", "--add-config", "kafka.request.logger=DEBUG")
    assert p.returncode == 0, p.stderr[-3000:]
    try:
        with WireConn(bs) as conn:
            conn.request(m.ApiVersionsRequest(client_software_name="loggers-test", client_software_version="1"), 3)
        deadline = time.monotonic() + 10
        text = ""
        while time.monotonic() < deadline and "Completed request: ApiVersions v3" not in text:
            time.sleep(0.1)
            text = broker.log_path.read_text(errors="replace")
        line = next(x for x in text.splitlines() if "Completed request: ApiVersions v3" in x)
        assert "kafka.request.logger" in line and "principal User:ANONYMOUS" in line and " ms" in line, line
    finally:
        p = configs(bs, "--alter", "--delete-config", "kafka.request.logger")
        assert p.returncode == 0, p.stderr[-3000:]
    assert levels(bs)["kafka.request.logger"] == levels(bs)["root"]   # deleted: inherits again
