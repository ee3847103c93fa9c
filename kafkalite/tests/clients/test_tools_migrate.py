"""``kafkalite migrate`` between two embedded kafkalite brokers (any Kafka-compatible broker can be the target; the
3-node Apache Kafka target is ``compat-tests/test_migrate.py``): a full run with --verify, a second run that
copies only what the source gained (no duplicate), a target partition written by someone else (the resume
check refuses it), a state directory of other clusters, and usage errors."""
from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite import Broker
from kafkalite.tests.support.tools_helpers import Result, need_confluent


def migrate(*argv: str) -> Result:
    from kafkalite.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        try:
            code = main(["migrate", *argv])
        except SystemExit as exc:
            code = int(exc.code or 0)
    finally:
        sys.stdout, sys.stderr = old
    return Result(code, out.getvalue(), err.getvalue())


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    need_confluent()
    src, dst = Broker().start(), Broker().start()
    try:
        yield src.bootstrap_servers, dst.bootstrap_servers, tmp_path / "state"
    finally:
        src.stop()
        dst.stop()


def _produce(bs: str, topic: str, values: list[bytes], partition: int = 0, **conf: object) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bs, **conf})
    for v in values:
        p.produce(topic, v, b"key-" + v, partition=partition, headers=[("h", v)])
    p.flush(30)


def _values(bs: str, topic: str, partition: int = 0) -> list[tuple[int, bytes]]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bs, "group.id": "t", "enable.partition.eof": True,
                  "isolation.level": "read_uncommitted"})
    out = []
    try:
        c.assign([TopicPartition(topic, partition, -2)])
        while True:
            m = c.poll(10)
            assert m is not None, "no end of partition"
            if m.error():
                break
            out.append((m.offset(), m.value()))
    finally:
        c.close()
    return out


def test_migrate_verify_and_migrate_again_copies_only_what_is_new(pair: tuple[str, str, Path]) -> None:
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    src, dst, state = pair
    a = AdminClient({"bootstrap.servers": src})
    for f in a.create_topics([NewTopic("t", 2, 1, config={"retention.ms": "604800000"})]).values():
        f.result(30)
    _produce(src, "t", [f"v{i}".encode() for i in range(50)])
    tx = Producer({"bootstrap.servers": src, "transactional.id": "x"})
    tx.init_transactions(30)
    tx.begin_transaction()
    tx.produce("t", b"aborted", partition=0)
    tx.flush(30)
    tx.abort_transaction(30)
    _produce(src, "t", [b"after-abort"])
    c = Consumer({"bootstrap.servers": src, "group.id": "g", "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition("t", 0, 52)], asynchronous=False)   # the record after the abort marker
    c.close()

    r = migrate("--from", src, "--to", dst, "--state-dir", str(state), "--verify", "--json")
    assert r.code == 0, r.out + r.err
    rep = r.json()
    assert rep["records"] == 52 and rep["verify"]["differences"] == []
    got = _values(dst, "t")
    assert [v for _o, v in got] == [f"v{i}".encode() for i in range(50)] + [b"aborted", b"after-abort"]
    # the aborted record went into an aborted transaction on the target, whose own ABORT marker usually lands
    # before the next record (then the offsets are kept); the committed offset points at "after-abort" anyway
    admin = AdminClient({"bootstrap.servers": dst})   # held: a collected client never completes its futures
    g = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g")])["g"].result(30)
    assert [(tp.partition, tp.offset) for tp in g.topic_partitions] == [(0, got[-1][0])]
    assert rep["topics"][0]["offsets"] == ("kept" if got[-1][0] == 52 else "mapped")

    _produce(src, "t", [b"new-1", b"new-2"])
    r2 = migrate("--from", src, "--to", dst, "--state-dir", str(state), "--json")
    assert r2.code == 0, r2.out + r2.err
    assert r2.json()["records"] == 2
    assert [v for _o, v in _values(dst, "t")][-3:] == [b"after-abort", b"new-1", b"new-2"]

    # someone writes the target partition, then the source grows and a run is killed before its journal
    # commit: the resume check refuses to call the stranger's record ours
    _produce(dst, "t", [b"stranger"])
    journal = state / "offsets.journal"
    text = journal.read_text()
    journal.write_text(text[:text.rindex("r t 0 ")] + "k\n")   # forget the last run of t-0
    r3 = migrate("--from", src, "--to", dst, "--state-dir", str(state))
    assert r3.code == 1 and "written by someone else" in r3.err, r3.out + r3.err


def test_dry_run_writes_nothing_and_a_foreign_state_dir_is_refused(pair: tuple[str, str, Path]) -> None:
    from confluent_kafka.admin import AdminClient

    src, dst, state = pair
    _produce(src, "d", [b"x"])
    r = migrate("--from", src, "--to", dst, "--state-dir", str(state), "--dry-run")
    assert r.code == 0 and "Dry run" in r.out and "topic d: create, 1 partition(s)" in r.out, r.out + r.err
    assert "d" not in AdminClient({"bootstrap.servers": dst}).list_topics(timeout=10).topics
    assert not state.exists()
    state.mkdir()
    (state / "migration.json").write_text(json.dumps({"source_cluster": "a", "target_cluster": "b"}))
    r2 = migrate("--from", src, "--to", dst, "--state-dir", str(state))
    assert r2.code == 1 and "is the state of a migration from cluster a to b" in r2.err


def test_usage_errors() -> None:
    need_confluent()
    assert migrate("--to", "h:1", "--verify", "--verify-only").code == 2
    assert migrate("--to", "h:1", "--scram-passwords", "p").code == 2
    bad = migrate("--to", "127.0.0.1:1", "--from", "127.0.0.1:1", "--timeout-ms", "2000")
    assert bad.code == 1 and "kafkalite migrate: error:" in bad.err


def test_a_target_partition_with_records_of_its_own_gets_a_map(pair: tuple[str, str, Path]) -> None:
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    src, dst, state = pair
    _produce(src, "shared", [f"s{i}".encode() for i in range(10)])
    _produce(dst, "shared", [b"theirs-0", b"theirs-1", b"theirs-2"])
    c = Consumer({"bootstrap.servers": src, "group.id": "g2", "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition("shared", 0, 4)], asynchronous=False)
    c.close()
    r = migrate("--from", src, "--to", dst, "--state-dir", str(state), "--json", "--verify")
    assert r.code == 0, r.out + r.err
    assert r.json()["topics"][0]["offsets"] == "mapped"
    assert [v for _o, v in _values(dst, "shared")][3:] == [f"s{i}".encode() for i in range(10)]
    admin = AdminClient({"bootstrap.servers": dst})
    g = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g2")])["g2"].result(30)
    assert [(tp.partition, tp.offset) for tp in g.topic_partitions] == [(0, 7)], "source offset 4 + 3"


def test_an_open_transaction_is_waited_for_then_reported(pair: tuple[str, str, Path]) -> None:
    from confluent_kafka import Producer

    src, dst, state = pair
    _produce(src, "open", [b"before"])
    tx = Producer({"bootstrap.servers": src, "transactional.id": "still-open"})
    tx.init_transactions(30)
    tx.begin_transaction()
    tx.produce("open", b"undecided", partition=0)
    tx.flush(30)
    r = migrate("--from", src, "--to", dst, "--state-dir", str(state), "--transaction-wait", "1", "--no-progress")
    assert r.code == 1 and "open-0: a transaction is still open; copied up to its last stable offset" in r.out, \
        r.out + r.err
    assert [v for _o, v in _values(dst, "open")] == [b"before"]
    tx.commit_transaction(30)
    r2 = migrate("--from", src, "--to", dst, "--state-dir", str(state), "--no-progress")
    assert r2.code == 0, r2.out + r2.err
    assert [v for _o, v in _values(dst, "open")] == [b"before", b"undecided"]
