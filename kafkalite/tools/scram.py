"""SCRAM credentials of users, for ``kafkalite configs --entity-type users`` (or ``--user U``), as
kafka-configs.sh manages them (KIP-554: DescribeUserScramCredentials / AlterUserScramCredentials through
confluent-kafka's AdminClient):

    kafkalite configs --alter --entity-type users --entity-name alice \\
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=...]'
    kafkalite configs --alter --user alice --delete-config SCRAM-SHA-512
    kafkalite configs --describe --entity-type users [--entity-name alice]

A mechanism's value is ``iterations=N,password=P`` (iterations default 4096, Kafka's default and minimum);
the salt is random, the salted password is computed by the client; the password never leaves this process
otherwise and is never printed. Each mechanism is its own request: Kafka's controller (KRaft
``ScramControlManager``) answers DUPLICATE_RESOURCE to two alterations of one user in one request. --describe shows each user's mechanisms and iterations (never a secret);
without a name, every user that has a credential. A user with none: RESOURCE_NOT_FOUND (exit 1). Only the
SCRAM keys are accepted for users (client quotas are not handled by this tool).

``--json``: --describe ``[{"user", "mechanism", "iterations"}]``.
"""
from __future__ import annotations

import argparse
import sys

from kafkalite.tools.common import (
    ToolError,
    add_connection_options,
    admin,
    emit,
    result,
    run_tool,
    split_kv,
    split_names,
    timeout_s,
    usage,
)

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
DEFAULT_ITERATIONS = 4096


def _mechanism(key: str):
    from confluent_kafka.admin import ScramMechanism

    if key.upper() not in MECHANISMS:
        usage(f"{key!r} is not a SCRAM mechanism (users take {' and '.join(MECHANISMS)})")
    return ScramMechanism[key.upper().replace("-", "_")]


def _credential(key: str, value: str) -> tuple[int, str]:
    """(iterations, password) of ``iterations=N,password=P``."""
    fields: dict[str, str] = {}
    for part in value.split(","):
        k, sep, v = part.partition("=")
        if not sep or k.strip() not in ("iterations", "password") or k.strip() in fields:
            usage(f"{key}: expected [iterations=N,password=P], not {part.split('=')[0]!r}")
        fields[k.strip()] = v
    if not fields.get("password"):
        usage(f"{key}: a password is required ([iterations=N,password=P])")
    try:
        iterations = int(fields.get("iterations", DEFAULT_ITERATIONS))
    except ValueError:
        usage(f"{key}: iterations must be a number")
    return iterations, fields["password"]


def alter(args: argparse.Namespace, user: str, sets: dict[str, str], deletes: list[str]) -> None:
    from confluent_kafka.admin import (
        ScramCredentialInfo,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    alterations: list = []
    for key, value in sets.items():
        mech = _mechanism(key)
        iterations, password = _credential(key, value)
        alterations.append(UserScramCredentialUpsertion(user, ScramCredentialInfo(mech, iterations),
                                                        password.encode("utf-8")))
    alterations += [UserScramCredentialDeletion(user, _mechanism(key)) for key in deletes]
    client = admin(args)
    t = timeout_s(args)
    for alteration in alterations:   # KRaft refuses two alterations of one user in a request (DUPLICATE_RESOURCE)
        futures = client.alter_user_scram_credentials([alteration], request_timeout=t)
        result(futures[user], t, f"alter SCRAM credentials of user {user!r}")
    if not args.json:
        sys.stdout.write(f"Completed updating config for user {user}.\n")
    else:
        emit(args, {"resource": {"type": "user", "name": user}, "set": sorted(sets), "deleted": deletes}, [], [])


def describe(args: argparse.Namespace, user: str | None) -> None:
    client = admin(args)
    t = timeout_s(args)
    # librdkafka (2.x, rd_kafka_DescribeUserScramCredentialsResponse_parse) keeps a pointer to a stack copy of
    # a non-empty top-level ErrorMessage and crashes the process reading it later; Kafka's refusal carries
    # "Cluster authorization failed.", so the right (DESCRIBE on the cluster) is checked first.
    from kafkalite.tools.acls import may_describe_cluster

    if not may_describe_cluster(client, t):
        raise ToolError("describe SCRAM credentials: CLUSTER_AUTHORIZATION_FAILED: DESCRIBE on the cluster is "
                        "needed")
    if user is None:
        found = result(client.describe_user_scram_credentials(request_timeout=t), t, "describe SCRAM credentials")
    else:
        futures = client.describe_user_scram_credentials([user], request_timeout=t)
        found = {user: result(futures[user], t, f"describe SCRAM credentials of user {user!r}")}
    rows = [{"user": name, "mechanism": getattr(info.mechanism, "name", str(info.mechanism)).replace("_", "-"),
             "iterations": info.iterations}
            for name, desc in sorted(found.items()) for info in desc.scram_credential_infos]
    if not rows and user is not None:
        raise ToolError(f"user {user!r} has no SCRAM credential")
    emit(args, rows, ["USER", "MECHANISM", "ITERATIONS"], [[r["user"], r["mechanism"], r["iterations"]] for r in rows])


# ``kafkalite scram``: the same, without naming the entity type.
def configure(p: argparse.ArgumentParser) -> None:
    add_connection_options(p)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", dest="action", action="store_const", const="describe",
                        help="list users' SCRAM mechanisms and iterations (never the passwords)")
    action.add_argument("--alter", dest="action", action="store_const", const="alter",
                        help="set (--add-config) or remove (--delete-config) a user's credentials")
    p.add_argument("--user", help="the user (--describe without it: every user)")
    p.add_argument("--add-config", action="append", default=[], metavar="MECH=[iterations=N,password=P]",
                   help="SCRAM-SHA-256 / SCRAM-SHA-512 credentials to set")
    p.add_argument("--delete-config", action="append", default=[], metavar="MECH", help="mechanisms to remove")


def run(args: argparse.Namespace) -> int:
    def body(a: argparse.Namespace) -> int:
        sets, deletes = split_kv(a.add_config, "--add-config"), split_names(a.delete_config)
        if a.action == "describe":
            if sets or deletes:
                usage("--add-config/--delete-config are for --alter")
            describe(a, a.user)
            return 0
        if not a.user:
            usage("--alter needs --user")
        if not sets and not deletes:
            usage("--alter needs --add-config and/or --delete-config")
        alter(a, a.user, sets, deletes)
        return 0

    return run_tool("scram", body, args)
