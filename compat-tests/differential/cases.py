"""The request sequences of the differential tests.

A :class:`Case` is one request (the compared one) after an optional setup. Both brokers get the same setup and
the same request, built from the same arguments; what a broker itself chose (a topic id) reaches the request
through ``ctx``, which setup fills per broker. Every case works on topics of its own (``diff-<case>``), so the
cases are independent of each other and of their order. Setup requests are not compared; they wait until a
new topic's leader answers (Apache Kafka publishes a partition's leader a moment before its replica takes
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


def _create_req(name: str, partitions: int = 1, rf: int = 1, configs: dict[str, str] | None = None,
                validate_only: bool = False) -> Any:
    return m.CreateTopicsRequest(topics=[m.CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf,
        configs=[m.CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()])],
        timeout_ms=30_000, validate_only=validate_only)


def _md(*names: str, auto: bool = False) -> Any:
    return m.MetadataRequest(topics=[m.MetadataRequest.MetadataRequestTopic(name=n) for n in names],
                             allow_auto_topic_creation=auto)


def _batch(values: list[bytes]) -> bytes:
    return encode_batch([Rec(value=v, key=b"k", timestamp=TS + i) for i, v in enumerate(values)], base_timestamp=TS)


def _produce_case(name: str, partition: int, v: int, ctx: Ctx) -> Any:
    tid = ctx.get("topic_ids", {}).get(name) if v >= 13 else None
    if v >= 13 and tid is None:
        tid = uuid.UUID(int=0x5EED)   # an id no broker has
    return produce_request(name if v < 13 else "", partition, _batch([b"a", b"b", b"c"]), topic_id=tid)


def _describe(resource_type: int, name: str, keys: list[str] | None = None, synonyms: bool = True) -> Any:
    return m.DescribeConfigsRequest(resources=[m.DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=resource_type, resource_name=name, configuration_keys=keys)], include_synonyms=synonyms)


TOPIC, BROKER = 2, 4


# -- the cases -------------------------------------------------------------------------------------------
def _cases() -> list[Case]:
    c: list[Case] = []

    def add(name: str, api: type, build: Callable[[int, Ctx], Any], setup: Callable[[WireConn, Ctx], Any] | None
            = None, doc: str = "", **kw: Any) -> None:
        c.append(Case(name, int(api.API_KEY), build, setup, doc, **kw))

    # ApiVersions
    add("api_versions", m.ApiVersionsRequest,
        lambda v, ctx: m.ApiVersionsRequest(client_software_name="kafkalite-differential",
                                            client_software_version="1.0"),
        doc="the advertised API ranges and features")
    add("api_versions_profile_4_4", m.ApiVersionsRequest,
        lambda v, ctx: m.ApiVersionsRequest(client_software_name="kafkalite-differential",
                                            client_software_version="1.0"),
        doc="the same, kafkalite started with `--emulate-kafka 4.4` (Kafka 4.4's exact table)", profile="4.4")

    # Metadata
    t_md = topic_of("metadata")
    add("metadata_known_topic", m.MetadataRequest, lambda v, ctx: _md(t_md),
        lambda conn, ctx: create(conn, ctx, t_md, 2), doc="a 2-partition topic", min_version=1)
    add("metadata_unknown_topic", m.MetadataRequest, lambda v, ctx: _md("diff-no-such-topic"),
        doc="allow_auto_topic_creation=false", min_version=4)

    # CreateTopics
    add("create_topics_ok", m.CreateTopicsRequest, lambda v, ctx: _create_req(topic_of("create-ok", f"-v{v}"), 3,
        configs={"retention.ms": "3600000"}), doc="3 partitions, retention.ms set (v5+: the topic's configs)")
    t_exists = topic_of("create-exists")
    add("create_topics_exists", m.CreateTopicsRequest, lambda v, ctx: _create_req(t_exists),
        lambda conn, ctx: create(conn, ctx, t_exists), doc="TOPIC_ALREADY_EXISTS")
    add("create_topics_invalid_name", m.CreateTopicsRequest, lambda v, ctx: _create_req("bad/name"),
        doc="INVALID_TOPIC_EXCEPTION")
    add("create_topics_invalid_config_value", m.CreateTopicsRequest, lambda v, ctx: _create_req(
        topic_of("bad-config", f"-v{v}"), configs={"cleanup.policy": "sometimes"}), doc="INVALID_CONFIG")
    add("create_topics_unknown_config", m.CreateTopicsRequest, lambda v, ctx: _create_req(
        topic_of("unknown-config", f"-v{v}"), configs={"no.such.config": "1"}), doc="INVALID_CONFIG")
    add("create_topics_zero_partitions", m.CreateTopicsRequest, lambda v, ctx: _create_req(
        topic_of("zero-partitions", f"-v{v}"), 0), doc="INVALID_PARTITIONS")
    add("create_topics_replication_3", m.CreateTopicsRequest, lambda v, ctx: _create_req(
        topic_of("rf3", f"-v{v}"), 1, rf=3), doc="INVALID_REPLICATION_FACTOR on one broker")
    for label, key, value in (("segment_bytes_below_1mib", "segment.bytes", "1048575"),
                              ("removed_in_4", "message.format.version", "3.0-IV1"),
                              ("timestamp_difference", "message.timestamp.difference.max.ms", "1000"),
                              ("tiered_storage_off", "remote.storage.enable", "true"),
                              ("decompressed_zero", "max.decompressed.message.bytes", "0"),
                              ("gzip_level", "compression.gzip.level", "0"),
                              ("copy_lag", "remote.copy.lag.ms", "-2")):
        add(f"create_topics_config_{label}", m.CreateTopicsRequest, lambda v, ctx, label=label, key=key,
            value=value: _create_req(topic_of(f"cfg-{label}", f"-v{v}"), configs={key: value}, validate_only=True),
            doc=f"{key}={value} (validate_only)", min_version=5)
    add("create_topics_validate_only", m.CreateTopicsRequest, lambda v, ctx: _create_req(
        topic_of("validate", f"-v{v}"), 2, validate_only=True), doc="validate_only: nothing created", min_version=1)

    # Produce
    t_prod = topic_of("produce")
    add("produce_ok", m.ProduceRequest, lambda v, ctx: _produce_case(t_prod, 0, v, ctx),
        lambda conn, ctx: create(conn, ctx, t_prod, 1), doc="3 records, acks=all (each version appends after the last)",
        min_version=3)
    add("produce_unknown_topic", m.ProduceRequest, lambda v, ctx: _produce_case("diff-no-such-topic", 0, v, ctx),
        doc="a topic that does not exist (Produce never auto-creates)", min_version=3)
    t2 = topic_of("produce-partition")
    add("produce_unknown_partition", m.ProduceRequest, lambda v, ctx: _produce_case(t2, 5, v, ctx),
        lambda conn, ctx: create(conn, ctx, t2, 1), doc="partition 5 of a 1-partition topic", min_version=3)

    # Fetch
    t_fetch = topic_of("fetch")

    def fetch_setup(conn: WireConn, ctx: Ctx) -> None:
        if create(conn, ctx, t_fetch, 1):
            produce_records(conn, t_fetch, 0, [b"r0", b"r1", b"r2"])
            produce_records(conn, t_fetch, 0, [b"r3", b"r4"], base_ts=TS + 10_000)

    add("fetch_from_0", m.FetchRequest, lambda v, ctx: fetch_request(v, ctx, t_fetch, 0, 0), fetch_setup,
        doc="two stored batches, read from offset 0 (records bytes compared)", min_version=4)
    add("fetch_inside_batch", m.FetchRequest, lambda v, ctx: fetch_request(v, ctx, t_fetch, 0, 4), fetch_setup,
        doc="offset 4 lies in the second batch: the whole batch comes back", min_version=4)
    add("fetch_out_of_range", m.FetchRequest, lambda v, ctx: fetch_request(v, ctx, t_fetch, 0, 100), fetch_setup,
        doc="OFFSET_OUT_OF_RANGE", min_version=4)
    add("fetch_unknown_partition", m.FetchRequest, lambda v, ctx: fetch_request(v, ctx, t_fetch, 9, 0), fetch_setup,
        doc="partition 9 of a 1-partition topic", min_version=4)
    add("fetch_unknown_topic", m.FetchRequest,
        lambda v, ctx: fetch_request(v, {"topic_ids": {"diff-no-such-topic": uuid.UUID(int=0x5EED)}},
                                     "diff-no-such-topic", 0, 0),
        doc="a topic (name, or from v13 an id) no broker has", min_version=4)

    # ListOffsets
    t_lo = topic_of("list-offsets")

    def lo_setup(conn: WireConn, ctx: Ctx) -> None:
        if create(conn, ctx, t_lo, 1):
            produce_records(conn, t_lo, 0, [b"a", b"b", b"c", b"d", b"e"])

    for label, ts in (("earliest", -2), ("latest", -1), ("by_time", TS + 2500), ("after_all", TS + 10**9),
                      ("max_timestamp", -3)):
        add(f"list_offsets_{label}", m.ListOffsetsRequest, lambda v, ctx, ts=ts: list_offsets(t_lo, [0], ts),
            lo_setup, doc=f"timestamp {ts}", min_version=7 if ts == -3 else 1)
    add("list_offsets_unknown_partition", m.ListOffsetsRequest, lambda v, ctx: list_offsets(t_lo, [4], -1), lo_setup,
        doc="partition 4 of a 1-partition topic", min_version=1)
    add("list_offsets_unknown_topic", m.ListOffsetsRequest,
        lambda v, ctx: list_offsets("diff-no-such-topic", [0], -1), doc="UNKNOWN_TOPIC_OR_PARTITION", min_version=1)

    # DescribeConfigs
    t_dc = topic_of("describe-configs")
    add("describe_configs_topic", m.DescribeConfigsRequest, lambda v, ctx: _describe(TOPIC, t_dc),
        lambda conn, ctx: create(conn, ctx, t_dc, 1, {"retention.ms": "3600000", "cleanup.policy": "compact"}),
        doc="every config of a topic with two set, with synonyms")
    add("describe_configs_topic_keys", m.DescribeConfigsRequest,
        lambda v, ctx: _describe(TOPIC, t_dc, ["retention.ms", "segment.bytes", "no.such.key"]),
        lambda conn, ctx: create(conn, ctx, t_dc, 1, {"retention.ms": "3600000", "cleanup.policy": "compact"}),
        doc="three named keys, one unknown")
    add("describe_configs_unknown_topic", m.DescribeConfigsRequest,
        lambda v, ctx: _describe(TOPIC, "diff-no-such-topic"), doc="UNKNOWN_TOPIC_OR_PARTITION")
    add("describe_configs_broker", m.DescribeConfigsRequest, lambda v, ctx: _describe(BROKER, "1"),
        doc="every config of broker 1, with synonyms")
    add("describe_configs_broker_keys", m.DescribeConfigsRequest,
        lambda v, ctx: _describe(BROKER, "1", ["num.partitions", "log.retention.hours", "message.max.bytes",
                                               "auto.create.topics.enable", "log.segment.bytes"]),
        doc="five named broker configs")

    # FindCoordinator
    add("find_coordinator_group", m.FindCoordinatorRequest,
        lambda v, ctx: m.FindCoordinatorRequest(key="diff-group", key_type=0,
                                                coordinator_keys=["diff-group"] if v >= 4 else []),
        lambda conn, ctx: warm_coordinator(conn, ctx, "diff-warm", 0), doc="group coordinator (after warm-up)")
    add("find_coordinator_txn", m.FindCoordinatorRequest,
        lambda v, ctx: m.FindCoordinatorRequest(key="diff-txn", key_type=1,
                                                coordinator_keys=["diff-txn"] if v >= 4 else []),
        lambda conn, ctx: warm_coordinator(conn, ctx, "diff-warm", 1), doc="transaction coordinator (after warm-up)",
        min_version=1)

    # InitProducerId
    add("init_producer_id_idempotent", m.InitProducerIdRequest,
        lambda v, ctx: m.InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000),
        doc="no transactional id: a new producer id, epoch 0")
    add("init_producer_id_transactional", m.InitProducerIdRequest,
        lambda v, ctx: m.InitProducerIdRequest(transactional_id=f"diff-txn-v{v}", transaction_timeout_ms=60_000),
        lambda conn, ctx: warm_coordinator(conn, ctx, "diff-warm", 1), doc="a new transactional id")
    add("init_producer_id_bad_timeout", m.InitProducerIdRequest,
        lambda v, ctx: m.InitProducerIdRequest(transactional_id=f"diff-txn-bad-v{v}",
                                               transaction_timeout_ms=10**9),
        lambda conn, ctx: warm_coordinator(conn, ctx, "diff-warm", 1),
        doc="transaction timeout above transaction.max.timeout.ms")

    # DeleteTopics
    def del_req(v: int, ctx: Ctx, name: str) -> Any:
        if v >= 6:
            return m.DeleteTopicsRequest(topics=[m.DeleteTopicsRequest.DeleteTopicState(name=name)], timeout_ms=30_000)
        return m.DeleteTopicsRequest(topic_names=[name], timeout_ms=30_000)

    add("delete_topics_ok", m.DeleteTopicsRequest, lambda v, ctx: del_req(v, ctx, topic_of("delete", f"-v{v}")),
        lambda conn, ctx: create(conn, ctx, topic_of("delete", f"-v{ctx['version']}")) and None,
        doc="an existing topic (created in setup for each version)")
    add("delete_topics_unknown", m.DeleteTopicsRequest, lambda v, ctx: del_req(v, ctx, "diff-no-such-topic"),
        doc="UNKNOWN_TOPIC_OR_PARTITION")
    return c


CASES = _cases()
