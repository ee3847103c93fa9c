"""Transactions (exactly-once) with real clients against a real broker process.

(a) Java KafkaProducer and (b) confluent-kafka transactional producers commit, abort and commit again;
    read_committed consumers (Java, confluent-kafka, kafka-python) see exactly the committed records and
    read_uncommitted ones see all of them.
(c) consume-transform-produce with the Java producer's sendOffsetsToTransaction: the group's offsets are
    visible only after the commit, and an aborted attempt leaves neither output nor offsets behind.
(d) fencing: a second producer with the same transactional.id fences the first (Java: fatal
    ProducerFencedException; confluent-kafka: a fatal error), and its own transactions work; the Java Admin's
    describeTransactions/listTransactions show the states on the way. A transaction left open past its
    transaction.timeout.ms is aborted by the coordinator and its producer's late commit fails.
(e) SIGKILL with a transaction open: after the restart the transaction is aborted when its timeout passes,
    read_committed readers get past it (the LSO advances) and the committed transaction survived.
(f) aiokafka's transactional producer (v0 of every transaction API) and read_committed consumer.
(g) the transactional producers of the clients added in #24 (Java 4.4, franz-go, Sarama, rdkafka): commit, abort,
    commit; the readers of (a) and the client's own read_committed consumer.

Every partition's last record is a committed one, so a consumer asked for exactly the committed count would
have returned an aborted record among them if it leaked.
"""
from __future__ import annotations

import base64
import signal
import time
import uuid
from typing import Any

import pytest
from harness.clients import NEW_CLIENTS, clients_with
from harness.records import Rec
from harness.topics import create_topic
from test_groups_support import committed, produce

COMMITTED = [b"c1", b"c2", b"c3"]
ABORTED = [b"a1", b"a2"]


def _b64(v: bytes) -> str:
    return base64.b64encode(v).decode()


def _java(get_client: Any) -> Any:
    return get_client("java")


#: the Java producers: 3.9.1 (the classic transaction protocol) and 4.4.0, which uses transaction.version 2
#: (KIP-890 part 2: an epoch bump per EndTxn v5, partitions added by Produce v12+ and TxnOffsetCommit v5+) when
#: the broker finalizes it, as Kafka 4.4 and kafkalite's 4.4 profiles do
JAVAS = ("java", "java4")


# -- readers --------------------------------------------------------------------------------------------
def read_confluent(bs: str, topic: str, isolation: str, timeout_s: float = 20.0) -> list[bytes]:
    """Everything up to the end of partition 0 (the LSO for read_committed: EOF is reported there)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bs, "group.id": f"r-{uuid.uuid4().hex[:6]}", "isolation.level": isolation,
                  "enable.partition.eof": True, "enable.auto.commit": False})
    out: list[bytes] = []
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:   # _PARTITION_EOF
                    return out
                raise AssertionError(f"confluent-kafka consumer error: {m.error()}")
            out.append(m.value())
        raise AssertionError(f"no end of partition within {timeout_s}s ({isolation}); read {out}")
    finally:
        c.close()


def read_kafka_python(bs: str, topic: str, isolation: str, timeout_s: float = 20.0) -> list[bytes]:
    from kafka import KafkaConsumer, TopicPartition

    tp = TopicPartition(topic, 0)
    c = KafkaConsumer(bootstrap_servers=bs, isolation_level=isolation, enable_auto_commit=False,
                      auto_offset_reset="earliest")
    out: list[bytes] = []
    try:
        c.assign([tp])
        c.seek_to_beginning(tp)
        end = c.end_offsets([tp])[tp]   # the LSO for read_committed
        deadline = time.monotonic() + timeout_s
        while c.position(tp) < end and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=500).values():
                out.extend(r.value for r in recs)
        assert c.position(tp) >= end, f"kafka-python stuck at {c.position(tp)} < {end}"
        return out
    finally:
        c.close()


def stable_offsets(bs: str, topic: str) -> tuple[int, int]:
    """(last stable offset, high watermark) of partition 0, by kafka-python's ListOffsets per isolation."""
    from kafka import KafkaConsumer, TopicPartition

    tp = TopicPartition(topic, 0)
    out = []
    for isolation in ("read_committed", "read_uncommitted"):
        c = KafkaConsumer(bootstrap_servers=bs, isolation_level=isolation)
        try:
            out.append(c.end_offsets([tp])[tp])
        finally:
            c.close()
    return out[0], out[1]


def read_java(get_client: Any, bs: str, topic: str, isolation: str, count: int) -> list[bytes]:
    recs = _java(get_client).consume(bs, topic, [0], count, timeout_s=20.0,
                                     config={"isolation.level": isolation})
    return [r.value for r in recs]


def check_readers(get_client: Any, bs: str, topic: str, committed_values: list[bytes],
                  all_values: list[bytes]) -> None:
    assert read_confluent(bs, topic, "read_committed") == committed_values
    assert read_confluent(bs, topic, "read_uncommitted") == all_values
    assert read_kafka_python(bs, topic, "read_committed") == committed_values
    assert read_kafka_python(bs, topic, "read_uncommitted") == all_values
    assert read_java(get_client, bs, topic, "read_committed", len(committed_values)) == committed_values
    assert read_java(get_client, bs, topic, "read_uncommitted", len(all_values)) == all_values


# -- (a) Java producer ----------------------------------------------------------------------------------
@pytest.mark.parametrize("java_name", JAVAS)
def test_java_transactional_producer_commit_abort(broker, topic: str, get_client, java_name: str) -> None:
    bs = broker.bootstrap
    create_topic(bs, topic, 1)
    j = get_client(java_name)
    name = f"p-{topic}"
    assert j.txn_open(bs, name, f"tx-{topic}")["exception"] is None

    def txn(values: list[bytes], action: str) -> None:
        assert j.txn_step(name, "begin")["exception"] is None
        recs = [{"topic": topic, "partition": 0, "value": _b64(v)} for v in values]
        assert j.txn_step(name, "send", records=recs)["exception"] is None   # written to the log
        assert j.txn_step(name, action)["exception"] is None

    try:
        txn(COMMITTED[:2], "commit")
        txn(ABORTED, "abort")
        txn(COMMITTED[2:], "commit")
        d = j.txn_describe(bs, [f"tx-{topic}"])["described"][f"tx-{topic}"]
        # transaction.version 2 (Java 4.4): every EndTxn bumped the epoch; the classic protocol keeps it
        assert (d["state"], d["producer_epoch"]) == ("CompleteCommit", 3 if java_name == "java4" else 0), d
    finally:
        j.txn_close(name)
    check_readers(get_client, bs, topic, COMMITTED, [*COMMITTED[:2], *ABORTED, COMMITTED[2]])


# -- (b) confluent-kafka producer ------------------------------------------------------------------------
def test_confluent_transactional_producer_commit_abort(broker, topic: str, get_client) -> None:
    from confluent_kafka import Producer

    bs = broker.bootstrap
    create_topic(bs, topic, 1)
    p = Producer({"bootstrap.servers": bs, "transactional.id": f"tx-{topic}", "linger.ms": 5})
    p.init_transactions(30)
    for values, commit in ((COMMITTED[:2], True), (ABORTED, False), (COMMITTED[2:], True)):
        p.begin_transaction()
        for v in values:
            p.produce(topic, v, partition=0)
        assert p.flush(30) == 0          # the records are in the log before the transaction ends
        if commit:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
    check_readers(get_client, bs, topic, COMMITTED, [*COMMITTED[:2], *ABORTED, COMMITTED[2]])


# -- (g) the transactional producers of the clients added in #24 ---------------------------------------------
@pytest.mark.parametrize("client_name", [n for n in clients_with("transactions") if n in NEW_CLIENTS])
def test_transactional_commit_abort(broker, topic: str, client, get_client) -> None:
    bs = broker.bootstrap
    create_topic(bs, topic, 1)

    def recs(values: list[bytes]) -> list[Rec]:
        return [Rec(None, v, partition=0) for v in values]

    client.txn_batches(bs, topic, f"tx-{topic}", [(recs(COMMITTED[:2]), True), (recs(ABORTED), False),
                                                  (recs(COMMITTED[2:]), True)])
    everything = [*COMMITTED[:2], *ABORTED, COMMITTED[2]]
    check_readers(get_client, bs, topic, COMMITTED, everything)
    own = client.consume(bs, topic, [0], len(COMMITTED), isolation="read_committed", timeout_s=20)
    assert [r.value for r in own] == COMMITTED
    # the control records (commit/abort markers) take offsets 2, 5 and 7: the committed records are 0, 1, 6
    assert [r.offset for r in own] == [0, 1, 6]


# -- (c) consume-transform-produce ------------------------------------------------------------------------
@pytest.mark.parametrize("java_name", JAVAS)
def test_consume_transform_produce_exactly_once(broker, topic: str, get_client, java_name: str) -> None:
    from confluent_kafka import Consumer, TopicPartition

    bs = broker.bootstrap
    src, dst, group = f"{topic}-in", f"{topic}-out", f"g-{topic}"
    create_topic(bs, src, 1)
    create_topic(bs, dst, 1)
    produce(bs, src, [(0, f"m{i}".encode()) for i in range(6)])
    j = get_client(java_name)
    name = f"p-{topic}"
    assert j.txn_open(bs, name, f"tx-{topic}")["exception"] is None

    def read_input(start: int, n: int) -> list[tuple[int, bytes]]:
        c = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False})
        try:
            c.assign([TopicPartition(src, 0, start)])
            got: list[tuple[int, bytes]] = []
            deadline = time.monotonic() + 20
            while len(got) < n and time.monotonic() < deadline:
                m = c.poll(0.5)
                if m is not None and not m.error():
                    got.append((m.offset(), m.value()))
            return got
        finally:
            c.close()

    def process(start: int, n: int, commit: bool) -> None:
        batch = read_input(start, n)
        assert [o for o, _ in batch] == list(range(start, start + n))
        before = committed(bs, group, src, 1)
        assert j.txn_step(name, "begin")["exception"] is None
        out = [{"topic": dst, "partition": 0, "value": _b64(v.upper())} for _, v in batch]
        assert j.txn_step(name, "send", records=out)["exception"] is None
        r = j.txn_step(name, "send_offsets", group=group, offsets=[[src, 0, start + n]])
        assert r["exception"] is None, r
        assert committed(bs, group, src, 1) == before  # not visible inside the transaction
        assert j.txn_step(name, "commit" if commit else "abort")["exception"] is None

    try:
        process(0, 3, commit=False)                    # a failed attempt: nothing of it may remain
        assert committed(bs, group, src, 1)[0] < 0
        process(0, 3, commit=True)                     # the retry from the same position
        assert committed(bs, group, src, 1) == {0: 3}
        process(3, 3, commit=True)
        assert committed(bs, group, src, 1) == {0: 6}
    finally:
        j.txn_close(name)
    expected = [f"M{i}".encode() for i in range(6)]
    assert read_confluent(bs, dst, "read_committed") == expected
    assert read_java(get_client, bs, dst, "read_committed", 6) == expected
    assert len(read_confluent(bs, dst, "read_uncommitted")) == 9      # the aborted attempt's 3 are in the log


@pytest.mark.parametrize("java_name", JAVAS)
def test_java_consume_transform_produce_in_a_group(broker, topic: str, get_client, java_name: str) -> None:
    """KIP-447: TxnOffsetCommit carries the consumer's generation and member id (consumer.groupMetadata())."""
    bs = broker.bootstrap
    src, dst, group = f"{topic}-in", f"{topic}-out", f"g-{topic}"
    create_topic(bs, src, 1)
    create_topic(bs, dst, 1)
    produce(bs, src, [(0, f"m{i}".encode()) for i in range(6)])
    r = get_client(java_name).txn_consume_transform_produce(bs, f"tx-{topic}", group, src, dst, batch=3, total=6,
                                                        abort_first=True)
    assert (r["processed"], r["aborts"]) == (6, 1) and r["commits"] >= 2, r
    assert committed(bs, group, src, 1) == {0: 6}
    expected = [f"M{i}".encode() for i in range(6)]
    assert read_confluent(bs, dst, "read_committed") == expected
    assert read_kafka_python(bs, dst, "read_committed") == expected


# -- (d) fencing -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("java_name", JAVAS)
def test_java_second_producer_fences_the_first(broker, topic: str, get_client, java_name: str) -> None:
    bs = broker.bootstrap
    create_topic(bs, topic, 1)
    j = get_client(java_name)
    tid = f"tx-{topic}"
    a, b = f"a-{topic}", f"b-{topic}"
    assert j.txn_open(bs, a, tid)["exception"] is None
    try:
        assert j.txn_step(a, "begin")["exception"] is None
        assert j.txn_step(a, "send", records=[{"topic": topic, "partition": 0, "value": _b64(b"zombie")}])[
            "exception"] is None
        d = j.txn_describe(bs, [tid])
        assert d["described"][tid]["state"] == "Ongoing" and d["described"][tid]["partitions"] == [f"{topic}:0"]
        assert d["listed"][tid] == "Ongoing"
        first_epoch = d["described"][tid]["producer_epoch"]
        assert j.txn_open(bs, b, tid)["exception"] is None        # aborts a's transaction, fences a
        d = j.txn_describe(bs, [tid])["described"][tid]
        assert (d["state"], d["producer_epoch"], d["partitions"]) == ("Empty", first_epoch + 2, [])
        r = j.txn_step(a, "commit")
        assert r["exception"] == "ProducerFencedException", r
        assert j.txn_step(b, "begin")["exception"] is None
        assert j.txn_step(b, "send", records=[{"topic": topic, "partition": 0, "value": _b64(b"live")}])[
            "exception"] is None
        assert j.txn_step(b, "commit")["exception"] is None
    finally:
        j.txn_close(a)
        j.txn_close(b)
    assert read_confluent(bs, topic, "read_committed") == [b"live"]
    assert read_confluent(bs, topic, "read_uncommitted") == [b"zombie", b"live"]


def _wait_for_abort_marker(bs: str, topic: str, timeout_s: float = 30.0) -> None:
    """Until the coordinator has aborted the timed-out transaction on partition 0: the last stable offset
    (what a read_committed consumer's ListOffsets sees) passes the record and its abort marker. kafkalite aborts
    at the deadline; Apache Kafka looks for expired transactions every
    transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s by default)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bs, "group.id": f"lso-{uuid.uuid4().hex[:6]}",
                  "isolation.level": "read_committed"})
    try:
        deadline = time.monotonic() + timeout_s
        while c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)[1] < 2:
            assert time.monotonic() < deadline, "the timed-out transaction was not aborted"
            time.sleep(0.2)
    finally:
        c.close()


@pytest.mark.parametrize("java_name", JAVAS)
def test_java_transaction_timeout_aborts_and_fences(broker, topic: str, get_client, java_name: str) -> None:
    """A transaction left open past transaction.timeout.ms is aborted by the coordinator with an epoch bump:
    the producer's late commit fails (fenced) and nothing of the transaction becomes visible."""
    bs = broker.bootstrap
    create_topic(bs, topic, 1)
    j = get_client(java_name)
    name = f"p-{topic}"
    assert j.txn_open(bs, name, f"tx-{topic}", {"transaction.timeout.ms": 1000})["exception"] is None
    try:
        assert j.txn_step(name, "begin")["exception"] is None
        assert j.txn_step(name, "send", records=[{"topic": topic, "partition": 0, "value": _b64(b"late")}])[
            "exception"] is None
        _wait_for_abort_marker(bs, topic)
        r = j.txn_step(name, "commit")
        if java_name == "java4":
            # transaction.version 2: the coordinator's abort bumped the epoch by one, so the late EndTxn v5 (at the
            # epoch below) reads as a retry of that abort asking for the other result: INVALID_TXN_STATE, fatal
            # to the producer (Kafka 4.4 answers the same)
            assert r["exception"] == "InvalidTxnStateException", r
        else:
            assert r["exception"] in ("ProducerFencedException", "InvalidProducerEpochException"), r
    finally:
        j.txn_close(name)
    assert read_confluent(bs, topic, "read_committed") == []
    assert read_confluent(bs, topic, "read_uncommitted") == [b"late"]


def test_confluent_second_producer_fences_the_first(broker, topic: str) -> None:
    from confluent_kafka import KafkaException, Producer

    bs = broker.bootstrap
    create_topic(bs, topic, 1)
    conf = {"bootstrap.servers": bs, "transactional.id": f"tx-{topic}", "linger.ms": 5}
    first = Producer(conf)
    first.init_transactions(30)
    first.begin_transaction()
    first.produce(topic, b"zombie", partition=0)
    assert first.flush(30) == 0
    second = Producer(conf)
    second.init_transactions(30)
    with pytest.raises(KafkaException) as ei:
        first.commit_transaction(30)
    err = ei.value.args[0]
    assert err.fatal(), err
    assert "fenced" in err.str().lower(), err
    second.begin_transaction()
    second.produce(topic, b"live", partition=0)
    second.commit_transaction(30)
    assert read_confluent(bs, topic, "read_committed") == [b"live"]


# -- (e) crash with a transaction open --------------------------------------------------------------------
def test_sigkill_with_open_transaction_aborts_it_after_restart(broker_factory, get_client) -> None:
    b = broker_factory()
    bs = b.bootstrap
    topic = f"crash-{uuid.uuid4().hex[:6]}"
    create_topic(bs, topic, 1)
    j = _java(get_client)
    name = f"p-{topic}"
    timeout_s = 6.0
    assert j.txn_open(bs, name, f"tx-{topic}", {"transaction.timeout.ms": int(timeout_s * 1000)})["exception"] is None
    try:
        for values, action in (([b"kept"], "commit"), ([b"open"], None)):
            opened = time.monotonic()   # before this transaction's first AddPartitionsToTxn
            assert j.txn_step(name, "begin")["exception"] is None
            recs = [{"topic": topic, "partition": 0, "value": _b64(v)} for v in values]
            assert j.txn_step(name, "send", records=recs)["exception"] is None
            if action:
                assert j.txn_step(name, action)["exception"] is None
        b.restart(signal.SIGKILL)
        t0 = time.monotonic()
        # read_committed readers are held at the open transaction (LSO 2) until the coordinator aborts it
        # (its timeout, counted from its first AddPartitionsToTxn): then the LSO passes the ABORT marker.
        # Only an answer that came before the timeout can have to be (2, 3): a restart on a loaded machine
        # may take longer, and then the abort may already be there.
        first = stable_offsets(bs, topic)
        if time.monotonic() - opened < timeout_s:
            assert first == (2, 3)
        else:
            assert first in ((2, 3), (4, 4)), first
        while stable_offsets(bs, topic) != (4, 4):
            assert time.monotonic() - t0 < 90, stable_offsets(bs, topic)   # bounds a hang only
            time.sleep(0.2)
        assert read_confluent(bs, topic, "read_committed") == [b"kept"]
        assert read_confluent(bs, topic, "read_uncommitted") == [b"kept", b"open"]
        assert read_kafka_python(bs, topic, "read_committed") == [b"kept"]
    finally:
        j.txn_close(name)
    # the coordinator wrote the abort: a new producer with the id starts cleanly
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bs, "transactional.id": f"tx-{topic}"})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b"after", partition=0)
    p.commit_transaction(30)
    assert read_confluent(bs, topic, "read_committed") == [b"kept", b"after"]


# -- aiokafka (InitProducerId v0 and v0 of every transaction API) ----------------------------------------
def test_aiokafka_transactional_producer_and_read_committed(broker, topic: str) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    bs = broker.bootstrap
    create_topic(bs, topic, 1)

    class Abort(Exception):
        pass

    async def run() -> tuple[list[bytes], list[bytes]]:
        p = AIOKafkaProducer(bootstrap_servers=bs, transactional_id=f"tx-{topic}")
        await p.start()
        try:
            for values, commit in ((COMMITTED[:2], True), (ABORTED, False), (COMMITTED[2:], True)):
                try:
                    async with p.transaction():
                        for v in values:
                            await p.send_and_wait(topic, v, partition=0)
                        if not commit:
                            raise Abort()
                except Abort:
                    pass
        finally:
            await p.stop()
        out = []
        for isolation, n in (("read_committed", 3), ("read_uncommitted", 5)):
            c = AIOKafkaConsumer(bootstrap_servers=bs, isolation_level=isolation, auto_offset_reset="earliest",
                                 enable_auto_commit=False)
            await c.start()
            try:
                tp = TopicPartition(topic, 0)
                c.assign([tp])
                await c.seek_to_beginning(tp)
                got: list[bytes] = []
                deadline = time.monotonic() + 20
                while len(got) < n and time.monotonic() < deadline:
                    for recs in (await c.getmany(timeout_ms=500)).values():
                        got.extend(r.value for r in recs)
                out.append(got)
            finally:
                await c.stop()
        return out[0], out[1]

    committed_seen, all_seen = asyncio.run(run())
    assert committed_seen == COMMITTED
    assert all_seen == [*COMMITTED[:2], *ABORTED, COMMITTED[2]]
    assert read_confluent(bs, topic, "read_committed") == COMMITTED


# -- (f) a transaction's offsets against a later plain commit of the group ---------------------------------
def _plain_commit_from_another_consumer(bs: str, group: str, topic: str, offset: int) -> None:
    """Another consumer of the group (confluent-kafka, assigned) commits ``offset`` synchronously."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    # a just restarted Apache Kafka answers NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS until it has loaded
    # __consumer_offsets; librdkafka hands those to a synchronous commit's caller, who retries
    retriable = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                 KafkaError.COORDINATOR_NOT_AVAILABLE}
    deadline = time.monotonic() + 30
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0)])
        while True:
            try:
                res = c.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
                break
            except KafkaException as e:
                if e.args[0].code() not in retriable or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        assert [(tp.offset, tp.error) for tp in res] == [(offset, None)]
    finally:
        c.close()


def test_txn_offsets_do_not_overwrite_a_later_plain_commit_java(broker_factory, get_client) -> None:
    """sendOffsetsToTransaction(10), then a plain commit of 20 by another consumer of the group, then the
    transaction commits: Kafka keeps 20 (completePendingTxnOffsetCommit compares the records' log
    offsets), also after a restart; a transaction whose offsets come after the plain commit does apply."""
    b = broker_factory()
    bs = b.bootstrap
    topic = f"ord-{uuid.uuid4().hex[:6]}"
    group = f"g-{topic}"
    create_topic(bs, topic, 1)
    j = _java(get_client)
    name = f"p-{topic}"
    assert j.txn_open(bs, name, f"tx-{topic}")["exception"] is None
    try:
        assert j.txn_step(name, "begin")["exception"] is None
        assert j.txn_step(name, "send_offsets", group=group, offsets=[[topic, 0, 10]])["exception"] is None
        _plain_commit_from_another_consumer(bs, group, topic, 20)
        assert j.txn_step(name, "commit")["exception"] is None
        assert committed(bs, group, topic, 1) == {0: 20}
        b.restart()
        assert committed(bs, group, topic, 1) == {0: 20}
        assert j.txn_step(name, "begin")["exception"] is None
        assert j.txn_step(name, "send_offsets", group=group, offsets=[[topic, 0, 30]])["exception"] is None
        assert j.txn_step(name, "commit")["exception"] is None
        assert committed(bs, group, topic, 1) == {0: 30}
    finally:
        j.txn_close(name)


def test_txn_offsets_do_not_overwrite_a_later_plain_commit_confluent_kafka(broker_factory) -> None:
    """The same with confluent-kafka's send_offsets_to_transaction, and a restart while the transaction
    is open (its offsets come back pending from the transactional batch in ``__consumer_offsets``)."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    b = broker_factory()
    bs = b.bootstrap
    topic = f"ordc-{uuid.uuid4().hex[:6]}"
    group = f"g-{topic}"
    create_topic(bs, topic, 1)
    p = Producer({"bootstrap.servers": bs, "transactional.id": f"tx-{topic}", "linger.ms": 5})
    p.init_transactions(30)
    meta_src = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False})
    try:
        p.begin_transaction()
        p.send_offsets_to_transaction([TopicPartition(topic, 0, 10)], meta_src.consumer_group_metadata(), 30)
        b.restart()
        _plain_commit_from_another_consumer(bs, group, topic, 20)
        p.commit_transaction(60)
        assert committed(bs, group, topic, 1) == {0: 20}
        b.restart()
        assert committed(bs, group, topic, 1) == {0: 20}
    finally:
        meta_src.close()
