"""The dumpers of DumpLogSegments: ``.log``/``.checkpoint``, ``.index``, ``.timeindex``, ``.snapshot`` and
``.txnindex``, the deferred error reports, and ``dump_files``."""

from __future__ import annotations

import mmap
import os
import struct
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO

from kafkalite_storage.batch import crc32c as _crc32c_fn
from kafkalite_storage.dumplog.decoders import (
    decoder_announcement,
    offsets_key_value,
    string_key_value,
    txn_key_value,
)
from kafkalite_storage.dumplog.java import (
    _ILLEGAL_ARG,
    _INT_MAX,
    _KAFKA_EXC,
    _MAX_MESSAGE_SIZE_DEFAULT,
    _NO_TIMESTAMP,
    JavaError,
    ScalaHashMap,
    _i32,
    _i64,
    _jabs,
    _jfile,
    _jname,
    _jparse_long,
    _optional_long,
    _unjava,
    _Writer,
    plain_text,
)
from kafkalite_storage.dumplog.lines import _control_suffix, batch_head, batch_tail
from kafkalite_storage.dumplog.records import Batch, LogBytes, _Legacy, iter_file_batches, iter_records


@dataclass
class Options:
    print_data_log: bool = False
    deep_iteration: bool = False
    index_sanity_check: bool = False
    verify_index_only: bool = False
    skip_record_metadata: bool = False
    max_message_size: int = _MAX_MESSAGE_SIZE_DEFAULT
    max_bytes: int = _INT_MAX
    decoder: str = "string"  # or "offsets" (--offsets-decoder), "transaction-log" (--transaction-log-decoder)
    key_decoder: str = "org.apache.kafka.tools.api.StringDecoder"
    value_decoder: str = "org.apache.kafka.tools.api.StringDecoder"


class _State:
    """The error maps of DumpLogSegments.main, with Kafka's put pattern (which decides their capacity)."""

    def __init__(self) -> None:
        self.index_mismatches = ScalaHashMap()
        self.nonconsecutive = ScalaHashMap()
        self.ts_mismatch = ScalaHashMap()
        self.ts_out_of_order = ScalaHashMap()
        self.ts_not_found = ScalaHashMap()

    @staticmethod
    def prepend(m: ScalaHashMap, key: str, pair: tuple[int, int]) -> None:
        """``seq = m.getOrElse(k, Nil); seq ::= pair; m.put(k, seq)``: a put on every call."""
        m.put(key, [pair, *(m.get(key) or [])])

    @staticmethod
    def append(m: ScalaHashMap, key: str, pair: tuple[int, int]) -> None:
        """``TimeIndexDumpErrors``: put only when the key's buffer is new, then append to it."""
        seq = m.get(key)
        if seq is None:
            seq = []
            m.put(key, seq)
        seq.append(pair)


def _open_error(path: str, exc: OSError) -> JavaError:
    """What Files.newByteChannel / FileInputStream throw for a file that cannot be read, and our line for it."""
    if isinstance(exc, FileNotFoundError):
        return JavaError("java.nio.file.NoSuchFileException", path, plain=f"{path}: no such file")
    if isinstance(exc, IsADirectoryError):
        return JavaError("java.io.IOException", "Is a directory", plain=f"{path} is a directory, not a file")
    if isinstance(exc, PermissionError):
        return JavaError("java.nio.file.AccessDeniedException", path, plain=f"{path}: permission denied")
    reason = exc.strerror or str(exc)
    return JavaError("java.io.IOException", reason, plain=f"{path}: {reason}")


def _read_file(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise _open_error(path, exc) from None


def _map_file(path: str) -> LogBytes:
    """A segment, memory-mapped read-only (Kafka reads it through a FileChannel); unmapped when dropped."""
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return b""
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as exc:
        raise _open_error(path, exc) from None


def _corrupt_with_file(e: JavaError, path: str, start: int = 0, end: int | None = None) -> JavaError:
    """Fill in the ``FileRecords`` a reader error names: ``{file}`` is its file, ``{records}`` its toString()
    (a slice ``[start, end)`` of the file)."""
    if e.message and ("{file}" in e.message or "{records}" in e.message):
        records = f"FileRecords(size={(end or 0) - start}, file={path}, start={start}, end={end})"
        return JavaError(e.java_class, e.message.replace("{file}", path).replace("{records}", records),
                         plain=e.plain, detail=e.detail)
    return e


def _outside(position: int, log_path: str, size: int) -> str:
    return (f"an index entry points at position {position}, outside {log_path} ({size} bytes): the index or its "
            "segment is corrupt")


def _dump_log(path: str, opts: Options, st: _State, w: _Writer) -> None:
    name = _jname(path)
    if opts.decoder == "string":  # DumpLogSegmentsOptions.messageParser, evaluated for every data file
        w(decoder_announcement(opts.value_decoder))
        w(decoder_announcement(opts.key_decoder))
    if name.endswith(".log"):
        w(f"Log starting offset: {_jparse_long(name.split('.')[0])}\n")
    elif name.endswith(".checkpoint"):
        if name == "bootstrap.checkpoint":
            w("KRaft bootstrap snapshot\n")
        else:
            end_offset = _jparse_long(name[:20])
            epoch = _jparse_long(name[21:31])
            w(f"Snapshot end offset: {end_offset}, epoch: {epoch}\n")
    data = _map_file(path)
    size = min(len(data), opts.max_bytes)
    deep = opts.deep_iteration or opts.print_data_log
    valid_bytes = 0
    last_offset = -1
    try:
        for batch in iter_file_batches(data, 0, size):
            legacy = batch.magic < 2
            w(batch_head(batch))
            w(batch_tail(batch) + "\n")
            if deep:
                if legacy:
                    is_control = False
                    ts_type = _Legacy(0, batch.data[12:]).timestamp_type
                else:
                    attrs = batch.header()[5]
                    is_control = bool(attrs & 0x20)
                    ts_type = "LogAppendTime" if attrs & 0x08 else "CreateTime"
                for rec in iter_records(batch):
                    if last_offset != -1 and rec.offset != last_offset + 1:
                        st.prepend(st.nonconsecutive, _jabs(path), (last_offset, rec.offset))
                    last_offset = rec.offset
                    prefix = "| "
                    if not opts.skip_record_metadata:
                        w(f"{prefix}offset: {rec.offset} {ts_type}: {rec.timestamp} keySize: {rec.key_size} "
                          f"valueSize: {rec.value_size}")
                        prefix = " "
                        if rec.legacy is None:
                            hk = ",".join(k for k, _ in rec.headers)
                            w(f" sequence: {rec.sequence} headerKeys: [{hk}]")
                        else:  # Kafka's format string really ends in "}}" here
                            w(f" isValid: {'true' if rec.legacy[0] else 'false'} crc: {rec.legacy[1]}}}")
                        if is_control:
                            w(_control_suffix(rec))
                    if opts.print_data_log and not is_control:
                        if rec.data_error is not None:
                            raise rec.data_error
                        if opts.decoder == "offsets":
                            key_text, payload = offsets_key_value(rec.offset, rec.key, rec.value)
                        elif opts.decoder == "transaction-log":
                            key_text, payload = txn_key_value(rec.key, rec.value)
                        else:
                            key_text, payload = string_key_value(rec.key, rec.value, opts.key_decoder,
                                                                 opts.value_decoder)
                        if key_text is not None:
                            w(f"{prefix}key: {key_text}")
                            prefix = " "
                        if payload is not None:
                            w(f" payload: {payload}")
                    w("\n")
            valid_bytes += batch.size
    except JavaError as e:
        raise _corrupt_with_file(e, path, 0, size) from None
    trailing = size - valid_bytes
    if trailing > 0 and opts.max_bytes == _INT_MAX:
        w(f"Found {trailing} invalid bytes at the end of {name}\n")


def _segment_files(path: str, suffix: str) -> str:
    absolute = _jabs(path)
    parent = absolute[: absolute.rfind("/")] or "/"
    return _jfile(parent + "/" + _jname(path).split(".")[0] + suffix)


def _index_entries(data: bytes, entry_size: int) -> int:
    return len(data) // entry_size


def _first_batch_last_offset(log: LogBytes, position: int, max_size: int, log_path: str) -> int:
    """``fileRecords.slice(position, maxSize).batches.iterator.next().lastOffset``."""
    size = len(log)
    if position < 0:
        raise JavaError(_ILLEGAL_ARG, f"Invalid position: {position} in read from FileRecords(size={size}, "
                                      f"file={log_path}, start=0, end={_INT_MAX})",
                        detail=_outside(position, log_path, size))
    if position > size:
        raise JavaError(_ILLEGAL_ARG, f"Slice from position {position} exceeds end position of "
                                      f"FileRecords(size={size}, file={log_path}, start=0, end={_INT_MAX})",
                        detail=_outside(position, log_path, size))
    end = position + max_size
    if end > size or end > _INT_MAX:
        end = size
    try:
        for batch in iter_file_batches(log, position, end):
            return _batch_last_offset(batch)
    except JavaError as e:
        raise _corrupt_with_file(e, log_path, position, end) from None
    raise JavaError("java.util.NoSuchElementException",
                    detail=f"an index entry points at position {position} of {log_path}, where no batch of at "
                           f"most {max_size} bytes (--max-message-size) starts")


def _dump_index(path: str, opts: Options, st: _State, w: _Writer) -> None:
    base = _jparse_long(_jname(path).split(".")[0])
    log_path = _segment_files(path, ".log")
    log = _map_file(log_path)
    data = _read_index(path, 8)
    entries = _index_entries(data, 8)
    if entries == 0:
        w(f"{path} is empty.\n")
        return
    if opts.index_sanity_check:
        last = base + struct.unpack_from(">i", data, (entries - 1) * 8)[0]
        if last < base:
            raise JavaError("org.apache.kafka.storage.internals.log.CorruptIndexException",
                            f"Corrupt index found, index file {_jabs(path)} has non-zero size but the last offset "
                            f"is {last} which is less than the base offset {base}")
        if len(data) % 8:
            raise JavaError("org.apache.kafka.storage.internals.log.CorruptIndexException",
                            f"Index file {_jabs(path)} is corrupt, found {len(data)} bytes which is neither "
                            "positive nor a multiple of 8")
        w(f"{path} passed sanity check.\n")
        return
    for i in range(entries):
        rel, position = struct.unpack_from(">ii", data, i * 8)
        offset = base + rel
        if offset == base and i > 0:
            return
        log_last = _first_batch_last_offset(log, position, opts.max_message_size, log_path)
        if log_last != offset:
            st.prepend(st.index_mismatches, _jabs(path), (offset, log_last))
        if not opts.verify_index_only:
            w(f"offset: {offset} position: {position}\n")


def _read_index(path: str, entry_size: int) -> bytes:
    if not os.path.exists(path):
        # Kafka's AbstractIndex would create the file, then fail: maxIndexSize -1 < entry size.
        raise JavaError(_ILLEGAL_ARG, "Invalid max index size: -1", plain=f"{path}: no such file")
    with open(path, "rb") as f:
        return f.read()


def _offset_index_lookup(data: bytes, base: int, target: int) -> int:
    """``OffsetIndex.lookup(target).position``: the warm/cold binary search of AbstractIndex, key search."""
    entries = len(data) // 8

    def key(n: int) -> int:
        return base + int(struct.unpack_from(">i", data, n * 8)[0])

    def search(lo: int, hi: int) -> int:
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            k = key(mid)
            if k > target:
                hi = mid - 1
            elif k < target:
                lo = mid
            else:
                return mid
        return lo

    if entries == 0:
        return 0
    first_hot = max(0, entries - 1 - 8192 // 8)
    if key(first_hot) < target:
        slot = search(first_hot, entries - 1)
    elif key(0) > target:
        slot = -1
    else:
        slot = search(0, first_hot)
    return 0 if slot == -1 else struct.unpack_from(">i", data, slot * 8 + 4)[0]


def _dump_time_index(path: str, opts: Options, st: _State, w: _Writer) -> None:
    base = _jparse_long(_jname(path).split(".")[0])
    log_path = _segment_files(path, ".log")
    log = _map_file(log_path)
    index = _read_index(_segment_files(path, ".index"), 8)
    index = index[: len(index) // 8 * 8]
    data = _read_index(path, 12)
    entries = len(data) // 12
    key = _jabs(path)
    if opts.index_sanity_check:
        if entries:
            first_ts = struct.unpack_from(">q", data, 0)[0]
            last_ts, last_rel = struct.unpack_from(">qi", data, (entries - 1) * 12)
            exc = "org.apache.kafka.storage.internals.log.CorruptIndexException"
            if last_ts < first_ts:
                raise JavaError(exc, f"Corrupt time index found, time index file ({key}) has non-zero size but "
                                     f"the last timestamp is {last_ts} which is less than the first timestamp "
                                     f"{first_ts}")
            if base + last_rel < base:
                raise JavaError(exc, f"Corrupt time index found, time index file ({key}) has non-zero size but "
                                     f"the last offset is {base + last_rel} which is less than the first offset "
                                     f"{base}")
        if len(data) % 12:
            raise JavaError("org.apache.kafka.storage.internals.log.CorruptIndexException",
                            f"Time index file {key} is corrupt, found {len(data)} bytes which is neither "
                            "positive nor a multiple of 12")
        w(f"{path} passed sanity check.\n")
        return
    prev_ts = _NO_TIMESTAMP
    for i in range(entries):
        ts, rel = struct.unpack_from(">qi", data, i * 12)
        offset = base + rel
        if offset == base and i > 0:
            return
        position = _offset_index_lookup(index, base, offset)
        whole = f"FileRecords(size={len(log)}, file={log_path}, start=0, end={_INT_MAX})"
        if position < 0:
            raise JavaError(_ILLEGAL_ARG, f"Invalid position: {position} in read from {whole}",
                            detail=_outside(position, log_path, len(log)))
        if position > len(log):
            raise JavaError(_ILLEGAL_ARG, f"Slice from position {position} exceeds end position of {whole}",
                            detail=_outside(position, log_path, len(log)))
        found: Batch | None = None
        try:
            for batch in iter_file_batches(log, position, len(log)):
                last = _batch_last_offset(batch)
                if last >= offset:
                    found = batch
                    break
            if found is None:
                st.append(st.ts_not_found, key, (offset, -1))
            elif _batch_last_offset(found) != offset:
                st.append(st.ts_not_found, key, (offset, _batch_last_offset(found)))
            else:
                max_ts = _NO_TIMESTAMP
                for rec in iter_records(found):
                    max_ts = max(max_ts, rec.timestamp)
                if max_ts != ts:
                    st.append(st.ts_mismatch, key, (ts, max_ts))
                if prev_ts >= ts:
                    st.append(st.ts_out_of_order, key, (ts, prev_ts))
        except JavaError as e:
            raise _corrupt_with_file(e, log_path, position, len(log)) from None
        if not opts.verify_index_only:
            w(f"timestamp: {ts} offset: {offset}\n")
        prev_ts = ts


def _batch_last_offset(batch: Batch) -> int:
    """``lastOffset``: the message offset for magic 0/1; for v2 it needs the batch header (``loadBatchHeader``
    reads 61 bytes from the file, past a too-short batch if the file allows)."""
    base = int(struct.unpack_from(">q", batch.data, 0)[0])
    if batch.magic < 2:
        return base
    return _i64(base + int(batch.header()[6]))


def _dump_producer_snapshot(path: str, w: _Writer, e: _Writer) -> None:
    """``ProducerStateManager.readSnapshot`` + the tool's line per producer entry; ``e`` gets Kafka's one line
    (with its newline) when the snapshot cannot be read, and the tool goes on with the next file."""
    data = _read_file(path)
    schema_err = "Snapshot failed schema validation: "
    if len(data) < 2:
        e(schema_err + "Error reading field 'version': java.nio.BufferUnderflowException\n")
        return
    if len(data) < 6:
        e(schema_err + "Error reading field 'crc': java.nio.BufferUnderflowException\n")
        return
    if len(data) < 10:
        e(schema_err + "Error reading field 'producer_entries': java.nio.BufferUnderflowException\n")
        return
    version, crc, count = struct.unpack_from(">hIi", data, 0)
    if count < 0:
        e(schema_err + f"Error reading field 'producer_entries': Array size {count} cannot be negative\n")
        return
    if count > len(data) - 10:
        e(schema_err + f"Error reading field 'producer_entries': Error reading array of size {count}, only "
          f"{len(data) - 10} bytes available\n")
        return
    if len(data) < 10 + 46 * count:
        e(schema_err + "Error reading field 'producer_entries': Error reading field "
          f"'{_snapshot_truncated_field(len(data) - 10 - 46 * ((len(data) - 10) // 46))}': "
          "java.nio.BufferUnderflowException\n")
        return
    if version != 1:
        e(f"Snapshot contained an unknown file version {version}\n")
        return
    computed = _crc32c_fn(data[6:])
    if crc != computed:
        e(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. Computed crc: {computed}\n")
        return
    for n in range(count):
        (pid, epoch, last_seq, last_offset, offset_delta, timestamp, coordinator_epoch,
         txn_first) = struct.unpack_from(">qhiqiqiq", data, 10 + 46 * n)
        w(f"producerId: {pid} producerEpoch: {epoch} coordinatorEpoch: {coordinator_epoch} "
          f"currentTxnFirstOffset: {_optional_long(txn_first if txn_first >= 0 else None)} "
          f"lastTimestamp: {timestamp} ")
        if last_offset >= 0:
            first_seq = (_INT_MAX - (offset_delta - last_seq) + 1) if last_seq < offset_delta \
                else last_seq - offset_delta
            w(f"firstSequence: {_i32(first_seq)} lastSequence: {last_seq} lastOffset: {last_offset} "
              f"offsetDelta: {offset_delta} timestamp: {timestamp}")
        w("\n")


def _snapshot_truncated_field(partial: int) -> str:
    fields = [("producer_id", 8), ("epoch", 2), ("last_sequence", 4), ("last_offset", 8), ("offset_delta", 4),
              ("timestamp", 8), ("coordinator_epoch", 4), ("current_txn_first_offset", 8)]
    acc = 0
    for name, width in fields:
        if partial < acc + width:
            return name
        acc += width
    return fields[-1][0]


def _dump_txn_index(path: str, w: _Writer) -> None:
    if not os.path.exists(path):
        return
    data = _read_file(path)
    for pos in range(0, len(data) - len(data) % 34, 34):
        version, pid, first, last, lso = struct.unpack_from(">hqqqq", data, pos)
        if version > 0:
            raise JavaError(_KAFKA_EXC, f"Unexpected aborted transaction version {version} in transaction index "
                                        f"{_jabs(path)}, current version is 0",
                            detail=f"entry version {version} at position {pos} (a transaction index holds version "
                                   "0 entries): not a transaction index, or corrupt")
        w(f"version: {version} producerId: {pid} firstOffset: {first} lastOffset: {last} "
          f"lastStableOffset: {lso}\n")


def _print_errors(st: _State, e: _Writer) -> None:
    for name in st.index_mismatches.ordered_keys():
        e(f"Mismatches in :{name}\n")
        for index_offset, log_offset in st.index_mismatches.get(name):
            e(f"  Index offset: {index_offset}, log offset: {log_offset}\n")
    for name in st.ts_mismatch.ordered_keys():
        e(f"Found timestamp mismatch in :{name}\n")
        for index_ts, log_ts in st.ts_mismatch.get(name):
            e(f"  Index timestamp: {index_ts}, log timestamp: {log_ts}\n")
    for name in st.ts_out_of_order.ordered_keys():
        e(f"Found out of order timestamp in :{name}\n")
        for index_ts, prev in st.ts_out_of_order.get(name):
            e(f"  Index timestamp: {index_ts}, Previously indexed timestamp: {prev}\n")
    for name in st.ts_not_found.ordered_keys():
        e("The following indexed offsets are not found in the log.\n")
        for indexed, found in st.ts_not_found.get(name):
            e(f"Indexed offset: {indexed}, found log offset: {found}\n")
    for name in st.nonconsecutive.ordered_keys():
        e(f"Non-consecutive offsets in {name}\n")
        for first, second in st.nonconsecutive.get(name):
            e(f"  {first} is followed by {second}\n")


def dump_files(paths: Sequence[str], print_data_log: bool = False, deep_iteration: bool = False,
               index_sanity_check: bool = False, verify_index_only: bool = False, out: IO[str] = sys.stdout,
               err: IO[str] = sys.stderr, *, skip_record_metadata: bool = False,
               max_message_size: int = _MAX_MESSAGE_SIZE_DEFAULT, max_bytes: int = _INT_MAX,
               decoder: str = "string", key_decoder_class: str | None = None,
               value_decoder_class: str | None = None, errors: str = "kafkalite") -> int:
    """Dump ``paths`` exactly as ``kafka-dump-log.sh --files`` would; returns the process exit status.
    ``decoder`` "offsets" / "transaction-log" are --offsets-decoder / --transaction-log-decoder;
    ``key_decoder_class`` / ``value_decoder_class`` name Kafka's String/Integer/Long decoders. Any of them implies
    --print-data-log, as in Kafka.

    What goes to stdout is Kafka's, byte for byte, and so are the reports Kafka prints after a complete run
    (index mismatches, gaps, trailing invalid bytes). An error that stops Kafka's tool (a missing file, a corrupt
    batch, ...) or a snapshot it cannot read is, with ``errors="kafkalite"``, one line of our own on ``err``:
    ``kafkalite dump-log: error: FILE: what is wrong`` (exit status 1); ``errors="java"`` prints the JVM's
    ``Exception in thread "main" <class>: <message>`` (and Kafka's snapshot lines, exit status 0) instead,
    which is what the tests compare with Kafka's own tool."""
    if errors not in ("kafkalite", "java"):
        raise ValueError(f"unknown errors style {errors!r}")
    if decoder not in ("string", "offsets", "transaction-log"):
        raise ValueError(f"unknown decoder {decoder!r}")
    print_data_log = (print_data_log or decoder != "string" or key_decoder_class is not None
                      or value_decoder_class is not None)
    default = "org.apache.kafka.tools.api.StringDecoder"
    opts = Options(print_data_log, deep_iteration or print_data_log, index_sanity_check, verify_index_only,
                   skip_record_metadata, max_message_size, max_bytes, decoder, key_decoder_class or default,
                   value_decoder_class or default)
    st = _State()
    w, e = out.write, err.write
    java = errors == "java"
    failed = False
    path = ""

    def snapshot_error(text: str) -> None:
        nonlocal failed
        if java:
            e(text)
            return
        failed = True
        out.flush()
        e(f"{_ERROR_PREFIX}{path}: not a valid producer-state snapshot: {_unjava(text.strip())}\n")

    try:
        for arg in paths:
            path = _jfile(arg)
            w(f"Dumping {path}\n")
            name = _jname(path)
            dot = name.rfind(".")
            if dot < 0:
                raise JavaError("java.lang.StringIndexOutOfBoundsException",
                                f"begin {dot}, end {len(name)}, length {len(name)}")
            suffix = name[dot:]
            if suffix in (".log", ".checkpoint"):
                _dump_log(path, opts, st, w)
            elif suffix == ".index":
                _dump_index(path, opts, st, w)
            elif suffix == ".timeindex":
                _dump_time_index(path, opts, st, w)
            elif suffix == ".snapshot":
                _dump_producer_snapshot(path, w, snapshot_error)
            elif suffix == ".txnindex":
                _dump_txn_index(path, w)
            else:
                e(f"Ignoring unknown file {path}\n")
    except JavaError as exc:
        out.flush()
        e((exc.render() if java else _ERROR_PREFIX + plain_text(exc, path)) + "\n")
        return 1
    _print_errors(st, e)
    return 1 if failed else 0


_ERROR_PREFIX = "kafkalite dump-log: error: "


