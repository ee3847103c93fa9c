"""``kafkalite groups``: kafka-consumer-groups.sh's options, on the AdminClient.

    kafkalite groups --list [--state] [--type [classic,consumer,share]]
    kafkalite groups --describe --group G [--group G2 | --all-groups] [--offsets | --members [--verbose] | --state]
    kafkalite groups --reset-offsets --group G (--topic T[:P,P] ... | --all-topics)
                     (--to-earliest | --to-latest | --to-current | --to-offset N | --shift-by N |
                      --to-datetime ISO | --by-duration PnDTnHnMnS | --from-file CSV)
                     [--dry-run | --execute] [--export]
    kafkalite groups --delete --group G [--group G2 | --all-groups]
    kafkalite groups --delete-offsets --group G --topic T [--topic T2]     (share groups)

Kafka's semantics:

- --describe lists, per partition the group has a committed offset for or a member is assigned:
  CURRENT-OFFSET (committed), LOG-END-OFFSET (the partition's end: ListOffsets latest, the high watermark) and
  LAG = end - committed ("-" where nothing is committed), with the member that owns it. A group with no
  members says so; an unknown group is an error (``Consumer group 'g' does not exist.``).
- --reset-offsets works only on an inactive group (Empty, or not existing yet): otherwise it fails with
  ``Assignments can only be reset if the group 'g' is inactive, but the current state is Stable.`` and
  changes nothing. Targets outside [earliest, latest] (from --to-offset or --shift-by) are clamped to that
  range, with a warning; --to-datetime/--by-duration pick the first offset at or after the time (the end when
  there is none). Without --execute nothing is changed (dry run, the default, as in Kafka) and the plan is
  printed: GROUP TOPIC PARTITION NEW-OFFSET (``--export``: CSV lines topic,partition,offset, which --from-file
  reads back; its targets are clamped like --to-offset). --all-topics means the topics the group has
  committed offsets for.
- --delete removes groups with no members; a group with members fails with NON_EMPTY_GROUP.
- Share groups (KIP-932) are not consumer groups: ``--list`` shows them only when ``--type`` names ``share``;
  --describe / --delete / --reset-offsets / --delete-offsets of a share group print what ``kafka-share-groups.sh`` prints
  (:mod:`kafkalite.tools.sharegroups`, on the project's codec: confluent-kafka has no share-group admin API).

``--json`` shapes: --list ``[{"group", "state", "type"}]``; --describe ``[{"group", "state", "type", "coordinator",
"assignor", "members": [{"member_id", "client_id", "host", "group_instance_id", "assignment": [[topic, p]]}],
"offsets": [{"topic", "partition", "current_offset", "log_end_offset", "lag", "member_id"}]}]``;
--reset-offsets ``[{"group", "topic", "partition", "new_offset"}]`` (plus ``"executed": bool`` at top level:
``{"executed", "offsets"}``); --delete ``{"deleted": [...], "errors": {group: message}}``.
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from kafkalite.tools import sharegroups
from kafkalite.tools.common import (
    ToolError,
    add_connection_options,
    admin,
    emit,
    parse_datetime_ms,
    parse_duration_ms,
    result,
    run_tool,
    timeout_s,
    usage,
)

STATE_NAMES = {0: "Unknown", 1: "PreparingRebalance", 2: "CompletingRebalance", 3: "Stable", 4: "Dead",
               5: "Empty", 6: "Assigning", 7: "Reconciling"}   # 6, 7: KIP-848 consumer groups' states
TYPE_NAMES = {0: "Unknown", 1: "Consumer", 2: "Classic"}      # ListGroups v5 GroupType, as Kafka prints it
NO_OFFSET = -1001   # librdkafka's OFFSET_INVALID: no committed offset


def configure(p: argparse.ArgumentParser) -> None:
    add_connection_options(p, verbose=False)   # --verbose: more columns, as kafka-consumer-groups'
    action = p.add_mutually_exclusive_group(required=True)
    for name, help_ in (("list", "list groups"), ("describe", "describe groups: offsets, lag, members"),
                        ("reset-offsets", "reset a group's committed offsets"), ("delete", "delete groups"),
                        ("delete-offsets", "delete a share group's offsets (delivery state) of whole topics")):
        action.add_argument(f"--{name}", dest="action", action="store_const", const=name, help=help_)
    p.add_argument("--group", action="append", default=[], help="group id (repeatable)")
    p.add_argument("--all-groups", action="store_true", help="every group (--describe, --delete)")
    view = p.add_mutually_exclusive_group()
    view.add_argument("--offsets", action="store_true", help="--describe: offsets per partition (the default)")
    view.add_argument("--members", action="store_true", help="--describe: members instead of offsets")
    view.add_argument("--state", action="store_true", help="--list/--describe: state of each group")
    p.add_argument("--type", nargs="?", const="", default=None, metavar="classic,consumer,share",
                   help="--list: type of each group (Classic, Consumer for KIP-848 groups, Share); with a "
                        "list, only groups of those types (share groups are listed only when named)")
    p.add_argument("--verbose", action="store_true", help="--describe --members: each member's assignment")
    p.add_argument("--topic", action="append", default=[], metavar="T[:P,P]",
                   help="--reset-offsets: a topic, optionally with partitions; --delete-offsets: a topic "
                        "(repeatable)")
    p.add_argument("--all-topics", action="store_true", help="--reset-offsets: every topic the group has offsets for")
    to = p.add_mutually_exclusive_group()
    to.add_argument("--to-earliest", action="store_true", help="--reset-offsets: to each partition's first offset")
    to.add_argument("--to-latest", action="store_true", help="--reset-offsets: to each partition's end")
    to.add_argument("--to-current", action="store_true",
                    help="--reset-offsets: to the committed offsets (for --export, or to clamp them)")
    to.add_argument("--to-offset", type=int, metavar="N", help="--reset-offsets: to offset N (clamped to the log)")
    to.add_argument("--shift-by", type=int, metavar="N",
                    help="--reset-offsets: the committed offset plus N (negative: back; clamped to the log)")
    to.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss",
                    help="--reset-offsets: to the first record at or after this time (no zone: local time)")
    to.add_argument("--by-duration", metavar="PnDTnHnMnS",
                    help="--reset-offsets: to the first record at or after now minus this ISO-8601 duration")
    to.add_argument("--from-file", metavar="CSV", help="offsets from lines topic,partition,offset (as --export writes)")
    p.add_argument("--export", action="store_true", help="--reset-offsets: print the plan as CSV lines "
                                                         "topic,partition,offset (for --from-file)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="show the new offsets only (the default)")
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")


def run(args: argparse.Namespace) -> int:
    return run_tool("groups", _run, args)


def _run(args: argparse.Namespace) -> int:
    if args.action in ("describe", "delete") and not (args.group or args.all_groups):
        usage(f"--{args.action} needs --group or --all-groups")
    if args.action == "reset-offsets":
        if len(args.group) != 1:
            usage("--reset-offsets needs exactly one --group")
        if args.from_file is not None:
            if args.topic or args.all_topics:
                usage("--from-file names its partitions; leave out --topic and --all-topics")
        elif bool(args.topic) == bool(args.all_topics):
            usage("--reset-offsets needs --topic or --all-topics (one of them)")
        if not any(getattr(args, k) not in (None, False) for k in
                   ("to_earliest", "to_latest", "to_current", "to_offset", "shift_by", "to_datetime",
                    "by_duration", "from_file")):
            usage("--reset-offsets needs one of --to-earliest, --to-latest, --to-current, --to-offset, "
                  "--shift-by, --to-datetime, --by-duration, --from-file")
    elif args.action == "delete-offsets":
        if len(args.group) != 1 or args.all_groups:
            usage("--delete-offsets needs exactly one --group")
        if not args.topic:
            usage("--delete-offsets needs --topic")
        if any(":" in t for t in args.topic):
            usage("--delete-offsets deletes whole topics: --topic takes a topic name")
        if args.all_topics or args.execute or args.dry_run or args.export:
            usage("--all-topics, --dry-run, --execute and --export are options of --reset-offsets")
    elif args.topic or args.all_topics or args.execute or args.dry_run or args.export:
        usage("--topic, --all-topics, --dry-run, --execute and --export are options of --reset-offsets")
    if args.type and args.action != "list":
        usage("--type is an option of --list")
    client = admin(args)
    try:
        return int(globals()["_" + args.action.replace("-", "_")](client, args) or 0)
    finally:
        sharegroups.close(args)


def _state(value: Any) -> str:
    return STATE_NAMES.get(getattr(value, "value", value), str(value))


def _type(value: Any) -> str:
    return TYPE_NAMES.get(getattr(value, "value", value), str(value))


def _listing(client: Any, args: argparse.Namespace) -> list[tuple[str, str, str]]:
    """(group, state, type) of the consumer groups: classic and KIP-848 consumer groups (share groups are
    not consumer groups; Kafka lists them with kafka-share-groups)."""
    res = result(client.list_consumer_groups(request_timeout=timeout_s(args)), timeout_s(args), "list groups")
    return sorted((g.group_id, _state(g.state), _type(getattr(g, "type", 0))) for g in res.valid)


def _list(client: Any, args: argparse.Namespace) -> int:
    types = {t.strip().lower() for t in (args.type or "").split(",") if t.strip()}
    if types - {"classic", "consumer", "share"}:
        usage(f"--type {args.type!r}: the types are classic, consumer and share")
    groups = [g for g in _listing(client, args) if not types or g[2].lower() in types]
    if "share" in types:
        groups = sorted(groups + [(g, s, "Share") for g, s in sharegroups.listing(args)])
    data = [{"group": g, "state": s, "type": t} for g, s, t in groups]
    headers = ["GROUP"] + (["TYPE"] if args.type is not None else []) + (["STATE"] if args.state else [])
    rows = [[g] + ([t] if args.type is not None else []) + ([s] if args.state else []) for g, s, t in groups]
    emit(args, data, headers if len(headers) > 1 else [], rows)
    return 0


def _group_ids(client: Any, args: argparse.Namespace) -> list[str]:
    return [g for g, _, _ in _listing(client, args)] if args.all_groups else list(dict.fromkeys(args.group))


def _committed(client: Any, group: str, t: float) -> dict[tuple[str, int], int]:
    from confluent_kafka import ConsumerGroupTopicPartitions

    fut = client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=t)[group]
    res = result(fut, t, f"committed offsets of group {group}")
    return {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions if tp.offset != NO_OFFSET}


def _list_offsets(client: Any, tps: list[tuple[str, int]], spec: Any, t: float) -> dict[tuple[str, int], int]:
    from confluent_kafka import TopicPartition

    if not tps:
        return {}
    futures = client.list_offsets({TopicPartition(tp, p): spec for tp, p in tps}, request_timeout=t)
    return {(tp.topic, tp.partition): result(f, t, f"offsets of {tp.topic}-{tp.partition}").offset
            for tp, f in futures.items()}


def _describe_one(client: Any, group: str, t: float) -> dict[str, Any]:
    from confluent_kafka.admin import OffsetSpec

    desc = result(client.describe_consumer_groups([group], request_timeout=t)[group], t, f"describe group {group}")
    state = _state(desc.state)
    committed = _committed(client, group, t)
    owner: dict[tuple[str, int], Any] = {}
    members = []
    for m in desc.members:
        tps = sorted((tp.topic, tp.partition) for tp in (m.assignment.topic_partitions if m.assignment else []))
        for key in tps:
            owner[key] = m
        members.append({"member_id": m.member_id, "client_id": m.client_id, "host": m.host,
                        "group_instance_id": m.group_instance_id, "assignment": [list(k) for k in tps]})
    keys = sorted(set(committed) | set(owner))
    ends = _list_offsets(client, keys, OffsetSpec.latest(), t)
    offsets = []
    for key in keys:
        cur = committed.get(key)
        end = ends.get(key)
        m = owner.get(key)
        offsets.append({"topic": key[0], "partition": key[1], "current_offset": cur, "log_end_offset": end,
                        "lag": end - cur if cur is not None and end is not None else None,
                        "member_id": m.member_id if m else None, "host": m.host if m else None,
                        "client_id": m.client_id if m else None})
    coord = desc.coordinator
    return {"group": group, "state": state, "type": _type(getattr(desc, "type", 0)), "coordinator": f"{coord.host}:{coord.port} ({coord.id})" if coord else None,
            "assignor": desc.partition_assignor, "members": members, "offsets": offsets}


def _describe(client: Any, args: argparse.Namespace) -> int:
    t = timeout_s(args)
    groups = _group_ids(client, args)
    shares = sharegroups.share_ids(args, groups) if args.group else []
    data = [_describe_one(client, g, t) for g in groups if g not in shares]
    share_data = [sharegroups.describe_one(args, g) for g in shares]
    missing = [d["group"] for d in data if d["state"] == "Dead" and not d["offsets"]]
    data = [d for d in data if d["group"] not in missing]
    if args.json:
        emit(args, data + share_data, [], [])
    elif not data:
        pass
    elif args.state:
        emit(args, None, ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"],
             [[d["group"], d["coordinator"], d["assignor"] or None, d["state"], len(d["members"])] for d in data])
    elif args.members:
        headers = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"] + (["ASSIGNMENT"] if args.verbose else [])
        emit(args, None, headers,
             [[d["group"], m["member_id"], m["host"], m["client_id"], len(m["assignment"])]
              + ([_assignment(m["assignment"])] if args.verbose else []) for d in data for m in d["members"]])
    else:
        rows = []
        for d in data:
            if not d["members"]:
                sys.stderr.write(f"Consumer group '{d['group']}' has no active members.\n")
            rows.extend([d["group"], o["topic"], o["partition"], o["current_offset"], o["log_end_offset"], o["lag"],
                         o["member_id"], o["host"], o["client_id"]] for o in d["offsets"])
        emit(args, None, ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
                          "HOST", "CLIENT-ID"], rows)
    if not args.json:
        sharegroups.print_describe(args, share_data)
    if missing:
        raise ToolError("\n".join(f"Consumer group '{g}' does not exist." for g in missing))
    return 0


def _assignment(tps: list[list[Any]]) -> str:
    """Kafka's ASSIGNMENT column: ``t1(0,1), t2(3)``, or ``-``."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in tps:
        by_topic.setdefault(topic, []).append(partition)
    return ", ".join(f"{t}({','.join(map(str, ps))})" for t, ps in sorted(by_topic.items())) or "-"


def _targets(client: Any, args: argparse.Namespace, committed: dict[tuple[str, int], int]) -> list[tuple[str, int]]:
    """The partitions --topic / --all-topics select."""
    if args.all_topics:
        return sorted(committed)
    md = client.list_topics(timeout=timeout_s(args)).topics
    out: list[tuple[str, int]] = []
    for spec in args.topic:
        name, _, parts = spec.partition(":")
        if name not in md or md[name].error is not None:
            raise ToolError(f"Topic '{name}' does not exist")
        if parts:
            try:
                wanted = [int(p) for p in parts.split(",") if p.strip()]
            except ValueError:
                usage(f"--topic {spec!r}: expected TOPIC or TOPIC:P,P")
            bad = [p for p in wanted if p not in md[name].partitions]
            if bad:
                raise ToolError(f"Topic '{name}' has no partition {bad[0]}")
        else:
            wanted = sorted(md[name].partitions)
        out.extend((name, p) for p in wanted)
    return sorted(set(out))


def _reset_offsets(client: Any, args: argparse.Namespace) -> int:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    t = timeout_s(args)
    group = args.group[0]
    if sharegroups.share_ids(args, [group]):
        return sharegroups.reset_offsets(args)
    desc = result(client.describe_consumer_groups([group], request_timeout=t)[group], t, f"describe group {group}")
    state = _state(desc.state)
    if state not in ("Empty", "Dead"):
        raise ToolError(f"Assignments can only be reset if the group '{group}' is inactive, but the current "
                        f"state is {state}.")
    committed = _committed(client, group, t)
    wanted = _read_plan(client, args, group) if args.from_file is not None else None
    tps = sorted(wanted) if wanted is not None else _targets(client, args, committed)
    earliest = _list_offsets(client, tps, OffsetSpec.earliest(), t)
    latest = _list_offsets(client, tps, OffsetSpec.latest(), t)
    stamp = None
    if args.to_datetime is not None:
        stamp = parse_datetime_ms(args.to_datetime)
    elif args.by_duration is not None:
        stamp = int(time.time() * 1000) - parse_duration_ms(args.by_duration)
    by_time = _list_offsets(client, tps, OffsetSpec.for_timestamp(stamp), t) if stamp is not None else {}
    plan: list[tuple[str, int, int]] = []
    for key in tps:
        lo, hi = earliest[key], latest[key]
        if args.to_earliest:
            new = lo
        elif args.to_latest:
            new = hi
        elif args.to_current:
            new = committed.get(key, hi)
        elif stamp is not None:
            new = by_time.get(key, -1)
            new = hi if new < 0 else new
        else:
            if args.shift_by is not None:
                if key not in committed:
                    raise ToolError(f"--shift-by: group '{group}' has no committed offset for {key[0]}-{key[1]}")
                new = committed[key] + args.shift_by
            elif wanted is not None:
                new = wanted[key]
            else:
                new = args.to_offset
            if new < lo:
                sys.stderr.write(f"New offset ({new}) is lower than earliest offset for topic partition "
                                 f"{key[0]}-{key[1]}. Value will be set to {lo}\n")
                new = lo
            elif new > hi:
                sys.stderr.write(f"New offset ({new}) is higher than latest offset for topic partition "
                                 f"{key[0]}-{key[1]}. Value will be set to {hi}\n")
                new = hi
        plan.append((key[0], key[1], new))
    if args.execute and plan:
        req = ConsumerGroupTopicPartitions(group, [TopicPartition(tp, p, o) for tp, p, o in plan])
        fut = client.alter_consumer_group_offsets([req], request_timeout=t)[group]
        res = result(fut, t, f"commit offsets of group {group}")
        errors = [f"{tp.topic}-{tp.partition}: {tp.error}" for tp in res.topic_partitions if tp.error]
        if errors:
            raise ToolError(f"offsets of group {group} not reset: " + "; ".join(errors))
    elif not args.dry_run and not args.execute:
        sys.stderr.write("WARN: No action will be performed as the --execute option is missing. "
                         "Add --execute to reset the offsets; --dry-run shows the plan without this warning.\n")
    if args.export and not args.json:
        sys.stdout.write("".join(f"{tp},{p},{o}\n" for tp, p, o in plan))
        return 0
    emit(args, {"executed": bool(args.execute),
                "offsets": [{"group": group, "topic": tp, "partition": p, "new_offset": o} for tp, p, o in plan]},
         ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], [[group, tp, p, o] for tp, p, o in plan])
    return 0


def _read_plan(client: Any, args: argparse.Namespace, group: str) -> dict[tuple[str, int], int]:
    """--from-file: lines ``topic,partition,offset`` (or ``group,topic,partition,offset``, this group's
    lines only), as Kafka's --export writes them; blank lines are skipped."""
    try:
        with open(args.from_file, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        usage(f"--from-file {args.from_file}: {exc.strerror or exc}")
    plan: dict[tuple[str, int], int] = {}
    for n, line in enumerate(lines, 1):
        fields = [f.strip() for f in line.split(",")]
        if fields == [""]:
            continue
        if len(fields) == 4:
            if fields[0] != group:
                continue
            fields = fields[1:]
        try:
            topic, partition, offset = fields[0], int(fields[1]), int(fields[2])
            if not topic or partition < 0:
                raise ValueError
        except (ValueError, IndexError):
            usage(f"--from-file {args.from_file} line {n}: expected topic,partition,offset, got {line!r}")
        plan[(topic, partition)] = offset
    md = client.list_topics(timeout=timeout_s(args)).topics
    for topic, partition in plan:
        if topic not in md or partition not in md[topic].partitions:
            raise ToolError(f"--from-file: {topic}-{partition} does not exist")
    return plan


def _delete_offsets(client: Any, args: argparse.Namespace) -> int:
    """Share groups only (kafka-share-groups.sh --delete-offsets): consumer groups' committed offsets are not
    deleted by this tool."""
    return sharegroups.delete_offsets(args)


def _delete(client: Any, args: argparse.Namespace) -> int:
    t = timeout_s(args)
    groups = _group_ids(client, args)
    shares = sharegroups.share_ids(args, groups) if args.group else []
    errors: dict[str, str] = sharegroups.delete(args, shares)
    futures = client.delete_consumer_groups([g for g in groups if g not in shares], request_timeout=t) \
        if len(groups) > len(shares) else {}
    for g, fut in futures.items():
        try:
            result(fut, t, f"delete group {g}")
        except ToolError as exc:
            errors[g] = str(exc).split(": ", 1)[1]
    deleted = [g for g in groups if g not in errors]
    if args.json:
        emit(args, {"deleted": deleted, "errors": errors}, [], [])
    elif deleted:
        sys.stdout.write("Deletion of requested consumer groups (" + ", ".join(f"'{g}'" for g in deleted)
                         + ") was successful.\n")
    if errors:
        raise ToolError("Deletion of some consumer groups failed:\n" + "\n".join(
            f"* Group '{g}' could not be deleted due to: {msg}" for g, msg in errors.items()))
    return 0
