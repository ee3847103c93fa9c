"""A data directory written by a real Kafka broker is served as is: topics, ids, records, leader epochs."""
from __future__ import annotations

import shutil
import struct
import uuid
from pathlib import Path

import pytest

from kafkalite.embedded import Broker
from kafkalite.tests.broker.test_protocol import fetch_req, produce_req
from kafkalite.tests.support.rawclient import RawClient
from kafkalite.tests.support.requires import reference
from kafkalite_storage.testing import encode_batch
from kafkalite_wire.messages import MetadataRequest, OffsetForLeaderEpochRequest


@pytest.fixture
def kafka_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(reference("fixtures", "segments", "kafka-3.6.1-kraft-b"), data)
    return data


def _epochs(data: Path, partition: int) -> list[tuple[int, int]]:
    lines = (data / f"order_created-{partition}" / "leader-epoch-checkpoint").read_text().split("\n")[2:]
    return [(int(e), int(o)) for e, o in (ln.split() for ln in lines if ln.strip())]


def test_kafka_36_data_dir_is_served_at_its_leader_epochs(kafka_dir: Path) -> None:
    epochs = _epochs(kafka_dir, 0)
    latest, latest_start = epochs[-1]
    topic_id = uuid.UUID(int=0)
    for line in (kafka_dir / "order_created-0" / "partition.metadata").read_text().splitlines():
        if line.startswith("topic_id:"):
            import base64

            topic_id = uuid.UUID(bytes=base64.urlsafe_b64decode(line.split(":", 1)[1].strip() + "=="))
    with Broker(data_dir=kafka_dir) as b, RawClient(b.host, b.port) as c:
        md = c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="order_created")],
                                       allow_auto_topic_creation=False), 12).topics[0]
        assert md.error_code == 0 and md.topic_id == topic_id and len(md.partitions) == 3
        assert md.partitions[0].leader_epoch == latest
        # the records Kafka wrote are served; new appends continue the log at the same leader epoch
        before = c.request(fetch_req("order_created", 0), 12).responses[0].partitions[0]
        assert before.error_code == 0 and len(before.records) > 0
        leo = before.high_watermark
        r = c.request(produce_req("order_created", encode_batch([b"new"])), 9)
        assert r.responses[0].partition_responses[0].base_offset == leo
        new = c.request(fetch_req("order_created", leo), 12).responses[0].partitions[0]
        assert struct.unpack(">i", bytes(new.records[12:16]))[0] == latest
        OE = OffsetForLeaderEpochRequest

        def end_for(epoch: int) -> tuple[int, int, int]:
            req = OE(topics=[OE.OffsetForLeaderTopic(topic="order_created", partitions=[
                OE.OffsetForLeaderPartition(partition=0, current_leader_epoch=latest, leader_epoch=epoch)])])
            p = c.request(req, 4).topics[0].partitions[0]
            return p.error_code, p.leader_epoch, p.end_offset

        assert end_for(latest) == (0, latest, leo + 1)
        if len(epochs) > 1:
            assert end_for(epochs[0][0]) == (0, epochs[0][0], latest_start)
        assert end_for(latest + 1) == (0, -1, -1)
