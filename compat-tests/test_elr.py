"""Eligible leader replicas (KIP-966) seen through Kafka 4.4's own admin tool: ``kafka-topics.sh --describe``
(TopicCommand, the Java 4.4 Admin's describeTopics over DescribeTopicPartitions) prints each partition's Elr and
LastKnownElr. A broker of three stops while the ISR is at min.insync.replicas: it becomes an eligible leader
replica and the high watermark holds while the ISR is below min ISR; lowering the topic's min.insync.replicas
clears its ELR and lets the record commit; the broker comes back into the ISR.

On kafkalite's in-process cluster (``cluster_control``), or with KAFKALITE_COMPAT_BROKER=kafka on Kafka 4.4's
3-node KRaft cluster (combined broker+controller nodes: only one node may stop, the quorum needs two)."""

from __future__ import annotations

import subprocess
import uuid

from harness import reference
from harness.cluster import wait as _wait

KAFKA_CLUSTER = {"nodes": 3, "overrides": {"auto.leader.rebalance.enable": "false"}}


def _describe(bootstrap: str, topic: str) -> dict[str, str]:
    """Partition 0's line of ``kafka-topics.sh --describe``: {"Leader": "1", "Isr": "1,2", "Elr": "3", ...}."""
    p = subprocess.run(reference.java_command("org.apache.kafka.tools.TopicCommand", "--bootstrap-server",
                                              bootstrap, "--describe", "--topic", topic),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    for line in p.stdout.splitlines():
        fields = {k.strip(): v.strip() for k, _, v in (f.partition(":") for f in line.split("\t") if ":" in f)}
        if fields.get("Partition") == "0":
            return fields
    raise AssertionError(f"no partition line in {p.stdout!r}")


def _ids(text: str) -> set[int]:
    return {int(x) for x in text.split(",") if x.strip() and x.strip() != "N/A"}


def test_a_broker_stopped_at_min_isr_becomes_an_eligible_leader_replica(cluster_control) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

    ctl = cluster_control
    reason = reference.missing()
    if reason:   # the tool is Kafka's: without its jars this is a missing client (a failure under CI=true)
        from conftest import missing
        missing(reason)
    topic = f"elr-{uuid.uuid4().hex[:8]}"
    adm = AdminClient({"bootstrap.servers": ctl.bootstrap_servers})
    adm.create_topics([NewTopic(topic, num_partitions=1, replication_factor=3,
                                config={"min.insync.replicas": "3"})])[topic].result(30)
    _wait(lambda: (p := ctl.partitions(topic).get(0)) is not None and p["leader"] >= 0 and len(p["isr"]) == 3,
          "the topic placed, every replica in sync")
    leader = ctl.partitions(topic)[0]["leader"]
    victim = next(n for n in sorted(ctl.node_ids()) if n != leader)
    host, port = ctl.addresses()[leader]
    bs = f"{host}:{port}"

    def produce(acks: str, values: list[bytes]) -> None:
        prod = Producer({"bootstrap.servers": bs, "acks": acks, "enable.idempotence": False, "retries": 0})
        errors: list[object] = []
        for v in values:
            prod.produce(topic, v, partition=0, on_delivery=lambda err, _m: errors.append(err) if err else None)
        assert prod.flush(30) == 0 and not errors, errors

    def high_watermark() -> int:
        c = Consumer({"bootstrap.servers": bs, "group.id": f"g-{uuid.uuid4().hex[:6]}"})
        try:
            return int(c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)[1])
        finally:
            c.close()

    produce("all", [b"a", b"b"])
    d = _describe(bs, topic)
    assert _ids(d["Isr"]) == set(ctl.node_ids()) and _ids(d["Elr"]) == set() and _ids(d["LastKnownElr"]) == set()

    ctl.stop_broker(victim)
    _wait(lambda: _ids(_describe(bs, topic)["Elr"]) == {victim}, f"broker {victim} eligible", interval=0.5)
    d = _describe(bs, topic)
    assert int(d["Leader"]) == leader
    assert _ids(d["Isr"]) == set(ctl.node_ids()) - {victim} and _ids(d["LastKnownElr"]) == set(), d
    produce("1", [b"c"])                                     # taken by the leader, not committed: ISR 2 < 3
    assert high_watermark() == 2

    # a new min.insync.replicas clears the topic's ELR; with the ISR at the new minimum the next acks=all
    # record commits (Kafka moves the high watermark on the next append or follower progress, not on the change)
    res = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("min.insync.replicas", "2", incremental_operation=AlterConfigOpType.SET)])
    adm.incremental_alter_configs([res])[res].result(30)
    _wait(lambda: _ids(_describe(bs, topic)["Elr"]) == set(), "the ELR cleared", interval=0.5)
    produce("all", [b"d"])
    assert high_watermark() == 4

    ctl.start_broker(victim)
    _wait(lambda: _ids((d := _describe(bs, topic))["Isr"]) == set(ctl.node_ids()) and _ids(d["Elr"]) == set(),
          f"broker {victim} back in the ISR, the ELR empty", interval=0.5)
    produce("all", [b"e"])
    assert high_watermark() == 5
