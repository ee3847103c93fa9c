"""The Prometheus text exposition (format 0.0.4) of one broker, built at scrape time.

Names are Kafka's where Kafka has the metric, spelled as the Prometheus JMX exporter's usual Kafka rules
spell them (``kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=t`` ->
``kafka_server_brokertopicmetrics_messagesin_total{topic="t"}``): as in Kafka, each BrokerTopicMetrics family
has one series without a ``topic`` label (all topics) and one per topic, so sum one or the other, not both.
Consumer-group offsets and lag use kafka_exporter's names (``kafka_consumergroup_lag``), which dashboards
expect; Kafka itself has no broker-side lag metric. Process metrics use Prometheus' standard ``process_*``.

Gauges are read from the broker's state as it is: loaded partition logs (a partition not loaded since a
clean start is not reported until something touches it: reading it would load it), the classic group
coordinator's groups and committed offsets, the open connections, and Fetch requests parked in their long
poll (Kafka's Fetch purgatory; Produce never waits here: one replica, so acks=all is acks=1, and its purgatory
is always 0). The walk over partitions and groups yields to other tasks every ``kafkalite.runtime.slices`` slice, so a
scrape of 100,000 partitions does not stall clients.
"""
from __future__ import annotations

import os
import resource
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kafkalite.coordinator.views import all_groups, share_partitions
from kafkalite.metrics.requests import (
    BUCKETS_MS,
    BYTES_IN,
    BYTES_OUT,
    FETCH_FAILED,
    FETCH_REQS,
    MSGS_IN,
    PRODUCE_FAILED,
    PRODUCE_REQS,
    RequestMetrics,
    api_name,
    error_name,
)
from kafkalite.runtime.slices import Slices
from kafkalite_storage.errors import StorageError

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_TOPIC_FAMILIES = (
    (MSGS_IN, "messagesin", "Messages appended to the log"),
    (BYTES_IN, "bytesin", "Record-batch bytes appended by produce requests"),
    (BYTES_OUT, "bytesout", "Record bytes sent in fetch responses"),
    (PRODUCE_REQS, "totalproducerequests", "Produce requests (one per topic named in a request)"),
    (PRODUCE_FAILED, "failedproducerequests", "Produce requests with a failed partition, per topic"),
    (FETCH_REQS, "totalfetchrequests", "Fetch requests (one per topic named in a request)"),
    (FETCH_FAILED, "failedfetchrequests", "Fetch requests with a failed partition, per topic"),
)
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _esc(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def _labels(pairs: Iterable[tuple[str, object]]) -> str:
    inner = ",".join(f'{k}="{_esc(v)}"' for k, v in pairs)
    return "{" + inner + "}" if inner else ""


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


class Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, kind: str, help_: str) -> None:
        self.lines.append(f"# HELP {name} {help_}")
        self.lines.append(f"# TYPE {name} {kind}")

    def sample(self, name: str, value: float, labels: Iterable[tuple[str, object]] = ()) -> None:
        self.lines.append(f"{name}{_labels(labels)} {_num(value)}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


async def render(state: BrokerState, metrics: RequestMetrics) -> str:
    w = Writer()
    _topic_counters(w, state, metrics)
    _request_counters(w, metrics)
    _purgatory(w, state)
    _connections(w, state)
    _faults(w, state)
    work = Slices()
    await _logs(w, state, work)
    await _groups(w, state, work)
    _process(w)
    return w.text()


def _topic_counters(w: Writer, state: BrokerState, m: RequestMetrics) -> None:
    live = state.topics
    # a deleted topic's series go away (Kafka removes its BrokerTopicMetrics); the totals stay
    for name in [t for t in m.topics if t not in live]:
        del m.topics[name]
    for slot, short, help_ in _TOPIC_FAMILIES:
        name = f"kafka_server_brokertopicmetrics_{short}_total"
        w.family(name, "counter", help_ + " (without a topic label: all topics)")
        w.sample(name, m.totals[slot])
        for topic, slots in sorted(m.topics.items()):
            w.sample(name, slots[slot], (("topic", topic),))


def _request_counters(w: Writer, m: RequestMetrics) -> None:
    name = "kafka_network_requestmetrics_requests_total"
    w.family(name, "counter", "Requests answered, per API and version")
    for (key, version), n in sorted(m.requests.items()):
        w.sample(name, n, (("request", api_name(key)), ("version", version)))
    name = "kafka_network_requestmetrics_errors_total"
    w.family(name, "counter", "Error codes in responses, per API (Kafka's errorCounts: every entry, NONE included)")
    for (key, code), n in sorted(m.errors.items()):
        w.sample(name, n, (("request", api_name(key)), ("error", error_name(code))))
    name = "kafka_network_requestmetrics_totaltimems"
    w.family(name, "histogram", "Milliseconds from a decoded request to its response (Fetch: with its long poll)")
    for key, hist in sorted(m.latency.items()):
        req = api_name(key)
        cumulative = 0.0
        for i, le in enumerate(BUCKETS_MS):
            cumulative += hist[i]
            w.sample(f"{name}_bucket", cumulative, (("request", req), ("le", _num(le))))
        cumulative += hist[len(BUCKETS_MS)]
        w.sample(f"{name}_bucket", cumulative, (("request", req), ("le", "+Inf")))
        w.sample(f"{name}_count", cumulative, (("request", req),))
        w.sample(f"{name}_sum", hist[-1], (("request", req),))


def _purgatory(w: Writer, state: BrokerState) -> None:
    fetches = state.purgatory.parked()
    name = "kafka_server_delayedoperationpurgatory_purgatorysize"
    w.family(name, "gauge", "Requests parked until they can complete (Fetch: long polls waiting for data)")
    w.sample(name, fetches, (("delayedOperation", "Fetch"),))
    w.sample(name, 0, (("delayedOperation", "Produce"),))


def _connections(w: Writer, state: BrokerState) -> None:
    counts: dict[str, int] = {lst.name: 0 for lst in state.listeners}
    for conn in list(state.connections):
        counts[conn.listener] = counts.get(conn.listener, 0) + 1
    name = "kafka_server_socketservermetrics_connection_count"
    w.family(name, "gauge", "Open client connections, per listener")
    for listener, n in sorted(counts.items()):
        w.sample(name, n, (("listener", listener),))


def _faults(w: Writer, state: BrokerState) -> None:
    """Faults on command (kafkalite.faults): what the broker's FaultPlan did, so a test bed's dashboards show
    when a failure was injected. kafkalite's own names (Kafka has no such thing)."""
    plan = state.faults
    counters = getattr(plan, "counters", None)
    if not isinstance(counters, dict):
        return
    name = "kafkalite_faults_total"
    w.family(name, "counter", "Fault-injection events on this broker, per kind (rules set/fired/expired/cleared, "
                              "errors injected, requests delayed or paused, connections dropped, pauses)")
    for kind, n in sorted(counters.items()):
        w.sample(name, n, (("kind", kind),))
    name = "kafkalite_faults_active_rules"
    w.family(name, "gauge", "Fault rules in force on this broker (1 more while it is paused)")
    w.sample(name, len(getattr(plan, "rules", ())) + (1 if getattr(plan, "paused", None) is not None else 0))


async def _logs(w: Writer, state: BrokerState, work: Slices) -> None:
    logs = sorted(state.logs.loaded_logs(), key=lambda kv: kv[0])
    rows: list[tuple[str, int, int, int, int, int]] = []
    for (topic, partition), plog in logs:
        if work.due():
            await work.pause()
        try:
            rows.append((topic, partition, plog.size_bytes, len(plog.segments), plog.log_start_offset,
                         plog.log_end_offset))
        except (StorageError, OSError):   # a log deleted or gone offline meanwhile: left out of this scrape
            continue
    for i, (short, help_) in enumerate((
            ("size", "Bytes of the partition's segment files"),
            ("numlogsegments", "Segments of the partition"),
            ("logstartoffset", "The partition's log start offset"),
            ("logendoffset", "The partition's log end offset"))):
        name = f"kafka_log_log_{short}"
        w.family(name, "gauge", help_)
        for row in rows:
            w.sample(name, row[2:][i], (("topic", row[0]), ("partition", row[1])))


async def _groups(w: Writer, state: BrokerState, work: Slices) -> None:
    """Groups of every type (classic, consumer = KIP-848, streams = KIP-1071, share = KIP-932;
    kafkalite.coordinator.views): members and state as kafka_exporter names them, plus ``kafkalite_group_type``;
    offsets and lag for the types that commit offsets (classic, consumer and streams)."""
    ends = dict(state.logs.loaded_logs())
    states: list[tuple[str, str, int]] = []
    types: list[tuple[str, str]] = []
    offsets: list[tuple[str, str, int, int, int | None]] = []
    for g in all_groups(state):
        if work.due():
            await work.pause()
        states.append((g.group_id, g.state, g.members))
        types.append((g.group_id, g.type))
        for (topic, partition), committed in sorted(g.offsets.items()):
            plog = ends.get((topic, partition))
            end = plog.high_watermark if plog is not None else None
            offsets.append((g.group_id, topic, partition, committed, None if end is None else max(end - committed, 0)))
    name = "kafkalite_group_type"
    w.family(name, "gauge", "1 for the group's type: classic, consumer (KIP-848), streams (KIP-1071) or share (KIP-932)")
    for gid, t in types:
        w.sample(name, 1, (("consumergroup", gid), ("type", t)))
    shares = share_partitions(state)
    name = "kafkalite_sharegroup_start_offset"
    w.family(name, "gauge", "A share group's share-partition start offset (every record below it is delivered)")
    for gid, topic, part, start, _n in shares:
        w.sample(name, start, (("sharegroup", gid), ("topic", topic), ("partition", part)))
    name = "kafkalite_sharegroup_in_flight_records"
    w.family(name, "gauge", "Records in a share-partition's in-flight window (from its start offset to the first "
                            "offset never fetched)")
    for gid, topic, part, _start, n in shares:
        w.sample(name, n, (("sharegroup", gid), ("topic", topic), ("partition", part)))
    name = "kafka_consumergroup_members"
    w.family(name, "gauge", "Members of a consumer group")
    for gid, _s, n in states:
        w.sample(name, n, (("consumergroup", gid),))
    name = "kafka_consumergroup_state"
    w.family(name, "gauge", "1 for the group's current state (classic: Empty, PreparingRebalance, CompletingRebalance, "
                            "Stable; consumer: Empty, Assigning, Reconciling, Stable; share: Empty, Stable)")
    for gid, s, _n in states:
        w.sample(name, 1, (("consumergroup", gid), ("state", s)))
    name = "kafka_consumergroup_current_offset"
    w.family(name, "gauge", "The group's committed offset of a partition")
    for gid, topic, part, off, _lag in offsets:
        w.sample(name, off, (("consumergroup", gid), ("topic", topic), ("partition", part)))
    name = "kafka_consumergroup_lag"
    w.family(name, "gauge", "High watermark minus the committed offset (partitions whose log is loaded)")
    for gid, topic, part, _off, lag in offsets:
        if lag is not None:
            w.sample(name, lag, (("consumergroup", gid), ("topic", topic), ("partition", part)))


def _process(w: Writer) -> None:
    rss = fds = None
    try:
        with open("/proc/self/statm", "rb") as fh:
            rss = int(fh.read().split()[1]) * _PAGE
        fds = len(os.listdir("/proc/self/fd"))
    except OSError:
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    for name, kind, help_, value in (
            ("process_resident_memory_bytes", "gauge", "Resident memory size in bytes", rss),
            ("process_open_fds", "gauge", "Open file descriptors", fds),
            ("process_max_fds", "gauge", "The soft limit of open file descriptors", soft),
            ("process_cpu_seconds_total", "counter", "User and system CPU time in seconds",
             usage.ru_utime + usage.ru_stime),
            ("process_start_time_seconds", "gauge", "Start time of the process since the epoch, seconds",
             _start_time())):
        if value is None:
            continue
        w.family(name, kind, help_)
        w.sample(name, value)


def _start_time() -> float | None:
    try:
        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        with open("/proc/stat", "rb") as fh:
            boot = next(int(ln.split()[1]) for ln in fh if ln.startswith(b"btime"))
        return boot + int(fields[19]) / _TICKS
    except (OSError, StopIteration, IndexError, ValueError):
        return None
