"""One message spec per API covering the versions of two Kafka releases: 3.9.0 (every old version, KIP-896 had
not yet removed any) and 4.x (new versions and APIs: ConsumerGroupHeartbeat v1, OffsetCommit v10, ShareFetch v1-2,
StreamsGroup*, ListConfigResources, ...). 4.x is the trunk snapshot (4.5.0-SNAPSHOT of 2026-08-22, the newest
spec set in the shared reference data): its stable versions are exactly those Apache Kafka 4.4.0 advertises
(ApiVersions 5, TxnOffsetCommit 6, DeleteGroups 3, StreamsGroup*, ...; ``kafkalite/tests/unit/test_releases.py``
compares them with the captured 4.4 table) and every version 4.3 defines is the same bytes there
(``test_specmerge``). Below, "4.3" names that newer side.

Kafka 4.0 removed old versions (KIP-896: Produce v0-2, Fetch v0-3, OffsetCommit v0-1, ...) and with them the
fields only those versions carried, and later releases added versions and fields. A broker that serves clients
of both eras needs, per API, the union of the two version ranges with each version's wire layout exactly as the
release that defines it says. This module builds that union as an ordinary `MessageSpec`, so the generator and
the oracle need not know two releases exist:

* each version `v` is *sourced* from one release: 3.9.0 if only 3.9.0 defines it, 4.3 if only 4.3 does; where
  both do, their layouts at `v` (`layout()`: field names, types, nullability, tags, defaults, nested structs) must
  agree -- or 3.9.0 marked `v` unstable (`latestVersionUnstable`: the share-group APIs' v0, which Kafka 4.x
  redefined and then removed), in which case 4.3 wins. Any other disagreement is an error: a human decides.
* fields are matched by name (and nested structs by field name), each merged field carries the versions it has
  in the release sourcing each version; fields only 3.9.0 has (e.g. OffsetCommit v1's CommitTimestamp) keep
  their position relative to their 3.9.0 neighbours.
* `merged()` checks its result: `layout(merged, v) == layout(source(v), v)` for every version.

Class and field names are 4.3's where both define an API (the same as 3.9.0's for every API both releases serve,
checked by the layout comparison, which includes names); key 74 is ListClientMetricsResources in 3.9.0 and
ListConfigResources (a superset, v0 identical on the wire) in 4.3 -- 4.3's name wins (`RENAMED`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import cast

from kafkalite_wire.spec import NONE, FieldSpec, MessageSpec, StructSpec, Versions, load_dir, reference_dir

OLD = "3.9.0"
NEW = "trunk-4.5.0-SNAPSHOT"   # 4.3 + 4.4 (see above)
#: Kafka renamed these APIs between the releases; the generated class is the newer name.
RENAMED = {"ListClientMetricsResources": "ListConfigResources"}


def spec_dir(release: str) -> str:
    return str(reference_dir() / "kafka-message-specs" / release)


Layout = tuple[object, ...]


def _struct_layout(fields: list[FieldSpec], structs: dict[str, StructSpec], v: int, flex: bool) -> Layout:
    out: list[object] = []
    for f in fields:
        if v not in f.versions:
            continue
        tagged = flex and v in f.tagged
        nested: Layout | None = None
        if f.struct is not None:
            nested = _struct_layout(structs[f.struct].fields, structs, v, flex)
        out.append((f.snake, f.type, v in f.nullable, tagged, f.tag if tagged else None, f.default, nested))
    return tuple(out)


def layout(msg: MessageSpec, v: int) -> Layout:
    """What version `v` of `msg` is on the wire and in Python: flexible or not, then every present field's
    name, type, nullability, tag and default, nested structs inline. Two specs with equal layouts at `v` encode
    and decode `v` identically into identical classes."""
    flex = v in msg.flexible
    return (flex, _struct_layout(msg.fields, msg.structs, v, flex))


def wire_layout(msg: MessageSpec, v: int) -> Layout:
    """`layout()` without the names: what is on the wire only."""

    def strip(fields: Layout) -> Layout:
        out: list[object] = []
        for entry in fields:
            e = cast(Layout, entry)  # (name, type, nullable, tagged, tag, default, nested)
            t, s = e[1], e[6]
            if s is not None:  # a struct's name is not on the wire
                t = "[]struct" if str(t).startswith("[]") else "struct"
            out.append((t, *e[2:6], None if s is None else strip(cast(Layout, s))))
        return tuple(out)

    flex, fields = layout(msg, v)
    assert isinstance(fields, tuple)
    return (flex, strip(fields))


@dataclass
class Difference:
    """A version both releases define differently, resolved in favour of 4.3: `kind` "names" (same bytes, Kafka
    renamed fields or structs) or "wire" (different bytes; only where 3.9.0 marked the version unstable)."""

    name: str
    version: int
    kind: str
    old: Layout
    new: Layout


class MergeError(ValueError):
    pass


def _as_range(vs: set[int], within: set[int], top: int) -> Versions:
    """A `Versions` holding `vs` and nothing else of `within` (versions outside `within` do not matter)."""
    vs = vs & within
    if not vs:
        return NONE
    lo, hi = min(vs), max(vs)
    for v in within:
        if lo <= v <= hi and v not in vs:
            raise MergeError(f"versions {sorted(vs)} are not a range within {sorted(within)}")
    return Versions(lo, None if hi == top else hi)


def _members(r: Versions, universe: set[int]) -> set[int]:
    return {v for v in universe if v in r}


class _Merger:
    def __init__(self, old: MessageSpec, new: MessageSpec, from_old: set[int], from_new: set[int]) -> None:
        self.old, self.new = old, new
        self.va, self.vb = from_old, from_new
        self.all = from_old | from_new
        self.top = max(self.all)
        self.structs: dict[str, StructSpec] = {}

    def field_versions(self, fa: FieldSpec | None, fb: FieldSpec | None) -> set[int]:
        s: set[int] = set()
        if fa is not None:
            s |= _members(fa.versions, self.va)
        if fb is not None:
            s |= _members(fb.versions, self.vb)
        return s

    def merge_fields(self, a: list[FieldSpec], b: list[FieldSpec], owner: str) -> list[FieldSpec]:
        by_a = {f.name: f for f in a}
        by_b = {f.name: f for f in b}
        order: list[str] = [f.name for f in b]
        for i, f in enumerate(a):  # 3.9-only fields after their nearest preceding neighbour
            if f.name in by_b:
                continue
            prev = next((p.name for p in reversed(a[:i]) if p.name in order), None)
            order.insert(order.index(prev) + 1 if prev else 0, f.name)
        out: list[FieldSpec] = []
        for name in order:
            merged = self.merge_field(by_a.get(name), by_b.get(name), owner)
            if merged is not None:
                out.append(merged)
        return out

    def merge_field(self, fa: FieldSpec | None, fb: FieldSpec | None, owner: str) -> FieldSpec | None:
        present = self.field_versions(fa, fb)
        if not present:
            return None
        in_a = fa is not None and bool(_members(fa.versions, self.va))
        in_b = fb is not None and bool(_members(fb.versions, self.vb))
        base = fb if in_b else fa
        assert base is not None
        where = f"{self.new.name}.{owner}.{base.name}"
        if in_a and in_b:
            assert fa is not None and fb is not None
            if (fa.type, fa.snake) != (fb.type, fb.snake):
                raise MergeError(f"{where}: type {fa.type} vs {fb.type}")
        nullable: set[int] = set()
        tagged: set[int] = set()
        tags: set[int] = set()
        for f, own in ((fa, self.va), (fb, self.vb)):
            if f is None:
                continue
            mine = _members(f.versions, own)
            nullable |= _members(f.nullable, mine)
            tv = _members(f.tagged, mine)
            tagged |= tv
            if tv and f.tag is not None:
                tags.add(f.tag)
        if len(tags) > 1:
            raise MergeError(f"{where}: tags {sorted(tags)}")
        try:
            versions = _as_range(present, self.all, self.top)
            merged = replace(
                base,
                versions=versions,
                nullable=_as_range(nullable, present, self.top),
                tagged=_as_range(tagged, present, self.top),
                tag=next(iter(tags)) if tags else base.tag,
                ignorable=(fa.ignorable if fa else False) or (fb.ignorable if fb else False),
            )
        except MergeError as e:
            raise MergeError(f"{where}: {e}") from None
        if base.struct is not None:
            sa = self.old.structs.get(fa.struct) if fa is not None and fa.struct and in_a else None
            sb = self.new.structs.get(fb.struct) if fb is not None and fb.struct and in_b else None
            name = base.struct
            if name not in self.structs:
                self.structs[name] = StructSpec(name, versions, [])
                self.structs[name].fields = self.merge_fields(
                    sa.fields if sa else [], sb.fields if sb else [], name
                )
            else:  # a common struct used by several fields: versions are the union of its uses
                s = self.structs[name]
                s.versions = _as_range(_members(s.versions, self.all) | present, self.all, self.top)
        return merged


def _source_versions(
    old: MessageSpec, new: MessageSpec, old_unstable: int | None
) -> tuple[set[int], set[int], list[Difference]]:
    va, vb = set(old.versions), set(new.versions)
    diffs: list[Difference] = []
    for v in sorted(va & vb):
        lo, ln = layout(old, v), layout(new, v)
        if lo == ln:
            continue
        if wire_layout(old, v) == wire_layout(new, v):
            diffs.append(Difference(new.name, v, "names", lo, ln))
        elif v == old_unstable:
            diffs.append(Difference(new.name, v, "wire", lo, ln))
        else:
            raise MergeError(f"{new.name} v{v}: 3.9.0 and 4.3 disagree on a version 3.9.0 calls stable")
    return va - vb, vb, diffs


def merge(
    old: MessageSpec | None, new: MessageSpec | None, old_unstable: int | None = None
) -> tuple[MessageSpec, list[Difference]]:
    """The union of two releases' specs of one message (either may be None: an API one release lacks).
    `old_unstable`: the version 3.9.0 marks unstable (its request's `latestVersionUnstable`), if any."""
    if old is None or new is None:
        only = old or new
        assert only is not None
        return only, []
    va, vb, diffs = _source_versions(old, new, old_unstable)
    m = _Merger(old, new, va, vb)
    every = va | vb
    fields = m.merge_fields(old.fields, new.fields, new.name)
    flex = _members(old.flexible, va) | _members(new.flexible, vb)
    out = MessageSpec(
        name=new.name,
        api_key=new.api_key,
        type=new.type,
        valid=Versions(min(every), max(every)),
        flexible=_as_range(flex, every, max(every)),
        latest_unstable=new.latest_unstable,
        fields=fields,
        structs={n: m.structs[n] for n in _struct_order(fields, m.structs)},
    )
    for v in every:
        want = layout(old if v in va else new, v)
        if layout(out, v) != want:
            raise MergeError(f"{out.name} v{v}: merged layout differs from its source's")
    return out, diffs


def _struct_order(fields: list[FieldSpec], structs: dict[str, StructSpec]) -> list[str]:
    """Struct names in definition order (depth first, as `kafkalite_wire.spec` lists them)."""
    out: list[str] = []

    def walk(fs: list[FieldSpec]) -> None:
        for f in fs:
            if f.struct is not None and f.struct not in out:
                out.append(f.struct)
                walk(structs[f.struct].fields)

    walk(fields)
    return out


def source_of(name: str, v: int) -> str:
    """The release whose spec defines version `v` of message `name` in the merged codec."""
    old, new = _by_name(OLD), _by_name(NEW)
    o = old.get(_old_name(name))
    n = new.get(name)
    if n is not None and v in n.versions:
        return NEW
    if o is not None and v in o.versions:
        return OLD
    raise KeyError(f"{name} v{v}")


def _old_name(name: str) -> str:
    for a, b in RENAMED.items():
        if name.startswith(b):
            return a + name[len(b) :]
    return name


@cache
def _by_name(release: str) -> dict[str, MessageSpec]:
    return {m.name: m for m in load_dir(spec_dir(release))}


def raw_spec(release: str, name: str) -> MessageSpec | None:
    """`name` (a merged-codec name) as `release` defines it, or None."""
    return _by_name(release).get(_old_name(name) if release == OLD else name)


@cache
def merged() -> tuple[tuple[MessageSpec, ...], tuple[Difference, ...]]:
    """Every request/response spec of 3.9.0 and 4.3, merged; sorted by (api_key, type). Also the versions
    resolved in favour of 4.3."""
    # a release that defines an API with "validVersions": "none" (4.3's LeaderAndIsr, ...) does not serve it
    old = {(m.api_key, m.type): m for m in load_dir(spec_dir(OLD)) if m.valid.lo >= 0}
    new = {(m.api_key, m.type): m for m in load_dir(spec_dir(NEW)) if m.valid.lo >= 0}
    out: list[MessageSpec] = []
    diffs: list[Difference] = []
    for key in sorted(set(old) | set(new)):
        o, n = old.get(key), new.get(key)
        renamed = o is not None and o.name[: -len(o.type)] in RENAMED
        if o is not None and n is not None and not renamed and o.name != n.name:
            raise MergeError(f"api key {key}: {o.name} vs {n.name}")
        rq = old.get((key[0], "request"))
        unstable = rq.max_version if rq is not None and rq.latest_unstable else None
        m, d = merge(o, n, unstable)
        out.append(m)
        diffs += d
    return tuple(out), tuple(diffs)


def load_all(directory: str | None = None) -> tuple[MessageSpec, ...]:
    """Every request and response spec, sorted by (api_key, type): those of one directory as Kafka wrote them,
    or without `directory` the codec's -- 3.9.0's and 4.3's merged per API."""
    return merged()[0] if directory is None else load_dir(directory)
