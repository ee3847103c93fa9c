"""What does each schema type accept, and which new versions are compatible with the old ones?

One entry per schema type (``AVRO``, ``JSON``, ``PROTOBUF``): ``parse`` checks a schema text (with the texts of
its references) and gives its canonical string (what the registry stores and compares), and ``can_read``
gives the reasons, if any, why data written with one schema cannot be read with another. ``check`` applies a
compatibility level to a new schema and the subject's live versions, oldest first, as Confluent's
``CompatibilityChecker`` does: BACKWARD (the new schema reads data of the latest), FORWARD (the latest reads
data of the new one), FULL (both), their ``_TRANSITIVE`` forms against every live version, NONE.
Pure: no I/O.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkalite.registry.compat import avro, jsonschema, protobuf

LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE")
TYPES = ("JSON", "PROTOBUF", "AVRO")   # the order Confluent's /schemas/types lists them


class InvalidSchema(ValueError):
    """The schema text is not a valid schema of its type (HTTP 422, error 42201)."""


@dataclass
class Parsed:
    schema_type: str
    canonical: str        # the string stored and compared (``normalized`` when asked to normalize)
    normalized: str
    tree: Any             # the type's own parse (for can_read)


# a reference resolved: (name, schema text, schema type, its own resolved references)
Resolved = tuple[str, str, list[Any]]


def parse(schema_type: str, text: str, references: list[Resolved] | None = None) -> Parsed:
    """Parse ``text`` as ``schema_type``; ``references`` are (name, text, their references), depth first."""
    refs = references or []
    try:
        if schema_type == "AVRO":
            named: dict[str, Any] = {}
            _avro_refs(refs, named, 0)
            known = set(named)
            tree = avro.parse(text, named)
            return Parsed("AVRO", avro.canonical(tree, False, known), avro.canonical(tree, True, known), tree)
        if schema_type == "JSON":
            doc = jsonschema.parse(text)
            return Parsed("JSON", jsonschema.canonical(doc), jsonschema.canonical(doc, normalize=True),
                          jsonschema.Resolved(doc, {name: jsonschema.parse(t) for name, t, _ in refs}))
        if schema_type == "PROTOBUF":
            proto = protobuf.parse(text, refs)
            return Parsed("PROTOBUF", protobuf.canonical(proto), protobuf.normalized(proto), proto)
    except ValueError as exc:
        raise InvalidSchema(str(exc)) from None
    raise InvalidSchema(f"Invalid schema type {schema_type}")


def _avro_refs(refs: list[Resolved], named: dict[str, Any], depth: int) -> None:
    if depth > 32:
        raise InvalidSchema("references nested too deeply")
    for name, text, inner in refs:
        _avro_refs(inner, named, depth + 1)
        if name in named:
            continue   # one type referenced twice (a diamond)
        avro.parse(text, named)


def can_read(reader: Parsed, writer: Parsed, names: tuple[str, str] = ("new", "old")) -> list[str]:
    """Why ``reader`` cannot read data written with ``writer``; ``names`` are what the messages call the
    reader and the writer (Confluent's "new"/"old", swapped for FORWARD)."""
    if reader.schema_type != writer.schema_type:
        return ["Incompatible because of different schema type"]
    if reader.schema_type == "AVRO":
        return avro.can_read(reader.tree, writer.tree)
    if reader.schema_type == "JSON":
        return jsonschema.can_read(reader.tree, writer.tree)
    return protobuf.can_read(reader.tree, writer.tree, *names)


def formatted(parsed: Parsed, fmt: str | None) -> str | None:
    """The schema in a ``?format=`` other than its stored text (None: the stored text): ``serialized`` for
    Protobuf (the base64 of its FileDescriptorProto). Unknown formats are ignored, as Confluent does."""
    if fmt == "serialized" and parsed.schema_type == "PROTOBUF":
        return protobuf.serialized(parsed.tree)
    return None


def check(level: str, new: Parsed, previous: list[tuple[int, str, Callable[[], Parsed]]]) -> list[str]:
    """Messages explaining why ``new`` breaks ``level`` against ``previous`` ((version, text, parse()) of the
    live versions, oldest first); empty: compatible."""
    if level == "NONE" or not previous:
        return []
    targets = previous if level.endswith("_TRANSITIVE") else previous[-1:]
    base = level.removesuffix("_TRANSITIVE")
    out: list[str] = []
    for version, text, load in reversed(targets):   # newest first; the first failing version is reported
        old = load()
        msgs: list[str] = []
        if base in ("FORWARD", "FULL"):
            msgs += can_read(old, new, ("old", "new"))
        if base in ("BACKWARD", "FULL"):
            msgs += can_read(new, old, ("new", "old"))
        if msgs:
            shown = text if len(text) <= 10 * 1024 else None
            out += msgs
            out.append(f"{{oldSchemaVersion: {version}}}")
            out.append(f"{{oldSchema: '{text}'}}" if shown is not None
                       else f"{{oldSchema: <truncated> '{text[:10 * 1024]}...'}}")
            out.append(f"{{compatibility: '{level}'}}")
            return out
    return out
