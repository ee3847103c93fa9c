"""``--offsets-decoder`` and ``--transaction-log-decoder`` (DumpLogSegments' OffsetsMessageParser and
TransactionLog.formatRecordKeyAndValue), on real ``__consumer_offsets`` segments and on records built here."""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import pytest

from kafkalite_storage.dumplog import dump_files, main
from kafkalite_storage.testing import Rec, encode_batch
from kafkalite_storage.tests.test_dumplog import raw_batches, raw_records

SEG = "00000000000000000000"


def _dump(paths: list[Path], **kw: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    kw.setdefault("errors", "java")   # an error that stops the tool as the JVM prints Kafka's exception
    rc = dump_files([str(p) for p in paths], out=out, err=err, **kw)  # type: ignore[arg-type]
    return rc, out.getvalue(), err.getvalue()


def _s16(s: str) -> bytes:
    return struct.pack(">h", len(s.encode())) + s.encode()


def test_consumer_offsets_fixtures(reference: Path) -> None:
    logs = sorted((reference / "fixtures/segments").glob("kafka-3.*/__consumer_offsets-*/*.log"))
    rc, out, err = _dump(logs, decoder="offsets")
    assert (rc, err) == (0, "")
    lines = [ln for ln in out.split("\n") if ln.startswith("| offset: ")]
    expected_records = []
    for log in logs:
        for b in raw_batches(log.read_bytes()):
            if b.attrs & 0x20:
                continue
            expected_records += list(raw_records(b))
    data_lines = [ln for ln in lines if " key: " in ln]
    assert len(data_lines) == len(expected_records) > 50
    commits = groups = 0
    for line, (offset, _ts, key, value, _h, _seq) in zip(data_lines, expected_records, strict=True):
        assert line.startswith(f"| offset: {offset} ")
        key_json, _, payload = line.split(" key: ", 1)[1].partition(" payload: ")
        k = json.loads(key_json)
        assert key is not None
        rtype = struct.unpack_from(">h", key, 0)[0]
        assert k["type"] == str(rtype)
        if value is None:
            assert payload == "<DELETE>"
            continue
        v = json.loads(payload)
        assert v["version"] == str(struct.unpack_from(">h", value, 0)[0])
        if rtype in (0, 1):
            commits += 1
            group_len = struct.unpack_from(">h", key, 2)[0]
            group = key[4 : 4 + group_len].decode()
            topic_len = struct.unpack_from(">h", key, 4 + group_len)[0]
            topic = key[6 + group_len : 6 + group_len + topic_len].decode()
            (partition,) = struct.unpack_from(">i", key, 6 + group_len + topic_len)
            assert k["data"] == {"group": group, "topic": topic, "partition": partition}
            assert v["data"]["offset"] == struct.unpack_from(">q", value, 2)[0]
        else:
            groups += 1
            assert rtype == 2 and k["data"]["group"] == key[4:].decode()
            assert v["data"]["protocolType"] in ("consumer", "")
    assert commits > 20 and groups > 5


def test_offsets_decoder_hand_checked(reference: Path) -> None:
    log = reference / "fixtures/segments/kafka-3.6.1-kraft-b/__consumer_offsets-0/00000000000000000000.log"
    _, out, _ = _dump([log], decoder="offsets")
    lines = out.split("\n")
    assert lines[5] == (
        "| offset: 1 CreateTime: 1764571572715 keySize: 42 valueSize: 24 sequence: 0 headerKeys: [] key: "
        '{"type":"1","data":{"group":"stock-service-group","topic":"order_created","partition":0}} payload: '
        '{"version":"3","data":{"offset":1,"leaderEpoch":-1,"metadata":"","commitTimestamp":1764571572703}}')
    # group metadata: kafka-go's v1 subscription header with a v0 body stays base64 (Kafka swallows the
    # parse error); the assignment is decoded
    assert lines[3].endswith(
        '"rebalanceTimeout":30000,"sessionTimeout":30000,"subscription":"AAEAAAABAA1vcmRlcl9jcmVhdGVk/////w==",'
        '"assignment":{"assignedPartitions":[{"topic":"order_created","partitions":[2,1,0]}],"userData":null}}]}}')
    assert '| offset: 0 CreateTime: 1764571526611 keySize: 23 valueSize: 359 sequence: -1 headerKeys: [] key: ' \
           '{"type":"2","data":{"group":"stock-service-group"}} payload: {"version":"3","data":' \
           '{"protocolType":"consumer","generation":1,"protocol":"range",' in lines[3]


def test_offsets_decoder_edge_records(tmp_path: Path) -> None:
    key = struct.pack(">h", 1) + _s16("g") + _s16("t") + struct.pack(">i", 3)
    v4 = struct.pack(">hqi", 4, 42, 7) + bytes([1]) + struct.pack(">q", 99) + b"\0"  # flexible: compact "" + tags
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(encode_batch([Rec(v4, key=key), Rec(None, key=key), Rec(b"\0\1", key=struct.pack(">h", 9)),
                                  Rec(b"x", key=struct.pack(">h", 0) + b"\0")]))
    rc, out, _ = _dump([log], decoder="offsets")
    lines = [ln.split(" headerKeys: [] ", 1)[1] for ln in out.split("\n") if ln.startswith("| offset")]
    assert rc == 0 and lines == [
        'key: {"type":"1","data":{"group":"g","topic":"t","partition":3}} payload: '
        '{"version":"4","data":{"offset":42,"leaderEpoch":7,"metadata":"","commitTimestamp":99}}',
        'key: {"type":"1","data":{"group":"g","topic":"t","partition":3}} payload: <DELETE>',
        "key: Unknown record type 9 at offset 2, skipping.",
        "key: Error at offset 3, skipping. Could not read record with version 0 from key's buffer due to: null.",
    ]
    keyless = tmp_path / "k" / f"{SEG}.log"
    keyless.parent.mkdir()
    keyless.write_bytes(encode_batch([Rec(b"v")]))
    rc, out, err = _dump([keyless], decoder="offsets")
    assert rc == 1 and out.endswith("headerKeys: []")
    assert err == ('Exception in thread "main" java.lang.RuntimeException: Failed to decode message at offset 0 '
                   "using offset topic decoder (message had a missing key)\n")


def _txn_value(version: int, state: int, parts: list[tuple[str, list[int]]] | None) -> bytes:
    body = struct.pack(">hqhib", version, 5000, 3, 60000, state)
    if version == 0:
        if parts is None:
            body += struct.pack(">i", -1)
        else:
            body += struct.pack(">i", len(parts))
            for t, ps in parts:
                body += _s16(t) + struct.pack(">i", len(ps)) + b"".join(struct.pack(">i", p) for p in ps)
        return body + struct.pack(">qq", 1_700_000_000_500, 1_700_000_000_000)
    body += bytes([len(parts) + 1]) if parts is not None else b"\0"
    for t, ps in parts or []:
        body += bytes([len(t) + 1]) + t.encode() + bytes([len(ps) + 1])
        body += b"".join(struct.pack(">i", p) for p in ps) + b"\0"
    return body + struct.pack(">qq", 1_700_000_000_500, 1_700_000_000_000) + b"\0"


def test_transaction_log_decoder(tmp_path: Path) -> None:
    key = struct.pack(">h", 0) + _s16("my-txn")
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(encode_batch([
        Rec(_txn_value(0, 1, [("orders", [0, 1]), ("payments", [2])]), key=key),
        Rec(_txn_value(1, 4, [("orders", [0])]), key=key),
        Rec(_txn_value(0, 0, [("ignored", [9])]), key=key),
        Rec(None, key=key),
        Rec(b"zz", key=struct.pack(">h", 5)),
    ]))
    rc, out, err = _dump([log], decoder="transaction-log")
    assert (rc, err) == (0, "")
    lines = [ln.split(" headerKeys: [] ", 1)[1] for ln in out.split("\n") if ln.startswith("| offset")]
    key_text = "key: transaction_metadata::transactionalId=my-txn"
    assert lines == [
        # Scala mutable.HashSet[TopicPartition] order (checked with scala-library 2.13.18)
        f"{key_text} payload: producerId:5000,producerEpoch:3,state=Ongoing,partitions=[payments-2,orders-0,"
        "orders-1],txnLastUpdateTimestamp=1700000000500,txnTimeoutMs=60000",
        f"{key_text} payload: producerId:5000,producerEpoch:3,state=CompleteCommit,partitions=[orders-0],"
        "txnLastUpdateTimestamp=1700000000500,txnTimeoutMs=60000",
        f"{key_text} payload: producerId:5000,producerEpoch:3,state=Empty,partitions=[],"
        "txnLastUpdateTimestamp=1700000000500,txnTimeoutMs=60000",
        f"{key_text} payload: <DELETE>",
        "key: unknown::version=5",
    ]


def test_decoder_flags(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    key = struct.pack(">h", 2) + _s16("grp")
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(encode_batch([Rec(None, key=key)]))
    assert main(["--files", str(log), "--offsets-decoder"]) == 0  # implies --print-data-log
    assert b'key: {"type":"2","data":{"group":"grp"}} payload: <DELETE>\n' in capsysbinary.readouterr().out
    assert main(["--files", str(log), "--transaction-log"]) == 0  # abbreviation of --transaction-log-decoder
    assert b"key: unknown::version=2\n" in capsysbinary.readouterr().out


def test_key_and_value_decoder_classes(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(encode_batch([Rec(struct.pack(">q", -5), key=struct.pack(">i", 258)), Rec(None, key=None)]))
    rc, out, _ = _dump([log], key_decoder_class="org.apache.kafka.tools.api.IntegerDecoder",
                       value_decoder_class="kafka.serializer.LongDecoder")
    lines = out.split("\n")
    assert rc == 0
    # the deprecated name is announced each time the tool builds its parser, before the file's header line
    assert lines[1] == ("kafka.serializer.LongDecoder is deprecated. Please use "
                        "org.apache.kafka.tools.api.LongDecoder instead")
    assert lines[2] == "Log starting offset: 0"
    assert lines[4].endswith("headerKeys: [] key: 258 payload: -5")
    assert lines[5].endswith("headerKeys: []")
    rc, out, err = _dump([log], value_decoder_class="org.apache.kafka.tools.api.IntegerDecoder",
                         key_decoder_class="org.apache.kafka.tools.api.IntegerDecoder")
    assert rc == 0  # an 8-byte value read as an int: only its first 4 bytes
    rc, _out, err = _dump([log], key_decoder_class="org.apache.kafka.tools.api.LongDecoder")
    assert rc == 1 and err == 'Exception in thread "main" java.nio.BufferUnderflowException\n'
    rc, out, err = _dump([log], value_decoder_class="com.example.Missing")
    assert rc == 1 and out == f"Dumping {log}\n"
    assert err == 'Exception in thread "main" java.lang.ClassNotFoundException: com.example.Missing\n'
    assert main(["--files", str(log), "--key-decoder-class", "--value-decoder-class",
                 "org.apache.kafka.tools.api.LongDecoder"]) == 0
    assert b"key: \x00\x00\x01\x02 payload: -5\n" in capsysbinary.readouterr().out
