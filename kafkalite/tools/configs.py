"""``kafkalite configs``: kafka-configs.sh's options for topics, brokers and groups.

    kafkalite configs --describe (--topic T | --broker ID | --broker-defaults | --group G | --user [U]) [--all]
    kafkalite configs --alter    (--topic T | --broker ID | --broker-defaults | --group G | --user U)
                      [--add-config k=v,k2=[a,b]] [--delete-config k,k2]
    (or Kafka's long form: --entity-type topics|brokers|groups|users --entity-name NAME | --entity-default)

Users' configs are their SCRAM credentials (``SCRAM-SHA-256=[iterations=8192,password=P]``), handled by
:mod:`kafkalite.tools.scram`.

--describe shows the configs set on the resource itself (a topic's overrides; a broker's own dynamic settings;
the broker defaults), as kafka-configs does; ``--all`` shows every config with its value and source (DEFAULT_CONFIG,
STATIC_BROKER_CONFIG, DYNAMIC_TOPIC_CONFIG, ...). --alter uses IncrementalAlterConfigs: --add-config sets,
--delete-config removes (back to the default); the broker validates every value (INVALID_CONFIG, or
UNKNOWN_TOPIC_OR_PARTITION for a topic that does not exist) and applies all or nothing per resource.
--broker-defaults (``--entity-default``) is the cluster-wide default, the resource named "".

Topic and broker resources go through confluent-kafka's AdminClient. Group configs (Kafka 3.9's resource type
GROUP = 32, e.g. consumer.session.timeout.ms) and the broker defaults (an empty resource name) cannot be
expressed in librdkafka's API, so they are sent with the project's own codec (``wire``) on a plain connection to the bootstrap server (PLAINTEXT only); a broker
that does not support them answers with its error, which is shown.

``--json``: --describe ``[{"name", "value", "source", "read_only", "sensitive"}]``; --alter
``{"resource", "set": {...}, "deleted": [...]}``.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from kafkalite.tools import scram
from kafkalite.tools.common import (
    ToolError,
    add_connection_options,
    admin,
    client_config,
    emit,
    result,
    run_tool,
    split_kv,
    split_names,
    timeout_s,
    usage,
)
from kafkalite_wire.errors import ErrorCode

SOURCE_NAMES = {0: "UNKNOWN_CONFIG", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
                3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
                6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "DYNAMIC_CLIENT_METRICS_CONFIG", 8: "DYNAMIC_GROUP_CONFIG"}
#: what --describe shows without --all: the resource's own dynamic settings (kafka-configs' ConfigCommand filters
#: each resource type to its one source: a topic's overrides, not the broker defaults under them)
OWN_SOURCE = {"topic": 1, "broker": 2, "broker-defaults": 3, "group": 8}
GROUP_RESOURCE = 32     # ConfigResource.Type.GROUP in Kafka's protocol
BROKER_RESOURCE = 4


def configure(p: argparse.ArgumentParser) -> None:
    add_connection_options(p)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", dest="action", action="store_const", const="describe",
                        help="show an entity's configs (those set, or --all)")
    action.add_argument("--alter", dest="action", action="store_const", const="alter",
                        help="set (--add-config) or remove (--delete-config) an entity's configs")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--topic", help="a topic")
    which.add_argument("--broker", help="a broker (its node id)")
    which.add_argument("--broker-defaults", action="store_true", help="the cluster-wide broker defaults")
    which.add_argument("--group", help="a consumer group")
    which.add_argument("--user", nargs="?", const="", help="a user's SCRAM credentials (--describe: all users)")
    which.add_argument("--entity-type", choices=("topics", "brokers", "groups", "users"), help="Kafka's long form")
    p.add_argument("--entity-name", help="with --entity-type")
    p.add_argument("--entity-default", action="store_true", help="with --entity-type brokers")
    p.add_argument("--add-config", action="append", default=[], metavar="K=V,K2=V2",
                   help="configs to set (a value with commas in [brackets])")
    p.add_argument("--delete-config", action="append", default=[], metavar="K,K2", help="configs to remove")
    p.add_argument("--all", action="store_true", help="--describe: every config, not only those set")


def run(args: argparse.Namespace) -> int:
    return run_tool("configs", _run, args)


def _resource(args: argparse.Namespace) -> tuple[str, str]:
    """(kind, name): kind is topic, broker or group."""
    if args.entity_type:
        kind = args.entity_type[:-1]
        if args.entity_default:
            if kind != "broker":
                usage("--entity-default applies to --entity-type brokers")
            return "broker", ""
        if not args.entity_name and not (kind == "user" and args.action == "describe"):
            usage("--entity-type needs --entity-name (or --entity-default for brokers)")
        return kind, args.entity_name or ""
    if args.entity_name or args.entity_default:
        usage("--entity-name/--entity-default need --entity-type")
    if args.topic:
        return "topic", args.topic
    if args.broker is not None:
        return "broker", args.broker
    if args.broker_defaults:
        return "broker", ""
    if args.group:
        return "group", args.group
    if args.user is not None:
        if not args.user and args.action == "alter":
            usage("--alter --user needs a user name")
        return "user", args.user
    return usage("name a resource: --topic, --broker, --broker-defaults or --group (or --entity-type/--entity-name)")


def _run(args: argparse.Namespace) -> int:
    kind, name = _resource(args)
    sets = split_kv(args.add_config, "--add-config")
    deletes = split_names(args.delete_config)
    if args.action == "alter":
        if not sets and not deletes:
            usage("--alter needs --add-config and/or --delete-config")
        both = sorted(set(sets) & set(deletes))
        if both:
            usage(f"{both[0]} is both added and deleted")
    elif sets or deletes:
        usage("--add-config/--delete-config are for --alter")
    if kind == "user":
        if args.action == "alter":
            scram.alter(args, name, sets, deletes)
        else:
            scram.describe(args, name or None)
        return 0
    label = f"{kind} {name!r}" if name else "broker defaults"
    if kind == "group" or not name:   # librdkafka can name neither a group resource nor the broker defaults
        entries, _done = _raw(args, GROUP_RESOURCE if kind == "group" else BROKER_RESOURCE, name, label, sets,
                             deletes)
    else:
        entries, _done = _admin(args, kind, name, sets, deletes, label)
    if args.action == "alter":
        if args.json:
            emit(args, {"resource": {"type": kind, "name": name}, "set": sets, "deleted": deletes}, [], [])
        else:
            sys.stdout.write(f"Completed updating config for {label}.\n")
        return 0
    own = OWN_SOURCE["broker-defaults" if kind == "broker" and not name else kind]
    shown = [e for e in entries if args.all or e["source_id"] == own]
    for e in shown:
        del e["source_id"]
    emit(args, shown, ["NAME", "VALUE", "SOURCE", "READ-ONLY", "SENSITIVE"],
         [[e["name"], "[hidden]" if e["sensitive"] else e["value"], e["source"], str(e["read_only"]).lower(),
           str(e["sensitive"]).lower()] for e in shown])
    return 0


def _admin(args: argparse.Namespace, kind: str, name: str, sets: dict[str, str], deletes: list[str],
           label: str) -> tuple[list[dict[str, Any]], bool]:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    client = admin(args)
    t = timeout_s(args)
    restype = "TOPIC" if kind == "topic" else "BROKER"
    if args.action == "alter":
        ops = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in sets.items()]
        ops += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in deletes]
        res = ConfigResource(restype, name, incremental_configs=ops)
        fut = client.incremental_alter_configs([res], request_timeout=t)[res]
        result(fut, t, f"alter configs of {label}")
        return [], True
    res = ConfigResource(restype, name)
    entries = result(client.describe_configs([res], request_timeout=t)[res], t, f"describe configs of {label}")
    out = []
    for key, e in sorted(entries.items()):
        src = getattr(e.source, "value", e.source)
        out.append({"name": key, "value": e.value, "source": SOURCE_NAMES.get(src, str(src)), "source_id": src,
                    "read_only": bool(e.is_read_only), "sensitive": bool(e.is_sensitive)})
    return out, False


def _raw(args: argparse.Namespace, restype: int, name: str, label: str, sets: dict[str, str],
         deletes: list[str]) -> tuple[list[dict[str, Any]], bool]:
    """Group configs and the broker defaults through the project's codec: DescribeConfigs v1 /
    IncrementalAlterConfigs v0, which every broker since Kafka 2.3 serves (GROUP resources since 3.8)."""
    # our codec: group and broker-default configs only (the rest go through confluent-kafka)
    from kafkalite_wire.messages import (
        DescribeConfigsRequest,
        DescribeConfigsResponse,
        IncrementalAlterConfigsRequest,
        IncrementalAlterConfigsResponse,
    )

    if args.action == "alter":
        cfgs = [IncrementalAlterConfigsRequest.AlterableConfig(name=k, config_operation=0, value=v)
                for k, v in sets.items()]
        cfgs += [IncrementalAlterConfigsRequest.AlterableConfig(name=k, config_operation=1, value=None)
                 for k in deletes]
        req: Any = IncrementalAlterConfigsRequest(validate_only=False, resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(resource_type=restype, resource_name=name, configs=cfgs)])
        resp: Any = _roundtrip(args, req, IncrementalAlterConfigsResponse, 0)
        r = resp.responses[0]
    else:
        req = DescribeConfigsRequest(include_synonyms=False, resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=restype, resource_name=name, configuration_keys=None)])
        resp = _roundtrip(args, req, DescribeConfigsResponse, 1)
        r = resp.results[0]
    if r.error_code:
        code = ErrorCode(r.error_code).name if r.error_code in ErrorCode._value2member_map_ else str(r.error_code)
        raise ToolError(f"{args.action} configs of {label}: {code}: {r.error_message or ''}".rstrip(": "))
    if args.action == "alter":
        return [], True
    return [{"name": c.name, "value": c.value, "source": SOURCE_NAMES.get(c.config_source, str(c.config_source)),
             "source_id": c.config_source, "read_only": bool(c.read_only), "sensitive": bool(c.is_sensitive)}
            for c in sorted(r.configs, key=lambda c: c.name)], False


def _roundtrip(args: argparse.Namespace, body: Any, response_class: Any, version: int) -> Any:
    """One request to the first bootstrap server with the project's wire client (``--command-config``'s
    security.protocol / sasl.* / ssl.* apply, as they do to the AdminClient)."""
    # our codec's client: group and broker-default configs only
    from kafkalite.client.wire import Security, WireError, bootstrap, call

    try:
        host, port = bootstrap(args.bootstrap_server)[0]
        sec = Security.from_params(client_config(args))
    except ValueError as exc:
        usage(str(exc))
    try:
        return call(host or "localhost", port, body, version, timeout_s(args), sec, client_id="kafkalite-configs")
    except WireError as exc:
        raise ToolError(f"{args.bootstrap_server}: {exc}") from None
    except OSError as exc:
        raise ToolError(f"cannot reach a broker at {args.bootstrap_server}: {exc}") from None
