"""One definition per config kafkalite reads: Kafka's type, kafkalite's default, the valid values, a doc line.

Types and ranges are Kafka 3.9's (its ``ConfigDef`` of KafkaConfig / LogConfig): ``int`` is 32-bit and
``long`` 64-bit signed, ``short`` 16-bit, ``double`` a float, ``boolean`` exactly true/false (any case), a
``list`` comma-separated. Values arrive as strings (a properties file, the environment, ``--override``,
CreateTopics / AlterConfigs); :func:`check` parses one and says in one line what is wrong, in Kafka's
wording (``Invalid value -1 for configuration num.partitions: Value must be at least 1``), which is also what
clients see in INVALID_CONFIG messages. Broker settings are checked by ``kafkalite.config.broker`` at start;
topic settings (:data:`TOPIC`) by every API that sets them (``kafkalite.config.describe``).

Defaults are kafkalite's where they differ from Kafka's (noted in the doc line); ``None`` means "unset"
(Kafka's ``null``). Kafka settings kafkalite accepts but does not act on are listed by name in
``kafkalite.config.kafka39`` and named as such at start.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkalite.config.addresses import check_listener_list, parse_address
from kafkalite.config.releases import DEFAULT_PROFILE, RELEASES

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
SHORT_MIN, SHORT_MAX = -(2**15), 2**15 - 1
# LegacyRecord.RECORD_OVERHEAD_V0 (crc 4 + magic 1 + attributes 1 + key length 4 + value length 4): Kafka's
# lower bound for segment.bytes / log.segment.bytes
RECORD_OVERHEAD_V0 = 14
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
CLEANUP_POLICIES = ("compact", "delete")

Validator = Callable[[Any], "str | None"]   # the parsed value -> why it is invalid, or None


class InvalidConfig(ValueError):
    """A value that does not parse or is out of range; the message is one line naming key and value."""

    def __init__(self, name: str, value: object, why: str) -> None:
        super().__init__(f"Invalid value {value} for configuration {name}: {why}")
        self.name = name
        self.value = value
        self.why = why


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    type: str                   # int, long, short, double, boolean, string, list, class, password
    default: str | None
    doc: str
    validator: Validator | None = None
    valid: str = ""             # the valid values, as Kafka's docs write them

    def parse(self, raw: object) -> Any:
        """The typed value of ``raw`` (a string, or already typed); raises InvalidConfig."""
        return parse(self, raw)


def at_least(low: float) -> tuple[Validator, str]:
    return (lambda v: None if v >= low else f"Value must be at least {low}"), f"[{low},...]"


def between(low: float, high: float) -> tuple[Validator, str]:
    def check(v: Any) -> str | None:
        if v < low:
            return f"Value must be at least {low}"
        if v > high:
            return f"Value must be no more than {high}"
        return None
    return check, f"[{low},...,{high}]"


def one_of(*values: str) -> tuple[Validator, str]:
    return (lambda v: None if v in values else f"String must be one of: {', '.join(values)}"), \
        f"[{', '.join(values)}]"


def _overrides_rule() -> tuple[Validator, str]:
    """max.connections.per.ip.overrides: host:count pairs (syntax only; host names resolve at start)."""
    def check(value: str) -> str | None:
        for entry in (e.strip() for e in value.split(",")):
            host, sep, count = entry.rpartition(":")
            if entry and (not sep or not host or not count.strip().isdigit()):
                return f"entry {entry!r} is not host:count with a count of at least 0"
        return None
    return check, "host:count,..."


def _share_reset_rule() -> tuple[Validator, str]:
    """kafkalite.share.auto.offset.reset: earliest, latest or by_duration:<ISO-8601> as the group config (the
    parser, kafkalite.config.share_reset, is imported when a value is checked, not at start)."""
    def check(value: str) -> str | None:
        from kafkalite.config.share_reset import broker_default_error  # when a value is checked: not at start

        return broker_default_error(value)

    return check, "[earliest, latest, by_duration:<PnDTnHnMn.nS.>]"


class BadElement(ValueError):
    """A list element a validator refuses: Kafka's ValidList names the element, not the whole list."""

    def __init__(self, value: str, why: str) -> None:
        super().__init__(why)
        self.value = value
        self.why = why


def each_of(*values: str) -> tuple[Validator, str]:
    def check(v: list[str]) -> str | None:
        bad = [x for x in v if x not in values]
        if bad:   # ConfigDef.ValidString's wording, for the first element refused
            raise BadElement(bad[0], f"String must be one of: {', '.join(values)}")
        return None
    return check, f"[{', '.join(values)}]"


def _throttled_replicas(v: list[str]) -> str | None:
    """Kafka's ThrottledReplicaListValidator: ``*`` or ``partition:broker`` pairs of integers."""
    if v == ["*"]:
        return None
    for item in v:
        p, sep, b = item.partition(":")
        if not sep or not _is_java_integer(p.strip()) or not _is_java_integer(b.strip()):
            return "must be the literal '*' or a list of replicas in the form [partitionId]:[brokerId]"
    return None


def _message_format_version(v: str) -> str | None:
    parts = v.split("-", 1)
    nums = parts[0].split(".")
    if not (2 <= len(nums) <= 3 and all(n.isdigit() for n in nums)) or \
            (len(parts) == 2 and not (parts[1].startswith("IV") and parts[1][2:].isdigit())):
        return "not a Kafka version (e.g. 3.0-IV1)"
    return None


def parse(d: ConfigDef, raw: object) -> Any:
    text = str(raw).strip() if not isinstance(raw, bool) else str(raw).lower()
    t = d.type
    try:
        if t in ("int", "long", "short"):
            if isinstance(raw, bool) or not _is_java_integer(text):
                raise InvalidConfig(d.name, raw, f"Not a number of type {t.upper()}")
            value: Any = int(text)
            low, high = {"int": (INT_MIN, INT_MAX), "long": (LONG_MIN, LONG_MAX), "short": (SHORT_MIN, SHORT_MAX)}[t]
            if not low <= value <= high:
                raise InvalidConfig(d.name, raw, f"Not a number of type {t.upper()} (out of range)")
        elif t == "double":
            value = float(text)
            if not math.isfinite(value):
                raise InvalidConfig(d.name, raw, "Not a finite number")
        elif t == "boolean":
            if text.lower() not in ("true", "false"):
                raise InvalidConfig(d.name, raw, "Expected value to be either true or false")
            value = text.lower() == "true"
        elif t == "list":
            value = [x.strip() for x in text.split(",") if x.strip()]
        else:
            value = text
    except ValueError as exc:
        if isinstance(exc, InvalidConfig):
            raise
        raise InvalidConfig(d.name, raw, f"Not a number of type {t.upper()}") from None
    if d.validator is not None:
        try:
            why = d.validator(value)
        except BadElement as exc:
            raise InvalidConfig(d.name, exc.value, exc.why) from None
        if why is not None:
            raise InvalidConfig(d.name, raw, why)
    return value


def _is_java_integer(text: str) -> bool:
    """Java's Integer/Long.parseInt syntax: optional sign, ASCII digits (no '_', no spaces inside)."""
    body = text[1:] if text[:1] in "+-" else text
    return body.isascii() and body.isdigit()


def _def(name: str, type_: str, default: str | None, doc: str, rule: tuple[Validator, str] | None = None,
         ) -> ConfigDef:
    validator, valid = rule if rule is not None else (None, "")
    return ConfigDef(name, type_, default, doc, validator, valid)


def _metrics_rule() -> tuple[Validator, str]:
    def check(value: str) -> str | None:
        if not value.strip():
            return None   # empty: off, like unset (a container turns an image's default off this way)
        try:
            parse_address(value)
        except ValueError as exc:
            return str(exc)
        return None
    return check, "HOST:PORT"


def _listeners_rule() -> tuple[Validator, str]:
    def check(value: str) -> str | None:
        return check_listener_list(value)

    return check, "NAME://host:port,... (port 0-65535)"


def _release_rule() -> tuple[Validator, str]:
    return one_of(*sorted(RELEASES))


BROKER: dict[str, ConfigDef] = {d.name: d for d in (
    # -- listeners and identity
    _def("listeners", "string", "PLAINTEXT://127.0.0.1:9092",
         "addresses to listen on, NAME://host:port (Kafka's default: PLAINTEXT://:9092)", _listeners_rule()),
    _def("advertised.listeners", "string", None, "addresses clients are told to use (default: the bound ones)",
         _listeners_rule()),
    _def("listener.security.protocol.map", "string",
         "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
         "listener name -> security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL); a listener name missing "
         "from it is served as PLAINTEXT with a warning (Kafka refuses it)"),
    _def("inter.broker.listener.name", "string", None, "accepted (one broker): must name a listener"),
    _def("security.inter.broker.protocol", "string", "PLAINTEXT", "accepted (one broker)",
         one_of("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")),
    # -- SASL (kafkalite.security; each may be per listener: listener.name.<l>.<setting>)
    _def("sasl.enabled.mechanisms", "list", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
         "mechanisms a SASL listener offers: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (unsecured tokens, "
         "for development) (Kafka: GSSAPI)"),
    _def("sasl.mechanism.inter.broker.protocol", "string", "GSSAPI", "accepted (one broker)"),
    _def("sasl.server.max.receive.size", "int", "524288", "largest request before SASL authentication completes"),
    _def("connection.failed.authentication.delay.ms", "int", "100",
         "close a connection this long after its authentication failed (KIP-306)", at_least(0)),
    _def("connections.max.reauth.ms", "long", "0",
         "KIP-368: a SASL session lasts at most this long, then the client must re-authenticate (0: for ever)"),
    # -- delegation tokens (kafkalite.security.tokens)
    _def("delegation.token.secret.key", "password", None,
         "secret that signs delegation tokens (HMAC-SHA512); unset: the feature is off"),
    _def("delegation.token.max.lifetime.ms", "long", "604800000",
         "a token cannot be renewed past this age", at_least(1)),
    _def("delegation.token.expiry.time.ms", "long", "86400000",
         "a token expires this long after its creation or renewal unless renewed", at_least(1)),
    _def("delegation.token.expiry.check.interval.ms", "long", "3600000",
         "how often expired tokens are removed", at_least(1)),
    # -- TLS (kafkalite.security.tls_config; each may be per listener: listener.name.<l>.ssl.*)
    _def("ssl.keystore.type", "string", "PEM", "key store format; kafkalite reads PEM only (Kafka: JKS)"),
    _def("ssl.keystore.location", "string", None, "PEM file with the private key and the certificate chain"),
    _def("ssl.keystore.certificate.chain", "password", None, "the certificate chain, inline PEM"),
    _def("ssl.keystore.key", "password", None, "the private key, inline PEM"),
    _def("ssl.keystore.password", "password", None, "not allowed with PEM (use ssl.key.password)"),
    _def("ssl.key.password", "password", None, "password of an encrypted private key"),
    _def("ssl.truststore.type", "string", "PEM", "trust store format; kafkalite reads PEM only (Kafka: JKS)"),
    _def("ssl.truststore.location", "string", None, "PEM file of the CA certificates client certificates "
         "are checked against"),
    _def("ssl.truststore.certificates", "password", None, "the trusted CA certificates, inline PEM"),
    _def("ssl.truststore.password", "password", None, "accepted, not used with PEM"),
    _def("ssl.client.auth", "string", "none", "client certificates: none, requested (checked if sent), "
         "required (mTLS)", one_of("required", "requested", "none")),
    _def("ssl.enabled.protocols", "list", "TLSv1.2,TLSv1.3", "TLS versions served",
         each_of("TLSv1.2", "TLSv1.3")),
    _def("ssl.protocol", "string", "TLSv1.3", "accepted (ssl.enabled.protocols decides)"),
    _def("ssl.cipher.suites", "list", "", "TLS 1.2 cipher suites (IANA or OpenSSL names; empty: OpenSSL's "
         "defaults); TLS 1.3 suites cannot be restricted"),
    _def("ssl.principal.mapping.rules", "string", "DEFAULT",
         "client certificate subject -> principal name: DEFAULT, RULE:pattern/replacement/[LU], ..."),
    _def("ssl.endpoint.identification.algorithm", "string", "https", "accepted (a broker does not verify "
         "client host names)"),
    _def("kafkalite.ssl.handshake.timeout.ms", "long", "10000",
         "close a TLS connection whose handshake has not finished this long after it was accepted", at_least(1)),
    _def("log.dirs", "string", None, "the log directory (kafkalite uses the first one)"),
    _def("log.dir", "string", "./kafkalite-data", "the log directory if log.dirs is unset (Kafka: /tmp/kafka-logs)"),
    _def("node.id", "int", "1", "this broker's id (Kafka's default -1 means 'must be set')"),
    _def("broker.id", "int", None, "the old name of node.id"),
    # -- topics
    _def("num.partitions", "int", "1", "partitions of a topic created with the default", at_least(1)),
    _def("default.replication.factor", "int", "1", "replication factor of auto-created topics"),
    _def("auto.create.topics.enable", "boolean", "true", "create a topic on the first Metadata/Produce for it"),
    _def("delete.topic.enable", "boolean", "true", "allow DeleteTopics"),
    # -- log defaults of topics (the log.* synonyms of topic configs)
    _def("log.segment.bytes", "int", str(1024**3), "segment file size", at_least(RECORD_OVERHEAD_V0)),
    _def("log.roll.ms", "long", None, "roll a segment after this long (overrides log.roll.hours)", at_least(1)),
    _def("log.roll.hours", "int", "168", "roll a segment after this many hours", at_least(1)),
    _def("log.roll.jitter.ms", "long", None, "random jitter subtracted from the roll time", at_least(0)),
    _def("log.retention.ms", "long", None, "delete segments older than this (-1: never)", at_least(-1)),
    _def("log.retention.minutes", "int", None, "as log.retention.ms, in minutes"),
    _def("log.retention.hours", "int", "168", "as log.retention.ms, in hours"),
    _def("log.retention.bytes", "long", "-1", "delete old segments beyond this size per partition (-1: no limit)"),
    _def("log.retention.check.interval.ms", "long", "300000", "how often retention runs", at_least(1)),
    _def("log.initial.task.delay.ms", "long", "30000",
         "how long after start retention first runs (Kafka's internal config, for tests)", at_least(0)),
    _def("log.cleaner.backoff.ms", "long", "15000", "how often the cleaner looks for work", at_least(0)),
    _def("log.cleaner.delete.retention.ms", "long", "86400000", "keep tombstones this long", at_least(0)),
    _def("log.cleaner.min.compaction.lag.ms", "long", "0", "minimum age before compaction", at_least(0)),
    _def("log.cleaner.max.compaction.lag.ms", "long", str(LONG_MAX), "maximum age before compaction",
         at_least(1)),
    _def("log.cleaner.min.cleanable.ratio", "double", "0.5", "dirty ratio that triggers compaction",
         between(0, 1)),
    _def("log.segment.delete.delay.ms", "long", "60000", "delay before a deleted segment's file goes",
         at_least(0)),
    _def("log.flush.offset.checkpoint.interval.ms", "int", "60000", "how often checkpoints are written",
         at_least(0)),
    _def("log.index.interval.bytes", "int", "4096", "bytes between offset index entries", at_least(0)),
    _def("log.index.size.max.bytes", "int", str(10 * 1024 * 1024), "maximum offset index size", at_least(4)),
    _def("log.cleanup.policy", "list", "delete", "delete and/or compact", each_of(*CLEANUP_POLICIES)),
    _def("log.flush.interval.messages", "long", str(LONG_MAX), "fsync after this many messages", at_least(1)),
    _def("log.flush.interval.ms", "long", None, "fsync after this long"),
    _def("log.preallocate", "boolean", "false", "preallocate segment files"),
    _def("log.message.timestamp.type", "string", "CreateTime", "the timestamp stored in batches",
         one_of(*TIMESTAMP_TYPES)),
    _def("log.message.timestamp.before.max.ms", "long", str(LONG_MAX),
         "how far in the past a CreateTime may be", at_least(0)),
    _def("log.message.timestamp.after.max.ms", "long", str(LONG_MAX),
         "how far in the future a CreateTime may be", at_least(0)),
    _def("log.message.timestamp.difference.max.ms", "long", str(LONG_MAX),
         "how far a CreateTime may be from now (deprecated by the two above)", at_least(0)),
    _def("compression.type", "string", "producer", "the codec batches are stored with", one_of(*COMPRESSION_TYPES)),
    _def("message.max.bytes", "int", "1048588", "largest record batch accepted", at_least(0)),
    _def("min.insync.replicas", "int", "1", "acks=all replicas required (one broker: 1)", at_least(1)),
    _def("unclean.leader.election.enable", "boolean", "false", "accepted for compatibility"),
    _def("replica.lag.time.max.ms", "long", "30000",
         "a follower not caught up for this long leaves the ISR (kafkalite serve --brokers N)", at_least(1)),
    _def("replica.fetch.wait.max.ms", "int", "500",
         "longest a follower's replication task waits for new data before looking again", at_least(1)),
    # -- network and request memory
    _def("socket.request.max.bytes", "int", str(100 * 1024 * 1024), "largest request frame", at_least(1)),
    _def("queued.max.request.bytes", "long", str(256 * 1024 * 1024),
         "request bytes buffered across all connections (Kafka: -1, no bound)"),
    _def("connections.max.idle.ms", "long", "600000", "close connections idle this long"),
    _def("max.connections", "int", str(INT_MAX),
         "connections across all listeners; at the limit the listeners stop accepting until one closes", at_least(0)),
    _def("max.connections.per.ip", "int", str(INT_MAX),
         "connections from one address; one more is accepted and closed at once", at_least(0)),
    _def("max.connections.per.ip.overrides", "string", "",
         "host:count pairs, comma-separated, replacing max.connections.per.ip for those addresses",
         _overrides_rule()),
    # -- group coordinator
    _def("group.initial.rebalance.delay.ms", "int", "0", "wait for more members before the first rebalance "
         "(Kafka: 3000)"),
    _def("group.min.session.timeout.ms", "int", "6000", "smallest session timeout a member may ask for"),
    _def("group.max.session.timeout.ms", "int", "1800000", "largest session timeout a member may ask for"),
    _def("group.max.size", "int", str(INT_MAX), "most members of one group", at_least(1)),
    _def("group.consumer.heartbeat.interval.ms", "int", "5000",
         "heartbeat interval given to consumer-protocol (KIP-848) members", at_least(1)),
    _def("group.consumer.session.timeout.ms", "int", "45000",
         "a consumer-protocol member without a heartbeat this long is removed", at_least(1)),
    _def("group.consumer.assignors", "list", "uniform,range",
         "server-side assignors of consumer groups (the first is the default)", each_of("uniform", "range")),
    _def("group.consumer.max.size", "int", str(INT_MAX), "most members of one consumer group", at_least(1)),
    _def("group.consumer.migration.policy", "string", "bidirectional",
         "online conversion between classic and consumer groups (Kafka 4.0's default: bidirectional)",
         one_of("bidirectional", "upgrade", "downgrade", "disabled")),
    # bounds of the per-group configs (GROUP config resources, kafkalite.metadata.group_configs), Kafka's defaults
    _def("group.consumer.min.session.timeout.ms", "int", "45000", "smallest consumer.session.timeout.ms a group "
         "config may set", at_least(1)),
    _def("group.consumer.max.session.timeout.ms", "int", "60000", "largest consumer.session.timeout.ms a group "
         "config may set", at_least(1)),
    _def("group.consumer.min.heartbeat.interval.ms", "int", "5000", "smallest consumer.heartbeat.interval.ms a "
         "group config may set", at_least(1)),
    _def("group.consumer.max.heartbeat.interval.ms", "int", "15000", "largest consumer.heartbeat.interval.ms a "
         "group config may set", at_least(1)),
    _def("offsets.retention.minutes", "int", "10080", "keep committed offsets of empty groups this long",
         at_least(1)),
    _def("offsets.retention.check.interval.ms", "long", "600000", "how often expired offsets go", at_least(1)),
    _def("offset.metadata.max.bytes", "int", "4096", "largest commit metadata string"),
    _def("offsets.topic.num.partitions", "int", "50", "partitions of __consumer_offsets", at_least(1)),
    _def("offsets.topic.replication.factor", "short", "1", "replication of __consumer_offsets (Kafka: 3)",
         at_least(1)),
    _def("offsets.topic.segment.bytes", "int", str(100 * 1024 * 1024), "segment size of __consumer_offsets",
         at_least(1)),
    # -- transaction coordinator
    _def("transaction.state.log.num.partitions", "int", "50", "partitions of __transaction_state", at_least(1)),
    _def("transaction.state.log.replication.factor", "short", "1",
         "replication of __transaction_state (Kafka: 3)", at_least(1)),
    _def("transaction.state.log.segment.bytes", "int", str(100 * 1024 * 1024),
         "segment size of __transaction_state", at_least(1)),
    _def("transactional.id.expiration.ms", "int", "604800000", "forget idle transactional ids after this long",
         at_least(1)),
    _def("transaction.max.timeout.ms", "int", "900000", "largest transaction timeout a producer may ask for",
         at_least(1)),
    # -- authorization and quotas (kafkalite.authz, kafkalite.quotas)
    _def("authorizer.class.name", "class", "", "enables ACLs: org.apache.kafka.metadata.authorizer."
         "StandardAuthorizer (or kafka.security.authorizer.AclAuthorizer, same behaviour); empty: none"),
    _def("super.users", "string", None, "principals allowed everything, ';'-separated (User:admin;User:ops)"),
    _def("allow.everyone.if.no.acl.found", "boolean", "false", "allow access to a resource no ACL names"),
    _def("quota.window.num", "int", "11", "samples kept for client quota rates", at_least(1)),
    _def("quota.window.size.seconds", "int", "1", "length of one client quota sample", at_least(1)),
    # -- share groups (KIP-932)
    _def("group.share.record.lock.duration.ms", "int", "30000", "how long a share consumer holds an acquired "
         "record before it is delivered to another", between(1000, 3600000)),
    _def("group.share.delivery.count.limit", "int", "5", "deliveries of one record before it is archived",
         between(2, 10)),
    _def("group.share.partition.max.record.locks", "int", "2000", "most offsets in flight per share-partition",
         between(100, 10000)),
    _def("group.share.session.timeout.ms", "int", "45000", "remove a share group member silent this long",
         at_least(1)),
    _def("group.share.heartbeat.interval.ms", "int", "5000", "heartbeat interval told to share group members",
         at_least(1)),
    _def("group.share.min.session.timeout.ms", "int", "45000", "smallest share.session.timeout.ms a group "
         "config may set", at_least(1)),
    _def("group.share.max.session.timeout.ms", "int", "60000", "largest share.session.timeout.ms a group "
         "config may set", at_least(1)),
    _def("group.share.min.heartbeat.interval.ms", "int", "5000", "smallest share.heartbeat.interval.ms a group "
         "config may set", at_least(1)),
    _def("group.share.max.heartbeat.interval.ms", "int", "15000", "largest share.heartbeat.interval.ms a group "
         "config may set", at_least(1)),
    _def("group.share.min.record.lock.duration.ms", "int", "15000", "smallest share.record.lock.duration.ms a "
         "group config may set", between(1000, 30000)),
    _def("group.share.max.record.lock.duration.ms", "int", "60000", "largest share.record.lock.duration.ms a "
         "group config may set", between(30000, 3600000)),
    _def("group.share.max.size", "int", "200", "most members of one share group", between(1, 1000)),
    _def("group.share.max.share.sessions", "int", "2000", "most share sessions on the broker", at_least(1)),
    _def("share.coordinator.state.topic.num.partitions", "int", "50", "partitions of __share_group_state",
         at_least(1)),
    _def("share.coordinator.state.topic.segment.bytes", "int", str(100 * 1024 * 1024),
         "segment size of __share_group_state", at_least(1)),
    _def("share.coordinator.snapshot.update.records.per.snapshot", "int", "500",
         "ShareUpdate records per share-partition before a new ShareSnapshot", between(0, 500)),
    _def("share.coordinator.state.topic.prune.interval.ms", "long", "300000",
         "how often records of __share_group_state older than every live snapshot are deleted", at_least(1)),
    _def("share.coordinator.cold.partition.snapshot.interval.ms", "int", "300000",
         "how often share-partitions idle that long get a fresh ShareSnapshot (so pruning can pass them)",
         at_least(1)),
    _def("kafkalite.share.auto.offset.reset", "string", "latest", "where a share group starts reading a "
         "partition when its group config share.auto.offset.reset is not set (Kafka: latest)",
         _share_reset_rule()),
    _def("kafkalite.share.isolation.level", "string", "read_uncommitted", "share.isolation.level of groups "
         "that do not set it (Kafka: read_uncommitted)", one_of("read_uncommitted", "read_committed")),
    # -- kafkalite's own
    _def("kafkalite.emulate.kafka", "string", DEFAULT_PROFILE, "the Kafka release to present: its API versions, "
         "features and configs (default: Kafka 4.4's, serving also the versions Kafka 3.9 served)",
         _release_rule()),
    _def("kafkalite.shutdown.drain.ms", "long", "5000", "how long in-flight requests may finish at shutdown",
         at_least(0)),
    _def("kafkalite.request.stall.ms", "long", "1000",
         "while others wait for request memory, close a connection that has held part of a request for this "
         "long while waiting on its client (0: never)", at_least(0)),
    _def("kafkalite.request.body.timeout.ms", "long", "10000",
         "close a connection whose request body has not arrived this long after its first wait for it "
         "(<= 0: never)"),
    _def("kafkalite.max.uncompressed.batch.bytes", "long", None,
         "bound on the inflated size of one compressed produce batch (unset: 64 x the topic's max.message.bytes)",
         at_least(1)),
    _def("kafkalite.loop.stall.warn.ms", "long", "100",
         "log a warning when the event loop is held longer than this (0: never)", at_least(0)),
    _def("kafkalite.storage.max.open.files", "int", "0",
         "storage files kept open at once (an LRU of descriptors); 0: half of the soft RLIMIT_NOFILE, which "
         "the broker first raises to the hard limit (the other half is for client sockets)", at_least(0)),
    _def("kafkalite.metrics.listen", "string", None,
         "HOST:PORT of the Prometheus /metrics and /health endpoint (unset or empty: off)", _metrics_rule()),
    _def("kafkalite.console.listen", "string", None,
         "HOST:PORT of the web console (unset or empty: off; loopback unless a host is named)", _metrics_rule()),
    _def("kafkalite.control.listen", "string", None,
         "HOST:PORT of the HTTP fault/cluster control API (unset or empty: off; loopback only unless "
         "kafkalite.control.allow.remote)", _metrics_rule()),
    _def("kafkalite.schema.registry.listen", "string", None,
         "HOST:PORT of the built-in Confluent-compatible Schema Registry (unset or empty: off; the schemas are kept "
         "in the _schemas topic)", _metrics_rule()),
    _def("kafkalite.schema.registry.authentication.method", "string", "NONE",
         "NONE, or BASIC: the schema registry asks for HTTP Basic credentials, checked against the broker's SASL "
         "users (PLAIN JAAS users, SCRAM credentials); with an authorizer on, subjects are authorized as their "
         "topics' ACLs say (kafkalite.registry.auth)", one_of("NONE", "BASIC")),
    _def("kafkalite.control.allow.remote", "boolean", "false",
         "let kafkalite.control.listen bind a non-loopback address (anyone who reaches it can inject faults)"),
)}


TOPIC: dict[str, ConfigDef] = {d.name: d for d in (
    _def("cleanup.policy", "list", "delete", "delete and/or compact", each_of(*CLEANUP_POLICIES)),
    _def("compression.type", "string", "producer", "codec", one_of(*COMPRESSION_TYPES)),
    _def("compression.gzip.level", "int", "-1", "gzip level (accepted, not used: batches are stored as sent)",
         (lambda v: None if v == -1 or 1 <= v <= 9 else "Value must be between 1 and 9 or equal to -1",
          "[1,...,9] or -1")),
    _def("compression.lz4.level", "int", "9", "lz4 level (accepted, not used)", between(1, 17)),
    _def("compression.zstd.level", "int", "3", "zstd level (accepted, not used)", between(-131072, 22)),
    _def("delete.retention.ms", "long", "86400000", "keep tombstones this long", at_least(0)),
    _def("file.delete.delay.ms", "long", "60000", "delay before a deleted segment's file goes", at_least(0)),
    _def("flush.messages", "long", str(LONG_MAX), "fsync after this many messages", at_least(1)),
    _def("flush.ms", "long", str(LONG_MAX), "fsync after this long", at_least(0)),
    _def("follower.replication.throttled.replicas", "list", "", "accepted, not used (one broker)",
         (_throttled_replicas, "[partitionId]:[brokerId],... or *")),
    _def("index.interval.bytes", "int", "4096", "bytes between offset index entries", at_least(0)),
    _def("leader.replication.throttled.replicas", "list", "", "accepted, not used (one broker)",
         (_throttled_replicas, "[partitionId]:[brokerId],... or *")),
    _def("local.retention.bytes", "long", "-2", "accepted, not used (no tiered storage)", at_least(-2)),
    _def("local.retention.ms", "long", "-2", "accepted, not used (no tiered storage)", at_least(-2)),
    _def("max.compaction.lag.ms", "long", str(LONG_MAX), "maximum age before compaction", at_least(1)),
    _def("max.message.bytes", "int", "1048588", "largest record batch", at_least(0)),
    _def("message.downconversion.enable", "boolean", "true", "accepted, not used"),
    _def("message.format.version", "string", "3.0-IV1", "accepted, not used (v2 batches only)",
         (_message_format_version, "a Kafka version, e.g. 3.0-IV1")),
    _def("message.timestamp.after.max.ms", "long", str(LONG_MAX), "how far in the future a CreateTime may be",
         at_least(0)),
    _def("message.timestamp.before.max.ms", "long", str(LONG_MAX), "how far in the past a CreateTime may be",
         at_least(0)),
    _def("message.timestamp.difference.max.ms", "long", str(LONG_MAX), "how far a CreateTime may be from now",
         at_least(0)),
    _def("message.timestamp.type", "string", "CreateTime", "the timestamp stored", one_of(*TIMESTAMP_TYPES)),
    _def("min.cleanable.dirty.ratio", "double", "0.5", "dirty ratio that triggers compaction", between(0, 1)),
    _def("min.compaction.lag.ms", "long", "0", "minimum age before compaction", at_least(0)),
    _def("min.insync.replicas", "int", "1", "acks=all replicas required", at_least(1)),
    _def("preallocate", "boolean", "false", "preallocate segment files"),
    _def("remote.log.copy.disable", "boolean", "false", "accepted, not used (no tiered storage)"),
    _def("remote.log.delete.on.disable", "boolean", "false", "accepted, not used (no tiered storage)"),
    _def("remote.storage.enable", "boolean", "false", "accepted, not used (no tiered storage)"),
    _def("retention.bytes", "long", "-1", "delete old segments beyond this size (-1: no limit)"),
    _def("retention.ms", "long", "604800000", "delete segments older than this (-1: never)", at_least(-1)),
    _def("segment.bytes", "int", str(1024**3), "segment file size", at_least(RECORD_OVERHEAD_V0)),
    _def("segment.index.bytes", "int", str(10 * 1024 * 1024), "maximum offset index size", at_least(4)),
    _def("segment.jitter.ms", "long", "0", "random jitter subtracted from the roll time", at_least(0)),
    _def("segment.ms", "long", "604800000", "roll a segment after this long", at_least(1)),
    _def("unclean.leader.election.enable", "boolean", "false", "accepted, not used (one broker)"),
)}


def check_topic_configs(values: Mapping[str, object], release: str = "3.9") -> str | None:
    """Why these topic config overrides are not acceptable (unknown name or bad value), or None."""
    defs = _TOPIC_BY_RELEASE[release]
    for name, raw in values.items():
        d = defs.get(name)
        if d is None:
            return f"Unknown topic config name: {name}"
        if raw is None:
            continue
        try:
            d.parse(raw)
        except InvalidConfig as exc:
            return str(exc)
    if str(values.get("remote.storage.enable", "")).strip().lower() == "true":   # LogConfig.validate
        return ("Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote "
                "log storage.")
    return None


# -- the tables of later releases ------------------------------------------------------------------------------
# ``BROKER`` and ``TOPIC`` above are Kafka 3.9's. A profile follows the configs of one release
# (``kafkalite.config.releases.config_release``); Kafka 4.x changed these (LogConfig, ServerLogConfigs):
# - removed message.timestamp.difference.max.ms (deprecated in 3.6 by the before/after pair),
#   message.format.version and message.downconversion.enable (KIP-724) and their broker settings: unknown names;
# - message.timestamp.after.max.ms defaults to one hour (KIP-1030: far-future timestamps are refused);
# - segment.bytes / log.segment.bytes must be at least 1 MiB (KIP-1030); tests set the internal topic config
#   internal.segment.bytes instead, which DescribeConfigs lists only when set;
# - 4.4 added errors.deadletterqueue.group.enable (KIP-1191), remote.copy.lag.ms/.bytes (tiered storage) and
#   max.decompressed.message.bytes.
ONE_MIB = 1024 * 1024
_REMOVED_IN_4 = ("message.timestamp.difference.max.ms", "message.format.version", "message.downconversion.enable")


def _topic_4(release: str) -> dict[str, ConfigDef]:
    out = {n: d for n, d in TOPIC.items() if n not in _REMOVED_IN_4}
    out["segment.bytes"] = _def("segment.bytes", "int", str(1024**3), "segment file size", at_least(ONE_MIB))
    out["message.timestamp.after.max.ms"] = _def(
        "message.timestamp.after.max.ms", "long", "3600000", "how far in the future a CreateTime may be",
        at_least(0))
    out["internal.segment.bytes"] = _def("internal.segment.bytes", "int", None,
                                         "segment file size below segment.bytes' minimum, for tests (Kafka's "
                                         "internal config, which wins over segment.bytes; Kafka checks no range, "
                                         "kafkalite storage's own minimum applies)", at_least(RECORD_OVERHEAD_V0))
    if release != "4.3":
        for d in (
            _def("errors.deadletterqueue.group.enable", "boolean", "false",
                 "the topic may be a share group's dead-letter queue (KIP-1191; else records for it are archived "
                 "without being written)"),
            _def("max.decompressed.message.bytes", "int", "2147483639",
                 "accepted, not used (kafkalite.max.uncompressed.batch.bytes bounds decompression)",
                 between(1, 2147483639)),
            _def("remote.copy.lag.bytes", "long", "-1", "accepted, not used (no tiered storage)", at_least(-1)),
            _def("remote.copy.lag.ms", "long", "0", "accepted, not used (no tiered storage)", at_least(-1)),
        ):
            out[d.name] = d
    return dict(sorted(out.items()))


def _broker_4(release: str) -> dict[str, ConfigDef]:
    out = {n: d for n, d in BROKER.items() if n != "log.message.timestamp.difference.max.ms"}
    if release != "4.3":   # the share group dead-letter queue (KIP-1191, kafkalite.coordinator.share.dlq)
        for d in (
            _def("errors.deadletterqueue.auto.create.topics.enable", "boolean", "false",
                 "create a share group's missing DLQ topic when a record first goes to it"),
            _def("errors.deadletterqueue.topic.name.prefix", "string", "dlq.",
                 "the prefix every share group DLQ topic name must have (\"\": any name)"),
        ):
            out[d.name] = d
    out["log.segment.bytes"] = _def("log.segment.bytes", "int", str(1024**3), "segment file size",
                                    at_least(ONE_MIB))
    out["log.message.timestamp.after.max.ms"] = _def(
        "log.message.timestamp.after.max.ms", "long", "3600000", "how far in the future a CreateTime may be",
        at_least(0))
    return out


_TOPIC_BY_RELEASE = {"3.9": TOPIC, "4.3": _topic_4("4.3"), "4.4": _topic_4("4.4")}
_BROKER_BY_RELEASE = {"3.9": BROKER, "4.3": _broker_4("4.3"), "4.4": _broker_4("4.4")}


def topic_defs(release: str) -> dict[str, ConfigDef]:
    """The topic configs of a config release ("3.9", "4.3", "4.4"; ``releases.config_release``)."""
    return _TOPIC_BY_RELEASE[release]


def broker_defs(release: str) -> dict[str, ConfigDef]:
    """The broker settings kafkalite reads, as a config release defines them."""
    return _BROKER_BY_RELEASE[release]
