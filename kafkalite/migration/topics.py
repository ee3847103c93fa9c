"""Target topics: the same partition counts and topic configs, a replication factor chosen for the target.

A topic's *configs* are the ones set on the source topic (DescribeConfigs source DYNAMIC_TOPIC_CONFIG); the rest
stay the target's defaults, as they were the source's defaults. Left out, and reported: kafkalite's own
(``kafkalite.*``), replica placement throttles (they name replicas of the source), and any the target refuses as
unknown (Kafka 4 removed ``message.format.version`` and ``message.downconversion.enable``).
``min.insync.replicas`` above the replication factor is lowered to it (reported).

**Timestamps.** Produce cannot give a record a LogAppendTime of its choosing: a broker stamps LogAppendTime
batches with its own clock, and stores every batch of a CreateTime topic as CreateTime (Kafka's LogValidator
rewrites the batch's timestamp type to the topic's). So while the copy runs, a target topic is CreateTime and
accepts any timestamp (``message.timestamp.before.max.ms`` / ``after.max.ms`` at their maximum, which Kafka 4's
1-hour ``after.max.ms`` default would otherwise refuse for future timestamps), so every record keeps its source
timestamp *value*; afterwards the topic gets the source's settings back, LogAppendTime included. The copied
records of a LogAppendTime topic then carry their original append times with the type CreateTime (the
retention and time index of the target work from the original times); records written afterwards are stamped by
the target, as on the source. A topic that already existed on the target gets its own values back.
"""
from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafkalite.migration.state import State

LONG_MAX = "9223372036854775807"
TS_TYPE = "message.timestamp.type"
TS_BEFORE = "message.timestamp.before.max.ms"
TS_AFTER = "message.timestamp.after.max.ms"
TS_DIFF = "message.timestamp.difference.max.ms"
COPY_OVERRIDES = {TS_TYPE: "CreateTime", TS_BEFORE: LONG_MAX, TS_AFTER: LONG_MAX}
_NOT_CARRIED = re.compile(r"^(kafkalite\.|confluent\.)|^(leader|follower)\.replication\.throttled\.replicas$")


@dataclass
class TopicPlan:
    name: str
    partitions: int
    configs: dict[str, str]                 # the final configs of the target topic (source's, adjusted)
    replication_factor: int
    log_append_time: bool = False
    exists: bool = False                    # on the target before this run looked
    target_partitions: int = 0
    notes: list[str] = field(default_factory=list)
    deletable: bool = True                  # cleanup.policy includes delete (DeleteRecords allowed)
    max_message_bytes: int = 1048588

    def create_configs(self) -> dict[str, str]:
        conf = dict(self.configs)
        conf.update(COPY_OVERRIDES)
        conf.pop(TS_DIFF, None)
        return conf


def _result(future: Any, timeout: float) -> Any:
    return future.result(timeout=timeout)


@dataclass
class SourceTopic:
    """What the source says about a topic's configs."""

    dynamic: dict[str, str]            # the configs set on the topic
    log_append_time: bool = False
    cleanup_policy: str = "delete"
    max_message_bytes: int = 1048588


def source_configs(admin: Any, names: list[str], timeout: float) -> dict[str, SourceTopic]:
    from confluent_kafka.admin import ConfigResource, ConfigSource  # confluent-kafka: checked by the CLI

    out: dict[str, SourceTopic] = {}
    if not names:
        return out
    futures = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, n) for n in names])
    for res, fut in futures.items():
        entries = _result(fut, timeout)

        def value(key: str, default: str, entries: Any = entries) -> str:
            e = entries.get(key)
            return str(e.value) if e is not None and e.value is not None else default

        dynamic = {k: e.value for k, e in entries.items()
                   if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value and e.value is not None}
        mmb = value("max.message.bytes", "1048588")
        out[res.name] = SourceTopic(dynamic, value(TS_TYPE, "CreateTime") == "LogAppendTime",
                                    value("cleanup.policy", "delete"), int(mmb) if mmb.isdigit() else 1048588)
    return out


def plan_topics(src_partitions: dict[str, int], src_configs: dict[str, SourceTopic],
                target_topics: dict[str, int], rf: int) -> list[TopicPlan]:
    plans = []
    for name, n in sorted(src_partitions.items()):
        st = src_configs.get(name) or SourceTopic({})
        configs, lat = st.dynamic, st.log_append_time
        notes = []
        final: dict[str, str] = {}
        for k, v in configs.items():
            if _NOT_CARRIED.search(k):
                notes.append(f"config {k}={v} not carried (kafkalite's own or placement-specific)")
                continue
            final[k] = v
        mir = final.get("min.insync.replicas")
        if mir is not None and mir.isdigit() and int(mir) > rf:
            notes.append(f"min.insync.replicas {mir} lowered to the replication factor {rf}")
            final["min.insync.replicas"] = str(rf)
        p = TopicPlan(name, n, final, rf, lat, name in target_topics, target_topics.get(name, 0), notes,
                      "delete" in st.cleanup_policy.split(","), st.max_message_bytes)
        if p.exists and p.target_partitions < n:
            p.notes.append(f"exists on the target with {p.target_partitions} partitions: grown to {n}")
        elif p.exists and p.target_partitions > n:
            p.notes.append(f"exists on the target with {p.target_partitions} partitions (the source has {n}): "
                           "records keep their partition numbers, keyed producers will spread differently")
        if lat:
            p.notes.append("LogAppendTime: copied records keep their source append times as CreateTime "
                           "timestamps; the topic is LogAppendTime again after the copy")
        plans.append(p)
    return plans


def _unknown_config(message: str, configs: dict[str, str]) -> str | None:
    for k in sorted(configs, key=len, reverse=True):
        if k in message:
            return k
    return None


def ensure(admin: Any, plan: TopicPlan, state: State, timeout: float) -> None:
    """Create the topic (with the copy's timestamp settings) or prepare an existing one for the copy."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewPartitions, NewTopic

    st = state.topic(plan.name)
    if not plan.exists:
        configs = plan.create_configs()
        for _attempt in range(8):
            try:
                _result(admin.create_topics([NewTopic(plan.name, plan.partitions, plan.replication_factor,
                                                      config=configs)])[plan.name], timeout)
                break
            except KafkaException as exc:
                err = exc.args[0]
                if err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    break
                bad = _unknown_config(err.str(), configs) if err.code() == KafkaError.INVALID_CONFIG else None
                if bad is None or bad in COPY_OVERRIDES:
                    raise
                plan.notes.append(f"config {bad}={configs[bad]} not carried: the target refuses it "
                                  f"({err.str()})")
                configs.pop(bad)
                plan.configs.pop(bad, None)
        st["created"] = True
        st["configs"] = plan.configs
        state.save()
        return
    if plan.target_partitions < plan.partitions:
        _result(admin.create_partitions([NewPartitions(plan.name, plan.partitions)])[plan.name], timeout)
    if "restore" not in st and not st.get("created"):
        st["restore"] = current_values(admin, plan.name, list(COPY_OVERRIDES), timeout)
        state.save()
    set_configs(admin, plan.name, COPY_OVERRIDES, timeout)


def current_values(admin: Any, topic: str, keys: list[str], timeout: float) -> dict[str, str | None]:
    """The topic's own values of ``keys`` (None: not set on the topic, the default applies)."""
    from confluent_kafka.admin import ConfigResource, ConfigSource

    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = _result(admin.describe_configs([res])[res], timeout)
    return {k: (entries[k].value if k in entries and entries[k].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
                else None) for k in keys}


def set_configs(admin: Any, topic: str, values: Mapping[str, str | None], timeout: float) -> None:
    """IncrementalAlterConfigs: SET each value, DELETE each None."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) if v is not None
               else ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE)
               for k, v in values.items()]
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=entries)
    _result(admin.incremental_alter_configs([res])[res], timeout)


def finalize(admin: Any, plan: TopicPlan, state: State, timeout: float) -> None:
    """After the copy: the topic's timestamp settings as they should stay."""
    st = state.topic(plan.name)
    if st.get("created"):
        final: dict[str, str | None] = {k: plan.configs.get(k) for k in COPY_OVERRIDES}
    else:
        final = dict(st.get("restore") or {})
    set_configs(admin, plan.name, final, timeout)
    st["finalized"] = True
    state.save()


def wait_ready(admin: Any, plans: list[TopicPlan], timeout: float) -> None:
    """Until the target's metadata shows every planned topic with a leader for each partition (a topic just
    created is known to the controller before every broker has it)."""
    deadline = time.monotonic() + max(timeout, 30.0)
    for p in plans:
        while True:
            md = admin.list_topics(topic=p.name, timeout=timeout).topics.get(p.name)
            ok = (md is not None and md.error is None and len(md.partitions) >= p.partitions
                  and all(pm.leader >= 0 for pm in md.partitions.values()))
            if ok:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"topic {p.name} has no leader on the target for every partition yet")
            time.sleep(0.2)
