"""Kafka 4.3's ``__consumer_offsets`` records of streams groups (schemas: 4.3-coordinator-records/group-coordinator).

A key is an int16 record type and the key fields (int16-length strings); a value is an int16 version (0) and the
fields in the flexible encoding. A null value is a tombstone. Types:

* 17 StreamsGroupMetadata (group) -> Epoch, MetadataHash, ValidatedTopologyEpoch (tag 0)
* 23 StreamsGroupTopology (group) -> Epoch, Subtopologies[...] (the topology as the members sent it)
* 19 StreamsGroupMemberMetadata (group, member) -> InstanceId, RackId, ClientId, ClientHost, RebalanceTimeoutMs,
  TopologyEpoch, ProcessId, UserEndpoint, ClientTags
* 20 StreamsGroupTargetAssignmentMetadata (group) -> AssignmentEpoch, AssignmentTimestamp (tag 0)
* 21 StreamsGroupTargetAssignmentMember (group, member) -> Active/Standby/WarmupTasks
* 22 StreamsGroupCurrentMemberAssignment (group, member) -> MemberEpoch, PreviousMemberEpoch, State, the three
  task lists and the three pending-revocation lists

kafkalite writes a group's records as a difference against what it last wrote for the group (``diff``): the
records whose value changed, and tombstones for the members that left; a deleted group gets tombstones for all.
Unknown tagged fields are skipped on decode.
"""
from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import Any

from kafkalite.coordinator.streams.model import (
    STABLE,
    UNRELEASED_TASKS,
    UNREVOKED_TASKS,
    StreamsGroup,
    StreamsMember,
    Subtopology,
    TaskMap,
    Tasks,
    Topology,
)
from kafkalite_wire.primitives import Reader, Writer

GROUP_METADATA, TOPOLOGY, MEMBER_METADATA, TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT = 17, 23, 19, 20, 21, 22
TYPES = frozenset({17, 19, 20, 21, 22, 23})
MEMBER_TYPES = frozenset({MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT})
STATES = {STABLE: 0, UNREVOKED_TASKS: 1, UNRELEASED_TASKS: 2}
STATE_NAMES = {v: k for k, v in STATES.items()}


class StreamsRecordError(ValueError):
    pass


def encode_key(type_: int, group_id: str, member_id: str | None = None) -> bytes:
    w = Writer()
    w.int16(type_)
    w.string(group_id)
    if type_ in MEMBER_TYPES:
        w.string(member_id or "")
    return w.getvalue()


def decode_key(key: bytes) -> tuple[int, str, str | None]:
    try:
        r = Reader(key)
        t = r.int16()
        g = r.string()
        return t, g, (r.string() if t in MEMBER_TYPES else None)
    except Exception as exc:
        raise StreamsRecordError(f"bad streams group key: {exc}") from exc


def streams_split(entries: Iterable[Any], out: list[tuple[bytes, bytes | None]]) -> Iterator[Any]:
    """Pass ``iter_entries`` entries through, taking out the streams group records (never transactional)."""
    for e in entries:
        if e[0] == "record" and e[1] < 0 and e[2] is not None and len(e[2]) >= 2 and \
                struct.unpack_from(">h", e[2])[0] in TYPES:
            out.append((bytes(e[2]), None if e[3] is None else bytes(e[3])))
        else:
            yield e


# -- flexible-encoding helpers ----------------------------------------------------------------------------
def _s(w: Writer, s: str | None) -> None:
    if s is None:
        w.uvarint(0)
        return
    b = s.encode("utf-8")
    w.uvarint(len(b) + 1)
    w.buf += b


def _rs(r: Reader) -> str | None:
    n = r.uvarint()
    return None if n == 0 else bytes(r.raw(n - 1)).decode("utf-8")


def _rstr(r: Reader) -> str:
    return _rs(r) or ""


def _n(w: Writer, n: int) -> None:
    w.uvarint(n + 1)


def _rn(r: Reader) -> int:
    return max(r.uvarint() - 1, 0)


def _end(w: Writer) -> None:
    w.uvarint(0)   # no tagged fields


def _skip_tags(r: Reader) -> dict[int, bytes]:
    return r.tagged_fields()


def _tasks(w: Writer, m: TaskMap) -> None:
    items = [(s, sorted(ps)) for s, ps in sorted(m.items()) if ps]
    _n(w, len(items))
    for s, ps in items:
        _s(w, s)
        _n(w, len(ps))
        for p in ps:
            w.int32(p)
        _end(w)


def _rtasks(r: Reader) -> TaskMap:
    out: TaskMap = {}
    for _ in range(_rn(r)):
        s = _rstr(r)
        out[s] = {r.int32() for _ in range(_rn(r))}
        _skip_tags(r)
    return out


def _kvs(w: Writer, kv: dict[str, str]) -> None:
    _n(w, len(kv))
    for k, v in sorted(kv.items()):
        _s(w, k)
        _s(w, v)
        _end(w)


def _rkvs(r: Reader) -> dict[str, str]:
    out = {}
    for _ in range(_rn(r)):
        k, v = _rstr(r), _rstr(r)
        _skip_tags(r)
        out[k] = v
    return out


def _value(body: Writer) -> bytes:
    w = Writer()
    w.int16(0)
    return w.getvalue() + body.getvalue()


def _reader(value: bytes) -> Reader:
    r = Reader(value)
    r.int16()   # version 0
    return r


# -- values -----------------------------------------------------------------------------------------------
def group_metadata(g: StreamsGroup) -> bytes:
    w = Writer()
    w.int32(g.group_epoch)
    w.int64(0)   # MetadataHash: kafkalite reconfigures from the topics themselves after a load
    if g.topology is not None:   # ValidatedTopologyEpoch (tag 0)
        t = Writer()
        t.int32(g.topology.epoch)
        raw = t.getvalue()
        w.uvarint(1)
        w.uvarint(0)
        w.uvarint(len(raw))
        w.buf += raw
    else:
        _end(w)
    return _value(w)


def _topic_info(w: Writer, info: tuple[str, int, int, dict[str, str]]) -> None:
    name, parts, rf, cfg = info
    _s(w, name)
    w.int32(parts)
    w.int16(rf)
    _kvs(w, cfg)
    _end(w)


def _rtopic_info(r: Reader) -> tuple[str, int, int, dict[str, str]]:
    name, parts, rf = _rstr(r), r.int32(), r.int16()
    cfg = _rkvs(r)
    _skip_tags(r)
    return name, parts, rf, cfg


def topology(t: Topology) -> bytes:
    w = Writer()
    w.int32(t.epoch)
    _n(w, len(t.subtopologies))
    for s in t.subtopologies:
        _s(w, s.subtopology_id)
        for names in (s.source_topics, s.source_topic_regex):
            _n(w, len(names))
            for x in names:
                _s(w, x)
        _n(w, len(s.state_changelog_topics))
        for info in s.state_changelog_topics:
            _topic_info(w, info)
        _n(w, len(s.repartition_sink_topics))
        for x in s.repartition_sink_topics:
            _s(w, x)
        _n(w, len(s.repartition_source_topics))
        for info in s.repartition_source_topics:
            _topic_info(w, info)
        _n(w, len(s.copartition_groups))
        for group in s.copartition_groups:
            for idx in group:
                _n(w, len(idx))
                for i in idx:
                    w.int16(i)
            _end(w)
        _end(w)
    _end(w)
    return _value(w)


def decode_topology(value: bytes) -> Topology:
    r = _reader(value)
    epoch = r.int32()
    subs = []
    for _ in range(_rn(r)):
        sid = _rstr(r)
        sources = [_rstr(r) for _ in range(_rn(r))]
        regex = [_rstr(r) for _ in range(_rn(r))]
        changelogs = [_rtopic_info(r) for _ in range(_rn(r))]
        sinks = [_rstr(r) for _ in range(_rn(r))]
        reparts = [_rtopic_info(r) for _ in range(_rn(r))]
        groups = []
        for _ in range(_rn(r)):
            a, b, c = ([r.int16() for _ in range(_rn(r))] for _ in range(3))
            _skip_tags(r)
            groups.append((a, b, c))
        _skip_tags(r)
        subs.append(Subtopology(sid, sources, regex, sinks, reparts, changelogs, groups))
    return Topology(epoch, subs)


def member_metadata(m: StreamsMember) -> bytes:
    w = Writer()
    _s(w, m.instance_id)
    _s(w, m.rack_id)
    _s(w, m.client_id)
    _s(w, m.client_host)
    w.int32(m.rebalance_timeout_ms)
    w.int32(m.topology_epoch)
    _s(w, m.process_id)
    if m.user_endpoint is None:
        w.int8(-1)
    else:
        w.int8(1)
        _s(w, m.user_endpoint[0])
        w.buf += struct.pack(">H", m.user_endpoint[1] & 0xFFFF)
        _end(w)
    _kvs(w, m.client_tags)
    _end(w)
    return _value(w)


def decode_member_metadata(member_id: str, value: bytes) -> StreamsMember:
    r = _reader(value)
    m = StreamsMember(member_id)
    m.instance_id, m.rack_id = _rs(r), _rs(r)
    m.client_id, m.client_host = _rstr(r), _rstr(r)
    m.rebalance_timeout_ms, m.topology_epoch = r.int32(), r.int32()
    m.process_id = _rstr(r)
    if r.int8() >= 0:
        host = _rstr(r)
        port = struct.unpack(">H", bytes(r.raw(2)))[0]
        _skip_tags(r)
        m.user_endpoint = (host, port)
    m.client_tags = _rkvs(r)
    return m


def target_metadata(epoch: int) -> bytes:
    w = Writer()
    w.int32(epoch)
    _end(w)
    return _value(w)


def target_member(t: Tasks) -> bytes:
    w = Writer()
    for m in (t.active, t.standby, t.warmup):
        _tasks(w, m)
    _end(w)
    return _value(w)


def decode_target_member(value: bytes) -> Tasks:
    r = _reader(value)
    return Tasks(_rtasks(r), _rtasks(r), _rtasks(r))


def current_assignment(m: StreamsMember) -> bytes:
    w = Writer()
    w.int32(m.member_epoch)
    w.int32(m.previous_member_epoch)
    w.int8(STATES.get(m.state, 0))
    for tasks in (m.assigned.active, m.assigned.standby, m.assigned.warmup, m.pending_revocation.active,
                  m.pending_revocation.standby, m.pending_revocation.warmup):
        _tasks(w, tasks)
    _end(w)
    return _value(w)


def decode_current_assignment(m: StreamsMember, value: bytes) -> None:
    r = _reader(value)
    m.member_epoch, m.previous_member_epoch = r.int32(), r.int32()
    m.state = STATE_NAMES.get(r.int8(), STABLE)
    m.assigned = Tasks(_rtasks(r), _rtasks(r), _rtasks(r))
    m.pending_revocation = Tasks(_rtasks(r), _rtasks(r), _rtasks(r))


# -- a group as records, and back -------------------------------------------------------------------------
def group_records(g: StreamsGroup) -> dict[bytes, bytes]:
    gid = g.group_id
    out = {encode_key(GROUP_METADATA, gid): group_metadata(g),
           encode_key(TARGET_METADATA, gid): target_metadata(g.target_epoch)}
    if g.topology is not None:
        out[encode_key(TOPOLOGY, gid)] = topology(g.topology)
    for mid, m in g.members.items():
        out[encode_key(MEMBER_METADATA, gid, mid)] = member_metadata(m)
        out[encode_key(CURRENT_ASSIGNMENT, gid, mid)] = current_assignment(m)
    for mid, t in g.target.items():
        out[encode_key(TARGET_MEMBER, gid, mid)] = target_member(t)
    return out


def diff(before: dict[bytes, bytes], after: dict[bytes, bytes]) -> list[tuple[bytes, bytes | None]]:
    """The records that take ``before`` to ``after``: tombstones (member records first, the group's last, as
    Kafka orders a deletion) and the changed values."""
    gone = [k for k in before if k not in after]
    gone.sort(key=lambda k: struct.unpack_from(">h", k)[0] not in MEMBER_TYPES)
    out: list[tuple[bytes, bytes | None]] = [(k, None) for k in gone]
    out += [(k, v) for k, v in after.items() if before.get(k) != v]
    return out


def load(records: Iterable[tuple[bytes, bytes | None]], now: int, session_ms: int
         ) -> tuple[dict[str, StreamsGroup], dict[str, dict[bytes, bytes]]]:
    """Replay the records (the last value of a key wins; a tombstone removes it) into groups, and what was
    written per group (the base of the next ``diff``). Members get a fresh session."""
    latest: dict[bytes, bytes] = {}
    for k, v in records:
        if v is None:
            latest.pop(k, None)
        else:
            latest[k] = v
    groups: dict[str, StreamsGroup] = {}
    written: dict[str, dict[bytes, bytes]] = {}
    parsed = []
    for k, v in latest.items():
        t, gid, mid = decode_key(k)
        parsed.append((t, gid, mid, v))
        written.setdefault(gid, {})[k] = v
    for t, gid, _mid, v in parsed:   # group metadata first: it makes the group
        if t == GROUP_METADATA:
            made = groups[gid] = StreamsGroup(gid)
            made.group_epoch = _reader(v).int32()
    for t, gid, mid, v in parsed:
        g = groups.get(gid)
        if g is None or t == GROUP_METADATA:
            continue
        if t == TOPOLOGY:
            g.topology = decode_topology(v)
            g.reconfigure_bumped = True   # configured again at the next heartbeat, without a new epoch
        elif t == TARGET_METADATA:
            g.target_epoch = _reader(v).int32()
        elif t == TARGET_MEMBER and mid is not None:
            g.target[mid] = decode_target_member(v)
        elif t == MEMBER_METADATA and mid is not None:
            m = decode_member_metadata(mid, v)
            old = g.members.get(mid)
            if old is not None:   # its current assignment came first
                m.member_epoch, m.previous_member_epoch, m.state = old.member_epoch, old.previous_member_epoch, \
                    old.state
                m.assigned, m.pending_revocation = old.assigned, old.pending_revocation
            g.members[mid] = m
        elif t == CURRENT_ASSIGNMENT and mid is not None:
            m = g.members.setdefault(mid, StreamsMember(mid))
            decode_current_assignment(m, v)
    for g in groups.values():
        for mid, m in list(g.members.items()):
            m.session_deadline_ms = now + session_ms
            if m.instance_id is not None:
                g.static[m.instance_id] = mid
    for gid in list(written):
        if gid not in groups:
            del written[gid]
    return groups, written
