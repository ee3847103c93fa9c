"""Connection settings of one side of a migration: a bootstrap address and a client properties file.

``--command-config FILE`` (the target) and ``--from-command-config FILE`` (the source) are Kafka client
properties files, as ``kafka-*.sh --command-config`` takes them, in Java's names or librdkafka's:

- ``security.protocol``; ``sasl.mechanism`` (or librdkafka's ``sasl.mechanisms``);
- ``sasl.jaas.config`` with ``username="..." password="..."`` (PlainLoginModule, ScramLoginModule) or
  librdkafka's ``sasl.username`` / ``sasl.password``;
- ``ssl.truststore.location`` of type PEM (``ssl.truststore.type=PEM``) or ``ssl.ca.location``;
  ``ssl.keystore.location`` (PKCS12) with ``ssl.keystore.password``, or ``ssl.certificate.location`` /
  ``ssl.key.location`` (/ ``ssl.key.password``); ``ssl.endpoint.identification.algorithm`` (empty = no check).

:class:`Side` turns them into confluent-kafka's configuration (:meth:`Side.client_config`) and into the
project's wire client's :class:`~kafkalite.client.wire.Security` (for the requests confluent-kafka does not
offer: raw Fetch of the source, client quotas, aborting the source's open transactions). A Java-only setting
librdkafka has no equivalent for (a JKS trust store, a login module other than PLAIN/SCRAM) is a usage error
naming it, never silently dropped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalite.client.wire import Security

_JAAS = re.compile(r'(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')
# Java client settings that only tune the Java client; librdkafka has its own defaults for the same thing
_JAVA_ONLY_TUNING = {"client.dns.lookup", "sasl.login.class", "sasl.client.callback.handler.class",
                     "ssl.protocol", "ssl.enabled.protocols", "ssl.keymanager.algorithm",
                     "ssl.trustmanager.algorithm", "ssl.truststore.type", "ssl.keystore.type",
                     "ssl.secure.random.implementation", "request.timeout.ms", "default.api.timeout.ms"}


class PropsError(ValueError):
    """A client properties file that cannot be used (the message names the setting)."""


def read_properties(path: str | Path) -> dict[str, str]:
    # the properties parser of the broker's configuration (pure: config imports nothing of the server)
    from kafkalite.config.broker import parse_properties

    try:
        return parse_properties(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise PropsError(f"{path}: {exc.strerror or exc}") from None


def to_librdkafka(props: dict[str, str]) -> dict[str, str]:
    """Java client property names -> librdkafka's (those already in librdkafka's names pass through)."""
    out: dict[str, str] = {}
    p = dict(props)
    jaas = p.pop("sasl.jaas.config", None)
    if jaas is not None:
        if "PlainLoginModule" not in jaas and "ScramLoginModule" not in jaas:
            raise PropsError("sasl.jaas.config: only PlainLoginModule and ScramLoginModule can be translated "
                             "(give librdkafka's sasl.* settings instead)")
        for key, value in _JAAS.findall(jaas):
            out[f"sasl.{key}"] = re.sub(r"\\(.)", r"\1", value)
    if "sasl.mechanism" in p:
        out["sasl.mechanism"] = p.pop("sasl.mechanism")
    ts_type = p.get("ssl.truststore.type", "PEM" if "ssl.truststore.location" in p else "").upper()
    if "ssl.truststore.location" in p:
        if ts_type != "PEM":
            raise PropsError(f"ssl.truststore.location of type {ts_type}: librdkafka reads PEM trust stores only "
                             "(ssl.truststore.type=PEM, or ssl.ca.location)")
        out["ssl.ca.location"] = p.pop("ssl.truststore.location")
    p.pop("ssl.truststore.password", None)
    ks_type = p.get("ssl.keystore.type", "PKCS12").upper()
    if "ssl.keystore.location" in p and ks_type not in ("PKCS12", "P12"):
        raise PropsError(f"ssl.keystore.location of type {ks_type}: librdkafka reads PKCS12 key stores only")
    if p.get("ssl.endpoint.identification.algorithm") == "":
        p["ssl.endpoint.identification.algorithm"] = "none"
    for key in _JAVA_ONLY_TUNING:
        p.pop(key, None)
    out.update(p)
    return out


@dataclass
class Side:
    """One cluster of a migration: where it is and how to log in."""

    bootstrap: str
    props: dict[str, str] = field(default_factory=dict)   # librdkafka names

    @classmethod
    def from_args(cls, bootstrap: str, path: str | None) -> Side:
        return cls(bootstrap, to_librdkafka(read_properties(path)) if path else {})

    def client_config(self, **extra: Any) -> dict[str, Any]:
        conf: dict[str, Any] = {"bootstrap.servers": self.bootstrap, "log_level": 0,
                                "socket.connection.setup.timeout.ms": 10_000}
        conf.update(self.props)
        conf.update(extra)
        return conf

    def security(self) -> Security:
        try:
            return Security.from_params(self.props)
        except ValueError as exc:
            raise PropsError(str(exc)) from None
