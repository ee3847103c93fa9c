"""The record model every client driver speaks, plus generators and checks.

A record as the tests see it: key and value are bytes or None (a Kafka null), headers are an ordered tuple of
(name, bytes-or-None) pairs (Kafka headers keep order and allow duplicates and null values), the timestamp is
epoch milliseconds (None on produce = let the client stamp it), and partition/offset are filled by consumers.
"""

from __future__ import annotations

import base64
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

Header = tuple[str, bytes | None]

# A fixed base timestamp (2023-11-14T22:13:20Z) so explicit timestamps are recognisably not "now".
TS_BASE = 1_700_000_000_000
# Topic config for records stamped TS_BASE: they are far past the default retention.ms (7 days), and both brokers
# check retention every 5 minutes (log.retention.check.interval.ms; Kafka also 30 s after each start,
# log.initial.task.delay.ms, so right after a broker restart): in a module running longer than that, the
# check deletes such a topic's records between the produce and the read (seen against Apache Kafka, whose modules
# run slower). Time retention off keeps them for the test.
KEEP_OLD_TIMESTAMPS = {"retention.ms": "-1"}


@dataclass(frozen=True)
class Rec:
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    timestamp: int | None = None
    partition: int | None = None
    offset: int | None = field(default=None, compare=False)

    # JSON form used by the Java and node drivers (bytes as base64, None as null).
    def to_json(self) -> dict[str, Any]:
        return {
            "key": _b64(self.key),
            "value": _b64(self.value),
            "headers": [[k, _b64(v)] for k, v in self.headers],
            "timestamp": self.timestamp,
            "partition": self.partition,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Rec:
        return cls(
            key=_unb64(d.get("key")),
            value=_unb64(d.get("value")),
            headers=tuple((h[0], _unb64(h[1])) for h in d.get("headers") or ()),
            timestamp=d.get("timestamp"),
            partition=d.get("partition"),
            offset=d.get("offset"),
        )


def _b64(b: bytes | None) -> str | None:
    return None if b is None else base64.b64encode(b).decode()


def _unb64(s: str | None) -> bytes | None:
    return None if s is None else base64.b64decode(s)


def make_records(n: int, *, partitions: int = 1, prefix: str = "r", headers: bool = True,
                 timestamps: bool = True, nulls: bool = True, per_record_headers: bool = True,
                 value_size: int = 0, null_headers: bool = True, ts_base: int = TS_BASE) -> list[Rec]:
    """Deterministic printable records spread round-robin over ``partitions``.

    Timestamps are ``ts_base + i * 1000`` (``TS_BASE`` unless given).

    With ``nulls`` every 7th record has a null key and every 11th a null value (a tombstone). With
    ``per_record_headers`` headers vary per record (one of them a null value, one duplicated name);
    otherwise every record carries the same two headers (what kcat can send).
    """
    out = []
    for i in range(n):
        key: bytes | None = f"{prefix}-key-{i % 97}".encode()
        value: bytes | None = f"{prefix}-value-{i}".encode()
        if value_size:
            value = (value + b"." * value_size)[:value_size]
        if nulls and i % 7 == 3:
            key = None
        if nulls and i % 11 == 5 and key is not None:  # aiokafka refuses a record with neither
            value = None
        hdrs: tuple[Header, ...] = ()
        if headers:
            if per_record_headers:
                hdrs = (("h-idx", str(i).encode()), ("h-dup", b"a"), ("h-dup", f"b{i % 3}".encode()))
                if i % 5 == 0:
                    hdrs += (("h-null", None if null_headers else b""),)
            else:
                hdrs = (("h-one", b"1"), ("h-two", b"zwei"))
        ts = ts_base + i * 1000 if timestamps else None
        out.append(Rec(key, value, hdrs, ts, i % partitions))
    return out


def by_partition(recs: Iterable[Rec]) -> dict[int, list[Rec]]:
    parts: dict[int, list[Rec]] = defaultdict(list)
    for r in recs:
        assert r.partition is not None, f"consumer returned a record without partition: {r}"
        parts[r.partition].append(r)
    return dict(parts)


def assert_same_records(sent: Sequence[Rec], got: Sequence[Rec], *, check_ts: bool = True,
                        what: str = "") -> None:
    """Per partition: same records in the same order with consecutive offsets.

    ``sent`` must carry partitions. Timestamps are compared when ``check_ts`` and the sent record had one;
    otherwise the consumed timestamp only has to be a plausible epoch-ms value.
    """
    want = by_partition(sent)
    have = by_partition(got)
    extra = sorted(set(have) - set(want))
    assert not extra, f"{what}: got records from partitions {extra} that nothing was sent to"
    for p, wrecs in want.items():
        hrecs = have.get(p, [])
        assert len(hrecs) == len(wrecs), f"{what}: partition {p}: sent {len(wrecs)}, got {len(hrecs)}"
        offs = [r.offset for r in hrecs]
        if all(o is not None for o in offs) and offs:
            assert offs == list(range(offs[0], offs[0] + len(offs))), (
                f"{what}: partition {p}: offsets not consecutive/ordered: {offs[:20]}...")
        for i, (w, h) in enumerate(zip(wrecs, hrecs, strict=True)):
            ts_ok = (h.timestamp == w.timestamp) if (check_ts and w.timestamp is not None) else (
                h.timestamp is not None and h.timestamp > 1_000_000_000_000)
            if (w.key, w.value, w.headers) != (h.key, h.value, h.headers) or not ts_ok:
                raise AssertionError(
                    f"{what}: partition {p} record #{i} (offset {h.offset}) differs:\n"
                    f"  sent: {replace(w, offset=None)}\n  got:  {h}")


def records_for(features: frozenset[str], n: int, *, partitions: int = 1, prefix: str = "r") -> list[Rec]:
    """The richest record set a producing client with ``features`` can send."""
    return make_records(n, partitions=partitions, prefix=prefix,
                        headers="headers" in features or "fixed_headers" in features,
                        per_record_headers="headers" in features,
                        null_headers="null_header" in features,
                        timestamps="timestamps" in features,
                        nulls="null_key" in features and "null_value" in features)
