"""What the differential cases share: the :class:`Case` record, setup steps (not compared) and request builders.

A :class:`Case` is one request (the compared one) after an optional setup. Both brokers get the same setup and
the same request, built from the same arguments; what a broker itself chose (a topic id, a member id, a producer
id) reaches the request through ``ctx``, which setup fills per broker. Setup requests are not compared; they wait
until a new topic's leader answers (Apache Kafka publishes a partition's leader a moment before its replica takes
requests), so the compared request never races that.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from differential.wireconn import WireConn
from kafkalite_storage.testing import Rec, encode_batch
from kafkalite_wire import messages as m

TS = 1_700_000_000_000   # record timestamps: fixed, so both brokers store the same bytes
ACKS_ALL = -1

Ctx = dict[str, Any]


@dataclass(frozen=True)
class Case:
    name: str
    api_key: int
    build: Callable[[int, Ctx], Any]                     # (version, ctx) -> request body
    setup: Callable[[WireConn, Ctx], Any] | None = None  # ctx["version"] is the version about to be sent
    doc: str = ""
    min_version: int = 0                                  # below this the case has no meaning
    fast: bool = True                                     # part of the bounded slice in `make test`
    tags: tuple[str, ...] = field(default=())
    profile: str | None = None                            # kafkalite's --emulate-kafka (None: the default)


def topic_of(case: str, suffix: str = "") -> str:
    return f"diff-{case}{suffix}"


# -- setup helpers (not compared) ------------------------------------------------------------------------
def create(conn: WireConn, ctx: Ctx, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> bool:
    """Create (or find) a topic and wait until it takes requests; True if this call created it."""
    topic = m.CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1,
        configs=[m.CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])
    resp = conn.request(m.CreateTopicsRequest(topics=[topic], timeout_ms=30_000), 5)
    code = resp.topics[0].error_code
    if code not in (0, 36):
        raise RuntimeError(f"setup: CreateTopics {name}: error {code}")
    wait_ready(conn, ctx, name, partitions)
    return code == 0


def wait_ready(conn: WireConn, ctx: Ctx, name: str, partitions: int, timeout_s: float = 30.0) -> None:
    """Until Metadata names a leader for every partition and ListOffsets succeeds on each; records the id."""
    deadline = time.monotonic() + timeout_s
    while True:
        md = conn.request(m.MetadataRequest(topics=[m.MetadataRequest.MetadataRequestTopic(name=name)],
                                            allow_auto_topic_creation=False), 12)
        t = md.topics[0]
        if t.error_code == 0 and len(t.partitions) == partitions and all(p.leader_id >= 0 for p in t.partitions):
            lo = conn.request(list_offsets(name, range(partitions), -1), 7)
            if all(p.error_code == 0 for p in lo.topics[0].partitions):
                ctx.setdefault("topic_ids", {})[name] = t.topic_id
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"setup: topic {name} not ready: {md}")
        time.sleep(0.1)


def produce_records(conn: WireConn, name: str, partition: int, values: list[bytes], base_ts: int = TS) -> None:
    batch = encode_batch([Rec(value=v, key=b"k%d" % i, timestamp=base_ts + 1000 * i) for i, v in enumerate(values)],
                         base_timestamp=base_ts)
    resp = conn.request(produce_request(name, partition, batch), 9)
    code = resp.responses[0].partition_responses[0].error_code
    if code:
        raise RuntimeError(f"setup: Produce {name}-{partition}: error {code}")


def warm_coordinator(conn: WireConn, ctx: Ctx, key: str, key_type: int, timeout_s: float = 60.0) -> None:
    """FindCoordinator until it answers without error (the first call makes Kafka create the internal topic)."""
    deadline = time.monotonic() + timeout_s
    while True:
        r = conn.request(m.FindCoordinatorRequest(key=key, key_type=key_type), 3)
        if r.error_code == 0:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"setup: no coordinator for {key}: error {r.error_code}")
        time.sleep(0.2)


# -- request builders ------------------------------------------------------------------------------------
def produce_request(name: str, partition: int, batch: bytes, topic_id: uuid.UUID | None = None,
                    acks: int = ACKS_ALL) -> Any:
    pd = m.ProduceRequest.PartitionProduceData(index=partition, records=[batch])
    td = m.ProduceRequest.TopicProduceData(name=name, partition_data=[pd])
    if topic_id is not None:
        td.topic_id = topic_id
    return m.ProduceRequest(acks=acks, timeout_ms=30_000, topic_data=[td])


def list_offsets(name: str, partitions: Any, ts: int) -> Any:
    return m.ListOffsetsRequest(topics=[m.ListOffsetsRequest.ListOffsetsTopic(
        name=name, partitions=[m.ListOffsetsRequest.ListOffsetsPartition(partition_index=p, timestamp=ts)
                               for p in partitions])])


def fetch_request(v: int, ctx: Ctx, name: str, partition: int, offset: int) -> Any:
    topic_id = ctx.get("topic_ids", {}).get(name, uuid.UUID(int=0)) if v >= 13 else uuid.UUID(int=0)
    fp = m.FetchRequest.FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20)
    return m.FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, session_id=0, session_epoch=-1,
                          topics=[m.FetchRequest.FetchTopic(topic=name, topic_id=topic_id, partitions=[fp])])


def create_req(name: str, partitions: int = 1, rf: int = 1, configs: dict[str, str] | None = None,
                validate_only: bool = False) -> Any:
    return m.CreateTopicsRequest(topics=[m.CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf,
        configs=[m.CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])],
        timeout_ms=30_000, validate_only=validate_only)


def md(*names: str, auto: bool = False) -> Any:
    return m.MetadataRequest(topics=[m.MetadataRequest.MetadataRequestTopic(name=n) for n in names],
                             allow_auto_topic_creation=auto)


def batch_of(values: list[bytes]) -> bytes:
    return encode_batch([Rec(value=v, key=b"k", timestamp=TS + i) for i, v in enumerate(values)], base_timestamp=TS)


def produce_case(name: str, partition: int, v: int, ctx: Ctx) -> Any:
    tid = ctx.get("topic_ids", {}).get(name) if v >= 13 else None
    if v >= 13 and tid is None:
        tid = uuid.UUID(int=0x5EED)   # an id no broker has
    return produce_request(name if v < 13 else "", partition, batch_of([b"a", b"b", b"c"]), topic_id=tid)


def describe(resource_type: int, name: str, keys: list[str] | None = None, synonyms: bool = True) -> Any:
    return m.DescribeConfigsRequest(resources=[m.DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=resource_type, resource_name=name, configuration_keys=keys)], include_synonyms=synonyms)


TOPIC, BROKER = 2, 4
