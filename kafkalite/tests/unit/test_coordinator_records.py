"""``__consumer_offsets`` record schemas, batch framing and state reload."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import crc32c

from kafkalite.coordinator.classic.coordinator import GroupCoordinator
from kafkalite.coordinator.classic.group import GroupState, OffsetAndMetadata
from kafkalite.coordinator.classic.loader import StateLoader
from kafkalite.coordinator.classic.records import (
    GroupKey,
    GroupValue,
    MemberRecord,
    OffsetKey,
    build_batch,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_key,
    encode_group_value,
    encode_offset_key,
    encode_offset_value,
    iter_records,
)
from kafkalite.coordinator.common import errors as E
from kafkalite.coordinator.common.config import GroupConfig
from kafkalite.metadata.partitions import partition_for
from kafkalite.tests.support.requires import reference


def test_partition_for_matches_java_hashcode() -> None:
    assert partition_for("hello", 50) == 99162322 % 50
    assert partition_for("polygenelubricants", 50) == 0  # hashCode == Integer.MIN_VALUE, Utils.abs -> 0
    assert all(0 <= partition_for(f"g{i}") < 50 for i in range(100))


def test_key_and_value_layouts() -> None:
    k = encode_offset_key("grp", "topic", 7)
    assert k == struct.pack(">h", 1) + b"\x00\x03grp" + b"\x00\x05topic" + struct.pack(">i", 7)
    assert decode_key(k) == OffsetKey("grp", "topic", 7)
    assert decode_key(encode_group_key("grp")) == GroupKey("grp")
    om = OffsetAndMetadata(123, 4, "m", 1_700_000_000_000)
    v = encode_offset_value(om)
    assert v[:2] == b"\x00\x03" and decode_offset_value(v) == om
    om1 = OffsetAndMetadata(5, -1, "", 10, 99)
    assert encode_offset_value(om1)[:2] == b"\x00\x01" and decode_offset_value(encode_offset_value(om1)) == om1
    gv = GroupValue("consumer", 3, "range", "m1", 55,
                    [MemberRecord("m1", "inst", "cid", "/h", 30000, 10000, b"sub", b"asg")])
    assert decode_group_value(encode_group_value(gv)) == gv


def test_schema_versions_match_kafka_spec() -> None:
    spec_dir = reference("kafka-message-specs", "3.9.0-coordinator-records")

    def load(name: str) -> dict:
        text = "\n".join(line for line in (spec_dir / f"{name}.json").read_text().splitlines()
                         if not line.strip().startswith("//"))
        return json.loads(text)

    assert load("OffsetCommitKey")["validVersions"] == "0-1"
    assert load("GroupMetadataKey")["validVersions"] == "2"
    fields = [f["name"] for f in load("OffsetCommitValue")["fields"]]
    assert fields == ["offset", "leaderEpoch", "metadata", "commitTimestamp", "expireTimestamp"]
    members = load("GroupMetadataValue")["commonStructs"][0]["fields"]
    assert [f["name"] for f in members] == ["memberId", "groupInstanceId", "clientId", "clientHost",
                                            "rebalanceTimeout", "sessionTimeout", "subscription", "assignment"]


def test_batch_is_valid_record_batch_v2() -> None:
    recs = [(b"k1", b"v1"), (b"k2", None)]
    batch = build_batch(recs, now_ms=1234)
    _base, length, _ple, magic, crc = struct.unpack_from(">qiibI", batch)
    assert magic == 2 and length == len(batch) - 12
    assert crc == crc32c.crc32c(batch[21:])
    assert list(iter_records(batch + batch)) == [(0, b"k1", b"v1"), (1, b"k2", None)] * 2
    assert list(iter_records(batch[:-1])) == []  # partial batch ignored


def test_state_survives_reload() -> None:
    log: list[bytes] = []
    c = GroupCoordinator(GroupConfig(), lambda p, records: log.append(build_batch(records, 0)))
    p = c.join_group(0, "g", "", None, "cid", "/h", 30000, 10000, "consumer", [("range", b"meta")],
                     require_known_member_id=False)
    c.poll(0)
    mid = p.result.member_id
    c.sync_group(0, "g", 1, mid, None, None, None, {mid: b"assignment"})
    c.commit_offsets(0, "g", mid, None, 1, {("t", 0): OffsetAndMetadata(10, 1, "x", 5)})
    c.commit_offsets(0, "g", mid, None, 1, {("t", 0): OffsetAndMetadata(11, 1, "y", 6)})
    c.commit_offsets(0, "s", "", None, -1, {("t", 1): OffsetAndMetadata(3)})
    c.commit_offsets(0, "gone", "", None, -1, {("t", 1): OffsetAndMetadata(3)})
    assert c.delete_groups(0, ["gone"]) == {"gone": E.NONE}

    loader = StateLoader()
    for batch in log:
        loader.feed((k, v) for _, k, v in iter_records(batch))
    groups = loader.build(1000)
    assert set(groups) == {"g", "s"}
    g = groups["g"]
    assert g.state is GroupState.STABLE and g.generation_id == 1 and g.leader_id == mid
    assert g.protocol_name == "range" and g.members[mid].assignment == b"assignment"
    assert g.members[mid].heartbeat_deadline == 1000 + 10000
    assert g.offsets[("t", 0)] == OffsetAndMetadata(11, 1, "y", 6)
    assert groups["s"].state is GroupState.EMPTY and groups["s"].offsets[("t", 1)].offset == 3

    c2 = GroupCoordinator(GroupConfig())
    c2.groups = groups
    assert c2.heartbeat(2000, "g", mid, None, 1) == E.NONE
    s = c2.sync_group(2000, "g", 1, mid, None, None, None, {})
    assert s.result.assignment == b"assignment"


def _fixture_dirs() -> list[Path]:
    base = reference("fixtures", "segments")
    return sorted(d for d in base.iterdir() if d.is_dir() and any(d.glob("__consumer_offsets-*")))


def test_real_kafka_consumer_offsets_logs_load() -> None:
    """Logs written by real Kafka brokers (2.x to 3.8) decode; each group sits in its hash partition."""
    dirs = _fixture_dirs()
    assert dirs
    seen_groups = 0
    decoded_groups: list[GroupValue] = []
    for d in dirs:
        loader = StateLoader()
        for pdir in sorted(d.glob("__consumer_offsets-*")):
            partition = int(pdir.name.rsplit("-", 1)[1])
            for seg in sorted(pdir.glob("*.log")):
                records = list(iter_records(seg.read_bytes()))
                for _off, key, value in records:
                    k = decode_key(key)
                    if k is not None:
                        assert partition_for(k.group, 50) == partition, (d.name, k.group, partition)
                    if isinstance(k, OffsetKey) and value is not None:
                        assert decode_offset_value(value).offset >= 0
                    elif isinstance(k, GroupKey) and value is not None:
                        gv = decode_group_value(value)
                        assert gv.generation >= 0 and all(m.member_id for m in gv.members)
                        decoded_groups.append(gv)
                loader.feed((k, v) for _o, k, v in records)
        groups = loader.build(0)
        seen_groups += len(groups)
        for g in groups.values():
            for (topic, part), om in g.offsets.items():
                assert topic and part >= 0 and om.offset >= 0
    assert seen_groups > 0 and decoded_groups


def _txn_batch(records: list[tuple[bytes, bytes | None]], pid: int, control: bool = False) -> bytes:
    """A transactional (or control) batch: patch producer id and attributes, recompute the CRC."""
    data = bytearray(build_batch(records, 0))
    attrs = 0x10 | (0x20 if control else 0)
    struct.pack_into(">h", data, 21, attrs)
    struct.pack_into(">q", data, 43, pid)
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


def test_transactional_offsets_apply_on_commit_marker_only() -> None:
    from kafkalite.coordinator.classic.records import iter_entries

    k0, k1 = encode_offset_key("g", "t", 0), encode_offset_key("g", "t", 1)
    commit_marker = (struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 0))
    abort_marker = (struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 0))
    log = (_txn_batch([(k0, encode_offset_value(OffsetAndMetadata(5)))], pid=7)
           + _txn_batch([(k1, encode_offset_value(OffsetAndMetadata(9)))], pid=8)
           + _txn_batch([commit_marker], pid=7, control=True)
           + _txn_batch([abort_marker], pid=8, control=True))
    loader = StateLoader()
    loader.feed_entries(iter_entries(log))
    g = loader.build(0)["g"]
    assert g.offsets == {("t", 0): OffsetAndMetadata(5)}


def test_txn_offset_commit_hooks_and_require_stable() -> None:
    c = GroupCoordinator(GroupConfig())
    assert c.txn_commit_offsets(0, "g", 42, "", None, -1, {("t", 0): OffsetAndMetadata(3)}) == {("t", 0): E.NONE}
    assert c.fetch_offsets(0, "g", [("t", 0)], require_stable=True)[1] == [("t", 0, None, E.UNSTABLE_OFFSET_COMMIT)]
    assert c.fetch_offsets(0, "g", [("t", 0)])[1] == [("t", 0, None, E.NONE)]
    c.complete_txn(0, 42, commit=True)
    assert c.fetch_offsets(0, "g", [("t", 0)], require_stable=True)[1][0][2].offset == 3
    c.txn_commit_offsets(0, "g", 43, "", None, -1, {("t", 0): OffsetAndMetadata(4)})
    c.complete_txn(0, 43, commit=False)
    assert c.fetch_offsets(0, "g", [("t", 0)])[1][0][2].offset == 3
