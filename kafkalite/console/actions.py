"""The console's mutating endpoints (POST, JSON body; the HTTP layer has checked the token and Origin).

    /api/topics                          {"name", "partitions"?, "configs"?: {k: v}}      create a topic
    /api/topics/<t>/delete               {"confirm": "<t>"}                               delete a topic
    /api/groups/<g>/reset-offsets        {"topic", "partitions"?: [p], "to": "earliest"|"latest"|"offset"|
                                          "timestamp"|"shift", "value"?, "execute"?: bool}

The page's confirmation step is part of the API, so no script can skip it by accident: a delete names the
topic again in ``confirm``; a reset without ``"execute": true`` is a dry run that answers the plan (current
and new offset per partition), as kafka-consumer-groups' ``--dry-run`` does, and the page shows that plan
before the user executes it.

Kafka's rules: a topic is created and deleted as CreateTopics/DeleteTopics do here (the name reserved in
``pending_topics`` while its directories are made or removed in a worker thread; internal topics refused;
configs through the same validation); offsets are reset only for a group with no members (Kafka's
kafka-consumer-groups refuses "the group is not inactive"), through the coordinator's simple commit
(generation -1, accepted only while the group is Empty), and each new offset is clamped to the partition's
[log start, high watermark], as the tool clamps it.
"""
from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

import trio

from kafkalite.config.describe import validate_topic_configs
from kafkalite.console.api import timestamp_param
from kafkalite.coordinator.classic.group import OffsetAndMetadata
from kafkalite.httpd.server import HttpError as ApiError
from kafkalite.httpd.server import Request
from kafkalite.metadata import RESERVED_TOPICS, invalid_topic_name
from kafkalite.metrics.requests import error_name
from kafkalite.runtime.slices import Slices

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

log = logging.getLogger(__name__)

MAX_CREATE_PARTITIONS = 10_000
MAX_RESET_PARTITIONS = 10_000


async def dispatch(state: BrokerState, req: Request) -> Any:
    p = req.parts[1:]
    body = req.json()
    if p == ["topics"]:
        return await create_topic(state, body)
    if len(p) == 3 and p[0] == "topics" and p[2] == "delete":
        return await delete_topic(state, p[1], body)
    if len(p) == 3 and p[0] == "groups" and p[2] == "reset-offsets":
        return await reset_offsets(state, p[1], body)
    raise ApiError(404, f"no such action: {req.path}")


def _int(body: dict[str, Any], name: str, default: int | None = None) -> int:
    value = body.get(name, default)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ApiError(400, f"{name} must be an integer")
    return value


async def create_topic(state: BrokerState, body: dict[str, Any]) -> dict[str, Any]:
    name = body.get("name")
    if not isinstance(name, str):
        raise ApiError(400, "name must be a string")
    if (why := invalid_topic_name(name)) is not None:
        raise ApiError(400, why)
    partitions = _int(body, "partitions", state.config.num_partitions)
    if not 1 <= partitions <= MAX_CREATE_PARTITIONS:
        raise ApiError(400, f"partitions must be 1..{MAX_CREATE_PARTITIONS}")
    configs = body.get("configs") or {}
    if not isinstance(configs, dict) or not all(isinstance(k, str) and isinstance(v, (str, int, float))
                                                and not isinstance(v, bool) for k, v in configs.items()):
        raise ApiError(400, "configs must be an object of names to values")
    overrides = {k: str(v) for k, v in configs.items()}
    if name in RESERVED_TOPICS:
        raise ApiError(400, f"creation of internal topic {name} is prohibited")
    if name in state.topics or name in state.pending_topics:
        raise ApiError(409, f"topic {name!r} already exists (or is being created or deleted)")
    collides = {t.replace(".", "_"): t for t in (*state.topics, *state.pending_topics)}.get(name.replace(".", "_"))
    if collides is not None:
        raise ApiError(409, f"topic {name!r} collides with existing topic {collides!r} ('.' and '_')")
    if (why := validate_topic_configs(state, overrides)) is not None:
        raise ApiError(400, why)
    topic_id = uuid.uuid4()
    state.pending_topics.add(name)   # reserved before any await, as CreateTopics does
    try:
        await trio.to_thread.run_sync(state.topics.create_logs, name, partitions, overrides, topic_id)
        state.topics.register(name, partitions, overrides, topic_id)
    except OSError as exc:   # StorageError included: the disk said no; nothing is left of the topic
        raise ApiError(503, f"cannot create topic {name!r}: {exc}") from None
    finally:
        state.pending_topics.discard(name)
    log.info("console: created topic %s (%d partitions)", name, partitions)
    return {"created": name, "partitions": partitions, "topic_id": str(topic_id)}


async def delete_topic(state: BrokerState, name: str, body: dict[str, Any]) -> dict[str, Any]:
    info = state.topics.get(name)
    if info is None:
        raise ApiError(404, f"unknown topic {name!r}")
    if body.get("confirm") != name:
        raise ApiError(400, "confirm the deletion: send the topic's name as confirm")
    if info.internal:
        raise ApiError(403, "internal topics cannot be deleted")
    if name in state.pending_topics:
        raise ApiError(409, f"topic {name!r} is being changed; retry")
    state.pending_topics.add(name)   # until its directories are gone
    try:
        plogs = state.topics.unregister(name)
        try:
            await trio.to_thread.run_sync(state.topics.remove_logs, plogs)
        except OSError as exc:   # the topic is gone; a leftover -delete directory goes at next start
            log.error("removing the directories of deleted topic %s failed: %s", name, exc)
    finally:
        state.pending_topics.discard(name)
    log.info("console: deleted topic %s", name)
    return {"deleted": name}


async def reset_offsets(state: BrokerState, gid: str, body: dict[str, Any]) -> dict[str, Any]:
    svc = state.groups
    if svc is None:
        raise ApiError(503, "the group coordinator is not running")
    topic_name = body.get("topic")
    if not isinstance(topic_name, str) or topic_name not in state.topics:
        raise ApiError(404 if isinstance(topic_name, str) else 400, f"unknown topic {topic_name!r}")
    info = state.topics[topic_name]
    wanted = body.get("partitions")
    if wanted is None:
        partitions = list(range(min(info.partitions, MAX_RESET_PARTITIONS)))
    elif isinstance(wanted, list) and all(isinstance(p, int) and not isinstance(p, bool) for p in wanted):
        partitions = sorted(set(wanted))[:MAX_RESET_PARTITIONS]
        bad = [p for p in partitions if not 0 <= p < info.partitions]
        if bad:
            raise ApiError(400, f"topic {topic_name!r} has no partition {bad[0]}")
    else:
        raise ApiError(400, "partitions must be a list of integers")
    to = body.get("to")
    if to not in ("earliest", "latest", "offset", "timestamp", "shift"):
        raise ApiError(400, "to must be earliest, latest, offset, timestamp or shift")
    value = 0
    if to in ("offset", "shift"):
        value = _int(body, "value")
    elif to == "timestamp":
        raw = body.get("value")
        if not isinstance(raw, (str, int)) or isinstance(raw, bool):
            raise ApiError(400, "value must be a timestamp (milliseconds or ISO 8601)")
        value = timestamp_param(str(raw))
    execute = body.get("execute", False) is True
    coordinator = svc.coordinator
    group = coordinator.groups.get(gid)
    keys = [(topic_name, p) for p in partitions]
    await state.ensure_loaded(keys)
    plan: list[dict[str, Any]] = []
    work = Slices()
    for tp in keys:
        if work.due():
            await work.pause()
        plog = state.get_log(*tp)
        if plog is None:
            continue
        start, end = plog.log_start_offset, plog.high_watermark
        om = group.offsets.get(tp) if group is not None else None
        current = om.offset if om is not None else None
        if to == "earliest":
            new = start
        elif to == "latest":
            new = end
        elif to == "offset":
            new = value
        elif to == "shift":
            new = (current if current is not None else end) + value
        else:
            found = await trio.to_thread.run_sync(plog.offset_for_timestamp, value)
            new = found[0] if found is not None else end
        plan.append({"topic": tp[0], "partition": tp[1], "current": current,
                     "new": min(max(new, start), end), "log_start_offset": start, "high_watermark": end})
    if not execute:
        return {"group_id": gid, "executed": False, "plan": plan}
    group = coordinator.groups.get(gid)   # re-read after the awaits above
    if group is not None and (group.members or group.state.value not in ("Empty", "Dead")):
        raise ApiError(409, f"assignments can only be reset if the group {gid!r} is inactive, but the current "
                            f"state is {group.state.value} with {len(group.members)} member(s)")
    now = svc.now_ms()
    offsets = {(r["topic"], r["partition"]): OffsetAndMetadata(offset=r["new"], commit_timestamp=now)
               for r in plan}
    errors = svc.commit_offsets(gid, "", None, -1, offsets)
    failed = {f"{t}-{p}": error_name(e) for (t, p), e in errors.items() if e}
    if failed:
        raise ApiError(409, f"the coordinator refused the commit: {failed}")
    log.info("console: reset offsets of group %s on %s (%d partitions, to %s)", gid, topic_name, len(plan), to)
    return {"group_id": gid, "executed": True, "plan": plan}
