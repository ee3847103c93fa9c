"""The record walk in pure Python: the reference semantics for the compiled ``_walk`` extension.

``walk(buf, pos, final, index, count, base_ts, lo, hi, max_ts, bad_index, bad_ts, nokey)`` reads v2 records
(the batch body after its 61-byte header, decompressed) from ``buf[pos:]`` as Kafka 3.9's
``DefaultRecord.readFrom`` reads them, and returns ``(error, pos, index, max_ts, bad_index, bad_ts, nokey)``:

- ``error`` is None or Kafka's InvalidRecordException message; ``index`` is then the failing record's index.
- It stops after ``count`` records (RecordsCount); any byte left after them is an error ("records still
  remaining"). Without ``final`` (more decompressed bytes may follow), a record cut by the end of ``buf`` is
  left for the next call: ``pos`` is where it starts. With ``final``, fewer than ``count`` records is an
  error ("premature EOF").
- Per record: length varint (at most 5 bytes, >= 0, inside the data), attributes byte (not interpreted, as
  Kafka), timestamp delta varlong (at most 10 bytes), offset delta varint which must equal the record's index
  (kafkalite stores client bytes verbatim, so it cannot renumber as Kafka does for compressed batches), key
  and value (varint length, negative = null), header count (>= 0 and <= the bytes left), header key length
  (>= 0) and value length (negative = null), and the fields must end exactly at the record's end.
- Timestamps: ``ts = base_ts + delta`` with Java's 64-bit wrap-around; ``max_ts`` is the running maximum
  (start at -1); the first record whose ``ts`` is not -1 and lies outside ``[lo, hi]`` sets ``bad_index`` and
  ``bad_ts`` (start at -1). ``nokey`` is the index of the first record with a null key (start at -1).
"""

from __future__ import annotations

_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1
_ULONG = 2**64


class _Bad(Exception):
    pass


def _varint(buf: bytes | memoryview, p: int, end: int, max_bytes: int, bits: int) -> tuple[int, int]:
    raw = 0
    shift = 0
    for i in range(max_bytes):
        if p >= end:
            raise IndexError
        b = buf[p]
        p += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            raw &= (1 << bits) - 1
            return (raw >> 1) ^ -(raw & 1), p
        shift += 7
        del i
    raise _Bad("Found invalid record structure: varint too long")

# (complex on purpose: the C walk's twin, line for line)
def walk(buf: bytes | bytearray | memoryview, pos: int, final: bool, index: int, count: int, base_ts: int,  # noqa: C901
         lo: int, hi: int, max_ts: int, bad_index: int, bad_ts: int, nokey: int
         ) -> tuple[str | None, int, int, int, int, int, int]:
    n = len(buf)
    while index < count:
        if pos >= n:
            if final:
                return ("Incorrect declared batch size, premature EOF reached", pos, index, max_ts, bad_index,
                        bad_ts, nokey)
            break
        # record length
        b = buf[pos]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            p = pos + 1
        else:
            try:
                length, p = _varint(buf, pos, n, 5, 32)
            except IndexError:
                if final:
                    return ("Incorrect declared batch size, premature EOF reached", pos, index, max_ts,
                            bad_index, bad_ts, nokey)
                break
            except _Bad as exc:
                return str(exc), pos, index, max_ts, bad_index, bad_ts, nokey
        if length < 0:
            return (f"Invalid record size: negative length {length}", pos, index, max_ts, bad_index, bad_ts,
                    nokey)
        end = p + length
        if end > n:
            if final:
                return (f"Invalid record size: expected {length} bytes in record payload, but instead the buffer "
                        f"has only {n - p} remaining bytes.", pos, index, max_ts, bad_index, bad_ts, nokey)
            break
        start = p
        try:
            if p >= end:
                raise IndexError
            p += 1  # attributes
            b = buf[p] if p < end else 0x80
            if b < 0x80 and p < end:
                delta = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                delta, p = _varint(buf, p, end, 10, 64)
            b = buf[p] if p < end else 0x80
            if b < 0x80 and p < end:
                off = (b >> 1) ^ -(b & 1)
                p += 1
            else:
                off, p = _varint(buf, p, end, 5, 32)
            if off != index:
                return (f"Inner record offset delta {off} of the record at index {index} does not match its "
                        f"position (expected {index})", pos, index, max_ts, bad_index, bad_ts, nokey)
            klen, p = _varint(buf, p, end, 5, 32)
            if klen >= 0:
                p += klen
                if p > end:
                    raise IndexError
            elif nokey < 0:
                nokey = index
            vlen, p = _varint(buf, p, end, 5, 32)
            if vlen >= 0:
                p += vlen
                if p > end:
                    raise IndexError
            nh, p = _varint(buf, p, end, 5, 32)
            if nh < 0:
                raise _Bad(f"Found invalid number of record headers {nh}")
            if nh > end - p:
                raise _Bad(f"Found invalid number of record headers. {nh} is larger than the remaining size "
                           "of the buffer")
            for _ in range(nh):
                hk, p = _varint(buf, p, end, 5, 32)
                if hk < 0:
                    raise _Bad(f"Invalid negative header key size {hk}")
                p += hk
                if p > end:
                    raise IndexError
                hv, p = _varint(buf, p, end, 5, 32)
                if hv >= 0:
                    p += hv
                    if p > end:
                        raise IndexError
        except IndexError:
            return ("Found invalid record structure", pos, index, max_ts, bad_index, bad_ts, nokey)
        except _Bad as exc:
            return str(exc), pos, index, max_ts, bad_index, bad_ts, nokey
        if p != end:
            return (f"Invalid record size: expected to read {length} bytes in record payload, but instead read "
                    f"{p - start}", pos, index, max_ts, bad_index, bad_ts, nokey)
        ts = base_ts + delta
        if ts > _LONG_MAX or ts < _LONG_MIN:
            ts = (ts - _LONG_MIN) % _ULONG + _LONG_MIN
        if ts > max_ts:
            max_ts = ts
        if bad_index < 0 and ts != -1 and (ts < lo or ts > hi):
            bad_index = index
            bad_ts = ts
        index += 1
        pos = end
    if index >= count and pos < n:
        return ("Incorrect declared batch size, records still remaining in file", pos, index, max_ts, bad_index,
                bad_ts, nokey)
    return None, pos, index, max_ts, bad_index, bad_ts, nokey
