"""Streams groups, their members and task sets (Kafka's StreamsGroup, StreamsGroupMember, TasksTuple)."""
from __future__ import annotations

from dataclasses import dataclass, field

#: subtopology id -> task partitions
TaskMap = dict[str, set[int]]


def copy_tasks(m: TaskMap) -> TaskMap:
    return {k: set(v) for k, v in m.items() if v}


def minus(a: TaskMap, b: TaskMap) -> TaskMap:
    return {k: v - b.get(k, set()) for k, v in a.items() if v - b.get(k, set())}


def intersect(a: TaskMap, b: TaskMap) -> TaskMap:
    return {k: v & b.get(k, set()) for k, v in a.items() if v & b.get(k, set())}


def union(a: TaskMap, b: TaskMap) -> TaskMap:
    out = copy_tasks(a)
    for k, v in b.items():
        if v:
            out.setdefault(k, set()).update(v)
    return out


def count(m: TaskMap) -> int:
    return sum(len(v) for v in m.values())


def normal(m: TaskMap) -> TaskMap:
    return {k: set(v) for k, v in sorted(m.items()) if v}


@dataclass
class Tasks:
    active: TaskMap = field(default_factory=dict)
    standby: TaskMap = field(default_factory=dict)
    warmup: TaskMap = field(default_factory=dict)

    def copy(self) -> Tasks:
        return Tasks(copy_tasks(self.active), copy_tasks(self.standby), copy_tasks(self.warmup))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tasks) and (normal(self.active), normal(self.standby), normal(self.warmup)) == (
            normal(other.active), normal(other.standby), normal(other.warmup))

    def empty(self) -> bool:
        return not (count(self.active) or count(self.standby) or count(self.warmup))


STABLE, UNREVOKED_TASKS, UNRELEASED_TASKS = "STABLE", "UNREVOKED_TASKS", "UNRELEASED_TASKS"


@dataclass
class StreamsMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: str = STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = 0
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: dict[str, str] = field(default_factory=dict)
    assigned: Tasks = field(default_factory=Tasks)
    pending_revocation: Tasks = field(default_factory=Tasks)
    #: what the member last reported it owns (None: not reported yet)
    owned_active: TaskMap | None = None
    #: (subtopology, partition, offset) of the member's tasks' changelogs, as last reported (StreamsGroupDescribe)
    task_offsets: list[tuple[str, int, int]] = field(default_factory=list)
    task_end_offsets: list[tuple[str, int, int]] = field(default_factory=list)
    session_deadline_ms: int = 0
    revocation_deadline_ms: int | None = None


@dataclass
class Subtopology:
    subtopology_id: str
    source_topics: list[str]
    source_topic_regex: list[str]
    repartition_sink_topics: list[str]
    #: (name, partitions (0 = derived), replication factor, configs)
    repartition_source_topics: list[tuple[str, int, int, dict[str, str]]]
    state_changelog_topics: list[tuple[str, int, int, dict[str, str]]]
    copartition_groups: list[tuple[list[int], list[int], list[int]]]


@dataclass
class Topology:
    epoch: int
    subtopologies: list[Subtopology]


@dataclass
class Configured:
    """A topology configured against the broker's topics (Kafka's ConfiguredTopology)."""
    tasks: dict[str, int]                         # subtopology -> number of tasks (0 when not ready)
    internal_to_create: dict[str, tuple[int, int, dict[str, str]]]
    statuses: list[tuple[int, str]]               # (status code, detail)
    ready: bool
    #: subtopology -> its source and repartition source topics (for endpoints' partitions)
    inputs: dict[str, list[str]] = field(default_factory=dict)
    #: every internal topic with its configured partitions, replication factor and configs
    internal: dict[str, tuple[int, int, dict[str, str]]] = field(default_factory=dict)
    #: subtopology -> its source topics (regexes resolved)
    sources: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class StreamsGroup:
    group_id: str
    group_epoch: int = 0
    members: dict[str, StreamsMember] = field(default_factory=dict)
    topology: Topology | None = None
    configured: Configured | None = None
    metadata_signature: tuple[tuple[str, int], ...] | None = None
    target_epoch: int = 0
    target: dict[str, Tasks] = field(default_factory=dict)
    endpoint_information_epoch: int = 0
    shutdown_requested: bool = False
    static: dict[str, str] = field(default_factory=dict)   # instance id -> member id
    #: while the initial rebalance delay runs (wall ms), the first members get no tasks
    initial_delay_until: int | None = None
    #: the epoch was bumped for a topic change the configured topology has not seen yet
    reconfigure_bumped: bool = False

    def state(self) -> str:
        """Empty, NotReady (topology not configurable), Assigning, Reconciling, Stable (Kafka's StreamsGroupState)."""
        if not self.members:
            return "Empty"
        if self.configured is None or not self.configured.ready:
            return "NotReady"
        if self.target_epoch != self.group_epoch:
            return "Assigning"
        if any(m.member_epoch != self.target_epoch or m.state != STABLE for m in self.members.values()):
            return "Reconciling"
        return "Stable"

    def owner_of_active(self, exclude: str) -> dict[tuple[str, int], str]:
        """Active tasks (assigned or pending revocation) of the members other than ``exclude``."""
        out: dict[tuple[str, int], str] = {}
        for mid, m in self.members.items():
            if mid == exclude:
                continue
            for tasks in (m.assigned.active, m.pending_revocation.active):
                for s, ps in tasks.items():
                    for p in ps:
                        out[(s, p)] = mid
        return out
