"""Background storage housekeeping runs on its schedule: retention deletes old segments while serving."""
from __future__ import annotations

import time
from pathlib import Path

from kafkalite.embedded import Broker
from kafkalite.tests.broker.test_admin import create, topic
from kafkalite.tests.broker.test_protocol import produce_req
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_storage.testing import encode_batch
from kafkalite_wire.messages import ListOffsetsRequest


def earliest(c: RawClient, name: str) -> int:
    req = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=name, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=-2)])])
    return c.request(req, 7).topics[0].partitions[0].offset


def test_retention_runs_in_the_background(tmp_path: Path) -> None:
    with Broker(data_dir=tmp_path, overrides={"log.retention.check.interval.ms": "100"}) as b, \
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
