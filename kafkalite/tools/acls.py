"""``kafkalite acls``: kafka-acls.sh's options, on confluent-kafka's AdminClient (CreateAcls / DescribeAcls /
DeleteAcls).

    kafkalite acls --add    (--allow-principal P | --deny-principal P)... [--allow-host H] [--deny-host H]
                            (--operation OP... | --producer [--transactional-id T] [--idempotent] |
                             --consumer --group G) RESOURCE...
    kafkalite acls --remove [--force] [principals, hosts, operations as for --add] [RESOURCE...]
    kafkalite acls --list   [--principal P] [RESOURCE...]
    RESOURCE: --topic T | --group G | --cluster | --transactional-id T (each may repeat), with
              --resource-pattern-type literal (default) | prefixed | match | any (match/any: --list, --remove)

As kafka-acls.sh (``AclCommand``): an operation is named as Kafka spells it (Read, Write, Create, Delete,
Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, All; any case, ``-``/``_``
ignored); --add without --operation means All; a principal's host defaults to ``*``; an --allow-host or
--deny-host without a principal of that kind is a usage error. --producer is WRITE, DESCRIBE, CREATE on the
topics (WRITE, DESCRIBE on the transactional ids; IDEMPOTENT_WRITE on the cluster with --idempotent);
--consumer is READ, DESCRIBE on the topics and READ on the groups. --remove asks for confirmation on stdin
unless --force; with no principal/operation it removes every ACL of the named resources. --list without a
resource lists every ACL. The cluster resource is Kafka's ``kafka-cluster`` (librdkafka calls its type
BROKER); delegation-token and user resources are not expressible in librdkafka's API.

Output: one row per ACL (RESOURCE-TYPE, NAME, PATTERN, PRINCIPAL, HOST, OPERATION, PERMISSION): those
created (--add), removed (--remove) or found (--list). ``--json``: a list of objects with those keys.
An empty --list is checked against DescribeCluster's authorized operations (librdkafka drops DescribeAcls'
error), so a principal that may not list ACLs gets CLUSTER_AUTHORIZATION_FAILED, not an empty table.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from kafkalite.tools.common import (
    ToolError,
    add_connection_options,
    admin,
    emit,
    result,
    run_tool,
    timeout_s,
    usage,
)

CLUSTER_NAME = "kafka-cluster"
OPERATIONS = ("read", "write", "create", "delete", "alter", "describe", "clusteraction", "describeconfigs",
              "alterconfigs", "idempotentwrite", "all")
_OP_ENUM = {"clusteraction": "CLUSTER_ACTION", "describeconfigs": "DESCRIBE_CONFIGS",
            "alterconfigs": "ALTER_CONFIGS", "idempotentwrite": "IDEMPOTENT_WRITE"}
HEADERS = ["RESOURCE-TYPE", "NAME", "PATTERN", "PRINCIPAL", "HOST", "OPERATION", "PERMISSION"]


def configure(p: argparse.ArgumentParser) -> None:
    add_connection_options(p)
    action = p.add_mutually_exclusive_group(required=True)
    for name, help_ in (("add", "create ACLs"), ("remove", "delete ACLs (asks first unless --force)"),
                        ("list", "show ACLs (every one, or those of the named resources)")):
        action.add_argument(f"--{name}", dest="action", action="store_const", const=name, help=help_)
    p.add_argument("--allow-principal", action="append", default=[], metavar="P",
                   help="a principal the ACLs allow, e.g. User:alice (repeatable)")
    p.add_argument("--deny-principal", action="append", default=[], metavar="P",
                   help="a principal the ACLs deny, e.g. User:mallory (repeatable)")
    p.add_argument("--principal", action="append", default=[], metavar="P", help="--list: only these principals")
    p.add_argument("--allow-host", action="append", default=[], metavar="H", help="default * (any host)")
    p.add_argument("--deny-host", action="append", default=[], metavar="H", help="default * (any host)")
    p.add_argument("--operation", action="append", default=[], metavar="OP",
                   help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
                        "AlterConfigs, IdempotentWrite, All")
    p.add_argument("--topic", action="append", default=[], metavar="T", help="a topic resource (repeatable)")
    p.add_argument("--group", action="append", default=[], metavar="G", help="a group resource (repeatable)")
    p.add_argument("--transactional-id", action="append", default=[], metavar="T",
                   help="a transactional id resource (repeatable)")
    p.add_argument("--cluster", action="store_true", help="the cluster resource")
    p.add_argument("--resource-pattern-type", default="literal", type=str.lower,
                   choices=("literal", "prefixed", "match", "any"),
                   help="how resource names match: literal (default), prefixed; --list/--remove also match "
                        "(every ACL that applies) and any")
    p.add_argument("--producer", action="store_true", help="the ACLs a producer needs")
    p.add_argument("--idempotent", action="store_true", help="with --producer: IDEMPOTENT_WRITE on the cluster")
    p.add_argument("--consumer", action="store_true", help="the ACLs a consumer needs (with --group)")
    p.add_argument("--force", action="store_true", help="--remove without asking")


def run(args: argparse.Namespace) -> int:
    return run_tool("acls", _run, args)


def _operation(text: str) -> str:
    key = text.lower().replace("-", "").replace("_", "")
    if key not in OPERATIONS:
        usage(f"--operation {text!r}: unknown (one of Read, Write, Create, Delete, Alter, Describe, "
              "ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, All)")
    return _OP_ENUM.get(key, key.upper())


def _resources(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(librdkafka resource type name, resource name) of every resource option."""
    out = [("TOPIC", t) for t in args.topic] + [("GROUP", g) for g in args.group]
    out += [("TRANSACTIONAL_ID", t) for t in args.transactional_id]
    if args.cluster:
        out.append(("BROKER", CLUSTER_NAME))
    for _kind, name in out:
        if not name:
            usage("a resource name cannot be empty")
    return out


def _entries(args: argparse.Namespace) -> list[tuple[str, str, str]]:
    """(principal, host, permission) pairs: each principal on each of its hosts (default ``*``)."""
    for kind in ("allow", "deny"):
        if getattr(args, f"{kind}_host") and not getattr(args, f"{kind}_principal"):
            usage(f"--{kind}-host needs --{kind}-principal")
    out = []
    for kind, perm in (("allow", "ALLOW"), ("deny", "DENY")):
        for principal in getattr(args, f"{kind}_principal"):
            if ":" not in principal or not principal.partition(":")[2]:
                usage(f"--{kind}-principal {principal!r}: expected TYPE:NAME, e.g. User:alice")
            for host in getattr(args, f"{kind}_host") or ["*"]:
                out.append((principal, host, perm))
    return out


def _ops_per_resource(args: argparse.Namespace, resources: list[tuple[str, str]]) -> dict[tuple[str, str], list[str]]:
    """Resource -> operations: --operation for each, or --producer / --consumer's sets (AclCommand)."""
    if args.producer or args.consumer:
        if args.operation:
            usage("--operation cannot be combined with --producer/--consumer")
        if args.consumer and not args.group:
            usage("--consumer needs --group")
        if not args.topic:
            usage("--producer/--consumer need --topic")
        out: dict[tuple[str, str], list[str]] = {}
        for res in resources:
            kind = res[0]
            ops: list[str] = []
            if args.producer:
                ops += {"TOPIC": ["WRITE", "DESCRIBE", "CREATE"], "TRANSACTIONAL_ID": ["WRITE", "DESCRIBE"]}.get(kind, [])
            if args.consumer:
                ops += {"TOPIC": ["READ", "DESCRIBE"], "GROUP": ["READ"]}.get(kind, [])
            if ops:
                out[res] = list(dict.fromkeys(ops))
        if args.producer and args.idempotent:
            out[("BROKER", CLUSTER_NAME)] = ["IDEMPOTENT_WRITE"]
        return out
    if args.idempotent:
        usage("--idempotent is for --producer")
    ops = [_operation(o) for o in args.operation] or (["ALL"] if args.action == "add" else ["ANY"])
    return {res: list(dict.fromkeys(ops)) for res in resources}


def _run(args: argparse.Namespace) -> int:
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    resources = _resources(args)
    pattern = args.resource_pattern_type.upper()
    if args.action == "add" and pattern in ("MATCH", "ANY"):
        usage(f"--resource-pattern-type {args.resource_pattern_type} is for --list and --remove")
    if args.action == "list":
        if args.allow_principal or args.deny_principal or args.operation or args.producer or args.consumer:
            usage("--list takes resources and --principal only")
        return _list(args, resources, pattern)
    if args.principal:
        usage("--principal is for --list (use --allow-principal / --deny-principal)")
    if not resources:
        usage("name a resource: --topic, --group, --cluster or --transactional-id")
    entries = _entries(args)
    if args.action == "add" and not entries:
        usage("--add needs --allow-principal or --deny-principal")
    per_resource = _ops_per_resource(args, resources)
    client = admin(args)
    t = timeout_s(args)
    if args.action == "add":
        # the cluster resource only exists as LITERAL ``kafka-cluster`` (AclCommand's --idempotent binding too)
        bindings = [AclBinding(ResourceType[kind], name, ResourcePatternType["LITERAL" if kind == "BROKER" else pattern],
                               principal, host,
                               AclOperation[op], AclPermissionType[perm])
                    for (kind, name), ops in per_resource.items() for principal, host, perm in entries for op in ops]
        futures = client.create_acls(bindings, request_timeout=t)
        for b in bindings:
            result(futures[b], t, f"add {_describe(b)}")
        _show(args, bindings)
        return 0
    filters = [AclBindingFilter(ResourceType[kind], name, ResourcePatternType[pattern], principal, host,
                                AclOperation[op], AclPermissionType[perm])
               for (kind, name), ops in per_resource.items() for principal, host, perm in entries or [(None, None, "ANY")]
               for op in ops]
    if not args.force and not _confirm(per_resource):
        raise ToolError("not confirmed: nothing removed (use --force to skip the question)")
    futures = client.delete_acls(filters, request_timeout=t)
    removed = [b for f in filters for b in result(futures[f], t, "remove ACLs")]
    _show(args, removed)
    return 0


def _list(args: argparse.Namespace, resources: list[tuple[str, str]], pattern: str) -> int:
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    if not resources:   # everything (AclCommand lists all ACLs)
        resources, pattern = [("ANY", None)], "ANY"  # type: ignore[list-item]
    client = admin(args)
    t = timeout_s(args)
    found = []
    for principal in args.principal or [None]:
        for kind, name in resources:
            flt = AclBindingFilter(ResourceType[kind], name, ResourcePatternType[pattern], principal, None,
                                   AclOperation.ANY, AclPermissionType.ANY)
            found += result(client.describe_acls(flt, request_timeout=t), t, "list ACLs")
    if not found:
        _check_may_describe(client, t)
    _show(args, list(dict.fromkeys(found)))
    return 0


def may_describe_cluster(client: Any, t: float) -> bool:
    """Whether the principal has DESCRIBE on the cluster (DescribeCluster's authorized operations; ALTER and
    ALL imply it)."""
    from confluent_kafka.admin import AclOperation

    desc = result(client.describe_cluster(include_authorized_operations=True, request_timeout=t), t,
                  "describe the cluster")
    return bool(set(desc.authorized_operations or []) & {AclOperation.DESCRIBE, AclOperation.ALTER, AclOperation.ALL})


def _check_may_describe(client: Any, t: float) -> None:
    """librdkafka (2.x, ``rd_kafka_DescribeAclsResponse_parse``) drops DescribeAcls' top-level error, so a
    principal without DESCRIBE on the cluster would see an empty list: an empty answer is checked against the
    cluster's authorized operations (DescribeCluster), and a refusal reported as the broker's error."""
    if not may_describe_cluster(client, t):
        raise ToolError("list ACLs: CLUSTER_AUTHORIZATION_FAILED: DESCRIBE on the cluster is needed to list ACLs")


def _confirm(per_resource: dict[tuple[str, str], list[str]]) -> bool:
    names = ", ".join(f"{'cluster' if k == 'BROKER' else k.lower()} {n!r}" for k, n in per_resource)
    sys.stderr.write(f"Are you sure you want to remove ACLs of {names}? (y/n)\n")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def _name(enum: Any) -> str:
    return getattr(enum, "name", str(enum))


def _row(b: Any) -> dict[str, str]:
    kind = _name(b.restype)
    return {"resource_type": "CLUSTER" if kind == "BROKER" else kind, "name": b.name,
            "pattern": _name(b.resource_pattern_type), "principal": b.principal, "host": b.host,
            "operation": _name(b.operation), "permission": _name(b.permission_type)}


def _describe(b: Any) -> str:
    r = _row(b)
    return f"{r['permission']} {r['principal']} {r['operation']} on {r['resource_type']} {r['name']!r}"


def _show(args: argparse.Namespace, bindings: list[Any]) -> None:
    rows = sorted((_row(b) for b in bindings), key=lambda r: tuple(r.values()))
    emit(args, rows, HEADERS, [list(r.values()) for r in rows])
