"""``kafkalite configs`` end to end against an embedded broker: topic overrides and broker settings set,
described and deleted, checked through confluent-kafka's own describe_configs; bad values refused whole."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafkalite.embedded import Broker
from kafkalite.tests.support.tools_helpers import cli, need_confluent


@pytest.fixture(scope="module")
def bs() -> Iterator[str]:
    with Broker() as b:
        yield b.bootstrap_servers


def _client_view(bs: str, restype: str, name: str) -> dict[str, tuple[str, str]]:
    need_confluent()
    from confluent_kafka.admin import AdminClient, ConfigResource

    res = ConfigResource(restype, name)
    client = AdminClient({"bootstrap.servers": bs})   # kept alive until the answer is in
    entries = client.describe_configs([res])[res].result(timeout=30)
    from confluent_kafka.admin import ConfigSource

    return {k: (e.value, ConfigSource(e.source).name) for k, e in entries.items()}


def test_topic_configs_alter_describe_delete(bs: str) -> None:
    need_confluent()
    assert cli(bs, "topics", "--create", "--topic", "ct").code == 0
    r = cli(bs, "configs", "--alter", "--topic", "ct", "--add-config",
            "retention.ms=5000,cleanup.policy=[compact,delete]", "--add-config", "max.message.bytes=2048")
    assert (r.code, r.out) == (0, "Completed updating config for topic 'ct'.\n"), r.err
    view = _client_view(bs, "TOPIC", "ct")
    assert view["retention.ms"] == ("5000", "DYNAMIC_TOPIC_CONFIG")
    assert view["cleanup.policy"] == ("compact,delete", "DYNAMIC_TOPIC_CONFIG")
    d = cli(bs, "configs", "--describe", "--entity-type", "topics", "--entity-name", "ct", "--json").json()
    assert [(e["name"], e["value"], e["source"]) for e in d] == [
        ("cleanup.policy", "compact,delete", "DYNAMIC_TOPIC_CONFIG"), ("max.message.bytes", "2048",
                                                                       "DYNAMIC_TOPIC_CONFIG"),
        ("retention.ms", "5000", "DYNAMIC_TOPIC_CONFIG")]
    assert cli(bs, "configs", "--alter", "--topic", "ct", "--delete-config", "cleanup.policy,max.message.bytes").code == 0
    assert cli(bs, "configs", "--describe", "--topic", "ct").rows() == [
        ["retention.ms", "5000", "DYNAMIC_TOPIC_CONFIG", "false", "false"]]
    full = {e["name"]: e for e in cli(bs, "configs", "--describe", "--topic", "ct", "--all", "--json").json()}
    assert full["cleanup.policy"]["value"] == "delete" and full["cleanup.policy"]["source"] == "DEFAULT_CONFIG"
    # a bad value: refused whole (the good one in the same call is not applied)
    r = cli(bs, "configs", "--alter", "--topic", "ct", "--add-config", "segment.ms=60000,retention.ms=abc")
    assert r.code == 1 and "INVALID_CONFIG" in r.err and "retention.ms" in r.err
    assert _client_view(bs, "TOPIC", "ct")["segment.ms"][1] == "DEFAULT_CONFIG"
    r = cli(bs, "configs", "--describe", "--topic", "no-such-topic")
    assert r.code == 1 and "UNKNOWN_TOPIC" in r.err


def test_broker_configs_and_defaults(bs: str) -> None:
    need_confluent()
    assert cli(bs, "configs", "--alter", "--broker", "1", "--add-config", "log.retention.ms=7200000").code == 0
    assert _client_view(bs, "BROKER", "1")["log.retention.ms"] == ("7200000", "DYNAMIC_BROKER_CONFIG")
    assert ["log.retention.ms", "7200000", "DYNAMIC_BROKER_CONFIG", "false", "false"] in \
        cli(bs, "configs", "--describe", "--broker", "1").rows()
    # the cluster-wide default (resource name ""), which librdkafka cannot name: sent with the project's codec
    r = cli(bs, "configs", "--alter", "--broker-defaults", "--add-config", "log.retention.bytes=1073741824")
    assert (r.code, r.out) == (0, "Completed updating config for broker defaults.\n"), r.err
    rows = cli(bs, "configs", "--describe", "--entity-type", "brokers", "--entity-default").rows()
    assert ["log.retention.bytes", "1073741824", "DYNAMIC_DEFAULT_BROKER_CONFIG", "false", "false"] in rows
    assert cli(bs, "configs", "--alter", "--broker", "1", "--delete-config", "log.retention.ms").code == 0
    assert _client_view(bs, "BROKER", "1")["log.retention.ms"][1] != "DYNAMIC_BROKER_CONFIG"
    r = cli(bs, "configs", "--alter", "--broker-defaults", "--add-config", "log.retention.ms=abc")
    assert r.code == 1 and "INVALID_CONFIG" in r.err


def test_configs_bad_input(bs: str) -> None:
    need_confluent()
    for argv, code, text in [
        (("configs", "--describe"), 2, "name a resource"),
        (("configs", "--alter", "--topic", "x"), 2, "needs --add-config"),
        (("configs", "--describe", "--topic", "x", "--add-config", "a=1"), 2, "are for --alter"),
        (("configs", "--alter", "--topic", "x", "--add-config", "a=1", "--delete-config", "a"), 2,
         "both added and deleted"),
        (("configs", "--alter", "--topic", "x", "--add-config", "novalue"), 2, "expected KEY=VALUE"),
        (("configs", "--describe", "--entity-type", "topics"), 2, "needs --entity-name"),
        (("configs", "--describe", "--entity-type", "topics", "--entity-default"), 2, "applies to"),
        (("configs", "--describe", "--topic", "a", "--group", "b"), 2, "not allowed with"),
    ]:
        r = cli(bs, *argv)
        assert r.code == code and text in r.err, (argv, r)
    # group configs travel as resource type 32: a bad name is refused with Kafka's message, one clean line
    r = cli(bs, "configs", "--alter", "--group", "g", "--add-config", "no.such=1")
    assert r.code == 1 and "INVALID_CONFIG: Unknown group config name: no.such" in r.err, r.err


def test_group_configs_alter_describe_delete(bs: str) -> None:
    r = cli(bs, "configs", "--alter", "--group", "tg", "--add-config",
            "share.auto.offset.reset=earliest,consumer.session.timeout.ms=50000")
    assert r.code == 0, r.err
    assert sorted(cli(bs, "configs", "--describe", "--group", "tg").rows()) == [
        ["consumer.session.timeout.ms", "50000", "DYNAMIC_GROUP_CONFIG", "false", "false"],
        ["share.auto.offset.reset", "earliest", "DYNAMIC_GROUP_CONFIG", "false", "false"]]
    full = {e["name"]: e for e in cli(bs, "configs", "--describe", "--group", "tg", "--all", "--json").json()}
    assert full["share.isolation.level"]["source"] == "DEFAULT_CONFIG"
    assert cli(bs, "configs", "--alter", "--group", "tg", "--delete-config", "consumer.session.timeout.ms").code == 0
    assert cli(bs, "configs", "--describe", "--entity-type", "groups", "--entity-name", "tg").rows() == [
        ["share.auto.offset.reset", "earliest", "DYNAMIC_GROUP_CONFIG", "false", "false"]]
