"""Big batches over the wire: a 50 MB snappy batch (one raw block, as librdkafka sends it) and a batch whose
one record inflates to 1 GiB are validated and written off the event loop, in bounded memory, while another
client keeps getting answers; appends to a partition keep request order while one of them is off the loop;
what was acknowledged is there after a restart.

"While another client keeps getting answers" is shown without timing: the worker thread doing the big batch's
work waits (a gate wrapped around the real function) until the other client has had its answers, so the
big request cannot finish before the loop has served them."""
from __future__ import annotations

import os
import threading
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import kafkalite.runtime.turns as turns_mod
from kafkalite import Broker, validation
from kafkalite.handlers import produce_offload
from kafkalite.tests.broker.test_protocol import produce_req
from kafkalite.tests.broker.test_validation_produce import create, log_end
from kafkalite.tests.support.rawclient import RawClient
from kafkalite.tests.support.validation_corpus import NOW, raw_batch, valid
from kafkalite_storage.batch import iter_batches
from kafkalite_storage.testing import Rec, _zz, encode_batch
from kafkalite_wire.messages import ApiVersionsRequest, FetchRequest

BIG = {"max.message.bytes": str(64 << 20)}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with Broker(data_dir=tmp_path / "data") as b:
        yield b


def _client(broker: Broker, timeout: float = 120.0) -> RawClient:
    return RawClient(broker.host, broker.port, timeout=timeout)


def snappy_50mb() -> tuple[bytes, int]:
    """A ~50 MB batch of 1 KB records (70% random) in one raw snappy block, and its record count."""
    from cramjam import snappy

    n = 70_000
    recs = b"".join(_record(i, os.urandom(700) + b"text-%08d-" % i * 21) for i in range(n))
    return raw_batch(bytes(snappy.compress_raw(recs)), count=n, attrs=2, max_ts=NOW), n


def _record(i: int, value: bytes) -> bytes:
    from kafkalite_storage.testing import encode_record

    return encode_record(i, 0, Rec(value=value, key=b"k%d" % i))


def one_gib_record() -> bytes:
    """A valid zstd batch (~33 KB) of one record whose value is 1 GiB of zeros."""
    import zstandard

    size = 1 << 30
    body = b"\x00" + _zz(0) + _zz(0) + _zz(1) + b"k" + _zz(size)
    c = zstandard.ZstdCompressor().compressobj()
    mib = bytes(1 << 20)
    payload = c.compress(_zz(len(body) + size + 1) + body) + b"".join(c.compress(mib) for _ in range(size >> 20))
    return raw_batch(payload + c.compress(_zz(0)) + c.flush(), count=1, attrs=4)


class Gate:
    """Wraps a function the big batch's worker thread calls: once there, it waits until ``open()``."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.opened = threading.Event()
        self.threads: set[str] = set()

    def wrap(self, fn: Callable[..., Any], when: Callable[..., bool] = lambda *a, **k: True) -> Callable[..., Any]:
        def gated(*args: Any, **kw: Any) -> Any:
            out = fn(*args, **kw)
            if when(*args, **kw):
                self.threads.add(threading.current_thread().name)
                self.reached.set()
                assert self.opened.wait(120), "the test never opened the gate"
            return out
        return gated

    def open(self) -> None:
        self.opened.set()


class SmallClient(threading.Thread):
    """ApiVersions and 1-record produces to another topic, back to back; opens the gate after `answers`."""

    def __init__(self, broker: Broker, gate: Gate, answers: int = 6) -> None:
        super().__init__(daemon=True)
        self.c = _client(broker, timeout=30)
        create(self.c, "small", {})
        self.gate, self.want, self.answered, self.while_gated = gate, answers, 0, 0
        self.stop = threading.Event()
        self.errors: list[BaseException] = []

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                if self.answered % 2:
                    assert self.c.request(produce_req("small", valid(1)), 9).responses[0] \
                        .partition_responses[0].error_code == 0
                else:
                    assert self.c.request(ApiVersionsRequest(client_software_name="small", client_software_version="1"), 3).error_code == 0
                self.answered += 1
                if self.gate.reached.is_set() and not self.gate.opened.is_set():
                    self.while_gated += 1
                    if self.while_gated >= self.want:
                        self.gate.open()
        except BaseException as exc:   # the test reports it
            self.errors.append(exc)
            self.gate.open()


def _fetch_all(c: RawClient, topic: str) -> bytes:
    F = FetchRequest
    req = F(max_wait_ms=0, min_bytes=1, max_bytes=128 << 20, isolation_level=0, topics=[F.FetchTopic(
        topic=topic, partitions=[F.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=128 << 20)])])
    p = c.request(req, 11).responses[0].partitions[0]
    assert p.error_code == 0
    return bytes(p.records or b"")


def test_a_50_mb_snappy_batch_is_produced_while_another_client_is_answered(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    batch, n = snappy_50mb()
    assert len(batch) > 48 << 20
    gate = Gate()
    monkeypatch.setattr(produce_offload, "stage", gate.wrap(produce_offload.stage))
    c = _client(broker)
    create(c, "big", BIG)
    small = SmallClient(broker, gate)
    small.start()
    try:
        p = c.request(produce_req("big", batch, acks=1), 9).responses[0].partition_responses[0]
    finally:
        small.stop.set()
        small.join(60)
    assert not small.errors, small.errors
    assert p.error_code == 0 and p.base_offset == 0, p
    assert small.while_gated >= small.want   # answered while the big batch was being written off the loop
    assert all(not t.startswith("kafkalite-broker") for t in gate.threads)   # a worker thread, not the loop
    assert log_end(c, "big") == n
    stored = _fetch_all(c, "big")
    (_pos, hdr), = list(iter_batches(stored))
    assert hdr.base_offset == 0 and hdr.records_count == n
    assert stored[16:] == batch[16:]   # the client's bytes from magic on (BaseOffset and epoch are the broker's)
    # the next append to the partition goes after it, and everything survives a restart
    assert c.request(produce_req("big", valid(3), acks=1), 9).responses[0].partition_responses[0].base_offset == n
    c.close()
    broker.stop()
    with Broker(data_dir=broker.data_dir) as again:
        c2 = _client(again)
        assert log_end(c2, "big") == n + 3
        assert _fetch_all(c2, "big")[16 : hdr.size] == batch[16:]
        c2.close()


def test_a_batch_inflating_to_1_gib_is_checked_in_bounded_memory_while_another_client_is_answered(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    batch = one_gib_record()
    assert len(batch) < 100_000
    gate = Gate()
    monkeypatch.setattr(validation, "validate", gate.wrap(
        validation.validate, lambda b, **kw: len(b) == len(batch) and kw.get("inline_budget") is None))
    c = _client(broker)
    create(c, "inflating", {"max.message.bytes": str(20 << 20)})   # inflate bound: 64 x 20 MiB
    small = SmallClient(broker, gate)
    small.start()
    tracemalloc.start()
    try:
        p = c.request(produce_req("inflating", batch, acks=1), 9).responses[0].partition_responses[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        small.stop.set()
        small.join(60)
    assert not small.errors, small.errors
    assert p.error_code == 0 and p.base_offset == 0, p
    assert small.while_gated >= small.want
    assert peak < 64 << 20, peak   # the buffering validator held the whole 1 GiB record
    assert log_end(c, "inflating") == 1
    assert _fetch_all(c, "inflating")[16:] == batch[16:]
    c.close()


def test_appends_to_a_partition_keep_request_order_while_one_is_off_the_loop(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    big = encode_batch([Rec(os.urandom(1000), timestamp=NOW) for _ in range(6000)], base_timestamp=NOW)
    assert len(big) >= produce_offload.STAGE_BYTES
    gate = Gate()
    monkeypatch.setattr(produce_offload, "stage", gate.wrap(produce_offload.stage))
    waiting: list[object] = []
    real_turn = turns_mod.Turns.turn

    def recording_turn(self: turns_mod.Turns, key: object) -> Any:
        waiting.append(key)
        return real_turn(self, key)

    monkeypatch.setattr(turns_mod.Turns, "turn", recording_turn)
    a, b = _client(broker), _client(broker)
    create(a, "ordered", BIG)
    a.send(produce_req("ordered", big, acks=1), 9)
    assert gate.reached.wait(60)   # A's batch is being written by a worker thread
    b.send(produce_req("ordered", valid(2), acks=1), 9)   # B, on another connection, comes after it
    b2 = _client(broker)
    while len(waiting) < 2:        # until B waits for its turn (the broker still answers others meanwhile)
        assert b2.request(ApiVersionsRequest(client_software_name="small", client_software_version="1"), 3).error_code == 0
    gate.open()
    pa = a.recv(0, 9)[1].responses[0].partition_responses[0]
    pb = b.recv(0, 9)[1].responses[0].partition_responses[0]
    assert (pa.error_code, pa.base_offset) == (0, 0)
    assert (pb.error_code, pb.base_offset) == (0, 6000)   # after A's 6000 records: request order kept
    assert log_end(a, "ordered") == 6002
    for cl in (a, b, b2):
        cl.close()


@pytest.mark.parametrize("codec", [1, 3, 4])
def test_large_compressed_batches_of_the_other_codecs_are_staged_and_stored(broker: Broker, codec: int) -> None:
    recs = [Rec(os.urandom(600) + bytes(400), key=b"k%d" % i, timestamp=NOW) for i in range(6000)]
    batch = encode_batch(recs, base_timestamp=NOW, compression=codec)
    if len(batch) < produce_offload.STAGE_BYTES:   # (gzip of this data is ~3.6 MB: pad with more records)
        batch = encode_batch(recs * 2, base_timestamp=NOW, compression=codec)
    c = _client(broker)
    create(c, "codec", BIG)
    p = c.request(produce_req("codec", batch, acks=-1), 9).responses[0].partition_responses[0]
    assert p.error_code == 0 and p.base_offset == 0
    assert _fetch_all(c, "codec")[16:] == batch[16:]
    bad = bytearray(batch)
    bad[len(bad) // 2] ^= 0xFF   # a flipped byte mid-payload: refused (CRC), nothing stored, no .tmp left
    p = c.request(produce_req("codec", bytes(bad), acks=1), 9).responses[0].partition_responses[0]
    assert p.error_code == 2
    assert log_end(c, "codec") == int.from_bytes(batch[57:61], "big")
    c.close()
    assert not list(broker.data_dir.glob("codec-0/*.tmp"))


def test_gzip_bomb_still_refused_without_inflating_it(broker: Broker) -> None:
    c = _client(broker)
    create(c, "bomb", {})
    size = 128 << 20   # twice the bound of 64 x max.message.bytes (1 MiB)
    body = b"\x00" + _zz(0) + _zz(0) + _zz(1) + b"k" + _zz(size)
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    mib = bytes(1 << 20)
    payload = z.compress(_zz(len(body) + size + 1) + body) + b"".join(z.compress(mib) for _ in range(size >> 20))
    batch = raw_batch(payload + z.flush(), count=1, attrs=1)
    p = c.request(produce_req("bomb", batch, acks=1), 9).responses[0].partition_responses[0]
    assert p.error_code == 10   # MESSAGE_TOO_LARGE: past 64 x max.message.bytes
    assert log_end(c, "bomb") == 0
    c.close()
