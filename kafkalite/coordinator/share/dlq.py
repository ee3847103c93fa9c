"""The share group dead-letter queue (KIP-1191, ``share.version`` 2): records a share group gave up on are
written to the group's DLQ topic before they are archived.

What Kafka 4.4 does (``SharePartition``, ``DefaultShareGroupDLQManager``, ``ShareGroupDLQStateManager``), and
we do with it:

- The DLQ is on for a group when ``share.version`` >= 2 is finalized and the group config
  ``errors.deadletterqueue.topic.name`` is not blank. Then a REJECT acknowledgement, and a release or an
  expired lock at ``share.delivery.count.limit`` deliveries, make the records ARCHIVING (``partition.py``),
  persisted as such; GAP acknowledgements are archived without a DLQ record.
- Only once that state is written are the runs handed here (``ShareStateManager._flush_dlq``). When the DLQ
  write is done the records become ARCHIVED (written again) and the share-partition start may move past them:
  nothing acknowledged is lost, and a restart in between resumes the write (ARCHIVING is loaded as such). A
  write that fails, or a DLQ that is misconfigured, is logged and the records are archived anyway ("Failed to
  write to DLQ, proceeding to ARCHIVED regardless.").
- Before writing, the configuration is checked, in Kafka's order, each failure a logged ConfigException
  message: the name is set; it does not start with ``__``; an existing topic has the topic config
  ``errors.deadletterqueue.group.enable=true``; a missing one may be created
  (``errors.deadletterqueue.auto.create.topics.enable``, broker, default false); the name starts with
  ``errors.deadletterqueue.topic.name.prefix`` (broker, default ``dlq.``; blank: any name).
- A missing topic is created by CreateTopics (default partitions and replication, configs
  ``errors.deadletterqueue.group.enable=true`` and ``message.timestamp.type=CreateTime``).
- One DLQ record per offset, in DLQ partition ``source partition % DLQ partitions``, produced with acks=-1
  (timeout 30 s) through the broker's own Produce handler at the DLQ partition's leader
  (``BrokerState.internal_request``), uncompressed, timestamped with the write time. Headers, values UTF-8
  strings: ``__dlq.errors.topic`` (source topic name), ``__dlq.errors.partition``, ``__dlq.errors.offset``,
  ``__dlq.errors.group``, ``__dlq.errors.delivery.count``, ``__dlq.errors.message`` ("Offset rejected by
  client." / "Offset delivery count exceeded the threshold."). With the group config
  ``errors.deadletterqueue.copy.record.enable=true`` the source record's key and value are copied (its
  headers are not); otherwise, or when the record is no longer in the log, both are null.
- Produce requests are cut to the DLQ topic's ``max.message.bytes``; NOT_LEADER_OR_FOLLOWER and timeouts are
  retried up to 5 attempts with exponential backoff from 1 s, other errors end the write.
"""
from __future__ import annotations

import logging
import struct
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import trio

from kafkalite.coordinator.share.partition import CAUSE_LIMIT, CAUSE_REJECT
from kafkalite.coordinator.share.records import ShareKey
from kafkalite_storage.batch import batch_records, crc32c, iter_batches
from kafkalite_wire.messages import CreateTopicsRequest, ProduceRequest

if TYPE_CHECKING:
    from kafkalite.coordinator.share.service import ShareService

log = logging.getLogger("kafkalite.coordinator.share.dlq")

HEADER_TOPIC = "__dlq.errors.topic"
HEADER_PARTITION = "__dlq.errors.partition"
HEADER_OFFSET = "__dlq.errors.offset"
HEADER_GROUP = "__dlq.errors.group"
HEADER_DELIVERY_COUNT = "__dlq.errors.delivery.count"
HEADER_MESSAGE = "__dlq.errors.message"
MESSAGES = {CAUSE_REJECT: "Offset rejected by client.", CAUSE_LIMIT: "Offset delivery count exceeded the threshold."}

TOPIC_ENABLE = "errors.deadletterqueue.group.enable"
AUTO_CREATE = "errors.deadletterqueue.auto.create.topics.enable"
PREFIX = "errors.deadletterqueue.topic.name.prefix"
PRODUCE_TIMEOUT_MS = 30_000
BACKOFF_MS, BACKOFF_MAX_MS, ATTEMPTS = 1_000, 30_000, 5
_RETRIABLE = {6, 7, 19, 20, 13}   # NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS(_AFTER_APPEND), NETWORK


@dataclass(frozen=True, slots=True)
class DlqTask:
    key: ShareKey
    first: int
    last: int
    count: int           # delivery count of the records
    cause: str           # partition.CAUSE_REJECT / CAUSE_LIMIT


class DlqConfigError(Exception):
    """The group's DLQ is misconfigured (Kafka's ConfigException message)."""


def check_config(group: str, topic: str, exists: bool, topic_enabled: bool, auto_create: bool, prefix: str) -> None:
    """Kafka 4.4's ``ProduceRequestHandler.validateDlqTopic``, in its order."""
    if not topic:
        raise DlqConfigError(f"Configured DLQ topic name in share group: {group} is empty.")
    if topic.startswith("__"):
        raise DlqConfigError(f"Configured DLQ topic name in share group: {group} cannot start with __, topic: {topic}.")
    if exists and not topic_enabled:
        raise DlqConfigError(f"DLQ is not enabled on configured DLQ topic for share group: {group}, topic: {topic}.")
    if not exists and not auto_create:
        raise DlqConfigError(f"DLQ topic does not exist and auto create is disabled on cluster for share group: "
                             f"{group}, topic: {topic}.")
    if prefix and not topic.startswith(prefix):
        raise DlqConfigError(f"Configured DLQ topic name does not comply with the DLQ topic prefix in share group: "
                             f"{group}, topic: {topic}, prefix: {prefix}.")


Header = tuple[str, bytes]
DlqRecord = tuple["bytes | None", "bytes | None", list[Header]]


def headers(source_topic: str, partition: int, offset: int, group: str, count: int, cause: str) -> list[Header]:
    """The context headers of one DLQ record (Kafka's ``ProduceRequestHandler.headers``, in its order)."""
    return [(HEADER_TOPIC, source_topic.encode()), (HEADER_PARTITION, str(partition).encode()),
            (HEADER_OFFSET, str(offset).encode()), (HEADER_GROUP, group.encode()),
            (HEADER_DELIVERY_COUNT, str(count).encode()), (HEADER_MESSAGE, MESSAGES[cause].encode())]


# -- record batch v2 (uncompressed, with headers) ----------------------------------------------------------------
_HEAD = struct.Struct(">qiibIhiqqqhii")


def _varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _bytes(b: bytes | None) -> bytes:
    return _varint(-1) if b is None else _varint(len(b)) + b


def encode_record(delta: int, key: bytes | None, value: bytes | None, hdrs: Iterable[Header]) -> bytes:
    hs = list(hdrs)
    body = b"\x00" + _varint(0) + _varint(delta) + _bytes(key) + _bytes(value) + _varint(len(hs)) + b"".join(
        _bytes(k.encode()) + _bytes(v) for k, v in hs)
    return _varint(len(body)) + body


def encode_batch(records: list[DlqRecord], ts: int) -> bytes:
    """One magic-2 batch (base offset 0, no producer id, CreateTime ``ts``) of the records."""
    body = b"".join(encode_record(i, k, v, h) for i, (k, v, h) in enumerate(records))
    length = _HEAD.size - 12 + len(body)
    head = bytearray(_HEAD.pack(0, length, -1, 2, 0, 0, len(records) - 1, ts, ts, -1, -1, -1, len(records)))
    crc = crc32c(bytes(head[21:]) + body)
    struct.pack_into(">I", head, 17, crc)
    return bytes(head) + body


def chunks(records: list[DlqRecord], max_bytes: int) -> list[list[DlqRecord]]:
    """The records cut into batches under ``max_bytes`` (max.message.bytes; at least one record each)."""
    out: list[list[DlqRecord]] = []
    cur: list[DlqRecord] = []
    size = _HEAD.size
    for r in records:
        n = len(encode_record(len(cur), *r))
        if cur and size + n > max_bytes:
            out.append(cur)
            cur, size = [], _HEAD.size
        cur.append(r)
        size += n
    if cur:
        out.append(cur)
    return out


def read_source(plog: Any, first: int, last: int, limit: int = 8 << 20) -> dict[int, tuple[bytes | None, bytes | None]]:
    """offset -> (key, value) of the source records in ``first..last`` still in the log (a worker thread)."""
    out: dict[int, tuple[bytes | None, bytes | None]] = {}
    offset = first
    while offset <= last:
        buf = plog.read_bytes(offset, limit)
        if not buf:
            break
        nxt = offset
        for pos, hdr in iter_batches(buf):
            nxt = max(nxt, hdr.next_offset)
            if hdr.attributes & 0x20:     # control batch
                continue
            for rec in batch_records(memoryview(buf)[pos:pos + hdr.size]):
                if first <= rec.offset <= last:
                    out[rec.offset] = (rec.key, rec.value)
        if nxt <= offset:
            break
        offset = nxt
    return out


class ShareDlqWriter:
    """Writes the DLQ records of one broker's share-partitions, one run at a time, in the order handed in."""

    def __init__(self, service: ShareService) -> None:
        self.s = service
        self._queue: deque[DlqTask] = deque()
        self._wakeup = trio.Event()
        self.written = 0        # DLQ records produced (tests, metrics)
        self.failed = 0         # runs archived without their DLQ records

    def submit(self, key: ShareKey, tasks: list[tuple[int, int, int, str]]) -> None:
        for first, last, count, cause in tasks:
            self._queue.append(DlqTask(key, first, last, count, cause))
        self._wakeup.set()

    def pending(self) -> int:
        return len(self._queue)

    async def run(self) -> None:
        while True:
            if not self._queue:
                self._wakeup = trio.Event()
                await self._wakeup.wait()
                continue
            task = self._queue.popleft()
            try:
                await self.write(task)
            except DlqConfigError as exc:
                self.failed += 1
                log.warning("Failed to write to DLQ, proceeding to ARCHIVED regardless: %s", exc)
            except Exception as exc:
                self.failed += 1
                log.error("Failed to write to DLQ, proceeding to ARCHIVED regardless (%s offsets %d-%d): %r",
                          task.key, task.first, task.last, exc)
            if self.s.states.dlq_done(task.key, task.first, task.last, self.s.now_ms()):
                self.s.wake()

    # -- one run ---------------------------------------------------------------------------------------
    async def write(self, task: DlqTask) -> None:
        s = self.s
        st = s.state
        group = task.key.group
        settings = s.states.settings(group)
        topic = settings.dlq_topic
        conf = st.configs.effective()
        info = st.topics.get(topic) if topic else None
        check_config(group, topic, info is not None,
                     info is not None and str(info.config.get(TOPIC_ENABLE, "false")).strip().lower() == "true",
                     str(conf.get(AUTO_CREATE) or "false").strip().lower() == "true",
                     str(conf.get(PREFIX) if conf.get(PREFIX) is not None else "dlq."))
        if info is None:
            info = await self._create(topic)
        source = s.topic_name(task.key.topic_id) or str(task.key.topic_id)
        copied: dict[int, tuple[bytes | None, bytes | None]] = {}
        if settings.dlq_copy.strip().lower() == "true":
            plog = st.get_log(source, task.key.partition)
            if plog is not None:
                try:
                    copied = await trio.to_thread.run_sync(read_source, plog, task.first, task.last)
                except Exception as exc:   # headers only, as Kafka when it cannot read the records
                    log.warning("Unable to fetch original record data for %s offsets %d-%d: %r", task.key,
                                task.first, task.last, exc)
        records: list[DlqRecord] = []
        for off in range(task.first, task.last + 1):
            key, value = copied.get(off, (None, None))
            records.append((key, value, headers(source, task.key.partition, off, group, task.count, task.cause)))
        dlq_partition = task.key.partition % info.partitions
        for part in chunks(records, self._max_message_bytes(topic, dlq_partition)):
            await self._produce(topic, dlq_partition, encode_batch(part, time.time_ns() // 1_000_000))
            self.written += len(part)

    def _leader_state(self, topic: str, partition: int) -> Any:
        st = self.s.state
        if st.cluster is None or st.leads(topic, partition):
            return st
        return st.cluster.leader_state(topic, partition)

    def _max_message_bytes(self, topic: str, partition: int) -> int:
        leader = self._leader_state(topic, partition)
        plog = leader.get_log(topic, partition) if leader is not None else None
        return int(plog.config.max_message_bytes) if plog is not None else 1048588

    async def _create(self, topic: str) -> Any:
        st = self.s.state
        req = CreateTopicsRequest(timeout_ms=PRODUCE_TIMEOUT_MS, topics=[CreateTopicsRequest.CreatableTopic(
            name=topic, num_partitions=-1, replication_factor=-1, configs=[
                CreateTopicsRequest.CreatableTopicConfig(name=TOPIC_ENABLE, value="true"),
                CreateTopicsRequest.CreatableTopicConfig(name="message.timestamp.type", value="CreateTime")])])
        if st.internal_request is None:
            raise RuntimeError("this broker sends no requests to itself (no server)")
        resp = await st.internal_request(19, 5, req)
        code = resp.topics[0].error_code if resp.topics else -1
        if code not in (0, 36):   # TOPIC_ALREADY_EXISTS: created meanwhile
            raise RuntimeError(f"Unable to create DLQ topic {topic}: error {code} {resp.topics[0].error_message}")
        info = st.topics.get(topic)
        if info is None:
            raise RuntimeError(f"DLQ topic {topic} not found after it was created")
        return info

    async def _produce(self, topic: str, partition: int, batch: bytes) -> None:
        backoff = BACKOFF_MS
        for attempt in range(1, ATTEMPTS + 1):
            leader = self._leader_state(topic, partition)
            request = getattr(leader, "internal_request", None) if leader is not None else None
            if request is None:
                code, message = 6, "no leader"
            else:
                req = ProduceRequest(acks=-1, timeout_ms=PRODUCE_TIMEOUT_MS, topic_data=[
                    ProduceRequest.TopicProduceData(name=topic, partition_data=[
                        ProduceRequest.PartitionProduceData(index=partition, records=batch)])])
                resp = await request(0, 9, req)
                pr = resp.responses[0].partition_responses[0]
                code, message = pr.error_code, pr.error_message
            if code == 0:
                return
            if code not in _RETRIABLE or attempt == ATTEMPTS:
                raise RuntimeError(f"Unable to produce to DLQ topic {topic}-{partition}: error {code} {message}")
            await trio.sleep(backoff / 1000)
            backoff = min(backoff * 2, BACKOFF_MAX_MS)
