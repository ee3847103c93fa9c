"""The codec covers Kafka 3.9.0's and 4.x's versions (the trunk snapshot 4.5.0-SNAPSHOT, a superset of 4.3's and
exactly 4.4's stable versions), each version as the release defining it says.

* ranges: every API's versions are the union of the two releases' ranges (KIP-896's removed versions kept, 4.x's
  new versions and APIs added);
* per-source oracle: for every message and version, random messages encoded by the generated code equal the
  interpretive reference codec driven by the *unmerged* spec of the release that defines that version (so a
  merge mistake cannot hide behind an oracle reading the same merged spec);
* the versions both releases define agree, except the differences listed here (a change there is a decision);
* a disagreement on a version 3.9.0 calls stable is an error, not a silent choice.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kafkalite_wire import specmerge
from kafkalite_wire.reference import ReferenceCodec
from kafkalite_wire.spec import NONE, FieldSpec, MessageSpec, Versions
from kafkalite_wire.specmerge import load_all
from kafkalite_wire.tests.strategies import class_for, message_specs, random_message

MSGS = message_specs()

#: (message, version, kind): where 3.9.0 and 4.x define a version differently and 4.x's definition is used.
EXPECTED_DIFFERENCES = {
    ("TxnOffsetCommitRequest", 3, "names"),  # GenerationId -> GenerationIdOrMemberEpoch (4.4), same bytes
    ("TxnOffsetCommitRequest", 4, "names"),
    ("VoteRequest", 0, "names"),  # Candidate* -> Replica* (KIP-996), same bytes
    ("VoteRequest", 1, "names"),
    ("ListConfigResourcesResponse", 0, "names"),  # was ListClientMetricsResourcesResponse (KIP-1142)
    ("ReadShareGroupStateSummaryResponse", 0, "wire"),  # LeaderEpoch added to v0, unstable in 3.9.0
}


def _ranges(release: str) -> dict[int, set[int]]:
    out: dict[int, set[int]] = {}
    for m in load_all(specmerge.spec_dir(release)):
        if m.valid.lo >= 0 and m.type == "request":
            out[m.api_key] = set(m.versions)
    return out


def test_version_ranges_are_the_union(specs: Path) -> None:
    old, new = _ranges(specmerge.OLD), _ranges(specmerge.NEW)
    got = {m.api_key: set(m.versions) for m in load_all() if m.type == "request"}
    assert got == {k: old.get(k, set()) | new.get(k, set()) for k in set(old) | set(new)}
    # KIP-896 removals kept, 4.x additions present
    assert {0, 1, 2} <= got[0] and 13 in got[0]  # Produce v0-13
    assert got[8] == set(range(11))  # OffsetCommit v0-10
    assert got[68] == {0, 1}  # ConsumerGroupHeartbeat v0-1
    assert {74, 88, 89, 90, 91, 92} <= set(got)


def test_the_newer_specs_define_every_43_version_as_43_does(specs: Path) -> None:
    """The codec takes 4.x's versions from the trunk snapshot: every version 4.3 defines is the same bytes there
    (only these fields were renamed)."""
    from kafkalite_wire.spec import load_dir

    old = {m.name: m for m in load_dir(specmerge.spec_dir("4.3")) if m.valid.lo >= 0}
    new = {m.name: m for m in load_dir(specmerge.spec_dir(specmerge.NEW)) if m.valid.lo >= 0}
    renamed = set()
    for name, m in old.items():
        assert name in new, name
        for v in m.versions:
            assert v in new[name].versions, (name, v)
            assert specmerge.wire_layout(m, v) == specmerge.wire_layout(new[name], v), (name, v)
            if specmerge.layout(m, v) != specmerge.layout(new[name], v):
                renamed.add((name, v))
    assert renamed == {("TxnOffsetCommitRequest", v) for v in (3, 4, 5)} | {("StreamsGroupHeartbeatResponse", 0)}


def test_differences_between_releases_are_the_known_ones(specs: Path) -> None:
    _, diffs = specmerge.merged()
    assert {(d.name, d.version, d.kind) for d in diffs} == EXPECTED_DIFFERENCES


@pytest.mark.parametrize("msg", MSGS, ids=[m.name for m in MSGS])
def test_generated_matches_the_defining_release(msg: MessageSpec) -> None:
    cls = class_for(msg)
    rng = random.Random(f"merge {msg.name}")
    for v in msg.versions:
        release = specmerge.source_of(msg.name, v)
        raw = specmerge.raw_spec(release, msg.name)
        assert raw is not None
        ref = ReferenceCodec(raw, cls)
        assert specmerge.layout(raw, v) == specmerge.layout(msg, v), f"{msg.name} v{v}"
        for i in range(3):
            obj = cls() if i == 0 else random_message(msg, v, rng)
            data = obj.encode(v)
            assert data == ref.encode(obj, v), f"{msg.name} v{v} ({release})"
            assert cls.decode(data, v) == ref.decode(data, v) == obj


def test_fields_of_one_release_only(specs: Path) -> None:
    """OffsetCommit v1's CommitTimestamp (gone from 4.3) and v10's TopicId (new in 4.3) both work."""
    from kafkalite_wire.messages import ConsumerGroupHeartbeatRequest, OffsetCommitRequest

    topic = OffsetCommitRequest.OffsetCommitRequestTopic(
        name="t",
        partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, commit_timestamp=123)
        ],
    )
    v1 = OffsetCommitRequest(group_id="g", topics=[topic])
    assert OffsetCommitRequest.decode(v1.encode(1), 1).topics[0].partitions[0].commit_timestamp == 123
    assert OffsetCommitRequest.decode(v1.encode(2), 2).topics[0].partitions[0].commit_timestamp == -1
    import uuid

    tid = uuid.uuid4()
    topic.topic_id = tid
    assert OffsetCommitRequest.decode(v1.encode(10), 10).topics[0].topic_id == tid
    assert OffsetCommitRequest.decode(v1.encode(9), 9).topics[0].topic_id == uuid.UUID(int=0)
    hb = ConsumerGroupHeartbeatRequest(group_id="g", member_epoch=0, subscribed_topic_regex="a.*")
    assert ConsumerGroupHeartbeatRequest.decode(hb.encode(1), 1).subscribed_topic_regex == "a.*"
    assert ConsumerGroupHeartbeatRequest.decode(hb.encode(0), 0).subscribed_topic_regex is None


def _field(name: str, t: str, versions: str) -> FieldSpec:
    return FieldSpec(
        name, name.lower(), t, Versions.parse(versions), NONE, NONE, None, None, False, False, t, None
    )


def _msg(fields: list[FieldSpec], valid: str, unstable: bool = False) -> MessageSpec:
    return MessageSpec("XRequest", 1000, "request", Versions.parse(valid), NONE, unstable, fields)


def test_a_stable_disagreement_is_an_error() -> None:
    old = _msg([_field("A", "int32", "0+")], "0-2")
    new = _msg([_field("A", "int64", "0+")], "1-3")
    with pytest.raises(specmerge.MergeError):
        specmerge.merge(old, new)
    old_unstable = _msg([_field("A", "int32", "0+")], "2")
    new2 = _msg([_field("A", "int64", "0+")], "2-3")
    merged, diffs = specmerge.merge(old_unstable, new2, old_unstable=2)
    assert merged.fields[0].type == "int64" and [(d.version, d.kind) for d in diffs] == [(2, "wire")]


def test_removed_and_added_fields_merge_by_position() -> None:
    old = _msg([_field("A", "int32", "0+"), _field("Old", "int16", "0-1"), _field("B", "int8", "0+")], "0-2")
    new = _msg([_field("A", "int32", "2+"), _field("B", "int8", "2+"), _field("New", "int64", "3+")], "2-4")
    merged, diffs = specmerge.merge(old, new)
    assert not diffs
    assert [(f.name, f.versions) for f in merged.fields] == [
        ("A", Versions(0, None)),
        ("Old", Versions(0, 1)),
        ("B", Versions(0, None)),
        ("New", Versions(3, None)),
    ]
    assert merged.valid == Versions(0, 4)
