"""Configuring a streams topology against the broker's topics (Kafka's ``InternalTopicManager.configureTopics``,
``RepartitionTopics``, ``CopartitionedTopicsEnforcer``, ``ChangelogTopics``).

* Source topics (named, or matched by a regex) must exist, else MISSING_SOURCE_TOPICS.
* A repartition topic without a partition count takes the largest partition count of the source and repartition
  source topics of the subtopologies writing to it; topics of one copartition group must agree (source topics
  that differ: INCORRECTLY_PARTITIONED_TOPICS), and repartition topics in the group take the group's count.
* A subtopology has as many tasks as its largest input topic has partitions; its changelog topics have one
  partition per task unless the topology says otherwise.
* Internal topics that do not exist are to be created (MISSING_INTERNAL_TOPICS until they are); existing ones
  with another partition count are INCORRECTLY_PARTITIONED_TOPICS.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from kafkalite.coordinator.streams.model import Configured, Topology

STALE_TOPOLOGY, MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS, MISSING_INTERNAL_TOPICS = 0, 1, 2, 3
SHUTDOWN_APPLICATION, ASSIGNMENT_DELAYED = 4, 5


class InvalidTopology(Exception):
    """STREAMS_INVALID_TOPOLOGY, with Kafka's message."""


def resolve_sources(sub_sources: list[str], regexes: list[str], topics: Mapping[str, int]) -> list[str]:
    out = list(sub_sources)
    for rx in regexes:
        try:
            pat = re.compile(rx)
        except re.error as e:
            raise InvalidTopology(f"Invalid source topic regex {rx!r}: {e}") from None
        out += sorted(t for t in topics if pat.fullmatch(t) and t not in out and not t.startswith("__"))
    return out


def configure(topology: Topology, topics: Mapping[str, int]) -> Configured:
    """``topics``: the broker's topics and their partition counts."""
    subs = topology.subtopologies
    sources = {s.subtopology_id: resolve_sources(s.source_topics, s.source_topic_regex, topics) for s in subs}
    missing = sorted({t for s in subs for t in s.source_topics if t not in topics})
    missing_rx = [rx for s in subs for rx in s.source_topic_regex if not any(
        re.fullmatch(rx, t) for t in topics)]
    statuses: list[tuple[int, str]] = []
    if missing or missing_rx:
        detail = f"Source topics {', '.join(missing)} are missing." if missing else \
            f"Source topic regex {', '.join(missing_rx)} did not match any topic."
        return Configured({s.subtopology_id: 0 for s in subs}, {}, [(MISSING_SOURCE_TOPICS, detail)], False)

    # repartition topics' partitions: given, or derived from upstream subtopologies (iterate to a fixed point)
    repart: dict[str, int] = {}
    repart_info: dict[str, tuple[int, dict[str, str]]] = {}
    for s in subs:
        for name, parts, rf, cfg in s.repartition_source_topics:
            repart_info[name] = (rf, cfg)
            if parts > 0:
                repart[name] = parts
    changed = True
    while changed:
        changed = False
        for s in subs:
            known = [topics[t] for t in sources[s.subtopology_id]] + [
                repart[n] for n, *_ in s.repartition_source_topics if n in repart]
            if not known:
                continue
            for sink in s.repartition_sink_topics:
                if sink in repart_info and repart.get(sink, 0) < max(known) and not _fixed(subs, sink):
                    repart[sink] = max(known)
                    changed = True
    unknown = sorted(n for n in repart_info if n not in repart)
    if unknown:
        raise InvalidTopology(f"Failed to compute number of partitions for all repartition topics. Make sure that "
                              f"all non-repartition source topics exist: {', '.join(unknown)}")

    # copartition groups
    for s in subs:
        rnames = [n for n, *_ in s.repartition_source_topics]
        for src_idx, _rx_idx, rep_idx in s.copartition_groups:
            src = [s.source_topics[i] for i in src_idx if 0 <= i < len(s.source_topics)]
            reps = [rnames[i] for i in rep_idx if 0 <= i < len(rnames)]
            counts = {t: topics[t] for t in src}
            if len(set(counts.values())) > 1:
                detail = "Following topics do not have the same number of partitions: [" + ", ".join(
                    f"{t}={n}" for t, n in sorted(counts.items())) + "]"
                return Configured({x.subtopology_id: 0 for x in subs}, {},
                                  [(INCORRECTLY_PARTITIONED_TOPICS, detail)], False)
            target = max(list(counts.values()) + [repart[r] for r in reps]) if counts or reps else 0
            for r in reps:
                if not _fixed(subs, r):
                    repart[r] = target

    tasks: dict[str, int] = {}
    inputs: dict[str, list[str]] = {}
    for s in subs:
        ins = sources[s.subtopology_id] + [n for n, *_ in s.repartition_source_topics]
        inputs[s.subtopology_id] = ins
        sizes = [topics[t] for t in sources[s.subtopology_id]] + [repart[n] for n, *_ in s.repartition_source_topics]
        tasks[s.subtopology_id] = max(sizes) if sizes else 0

    wanted: dict[str, tuple[int, int, dict[str, str]]] = {}
    for name, parts in repart.items():
        rf, cfg = repart_info[name]
        wanted[name] = (parts, rf, cfg)
    for s in subs:
        for name, parts, rf, cfg in s.state_changelog_topics:
            wanted[name] = (parts if parts > 0 else tasks[s.subtopology_id], rf, cfg)
    to_create = {n: w for n, w in wanted.items() if n not in topics}
    wrong = sorted(n for n, w in wanted.items() if n in topics and topics[n] != w[0])
    if wrong:
        detail = "; ".join(f"Existing internal topic {n} has invalid number of partitions: expected: "
                           f"{wanted[n][0]}; actual: {topics[n]}" for n in wrong)
        statuses.append((INCORRECTLY_PARTITIONED_TOPICS, detail))
    if to_create:
        statuses.append((MISSING_INTERNAL_TOPICS, f"Internal topics are missing: [{', '.join(sorted(to_create))}]"))
    ready = not statuses
    return Configured(tasks if ready else {s.subtopology_id: 0 for s in subs}, to_create, statuses, ready, inputs,
                      wanted, sources)


def _fixed(subs: list, name: str) -> bool:   # type: ignore[type-arg]
    return any(n == name and parts > 0 for s in subs for n, parts, *_ in s.repartition_source_topics)


def validate(topology: Topology) -> None:
    """Kafka's ``TopologyValidationUtil``-style checks that make a topology STREAMS_INVALID_TOPOLOGY."""
    seen: set[str] = set()
    internal: set[str] = set()
    for s in topology.subtopologies:
        if not s.subtopology_id:
            raise InvalidTopology("Subtopology ID can't be empty.")
        if s.subtopology_id in seen:
            raise InvalidTopology(f"Duplicate subtopology ID {s.subtopology_id}.")
        seen.add(s.subtopology_id)
        internal.update(n for n, *_ in s.repartition_source_topics)
        internal.update(n for n, *_ in s.state_changelog_topics)
    for s in topology.subtopologies:
        both = sorted(set(s.source_topics) & internal)
        if both:
            raise InvalidTopology(f"Source topics {', '.join(both)} are also internal topics.")
