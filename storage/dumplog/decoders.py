"""kafka-dump-log's record decoders: ``--offsets-decoder`` (``__consumer_offsets``) and
``--transaction-log-decoder`` (``__transaction_state``).

The offsets decoder (DumpLogSegments.OffsetsMessageParser, 3.9) reads the key's int16 record type and the
value's int16 version (CoordinatorRecordSerde) and prints Kafka's generated JsonConverter output wrapped as
``{"type":"<type>","data":{...}}`` / ``{"version":"<v>","data":{...}}``; a null value is ``<DELETE>``. For
``GroupMetadataValue`` of protocol type ``consumer`` each member's subscription and assignment are replaced by
their decoded ConsumerProtocolSubscription / ConsumerProtocolAssignment JSON (kept as base64 when they do not
parse). Record types 0-2 are decoded here (offset commits and classic group metadata); the KIP-848 record types
3-8 print Kafka's "Error at offset ..." text because this tool does not know their schemas.

The transaction log decoder (TransactionLog.formatRecordKeyAndValue) prints
``transaction_metadata::transactionalId=<id>`` and ``producerId:P,producerEpoch:E,state=S,partitions=[t-p,...],
txnLastUpdateTimestamp=T,txnTimeoutMs=M``; the partitions come out of a Scala ``mutable.HashSet`` of
``TopicPartition``, in its iteration order.

Schemas below are the JSON message specs' field lists (names, types, versions), written out as data.
JSON text follows Jackson's ``ObjectNode.toString()``: compact, strings escaped like ``json.dumps`` without
ASCII escaping, bytes as standard base64.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkalite_storage.dumplog.java import JavaError, _i32, _java_string_hash, java_utf8_decode


@dataclass(frozen=True)
class F:
    """One field: JSON name, type (int8/16/32/64, string, bytes, [int32], [string] or a struct tuple), the
    versions it exists in and the versions in which it may be null (``(lo, hi)``, hi inclusive)."""

    name: str
    type: str | tuple[F, ...]
    versions: tuple[int, int] = (0, 32767)
    nullable: tuple[int, int] = (1, 0)  # empty range
    array: bool = False


_TP = (F("topic", "string"), F("partitions", "[int32]"))
OFFSET_COMMIT_KEY = (F("group", "string"), F("topic", "string"), F("partition", "int32"))
OFFSET_COMMIT_VALUE = (F("offset", "int64"), F("leaderEpoch", "int32", (3, 32767)), F("metadata", "string"),
                       F("commitTimestamp", "int64"), F("expireTimestamp", "int64", (1, 1)))
GROUP_METADATA_KEY = (F("group", "string"),)
_MEMBER = (F("memberId", "string"), F("groupInstanceId", "string", (3, 32767), (3, 32767)),
           F("clientId", "string"), F("clientHost", "string"), F("rebalanceTimeout", "int32", (1, 32767)),
           F("sessionTimeout", "int32"), F("subscription", "bytes"), F("assignment", "bytes"))
GROUP_METADATA_VALUE = (F("protocolType", "string"), F("generation", "int32"),
                        F("protocol", "string", nullable=(0, 32767)), F("leader", "string", nullable=(0, 32767)),
                        F("currentStateTimestamp", "int64", (2, 32767)), F("members", _MEMBER, array=True))
SUBSCRIPTION = (F("topics", "[string]"), F("userData", "bytes", nullable=(0, 32767)),
                F("ownedPartitions", _TP, (1, 32767), array=True), F("generationId", "int32", (2, 32767)),
                F("rackId", "string", (3, 32767), (3, 32767)))
ASSIGNMENT = (F("assignedPartitions", _TP, array=True), F("userData", "bytes", nullable=(0, 32767)))
TXN_LOG_KEY = (F("transactionalId", "string"),)
TXN_LOG_VALUE = (F("producerId", "int64"), F("producerEpoch", "int16"), F("transactionTimeoutMs", "int32"),
                 F("transactionStatus", "int8"),
                 F("transactionPartitions", (*_TP[:1], F("partitionIds", "[int32]")), nullable=(0, 32767),
                   array=True),
                 F("transactionLastUpdateTimestampMs", "int64"), F("transactionStartTimestampMs", "int64"))


class _Underflow(Exception):
    pass


class Reader:
    """Kafka's generated ``read(Readable, version)`` over a ByteBufferAccessor, flexible or not."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> Any:
        s = struct.calcsize(fmt)
        if self.pos + s > len(self.data):
            raise RuntimeError("null")  # BufferUnderflowException has no message
        v = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += s
        return v

    def uvarint(self) -> int:
        result = 0
        for i in range(5):
            b = self.take(">B")
            result |= (b & 0x7F) << (7 * i)
            if not b & 0x80:
                return _i32(result)
        raise RuntimeError("Varint is too long, the most significant bit in the 5th byte is set, converted "
                           f"value: {result & 0xFFFFFFFF:x}")

    def raw(self, n: int) -> bytes:
        if n > len(self.data) - self.pos:
            raise RuntimeError(f"Error reading byte array of {n} byte(s): only {len(self.data) - self.pos} "
                               "byte(s) available")
        b = self.data[self.pos : self.pos + n]
        self.pos += n
        return b

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.raw(self.uvarint())

    def length(self, flexible: bool, wide: bool) -> int:
        if flexible:
            return self.uvarint() - 1
        return int(self.take(">i" if wide else ">h"))

    def message(self, fields: tuple[F, ...], version: int, flexible: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields:
            if not f.versions[0] <= version <= f.versions[1]:
                continue
            nullable = f.nullable[0] <= version <= f.nullable[1]
            out[f.name] = self.field(f, version, flexible, nullable)
        if flexible:
            self.skip_tags()
        return out

    def field(self, f: F, version: int, flexible: bool, nullable: bool) -> Any:
        if f.array:
            n = self.length(flexible, True)
            if n < 0:
                if nullable:
                    return None
                raise RuntimeError(f"non-nullable field {f.name} was serialized as null")
            assert isinstance(f.type, tuple)
            return [self.message(f.type, version, flexible) for _ in range(n)]
        t = f.type
        if t == "int8":
            return self.take(">b")
        if t == "int16":
            return self.take(">h")
        if t == "int32":
            return self.take(">i")
        if t == "int64":
            return self.take(">q")
        if t in ("string", "bytes"):
            n = self.length(flexible, t == "bytes")
            if n < 0:
                if nullable:
                    return None
                raise RuntimeError(f"non-nullable field {f.name} was serialized as null")
            data = self.raw(n)
            return java_utf8_decode(data) if t == "string" else data
        if t in ("[int32]", "[string]"):
            n = self.length(flexible, True)
            if n < 0:
                raise RuntimeError(f"non-nullable field {f.name} was serialized as null")
            if t == "[int32]":
                return [self.take(">i") for _ in range(n)]
            return [java_utf8_decode(self.raw(self.length(flexible, False))) for _ in range(n)]
        raise AssertionError(t)


def to_json(value: Any) -> str:
    """Jackson's compact rendering of the converter's tree."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{to_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    if isinstance(value, bytes):
        return '"' + base64.b64encode(value).decode() + '"'
    if value is None:
        return "null"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


# ---- __consumer_offsets -------------------------------------------------------------------------------------

_KEYS = {0: (OFFSET_COMMIT_KEY, False), 1: (OFFSET_COMMIT_KEY, False), 2: (GROUP_METADATA_KEY, False)}
_VALUES = {0: (OFFSET_COMMIT_VALUE, 4), 1: (OFFSET_COMMIT_VALUE, 4), 2: (GROUP_METADATA_VALUE, 4)}


class UnknownRecordType(Exception):
    def __init__(self, record_type: int) -> None:
        super().__init__(record_type)
        self.record_type = record_type


def _consumer_protocol(member: dict[str, Any], name: str, schema: tuple[F, ...]) -> None:
    data = member.get(name)
    if not isinstance(data, bytes):
        return
    try:
        r = Reader(data)
        version = r.take(">h")
        member[name] = r.message(schema, version, False)
    except RuntimeError:
        pass  # Kafka swallows the error and keeps the bytes


def _read_record(buf: bytes | None, name: str, pick: Callable[[int], tuple[tuple[F, ...], bool]]
                 ) -> tuple[int, dict[str, Any]]:
    r = Reader(buf or b"")
    try:
        version = r.take(">h")
    except RuntimeError:
        raise RuntimeError(f"Could not read version from {name}'s buffer.") from None
    schema, flexible = pick(version)
    try:
        return version, r.message(schema, version, flexible)
    except RuntimeError as e:
        raise RuntimeError(f"Could not read record with version {version} from {name}'s buffer due to: {e}.") \
            from None


def offsets_key_value(offset: int, key: bytes | None, value: bytes | None) -> tuple[str | None, str | None]:
    """OffsetsMessageParser.parse: (key text, payload text)."""
    if key is None:
        raise JavaError("java.lang.RuntimeException", f"Failed to decode message at offset {offset} using offset "
                                                      "topic decoder (message had a missing key)")
    try:
        record_type = -1

        def key_schema(v: int) -> tuple[tuple[F, ...], bool]:
            nonlocal record_type
            record_type = v
            if v in (3, 4, 5, 6, 7, 8):
                raise RuntimeError(f"record type {v} (KIP-848 consumer groups) is not decoded by kafkalite")
            if v not in _KEYS:
                raise UnknownRecordType(v)
            return _KEYS[v]

        rtype, kdata = _read_record(key, "key", key_schema)
        key_text = to_json({"type": str(rtype), "data": kdata})
        if value is None:
            return key_text, "<DELETE>"
        schema, flexible_from = _VALUES[record_type]
        version, vdata = _read_record(value, "value", lambda v: (schema, v >= flexible_from))
        if schema is GROUP_METADATA_VALUE and vdata.get("protocolType") == "consumer":
            for member in vdata.get("members") or []:
                _consumer_protocol(member, "subscription", SUBSCRIPTION)
                _consumer_protocol(member, "assignment", ASSIGNMENT)
        return key_text, to_json({"version": str(version), "data": vdata})
    except UnknownRecordType as e:
        return f"Unknown record type {e.record_type} at offset {offset}, skipping.", None
    except RuntimeError as e:
        return f"Error at offset {offset}, skipping. {e}", None




# ---- __transaction_state ------------------------------------------------------------------------------------

_TXN_STATES = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit",
               5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}


def _topic_partition_hash(topic: str, partition: int) -> int:
    return _i32(31 * (31 + partition) + _java_string_hash(topic))


def _scala_set_order(items: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Iteration order of a Scala 2.13 ``mutable.HashSet[TopicPartition]`` built by adding ``items``."""
    cap = 16
    distinct: list[tuple[str, int]] = []
    for it in items:
        if it in distinct:
            continue
        if len(distinct) + 1 >= int(cap * 0.75):
            cap *= 2
        distinct.append(it)
    keyed = []
    for n, (t, p) in enumerate(distinct):
        h = _topic_partition_hash(t, p) & 0xFFFFFFFF
        h ^= h >> 16
        keyed.append((h & (cap - 1), _i32(h), n, (t, p)))
    return [tp for *_rest, tp in sorted(keyed)]


def txn_key_value(key: bytes | None, value: bytes | None) -> tuple[str | None, str | None]:
    """TransactionLog.formatRecordKeyAndValue (its exceptions end the tool)."""
    try:
        r = Reader(key or b"")
        version = r.take(">h")
        if version != 0:
            return f"unknown::version={version}", None
        txn_id = r.message(TXN_LOG_KEY, 0, False)["transactionalId"]
        key_text = f"transaction_metadata::transactionalId={txn_id}"
        if value is None:
            return key_text, "<DELETE>"
        r = Reader(value)
        v = r.take(">h")
        if not 0 <= v <= 1:
            raise JavaError("java.lang.IllegalStateException",
                            f"Unknown version {v} from the transaction log message value")
        d = r.message(TXN_LOG_VALUE, v, v >= 1)
    except RuntimeError as e:
        raise JavaError("java.lang.RuntimeException", str(e)) from None
    state = _TXN_STATES.get(d["transactionStatus"])
    if state is None:
        raise JavaError("java.lang.IllegalStateException", f"Unknown transaction state id {d['transactionStatus']} "
                                                           "from the transaction status message")
    parts = []
    if state != "Empty":  # Kafka adds no partitions to an Empty transaction
        if d["transactionPartitions"] is None:
            raise JavaError("java.lang.NullPointerException")
        parts = [(p["topic"], pid) for p in d["transactionPartitions"] for pid in p["partitionIds"]]
    partitions = ",".join(f"{t}-{p}" for t, p in _scala_set_order(parts))
    return key_text, (f"producerId:{d['producerId']},producerEpoch:{d['producerEpoch']},state={state},"
                      f"partitions=[{partitions}],txnLastUpdateTimestamp={d['transactionLastUpdateTimestampMs']},"
                      f"txnTimeoutMs={d['transactionTimeoutMs']}")


# --key-decoder-class / --value-decoder-class: the decoders Kafka ships (org.apache.kafka.tools.api), and the
# deprecated kafka.serializer names DumpLogSegments maps onto them (announcing it on stdout each time it builds
# the parser, i.e. before every .log / .checkpoint file).
DECODER_CLASSES = {
    "org.apache.kafka.tools.api.StringDecoder": ("string", None),
    "org.apache.kafka.tools.api.IntegerDecoder": ("int", None),
    "org.apache.kafka.tools.api.LongDecoder": ("long", None),
    "kafka.serializer.StringDecoder": ("string", "org.apache.kafka.tools.api.StringDecoder"),
    "kafka.serializer.IntegerDecoder": ("int", "org.apache.kafka.tools.api.IntegerDecoder"),
    "kafka.serializer.LongDecoder": ("long", "org.apache.kafka.tools.api.LongDecoder"),
}


def decoder_announcement(class_name: str) -> str:
    """What ``newDecoder(className)`` prints (a deprecation notice) or raises (an unknown class)."""
    if class_name not in DECODER_CLASSES:
        raise JavaError("java.lang.ClassNotFoundException", class_name,
                        plain=f"{class_name}: unknown decoder class (--key-decoder-class and --value-decoder-class "
                              "take org.apache.kafka.tools.api.StringDecoder, IntegerDecoder or LongDecoder)")
    replacement = DECODER_CLASSES[class_name][1]
    if replacement is None:
        return ""
    return f"{class_name} is deprecated. Please use {replacement} instead\n"


def simple_decode(class_name: str, data: bytes) -> str:
    """``Decoder.fromBytes`` of Kafka's String/Integer/Long decoders, as the tool prints the result."""
    kind = DECODER_CLASSES[class_name][0]
    if kind == "string":
        return java_utf8_decode(data)
    fmt = ">i" if kind == "int" else ">q"
    if len(data) < struct.calcsize(fmt):
        raise JavaError("java.nio.BufferUnderflowException")
    return str(struct.unpack_from(fmt, data, 0)[0])


def string_key_value(key: bytes | None, value: bytes | None, key_class: str = "org.apache.kafka.tools.api."
                     "StringDecoder", value_class: str = "org.apache.kafka.tools.api.StringDecoder"
                     ) -> tuple[str | None, str | None]:
    """DecoderMessageParser: the key is decoded first, then the value (a failure ends the tool)."""
    key_text = None if key is None else simple_decode(key_class, key)
    return key_text, (None if value is None else simple_decode(value_class, value))
