"""A hanging transaction aborted from outside (KIP-664): Kafka 4.4's ``kafka-transactions`` tool
(org.apache.kafka.tools.TransactionsCommand) finds the open transaction with ``describe-producers`` and aborts
it with ``abort --start-offset`` (DescribeProducers, then Admin.abortTransaction: WriteTxnMarkers to the
partition's leader). A read_committed consumer, stuck behind the open transaction until then, goes on past it
and never sees its records. Against kafkalite and against Apache Kafka 4.4 alike."""
from __future__ import annotations

import subprocess
import uuid

import pytest
from harness import reference
from harness.broker import BrokerProcess
from harness.topics import create_topic


@pytest.fixture(autouse=True)
def _kafka_tools() -> None:
    why = reference.missing()   # Kafka 4.4's tools come with the reference broker's jars
    if why:
        from conftest import missing

        missing(why)


def transactions(bs: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(reference.java_command("org.apache.kafka.tools.TransactionsCommand",
                                                 "--bootstrap-server", bs, *args),
                          capture_output=True, text=True, timeout=120)


def read_committed(bs: str, topic: str, seconds: float = 4.0) -> list[tuple[int, bytes]]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bs, "group.id": f"abort-{uuid.uuid4().hex[:6]}",
                  "isolation.level": "read_committed", "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        out: list[tuple[int, bytes]] = []
        import time
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:   # _PARTITION_EOF: at the last stable offset
                    break
                raise AssertionError(m.error())
            out.append((m.offset(), m.value()))
        return out
    finally:
        c.close()


def test_kafka_transactions_aborts_a_hanging_transaction(broker: BrokerProcess) -> None:
    from confluent_kafka import Producer

    bs = broker.bootstrap
    topic = f"hanging-{uuid.uuid4().hex[:6]}"
    create_topic(bs, topic, 1)
    plain = Producer({"bootstrap.servers": bs, "enable.idempotence": True})
    plain.produce(topic, b"before", partition=0)
    plain.flush(30)
    txn = Producer({"bootstrap.servers": bs, "transactional.id": f"hang-{uuid.uuid4().hex[:6]}",
                    "transaction.timeout.ms": 600_000})
    txn.init_transactions(30)
    txn.begin_transaction()
    for v in (b"t1", b"t2", b"t3"):
        txn.produce(topic, v, partition=0)
    txn.flush(30)   # written, never committed: open for the next ten minutes
    plain.produce(topic, b"after", partition=0)
    plain.flush(30)
    assert [v for _, v in read_committed(bs, topic)] == [b"before"]   # held at the open transaction

    p = transactions(bs, "describe-producers", "--topic", topic, "--partition", "0")
    assert p.returncode == 0, p.stderr[-3000:]
    rows = [line.split() for line in p.stdout.splitlines()[1:] if line.strip()]
    open_rows = [r for r in rows if r[-1] != "None"]   # CurrentTransactionStartOffset
    assert len(open_rows) == 1 and open_rows[0][-1] == "1", p.stdout

    p = transactions(bs, "abort", "--topic", topic, "--partition", "0", "--start-offset", "1")
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    assert [v for _, v in read_committed(bs, topic)] == [b"before", b"after"]
    p = transactions(bs, "describe-producers", "--topic", topic, "--partition", "0")
    assert p.returncode == 0 and all(line.split()[-1] == "None" for line in p.stdout.splitlines()[1:]
                                     if line.strip()), p.stdout
    # the tool refuses an offset no open transaction starts at
    p = transactions(bs, "abort", "--topic", topic, "--partition", "0", "--start-offset", "2")
    assert p.returncode != 0
    txn.abort_transaction(30)   # the producer's own end of it changes nothing for the readers
    assert [v for _, v in read_committed(bs, topic)] == [b"before", b"after"]
