"""queued.max.request.bytes: request bytes buffered across connections stay bounded.

A connection announcing a large frame reserves its size before the body is buffered; while the pool is
used up, other large requests wait unread (TCP pushes back on their clients) and go on once it frees.
Small requests are never held up, and one request larger than the whole pool still goes through."""
from __future__ import annotations

import socket
import time
from pathlib import Path

from kafkalite.embedded import Broker
from kafkalite.tests.rawclient import RawClient
from wire.errors import ErrorCode
from wire.messages import MetadataRequest, ProduceRequest

MB = 1024 * 1024
PRODUCE_V = 9


def _big_produce(client: RawClient, size: int) -> tuple[int, bytes]:
    """A Produce frame carrying ``size`` bytes of records for an unknown topic (answered without storing)."""
    req = ProduceRequest(acks=1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name="no-such-topic", partition_data=[ProduceRequest.PartitionProduceData(index=0, records=b"x" * size)])])
    cid = client.next_cid()
    return cid, client.frame(req, PRODUCE_V, cid)


def _answered_within(client: RawClient, seconds: float) -> bool:
    client.sock.settimeout(seconds)
    try:
        return bool(client.sock.recv(1, socket.MSG_PEEK))
    except TimeoutError:
        return False
    finally:
        client.sock.settimeout(20.0)


def _produce_error(client: RawClient, cid: int) -> int:
    got_cid, resp = client.recv(0, PRODUCE_V)
    assert got_cid == cid
    return int(resp.responses[0].partition_responses[0].error_code)


def test_large_requests_wait_while_the_pool_is_used_up(tmp_path: Path) -> None:
    overrides = {"queued.max.request.bytes": str(4 * MB), "socket.request.max.bytes": str(16 * MB)}
    with Broker(data_dir=tmp_path, overrides=overrides) as b, RawClient(b.host, b.port) as a, \
            RawClient(b.host, b.port) as c, RawClient(b.host, b.port) as small:
        cid_a, frame_a = _big_produce(a, 3 * MB)
        cid_c, frame_c = _big_produce(c, 3 * MB)
        a.send_raw(frame_a[: MB])            # A's 3 MB are reserved; its body is still coming
        time.sleep(0.3)
        c.send_raw(frame_c)                  # C needs 3 MB more than the 4 MB pool has left
        assert not _answered_within(c, 1.0), "C's request was read although the pool was used up"
        # small requests are not held up by the pool
        assert small.request(MetadataRequest(topics=[]), 12).brokers
        a.send_raw(frame_a[MB:])
        assert _produce_error(a, cid_a) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        # A answered -> its reservation is back -> C goes through
        assert _produce_error(c, cid_c) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_one_request_larger_than_the_pool_still_goes_through(tmp_path: Path) -> None:
    overrides = {"queued.max.request.bytes": str(1 * MB), "socket.request.max.bytes": str(16 * MB)}
    with Broker(data_dir=tmp_path, overrides=overrides) as b, RawClient(b.host, b.port) as a:
        cid, frame = _big_produce(a, 3 * MB)
        a.send_raw(frame)
        assert _produce_error(a, cid) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        # and the reservation was returned: the next one goes through too
        cid, frame = _big_produce(a, 2 * MB)
        a.send_raw(frame)
        assert _produce_error(a, cid) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_a_closed_connection_gives_its_reservation_back(tmp_path: Path) -> None:
    overrides = {"queued.max.request.bytes": str(4 * MB), "socket.request.max.bytes": str(16 * MB)}
    with Broker(data_dir=tmp_path, overrides=overrides) as b, RawClient(b.host, b.port) as c:
        with RawClient(b.host, b.port) as a:
            _cid, frame_a = _big_produce(a, 3 * MB)
            a.send_raw(frame_a[: MB])        # reserves 3 MB, then the client goes away mid-request
            time.sleep(0.3)
        cid_c, frame_c = _big_produce(c, 3 * MB)
        c.send_raw(frame_c)
        assert _produce_error(c, cid_c) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
