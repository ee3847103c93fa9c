"""Hypothesis strategies derived from the JSON specs: valid message objects for a given (message, version).

Only the fields present at that version get random values; the others keep their defaults (a field a version
does not carry cannot survive a round trip). Nullable fields/arrays draw None sometimes; flexible structs get
random unknown tagged fields with tags no known field uses.
"""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import strategies as st

from kafkalite_wire.messages import REGISTRY, FetchResponse, MetadataResponse, ProduceRequest
from kafkalite_wire.spec import FieldSpec, MessageSpec, StructSpec, specs_dir
from kafkalite_wire.specmerge import load_all

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)
_BYTES = st.binary(max_size=12)
_UUIDS = st.builds(lambda b: uuid.UUID(bytes=b), st.binary(min_size=16, max_size=16))


def message_specs() -> list[MessageSpec]:
    """All request/response specs; [] when the reference material is missing (the tests using the `specs`
    fixture then skip -- or fail under CI -- so an empty parametrisation is never silent there)."""
    if not specs_dir().is_dir():
        return []
    return list(load_all())


def class_for(msg: MessageSpec) -> type:
    info = REGISTRY[msg.api_key]
    cls: type = info.request_class if msg.type == "request" else info.response_class
    return cls


def _scalar(t: str) -> st.SearchStrategy[Any]:
    if t in _INT_RANGES:
        lo, hi = _INT_RANGES[t]
        return st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi, 0, -1 if lo < 0 else 1]))
    if t == "bool":
        return st.booleans()
    if t == "float64":
        return st.floats(allow_nan=False)
    if t == "string":
        return _TEXT
    if t == "uuid":
        return _UUIDS
    if t in ("bytes", "records"):
        return _BYTES
    raise KeyError(t)


class SpecStrategies:
    def __init__(self, msg: MessageSpec) -> None:
        self.msg = msg
        self.cls = class_for(msg)
        self.structs = {s.name: s for s in msg.all_structs()}

    def message(self, version: int, depth_limit: int = 3) -> st.SearchStrategy[Any]:
        return self._struct(self.structs[self.msg.name], version, depth_limit)

    def _class(self, name: str) -> Any:
        return self.cls if name == self.msg.name else getattr(self.cls, name)

    def _struct(self, s: StructSpec, v: int, depth: int) -> st.SearchStrategy[Any]:
        flex = v in self.msg.flexible
        kw: dict[str, st.SearchStrategy[Any]] = {}
        tags = {f.tag for f in s.fields if f.tag is not None}  # Kafka reserves a field's tag in every version
        for f in s.fields:
            if v not in f.versions:
                continue
            kw[f.snake] = self._field(f, v, depth)
        cls = self._class(s.name)
        if flex:
            unknown = st.dictionaries(
                st.integers(0, 300).filter(lambda t: t not in tags), st.binary(max_size=6), max_size=2
            )
            return st.builds(_with_unknown, st.builds(cls, **kw), unknown)
        return st.builds(cls, **kw)

    def _field(self, f: FieldSpec, v: int, depth: int) -> st.SearchStrategy[Any]:
        nullable = v in f.nullable
        if f.is_array:
            if f.struct:
                elem = self._struct(self.structs[f.struct], v, depth - 1) if depth > 0 else st.nothing()
            else:
                elem = _scalar(f.elem)
            base: st.SearchStrategy[Any] = st.lists(elem, max_size=3 if depth > 0 else 0)
        elif f.struct:
            base = self._struct(self.structs[f.struct], v, depth - 1)
        else:
            base = _scalar(f.type)
        return st.one_of(st.none(), base) if nullable else base


def _with_unknown(obj: Any, unknown: dict[int, bytes]) -> Any:
    obj.unknown_tagged_fields = unknown
    return obj


# ---------------------------------------------------------------------------------------------------------
# A plain seeded generator (no hypothesis) for bulk differential tests against another implementation.
_EDGE = {
    "int8": [0, -1, 1, 127, -128],
    "int16": [0, -1, 1, 32767, -32768],
    "uint16": [0, 1, 65535],
    "int32": [0, -1, 1, 2**31 - 1, -(2**31)],
    "uint32": [0, 1, 2**32 - 1],
    "int64": [0, -1, 1, 2**63 - 1, -(2**63)],
}


def random_message(msg: MessageSpec, version: int, rng: Any, depth: int = 3) -> Any:
    """A valid random message of `msg` at `version` (fields absent at that version keep their defaults)."""
    gen = SpecStrategies(msg)
    return _rand_struct(gen, gen.structs[msg.name], version, rng, depth)


def _rand_struct(gen: SpecStrategies, s: StructSpec, v: int, rng: Any, depth: int) -> Any:
    flex = v in gen.msg.flexible
    kw: dict[str, Any] = {}
    tags = {f.tag for f in s.fields if f.tag is not None}  # Kafka rejects a known tag even where it is unused
    for f in s.fields:
        if v not in f.versions:
            continue
        if flex and v in f.tagged and f.tag is not None and rng.random() < 0.4:
            continue  # leave the tagged field at its default: it must be omitted
        kw[f.snake] = _rand_field(gen, f, v, rng, depth)
    obj = gen._class(s.name)(**kw)
    if flex and rng.random() < 0.3:
        free = [t for t in range(40) if t not in tags]
        obj.unknown_tagged_fields = {t: rng.randbytes(rng.randint(0, 5)) for t in rng.sample(free, 2)}
    return obj


def _rand_field(gen: SpecStrategies, f: FieldSpec, v: int, rng: Any, depth: int) -> Any:
    if v in f.nullable and rng.random() < 0.2:
        return None
    if f.is_array:
        n = rng.randint(0, 3) if depth > 0 else 0
        if f.struct:
            return [_rand_struct(gen, gen.structs[f.struct], v, rng, depth - 1) for _ in range(n)]
        return [_rand_scalar(f.elem, rng) for _ in range(n)]
    if f.struct:
        return _rand_struct(gen, gen.structs[f.struct], v, rng, depth - 1)
    return _rand_scalar(f.type, rng)


def _rand_scalar(t: str, rng: Any) -> Any:
    if t in _EDGE:
        if rng.random() < 0.5:
            return rng.choice(_EDGE[t])
        lo, hi = _INT_RANGES[t]
        return rng.randint(lo, hi)
    if t == "bool":
        return rng.random() < 0.5
    if t == "float64":
        return rng.choice([0.0, -1.5, 1e300, rng.uniform(-1e9, 1e9)])
    if t == "string":
        return "".join(rng.choice("abcXYZ-_.é€😀") for _ in range(rng.randint(0, 8)))
    if t == "uuid":
        return uuid.UUID(bytes=rng.randbytes(16))
    if t in ("bytes", "records"):
        return rng.randbytes(rng.randint(0, 12))
    raise KeyError(t)


def large_messages() -> list[tuple[str, int, Any]]:
    """Sizes the random generator never reaches: multi-byte uvarint counts/lengths/tags, big records."""
    long_name = "t" * 200 + "é" * 30
    unknown = {200: b"x" * 300, 70000: b"", 5: b"y"}
    md = MetadataResponse(
        cluster_id="c" * 130,
        topics=[
            MetadataResponse.MetadataResponseTopic(
                name=f"{long_name}-{i}",
                partitions=[
                    MetadataResponse.MetadataResponsePartition(
                        partition_index=p, replica_nodes=list(range(140))
                    )
                    for p in range(3)
                ],
                unknown_tagged_fields=unknown if i == 0 else {},
            )
            for i in range(150)
        ],
        unknown_tagged_fields=unknown,
    )
    fetch = FetchResponse(
        responses=[
            FetchResponse.FetchableTopicResponse(
                topic=long_name,
                partitions=[
                    FetchResponse.PartitionData(
                        partition_index=0,
                        records=b"r" * 70000,
                        current_leader=FetchResponse.LeaderIdAndEpoch(leader_id=1, leader_epoch=2),
                    )
                ],
            )
        ]
    )
    produce = ProduceRequest(
        transactional_id=long_name,
        acks=-1,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=long_name,
                partition_data=[ProduceRequest.PartitionProduceData(index=1, records=b"b" * 20000)],
            )
        ],
    )
    out: list[tuple[str, int, Any]] = [("MetadataResponse", v, md) for v in (1, 9, 12)]
    out += [("FetchResponse", v, fetch) for v in (11, 12, 16)]
    out += [("ProduceRequest", v, produce) for v in (3, 9, 11)]
    return [(n, v, _strip_unknown(o, v)) for n, v, o in out]


def _strip_unknown(obj: Any, v: int) -> Any:
    """Unknown tagged fields only exist in flexible versions; drop them for the older ones."""
    if obj.FLEXIBLE_MIN is not None and v >= obj.FLEXIBLE_MIN:
        return obj
    return type(obj).decode(obj.encode(v), v)
