"""Three brokers with real clients on their failure paths: partition leaders move, a broker stops and comes back,
the group coordinator moves, while the clients keep producing and consuming. Whatever the producer got
acknowledged is there afterwards exactly once (idempotence), consumers never see a record twice on one partition
stream, and every replica of a partition ends up with the leader's exact bytes.

The brokers are a ``kafkalite.cluster.Cluster`` in the test's process (a new one per test), or, with
``KAFKALITE_COMPAT_BROKER=kafka``, a 3-node KRaft Apache Kafka shared by the module (``kafka_cluster``); the
``cluster_control`` fixture acts on either (``harness/cluster.py``: leader and coordinator moves, broker stops and
starts) and starts again, before each test, any node an earlier test left stopped.

On Kafka 4.4 the first full run (2026-11-28) passed 12 of 26; the causes were the tests' and the harness's, not
the brokers': the producer case's 2023-stamped records were deleted by Kafka's retention check (30 s after a
broker starts, then every 5 minutes; now retention.ms=-1), kafkajs' send() over several leaders loses and
duplicates records when a leader stops (now one partition per send, see ONE_PARTITION_PER_SEND), and the group
case's "Stable" probe asked a kept AdminClient that stayed on the group's old coordinator after a move (now
FindCoordinator + DescribeGroups afresh, harness/cluster.py). The followers' "marked as failed" (WARN,
ReplicaFetcherThread) in the nodes' logs are Kafka's normal fencing of a fetch with an older leader epoch during
a leader change: each such partition's fetcher is added again once the follower applies the new epoch.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from harness.clients import clients_with
from harness.cluster import wait as _wait
from harness.records import KEEP_OLD_TIMESTAMPS, assert_same_records, make_records
from test_groups_support import NEW_GROUP_CLIENTS

PARTS = 3
N = {"confluent-kafka": 3_000, "java": 3_000, "kcat": 3_000}
N_DEFAULT = 1_500
# On Apache Kafka: the KIP-848 group settings of the consumer-protocol test below (its kafkalite_cluster marker
# gives kafkalite's cluster the same), and no automatic preferred-leader rebalance (kafkalite has none): leaders
# move only when a test moves them or stops their broker.
KAFKA_CLUSTER = {"nodes": 3, "overrides": {
    "group.consumer.heartbeat.interval.ms": "500", "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.session.timeout.ms": "6000", "group.consumer.min.session.timeout.ms": "6000",
    "auto.leader.rebalance.enable": "false"}}


class _Runner(threading.Thread):
    def __init__(self, fn):
        super().__init__(daemon=True)
        self.fn, self.result, self.error = fn, None, None

    def run(self):
        try:
            self.result = self.fn()
        except BaseException as e:
            self.error = e


def _create(cluster, topic: str, partitions: int = PARTS, rf: int = 3, config: dict | None = None) -> None:
    """Create the topic; return once every partition has a leader that takes records (ListOffsets answers:
    Kafka publishes a new leader a moment before its replica manager leads, see harness/topics.py)."""
    from confluent_kafka.admin import AdminClient, NewTopic
    from harness.topics import _leaders_ready

    adm = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    adm.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=rf,
                                config=config or {})])[topic].result(30)
    _wait(lambda: len(parts := cluster.partitions(topic)) == partitions
          and all(p["leader"] >= 0 for p in parts.values()), "topic placed")
    _wait(lambda: _leaders_ready(adm, topic, partitions), "the topic's leaders answering", interval=0.2)


def _other_isr(part: dict) -> int:
    return next(r for r in part["isr"] if r != part["leader"])


def assert_replicas_identical(cluster, topic: str, partitions: int = PARTS) -> None:
    """Once every replica is back in the ISR, each holds the leader's bytes (same offsets, same batches)."""
    _wait(lambda: all(len(p["isr"]) == len(p["replicas"]) for p in cluster.partitions(topic).values()),
          "every replica back in the ISR")
    ps = cluster.partitions(topic)

    def caught_up() -> bool:
        data = {p: cluster.replica_logs(topic, p) for p in range(partitions)}
        return all(len(set(d.values())) == 1 and len(d) == len(ps[p]["replicas"]) for p, d in data.items())

    _wait(caught_up, "replicas holding the leader's bytes", timeout=30, interval=0.2)


def _disturb(cluster, topic: str, busy) -> list[str]:
    """While ``busy()``: move every partition's leader, stop the leader of partition 1 and start it again."""
    done = []
    parts = cluster.partitions(topic)
    for p in range(PARTS):
        if not busy():
            break
        cluster.move_leader(topic, p, _other_isr(parts[p]))
        done.append(f"move {p}")
        time.sleep(0.2)
    victim = cluster.partitions(topic)[1]["leader"]
    if busy():
        cluster.stop_broker(victim)
        done.append(f"stop {victim}")
        time.sleep(1.0)
        cluster.start_broker(victim)
        done.append(f"start {victim}")
    return done


# kafkajs 2.2.4's send() over several leaders (src/producer/sendMessages.js) keeps one response map across its
# retries and sends again only to brokers without a response: when a leader stops, a partition that moves to a
# broker which already answered for another partition is never sent, and send() resolves (its records lost), while
# a retry fired before another broker's answer arrived sends that broker's partitions again under new sequence
# numbers (duplicates the broker cannot recognise). Seen against Kafka 4.4: partition 1's second third missing,
# partition 2's twice under one producer id (kafkajs issue #1303, open). One partition per send() leaves each
# retry one broker to ask, which kafkajs gets right.
ONE_PARTITION_PER_SEND = {"kafkajs"}


def _produce(client, client_name: str, bs: str, topic: str, records: list, timeout_s: float) -> None:
    if client_name not in ONE_PARTITION_PER_SEND:
        client.produce(bs, topic, records, idempotent=True, timeout_s=timeout_s)
        return
    for p in range(PARTS):
        part = [r for r in records if r.partition == p]
        if part:
            client.produce(bs, topic, part, idempotent=True, timeout_s=timeout_s)


@pytest.mark.parametrize("client_name", clients_with("produce", "consume", "idempotent"))
def test_produce_across_leader_moves_and_broker_restart(cluster_control, client, client_name, topic,
                                                        get_client):
    """Each client's idempotent producer: a third of the records, then every partition's leader moves; the
    second third while the new leader of partition 1 stops (the client meets a refused connection and
    NOT_LEADER_OR_FOLLOWER); that broker starts again (truncating to the leader epoch boundary and catching
    up) under the last third. Everything sent is in the log exactly once, in order, on every replica."""
    cluster = cluster_control
    # The records carry TS_BASE (2023) CreateTimes: Kafka checks retention 30 s after a broker starts
    # (log.initial.task.delay.ms), so after the restart here, and every 5 minutes in the module's cluster; the
    # check deleted them under the test ("sent 500, got 167", every replica's log then starting at offset 500)
    # and a replica that had run it differed from one that had not.
    _create(cluster, topic, config=KEEP_OLD_TIMESTAMPS)
    n = N.get(client_name, N_DEFAULT)
    sent = make_records(n, partitions=PARTS, prefix=f"cl-{client_name}", headers="headers" in client.features,
                        per_record_headers=False, timestamps="timestamps" in client.features, nulls=False)
    first, second = n // 3, 2 * n // 3
    parts = cluster.partitions(topic)
    victim = _other_isr(parts[1])   # partition 1's leader after the moves
    addresses = cluster.addresses()
    # kafkajs takes one bootstrap address (the harness driver passes the string as one broker)
    host, port = next(a for nid, a in addresses.items() if nid != victim)
    bs = cluster.bootstrap_servers if client_name != "kafkajs" else f"{host}:{port}"
    _produce(client, client_name, bs, topic, sent[:first], 60)
    for p in range(PARTS):
        cluster.move_leader(topic, p, _other_isr(parts[p]))
    assert cluster.partitions(topic)[1]["leader"] == victim
    prod = _Runner(lambda: _produce(client, client_name, bs, topic, sent[first:second], 90))
    prod.start()
    cluster.stop_broker(victim)
    prod.join(120)
    assert not prod.is_alive(), "producer still running after 120 s"
    if prod.error:
        raise AssertionError(f"producer failed while broker {victim} was stopped") from prod.error
    cluster.start_broker(victim)
    _produce(client, client_name, bs, topic, sent[second:], 60)
    got = get_client("confluent-kafka").consume(cluster.bootstrap_servers, topic, list(range(PARTS)), n,
                                                timeout_s=90)
    assert_same_records(sent, got, what=f"{client_name} across leader moves and a stop of broker {victim}")
    assert_replicas_identical(cluster, topic)


def test_confluent_idempotent_producer_keeps_producing(cluster_control):
    """One long-lived idempotent confluent-kafka producer: leader moves, a broker stop/start and a restart
    under it; every acknowledged record is read back exactly once, none failed."""
    from confluent_kafka import Consumer, Producer

    cluster = cluster_control
    topic = f"idem-{uuid.uuid4().hex[:8]}"
    _create(cluster, topic)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True,
                         "linger.ms": 5, "message.timeout.ms": 120_000})
    acked: list[bytes] = []
    failed: list[str] = []

    def report(err, msg):
        if err is not None:
            failed.append(str(err))
        else:
            acked.append(msg.value())

    stop = threading.Event()

    def produce() -> int:
        i = 0
        while not stop.is_set():
            producer.produce(topic, value=f"v-{i}".encode(), key=f"k-{i % 50}".encode(), callback=report)
            producer.poll(0)
            i += 1
            if i % 200 == 0:
                time.sleep(0.01)
        return i

    runner = _Runner(produce)
    runner.start()
    _wait(lambda: len(acked) > 100, "the first acknowledgements")
    done = _disturb(cluster, topic, lambda: True)
    restarted = cluster.partitions(topic)[0]["leader"]
    cluster.restart_broker(restarted)
    done.append(f"restart {restarted}")
    time.sleep(0.5)
    stop.set()
    runner.join(30)
    assert producer.flush(120) == 0, "records still unacknowledged"
    assert not failed, f"delivery failures across {done}: {failed[:5]}"
    assert len(acked) == runner.result, "every produced record is acknowledged"
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"read-{topic}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 90
    while len(got) < len(acked) and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    consumer.close()
    assert len(got) == len(set(got)), f"duplicates across {done}"
    assert sorted(got) == sorted(acked), f"lost or extra records across {done}"
    assert_replicas_identical(cluster, topic)


def test_confluent_group_continues_across_coordinator_move_and_stop(cluster_control):
    """A confluent-kafka consumer group member keeps consuming and committing while its coordinator moves to
    another broker and then that broker stops: it finds the new coordinator, its committed offsets are
    there, and it reads every record."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    cluster = cluster_control
    topic = f"grp-{uuid.uuid4().hex[:8]}"
    group = f"g-{uuid.uuid4().hex[:8]}"
    _create(cluster, topic)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True})
    total = 3_000
    for i in range(total):
        producer.produce(topic, value=f"m-{i}".encode(), partition=i % PARTS)
    assert producer.flush(60) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "session.timeout.ms": 30_000,
                         "max.partition.fetch.bytes": 1024})
    consumer.subscribe([topic])
    seen: set[bytes] = set()
    moves: list[str] = []

    def consume_some(k: int) -> None:
        deadline = time.monotonic() + 60
        target = len(seen) + k
        while len(seen) < min(target, total) and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                seen.add(m.value())
        consumer.commit(asynchronous=False)

    consume_some(500)
    first = cluster.coordinator("group", group)
    target = next(n for n in cluster.node_ids() if n != first)
    cluster.move_coordinator("group", group, target)
    moves.append(f"coordinator {first} -> {target}")
    assert cluster.coordinator("group", group) == target
    consume_some(500)
    cluster.stop_broker(target)
    moves.append(f"stop {target}")
    after = cluster.coordinator("group", group)
    assert after not in (target, -1), "the coordinator moved off the stopped broker"
    consume_some(total)
    assert len(seen) == total, f"consumed {len(seen)} of {total} across {moves}"
    committed = consumer.committed([TopicPartition(topic, p) for p in range(PARTS)], timeout=30)
    assert sum(tp.offset for tp in committed) == total, f"committed offsets after {moves}: {committed}"
    consumer.close()
    cluster.start_broker(target)


def test_confluent_transactions_survive_a_coordinator_move_and_stop(cluster_control):
    """A transactional confluent-kafka producer (with sendOffsetsToTransaction) commits and aborts while its
    transaction coordinator moves and then stops: a read_committed consumer sees exactly the committed
    records, once, and the group's offsets are the last committed transaction's."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    cluster = cluster_control
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    txn_id = f"tx-{uuid.uuid4().hex[:8]}"
    group = f"tg-{uuid.uuid4().hex[:8]}"
    _create(cluster, topic)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn_id,
                         "transaction.timeout.ms": 60_000})
    producer.init_transactions(30)
    committed: list[bytes] = []
    steps: list[str] = []

    def transaction(k: int, commit: bool) -> None:
        producer.begin_transaction()
        values = [f"t{k}-{i}".encode() for i in range(50)]
        for i, v in enumerate(values):
            producer.produce(topic, value=v, partition=i % PARTS)
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, k + 1)],
                                             _group_metadata(cluster, group), 30)
        if commit:
            producer.commit_transaction(30)
            committed.extend(values)
        else:
            producer.abort_transaction(30)
        steps.append(f"{'commit' if commit else 'abort'} {k}")

    transaction(0, True)
    first = cluster.coordinator("transaction", txn_id)
    target = next(n for n in cluster.node_ids() if n != first)
    cluster.move_coordinator("transaction", txn_id, target)
    steps.append(f"coordinator {first} -> {target}")
    if cluster.coordinator("group", group) == target:
        # librdkafka caches the group coordinator for TxnOffsetCommit; once the broker it points at is stopped
        # (and so leaves Metadata) send_offsets_to_transaction can wait on that decommissioned broker past its
        # timeout. Stopping a group coordinator is the group tests' subject; here only the transaction's stops.
        cluster.move_coordinator("group", group, first)
        steps.append(f"group coordinator {target} -> {first}")
    transaction(1, False)
    transaction(2, True)
    cluster.stop_broker(target)
    steps.append(f"stop {target}")
    transaction(3, True)
    transaction(4, False)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"r-{topic}",
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < len(committed) and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    end = time.monotonic() + 2   # nothing aborted may follow
    while time.monotonic() < end:
        m = consumer.poll(0.2)
        if m is not None and not m.error():
            got.append(m.value())
    consumer.close()
    assert sorted(got) == sorted(committed), f"read_committed across {steps}"
    reader = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
    offsets = reader.committed([TopicPartition(topic, 0)], timeout=30)
    reader.close()
    assert offsets[0].offset == 4, f"the group's offset is the last committed transaction's ({steps})"
    cluster.start_broker(target)


def _group_metadata(cluster, group: str):
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
    try:
        return c.consumer_group_metadata()
    finally:
        c.close()


def _kafka_python_member(bs: str, topic: str, count: int, group: str, timeout_s: float) -> list[bytes]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=bs.split(","), group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             metadata_max_age_ms=1000)
    got: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(got) < count and time.monotonic() < deadline:
            polled = consumer.poll(timeout_ms=300)
            for recs in polled.values():
                got.extend(r.value for r in recs)
            if polled:
                consumer.commit()
    finally:
        consumer.close()
    return got


def _aiokafka_member(bs: str, topic: str, count: int, group: str, timeout_s: float) -> list[bytes]:
    import asyncio

    from aiokafka import AIOKafkaConsumer

    async def run() -> list[bytes]:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bs, group_id=group, auto_offset_reset="earliest",
                                    enable_auto_commit=False, metadata_max_age_ms=1000)
        await consumer.start()
        got: list[bytes] = []
        deadline = time.monotonic() + timeout_s
        try:
            while len(got) < count and time.monotonic() < deadline:
                polled = await consumer.getmany(timeout_ms=300)
                for recs in polled.values():
                    got.extend(r.value for r in recs)
                if polled:
                    await consumer.commit()
        finally:
            await consumer.stop()
        return got

    return asyncio.run(run())


def _kcat_member(bs: str, topic: str, count: int, group: str, timeout_s: float) -> list[bytes]:
    """kcat's balanced consumer (-G; librdkafka 2.0.2 on Debian): it has no commit of its own, so librdkafka
    auto-commits (every 200 ms here, and on exit after ``count`` records, -c)."""
    import shutil
    import subprocess

    kcat = shutil.which("kcat") or "/usr/bin/kcat"
    proc = subprocess.run([kcat, "-b", bs, "-G", group, "-X", "auto.offset.reset=earliest",
                           "-X", "auto.commit.interval.ms=200",
                           "-X", "topic.metadata.refresh.interval.ms=1000", "-c", str(count), "-q",
                           "-f", "%s\\n", topic], capture_output=True, timeout=timeout_s)
    if proc.returncode != 0:
        raise AssertionError(f"kcat -G exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-2000:]}")
    return proc.stdout.splitlines()


GROUP_MEMBERS = ["java", "kafka-python", "aiokafka", "kafkajs", "kcat", *NEW_GROUP_CLIENTS]
# kafkajs 2.2.4 takes NOT_COORDINATOR on an OffsetCommit (or Heartbeat) for a rebalance (src/errors.js
# isRebalancing lists NOT_COORDINATOR_FOR_GROUP; consumer/runner.js then joinAndSync()) instead of looking the
# coordinator up again and retrying the commit as Java, librdkafka, kafka-python and aiokafka do: it rejoins
# and fetches again from the last committed offsets, so the batch whose commit the old coordinator refused is
# delivered twice (at-least-once). Kafka's coordinators answer NOT_COORDINATOR the same way after a move.
# kafka-go 0.4.51 commits through its generation's connection to the coordinator it joined at
# (reader.go commitOffsetsWithRetry -> Generation.CommitOffsets, retried on that connection only) and ends the
# generation when that coordinator stops answering (consumergroup.go heartbeatLoop returns on any error); the next
# generation's readers start from the committed offsets, so records read but not yet committed at the move or stop
# come again (1-2 of 1,500 here).
AT_LEAST_ONCE_ACROSS_MOVES = {"kafkajs", "kafka-go"}


def _member(client_name: str, get_client, cluster, topic: str, count: int, group: str, timeout_s: float):
    """A function running one group member of ``client_name`` that reads ``count`` records of ``topic``
    (from the earliest offset), committing after every poll that returned records; -> the values read."""
    bs = cluster.bootstrap_servers
    if client_name == "java":
        java = get_client("java")
        return lambda: [r.value for r in java.subscribe_consume(bs, topic, count, group, timeout_s=timeout_s,
                                                                commit=True)]
    if client_name == "kafkajs":
        kafkajs = get_client("kafkajs")
        # kafkajs takes one bootstrap address: the one broker that is never stopped here
        host, port = cluster.addresses()[min(cluster.node_ids())]
        return lambda: [r.value for r in kafkajs.group_consume(f"{host}:{port}", topic, count, group,
                                                               timeout_s=timeout_s)]
    if client_name in NEW_GROUP_CLIENTS:   # the driver's group_consume: commits after every poll
        member = get_client(client_name)
        return lambda: [r.value for r in member.group_consume(bs, topic, count, group, timeout_s=timeout_s)]
    get_client(client_name)   # skips (fails under CI=true) when the client is missing
    fn = {"kafka-python": _kafka_python_member, "aiokafka": _aiokafka_member, "kcat": _kcat_member}[client_name]
    return lambda: fn(bs, topic, count, group, timeout_s)


# kafkajs 2.2.4 commits only what the runner of its current generation resolved: after a crash and restart (retries
# exhausted against the stopped coordinator, then a 30 s restart delay under load) its new generation starts at the
# committed offsets, and its auto-commit after each batch puts back whatever that generation resolved. An explicit
# consumer.commitOffsets() of the final offsets was therefore dropped (runner not running), refused (consumer group
# not initialised while restarting) or, once the new generation ran, overwritten at once by an auto-commit of the
# lower offsets (broker-side trace: 500 then 334, both answered NONE; OffsetFetch at the coordinator returned
# exactly the last one, as Kafka's last-write-wins OffsetCommit does). The driver (compat-tests/node/driver.js
# groupConsume) does what a kafkajs application must: it resolves every batch it is handed, repeats too, at the
# furthest offset read, so kafkajs' own auto-commit commits that, and it waits until the group holds it.
@pytest.mark.parametrize("client_name", GROUP_MEMBERS)
def test_group_member_continues_across_coordinator_move_and_stop(cluster_control, client_name, get_client):
    """A group member of each client keeps consuming and committing while its coordinator moves to another
    broker and then that broker stops: it follows the coordinator, reads every record exactly once, and its
    commits land at each coordinator in turn (the last one, for records produced after the stop, at the
    broker that took over). Each third of the records is produced only once the group is Stable at the
    current coordinator, so the member cannot finish (and leave its group) before the checks - the race that
    made kafka-python look stuck after the stop."""
    from confluent_kafka import Producer

    cluster = cluster_control
    topic = f"gm-{uuid.uuid4().hex[:8]}"
    group = f"gm-{client_name}-{uuid.uuid4().hex[:6]}"
    _create(cluster, topic)
    total, phases = 1_500, 3
    never_stopped = min(cluster.node_ids())
    runner = _Runner(_member(client_name, get_client, cluster, topic, total, group, 90))
    runner.start()
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True})
    steps: list[str] = []
    for phase in range(phases):
        _wait(lambda: cluster.coordinator("group", group) >= 0, "the group's coordinator")
        _wait(lambda: cluster.group_stable(group) or not runner.is_alive(), "the member joined", timeout=60)
        assert runner.is_alive(), f"{client_name} member ended early across {steps}: {runner.error!r}"
        if phase == 1:
            first = cluster.coordinator("group", group)
            target = next(n for n in cluster.node_ids() if n not in (first, never_stopped))
            cluster.move_coordinator("group", group, target)
            steps.append(f"coordinator {first} -> {target}")
        elif phase == 2:
            victim = cluster.coordinator("group", group)
            cluster.stop_broker(victim)
            steps.append(f"stop {victim}")
            _wait(lambda: cluster.coordinator("group", group) >= 0, "a new coordinator")
            _wait(lambda: cluster.group_stable(group), "the member at the new coordinator", timeout=60)
        for i in range(phase * total // phases, (phase + 1) * total // phases):
            producer.produce(topic, value=f"gm-{i}".encode(), partition=i % PARTS)
        assert producer.flush(60) == 0
        if phase < 2:   # the member has read (and committed) this third before the coordinator moves
            done = (phase + 1) * total // phases
            _wait(lambda: _committed_total(cluster, group, topic) == done or not runner.is_alive(),  # noqa: B023
                  f"the member's commit of phase {phase}")
    runner.join(120)
    assert not runner.is_alive(), "consumer still running"
    if runner.error:
        raise AssertionError(f"{client_name} group consumer failed across {steps}") from runner.error
    got = runner.result
    want = [f"gm-{i}".encode() for i in range(total)]
    if client_name in AT_LEAST_ONCE_ACROSS_MOVES:
        # every record; repeats only of records read after the first move (never of the committed first third)
        assert set(got) == set(want), f"{client_name}: {len(set(got))} distinct of {total} across {steps}"
        repeats = {v for v in got if got.count(v) > 1}
        assert not repeats & set(want[:total // phases]), f"{client_name} re-read committed records ({steps})"
    else:
        assert sorted(got) == sorted(want), \
            f"{client_name}: {len(got)} records, {len(set(got))} distinct across {steps}"
    try:
        _wait(lambda: _committed_total(cluster, group, topic) == total, f"the group's offsets after {steps}",
              timeout=30)
    except AssertionError as e:
        raise AssertionError(f"{e}; last answer {_LAST_COMMITTED.get(group)!r}") from None


def _committed_total(cluster, group: str, topic: str) -> int:
    from confluent_kafka import KafkaException
    from test_groups_support import committed

    try:
        got = committed(cluster.bootstrap_servers, group, topic, PARTS)
    except (KafkaException, TimeoutError) as e:   # a lookup during a coordinator move: the caller asks again
        _LAST_COMMITTED[group] = repr(e)
        return -1
    _LAST_COMMITTED[group] = got
    return sum(max(o, 0) for o in got.values())


_LAST_COMMITTED: dict[str, object] = {}   # the last answer per group, for a timeout's message


class _JavaTxn:
    """Java 3.9.1 KafkaProducer with a transactional.id (compat-tests/java/Txn.java through the driver)."""

    def __init__(self, java, bs: str, txn_id: str) -> None:
        self.java, self.name = java, f"cl-{txn_id}"
        r = java.txn_open(bs, self.name, txn_id, {"transaction.timeout.ms": 60_000})
        assert r["exception"] is None, f"initTransactions: {r}"

    def run(self, topic: str, values: list[bytes], commit: bool) -> None:
        import base64

        for action, args in (("begin", {}),
                             ("send", {"records": [{"topic": topic, "partition": i % PARTS,
                                                    "value": base64.b64encode(v).decode()}
                                                   for i, v in enumerate(values)]}),
                             ("commit" if commit else "abort", {})):
            r = self.java.txn_step(self.name, action, **args)
            assert r["exception"] is None, f"{action}: {r}"

    def close(self) -> None:
        self.java.txn_close(self.name)


class _KafkaPythonTxn:
    """kafka-python 3.0.12 KafkaProducer(transactional_id=...)."""

    def __init__(self, bs: str, txn_id: str) -> None:
        from kafka import KafkaProducer

        self.p = KafkaProducer(bootstrap_servers=bs.split(","), transactional_id=txn_id,
                               transaction_timeout_ms=60_000, metadata_max_age_ms=1000)
        self.p.init_transactions()

    def run(self, topic: str, values: list[bytes], commit: bool) -> None:
        self.p.begin_transaction()
        futures = [self.p.send(topic, value=v, partition=i % PARTS) for i, v in enumerate(values)]
        self.p.flush(60)
        for f in futures:
            f.get(30)
        if commit:
            self.p.commit_transaction()
        else:
            self.p.abort_transaction()

    def close(self) -> None:
        self.p.close(10)


# kafka-python 3.0.12 loses a transactional request when its coordinator's broker refuses connections:
# kafka/producer/sender.py (_maybe_send_transactional_request) catches await_ready()'s KafkaConnectionError,
# enqueues a FindCoordinator (lookup_coordinator_for_request) and breaks, but leaves target_node set, so the
# closing `if target_node is None: self._transaction_manager.retry(next_request_handler)` never re-enqueues the
# dequeued AddPartitionsToTxn; the batches wait for partitions that are never added and flush() times out
# (2 of 4 runs; when the client notices the closed connection first, coordinator() is None and it recovers).
# A stopped Kafka broker refuses connections the same way, so kafka-python's leg is two coordinator moves.
TXN_STOP_CLIENT_BUG = {"kafka-python"}


@pytest.mark.parametrize("client_name", ["java", "java4", "kafka-python"])   # java4: transaction.version 2
def test_transactions_survive_a_coordinator_move_and_stop(cluster_control, client_name, get_client):
    """A transactional producer of each client commits and aborts while its transaction coordinator moves to
    another broker and then that broker stops (kafka-python: moves again, see TXN_STOP_CLIENT_BUG): it finds
    the new coordinator each time (FindCoordinator after NOT_COORDINATOR or a refused connection), whose
    state it loaded from its replica of __transaction_state, and a read_committed consumer sees exactly the
    committed records, once, and nothing of the aborted ones."""
    from confluent_kafka import Consumer, TopicPartition

    cluster = cluster_control
    topic = f"txm-{uuid.uuid4().hex[:8]}"
    txn_id = f"txm-{client_name}-{uuid.uuid4().hex[:6]}"
    _create(cluster, topic)
    bs = cluster.bootstrap_servers
    client = get_client(client_name)
    producer = _JavaTxn(client, bs, txn_id) if client_name in ("java", "java4") else _KafkaPythonTxn(bs, txn_id)
    committed: list[bytes] = []
    steps: list[str] = []

    def transaction(k: int, commit: bool) -> None:
        values = [f"{client_name}-t{k}-{i}".encode() for i in range(30)]
        producer.run(topic, values, commit)
        if commit:
            committed.extend(values)
        steps.append(f"{'commit' if commit else 'abort'} {k}")

    try:
        transaction(0, True)
        first = cluster.coordinator("transaction", txn_id)
        target = next(n for n in cluster.node_ids() if n != first)
        cluster.move_coordinator("transaction", txn_id, target)
        steps.append(f"coordinator {first} -> {target}")
        transaction(1, False)
        transaction(2, True)
        if client_name in TXN_STOP_CLIENT_BUG:
            third = next(n for n in cluster.node_ids() if n not in (first, target))
            cluster.move_coordinator("transaction", txn_id, third)
            steps.append(f"coordinator {target} -> {third}")
        else:
            cluster.stop_broker(target)
            steps.append(f"stop {target}")
            assert cluster.coordinator("transaction", txn_id) not in (target, -1)
        transaction(3, True)
        transaction(4, False)
        transaction(5, True)
    finally:
        producer.close()
    consumer = Consumer({"bootstrap.servers": bs, "group.id": f"r-{topic}", "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTS)])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < len(committed) and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    end = time.monotonic() + 2   # nothing aborted (nor a repeat) may follow
    while time.monotonic() < end:
        m = consumer.poll(0.2)
        if m is not None and not m.error():
            got.append(m.value())
    consumer.close()
    assert sorted(got) == sorted(committed), \
        f"{client_name} read_committed across {steps}: {len(got)} records, {len(committed)} committed"
    if client_name not in TXN_STOP_CLIENT_BUG:
        cluster.start_broker(target)


@pytest.mark.kafkalite_cluster(brokers=3, overrides={"group.consumer.heartbeat.interval.ms": "500",
                                                     "group.consumer.min.heartbeat.interval.ms": "500",
                                                     "group.consumer.session.timeout.ms": "6000",
                                                     "group.consumer.min.session.timeout.ms": "6000"})
def test_confluent_eos_consumer_protocol_across_coordinator_moves(cluster_control):
    """Issue #30 on 3 brokers: consume-transform-produce with a ``group.protocol=consumer`` (KIP-848) member and
    a transactional producer whose sendOffsetsToTransaction carries the member id and epoch. The TxnOffsetCommit
    goes to the group's coordinator, which checks the member against the consumer group it loaded, and the
    transaction's coordinator (another broker) completes it; the group coordinator moves, then the transaction
    coordinator: every input's output is read once by a read_committed reader, and the group's committed offsets
    are the input's end offsets."""
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    cluster = cluster_control
    bs = cluster.bootstrap_servers
    src, dst = f"eosin-{uuid.uuid4().hex[:8]}", f"eosout-{uuid.uuid4().hex[:8]}"
    group, txn_id = f"eg-{uuid.uuid4().hex[:8]}", f"etx-{uuid.uuid4().hex[:8]}"
    _create(cluster, src)
    _create(cluster, dst)
    sent: list[tuple[int, bytes]] = []
    feeder = Producer({"bootstrap.servers": bs, "enable.idempotence": True})

    def more(tag: str, n: int) -> None:
        for i in range(n):
            v = f"{tag}{i}".encode()
            feeder.produce(src, value=v, partition=i % PARTS)
            sent.append((i % PARTS, v))
        assert feeder.flush(30) == 0

    consumer = Consumer({"bootstrap.servers": bs, "group.id": group, "group.protocol": "consumer",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    producer = Producer({"bootstrap.servers": bs, "transactional.id": txn_id, "transaction.timeout.ms": 60_000})
    producer.init_transactions(30)
    consumer.subscribe([src])
    done = 0
    refused: list[str] = []
    steps: list[str] = []

    def process(until: int, timeout: float = 90) -> None:
        nonlocal done
        deadline = time.monotonic() + timeout
        while done < until and time.monotonic() < deadline:
            msgs = [m for m in consumer.consume(100, 0.3) if not m.error()]
            if not msgs:
                continue
            producer.begin_transaction()
            nxt: dict[int, int] = {}
            for m in msgs:
                producer.produce(dst, value=m.value().upper(), partition=m.partition())
                nxt[m.partition()] = m.offset() + 1
            try:
                producer.send_offsets_to_transaction([TopicPartition(src, p, o) for p, o in nxt.items()],
                                                     consumer.consumer_group_metadata(), 30)
                producer.commit_transaction(30)
                done += len(msgs)
            except KafkaException as exc:
                err = exc.args[0]
                refused.append(f"{steps[-1:]} {err.name()}: {err.str()}")
                assert err.txn_requires_abort(), refused
                producer.abort_transaction(30)
                for tp in consumer.committed([TopicPartition(src, p) for p in nxt], 30):
                    consumer.seek(TopicPartition(src, tp.partition, max(tp.offset, 0)))
        assert done >= until, f"processed {done} of {until} after {steps}; refused {refused}"

    try:
        more("a", 60)
        process(60)
        first = cluster.coordinator("group", group)
        target = next(n for n in cluster.node_ids() if n != first)
        cluster.move_coordinator("group", group, target)
        steps.append(f"group coordinator {first} -> {target}")
        more("b", 60)
        process(120)
        txn_first = cluster.coordinator("transaction", txn_id)
        txn_target = next(n for n in cluster.node_ids() if n not in (txn_first, target))
        cluster.move_coordinator("transaction", txn_id, txn_target)
        steps.append(f"transaction coordinator {txn_first} -> {txn_target}")
        more("c", 60)
        process(180)
    finally:
        consumer.close()
    assert done == len(sent), f"{done} processed, {len(sent)} sent ({steps}; refused {refused})"
    reader = Consumer({"bootstrap.servers": bs, "group.id": f"r-{src}", "auto.offset.reset": "earliest",
                       "isolation.level": "read_committed", "enable.auto.commit": False})
    reader.assign([TopicPartition(dst, p, 0) for p in range(PARTS)])
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + 60
    while len(got) < len(sent) and time.monotonic() < deadline:
        m = reader.poll(0.3)
        if m is not None and not m.error():
            got.append((m.partition(), m.value()))
    end = time.monotonic() + 2   # nothing aborted may follow
    while time.monotonic() < end:
        m = reader.poll(0.2)
        if m is not None and not m.error():
            got.append((m.partition(), m.value()))
    reader.close()
    assert sorted(got) == sorted((p, v.upper()) for p, v in sent), f"read_committed across {steps}; {refused}"
    offsets_reader = Consumer({"bootstrap.servers": bs, "group.id": group})
    offsets = offsets_reader.committed([TopicPartition(src, p) for p in range(PARTS)], timeout=30)
    offsets_reader.close()
    want = {p: sum(1 for q, _ in sent if q == p) for p in range(PARTS)}
    assert {tp.partition: tp.offset for tp in offsets} == want, f"committed offsets across {steps}"
