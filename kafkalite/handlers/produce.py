"""Produce (key 0): v3–v13 (v3 is the first with magic-2 record batches; every client sends ≥3 when the
broker advertises it, and librdkafka also needs Fetch ≥4 advertised to write magic 2).

- v12 (KIP-890 part 2): a transactional batch adds its partition to the producer's transaction (what
  AddPartitionsToTxn did; Kafka's ReplicaManager asks the coordinator with AddPartitionsToTxn v5), so a
  transaction.version 2 client sends no AddPartitionsToTxn. A fenced epoch there is INVALID_PRODUCER_EPOCH; a
  coordinator busy completing the previous transaction NOT_ENOUGH_REPLICAS (retried). Before v12 the partition
  must have been added, else INVALID_TXN_STATE with the message "Partition was not added to the transaction"
  (v8+ carry messages), and from v11 TRANSACTION_ABORTABLE (KIP-890 part 1), as Kafka 4.4 answers.
  v13 names topics by id (KIP-516): an id no topic has answers UNKNOWN_TOPIC_ID for each of its partitions, and
  the response names topics by id too.

- acks must be 0, 1 or -1 (INVALID_REQUIRED_ACKS otherwise). With one replica, acks=-1 is acks=1.
- acks=0 gets no response at all; if any partition failed, the connection is closed instead (as Kafka does),
  which is the only way such a client learns to refresh its metadata.
- Each partition's records must be exactly one record batch (INVALID_RECORD otherwise, v3+ rule). The batch
  is a memoryview into the request frame. ``kafkalite.validation.validate`` checks every record of it as
  Kafka's LogValidator does (error code, message and v8+ ``record_errors``; nothing is appended for a refused
  partition); then it goes to storage verbatim, which checks CRC-32C (CORRUPT_MESSAGE), size
  (MESSAGE_TOO_LARGE), idempotent sequences and epochs. Compressed batches of THREAD_THRESHOLD_BYTES or more
  are validated in a worker thread (their decompression may take tens of ms); smaller ones inline.
- Clients cannot write to internal topics (__consumer_offsets, __transaction_state): INVALID_TOPIC_EXCEPTION.
- Produce never auto-creates topics (only Metadata does): unknown topic/partition -> UNKNOWN_TOPIC_OR_PARTITION.
- Transactional produce needs a transaction coordinator (``state.txns``); without one it answers
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED. If the coordinator has ``check_produce(txn_id, topic, partition,
  records, implicit_add) -> error code | 0`` it vets each partition (e.g. "was it added to the transaction?").
- Authorization (an authorizer configured): a transactional produce needs WRITE on its transactional id
  (else every partition answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED), each topic WRITE (else
  TOPIC_AUTHORIZATION_FAILED, before existence is checked), as KafkaApis.handleProduceRequest.
- Codec ids 5-7 (no such codec): before v7 Kafka's ``ProduceRequest.validateRecords`` reads the first batch's
  codec of every authorized, existing partition and ``CompressionType.forId`` throws IllegalArgumentException,
  which fails the whole request: every partition answers UNKNOWN_SERVER_ERROR with no message (acks=0: the
  connection is closed) and nothing is appended. From v7 on the validator answers that partition alone.
- A successful append wakes Fetch long polls waiting on that partition.
- Several brokers (``kafkalite.cluster``, ``state.cluster`` set): a partition this broker does not lead answers
  NOT_LEADER_OR_FOLLOWER with the KIP-951 current leader (v10+); acks=-1 with fewer in-sync replicas than
  ``min.insync.replicas`` answers NOT_ENOUGH_REPLICAS before appending, and waits until the high watermark
  passes the append (NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrinks below it meanwhile,
  REQUEST_TIMED_OUT after ``timeout_ms``). With one broker acks=-1 is acks=1.
- A request of ``SLICE_AFTER`` or more topic and partition entries (a 10 MB frame can name a million) is walked in
  slices (``kafkalite.runtime.slices``): each partition is appended on its own, as in Kafka, and other clients are
  answered between slices. The usual request of a few partitions never touches the slicer.
"""
from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from kafkalite import authz, validation
from kafkalite.errors import ConnectionClosed, error_code_for
from kafkalite.handlers import produce_offload as offload
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.runtime.slices import Slices
from kafkalite.state import leader_epoch
from kafkalite.validation import Rejection, frame_problem
from kafkalite_storage import LogConfig, PartitionLog
from kafkalite_storage.errors import StorageError
from kafkalite_storage.log import AppendInfo
from kafkalite_storage.staging import StagedBatch
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ProduceRequest, ProduceResponse

log = logging.getLogger(__name__)

_PartResp = ProduceResponse.PartitionProduceResponse
_RecordError = ProduceResponse.BatchIndexAndErrorMessage
#: requests of more partition entries than this are walked in slices
SLICE_AFTER = 128


NOT_ADDED = "Partition was not added to the transaction"   # Kafka 4.4's message for it before v11

def _error(index: int, code: ErrorCode, message: str | None = None) -> ProduceResponse.PartitionProduceResponse:
    return _PartResp(index=index, error_code=code, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1,
                     error_message=message)


def _rejected(index: int, r: Rejection) -> ProduceResponse.PartitionProduceResponse:
    resp = _error(index, r.code, r.message or None)
    resp.record_errors = [_RecordError(batch_index=i, batch_index_error_message=m) for i, m in r.record_errors]
    return resp


def _max_inflated(ctx: RequestContext, config: LogConfig) -> int:
    state = ctx.broker
    raw = state.config.get_str("kafkalite.max.uncompressed.batch.bytes")
    return int(raw) if raw else 64 * max(config.max_message_bytes, 1)


def _checker(ctx: RequestContext, req: ProduceRequest, records: memoryview | bytes, config: LogConfig, tp: str,
             now: int) -> Callable[..., Rejection | None]:
    return functools.partial(validation.validate, records, config=config, now=now, version=ctx.version,
                             transactional_id=req.transactional_id, max_inflated=_max_inflated(ctx, config),
                             topic_partition=tp)


def _validate_inline(ctx: RequestContext, req: ProduceRequest, records: memoryview | bytes | None,
                     plog: PartitionLog, tp: str, now: int) -> Rejection | None:
    """The validator on the event loop (uncompressed batches: the compiled walk takes ~10 ns a record; small
    compressed ones while they inflate little): raises validation.Deferred when a compressed batch is too
    large for the loop or inflates past INLINE_INFLATE_BYTES."""
    problem = frame_problem(records)
    if problem is not None or records is None:
        return problem
    config = plog.config
    if not records[22] & 0x07:
        return validation.validate(records, config=config, now=now, version=ctx.version,
                                   transactional_id=req.transactional_id, topic_partition=tp)
    if len(records) >= validation.THREAD_THRESHOLD_BYTES:
        raise validation.Deferred
    return validation.validate(records, config=config, now=now, version=ctx.version,
                               transactional_id=req.transactional_id, max_inflated=_max_inflated(ctx, config),
                               topic_partition=tp, inline_budget=validation.INLINE_INFLATE_BYTES)


async def _validate(ctx: RequestContext, req: ProduceRequest, records: memoryview | bytes | None,
                    plog: PartitionLog, tp: str, now: int, *, deferred: bool = False) -> Rejection | None:
    """Run the validator, in a worker thread for large compressed batches (never stall the event loop);
    ``deferred``: an inline attempt raised validation.Deferred already (straight to the thread)."""
    if not deferred:
        try:
            return _validate_inline(ctx, req, records, plog, tp, now)
        except validation.Deferred:
            pass
    return await offload.validate(_checker(ctx, req, records, plog.config, tp, now))  # type: ignore[arg-type]


def _append(req: ProduceRequest, records: memoryview | bytes | None, plog: PartitionLog, name: str, idx: int,
            now: int, txns: Any, rejection: Rejection | None, staged: StagedBatch | None, version: int = 11,
            ) -> tuple[ProduceResponse.PartitionProduceResponse, AppendInfo | None]:
    """After validation: the transaction check, then the append (or the staged batch's adoption)."""
    try:
        if rejection is None and req.transactional_id is not None:
            check = getattr(txns, "check_produce", None)
            if txns is None:
                rejection = Rejection(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                      "transactions are not supported by this broker")
            elif check is not None:
                # v12+ (KIP-890 part 2): producing adds the partition to the transaction
                code = check(req.transactional_id, name, idx, records, implicit_add=version >= 12)
                if code == ErrorCode.INVALID_TXN_STATE:   # not in the transaction (Kafka's verification)
                    rejection = (Rejection(ErrorCode.TRANSACTION_ABORTABLE, "") if version >= 11 else
                                 Rejection(ErrorCode.INVALID_TXN_STATE, NOT_ADDED))
                elif code:
                    rejection = Rejection(ErrorCode(code), "")
        if rejection is not None:
            return _rejected(idx, rejection), None
        try:
            if staged is not None:
                appended = plog.append_staged(staged, leader_epoch=leader_epoch(plog), now_ms=now,
                                              records_checked=True)
                staged = None   # adopted or discarded by the log
            else:
                appended = plog.append(records, leader_epoch=leader_epoch(plog),  # type: ignore[arg-type]
                                       now_ms=now, records_checked=True)   # validated above (keys too)
        except StorageError as exc:
            return _error(idx, error_code_for(exc), str(exc) or None), None
        return _PartResp(index=idx, error_code=ErrorCode.NONE, base_offset=appended.base_offset,
                         log_append_time_ms=appended.log_append_time_ms,
                         log_start_offset=appended.log_start_offset), appended
    finally:
        if staged is not None:   # refused
            staged.discard()


async def _off_loop(ctx: RequestContext, req: ProduceRequest, records: memoryview | bytes | None,
                    plog: PartitionLog, name: str, idx: int, now: int, txns: Any, deferred: bool,
                    ) -> tuple[ProduceResponse.PartitionProduceResponse, AppendInfo | None]:
    """One partition's batch whose work leaves the loop (or that must wait for one that did), in the
    partition's turn, so appends to a partition keep request order (kafkalite.handlers.produce_offload)."""
    tp = f"{name}-{idx}"
    async with offload.TURNS.turn(plog):
        staged = None
        try:
            if records is not None and len(records) >= offload.STAGE_BYTES and frame_problem(records) is None:
                try:
                    rejection, staged = await offload.validate_and_stage(
                        _checker(ctx, req, records, plog.config, tp, now), records, plog, now)
                except StorageError as exc:   # staging checks the CRC and writes: what append would raise
                    return _error(idx, error_code_for(exc), str(exc) or None), None
            else:
                rejection = await _validate(ctx, req, records, plog, tp, now, deferred=deferred)
            result = _append(req, records, plog, name, idx, now, txns, rejection, staged, ctx.version)
            staged = None   # used up by _append
            return result
        finally:
            if staged is not None:   # cancelled on the way (a server shutting down)
                staged.discard()


def unknown_codec_before_v7(ctx: RequestContext, req: ProduceRequest, denied: dict[str, int]) -> bool:
    """Whether a Produce v3-v6 fails as a whole in Kafka's ``ProduceRequest.validateRecords``: a partition that
    is authorized and exists holds a magic-2 batch whose codec bits (attributes & 7) are 5, 6 or 7."""
    state = ctx.broker
    if ctx.version >= 7:
        return False
    for topic in req.topic_data:
        info = state.topics.get(topic.name)
        if topic.name in denied or info is None:
            continue
        for pd in topic.partition_data:
            rec = pd.records
            if 0 <= pd.index < info.partitions and isinstance(rec, (bytes, bytearray, memoryview)) \
                    and len(rec) > 22 and rec[16] == 2 and rec[22] & 0x07 > 4:
                return True
    return False


def _resolve_topic_ids(ctx: RequestContext, req: ProduceRequest) -> set[int]:
    """v13+: the topics are named by id. Give each entry its topic's name (as Kafka's handleProduceRequest does
    before anything else); the positions of entries whose id no topic has are returned."""
    by_id = ctx.broker.topics_by_id
    unknown = set()
    for i, t in enumerate(req.topic_data):
        info = by_id.get(t.topic_id)
        if info is None:
            unknown.add(i)
        else:
            t.name = info.name
    return unknown


@handler(ProduceRequest, min_version=3, max_version=13)
async def produce(ctx: RequestContext, req: ProduceRequest) -> ProduceResponse | None:
    state = ctx.broker
    unknown_ids = _resolve_topic_ids(ctx, req) if ctx.version >= 13 else set()
    acks = req.acks
    now = ctx.now_ms()
    failed = False
    responses: list[ProduceResponse.TopicProduceResponse] = []
    placement = state.placement
    txns = state.txns if req.transactional_id is None else placement.txn_service(req.transactional_id)
    wait_for_isr = acks == -1 and placement.replicated
    waits: list = []   # acks=-1 in a cluster: (topic, partition, offset the high watermark must pass, answer)
    if state.logs.pending_loads:   # some logs not loaded since a clean start
        await state.ensure_loaded([(t.name, pd.index) for i, t in enumerate(req.topic_data) if i not in unknown_ids
                                   for pd in t.partition_data])
    entries = len(req.topic_data)   # topics and partition entries the walk below visits
    if entries < SLICE_AFTER:
        for t in req.topic_data:
            entries += len(t.partition_data)
    work = Slices(every=16) if entries >= SLICE_AFTER else None   # an append may open files: a few per clock read
    denied: dict[str, int] = authz.produce_denied(ctx, req) if state.authorizer is not None else {}
    busy = offload.BUSY   # partitions with a batch off the loop
    if unknown_codec_before_v7(ctx, req, denied):
        if acks == 0:
            raise ConnectionClosed("acks=0 produce with an unknown compression codec id")
        return ProduceResponse(throttle_time_ms=0, responses=[   # ProduceRequest.getErrorResponse
            ProduceResponse.TopicProduceResponse(name=t.name, partition_responses=[
                _error(pd.index, ErrorCode.UNKNOWN_SERVER_ERROR) for pd in t.partition_data])
            for t in req.topic_data])
    for ti, topic in enumerate(req.topic_data):
        if work is not None and work.due():
            await work.pause()
        name = topic.name
        parts: list[ProduceResponse.PartitionProduceResponse] = []
        responses.append(ProduceResponse.TopicProduceResponse(name=name, topic_id=topic.topic_id,
                                                              partition_responses=parts))
        if ti in unknown_ids:
            parts += [_error(pd.index, ErrorCode.UNKNOWN_TOPIC_ID) for pd in topic.partition_data]
            failed = True
            continue
        topic_info = state.topics.get(name)
        for pd in topic.partition_data:
            if work is not None and work.due():
                await work.pause()
            idx = pd.index
            if acks not in (0, 1, -1):
                parts.append(_error(idx, ErrorCode.INVALID_REQUIRED_ACKS))
                failed = True
                continue
            if name in denied:
                parts.append(_error(idx, ErrorCode(denied[name])))
                failed = True
                continue
            if topic_info is not None:
                code = placement.produce_error(name, idx, acks)   # not the leader, or too few in-sync replicas
                if code:
                    parts.append(placement.refused_produce(name, idx, code, _error(idx, ErrorCode(code))))
                    failed = True
                    continue
            plog = state.logs.get_log(name, idx) if topic_info is not None else None
            if plog is None:
                parts.append(_error(idx, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                failed = True
                continue
            if topic_info is not None and topic_info.internal:   # only the coordinators write these
                parts.append(_error(idx, ErrorCode.INVALID_TOPIC_EXCEPTION, f"cannot append to internal topic {name}"))
                failed = True
                continue
            records: memoryview | bytes | None = pd.records   # type: ignore[assignment]
            if plog in busy or (records is not None and len(records) >= offload.THREAD_THRESHOLD_BYTES
                                and offload.off_loop(records)):
                answer, appended = await _off_loop(ctx, req, records, plog, name, idx, now, txns, False)
            else:
                try:   # the hot path: no await, no coroutine
                    rejection = _validate_inline(ctx, req, records, plog, f"{name}-{idx}", now)
                    answer, appended = _append(req, records, plog, name, idx, now, txns, rejection, None,
                                               ctx.version)
                except validation.Deferred:   # a small batch that inflates a lot: its turn, then a thread
                    answer, appended = await _off_loop(ctx, req, records, plog, name, idx, now, txns, True)
            parts.append(answer)
            if appended is None:
                failed = True
                continue
            state.notify_append(name, idx)
            if wait_for_isr:
                waits.append((name, idx, appended.last_offset + 1, answer))
    if waits:
        await placement.await_acks(waits, req.timeout_ms)
    if acks == 0:
        if failed:
            raise ConnectionClosed("acks=0 produce failed for some partition")
        return None
    resp = ProduceResponse(responses=responses, throttle_time_ms=0)
    if failed:
        placement.add_node_endpoints(ctx.listener, resp, ProduceResponse.NodeEndpoint)
    return resp
