"""Listener-scoped settings, read and checked without opening a file or a socket.

Every ``ssl.*`` / ``sasl.*`` setting may be given per listener with Kafka's prefix,
``listener.name.<listener lower case>.<setting>``, which wins over the unprefixed one; JAAS configs exist only per
listener and mechanism (``listener.name.<l>.<mechanism>.sasl.jaas.config``). ``check_listener`` is what
``BrokerConfig`` validates at start; :mod:`kafkalite.security.listeners` builds each listener's TLS context and
SASL servers from the same lookups.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from kafkalite.config.addresses import Listener, parse_protocol_map
from kafkalite.config.defs import BROKER
from kafkalite.errors import ConfigError

if TYPE_CHECKING:
    from kafkalite.config import jaas
    from kafkalite.config.broker import BrokerConfig

#: the values ``ssl.enabled.protocols`` and ``ssl.client.auth`` take (the TLS layer maps them to ``ssl``'s)
TLS_VERSIONS = ("TLSv1.2", "TLSv1.3")
CLIENT_AUTH_VALUES = ("none", "requested", "required")

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


TLS_PROTOCOLS = ("SSL", "SASL_SSL")


SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")


def listener_value(config: BrokerConfig, listener: str, key: str) -> str:
    """``listener.name.<listener>.<key>`` if set, else ``<key>`` (Kafka's listener-prefixed configs)."""
    prefixed = config.values.get(f"listener.name.{listener.lower()}.{key}")
    return prefixed if prefixed is not None else config.get_str(key)


_LISTENER_SETTING = re.compile(r"^listener\.name\.[a-z0-9_]+\.(?:(?:plain|scram-sha-256|scram-sha-512|oauthbearer)\."
                               r"(?:sasl\.jaas\.config|connections\.max\.reauth\.ms)|(ssl\..+|sasl\.enabled\.mechanisms|"
                               r"connections\.max\.reauth\.ms|sasl\.server\.max\.receive\.size))$")


def is_listener_setting(key: str) -> bool:
    """A ``listener.name.<l>.*`` key kafkalite reads (the others are named as ignored at start)."""
    m = _LISTENER_SETTING.match(key)
    if m is None:
        return False
    return m.group(1) is None or m.group(1) in BROKER


def is_sensitive(key: str) -> bool:
    """A setting whose value is a secret (Kafka's PASSWORD type, JAAS configs): never logged or described."""
    if key.endswith("sasl.jaas.config"):
        return True
    m = re.match(r"^listener\.name\.[a-z0-9_]+\.(.+)$", key)
    d = BROKER.get(m.group(1) if m else key)
    return (d is not None and d.type == "password") or key.endswith(".password")


def unmapped_listeners(config: BrokerConfig) -> list[str]:
    """Listener names missing from ``listener.security.protocol.map`` (served as PLAINTEXT)."""
    protocols = parse_protocol_map(config.get_str("listener.security.protocol.map"))
    return [lst.name for lst in config.listeners() if lst.name not in protocols]


def check_listener(config: BrokerConfig, listener: Listener, protocols: dict[str, str]) -> list[str]:
    """Configuration errors of one listener, found without reading files (BrokerConfig validation)."""
    proto = protocols.get(listener.name, "PLAINTEXT")   # Kafka refuses a name missing from the map (a warning)
    errors: list[str] = []
    if proto in TLS_PROTOCOLS:
        errors += check_tls(config, listener.name)
    if proto in SASL_PROTOCOLS:
        mechs = [m.strip().upper() for m in listener_value(config, listener.name, "sasl.enabled.mechanisms")
                 .split(",") if m.strip()]
        bad = [m for m in mechs if m not in SUPPORTED_MECHANISMS]
        if bad or not mechs:
            errors.append(f"sasl.enabled.mechanisms of listener {listener.name}: "
                          f"{', '.join(bad) + ' not supported' if bad else 'empty'} "
                          f"(kafkalite implements {', '.join(SUPPORTED_MECHANISMS)})")
        for mech in mechs:
            try:
                _jaas(config, listener.name, mech)
            except ConfigError as exc:
                errors.append(str(exc))
    return errors


def protocol_of(config: BrokerConfig, listener: Listener) -> str:
    protocols = parse_protocol_map(config.get_str("listener.security.protocol.map"))
    return protocols.get(listener.name, "PLAINTEXT")


def _jaas(config: BrokerConfig, listener: str, mechanism: str) -> jaas.JaasEntry | None:
    key = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    text = config.values.get(key)
    if text is None or not text.strip():
        return None
    # SASL listeners only: the JAAS parser is not needed at a plain start
    from kafkalite.config import jaas

    try:
        return jaas.parse_jaas_config(text)
    except jaas.JaasError as exc:
        raise ConfigError(f"{key}: {exc}") from None


def check_tls(config: BrokerConfig, listener: str) -> list[str]:
    """What is wrong with a TLS listener's settings, without reading any file (config validation)."""
    def v(key: str) -> str:
        return listener_value(config, listener, key).strip()

    errors = []
    for kind in ("keystore", "truststore"):
        t = v(f"ssl.{kind}.type") or "PEM"
        if t.upper() != "PEM":
            errors.append(f"ssl.{kind}.type={t} (listener {listener}): kafkalite reads PEM stores only")
    if not v("ssl.keystore.location") and not (v("ssl.keystore.key") and v("ssl.keystore.certificate.chain")):
        errors.append(f"listener {listener} uses TLS but has no key store: set ssl.keystore.location (a PEM "
                      "file with the key and certificate chain) or ssl.keystore.key + ssl.keystore.certificate."
                      "chain (`kafkalite certs DIR` writes a ready-made set)")
    if v("ssl.keystore.password"):
        errors.append("ssl.keystore.password: SSL key store password cannot be specified with PEM format, only "
                      "key password may be specified (ssl.key.password)")
    auth = (v("ssl.client.auth") or "none").lower()
    if auth not in CLIENT_AUTH_VALUES:
        errors.append(f"Invalid value {auth} for configuration ssl.client.auth: String must be one of: "
                      "required, requested, none")
    elif auth != "none" and not (v("ssl.truststore.location") or v("ssl.truststore.certificates")):
        errors.append(f"ssl.client.auth={auth} (listener {listener}) needs a trust store to verify client "
                      "certificates: set ssl.truststore.location or ssl.truststore.certificates")
    bad = [p for p in split_list(v("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3") if p not in TLS_VERSIONS]
    if bad:
        errors.append(f"ssl.enabled.protocols: {', '.join(bad)} not supported (kafkalite: TLSv1.2, TLSv1.3)")
    return errors


def split_list(value: str) -> list[str]:
    return [x.strip() for x in value.split(",") if x.strip()]
