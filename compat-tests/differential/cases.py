"""The request sequences of the differential tests, by API family: this module (topics, records, configs,
coordinators, producer ids), ``cases_groups`` (classic and KIP-848 consumer groups, share groups), ``cases_txn``
(transactions) and ``cases_admin`` (the rest of the admin surface). Every case works on topics and groups of its
own (``diff-<case>``, per version where a version changes state), so the cases are independent of each other and
of their order. Shared setup steps and request builders: ``helpers``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from differential import cases_admin, cases_groups, cases_txn
from differential.helpers import (
    BROKER,
    TOPIC,
    TS,
    Case,
    Ctx,
    create,
    create_req,
    describe,
    fetch_request,
    list_offsets,
    md,
    produce_case,
    produce_records,
    topic_of,
    warm_coordinator,
)
from differential.wireconn import WireConn
from kafkalite_wire import messages as m

__all__ = ["CASES", "Case"]


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
    add("metadata_known_topic", m.MetadataRequest, lambda v, ctx: md(t_md),
        lambda conn, ctx: create(conn, ctx, t_md, 2), doc="a 2-partition topic", min_version=1)
    add("metadata_unknown_topic", m.MetadataRequest, lambda v, ctx: md("diff-no-such-topic"),
        doc="allow_auto_topic_creation=false", min_version=4)

    # CreateTopics
    add("create_topics_ok", m.CreateTopicsRequest, lambda v, ctx: create_req(topic_of("create-ok", f"-v{v}"), 3,
        configs={"retention.ms": "3600000"}), doc="3 partitions, retention.ms set (v5+: the topic's configs)")
    t_exists = topic_of("create-exists")
    add("create_topics_exists", m.CreateTopicsRequest, lambda v, ctx: create_req(t_exists),
        lambda conn, ctx: create(conn, ctx, t_exists), doc="TOPIC_ALREADY_EXISTS")
    add("create_topics_invalid_name", m.CreateTopicsRequest, lambda v, ctx: create_req("bad/name"),
        doc="INVALID_TOPIC_EXCEPTION")
    add("create_topics_invalid_config_value", m.CreateTopicsRequest, lambda v, ctx: create_req(
        topic_of("bad-config", f"-v{v}"), configs={"cleanup.policy": "sometimes"}), doc="INVALID_CONFIG")
    add("create_topics_unknown_config", m.CreateTopicsRequest, lambda v, ctx: create_req(
        topic_of("unknown-config", f"-v{v}"), configs={"no.such.config": "1"}), doc="INVALID_CONFIG")
    add("create_topics_zero_partitions", m.CreateTopicsRequest, lambda v, ctx: create_req(
        topic_of("zero-partitions", f"-v{v}"), 0), doc="INVALID_PARTITIONS")
    add("create_topics_replication_3", m.CreateTopicsRequest, lambda v, ctx: create_req(
        topic_of("rf3", f"-v{v}"), 1, rf=3), doc="INVALID_REPLICATION_FACTOR on one broker")
    for label, key, value in (("segment_bytes_below_1mib", "segment.bytes", "1048575"),
                              ("removed_in_4", "message.format.version", "3.0-IV1"),
                              ("timestamp_difference", "message.timestamp.difference.max.ms", "1000"),
                              ("tiered_storage_off", "remote.storage.enable", "true"),
                              ("decompressed_zero", "max.decompressed.message.bytes", "0"),
                              ("gzip_level", "compression.gzip.level", "0"),
                              ("copy_lag", "remote.copy.lag.ms", "-2")):
        add(f"create_topics_config_{label}", m.CreateTopicsRequest, lambda v, ctx, label=label, key=key,
            value=value: create_req(topic_of(f"cfg-{label}", f"-v{v}"), configs={key: value}, validate_only=True),
            doc=f"{key}={value} (validate_only)", min_version=5)
    add("create_topics_validate_only", m.CreateTopicsRequest, lambda v, ctx: create_req(
        topic_of("validate", f"-v{v}"), 2, validate_only=True), doc="validate_only: nothing created", min_version=1)

    # Produce
    t_prod = topic_of("produce")
    add("produce_ok", m.ProduceRequest, lambda v, ctx: produce_case(t_prod, 0, v, ctx),
        lambda conn, ctx: create(conn, ctx, t_prod, 1), doc="3 records, acks=all (each version appends after the last)",
        min_version=3)
    add("produce_unknown_topic", m.ProduceRequest, lambda v, ctx: produce_case("diff-no-such-topic", 0, v, ctx),
        doc="a topic that does not exist (Produce never auto-creates)", min_version=3)
    t2 = topic_of("produce-partition")
    add("produce_unknown_partition", m.ProduceRequest, lambda v, ctx: produce_case(t2, 5, v, ctx),
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
    add("describe_configs_topic", m.DescribeConfigsRequest, lambda v, ctx: describe(TOPIC, t_dc),
        lambda conn, ctx: create(conn, ctx, t_dc, 1, {"retention.ms": "3600000", "cleanup.policy": "compact"}),
        doc="every config of a topic with two set, with synonyms")
    add("describe_configs_topic_keys", m.DescribeConfigsRequest,
        lambda v, ctx: describe(TOPIC, t_dc, ["retention.ms", "segment.bytes", "no.such.key"]),
        lambda conn, ctx: create(conn, ctx, t_dc, 1, {"retention.ms": "3600000", "cleanup.policy": "compact"}),
        doc="three named keys, one unknown")
    add("describe_configs_unknown_topic", m.DescribeConfigsRequest,
        lambda v, ctx: describe(TOPIC, "diff-no-such-topic"), doc="UNKNOWN_TOPIC_OR_PARTITION")
    add("describe_configs_broker", m.DescribeConfigsRequest, lambda v, ctx: describe(BROKER, "1"),
        doc="every config of broker 1, with synonyms")
    add("describe_configs_broker_keys", m.DescribeConfigsRequest,
        lambda v, ctx: describe(BROKER, "1", ["num.partitions", "log.retention.hours", "message.max.bytes",
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
    for family in (cases_groups, cases_txn, cases_admin):
        family.add_cases(add)
    return c


CASES = _cases()
