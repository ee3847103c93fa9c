"""Produce (key 0): v3–v11 (v3 is the first with magic-2 record batches; every client sends ≥3 when the
broker advertises it, and librdkafka also needs Fetch ≥4 advertised to write magic 2).

- acks must be 0, 1 or -1 (INVALID_REQUIRED_ACKS otherwise). With one replica, acks=-1 is acks=1.
- acks=0 gets no response at all; if any partition failed, the connection is closed instead (as Kafka does),
  which is the only way such a client learns to refresh its metadata.
- Each partition's records must be exactly one record batch (INVALID_RECORD otherwise, v3+ rule). The batch
  is a memoryview into the request frame and goes to storage verbatim (no copy, no per-record work): storage
  checks CRC-32C (CORRUPT_MESSAGE), size (MESSAGE_TOO_LARGE), idempotent sequences and epochs.
- Clients cannot write to internal topics (__consumer_offsets, __transaction_state): INVALID_TOPIC_EXCEPTION.
- Produce never auto-creates topics (only Metadata does): unknown topic/partition -> UNKNOWN_TOPIC_OR_PARTITION.
- Transactional produce needs a transaction coordinator (``state.txns``); without one it answers
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED. If the coordinator has ``check_produce(txn_id, topic, partition,
  records) -> error code | 0`` it vets each partition (e.g. "was it added to the transaction?").
- A successful append wakes Fetch long polls waiting on that partition.
"""
from __future__ import annotations

import logging

from kafkalite.connection import ConnectionClosed
from kafkalite.errors import error_code_for
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.state import leader_epoch
from storage.errors import StorageError
from wire.errors import ErrorCode
from wire.messages import ProduceRequest, ProduceResponse

log = logging.getLogger(__name__)

_PartResp = ProduceResponse.PartitionProduceResponse


def _error(index: int, code: ErrorCode, message: str | None = None) -> ProduceResponse.PartitionProduceResponse:
    return _PartResp(index=index, error_code=code, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1,
                     error_message=message)


def _single_batch_error(records: memoryview | bytes | None) -> tuple[ErrorCode, str] | None:
    """Checks the request holds exactly one v2 batch (by its length field; storage validates the rest)."""
    if records is None or len(records) == 0:
        return ErrorCode.INVALID_RECORD, "no record batch"
    if len(records) < 17:
        return ErrorCode.CORRUPT_MESSAGE, "record batch shorter than its header"
    batch_len = 12 + int.from_bytes(records[8:12], "big", signed=True)
    if records[16] != 2:
        return ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, f"record batch magic {records[16]} (need 2)"
    if batch_len > len(records):
        return ErrorCode.CORRUPT_MESSAGE, "record batch length exceeds the data"
    if batch_len != len(records):
        return ErrorCode.INVALID_RECORD, "more than one record batch for a partition"
    return None


@handler(ProduceRequest, min_version=3, max_version=11)
async def produce(ctx: RequestContext, req: ProduceRequest) -> ProduceResponse | None:
    state = ctx.broker
    acks = req.acks
    now = ctx.now_ms()
    failed = False
    responses: list[ProduceResponse.TopicProduceResponse] = []
    txns = state.txns
    if getattr(state.logs, "pending_loads", 0):   # some logs not loaded since a clean start
        await state.ensure_loaded([(t.name, pd.index) for t in req.topic_data for pd in t.partition_data])
    for topic in req.topic_data:
        name = topic.name
        topic_info = state.topics.get(name)
        parts: list[ProduceResponse.PartitionProduceResponse] = []
        responses.append(ProduceResponse.TopicProduceResponse(name=name, partition_responses=parts))
        for pd in topic.partition_data:
            idx = pd.index
            if acks not in (0, 1, -1):
                parts.append(_error(idx, ErrorCode.INVALID_REQUIRED_ACKS))
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
            problem = _single_batch_error(pd.records)
            if problem is None and req.transactional_id is not None:
                check = getattr(txns, "check_produce", None)
                if txns is None:
                    problem = (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                               "transactions are not supported by this broker")
                elif check is not None:
                    code = check(req.transactional_id, name, idx, pd.records)
                    if code:
                        problem = (ErrorCode(code), None)
            if problem is not None:
                parts.append(_error(idx, *problem))
                failed = True
                continue
            try:
                appended = plog.append(pd.records, leader_epoch=leader_epoch(plog), now_ms=now)
            except StorageError as exc:
                parts.append(_error(idx, error_code_for(exc), str(exc) or None))
                failed = True
                continue
            state.notify_append(name, idx)
            parts.append(_PartResp(index=idx, error_code=ErrorCode.NONE, base_offset=appended.base_offset,
                                   log_append_time_ms=appended.log_append_time_ms,
                                   log_start_offset=appended.log_start_offset))
    if acks == 0:
        if failed:
            raise ConnectionClosed("acks=0 produce failed for some partition")
        return None
    return ProduceResponse(responses=responses, throttle_time_ms=0)
