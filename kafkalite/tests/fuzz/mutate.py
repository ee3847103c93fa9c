"""Frames for the protocol fuzzer: valid requests of any (api, version), then mutated.

A valid request comes from the spec-driven generator of the wire tests (``random_message``), steered towards
the broker's real state so the handlers get past their first check: topic names become the fuzz topics
(sometimes), partitions small indexes, topic ids the real ids, group ids a few shared groups, and a Produce
sometimes carries a real record batch. Then one mutation (its name is the outcome table's "kind"):

- structure-aware (the frame stays decodable): ``valid``, ``hostile`` (extreme ints, empty or 32 KiB strings,
  an element repeated a thousand times, nested up to a body of ``Target.max_body``), ``tagged`` (random
  unknown tagged fields, huge tags and lengths),
  ``wrong_version`` (the header names another version than the body's), ``wrong_key``, ``header``
  (client id null/long, negative correlation id);
- byte-level on the body: ``bitflip``, ``truncate``, ``overwrite`` (a length/count/varint at a random place
  set to -1, 2^31-1, 2^31, -2, an overlong varint), ``null_string`` (a string's length set to null),
  ``garbage_tail``;
- framing: ``size_prefix`` (the 4-byte size off by one less, negative, or beyond ``socket.request.max.bytes``),
  ``half_sent`` (part of a frame, then the client goes away).

Everything is drawn from one ``random.Random``, so a seed reproduces the same frames.
"""
from __future__ import annotations

import random
import struct
import uuid
from dataclasses import dataclass
from functools import cache
from typing import Any

from kafkalite_storage.testing import encode_batch
from kafkalite_wire import api
from kafkalite_wire.errors import DecodeError
from kafkalite_wire.headers import RequestHeader, request_header_version
from kafkalite_wire.messages import REGISTRY

KINDS = ("valid", "hostile", "tagged", "wrong_version", "wrong_key", "header", "bitflip", "truncate",
         "overwrite", "null_string", "garbage_tail", "size_prefix", "half_sent")
HOSTILE_INTS = (-1, -2, 0, 2**31 - 1, -(2**31), 2**15 - 1, -(2**15), 2**63 - 1, -(2**63), 127, -128, 1 << 20)
HOSTILE_BYTES = (b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\xff\xff\xff\xfe", b"\xff\xff",
                 b"\x7f\xff", b"\x00\x00", b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\xff\xff\x01",
                 b"\x80\x80\x80\x80")
_TOPIC_FIELDS = frozenset({"name", "topic", "topic_name"})
_PARTITION_FIELDS = frozenset({"partition_index", "partition", "index", "partition_id"})
_GROUP_FIELDS = frozenset({"group_id", "key", "transactional_id"})


@dataclass
class Target:
    """The broker state the generator steers towards."""

    topics: dict[str, uuid.UUID]            # fuzz topics (never the canary) -> topic id
    groups: tuple[str, ...] = ("fuzz-group", "fuzz-group-2")
    max_frame: int = 100 * 1024 * 1024
    max_body: int = 16 * 1024 * 1024        # a hostile mutation that grows the body beyond this is undone


@dataclass
class Frame:
    api_key: int            # the API the frame was built for (the table's row)
    version: int
    kind: str
    data: bytes             # the whole frame, size prefix included
    half_sent: bool = False


@cache
def _request_specs() -> dict[int, Any]:
    from kafkalite_wire.tests.strategies import message_specs

    return {m.api_key: m for m in message_specs() if m.type == "request"}


def valid_request(api_key: int, version: int, rng: random.Random, target: Target) -> Any:
    from kafkalite_wire.tests.strategies import random_message

    obj = random_message(_request_specs()[api_key], version, rng)
    _steer(obj, rng, target)
    if api_key == 0 and rng.random() < 0.5:    # Produce: a real batch sometimes
        for td in getattr(obj, "topic_data", None) or []:
            for pd in getattr(td, "partition_data", None) or []:
                pd.records = encode_batch([rng.randbytes(rng.randint(0, 40)) for _ in range(rng.randint(1, 4))])
    return obj


def _is_struct(v: Any) -> bool:
    return "unknown_tagged_fields" in getattr(type(v), "__slots__", ())


def _children(obj: Any) -> list[tuple[str, Any]]:
    return [(n, getattr(obj, n)) for n in getattr(type(obj), "__slots__", ()) if n != "unknown_tagged_fields"]


def _steer(obj: Any, rng: random.Random, target: Target) -> None:
    names = list(target.topics)
    for name, value in _children(obj):
        if isinstance(value, list):
            for x in value:
                if _is_struct(x):
                    _steer(x, rng, target)
            if name == "partitions" and value and isinstance(value[0], int) and rng.random() < 0.7:
                setattr(obj, name, [rng.randint(0, 1) for _ in value])
        elif _is_struct(value):
            _steer(value, rng, target)
        elif name in _TOPIC_FIELDS and isinstance(value, str) and names and rng.random() < 0.7:
            setattr(obj, name, rng.choice(names))
        elif name in _PARTITION_FIELDS and isinstance(value, int) and rng.random() < 0.7:
            setattr(obj, name, rng.randint(0, 1))
        elif name in _GROUP_FIELDS and isinstance(value, str) and rng.random() < 0.7:
            setattr(obj, name, rng.choice(target.groups))
        elif name == "topic_id" and isinstance(value, uuid.UUID) and target.topics and rng.random() < 0.6:
            setattr(obj, name, rng.choice(list(target.topics.values())))
        elif name.endswith(("timeout_ms", "max_wait_ms")) and isinstance(value, int) and rng.random() < 0.7:
            setattr(obj, name, rng.choice((0, 1, 100)))   # keep most long polls short (hostile ones remain)


def _scalars(obj: Any, out: list[tuple[Any, str, Any]]) -> list[tuple[Any, str, Any]]:
    for name, value in _children(obj):
        if isinstance(value, list):
            if value and _is_struct(value[0]):
                for x in value:
                    _scalars(x, out)
            out.append((obj, name, value))
        elif _is_struct(value):
            _scalars(value, out)
        else:
            out.append((obj, name, value))
    return out


def _hostile(obj: Any, version: int, rng: random.Random, max_body: int) -> None:
    """Set one to three fields to hostile values that still encode (the encoder refuses what the field
    cannot carry; then the old value is kept)."""
    fields = _scalars(obj, [])
    for _ in range(rng.randint(1, 3)):
        if not fields:
            return
        owner, name, old = rng.choice(fields)
        if isinstance(old, bool) or old is None:
            continue
        if isinstance(old, int):
            new: Any = rng.choice(HOSTILE_INTS)
        elif isinstance(old, str):
            new = rng.choice(("", "x" * 32768, "é" * 3000, "..", "a/b", "__consumer_offsets"))
        elif isinstance(old, list):
            new = (old[:1] * rng.choice((2, 1000))) if old else old
        elif isinstance(old, uuid.UUID):
            new = uuid.UUID(bytes=rng.randbytes(16))
        else:
            continue
        setattr(owner, name, new)
        try:
            fits = len(obj.encode(version)) <= max_body
        except Exception:
            fits = False
        if not fits:
            setattr(owner, name, old)


def _tagged(obj: Any, rng: random.Random) -> None:
    targets = [obj] + [o for o, _, v in _scalars(obj, []) if hasattr(o, "unknown_tagged_fields")]
    t = rng.choice(targets)
    t.unknown_tagged_fields = {rng.choice((1000, 2**31 - 1, 2**20, rng.randint(0, 50))):
                               rng.randbytes(rng.choice((0, 1, 200, 5000))) for _ in range(rng.randint(1, 3))}


def _string_offsets(body: bytes, obj: Any, flexible: bool) -> list[tuple[int, int]]:
    """(position, width) of length prefixes of the message's strings found in ``body``."""
    out = []
    for _, _, v in _scalars(obj, []):
        if not isinstance(v, str) or not v:
            continue
        raw = v.encode()
        prefix = bytes([len(raw) + 1]) if flexible and len(raw) < 127 else struct.pack(">h", len(raw))
        i = body.find(prefix + raw)
        if i >= 0:
            out.append((i, len(prefix)))
    return out


def build(api_key: int, version: int, advertised: dict[int, tuple[int, int]], rng: random.Random,
          target: Target, kind: str | None = None) -> Frame | None:
    """One (mutated) frame for ``api_key`` at ``version``; None when the generator cannot encode the draw."""
    kind = kind or rng.choice(KINDS)
    obj = valid_request(api_key, version, rng, target)
    hdr_version = version
    key = api_key
    client_id: str | None = "fuzz"
    if kind == "hostile":
        _hostile(obj, version, rng, target.max_body)
    elif kind == "tagged" and REGISTRY[api_key].flexible_min is not None and version >= REGISTRY[api_key].flexible_min:
        _tagged(obj, rng)
    elif kind == "wrong_version":
        lo, hi = advertised[api_key]
        hdr_version = rng.choice([v for v in (lo - 1, hi + 1, lo, hi, -1, 32767, version + 1, version - 1)
                                  if v != version])
    elif kind == "wrong_key":
        key = rng.choice([k for k in (*advertised, -1, 1000, 32767, 67, 70) if k != api_key])
    elif kind == "header":
        client_id = rng.choice((None, "", "c" * 40000))
    try:
        body = obj.encode(version)
    except Exception:
        return None
    cid = rng.choice((rng.randint(0, 2**31 - 1), -1, -(2**31))) if kind == "header" else rng.randint(0, 2**31 - 1)
    try:
        hv = request_header_version(key, hdr_version) if key in REGISTRY else 1
        header = RequestHeader(key, hdr_version, cid, client_id).encode(hv)
    except Exception:
        return None
    flexible = REGISTRY[api_key].flexible_min is not None and version >= REGISTRY[api_key].flexible_min
    body = _mutate_body(kind, body, obj, flexible, rng)
    payload = header + body
    size = len(payload)
    half = False
    if kind == "size_prefix":
        # one byte short (the last byte starts a next frame that never completes), negative, zero, too large
        size = rng.choice((size - 1, -1, -(2**31), target.max_frame + 1, 2**31 - 1, 0))
    elif kind == "half_sent":
        half = True
        payload = payload[: rng.randint(0, max(len(payload) - 1, 0))]
    return Frame(api_key, version, kind, struct.pack(">i", size) + payload, half)


def _mutate_body(kind: str, body: bytes, obj: Any, flexible: bool, rng: random.Random) -> bytes:
    b = bytearray(body)
    if kind == "bitflip" and b:
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    elif kind == "truncate" and b:
        del b[rng.randrange(len(b)):]
    elif kind == "overwrite":
        i = rng.randint(0, len(b))
        h = rng.choice(HOSTILE_BYTES)
        b[i:i + len(h)] = h
    elif kind == "null_string":
        spots = _string_offsets(body, obj, flexible)
        if spots:
            i, width = rng.choice(spots)
            b[i:i + width] = b"\x00" if flexible and width == 1 else b"\xff\xff"
        else:
            i = rng.randint(0, len(b))
            b[i:i + 2] = b"\xff\xff"
    elif kind == "garbage_tail":
        b += rng.randbytes(rng.randint(1, 64))
    return bytes(b)


def parse(frame: Frame) -> tuple[Any, Any] | None:
    """What a correct broker decodes from the frame: (header, body), or None if it must close the
    connection (undecodable, unknown key, version the codec lacks); ``(header, None)`` for an ApiVersions
    request at a version the codec lacks, which must be answered. Any other exception from the codec is
    a decoder bug and propagates."""
    if frame.half_sent or len(frame.data) < 4:
        return None
    (size,) = struct.unpack(">i", frame.data[:4])
    if size < 0 or size > len(frame.data) - 4:
        return None
    try:
        return api.parse_request(memoryview(frame.data)[4:4 + size])
    except api.UnsupportedVersion as exc:
        # KIP-511: ApiVersions at a version we lack is answered (v0 body, UNSUPPORTED_VERSION); body unknown
        return (exc.header, None) if exc.header.api_key == 18 else None
    except (DecodeError, api.RequestError):
        return None
