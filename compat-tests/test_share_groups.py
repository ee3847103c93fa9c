"""Share groups (KIP-932, "queues for Kafka") with confluent-kafka 2.16's ``ShareConsumer`` (librdkafka 2.16:
ShareGroupHeartbeat v1, ShareFetch v1, ShareAcknowledge v1), against a broker emulating Kafka 4.3 (the
profile that advertises the share group APIs).

Shown: consumers of one partition share its records, each delivered once when all are accepted; a released
record goes to another consumer; a consumer SIGKILLed while holding records loses them to another at once
(its connection closed: its share session ends, as in Kafka), one frozen (SIGSTOP, connection open) when their
locks expire; a rejected record is never delivered again; the delivery count limit archives a record released
again and again; the delivery state survives a broker SIGKILL; and a read_committed group (a group config set
with IncrementalAlterConfigs) never gets records of aborted or still-open transactions.

Test names end in ``_confluent_kafka``: make_matrix.py shows each as a row with a confluent-kafka cell.

The Java client 3.9.1's KafkaShareConsumer speaks Kafka 4.0's early-access v0 of these APIs; the default
profile serves v0 (``--emulate-kafka 4.3``, like Kafka 4.3, does not), and one test runs it there.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from harness.topics import create_topic

from kafkalite.tests.support.requires import require

require("confluent_kafka")   # a loud skip, or a failure under CI=true
import confluent_kafka as ck  # noqa: E402

KAFKALITE_EMULATE = "4.3"
LOCK_MS = 3000
LIMIT = 3
# Each group reads from the beginning: its share.auto.offset.reset is set to earliest through
# IncrementalAlterConfigs before its first consumer (share_group_from_earliest), as one does on Kafka.
# (the minimum too: Kafka refuses to start with a lock duration below group.share.min.record.lock.duration.ms)
KAFKALITE_ARGS = ["--override", f"group.share.record.lock.duration.ms={LOCK_MS}",
                  "--override", f"group.share.min.record.lock.duration.ms={LOCK_MS}",
                  "--override", f"group.share.delivery.count.limit={LIMIT}",
                  "--override", "share.coordinator.state.topic.num.partitions=3",
                  "--override", "offsets.topic.num.partitions=3"]     # membership records: a small topic
WORKER = Path(__file__).resolve().parent / "harness" / "share_worker.py"


def produce(bootstrap: str, topic: str, n: int, start: int = 0) -> None:
    p = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.num.messages": 5})
    for i in range(start, start + n):
        p.produce(topic, value=b"r%d" % i)
        if i % 5 == 4:
            p.poll(0)
    assert p.flush(30) == 0


_RESET_SET: set[tuple[str, str]] = set()   # (bootstrap, group) whose share.auto.offset.reset a test has set


def share_group_from_earliest(bootstrap: str, group: str) -> None:
    """share.auto.offset.reset=earliest for ``group`` (once; not over a value the test set itself)."""
    if (bootstrap, group) not in _RESET_SET:
        set_group_config(bootstrap, group, "share.auto.offset.reset", "earliest")


def consumer(bootstrap: str, group: str, topic: str, explicit: bool = False, **conf):  # type: ignore[no-untyped-def]
    share_group_from_earliest(bootstrap, group)
    c = ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                          "share.acknowledgement.mode": "explicit" if explicit else "implicit", **conf})
    c.subscribe([topic])
    return c


def messages(c, timeout: float = 1.0) -> list:  # type: ignore[no-untyped-def]
    out = []
    for m in c.poll(timeout):
        assert m.error() is None, m.error()
        out.append(m)
    return out


def test_four_consumers_share_one_partition_each_record_once_confluent_kafka(broker, topic):
    bs = broker.bootstrap
    create_topic(bs, topic, 1)
    n = 200
    got: dict[int, list[int]] = {i: [] for i in range(4)}
    stop = threading.Event()
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            c = consumer(bs, "share-four", topic, **{"max.poll.records": 10})
            try:
                while not stop.is_set():
                    got[i].extend(m.offset() for m in messages(c, 0.5))   # implicit: accepted at the next poll
            finally:
                c.close()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(4)]
    for t in threads:
        t.start()
    # the records come once the four have joined, in 20 rounds: produced all at once before, one member's first
    # ShareFetch can acquire every record (Kafka 4.4 did, in a reference run), and nothing is left to share
    time.sleep(5.0)
    for r in range(n // 10):
        produce(bs, topic, 10, start=10 * r)
        time.sleep(0.1)
    deadline = time.monotonic() + 60
    while sum(len(v) for v in got.values()) < n and time.monotonic() < deadline and not errors:
        time.sleep(0.2)
    time.sleep(1.0)            # anything delivered twice would show up now
    stop.set()
    for t in threads:
        t.join(30)
    assert not errors, errors
    every = [o for v in got.values() for o in v]
    assert sorted(every) == list(range(n)), "each record exactly once"
    assert sum(1 for v in got.values() if v) >= 2, {i: len(v) for i, v in got.items()}


def test_released_record_goes_to_another_consumer_confluent_kafka(broker, topic):
    bs = broker.bootstrap
    create_topic(bs, topic, 1)
    produce(bs, topic, 5)
    a = consumer(bs, "share-release", topic, explicit=True)
    first: list = []
    deadline = time.monotonic() + 30
    while not first and time.monotonic() < deadline:
        first = messages(a)
    assert first and first[0].offset() == 0 and first[0].delivery_count() == 1
    a.acknowledge(first[0], ck.AcknowledgeType.RELEASE)
    for m in first[1:]:
        a.acknowledge(m)
    a.commit_sync(30)
    a.close()
    b = consumer(bs, "share-release", topic, explicit=True)
    try:
        seen: list = []
        deadline = time.monotonic() + 30
        while not seen and time.monotonic() < deadline:
            seen = messages(b)
        rest = {m.offset() for m in first[1:]}
        redelivered = [(m.offset(), m.delivery_count(), m.value()) for m in seen if m.offset() not in rest]
        assert redelivered[:1] == [(0, 2, b"r0")]
        assert not [m for m in seen if m.offset() in rest], "accepted records are never delivered again"
        for m in seen:
            b.acknowledge(m)
        b.commit_sync(30)
    finally:
        b.close()


def _held_by_worker(bs: str, topic: str, group: str):  # type: ignore[no-untyped-def]
    """A consumer process that acquired records and holds them: (process, offsets)."""
    share_group_from_earliest(bs, group)
    worker = subprocess.Popen([sys.executable, str(WORKER), bs, topic, group, "10"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    line = worker.stdout.readline()
    held = json.loads(line)["offsets"] if line else []
    assert held, line
    return worker, held


def _redelivered(c, held: list[int], timeout: float) -> dict[int, int]:  # type: ignore[no-untyped-def]
    seen: dict[int, int] = {}
    deadline = time.monotonic() + timeout
    while not set(held) <= set(seen) and time.monotonic() < deadline:
        seen.update((m.offset(), m.delivery_count()) for m in messages(c))
    return seen


def test_consumer_sigkill_releases_its_records_at_once_confluent_kafka(broker_factory, topic):
    """A SIGKILLed consumer's connection closes: the broker ends its share session and its records go to
    another consumer at once — the lock and the member's session (10 minutes here) are not waited for — and, as
    Kafka 4.2+'s releaseAcquiredRecords does (KAFKA-19972), the interrupted delivery counts (delivery count 2)."""
    # locks and member sessions of 10 minutes: only the closed connection can give the records back
    b = broker_factory(emulate="4.3", extra_args=[*KAFKALITE_ARGS,
                                                  "--override", "group.share.record.lock.duration.ms=600000",
                                                  "--override", "group.share.max.record.lock.duration.ms=600000",
                                                  "--override", "group.share.session.timeout.ms=600000",
                                                  "--override", "group.share.max.session.timeout.ms=600000"])
    bs = b.bootstrap
    create_topic(bs, topic, 1)
    produce(bs, topic, 10)
    worker, held = _held_by_worker(bs, topic, "share-kill")
    try:
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
        c = consumer(bs, "share-kill", topic)
        try:
            seen = _redelivered(c, held, 60)     # (a hang guard: without the release this takes 10 minutes)
            assert set(held) <= set(seen), "the killed consumer's records were not released"
            assert all(seen[o] == 2 for o in held), seen
        finally:
            c.close()
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)


def test_lock_expiry_after_consumer_freezes_confluent_kafka(broker, topic):
    """A consumer frozen (SIGSTOP) while holding records keeps its connection, so only the acquisition locks
    expiring give its records to another consumer; that delivery counted (delivery count 2)."""
    bs = broker.bootstrap
    create_topic(bs, topic, 1)
    produce(bs, topic, 10)
    worker, held = _held_by_worker(bs, topic, "share-freeze")
    try:
        worker.send_signal(signal.SIGSTOP)
        c = consumer(bs, "share-freeze", topic)
        try:
            seen = _redelivered(c, held, 30 + LOCK_MS / 1000)
            assert set(held) <= set(seen), "the frozen consumer's records come back when their locks expire"
            assert all(seen[o] == 2 for o in held), seen
        finally:
            c.close()
    finally:
        worker.kill()
        worker.wait(10)


def test_reject_archives_and_delivery_limit_confluent_kafka(broker, topic):
    bs = broker.bootstrap
    create_topic(bs, topic, 1)
    produce(bs, topic, 4)
    c = consumer(bs, "share-limit", topic, explicit=True)
    try:
        deliveries: dict[int, list[int]] = {}
        quiet_since = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            batch = messages(c, 0.5)
            if not batch:
                if not deliveries:   # still joining (Kafka: the first assignment comes with a heartbeat, ~5 s)
                    continue
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since > 3:
                    break
                continue
            quiet_since = None
            for m in batch:
                deliveries.setdefault(m.offset(), []).append(m.delivery_count())
                # offset 0 is rejected, offset 1 released every time, the rest accepted
                kind = {0: ck.AcknowledgeType.REJECT, 1: ck.AcknowledgeType.RELEASE}.get(m.offset(),
                                                                                       ck.AcknowledgeType.ACCEPT)
                c.acknowledge(m, kind)
            c.commit_sync(30)
        assert deliveries[0] == [1], "a rejected record is archived, never delivered again"
        assert deliveries[1] == list(range(1, LIMIT + 1)), "released until the delivery count limit"
        assert deliveries[2] == [1] and deliveries[3] == [1]
    finally:
        c.close()


def test_state_survives_broker_sigkill_confluent_kafka(broker_factory, topic):
    b = broker_factory(emulate="4.3", extra_args=KAFKALITE_ARGS)
    bs = b.bootstrap
    create_topic(bs, topic, 1)
    n = 30
    produce(bs, topic, n)
    a = consumer(bs, "share-crash", topic, explicit=True, **{"max.poll.records": 20})
    accepted: set[int] = set()
    try:
        held: list = []
        deadline = time.monotonic() + 30
        while len(held) < 20 and time.monotonic() < deadline:
            held += messages(a)
        assert held
        for m in held:
            if m.offset() % 2 == 0:
                a.acknowledge(m)
                accepted.add(m.offset())
            else:
                a.acknowledge(m, ck.AcknowledgeType.RELEASE)
        results = a.commit_sync(30)
        assert all(v is None for v in results.values()), results
        b.restart(signal.SIGKILL)        # the accepted records' state must be on disk already
    finally:
        a.close()
    c = consumer(bs, "share-crash", topic)
    try:
        seen: set[int] = set()
        deadline = time.monotonic() + 60
        while len(seen) < n - len(accepted) and time.monotonic() < deadline:
            seen.update(m.offset() for m in messages(c))
        assert not seen & accepted, "an accepted record was delivered again after the crash"
        assert seen == set(range(n)) - accepted, "a record was lost"
    finally:
        c.close()


def set_group_config(bootstrap: str, group: str, name: str, value: str,
                     client_conf: dict[str, object] | None = None) -> None:
    """Set a GROUP config with IncrementalAlterConfigs (confluent-kafka's admin client), as against Kafka;
    raises the client's KafkaException when the broker refuses it. ``client_conf``: more admin client settings
    (SASL, ...)."""
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])
    admin = AdminClient({"bootstrap.servers": bootstrap, **(client_conf or {})})   # kept alive until answered
    for f in admin.incremental_alter_configs([res]).values():
        f.result(30)
    if name == "share.auto.offset.reset":
        _RESET_SET.add((bootstrap, group))
    # Kafka's broker takes the config from its metadata a moment after the controller committed it: wait until
    # DescribeConfigs shows it (a consumer joining before would start where the old value says)
    desc = ConfigResource(ResourceType.GROUP, group)
    deadline = time.monotonic() + 30
    while admin.describe_configs([desc])[desc].result(30)[name].value != value:
        assert time.monotonic() < deadline, f"{group}: {name}={value} not in effect after 30 s"
        time.sleep(0.1)


def test_read_committed_skips_aborted_transactions_confluent_kafka(broker, topic):
    """share.isolation.level=read_committed (a group config, set with IncrementalAlterConfigs as against Kafka):
    records of an aborted transaction are never delivered, nor records of an open one until it commits."""
    bs = broker.bootstrap
    create_topic(bs, topic, 1)
    group = "share-rc"
    set_group_config(bs, group, "share.isolation.level", "read_committed")
    p = ck.Producer({"bootstrap.servers": bs, "transactional.id": "share-rc-tx", "linger.ms": 0})
    p.init_transactions(30)

    def txn(values: list[bytes], commit: bool | None) -> None:
        p.begin_transaction()
        for v in values:
            p.produce(topic, value=v)
        p.flush(30)
        if commit is True:
            p.commit_transaction(30)
        elif commit is False:
            p.abort_transaction(30)

    txn([b"c%d" % i for i in range(5)], True)
    txn([b"a%d" % i for i in range(5)], False)
    txn([b"c%d" % i for i in range(5, 10)], True)
    txn([b"open"], None)                              # stays open: above the last stable offset
    c = consumer(bs, group, topic)
    try:
        seen: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(seen) < 10 and time.monotonic() < deadline:
            seen += [m.value() for m in messages(c)]
        assert seen == [b"c%d" % i for i in range(10)], seen      # in offset order; no aborted record among them
        p.commit_transaction(30)
        deadline = time.monotonic() + 60
        while len(seen) < 11 and time.monotonic() < deadline:
            seen += [m.value() for m in messages(c)]
        assert seen[10:] == [b"open"], seen
    finally:
        c.close()


@pytest.mark.kafkalite_only("Kafka 4.0's early-access v0 share group APIs (the Java client 3.9.1's "
                            "KafkaShareConsumer); Kafka 4.4 serves ShareGroupHeartbeat, ShareFetch and "
                            "ShareAcknowledge v1 only")
def test_share_group_v0_early_access_java(broker_factory, topic, get_client):
    """The Java client 3.9.1's KafkaShareConsumer speaks Kafka 4.0's early-access v0 of the share group APIs
    (ShareGroupHeartbeat with a coordinator-named member, ShareFetch/ShareAcknowledge v0). The default
    profile serves v0 (``--emulate-kafka 4.3`` does not, as Kafka 4.3): records are shared, acknowledged, and
    a released record is delivered again to the next consumer of the group."""
    java = get_client("java")
    b = broker_factory(extra_args=[*KAFKALITE_ARGS,          # default profile
                                   "--override", "kafkalite.share.auto.offset.reset=earliest"])
    bs = b.bootstrap
    create_topic(bs, topic, 1)
    produce(bs, topic, 10)
    first = java._call({"op": "share_consume", "bootstrap": bs, "topic": topic, "group": "share-java",
                        "count": 10, "acks": {"0": "RELEASE", "3": "REJECT"}})["records"]
    assert [(r["offset"], r["value"]) for r in first] == [(i, f"r{i}") for i in range(10)]
    again = java._call({"op": "share_consume", "bootstrap": bs, "topic": topic, "group": "share-java",
                        "count": 1, "timeout_ms": 30000})["records"]
    assert [r["offset"] for r in again] == [0], "only the released record comes back"


def test_auto_offset_reset_by_duration_confluent_kafka(broker, topic):
    """share.auto.offset.reset=by_duration:PT1H (KIP-1106, a group config set with IncrementalAlterConfigs): the
    group starts at the first record stamped within the last hour; records stamped two hours ago are never
    delivered. On a partition with only old records nothing is delivered (Kafka answers OFFSET_NOT_AVAILABLE
    for it until a record inside the window exists) and the first newer record is, once produced."""
    bs = broker.bootstrap
    old_only = topic + "-old"
    create_topic(bs, topic, 1)
    create_topic(bs, old_only, 1)
    for group in ("share-bd", "share-bd-old"):
        set_group_config(bs, group, "share.auto.offset.reset", "by_duration:PT1H")
    with pytest.raises(ck.KafkaException, match="by_duration"):
        set_group_config(bs, "share-bd", "share.auto.offset.reset", "by_duration:-PT1H")
    now = int(time.time() * 1000)
    p = ck.Producer({"bootstrap.servers": bs, "linger.ms": 0})
    for i in range(5):
        p.produce(topic, value=b"old%d" % i, timestamp=now - 2 * 3600_000)
        p.produce(old_only, value=b"old%d" % i, timestamp=now - 2 * 3600_000)
    for i in range(5):
        p.produce(topic, value=b"new%d" % i, timestamp=now - 60_000 + i)
    assert p.flush(30) == 0
    c = consumer(bs, "share-bd", topic)
    c_old = consumer(bs, "share-bd-old", old_only)
    try:
        seen: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(seen) < 5 and time.monotonic() < deadline:
            seen += [m.value() for m in messages(c)]
        assert seen == [b"new%d" % i for i in range(5)], seen
        old_seen = [m.value() for _ in range(3) for m in c_old.poll(1.0) if m.error() is None]
        assert old_seen == []
        p.produce(old_only, value=b"fresh", timestamp=int(time.time() * 1000))
        assert p.flush(30) == 0
        deadline = time.monotonic() + 60
        while not old_seen and time.monotonic() < deadline:
            old_seen += [m.value() for m in c_old.poll(1.0) if m.error() is None]
        assert old_seen == [b"fresh"]
    finally:
        c.close()
        c_old.close()


# -- three brokers ---------------------------------------------------------------------------------------------
# Against Apache Kafka (KAFKALITE_COMPAT_BROKER=kafka) the 3-broker tests run on the harness's 3-node KRaft cluster
# (conftest's module-scoped kafka_cluster fixture, shaped by KAFKA_CLUSTER: Kafka's replication factor 3 for
# __share_group_state and __consumer_offsets, 3 partitions each, as the kafkalite clusters below have them).
KAFKA_CLUSTER = {"nodes": 3, "overrides": {"share.coordinator.state.topic.num.partitions": "3",
                                           "offsets.topic.num.partitions": "3"}}


class ThreeBrokers:
    """A test's cluster of 3 brokers: kafkalite's (an in-process ``kafkalite.cluster.Cluster``, the
    ``kafkalite_cluster`` fixture with the test's marker) or, in a reference run, Kafka's (``kafka_cluster``: 3
    JVMs). What the tests do to it works on both: partitions' leaders, replicas and ISRs from Metadata
    (confluent-kafka), a leader moved to another replica (kafkalite: its control API; Kafka: the Java Admin
    reorders the replicas with AlterPartitionReassignments, then elects the preferred leader), a broker stopped
    (Kafka: SIGTERM, a controlled shutdown), the coordinator of a group."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        from harness.broker import reference_run

        self._request = request
        self.kafka = request.getfixturevalue("kafka_cluster") if reference_run() else None
        self.kafkalite = None if self.kafka is not None else request.getfixturevalue("kafkalite_cluster")
        self.bootstrap: str = self.kafka.bootstrap if self.kafka is not None else self.kafkalite.bootstrap_servers

    def partitions(self, topic: str) -> dict:  # type: ignore[type-arg]
        """partition -> confluent-kafka's PartitionMetadata (leader, replicas, isrs); {} while unknown."""
        from confluent_kafka.admin import AdminClient

        md = AdminClient({"bootstrap.servers": self.bootstrap}).list_topics(topic=topic, timeout=20)
        tm = md.topics.get(topic)
        return {} if tm is None or tm.error is not None else dict(tm.partitions)

    def wait(self, topic: str, what: str, cond) -> dict:  # type: ignore[no-untyped-def,type-arg]
        deadline = time.monotonic() + 60
        while True:
            parts = self.partitions(topic)
            if parts and cond(parts):
                return parts
            assert time.monotonic() < deadline, f"{topic}: {what} after 60 s: {parts}"
            time.sleep(0.2)

    def move_leader(self, topic: str, partition: int, target: int) -> None:
        if self.kafkalite is not None:
            self.kafkalite.sync.move_leader(topic, partition, target)
            return
        java = self._request.getfixturevalue("get_client")("java")
        replicas = list(self.partitions(topic)[partition].replicas)
        order = [target, *(r for r in replicas if r != target)]
        r = java.admin(self.bootstrap, "alter_reassignments", reassignments=[[topic, partition, order]])
        assert list(r["partitions"].values()) == [None], r
        self.wait(topic, f"replicas {order}", lambda ps: list(ps[partition].replicas) == order)
        r = java.admin(self.bootstrap, "elect_leaders", partitions=[[topic, partition]])
        assert list(r.get("partitions", {}).values()) == [None], r
        self.wait(topic, f"leader {target}", lambda ps: ps[partition].leader == target)

    def stop_broker(self, node: int) -> None:
        if self.kafkalite is not None:
            self.kafkalite.sync.stop_broker(node)
        else:
            assert self.kafka.nodes[node - 1].stop() == 0

    def coordinator(self, group: str) -> int:
        if self.kafkalite is not None:
            return int(self.kafkalite.coordinator("group", group))
        from kafkalite.client.shareadmin import ShareAdmin

        with ShareAdmin(self.bootstrap, timeout=30) as admin:
            admin.describe(group)
            return admin.coordinator_id


@pytest.fixture
def three_brokers(request: pytest.FixtureRequest) -> ThreeBrokers:
    return ThreeBrokers(request)


@pytest.mark.kafkalite_cluster(brokers=3, emulate_kafka=KAFKALITE_EMULATE,
                               overrides={"share.coordinator.state.topic.num.partitions": "3"})
def test_share_group_on_a_three_broker_cluster_confluent_kafka(three_brokers):
    """Two ShareConsumers on a 3-partition topic whose leaders are three different brokers
    (``kafkalite.cluster``): heartbeats go to the group's coordinator, ShareFetch and ShareAcknowledge to each
    partition's leader, which keeps that share-partition and writes its state through the leader of its
    ``__share_group_state`` partition. Every record is delivered exactly once, and all are acknowledged: the
    group's lag (DescribeShareGroupOffsets v1 at the coordinator, KIP-1226) is 0 on each partition.
    (Kafka: the same on its 3-node cluster, ``ThreeBrokers``.)

    The start offsets are not compared with the partitions' ends: Kafka 4.4 reports the start offset its share
    coordinator persisted, which its SharePartition writes before the acknowledgement moves it (one write late:
    10 records acknowledged leave start 0 and lag 0 there; 5 more then show start 10). kafkalite reports the
    moved start (10, then 15): a difference kafkalite's share coordinator still has."""
    from kafkalite.client.shareadmin import ShareAdmin

    cluster = three_brokers
    bs = cluster.bootstrap
    topic = "share-cluster"
    create_topic(bs, topic, 3)
    leaders = {q: pm.leader for q, pm in cluster.partitions(topic).items()}
    assert sorted(leaders.values()) == [1, 2, 3], leaders
    n = 300
    p = ck.Producer({"bootstrap.servers": bs, "linger.ms": 0})
    for i in range(n):
        p.produce(topic, value=b"r%d" % i, partition=i % 3)
    assert p.flush(30) == 0
    got: dict[int, list[tuple[int, int]]] = {0: [], 1: []}
    stop = threading.Event()
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            c = consumer(bs, "share-cluster-g", topic, **{"max.poll.records": 20})
            try:
                while not stop.is_set():
                    got[i].extend((m.partition(), m.offset()) for m in messages(c, 0.5))
            finally:
                c.close()      # implicit mode: the last records are acknowledged here
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(2)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while sum(map(len, got.values())) < n and time.monotonic() < deadline and not errors:
        time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join(30)
    assert not errors, errors
    every = got[0] + got[1]
    assert sorted(every) == sorted((i % 3, i // 3) for i in range(n)), f"{len(every)} delivered"
    with ShareAdmin(bs, timeout=30) as admin:
        deadline = time.monotonic() + 30
        while True:
            starts = admin.start_offsets("share-cluster-g")
            if {k: v[2] for k, v in starts.items()} == {(topic, q): 0 for q in range(3)} \
                    or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert [g for g, _state in admin.list_groups()] == ["share-cluster-g"]   # ListGroups at every broker
    assert {k: v[2] for k, v in starts.items()} == {(topic, q): 0 for q in range(3)}, starts
    assert all(0 <= v[0] <= n // 3 for v in starts.values()), starts


@pytest.mark.kafkalite_cluster(brokers=3, emulate_kafka=KAFKALITE_EMULATE,
                               overrides={"share.coordinator.state.topic.num.partitions": "3",
                                          "offsets.topic.num.partitions": "3"})
def test_share_group_across_leader_moves_and_a_broker_stop_confluent_kafka(three_brokers):
    """Two ShareConsumers (explicit acknowledgement, commit_sync) on a 3-broker cluster while a partition's leader
    moves and then a broker stops (its partitions' leaders, and those of its ``__share_group_state``
    partitions, move): each new leader takes the share-partition from the latest persisted state, so every
    record is acknowledged exactly once — an acknowledged record is never delivered again — and none is lost.
    Records acquired but not acknowledged at the old leader are delivered again (Kafka's rule as well).
    (Kafka: the same on its 3-node cluster, the leader moved by reassignment and election, ``ThreeBrokers``.)"""
    from collections import Counter

    cluster = three_brokers
    bs = cluster.bootstrap
    topic, group = "share-moves", "share-moves-g"
    from confluent_kafka.admin import AdminClient, NewTopic
    adm = AdminClient({"bootstrap.servers": bs})
    adm.create_topics([NewTopic(topic, 3, 3)])[topic].result(30)        # replicated: leaders can move
    cluster.wait(topic, "3 partitions of 3 replicas in sync",
                 lambda ps: len(ps) == 3 and all(pm.leader >= 0 and len(pm.isrs) == 3 for pm in ps.values()))
    per_phase = 60
    p = ck.Producer({"bootstrap.servers": bs, "linger.ms": 0})
    produced = 0

    def produce_phase() -> None:
        nonlocal produced
        for i in range(produced, produced + per_phase):
            p.produce(topic, value=b"r%d" % i, partition=i % 3)
        assert p.flush(30) == 0
        produced += per_phase

    delivered: list[tuple[int, int]] = []
    acked: list[tuple[int, int]] = []
    done: set[tuple[int, int]] = set()
    redelivered: list[tuple[int, int]] = []
    stop = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            c = consumer(bs, group, topic, explicit=True, **{"max.poll.records": 10})
            try:
                while not stop.is_set():
                    batch = messages(c, 0.5)
                    if not batch:
                        continue
                    keys = [(m.partition(), m.offset()) for m in batch]
                    redelivered.extend(k for k in keys if k in done)   # delivered after its acknowledgement
                    delivered.extend(keys)
                    for m in batch:
                        c.acknowledge(m)
                    results = c.commit_sync(30)
                    ok = {tp.partition for tp, err in results.items() if err is None}
                    acked.extend(k for k in keys if k[0] in ok)
                    done.update(k for k in keys if k[0] in ok)
            finally:
                c.close()
        except BaseException as e:
            errors.append(e)

    def wait_all_acked() -> None:
        want = {(i % 3, i // 3) for i in range(produced)}
        deadline = time.monotonic() + 60
        while not want <= set(acked) and time.monotonic() < deadline and not errors:
            time.sleep(0.1)
        assert not errors, errors
        assert want <= set(acked), f"{len(want - set(acked))} of {produced} not acknowledged"

    threads = [threading.Thread(target=run, daemon=True) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        produce_phase()
        wait_all_acked()
        parts = cluster.partitions(topic)
        produce_phase()                                          # consumers are at work when the leader moves
        target = next(r for r in parts[0].isrs if r != parts[0].leader)
        cluster.move_leader(topic, 0, target)
        wait_all_acked()
        coordinator = cluster.coordinator(group)
        victim = next(n for n in (1, 2, 3) if n != coordinator)
        produce_phase()
        cluster.stop_broker(victim)
        wait_all_acked()
        produce_phase()
        wait_all_acked()
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert not errors, errors
    counts = Counter(acked)
    assert set(counts) == {(i % 3, i // 3) for i in range(produced)}
    again = sorted(k for k, v in counts.items() if v > 1)
    assert not again, f"acknowledged records delivered (and acknowledged) again: {again[:20]}"
    assert not redelivered, f"acknowledged records delivered again: {sorted(redelivered)[:20]}"
    assert set(delivered) == set(counts)
