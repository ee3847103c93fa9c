"""``kafkalite topics``: kafka-topics.sh's options, on the AdminClient.

    kafkalite topics --list [--topic REGEX] [--exclude-internal]
    kafkalite topics --describe [--topic REGEX] [--exclude-internal]      (partitions, offsets, overrides)
    kafkalite topics --create --topic T [--partitions N] [--replication-factor R] [--config k=v ...]
                     [--if-not-exists]
    kafkalite topics --delete --topic T[,T2] [--if-exists]
    kafkalite topics --alter --topic T --partitions N                     (partitions only grow, as in Kafka)

As in kafka-topics, ``--topic`` of --list/--describe is a regular expression matched against the whole name,
and one that matches nothing is an error for --describe/--delete/--alter (``Topic 'x' does not exist as
expected``) unless ``--if-exists``. ``--config`` on --create is a topic config (Kafka's names, validated by the
broker: INVALID_CONFIG). Changing a topic's configs is ``kafkalite configs --alter --topic T``.

``--json``: --list gives ``["name", ...]``; --describe gives ``[{"name", "internal", "partitions":
[{"partition", "leader", "replicas", "isr", "earliest", "latest"}], "configs": {name: value}}]`` where
``configs`` are the topic's overrides and ``earliest``/``latest`` its log start and end offsets.
"""
from __future__ import annotations

import argparse
import contextlib
import re
import sys
from typing import Any

from kafkalite.tools.common import (
    ToolError,
    add_connection_options,
    admin,
    emit,
    result,
    run_tool,
    split_kv,
    timeout_s,
    usage,
)


def configure(p: argparse.ArgumentParser) -> None:
    add_connection_options(p)
    action = p.add_mutually_exclusive_group(required=True)
    for name in ("list", "describe", "create", "delete", "alter"):
        action.add_argument(f"--{name}", dest="action", action="store_const", const=name,
                            help=f"{name} topics")
    p.add_argument("--topic", metavar="TOPIC", help="topic name (a regex for --list/--describe; "
                                                    "comma-separated names for --delete)")
    p.add_argument("--partitions", type=int, metavar="N", help="partition count (--create, --alter)")
    p.add_argument("--replication-factor", type=int, metavar="R",
                   help="replicas per partition (--create; kafkalite has one broker: 1)")
    p.add_argument("--config", action="append", default=[], metavar="K=V",
                   help="topic config for --create (repeatable, or k=v,k2=v2)")
    p.add_argument("--if-not-exists", action="store_true", help="--create: no error if it exists")
    p.add_argument("--if-exists", action="store_true", help="--delete/--alter: no error if it does not exist")
    p.add_argument("--exclude-internal", action="store_true", help="leave out __consumer_offsets etc.")


def run(args: argparse.Namespace) -> int:
    return run_tool("topics", _run, args)


def _run(args: argparse.Namespace) -> int:
    if args.action in ("create", "delete", "alter") and not args.topic:
        usage(f"--{args.action} needs --topic")
    if args.partitions is not None and args.partitions < 1:
        usage(f"--partitions {args.partitions}: must be at least 1")
    if args.action == "alter" and args.partitions is None:
        usage("--alter needs --partitions (topic configs are changed with `kafkalite configs --alter`)")
    if args.config and args.action != "create":
        usage("--config is for --create; use `kafkalite configs --alter --topic T --add-config k=v`")
    client = admin(args)
    return int(globals()[f"_{args.action}"](client, args) or 0)


def _matching(client: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Metadata of the topics ``--topic`` (a whole-name regex) selects, sorted by name."""
    md = client.list_topics(timeout=timeout_s(args))
    topics = md.topics
    if args.topic:
        try:
            rx = re.compile(args.topic)
        except re.error as exc:
            usage(f"--topic {args.topic!r}: not a regular expression: {exc}")
        topics = {n: t for n, t in topics.items() if n == args.topic or rx.fullmatch(n)}
    if args.exclude_internal:
        topics = {n: t for n, t in topics.items() if not n.startswith("__")}
    return dict(sorted(topics.items()))


def _list(client: Any, args: argparse.Namespace) -> int:
    names = list(_matching(client, args))
    emit(args, names, [], ([n] for n in names))
    return 0


def _describe(client: Any, args: argparse.Namespace) -> int:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import ConfigResource, OffsetSpec

    topics = _matching(client, args)
    if args.topic and not topics:
        raise ToolError(f"Topic '{args.topic}' does not exist as expected")
    t = timeout_s(args)
    tps = [TopicPartition(n, p) for n, md in topics.items() for p in md.partitions]
    offsets: dict[tuple[str, int], list[int]] = {}
    for spec, slot in ((OffsetSpec.earliest(), 0), (OffsetSpec.latest(), 1)):
        if not tps:
            break
        futures = client.list_offsets(dict.fromkeys(tps, spec), request_timeout=t)
        for tp, fut in futures.items():
            with contextlib.suppress(Exception):   # a partition that cannot answer shows '-'
                offsets.setdefault((tp.topic, tp.partition), [-1, -1])[slot] = fut.result(timeout=t).offset
    configs: dict[str, dict[str, str]] = {}
    resources = [ConfigResource("TOPIC", n) for n in topics]
    if resources:
        for res, fut in client.describe_configs(resources, request_timeout=t).items():
            entries = result(fut, t, f"describe configs of {res.name}")
            configs[res.name] = {k: e.value for k, e in sorted(entries.items())
                                 if getattr(e.source, "value", e.source) == 1}   # DYNAMIC_TOPIC_CONFIG: the topic's overrides
    data = []
    rows = []
    for name, md in topics.items():
        parts = []
        for pid, pm in sorted(md.partitions.items()):
            lo, hi = offsets.get((name, pid), [-1, -1])
            parts.append({"partition": pid, "leader": pm.leader, "replicas": list(pm.replicas),
                          "isr": list(pm.isrs), "earliest": lo if lo >= 0 else None,
                          "latest": hi if hi >= 0 else None})
            rows.append([name, pid, pm.leader, ",".join(map(str, pm.replicas)), ",".join(map(str, pm.isrs)),
                         parts[-1]["earliest"], parts[-1]["latest"]])
        data.append({"name": name, "internal": name.startswith("__"), "partitions": parts, "configs": configs.get(name, {})})
    if args.json:
        emit(args, data, [], [])
        return 0
    emit(args, data, ["TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR", "EARLIEST", "LATEST"], rows)
    overrides = [(d["name"], ",".join(f"{k}={v}" for k, v in d["configs"].items())) for d in data
                 if d["configs"]]
    if overrides:
        sys.stdout.write("\n")
        emit(args, None, ["TOPIC", "CONFIGS"], overrides)
    return 0


def _create(client: Any, args: argparse.Namespace) -> int:
    from confluent_kafka.admin import NewTopic

    configs = split_kv(args.config, "--config")
    new = NewTopic(args.topic, num_partitions=args.partitions if args.partitions is not None else -1,
                   replication_factor=args.replication_factor if args.replication_factor is not None else -1,
                   config=configs)
    t = timeout_s(args)
    try:
        result(client.create_topics([new], request_timeout=t, operation_timeout=t)[args.topic], t,
               f"create topic {args.topic}")
    except ToolError as exc:
        if args.if_not_exists and "TOPIC_ALREADY_EXISTS" in str(exc):
            return 0
        raise
    if args.json:
        emit(args, {"created": args.topic}, [], [])
    else:
        sys.stdout.write(f"Created topic {args.topic}.\n")
    return 0


def _delete(client: Any, args: argparse.Namespace) -> int:
    names = [n.strip() for n in args.topic.split(",") if n.strip()]
    existing = client.list_topics(timeout=timeout_s(args)).topics
    missing = [n for n in names if n not in existing]
    if missing and not args.if_exists:
        raise ToolError(f"Topic '{missing[0]}' does not exist as expected")
    names = [n for n in names if n in existing]
    t = timeout_s(args)
    futures = client.delete_topics(names, request_timeout=t, operation_timeout=t) if names else {}
    failed = []
    for name, fut in futures.items():
        try:
            result(fut, t, f"delete topic {name}")
        except ToolError as exc:
            failed.append(str(exc))
    if args.json:
        emit(args, {"deleted": [n for n in names if not any(f"topic {n}:" in f for f in failed)],
                    "errors": failed}, [], [])
    else:
        for name in names:
            if not any(f"topic {name}:" in f for f in failed):
                sys.stdout.write(f"Deleted topic {name}.\n")
    if failed:
        raise ToolError("\n".join(failed))
    return 0


def _alter(client: Any, args: argparse.Namespace) -> int:
    from confluent_kafka.admin import NewPartitions

    if args.topic not in client.list_topics(timeout=timeout_s(args)).topics:
        if args.if_exists:
            return 0
        raise ToolError(f"Topic '{args.topic}' does not exist as expected")
    t = timeout_s(args)
    futures = client.create_partitions([NewPartitions(args.topic, args.partitions)], request_timeout=t,
                                       operation_timeout=t)
    result(futures[args.topic], t, f"add partitions to {args.topic}")
    if args.json:
        emit(args, {"topic": args.topic, "partitions": args.partitions}, [], [])
    else:
        sys.stdout.write(f"Topic {args.topic} now has {args.partitions} partitions.\n")
    return 0
