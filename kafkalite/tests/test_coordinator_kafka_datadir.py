"""A data directory written by a real Kafka 3.8 broker: its groups and committed offsets are served."""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from kafkalite.embedded import Broker
from kafkalite.tests.rawclient import RawClient
from kafkalite_wire.messages import ListGroupsRequest, OffsetFetchRequest

REF = Path(os.environ.get("KAFKALITE_REFERENCE", Path(__file__).resolve().parents[3] / "shared" / "reference"))
FIXTURE = REF / "fixtures" / "segments" / "kafka-3.8-kraft-a"


def test_groups_and_offsets_from_kafka_38_data_dir(tmp_path: Path) -> None:
    if not FIXTURE.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"reference fixture missing: {FIXTURE}")
        pytest.skip(f"reference fixture missing: {FIXTURE}")
    data = tmp_path / "data"
    shutil.copytree(FIXTURE, data)
    with Broker(data_dir=data) as b, RawClient(b.host, b.port) as c:
        for _ in range(500):  # the coordinator answers COORDINATOR_LOAD_IN_PROGRESS until it has loaded
            resp = c.request(ListGroupsRequest(), 4)
            if resp.error_code == 0:
                break
            time.sleep(0.01)
        groups = resp.groups
        assert {(g.group_id, g.protocol_type, g.group_state) for g in groups} == {
            ("sensor-group", "consumer", "Empty"), ("sensor-consumer-group", "consumer", "Empty")}
        resp = c.request(OffsetFetchRequest(groups=[
            OffsetFetchRequest.OffsetFetchRequestGroup(group_id="sensor-group", topics=None)]), 8)
        parts = [(t.name, p.partition_index, p.committed_offset) for g in resp.groups for t in g.topics
                 for p in t.partitions]
        assert parts == [("sensor-data-topic", 0, 35)]
