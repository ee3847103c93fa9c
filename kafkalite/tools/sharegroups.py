"""Share groups (KIP-932) in ``kafkalite groups``, as Kafka 4.x's ``kafka-share-groups.sh`` shows them.

``kafkalite groups`` routes a group that ListGroups reports with type ``share`` here (see
:mod:`kafkalite.client.shareadmin` for the requests):

- ``--list --type share`` (or a list naming ``share``): GROUP, TYPE ``Share`` (and STATE with --state);
- ``--describe``: per share-partition GROUP, TOPIC, PARTITION, START-OFFSET, LAG (``--verbose``: LEADER-EPOCH
  before START-OFFSET), as ShareGroupCommand prints them; START-OFFSET is the share-partition start offset
  (the first record whose delivery is not complete), LAG the records from there to the high watermark not yet
  acknowledged (DescribeShareGroupOffsets v1, KIP-1226; ``-`` when the broker does not know). A group without
  share-partition state says ``Share group 'g' has no offset information.``, an empty one ``... has no active
  members.`` (stderr). ``--members``: GROUP, CONSUMER-ID, HOST, CLIENT-ID, #PARTITIONS (+ MEMBER-EPOCH with
  --verbose), ASSIGNMENT as ``t:0,1;u:2``; ``--state``: GROUP, COORDINATOR (ID), STATE, #MEMBERS (+
  GROUP-EPOCH, ASSIGNMENT-EPOCH with --verbose).
- ``--delete``: DeleteGroups; a group with members fails with NON_EMPTY_GROUP.
- ``--delete-offsets --group G --topic T [--topic T2]`` (kafka-share-groups.sh --delete-offsets):
  DeleteShareGroupOffsets, which forgets the group's delivery state of whole topics (its next member starts
  them again from ``share.auto.offset.reset``). Only for a group without members: NON_EMPTY_GROUP
  otherwise, GROUP_ID_NOT_FOUND for no such share group — both end the command (exit 1) with the error's
  name and Kafka's message. Otherwise a TOPIC STATUS table: ``Successful`` or ``Error: <message>`` per topic
  (UNKNOWN_TOPIC_OR_PARTITION, TOPIC_AUTHORIZATION_FAILED), exit 1 when any topic failed.
- ``--reset-offsets``: Kafka's rule, only for an inactive group (Empty, or none yet): ``Share group 'g' is not
  empty.`` otherwise; --to-earliest/--to-latest/--to-current/--to-offset/--to-datetime/--by-duration (targets
  clamped to [earliest, latest] with a warning); dry run unless --execute, which sends AlterShareGroupOffsets.

``--json`` of --describe: ``{"group", "type": "Share", "state", "coordinator", "assignor", "group_epoch",
"assignment_epoch", "members": [{"member_id", "client_id", "host", "rack", "member_epoch", "subscribed_topics",
"assignment": [[topic, p]]}], "offsets": [{"topic", "partition", "start_offset", "leader_epoch", "lag",
"log_end_offset"}]}`` (log_end_offset: ListOffsets latest, the high watermark); of --delete-offsets
``{"group", "topics": [{"topic", "status", "error"}]}`` (status ``Successful`` or ``Error: ...``, error the
code's name or null).
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable
from typing import Any

from kafkalite.client.shareadmin import EARLIEST, LATEST, ShareAdmin
from kafkalite.client.wire import Security, WireError, error_name
from kafkalite.tools.common import ToolError, client_config, emit, parse_datetime_ms, parse_duration_ms, usage

#: Kafka's messages (``Errors``) for a DeleteShareGroupOffsets error the broker sent without one
_MESSAGES = {68: "The group is not empty.", 69: "The group id does not exist.", 24: "The configured groupId is invalid.",
             30: "Group authorization failed.", 3: "This server does not host this topic-partition.",
             29: "Topic authorization failed."}


def admin(args: argparse.Namespace) -> ShareAdmin:
    """The command's :class:`ShareAdmin` (one per invocation, kept on ``args``), from --bootstrap-server and
    --command-config (security.protocol, sasl.*, ssl.* as the AdminClient reads them)."""
    a = getattr(args, "share_admin", None)
    if a is None:
        try:
            a = ShareAdmin(args.bootstrap_server, timeout=max(args.request_timeout_ms, 1) / 1000,
                           security=Security.from_params(client_config(args)))
        except ValueError as exc:
            usage(str(exc))
        args.share_admin = a
    return a


def close(args: argparse.Namespace) -> None:
    a = getattr(args, "share_admin", None)
    if a is not None:
        a.close()
        args.share_admin = None


def _wire(what: str, fn: Any, *a: Any) -> Any:
    try:
        return fn(*a)
    except WireError as exc:
        raise ToolError(str(exc)) from None
    except OSError as exc:
        raise ToolError(f"{what}: {exc}") from None


def listing(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(group, state) of every share group."""
    return _wire("list share groups", admin(args).list_groups)


def share_ids(args: argparse.Namespace, groups: Iterable[str]) -> list[str]:
    """Those of ``groups`` that are share groups."""
    wanted = list(groups)
    if not wanted:
        return []
    try:
        known = {g for g, _ in admin(args).list_groups()}
    except (ToolError, WireError, OSError) as exc:
        # a broker without ListGroups v5 (before KIP-848) or settings the wire client cannot speak (e.g.
        # OAUTHBEARER): the groups are treated as consumer groups, as before share groups were looked up
        sys.stderr.write(f"WARN: share groups not looked up ({exc}); describing consumer groups only\n")
        return []
    return [g for g in wanted if g in known]


def _assignment(tps: list[list[Any]]) -> str:
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    return ";".join(f"{t}:{','.join(map(str, sorted(ps)))}" for t, ps in sorted(by_topic.items()))


def describe_one(args: argparse.Namespace, group: str) -> dict[str, Any]:
    a = admin(args)
    d, coordinator = _wire(f"describe share group {group}", a.describe, group)
    if d.error_code:
        if d.error_code == 69:   # GROUP_ID_NOT_FOUND (deleted since it was listed)
            raise ToolError(f"Share group '{group}' does not exist.")
        raise ToolError(f"describe share group {group}: {error_name(d.error_code)}: {d.error_message}")
    members = []
    for m in sorted(d.members, key=lambda m: m.member_id):
        tps = sorted((tp.topic_name, p) for tp in m.assignment.topic_partitions for p in tp.partitions)
        members.append({"member_id": m.member_id, "client_id": m.client_id, "host": m.client_host,
                        "rack": m.rack_id, "member_epoch": m.member_epoch,
                        "subscribed_topics": sorted(m.subscribed_topic_names), "assignment": [list(k) for k in tps]})
    starts = _wire(f"offsets of share group {group}", a.start_offsets, group)
    ends = _wire(f"end offsets of share group {group}", a.list_offsets, sorted(starts), LATEST)
    offsets = []
    for (t, p), (start, epoch, lag) in sorted(starts.items()):
        offsets.append({"topic": t, "partition": p, "start_offset": start if start >= 0 else None,
                        "leader_epoch": epoch if epoch >= 0 else None, "lag": lag if lag >= 0 else None,
                        "log_end_offset": ends.get((t, p))})
    return {"group": group, "type": "Share", "state": d.group_state, "coordinator": coordinator,
            "assignor": d.assignor_name, "group_epoch": d.group_epoch, "assignment_epoch": d.assignment_epoch,
            "members": members, "offsets": offsets}


def print_describe(args: argparse.Namespace, data: list[dict[str, Any]]) -> None:
    """The tables of ``kafka-share-groups.sh --describe`` (offsets, --members or --state)."""
    if not data:
        return
    v = args.verbose
    if args.state:
        emit(args, None, ["GROUP", "COORDINATOR (ID)", "STATE"] + (["GROUP-EPOCH", "ASSIGNMENT-EPOCH"] if v else [])
             + ["#MEMBERS"], [[d["group"], d["coordinator"], d["state"]]
                              + ([d["group_epoch"], d["assignment_epoch"]] if v else []) + [len(d["members"])]
                              for d in data])
        return
    rows = []
    for d in data:
        if d["state"] == "Empty":
            sys.stderr.write(f"Share group '{d['group']}' has no active members.\n")
        if args.members:
            rows.extend([d["group"], m["member_id"], m["host"], m["client_id"], len(m["assignment"])]
                        + ([m["member_epoch"]] if v else []) + [_assignment(m["assignment"]) or None]
                        for m in d["members"])
        elif not d["offsets"]:
            sys.stderr.write(f"Share group '{d['group']}' has no offset information.\n")
        else:
            rows.extend([d["group"], o["topic"], o["partition"]] + ([o["leader_epoch"]] if v else [])
                        + [o["start_offset"], o["lag"]] for o in d["offsets"])
    if args.members:
        emit(args, None, ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"] + (["MEMBER-EPOCH"] if v else [])
             + ["ASSIGNMENT"], rows)
    elif rows:
        emit(args, None, ["GROUP", "TOPIC", "PARTITION"] + (["LEADER-EPOCH"] if v else []) + ["START-OFFSET", "LAG"],
             rows)


def delete(args: argparse.Namespace, groups: list[str]) -> dict[str, str]:
    """DeleteGroups for each share group: ``{group: error}`` of those that failed."""
    errors = {}
    for g in groups:
        code = _wire(f"delete share group {g}", admin(args).delete, g)
        if code:
            errors[g] = error_name(code) + (": The group is not empty." if code == 68 else "")
    return errors


def _targets(args: argparse.Namespace, a: ShareAdmin, current: dict[tuple[str, int], int]) -> list[tuple[str, int]]:
    if args.all_topics:
        return sorted(current)
    names = [spec.partition(":")[0] for spec in args.topic]
    parts = _wire("topic metadata", a.partitions, names)
    out = []
    for spec in args.topic:
        name, _, ps = spec.partition(":")
        if name not in parts:
            raise ToolError(f"Topic '{name}' does not exist")
        try:
            wanted = [int(p) for p in ps.split(",") if p.strip()] if ps else parts[name]
        except ValueError:
            usage(f"--topic {spec!r}: expected TOPIC or TOPIC:P,P")
        bad = [p for p in wanted if p not in parts[name]]
        if bad:
            raise ToolError(f"Topic '{name}' has no partition {bad[0]}")
        out.extend((name, p) for p in wanted)
    return sorted(set(out))


def reset_offsets(args: argparse.Namespace) -> int:
    """--reset-offsets of a share group (AlterShareGroupOffsets with --execute)."""
    if args.shift_by is not None or args.from_file is not None:
        usage("--shift-by and --from-file are not supported for share groups")
    group = args.group[0]
    a = admin(args)
    d, _ = _wire(f"describe share group {group}", a.describe, group)
    if d.error_code == 0 and d.group_state not in ("Empty", "Dead"):
        raise ToolError(f"Share group '{group}' is not empty.")
    current = {k: v[0] for k, v in _wire(f"offsets of share group {group}", a.start_offsets, group).items()
               if v[0] >= 0} if d.error_code == 0 else {}
    tps = _targets(args, a, current)
    lo = _wire("earliest offsets", a.list_offsets, tps, EARLIEST)
    hi = _wire("latest offsets", a.list_offsets, tps, LATEST)
    stamp = None
    if args.to_datetime is not None:
        stamp = parse_datetime_ms(args.to_datetime)
    elif args.by_duration is not None:
        stamp = int(time.time() * 1000) - parse_duration_ms(args.by_duration)
    by_time = _wire("offsets by time", a.list_offsets, tps, stamp) if stamp is not None else {}
    plan = []
    for key in tps:
        if args.to_earliest:
            new = lo[key]
        elif args.to_latest:
            new = hi[key]
        elif args.to_current:
            new = current.get(key, hi[key])
        elif stamp is not None:
            new = by_time[key] if by_time[key] >= 0 else hi[key]
        else:
            new = args.to_offset
            if not lo[key] <= new <= hi[key]:
                clamp = lo[key] if new < lo[key] else hi[key]
                sys.stderr.write(f"New offset ({new}) is {'lower than earliest' if new < lo[key] else 'higher than latest'}"
                                 f" offset for topic partition {key[0]}-{key[1]}. Value will be set to {clamp}\n")
                new = clamp
        plan.append((key[0], key[1], new))
    if args.execute and plan:
        errors = _wire(f"alter offsets of share group {group}", a.alter_offsets, group,
                       {(t, p): o for t, p, o in plan})
        if errors:
            raise ToolError(f"offsets of share group {group} not reset: " +
                            "; ".join(f"{t}-{p}: {e}" for (t, p), e in sorted(errors.items())))
    elif not args.dry_run and not args.execute:
        sys.stderr.write("WARN: No action will be performed as the --execute option is missing. "
                         "Add --execute to reset the offsets; --dry-run shows the plan without this warning.\n")
    if args.export and not args.json:
        sys.stdout.write("".join(f"{t},{p},{o}\n" for t, p, o in plan))
        return 0
    emit(args, {"executed": bool(args.execute),
                "offsets": [{"group": group, "topic": t, "partition": p, "new_offset": o} for t, p, o in plan]},
         ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], [[group, t, p, o] for t, p, o in plan])
    return 0


def delete_offsets(args: argparse.Namespace) -> int:
    """--delete-offsets of a share group: DeleteShareGroupOffsets for the named topics."""
    group = args.group[0]
    topics = sorted(set(args.topic))
    code, message, per_topic = _wire(f"delete offsets of share group {group}", admin(args).delete_offsets,
                                     group, topics)
    if code == 69:
        raise ToolError(f"GROUP_ID_NOT_FOUND: Share group '{group}' does not exist.")
    if code:
        raise ToolError(f"{error_name(code)}: {message or _MESSAGES.get(code, 'delete offsets failed')}")
    rows = []
    for t in topics:
        tcode, tmsg = per_topic.get(t, (0, None))
        status = f"Error: {tmsg or _MESSAGES.get(tcode, error_name(tcode))}" if tcode else "Successful"
        rows.append({"topic": t, "status": status, "error": error_name(tcode) if tcode else None})
    emit(args, {"group": group, "topics": rows}, ["TOPIC", "STATUS"], [[r["topic"], r["status"]] for r in rows])
    failed = [r["topic"] for r in rows if r["error"]]
    if failed:
        raise ToolError(f"offsets of share group '{group}' not deleted for: " + ", ".join(failed))
    return 0
