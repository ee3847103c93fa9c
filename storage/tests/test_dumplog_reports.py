"""kafka-dump-log's checks and error reports, on corrupted copies of real segments and on logs built here.

Wording and order follow DumpLogSegments.scala (3.9): index mismatches and offset gaps are collected per file,
newest first, and printed to stderr after all files; time-index problems are printed oldest first; files are
reported in Scala 2.13 ``mutable.HashMap`` order.
"""

from __future__ import annotations

import io
import os
import shutil
import struct
from pathlib import Path

import pytest

from kafkalite_storage.dumplog import ScalaHashMap, dump_files, java_utf8_decode, main
from kafkalite_storage.testing import Rec, encode_batch, encode_control_batch
from kafkalite_storage.tests.test_dumplog import raw_batches

SEG = "00000000000000000000"


def _dump(paths: list[Path], **kw: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    kw.setdefault("errors", "java")   # an error that stops the tool as the JVM prints Kafka's exception
    rc = dump_files([str(p) for p in paths], out=out, err=err, **kw)  # type: ignore[arg-type]
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture
def metadata_copy(reference: Path, tmp_path: Path) -> Path:
    """A writable copy of a KRaft metadata segment with a 113-entry .index and 115-entry .timeindex."""
    src = reference / "fixtures/segments/kafka-3.8-kraft-a/__cluster_metadata-0"
    dst = tmp_path / "__cluster_metadata-0"
    dst.mkdir()
    for suffix in (".log", ".index", ".timeindex"):
        shutil.copyfile(src / f"{SEG}{suffix}", dst / f"{SEG}{suffix}")
        os.chmod(dst / f"{SEG}{suffix}", 0o644)
    return dst


def _patch(path: Path, pos: int, data: bytes) -> None:
    buf = bytearray(path.read_bytes())
    buf[pos : pos + len(data)] = data
    path.write_bytes(bytes(buf))


def _index_entries(path: Path) -> list[tuple[int, int]]:
    data = path.read_bytes()
    return [struct.unpack_from(">ii", data, i) for i in range(0, len(data), 8)]


def test_untouched_indexes_verify_cleanly(metadata_copy: Path) -> None:
    rc, out, err = _dump([metadata_copy / f"{SEG}.index", metadata_copy / f"{SEG}.timeindex"])
    assert (rc, err) == (0, "")
    assert len(out.split("\n")) == 2 + 113 + 115 + 1


def test_index_mismatches_are_reported_newest_first(metadata_copy: Path) -> None:
    index = metadata_copy / f"{SEG}.index"
    entries = _index_entries(index)
    for n in (3, 7):
        rel, _pos = entries[n]
        _patch(index, n * 8, struct.pack(">i", rel - 1))
    rc, out, err = _dump([index])
    assert rc == 0
    assert f"offset: {entries[3][0] - 1} position: {entries[3][1]}" in out.split("\n")
    assert err == (f"Mismatches in :{index}\n"
                   f"  Index offset: {entries[7][0] - 1}, log offset: {entries[7][0]}\n"
                   f"  Index offset: {entries[3][0] - 1}, log offset: {entries[3][0]}\n")
    # --verify-index-only: the same report, no entry lines
    rc, out, err2 = _dump([index], verify_index_only=True)
    assert out == f"Dumping {index}\n" and err2 == err


def test_index_dump_stops_at_a_zero_entry(metadata_copy: Path) -> None:
    index = metadata_copy / f"{SEG}.index"
    _patch(index, 5 * 8, b"\0" * 8)
    rc, out, err = _dump([index])
    assert (rc, err) == (0, "")
    assert len(out.split("\n")) == 1 + 5 + 1


def test_empty_index(tmp_path: Path) -> None:
    (tmp_path / f"{SEG}.log").write_bytes(encode_batch([b"a"]))
    (tmp_path / f"{SEG}.index").write_bytes(b"")
    _rc, out, _ = _dump([tmp_path / f"{SEG}.index"])
    assert out == f"Dumping {tmp_path}/{SEG}.index\n{tmp_path}/{SEG}.index is empty.\n"
    # an empty index is "empty" even with --index-sanity-check (that check comes after the emptiness test)
    assert _dump([tmp_path / f"{SEG}.index"], index_sanity_check=True)[1] == out


def _expected_lookup(index: Path, log: Path, offset: int) -> int:
    """Independent model of the time-index check: floor entry in .index, then the first batch reaching offset."""
    position = 0
    for rel, pos in _index_entries(index):
        if rel <= offset:
            position = pos
    for b in raw_batches(log.read_bytes()):
        if b.position >= position and b.base + b.lod >= offset:
            return b.base + b.lod
    return -1


def test_time_index_reports(metadata_copy: Path) -> None:
    tindex = metadata_copy / f"{SEG}.timeindex"
    data = tindex.read_bytes()
    entries = [struct.unpack_from(">qi", data, i) for i in range(0, len(data), 12)]
    multi = [b for b in raw_batches((metadata_copy / f"{SEG}.log").read_bytes()) if b.lod > 0]
    assert multi, "fixture needs a batch with more than one record"
    ts2, _ = entries[2]
    _patch(tindex, 2 * 12, struct.pack(">q", ts2 + 1))  # timestamp mismatch
    ts3, _ = entries[3]
    _patch(tindex, 4 * 12, struct.pack(">q", ts3))  # entry 4 repeats entry 3's timestamp: mismatch + order
    _patch(tindex, 6 * 12 + 8, struct.pack(">i", multi[0].base))  # not the last offset of its batch
    _patch(tindex, 8 * 12 + 8, struct.pack(">i", 10**9))  # beyond the log
    rc, out, err = _dump([tindex])
    assert rc == 0
    lines = out.split("\n")
    assert lines[3] == f"timestamp: {ts2 + 1} offset: {entries[2][1]}"
    found = _expected_lookup(metadata_copy / f"{SEG}.index", metadata_copy / f"{SEG}.log", multi[0].base)
    assert found == multi[0].base + multi[0].lod
    assert err == (f"Found timestamp mismatch in :{tindex}\n"
                   f"  Index timestamp: {ts2 + 1}, log timestamp: {ts2}\n"
                   f"  Index timestamp: {ts3}, log timestamp: {entries[4][0]}\n"
                   f"Found out of order timestamp in :{tindex}\n"
                   f"  Index timestamp: {ts3}, Previously indexed timestamp: {ts3}\n"
                   "The following indexed offsets are not found in the log.\n"
                   f"Indexed offset: {multi[0].base}, found log offset: {found}\n"
                   f"Indexed offset: {10**9}, found log offset: -1\n")


def test_sanity_check_failures_end_the_tool(metadata_copy: Path) -> None:
    index = metadata_copy / f"{SEG}.index"
    index.write_bytes(index.read_bytes() + b"\1\2\3")
    rc, out, err = _dump([index], index_sanity_check=True)
    assert rc == 1 and out == f"Dumping {index}\n"
    assert err == ('Exception in thread "main" org.apache.kafka.storage.internals.log.CorruptIndexException: '
                   f"Index file {index} is corrupt, found {113 * 8 + 3} bytes which is neither positive nor a "
                   "multiple of 8\n")
    tindex = metadata_copy / f"{SEG}.timeindex"
    first_ts = struct.unpack_from(">q", tindex.read_bytes(), 0)[0]
    _patch(tindex, 114 * 12, struct.pack(">q", first_ts - 1))
    rc, _, err = _dump([tindex], index_sanity_check=True)
    assert rc == 1
    assert err == ('Exception in thread "main" org.apache.kafka.storage.internals.log.CorruptIndexException: '
                   f"Corrupt time index found, time index file ({tindex}) has non-zero size but the last "
                   f"timestamp is {first_ts - 1} which is less than the first timestamp {first_ts}\n")


def _log_with(tmp_path: Path, *batches: bytes) -> Path:
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(b"".join(batches))
    return log


def test_trailing_bytes_and_truncated_last_batch(tmp_path: Path) -> None:
    a, b = encode_batch([b"x", b"y"]), encode_batch([b"z"], base_offset=2)
    log = _log_with(tmp_path, a, b, b"0123456789")
    rc, out, _ = _dump([log])
    assert rc == 0 and out.endswith(f"Found 10 invalid bytes at the end of {SEG}.log\n")
    log = _log_with(tmp_path, a, b[:-5])
    out = _dump([log])[1]
    assert out.count("baseOffset:") == 1
    assert out.endswith(f"Found {len(b) - 5} invalid bytes at the end of {SEG}.log\n")


def test_zero_padding_is_a_corrupt_record_exception(tmp_path: Path) -> None:
    log = _log_with(tmp_path, encode_batch([b"x"]), b"\0" * 40)
    rc, out, err = _dump([log])
    assert rc == 1 and out.count("baseOffset:") == 1
    assert err == ('Exception in thread "main" org.apache.kafka.common.errors.CorruptRecordException: Found record '
                   f"size 0 smaller than minimum record overhead (14) in file {log}.\n")


def test_non_consecutive_offsets(tmp_path: Path) -> None:
    log = _log_with(tmp_path, encode_batch([b"a", b"b", b"c"]), encode_batch([b"d", b"e"], base_offset=10),
                    encode_batch([b"f"], base_offset=20))
    rc, _out, err = _dump([log], deep_iteration=True)
    assert rc == 0
    assert err == f"Non-consecutive offsets in {log}\n  11 is followed by 20\n  2 is followed by 10\n"
    assert _dump([log])[2] == ""  # shallow iteration does not look at record offsets


def test_corrupt_crc_and_delete_horizon(tmp_path: Path) -> None:
    good = bytearray(encode_batch([Rec(b"v", key=b"k")], base_timestamp=1_700_000_000_000))
    stored_crc = struct.unpack_from(">I", good, 17)[0]
    bad = bytearray(good)
    bad[-3] ^= 0xFF
    horizon = bytearray(encode_batch([b"w"], base_offset=1, base_timestamp=1_700_000_000_123))
    attrs = struct.unpack_from(">h", horizon, 21)[0] | 0x40
    struct.pack_into(">h", horizon, 21, attrs)
    import crc32c

    struct.pack_into(">I", horizon, 17, crc32c.crc32c(bytes(horizon[21:])))
    log = _log_with(tmp_path, bytes(bad), bytes(horizon))
    out = _dump([log])[1].split("\n")
    assert out[2].endswith(f" crc: {stored_crc} isvalid: false")
    assert " deleteHorizonMs: OptionalLong.empty " in out[2]
    assert " deleteHorizonMs: OptionalLong[1700000000123] " in out[3] and out[3].endswith("isvalid: true")


def test_skip_record_metadata_quirks(tmp_path: Path) -> None:
    log = _log_with(tmp_path, encode_batch([Rec(b"v1", key=b"k1"), Rec(b"v2"), Rec(None, key=b"k3")]),
                    encode_control_batch(1, producer_id=5, producer_epoch=0, coordinator_epoch=3, base_offset=3))
    out = _dump([log], print_data_log=True, skip_record_metadata=True)[1].split("\n")
    # Kafka's prefix "| " is only written before metadata or a key; a keyless payload starts with a space
    assert out[3:6] == ["| key: k1 payload: v1", " payload: v2", "| key: k3"]
    assert out[7] == ""  # control records print nothing without metadata
    out = _dump([log], deep_iteration=True, skip_record_metadata=True)[1].split("\n")
    assert out[3:6] == ["", "", ""]


def test_txnindex_dump(tmp_path: Path) -> None:
    path = tmp_path / f"{SEG}.txnindex"
    path.write_bytes(struct.pack(">hqqqq", 0, 2000, 52, 55, 52) + struct.pack(">hqqqq", 0, 7, 60, 61, 70) + b"\0" * 5)
    rc, out, err = _dump([path])
    assert (rc, err) == (0, "")
    assert out == (f"Dumping {path}\n"
                   "version: 0 producerId: 2000 firstOffset: 52 lastOffset: 55 lastStableOffset: 52\n"
                   "version: 0 producerId: 7 firstOffset: 60 lastOffset: 61 lastStableOffset: 70\n")
    path.write_bytes(struct.pack(">hqqqq", 1, 1, 1, 1, 1))
    rc, _, err = _dump([path])
    assert rc == 1 and err == ('Exception in thread "main" org.apache.kafka.common.KafkaException: Unexpected '
                               f"aborted transaction version 1 in transaction index {path}, current version is 0\n")
    missing = tmp_path / f"{1:020d}.txnindex"
    assert _dump([missing]) == (0, f"Dumping {missing}\n", "")


def test_snapshot_corruption_messages(reference: Path, tmp_path: Path) -> None:
    src = reference / "fixtures/segments/kafka-3.8-kraft-a/sensor-data-topic-0/00000000000000000035.snapshot"
    data = bytearray(src.read_bytes())
    snap = tmp_path / src.name
    stored = struct.unpack_from(">I", data, 2)[0]
    data[20] ^= 1
    snap.write_bytes(bytes(data))
    import crc32c

    rc, out, err = _dump([snap])
    assert (rc, out) == (0, f"Dumping {snap}\n")
    assert err == (f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored}. Computed crc: "
                   f"{crc32c.crc32c(bytes(data[6:]))}\n")
    snap.write_bytes(struct.pack(">hIi", 2, 0, 0))
    assert _dump([snap])[2] == "Snapshot contained an unknown file version 2\n"
    snap.write_bytes(src.read_bytes()[:10 + 46 + 9])
    assert _dump([snap])[2] == ("Snapshot failed schema validation: Error reading field 'producer_entries': "
                                "Error reading field 'epoch': java.nio.BufferUnderflowException\n")
    snap.write_bytes(src.read_bytes()[:30])  # 20 entry bytes: producer_id, epoch, last_sequence fit
    assert _dump([snap])[2] == ("Snapshot failed schema validation: Error reading field 'producer_entries': "
                                "Error reading field 'last_offset': java.nio.BufferUnderflowException\n")
    snap.write_bytes(src.read_bytes()[:12])  # ArrayOf compares the count with the bytes left, not count * 46
    assert _dump([snap])[2] == ("Snapshot failed schema validation: Error reading field 'producer_entries': "
                                "Error reading array of size 3, only 2 bytes available\n")
    snap.write_bytes(src.read_bytes()[:4])
    assert _dump([snap])[2] == ("Snapshot failed schema validation: Error reading field 'crc': "
                                "java.nio.BufferUnderflowException\n")


def test_unknown_files_and_names(tmp_path: Path) -> None:
    other = tmp_path / "leader-epoch.checkpointx"
    other.write_text("0\n")
    rc, out, err = _dump([other])
    assert (rc, out, err) == (0, f"Dumping {other}\n", f"Ignoring unknown file {other}\n")
    # java.io.File normalises the path it prints
    rc, out, _ = _dump([Path(str(tmp_path) + "//" + other.name)])
    assert out == f"Dumping {other}\n"


def test_error_reports_follow_scala_hashmap_order(reference: Path, tmp_path: Path) -> None:
    """Several files with mismatches: reports come in Scala 2.13 mutable.HashMap iteration order."""
    src = reference / "fixtures/segments/kafka-3.8-kraft-a/__cluster_metadata-0"
    paths = []
    for n in range(14):
        d = tmp_path / f"p{n}"
        d.mkdir()
        shutil.copyfile(src / f"{SEG}.log", d / f"{SEG}.log")
        data = bytearray((src / f"{SEG}.index").read_bytes()[:16])
        struct.pack_into(">i", data, 8, struct.unpack_from(">i", data, 8)[0] - 1)
        (d / f"{SEG}.index").write_bytes(bytes(data))
        paths.append(d / f"{SEG}.index")
    _rc, _out, err = _dump(paths)
    reported = [line.split(":", 1)[1] for line in err.split("\n") if line.startswith("Mismatches in :")]
    m = ScalaHashMap()
    for p in paths:
        m.put(str(p), 1)
    assert reported == m.ordered_keys()
    assert sorted(reported) == sorted(str(p) for p in paths)


@pytest.mark.parametrize(("puts", "expected"), [
    # expectations computed by scala-library 2.13.18 (storage/tests/java/scala/ScalaOrder.java)
    ([f"/data/{c}-0/{SEG}.index" for c in "abcde"],
     [f"/data/{c}-0/{SEG}.index" for c in "eabdc"]),
    ([f"/x/{n}.index" for n in range(13)],
     [f"/x/{n}.index" for n in (0, 7, 6, 2, 8, 12, 3, 10, 9, 11, 4, 5, 1)]),
    # a put that only replaces a value still grows the table when size + 1 reaches the threshold
    ([f"/x/{n}.index" for n in range(11)] + ["/x/0.index"],
     [f"/x/{n}.index" for n in (0, 7, 6, 2, 8, 3, 10, 9, 4, 5, 1)]),
])
def test_scala_hashmap_order_literals(puts: list[str], expected: list[str]) -> None:
    m = ScalaHashMap()
    for k in puts:
        m.put(k, 1)
    assert m.ordered_keys() == expected


@pytest.mark.parametrize(("raw", "text"), [
    (b"plain", "plain"),
    (b"\xed\xa0\x80", "\ufffd"),          # a UTF-16 surrogate encoded in 3 bytes: ONE replacement (Python: 3)
    (b"\xed\xa0A", "\ufffdA"),            # lead + continuation, bad third byte: one replacement (Python: 2)
    (b"a\xe2\x82", "a\ufffd"),            # truncated at the end
    (b"\xed\xa0", "\ufffd"),              # truncated surrogate prefix at the end: one (Python: 2)
    (b"\xc0\x80", "\ufffd\ufffd"),        # overlong
    (b"\xf0\x9f\x98A", "\ufffdA"),
    (b"\xf4\x90\x80\x80", "\ufffd\ufffd\ufffd\ufffd"),
    (b"\xff\x00\xe4\xb8\xad", "\ufffd\x00\u4e2d"),
])
def test_java_utf8_replacement_rules(raw: bytes, text: str) -> None:
    """Hand-checked against Java 17's new String(bytes, UTF_8) (see test_java_checker.py for the fuzzed check)."""
    assert java_utf8_decode(raw) == text


def test_cli_main(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    log = _log_with(tmp_path, encode_batch([Rec("ключ-значение".encode(), key=b"k")]))
    tindex = tmp_path / f"{SEG}.timeindex"
    tindex.write_bytes(b"")
    (tmp_path / f"{SEG}.index").write_bytes(b"")
    assert main(["--files", f"{log},{tindex},", "--print-data-log"]) == 0
    got = capsysbinary.readouterr()
    out, err = io.StringIO(), io.StringIO()
    dump_files([str(log), str(tindex)], print_data_log=True, out=out, err=err)
    assert got.out == out.getvalue().encode("utf-8") and got.err == b""
    assert "payload: ключ-значение".encode() in got.out
    assert main([f"--files={log}", "--deep"]) == 0  # jopt-simple style abbreviation
    assert b"| offset: 0 " in capsysbinary.readouterr().out
    # usage errors: one line of our own and exit status 2, like every kafkalite command
    assert main(["--print-data-log"]) == 2
    assert capsysbinary.readouterr().err == (b"kafkalite dump-log: error: --files is required: the comma-separated "
                                             b"segment, index or snapshot files to dump\n")
    assert main(["--files", str(log), "--bogus"]) == 2
    assert capsysbinary.readouterr().err == (b"kafkalite dump-log: error: unrecognized option --bogus "
                                             b"(kafkalite dump-log --help lists the options)\n")
    assert main(["--files"]) == 2
    assert capsysbinary.readouterr().err == b"kafkalite dump-log: error: --files needs a value\n"
    assert main(["--files", str(log), "--max-bytes", "lots"]) == 2
    assert capsysbinary.readouterr().err == b"kafkalite dump-log: error: --max-bytes 'lots': expected a number of bytes\n"


def test_max_bytes_and_max_message_size(tmp_path: Path) -> None:
    a, b = encode_batch([b"x" * 100]), encode_batch([b"y" * 100], base_offset=1)
    log = _log_with(tmp_path, a, b, b"junk")
    out = _dump([log], max_bytes=len(a) + 10)[1]
    # --max-bytes slices the file: batches past the limit are not read and no trailing-bytes line is printed
    assert out.count("baseOffset:") == 1 and "invalid bytes" not in out
    index = tmp_path / f"{SEG}.index"
    index.write_bytes(struct.pack(">ii", 1, len(a)))
    assert _dump([index])[1].endswith(f"offset: 1 position: {len(a)}\n")
    # an indexed batch larger than --max-message-size cannot be read back: Kafka's iterator is empty
    rc, _out, err = _dump([index], max_message_size=len(b) - 1)
    assert rc == 1 and err == 'Exception in thread "main" java.util.NoSuchElementException\n'


def test_kraft_snapshot_file_header(tmp_path: Path) -> None:
    snap = tmp_path / "00000000000000000100-0000000007.checkpoint"
    snap.write_bytes(encode_batch([b"r"], base_offset=0))
    out = _dump([snap])[1].split("\n")
    assert out[:2] == [f"Dumping {snap}", "Snapshot end offset: 100, epoch: 7"]
    assert out[2].startswith("baseOffset: 0 lastOffset: 0 count: 1 ")


def test_large_storage_written_indexes_verify_cleanly(tmp_path: Path) -> None:
    """More than 1024 offset-index entries: time-index checks go through both halves of Kafka's warm/cold
    index lookup; a storage-written segment must pass every check."""
    import uuid

    from kafkalite_storage import LogConfig, LogManager

    lm = LogManager.open(str(tmp_path), LogConfig(), node_id=1)
    log = lm.create_log("big", 0, uuid.uuid4(), LogConfig(index_interval_bytes=1))
    now = 1_700_000_000_000
    for n in range(1500):
        log.append(encode_batch([Rec(b"x" * (n % 7))], base_timestamp=now + n), leader_epoch=0, now_ms=now + n)
    lm.close()
    part = tmp_path / "big-0"
    index, tindex = part / f"{SEG}.index", part / f"{SEG}.timeindex"
    assert index.stat().st_size // 8 > 1024
    rc, out, err = _dump([index, tindex])
    assert (rc, err) == (0, "")
    assert out.count("timestamp: ") == tindex.stat().st_size // 12


@pytest.mark.e2e
def test_kafkalite_cli_entry(tmp_path: Path) -> None:
    """``kafkalite dump-log`` hands its arguments to kafkalite_storage.dumplog.main (a leading ``--`` is accepted so the
    broker CLI's argparse does not swallow ``--files``)."""
    import subprocess
    import sys

    log = _log_with(tmp_path, encode_batch([Rec(b"v", key=b"k")]))
    proc = subprocess.run([sys.executable, "-m", "kafkalite", "dump-log", "--", "--files", str(log),
                           "--print-data-log"], capture_output=True, timeout=120)
    out = io.StringIO()
    dump_files([str(log)], print_data_log=True, out=out, err=io.StringIO())
    assert (proc.returncode, proc.stdout) == (0, out.getvalue().encode())
