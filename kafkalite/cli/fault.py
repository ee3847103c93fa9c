"""``kafkalite fault``: faults on command from the shell, through a broker's HTTP control API.

    kafkalite serve --control 127.0.0.1:9405 &
    kafkalite fault inject --api Produce --error NOT_LEADER_OR_FOLLOWER --count 3 --partition orders:0
    kafkalite fault latency --ms 500 --api Fetch
    kafkalite fault drop                      # every open connection, now
    kafkalite fault pause ; kafkalite fault resume
    kafkalite fault wait-group --group my-group --state Stable --timeout 30
    kafkalite fault list --json ; kafkalite fault clear

Cluster operations (``stop-broker``, ``move-leader``, ...) need ``serve --brokers N``; a single broker answers
them with "not a cluster" (exit 1). ``--control`` (or ``KAFKALITE_CONTROL``) names the API's address
(default 127.0.0.1:9405). Output: one line per result, or the API's JSON with ``--json``. Exit codes: 0 done,
1 the API refused or could not be reached (one ``kafkalite fault: error: ...`` line), 2 a usage error.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

DEFAULT = "127.0.0.1:9405"


def _common(p: argparse.ArgumentParser, broker: bool = True) -> None:
    if broker:
        p.add_argument("--broker", type=int, metavar="ID", help="the broker's node id (default: every broker)")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--control", metavar="HOST:PORT", default=os.environ.get("KAFKALITE_CONTROL", DEFAULT),
                        help=f"the control API's address (serve --control; default $KAFKALITE_CONTROL or {DEFAULT})")
    parser.add_argument("--json", action="store_true", help="print the API's JSON answer")
    parser.add_argument("--timeout", type=float, default=30.0, metavar="S",
                        help="seconds to wait for the API (and, for wait-group, for the state; default 30)")
    sub = parser.add_subparsers(dest="op", required=True, metavar="OPERATION")
    p = sub.add_parser("inject", help="answer the next N requests of an API with an error code")
    p.add_argument("--api", required=True, help="Kafka API name or key (Produce, Fetch, JoinGroup, 0, ...)")
    p.add_argument("--error", required=True, help="Kafka error name or code (NOT_LEADER_OR_FOLLOWER, 6, ...)")
    p.add_argument("--count", type=int, default=1, help="how many requests (default 1)")
    p.add_argument("--until-cleared", action="store_true", help="every matching request until cleared")
    p.add_argument("--partition", action="append", metavar="TOPIC:P",
                   help="only requests naming this partition (repeatable; Produce, Fetch, ListOffsets, ...)")
    p.add_argument("--through", action="store_true",
                   help="carry the request out, then answer the error (default: refuse it, doing nothing)")
    _common(p)
    p = sub.add_parser("latency", help="delay requests before they are handled")
    p.add_argument("--ms", type=int, required=True, help="delay in milliseconds")
    p.add_argument("--api", help="only this API (default: every request)")
    p.add_argument("--count", type=int, help="only the next N requests (default: until cleared)")
    _common(p)
    p = sub.add_parser("drop", help="close every connection now, or the next one sending --api")
    p.add_argument("--api", help="close the connection of the next request of this API instead")
    p.add_argument("--count", type=int, default=1, help="with --api: how many times (default 1)")
    _common(p)
    for name, help_ in (("pause", "hold every request unanswered (clients time out)"),
                        ("resume", "answer the held requests and carry on")):
        _common(sub.add_parser(name, help=help_))
    p = sub.add_parser("clear", help="remove one rule (--rule) or every rule, and resume")
    p.add_argument("--rule", type=int, metavar="ID", help="the rule's id (from inject/list)")
    _common(p)
    sub.add_parser("list", help="each broker's rules, pause state and counters")
    sub.add_parser("describe", help="the brokers and partitions (leader, replicas, ISR) and the faults")
    p = sub.add_parser("wait-group", help="wait until a consumer group is in a state")
    p.add_argument("--group", required=True, help="the group id")
    p.add_argument("--state", required=True, help="Stable, Empty, PreparingRebalance, CompletingRebalance, Dead, ...")
    for name in ("stop-broker", "start-broker", "restart-broker"):
        p = sub.add_parser(name, help=f"{name.split('-')[0]} one broker (a cluster: serve --brokers N)")
        p.add_argument("--broker", type=int, required=True, metavar="ID", help="the broker's node id")
    p = sub.add_parser("move-leader", help="make another replica a partition's leader")
    p.add_argument("--topic", required=True, help="the partition's topic")
    p.add_argument("--partition", type=int, required=True, help="the partition number")
    p.add_argument("--broker", type=int, required=True, metavar="ID", help="the new leader (one of the replicas)")
    p = sub.add_parser("set-isr", help="set a partition's in-sync replicas")
    p.add_argument("--topic", required=True, help="the partition's topic")
    p.add_argument("--partition", type=int, required=True, help="the partition number")
    p.add_argument("--isr", required=True, metavar="ID,ID", help="comma-separated node ids")
    p = sub.add_parser("move-coordinator", help="move a group's or a transactional id's coordinator")
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--group", help="the group whose coordinator moves")
    who.add_argument("--transactional-id", help="the transactional id whose coordinator moves")
    p.add_argument("--broker", type=int, required=True, metavar="ID", help="the broker to move it to")


def _request(args: argparse.Namespace) -> tuple[str, str, dict[str, Any] | None]:
    op = args.op
    body: dict[str, Any] = {}
    if getattr(args, "broker", None) is not None:
        body["broker"] = args.broker
    if op == "inject":
        body.update(api=args.api, error=args.error, count=None if args.until_cleared else args.count,
                    mode="through" if args.through else "answer")
        if args.partition:
            body["partitions"] = args.partition
        return "POST", "/v1/faults/inject", body
    if op == "latency":
        body.update(ms=args.ms, api=args.api, count=args.count)
        return "POST", "/v1/faults/latency", body
    if op == "drop":
        body.update(api=args.api, count=args.count)
        return "POST", "/v1/faults/drop", body
    if op in ("pause", "resume"):
        return "POST", f"/v1/faults/{op}", body
    if op == "clear":
        body["rule"] = args.rule
        return "POST", "/v1/faults/clear", body
    if op == "list":
        return "GET", "/v1/faults", None
    if op == "describe":
        return "GET", "/v1/describe", None
    if op == "wait-group":
        return "POST", "/v1/groups/wait", {"group": args.group, "state": args.state, "timeout": args.timeout}
    if op in ("stop-broker", "start-broker", "restart-broker"):
        return "POST", f"/v1/cluster/{op.split('-')[0]}", body
    if op == "move-leader":
        body.update(topic=args.topic, partition=args.partition)
        return "POST", "/v1/cluster/move-leader", body
    if op == "set-isr":
        try:
            isr = [int(x) for x in args.isr.split(",") if x.strip()]
        except ValueError:
            raise SystemExit(_usage(f"--isr {args.isr!r}: expected comma-separated node ids")) from None
        return "POST", "/v1/cluster/set-isr", {"topic": args.topic, "partition": args.partition, "isr": isr}
    kind, key = ("group", args.group) if args.group is not None else ("transaction", args.transactional_id)
    body.update(kind=kind, key=key)
    return "POST", "/v1/cluster/move-coordinator", body


def _usage(message: str) -> int:
    sys.stderr.write(f"kafkalite fault: error: {message}\n")
    return 2


def _summary(op: str, answer: Any) -> list[str]:
    if op in ("list", "describe"):
        faults = answer.get("faults", answer)["brokers"] if op == "describe" else answer["brokers"]
        lines = []
        if op == "describe":
            for b in answer["cluster"].get("brokers", []):
                lines.append(f"broker {b['node_id']} {b['host']}:{b['port']} {'up' if b.get('up') else 'down'}")
            for p in answer["cluster"].get("partitions", []):
                lines.append(f"{p['topic']}-{p['partition']} leader {p['leader']} replicas {p['replicas']} isr {p['isr']}")
        for f in faults:
            lines.append(f"broker {f['node_id']}: {'paused, ' if f['paused'] else ''}{len(f['rules'])} rule(s)")
            lines.extend(f"  #{r['id']} {_rule(r)}" for r in f["rules"])
        return lines
    if "results" in answer:
        out = []
        for r in answer["results"]:
            if "rule" in r:
                out.append(f"broker {r['broker']}: rule #{r['rule']['id']} {_rule(r['rule'])}")
            else:
                out.append(f"broker {r['broker']}: " + ", ".join(f"{k} {v}" for k, v in r.items() if k != "broker"))
        return out
    if op == "wait-group":
        return [f"group {answer['group']} is {answer['state']}"]
    return ["ok"]


def _rule(r: dict[str, Any]) -> str:
    left = "until cleared" if r["remaining"] is None else f"{r['remaining']} left"
    api = r["api"] or "every API"
    if r["kind"] == "error":
        parts = "" if not r["partitions"] else " on " + ",".join(f"{p['topic']}:{p['partition']}"
                                                                 for p in r["partitions"])
        return f"{r['error']} on {api}{parts} ({r['mode']}, {left})"
    if r["kind"] == "latency":
        return f"latency {r['ms']} ms on {api} ({left})"
    return f"drop on {api} ({left})"


def run(args: argparse.Namespace) -> int:
    import http.client

    host, sep, port = str(args.control).rpartition(":")
    if not sep or not port.isdigit():
        return _usage(f"--control {args.control!r}: expected HOST:PORT")
    method, path, body = _request(args)
    timeout = args.timeout + 10 if args.op == "wait-group" else args.timeout
    conn = http.client.HTTPConnection(host.strip("[]") or "127.0.0.1", int(port), timeout=timeout)
    try:
        data = None if body is None else json.dumps(body).encode("utf-8")
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
        resp = conn.getresponse()
        raw = resp.read()
        status = resp.status
    except OSError as exc:
        sys.stderr.write(f"kafkalite fault: error: cannot reach the control API at {args.control}: {exc} "
                         "(start the broker with serve --control)\n")
        return 1
    finally:
        conn.close()
    try:
        answer = json.loads(raw or b"{}")
    except ValueError:
        sys.stderr.write(f"kafkalite fault: error: HTTP {status}: not JSON: {raw[:200]!r}\n")
        return 1
    if status != 200:
        sys.stderr.write(f"kafkalite fault: error: {answer.get('error', f'HTTP {status}')}\n")
        return 1
    if args.json:
        sys.stdout.write(json.dumps(answer, indent=2) + "\n")
    else:
        sys.stdout.write("".join(line + "\n" for line in _summary(args.op, answer)))
    return 0
