"""``kafkalite produce`` / ``consume`` under the option names of Kafka 4.4's console tools (``--command-property``,
``--producer-property``, ``--producer.config``, ``--reader-property``/``--reader-config``, ``--request-required-acks``,
``--formatter-property``/``--formatter-config`` with DefaultMessageFormatter's keys and deserializers), and
``consume`` on a topic that does not exist yet: created as Kafka's consumer gets it created, or waited for."""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite.embedded import Broker
from kafkalite.tests.support.tools_helpers import cli, need_confluent


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker() as b:
        yield b


@pytest.fixture(scope="module")
def bs(broker: Broker) -> str:
    return broker.bootstrap_servers


def _batch_attributes(broker: Broker, topic: str) -> list[int]:
    """The attributes (int16 at byte 21) of every stored batch of partition 0: bits 0-2 are the codec."""
    data = (broker.data_dir / f"{topic}-0" / ("0" * 20 + ".log")).read_bytes()
    attrs, pos = [], 0
    while pos + 61 <= len(data):
        attrs.append(int.from_bytes(data[pos + 21:pos + 23], "big"))
        pos += 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
    return attrs


def test_producer_option_names(broker: Broker, bs: str, tmp_path: Path) -> None:
    need_confluent()
    assert cli(bs, "topics", "--create", "--topic", "names").code == 0
    config = tmp_path / "producer.properties"
    config.write_text("linger.ms=0\n")
    reader = tmp_path / "reader.properties"
    reader.write_text("parse.key=true\nkey.separator=:\n")
    r = cli(bs, "produce", "--topic", "names", "--producer.config", str(config), "--command-property",
            "client.id=names-test", "--producer-property", "batch.num.messages=10", "--request-required-acks", "1",
            "--reader-config", str(reader), "--compression-codec", stdin=b"k1:v1\nk2:v2\n" + b"k:" + b"z" * 500 + b"\n")
    assert r.code == 0, r.err
    # --compression-codec alone is gzip (codec 1), as in Kafka's console producer (a batch that compresses well:
    # librdkafka sends a batch uncompressed when gzip would not make it smaller)
    assert {a & 0x7 for a in _batch_attributes(broker, "names")} == {1}
    r = cli(bs, "produce", "--topic", "names", "--reader-property", "parse.key=true", "key.separator=|",
            stdin=b"k3|v3\n")
    assert r.code == 0, r.err
    r = cli(bs, "consume", "--topic", "names", "--from-beginning", "--max-messages", "3",
            "--formatter-property", "print.key=true", "key.separator==")
    assert r.code == 0, r.err
    assert r.out.splitlines() == ["k1=v1", "k2=v2", "k=" + "z" * 500]
    r = cli(bs, "consume", "--topic", "names", "--offset", "3", "--max-messages", "1", "--property", "print.key=true")
    assert r.code == 0 and r.out == "k3\tv3\n", r.err
    # a bad client property names itself
    r = cli(bs, "produce", "--topic", "names", "--command-property", "no-equals-sign")
    assert r.code == 2 and "'no-equals-sign': expected KEY=VALUE" in r.err


def test_formatter_properties_as_kafka_prints_them(bs: str, tmp_path: Path) -> None:
    ck = need_confluent()
    assert cli(bs, "topics", "--create", "--topic", "fmt").code == 0
    p = ck.Producer({"bootstrap.servers": bs})
    p.produce("fmt", key=(7).to_bytes(4, "big"), value=(-2).to_bytes(8, "big", signed=True), headers=[("h", b"x")],
              timestamp=1_700_000_000_000)
    p.produce("fmt", key=None, value=(5).to_bytes(8, "big"), timestamp=1_700_000_000_001)
    assert p.flush(10) == 0
    formatter = tmp_path / "formatter.properties"
    formatter.write_text("print.timestamp=true\nprint.partition=true\n")
    r = cli(bs, "consume", "--topic", "fmt", "--from-beginning", "--max-messages", "2", "--formatter-config",
            str(formatter), "--formatter-property", "print.offset=true", "print.epoch=true", "print.delivery=true",
            "print.headers=true", "print.key=true", "key.deserializer=org.apache.kafka.common.serialization."
            "IntegerDeserializer", "value.deserializer=org.apache.kafka.common.serialization.LongDeserializer",
            "--consumer-property", "client.id=fmt-test", "--command-property", "fetch.wait.max.ms=10")
    assert r.code == 0, r.err
    # DefaultMessageFormatter's order: timestamp, partition, offset, delivery, epoch, headers, key, value
    assert r.out.splitlines() == [
        "CreateTime:1700000000000\tPartition:0\tOffset:0\tDelivery:NOT_PRESENT\tEpoch:0\th:x\t7\t-2",
        "CreateTime:1700000000001\tPartition:0\tOffset:1\tDelivery:NOT_PRESENT\tEpoch:0\tNO_HEADERS\tnull\t5"]
    # every field off: Kafka's formatter prints nothing for a record
    r = cli(bs, "consume", "--topic", "fmt", "--from-beginning", "--max-messages", "2", "--property",
            "print.value=false")
    assert (r.code, r.out) == (0, "")
    # a value of the wrong width for the deserializer, an unknown deserializer
    r = cli(bs, "consume", "--topic", "fmt", "--from-beginning", "--max-messages", "1", "--formatter-property",
            "value.deserializer=org.apache.kafka.common.serialization.IntegerDeserializer")
    assert r.code == 1 and "partition 0 offset 0: 8 bytes, IntegerDeserializer reads 4" in r.err
    r = cli(bs, "consume", "--topic", "fmt", "--formatter-property", "key.deserializer=com.example.Custom")
    assert r.code == 2 and "key.deserializer=com.example.Custom: unknown" in r.err


def test_consume_on_a_missing_topic_gets_it_created_like_kafkas_consumer(bs: str) -> None:
    """With the broker's auto.create.topics.enable (the default) Kafka's consumer, which asks with
    allow.auto.create.topics=true, gets a missing topic created; so does ours, then it waits for records."""
    need_confluent()
    r = cli(bs, "consume", "--topic", "appears-on-ask", "--timeout-ms", "500")
    assert (r.code, r.out, r.err) == (0, "", "Processed a total of 0 messages\n")
    assert "appears-on-ask" in cli(bs, "topics", "--list").out.split()


@pytest.fixture(scope="module")
def no_autocreate() -> Iterator[Broker]:
    with Broker(overrides={"auto.create.topics.enable": "false"}) as b:
        yield b


def test_consume_waits_for_a_topic_the_broker_does_not_create(no_autocreate: Broker) -> None:
    need_confluent()
    bs = no_autocreate.bootstrap_servers
    # --timeout-ms bounds the wait: one line says what it waits for, nothing is created
    r = cli(bs, "consume", "--topic", "later", "--timeout-ms", "300")
    assert r.code == 0 and r.out == ""
    assert r.err.splitlines() == ["Topic 'later' does not exist yet: waiting for it (Ctrl-C to stop, or "
                                  "--timeout-ms 300)", "Processed a total of 0 messages"]
    assert "later" not in cli(bs, "topics", "--list").out.split()
    # without it, the tool waits until the topic is created, then reads it
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "kafkalite", "consume", "--bootstrap-server", bs, "--topic",
                             "later", "--from-beginning", "--max-messages", "1"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline() == "Topic 'later' does not exist yet: waiting for it (Ctrl-C to stop)\n"
        assert cli(bs, "topics", "--create", "--topic", "later").code == 0
        assert cli(bs, "produce", "--topic", "later", stdin=b"finally\n").code == 0
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert (proc.returncode, out, err) == (0, "finally\n", "Processed a total of 1 messages\n")
