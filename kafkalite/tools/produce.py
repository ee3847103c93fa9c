"""``kafkalite produce``: one record per input line, like kafka-console-producer.sh.

    kafkalite produce --topic T [--file F] [--reader-property parse.key=true key.separator=: ...]
                      [--header k=v ...] [--partition N] [--compression-codec gzip|snappy|lz4|zstd|none]
                      [--acks all|1|0] [--no-idempotence] [--linger-ms MS] [--progress]

Lines come from stdin, or from ``--file`` (progress on stderr: on a terminal, or with ``--progress``). Line
ends (``\\n``, ``\\r\\n``) are not part of the value; values are bytes as read (any encoding).

``--reader-property`` (``--property``, its older name; ``--reader-config FILE`` reads them from a file) takes
Kafka's LineMessageReader keys: ``parse.key`` (false), ``key.separator`` (tab),
``parse.headers`` (false), ``headers.delimiter`` (tab, between the headers and the rest of the line),
``headers.separator`` (``,``), ``headers.key.separator`` (``:``), ``null.marker`` (a key or value equal to it
is sent as null), ``ignore.error`` (false: a line without the key separator is an error naming the line;
true: the whole line is the value, without a key). ``--header k=v`` adds a header to every record.

The producer is idempotent by default (enable.idempotence: no duplicates or reordering on retries; acks=all).
``--acks 1`` or ``0`` turns idempotence off, as the Java client does when acks is set explicitly to a value
idempotence cannot use. Exit 0 when every record was acknowledged, 1 when any failed (the first error is
shown; the summary counts them), 2 for bad options or a malformed line.

``--json``: a summary ``{"topic", "records", "failed", "partitions": {"P": {"records", "first_offset",
"last_offset"}}}`` on stdout after the run.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any, BinaryIO

from kafkalite.tools.common import (
    Progress,
    ToolError,
    add_connection_options,
    bootstrap_s,
    client_config,
    confluent,
    emit,
    kafka_message,
    parse_properties_args,
    properties_file,
    run_tool,
    split_kv,
    timeout_s,
    truthy,
    unescape,
    unreachable,
    usage,
)

READER_PROPERTIES = {"parse.key": "false", "key.separator": "\t", "parse.headers": "false",
                     "headers.delimiter": "\t", "headers.separator": ",", "headers.key.separator": ":",
                     "null.marker": "", "ignore.error": "false"}
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def configure(p: argparse.ArgumentParser) -> None:
    add_connection_options(p)
    p.add_argument("--producer.config", dest="command_config", metavar="FILE",
                   help="the same as --command-config (kafka-console-producer's older name)")
    p.add_argument("--command-property", "--producer-property", action="append", default=[], metavar="K=V",
                   dest="client_properties",
                   help="a producer setting (librdkafka name), applied last; repeatable (--producer-property: "
                        "the older name)")
    p.add_argument("--topic", required=True, help="topic to write to")
    p.add_argument("--file", metavar="PATH", help="read lines from this file instead of stdin")
    p.add_argument("--reader-property", "--property", nargs="+", action="extend", default=[], metavar="K=V",
                   dest="property", help="how lines are read: parse.key=true, key.separator, parse.headers, "
                                         "null.marker, ... (--property: the older name)")
    p.add_argument("--reader-config", metavar="FILE",
                   help="a properties file of line reader settings (as --reader-property), applied first")
    p.add_argument("--header", action="append", default=[], metavar="K=V", help="header on every record")
    p.add_argument("--partition", type=int, metavar="N", help="write every record to this partition")
    p.add_argument("--compression-codec", choices=CODECS, default="none", nargs="?", const="gzip",
                   help="batch compression (default none; the flag alone means gzip, as in Kafka)")
    p.add_argument("--acks", "--request-required-acks", default="all", choices=("all", "-1", "1", "0"),
                   help="acks (default all)")
    p.add_argument("--no-idempotence", action="store_true", help="turn the idempotent producer off")
    p.add_argument("--linger-ms", type=int, default=5, metavar="MS", help="batching delay (default 5)")
    p.add_argument("--progress", action="store_true", help="report progress on stderr even when not a terminal")


def run(args: argparse.Namespace) -> int:
    return run_tool("produce", _run, args)


class LineParser:
    """Kafka's LineMessageReader rules for one line -> (key, value, headers)."""

    def __init__(self, props: dict[str, str], fixed_headers: list[tuple[str, bytes]]) -> None:
        self.parse_key = truthy(props["parse.key"])
        self.key_sep = unescape(props["key.separator"]).encode()
        self.parse_headers = truthy(props["parse.headers"])
        self.h_delim = unescape(props["headers.delimiter"]).encode()
        self.h_sep = unescape(props["headers.separator"]).encode()
        self.h_kv = unescape(props["headers.key.separator"]).encode()
        self.null = props["null.marker"].encode() or None
        self.ignore_error = truthy(props["ignore.error"])
        self.fixed = fixed_headers
        for name, sep in (("key.separator", self.key_sep), ("headers.delimiter", self.h_delim),
                          ("headers.separator", self.h_sep), ("headers.key.separator", self.h_kv)):
            if not sep:
                usage(f"--property {name}: must not be empty")

    def _nullable(self, b: bytes) -> bytes | None:
        return None if self.null is not None and b == self.null else b

    def parse(self, line: bytes, lineno: int) -> tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]:
        headers = list(self.fixed)
        rest = line
        if self.parse_headers:
            head, sep, tail = rest.partition(self.h_delim)
            if not sep:
                if not self.ignore_error:
                    raise ToolError(f"no header delimiter found on line number {lineno}: "
                                    f"{line[:80].decode('utf-8', 'replace')!r}", 2)
            else:
                rest = tail
                for pair in head.split(self.h_sep) if head else []:
                    k, s, v = pair.partition(self.h_kv)
                    if not s:
                        raise ToolError(f"no header key separator found in pair {pair.decode('utf-8', 'replace')!r}"
                                        f" on line number {lineno}", 2)
                    headers.append((k.decode("utf-8", "replace"), v))
        key: bytes | None = None
        if self.parse_key:
            k, sep, v = rest.partition(self.key_sep)
            if not sep:
                if not self.ignore_error:
                    raise ToolError(f"no key separator found on line number {lineno}: "
                                    f"{line[:80].decode('utf-8', 'replace')!r}", 2)
                return None, self._nullable(rest), headers
            return self._nullable(k), self._nullable(v), headers
        return key, self._nullable(rest), headers


def _open(args: argparse.Namespace) -> tuple[BinaryIO, int | None]:
    if not args.file:
        return sys.stdin.buffer, None
    try:
        fh = open(args.file, "rb")  # noqa: SIM115 - closed by the caller
    except OSError as exc:
        usage(f"--file {args.file}: {exc.strerror or exc}")
    return fh, os.fstat(fh.fileno()).st_size


def _run(args: argparse.Namespace) -> int:
    known = dict(READER_PROPERTIES)
    if args.reader_config:
        known.update({k: v for k, v in properties_file(args.reader_config, "--reader-config").items()
                      if k in READER_PROPERTIES})
    props = parse_properties_args(args.property, known)
    fixed = [(k, v.encode()) for k, v in split_kv(args.header, "--header").items()]
    parser = LineParser(props, fixed)
    ck = confluent()
    idempotent = not args.no_idempotence and args.acks in ("all", "-1")
    t = timeout_s(args)
    conf = client_config(args, **{
        "enable.idempotence": idempotent, "acks": args.acks, "compression.type": args.compression_codec,
        "linger.ms": args.linger_ms, "message.timeout.ms": max(int(t * 1000), 1000)})
    try:
        producer = ck.Producer(conf)
    except ck.KafkaException as exc:
        usage(f"client configuration: {kafka_message(exc)}")
    try:
        md = producer.list_topics(topic=args.topic, timeout=bootstrap_s(args))
    except ck.KafkaException as exc:
        raise unreachable(args, exc) from None
    tmd = md.topics.get(args.topic)
    if tmd is None or tmd.error is not None:
        why = kafka_message(ck.KafkaException(tmd.error)) if tmd is not None and tmd.error else "unknown"
        raise ToolError(f"Topic '{args.topic}' is not available: {why}")
    if args.partition is not None and args.partition not in tmd.partitions:
        raise ToolError(f"Topic '{args.topic}' has no partition {args.partition} "
                        f"(it has {len(tmd.partitions)})")

    stats: dict[int, list[int]] = {}     # partition -> [records, first offset, last offset]
    failures: list[str] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            failures.append(kafka_message(ck.KafkaException(err)))
            return
        s = stats.setdefault(msg.partition(), [0, msg.offset(), msg.offset()])
        s[0] += 1
        s[1] = min(s[1], msg.offset())
        s[2] = max(s[2], msg.offset())

    src, size = _open(args)
    progress = Progress(bool(args.progress or (args.file and sys.stderr.isatty())), size)
    sent = 0
    extra = {} if args.partition is None else {"partition": args.partition}
    interrupted = False
    try:
        try:
            for lineno, raw in enumerate(src, 1):
                line = raw[:-1] if raw.endswith(b"\n") else raw
                if line.endswith(b"\r"):
                    line = line[:-1]
                try:
                    key, value, headers = parser.parse(line, lineno)
                except ToolError:
                    producer.flush(max(t, 1.0) + 5)   # the lines before it are sent
                    raise
                while True:
                    try:
                        producer.produce(args.topic, value=value, key=key, headers=headers or None,
                                         on_delivery=delivered, **extra)
                        break
                    except BufferError:     # the local queue is full: let deliveries drain it
                        producer.poll(0.05)
                sent += 1
                if sent % 1000 == 0:
                    producer.poll(0)
                    progress.update(sent, src.tell() if size is not None else None)
        except KeyboardInterrupt:   # Ctrl-C: what was read is still delivered (as the console producer's close)
            interrupted = True
        left = producer.flush(max(t, 1.0) + 5)
        if left:
            failures.append(f"{left} records not acknowledged within {t:g} s")
    finally:
        if src is not sys.stdin.buffer:
            src.close()
    progress.update(sent, size, force=True)
    progress.finish()
    acked = sum(s[0] for s in stats.values())
    failed = sent - acked
    summary = {"topic": args.topic, "records": acked, "failed": failed,
               "partitions": {str(p): {"records": s[0], "first_offset": s[1], "last_offset": s[2]}
                              for p, s in sorted(stats.items())}}
    if args.json:
        emit(args, summary, [], [])
    elif sys.stderr.isatty() or args.progress:
        sys.stderr.write(f"produced {acked:,} records to {args.topic}" + (f", {failed:,} failed" if failed else "")
                         + "\n")
    if failures:
        raise ToolError(f"{failed:,} of {sent:,} records failed; first error: {failures[0]}")
    return 130 if interrupted else 0
