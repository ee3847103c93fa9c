"""Loader for Apache Kafka's JSON message definitions (`clients/src/main/resources/common/message/*.json`).

Used by the code generator (`kafkalite_wire.codegen`) and the interpretive test oracle (`kafkalite_wire.reference`); the broker never
reads the JSON at run time. The files carry `//` comment lines, stripped before parsing.

Spec facts encoded here:

* `validVersions` / `versions` / `nullableVersions` / `taggedVersions` / `flexibleVersions` are ranges: "0+",
  "3-5", "7", or "none".
* A field whose type is neither primitive nor `[]primitive` is a struct (`"Foo"`) or an array of structs
  (`"[]Foo"`); the struct is declared inline (`"fields"`) or in the message's `commonStructs`.
* Defaults: ints 0 (custom defaults may be hex), bool false, float 0.0, string "" ("null" allowed when nullable),
  bytes empty, uuid zero, records null, arrays empty ("null" allowed), structs a default instance ("null" allowed
  for nullable struct fields).
* Field names become snake_case in Python (`TimeoutMs` -> `timeout_ms`, `ISRReplicas` -> `isr_replicas`,
  `isKRaftController` -> `is_kraft_controller`, `V3AndBelowTopics` -> `v3_and_below_topics`).
"""

from __future__ import annotations

import json
import keyword
import os
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

KAFKA_VERSION = "3.9.0"  # the release whose old versions the codec keeps (KIP-896 removed them in 4.0)
#: the releases whose specs the codec is generated from (`kafkalite_wire.specmerge` merges them per API)
RELEASES = ("3.9.0", "trunk-4.5.0-SNAPSHOT")

PRIMITIVES = frozenset(
    {
        "bool",
        "int8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "float64",
        "string",
        "uuid",
        "bytes",
        "records",
    }
)
#: struct format code and width of the fixed-width primitives.
FIXED = {
    "bool": ("?", 1),
    "int8": ("b", 1),
    "int16": ("h", 2),
    "uint16": ("H", 2),
    "int32": ("i", 4),
    "uint32": ("I", 4),
    "int64": ("q", 8),
    "float64": ("d", 8),
    "uuid": ("16s", 16),
}


def reference_dir() -> Path:
    """`$KAFKALITE_REFERENCE` or `<repo>/../shared/reference`."""
    env = os.environ.get("KAFKALITE_REFERENCE")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent.parent / "shared" / "reference"


def specs_dir() -> Path:
    """3.9.0's spec directory (the codec also needs `RELEASES`' others beside it)."""
    return reference_dir() / "kafka-message-specs" / KAFKA_VERSION


@dataclass(frozen=True)
class Versions:
    """An inclusive version range; `hi is None` means open-ended. `lo > hi` (or lo=-1) means none."""

    lo: int
    hi: int | None

    @classmethod
    def parse(cls, text: str | None) -> Versions:
        if text is None or text == "none":
            return NONE
        text = text.strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        if "-" in text:
            a, b = text.split("-")
            return cls(int(a), int(b))
        return cls(int(text), int(text))

    def __contains__(self, v: int) -> bool:
        return self.lo >= 0 and v >= self.lo and (self.hi is None or v <= self.hi)


NONE = Versions(-1, -1)


def snake(name: str) -> str:
    name = name.replace("KRaft", "Kraft")  # isKRaftController -> is_kraft_controller
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()
    return s + "_" if keyword.iskeyword(s) or s in ("encode", "decode") else s


@dataclass
class FieldSpec:
    name: str
    snake: str
    type: str  # raw JSON type
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    default: str | None  # raw JSON default
    ignorable: bool
    is_array: bool
    elem: str  # element type for arrays, else == type
    struct: str | None  # struct name for struct / array-of-struct fields

    @property
    def kind(self) -> str:
        """'struct', 'array', or the primitive type name."""
        if self.is_array:
            return "array"
        return "struct" if self.struct is not None else self.type


@dataclass
class StructSpec:
    name: str
    versions: Versions
    fields: list[FieldSpec]


@dataclass
class MessageSpec:
    name: str
    api_key: int
    type: str  # "request" | "response"
    valid: Versions
    flexible: Versions
    latest_unstable: bool
    fields: list[FieldSpec]
    structs: dict[str, StructSpec] = field(default_factory=dict)  # every nested struct, definition order

    @property
    def min_version(self) -> int:
        return self.valid.lo

    @property
    def max_version(self) -> int:
        assert self.valid.hi is not None
        return self.valid.hi

    @property
    def versions(self) -> range:
        return range(self.min_version, self.max_version + 1)

    @property
    def top(self) -> StructSpec:
        return StructSpec(self.name, self.valid, self.fields)

    def all_structs(self) -> list[StructSpec]:
        return [*self.structs.values(), self.top]


def load_json(path: Path) -> dict[str, object]:
    text = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("//"))
    data = json.loads(text)
    assert isinstance(data, dict)
    return data


def _parse_fields(
    raw: list[dict[str, object]],
    owner_versions: Versions,
    structs: dict[str, StructSpec],
    common: dict[str, dict[str, object]],
) -> list[FieldSpec]:
    out: list[FieldSpec] = []
    for f in raw:
        ftype = str(f["type"])
        is_array = ftype.startswith("[]")
        elem = ftype[2:] if is_array else ftype
        struct_name: str | None = None
        versions = Versions.parse(str(f.get("versions", "none")))
        if elem not in PRIMITIVES:
            struct_name = elem
            if "fields" in f:
                sub = f["fields"]
                assert isinstance(sub, list)
                if elem not in structs:
                    structs[elem] = StructSpec(elem, versions, [])
                    structs[elem].fields = _parse_fields(sub, versions, structs, common)
            elif elem in common and elem not in structs:
                c = common[elem]
                structs[elem] = StructSpec(elem, Versions.parse(str(c.get("versions", "0+"))), [])
                cf = c["fields"]
                assert isinstance(cf, list)
                structs[elem].fields = _parse_fields(cf, structs[elem].versions, structs, common)
        tag = f.get("tag")
        default = f.get("default")
        name = str(f["name"])
        out.append(
            FieldSpec(
                name=name,
                snake=snake(name),
                type=ftype,
                versions=versions,
                nullable=Versions.parse(f.get("nullableVersions")),  # type: ignore[arg-type]
                tagged=Versions.parse(f.get("taggedVersions")),  # type: ignore[arg-type]
                tag=int(tag) if tag is not None else None,  # type: ignore[call-overload]
                default=None if default is None else str(default),
                ignorable=bool(f.get("ignorable", False)),
                is_array=is_array,
                elem=elem,
                struct=struct_name,
            )
        )
    return out


def parse_message(data: dict[str, object]) -> MessageSpec:
    common: dict[str, dict[str, object]] = {}
    for c in data.get("commonStructs", []):  # type: ignore[attr-defined]
        common[str(c["name"])] = c
    structs: dict[str, StructSpec] = {}
    raw = data.get("fields", [])
    assert isinstance(raw, list)
    valid = Versions.parse(str(data["validVersions"]))
    fields = _parse_fields(raw, valid, structs, common)
    return MessageSpec(
        name=str(data["name"]),
        api_key=int(data["apiKey"]),  # type: ignore[call-overload]
        type=str(data["type"]),
        valid=valid,
        flexible=Versions.parse(str(data.get("flexibleVersions", "none"))),
        latest_unstable=bool(data.get("latestVersionUnstable", False)),
        fields=fields,
        structs=structs,
    )


@cache
def load_dir(directory: str) -> tuple[MessageSpec, ...]:
    """Every request and response spec of one directory as Kafka wrote them, sorted by (api_key, type). The
    codec's own set (3.9.0's and 4.3's merged per API) is `kafkalite_wire.specmerge.load_all()`."""
    d = Path(directory)
    out = []
    for p in sorted(d.glob("*.json")):
        data = load_json(p)
        if data.get("type") in ("request", "response"):
            out.append(parse_message(data))
    out.sort(key=lambda m: (m.api_key, m.type))
    return tuple(out)


def default_value(f: FieldSpec) -> object:
    """The Python default of a field (fresh object for mutable defaults). Structs are returned as the string
    "struct" marker; callers build them."""
    import uuid

    d = f.default
    if f.is_array:
        return None if d == "null" else []
    k = f.kind
    if k == "struct":
        return None if d == "null" else "struct"
    if k in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        if not d:
            return 0
        try:
            return int(d, 0)
        except ValueError:
            return int(d, 8)
    if k == "bool":
        return d == "true"
    if k == "float64":
        return float(d) if d else 0.0
    if k == "string":
        return None if d == "null" else (d or "")
    if k == "uuid":
        return uuid.UUID(int=0)
    if k == "bytes":
        return None if d == "null" else b""
    if k == "records":
        return None
    raise ValueError(f"unknown kind {k}")
