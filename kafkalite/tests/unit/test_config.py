"""Broker configuration: properties syntax, precedence, env vars, listeners, CLI flags."""
from __future__ import annotations

from pathlib import Path

import pytest

from kafkalite.cli import _build_parser, config_from_args
from kafkalite.config.addresses import Listener, parse_listeners
from kafkalite.config.broker import BrokerConfig, parse_properties
from kafkalite.errors import ConfigError


def test_properties_syntax() -> None:
    text = "\n".join([
        "# comment", "! also a comment", "", "a=1", "b: two", "c three", "  d = spaced  ",
        "long = first,\\", "    second", "escaped\\=key=v",
    ])
    props = parse_properties(text)
    assert props == {"a": "1", "b": "two", "c": "three", "d": "spaced", "long": "first,second",
                     "escaped=key": "v"}


def test_defaults() -> None:
    cfg = BrokerConfig()
    assert cfg.listeners() == [Listener("PLAINTEXT", "127.0.0.1", 9092)]
    assert str(cfg.log_dir) == "kafkalite-data"
    assert cfg.node_id == 1 and cfg.num_partitions == 1 and cfg.auto_create_topics
    assert cfg.get_int("group.initial.rebalance.delay.ms") == 0
    assert cfg.get_int("offsets.topic.num.partitions") == 50
    assert cfg.retention_ms() == 168 * 3600 * 1000


def test_precedence_file_env_override(tmp_path: Path) -> None:
    f = tmp_path / "server.properties"
    f.write_text("num.partitions=3\nlog.retention.hours=1\nnode.id=7\nlog.dirs=/from/file\n")
    env = {"KAFKALITE_NUM_PARTITIONS": "4", "KAFKALITE_ADVERTISED_LISTENERS": "PLAINTEXT://example.com:19092",
           "KAFKALITE_REFERENCE": "/not/a/setting", "OTHER": "x", "KAFKALITE_EMULATE_KAFKA": "2.8",
           # the project's test tooling's variables are not settings
           "KAFKALITE_CONSOLE_SCREENSHOTS": "/tmp/shots", "KAFKALITE_COMPAT_BROKER": "kafka",
           "KAFKALITE_REFERENCE_HEAP": "1g"}
    cfg = BrokerConfig.load(f, {"node.id": "9"}, environ=env)
    assert cfg.num_partitions == 4          # env beats file
    assert cfg.node_id == 9                 # override beats file
    assert cfg.retention_ms() == 3600 * 1000
    assert str(cfg.log_dir) == "/from/file"
    assert cfg.advertised_listeners() == [Listener("PLAINTEXT", "example.com", 19092)]
    assert "reference" not in cfg.values
    assert not {k for k in cfg.values if k.startswith(("console.", "compat.", "reference."))}
    assert cfg.emulate_kafka == "2.8"


def test_retention_ms_beats_minutes_and_hours() -> None:
    assert BrokerConfig({"log.retention.ms": "5", "log.retention.minutes": "1"}).retention_ms() == 5
    assert BrokerConfig({"log.retention.minutes": "2"}).retention_ms() == 120_000
    assert BrokerConfig({"log.retention.ms": "-1"}).retention_ms() == -1


def test_listeners_parsing_and_errors() -> None:
    assert parse_listeners("PLAINTEXT://:9092,internal://[::1]:29092") == [
        Listener("PLAINTEXT", "", 9092), Listener("INTERNAL", "::1", 29092)]
    with pytest.raises(ConfigError):
        parse_listeners("localhost:9092")
    with pytest.raises(ConfigError):
        BrokerConfig({"num.partitions": "many"})


def test_cli_flags_map_to_properties(tmp_path: Path) -> None:
    args = _build_parser().parse_args([
        "serve", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path), "--emulate-kafka", "3.6",
        "--override", "num.partitions=2", "--override", "auto.create.topics.enable=false"])
    cfg = config_from_args(args)
    assert cfg.listeners() == [Listener("PLAINTEXT", "127.0.0.1", 0)]
    assert cfg.log_dir == tmp_path and cfg.emulate_kafka == "3.6"
    assert cfg.num_partitions == 2 and not cfg.auto_create_topics
    with pytest.raises(SystemExit):
        _build_parser().parse_args(["serve", "--emulate-kafka", "1.0"])
