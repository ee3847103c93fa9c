"""The ``server.properties`` Kafka 4.4 starts on for an ejected directory: one node, broker and controller.

It mirrors the kafkalite broker's settings (the ``--config`` file, ``--override`` and ``--listen`` of ``kafkalite
serve``, given to eject the same way): the same client listeners, security, SASL/TLS settings, authorizer and
super users, and every other explicit setting (kafkalite's own ``kafkalite.*`` left out). Added for KRaft:

- ``process.roles=broker,controller``, ``node.id`` (the data directory's), a static quorum of this one node
  (``controller.quorum.voters``, kraft.version 0), and two loopback listeners of its own: ``CONTROLLER`` (the quorum)
  and ``INTERNAL`` (``inter.broker.listener.name``: the transaction coordinator sends its markers over it, even to
  itself). With an authorizer both speak SASL_PLAINTEXT/PLAIN as a generated user added to ``super.users`` (Kafka
  authorizes the broker's own requests like any other); without one, PLAINTEXT.
- kafkalite's defaults where Kafka's differ (one-node replication factors of the internal topics,
  ``group.initial.rebalance.delay.ms``, ``sasl.enabled.mechanisms``, PEM key stores), and the internal topics'
  partition counts as they are on disk (Kafka's coordinators hash ids over them).
- a server-side JAAS entry for each SASL mechanism a client listener offers that has none (Kafka refuses to start
  without one; kafkalite needs none for SCRAM): ``ScramLoginModule`` reads the SCRAM credentials from the metadata.
"""
from __future__ import annotations

import secrets
import socket
from collections.abc import Mapping
from dataclasses import dataclass

from kafkalite.config.addresses import Listener, parse_protocol_map
from kafkalite.config.broker import BrokerConfig
from kafkalite.config.listeners import SASL_PROTOCOLS, TLS_PROTOCOLS, listener_value, split_list
from kafkalite.eject.records import Endpoint

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
INTERNAL_USER = "kafkalite-eject-internal"
CONTROLLER, INTERNAL = "CONTROLLER", "INTERNAL"
#: settings eject writes itself (never copied from kafkalite's)
_REWRITTEN = frozenset({
    "listeners", "advertised.listeners", "listener.security.protocol.map", "log.dirs", "log.dir", "node.id",
    "broker.id", "process.roles", "controller.quorum.voters", "controller.quorum.bootstrap.servers",
    "controller.listener.names", "inter.broker.listener.name", "security.inter.broker.protocol",
    "sasl.mechanism.inter.broker.protocol", "sasl.mechanism.controller.protocol", "authorizer.class.name",
    "super.users", "metadata.log.dir",
})
#: kafkalite's defaults that differ from Kafka 4.4's, or that one node needs
_KAFKALITE_DEFAULTS = (
    "offsets.topic.replication.factor", "transaction.state.log.replication.factor", "transaction.state.log.min.isr",
    "share.coordinator.state.topic.replication.factor", "share.coordinator.state.topic.min.isr",
    "group.initial.rebalance.delay.ms",
)
_ONE_NODE = {"transaction.state.log.min.isr": "1", "share.coordinator.state.topic.replication.factor": "1",
             "share.coordinator.state.topic.min.isr": "1"}
_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule required;",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    "OAUTHBEARER": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
}


@dataclass(slots=True)
class KafkaProperties:
    values: dict[str, str]
    endpoints: list[Endpoint]        # what the broker registers (its advertised listeners)
    client_listeners: list[Listener]
    notes: list[str]

    def text(self, header: str) -> str:
        lines = [f"# {line}" if line else "#" for line in header.splitlines()]
        lines += [f"{k}={v}" for k, v in self.values.items()]
        return "\n".join(lines) + "\n"


def get(config: BrokerConfig, key: str, default: str = "") -> str:
    value = config.get(key)
    return default if value is None else value


def _free_port(taken: set[int], start: int) -> int:
    port = start
    while port in taken or port <= 0 or port > 65535:
        port = port + 1 if 0 < port < 65535 else 9093
    taken.add(port)
    return port


def _address(value: str | None, taken: set[int], start: int) -> tuple[str, int]:
    if value:
        host, _, port = value.rpartition(":")
        taken.add(int(port))
        return host or "127.0.0.1", int(port)
    return "127.0.0.1", _free_port(taken, start)


def build(config: BrokerConfig, *, node_id: int, new_dir: str, internal_partitions: Mapping[str, int],
          controller: str | None = None, internal: str | None = None) -> KafkaProperties:
    """``controller`` / ``internal``: HOST:PORT of the two added listeners (default: loopback, the first ports
    above the first client listener's that no client listener uses)."""
    listeners = config.listeners()
    names = {lst.name for lst in listeners}
    # Kafka's own two listeners, named apart from the client listeners
    controller_name = next(n for n in (CONTROLLER, "KRAFT_CONTROLLER", "EJECT_CONTROLLER") if n not in names)
    internal_name = next(n for n in (INTERNAL, "BROKER_INTERNAL", "EJECT_INTERNAL") if n not in names)
    if any(lst.port == 0 for lst in listeners):
        raise ValueError("the kafkalite listener has port 0 (a free port picked at each start); give the port "
                         "Kafka should listen on with --listen HOST:PORT")
    advertised = config.advertised_listeners() or listeners
    notes: list[str] = []
    if any(lst.host in ("", "0.0.0.0", "::") for lst in advertised):
        # Kafka refuses to advertise the wildcard address (kafkalite answers with the address a client used)
        host = socket.getfqdn()
        notes.append(f"advertised.listeners: the wildcard address is advertised as {host} (set advertised.listeners "
                     "to change it)")
        advertised = [Listener(lst.name, host, lst.port) if lst.host in ("", "0.0.0.0", "::") else lst
                      for lst in advertised]
    protocols = parse_protocol_map(get(config, "listener.security.protocol.map"))
    taken = {lst.port for lst in listeners}
    chost, cport = _address(controller, taken, listeners[0].port + 1)
    ihost, iport = _address(internal, taken, listeners[0].port + 1)
    secured = bool(get(config, "authorizer.class.name").strip())
    inner = "SASL_PLAINTEXT" if secured else "PLAINTEXT"

    def proto(lst: Listener) -> str:
        return protocols.get(lst.name, "PLAINTEXT")

    v: dict[str, str] = {
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "controller.quorum.voters": f"{node_id}@{chost}:{cport}",
        "controller.listener.names": controller_name,
        "listeners": ",".join([*(str(lst) for lst in listeners), f"{internal_name}://{ihost}:{iport}",
                               f"{controller_name}://{chost}:{cport}"]),
        "advertised.listeners": ",".join([*(str(lst) for lst in advertised), f"{internal_name}://{ihost}:{iport}"]),
        "inter.broker.listener.name": internal_name,
        "listener.security.protocol.map": ",".join(
            [*(f"{n}:{p}" for n, p in protocols.items() if n not in (internal_name, controller_name)),
             *(f"{lst.name}:PLAINTEXT" for lst in listeners if lst.name not in protocols),
             f"{internal_name}:{inner}", f"{controller_name}:{inner}"]),
        "log.dirs": new_dir,
    }
    for key in sorted(config.values):
        if key in _REWRITTEN or key.startswith("kafkalite.") or key in v:
            continue
        v[key] = config.values[key]
    for key in _KAFKALITE_DEFAULTS:
        if key not in v:
            v[key] = _ONE_NODE.get(key) or get(config, key)
    for key, topic in (("offsets.topic.num.partitions", "__consumer_offsets"),
                       ("transaction.state.log.num.partitions", "__transaction_state"),
                       ("share.coordinator.state.topic.num.partitions", "__share_group_state")):
        count = internal_partitions.get(topic)
        if count:
            if key in config.values and config.values[key] != str(count):
                notes.append(f"{key}: {topic} has {count} partitions on disk (kafkalite's setting said "
                             f"{config.values[key]}); Kafka gets {count}")
            v[key] = str(count)
        elif key not in v and get(config, key):
            v[key] = get(config, key)
    if any(proto(lst) in TLS_PROTOCOLS for lst in listeners):
        for key in ("ssl.keystore.type", "ssl.truststore.type"):
            v.setdefault(key, get(config, key, "PEM"))
    sasl = [lst for lst in listeners if proto(lst) in SASL_PROTOCOLS]
    if sasl:
        v.setdefault("sasl.enabled.mechanisms", get(config, "sasl.enabled.mechanisms"))
    for lst in sasl:
        for mech in split_list(listener_value(config, lst.name, "sasl.enabled.mechanisms")):
            key = f"listener.name.{lst.name.lower()}.{mech.lower()}.sasl.jaas.config"
            if key not in v and not config.values.get("sasl.jaas.config") and mech in _LOGIN_MODULES:
                v[key] = _LOGIN_MODULES[mech]
                if mech == "PLAIN":
                    notes.append(f"listener {lst.name}: PLAIN had no users in kafkalite's settings; no one logs in "
                                 "with PLAIN on Kafka either")
    if secured:
        password = secrets.token_urlsafe(24)
        jaas = (f'org.apache.kafka.common.security.plain.PlainLoginModule required username="{INTERNAL_USER}" '
                f'password="{password}" user_{INTERNAL_USER}="{password}";')
        for name in (internal_name, controller_name):
            v[f"listener.name.{name.lower()}.sasl.enabled.mechanisms"] = "PLAIN"
            v[f"listener.name.{name.lower()}.plain.sasl.jaas.config"] = jaas
        v["sasl.mechanism.inter.broker.protocol"] = "PLAIN"
        v["sasl.mechanism.controller.protocol"] = "PLAIN"
        v["authorizer.class.name"] = STANDARD_AUTHORIZER
        supers = [s.strip() for s in get(config, "super.users").split(";") if s.strip()]
        v["super.users"] = ";".join([*supers, f"User:{INTERNAL_USER}"])
    endpoints = [Endpoint(lst.name, lst.host, lst.port, proto(lst)) for lst in advertised]
    endpoints.append(Endpoint(internal_name, ihost, iport, inner))
    return KafkaProperties(v, endpoints, listeners, notes)
