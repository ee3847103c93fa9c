"""Admin APIs under random but well-formed requests answer only error codes Kafka would send (issue 29).

Each request is a valid message of a version the broker serves (the spec-driven hypothesis strategies of the
wire tests), its strings steered towards what the handlers act on: existing and reserved topic names,
config names, good and bad config values. A request may be refused, but only with a code Kafka's handler for
that API can answer; UNKNOWN_SERVER_ERROR (an exception turned into an answer) and a closed connection fail.

Bounded for ``make test``: ``KAFKALITE_ADMIN_FUZZ_EXAMPLES`` (default 25) examples per API, a few seconds in
all; set it to thousands for a long run (and ``KAFKALITE_ADMIN_FUZZ_SEED`` for another sequence).
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from kafkalite.embedded import Broker
from kafkalite.handlers import registry
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode as E
from kafkalite_wire.messages import REGISTRY, ApiVersionsRequest, CreateTopicsRequest
from kafkalite_wire.spec import FieldSpec
from kafkalite_wire.tests.strategies import SpecStrategies, message_specs

EXAMPLES = int(os.environ.get("KAFKALITE_ADMIN_FUZZ_EXAMPLES", "25"))
SEED = int(os.environ.get("KAFKALITE_ADMIN_FUZZ_SEED", "29"))

TOPICS = ("fz-a", "fz.b", "fz_b")
NAMES = (*TOPICS, "__consumer_offsets", "__transaction_state", "__share_group_state", "__cluster_metadata",
         "", ".", "..", "x" * 250, "bad name", "g1", "1", "0", "-1", "User:alice", "alice", "*")
CONFIG_NAMES = ("retention.ms", "retention.bytes", "cleanup.policy", "max.message.bytes", "segment.bytes",
                "segment.ms", "min.insync.replicas", "compression.type", "message.timestamp.type",
                "min.cleanable.dirty.ratio", "unclean.leader.election.enable", "index.interval.bytes",
                "message.timestamp.difference.max.ms", "log.retention.ms", "num.io.threads",
                "consumer.session.timeout.ms", "share.record.lock.duration.ms", "no.such.config",
                "producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate",
                "metadata.version", "transaction.version", "group.version")
CONFIG_VALUES = ("0", "1", "-1", "-2", "2147483648", "9223372036854775807", "9223372036854775808",
                 "99999999999999999999999", "1e3", "0.5", "1.5", "-0.1", "nan", "NaN", "inf", "abc", "",
                 " 5", "true", "false", "TRUE", "compact", "delete", "compact,delete", "compact,,delete",
                 "gzip", "zstd", "producer", "none", "CreateTime", "LogAppendTime", "1048576", "0x10")

#: the codes any admin answer may carry (authorization, version/validation, quota, controller plumbing)
COMMON = {E.NONE, E.INVALID_REQUEST, E.UNSUPPORTED_VERSION, E.CLUSTER_AUTHORIZATION_FAILED,
          E.TOPIC_AUTHORIZATION_FAILED, E.THROTTLING_QUOTA_EXCEEDED, E.REQUEST_TIMED_OUT, E.NOT_CONTROLLER,
          E.POLICY_VIOLATION}
TOPIC_ERRORS = {E.UNKNOWN_TOPIC_OR_PARTITION, E.UNKNOWN_TOPIC_ID, E.INVALID_TOPIC_EXCEPTION}
CONFIG_ERRORS = {E.INVALID_CONFIG, E.UNKNOWN_TOPIC_OR_PARTITION, E.INVALID_TOPIC_EXCEPTION,
                 E.GROUP_AUTHORIZATION_FAILED, E.GROUP_ID_NOT_FOUND}
GROUP_ERRORS = {E.GROUP_ID_NOT_FOUND, E.INVALID_GROUP_ID, E.NON_EMPTY_GROUP, E.GROUP_AUTHORIZATION_FAILED,
                E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_LOAD_IN_PROGRESS, E.NOT_COORDINATOR,
                E.GROUP_SUBSCRIBED_TO_TOPIC, *TOPIC_ERRORS}
REASSIGN = {E.UNKNOWN_TOPIC_OR_PARTITION, E.INVALID_REPLICA_ASSIGNMENT, E.NO_REASSIGNMENT_IN_PROGRESS,
            E.REASSIGNMENT_IN_PROGRESS, E.INVALID_REPLICATION_FACTOR, E.INVALID_PARTITIONS}

#: api key -> the codes Kafka's handler for it can answer (besides COMMON)
ALLOWED: dict[int, set[int]] = {
    19: {*TOPIC_ERRORS, E.TOPIC_ALREADY_EXISTS, E.INVALID_PARTITIONS, E.INVALID_REPLICATION_FACTOR,   # CreateTopics
         E.INVALID_REPLICA_ASSIGNMENT, E.INVALID_CONFIG, E.KAFKA_STORAGE_ERROR},
    20: {*TOPIC_ERRORS, E.TOPIC_DELETION_DISABLED, E.REASSIGNMENT_IN_PROGRESS},                    # DeleteTopics
    21: {*TOPIC_ERRORS, E.OFFSET_OUT_OF_RANGE, E.NOT_LEADER_OR_FOLLOWER, E.KAFKA_STORAGE_ERROR},     # DeleteRecords
    32: CONFIG_ERRORS,                                                                             # DescribeConfigs
    33: CONFIG_ERRORS,                                                                             # AlterConfigs
    44: CONFIG_ERRORS,                                                                             # IncrementalAlterConfigs
    37: {*TOPIC_ERRORS, E.INVALID_PARTITIONS, E.INVALID_REPLICA_ASSIGNMENT, E.REASSIGNMENT_IN_PROGRESS,  # CreatePartitions
         E.KAFKA_STORAGE_ERROR},
    29: {E.SECURITY_DISABLED, E.INVALID_REQUEST},                                                  # DescribeAcls
    30: {E.SECURITY_DISABLED, E.INVALID_REQUEST},                                                  # CreateAcls
    31: {E.SECURITY_DISABLED, E.INVALID_REQUEST},                                                  # DeleteAcls
    48: {E.INVALID_REQUEST},                                                                       # DescribeClientQuotas
    49: {E.INVALID_REQUEST},                                                                       # AlterClientQuotas
    15: GROUP_ERRORS, 16: GROUP_ERRORS, 42: GROUP_ERRORS, 47: GROUP_ERRORS,   # DescribeGroups ListGroups DeleteGroups OffsetDelete
    43: {*TOPIC_ERRORS, E.ELECTION_NOT_NEEDED, E.ELIGIBLE_LEADERS_NOT_AVAILABLE,                   # ElectLeaders
         E.PREFERRED_LEADER_NOT_AVAILABLE},
    45: REASSIGN, 46: REASSIGN,                                             # Alter/ListPartitionReassignments
    34: {*TOPIC_ERRORS, E.LOG_DIR_NOT_FOUND, E.KAFKA_STORAGE_ERROR, E.NOT_LEADER_OR_FOLLOWER},     # AlterReplicaLogDirs
    35: {*TOPIC_ERRORS, E.KAFKA_STORAGE_ERROR},                                                    # DescribeLogDirs
    50: {E.RESOURCE_NOT_FOUND, E.DUPLICATE_RESOURCE, E.UNSUPPORTED_SASL_MECHANISM},                # DescribeUserScram
    51: {E.RESOURCE_NOT_FOUND, E.DUPLICATE_RESOURCE, E.UNSUPPORTED_SASL_MECHANISM,                 # AlterUserScram
          E.UNACCEPTABLE_CREDENTIAL},
    57: {E.INVALID_UPDATE_VERSION, E.FEATURE_UPDATE_FAILED},                                       # UpdateFeatures
    60: {E.UNSUPPORTED_ENDPOINT_TYPE},                                                             # DescribeCluster
    61: {*TOPIC_ERRORS, E.NOT_LEADER_OR_FOLLOWER},                                                 # DescribeProducers
    65: {E.TRANSACTIONAL_ID_NOT_FOUND, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.NOT_COORDINATOR,  # DescribeTransactions
          E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_LOAD_IN_PROGRESS},
    66: {E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_LOAD_IN_PROGRESS, E.NOT_COORDINATOR},          # ListTransactions
    75: {*TOPIC_ERRORS},                                                                           # DescribeTopicPartitions
    64: {E.BROKER_ID_NOT_REGISTERED},                                                              # UnregisterBroker
    94: {E.CONTROLLER_ID_NOT_REGISTERED},                                                          # UnregisterController
    80: {E.INCONSISTENT_CLUSTER_ID, E.DUPLICATE_VOTER},                                            # AddRaftVoter
    81: {E.INCONSISTENT_CLUSTER_ID, E.VOTER_NOT_FOUND},                                            # RemoveRaftVoter
}
ADMIN_APIS = sorted(k for k in ALLOWED if registry.lookup(k) is not None)

_STR = st.one_of(st.sampled_from(NAMES), st.sampled_from(CONFIG_NAMES), st.sampled_from(CONFIG_VALUES),
                 st.text(alphabet="ab._-é", max_size=6))
_INT_CHOICES = {"int8": (0, 1, 2, 3, 4, -1, 127, -128), "int16": (0, 1, 2, 3, -1, 32767, -32768),
                "int32": (0, 1, 2, 3, 5, -1, 2**31 - 1, -(2**31)), "int64": (0, 1, -1, -2, 2**63 - 1, -(2**63))}


class _Steered(SpecStrategies):
    """The wire tests' strategies, with strings and small ints drawn mostly from what the broker acts on."""

    def _field(self, f: FieldSpec, v: int, depth: int) -> st.SearchStrategy[Any]:
        base = super()._field(f, v, depth)
        nullable = v in f.nullable
        if not f.is_array and f.struct is None:
            if f.type == "string":
                return st.one_of(st.none(), _STR) if nullable else _STR
            if f.type in _INT_CHOICES:
                return st.one_of(st.sampled_from(_INT_CHOICES[f.type]), base)
        return base


def _request_strategy(api_key: int) -> st.SearchStrategy[tuple[int, Any]]:
    spec = registry.lookup(api_key)
    assert spec is not None
    msg = next(m for m in message_specs() if m.api_key == api_key and m.type == "request")
    gen = _Steered(msg)
    versions = [v for v in range(spec.min_version, spec.max_version + 1) if v in msg.versions]
    return st.sampled_from(versions).flatmap(lambda v: gen.message(v).map(lambda obj: (v, obj)))


def _codes(obj: Any, out: list[tuple[str, int]]) -> list[tuple[str, int]]:
    for name in getattr(type(obj), "__slots__", ()):
        value = getattr(obj, name, None)
        if isinstance(value, list):
            for x in value:
                _codes(x, out)
        elif hasattr(type(value), "__slots__") and not isinstance(value, (str, bytes)):
            _codes(value, out)
        elif (name == "error_code" or name.endswith("_error_code")) and isinstance(value, int):
            out.append((name, value))
    return out


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    if not message_specs():
        pytest.skip("reference specs missing")
    with Broker(data_dir=tmp_path_factory.mktemp("admin-fuzz") / "d",
                overrides={"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"}) as b:
        yield b


def _ensure_topics(c: RawClient) -> None:
    c.request(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=t, num_partitions=2, replication_factor=1) for t in TOPICS[:2]], timeout_ms=5000), 5)


@pytest.mark.parametrize("api_key", ADMIN_APIS, ids=[REGISTRY[k].name for k in ADMIN_APIS])
def test_admin_api_answers_only_codes_kafka_would(broker: Broker, api_key: int) -> None:
    allowed = ALLOWED[api_key] | COMMON
    with RawClient(broker.host, broker.port) as c:
        _ensure_topics(c)

        @seed(SEED)
        @settings(max_examples=EXAMPLES, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                         HealthCheck.function_scoped_fixture])
        @given(_request_strategy(api_key))
        def check(drawn: tuple[int, Any]) -> None:
            version, req = drawn
            resp = c.request(req, version)
            bad = [(n, code) for n, code in _codes(resp, []) if code not in allowed]
            assert not bad, f"{REGISTRY[api_key].name} v{version}: {bad} for {req!r}"[:3000]

        check()
        assert c.request(ApiVersionsRequest(client_software_name="f", client_software_version="1"), 3).error_code == 0


def test_create_topics_config_values_answer_invalid_config_with_the_configs_message(broker: Broker) -> None:
    """Every topic config Kafka 4.4 knows (the default profile), with each steered value: created (validate only)
    or INVALID_CONFIG naming the config (or, for remote.storage.enable=true, Kafka's "Tiered Storage
    functionality is disabled"); a null value is Kafka's "Null value not supported for topic configs: <names>"."""
    from kafkalite.config.defs import topic_defs

    TOPIC = topic_defs("4.4")
    C = CreateTopicsRequest
    with RawClient(broker.host, broker.port) as c:
        def create(configs: list[Any]) -> Any:
            return c.request(C(topics=[C.CreatableTopic(name="cfg-sweep", num_partitions=1, replication_factor=1,
                                                        configs=configs)], timeout_ms=5000, validate_only=True),
                             5).topics[0]
        for name in sorted(TOPIC):
            for value in CONFIG_VALUES:
                r = create([C.CreatableTopicConfig(name=name, value=value)])
                assert r.error_code in (E.NONE, E.INVALID_CONFIG), (name, value, r)
                if r.error_code:
                    assert r.error_message and (name in r.error_message or "Tiered Storage" in r.error_message), \
                        (name, value, r.error_message)
        r = create([C.CreatableTopicConfig(name="retention.ms", value=None),
                    C.CreatableTopicConfig(name="segment.ms", value=None)])
        assert (r.error_code, r.error_message) == (
            E.INVALID_CONFIG, "Null value not supported for topic configs: retention.ms,segment.ms")
