"""GROUP config resources (ConfigResource type 32) at the protocol level, and their effect on the groups.

Kafka 4.3's rules (``kafkalite.metadata.group_configs``): DescribeConfigs answers every group config of any group id, an
override with source DYNAMIC_GROUP_CONFIG (8), else the broker's setting with DEFAULT_CONFIG (5);
Incremental/legacy AlterConfigs check names ("Unknown group config name: X"), values, the broker's
group.consumer/share.min/max.* bounds and session > heartbeat, all as INVALID_CONFIG; ValidateOnly changes
nothing; overrides persist across restarts and reach the KIP-848 and share coordinators at once
(heartbeat intervals answered to members, where a share group starts reading).
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalite.embedded import Broker
from kafkalite.tests.broker.test_configs_protocol import configs, describe, incremental, legacy
from kafkalite.tests.broker.test_protocol import produce_req
from kafkalite.tests.broker.test_share_handlers import acquired, fetch, hb, topic_id
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.testing import Rec, encode_batch
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ConsumerGroupHeartbeatRequest, CreateTopicsRequest

GROUP = 32
SET, DELETE, APPEND = 0, 1, 2
NAMES = {"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms", "share.session.timeout.ms",
         "share.heartbeat.interval.ms", "share.record.lock.duration.ms", "share.delivery.count.limit",
         "share.partition.max.record.locks", "share.auto.offset.reset", "share.isolation.level",
         "streams.session.timeout.ms", "streams.heartbeat.interval.ms", "streams.num.standby.replicas",
         "errors.deadletterqueue.topic.name", "errors.deadletterqueue.copy.record.enable"}
BROKER = {"group.consumer.session.timeout.ms": "50000", "group.share.record.lock.duration.ms": "20000",
          "share.coordinator.state.topic.num.partitions": "2"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    with Broker(data_dir=tmp_path_factory.mktemp("groupcfg"), overrides=BROKER) as b:
        yield b


@pytest.fixture
def c(broker: Broker) -> Iterator[RawClient]:
    with RawClient(broker.host, broker.port) as client:
        yield client


def group(c: RawClient, name: str, **kw: Any) -> dict[str, tuple[str | None, int]]:
    return {k: (e.value, e.config_source) for k, e in configs(c, name, rtype=GROUP, **kw).items()}


def test_describe_defaults_come_from_the_broker(c: RawClient) -> None:
    cfg = configs(c, "never-seen", rtype=GROUP)
    assert set(cfg) == NAMES
    assert (cfg["consumer.session.timeout.ms"].value, cfg["consumer.session.timeout.ms"].config_source) == \
        ("50000", 5)
    assert (cfg["share.record.lock.duration.ms"].value, cfg["share.auto.offset.reset"].value) == ("20000", "latest")
    assert cfg["consumer.heartbeat.interval.ms"].config_type == 3 and cfg["share.isolation.level"].config_type == 2
    assert all(not e.read_only and not e.is_sensitive for e in cfg.values())
    assert list(configs(c, "x", rtype=GROUP, keys=["share.isolation.level"])) == ["share.isolation.level"]
    empty = describe(c, "", rtype=GROUP)
    assert (empty.error_code, empty.error_message) == (ErrorCode.INVALID_REQUEST, "Group name must not be empty")


def test_incremental_set_delete_and_validate_only(c: RawClient) -> None:
    assert incremental(c, "g1", ("consumer.session.timeout.ms", SET, "55000"),
                       ("share.auto.offset.reset", SET, "earliest"), rtype=GROUP) == (0, None)
    cfg = group(c, "g1")
    assert cfg["consumer.session.timeout.ms"] == ("55000", 8) and cfg["share.auto.offset.reset"] == ("earliest", 8)
    assert cfg["share.session.timeout.ms"][1] == 5
    assert incremental(c, "g1", ("share.isolation.level", SET, "read_committed"), validate_only=True,
                       rtype=GROUP) == (0, None)
    assert group(c, "g1")["share.isolation.level"] == ("read_uncommitted", 5)
    assert incremental(c, "g1", ("consumer.session.timeout.ms", DELETE, None), rtype=GROUP) == (0, None)
    assert group(c, "g1")["consumer.session.timeout.ms"] == ("50000", 5)
    assert group(c, "g1")["share.auto.offset.reset"] == ("earliest", 8)
    # legacy AlterConfigs replaces every override of the group
    assert legacy(c, "g1", {"share.heartbeat.interval.ms": "6000"}, rtype=GROUP) == (0, None)
    cfg = group(c, "g1")
    assert {k for k, (_v, s) in cfg.items() if s == 8} == {"share.heartbeat.interval.ms"}
    assert legacy(c, "g1", {}, rtype=GROUP) == (0, None)
    assert all(s == 5 for _v, s in group(c, "g1").values())


@pytest.mark.parametrize("ops, message", [
    ((("no.such.config", SET, "1"),), "Unknown group config name: no.such.config"),
    ((("consumer.session.timeout.ms", SET, "abc"),),
     "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT"),
    ((("share.record.lock.duration.ms", SET, "999"),),
     "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at least 1000"),
    ((("consumer.session.timeout.ms", SET, "30000"),),
     "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."),
    ((("share.record.lock.duration.ms", SET, "70000"),),
     "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."),
    ((("share.isolation.level", SET, "READ_COMMITTED"),),
     "Invalid value READ_COMMITTED for configuration share.isolation.level: String must be one of: "
     "read_committed, read_uncommitted"),
    ((("share.auto.offset.reset", SET, "by_duration:-PT1H"),),
     "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value "
     "`by_duration:-PT1H` for configuration share.auto.offset.reset. The value must be either 'earliest', "
     "'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."),
    ((("share.auto.offset.reset", SET, "none"),), "Invalid value `none` for configuration share.auto.offset.reset"),
    ((("share.auto.offset.reset", SET, "Earliest"),), "Invalid value `Earliest` for configuration"),
    ((("share.auto.offset.reset", SET, "by_duration"),), "Invalid value `by_duration` for configuration"),
    ((("share.auto.offset.reset", APPEND, "earliest"),),
     "Can't APPEND to key share.auto.offset.reset because its type is not LIST."),
])
def test_invalid_group_configs(c: RawClient, ops: tuple[tuple[str, int, str], ...], message: str) -> None:
    code, msg = incremental(c, "bad", *ops, rtype=GROUP)
    assert code == ErrorCode.INVALID_CONFIG and msg is not None and message in msg
    assert all(s == 5 for _v, s in group(c, "bad").values())


def test_share_auto_offset_reset_by_duration_is_accepted_as_given(c: RawClient) -> None:
    """KIP-1106: by_duration:<ISO-8601> is stored as given (ConfigDef trims the string) and described back."""
    assert incremental(c, "bd", ("share.auto.offset.reset", SET, " by_duration:p1dT2h30.5s "),
                       rtype=GROUP) == (0, None)
    assert group(c, "bd")["share.auto.offset.reset"] == ("by_duration:p1dT2h30.5s", 8)
    code, msg = incremental(c, "bd", ("share.auto.offset.reset", SET, "by_duration:P1W"), rtype=GROUP)
    assert code == ErrorCode.INVALID_CONFIG and "`by_duration:P1W`" in (msg or "")
    assert group(c, "bd")["share.auto.offset.reset"] == ("by_duration:p1dT2h30.5s", 8)


def test_session_must_exceed_heartbeat(c: RawClient, broker: Broker) -> None:
    # a broker whose bounds overlap: Kafka compares against the broker default for the unset one
    with Broker(overrides={"group.share.max.heartbeat.interval.ms": "60000"}) as b, RawClient(b.host, b.port) as c2:
        code, msg = incremental(c2, "g", ("share.heartbeat.interval.ms", SET, "45000"), rtype=GROUP)
        assert (code, msg) == (ErrorCode.INVALID_CONFIG,
                               "share.session.timeout.ms must be greater than share.heartbeat.interval.ms")
        assert incremental(c2, "g", ("share.heartbeat.interval.ms", SET, "44999"), rtype=GROUP) == (0, None)


def test_consumer_group_heartbeat_interval_follows_the_group_config(c: RawClient) -> None:
    c.request(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name="hbt", num_partitions=1, replication_factor=1)], timeout_ms=5000), 5)
    assert incremental(c, "cg", ("consumer.heartbeat.interval.ms", SET, "7000"), rtype=GROUP) == (0, None)

    def beat(member: str) -> int:
        r = c.request(ConsumerGroupHeartbeatRequest(group_id="cg", member_id=member, member_epoch=0,
                                                    rebalance_timeout_ms=5000, subscribed_topic_names=["hbt"],
                                                    topic_partitions=[]), 1)
        assert r.error_code == 0, r.error_message
        return int(r.heartbeat_interval_ms)

    assert beat("m1") == 7000
    assert incremental(c, "cg", ("consumer.heartbeat.interval.ms", DELETE, None), rtype=GROUP) == (0, None)
    assert beat("m2") == 5000


def test_share_auto_offset_reset_earliest_reads_from_the_beginning(c: RawClient) -> None:
    c.request(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name="sh", num_partitions=1, replication_factor=1)], timeout_ms=5000), 5)
    r = c.request(produce_req("sh", encode_batch([Rec(b"a"), Rec(b"b"), Rec(b"c")])), 9)
    assert r.responses[0].partition_responses[0].error_code == 0
    tid = topic_id(c, "sh")
    assert incremental(c, "early", ("share.auto.offset.reset", SET, "earliest"), rtype=GROUP) == (0, None)
    got = {}
    for g in ("early", "late"):
        h = hb(c, g, f"{g}-m", 0, ["sh"])
        assert h.error_code == 0, h.error_message
        hb(c, g, f"{g}-m", h.member_epoch)   # the assignment
        got[g] = acquired(fetch(c, g, f"{g}-m", 0, tid, max_wait=200))
    assert got == {"early": [0, 1, 2], "late": []}


def test_group_configs_survive_restart(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        assert incremental(c, "keep", ("share.record.lock.duration.ms", SET, "16000"),
                           ("share.isolation.level", SET, "read_committed"), rtype=GROUP) == (0, None)
        assert incremental(c, "gone", ("share.delivery.count.limit", SET, "3"), rtype=GROUP) == (0, None)
        assert legacy(c, "gone", {}, rtype=GROUP) == (0, None)
    assert not list(tmp_path.glob("kafkalite-group-configs.json.tmp"))
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        assert {k: v for k, (v, s) in group(c, "keep").items() if s == 8} == {
            "share.record.lock.duration.ms": "16000", "share.isolation.level": "read_committed"}
        assert all(s == 5 for _v, s in group(c, "gone").values())


def test_group_config_authorization(tmp_path: Path) -> None:
    """With the authorizer on, Kafka authorizes GROUP config resources on the group: DESCRIBE_CONFIGS
    (implied by ALTER_CONFIGS) to describe, ALTER_CONFIGS to alter; GROUP_AUTHORIZATION_FAILED otherwise."""
    from kafkalite.authz.acl import AclBinding, Op, PatternType, Permission, ResourceType
    from kafkalite.authz.authorizer import Authorizer

    anon = "User:ANONYMOUS"
    Authorizer(tmp_path).create([
        AclBinding(ResourceType.GROUP, "mine", PatternType.LITERAL, anon, "*", Op.ALTER_CONFIGS, Permission.ALLOW),
        AclBinding(ResourceType.GROUP, "seen", PatternType.LITERAL, anon, "*", Op.DESCRIBE_CONFIGS,
                   Permission.ALLOW)])
    standard = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
    with Broker(data_dir=tmp_path, overrides=standard) as b, RawClient(b.host, b.port) as c:
        assert incremental(c, "mine", ("share.auto.offset.reset", SET, "earliest"), rtype=GROUP) == (0, None)
        assert group(c, "mine")["share.auto.offset.reset"] == ("earliest", 8)
        assert describe(c, "seen", rtype=GROUP).error_code == 0
        assert incremental(c, "seen", ("share.auto.offset.reset", SET, "earliest"),
                           rtype=GROUP)[0] == ErrorCode.GROUP_AUTHORIZATION_FAILED
        assert legacy(c, "other", {}, rtype=GROUP)[0] == ErrorCode.GROUP_AUTHORIZATION_FAILED
        assert describe(c, "other", rtype=GROUP).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
