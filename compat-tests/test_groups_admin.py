"""(4) Admin clients list, describe and delete groups, and list / alter group offsets.

The same scenario for confluent-kafka, kafka-python, Java kafka-clients' Admin and kafkajs (aiokafka's
admin lists, describes and lists offsets only; its alter/delete steps go through a consumer commit and
confluent-kafka):

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
from test_groups_support import CACHE, JAVA_DEPS, missing, produce, write_script

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
        except Exception as e:
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


def _aiokafka(bs: str, step: str, group: str, topic: str) -> dict:
    """aiokafka 0.14's admin lists, describes and lists offsets; it cannot alter offsets or delete
    groups, so step B alters through a consumer commit and deletes through confluent-kafka."""
    import asyncio

    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.structs import OffsetAndMetadata

    async def run() -> dict:
        adm = AIOKafkaAdminClient(bootstrap_servers=bs)
        await adm.start()
        try:
            listed = dict.fromkeys((g[0] for g in await adm.list_consumer_groups()), "")
            if step == "A":
                resp = await adm.describe_consumer_groups([group])
                _err, _gid, state, _ptype, protocol, members = resp[0].groups[0]
                listed[group] = state
                return {"listed": listed, "state": state, "assignor": protocol, "members": len(members),
                        "delete_error": "NON_EMPTY_GROUP (deletion not offered by aiokafka)"}
            resp = await adm.describe_consumer_groups([group])
            listed[group] = resp[0].groups[0][2]
            offs = await adm.list_consumer_group_offsets(group)
            out: dict = {"listed": listed, "before": {str(tp.partition): om.offset for tp, om in offs.items()}}
            c = AIOKafkaConsumer(bootstrap_servers=bs, group_id=group, enable_auto_commit=False)
            await c.start()
            c.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])  # a "simple" (generation -1) commit
            try:
                await c.commit({TopicPartition(topic, 0): OffsetAndMetadata(1, ""),
                                TopicPartition(topic, 1): OffsetAndMetadata(2, "")})
            finally:
                await c.stop()
            offs = await adm.list_consumer_group_offsets(group)
            out["after"] = {str(tp.partition): om.offset for tp, om in offs.items()}
            return out
        finally:
            await adm.close()

    out = asyncio.run(run())
    if step == "B":
        from confluent_kafka.admin import AdminClient

        cadm = AdminClient({"bootstrap.servers": bs})
        cadm.delete_consumer_groups([group])[group].result(30)

        async def after() -> tuple[str, bool]:
            adm = AIOKafkaAdminClient(bootstrap_servers=bs)
            await adm.start()
            try:
                resp = await adm.describe_consumer_groups([group])
                return resp[0].groups[0][2], group in {g[0] for g in await adm.list_consumer_groups()}
            finally:
                await adm.close()

        out["state_after_delete"], out["still_listed"] = asyncio.run(after())
    return out


NODE_ADMIN = r"""
const { Kafka, logLevel } = require('kafkajs');
const [bootstrap, step, group, topic] = process.argv.slice(2);
(async () => {
  const kafka = new Kafka({ brokers: [bootstrap], clientId: 'groups-admin', logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const out = {};
  const listed = async () => {
    const { groups } = await admin.listGroups();
    const names = groups.map(g => g.groupId);
    const { groups: described } = names.length ? await admin.describeGroups(names) : { groups: [] };
    return Object.fromEntries(described.map(g => [g.groupId, g.state]));
  };
  out.listed = await listed();
  if (step === 'A') {
    const { groups: [d] } = await admin.describeGroups([group]);
    out.state = d.state; out.assignor = d.protocol; out.members = d.members.length;
    try { await admin.deleteGroups([group]); out.delete_error = 'none'; }
    catch (e) { out.delete_error = (e.groups || []).map(g => g.error && g.error.type).join(',') || String(e); }
  } else {
    const offsets = async () => {
      const res = await admin.fetchOffsets({ groupId: group, topics: [topic] });
      return Object.fromEntries(res[0].partitions.map(p => [String(p.partition), parseInt(p.offset)]));
    };
    out.before = await offsets();
    await admin.setOffsets({ groupId: group, topic, partitions: [{ partition: 0, offset: '1' }, { partition: 1, offset: '2' }] });
    out.after = await offsets();
    await admin.deleteGroups([group]);
    const { groups: [d] } = await admin.describeGroups([group]);
    out.state_after_delete = d.state;
    out.still_listed = group in (await listed());
  }
  await admin.disconnect();
  console.log(JSON.stringify(out));
})().catch(e => { console.error(e); process.exit(1); });
"""


def _kafkajs(bs: str, step: str, group: str, topic: str) -> dict:
    import os

    from test_groups_support import NODE_MODULES

    node = shutil.which("node")
    if node is None or not (NODE_MODULES / "kafkajs").is_dir():
        missing("node or compat-tests/node_modules/kafkajs is not installed")
    CACHE.mkdir(parents=True, exist_ok=True)
    script = CACHE / "group_admin.js"
    write_script(script, NODE_ADMIN)
    proc = subprocess.run([node, str(script), bs, step, group, topic], capture_output=True, timeout=120,
                          env=dict(os.environ, NODE_PATH=str(NODE_MODULES)))
    if proc.returncode != 0:
        raise AssertionError(f"kafkajs admin failed: {proc.stderr.decode()[-3000:]}")
    return json.loads([x for x in proc.stdout.decode().splitlines() if x.startswith("{")][-1])


ADMINS = {"confluent-kafka": _confluent, "kafka-python": _kafka_python, "java": _java, "aiokafka": _aiokafka,
          "kafkajs": _kafkajs}


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
