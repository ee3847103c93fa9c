"""Batch header parsing, record decoding and every codec against kafka-clients 3.9.1 batches."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite_storage import LogConfig, PartitionLog
from kafkalite_storage.batch import batch_records, compute_crc, iter_batches, parse_header, validate_batch
from kafkalite_storage.compression import compress, decompress
from kafkalite_storage.config import LogConfig as Cfg
from kafkalite_storage.errors import CorruptRecordError, InvalidRecordError
from kafkalite_storage.testing import Rec, encode_batch

GEN = Path("fixtures") / "generated-kafka-clients-3.9.1"
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def _manifest(reference: Path) -> list[dict[str, Any]]:
    return list(json.loads((reference / GEN / "manifest.json").read_text()))


def _hex(b: bytes | None) -> str | None:
    return None if b is None else b.hex()


def test_every_java_batch_decodes_like_kafka_clients(reference: Path) -> None:
    for entry in _manifest(reference):
        data = (reference / GEN / entry["file"]).read_bytes()
        h = validate_batch(data)
        assert (h.size, h.base_offset, h.last_offset, h.records_count) == (
            entry["size"], entry["baseOffset"], entry["lastOffset"], entry["count"])
        assert h.codec_name == entry["compression"]
        assert h.is_log_append_time == (entry["timestampType"] == "LogAppendTime")
        assert (h.max_timestamp, h.producer_id, h.producer_epoch, h.base_sequence) == (
            entry["maxTimestamp"], entry["producerId"], entry["producerEpoch"], entry["baseSequence"])
        assert (h.is_transactional, h.is_control, h.partition_leader_epoch, h.crc) == (
            entry["isTransactional"], entry["isControlBatch"], entry["partitionLeaderEpoch"], entry["crc"])
        recs = list(batch_records(data))
        assert len(recs) == len(entry["records"])
        for r, want in zip(recs, entry["records"], strict=True):
            assert (r.offset, r.timestamp, _hex(r.key), _hex(r.value)) == (
                want["offset"], want["timestamp"], want["keyHex"], want["valueHex"])
            hdrs = [[k, None if v is None else v.decode()] for k, v in r.headers]
            assert hdrs == [list(x) for x in want["headers"]]


def test_timestamp_lookups_decompress_only_when_needed(reference: Path, tmp_path: Path) -> None:
    raw = (reference / GEN / "segment-00000000000000000000.log").read_bytes()
    log = PartitionLog.create(str(tmp_path / "g-0"), "g", 0, uuid.uuid4(), LogConfig(), leader_epoch=None)
    for pos, h in iter_batches(raw):
        log.append(raw[pos : pos + h.size], leader_epoch=None, validate_producer=False)
    records = [(r["offset"], r["timestamp"]) for e in _manifest(reference) if e["inSegment"]
               for r in e["records"]]
    for _off, ts in records:
        want = next((o, t) for o, t in records if t >= ts)
        assert log.offset_for_timestamp(ts) == want
    best = max(t for _o, t in records)
    assert log.max_timestamp_offset() == next((o, t) for o, t in records if t == best)
    log.close()


@pytest.mark.parametrize("codec", list(CODECS))
@settings(max_examples=15, deadline=None)
@given(payload=st.binary(max_size=5000))
def test_codec_round_trip(codec: str, payload: bytes) -> None:
    assert decompress(CODECS[codec], compress(CODECS[codec], payload)) == payload


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_compressed_batches_we_encode_decode(codec: int) -> None:
    recs = [Rec(b"value-%d" % i, key=b"k%d" % i, timestamp=1000 + i, headers=[("h", b"v")]) for i in range(20)]
    data = encode_batch(recs, compression=codec, base_timestamp=1000)
    out = list(batch_records(data))
    assert [(r.offset, r.key, r.value, r.timestamp) for r in out] == [
        (i, b"k%d" % i, b"value-%d" % i, 1000 + i) for i in range(20)]
    with pytest.raises(CorruptRecordError):
        decompress(codec, b"\x00\x01garbage")


def test_header_errors_are_typed() -> None:
    b = bytearray(encode_batch([b"x"]))
    with pytest.raises(CorruptRecordError):
        parse_header(b[:30])
    b2 = bytearray(b)
    b2[16] = 1
    with pytest.raises(CorruptRecordError):
        validate_batch(b2)
    b3 = bytearray(b)
    b3[23:27] = (5).to_bytes(4, "big")  # lastOffsetDelta disagrees with the record count
    b3[17:21] = compute_crc(b3).to_bytes(4, "big")
    with pytest.raises(InvalidRecordError):
        validate_batch(b3)
    assert validate_batch(b3, exact_count=False).last_offset == 5  # a compacted batch is fine
    with pytest.raises(CorruptRecordError):
        validate_batch(b + b"\x00")


def test_log_config_from_props() -> None:
    c = Cfg.from_props({"segment.bytes": "1048576", "cleanup.policy": "compact,delete", "retention.ms": -1,
                        "message.timestamp.type": "LogAppendTime", "preallocate": "true", "x.y": "z"})
    assert c.segment_bytes == 1048576 and c.compact and c.retention_ms == -1 and c.log_append_time
    assert c.preallocate is True and c.extra == {"x.y": "z"}
    assert Cfg().segment_index_bytes == 10 * 1024 * 1024 and Cfg().max_message_bytes == 1048588
    props = c.to_props()
    assert props["segment.bytes"] == "1048576" and props["x.y"] == "z" and props["preallocate"] == "true"
    assert Cfg.from_props(props) == c
    layered = Cfg.from_props({"retention.bytes": "5"}, base=c)
    assert layered.segment_bytes == 1048576 and layered.retention_bytes == 5
    for bad in ({"segment.bytes": "abc"}, {"message.timestamp.type": "Nope"}, {"segment.bytes": "3"}):
        with pytest.raises(ValueError):
            Cfg.from_props(bad)


def test_segment_ms_rolls_on_record_time(tmp_path: Path) -> None:
    now = time.time_ns() // 1_000_000
    log = PartitionLog.create(str(tmp_path / "t-0"), "t", 0, uuid.uuid4(), LogConfig(segment_ms=1000))
    log.append(encode_batch([b"a"], base_timestamp=now), now_ms=now)
    log.append(encode_batch([b"b"], base_timestamp=now + 500), now_ms=now + 500)
    assert len(log.segments) == 1
    log.append(encode_batch([b"c"], base_timestamp=now + 1500), now_ms=now + 1500)
    assert [s.base_offset for s in log.segments] == [0, 2]
    log.close()


def test_flush_messages_advances_recovery_point(tmp_path: Path) -> None:
    log = PartitionLog.create(str(tmp_path / "t-0"), "t", 0, uuid.uuid4(), LogConfig(flush_messages=3))
    log.append(encode_batch([b"a", b"b"]))
    assert log.recovery_point == 0
    log.append(encode_batch([b"c"]))
    assert log.recovery_point == 3
    log.close()
