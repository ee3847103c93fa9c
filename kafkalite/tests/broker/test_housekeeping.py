"""Background storage housekeeping runs on its schedule: retention deletes old segments while serving, first
log.initial.task.delay.ms after the start (Kafka's LogManager: 30 s by default), then every
log.retention.check.interval.ms."""
from __future__ import annotations

import time
from pathlib import Path

from kafkalite.embedded import Broker
from kafkalite.tests.broker.test_admin import create, topic
from kafkalite.tests.broker.test_protocol import produce_req
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.testing import encode_batch
from kafkalite_wire.messages import DescribeConfigsRequest, ListOffsetsRequest


def earliest(c: RawClient, name: str) -> int:
    req = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=name, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-2)])])
    return c.request(req, 7).topics[0].partitions[0].offset


def test_retention_runs_in_the_background(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path, overrides={"log.retention.check.interval.ms": "100",
                                              "log.initial.task.delay.ms": "0"}) as b, \
            RawClient(b.host, b.port) as c:
        create(c, topic("ret", 1, configs={"retention.ms": "60000", "internal.segment.bytes": "200"}))
        old = 1_000_000_000_000   # year 2001: far past retention
        for i in range(6):
            r = c.request(produce_req("ret", encode_batch([b"x" * 100], base_timestamp=old + i)), 9)
            assert r.responses[0].partition_responses[0].error_code == 0
        deadline = time.monotonic() + 60
        while earliest(c, "ret") < 6 and time.monotonic() < deadline:
            time.sleep(0.1)
        # every segment is gone, the active one too (Kafka rolls an expired active segment and deletes it)
        assert earliest(c, "ret") == 6


def _produce_expired(c: RawClient, name: str, n: int) -> None:
    create(c, topic(name, 1, configs={"retention.ms": "60000", "internal.segment.bytes": "200"}))
    old = 1_000_000_000_000   # year 2001: far past retention
    for i in range(n):
        r = c.request(produce_req(name, encode_batch([b"x" * 100], base_timestamp=old + i)), 9)
        assert r.responses[0].partition_responses[0].error_code == 0


def test_first_retention_pass_after_the_initial_task_delay(tmp_path: Path) -> None:
    """The check interval is an hour, so only the first pass (log.initial.task.delay.ms after start) can delete."""
    with Broker(data_dir=tmp_path, overrides={"log.retention.check.interval.ms": "3600000",
                                              "log.initial.task.delay.ms": "3000"}) as b, \
            RawClient(b.host, b.port) as c:
        _produce_expired(c, "first", 4)
        deadline = time.monotonic() + 60
        while earliest(c, "first") < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert earliest(c, "first") == 4


def test_no_pass_before_the_initial_task_delay(tmp_path: Path) -> None:
    """Kafka's default first pass is 30 s after start; a broker younger than that has deleted nothing, however
    short the check interval."""
    with Broker(data_dir=tmp_path, overrides={"log.retention.check.interval.ms": "100",
                                              "log.initial.task.delay.ms": "3600000",
                                              "log.cleaner.backoff.ms": "100"}) as b, \
            RawClient(b.host, b.port) as c:
        _produce_expired(c, "later", 4)
        time.sleep(1.0)     # ten check intervals, none of them run yet
        assert earliest(c, "later") == 0


def _broker_configs(c: RawClient) -> dict:
    r = c.request(DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=4, resource_name="1", configuration_keys=None)], include_synonyms=True), 4)
    assert r.results[0].error_code == 0
    return {e.name: e for e in r.results[0].configs}


def test_initial_task_delay_is_described_only_when_set(tmp_path: Path) -> None:
    """An internal config of Kafka's (``defineInternal``): DescribeConfigs lists it only when it is set, then as a
    static broker config of type LONG."""
    with Broker(data_dir=tmp_path / "a") as b, RawClient(b.host, b.port) as c:
        assert "log.initial.task.delay.ms" not in _broker_configs(c)
    with Broker(data_dir=tmp_path / "b", overrides={"log.initial.task.delay.ms": "500"}) as b, \
            RawClient(b.host, b.port) as c:
        e = _broker_configs(c)["log.initial.task.delay.ms"]
        assert (e.value, e.config_source, e.config_type, e.read_only) == ("500", 4, 5, True)


def _recovery_points(data_dir: Path) -> dict[str, int]:
    path = data_dir / "recovery-point-offset-checkpoint"
    if not path.exists():
        return {}
    lines = path.read_text().splitlines()[2:]
    return {f"{t}-{p}": int(o) for t, p, o in (line.split() for line in lines)}


def test_first_checkpoint_after_the_initial_task_delay(tmp_path: Path) -> None:
    """Kafka's kafka-recovery-point-checkpoint task runs log.initial.task.delay.ms after start, then every
    log.flush.offset.checkpoint.interval.ms: with an hour's interval, only that first run can write the
    recovery point of records produced before it."""
    with Broker(data_dir=tmp_path, overrides={"log.flush.offset.checkpoint.interval.ms": "3600000",
                                              "log.initial.task.delay.ms": "3000", "log.flush.interval.ms": "100",
                                              "log.cleaner.backoff.ms": "100"}) as b, \
            RawClient(b.host, b.port) as c:
        create(c, topic("cp", 1))
        for _ in range(3):
            r = c.request(produce_req("cp", encode_batch([b"x" * 100])), 9)
            assert r.responses[0].partition_responses[0].error_code == 0
        deadline = time.monotonic() + 60
        while _recovery_points(tmp_path).get("cp-0", 0) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _recovery_points(tmp_path).get("cp-0") == 3
