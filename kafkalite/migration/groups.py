"""Committed offsets of consumer groups, translated through the offset map, and group configs.

Every classic and consumer (KIP-848) group of the source whose id matches ``--groups`` has its committed offsets
read (OffsetFetch) and written to the target (AlterConsumerGroupOffsets = OffsetCommit of an empty group), each
translated through the partition's offset map (:meth:`~kafkalite.migration.offsetmap.PartitionMap.translate`):
the target offset of the first copied record at or after the committed one, so a consumer that resumes on the
target reads exactly the records it had not read on the source. Offset metadata strings are kept; the
committed leader epoch is not (it is an epoch of the source's leaders; the target's consumers validate against
the target's). Groups whose dynamic configs were set (DescribeConfigs GROUP) get them on the target.

Not carried, and reported: committed offsets of partitions the migration did not copy (outside ``--topics``,
or beyond what has been copied), the members, their assignments and static instance ids (consumers join the
target's group anew; the group type follows the first member's protocol), and share groups (their state lives
in ``__share_group_state`` as per-record acquisition state with no Kafka API that writes it).

AlterConsumerGroupOffsets is refused by a target group with members (Kafka: UNKNOWN_MEMBER_ID /
GROUP_SUBSCRIBED_TO_TOPIC): move the consumers after the migration, or stop them first.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from kafkalite.migration.offsetmap import PartitionMap
from kafkalite.migration.source import Source
from kafkalite_wire.messages import ListGroupsRequest

TP = tuple[str, int]
# COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
_COORDINATOR_RETRY = {14, 15, 16}


@dataclass
class GroupPlan:
    group: str
    kind: str                                            # "classic" or "consumer"
    offsets: dict[TP, tuple[int, str]] = field(default_factory=dict)   # source offset, metadata
    translated: dict[TP, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)


def list_groups(admin: Any, timeout: float) -> dict[str, str]:
    """Classic and consumer groups of the source: id -> "classic" / "consumer"."""
    res = admin.list_consumer_groups(request_timeout=timeout).result(timeout=timeout)
    out: dict[str, str] = {}
    for g in res.valid:
        kind = getattr(getattr(g, "type", None), "name", "CLASSIC").lower()
        out[g.group_id] = "consumer" if kind == "consumer" else "classic"
    return out


def share_groups(source: Source) -> list[str]:
    """Share groups (KIP-932): listed to be reported, never carried."""
    meta = source.meta or source.metadata()
    out: set[str] = set()
    for addr in meta.brokers.values():
        try:
            r = source._request(addr, ListGroupsRequest(types_filter=["share"]), 5)
        except Exception:   # a source without ListGroups v5: no share groups to report
            return []
        if not r.error_code:
            out.update(g.group_id for g in r.groups)
    return sorted(out)


def committed(admin: Any, group: str, timeout: float) -> dict[TP, tuple[int, str]]:
    from confluent_kafka import ConsumerGroupTopicPartitions  # confluent-kafka: checked by the CLI

    deadline = time.monotonic() + timeout
    while True:
        try:
            fut = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=timeout)
            res = fut[group].result(timeout=timeout)
            break
        except Exception as exc:
            err: Any = exc.args[0] if exc.args else None
            if not (hasattr(err, "code") and err.code() in _COORDINATOR_RETRY) or time.monotonic() > deadline:
                raise
            time.sleep(0.3)
    return {(tp.topic, tp.partition): (tp.offset, tp.metadata or "")
            for tp in res.topic_partitions if tp.offset >= 0 and not tp.error}


def plan_group(group: str, kind: str, offsets: dict[TP, tuple[int, str]], maps: dict[TP, PartitionMap],
               migrated: set[str]) -> GroupPlan:
    gp = GroupPlan(group, kind, offsets)
    for tp, (off, _md) in sorted(offsets.items()):
        if tp[0] not in migrated:
            gp.skipped.append(f"{tp[0]}-{tp[1]}: topic not migrated")
            continue
        m = maps.get(tp)
        target = m.translate(off) if m is not None else None
        if target is None:
            gp.skipped.append(f"{tp[0]}-{tp[1]}: committed offset {off} is beyond what was copied "
                              f"({m.src_next if m else 0}); run the migration again after the source stops")
            continue
        gp.translated[tp] = target
    return gp


def write(admin: Any, gp: GroupPlan, timeout: float) -> str | None:
    """Commit the translated offsets on the target; an error message, or None."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition  # as above

    if not gp.translated:
        return None
    tps = []
    for (t, p), off in sorted(gp.translated.items()):
        md = gp.offsets[(t, p)][1]
        tps.append(TopicPartition(t, p, off, md) if md else TopicPartition(t, p, off))
    deadline = time.monotonic() + timeout
    while True:   # the target's __consumer_offsets may still be being created or loaded: its errors are retried
        try:
            fut = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(gp.group, tps)],
                                                     request_timeout=timeout)
            res = fut[gp.group].result(timeout=timeout)
            errs = [tp.error for tp in res.topic_partitions if tp.error]
            if not errs:
                return None
            if all(e.code() in _COORDINATOR_RETRY for e in errs) and time.monotonic() < deadline:
                time.sleep(0.3)
                continue
            return "; ".join(f"{tp.topic}-{tp.partition}: {tp.error.str()}" for tp in res.topic_partitions
                             if tp.error)
        except Exception as exc:
            err: Any = exc.args[0] if exc.args else None
            if getattr(err, "code", None) and err.code() in _COORDINATOR_RETRY and time.monotonic() < deadline:
                time.sleep(0.3)
                continue
            return _message(exc)


def target_committed(admin: Any, group: str, timeout: float) -> dict[TP, int]:
    return {tp: off for tp, (off, _md) in committed(admin, group, timeout).items()}


def copy_configs(src_admin: Any, tgt_admin: Any, groups: list[str], timeout: float) -> list[str]:
    """Dynamic group configs (KIP-848's consumer.* and share.* per group); the problems, reported."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource  # as above

    problems: list[str] = []
    if not groups:
        return problems
    try:
        futs = src_admin.describe_configs([ConfigResource(ConfigResource.Type.GROUP, g) for g in groups])
    except Exception as exc:
        return [f"group configs: {_message(exc)}"]
    for res, fut in futs.items():
        try:
            entries = fut.result(timeout=timeout)
        except Exception as exc:
            problems.append(f"group {res.name}: configs not read: {_message(exc)}")
            continue
        dyn = [ConfigEntry(k, e.value, incremental_operation=AlterConfigOpType.SET) for k, e in entries.items()
               if e.source == ConfigSource.GROUP_CONFIG.value and e.value is not None]
        if not dyn:
            continue
        tres = ConfigResource(ConfigResource.Type.GROUP, res.name, incremental_configs=dyn)
        try:
            tgt_admin.incremental_alter_configs([tres])[tres].result(timeout=timeout)
        except Exception as exc:
            problems.append(f"group {res.name}: configs not carried: {_message(exc)}")
    return problems


def _message(exc: BaseException) -> str:
    err: Any = exc.args[0] if exc.args else None
    if hasattr(err, "str") and hasattr(err, "name"):
        return f"{err.name()}: {err.str()}"
    return str(exc)


def matches(pattern: str, name: str) -> bool:
    return re.fullmatch(pattern, name) is not None

