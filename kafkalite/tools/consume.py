"""``kafkalite consume``: print a topic's records, like kafka-console-consumer.sh.

    kafkalite consume --topic T [--group G | --partition P[,P2]] [--from-beginning | --offset O | --timestamp TS]
                      [--format value|kv|json] [--formatter-property print.key=true ...] [--max-messages N]
                      [--timeout-ms MS] [--isolation-level read_committed] [--progress]

A topic that does not exist yet is waited for, as kafka-console-consumer waits: the consumer asks for it the
way Kafka's Java consumer does (``allow.auto.create.topics``, so a broker with ``auto.create.topics.enable``
creates it), and where the broker does not create topics one line on stderr says the tool is waiting, until
the topic appears, Ctrl-C, or ``--timeout-ms`` passes without it.

Where it starts: ``--from-beginning`` (earliest), ``--offset`` (a number, ``earliest`` or ``latest``, on every
chosen partition), ``--timestamp`` (milliseconds or an ISO date/time: the first record at or after it, by
ListOffsets), else the end (only new records), as Kafka's tool does. With ``--group`` the consumer joins that
group (subscribe, partitions balanced between its members, offsets committed as it goes; a committed offset
is where it resumes, ``--from-beginning`` applies only where the group has none). Without ``--group`` it
assigns partitions itself (all, or ``--partition``) and commits nothing, so no group is created.

Output, one line per record: ``--format value`` (default), ``kv`` (``key<TAB>value``), ``json`` (one JSON
object a line: topic, partition, offset, timestamp, timestamp_type, key, value, headers; bytes that are not
UTF-8 come as ``{"base64": ...}``), or kafka-console-consumer's ``--formatter-property`` set (Kafka's
DefaultMessageFormatter; ``--property`` is its older name, ``--formatter-config FILE`` reads them from a file):
print.timestamp (``CreateTime:ms``), print.partition (``Partition:p``), print.offset (``Offset:o``),
print.delivery (``Delivery:NOT_PRESENT``: a share group's delivery count, which a plain consumer has not),
print.epoch (``Epoch:e``, the record's leader epoch), print.headers (``k:v,k2:v2`` or ``NO_HEADERS``),
print.key, print.value (true), key.separator (tab, between every field), headers.separator,
headers.key.separator, line.separator, null.literal (``null``), and key.deserializer / value.deserializer /
headers.deserializer naming one of Kafka's deserializers (``org.apache.kafka.common.serialization.``
String/ByteArray/Integer/Long/Short/UUID``Deserializer``; the default prints the bytes as text).

It follows the topic until Ctrl-C, ``--max-messages`` records, or ``--timeout-ms`` without a new record
(Kafka's consumer timeout); then it prints ``Processed a total of N messages`` on stderr and exits 0.
"""
from __future__ import annotations

import argparse
import base64
import json
import sys
import time
from typing import Any

from kafkalite.tools.common import (
    Progress,
    ToolError,
    add_client_options,
    bootstrap_s,
    client_config,
    confluent,
    kafka_message,
    parse_datetime_ms,
    parse_properties_args,
    properties_file,
    run_tool,
    split_names,
    truthy,
    unescape,
    unreachable,
    usage,
)

FORMATTER_PROPERTIES = {"print.timestamp": "false", "print.key": "false", "print.value": "true",
                        "print.partition": "false", "print.offset": "false", "print.delivery": "false",
                        "print.epoch": "false", "print.headers": "false",
                        "key.separator": "\t", "line.separator": "\n", "headers.separator": ",",
                        "headers.key.separator": ":", "null.literal": "null", "key.deserializer": "",
                        "value.deserializer": "", "headers.deserializer": ""}
_SERDE = "org.apache.kafka.common.serialization."
# Kafka's deserializers as the formatter prints them: (name, width in bytes or None, bytes -> text)
DESERIALIZERS: dict[str, tuple[int | None, Any]] = {
    _SERDE + "StringDeserializer": (None, lambda b: b.decode("utf-8", "replace")),
    _SERDE + "ByteArrayDeserializer": (None, lambda b: b.decode("utf-8", "replace")),
    _SERDE + "IntegerDeserializer": (4, lambda b: str(int.from_bytes(b, "big", signed=True))),
    _SERDE + "LongDeserializer": (8, lambda b: str(int.from_bytes(b, "big", signed=True))),
    _SERDE + "ShortDeserializer": (2, lambda b: str(int.from_bytes(b, "big", signed=True))),
    _SERDE + "UUIDDeserializer": (None, lambda b: b.decode("utf-8", "replace")),
}
TIMESTAMP_TYPES = {0: "NO_TIMESTAMP", 1: "CreateTime", 2: "LogAppendTime"}


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap-server", metavar="HOST:PORT", default=None,
                   help="broker to connect to (default $KAFKALITE_BOOTSTRAP_SERVER or localhost:9092)")
    p.add_argument("--command-config", "--consumer.config", dest="command_config", metavar="FILE",
                   help="a properties file of client settings (--consumer.config: kafka-console-consumer's older "
                        "name)")
    p.add_argument("--command-property", "--consumer-property", action="append", default=[], metavar="K=V",
                   dest="client_properties",
                   help="a consumer setting (librdkafka name), applied last; repeatable (--consumer-property: "
                        "the older name)")
    p.add_argument("--topic", required=True, help="topic to read")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--group", help="consume as a member of this group (committing offsets)")
    who.add_argument("--partition", action="append", default=[], metavar="P",
                     help="only these partitions (repeatable or comma-separated); assigned, no group")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--from-beginning", action="store_true", help="start at the earliest offset")
    where.add_argument("--offset", help="start offset: a number, earliest or latest")
    where.add_argument("--timestamp", metavar="TS", help="start at the first record at or after this time "
                                                         "(ms since the epoch or ISO date/time)")
    p.add_argument("--format", choices=("value", "kv", "json"), default=None, help="output format")
    p.add_argument("--json", action="store_const", const="json", dest="format", help="the same as --format json")
    p.add_argument("--formatter-property", "--property", nargs="+", action="extend", default=[], metavar="K=V",
                   dest="property", help="output setting: print.key=true, print.timestamp, print.partition, "
                                         "print.offset, print.headers, key.separator, ... (--property: the older "
                                         "name)")
    p.add_argument("--formatter-config", metavar="FILE",
                   help="a properties file of output settings (as --formatter-property), applied first")
    p.add_argument("--max-messages", type=int, metavar="N", help="stop after N records")
    p.add_argument("--timeout-ms", type=int, metavar="MS", help="stop after MS without a record")
    p.add_argument("--isolation-level", choices=("read_uncommitted", "read_committed"),
                   default="read_uncommitted", help="read_committed: only committed transactions' records")
    p.add_argument("--progress", action="store_true", help="report progress on stderr (with --max-messages)")
    add_client_options(p)


def run(args: argparse.Namespace) -> int:
    return run_tool("consume", _run, args)


def _text(b: bytes | None, null: str) -> str:
    return null if b is None else b.decode("utf-8", "replace")


def _json_bytes(b: bytes | None) -> Any:
    if b is None:
        return None
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(b).decode("ascii")}


class Formatter:
    def __init__(self, fmt: str | None, props: dict[str, str]) -> None:
        self.fmt = fmt
        self.p = {k: truthy(v) for k, v in props.items() if k.startswith("print.")}
        self.sep = unescape(props["key.separator"])
        self.line = unescape(props["line.separator"])
        self.hsep = unescape(props["headers.separator"])
        self.hkv = unescape(props["headers.key.separator"])
        self.null = props["null.literal"]
        self.deser = {what: self._deserializer(props[f"{what}.deserializer"], f"{what}.deserializer")
                      for what in ("key", "value", "headers")}
        if fmt == "kv":
            self.p["print.key"] = True

    @staticmethod
    def _deserializer(name: str, prop: str) -> Any:
        if not name:
            return None
        if name not in DESERIALIZERS:
            usage(f"--formatter-property {prop}={name}: unknown (known: "
                  f"{', '.join(n.removeprefix(_SERDE) for n in DESERIALIZERS)}, in {_SERDE.rstrip('.')})")
        width, decode = DESERIALIZERS[name]

        def deserialize(b: bytes, msg: Any) -> str:
            if width is not None and len(b) != width:
                raise ToolError(f"partition {msg.partition()} offset {msg.offset()}: {len(b)} bytes, "
                                f"{name.removeprefix(_SERDE)} reads {width}")
            return str(decode(b))

        return deserialize

    def _field(self, b: bytes | None, what: str, msg: Any) -> str:
        deser = self.deser[what]
        if b is None or deser is None:
            return _text(b, self.null)
        return str(deser(b, msg))

    def __call__(self, msg: Any) -> str:
        if self.fmt == "json":
            ts_type, ts = msg.timestamp()
            return json.dumps({
                "topic": msg.topic(), "partition": msg.partition(), "offset": msg.offset(), "timestamp": ts,
                "timestamp_type": TIMESTAMP_TYPES.get(ts_type, str(ts_type)), "key": _json_bytes(msg.key()),
                "value": _json_bytes(msg.value()),
                "headers": [[k, _json_bytes(v)] for k, v in (msg.headers() or [])]}) + "\n"
        fields = []
        p = self.p
        if p["print.timestamp"]:
            ts_type, ts = msg.timestamp()
            fields.append(f"{TIMESTAMP_TYPES[ts_type]}:{ts}" if ts_type in (1, 2) else "NO_TIMESTAMP")
        if p["print.partition"]:
            fields.append(f"Partition:{msg.partition()}")
        if p["print.offset"]:
            fields.append(f"Offset:{msg.offset()}")
        if p["print.delivery"]:
            count = msg.delivery_count() if hasattr(msg, "delivery_count") else None
            fields.append(f"Delivery:{'NOT_PRESENT' if count is None else count}")
        if p["print.epoch"]:
            epoch = msg.leader_epoch() if hasattr(msg, "leader_epoch") else None
            fields.append(f"Epoch:{'NOT_PRESENT' if epoch is None or epoch < 0 else epoch}")
        if p["print.headers"]:
            hs = msg.headers() or []
            fields.append(self.hsep.join(f"{k}{self.hkv}{self._field(v, 'headers', msg)}" for k, v in hs) if hs
                          else "NO_HEADERS")
        if p["print.key"]:
            fields.append(self._field(msg.key(), "key", msg))
        if p["print.value"]:
            fields.append(self._field(msg.value(), "value", msg))
        if not fields:   # Kafka's formatter writes nothing at all for a record when every field is off
            return ""
        return self.sep.join(fields) + self.line


def _start_offset(args: argparse.Namespace) -> int | None:
    """A logical or absolute start offset for assigned partitions (None: --timestamp decides)."""
    ck = confluent()
    if args.timestamp is not None:
        return None
    if args.from_beginning:
        return int(ck.OFFSET_BEGINNING)
    if args.offset is None or args.offset == "latest":
        return int(ck.OFFSET_END)
    if args.offset == "earliest":
        return int(ck.OFFSET_BEGINNING)
    try:
        value = int(args.offset)
    except ValueError:
        usage(f"--offset {args.offset!r}: expected a number, earliest or latest")
    if value < 0:
        usage(f"--offset {value}: must be at least 0")
    return value


def _run(args: argparse.Namespace) -> int:
    import os

    args.bootstrap_server = args.bootstrap_server or os.environ.get("KAFKALITE_BOOTSTRAP_SERVER",
                                                                    "localhost:9092")
    known = dict(FORMATTER_PROPERTIES)
    if args.formatter_config:
        known.update({k: v for k, v in properties_file(args.formatter_config, "--formatter-config").items()
                      if k in FORMATTER_PROPERTIES})
    props = parse_properties_args(args.property, known)
    fmt = Formatter(args.format, props)
    if args.group and (args.offset is not None or args.timestamp is not None):
        usage("--offset and --timestamp assign partitions; they cannot be used with --group "
              "(reset the group's offsets with `kafkalite groups --reset-offsets`)")
    if args.max_messages is not None and args.max_messages < 1:
        usage(f"--max-messages {args.max_messages}: must be at least 1")
    ts_ms = parse_datetime_ms(args.timestamp) if args.timestamp is not None else None
    start = _start_offset(args)
    try:
        wanted = [int(x) for x in split_names(args.partition)]
    except ValueError:
        usage(f"--partition {','.join(args.partition)!r}: expected partition numbers")
    ck = confluent()
    conf = client_config(args, **{
        "group.id": args.group or f"kafkalite-consume-{os.getpid()}",
        "enable.auto.commit": bool(args.group), "auto.offset.reset": "earliest" if args.from_beginning else "latest",
        "isolation.level": args.isolation_level, "enable.partition.eof": False,
        # as Kafka's Java consumer (allow.auto.create.topics=true): a broker that auto-creates topics
        # creates a missing one when the tool asks for it
        "allow.auto.create.topics": True, "socket.connection.setup.timeout.ms": 10_000})
    consumer = ck.Consumer(conf)
    try:
        return _consume(ck, consumer, args, fmt, wanted, start, ts_ms)
    finally:
        consumer.close()


def _missing(ck: Any, tmd: Any) -> bool:
    """The topic does not exist (yet): no metadata, UNKNOWN_TOPIC_OR_PARTITION, or no partitions so far."""
    if tmd is None:
        return True
    if tmd.error is not None:
        return bool(tmd.error.code() in (ck.KafkaError.UNKNOWN_TOPIC_OR_PART, ck.KafkaError._UNKNOWN_TOPIC))
    return not tmd.partitions


def _await_topic(ck: Any, consumer: Any, args: argparse.Namespace, tmd: Any) -> Any:
    """The topic's metadata once it exists, as kafka-console-consumer waits for a topic that is not there yet
    (one line on stderr says so); None when ``--timeout-ms`` passes first. Other errors (not authorized, ...)
    end the tool."""
    if _missing(ck, tmd):
        sys.stderr.write(f"Topic '{args.topic}' does not exist yet: waiting for it (Ctrl-C to stop"
                         + (f", or --timeout-ms {args.timeout_ms}" if args.timeout_ms is not None else "") + ")\n")
        sys.stderr.flush()
        deadline = time.monotonic() + args.timeout_ms / 1000 if args.timeout_ms is not None else None
        while _missing(ck, tmd):
            if deadline is not None and time.monotonic() >= deadline:
                return None
            time.sleep(0.2 if deadline is None else max(0.0, min(0.2, deadline - time.monotonic())))
            try:
                tmd = consumer.list_topics(topic=args.topic, timeout=bootstrap_s(args)).topics.get(args.topic)
            except ck.KafkaException:
                continue   # the broker is restarting, say: keep waiting, as the Java consumer does
    if tmd.error is not None:
        raise ToolError(f"Topic '{args.topic}' is not available: {kafka_message(ck.KafkaException(tmd.error))}")
    return tmd


def _consume(ck: Any, consumer: Any, args: argparse.Namespace, fmt: Formatter, wanted: list[int],
             start: int | None, ts_ms: int | None) -> int:
    try:
        md = consumer.list_topics(topic=args.topic, timeout=bootstrap_s(args))
    except ck.KafkaException as exc:
        raise unreachable(args, exc) from None
    tmd = _await_topic(ck, consumer, args, md.topics.get(args.topic))
    if tmd is None:   # --timeout-ms passed before the topic appeared
        sys.stderr.write("Processed a total of 0 messages\n")
        return 0
    if args.group:
        consumer.subscribe([args.topic])
    else:
        parts = wanted or sorted(tmd.partitions)
        bad = [p for p in parts if p not in tmd.partitions]
        if bad:
            raise ToolError(f"Topic '{args.topic}' has no partition {bad[0]} (it has {len(tmd.partitions)})")
        if ts_ms is not None:
            found = consumer.offsets_for_times([ck.TopicPartition(args.topic, p, ts_ms) for p in parts],
                                               timeout=30)
            # no record at or after the time: start at the end (ListOffsets answers -1)
            tps = [ck.TopicPartition(args.topic, tp.partition, tp.offset if tp.offset >= 0 else ck.OFFSET_END)
                   for tp in found]
        else:
            tps = [ck.TopicPartition(args.topic, p, start) for p in parts]
        consumer.assign(tps)
    out = sys.stdout
    count = 0
    # consuming N records into a file or pipe from a terminal: progress on stderr
    progress = Progress(bool(args.progress or (args.max_messages and sys.stderr.isatty() and not out.isatty())),
                        args.max_messages)
    idle_limit = args.timeout_ms / 1000 if args.timeout_ms is not None else None
    last = time.monotonic()
    try:
        while args.max_messages is None or count < args.max_messages:
            msg = consumer.poll(0.2)
            if msg is None:
                if idle_limit is not None and time.monotonic() - last >= idle_limit:
                    break
                continue
            if msg.error():
                err = msg.error()
                if err.fatal() or not err.retriable():
                    raise ToolError(kafka_message(ck.KafkaException(err)))
                continue
            last = time.monotonic()
            out.write(fmt(msg))
            count += 1
            if args.max_messages is not None and count % 1000 == 0:
                progress.update(count)
    except KeyboardInterrupt:
        pass
    out.flush()
    progress.update(count, force=True)
    progress.finish()
    sys.stderr.write(f"Processed a total of {count} messages\n")
    return 0
