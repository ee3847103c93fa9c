"""Produce validation: every record of a client's v2 batch is checked the way Kafka 3.9's LogValidator and
DefaultRecordBatch/DefaultRecord read it, before storage sees the batch. The bytes are never re-encoded.

``validate(batch, ...)`` returns None when the batch may be appended, or a `Rejection` (error code, message,
per-record errors for ProduceResponse v8+ ``record_errors``). Checks, in order:

1. framing: at least a 61-byte header, magic 2, Length matching the bytes (CORRUPT_MESSAGE /
   UNSUPPORTED_FOR_MESSAGE_FORMAT / INVALID_RECORD for trailing bytes = a second batch);
2. codec: ids 5-7 do not exist. Kafka's ``CompressionType.forId`` throws IllegalArgumentException for them,
   which is no ApiException: from Produce v7 on it surfaces in ``UnifiedLog.analyzeAndValidateRecords`` (after
   the CRC check) and ReplicaManager answers the partition UNKNOWN_SERVER_ERROR with no message, as here;
   before v7 ``ProduceRequest.validateRecords`` throws it in KafkaApis and the whole request fails (the produce
   handler's ``unknown_codec_before_v7``). zstd needs Produce v7+ (UNSUPPORTED_COMPRESSION_TYPE,
   ProduceRequest.validateRecords);
3. LogValidator.validateBatch for client batches (INVALID_RECORD): LastOffsetDelta >= 0, RecordsCount > 0,
   RecordsCount == LastOffsetDelta + 1, no control bit, a producer id needs BaseSequence >= 0; and the
   transactional bit needs a producer id (INVALID_RECORD) and a transactional id in the request
   (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as KafkaApis answers);
4. every record (``walk``; compressed payloads through kafkalite_storage.compression.inflate, a bounded streaming
   decompression whose pieces go to ``Walker``, the streaming walk, which keeps no record bytes: a 1 GiB record
   costs a 64 KiB piece of memory, as Kafka's skipKeyValueIterator): structure errors are INVALID_RECORD with Kafka's
   InvalidRecordException text; RecordsCount must match the records present exactly; offset deltas must be
   0..n-1 (INVALID_RECORD with a record error, since we cannot renumber without re-encoding); a payload
   inflating beyond ``max_inflated`` bytes is MESSAGE_TOO_LARGE (non-retriable: the batch can never pass);
   bytes a codec cannot decode are CORRUPT_MESSAGE;
5. per record: CreateTime topics check each timestamp against [now - before, now + after] (topic configs
   message.timestamp.before/after.max.ms falling back to the deprecated message.timestamp.difference.max.ms
   while they are at their default, as Kafka 3.6+), INVALID_TIMESTAMP with Kafka's record error text; a
   client batch with the LogAppendTime bit on a CreateTime topic is INVALID_TIMESTAMP; compacted topics need
   a key on every record (INVALID_RECORD); and, because the header is stored as sent, a CreateTime batch's
   MaxTimestamp must equal its largest record timestamp (INVALID_RECORD; Kafka would rewrite it).

When the CRC-32C of a batch that fails any check is wrong, the answer is CORRUPT_MESSAGE instead (Kafka
checks the CRC first; computing it only on failure keeps it off the hot path, storage checks it on append).

The walk is compiled (``_walk.c``, built by setup.py) when possible, with ``pywalk.py`` as the identical
pure-Python fallback; ``WALK_IMPL`` names the one in use. Why C: the whole broker spends ~0.3 us per produced
record, the Python walk alone ~3 us (bench/bench_validate.py), the C one ~10 ns. Plain C through setuptools
needs only gcc and the Python headers at install (no Cython or Rust toolchain fetched at build time), and the
walk is ~200 lines with no Python objects per record. Tests run both walks over the same corpus and over
hypothesis-generated malformed records and require identical results.
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass, field

from kafkalite_storage.batch import (
    CONTROL_FLAG,
    HEADER_SIZE,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_FLAG,
    TRANSACTIONAL_FLAG,
    compute_crc,
    parse_header,
)
from kafkalite_storage.compression import InflateLimitError, inflate
from kafkalite_storage.config import LONG_MAX, LogConfig
from kafkalite_storage.errors import CorruptRecordError
from kafkalite_wire.errors import ErrorCode

try:
    from kafkalite.validation._walk import Walker, walk  # type: ignore[import-not-found]

    WALK_IMPL = "c"
except ImportError:  # no compiler at install time: same results, ~100x slower per record
    from kafkalite.validation.pywalk import Walker, walk

    WALK_IMPL = "python"
    logging.getLogger(__name__).warning(
        "kafkalite.validation._walk is not built (no C compiler at install?): produce validation uses the "
        "pure-Python record walk, ~3 us per record")

_LONG_MIN = -(2**63)
_HEADER = struct.Struct(">qiibIhiqqqhii")
_LENGTH = struct.Struct(">i")
DEFAULT_MAX_INFLATED_BYTES = 64 * 1024 * 1024
# compressed batches at least this large are validated in a worker thread by the produce handler; smaller
# ones inline until they have inflated INLINE_INFLATE_BYTES (a few ms of work), then again in a thread
THREAD_THRESHOLD_BYTES = 128 * 1024
INLINE_INFLATE_BYTES = 2 * 1024 * 1024


class Deferred(Exception):
    """Raised by validate(..., inline_budget=N) when a compressed payload inflates past N bytes: the caller
    should run the validation again off the event loop (without a budget)."""


@dataclass(slots=True)
class Rejection:
    """Why a batch was refused: a Kafka error code, a message, and per-record errors (index, message)."""

    code: ErrorCode
    message: str
    record_errors: list[tuple[int, str]] = field(default_factory=list)


def timestamp_bounds(config: LogConfig) -> tuple[int, int]:
    """(before.max.ms, after.max.ms) in effect: each falls back to message.timestamp.difference.max.ms while
    it is at its default (Kafka's LogConfig.getMessageTimestampBefore/AfterMaxMs)."""
    diff = config.message_timestamp_difference_max_ms
    before = config.message_timestamp_before_max_ms
    after = config.message_timestamp_after_max_ms
    return (before if before != LONG_MAX else diff), (after if after != LONG_MAX else diff)


def _clamp(v: int) -> int:
    return max(_LONG_MIN, min(LONG_MAX, v))


def frame_problem(records: memoryview | bytes | None) -> Rejection | None:
    """The request holds exactly one v2 batch (by its length field)."""
    if records is None or len(records) == 0:
        return Rejection(ErrorCode.INVALID_RECORD, "no record batch")
    if len(records) < HEADER_SIZE:
        return Rejection(ErrorCode.CORRUPT_MESSAGE, "record batch shorter than its header")
    if records[16] != 2:
        return Rejection(ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, f"record batch magic {records[16]} (need 2)")
    batch_len = LOG_OVERHEAD + int.from_bytes(records[8:12], "big", signed=True)
    if batch_len < HEADER_SIZE or batch_len > len(records):
        return Rejection(ErrorCode.CORRUPT_MESSAGE, f"record batch length field {batch_len - LOG_OVERHEAD} does "
                                                    f"not match the {len(records)} bytes sent")
    if batch_len != len(records):
        return Rejection(ErrorCode.INVALID_RECORD, "more than one record batch for a partition")
    return None


def _header_problem(attrs: int, lod: int, pid: int, seq: int, count: int, version: int,
                    transactional_id: str | None, tp: str) -> Rejection | None:
    codec = attrs & 0x07
    if codec > 4:   # Kafka: "Unknown compression type id: N", an IllegalArgumentException (no message sent)
        return Rejection(ErrorCode.UNKNOWN_SERVER_ERROR, "")
    if codec == 4 and version < 7:
        return Rejection(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                         f"Produce requests with version {version} are not allowed to use ZStandard compression")
    if lod < 0:
        return Rejection(ErrorCode.INVALID_RECORD, f"Batch has an invalid offset range: [0, {lod}] in topic "
                                                   f"partition {tp}")
    if count <= 0:
        return Rejection(ErrorCode.INVALID_RECORD,
                         f"Invalid reported count for record batch: {count} in topic partition {tp}")
    if count != lod + 1:
        return Rejection(ErrorCode.INVALID_RECORD, f"Inconsistent batch offset range [0, {lod}] and count "
                                                   f"of records {count} in topic partition {tp}")
    if attrs & CONTROL_FLAG:
        return Rejection(ErrorCode.INVALID_RECORD,
                         f"Clients are not allowed to write control records in topic partition {tp}")
    if pid >= 0 and seq < 0:
        return Rejection(ErrorCode.INVALID_RECORD, f"Invalid sequence number {seq} in record batch "
                                                   f"with producerId {pid} in topic partition {tp}")
    if attrs & TRANSACTIONAL_FLAG:
        if pid < 0:
            return Rejection(ErrorCode.INVALID_RECORD,
                             f"Transactional record batch without a producer id in topic partition {tp}")
        if transactional_id is None:
            return Rejection(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                             "transactional records in a Produce request without a transactional id")
    return None


def validate(batch: memoryview | bytes, *, config: LogConfig, now: int, version: int = 11,
             transactional_id: str | None = None, max_inflated: int = DEFAULT_MAX_INFLATED_BYTES,
             topic_partition: str = "", inline_budget: int | None = None) -> Rejection | None:
    """Check one client batch for appending to a partition with `config` at time `now` (ms). With
    `inline_budget`, raise Deferred rather than inflate more than that many bytes."""
    if len(batch) < HEADER_SIZE or batch[16] != 2 or len(batch) != LOG_OVERHEAD + _LENGTH.unpack_from(batch, 8)[0]:
        problem = frame_problem(batch)
        if problem is not None:
            return problem
    rejection = _check(memoryview(batch), config, now, version, transactional_id, max_inflated, topic_partition,
                       inline_budget)
    if rejection is not None and rejection.code != ErrorCode.CORRUPT_MESSAGE:
        hdr = parse_header(batch)
        if compute_crc(batch) != hdr.crc:
            return Rejection(ErrorCode.CORRUPT_MESSAGE,
                             f"Record batch is corrupt (stored crc = {hdr.crc}, computed crc = {compute_crc(batch)})")
    return rejection


def _check(mv: memoryview, config: LogConfig, now: int, version: int, transactional_id: str | None,
           max_inflated: int, tp: str, inline_budget: int | None) -> Rejection | None:
    (_base, _length, _epoch, _magic, _crc, attrs, lod, base_ts, max_ts_hdr, pid, _pepoch, seq,
     count) = _HEADER.unpack_from(mv)
    if attrs & 0x37 or pid >= 0 or lod != count - 1 or count <= 0 or lod < 0:   # not the plain common case
        problem = _header_problem(attrs, lod, pid, seq, count, version, transactional_id, tp)
        if problem is not None:
            return problem
    create_time = not config.log_append_time
    if create_time and attrs & TIMESTAMP_TYPE_FLAG:
        msg = ("Invalid timestamp type in message at index 0. Producer should not set timestamp type to "
               "LogAppendTime.")
        return Rejection(ErrorCode.INVALID_TIMESTAMP, "One or more records have been rejected due to invalid "
                                                      "timestamp", [(0, msg)])
    if create_time:
        before, after = timestamp_bounds(config)
        lo, hi = _clamp(now - before), _clamp(now + after)
    else:
        lo, hi = _LONG_MIN, LONG_MAX
    state: tuple[str | None, int, int, int, int, int, int]
    codec = attrs & 0x07
    if codec == 0:
        state = walk(mv, HEADER_SIZE, True, 0, count, base_ts, lo, hi, -1, -1, -1, -1)
    else:
        try:
            state = _walk_compressed(codec, mv, count, base_ts, lo, hi, max_inflated, inline_budget)
        except InflateLimitError as exc:
            return Rejection(ErrorCode.MESSAGE_TOO_LARGE, f"{exc} (kafkalite.max.uncompressed.batch.bytes)")
        except CorruptRecordError as exc:
            return Rejection(ErrorCode.CORRUPT_MESSAGE, str(exc))
    error, _pos, index, max_ts, bad_index, bad_ts, nokey = state
    if error is not None:
        if error.startswith("Inner record offset delta"):
            return Rejection(ErrorCode.INVALID_RECORD, _record_errors_text([(index, error)]), [(index, error)])
        return Rejection(ErrorCode.INVALID_RECORD, f"{error} (record at index {index} in topic partition {tp})")
    if bad_index >= 0:
        msg = (f"Timestamp {bad_ts} of message with offset {bad_index} is out of range. The timestamp should be "
               f"within [{lo}, {hi}]")
        return Rejection(ErrorCode.INVALID_TIMESTAMP,
                         "One or more records have been rejected due to invalid timestamp", [(bad_index, msg)])
    if nokey >= 0 and config.compact:
        errs = [(nokey, f"Compacted topic cannot accept message without key in topic partition {tp}")]
        return Rejection(ErrorCode.INVALID_RECORD, _record_errors_text(errs), errs)
    if create_time and max_ts != max_ts_hdr:
        return Rejection(ErrorCode.INVALID_RECORD, f"MaxTimestamp {max_ts_hdr} of the record batch is not "
                                                   f"its records' largest timestamp {max_ts} in topic partition {tp}")
    return None


def _walk_compressed(codec: int, mv: memoryview, count: int, base_ts: int, lo: int, hi: int, limit: int,
                     budget: int | None) -> tuple[str | None, int, int, int, int, int, int]:
    """Feed the inflated payload to the streaming walk piece by piece: nothing is kept but the piece (a record
    longer than a piece is read field by field, its key, value and headers skipped by counting)."""
    walker = Walker(count, base_ts, lo, hi)
    pieces = inflate(codec, mv[HEADER_SIZE:], limit)
    total = 0
    for piece in pieces:
        total += len(piece)
        if budget is not None and total > budget:
            raise Deferred
        if walker.feed(piece):
            # a verdict inside a snappy block: the block's corruption, if any, comes first (as when blocks
            # were decoded whole before their records were looked at)
            if not pieces.settle(None if budget is None else budget - total):
                raise Deferred
            break
    return walker.finish()


def _record_errors_text(errors: list[tuple[int, str]]) -> str:
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
    return (f"One or more records have been rejected due to {len(errors)} record errors in total, and only "
            f"showing the first three errors at most: [{shown}]")
