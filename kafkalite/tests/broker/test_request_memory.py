"""queued.max.request.bytes: request bytes buffered across connections stay bounded.

A connection holds the bytes it has received (an announced frame size reserves nothing); while the pool is
used up, other requests wait unread (TCP pushes back on their clients) and go on once it frees.
Small requests are not held up by a waiting large one, and one request larger than the whole pool still
goes through. Every frame counts, whatever its size, and a request whose body does not arrive within
kafkalite.request.body.timeout.ms closes its connection and gives its reservation back."""
from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import trio
import trio.testing

from kafkalite.embedded import Broker
from kafkalite.server.request_memory import RequestMemoryPool
from kafkalite.tests.support.procstat import rss_mb, settled_rss_mb
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import MetadataRequest, ProduceRequest

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


def test_a_half_sent_request_holds_only_its_bytes_and_others_go_on(tmp_path: Path) -> None:
    """A holds 3 MB it has really sent of a 3.5 MB request in a 4 MB pool. C's 3 MB request is read up to the
    budget and then finishes past it (the one mid-frame finisher), small requests are not held up, and A is
    answered once the rest of it arrives."""
    overrides = {"queued.max.request.bytes": str(4 * MB), "socket.request.max.bytes": str(16 * MB),
                 "kafkalite.request.stall.ms": "60000"}
    with Broker(data_dir=tmp_path, overrides=overrides) as b, RawClient(b.host, b.port) as a, \
            RawClient(b.host, b.port) as c, RawClient(b.host, b.port) as small:
        cid_a, frame_a = _big_produce(a, 7 * MB // 2)
        cid_c, frame_c = _big_produce(c, 3 * MB)
        a.send_raw(frame_a[: 3 * MB])        # 3 MB held: bytes that arrived, not the announced 3.5 MB
        time.sleep(0.3)
        c.send_raw(frame_c)
        assert _produce_error(c, cid_c) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert small.request(MetadataRequest(topics=[]), 12).brokers
        a.send_raw(frame_a[3 * MB:])
        assert _produce_error(a, cid_a) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


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


# -- every frame counts; slow senders cannot pin the pool -------------------------------------------------

@pytest.mark.e2e
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the broker's RSS from /proc")
def test_many_half_sent_small_frames_are_bounded_by_the_pool(tmp_path: Path) -> None:
    """1,000 connections each send half of a 256 KiB frame (128 MB offered; frames this size were not
    counted before): the broker reads no more than the 8 MB pool, and gives the memory back when they go."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALITE_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafkalite", "serve", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path),
         "--override", f"queued.max.request.bytes={8 * MB}", "--override", "kafkalite.request.body.timeout.ms=60000"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    socks: list[socket.socket] = []
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().rsplit(":", 1)[1])
        idle = settled_rss_mb(proc.pid)
        size = 256 * 1024
        frame = struct.pack(">ihhi", size, 0, 9, 1) + bytes(size - 8)
        for _ in range(1000):
            s = socket.create_connection(("127.0.0.1", port), timeout=20)
            s.sendall(frame[: size // 2])
            socks.append(s)
        loaded = settled_rss_mb(proc.pid)
        assert loaded - idle < 64, f"RSS grew by {loaded - idle:.0f} MB with an 8 MB request pool"
        for s in socks:
            s.close()
        socks.clear()
        with RawClient("127.0.0.1", port) as probe:
            assert probe.request(MetadataRequest(topics=[]), 12).brokers
        deadline = time.monotonic() + 30     # the broker closes 1,000 connections; wait for it, generously
        while (after := rss_mb(proc.pid)) - idle >= 24 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert after - idle < 24, f"RSS still {after - idle:.0f} MB above idle after the connections closed"
    finally:
        for s in socks:
            s.close()
        proc.terminate()
        proc.wait(timeout=60)


def _trickle(sock: socket.socket, stop: threading.Event) -> None:
    while not stop.wait(0.2):
        try:
            sock.send(b"\0")
        except OSError:
            return


def test_trickling_senders_are_closed_and_their_reservations_returned(tmp_path: Path) -> None:
    """Three connections announce 1.5 MB frames and then send a byte every 0.2 s (each byte used to reset
    the idle clock, so they held the pool forever). Past kafkalite.request.body.timeout.ms they are closed,
    and another client's 3 MB request, which waited meanwhile, goes through."""
    overrides = {"queued.max.request.bytes": str(4 * MB), "socket.request.max.bytes": str(16 * MB),
                 "kafkalite.request.body.timeout.ms": "1000"}
    stop = threading.Event()
    with Broker(data_dir=tmp_path, overrides=overrides) as b, RawClient(b.host, b.port) as big:
        slow = [RawClient(b.host, b.port) for _ in range(3)]
        threads = []
        try:
            for c in slow:
                _cid, frame = _big_produce(c, 3 * MB // 2)
                c.send_raw(frame[:1024])
                t = threading.Thread(target=_trickle, args=(c.sock, stop), daemon=True)
                t.start()
                threads.append(t)
            time.sleep(0.3)
            cid, frame = _big_produce(big, 3 * MB)
            big.send_raw(frame)
            big.sock.settimeout(60)       # a hang detector, not a timing assertion
            assert _produce_error(big, cid) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            for c in slow:                # closed, the third once it got the pool and trickled on
                c.sock.settimeout(60)
                assert c.is_closed_by_peer()
        finally:
            stop.set()
            for t in threads:
                t.join()
            for c in slow:
                c.close()


# -- the pool's rules, without sockets ---------------------------------------------------------------------

def test_pool_grants_waiters_in_order_and_cancelled_waiters_give_grants_back() -> None:
    async def main() -> None:
        pool = RequestMemoryPool(100)
        assert pool.try_admit(80)                 # bytes a connection has received
        order: list[str] = []

        async def reader(name: str, size: int) -> None:
            await pool.admit(size)
            order.append(name)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader, "a", 50)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(reader, "b", 10)   # would fit, but waits behind a (first come, first served)
            await trio.testing.wait_all_tasks_blocked()
            assert pool.starved.is_set()
            with trio.CancelScope() as cancelled:
                cancelled.cancel()
                await pool.admit(50)              # the budget has 20 left: waits, then is cancelled
            assert order == [] and pool.used == 80 and pool.waiting == 2
            pool.settle(80, 0)                    # answered: a goes ahead, then b fits
        assert sorted(order) == ["a", "b"] and pool.used == 60 and not pool.starved.is_set()

    trio.run(main)


def test_one_connection_mid_frame_may_finish_past_the_budget() -> None:
    """Connections holding parts of frames cannot all wait for each other: one at a time finishes its frame
    past the budget (Kafka's non-strict pool); the others wait for it."""
    async def main() -> None:
        pool = RequestMemoryPool(100)
        a, b = object(), object()
        assert pool.try_admit(60) and pool.try_admit(40)   # a and b each hold part of a frame; budget full
        assert not pool.try_admit(10)                       # a new frame's first read waits
        assert pool.try_admit(500, a) and pool.finisher is a   # a finishes its frame past the budget
        assert not pool.try_admit(10, b)                    # b is mid-frame too, but a is the finisher
        assert pool.try_admit(10, a)
        pool.frame_done(a)
        assert pool.finisher is None and pool.try_admit(10, b) and pool.finisher is b
        pool.settle(pool.used, 0)
        pool.frame_done(b)
        assert pool.used == 0 and pool.try_admit(100)

    trio.run(main)


def test_a_budget_smaller_than_one_read_still_serves_many_connections_at_once(tmp_path: Path) -> None:
    """With a 256 KiB budget a read is admitted at 32 KiB, so one connection waiting for the rest of its
    request does not stop the others from reading theirs."""
    overrides = {"queued.max.request.bytes": str(256 * 1024), "kafkalite.request.body.timeout.ms": "60000"}
    with Broker(data_dir=tmp_path, overrides=overrides) as b, RawClient(b.host, b.port) as slow, \
            RawClient(b.host, b.port) as other:
        _cid, frame = _big_produce(slow, 100 * 1024)
        slow.send_raw(frame[:1000])            # holds its 100 KiB frame's reservation, body still coming
        time.sleep(0.3)
        assert other.request(MetadataRequest(topics=[]), 12).brokers
