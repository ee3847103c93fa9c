"""A data directory written by a real Kafka 3.8 broker: its groups and committed offsets are served."""
from __future__ import annotations

import shutil
import time
from pathlib import Path

from kafkalite.embedded import Broker
from kafkalite.tests.support.rawclient import RawClient
from kafkalite.tests.support.requires import reference
from kafkalite_wire.messages import ListGroupsRequest, OffsetFetchRequest


def test_groups_and_offsets_from_kafka_38_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(reference("fixtures", "segments", "kafka-3.8-kraft-a"), data)
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
