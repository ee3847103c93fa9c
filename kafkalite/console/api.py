"""The console's read endpoints (GET), answered in-process from the broker's state.

    /api/overview                                   broker, listeners, configs; the cluster's brokers
    /api/topics                                     every topic: partitions, size, offsets (loaded logs)
    /api/topics/<t>                                 partitions (log start, high watermark, LSO, size,
                                                    segment files) and the topic's configs
    /api/topics/<t>/partitions/<p>/messages         records: ?from=end|offset|timestamp &offset= &timestamp=
                                                    &limit= &q= &in=any|key|value &window=
    /api/groups                                     groups of every type: type, state, members, total lag
    /api/groups/<g>                                 members with their assignment, offsets and lag
    /api/schemas[/<subject>]                        the built-in schema registry (kafkalite.console.schemas)

Bounded work, as everything on the broker's loop must be: topic and group walks yield every
``kafkalite.runtime.slices`` slice; a topic's detail loads at most its own partitions (in a worker thread, as
requests do); records are read as whole batches from the log's file regions (at most ``CHUNK_BYTES`` per
step, ``BROWSE_BYTES`` / ``SEARCH_BYTES`` in all) and decoded in a worker thread, at most ``MAX_LIMIT``
returned and ``MAX_WINDOW`` scanned by a search; numbers out of range are clamped and said so, text where a
number belongs is a 400. Records past the high watermark are not shown (a consumer cannot read them either);
control batches (transaction markers) are skipped, as consumers skip them.
"""
from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import trio

from kafkalite.config.describe import describe_broker, describe_topic
from kafkalite.console import schemas
from kafkalite.console.render import show
from kafkalite.coordinator.views import (
    all_groups,
    consumer_group,
    share_group,
    share_partitions,
    streams_group,
)
from kafkalite.httpd.server import HttpError as ApiError
from kafkalite.httpd.server import Request
from kafkalite.runtime.slices import Slices
from kafkalite_storage.batch import batch_records, iter_batches
from kafkalite_storage.errors import StorageError

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
DEFAULT_WINDOW = 10_000
MAX_WINDOW = 100_000
CHUNK_BYTES = 4 * 1024 * 1024
BROWSE_BYTES = 8 * 1024 * 1024
SEARCH_BYTES = 64 * 1024 * 1024
MAX_SHOWN_TOTAL = 2 * 1024 * 1024     # text shown by one answer, at most (then it stops early)
MAX_QUERY = 256
INFLATE_LIMIT = 64 * 1024 * 1024
MAX_PARTITIONS_SHOWN = 10_000
MAX_SEGMENTS_SHOWN = 200   # per partition (the count is always given)
_SENSITIVE = ("password", "secret", "jaas", "credential", "token")
# console reads share two worker threads: a browsing user cannot take the broker's own thread budget
READERS = trio.CapacityLimiter(2)


async def dispatch(state: BrokerState, req: Request) -> Any:
    p = req.parts[1:]   # after "api"
    if p == ["overview"]:
        return overview(state)
    if p == ["topics"]:
        return await topics(state)
    if len(p) == 2 and p[0] == "topics":
        return await topic(state, p[1])
    if len(p) == 5 and p[0] == "topics" and p[2] == "partitions" and p[4] == "messages":
        return await messages(state, p[1], p[3], req.query)
    if p == ["groups"]:
        return await groups(state)
    if len(p) == 2 and p[0] == "groups":
        return await group(state, p[1])
    if p == ["schemas"]:
        return schemas.subjects(state)
    if len(p) == 2 and p[0] == "schemas":
        return schemas.subject(state, p[1])
    raise ApiError(404, f"no such endpoint: {req.path}")


# -- parameters ---------------------------------------------------------------------------------------
def int_param(query: dict[str, str], name: str, default: int | None, lo: int, hi: int | None = None) -> int | None:
    """An integer parameter, clamped to [lo, hi]; text is a 400 naming the parameter."""
    raw = query.get(name, "")
    if raw == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ApiError(400, f"{name} must be an integer, got {raw[:40]!r}") from None
    if value < lo:
        raise ApiError(400, f"{name} must be at least {lo}, got {value}")
    return value if hi is None else min(value, hi)


def timestamp_param(raw: str) -> int:
    """Milliseconds since the epoch, or an ISO 8601 date-time (UTC unless it names a zone)."""
    raw = raw.strip()
    if raw.lstrip("-").isdigit():
        return int(raw)
    try:
        dt = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise ApiError(400, f"timestamp must be milliseconds or ISO 8601, got {raw[:40]!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


def _topic_info(state: BrokerState, name: str) -> Any:
    info = state.topics.get(name)
    if info is None:
        raise ApiError(404, f"unknown topic {name!r}")
    return info


async def _partition_log(state: BrokerState, name: str, raw: str) -> Any:
    info = _topic_info(state, name)
    try:
        partition = int(raw)
    except ValueError:
        raise ApiError(400, f"partition must be an integer, got {raw[:40]!r}") from None
    if not 0 <= partition < info.partitions:
        raise ApiError(404, f"topic {name!r} has no partition {partition} (it has {info.partitions})")
    await state.ensure_loaded([(name, partition)])
    plog = state.get_log(name, partition)
    if plog is None:
        raise ApiError(404, f"partition {name}-{partition} is not on this broker (deleted meanwhile?)")
    return plog


# -- broker -------------------------------------------------------------------------------------------
def _mask(name: str, value: str | None) -> str | None:
    return "[hidden]" if value is not None and any(s in name for s in _SENSITIVE) else value


def overview(state: BrokerState) -> dict[str, Any]:
    configs = [{"name": e.name, "value": None if e.sensitive else _mask(e.name, e.value), "source": e.source,
                "read_only": e.read_only} for e in describe_broker(state)]
    return {
        "cluster_id": state.cluster_id, "node_id": state.node_id, "log_dir": str(state.log_dir),
        "listeners": [{"name": str(getattr(lst, "name", "")), "host": lst.host, "port": lst.port}
                      for lst in state.listeners],
        "advertised": [{"name": str(getattr(lst, "name", "")), "host": lst.host, "port": lst.port}
                       for lst in state.advertised_listeners],
        "topics": len(state.topics), "connections": len(state.connections),
        "draining": state.purgatory.draining, "configs": configs,
        "brokers": _brokers(state), "time_ms": int(time.time() * 1000),
    }


def _brokers(state: BrokerState) -> list[dict[str, Any]]:
    """The brokers: the cluster's (``kafkalite serve --brokers N``, running or not) or this one."""
    cluster = state.cluster
    if cluster is not None:
        return list(cluster.broker_rows())
    lst = state.advertised_listeners[0] if state.advertised_listeners else None
    return [{"node_id": state.node_id, "host": lst.host if lst else "", "port": lst.port if lst else 0, "up": True}]


def _placement(state: BrokerState, name: str, p: int) -> dict[str, Any]:
    """A partition's leader, replicas, ISR and offline replicas: the cluster's placement, or this broker."""
    cluster = state.cluster
    placed = cluster.placement(name, p) if cluster is not None else None
    if placed is None:
        me = state.node_id
        return {"leader": me, "leader_epoch": None, "replicas": [me], "isr": [me], "offline": []}
    leader, epoch, replicas, isr, offline = placed
    return {"leader": leader, "leader_epoch": epoch, "replicas": replicas, "isr": isr, "offline": offline}


# -- topics -------------------------------------------------------------------------------------------
async def topics(state: BrokerState) -> dict[str, Any]:
    loaded: dict[str, list[Any]] = {}
    work = Slices()
    for (name, _p), plog in state.logs.loaded_logs():
        if work.due():
            await work.pause()
        loaded.setdefault(name, []).append(plog)
    out = []
    for name, info in sorted(state.topics.items()):
        if work.due():
            await work.pause()
        size = start = end = 0
        plogs = loaded.get(name, [])
        for plog in plogs:
            try:
                size += plog.size_bytes
                start += plog.log_start_offset
                end += plog.high_watermark
            except (StorageError, OSError):   # deleted or offline meanwhile
                continue
        out.append({"name": name, "partitions": info.partitions, "internal": info.internal,
                    "topic_id": str(info.topic_id), "size": size, "messages": end - start, "end_offsets": end,
                    "loaded": len(plogs), "overrides": len(info.config)})
    return {"topics": out, "time_ms": int(time.time() * 1000)}


async def topic(state: BrokerState, name: str) -> dict[str, Any]:
    info = _topic_info(state, name)
    shown = min(info.partitions, MAX_PARTITIONS_SHOWN)
    await state.ensure_loaded([(name, p) for p in range(shown)])
    parts = []
    work = Slices()
    for p in range(shown):
        if work.due():
            await work.pause()
        plog = state.get_log(name, p)
        placed = _placement(state, name, p)
        if plog is None:
            if state.cluster is None:
                continue
            # a partition this broker holds no replica of: its place in the cluster, no log figures
            parts.append({"partition": p, **placed, "log_start_offset": None, "high_watermark": None,
                          "last_stable_offset": None, "log_end_offset": None, "size": None,
                          "segment_count": None, "segments": []})
            continue
        segs = [{"file": seg.file.path.rsplit("/", 1)[-1], "base_offset": seg.base_offset,
                 "next_offset": seg.next_offset, "size": seg.size, "max_timestamp": seg.max_timestamp}
                for seg in plog.segments[:MAX_SEGMENTS_SHOWN]]
        parts.append({"partition": p, **placed, "log_start_offset": plog.log_start_offset,
                      "high_watermark": plog.high_watermark, "last_stable_offset": plog.last_stable_offset,
                      "log_end_offset": plog.log_end_offset, "size": plog.size_bytes,
                      "segment_count": len(plog.segments), "segments": segs})
    configs = [{"name": e.name, "value": None if e.sensitive else e.value, "source": e.source,
                "default": e.is_default} for e in describe_topic(state, info.config)]
    return {"name": name, "topic_id": str(info.topic_id), "internal": info.internal,
            "partition_count": info.partitions, "partitions": parts, "configs": configs,
            "time_ms": int(time.time() * 1000)}


# -- records ------------------------------------------------------------------------------------------
async def messages(state: BrokerState, name: str, raw_partition: str, query: dict[str, str]) -> dict[str, Any]:
    plog = await _partition_log(state, name, raw_partition)
    mode = query.get("from", "end") or "end"
    if mode not in ("end", "offset", "timestamp", "beginning"):
        raise ApiError(400, f"from must be end, beginning, offset or timestamp, got {mode[:40]!r}")
    limit = int_param(query, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    window = int_param(query, "window", DEFAULT_WINDOW, 1, MAX_WINDOW)
    assert limit is not None and window is not None
    needle = query.get("q", "")
    if len(needle) > MAX_QUERY:
        raise ApiError(400, f"q is at most {MAX_QUERY} characters")
    field = query.get("in", "any") or "any"
    if field not in ("any", "key", "value"):
        raise ApiError(400, f"in must be any, key or value, got {field[:40]!r}")
    start, hw = plog.log_start_offset, plog.high_watermark
    if mode == "offset":
        offset = int_param(query, "offset", None, 0)
        if offset is None:
            raise ApiError(400, "from=offset needs offset=N")
    elif mode == "timestamp":
        raw_ts = query.get("timestamp", "")
        if not raw_ts:
            raise ApiError(400, "from=timestamp needs timestamp=MS or an ISO 8601 date-time")
        ts = timestamp_param(raw_ts)
        # the time index is read from disk: off the loop, as ListOffsets does
        found = await trio.to_thread.run_sync(plog.offset_for_timestamp, ts, limiter=READERS)
        offset = found[0] if found is not None else hw
    elif mode == "beginning":
        offset = start
    else:
        offset = max(start, hw - limit) if not needle else max(start, hw - window)
    first = min(max(offset, start), hw)
    scan = _Scan(first, hw, limit, window if needle else limit, needle.encode("utf-8"), field)
    budget = SEARCH_BYTES if needle else BROWSE_BYTES
    while not scan.done and scan.next_offset < hw and budget > 0:
        try:
            regions = plog.read(scan.next_offset, min(CHUNK_BYTES, budget), min_one=True)
        except Exception as exc:   # retention or deletion moved the log start past us meanwhile
            if plog.log_start_offset > scan.next_offset:
                scan.next_offset = plog.log_start_offset
                continue
            raise ApiError(503, f"cannot read {name}-{raw_partition}: {exc}") from None
        if not regions:
            break
        budget -= sum(n for _f, _p, n in regions)
        try:
            await trio.to_thread.run_sync(scan.decode, regions, limiter=READERS)
        except Exception as exc:   # a corrupt or over-large batch: show what was read before it
            scan.stopped = f"unreadable batch after offset {scan.next_offset}: {exc}"
            break
    return {"topic": name, "partition": int(raw_partition), "log_start_offset": start, "high_watermark": hw,
            "from_offset": first, "requested_offset": offset, "limit": limit,
            "window": window if needle else None, "scanned": scan.scanned, "next_offset": scan.next_offset,
            "stopped": scan.stopped or ("end" if scan.next_offset >= hw else "bytes"),
            "records": scan.out}


class _Scan:
    """Decodes file regions (worker thread) into shown records, from ``next_offset`` up to ``hw``."""

    def __init__(self, first: int, hw: int, limit: int, window: int, needle: bytes, field: str) -> None:
        self.next_offset = first
        self.hw = hw
        self.limit = limit
        self.window = window
        self.needle = needle
        self.field = field
        self.scanned = 0
        self.shown_bytes = 0
        self.out: list[dict[str, Any]] = []
        self.done = False
        self.stopped: str | None = None

    def decode(self, regions: list[tuple[Any, int, int]]) -> None:
        for handle, pos, n in regions:
            data = memoryview(handle.pread(n, pos))
            for bpos, hdr in iter_batches(data):
                if hdr.last_offset < self.next_offset:
                    continue
                if hdr.is_control:
                    self.next_offset = hdr.next_offset
                    continue
                for rec in batch_records(data[bpos:bpos + hdr.size], limit=INFLATE_LIMIT):
                    if rec.offset < self.next_offset:
                        continue
                    if rec.offset >= self.hw:
                        self._stop("end")
                        return
                    self.next_offset = rec.offset + 1
                    self.scanned += 1
                    if self._wanted(rec):
                        self._add(rec, hdr)
                    if len(self.out) >= self.limit:
                        self._stop("limit")
                        return
                    if self.scanned >= self.window:
                        self._stop("window")
                        return
                    if self.shown_bytes >= MAX_SHOWN_TOTAL:
                        self._stop("bytes")
                        return
                self.next_offset = max(self.next_offset, hdr.next_offset)

    def _stop(self, why: str) -> None:
        self.done = True
        self.stopped = why

    def _wanted(self, rec: Any) -> bool:
        if not self.needle:
            return True
        if self.field in ("any", "key") and rec.key is not None and self.needle in rec.key:
            return True
        return self.field in ("any", "value") and rec.value is not None and self.needle in rec.value

    def _add(self, rec: Any, hdr: Any) -> None:
        key, value = show(rec.key), show(rec.value)
        headers = [{"key": k[:256], "value": show(v, 1024)} for k, v in rec.headers[:64]]
        self.shown_bytes += sum(len(x["text"]) for x in (key, value) if x) + 64
        self.out.append({"offset": rec.offset, "timestamp": rec.timestamp,
                         "timestamp_type": "LogAppendTime" if hdr.is_log_append_time else "CreateTime",
                         "key": key, "value": value, "headers": headers, "more_headers": len(rec.headers) > 64,
                         "compression": hdr.codec_name, "transactional": hdr.is_transactional,
                         "producer_id": hdr.producer_id})


# -- groups -------------------------------------------------------------------------------------------
def _coordinator(state: BrokerState) -> Any:
    return state.groups.coordinator if state.groups is not None else None


async def _high_watermarks(state: BrokerState, work: Slices) -> dict[tuple[str, int], int]:
    out = {}
    for key, plog in state.logs.loaded_logs():
        if work.due():
            await work.pause()
        try:
            out[key] = plog.high_watermark
        except (StorageError, OSError):   # deleted or offline meanwhile
            continue
    return out


async def groups(state: BrokerState) -> dict[str, Any]:
    """Every group of every type (classic, consumer = KIP-848, streams = KIP-1071, share = KIP-932): state,
    members, lag."""
    work = Slices()
    ends = await _high_watermarks(state, work)
    out = []
    for g in all_groups(state):
        if work.due():
            await work.pause()
        lag = 0
        for tp, committed in g.offsets.items():
            end = ends.get(tp)
            if end is not None:
                lag += max(end - committed, 0)
        out.append({"group_id": g.group_id, "type": g.type, "state": g.state, "protocol_type": g.protocol_type,
                    "members": g.members, "partitions": len(g.offsets),
                    "lag": lag if g.type != "share" else None})
    return {"groups": out, "time_ms": int(time.time() * 1000)}


def _names_by_id(state: BrokerState) -> dict[Any, str]:
    return {info.topic_id: name for name, info in list(state.topics.items())}


def _typed_members(state: BrokerState, gid: str) -> tuple[str, str, list[dict[str, Any]], dict[tuple[str, int], str]] | None:
    """(type, state, members, owner of each assigned partition) of a consumer, streams or share group, else
    None. A streams member owns the input partitions of its active tasks (task s_p reads partition p of each of
    subtopology s's source topics); its tasks are listed as Kafka's kafka-streams-groups tool lists them."""
    names = _names_by_id(state)
    members: list[dict[str, Any]] = []
    owner: dict[tuple[str, int], str] = {}
    cg = consumer_group(state, gid)
    if cg is not None:
        for m in list(cg.members.values()):
            tps = sorted((names.get(tid, str(tid)), p) for tid, ps in m.assigned.items() for p in ps)
            members.append(_member(m.member_id, m.instance_id, m.client_id, m.client_host, tps,
                                   epoch=m.member_epoch, member_state=m.state.name))
            owner.update((tp, m.member_id) for tp in tps)
        return "consumer", cg.state(), members, owner
    st = streams_group(state, gid)
    if st is not None:
        inputs = st.configured.inputs if st.configured is not None else {}
        for m in list(st.members.values()):
            tps = sorted({(t, p) for s, ps in m.assigned.active.items() for p in ps for t in inputs.get(s, ())})
            tasks = {kind: sorted(f"{s}_{p}" for s, ps in getattr(m.assigned, kind).items() for p in ps)
                     for kind in ("active", "standby", "warmup")}
            members.append(_member(m.member_id, m.instance_id, m.client_id, m.client_host, tps,
                                   epoch=m.member_epoch, member_state=m.state, process_id=m.process_id,
                                   tasks=tasks))
            owner.update((tp, m.member_id) for tp in tps)
        return "streams", st.state(), members, owner
    sg = share_group(state, gid)
    if sg is not None:
        for m in list(sg.members.values()):
            tps = sorted((names.get(tid, str(tid)), p) for tid, p in m.assignment)
            members.append(_member(m.member_id, None, m.client_id, m.client_host, tps, epoch=m.member_epoch))
            owner.update((tp, m.member_id) for tp in tps)
        return "share", sg.state, members, owner
    return None


def _member(member_id: str, instance_id: str | None, client_id: str, client_host: str,
            tps: list[tuple[str, int]], **extra: Any) -> dict[str, Any]:
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    return {"member_id": member_id, "group_instance_id": instance_id, "client_id": client_id,
            "client_host": client_host, "assignment": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
            **extra}


async def group(state: BrokerState, gid: str) -> dict[str, Any]:
    coordinator = _coordinator(state)
    g = (getattr(coordinator, "groups", {}) or {}).get(gid)
    typed = _typed_members(state, gid)
    if typed is not None:
        return await _typed_group(state, gid, g, *typed)
    if g is None or getattr(g.state, "value", "") == "Dead":
        raise ApiError(404, f"unknown group {gid!r}")
    st = g.state.value
    members = []
    assigned: dict[tuple[str, int], str] = {}
    for m in list(g.members.values()):
        parts = parse_assignment(m.assignment) if st == "Stable" and g.protocol_type == "consumer" else None
        for topic_name, ps in parts or ():
            for p in ps:
                assigned[(topic_name, p)] = m.member_id
        members.append({"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id, "client_host": m.client_host,
                        "assignment": [{"topic": t, "partitions": ps} for t, ps in parts or ()]})
    return {"group_id": gid, "type": "classic", "state": st, "protocol_type": g.protocol_type or "",
            "protocol": g.protocol_name or "", "generation": g.generation_id, "leader": g.leader_id,
            "members": members, "offsets": await _offsets(state, g, assigned), "time_ms": int(time.time() * 1000)}


async def _typed_group(state: BrokerState, gid: str, store: Any, gtype: str, st: str, members: list[dict[str, Any]],
                       owner: dict[tuple[str, int], str]) -> dict[str, Any]:
    """A KIP-848 consumer group or a KIP-1071 streams group (offsets and lag as a classic group's) or a share
    group (its assignment)."""
    out = {"group_id": gid, "type": gtype, "state": st, "protocol_type": gtype, "protocol": "",
           "generation": None, "leader": None, "members": members,
           "offsets": await _offsets(state, store, owner, lag=gtype != "share"), "time_ms": int(time.time() * 1000)}
    if gtype == "share":
        out["share_partitions"] = [{"topic": t, "partition": p, "start_offset": start, "in_flight": n}
                                   for _g, t, p, start, n in share_partitions(state, gid)[:MAX_PARTITIONS_SHOWN]]
    return out


async def _offsets(state: BrokerState, g: Any, assigned: dict[tuple[str, int], str], lag: bool = True) -> list[dict[str, Any]]:
    """Per partition (committed or assigned): committed offset, log start, high watermark, owner, lag."""
    committed_offsets = dict(getattr(g, "offsets", {}) or {}) if lag else {}
    keys = sorted(set(committed_offsets) | set(assigned))[:MAX_PARTITIONS_SHOWN]
    await state.ensure_loaded([k for k in keys if k[0] in state.topics])
    offsets = []
    work = Slices()
    for tp in keys:
        if work.due():
            await work.pause()
        om = committed_offsets.get(tp)
        plog = state.get_log(*tp) if tp[0] in state.topics else None
        end = plog.high_watermark if plog is not None else None
        committed = om.offset if om is not None else None
        offsets.append({"topic": tp[0], "partition": tp[1], "committed": committed,
                        "log_start_offset": plog.log_start_offset if plog is not None else None,
                        "high_watermark": end, "member": assigned.get(tp),
                        "lag": None if end is None or committed is None else max(end - committed, 0),
                        "metadata": om.metadata[:256] if om is not None else None})
    return offsets


def parse_assignment(data: bytes) -> list[tuple[str, list[int]]] | None:
    """The topic partitions of a ConsumerProtocolAssignment (any version: int16 version, then
    [topic: string, partitions: [int32]], then user data that is ignored); None if it does not parse."""
    buf = bytes(data)
    try:
        pos = 2
        n = int.from_bytes(buf[pos:pos + 4], "big", signed=True)
        pos += 4
        if len(buf) < 6 or n < 0 or n > len(buf):
            return None
        out = []
        for _ in range(n):
            ln = int.from_bytes(buf[pos:pos + 2], "big", signed=True)
            pos += 2
            if ln < 0 or pos + ln > len(buf):
                return None
            name = buf[pos:pos + ln].decode("utf-8")
            pos += ln
            count = int.from_bytes(buf[pos:pos + 4], "big", signed=True)
            pos += 4
            if count < 0 or pos + 4 * count > len(buf):
                return None
            ps = [int.from_bytes(buf[pos + 4 * i:pos + 4 * i + 4], "big", signed=True) for i in range(count)]
            pos += 4 * count
            out.append((name, ps))
        return out
    except (UnicodeDecodeError, ValueError):
        return None
