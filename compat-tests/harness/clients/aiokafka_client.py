"""aiokafka 0.14.0 driver: each call runs its own asyncio loop (aiokafka speaks only non-flexible versions,
v0 of InitProducerId, and checks admin results itself: we read the raw responses)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from harness.clients.base import CODECS, Client, ClientError
from harness.records import Rec


def _errors(obj: Any, path: str = "") -> list[str]:
    """Every non-zero ``error_code`` found anywhere in a response's to_object() form."""
    found = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "error_code" and v:
                found.append(f"{path}: error_code={v} ({obj})")
            else:
                found += _errors(v, f"{path}.{k}")
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            found += _errors(v, f"{path}[{i}]")
    return found


class AiokafkaClient(Client):
    name = "aiokafka"
    features = frozenset({"produce", "consume", "headers", "null_header", "timestamps", "log_append_time", "null_key", "null_value", "binary",
                          "idempotent", "metadata", "admin", "configs", "list_offsets", "offsets_by_time",
                          *(f"codec:{c}" for c in CODECS)})

    def missing(self) -> str | None:
        try:
            import aiokafka  # noqa: F401
        except ImportError as e:
            return f"aiokafka not importable: {e}"
        return None

    def produce(self, bootstrap, topic, records, *, compression="none", idempotent=None, acks="all",
                max_request_bytes=None, timeout_s=60.0):
        # One bound over everything, stop() included (it waits for in-flight batches).
        return asyncio.run(asyncio.wait_for(self._produce(bootstrap, topic, records, compression, idempotent,
                                                          acks, max_request_bytes, timeout_s), timeout_s + 30))

    async def _produce(self, bootstrap, topic, records, compression, idempotent, acks, max_request_bytes,
                       timeout_s):
        from aiokafka import AIOKafkaProducer

        conf: dict = dict(bootstrap_servers=bootstrap, acks="all" if acks == "all" else int(acks), linger_ms=5,
                          compression_type=None if compression == "none" else compression,
                          request_timeout_ms=int(timeout_s * 1000))
        if idempotent is not None:
            conf["enable_idempotence"] = idempotent
        if max_request_bytes:
            conf["max_request_size"] = max_request_bytes
        prod = AIOKafkaProducer(**conf)
        await prod.start()
        try:
            futs = [await prod.send(topic, value=r.value, key=r.key, partition=r.partition,
                                    timestamp_ms=r.timestamp, headers=list(r.headers)) for r in records]
            mds = await asyncio.wait_for(asyncio.gather(*futs), timeout_s)
            return [(md.partition, md.offset) for md in mds]
        finally:
            await prod.stop()

    def consume(self, bootstrap, topic, partitions, count, *, start="earliest", timeout_s=60.0,
                max_fetch_bytes=None):
        return asyncio.run(asyncio.wait_for(
            self._consume(bootstrap, topic, partitions, count, start, timeout_s, max_fetch_bytes), timeout_s + 30))

    async def _consume(self, bootstrap, topic, partitions, count, start, timeout_s, max_fetch_bytes):
        from aiokafka import AIOKafkaConsumer, TopicPartition

        conf: dict = dict(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                          auto_offset_reset="earliest", fetch_max_wait_ms=200)
        if max_fetch_bytes:
            conf.update(max_partition_fetch_bytes=max_fetch_bytes, fetch_max_bytes=max_fetch_bytes * 2)
        cons = AIOKafkaConsumer(**conf)
        await cons.start()
        try:
            tps = [TopicPartition(topic, p) for p in partitions]
            cons.assign(tps)
            for tp in tps:
                if start == "earliest":
                    await cons.seek_to_beginning(tp)
                else:
                    cons.seek(tp, int(start))
            out: list[Rec] = []
            deadline = time.monotonic() + timeout_s
            while len(out) < count and time.monotonic() < deadline:
                batch = await cons.getmany(timeout_ms=500, max_records=10_000)
                for tp, msgs in batch.items():
                    for m in msgs:
                        out.append(Rec(m.key, m.value, tuple(m.headers), m.timestamp, tp.partition, m.offset))
            return out
        finally:
            await cons.stop()

    # -- admin -----------------------------------------------------------------------------------------
    async def _with_admin(self, bootstrap, fn):
        from aiokafka.admin import AIOKafkaAdminClient

        adm = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
        await adm.start()
        try:
            return await fn(adm)
        finally:
            await adm.close()

    def _run_admin(self, bootstrap, fn):
        return asyncio.run(asyncio.wait_for(self._with_admin(bootstrap, fn), 90))

    def metadata(self, bootstrap, topics=None):
        async def go(adm):
            cluster = await adm.describe_cluster()
            tmeta = await adm.describe_topics(list(topics) if topics else None)
            return cluster, tmeta
        cluster, tmeta = self._run_admin(bootstrap, go)
        errs = _errors(tmeta)
        if errs:
            raise ClientError("; ".join(errs))
        return {"brokers": [(b["node_id"], b["host"], b["port"]) for b in cluster["brokers"]],
                "topics": {t["topic"]: len(t["partitions"]) for t in tmeta}}

    def create_topic(self, bootstrap, topic, partitions, config=None):
        from aiokafka.admin import NewTopic

        async def go(adm):
            return await adm.create_topics([NewTopic(topic, partitions, 1, topic_configs=dict(config or {}))])
        resp = self._run_admin(bootstrap, go)
        errs = _errors(resp.to_object())
        if errs:
            raise ClientError("; ".join(errs))

    def delete_topic(self, bootstrap, topic):
        async def go(adm):
            return await adm.delete_topics([topic])
        errs = _errors(self._run_admin(bootstrap, go).to_object())
        if errs:
            raise ClientError("; ".join(errs))

    def create_partitions(self, bootstrap, topic, total):
        from aiokafka.admin import NewPartitions

        async def go(adm):
            return await adm.create_partitions({topic: NewPartitions(total)})
        self._run_admin(bootstrap, go)

    def describe_config(self, bootstrap, topic):
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

        async def go(adm):
            return await adm.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        (resp,) = self._run_admin(bootstrap, go)
        obj = resp.to_object()
        errs = _errors(obj)
        if errs:
            raise ClientError("; ".join(errs))
        (res,) = obj["resources"]
        return {e["config_names"]: e["config_value"] for e in res["config_entries"]}

    def alter_config(self, bootstrap, topic, config):
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

        async def go(adm):
            return await adm.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=config)])
        resps = self._run_admin(bootstrap, go)
        errs = [e for r in resps for e in _errors(r.to_object())]
        if errs:
            raise ClientError("; ".join(errs))

    def list_offsets(self, bootstrap, topic, partition, spec):
        async def go():
            from aiokafka import AIOKafkaConsumer, TopicPartition

            cons = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
            await cons.start()
            try:
                tp = TopicPartition(topic, partition)
                if spec == "earliest":
                    return (await cons.beginning_offsets([tp]))[tp]
                if spec == "latest":
                    return (await cons.end_offsets([tp]))[tp]
                found = (await cons.offsets_for_times({tp: int(spec)}))[tp]
                return -1 if found is None else found.offset
            finally:
                await cons.stop()
        return asyncio.run(asyncio.wait_for(go(), 90))
