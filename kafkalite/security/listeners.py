"""Each listener's security: its protocol, TLS context and SASL mechanisms, from Kafka's settings.

``listeners=PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9094`` names listeners; a listener's security
protocol is ``listener.security.protocol.map[name]`` (whose default maps each of PLAINTEXT, SSL,
SASL_PLAINTEXT, SASL_SSL to itself, so a listener named after a protocol needs no map entry). A name missing
from the map is served as PLAINTEXT with a startup warning (Kafka refuses it; kafkalite always served such
names as PLAINTEXT, and keeps doing so). The protocol decides:

- transport: TLS for SSL and SASL_SSL (``kafkalite.server.tls``), the plain socket otherwise;
- authentication: SASL before any other API for SASL_* (``kafkalite.security.authenticator``); a client
  certificate for SSL with ``ssl.client.auth=required|requested`` (mapped by ``ssl.principal.mapping.rules``);
  none (``User:ANONYMOUS``) for PLAINTEXT.

Every ``ssl.*`` / ``sasl.*`` setting may be given per listener with Kafka's prefix,
``listener.name.<listener lower case>.<setting>``, which wins over the unprefixed one; JAAS configs only exist
per listener and mechanism: ``listener.name.<listener>.<mechanism lower case>.sasl.jaas.config``.
``sasl.enabled.mechanisms`` lists what a SASL listener offers (kafkalite's default: PLAIN, SCRAM-SHA-256,
SCRAM-SHA-512; Kafka's is GSSAPI, which kafkalite does not implement). ``connections.max.reauth.ms`` (KIP-368)
and ``listener.name.<l>.<mechanism>.connections.max.reauth.ms`` bound a SASL session.
"""
from __future__ import annotations

import re
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafkalite.config.broker import ConfigError, Listener, parse_protocol_map
from kafkalite.security import jaas

if TYPE_CHECKING:
    from kafkalite.config.broker import BrokerConfig
    from kafkalite.security.scram_store import ScramStore
    from kafkalite.security.ssl_principal import SslPrincipalMapper

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
TLS_PROTOCOLS = ("SSL", "SASL_SSL")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")


def listener_value(config: BrokerConfig, listener: str, key: str) -> str:
    """``listener.name.<listener>.<key>`` if set, else ``<key>`` (Kafka's listener-prefixed configs)."""
    prefixed = config.values.get(f"listener.name.{listener.lower()}.{key}")
    return prefixed if prefixed is not None else config.get_str(key)


@dataclass
class ListenerSecurity:
    name: str
    protocol: str
    ssl_context: ssl.SSLContext | None = None
    client_auth: str = "none"
    principal_mapper: SslPrincipalMapper | None = None
    mechanisms: tuple[str, ...] = ()
    plain_users: dict[str, str] = field(default_factory=dict, repr=False)
    oauth_options: dict[str, str] = field(default_factory=dict, repr=False)
    reauth_ms: int = 0
    max_receive: int = 524288       # sasl.server.max.receive.size: largest frame before authentication
    failure_delay_ms: int = 100     # connection.failed.authentication.delay.ms: close this long after failing
    scram_lookup: Callable[[str, str], Any] | None = field(default=None, repr=False)

    @property
    def sasl(self) -> bool:
        return self.protocol in SASL_PROTOCOLS

    @property
    def tls(self) -> bool:
        return self.ssl_context is not None

    def new_server(self, mechanism: str) -> Any:
        if mechanism == "PLAIN":
            from kafkalite.security.plain import PlainServer

            return PlainServer(self.plain_users)
        if mechanism.startswith("SCRAM-"):
            from kafkalite.security.scram import ScramServer

            assert self.scram_lookup is not None
            return ScramServer(mechanism, self.scram_lookup)
        from kafkalite.security.oauthbearer import OAuthBearerServer

        return OAuthBearerServer(self.oauth_options)


_LISTENER_SETTING = re.compile(r"^listener\.name\.[a-z0-9_]+\.(?:(?:plain|scram-sha-256|scram-sha-512|oauthbearer)\."
                               r"(?:sasl\.jaas\.config|connections\.max\.reauth\.ms)|(ssl\..+|sasl\.enabled\.mechanisms|"
                               r"connections\.max\.reauth\.ms|sasl\.server\.max\.receive\.size))$")


def is_listener_setting(key: str) -> bool:
    """A ``listener.name.<l>.*`` key kafkalite reads (the others are named as ignored at start)."""
    m = _LISTENER_SETTING.match(key)
    if m is None:
        return False
    from kafkalite.config.defs import BROKER

    return m.group(1) is None or m.group(1) in BROKER


def is_sensitive(key: str) -> bool:
    """A setting whose value is a secret (Kafka's PASSWORD type, JAAS configs): never logged or described."""
    from kafkalite.config.defs import BROKER

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
        from kafkalite.security.tls_config import check

        errors += check(config, listener.name)
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
    try:
        return jaas.parse_jaas_config(text)
    except jaas.JaasError as exc:
        raise ConfigError(f"{key}: {exc}") from None


def build(config: BrokerConfig, listener: Listener, scram: ScramStore | None) -> ListenerSecurity:
    """The security of one listener; ConfigError (one line) for anything it cannot serve."""
    proto = protocol_of(config, listener)
    sec = ListenerSecurity(listener.name, proto)
    name = listener.name
    if proto in TLS_PROTOCOLS:
        from kafkalite.security import tls_config as tls

        sec.ssl_context, sec.client_auth = tls.server_context(config, name)
        if proto == "SSL":
            from kafkalite.security.ssl_principal import SslPrincipalMapper

            rules = listener_value(config, name, "ssl.principal.mapping.rules") or "DEFAULT"
            try:
                sec.principal_mapper = SslPrincipalMapper(rules)
            except ValueError as exc:
                raise ConfigError(f"ssl.principal.mapping.rules: {exc}") from None
    if proto in SASL_PROTOCOLS:
        raw = listener_value(config, name, "sasl.enabled.mechanisms")
        mechs = tuple(m.strip().upper() for m in raw.split(",") if m.strip())
        bad = [m for m in mechs if m not in SUPPORTED_MECHANISMS]
        if bad:
            raise ConfigError(f"sasl.enabled.mechanisms of listener {name}: {', '.join(bad)} not supported "
                              f"(kafkalite implements {', '.join(SUPPORTED_MECHANISMS)})")
        if not mechs:
            raise ConfigError(f"sasl.enabled.mechanisms of listener {name} is empty")
        sec.mechanisms = mechs
        if "PLAIN" in mechs:
            entry = _jaas(config, name, "PLAIN")
            sec.plain_users = jaas.plain_users(entry) if entry is not None else {}
        if "OAUTHBEARER" in mechs:
            entry = _jaas(config, name, "OAUTHBEARER")
            sec.oauth_options = dict(entry.options) if entry is not None else {}
        reauth = listener_value(config, name, "connections.max.reauth.ms").strip()
        try:
            sec.reauth_ms = int(reauth) if reauth else 0
        except ValueError:
            raise ConfigError(f"connections.max.reauth.ms={reauth!r} is not an integer") from None
        sec.max_receive = config.get_int("sasl.server.max.receive.size", 524288)
        sec.failure_delay_ms = max(0, config.get_int("connection.failed.authentication.delay.ms", 100))
        if scram is not None:
            sec.scram_lookup = scram.get
    return sec


def build_all(config: BrokerConfig, scram: ScramStore | None) -> dict[str, ListenerSecurity]:
    return {lst.name: build(config, lst, scram) for lst in config.listeners()}
