"""The rest of Kafka's admin surface (#15) through the admin clients' own calls, as a one-node Kafka 3.9
answers it: CreatePartitions with explicit assignments, ElectLeaders, partition reassignments,
AlterReplicaLogDirs, DescribeProducers, DescribeQuorum, finalized features, broker configs.

kafka-python 3.0.12, confluent-kafka 2.x and Java kafka-clients 3.9.1 (compat-tests/java/AdminOps.java);
an API a client has no call for is driven by the clients that have one."""
from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from harness.topics import create_topic


def _java(get_client: Any) -> Any:
    return get_client("java")


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


# -- CreatePartitions with explicit assignments -------------------------------------------------------------
NO_BROKER_7 = "The manual partition assignment includes broker 7, but no such broker is registered."
COUNT_MISMATCH = "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."


def test_create_partitions_assignments_kafka_python(broker) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewPartitions

    bs = broker.bootstrap
    topic = _name("cpa-kp")
    create_topic(bs, topic, 1)
    a = KafkaAdminClient(bootstrap_servers=bs)
    try:
        r = a.create_partitions({topic: NewPartitions(2, [[1]])}, raise_errors=False)
        assert [(t.name, t.error_code) for t in r.results] == [(topic, 0)]
        r = a.create_partitions({topic: NewPartitions(3, [[7]])}, raise_errors=False)
        assert [(t.error_code, t.error_message) for t in r.results] == [(39, NO_BROKER_7)]
    finally:
        a.close()
    assert get_partitions(bs, topic) == 2


def get_partitions(bs: str, topic: str) -> int:
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bs}).list_topics(topic, timeout=20)
    return len(md.topics[topic].partitions)


def test_create_partitions_assignments_confluent_kafka(broker) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewPartitions

    bs = broker.bootstrap
    topic = _name("cpa-ck")
    create_topic(bs, topic, 1)
    a = AdminClient({"bootstrap.servers": bs})
    a.create_partitions([NewPartitions(topic, 2, replica_assignment=[[1]])])[topic].result(30)
    for total, assign, msg in ((3, [[7]], NO_BROKER_7), (4, [[1]], COUNT_MISMATCH)):
        with pytest.raises(KafkaException) as ei:
            a.create_partitions([NewPartitions(topic, total, replica_assignment=assign)])[topic].result(30)
        err = ei.value.args[0]
        assert (err.name(), err.str()) == ("INVALID_REPLICA_ASSIGNMENT", msg)
    assert get_partitions(bs, topic) == 2


def test_create_partitions_assignments_java(broker, get_client) -> None:
    bs = broker.bootstrap
    topic = _name("cpa-j")
    create_topic(bs, topic, 1)
    j = _java(get_client)
    assert j.admin(bs, "create_partitions", topic=topic, total=3, assignments=[[1], [1]])["error"] is None
    assert j.admin(bs, "create_partitions", topic=topic, total=4, assignments=[[1, 1]])["error"] == (
        "InvalidReplicaAssignmentException: The manual partition assignment includes the broker 1 more than once.")
    assert j.admin(bs, "create_partitions", topic=topic, total=4, assignments=[[]])["error"] == (
        "InvalidReplicaAssignmentException: The manual partition assignment includes an empty replica list.")
    assert j.admin(bs, "create_partitions", topic=topic, total=5, assignments=[[1]])["error"] == (
        "InvalidReplicaAssignmentException: " + COUNT_MISMATCH)
    assert j.admin(bs, "create_partitions", topic=topic, total=3)["error"] == (
        "InvalidPartitionsException: Topic already has 3 partition(s).")
    assert get_partitions(bs, topic) == 3


# -- finalized features (ApiVersions v3+) ------------------------------------------------------------------
# What each broker advertises, (supported, finalized) per feature. kafkalite's default profile presents Kafka
# 4.4's features that it implements (kafkalite.metadata.features; a node formatted with --standalone:
# kraft.version 1, and FinalizedFeaturesEpoch 0; share.version 2, the share group DLQ; transaction.version 2, KIP-890 part 2). The reference broker is Kafka 4.4 as
# harness/reference.py formats it (one node: --standalone, so kraft.version is finalized at 1 too); its epoch is
# the offset of the metadata image the levels were read from (it grows, e.g. with the controller's no-op records).
FEATURES_KAFKALITE = {"metadata.version": ((7, 33), (33, 33)), "kraft.version": ((0, 1), (1, 1)),
                      "group.version": ((0, 1), (1, 1)), "share.version": ((0, 2), (2, 2)),
                      "streams.version": ((0, 1), (1, 1)), "transaction.version": ((0, 2), (2, 2)),
                      "eligible.leader.replicas.version": ((0, 1), (1, 1))}
FEATURES_4_4 = {"metadata.version": ((7, 33), (33, 33)), "kraft.version": ((0, 1), (1, 1)),
                "group.version": ((0, 1), (1, 1)), "share.version": ((0, 2), (2, 2)),
                "streams.version": ((0, 1), (1, 1)), "transaction.version": ((0, 2), (2, 2)),
                "eligible.leader.replicas.version": ((0, 1), (1, 1))}


def advertised_features(broker) -> dict[str, tuple[tuple[int, int], tuple[int, int] | None]]:
    return FEATURES_4_4 if broker.kind == "kafka" else FEATURES_KAFKALITE


def _epoch_ok(broker, epoch: int) -> bool:
    return epoch > 0 if broker.kind == "kafka" else epoch == 0


def test_describe_features_kafka_python(broker) -> None:
    from kafka import KafkaAdminClient

    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        f = a.describe_features()
    finally:
        a.close()
    assert {k: (v["supported"], v.get("finalized")) for k, v in f.items()} == advertised_features(broker)
    assert all(_epoch_ok(broker, v["finalized_epoch"]) for v in f.values() if "finalized" in v)


def test_describe_features_java(broker, get_client) -> None:
    r = _java(get_client).admin(broker.bootstrap, "describe_features")
    want = advertised_features(broker)
    assert r["finalized"] == {k: list(fin) for k, (_sup, fin) in want.items() if fin}
    assert r["supported"] == {k: list(sup) for k, (sup, _fin) in want.items()}
    assert _epoch_ok(broker, r["epoch"])


def test_api_versions_with_features_kcat(broker, get_client) -> None:
    """kcat 1.7.1 (librdkafka 2.0.2) parses ApiVersions v3 carrying the 3.9 feature tags: no protocol error,
    and the features it derives from the API list (consumer groups, idempotence) are switched on."""
    import subprocess

    from harness.clients.base import which
    from harness.clients.kcat import KCAT

    get_client("kcat")
    p = subprocess.run([which("kcat") or KCAT, "-b", broker.bootstrap, "-L", "-d", "protocol,broker,feature", "-m", "20"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "Received ApiVersionResponse (v3" in p.stderr and "PROTOERR" not in p.stderr
    assert "BrokerBalancedConsumer" in p.stderr and "IdempotentProducer" in p.stderr


# -- ElectLeaders ------------------------------------------------------------------------------------------
def test_elect_leaders_kafka_python(broker) -> None:
    from kafka import KafkaAdminClient

    bs = broker.bootstrap
    topic = _name("el-kp")
    create_topic(bs, topic, 2)
    a = KafkaAdminClient(bootstrap_servers=bs)
    try:
        r = a.elect_leaders(0, {topic: [0, 1]})             # ELECTION_NOT_NEEDED is not an error to it
        assert [(p.partition_id, p.error_code) for t in r.replica_election_results for p in t.partition_result] \
            == [(0, 84), (1, 84)]
        r = a.elect_leaders(0, [topic])          # kafka-python names every partition of the topic itself
        assert [(p.partition_id, p.error_code) for t in r.replica_election_results for p in t.partition_result] \
            == [(0, 84), (1, 84)]
        r = a.elect_leaders(0, {"no-such-topic": [0]}, raise_errors=False)
        assert [(p.error_code, p.error_message) for t in r.replica_election_results for p in t.partition_result] \
            == [(3, "No such topic as no-such-topic")]
    finally:
        a.close()


def test_elect_leaders_confluent_kafka(broker) -> None:
    from confluent_kafka import ElectionType, TopicPartition
    from confluent_kafka.admin import AdminClient

    bs = broker.bootstrap
    topic = _name("el-ck")
    create_topic(bs, topic, 1)
    a = AdminClient({"bootstrap.servers": bs})
    res = a.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, 0), TopicPartition(topic, 7)]).result(30)
    errs = {tp.partition: (e.name() if e is not None else None) for tp, e in res.items()}
    assert errs == {0: "ELECTION_NOT_NEEDED", 7: "UNKNOWN_TOPIC_OR_PART"}
    assert a.elect_leaders(ElectionType.PREFERRED, None).result(30) == {}
    res = a.elect_leaders(ElectionType.UNCLEAN, [TopicPartition(topic, 0)]).result(30)
    assert [e.name() for e in res.values()] == ["ELECTION_NOT_NEEDED"]      # it has a leader


def test_elect_leaders_java(broker, get_client) -> None:
    bs = broker.bootstrap
    topic = _name("el-j")
    create_topic(bs, topic, 1)
    j = _java(get_client)
    r = j.admin(bs, "elect_leaders", partitions=[[topic, 0], [topic, 3]])
    assert r["partitions"] == {
        f"{topic}-0": "ElectionNotNeededException: Leader election not needed for topic partition.",
        f"{topic}-3": f"UnknownTopicOrPartitionException: No such partition as {topic}-3"}
    assert j.admin(bs, "elect_leaders", partitions=None) == {"partitions": {}, "ok": True}


# -- partition reassignments -------------------------------------------------------------------------------
def test_reassignments_kafka_python(broker) -> None:
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.errors import InvalidReplicationAssignmentError, NoReassignmentInProgressError

    bs = broker.bootstrap
    topic = _name("ra-kp")
    create_topic(bs, topic, 2)
    a = KafkaAdminClient(bootstrap_servers=bs)
    try:
        r = a.alter_partition_reassignments({TopicPartition(topic, 0): [1], TopicPartition(topic, 1): [5]})
        assert r[TopicPartition(topic, 0)] is None
        assert r[TopicPartition(topic, 1)] is InvalidReplicationAssignmentError or \
            isinstance(r[TopicPartition(topic, 1)], InvalidReplicationAssignmentError)
        r = a.alter_partition_reassignments({TopicPartition(topic, 0): None})
        err = r[TopicPartition(topic, 0)]
        assert err is NoReassignmentInProgressError or isinstance(err, NoReassignmentInProgressError)
        assert a.list_partition_reassignments() == {}
        assert a.list_partition_reassignments({topic: [0, 1]}) == {}
    finally:
        a.close()


def test_reassignments_java(broker, get_client) -> None:
    bs = broker.bootstrap
    topic = _name("ra-j")
    create_topic(bs, topic, 1)
    j = _java(get_client)
    r = j.admin(bs, "alter_reassignments", reassignments=[[topic, 0, [1]]])
    assert r["partitions"] == {f"{topic}-0": None}
    r = j.admin(bs, "alter_reassignments", reassignments=[[topic, 0, [2]]])
    assert r["partitions"] == {f"{topic}-0": "InvalidReplicaAssignmentException: The manual partition assignment "
                                             "includes broker 2, but no such broker is registered."}
    r = j.admin(bs, "alter_reassignments", reassignments=[[topic, 0, None]])
    assert r["partitions"] == {f"{topic}-0": "NoReassignmentInProgressException: No partition reassignment is in "
                                             "progress."}
    assert j.admin(bs, "list_reassignments", partitions=None)["reassignments"] == {}
    assert j.admin(bs, "list_reassignments", partitions=[[topic, 0]])["reassignments"] == {}


# -- AlterReplicaLogDirs -----------------------------------------------------------------------------------
def _log_dir(bs: str) -> str:
    from kafka import KafkaAdminClient

    a = KafkaAdminClient(bootstrap_servers=bs)
    try:
        r = a.describe_log_dirs()
    finally:
        a.close()
    return r[0]["log_dirs"][0]["log_dir"]


def test_alter_replica_log_dirs_kafka_python(broker) -> None:
    from kafka import KafkaAdminClient, TopicPartitionReplica
    from kafka.errors import LogDirNotFoundError, NoError

    bs = broker.bootstrap
    topic = _name("ld-kp")
    create_topic(bs, topic, 1)
    ours = _log_dir(bs)
    a = KafkaAdminClient(bootstrap_servers=bs)
    try:
        r = a.alter_replica_log_dirs({TopicPartitionReplica(topic, 0, 1): ours})
        assert list(r.values()) == [NoError]
        r = a.alter_replica_log_dirs({TopicPartitionReplica(topic, 0, 1): "/elsewhere/kafka-logs"})
        assert list(r.values()) == [LogDirNotFoundError]
    finally:
        a.close()


def test_alter_replica_log_dirs_java(broker, get_client) -> None:
    bs = broker.bootstrap
    topic = _name("ld-j")
    create_topic(bs, topic, 1)
    j = _java(get_client)
    dirs = j.admin(bs, "describe_log_dirs", broker=1)["dirs"]
    (ours,) = dirs
    assert f"{topic}-0" in dirs[ours]
    assert j.admin(bs, "alter_log_dirs", moves=[[topic, 0, 1, ours]])["replicas"] == {f"{topic}-0": None}
    r = j.admin(bs, "alter_log_dirs", moves=[[topic, 0, 1, "/elsewhere/kafka-logs"]])
    assert r["replicas"] == {f"{topic}-0": "LogDirNotFoundException: The user-specified log directory is not found "
                                           "in the broker config."}


# -- DescribeProducers -------------------------------------------------------------------------------------
def _idempotent_and_open_txn(bs: str, topic: str):  # type: ignore[no-untyped-def]
    """One idempotent producer (3 records) and one transactional producer with its transaction left open."""
    from confluent_kafka import Producer

    idem = Producer({"bootstrap.servers": bs, "enable.idempotence": True, "linger.ms": 0})
    for v in (b"a", b"b", b"c"):
        idem.produce(topic, v, partition=0)
        idem.flush(30)
    tx = Producer({"bootstrap.servers": bs, "transactional.id": f"tx-{topic}", "linger.ms": 0})
    tx.init_transactions(30)
    tx.begin_transaction()
    tx.produce(topic, b"t", partition=0)
    assert tx.flush(30) == 0
    return idem, tx


def test_describe_producers_kafka_python(broker) -> None:
    from kafka import KafkaAdminClient, TopicPartition

    bs = broker.bootstrap
    topic = _name("dp-kp")
    create_topic(bs, topic, 1)
    _idem, tx = _idempotent_and_open_txn(bs, topic)
    a = KafkaAdminClient(bootstrap_servers=bs)
    try:
        states = a.describe_producers([TopicPartition(topic, 0)])[TopicPartition(topic, 0)].active_producers
        got = sorted((s.last_sequence, s.current_transaction_start_offset, s.coordinator_epoch) for s in states)
        assert got == [(0, 3, -1), (2, -1, -1)]      # the open transaction started at offset 3
        tx.commit_transaction(30)
        # the commit returns once the coordinator has decided; the marker reaches the partition after (Kafka
        # writes it asynchronously: WriteTxnMarkers), so ask until it has
        deadline = time.monotonic() + 30
        while True:
            states = a.describe_producers([TopicPartition(topic, 0)])[TopicPartition(topic, 0)].active_producers
            got = sorted((s.last_sequence, s.current_transaction_start_offset, s.coordinator_epoch) for s in states)
            if got != [(0, 3, -1), (2, -1, -1)] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert got == [(0, -1, 0), (2, -1, -1)]
    finally:
        a.close()


def test_describe_producers_java(broker, get_client) -> None:
    bs = broker.bootstrap
    topic = _name("dp-j")
    create_topic(bs, topic, 1)
    _idem, tx = _idempotent_and_open_txn(bs, topic)
    r = _java(get_client).admin(bs, "describe_producers", topic=topic, partition=0)
    got = sorted((p["last_sequence"], p["txn_start_offset"], p["coordinator_epoch"], p["epoch"])
                 for p in r["producers"])
    assert got == [(0, 3, None, 0), (2, None, None, 0)]
    assert all(p["last_timestamp"] > 0 and p["producer_id"] >= 0 for p in r["producers"])
    tx.abort_transaction(30)


# -- DescribeQuorum ----------------------------------------------------------------------------------------
def test_describe_quorum_java(broker, get_client) -> None:
    r = _java(get_client).admin(broker.bootstrap, "describe_quorum")
    assert "error" not in r, r
    # the high watermark is the metadata log's: 0 on kafkalite (no metadata log), on Kafka where its log is
    assert (r["leader_id"], r["leader_epoch"]) == (1, 1) and r["high_watermark"] >= 0
    assert [v["id"] for v in r["voters"]] == [1] and r["observers"] == []
    assert r["voters"][0]["last_caught_up"] > 0
    # the voter's endpoints: Kafka's CONTROLLER listener; kafkalite, its own controller, has only the one listener
    assert list(r["nodes"]) == ["1"] and "127.0.0.1:" in r["nodes"]["1"]
    if broker.kind != "kafka":
        assert str(broker.port) in r["nodes"]["1"]


def test_describe_quorum_kafka_python(broker) -> None:
    from kafka import KafkaAdminClient

    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        q = a.describe_metadata_quorum()
    finally:
        a.close()
    (t,) = q["topics"]
    (p,) = t["partitions"]
    assert (t["topic_name"], p["error"], p["leader_id"], p["leader_epoch"]) == ("__cluster_metadata", None, 1, 1)
    assert p["high_watermark"] >= 0   # the metadata log's: 0 on kafkalite, which has none
    assert [v["replica_id"] for v in p["current_voters"]] == [1] and p["observers"] == []
    assert [n["node_id"] for n in q["nodes"]] == [1]


# -- ListConfigResources (key 74, Kafka 4.1+) ----------------------------------------------------------------
def test_list_config_resources_kafka_python(broker, broker_factory) -> None:
    """Under --emulate-kafka 4.3, and the default 3.9+4.4 profile, key 74 is ListConfigResources v1 and lists the
    broker and the topics (on the reference broker both are Kafka 4.4)."""
    from kafka import KafkaAdminClient

    for b in (broker_factory(emulate="4.3"), broker):
        topic = _name("lcr-kp")
        create_topic(b.bootstrap, topic, 1)
        a = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        try:
            every = a.list_config_resources()
            assert every["broker"] == ["1"] and every["broker_logger"] == ["1"] and topic in every["topic"]
            assert a.list_config_resources(["TOPIC"]) == {"topic": every["topic"]}
            assert a.list_config_resources(["CLIENT_METRICS", "GROUP"]) == {}
        finally:
            a.close()


@pytest.mark.kafkalite_only("--emulate-kafka 3.9: kafkalite imitating Kafka 3.9's API versions (key 74 only as "
                            "ListClientMetricsResources v0); the reference broker is Kafka 4.4")
def test_list_config_resources_3_9_kafka_python(broker_factory) -> None:
    """3.9 has key 74 only as v0 (ListClientMetricsResources: client-metrics subscriptions, none here)."""
    from kafka import KafkaAdminClient

    a = KafkaAdminClient(bootstrap_servers=broker_factory(emulate="3.9").bootstrap)
    try:
        assert a.list_config_resources() == {}
    finally:
        a.close()


# -- DescribeConfigs of the broker: every broker config of the profile's Kafka release (4.4 by default) ---
def test_broker_configs_java(broker, get_client) -> None:
    cfg = _java(get_client).admin(broker.bootstrap, "describe_broker_configs", broker=1)["configs"]
    assert len(cfg) >= 314
    e = cfg["ssl.truststore.password"]
    assert (e["value"], e["sensitive"], e["type"], e["source"]) == (None, True, "PASSWORD", "DEFAULT_CONFIG")
    e = cfg["advertised.listeners"]   # Kafka 4.x: a read-only list (3.9: a per-broker dynamic string)
    assert (e["type"], e["read_only"]) == ("LIST", True)
    e = cfg["log.retention.hours"]
    assert (e["value"], e["read_only"], e["type"], e["synonyms"]) == (
        "168", True, "INT", [["log.retention.hours", "168", "DEFAULT_CONFIG"]])
    assert (cfg["num.io.threads"]["read_only"], cfg["broker.id"]["read_only"]) == (False, True)
    assert "zookeeper.connect" not in cfg   # gone in Kafka 4.0
    assert cfg["log.segment.bytes"]["documentation"] and cfg["num.io.threads"]["documentation"]
    assert cfg["principal.builder.class"]["type"] == "CLASS"


def test_broker_configs_confluent_kafka(broker) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource

    a = AdminClient({"bootstrap.servers": broker.bootstrap})
    res = ConfigResource(ConfigResource.Type.BROKER, "1")
    cfg = a.describe_configs([res])[res].result(30)
    assert len(cfg) >= 314
    e = cfg["sasl.jaas.config"]
    assert (e.value, e.is_sensitive, e.source) == (None, True, ConfigSource.DEFAULT_CONFIG.value)
    e = cfg["background.threads"]
    assert (e.value, e.is_read_only, e.is_default) == ("10", False, True)
    assert cfg["auto.create.topics.enable"].is_read_only


def test_broker_configs_kafka_python(broker) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType

    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        r = a.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")], include_synonyms=True,
                               config_filter="all")
    finally:
        a.close()
    cfg = r["broker"]["1"] if "broker" in r else next(iter(r.values()))
    assert len(cfg) >= 314 and "advertised.listeners" in cfg
    assert cfg["ssl.key.password"]["value"] is None
