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

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafkalite.config.addresses import Listener
from kafkalite.config.listeners import (
    SASL_PROTOCOLS,
    SUPPORTED_MECHANISMS,
    TLS_PROTOCOLS,
    _jaas,
    listener_value,
    protocol_of,
)
from kafkalite.errors import ConfigError

if TYPE_CHECKING:
    import ssl  # annotations only: a broker without TLS listeners never imports ssl (tls_config does, for one)

    from kafkalite.config.broker import BrokerConfig
    from kafkalite.security.scram_store import ScramStore
    from kafkalite.security.ssl_principal import SslPrincipalMapper
    from kafkalite.security.tokens.manager import TokenManager


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
    # delegation tokens (kafkalite.security.tokens): token id, mechanism -> (credential, owner, expiry ms) or None
    token_lookup: Callable[[str, str], Any] | None = field(default=None, repr=False)
    strict_scram_nonce: bool = False  # Kafka 4.x's SCRAM nonce check (the --emulate-kafka 4.x profiles)

    @property
    def sasl(self) -> bool:
        return self.protocol in SASL_PROTOCOLS

    @property
    def tls(self) -> bool:
        return self.ssl_context is not None

    def new_server(self, mechanism: str) -> Any:
        if mechanism == "PLAIN":
            # a SASL mechanism: on its first handshake, not at start
            from kafkalite.security.plain import PlainServer

            return PlainServer(self.plain_users)
        if mechanism.startswith("SCRAM-"):
            # a SASL mechanism: on its first handshake, not at start
            from kafkalite.security.scram import ScramServer

            assert self.scram_lookup is not None
            return ScramServer(mechanism, self.scram_lookup, strict_nonce=self.strict_scram_nonce,
                               token_lookup=self.token_lookup)
        # a SASL mechanism: on its first handshake, not at start
        from kafkalite.security.oauthbearer import OAuthBearerServer

        return OAuthBearerServer(self.oauth_options)


def kafka_4(profile: str | None) -> bool:
    """Whether an emulation profile is a Kafka 4.x release for SASL ("4.3", "4.4"). The default "3.9+4.4" is not:
    it keeps Kafka 3.9's lenient SCRAM nonce check, which kcat 1.7.1 (librdkafka 2.0.2) needs."""
    first = (profile or "").split("+", 1)[0]
    return first.split(".", 1)[0].isdigit() and int(first.split(".", 1)[0]) >= 4


def build(config: BrokerConfig, listener: Listener, scram: ScramStore | None,
          tokens: TokenManager | None = None) -> ListenerSecurity:
    """The security of one listener; ConfigError (one line) for anything it cannot serve."""
    proto = protocol_of(config, listener)
    sec = ListenerSecurity(listener.name, proto)
    sec.strict_scram_nonce = kafka_4(config.emulate_kafka)
    name = listener.name
    if proto in TLS_PROTOCOLS:
        from kafkalite.security import tls_config as tls  # TLS listeners only: not at start otherwise

        sec.ssl_context, sec.client_auth = tls.server_context(config, name)
        if proto == "SSL":
            # SSL listeners only: not at start otherwise
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
            # SASL listeners only: the JAAS parser is not needed at a plain start
            from kafkalite.config import jaas

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
        sec.max_receive = config.get_int("sasl.server.max.receive.size")
        sec.failure_delay_ms = max(0, config.get_int("connection.failed.authentication.delay.ms"))
        if scram is not None:
            sec.scram_lookup = scram.get
        if tokens is not None and tokens.enabled:
            sec.token_lookup = _token_lookup(tokens)
    return sec


def _token_lookup(tokens: TokenManager) -> Callable[[str, str], Any]:
    def lookup(token_id: str, mechanism: str) -> Any:
        found = tokens.scram_lookup(token_id, mechanism, time.time_ns() // 1_000_000)
        if found is None:
            return None
        cred, info = found
        return cred, info.owner.name, info.expiry_ms

    return lookup


def build_all(config: BrokerConfig, scram: ScramStore | None,
              tokens: TokenManager | None = None) -> dict[str, ListenerSecurity]:
    return {lst.name: build(config, lst, scram, tokens) for lst in config.listeners()}
