"""The config definition table: Kafka's types and ranges, one-line errors, warnings for keys kafkalite ignores,
and topic configs checked by every API that sets them (INVALID_CONFIG, the connection stays open)."""
from __future__ import annotations

from pathlib import Path

import pytest

from kafkalite.config.broker import DEFAULTS, BrokerConfig
from kafkalite.config.defs import BROKER, TOPIC, InvalidConfig, broker_defs, check_topic_configs, topic_defs
from kafkalite.config.kafka39 import KAFKA_39_BROKER_CONFIGS
from kafkalite.embedded import Broker
from kafkalite.errors import ConfigError
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    AlterConfigsRequest,
    ApiVersionsRequest,
    CreateTopicsRequest,
    IncrementalAlterConfigsRequest,
)


def test_every_default_is_valid_under_its_own_definition() -> None:
    for d in {**BROKER, **TOPIC}.values():
        if d.default not in (None, ""):
            d.parse(d.default)
    BrokerConfig({})


def test_the_kafka_names_kafkalite_reads_are_kafka_39_names() -> None:
    from kafkalite.coordinator.consumer.migration import KAFKA_4_BROKER_CONFIGS as CONSUMER_KAFKA_4
    from kafkalite.coordinator.share.config import KAFKA_4_BROKER_CONFIGS

    internal = {"log.initial.task.delay.ms"}   # Kafka's internal settings (ServerLogConfigs, not in its listing)
    ours = {n for n in BROKER if not n.startswith("kafkalite.")} - KAFKA_4_BROKER_CONFIGS - CONSUMER_KAFKA_4 - internal
    assert ours <= KAFKA_39_BROKER_CONFIGS, ours - KAFKA_39_BROKER_CONFIGS
    assert len(KAFKA_39_BROKER_CONFIGS) > 300
    assert set(DEFAULTS) == set(BROKER)


def test_a_bad_list_element_is_named_as_kafka_names_it() -> None:
    """ConfigDef.ValidList checks each element with ValidString: the message names the element refused."""
    with pytest.raises(ConfigError) as info:
        BrokerConfig({"log.cleanup.policy": "compact,forever"})
    assert str(info.value).endswith("Invalid value forever for configuration log.cleanup.policy: "
                                    "String must be one of: compact, delete")


@pytest.mark.parametrize(("key", "value", "why"), [
    ("num.partitions", "0", "Value must be at least 1"),
    ("log.segment.bytes", "13", "Value must be at least 1048576"),      # Kafka 4.x (the default profile)
    ("log.segment.bytes", "2147483648", "Not a number of type INT"),      # Kafka's INT is 32-bit
    ("socket.request.max.bytes", "1e6", "Not a number of type INT"),
    ("queued.max.request.bytes", "9223372036854775808", "Not a number of type LONG"),
    ("log.cleaner.min.cleanable.ratio", "1.5", "Value must be no more than 1"),
    ("log.cleaner.min.cleanable.ratio", "nan", "Not a finite number"),
    ("delete.topic.enable", "1", "Expected value to be either true or false"),
    ("log.cleanup.policy", "forever", "String must be one of: compact, delete"),
    ("compression.type", "brotli", "String must be one of"),
    ("kafkalite.emulate.kafka", "1.0", "String must be one of"),
    ("listeners", "PLAINTEXT://localhost:65536", "port 65536 is outside 0-65535"),
    ("advertised.listeners", "nonsense", "expected NAME://host:port"),
])
def test_bad_values_are_refused_in_one_line_naming_key_and_value(key: str, value: str, why: str) -> None:
    with pytest.raises(ConfigError) as info:
        BrokerConfig({key: value})
    message = str(info.value)
    assert "\n" not in message and key in message and value in message and why in message


def test_every_bad_key_is_reported() -> None:
    with pytest.raises(ConfigError) as info:
        BrokerConfig({"num.partitions": "-1", "message.max.bytes": "x", "log.roll.hours": "0"})
    assert len(str(info.value).splitlines()) == 3


def test_values_kafka_accepts_are_accepted() -> None:
    cfg = BrokerConfig({"num.partitions": " 3 ", "delete.topic.enable": "FALSE", "log.retention.ms": "-1",
                        "log.cleanup.policy": "compact, delete", "listeners": "PLAINTEXT://[::1]:0",
                        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL"})
    assert cfg.num_partitions == 3 and cfg.get_bool("delete.topic.enable") is False


def test_listener_security_settings_are_checked() -> None:
    for values, why in (({"listeners": "SSL://127.0.0.1:9093"}, "has no key store"),
                        ({"listeners": "CLIENT://127.0.0.1:9093", "listener.security.protocol.map": "CLIENT:SASL_SSL"},
                         "has no key store"),
                        ({"listeners": "SASL_PLAINTEXT://127.0.0.1:9093", "sasl.enabled.mechanisms": "PLAIN,GSSAPI"},
                         "GSSAPI not supported"),
                        ({"listeners": "SSL://127.0.0.1:9093", "ssl.keystore.location": "k.pem",
                          "ssl.client.auth": "required"}, "needs a trust store"),
                        ({"listeners": "SSL://127.0.0.1:9093", "ssl.keystore.location": "k.pem",
                          "ssl.keystore.password": "x"}, "cannot be specified with PEM format"),
                        ({"listeners": "SASL_PLAINTEXT://127.0.0.1:9093",
                          "listener.name.sasl_plaintext.plain.sasl.jaas.config": "Module required user_a=;"},
                         "expected key=value"),
                        ({"inter.broker.listener.name": "INTERNAL"}, "inter.broker.listener.name")):
        with pytest.raises(ConfigError, match=why):
            BrokerConfig(values)
    with pytest.raises(ConfigError, match="listener.security.protocol.map"):
        BrokerConfig({"listener.security.protocol.map": "CLIENT:TLS"})
    ok = BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093",
                       "inter.broker.listener.name": "PLAINTEXT",
                       "listener.name.sasl_plaintext.plain.sasl.jaas.config": "M required user_a=\"b\";"})
    assert ok.startup_warnings() == []
    assert BrokerConfig({"listeners": "CLIENT://127.0.0.1:9093"}).startup_warnings() == [
        "listeners CLIENT are not in listener.security.protocol.map: served as PLAINTEXT (Kafka would refuse to "
        "start)"]


def test_unknown_and_unimplemented_keys_are_one_warning_line_each() -> None:
    warnings = BrokerConfig({"frobnicate": "1", "num.network.threads": "8", "ssl.keymanager.algorithm": "X",
                             "listener.name.internal.ssl.keymanager.algorithm": "X"}).startup_warnings()
    assert warnings == ["unknown config keys, ignored: frobnicate",
                        "Kafka settings kafkalite does not implement, ignored: listener.name.internal.ssl."
                        "keymanager.algorithm, num.network.threads, ssl.keymanager.algorithm"]


@pytest.mark.parametrize(("name", "value"), [
    ("retention.ms", "compact"), ("segment.bytes", "10"), ("segment.bytes", "2147483648"),
    ("segment.index.bytes", "99999999999999999999"), ("message.timestamp.difference.max.ms", "soon"),
    ("min.cleanable.dirty.ratio", "nan"), ("cleanup.policy", "compact,bogus"), ("preallocate", "yes"),
    ("compression.zstd.level", "23"), ("leader.replication.throttled.replicas", "0:x"),
    ("no.such.config", "1"),
])
def test_topic_config_table_refuses(name: str, value: str) -> None:
    why = check_topic_configs({name: value})
    assert why is not None and name in why


def test_kafka_4_configs_differ_from_39_where_kafka_changed_them() -> None:
    """Kafka 4.0 removed three topic configs, raised segment.bytes' minimum to 1 MiB and made far-future
    timestamps an hour's grace (KIP-1030); 4.4 added four. Profiles of older releases keep 3.9's table."""
    for release in ("4.3", "4.4"):
        assert check_topic_configs({"message.format.version": "3.0"}, release) == \
            "Unknown topic config name: message.format.version"
        assert "at least 1048576" in (check_topic_configs({"segment.bytes": "1048575"}, release) or "")
        assert check_topic_configs({"segment.bytes": "1048576"}, release) is None
        assert topic_defs(release)["message.timestamp.after.max.ms"].default == "3600000"
        assert broker_defs(release)["log.message.timestamp.after.max.ms"].default == "3600000"
    assert check_topic_configs({"segment.bytes": "1048575"}, "3.9") is None
    assert check_topic_configs({"message.timestamp.difference.max.ms": "1000"}, "3.9") is None
    assert "max.decompressed.message.bytes" in topic_defs("4.4") and "remote.copy.lag.ms" not in topic_defs("4.3")
    assert BrokerConfig({}).release == "4.4" and BrokerConfig({"kafkalite.emulate.kafka": "3.9"}).release == "3.9"
    with pytest.raises(ConfigError):
        BrokerConfig({"log.segment.bytes": "1000"})
    BrokerConfig({"log.segment.bytes": "1000", "kafkalite.emulate.kafka": "3.9"})


def test_topic_configs_match_what_kafka_44_lists() -> None:
    """Names, types and defaults of the 4.4 table are those the real Kafka 4.4 broker describes (captured by
    tools/capture_kafka.py)."""
    from kafkalite.config.kafka_releases import module

    for release in ("4.3", "4.4"):
        kafka = module(release).TOPIC_CONFIGS
        ours = {n: d for n, d in topic_defs(release).items() if n != "internal.segment.bytes"}   # listed when set
        assert set(ours) == set(kafka), (release, set(ours) ^ set(kafka))
        for name, (typ, default, _syn) in kafka.items():
            assert (ours[name].type, ours[name].default) == (typ, default), (release, name)


@pytest.mark.parametrize(("overrides", "why"), [
    ({"group.consumer.session.timeout.ms": "1000"},
     "group.consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"),
    ({"group.consumer.heartbeat.interval.ms": "500"},
     "group.consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"),
    ({"group.share.session.timeout.ms": "600000"},
     "group.share.session.timeout.ms must be less than or equal to group.share.max.session.timeout.ms"),
    ({"group.consumer.heartbeat.interval.ms": "50000", "group.consumer.max.heartbeat.interval.ms": "50000"},
     "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms"),
])
def test_group_timeouts_outside_their_bounds_stop_the_broker_as_kafka(overrides: dict[str, str], why: str) -> None:
    """Kafka's GroupCoordinatorConfig refuses to start with a group heartbeat or session setting outside its
    min/max settings, or a heartbeat not below the session timeout."""
    with pytest.raises(ConfigError) as info:
        BrokerConfig(overrides)
    assert why in str(info.value)


def test_group_timeouts_below_the_defaults_start_with_their_minimums_lowered() -> None:
    BrokerConfig({"group.consumer.heartbeat.interval.ms": "500", "group.consumer.min.heartbeat.interval.ms": "500",
                  "group.consumer.session.timeout.ms": "6000", "group.consumer.min.session.timeout.ms": "6000",
                  "group.share.session.timeout.ms": "600000", "group.share.max.session.timeout.ms": "600000"})


def test_invalid_config_message_is_kafkas() -> None:
    assert str(InvalidConfig("num.partitions", "-1", "Value must be at least 1")) == \
        "Invalid value -1 for configuration num.partitions: Value must be at least 1"


# -- on the wire ---------------------------------------------------------------------------------------

def _create(name: str, configs: dict[str, str], validate_only: bool = False) -> CreateTopicsRequest:
    R = CreateTopicsRequest
    return R(topics=[R.CreatableTopic(name=name, num_partitions=1, replication_factor=1, assignments=[],
                                      configs=[R.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()])],
             timeout_ms=5000, validate_only=validate_only)


@pytest.mark.parametrize("validate_only", [False, True])
def test_create_topics_with_bad_configs_answers_invalid_config(tmp_path: Path, validate_only: bool) -> None:
    bad = [{"retention.ms": "compact"}, {"segment.index.bytes": "99999999999999999999"},
           {"segment.bytes": "2147483648"}, {"max.message.bytes": "1_000"}, {"flush.ms": "-5"}]
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        for i, configs in enumerate(bad):
            for version in (0, 5, 7):
                t = c.request(_create(f"t{i}-{version}", configs, validate_only), version).topics[0]
                assert t.error_code == ErrorCode.INVALID_CONFIG, (configs, version)
                if version > 0:
                    assert next(iter(configs)) in t.error_message
        assert c.request(ApiVersionsRequest(), 0).error_code == 0      # the connection is still open
        ok = c.request(_create("fine", {"retention.ms": "1000"}, validate_only), 5).topics[0]
        assert ok.error_code == ErrorCode.NONE


def test_alter_configs_with_bad_values_answer_invalid_config(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path) as b, RawClient(b.host, b.port) as c:
        assert c.request(_create("t", {}), 5).topics[0].error_code == ErrorCode.NONE
        A = AlterConfigsRequest
        for validate_only in (False, True):
            r = c.request(A(resources=[A.AlterConfigsResource(resource_type=2, resource_name="t", configs=[
                A.AlterableConfig(name="segment.index.bytes", value="99999999999999999999")])],
                validate_only=validate_only), 1).responses[0]
            assert r.error_code == ErrorCode.INVALID_CONFIG and "segment.index.bytes" in r.error_message
        Inc = IncrementalAlterConfigsRequest
        r = c.request(Inc(resources=[Inc.AlterConfigsResource(resource_type=2, resource_name="t", configs=[
            Inc.AlterableConfig(name="retention.ms", config_operation=0, value="compact")])],
            validate_only=False), 1).responses[0]
        assert r.error_code == ErrorCode.INVALID_CONFIG and "retention.ms" in r.error_message
        assert c.request(ApiVersionsRequest(), 0).error_code == 0


@pytest.mark.clients
@pytest.mark.requires("confluent_kafka")
def test_confluent_admin_client_sees_invalid_config(tmp_path: Path) -> None:
    import confluent_kafka.admin as admin_mod
    from confluent_kafka import KafkaError, KafkaException

    with Broker(data_dir=tmp_path) as b:
        admin = admin_mod.AdminClient({"bootstrap.servers": b.bootstrap_servers})
        futures = admin.create_topics([admin_mod.NewTopic("bad-config", 1, 1, config={"retention.ms": "compact"})],
                                      request_timeout=30)
        with pytest.raises(KafkaException) as info:
            futures["bad-config"].result(timeout=60)
        err = info.value.args[0]
        assert err.code() == KafkaError.INVALID_CONFIG and "retention.ms" in err.str()
