from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from kafkalite_storage import LogConfig, LogManager
from kafkalite_storage.batch import iter_batches, parse_header, validate_batch
from kafkalite_storage.errors import (
    CorruptRecordError,
    InvalidRecordError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
)
from kafkalite_storage.testing import Rec, encode_batch, encode_control_batch

T0 = 1_700_000_000_000


def _open(path: Path, **cfg: int) -> LogManager:
    return LogManager.open(str(path), LogConfig(**cfg), node_id=1)  # type: ignore[arg-type]


def test_append_assigns_offsets_and_reads_whole_batches(tmp_path: Path) -> None:
    lm = _open(tmp_path)
    log = lm.create_log("t", 0, uuid.uuid4(), None)
    infos = [log.append(encode_batch([b"a", b"b", b"c"], base_timestamp=T0 + i), now_ms=T0) for i in range(10)]
    assert [i.base_offset for i in infos] == list(range(0, 30, 3))
    assert infos[-1].last_offset == 29
    assert log.log_end_offset == 30 == log.high_watermark
    # reading an offset inside a batch returns that whole batch
    data = log.read_bytes(4, 1)
    hdr = parse_header(data)
    assert (hdr.base_offset, hdr.last_offset, hdr.partition_leader_epoch) == (3, 5, 0)
    validate_batch(data)
    assert log.read(30, 1000) == []
    with pytest.raises(OffsetOutOfRangeError):
        log.read(31, 1000)
    all_data = log.read_bytes(0, 10**6)
    assert [h.base_offset for _p, h in iter_batches(all_data)] == list(range(0, 30, 3))
    lm.close()


def test_read_respects_max_bytes_and_min_one(tmp_path: Path) -> None:
    lm = _open(tmp_path)
    log = lm.create_log("t", 0, uuid.uuid4(), None)
    b = encode_batch([b"x" * 100])
    for _ in range(5):
        log.append(b)
    size = len(b)
    assert sum(n for _fd, _p, n in log.read(0, size * 2 + 10)) == size * 2
    assert sum(n for _fd, _p, n in log.read(0, 10, min_one=True)) == size
    assert log.read(0, 10, min_one=False) == []
    lm.close()


def test_rejects_bad_batches_without_writing(tmp_path: Path) -> None:
    lm = _open(tmp_path, max_message_bytes=500)
    log = lm.create_log("t", 0, uuid.uuid4(), None)
    good = bytearray(encode_batch([b"v"]))
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        log.append(bytes(bad_crc))
    with pytest.raises(RecordTooLargeError):
        log.append(encode_batch([b"x" * 600]))
    with pytest.raises(InvalidRecordError):
        log.append(encode_control_batch(1, producer_id=1, producer_epoch=0))
    with pytest.raises(CorruptRecordError):
        log.append(bytes(good[:-3]))
    assert log.log_end_offset == 0 and log.active.size == 0
    lm.close()


def test_log_append_time_rewrites_timestamp_and_crc(tmp_path: Path) -> None:
    lm = _open(tmp_path)
    log = lm.create_log("t", 0, uuid.uuid4(), LogConfig(message_timestamp_type="LogAppendTime"))
    info = log.append(encode_batch([Rec(b"a", timestamp=T0), Rec(b"b", timestamp=T0 + 5)]), now_ms=T0 + 999)
    assert info.log_append_time_ms == T0 + 999
    hdr = validate_batch(log.read_bytes(0, 10**6))
    assert hdr.is_log_append_time and hdr.max_timestamp == T0 + 999
    assert log.offset_for_timestamp(T0 + 999) == (0, T0 + 999)
    lm.close()


def test_close_and_reopen_keeps_everything(tmp_path: Path) -> None:
    lm = _open(tmp_path, segment_bytes=2000)
    tid = uuid.uuid4()
    log = lm.create_log("t", 1, tid, None)
    for i in range(50):
        log.append(encode_batch([b"x" * 50], base_timestamp=T0 + i))
    n_segments = len(log.segments)
    assert n_segments > 3
    before = log.read_bytes(0, 10**7)
    lm.close()
    assert os.path.exists(tmp_path / ".kafka_cleanshutdown")
    lm = _open(tmp_path, segment_bytes=2000)
    assert not os.path.exists(tmp_path / ".kafka_cleanshutdown")
    log2 = lm.get_log("t", 1)
    assert log2 is not None and log2.topic_id == tid
    assert log2.log_end_offset == 50 and len(log2.segments) == n_segments
    assert log2.read_bytes(0, 10**7) == before
    assert log2.offset_for_timestamp(T0 + 17) == (17, T0 + 17)
    assert log2.offset_for_timestamp(T0 + 1000) is None
    assert log2.max_timestamp_offset() == (49, T0 + 49)
    log2.append(encode_batch([b"y"]))
    assert log2.log_end_offset == 51
    lm.close()


def test_delete_topic_removes_directory(tmp_path: Path) -> None:
    lm = _open(tmp_path)
    log = lm.create_log("gone", 0, uuid.uuid4(), None)
    log.append(encode_batch([b"x"]))
    (fd, pos, n), = log.read(0, 1000)  # a fetch response still being sent
    lm.delete_topic("gone")
    assert lm.get_log("gone", 0) is None
    assert not [n for n in os.listdir(tmp_path) if n.startswith("gone")]
    assert len(fd.pread(n, pos)) == n  # its descriptor stays valid until file.delete.delay.ms
    from kafkalite_storage.errors import LogClosedError

    with pytest.raises(LogClosedError):
        log.append(encode_batch([b"y"]))
    lm.close()


def test_retention_deletes_old_segments_but_keeps_fds_valid(tmp_path: Path) -> None:
    lm = _open(tmp_path, segment_bytes=1000, retention_bytes=3000, file_delete_delay_ms=60000)
    log = lm.create_log("r", 0, uuid.uuid4(), None)
    for _ in range(40):   # stamped now: retention.bytes decides, not the 7-day retention.ms
        log.append(encode_batch([b"x" * 100], base_timestamp=time.time_ns() // 1_000_000))
    regions = log.read(0, 10**6)  # a fetch in flight over the first segment
    first = log.segments[0]
    lm.enforce_retention()
    assert log.log_start_offset > 0 and log.segments[0].base_offset == log.log_start_offset
    assert log.size_bytes <= 3000 + 1000
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    # the deleted segment's file is renamed, its descriptor still serves the in-flight region
    fd, pos, n = regions[0]
    assert fd.pread(n, pos)[:8] == b"\x00" * 8
    assert os.path.exists(first.log_path) and first.log_path.endswith(".deleted")
    lm.checkpoint()  # a start offset equal to the first segment's base is implied (Kafka omits it)
    assert (tmp_path / "log-start-offset-checkpoint").read_text() == "0\n0\n"
    log.delete_records_before(log.log_start_offset + 1)
    lm.checkpoint()
    starts = (tmp_path / "log-start-offset-checkpoint").read_text().split("\n")
    assert starts[:3] == ["0", "1", f"r 0 {log.log_start_offset}"]
    lm.close()
    assert not os.path.exists(first.log_path)
    lm = _open(tmp_path, segment_bytes=1000)
    log2 = lm.get_log("r", 0)
    assert log2 is not None and log2.log_start_offset == log.log_start_offset
    lm.close()


def test_delete_records_moves_log_start(tmp_path: Path) -> None:
    lm = _open(tmp_path, segment_bytes=1000)
    log = lm.create_log("d", 0, uuid.uuid4(), None)
    for _ in range(30):
        log.append(encode_batch([b"x" * 100]))
    assert log.delete_records_before(17) == 17
    with pytest.raises(OffsetOutOfRangeError):
        log.read(16, 100)
    assert parse_header(log.read_bytes(17, 1)).base_offset == 17
    assert log.offset_for_timestamp(-2) == (17, -1)
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(31)
    lm.close()


def test_checkpoint_files_have_kafkas_format(tmp_path: Path) -> None:
    lm = _open(tmp_path)
    from kafkalite_storage.checkpoints import uuid_from_base64, uuid_to_base64

    tid = uuid_from_base64("mnjqLRqrSwSh1xz9beGobA")  # first-0's id in kafka-3.8-kraft-a
    assert uuid_to_base64(tid) == "mnjqLRqrSwSh1xz9beGobA"
    log = lm.create_log("orders", 3, tid, None)
    log.append(encode_batch([b"x"]))
    lm.close()
    assert (tmp_path / "orders-3" / "partition.metadata").read_text() == (
        "version: 0\ntopic_id: mnjqLRqrSwSh1xz9beGobA")
    assert (tmp_path / "orders-3" / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"
    assert (tmp_path / "recovery-point-offset-checkpoint").read_text() == "0\n1\norders 3 1\n"
    assert (tmp_path / "replication-offset-checkpoint").read_text() == "0\n1\norders 3 1\n"
    assert (tmp_path / "log-start-offset-checkpoint").read_text() == "0\n0\n"
    assert (tmp_path / ".kafka_cleanshutdown").read_text() == '{"version":0,"brokerEpoch":0}'
    meta = (tmp_path / "meta.properties").read_text().splitlines()
    assert meta[0] == "#" and meta[1].startswith("#")
    assert {"version=1", "node.id=1"} <= set(meta[2:])
    assert any(line.startswith("cluster.id=") for line in meta)
    # a second open with another node id is refused
    from kafkalite_storage.errors import StorageError

    with pytest.raises(StorageError):
        LogManager.open(str(tmp_path), LogConfig(), node_id=2)


def test_compacted_topic_rejects_unkeyed_records(tmp_path: Path) -> None:
    lm = _open(tmp_path)
    log = lm.create_log("c", 0, uuid.uuid4(), LogConfig(cleanup_policy="compact"))
    log.append(encode_batch([Rec(b"v", key=b"k")], compression=1))
    with pytest.raises(InvalidRecordError):
        log.append(encode_batch([Rec(b"v", key=b"k"), Rec(b"v2")], compression=3))
    assert log.log_end_offset == 1
    lm.close()


def test_timestamp_bounds(tmp_path: Path) -> None:
    from kafkalite_storage.errors import InvalidTimestampError

    lm = _open(tmp_path)
    log = lm.create_log("ts", 0, uuid.uuid4(), LogConfig(message_timestamp_before_max_ms=1000,
                                                         message_timestamp_after_max_ms=1000))
    log.append(encode_batch([b"ok"], base_timestamp=T0), now_ms=T0 + 500)
    with pytest.raises(InvalidTimestampError):
        log.append(encode_batch([b"old"], base_timestamp=T0), now_ms=T0 + 5000)
    with pytest.raises(InvalidTimestampError):
        log.append(encode_batch([b"future"], base_timestamp=T0 + 5000), now_ms=T0)
    assert log.log_end_offset == 1
    lm.close()


def test_tail_reads_find_their_batch_with_one_header(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read within the latest appends starts at the right batch after one header (no scan from the
    last index entry), a read whose rest of the segment fits returns it without scanning, and truncation
    leaves no stale positions behind."""
    lm = _open(tmp_path)
    log = lm.create_log("t", 0, uuid.uuid4(), None)
    for i in range(600):
        log.append(encode_batch([b"a", b"b", b"c"], base_timestamp=T0 + i), now_ms=T0)
    import kafkalite_storage.segment

    headers = [0]
    real_iter = kafkalite_storage.segment.iter_file_batches

    def counting(*a: Any, **kw: Any) -> Any:
        for item in real_iter(*a, **kw):
            headers[0] += 1
            yield item

    monkeypatch.setattr(kafkalite_storage.segment, "iter_file_batches", counting)

    def check(offset: int, max_bytes: int = 10**6) -> bytes:
        data = log.read_bytes(offset, max_bytes)
        first = parse_header(data)
        assert first.base_offset <= offset <= first.last_offset
        return data

    end = log.log_end_offset
    for offset in range(end - 3 * 200, end):
        headers[0] = 0
        data = check(offset)
        assert headers[0] == 1, f"offset {offset}: {headers[0]} batch headers parsed"
        assert [h.last_offset for _p, h in iter_batches(data)][-1] == end - 1   # up to the end of the log
    # a bounded read still stops at whole batches within max_bytes
    one = len(encode_batch([b"a", b"b", b"c"], base_timestamp=T0))
    assert len(check(end - 30, one * 2 + 5)) == one * 2
    # truncation: positions recorded before it must not be used for what is appended after it
    log.truncate_to(end - 60)
    for i in range(5):
        log.append(encode_batch([b"x" * (10 + i)], base_timestamp=T0), now_ms=T0)
    for offset in range(end - 90, log.log_end_offset):
        check(offset)
    assert [h.base_offset for _p, h in iter_batches(log.read_bytes(end - 60, 10**6))] == list(range(end - 60,
                                                                                                 end - 55))
    lm.close()
