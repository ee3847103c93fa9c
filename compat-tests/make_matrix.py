"""Regenerate compat-tests/MATRIX.md: run the compat suite with a junit report and tabulate client x scenario.

    python compat-tests/make_matrix.py            # runs pytest over compat-tests/, writes MATRIX.md
    python compat-tests/make_matrix.py --from-xml report.xml   # only re-tabulate an existing report
    python compat-tests/make_matrix.py --from-xml a.xml --from-xml b.xml   # reports of disjoint slices together
    python compat-tests/make_matrix.py --section ecosystem   # run only test_spark_kafka.py,
        # test_kafka_streams.py, test_kafka_connect.py and test_mirrormaker.py (with the tests marked
        # ecosystem), rewrite only the ecosystem section of MATRIX.md
    python compat-tests/make_matrix.py --section registry    # run only test_schema_registry*.py, rewrite
        # only the schema registry section of MATRIX.md (a few minutes)

Cells count the test cases of that (scenario, client): "5/5" all passed; failures name the failing variants.
Client limitations (features a client does not have, so no test exists) and known gaps with their root causes
are listed below the tables; the gap list is maintained here, next to the code that prints it.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from harness.clients import CLIENT_NAMES, FEATURES  # noqa: E402

SCENARIOS = {  # test function -> row label (in this order)
    "test_metadata": "Metadata (broker list, partitions)",
    "test_topic_lifecycle": "Admin: create / describe config / alter config / create partitions / delete",
    "test_create_existing_topic_fails": "Admin: create existing topic -> TOPIC_ALREADY_EXISTS",
    "test_list_offsets": "ListOffsets: earliest, latest, by timestamp",
    "test_roundtrip": "Produce + consume: keys, headers, null key/value, timestamps",
    "test_compression": "Compression codecs (read by self and confluent-kafka)",
    "test_idempotent_producer": "Idempotent producer",
    "test_consume_from_middle_offset": "Consume from an offset inside a batch",
    "test_log_append_time": "LogAppendTime topic: broker timestamps",
    "test_near_max_message_bytes": "Records near max.message.bytes (topic 200000, broker default)",
    "test_record_over_max_message_bytes_rejected": "Record over max.message.bytes rejected",
    "test_many_partitions": "Topic with 128 partitions",
    "test_matrix_is_complete": "All six clients produce and consume",
    "test_subscribe_before_topic_exists": "Subscribe before the topic exists",
    "test_restart_mid_stream": "Broker SIGKILL/SIGTERM + restart mid-stream",
    "test_100k_keyed_records": "Issue #4: 100k keyed records x codec, acks=all, idempotent",
    "test_100k_java_defaults": "Issue #4: 100k records, Java producer defaults + assign/seek",
    "test_clients_see_kafka_2_8": "Clients infer Kafka 2.8 from ApiVersions",
    "test_kafka_python_infers_kafka_4x": "kafka-python infers Kafka 4.2+ from ApiVersions (--emulate-kafka 4.3, 4.4, default)",
    "test_create_partitions_assignments": "CreatePartitions with replica assignments ([[1]] ok, others: Kafka's errors)",
    "test_describe_features": "Finalized features in ApiVersions (describe features)",
    "test_api_versions_with_features": "ApiVersions v3 with feature tags parsed (librdkafka 2.0.2)",
    "test_elect_leaders": "ElectLeaders (ELECTION_NOT_NEEDED, unknown partitions, all)",
    "test_reassignments": "Alter/ListPartitionReassignments",
    "test_alter_replica_log_dirs": "AlterReplicaLogDirs (the log dir; others LOG_DIR_NOT_FOUND)",
    "test_describe_producers": "DescribeProducers (idempotent + open transaction)",
    "test_describe_quorum": "DescribeQuorum (this node the only voter)",
    "test_list_config_resources": "ListConfigResources (4.3 and default profile: v1)",
    "test_list_config_resources_3_9": "ListConfigResources under --emulate-kafka 3.9 (v0 only)",
    "test_broker_configs": "DescribeConfigs broker: every Kafka 4.4 config",
    "test_empty_cleanup_policy": "Empty cleanup.policy (SUBTRACT / SET \"\" / create)",
    "test_txn_offsets_do_not_overwrite_a_later_plain_commit": "Txn offsets vs a later plain commit (+ restart)",
    "test_transactional_commit_abort":
        "Transactional producer: commit, abort, commit; read_committed readers (incl. the client's own) skip the abort",
    "test_secured_round_trip": "Security: SSL, mTLS, SASL_PLAINTEXT/SASL_SSL with PLAIN, SCRAM-SHA-256/512",
    "test_oauthbearer_unsecured_token": "Security: OAUTHBEARER with an unsecured token",
    "test_wrong_password_is_rejected_with_kafkas_message": "Security: wrong password -> Kafka's message",
    "test_reauthentication_cycle": "Security: KIP-368 re-authentication in band",
    "test_four_consumers_share_one_partition_each_record_once":
        "Share group (KIP-932): 4 ShareConsumers on 1 partition, each record once",
    "test_released_record_goes_to_another_consumer": "Share group: a released record goes to another consumer",
    "test_consumer_sigkill_releases_its_records_at_once":
        "Share group: a SIGKILLed consumer's records released at once (connection closed)",
    "test_lock_expiry_after_consumer_freezes": "Share group: a frozen (SIGSTOP) consumer's records after lock expiry",
    "test_reject_archives_and_delivery_limit": "Share group: REJECT archives; delivery count limit",
    "test_state_survives_broker_sigkill": "Share group: delivery state across a broker SIGKILL",
    "test_share_group_v0_early_access":
        "Share group v0 (Kafka 4.0 early access; default profile): KafkaShareConsumer 3.9.1, release redelivered",
    "test_read_committed_skips_aborted_transactions":
        "Share group: share.isolation.level=read_committed (aborted/open transactions not delivered)",
}

# KIP-848 consumer groups (group.protocol=consumer): test function -> row label (in this order). These member
# programs exist for confluent-kafka 2.16.1 and the Java clients 3.9.1 and 4.4.0; a test without a client parameter
# runs confluent-kafka (franz-go and rdkafka's KIP-848 members: test_consumer_protocol_group_reads_commits_and_resumes).
KIP848 = {
    "test_three_members_join_and_leave":
        "Subscribe; rebalance across 3 members joining and leaving (no partition owned twice, every record once)",
    "test_resume_after_member_and_broker_restarts": "Resume exactly after a member restart and broker SIGTERM/SIGKILL",
    "test_regex_subscription_picks_up_a_topic_created_later":
        "Regex subscription picks up a topic created later (librdkafka: regex on the broker; Java 3.9: Pattern "
        "matched by the client)",
    "test_static_member_restart_keeps_its_partitions": "Static member restart keeps its partitions, no rebalance",
    "test_range_assignor_chosen_by_the_members": "Server-side `range` assignor chosen by the members",
    "test_empty_classic_group_converts_to_consumer_protocol": "Empty classic group -> consumer group (offsets kept)",
    "test_classic_group_upgrades_online_and_downgrades_back":
        "Live classic group -> consumer group -> classic group online (classic members inside the consumer group)",
    "test_offset_delete_and_group_admin_across_group_types":
        "OffsetDelete vs a live consumer group; List/Describe/DeleteGroups across classic and consumer groups",
    "test_eos_consume_transform_produce_across_rebalances":
        "Exactly-once consume-transform-produce (sendOffsetsToTransaction with the member epoch) across a join, "
        "a leave and a crash mid-transaction: read_committed outputs once each, offsets = consumed",
}
KIP848_CLIENTS = ("confluent-kafka", "java", "java4")

# Several brokers in one process and faults on command (#17): test function -> row label (in this order).
# A test without a client parameter runs the client its label names.
CLUSTER_MODULES = ("test_cluster", "test_faults")
CLUSTER = {
    "test_produce_across_leader_moves_and_broker_restart":
        "3 brokers: idempotent producer across every leader moving and a broker stop/start (nothing lost or "
        "duplicated, replicas byte-identical)",
    "test_confluent_idempotent_producer_keeps_producing":
        "3 brokers: one long-lived producer across moves, a stop/start and a restart (confluent-kafka)",
    "test_confluent_group_continues_across_coordinator_move_and_stop":
        "3 brokers: a group across a coordinator move and the coordinator's broker stopping (confluent-kafka)",
    "test_group_member_continues_across_coordinator_move_and_stop":
        "3 brokers: a committing group member across a coordinator move and a stop: every record read, "
        "commits at each coordinator (kafkajs, kafka-go: at-least-once, see their limitations)",
    "test_confluent_transactions_survive_a_coordinator_move_and_stop":
        "3 brokers: transactions with offsets across a transaction coordinator move and stop (confluent-kafka)",
    "test_transactions_survive_a_coordinator_move_and_stop":
        "3 brokers: transactions across a transaction coordinator move and stop, read_committed sees exactly "
        "the committed records (kafka-python: two moves, see its limitations)",
    "test_confluent_eos_consumer_protocol_across_coordinator_moves":
        "3 brokers: exactly-once consume-transform-produce with a group.protocol=consumer member across a group "
        "and a transaction coordinator move (confluent-kafka)",
    "test_each_client_retries_not_leader_exactly_once":
        "Injected NOT_LEADER_OR_FOLLOWER on Produce (refused / appended then refused): retried, stored once",
    "test_each_client_fails_on_a_fatal_produce_error":
        "Injected TOPIC_AUTHORIZATION_FAILED on Produce: reaches the application, nothing appended",
    "test_each_client_group_survives_coordinator_errors":
        "Injected COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR on FindCoordinator, JoinGroup, OffsetCommit: "
        "the group forms and commits",
    "test_coordinator_errors_group_still_forms_and_commits":
        "Coordinator errors: group forms and commits (confluent-kafka)",
    "test_latency_beyond_request_timeout_client_retries":
        "Latency past request.timeout.ms: timed out, retried, no duplicate (confluent-kafka)",
    "test_pause_times_out_resume_recovers": "Broker paused: requests time out; resumed: recovers (confluent-kafka)",
    "test_dropped_connections_clients_reconnect": "Connections dropped: clients reconnect (confluent-kafka)",
}

# Kafka's ecosystem (#25): Spark's Kafka connector and kafkalite's data source (one column each), Kafka Streams,
# Kafka Connect and MirrorMaker 2.
ECOSYSTEM_MODULES = ("test_spark_kafka", "test_kafka_streams", "test_kafka_connect", "test_mirrormaker")
ECOSYSTEM_HEADER = ("## Kafka's ecosystem on kafkalite (compat-tests/test_spark_kafka.py, test_kafka_streams.py, "
                    "test_kafka_connect.py, test_mirrormaker.py)")
ECOSYSTEM = {
    "test_batch_json_offsets_with_headers":
        "Spark batch read: startingOffsets/endingOffsets as JSON (-2/-1), includeHeaders (repeated names, null value)",
    "test_batch_offsets_by_timestamp":
        "Spark batch read: startingOffsetsByTimestamp/endingOffsetsByTimestamp, startingTimestamp/endingTimestamp",
    "test_read_committed_over_transactions":
        "Spark batch read: kafka.isolation.level=read_committed over committed, aborted and open transactions",
    "test_sink_key_value_headers_topic_partition": "Spark sink: key, value, headers, topic and partition columns",
    "test_java_client_options_taken_and_sparks_refusals":
        "Spark batch read and sink with Java client settings (kafka.default.api.timeout.ms, kafka.max.poll.records, "
        "kafka.buffer.memory, ...); the kafka.* keys Spark refuses are refused in Spark's words",
    "test_stream_rate_limited_resumes_after_driver_sigkill":
        "Spark streaming: maxOffsetsPerTrigger, driver SIGKILLed, resumed from its checkpoint, file sink exactly once",
    "test_wordcount_exactly_once_v2_across_sigkill":
        "Streams word count, RocksDB store, exactly_once_v2, SIGKILL + restart; internal topics with Streams' configs",
    "test_windowed_count_with_grace_across_sigkill": "Streams windowed count with grace, SIGKILL + restart",
    "test_foreign_key_join_follows_both_tables": "Streams foreign-key table join following updates to both tables",
    "test_min_partitions_splits_offset_ranges": "Spark batch read: minPartitions splits offset ranges as Spark does",
    "test_fail_on_data_loss_after_retention":
        "Spark batch read: failOnDataLoss=true fails, =false skips, after retention deleted records",
    "test_sasl_ssl_scram_through_kafka_prefixed_options":
        "Spark source and sink over SASL_SSL + SCRAM-SHA-512 through kafka.-prefixed Java options; wrong password",
    "test_standby_takes_over_after_sigkill_and_survives_a_broker_sigkill":
        "Streams standbys on two instances; one SIGKILLed (the other takes over), the broker SIGKILLed",
    "test_application_reset_tool_reprocesses_from_scratch":
        "kafka-streams-application-reset 4.4: input offsets to earliest, internal topics deleted, rerun exact",
    "test_filestream_exactly_once_source_across_graceful_and_sigkill_restarts":
        "Connect distributed worker: compacted internal topics, FileStream source (exactly.once.source.support) "
        "and sink, graceful and SIGKILL restarts, zombie fencing (Admin.fenceProducers)",
    "test_config_topic_must_be_compacted": "Connect refuses a config topic that is not compacted",
    "test_mirror_topic_configs_records_heartbeats_and_group_offsets":
        "MirrorMaker 2 kafkalite -> kafkalite and kafkalite -> Apache Kafka 4.4: A.<topic>, configs, records with "
        "keys/headers/timestamps, heartbeats, checkpoints with sync.group.offsets (a moved consumer resumes "
        "exactly)",
}
ECOSYSTEM_LIMITATIONS = [
    "Spark's connector: spark-sql-kafka-0-10_2.13 4.3.0 (pyspark's version) is not on Maven Central; 4.2.0 (with "
    "kafka-clients 3.9.2) is used with pyspark 4.3.0. It takes JSON numbers only in startingOffsetsByTimestamp "
    "(a quoted timestamp is an IllegalArgumentException; kafkalite's source also takes strings). Save modes: "
    "Spark's connector refuses overwrite and ignore (KafkaSourceProvider.createRelation); Spark lets a Python "
    "data source take only append and overwrite, so `df.write.format(\"kafkalite\").save()` needs "
    "`.mode(\"append\")` where `format(\"kafka\")` takes the default errorifexists "
    "(UNSUPPORTED_DATA_SOURCE_SAVE_MODE). Spark hands every `kafka.*` option to Java's client, which warns "
    "about names it does not know; the `kafkalite` source runs on librdkafka, so it renames the Java settings "
    "librdkafka has under another name (fetch.max.wait.ms, receive.buffer.bytes, buffer.memory, "
    "max.request.size, sasl.jaas.config, a PEM truststore, ...) and drops the Java-only ones that cannot change "
    "what it reads or writes (default.api.timeout.ms, max.poll.records, max.block.ms, metrics, group membership "
    "settings of a consumer that only assigns) with one logged line each (kafkalite/spark/javaconf.py).",
    "Kafka Streams 4.4: a windowed aggregate's grace check uses the processor's own observedStreamTime "
    "(AbstractKStreamTimeWindowAggregateProcessor: -1 when built, raised only by processed records), not the "
    "partition time restored from the committed offset's metadata (which kafkalite stores and returns; the test "
    "checks it), so the first record after a restart is never dropped as late. Same on Apache Kafka.",
    "Kafka Connect and MirrorMaker 2: Maven Central serves connect-runtime 4.4.0 but no connect-file, "
    "connect-mirror or connect-mirror-client 4.4.0, and 4.3.1's connectors do not load on kafka-clients 4.4.0 "
    "(AppInfoParser moved to org.apache.kafka.common.utils.internals), so Connect and MM2 run as 4.3.1 "
    "throughout. The FileStreamSink is at least once: after a SIGKILLed worker it may write lines again "
    "(the test checks none is lost or reordered); the source side is exactly once.",
    "Connect's leader fences zombie tasks through Admin.fenceProducers unless the old and the new task generation "
    "both have one task (DistributedHerder: then the new task's InitProducerId fences the old one); "
    "FileStreamSource has one task, so the test fences from outside with kafka-transactions "
    "forceTerminateTransaction, which KafkaAdminClient 4.4 implements with fenceProducers.",
]


# The built-in Schema Registry (#27): Confluent's registry clients and serializers against `kafkalite serve
# --schema-registry`, records through kafkalite topics. Test function -> (client, scenario), in this order; a
# module's tests not listed here are shown under REGISTRY_MODULES' client with the function's name.
REGISTRY_MODULES = {
    "test_schema_registry": "confluent-kafka 2.16.1 (Python)",
    "test_schema_registry_kafkajs": "@kafkajs/confluent-schema-registry 4.1.0",
    "test_schema_registry_confluent_js": "@confluentinc/schemaregistry 1.10.1",
    "test_schema_registry_java": "Java KafkaAvroSerializer 7.0.16",
}
REGISTRY_HEADER = ("## Schema Registry clients on kafkalite's registry (compat-tests/test_schema_registry*.py, "
                   "`--section registry`)")
REGISTRY = {
    "test_avro_round_trip_through_a_topic":
        ("confluent-kafka AvroSerializer / AvroDeserializer", "auto-register, produce, consume, decode by id"),
    "test_json_schema_round_trip_through_a_topic":
        ("confluent-kafka JSONSerializer / JSONDeserializer", "auto-register, produce, consume, decode by id"),
    "test_protobuf_round_trip_with_references_through_a_topic":
        ("confluent-kafka ProtobufSerializer / ProtobufDeserializer",
         "an imported file registered as a reference, map/oneof/enum/Timestamp, two message indexes, round trip"),
    "test_protobuf_evolution_and_text_schemas":
        ("confluent-kafka SchemaRegistryClient (Protobuf)",
         "compatible evolution, 409 FIELD_SCALAR_KIND_CHANGED, normalize, ?format=serialized"),
    "test_evolution_compatible_then_incompatible":
        ("confluent-kafka SchemaRegistryClient (Avro)",
         "compatible evolution, 409 incompatible, config NONE, lookup, delete version/subject"),
    "test_references_and_normalisation":
        ("confluent-kafka SchemaRegistryClient (Avro)", "references resolved by the serializer, normalize"),
    "test_schemas_topic_holds_confluents_records":
        ("confluent-kafka Consumer on `_schemas`", "Confluent's SCHEMA and CONFIG records"),
    "test_sigkill_loses_nothing_acknowledged":
        ("confluent-kafka SchemaRegistryClient (Avro)", "broker SIGKILL: every acknowledged schema kept, ids go on"),
    "test_kafkajs_schema_registry_client_round_trips":
        ("@kafkajs/confluent-schema-registry 4.1.0 + kafkajs 2.2.4",
         "Avro, JSON Schema, Protobuf (+ a reference): register, encode, produce, consume, decode; 409"),
    "test_avro_register_lookup_and_round_trip":
        ("@confluentinc/schemaregistry 1.10.1 AvroSerializer / AvroDeserializer (+ kafkajs 2.2.4)",
         "register, look up (id, subject, version), evolve, auto-register, produce, consume, decode"),
    "test_json_schema_register_lookup_and_round_trip":
        ("@confluentinc/schemaregistry 1.10.1 JsonSerializer / JsonDeserializer (+ kafkajs 2.2.4)",
         "register, look up, validate, produce, consume, decode"),
    "test_protobuf_with_a_reference_round_trip":
        ("@confluentinc/schemaregistry 1.10.1 ProtobufSerializer / ProtobufDeserializer (+ kafkajs 2.2.4)",
         "descriptors from protoc, auto-register with a reference, produce, consume, decode"),
    "test_incompatible_schemas_are_refused_with_409":
        ("@confluentinc/schemaregistry 1.10.1 SchemaRegistryClient",
         "Avro, JSON Schema, Protobuf: incompatible -> RestError 409 / 409, compatibility checks, NONE"),
    "test_kafka_avro_serializer_round_trip":
        ("Java KafkaAvroSerializer / KafkaAvroDeserializer 7.0.16 + kafka-clients",
         "auto-register, produce (Java producer), consume, decode GenericRecords by id"),
}


SECTION_MODULES = {"ecosystem": list(ECOSYSTEM_MODULES), "registry": list(REGISTRY_MODULES)}


def render_registry(cases: list[Case]) -> list[str]:
    reg = [c for c in cases if c.module in REGISTRY_MODULES]
    if not reg:
        return []
    lines = [REGISTRY_HEADER, "",
             "Confluent's registry clients and serializers against kafkalite's built-in Schema Registry "
             "(`kafkalite serve --schema-registry`), records produced and consumed through kafkalite topics; a "
             "fresh client decodes each record with the schema fetched by id. Apache Kafka has no registry: "
             "against it these are skipped (kafkalite-only).", "",
             f"Run: {_dt.datetime.now(_dt.UTC).strftime('%Y-%m-%d %H:%M UTC')} at commit `{_head()}`.", "",
             "| Client | Scenario | Result |", "|---|---|---|"]
    order = {m: i for i, m in enumerate(REGISTRY_MODULES)}
    funcs = sorted({(c.module, c.func) for c in reg},
                   key=lambda mf: (order[mf[0]], list(REGISTRY).index(mf[1]) if mf[1] in REGISTRY else len(REGISTRY),
                                   mf[1]))
    for module, f in funcs:
        client, scenario = REGISTRY.get(f, (REGISTRY_MODULES[module], f"`{f}`"))
        fc = [c for c in reg if c.func == f and c.module == module]
        lines.append(f"| {client} | {scenario} | {_cell(fc)} |")
    return [*lines, ""]


def _head() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                          text=True).stdout.strip()


def drop_rows_of(text: str, modules: list[str]) -> str:
    """``text`` (a MATRIX.md) without the "Not per client" rows of ``modules`` (``| `test_x` (module) | ...``),
    which a section of their own now shows."""
    keep = [line for line in text.splitlines()
            if not any(line.startswith("| `") and f"` ({m}) |" in line for m in modules)]
    return "\n".join(keep) + "\n"


def render_ecosystem(cases: list[Case]) -> list[str]:
    eco = [c for c in cases if c.module in ECOSYSTEM_MODULES]
    if not eco:
        return []
    lines = [ECOSYSTEM_HEADER, "",
             "Real frameworks from Maven Central (`tools/bootstrap.sh eco`, `make ecosystem`) against a kafkalite "
             "process: Spark's built-in `kafka` format (spark-sql-kafka-0-10_2.13 4.2.0 on pyspark 4.3.0) and "
             "the same jobs through kafkalite's `kafkalite` data source; Kafka Streams 4.4.0 apps built with "
             "javac (compat-tests/streams/); a Kafka Connect 4.3.1 distributed worker and a dedicated "
             "MirrorMaker 2 4.3.1 between two kafkalite processes and from kafkalite into Apache Kafka 4.4.", "",
             "| Scenario | Spark `format(\"kafka\")` | `format(\"kafkalite\")` | Kafka Streams 4.4 | Connect / MM2 |",
             "|---|---|---|---|---|"]
    funcs = [f for f in ECOSYSTEM if any(c.func == f for c in eco)]
    funcs += sorted({c.func for c in eco} - set(funcs))
    for f in funcs:
        fc = [c for c in eco if c.func == f]
        if fc[0].module == "test_kafka_streams":
            cells = ["—", "—", _cell(fc), "—"]
        elif fc[0].module in ("test_kafka_connect", "test_mirrormaker"):
            cells = ["—", "—", "—", _cell(fc)]
        else:
            cells = [_cell([c for c in fc if c.params == fmt]) for fmt in ("kafka", "kafkalite")] + ["—", "—"]
        lines.append(f"| {ECOSYSTEM.get(f, f'`{f}`')} | " + " | ".join(cells) + " |")
    lines += ["", "Limitations found (verified in the framework's source):", ""]
    lines += [f"- {x}" for x in ECOSYSTEM_LIMITATIONS]
    return [*lines, ""]


def splice_section(text: str, header: str, section: list[str]) -> str:
    """``text`` (a MATRIX.md) with the section under ``header`` replaced by ``section``, or inserted before the
    client limitations when it has none."""
    lines = text.splitlines()
    if header in lines:
        i = lines.index(header)
        j = next((k for k in range(i + 1, len(lines)) if lines[k].startswith("## ")), len(lines))
    else:
        i = j = next((k for k, x in enumerate(lines) if x.startswith("## Client limitations")), len(lines))
    return "\n".join(lines[:i] + section + lines[j:]) + "\n"


# Client limitations: features the client does not have (no test is generated for them).
LIMITATIONS = {
    "kcat": "reads records as text lines: no binary keys/values, no per-record headers (one -H set per run), "
            "no per-record timestamps, no admin besides -L/-Q; consumes with a simple (non-group) consumer; "
            "`kcat -G` exits on the first 'Subscribed topic not available' error, so it cannot subscribe "
            "before a topic exists (same against Apache Kafka). Its librdkafka 2.0.2 does not re-authenticate "
            "(KIP-368 arrived in librdkafka 2.2).",
    "confluent-kafka": "librdkafka 2.16 with group.protocol=consumer can rewind a partition it started by "
                       "auto.offset.reset (no committed offset) to the beginning when an incremental rebalance "
                       "pauses and resumes it while its ListOffsets is in flight: an outdated answer re-arms the "
                       "offset query timer, which later fires on the active partition (debug: 'timed offset query "
                       "for offset BEGINNING ... in state active') and records are delivered again. Seen once in "
                       "~60 three-member runs under load; the broker's answers were correct and in order (as on "
                       "Apache Kafka, ListOffsets waits behind the connection's Fetch long poll). The KIP-848 "
                       "exactly-once tests commit start offsets first (test_groups_consumer_protocol."
                       "commit_start_offsets).",
    "kafkajs": "ships only the gzip codec (snappy/lz4/zstd need codec plugins that are not installed), cannot "
               "send a null header value, has no assign(): every consume goes through a consumer group; its "
               "fetchTopicOffsetsByTimestamp replaces -1 (no such offset) by the high watermark. Across a group "
               "coordinator move it is at-least-once: kafkajs 2.2.4 takes NOT_COORDINATOR on OffsetCommit for a "
               "rebalance (src/errors.js isRebalancing; consumer/runner.js joinAndSync) instead of finding the "
               "coordinator again and retrying the commit, so it rejoins and re-reads the batch whose commit the "
               "old coordinator refused (Apache Kafka answers the same NOT_COORDINATOR after a move).",
    "kafka-python": "refuses a null header value ((str, bytes) tuples only). Its transactional producer "
                    "(3.0.12) can hang when the transaction coordinator's broker stops: kafka/producer/sender.py "
                    "_maybe_send_transactional_request catches await_ready()'s KafkaConnectionError (connection "
                    "refused), queues a FindCoordinator, but leaves target_node set, so retry() is skipped and the "
                    "dequeued AddPartitionsToTxn is lost; flush() then times out (2 of 4 runs; the same against "
                    "Apache Kafka). Its cluster transaction test moves the coordinator twice instead.",
    "aiokafka": "refuses a record whose key and value are both null; no "
                "KIP-368 re-authentication (the broker closes its connection when a session expires; it reconnects).",
    "java4": "kafka-clients 4.4.0 running the `java` driver's sources (compat-tests/java, compiled against it): it "
             "refuses brokers older than 2.1 (KIP-896: Produce v3+, Fetch v4+ ...) and speaks KIP-848 groups "
             "as a released feature. Only its KIP-848 members and the #24 core scenarios run in `make test`.",
    "franz-go": "measures RecordDeliveryTimeout from each record's own Timestamp (kgo sink.go isTimedOut), so a "
                "record with an explicit past timestamp times out before it is sent when that timeout is set (the "
                "driver leaves it off); kadm's ListOffsetsAfterMilli answers the end offset instead of Kafka's -1 "
                "for a timestamp after the last record; KIP-848 through kgo.ServerSideBalancer (with the range "
                "balancer).",
    "sarama": "run at sarama.MaxVersion (Kafka 4.3.1); no KIP-848 consumer (classic groups only); its admin API "
              "exposes no cluster id; idempotence is off unless asked for. With AutoCommit off, a commit the "
              "coordinator refuses (NOT_COORDINATOR after a move) is dropped (the offset manager only releases "
              "the coordinator): the marked offsets go out at the next Commit(), so the driver commits every "
              "200 ms. Consumer errors (a broker gone) are reported on Errors() and recovered from.",
    "kafka-go": "no idempotent or transactional producer, no KIP-848 consumer; its reader takes a record's "
                "timestamp as the batch's first timestamp + delta and ignores the batch's LogAppendTime type (same "
                "against Apache Kafka), so no LogAppendTime scenario; the Writer returns no offsets and picks "
                "partitions by a Balancer (the driver's reads each message's WriterData); the process-wide "
                "DefaultTransport caches metadata for 6 s (MetadataTTL), so a topic created meanwhile is "
                "UNKNOWN_TOPIC_OR_PARTITION to it: the driver uses a Transport per command. Its reader turns a "
                "zero-length key, value or header value into nil (read.go readNewBytes), so an empty header "
                "value reads back as null (the cross-client cells compare it so). CommitMessages hands "
                "NOT_COORDINATOR and a stopped coordinator's closed connection to the application (the driver "
                "retries for 10 s); across a coordinator move or stop it is at-least-once: it commits only through "
                "its generation's coordinator connection (reader.go commitOffsetsWithRetry) and ends the generation "
                "when that coordinator stops answering (consumergroup.go heartbeatLoop), so the next generation "
                "re-reads what was read but not yet committed.",
    "rust-rdkafka": "librdkafka 2.12.1 compiled from the crate's bundled sources (Debian's librdkafka-dev is 2.0.2, "
                    "below rdkafka-sys' minimum for dynamic linking, 2.12.1); AdminClient has only the "
                    "non-incremental AlterConfigs (the driver sends the topic's current overrides with the change). "
                    "Its consumer's poll reports a stopped broker (BrokerTransportFailure) as an error it recovers "
                    "from itself (the driver goes on polling).",
    "rskafka": "a partition client (produce, fetch, list offsets) and a controller client (create/delete topic) "
               "only: no consumer groups, no idempotent or transactional producer, no topic configs (create "
               "without configs), no partition growth, no broker list (no metadata scenario), acks=all and "
               "read_uncommitted only. Headers are a map: no duplicate names, no null values - it cannot decode "
               "a null header value ('out of range integral type conversion'), so it reads only records without "
               "duplicate or null headers (no cross-client cell for producers that send them). It takes a record's "
               "timestamp as first timestamp + delta, ignoring LogAppendTime (same against Apache Kafka).",
}

# Known gaps: id, where, root cause. Tests for these are xfail(strict=True) with the same id in the reason.
KNOWN_GAPS = [
    ("G1", "kafka-python x --emulate-kafka 2.8 and 3.6: metadata/admin",
     "client bug: kafka-python 3.0.12 `describe_cluster()` pops `endpoint_type`, a DescribeCluster v1 field, "
     "from a v0 response (KeyError). Kafka 2.8 and 3.6 offer only DescribeCluster v0 (v1 came in 3.7), so real "
     "Kafka 2.8/3.6 break it the same way; the default profile offers v1 and works. Checked in Kafka's sources: "
     "2.8.2 and 3.6.2 list DescribeCluster v0 for ZooKeeper and KRaft brokers and KafkaApis answers it, so a "
     "real broker of either release advertises it and kafka-python never takes its Metadata fallback (which it "
     "takes only when the key is absent); kafka-python's main branch (2026-08) still pops the field without a "
     "default. The fix belongs in the client (`pop('endpoint_type', None)`); not advertising DescribeCluster "
     "under these profiles would make them unlike the releases they emulate."),
]


@dataclass
class Case:
    module: str
    func: str
    props: dict[str, str]
    outcome: str  # passed failed error skipped xfailed xpassed
    message: str = ""
    time: float = 0.0
    params: str = field(default="")


def run_suite(xml_path: Path, extra: list[str], targets: list[Path] | None = None) -> int:
    cmd = [sys.executable, "-m", "pytest", *map(str, targets or [HERE]), "-q", "-p", "no:cacheprovider",
           f"--junitxml={xml_path}", "-o", "junit_family=xunit1", *extra]
    print("+", " ".join(cmd), flush=True)
    return subprocess.call(cmd, cwd=str(REPO))


def parse(xml_path: Path) -> list[Case]:
    cases = []
    for tc in ET.parse(xml_path).getroot().iter("testcase"):
        if not tc.get("file", "compat-tests/").startswith("compat-tests/"):
            continue   # a report of the whole `make test` (xunit1 names each case's file): only the compat suite
        name = tc.get("name", "")
        func, _, params = name.partition("[")
        module = tc.get("classname", "").rsplit(".", 1)[-1]
        props = {p.get("name", ""): p.get("value", "") for p in tc.iter("property")}
        outcome, msg = "passed", ""
        for child in tc:
            if child.tag in ("failure", "error"):
                outcome, msg = ("failed" if child.tag == "failure" else "error"), child.get("message", "")
            elif child.tag == "skipped":
                is_xfail = child.get("type") == "pytest.xfail"
                outcome, msg = ("xfailed" if is_xfail else "skipped"), child.get("message", "")
        if "client_name" not in props and not params:
            for n in sorted(CLIENT_NAMES, key=len, reverse=True):   # test_<scenario>_<client>: one row
                suffix = "_" + n.replace("-", "_")
                if func.endswith(suffix):
                    func, props["client_name"] = func[: -len(suffix)], n
                    break
        cases.append(Case(module, func, props, outcome, msg, float(tc.get("time", 0) or 0), params.rstrip("]")))
    return cases


def _short(msg: str, n: int = 160) -> str:
    msg = re.sub(r"\s+", " ", msg).strip()
    return (msg[: n - 1] + "…") if len(msg) > n else msg


def _client(c: Case) -> str | None:
    """The client a test case is about: its client_name parameter, else a param id starting with a name."""
    if "client_name" in c.props:
        return c.props["client_name"]
    for n in sorted(CLIENT_NAMES, key=len, reverse=True):
        if c.params == n or c.params.startswith(n + "-"):
            return n
    return None


def _cell(cs: list[Case]) -> str:
    if not cs:
        return "—"
    ok = sum(c.outcome == "passed" for c in cs)
    xf = sum(c.outcome == "xfailed" for c in cs)
    sk = sum(c.outcome == "skipped" for c in cs)
    bad = [c for c in cs if c.outcome in ("failed", "error")]
    run = len(cs) - sk
    if run == 0:
        return "skipped"
    if bad:
        which = ", ".join(sorted({c.props.get("codec") or c.props.get("sig") or c.params for c in bad} - {""}))
        return f"❌ {ok}/{run}" + (f" (fails: {which})" if which else "")
    if xf:
        return f"⚠️ {ok}/{run} ({xf} known gap)"
    return f"✅ {ok}/{run}"


def render(cases: list[Case], took_s: float | None, note: str = "") -> str:
    cluster = [c for c in cases if c.module in CLUSTER_MODULES]
    ecosystem = render_ecosystem(cases) + render_registry(cases)
    cases = [c for c in cases if c.module not in ECOSYSTEM_MODULES and c.module not in REGISTRY_MODULES]
    mine = [c for c in cases if not c.module.startswith("test_groups_") and c.module not in CLUSTER_MODULES]
    groups = [c for c in cases if c.module.startswith("test_groups_")]
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                          text=True).stdout.strip()
    total = defaultdict(int)
    for c in cases:
        total[c.outcome] += 1
    reference = next((c.props["broker"] for c in cases if c.props.get("broker")), None)
    lines = [
        "# Client compatibility matrix" + (f" against Apache Kafka {reference.split('-', 1)[1]}" if reference else ""),
        "",
        "Generated by `python compat-tests/make_matrix.py` (or `make matrix`) from a real run of `compat-tests/`:",
        "each client is the real library/tool talking to a real `python -m kafkalite serve` process." if not reference
        else "each client is the real library/tool talking to a one-node KRaft Apache Kafka broker started by the "
        "harness (`KAFKALITE_COMPAT_BROKER=kafka`, `make matrix-reference`, `compat-tests/harness/reference.py`); "
        "scenarios that need what only kafkalite has are listed as skipped with the reason (`kafkalite-only: ...`).",
        f"Run: {_dt.datetime.now(_dt.UTC).strftime('%Y-%m-%d %H:%M UTC')} at commit `{head}`"
        + (f", {took_s:.0f} s" if took_s else "") + ". Totals: "
        + ", ".join(f"{v} {k}" for k, v in sorted(total.items())) + "." + (f" {note}" if note else ""),
        "",
        "Clients: kafka-python 3.0.12, confluent-kafka 2.16.1 (librdkafka 2.16), aiokafka 0.14.0, Java "
        "kafka-clients 3.9.1, kcat 1.7.1 (librdkafka 2.0.2), kafkajs 2.2.4; since #24: Java kafka-clients 4.4.0 "
        "(`java4`), Go: franz-go 1.22.3 (kadm 1.20.0), Sarama 1.61.1, kafka-go 0.4.51; Rust: the rdkafka crate 0.39.0 "
        "(`rust-rdkafka`, librdkafka 2.12.1 bundled), rskafka 0.6.0. `—` = the client lacks the feature "
        "(see limitations) or the scenario is not run for it. `make test` runs a core slice of the #24 clients "
        "(compat-tests/conftest.py NEW_CLIENT_CORE), `make matrix` all of it.",
        "",
    ]
    for profile in ("default", "4.4", "4.3", "3.6", "2.8"):
        rows = [c for c in mine if c.props.get("profile", "default") == profile and "producer" not in c.props]
        if not rows:
            continue
        title = "Default profile (Kafka 4.4, serving also the versions Kafka 3.9 served)" if profile == "default" else (
            f"`--emulate-kafka {profile}` profile (Kafka {profile}'s API versions"
            + (", KIP-896's removed versions gone)" if profile in ("4.3", "4.4") else ")"))
        lines += [f"## {title}", "", "| Scenario | " + " | ".join(CLIENT_NAMES) + " |",
                  "|---|" + "---|" * len(CLIENT_NAMES)]
        funcs = [f for f in SCENARIOS if any(c.func == f for c in rows)]
        funcs += sorted({c.func for c in rows} - set(funcs))
        whole = []
        for f in funcs:
            fc = [c for c in rows if c.func == f]
            if not any(_client(c) for c in fc):
                whole.append(f"| {SCENARIOS.get(f, f'`{f}`')} ({fc[0].module}) | {_cell(fc)} |")
                continue
            cells = [_cell([c for c in fc if _client(c) == n]) for n in CLIENT_NAMES]
            lines.append(f"| {SCENARIOS.get(f, f'`{f}`')} | " + " | ".join(cells) + " |")
        lines.append("")
        if whole:
            lines += ["Not per client (several clients or the broker alone in one test):", "",
                      "| Test | Result |", "|---|---|", *whole, ""]
    cross = [c for c in mine if "producer" in c.props]
    if cross:
        lines += ["## Cross-client: rows produce, columns consume (50 records, 2 partitions each)", "",
                  "| producer \\ consumer | " + " | ".join(CLIENT_NAMES) + " |",
                  "|---|" + "---|" * len(CLIENT_NAMES)]
        for p in CLIENT_NAMES:
            cells = [_cell([c for c in cross if c.props.get("producer") == p and c.props.get("consumer") == q])
                     for q in CLIENT_NAMES]
            lines.append(f"| **{p}** | " + " | ".join(cells) + " |")
        lines.append("")
    k848 = [c for c in groups if c.func in KIP848]
    groups = [c for c in groups if c.func not in KIP848]
    if k848:
        lines += ["## KIP-848 consumer groups (`group.protocol=consumer`)", "",
                  "Member programs of confluent-kafka and the Java clients 3.9.1 and 4.4.0; `—` elsewhere (franz-go and "
                  "rdkafka as KIP-848 members: `test_consumer_protocol_group_reads_commits_and_resumes` under "
                  "Consumer groups).", "",
                  "| Scenario | " + " | ".join(CLIENT_NAMES) + " |", "|---|" + "---|" * len(CLIENT_NAMES)]
        for f in [f for f in KIP848 if any(c.func == f for c in k848)]:
            fc = [c for c in k848 if c.func == f]
            cells = [_cell([c for c in fc if (_client(c) or "confluent-kafka") == n]) if n in KIP848_CLIENTS
                     else "—" for n in CLIENT_NAMES]
            cells = [("not run" if x == "—" and n in KIP848_CLIENTS else x) for x, n in zip(cells, CLIENT_NAMES, strict=True)]
            lines.append(f"| {KIP848[f]} | " + " | ".join(cells) + " |")
        lines.append("")
    if cluster:
        lines += ["## Several brokers in one process and faults on command (compat-tests/test_cluster.py, "
                  "test_faults.py)", "",
                  "A single-client test's cell is under the client it names.", "",
                  "| Scenario | " + " | ".join(CLIENT_NAMES) + " |", "|---|" + "---|" * len(CLIENT_NAMES)]
        funcs = [f for f in CLUSTER if any(c.func == f for c in cluster)]
        funcs += sorted({c.func for c in cluster} - set(funcs))
        for f in funcs:
            fc = [c for c in cluster if c.func == f]
            named = "confluent-kafka" if "confluent" in f or "confluent-kafka" in CLUSTER.get(f, "") else None
            cells = [_cell([c for c in fc if (_client(c) or named) == n]) for n in CLIENT_NAMES]
            lines.append(f"| {CLUSTER.get(f, f'`{f}`')} | " + " | ".join(cells) + " |")
        lines.append("")
    if groups:
        lines += ["## Consumer groups (compat-tests/test_groups_*.py, owned by the group coordinator work)", "",
                  "| Test | " + " | ".join(CLIENT_NAMES) + " |", "|---|" + "---|" * len(CLIENT_NAMES)]
        for f in sorted({c.func for c in groups}):
            fc = [c for c in groups if c.func == f]
            cells = [_cell([c for c in fc if _client(c) == n]) for n in CLIENT_NAMES]
            if not any(_client(c) for c in fc):
                cells = [f"{_cell(fc)} (whole test)"] + [""] * (len(CLIENT_NAMES) - 1)
            lines.append(f"| `{f}` | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ecosystem
    lines += ["## Client limitations (no test generated)", ""]
    for n in CLIENT_NAMES:
        codecs = [f.split(":")[1] for f in sorted(FEATURES[n]) if f.startswith("codec:")]
        lines.append(f"- **{n}**: codecs {', '.join(codecs)}. {LIMITATIONS.get(n, '')}".rstrip())
    lines += ["", "## Known gaps (root causes)", ""]
    for gid, where, cause in KNOWN_GAPS:
        lines.append(f"- **{gid}** — {where}: {cause}")
    failing = [c for c in cases if c.outcome in ("failed", "error")]
    lines += ["", "## Failing in this run", ""]
    if not failing:
        lines.append("Nothing.")
    for c in failing:
        lines.append(f"- `{c.module}::{c.func}[{c.params}]`: {_short(c.message)}")
    skipped = [c for c in cases if c.outcome == "skipped"]
    if skipped:
        lines += ["", "## Skipped in this run (not counted as passing)", ""]
        for c in skipped:
            lines.append(f"- `{c.module}::{c.func}[{c.params}]`: {_short(c.message)}")
    return "\n".join(lines) + "\n"


# -- the Kafka 4.4 column of MATRIX.md, from MATRIX-kafka.md (make matrix-reference) ----------------------------
KAFKA_COLUMN = "Kafka 4.4"
REFERENCE_MD = HERE / "MATRIX-kafka.md"
_KAFKA_NOTE = "The **Kafka 4.4** column"
_CELL = re.compile(r"(✅|❌|⚠️) (\d+)/(\d+)")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _is_separator(line: str) -> bool:
    return line.startswith("|") and set(line.strip()) <= set("|-")


def _tables(lines: list[str]):  # type: ignore[no-untyped-def]
    """(section header, index of a table's header line, index of its last row) for every table."""
    section = ""
    i = 0
    while i < len(lines):
        if lines[i].startswith("## "):
            section = lines[i]
        if lines[i].startswith("|") and i + 1 < len(lines) and _is_separator(lines[i + 1]):
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            yield section, i, j - 1
            i = j
            continue
        i += 1


def reference_cells(text: str) -> dict[tuple[str, str], str]:
    """Per (section, row label) of a reference run's matrix, one cell for all the row's clients together:
    "✅ passed/run" ("❌" if any failed), "+ kafkalite-only" when some of its cases were skipped there,
    "kafkalite-only" when all were."""
    lines = text.splitlines()
    out: dict[tuple[str, str], str] = {}
    for section, head, last in _tables(lines):
        for line in lines[head + 2:last + 1]:
            label, *rest = _cells(line)
            passed = run = 0
            failed = warned = skipped = False
            for c in rest:
                c = c.replace("(whole test)", "").strip()
                m = _CELL.match(c)
                if m:
                    passed, run = passed + int(m[2]), run + int(m[3])
                    failed, warned = failed or m[1] == "❌", warned or m[1] == "⚠️"
                elif c == "skipped":
                    skipped = True
            if run == 0:
                out[(section, label)] = "kafkalite-only" if skipped else "—"
                continue
            mark = "❌" if failed else ("⚠️" if warned else "✅")
            out[(section, label)] = f"{mark} {passed}/{run}" + (" + kafkalite-only" if skipped else "")
    return out


def add_kafka_column(text: str, reference: str) -> str:
    """``text`` (MATRIX.md) with a last column per table: the row's result against Apache Kafka 4.4, from
    ``reference`` (MATRIX-kafka.md); rewritten in place when the column is there already."""
    cells = reference_cells(reference)
    run = next((x for x in reference.splitlines() if x.startswith("Run: ")), "Run: ?").rstrip(".")
    lines = text.splitlines()
    for section, head, last in list(_tables(lines)):
        had = _cells(lines[head])[-1] == KAFKA_COLUMN

        def base(line: str, had: bool = had) -> str:   # the line up to its last "|" (before the column)
            text = line.rstrip()
            return text[: text[:-1].rfind("|") + 1] if had else text

        lines[head] = base(lines[head]) + f" {KAFKA_COLUMN} |"
        lines[head + 1] = base(lines[head + 1]) + "---|"
        for k in range(head + 2, last + 1):
            label = _cells(lines[k])[0]
            lines[k] = base(lines[k]) + f" {cells.get((section, label), '—')} |"
    note = (f"{_KAFKA_NOTE}: the same scenarios against Apache Kafka 4.4 (`make matrix-reference`, "
            f"compat-tests/MATRIX-kafka.md; {run[len('Run: '):]}), all the row's clients together; "
            "`kafkalite-only`: skipped there, with the reason listed in MATRIX-kafka.md; `—`: not in that run.")
    old = next((i for i, x in enumerate(lines) if x.startswith(_KAFKA_NOTE)), None)
    if old is not None:
        del lines[old:old + 2]   # the note and its blank line
    at = next((i for i, x in enumerate(lines) if x.startswith("Clients: ")), 1)
    lines[at:at] = [note, ""]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from-xml", type=Path, action="append",
                    help="tabulate this junit report instead of running the suite (repeatable: the reports of "
                         "several runs, e.g. `-k` slices, are tabulated together; a case in a later report "
                         "replaces the same case of an earlier one)")
    ap.add_argument("--out", type=Path, default=HERE / "MATRIX.md")
    ap.add_argument("--section", choices=["ecosystem", "registry"],
                    help="rewrite only this section of the existing --out file (run just its test modules)")
    ap.add_argument("--kafka-column", action="store_true",
                    help=f"only (re)write the {KAFKA_COLUMN} column of --out from {REFERENCE_MD.name}")
    ap.add_argument("pytest_args", nargs="*", help="extra arguments for pytest (after --)")
    a = ap.parse_args()
    if a.kafka_column:
        a.out.write_text(add_kafka_column(a.out.read_text(), REFERENCE_MD.read_text()))
        print(f"wrote the {KAFKA_COLUMN} column of {a.out}")
        return 0
    took = None
    rc = 0
    xmls: list[Path] = list(a.from_xml or [])
    if not xmls:
        xml = Path(tempfile.mkdtemp(prefix="kafkalite-matrix-")) / "report.xml"
        t0 = _dt.datetime.now()
        targets = [HERE / f"{m}.py" for m in SECTION_MODULES[a.section]] if a.section else None
        rc = run_suite(xml, a.pytest_args, targets)
        took = (_dt.datetime.now() - t0).total_seconds()
        if not xml.exists():
            print("pytest wrote no report", file=sys.stderr)
            return rc or 1
        xmls = [xml]
    # several reports: a test case in a later one replaces the same case of an earlier one (a re-run)
    by_id: dict[tuple[str, str, str, str], Case] = {}
    for x in xmls:
        for c in parse(x):
            by_id[(c.module, c.func, c.params, c.props.get("client_name", ""))] = c
    cases = list(by_id.values())
    had = a.out.read_text() if a.out.exists() else ""
    if a.section == "ecosystem":
        a.out.write_text(splice_section(a.out.read_text(), ECOSYSTEM_HEADER, render_ecosystem(cases)))
    elif a.section == "registry":
        text = drop_rows_of(a.out.read_text(), list(REGISTRY_MODULES))
        a.out.write_text(splice_section(text, REGISTRY_HEADER, render_registry(cases)))
    else:
        note = (f"Tabulated from {len(xmls)} junit reports (`--from-xml`, a later report's case replacing the same "
                "case of an earlier one): " + ", ".join(f"`{x.name}`" for x in xmls) + ".") if len(xmls) > 1 else ""
        a.out.write_text(render(cases, took, note))
    print(f"wrote {a.out.relative_to(REPO) if a.out.is_relative_to(REPO) else a.out}")
    matrix = HERE / "MATRIX.md"
    if a.out.resolve() == REFERENCE_MD.resolve() and matrix.exists():    # a reference run: MATRIX.md's column
        matrix.write_text(add_kafka_column(matrix.read_text(), REFERENCE_MD.read_text()))
        print(f"wrote the {KAFKA_COLUMN} column of {matrix.relative_to(REPO)}")
    elif a.out.resolve() == matrix.resolve() and REFERENCE_MD.exists() and (
            not a.section or _KAFKA_NOTE in had):   # a section run keeps the rest of the file as it was
        matrix.write_text(add_kafka_column(matrix.read_text(), REFERENCE_MD.read_text()))
    return 0 if rc in (0, 1) else rc


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
