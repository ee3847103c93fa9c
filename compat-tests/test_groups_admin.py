"""(4) Admin clients list, describe and delete groups, and list / alter group offsets.

The same scenario for confluent-kafka, kafka-python and Java kafka-clients' Admin:

A. while one member holds group G (Stable): G is listed (Stable), described with its member and
   protocol, and cannot be deleted (NON_EMPTY_GROUP);
B. after the member committed and left (Empty): its offsets are listed, altered, listed again, then the
   group is deleted and no longer listed.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid

import pytest
from harness.topics import create_topic
from test_groups_support import CACHE, JAVA_DEPS, missing, produce

JAVA_ADMIN = r"""
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

public class GroupAdmin {
    public static void main(String[] a) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", a[0]);
        String step = a[1], group = a[2], topic = a[3];
        StringBuilder out = new StringBuilder("{");
        try (Admin admin = Admin.create(p)) {
            Collection<ConsumerGroupListing> listed = admin.listConsumerGroups().all().get();
            out.append("\"listed\":{");
            boolean first = true;
            for (ConsumerGroupListing l : listed) {
                if (!first) out.append(',');
                first = false;
                out.append('"').append(l.groupId()).append("\":\"").append(l.state().map(Object::toString).orElse("")).append('"');
            }
            out.append("}");
            if (step.equals("A")) {
                ConsumerGroupDescription d = admin.describeConsumerGroups(Collections.singletonList(group)).all().get().get(group);
                out.append(",\"state\":\"").append(d.state()).append("\",\"assignor\":\"").append(d.partitionAssignor())
                   .append("\",\"members\":").append(d.members().size());
                String err = "none";
                try { admin.deleteConsumerGroups(Collections.singletonList(group)).all().get(); }
                catch (Exception e) { err = e.getCause().getClass().getSimpleName(); }
                out.append(",\"delete_error\":\"").append(err).append('"');
            } else {
                Map<TopicPartition, OffsetAndMetadata> offs = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
                out.append(",\"before\":{").append(fmt(offs)).append('}');
                Map<TopicPartition, OffsetAndMetadata> alter = new HashMap<>();
                alter.put(new TopicPartition(topic, 0), new OffsetAndMetadata(1));
                alter.put(new TopicPartition(topic, 1), new OffsetAndMetadata(2));
                admin.alterConsumerGroupOffsets(group, alter).all().get();
                offs = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
                out.append(",\"after\":{").append(fmt(offs)).append('}');
                admin.deleteConsumerGroups(Collections.singletonList(group)).all().get();
                ConsumerGroupDescription d = admin.describeConsumerGroups(Collections.singletonList(group)).all().get().get(group);
                out.append(",\"state_after_delete\":\"").append(d.state()).append('"');
                boolean still = false;
                for (ConsumerGroupListing l : admin.listConsumerGroups().all().get()) still |= l.groupId().equals(group);
                out.append(",\"still_listed\":").append(still);
            }
        }
        System.out.println(out.append('}'));
    }
    static String fmt(Map<TopicPartition, OffsetAndMetadata> m) {
        TreeMap<Integer, Long> t = new TreeMap<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : m.entrySet()) t.put(e.getKey().partition(), e.getValue().offset());
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<Integer, Long> e : t.entrySet()) {
            if (sb.length() > 0) sb.append(',');
            sb.append('"').append(e.getKey()).append("\":").append(e.getValue());
        }
        return sb.toString();
    }
}
"""


class Holder:
    """A confluent-kafka member that keeps group G Stable until ``leave()``."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        from confluent_kafka import Consumer

        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                           "enable.auto.commit": False})
        self.c.subscribe([topic])
        got = 0
        deadline = time.monotonic() + 30
        while got < 10 and time.monotonic() < deadline:
            m = self.c.poll(0.2)
            if m is not None and not m.error():
                got += 1
        assert got == 10
        self.c.commit(asynchronous=False)

    def leave(self) -> None:
        self.c.close()


def _confluent(bs: str, step: str, group: str, topic: str) -> dict:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    adm = AdminClient({"bootstrap.servers": bs})
    listed = {g.group_id: str(g.state.name) for g in adm.list_consumer_groups().result(30).valid}
    out: dict = {"listed": listed}
    if step == "A":
        d = adm.describe_consumer_groups([group])[group].result(30)
        out.update(state=d.state.name, assignor=d.partition_assignor, members=len(d.members))
        try:
            adm.delete_consumer_groups([group])[group].result(30)
            out["delete_error"] = "none"
        except Exception as e:  # noqa: BLE001
            out["delete_error"] = str(e)
        return out
    req = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in (0, 1)])]
    before = adm.list_consumer_group_offsets(req)[group].result(30)
    out["before"] = {str(tp.partition): tp.offset for tp in before.topic_partitions}
    alt = adm.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
        group, [TopicPartition(topic, 0, 1), TopicPartition(topic, 1, 2)])])[group].result(30)
    assert all(tp.error is None for tp in alt.topic_partitions)
    after = adm.list_consumer_group_offsets(req)[group].result(30)
    out["after"] = {str(tp.partition): tp.offset for tp in after.topic_partitions}
    adm.delete_consumer_groups([group])[group].result(30)
    out["state_after_delete"] = adm.describe_consumer_groups([group])[group].result(30).state.name
    out["still_listed"] = group in {g.group_id for g in adm.list_consumer_groups().result(30).valid}
    return out


def _kafka_python(bs: str, step: str, group: str, topic: str) -> dict:
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.structs import OffsetAndMetadata

    adm = KafkaAdminClient(bootstrap_servers=bs)
    try:
        out: dict = {"listed": {g["group_id"]: g["group_state"] for g in adm.list_groups()}}
        if step == "A":
            d = adm.describe_groups([group])[group]
            out.update(state=d["group_state"], assignor=d["protocol_data"], members=len(d["members"]))
            res = adm.delete_groups([group])
            out["delete_error"] = "none" if res[group] == "OK" else str(res[group])
            return out
        offs = adm.list_group_offsets({group: None})[group]
        out["before"] = {str(tp.partition): om.offset for tp, om in offs.items()}
        adm.alter_group_offsets(group, {TopicPartition(topic, 0): OffsetAndMetadata(1, "", -1),
                                        TopicPartition(topic, 1): OffsetAndMetadata(2, "", -1)})
        offs = adm.list_group_offsets({group: None})[group]
        out["after"] = {str(tp.partition): om.offset for tp, om in offs.items()}
        assert adm.delete_groups([group])[group] == "OK"
        out["state_after_delete"] = adm.describe_groups([group])[group]["group_state"]
        out["still_listed"] = group in {g["group_id"] for g in adm.list_groups()}
        return out
    finally:
        adm.close()


def _java(bs: str, step: str, group: str, topic: str) -> dict:
    javac = shutil.which("javac")
    jars = sorted(JAVA_DEPS.glob("*.jar"))
    if javac is None or not jars:
        missing("javac or the Java kafka-clients jars (.deps/java) are not installed")
    out_dir = CACHE / "java-admin"
    src = out_dir / "GroupAdmin.java"
    if not ((out_dir / "GroupAdmin.class").exists() and src.exists() and src.read_text() == JAVA_ADMIN):
        out_dir.mkdir(parents=True, exist_ok=True)
        src.write_text(JAVA_ADMIN)
        subprocess.run([javac, "-cp", ":".join(map(str, jars)), "-d", str(out_dir), str(src)], check=True,
                       capture_output=True, timeout=180)
    cp = ":".join([str(out_dir), *map(str, jars)])
    proc = subprocess.run(["java", "-cp", cp, "GroupAdmin", bs, step, group, topic], capture_output=True,
                          timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"java GroupAdmin failed: {proc.stderr.decode()[-3000:]}")
    return json.loads([x for x in proc.stdout.decode().splitlines() if x.startswith("{")][-1])


ADMINS = {"confluent-kafka": _confluent, "kafka-python": _kafka_python, "java": _java}


@pytest.mark.parametrize("client_name", list(ADMINS))
def test_admin_groups_and_offsets(client_name: str, broker, topic: str) -> None:
    bs = broker.bootstrap
    create_topic(bs, topic, 2)
    produce(bs, topic, [(i % 2, f"v{i}".encode()) for i in range(10)])
    group = f"adm-{uuid.uuid4().hex[:8]}"
    holder = Holder(bs, topic, group)
    try:
        a = ADMINS[client_name](bs, "A", group, topic)
    finally:
        holder.leave()
    assert a["listed"][group].lower() == "stable"
    assert a["state"].lower() == "stable" and a["members"] == 1 and a["assignor"] == "range"
    err = a["delete_error"].upper().replace("_", "").replace(" ", "")
    assert "NONEMPTY" in err or "NOTEMPTY" in err, a["delete_error"]
    b = ADMINS[client_name](bs, "B", group, topic)
    assert b["listed"][group].lower() == "empty"
    assert b["before"] == {"0": 5, "1": 5}
    assert b["after"] == {"0": 1, "1": 2}
    assert b["state_after_delete"].lower() == "dead" and b["still_listed"] is False
