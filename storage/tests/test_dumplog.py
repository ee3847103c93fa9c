"""Golden tests for ``kafkalite_storage.dumplog`` on segments written by real Kafka brokers.

There is no kafka-dump-log.sh here, so every expected line is built from kafka-dump-log's documented format
(FORMATS.md, DumpLogSegments.scala 3.9) with field values computed independently in this module by raw
``struct`` parsing of the files (nothing from storage/ is used to compute expectations), plus a few lines
written out literally after checking them by hand against the bytes.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import crc32c
import pytest

from kafkalite_storage.dumplog import dump_files

FIXTURES = ["kafka-3.8-kraft-a", "kafka-3.6.1-kraft-b"]


def _dump(paths: list[Path | str], **kw: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    kw.setdefault("errors", "java")   # an error that stops the tool as the JVM prints Kafka's exception
    rc = dump_files([str(p) for p in paths], out=out, err=err, **kw)  # type: ignore[arg-type]
    return rc, out.getvalue(), err.getvalue()


# ---- an independent raw reader ---------------------------------------------------------------------------


def _zigzag(buf: bytes, pos: int) -> tuple[int, int]:
    shift = raw = 0
    while True:
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos


def _nullable(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    n, pos = _zigzag(buf, pos)
    if n < 0:
        return None, pos
    return buf[pos : pos + n], pos + n


@dataclass
class RawBatch:
    position: int
    base: int
    size: int
    ple: int
    magic: int
    crc: int
    attrs: int
    lod: int
    base_ts: int
    max_ts: int
    pid: int
    epoch: int
    base_seq: int
    count: int
    body: bytes


def raw_batches(data: bytes) -> Iterator[RawBatch]:
    pos = 0
    while pos + 61 <= len(data):
        (base, length, ple, magic, crc, attrs, lod, base_ts, max_ts, pid, epoch, seq,
         count) = struct.unpack_from(">qiibIhiqqqhii", data, pos)
        if pos + 12 + length > len(data):
            return
        yield RawBatch(pos, base, 12 + length, ple, magic, crc, attrs, lod, base_ts, max_ts, pid, epoch, seq,
                       count, data[pos : pos + 12 + length])
        pos += 12 + length


def raw_records(b: RawBatch) -> Iterator[tuple[int, int, bytes | None, bytes | None, list[str], int]]:
    assert b.attrs & 7 == 0, "fixture segments are uncompressed"
    pos = 61
    for _ in range(b.count):
        _size, pos = _zigzag(b.body, pos)
        pos += 1
        ts_delta, pos = _zigzag(b.body, pos)
        off_delta, pos = _zigzag(b.body, pos)
        key, pos = _nullable(b.body, pos)
        value, pos = _nullable(b.body, pos)
        nh, pos = _zigzag(b.body, pos)
        hkeys = []
        for _ in range(nh):
            hk, pos = _nullable(b.body, pos)
            _hv, pos = _nullable(b.body, pos)
            hkeys.append((hk or b"").decode())
        ts = b.max_ts if b.attrs & 8 else b.base_ts + ts_delta
        seq = -1 if b.base_seq < 0 else b.base_seq + off_delta
        yield b.base + off_delta, ts, key, value, hkeys, seq


def expected_log_lines(path: Path, print_data: bool) -> list[str]:
    data = path.read_bytes()
    lines = [f"Dumping {path}", f"Log starting offset: {int(path.name[:20])}"]
    valid = 0
    for b in raw_batches(data):
        label = "LogAppendTime" if b.attrs & 8 else "CreateTime"
        horizon = f"OptionalLong[{b.base_ts}]" if b.attrs & 0x40 else "OptionalLong.empty"
        last_seq = -1 if b.base_seq == -1 else b.base_seq + b.lod
        ok = "true" if crc32c.crc32c(b.body[21:]) == b.crc else "false"
        lines.append(
            f"baseOffset: {b.base} lastOffset: {b.base + b.lod} count: {b.count} baseSequence: {b.base_seq} "
            f"lastSequence: {last_seq} producerId: {b.pid} producerEpoch: {b.epoch} partitionLeaderEpoch: {b.ple} "
            f"isTransactional: {str(bool(b.attrs & 0x10)).lower()} isControl: {str(bool(b.attrs & 0x20)).lower()} "
            f"deleteHorizonMs: {horizon} position: {b.position} {label}: {b.max_ts} size: {b.size} magic: 2 "
            f"compresscodec: none crc: {b.crc} isvalid: {ok}")
        if print_data:
            for off, ts, key, value, hkeys, seq in raw_records(b):
                line = (f"| offset: {off} {label}: {ts} keySize: {-1 if key is None else len(key)} "
                        f"valueSize: {-1 if value is None else len(value)} sequence: {seq} "
                        f"headerKeys: [{','.join(hkeys)}]")
                if b.attrs & 0x20:
                    assert key is not None and value is not None
                    ctype = struct.unpack_from(">h", key, 2)[0]
                    if ctype == 2:
                        line += " controlType: LEADER_CHANGE(2)"
                    elif ctype in (0, 1):
                        line += (f" endTxnMarker: {['ABORT', 'COMMIT'][ctype]} coordinatorEpoch: "
                                 f"{struct.unpack_from('>i', value, 2)[0]}")
                    else:
                        raise AssertionError(f"unexpected control type {ctype} in fixture")
                else:
                    if key is not None:
                        line += f" key: {key.decode('utf-8', 'replace')}"
                    if value is not None:
                        line += f" payload: {value.decode('utf-8', 'replace')}"
                lines.append(line)
        valid += b.size
    if len(data) > valid:
        lines.append(f"Found {len(data) - valid} invalid bytes at the end of {path.name}")
    return lines


def _segment_logs(reference: Path, fixture: str) -> list[Path]:
    return sorted((reference / "fixtures" / "segments" / fixture).glob("*/*.log"))


# ---- golden: .log --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fixture", FIXTURES)
@pytest.mark.parametrize("print_data", [False, True])
def test_log_dump_matches_format_line_for_line(reference: Path, fixture: str, print_data: bool) -> None:
    logs = _segment_logs(reference, fixture)
    assert len(logs) > 50
    rc, out, err = _dump(logs, print_data_log=print_data)
    assert (rc, err) == (0, "")
    expected = []
    for p in logs:
        expected += expected_log_lines(p, print_data)
    # payloads may hold raw newlines (Kafka prints them as they are), so compare the text split the same way
    got = out.split("\n")
    want = "".join(line + "\n" for line in expected).split("\n")
    assert len(got) == len(want)
    for n, (g, e) in enumerate(zip(got, want, strict=True)):
        assert g == e, f"line {n}"


def test_deep_iteration_without_data_prints_record_metadata_only(reference: Path) -> None:
    log = reference / "fixtures/segments/kafka-3.8-kraft-a/sensor-data-topic-0/00000000000000000000.log"
    _, deep, _ = _dump([log], deep_iteration=True)
    _, data, _ = _dump([log], print_data_log=True)
    assert [ln.split(" payload:")[0] for ln in data.split("\n")] == deep.split("\n")
    assert "| offset: 0 CreateTime: 1728489850532 keySize: -1 valueSize: 4 sequence: 0 headerKeys: []" in deep
    _, shallow, _ = _dump([log])
    assert "| offset" not in shallow


def test_hand_checked_lines(reference: Path) -> None:
    seg = reference / "fixtures/segments"
    log = seg / "kafka-3.8-kraft-a/sensor-data-topic-0/00000000000000000000.log"
    _, out, _ = _dump([log], print_data_log=True)
    lines = out.split("\n")
    assert lines[:4] == [
        f"Dumping {log}",
        "Log starting offset: 0",
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: 0 lastSequence: 0 producerId: 1001 producerEpoch: 0 "
        "partitionLeaderEpoch: 4 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "
        "position: 0 CreateTime: 1728489850532 size: 72 magic: 2 compresscodec: none crc: 2507576537 isvalid: true",
        "| offset: 0 CreateTime: 1728489850532 keySize: -1 valueSize: 4 sequence: 0 headerKeys: [] payload: test",
    ]
    assert ("| offset: 10 CreateTime: 1728490055335 keySize: -1 valueSize: 0 sequence: 6 headerKeys: [] payload: "
            in lines)
    # __consumer_offsets: binary keys go through the StringDecoder (control chars printed raw)
    co = seg / "kafka-3.6.1-kraft-b/__consumer_offsets-0/00000000000000000000.log"
    _, out, _ = _dump([co], print_data_log=True)
    rec = out.split("\n")[3]
    assert rec.startswith("| offset: 0 CreateTime: 1764571526611 keySize: 23 valueSize: 359 sequence: -1 "
                          "headerKeys: [] key: \x00\x02\x00\x13stock-service-group payload: \x00\x03\x00\x08consumer")
    # KRaft metadata log: LEADER_CHANGE control record, and bootstrap.checkpoint's SnapshotHeader/Footer
    meta = seg / "kafka-3.8-kraft-a/__cluster_metadata-0/00000000000000000000.log"
    _, out, _ = _dump([meta], deep_iteration=True)
    assert ("| offset: 2223 CreateTime: 1728489990957 keySize: 4 valueSize: 19 sequence: -1 headerKeys: [] "
            "controlType: LEADER_CHANGE(2)") in out.split("\n")
    boot = seg / "kafka-3.8-kraft-a/bootstrap.checkpoint"
    rc, out, _ = _dump([boot], deep_iteration=True)
    lines = out.split("\n")
    assert rc == 0 and lines[1] == "KRaft bootstrap snapshot"
    assert lines[3].endswith(" SnapshotHeader {\"version\":0,\"lastContainedLogTimestamp\":0}")
    assert lines[-2] == ("| offset: 2 CreateTime: 1728488898357 keySize: 4 valueSize: 3 sequence: -1 "
                         "headerKeys: [] SnapshotFooter {\"version\":0}")


# ---- golden: indexes, snapshots -----------------------------------------------------------------------------------


@pytest.mark.parametrize("fixture", FIXTURES)
def test_index_and_timeindex_dumps(reference: Path, fixture: str) -> None:
    root = reference / "fixtures" / "segments" / fixture
    files = sorted(root.glob("*/*.index")) + sorted(root.glob("*/*.timeindex"))
    rc, out, err = _dump(files)
    assert (rc, err) == (0, ""), err
    expected = []
    for f in files:
        expected.append(f"Dumping {f}")
        base = int(f.name[:20])
        data = f.read_bytes()
        if f.suffix == ".index":
            entries = [struct.unpack_from(">ii", data, i) for i in range(0, len(data), 8)]
            if not entries:
                expected.append(f"{f} is empty.")
            expected += [f"offset: {base + rel} position: {pos}" for rel, pos in entries]
        else:
            expected += [f"timestamp: {ts} offset: {base + rel}"
                         for ts, rel in (struct.unpack_from(">qi", data, i) for i in range(0, len(data), 12))]
    assert out.split("\n")[:-1] == expected


def test_metadata_index_entries_hand_checked(reference: Path) -> None:
    d = reference / "fixtures/segments/kafka-3.8-kraft-a/__cluster_metadata-0"
    _, out, _ = _dump([d / "00000000000000000000.index"])
    lines = out.split("\n")
    assert len(lines) == 1 + 113 + 1
    assert lines[1].startswith("offset: ") and " position: " in lines[1]
    _, sanity, _ = _dump([d / "00000000000000000000.index", d / "00000000000000000000.timeindex"],
                         index_sanity_check=True)
    assert sanity == (f"Dumping {d}/00000000000000000000.index\n{d}/00000000000000000000.index passed sanity check.\n"
                      f"Dumping {d}/00000000000000000000.timeindex\n"
                      f"{d}/00000000000000000000.timeindex passed sanity check.\n")
    _, verify, err = _dump([d / "00000000000000000000.index", d / "00000000000000000000.timeindex"],
                           verify_index_only=True)
    assert verify == f"Dumping {d}/00000000000000000000.index\nDumping {d}/00000000000000000000.timeindex\n"
    assert err == ""


@pytest.mark.parametrize("fixture", FIXTURES)
def test_producer_snapshot_dumps(reference: Path, fixture: str) -> None:
    files = sorted((reference / "fixtures" / "segments" / fixture).glob("*/*.snapshot"))
    assert files
    rc, out, err = _dump(files)
    assert (rc, err) == (0, "")
    expected = []
    for f in files:
        expected.append(f"Dumping {f}")
        data = f.read_bytes()
        assert struct.unpack_from(">h", data, 0)[0] == 1
        (count,) = struct.unpack_from(">i", data, 6)
        for n in range(count):
            pid, epoch, seq, last_off, delta, ts, coord, txn = struct.unpack_from(">qhiqiqiq", data, 10 + 46 * n)
            txn_text = "OptionalLong.empty" if txn < 0 else f"OptionalLong[{txn}]"
            line = (f"producerId: {pid} producerEpoch: {epoch} coordinatorEpoch: {coord} "
                    f"currentTxnFirstOffset: {txn_text} lastTimestamp: {ts} ")
            if last_off >= 0:
                line += (f"firstSequence: {seq - delta} lastSequence: {seq} lastOffset: {last_off} "
                         f"offsetDelta: {delta} timestamp: {ts}")
            expected.append(line)
    assert out.split("\n")[:-1] == expected


def test_snapshot_hand_checked(reference: Path) -> None:
    f = reference / "fixtures/segments/kafka-3.8-kraft-a/sensor-data-topic-0/00000000000000000035.snapshot"
    _, out, _ = _dump([f])
    assert out.split("\n")[1:-1] == [
        "producerId: 2000 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 1728492413708 firstSequence: 29 lastSequence: 29 lastOffset: 33 offsetDelta: 0 "
        "timestamp: 1728492413708",
        "producerId: 3000 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 1728493031796 firstSequence: 0 lastSequence: 0 lastOffset: 34 offsetDelta: 0 "
        "timestamp: 1728493031796",
        "producerId: 1001 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 1728489866968 firstSequence: 3 lastSequence: 3 lastOffset: 3 offsetDelta: 0 "
        "timestamp: 1728489866968",
    ]
    empty = reference / "fixtures/segments/kafka-3.8-kraft-a/__consumer_offsets-0/00000000000000000034.snapshot"
    assert _dump([empty])[1] == f"Dumping {empty}\n"


def test_generated_segment_all_codecs_and_txn_markers(reference: Path, tmp_path: Path) -> None:
    """kafka-clients 3.9.1 batches: gzip/snappy/lz4/zstd deep iteration, headers, COMMIT/ABORT, LogAppendTime."""
    gen = reference / "fixtures/generated-kafka-clients-3.9.1"
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes((gen / "segment-00000000000000000000.log").read_bytes())
    import json

    manifest = json.loads((gen / "manifest.json").read_text())
    rc, out, err = _dump([log], print_data_log=True)
    assert (rc, err) == (0, "")
    lines = out.split("\n")
    batch_lines = [ln for ln in lines if ln.startswith("baseOffset:")]
    record_lines = [ln for ln in lines if ln.startswith("| offset:")]
    batches = [b for b in manifest if b["inSegment"]]
    assert len(batch_lines) == len(batches) == 12
    manifest_records = []
    for line, b in zip(batch_lines, batches, strict=True):
        assert line.startswith(f"baseOffset: {b['baseOffset']} lastOffset: {b['lastOffset']} count: {b['count']} "
                               f"baseSequence: {b['baseSequence']} ")
        assert (f" producerId: {b['producerId']} producerEpoch: {b['producerEpoch']} "
                f"partitionLeaderEpoch: {b['partitionLeaderEpoch']} "
                f"isTransactional: {str(b['isTransactional']).lower()} "
                f"isControl: {str(b['isControlBatch']).lower()} deleteHorizonMs: OptionalLong.empty ") in line
        assert line.endswith(f" {b['timestampType']}: {b['maxTimestamp']} size: {b['size']} magic: 2 "
                             f"compresscodec: {b['compression']} crc: {b['crc']} isvalid: true")
        for r in b["records"]:
            manifest_records.append((b, r))
    assert len(manifest_records) == len(record_lines)
    for line, (b, r) in zip(record_lines, manifest_records, strict=True):
        assert line.startswith(f"| offset: {r['offset']} {b['timestampType']}: {r['timestamp']} ")
        if not b["isControlBatch"]:
            if r.get("keyHex") is not None:
                assert f" key: {bytes.fromhex(r['keyHex']).decode()}" in line
            if r.get("valueHex") is not None:
                assert line.endswith(f" payload: {bytes.fromhex(r['valueHex']).decode()}")
    assert [ln.split(" compresscodec: ")[1].split(" ")[0] for ln in batch_lines] == \
        ["none", "none", "gzip", "snappy", "lz4", "zstd", "none", "none", "none", "lz4", "none", "none"]
    assert len(record_lines) == 59
    assert "| offset: 51 CreateTime: 1700000000100 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] " \
           "endTxnMarker: COMMIT coordinatorEpoch: 7" in lines
    assert "| offset: 55 CreateTime: 1700000000200 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] " \
           "endTxnMarker: ABORT coordinatorEpoch: 7" in lines
    assert ("| offset: 3 CreateTime: 1700000000000 keySize: 3 valueSize: 5 sequence: -1 "
            "headerKeys: [h1,h2,utf8-ключ] key: key payload: value") in lines
    assert "| offset: 56 LogAppendTime: 1700000000999 keySize: 2 valueSize: 7 sequence: -1 headerKeys: [] " \
           "key: k0 payload: value-0" in lines
    assert batch_lines[-1].startswith("baseOffset: 56 lastOffset: 58 count: 3 baseSequence: -1 lastSequence: -1 "
                                      "producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 5 ")
    assert " LogAppendTime: 1700000000999 size: 109 magic: 2 compresscodec: none crc: 3837159491 isvalid: true" \
        in batch_lines[-1]
