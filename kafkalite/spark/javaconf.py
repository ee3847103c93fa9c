"""The Java client properties a Spark user writes after ``kafka.``, as librdkafka settings.

Spark's ``kafka`` format hands every ``kafka.*`` option to Java's ``KafkaConsumer`` / ``KafkaProducer``. Java takes
the names it knows and only warns about the others ("supplied but not used"); it refuses nothing by name. The
``kafkalite`` format runs on librdkafka (confluent-kafka), which refuses any name it does not know. To be a
drop-in, each option is therefore one of:

- a name librdkafka has with the same meaning (``bootstrap.servers``, ``client.id``, ``fetch.min.bytes``,
  ``isolation.level``, ``security.protocol``, ``acks``, ``linger.ms``, ...): passed as it is;
- a Java name with a librdkafka equivalent under another name or unit (:data:`RENAMED`, :func:`_convert`):
  ``fetch.max.wait.ms`` -> ``fetch.wait.max.ms``, ``receive.buffer.bytes`` -> ``socket.receive.buffer.bytes``,
  ``buffer.memory`` -> ``queue.buffering.max.kbytes``, ``sasl.jaas.config`` -> ``sasl.username``/``password``,
  a PEM truststore -> ``ssl.ca.location``, ...;
- a Java-only name that cannot change what the connector reads or writes (:data:`JAVA_ONLY`: API timeouts,
  ``max.poll.records``, metrics, the group-membership settings of a consumer that only ``assign()``s, the JVM's
  TLS provider knobs): accepted, dropped, and said once in the log (a warning of logger ``kafkalite.spark``);
- a name that neither client knows: dropped with a logged line, as Java warns and goes on. Whether librdkafka
  knows a name not in the tables above is asked of librdkafka itself, once per name and process.

The refusals (``auto.offset.reset``, the (de)serializers, ...) are Spark's own and stay in ``options.py``.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

log = logging.getLogger("kafkalite.spark")

# Java name -> librdkafka name, same value
RENAMED = {
    "fetch.max.wait.ms": "fetch.wait.max.ms",
    "max.request.size": "message.max.bytes",
    "ssl.truststore.certificates": "ssl.ca.pem",
    "ssl.keystore.key": "ssl.key.pem",
    "ssl.keystore.certificate.chain": "ssl.certificate.pem",
}

# Java-only names that cannot matter to a connector that assigns partitions, reads offset ranges and writes
# records: why each is dropped (the logged line says it)
_GROUP = "the connector's consumers only assign() partitions and never join a group"
JAVA_ONLY = {
    "default.api.timeout.ms": "the connector bounds its own waits (kafkaConsumer.pollTimeoutMs)",
    "request.timeout.ms": "librdkafka's consumer has no per-request timeout; the connector bounds its waits",
    "max.poll.records": "the connector reads whole offset ranges, not poll() batches",
    "max.block.ms": "librdkafka's produce() never blocks on metadata",
    "exclude.internal.topics": "subscribePattern never matches internal topics",
    "partition.assignment.strategy": _GROUP,
    "group.instance.id": _GROUP,
    "group.protocol": _GROUP,
    "group.remote.assignor": _GROUP,
    "session.timeout.ms": _GROUP,
    "heartbeat.interval.ms": _GROUP,
    "max.poll.interval.ms": _GROUP,
    "auto.commit.interval.ms": _GROUP,
    "internal.leave.group.on.close": _GROUP,
    "internal.throw.on.fetch.stable.offset.unsupported": "a Java client internal",
    "metric.reporters": "Java client metrics",
    "metrics.num.samples": "Java client metrics",
    "metrics.sample.window.ms": "Java client metrics",
    "metrics.recording.level": "Java client metrics",
    "auto.include.jmx.reporter": "Java client metrics",
    "socket.connection.setup.timeout.max.ms": "librdkafka has one connection setup timeout",
    "metadata.max.idle.ms": "librdkafka ages topic metadata by metadata.max.age.ms",
    "partitioner.adaptive.partitioning.enable": "librdkafka's sticky partitioner has no adaptive mode",
    "partitioner.availability.timeout.ms": "librdkafka's sticky partitioner has no adaptive mode",
    "security.providers": "a JVM security provider",
    "config.providers": "Java config providers",
    "ssl.protocol": "OpenSSL negotiates the TLS version",
    "ssl.enabled.protocols": "OpenSSL negotiates the TLS version",
    "ssl.provider": "a JVM security provider",
    "ssl.cipher.suites": "Java's cipher suite names are not OpenSSL's",
    "ssl.keymanager.algorithm": "a JVM key manager",
    "ssl.trustmanager.algorithm": "a JVM trust manager",
    "ssl.secure.random.implementation": "a JVM random source",
    "ssl.engine.factory.class": "a JVM SSL engine",
    "ssl.truststore.type": "librdkafka reads the truststore as PEM (ssl.ca.location)",
    "ssl.truststore.password": "a PEM truststore has no password",
    "ssl.keystore.type": "the keystore's format is known from the other options",
    "sasl.login.class": "a Java login module",
    "sasl.login.callback.handler.class": "a Java login module",
    "sasl.client.callback.handler.class": "a Java login module",
    "sasl.login.refresh.window.factor": "a Java login module",
    "sasl.login.refresh.window.jitter": "a Java login module",
    "sasl.login.refresh.min.period.seconds": "a Java login module",
    "sasl.login.refresh.buffer.seconds": "a Java login module",
    "sasl.login.connect.timeout.ms": "a Java login module",
    "sasl.login.read.timeout.ms": "a Java login module",
    "sasl.login.retry.backoff.ms": "a Java login module",
    "sasl.login.retry.backoff.max.ms": "a Java login module",
    "sasl.kerberos.ticket.renew.window.factor": "a Java login module",
    "sasl.kerberos.ticket.renew.jitter": "a Java login module",
}

_JAVA_PARTITIONERS = {
    "org.apache.kafka.clients.producer.internals.DefaultPartitioner": "murmur2_random",
    "org.apache.kafka.clients.producer.UniformStickyPartitioner": "random",
}

_said: set[tuple[str, str]] = set()
_known: dict[str, bool] = {}
_lock = threading.Lock()


def _drop(key: str, why: str) -> None:
    with _lock:
        if (key, why) in _said:
            return
        _said.add((key, why))
    # a warning, as Java's client warns of the settings it does not use
    log.warning("kafka option 'kafka.%s' has no librdkafka equivalent: ignored (%s)", key, why)


def librdkafka_knows(name: str) -> bool:
    """Whether librdkafka has a setting ``name`` (asked of librdkafka: a client configured with it alone)."""
    with _lock:
        if name in _known:
            return _known[name]
    from confluent_kafka import KafkaException, Producer

    quiet = logging.getLogger("kafkalite.spark.probe")
    quiet.propagate = False
    quiet.addHandler(logging.NullHandler())
    try:
        Producer({name: "1", "logger": quiet})
        known = True
    except KafkaException as exc:
        known = "No such configuration property" not in str(exc)
    except (TypeError, ValueError):  # a value librdkafka refuses for a name it knows
        known = True
    with _lock:
        _known[name] = known
    return known


def _convert(key: str, value: str, out: dict[str, str], params: Mapping[str, str]) -> bool:
    """The settings whose value changes on the way; True when ``key`` was handled here."""
    if key in ("receive.buffer.bytes", "send.buffer.bytes"):
        # Java's -1 is "the OS default", librdkafka's 0
        out[f"socket.{key}"] = "0" if value.strip() == "-1" else value
    elif key == "buffer.memory":
        out["queue.buffering.max.kbytes"] = str(max(1, int(value) // 1024))
    elif key in ("compression.gzip.level", "compression.lz4.level", "compression.zstd.level"):
        codec = key.split(".")[1]
        if params.get("compression.type", "").strip().lower() == codec:
            out["compression.level"] = str(min(int(value), 12))
        else:
            _drop(key, f"compression.type is not {codec}")
    elif key == "partitioner.ignore.keys":
        if value.strip().lower() == "true":
            out.setdefault("partitioner", "random")
    elif key == "partitioner.class":
        if value.strip() in _JAVA_PARTITIONERS:
            out.setdefault("partitioner", _JAVA_PARTITIONERS[value.strip()])
        else:
            _drop(key, f"{value.strip()} is a Java class")
    elif key == "sasl.jaas.config":
        # our codec's client parses the JAAS line (imported only for it)
        from kafkalite.client.wire import Security

        sec = Security.from_params({"sasl.jaas.config": value})
        if sec.username is not None:
            out.setdefault("sasl.username", sec.username)
        if sec.password is not None:
            out.setdefault("sasl.password", sec.password)
    elif key == "ssl.truststore.location":
        out.setdefault("ssl.ca.location", value)
    elif key == "ssl.keystore.location" and params.get("ssl.keystore.type", "").strip().upper() == "PEM":
        # a PEM keystore file holds the certificate chain and the private key
        out.setdefault("ssl.certificate.location", value)
        out.setdefault("ssl.key.location", value)
    elif key == "ssl.endpoint.identification.algorithm":
        out[key] = value if value.strip() else "none"   # Java's "" is "no host name check"
    else:
        return False
    return True


def translate(params: Mapping[str, str]) -> dict[str, str]:
    """``params`` (Java client settings, the ``kafka.`` prefix removed) as librdkafka settings."""
    out: dict[str, str] = {}
    for key, value in params.items():
        if key in RENAMED:
            out.setdefault(RENAMED[key], value)
        elif key in JAVA_ONLY:
            _drop(key, JAVA_ONLY[key])
        elif _convert(key, value, out, params):
            pass
        elif librdkafka_knows(key):
            out[key] = value
        else:
            _drop(key, "librdkafka has no such setting; Java's client warns of names it does not use and goes on")
    return out
