"""The schema registry on a kafkalite ``Cluster``: every broker serves it from its own replica of the replicated
``_schemas`` topic, the broker leading ``_schemas-0`` makes every change (one writer, as Confluent elects one),
an answer comes once the change is committed and applied where it was asked; the leader stopped, another broker
takes over and ids continue; a restarted broker catches up. Driven with confluent-kafka's SchemaRegistryClient."""
from __future__ import annotations

import json
import random
import socket

from kafkalite import Cluster
from kafkalite.tests.support.tools_helpers import need_confluent

AVRO = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}


def schema(name: str) -> str:
    return json.dumps({**AVRO, "name": name})


def test_every_broker_serves_one_registry_with_one_writer(tmp_path) -> None:  # type: ignore[no-untyped-def]
    need_confluent()
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    with Cluster(brokers=3, data_dir=tmp_path, overrides={"kafkalite.schema.registry.listen": "127.0.0.1:0"}) as c:
        urls = c.schema_registry_urls()
        assert sorted(urls) == [1, 2, 3]
        clients = {n: SchemaRegistryClient({"url": u}) for n, u in urls.items()}
        ids = [clients[1 + i % 3].register_schema(f"s{i}-value", Schema(schema(f"R{i}"), "AVRO")) for i in range(6)]
        assert ids == [1, 2, 3, 4, 5, 6]
        for n, client in clients.items():   # read your writes on every broker, and the same state everywhere
            assert sorted(client.get_subjects()) == sorted(f"s{i}-value" for i in range(6)), n
            assert json.loads(client.get_schema(4).schema_str)["name"] == "R3"
        md = c.runtime.meta.partitions[("_schemas", 0)]
        assert len(md.replicas) == 3 and sorted(md.isr) == [1, 2, 3]
        leader = md.leader
        c.sync.stop_broker(leader)
        others = [n for n in (1, 2, 3) if n != leader]
        fresh = SchemaRegistryClient({"url": urls[others[0]]})
        assert fresh.register_schema("after-value", Schema(schema("After"), "AVRO")) == 7
        assert c.runtime.meta.partitions[("_schemas", 0)].leader != leader
        assert SchemaRegistryClient({"url": urls[others[1]]}).get_latest_version("after-value").schema_id == 7
        c.sync.start_broker(leader)
        back = SchemaRegistryClient({"url": c.schema_registry_urls()[leader]})
        assert back.get_latest_version("after-value").schema_id == 7
        assert back.register_schema("again-value", Schema(schema("Again"), "AVRO")) == 8


def _two_free_ports() -> int:
    """A port p with p and p+1 free, below Linux's ephemeral range (32768-60999), so the brokers' own listeners
    (port 0: the kernel picks from that range) cannot take p+1 meanwhile."""
    for _ in range(200):
        base = random.randrange(20000, 30000)
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", base))
                b.bind(("127.0.0.1", base + 1))
        except OSError:
            continue
        return base
    raise AssertionError("no two consecutive free ports")


def test_a_fixed_port_gives_each_broker_the_next_one(tmp_path) -> None:  # type: ignore[no-untyped-def]
    base = _two_free_ports()
    with Cluster(brokers=2, data_dir=tmp_path, overrides={"kafkalite.schema.registry.listen": f"127.0.0.1:{base}"}) as c:
        assert c.schema_registry_urls() == {1: f"http://127.0.0.1:{base}", 2: f"http://127.0.0.1:{base + 1}"}
