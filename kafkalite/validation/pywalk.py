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


# ---- the streaming walk ------------------------------------------------------------------------------------
# Phases of the record the Walker is inside of (between records: _LEN with no varint byte read yet)
_LEN, _ATTR, _DELTA, _OFF, _KLEN, _VLEN, _NH, _HK, _HV, _SKIP, _END, _DRAIN = range(12)
_OK, _NEED, _SHORT, _TOO_LONG = range(4)
_STRUCT = "Found invalid record structure"
_VARINT_TOO_LONG = "Found invalid record structure: varint too long"


class Walker:
    """``walk`` over a stream: ``feed(piece)`` the decompressed records piece by piece, then ``finish()``.

    The verdict is the one ``walk(whole, 0, True, ...)`` gives on the concatenation of the pieces, but nothing is
    buffered: the records lying wholly inside a piece go through ``walk`` (final=False), and the one record a
    piece boundary cuts is read field by field by a small state machine, which skips key, value and header
    bytes by counting them. So a record of 1 GiB costs no memory (Kafka's ``skipKeyValueIterator`` does the
    same). To give the same verdict as the whole-buffer walk, an error found inside such a record is only
    reported once all of the record's ``length`` bytes have arrived (``_DRAIN``): if the stream ends first, the
    answer is the truncated-record message, as ``walk`` gives for a record cut by the end of the data.

    ``feed`` returns True once the verdict is known (an error: feed no more); ``finish()`` returns the 7-tuple
    ``walk`` returns (``pos`` is 0).
    """

    __slots__ = ("bad_index", "bad_ts", "base_ts", "count", "delta", "error", "hi", "hleft", "index", "length",
                 "lo", "max_ts", "next", "nokey", "pend", "phase", "rem", "skip", "vn", "vraw")

    def __init__(self, count: int, base_ts: int, lo: int, hi: int) -> None:
        self.count, self.base_ts, self.lo, self.hi = count, base_ts, lo, hi
        self.index = 0
        self.max_ts = self.bad_index = self.bad_ts = self.nokey = -1
        self.error: str | None = None
        self.pend: str | None = None        # the current record's error, reported at its end
        self.phase = _LEN
        self.vraw = self.vn = 0             # a varint cut by a piece boundary: bits and bytes so far
        self.length = self.rem = 0          # the current record's length, and its bytes still to come
        self.delta = self.hleft = self.skip = 0
        self.next = _LEN                    # the phase after _SKIP

    def feed(self, buf: bytes | bytearray | memoryview) -> bool:
        if self.error is not None:
            return True
        n = len(buf)
        pos = 0
        while True:
            if self.phase == _LEN and self.vn == 0:   # between records: whole ones straight from the piece
                (self.error, pos, self.index, self.max_ts, self.bad_index, self.bad_ts, self.nokey) = walk(
                    buf, pos, False, self.index, self.count, self.base_ts, self.lo, self.hi, self.max_ts,
                    self.bad_index, self.bad_ts, self.nokey)
                if self.error is not None:
                    return True
                if pos >= n:
                    return False
            pos = self._record(buf, pos, n)   # the record the piece's end cuts (or this one's rest)
            if self.error is not None:
                return True
            if pos >= n:
                return False

    def finish(self) -> tuple[str | None, int, int, int, int, int, int]:
        if self.error is None:
            if self.phase == _LEN:
                if self.vn or self.index < self.count:
                    self.error = "Incorrect declared batch size, premature EOF reached"
            else:
                self.error = (f"Invalid record size: expected {self.length} bytes in record payload, but instead "
                              f"the buffer has only {self.length - self.rem} remaining bytes.")
        return self.error, 0, self.index, self.max_ts, self.bad_index, self.bad_ts, self.nokey

    def _varint(self, buf: bytes | bytearray | memoryview, pos: int, n: int, max_bytes: int, bits: int,
                bounded: bool) -> tuple[int, int, int]:
        """(status, pos, value) of a varint that may have started in an earlier piece; ``bounded``: inside the
        record (its bytes count against ``rem``; running out of them is _SHORT)."""
        raw, k = self.vraw, self.vn
        while True:
            if bounded and self.rem == 0:
                self.vraw = self.vn = 0
                return _SHORT, pos, 0
            if pos >= n:
                self.vraw, self.vn = raw, k
                return _NEED, pos, 0
            b = buf[pos]
            pos += 1
            if bounded:
                self.rem -= 1
            raw |= (b & 0x7F) << (7 * k)
            k += 1
            if not b & 0x80:
                self.vraw = self.vn = 0
                raw &= (1 << bits) - 1
                return _OK, pos, (raw >> 1) ^ -(raw & 1)
            if k == max_bytes:
                self.vraw = self.vn = 0
                return _TOO_LONG, pos, 0

    def _fail(self, message: str) -> None:
        """The current record is bad: say so once its last byte has arrived."""
        self.pend = message
        self.phase = _DRAIN
        if self.rem == 0:
            self.error = message

    def _skip(self, n: int, then: int) -> None:
        if n > 0:
            self.skip, self.next, self.phase = n, then, _SKIP
        else:
            self.phase = then

    # (one branch per field of Kafka's DefaultRecord, in order)
    def _record(self, buf: bytes | bytearray | memoryview, pos: int, n: int) -> int:  # noqa: C901
        """Advance through the current record; return where the piece was left (its end, or the byte after
        the record once it is complete: phase _LEN again)."""
        while True:
            ph = self.phase
            if ph == _SKIP:
                take = min(self.skip, n - pos)
                pos += take
                self.rem -= take
                self.skip -= take
                if self.skip:
                    return pos
                self.phase = self.next
                continue
            if ph == _DRAIN:
                take = min(self.rem, n - pos)
                pos += take
                self.rem -= take
                if self.rem == 0:
                    self.error = self.pend
                return pos
            if ph == _END:
                if self.rem:
                    self._fail(f"Invalid record size: expected to read {self.length} bytes in record payload, "
                               f"but instead read {self.length - self.rem}")
                    continue
                ts = self.base_ts + self.delta
                if ts > _LONG_MAX or ts < _LONG_MIN:
                    ts = (ts - _LONG_MIN) % _ULONG + _LONG_MIN
                if ts > self.max_ts:
                    self.max_ts = ts
                if self.bad_index < 0 and ts != -1 and (ts < self.lo or ts > self.hi):
                    self.bad_index = self.index
                    self.bad_ts = ts
                self.index += 1
                self.phase = _LEN
                return pos
            if ph == _ATTR:
                if pos >= n:
                    return pos
                pos += 1
                self.rem -= 1
                self.phase = _DELTA
                continue
            if ph == _LEN:
                status, pos, v = self._varint(buf, pos, n, 5, 32, False)
                if status == _NEED:
                    return pos
                if status == _TOO_LONG:
                    self.error = _VARINT_TOO_LONG
                    return pos
                if v < 0:
                    self.error = f"Invalid record size: negative length {v}"
                    return pos
                self.length = self.rem = v
                self.pend = None
                if v == 0:
                    self._fail(_STRUCT)
                    return pos
                self.phase = _ATTR
                continue
            status, pos, v = self._varint(buf, pos, n, 10 if ph == _DELTA else 5, 64 if ph == _DELTA else 32,
                                          True)
            if status == _NEED:
                return pos
            if status != _OK:
                self._fail(_STRUCT if status == _SHORT else _VARINT_TOO_LONG)
                continue
            if ph == _DELTA:
                self.delta = v
                self.phase = _OFF
            elif ph == _OFF:
                if v != self.index:
                    self._fail(f"Inner record offset delta {v} of the record at index {self.index} does not "
                               f"match its position (expected {self.index})")
                else:
                    self.phase = _KLEN
            elif ph == _KLEN:
                if v > self.rem:
                    self._fail(_STRUCT)
                else:
                    if v < 0 and self.nokey < 0:
                        self.nokey = self.index
                    self._skip(v, _VLEN)
            elif ph == _VLEN:
                if v > self.rem:
                    self._fail(_STRUCT)
                else:
                    self._skip(v, _NH)
            elif ph == _NH:
                if v < 0:
                    self._fail(f"Found invalid number of record headers {v}")
                elif v > self.rem:
                    self._fail(f"Found invalid number of record headers. {v} is larger than the remaining size "
                               "of the buffer")
                else:
                    self.hleft = v
                    self.phase = _HK if v else _END
            elif ph == _HK:
                if v < 0:
                    self._fail(f"Invalid negative header key size {v}")
                elif v > self.rem:
                    self._fail(_STRUCT)
                else:
                    self._skip(v, _HV)
            else:   # _HV
                if v > self.rem:
                    self._fail(_STRUCT)
                else:
                    self.hleft -= 1
                    self._skip(v, _HK if self.hleft else _END)
