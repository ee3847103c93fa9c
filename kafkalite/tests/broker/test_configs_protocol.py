"""DescribeConfigs / AlterConfigs / IncrementalAlterConfigs at the protocol level, and the effect of each change.

The broker runs with two static settings (log.segment.bytes, log.retention.hours) so every config source shows
up: 1 topic override, 4 static broker setting, 5 default. Kafka's rules checked here:
- DescribeConfigs v0 has IsDefault, v1+ ConfigSource and (when asked) synonyms in precedence order (the topic
  override, then the broker settings behind the default); v3+ ConfigType; topic configs are neither read-only
  nor sensitive; broker settings are read-only except the dynamic log.* topic defaults, which AlterConfigs
  changes per broker (source 2) or cluster-wide (3), for every log at once;
- AlterConfigs replaces *all* overrides of a topic; IncrementalAlterConfigs SET/DELETE/APPEND/SUBTRACT;
  ValidateOnly changes nothing; unknown names and invalid values answer INVALID_CONFIG with a message naming
  the config; changes apply to the running logs at once and persist across restarts.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalite.embedded import Broker
from kafkalite.tests.broker.test_admin import create, topic
from kafkalite.tests.broker.test_protocol import produce_req
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.testing import Rec, encode_batch
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    AlterConfigsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
)

D, A, IA = DescribeConfigsRequest, AlterConfigsRequest, IncrementalAlterConfigsRequest
TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
STATIC = {"log.segment.bytes": "5000000", "log.retention.hours": "100"}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("configs")


@pytest.fixture(scope="module")
def broker(data_dir: Path) -> Iterator[Broker]:
    with Broker(data_dir=data_dir, overrides=STATIC) as b:
        yield b


@pytest.fixture
def c(broker: Broker) -> Iterator[RawClient]:
    with RawClient(broker.host, broker.port) as client:
        yield client


def describe(c: RawClient, name: str, *, version: int = 4, keys: list[str] | None = None, synonyms: bool = False,
             rtype: int = TOPIC) -> Any:
    req = D(resources=[D.DescribeConfigsResource(resource_type=rtype, resource_name=name,
                                                 configuration_keys=keys)], include_synonyms=synonyms)
    return c.request(req, version).results[0]


def configs(c: RawClient, name: str, **kw: Any) -> dict[str, Any]:
    res = describe(c, name, **kw)
    assert res.error_code == 0, res.error_message
    return {e.name: e for e in res.configs}


def incremental(c: RawClient, name: str, *ops: tuple[str, int, str | None], validate_only: bool = False,
                rtype: int = TOPIC) -> tuple[int, str | None]:
    req = IA(resources=[IA.AlterConfigsResource(resource_type=rtype, resource_name=name, configs=[
        IA.AlterableConfig(name=n, config_operation=op, value=v) for n, op, v in ops])], validate_only=validate_only)
    r = c.request(req, 1).responses[0]
    return r.error_code, r.error_message


def legacy(c: RawClient, name: str, cfg: dict[str, str], *, validate_only: bool = False, version: int = 1,
           rtype: int = TOPIC) -> tuple[int, str | None]:
    req = A(resources=[A.AlterConfigsResource(resource_type=rtype, resource_name=name, configs=[
        A.AlterableConfig(name=k, value=v) for k, v in cfg.items()])], validate_only=validate_only)
    r = c.request(req, version).responses[0]
    return r.error_code, r.error_message


def test_sources_synonyms_types_and_flags(c: RawClient) -> None:
    create(c, topic("desc", 1, configs={"retention.ms": "1234", "cleanup.policy": "compact,delete"}))
    cfg = configs(c, "desc", synonyms=True)
    assert {"retention.ms", "segment.bytes", "cleanup.policy", "min.cleanable.dirty.ratio", "delete.retention.ms",
            "max.message.bytes", "message.timestamp.type", "file.delete.delay.ms"} <= set(cfg)
    r = cfg["retention.ms"]
    assert (r.value, r.config_source, r.read_only, r.is_sensitive) == ("1234", 1, False, False)
    # Kafka cuts the broker synonyms before the first log.retention.ms (ConfigHelper's dropWhile): with only
    # log.retention.hours set, none are listed
    assert [(s.name, s.value, s.source) for s in r.synonyms] == [("retention.ms", "1234", 1)]
    s = cfg["segment.bytes"]
    assert (s.value, s.config_source) == ("5000000", 4)
    assert [(x.name, x.value, x.source) for x in s.synonyms] == [("log.segment.bytes", "5000000", 4),
                                                                  ("log.segment.bytes", "1073741824", 5)]
    d = cfg["delete.retention.ms"]
    assert (d.value, d.config_source) == ("86400000", 5)
    assert all(not e.read_only and not e.is_sensitive for e in cfg.values())
    # ConfigType (v3+): LIST, INT, LONG, DOUBLE, BOOLEAN, STRING
    assert [cfg[n].config_type for n in ("cleanup.policy", "segment.bytes", "retention.ms",
                                          "min.cleanable.dirty.ratio", "preallocate", "message.timestamp.type")] \
        == [7, 3, 5, 6, 1, 2]
    assert cfg["cleanup.policy"].value == "compact,delete"
    # without IncludeSynonyms there are none; v0 carries IsDefault only
    assert all(e.synonyms == [] for e in configs(c, "desc").values())
    v0 = configs(c, "desc", version=0)
    assert v0["retention.ms"].is_default is False and v0["delete.retention.ms"].is_default is True
    assert list(configs(c, "desc", keys=["retention.ms", "no.such"])) == ["retention.ms"]
    missing = describe(c, "no-such-topic")
    assert (missing.error_code, missing.error_message) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")   # as Kafka


def test_broker_resource(c: RawClient, broker: Broker) -> None:
    b = configs(c, "1", rtype=BROKER)   # our node id: every broker config
    seg = b["log.segment.bytes"]
    assert (seg.value, seg.config_source, seg.read_only, seg.is_sensitive) == ("5000000", 4, False, False)
    assert b["num.partitions"].config_source == 5 and b["num.partitions"].read_only
    assert b["log.retention.ms"].value is None and b["log.retention.hours"].value == "100"
    # "": only the cluster-wide dynamic defaults: the min.insync.replicas eligible leader replicas rely on, as
    # Kafka 4.4 writes it at bootstrap (kafkalite.metadata.elr_configs)
    cluster = configs(c, "", rtype=BROKER)
    assert {n: (e.value, e.config_source) for n, e in cluster.items()} == {"min.insync.replicas": ("1", 3)}
    v0 = configs(c, "1", rtype=BROKER, version=0)
    assert v0["num.partitions"].is_default and not v0["log.segment.bytes"].is_default
    assert describe(c, "7", rtype=BROKER).error_code != 0


def test_dynamic_broker_configs(c: RawClient) -> None:
    """The log.* defaults change at runtime: per broker (source 2) over cluster default (3) over static (4)."""
    create(c, topic("dyn", 1), topic("dyn-own", 1, configs={"message.timestamp.type": "CreateTime"}))

    def produce_append_time(name: str) -> int:
        r = c.request(produce_req(name, encode_batch([Rec(b"v")], base_timestamp=1000)), 9)
        p = r.responses[0].partition_responses[0]
        assert p.error_code == 0
        return int(p.log_append_time_ms)

    assert produce_append_time("dyn") == -1
    assert incremental(c, "", ("log.message.timestamp.type", SET, "LogAppendTime"),
                       ("log.retention.ms", SET, "90000"), rtype=BROKER) == (0, None)
    assert incremental(c, "1", ("log.retention.ms", SET, "80000"), rtype=BROKER) == (0, None)
    b = configs(c, "1", rtype=BROKER, synonyms=True)
    r = b["log.retention.ms"]
    assert (r.value, r.config_source, r.read_only) == ("80000", 2, False)
    # Kafka's broker synonyms: every level of log.retention.ms/.minutes/.hours, strongest first
    assert [(s.name, s.value, s.source) for s in r.synonyms] == [
        ("log.retention.ms", "80000", 2), ("log.retention.ms", "90000", 3), ("log.retention.hours", "100", 4),
        ("log.retention.hours", "168", 5)]
    h = b["log.retention.hours"]                # Kafka: read-only, its synonyms start at its own name
    assert (h.value, h.config_source, h.read_only) == ("100", 4, True)
    assert [(s.name, s.source) for s in h.synonyms] == [("log.retention.hours", 4), ("log.retention.hours", 5)]
    assert b["log.message.timestamp.type"].config_source == 3
    t = configs(c, "dyn", synonyms=True)["retention.ms"]
    assert (t.value, t.config_source) == ("80000", 2)
    assert [(s.name, s.source) for s in t.synonyms] == [("log.retention.ms", 2), ("log.retention.ms", 3),
                                                        ("log.retention.hours", 4), ("log.retention.hours", 5)]
    # the running logs follow at once: LogAppendTime now, except where the topic overrides it
    assert produce_append_time("dyn") > 1_000_000_000_000
    assert produce_append_time("dyn-own") == -1
    # static-only settings, unknown names, bad values, other broker ids
    assert incremental(c, "1", ("num.partitions", SET, "3"), rtype=BROKER)[0] == ErrorCode.INVALID_REQUEST
    assert incremental(c, "1", ("no.such.setting", SET, "3"), rtype=BROKER)[0] == ErrorCode.INVALID_CONFIG
    code, msg = incremental(c, "1", ("log.retention.ms", SET, "soon"), rtype=BROKER)
    assert code == ErrorCode.INVALID_CONFIG and msg and "log.retention.ms" in msg
    assert legacy(c, "1", {"log.cleanup.policy": "shred"}, rtype=BROKER)[0] == ErrorCode.INVALID_CONFIG
    assert incremental(c, "9", ("log.retention.ms", SET, "1"), rtype=BROKER)[0] == ErrorCode.INVALID_REQUEST
    assert configs(c, "1", rtype=BROKER)["log.retention.ms"].value == "80000"
    # list settings take APPEND / SUBTRACT at the broker level too
    assert incremental(c, "", ("log.cleanup.policy", APPEND, "compact"), rtype=BROKER) == (0, None)
    assert configs(c, "dyn")["cleanup.policy"].value == "delete,compact"
    assert configs(c, "dyn")["cleanup.policy"].config_source == 3
    assert incremental(c, "", ("log.cleanup.policy", SUBTRACT, "compact"), rtype=BROKER) == (0, None)
    assert configs(c, "dyn")["cleanup.policy"].value == "delete"
    assert incremental(c, "", ("log.cleanup.policy", DELETE, None), rtype=BROKER) == (0, None)
    assert configs(c, "dyn")["cleanup.policy"].config_source == 5
    # legacy AlterConfigs replaces the resource's dynamic settings; DELETE / empty restore the static ones
    assert legacy(c, "1", {}, rtype=BROKER) == (0, None)
    assert configs(c, "dyn")["retention.ms"].value == "90000"
    assert incremental(c, "", ("log.message.timestamp.type", DELETE, None), ("log.retention.ms", DELETE, None),
                       rtype=BROKER) == (0, None)
    assert (configs(c, "dyn")["retention.ms"].value, configs(c, "dyn")["retention.ms"].config_source) == (
        str(100 * 3600 * 1000), 5)   # the static log.retention.hours gives the value; Kafka lists no synonym
    assert produce_append_time("dyn") == -1


@pytest.mark.parametrize(("cfg", "needle"), [
    ({"no.such.config": "1"}, "no.such.config"),
    ({"retention.ms": "soon"}, "retention.ms"),
    ({"retention.ms": "-5"}, "retention.ms"),
    ({"cleanup.policy": "shred"}, "cleanup.policy"),
    ({"min.cleanable.dirty.ratio": "2"}, "min.cleanable.dirty.ratio"),
    ({"compression.type": "brotli"}, "compression.type"),
    ({"message.timestamp.type": "WallClock"}, "message.timestamp.type"),
    ({"segment.bytes": "10"}, "segment.bytes"),
    ({"preallocate": "maybe"}, "preallocate"),
])
def test_invalid_configs_are_rejected_with_a_message(c: RawClient, cfg: dict[str, str], needle: str) -> None:
    name = "inv-" + needle.replace(".", "-")
    if describe(c, name).error_code:
        create(c, topic(name, 1, configs={"retention.ms": "777"}))
    before = {k: e.value for k, e in configs(c, name).items()}
    for code, msg in (incremental(c, name, *((k, SET, v) for k, v in cfg.items())), legacy(c, name, cfg)):
        assert code == ErrorCode.INVALID_CONFIG
        assert msg and needle in msg, msg
    assert {k: e.value for k, e in configs(c, name).items()} == before
    # CreateTopics checks the same way
    r = create(c, topic(name + "-new", 1, configs=cfg))[name + "-new"]
    assert r.error_code == ErrorCode.INVALID_CONFIG and needle in (r.error_message or "")
    assert describe(c, name + "-new").error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_every_kafka_topic_config_name_is_accepted(c: RawClient) -> None:
    """The names of the topic configs Kafka 4.4 lists (the default profile) are known, and Kafka 3.9's under a 3.9
    profile (storage interprets some, the rest are kept)."""
    from kafkalite.config.defs import check_topic_configs
    from kafkalite.config.kafka_releases import module

    names_39 = {"cleanup.policy": "delete", "compression.type": "producer", "compression.gzip.level": "-1",
             "compression.lz4.level": "9", "compression.zstd.level": "3", "delete.retention.ms": "86400000",
             "file.delete.delay.ms": "60000", "flush.messages": "100", "flush.ms": "1000",
             "follower.replication.throttled.replicas": "", "index.interval.bytes": "4096",
             "leader.replication.throttled.replicas": "", "local.retention.bytes": "-2", "local.retention.ms": "-2",
             "max.compaction.lag.ms": "9223372036854775807", "max.message.bytes": "1048588",
             "message.downconversion.enable": "true", "message.timestamp.after.max.ms": "9223372036854775807",
             "message.timestamp.before.max.ms": "9223372036854775807", "message.timestamp.type": "CreateTime",
             "min.cleanable.dirty.ratio": "0.5", "min.compaction.lag.ms": "0", "min.insync.replicas": "1",
             "preallocate": "false", "remote.storage.enable": "false", "retention.bytes": "-1",
             "retention.ms": "604800000", "segment.bytes": "1073741824", "segment.index.bytes": "10485760",
             "segment.jitter.ms": "0", "segment.ms": "604800000", "unclean.leader.election.enable": "false"}
    assert check_topic_configs(names_39, "3.9") is None
    names = {n: d for n, (_t, d, _s) in module("4.4").TOPIC_CONFIGS.items() if d is not None}
    r = create(c, topic("all-names", 1, configs=names))["all-names"]
    assert r.error_code == 0, r.error_message
    cfg = configs(c, "all-names")
    assert {n for n, e in cfg.items() if e.config_source == 1} >= set(names) - {
        "follower.replication.throttled.replicas", "leader.replication.throttled.replicas"}


def test_legacy_alter_replaces_all_overrides(c: RawClient) -> None:
    create(c, topic("legacy", 1, configs={"retention.ms": "1000", "cleanup.policy": "compact"}))
    assert legacy(c, "legacy", {"retention.bytes": "99999"}, validate_only=True) == (0, None)
    assert configs(c, "legacy")["retention.bytes"].config_source == 5
    assert legacy(c, "legacy", {"retention.bytes": "99999"}, version=0)[0] == 0
    cfg = configs(c, "legacy")
    assert (cfg["retention.bytes"].value, cfg["retention.bytes"].config_source) == ("99999", 1)
    # the earlier overrides are gone: back to the broker / default values
    assert (cfg["retention.ms"].value, cfg["retention.ms"].config_source) == (str(100 * 3600 * 1000), 5)
    assert (cfg["cleanup.policy"].value, cfg["cleanup.policy"].config_source) == ("delete", 5)
    assert legacy(c, "nope", {"retention.ms": "1"})[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_incremental_operations(c: RawClient) -> None:
    create(c, topic("incr", 1, configs={"retention.ms": "1000"}))
    assert incremental(c, "incr", ("cleanup.policy", APPEND, "compact")) == (0, None)
    assert configs(c, "incr")["cleanup.policy"].value == "delete,compact"
    assert incremental(c, "incr", ("cleanup.policy", SUBTRACT, "delete")) == (0, None)
    assert configs(c, "incr")["cleanup.policy"].value == "compact"
    assert incremental(c, "incr", ("retention.ms", DELETE, None), ("segment.ms", SET, "60000"),
                       validate_only=True) == (0, None)
    cfg = configs(c, "incr")
    assert cfg["retention.ms"].value == "1000" and cfg["segment.ms"].config_source == 5
    assert incremental(c, "incr", ("retention.ms", DELETE, None), ("segment.ms", SET, "60000")) == (0, None)
    cfg = configs(c, "incr")
    assert cfg["retention.ms"].config_source == 5 and cfg["segment.ms"].value == "60000"
    assert cfg["cleanup.policy"].value == "compact"  # untouched by the later request
    assert incremental(c, "incr", ("retention.ms", APPEND, "5"))[0] == ErrorCode.INVALID_CONFIG
    assert incremental(c, "incr", ("segment.ms", SET, "1"), ("segment.ms", SET, "2"))[0] == ErrorCode.INVALID_REQUEST
    assert incremental(c, "incr", ("segment.ms", SET, None))[0] == ErrorCode.INVALID_CONFIG


def test_changes_take_effect_on_the_running_log(c: RawClient, broker: Broker) -> None:
    create(c, topic("effect", 1))
    big = encode_batch([Rec(b"x" * 3000, key=b"k")])
    keyless = encode_batch([Rec(b"v")])

    def produce(batch: bytes) -> Any:
        return c.request(produce_req("effect", batch), 9).responses[0].partition_responses[0]

    assert produce(big).error_code == 0 and produce(keyless).error_code == 0
    assert produce(keyless).log_append_time_ms == -1
    assert incremental(c, "effect", ("max.message.bytes", SET, "2000"),
                       ("message.timestamp.type", SET, "LogAppendTime"), ("cleanup.policy", SET, "compact"))[0] == 0
    assert produce(big).error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert produce(keyless).error_code == ErrorCode.INVALID_RECORD  # compacted topics need keys
    ok = produce(encode_batch([Rec(b"v", key=b"k")], base_timestamp=1000))
    assert ok.error_code == 0 and ok.log_append_time_ms > 1_000_000_000_000


def test_overrides_survive_restart(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        assert incremental(c, "1", ("log.segment.bytes", SET, "7777777"), rtype=BROKER) == (0, None)
        create(c, topic("keep", 1, configs={"retention.ms": "4242", "cleanup.policy": "compact"}))
        assert incremental(c, "keep", ("segment.ms", SET, "123456"), ("retention.ms", DELETE, None))[0] == 0
        create(c, topic("keep2", 1, configs={"retention.ms": "1"}))
        assert legacy(c, "keep2", {"max.message.bytes": "5000"})[0] == 0
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        cfg = configs(c, "keep")
        assert {k: e.value for k, e in cfg.items() if e.config_source == 1} == {
            "cleanup.policy": "compact", "segment.ms": "123456"}
        assert (cfg["segment.bytes"].value, cfg["segment.bytes"].config_source) == ("7777777", 2)
        cfg2 = configs(c, "keep2")
        assert {k: e.value for k, e in cfg2.items() if e.config_source == 1} == {"max.message.bytes": "5000"}
        # the restarted logs run with their topic's settings, not bare defaults
        big = encode_batch([Rec(b"x" * 6000)])
        r = c.request(produce_req("keep2", big), 9).responses[0].partition_responses[0]
        assert r.error_code == ErrorCode.MESSAGE_TOO_LARGE
        r = c.request(produce_req("keep", encode_batch([Rec(b"no key")])), 9).responses[0].partition_responses[0]
        assert r.error_code == ErrorCode.INVALID_RECORD
