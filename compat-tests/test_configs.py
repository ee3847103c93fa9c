"""Topic and broker configs through kafka-python, confluent-kafka and the Java Admin client.

Each client describes configs (values, ConfigSource, synonyms in Kafka's precedence order, read-only and
sensitive flags, defaults) for a topic and for the broker, alters topic configs (IncrementalAlterConfigs and
the legacy AlterConfigs, which replaces every override) and the broker's dynamic log.* defaults, sees the effect (a record over max.message.bytes is
refused), gets INVALID_CONFIG with a message naming the config for unknown names and bad values, and finds
everything again after the broker restarts. The broker runs with a static `log.segment.bytes` so the
STATIC_BROKER_CONFIG source shows up.

The Java side is a small Admin program (below) compiled once into the compat cache and fed commands on stdin.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from harness.broker import BrokerProcess
from harness.clients import Client, ClientError
from harness.clients.java import CACHE, _classpath
from harness.records import Rec

STATIC_SEGMENT_BYTES = "5000000"
CLIENTS = ("kafka-python", "confluent-kafka", "java")

JAVA_SOURCE = r"""
import java.io.*;
import java.util.*;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.config.ConfigResource;

/** Reads tab-separated commands on stdin, answers each with lines ending in END. */
public class ConfigsCheck {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("default.api.timeout.ms", "30000");
        try (Admin admin = Admin.create(p)) {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
            String line;
            while ((line = in.readLine()) != null) {
                try {
                    run(admin, line.split("\t", -1));
                } catch (Exception e) {
                    Throwable c = e instanceof ExecutionException ? e.getCause() : e;
                    System.out.println("ERR\t" + c.getClass().getSimpleName() + "\t"
                        + String.valueOf(c.getMessage()).replace('\n', ' '));
                }
                System.out.println("END");
                System.out.flush();
            }
        }
    }

    static ConfigResource res(String type, String name) {
        return new ConfigResource("broker".equals(type) ? ConfigResource.Type.BROKER : ConfigResource.Type.TOPIC, name);
    }

    @SuppressWarnings("deprecation")
    static void run(Admin admin, String[] f) throws Exception {
        ConfigResource r = res(f[1], f[2]);
        switch (f[0]) {
            case "describe": {
                Config c = admin.describeConfigs(List.of(r), new DescribeConfigsOptions().includeSynonyms(true))
                    .all().get().get(r);
                for (ConfigEntry e : c.entries()) {
                    StringBuilder sb = new StringBuilder();
                    for (ConfigEntry.ConfigSynonym s : e.synonyms())
                        sb.append(s.name()).append('=').append(s.value()).append('@').append(s.source()).append('|');
                    System.out.println("ENTRY\t" + e.name() + "\t" + e.value() + "\t" + e.source() + "\t"
                        + e.isReadOnly() + "\t" + e.isSensitive() + "\t" + e.isDefault() + "\t" + e.type() + "\t" + sb);
                }
                break;
            }
            case "incr": {  // incr TYPE NAME OP KEY [VALUE]
                ConfigEntry entry = new ConfigEntry(f[4], f.length > 5 ? f[5] : null);
                AlterConfigOp op = new AlterConfigOp(entry, AlterConfigOp.OpType.valueOf(f[3]));
                admin.incrementalAlterConfigs(Map.of(r, List.of(op))).all().get();
                System.out.println("OK");
                break;
            }
            case "legacy": {  // legacy TYPE NAME K=V ...
                List<ConfigEntry> es = new ArrayList<>();
                for (int i = 3; i < f.length; i++) {
                    String[] kv = f[i].split("=", 2);
                    es.add(new ConfigEntry(kv[0], kv[1]));
                }
                admin.alterConfigs(Map.of(r, new Config(es))).all().get();
                System.out.println("OK");
                break;
            }
            default:
                throw new IllegalArgumentException("unknown command " + f[0]);
        }
    }
}
"""


class JavaAdmin:
    """The Java Admin client, one JVM per test, one command per line."""

    def __init__(self, bootstrap: str) -> None:
        h = hashlib.sha256(JAVA_SOURCE.encode())
        for jar in _classpath():
            h.update(f"{jar.name}:{jar.stat().st_size}".encode())
        out = CACHE / f"configs-{h.hexdigest()[:16]}"
        if not (out / "ConfigsCheck.class").exists():
            out.mkdir(parents=True, exist_ok=True)
            src = out / "ConfigsCheck.java"
            src.write_text(JAVA_SOURCE)
            cp = os.pathsep.join(str(j) for j in _classpath())
            p = subprocess.run(["javac", "-nowarn", "-cp", cp, "-d", str(out), str(src)], capture_output=True,
                               text=True)
            if p.returncode:
                raise ClientError(f"javac failed: {p.stdout}{p.stderr}")
        cp = os.pathsep.join([str(out), *(str(j) for j in _classpath())])
        self.proc = subprocess.Popen(["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", cp,
                                      "ConfigsCheck", bootstrap], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)

    def call(self, *fields: str) -> list[str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("\t".join(fields) + "\n")
        self.proc.stdin.flush()
        lines = []
        while (line := self.proc.stdout.readline()) not in ("END\n", ""):
            lines.append(line.rstrip("\n"))
        return lines

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(30)


# -- one interface over the three admin clients -------------------------------------------------------------
Entry = dict[str, Any]  # value, source (Kafka's enum name), read_only, sensitive, synonyms [(name, value, source)]


_SOURCES = {1: "TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
            4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG"}


def _norm_source(s: Any) -> str:
    """Each client spells ConfigSource its own way (enum, int, name): Java's names."""
    if isinstance(s, int) or str(s).isdigit():
        return _SOURCES.get(int(s), str(s))
    s = str(s).rsplit(".", 1)[-1]
    return {"DYNAMIC_TOPIC_CONFIG": "TOPIC_CONFIG"}.get(s, s).upper()


def _kp_error(err: Any) -> str | None:
    """kafka-python reports a per-resource result: "OK", None, an error class/instance or its text."""
    if err in (None, 0, "OK") or getattr(err, "errno", 1) == 0:
        return None
    return str(err)


class Admin:
    def __init__(self, name: str, bootstrap: str) -> None:
        self.name, self.bootstrap = name, bootstrap
        self.java = JavaAdmin(bootstrap) if name == "java" else None

    def close(self) -> None:
        if self.java:
            self.java.close()

    def describe(self, rtype: str, name: str) -> dict[str, Entry]:
        if self.name == "kafka-python":
            from kafka import KafkaAdminClient
            from kafka.admin import ConfigResource, ConfigResourceType

            adm = KafkaAdminClient(bootstrap_servers=self.bootstrap)
            try:
                t = ConfigResourceType.TOPIC if rtype == "topic" else ConfigResourceType.BROKER
                r = adm.describe_configs([ConfigResource(t, name)], include_synonyms=True, config_filter="all")
            finally:
                adm.close()
            return {k: dict(value=v["value"], source=_norm_source(v["config_source"]), read_only=v["read_only"],
                            sensitive=v["is_sensitive"],
                            synonyms=[(s["name"], s["value"], _norm_source(s["source"])) for s in v["synonyms"]])
                    for k, v in r[rtype][name].items()}
        if self.name == "confluent-kafka":
            from confluent_kafka.admin import AdminClient, ConfigResource

            adm = AdminClient({"bootstrap.servers": self.bootstrap})
            res = ConfigResource(rtype, name)
            got = adm.describe_configs([res])[res].result(30)
            return {k: dict(value=e.value, source=_norm_source(e.source), read_only=e.is_read_only,
                            sensitive=e.is_sensitive, default=e.is_default,
                            synonyms=[(s.name, s.value, _norm_source(s.source)) for s in e.synonyms.values()])
                    for k, e in got.items()}
        assert self.java is not None
        out = {}
        for line in self.java.call("describe", rtype, name):
            if line.startswith("ERR"):
                raise ClientError(line)
            _, k, v, src, ro, sens, dflt, _typ, syn = line.split("\t")
            syns = []
            for s in filter(None, syn.split("|")):
                sname, rest = s.split("=", 1)
                sval, ssrc = rest.rsplit("@", 1)
                syns.append((sname, None if sval == "null" else sval, _norm_source(ssrc)))
            out[k] = dict(value=None if v == "null" else v, source=_norm_source(src), read_only=ro == "true",
                          sensitive=sens == "true", default=dflt == "true", synonyms=syns)
        return out

    def incremental(self, topic: str, ops: list[tuple[str, str, str | None]], rtype: str = "topic") -> str | None:
        """ops: (op name SET/DELETE/APPEND/SUBTRACT, key, value); None on success, else the error text."""
        if self.name == "kafka-python":
            from kafka import KafkaAdminClient
            from kafka.admin import ConfigResource, ConfigResourceType

            adm = KafkaAdminClient(bootstrap_servers=self.bootstrap)
            try:
                t = ConfigResourceType.TOPIC if rtype == "topic" else ConfigResourceType.BROKER
                r = adm.alter_configs([ConfigResource(t, topic, configs={k: (op, v) for op, k, v in ops})],
                                      raise_on_unknown=False, incremental=True)
            finally:
                adm.close()
            return _kp_error(r[rtype][topic])
        if self.name == "confluent-kafka":
            from confluent_kafka import KafkaException
            from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

            adm = AdminClient({"bootstrap.servers": self.bootstrap})
            res = ConfigResource(rtype, topic, incremental_configs=[
                ConfigEntry(k, v, incremental_operation=getattr(AlterConfigOpType, op)) for op, k, v in ops])
            try:
                adm.incremental_alter_configs([res])[res].result(30)
            except KafkaException as e:
                return str(e)
            return None
        assert self.java is not None
        for op, k, v in ops:
            lines = self.java.call("incr", rtype, topic, op, k, *([] if v is None else [v]))
            if lines != ["OK"]:
                return " ".join(lines)
        return None

    def legacy(self, topic: str, cfg: dict[str, str]) -> str | None:
        """AlterConfigs (replaces every override of the topic)."""
        if self.name == "kafka-python":
            from kafka import KafkaAdminClient
            from kafka.admin import ConfigResource, ConfigResourceType

            adm = KafkaAdminClient(bootstrap_servers=self.bootstrap)
            try:
                # incremental=False sends AlterConfigs; the client first re-reads the modified dynamic keys
                # (we want the replace semantics, so clear them by sending only `cfg` through the raw API)
                r = adm.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=dict(cfg))],
                                      raise_on_unknown=False, incremental=False)
            finally:
                adm.close()
            return _kp_error(r["topic"][topic])
        if self.name == "confluent-kafka":
            from confluent_kafka import KafkaException
            from confluent_kafka.admin import AdminClient, ConfigResource

            adm = AdminClient({"bootstrap.servers": self.bootstrap})
            res = ConfigResource("topic", topic, set_config=dict(cfg))
            try:
                adm.alter_configs([res])[res].result(30)
            except KafkaException as e:
                return str(e)
            return None
        assert self.java is not None
        lines = self.java.call("legacy", "topic", topic, *(f"{k}={v}" for k, v in cfg.items()))
        return None if lines == ["OK"] else " ".join(lines)


# -- fixtures ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    base = tmp_path_factory.mktemp("broker-configs")
    b = BrokerProcess(base / "data", base / "broker.log",
                      extra_args=["--override", f"log.segment.bytes={STATIC_SEGMENT_BYTES}"])
    b.start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture
def admin(request: pytest.FixtureRequest, broker: BrokerProcess,
          get_client: Callable[[str], Client]) -> Iterator[Admin]:
    name = request.param
    get_client(name)  # skips loudly (fails under CI) when the client is missing here
    a = Admin(name, broker.bootstrap)
    yield a
    a.close()


def _create(get_client: Callable[[str], Client], bootstrap: str, topic: str, cfg: dict[str, str]) -> None:
    get_client("confluent-kafka").create_topic(bootstrap, topic, 1, cfg)


# -- tests ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("admin", CLIENTS, indirect=True)
def test_describe_topic_and_broker(admin: Admin, broker: BrokerProcess, get_client: Callable[[str], Client],
                                   topic: str) -> None:
    _create(get_client, broker.bootstrap, topic, {"retention.ms": "3456", "cleanup.policy": "compact,delete"})
    cfg = admin.describe("topic", topic)
    r = cfg["retention.ms"]
    assert (r["value"], r["source"], r["read_only"], r["sensitive"]) == ("3456", "TOPIC_CONFIG", False, False)
    assert r["synonyms"] == [("retention.ms", "3456", "TOPIC_CONFIG")]   # Kafka cuts log.retention.hours (no .ms set)
    s = cfg["segment.bytes"]
    assert (s["value"], s["source"]) == (STATIC_SEGMENT_BYTES, "STATIC_BROKER_CONFIG")
    # Kafka lists the static setting, then its default; confluent-kafka keys synonyms by name and keeps the last
    assert s["synonyms"][0] == ("log.segment.bytes", STATIC_SEGMENT_BYTES, "STATIC_BROKER_CONFIG") or \
        (admin.name == "confluent-kafka" and s["synonyms"] == [("log.segment.bytes", "1073741824", "DEFAULT_CONFIG")])
    d = cfg["delete.retention.ms"]
    assert (d["value"], d["source"]) == ("86400000", "DEFAULT_CONFIG")
    assert d.get("default", True) is True
    assert cfg["cleanup.policy"]["value"] == "compact,delete"
    assert not any(e["read_only"] or e["sensitive"] for e in cfg.values())

    b = admin.describe("broker", "1")
    seg = b["log.segment.bytes"]  # a topic default: dynamic, so writable
    assert (seg["value"], seg["source"], seg["read_only"]) == (STATIC_SEGMENT_BYTES, "STATIC_BROKER_CONFIG", False)
    assert b["num.partitions"]["source"] == "DEFAULT_CONFIG" and b["num.partitions"]["read_only"]


@pytest.mark.parametrize("admin", CLIENTS, indirect=True)
def test_dynamic_broker_config(admin: Admin, broker: BrokerProcess, get_client: Callable[[str], Client],
                               topic: str) -> None:
    """A broker-level log.* setting changes the default of every topic without its own override. Apache Kafka's
    IncrementalAlterConfigs returns once its controller has committed the change; the broker applies it from the
    metadata log a moment later (describing it meanwhile shows the old value, or the new source with no value yet),
    so the describes wait for it as a client of Kafka must."""
    _create(get_client, broker.bootstrap, topic, {})
    assert admin.incremental("1", [("SET", "log.retention.ms", "123456")], rtype="broker") is None
    try:
        b = _describe_when(admin, "broker", "1", "log.retention.ms", "123456")
        assert (b["value"], b["source"], b["read_only"]) == ("123456", "DYNAMIC_BROKER_CONFIG", False)
        t = _describe_when(admin, "topic", topic, "retention.ms", "123456")
        assert (t["value"], t["source"]) == ("123456", "DYNAMIC_BROKER_CONFIG")
        assert t["synonyms"][0] == ("log.retention.ms", "123456", "DYNAMIC_BROKER_CONFIG")
        err = admin.incremental("1", [("SET", "num.partitions", "4")], rtype="broker")
        assert err is not None and "num.partitions" in err  # static-only: refused, with the reason
    finally:
        assert admin.incremental("1", [("DELETE", "log.retention.ms", None)], rtype="broker") is None
    assert _describe_when(admin, "topic", topic, "retention.ms", str(168 * 3600 * 1000))["value"] == \
        str(168 * 3600 * 1000)


def _describe_when(admin: Admin, rtype: str, name: str, key: str, value: str, timeout: float = 30) -> dict:
    """``key``'s entry once it has ``value`` (or the last answer after ``timeout`` seconds): a change applied by
    the broker after the alter call returned (Kafka applies broker configs from its metadata log)."""
    deadline = time.monotonic() + timeout
    while True:
        e = admin.describe(rtype, name)[key]
        if e["value"] == value or time.monotonic() > deadline:
            return e
        time.sleep(0.2)


@pytest.mark.parametrize("admin", CLIENTS, indirect=True)
def test_alter_and_see_the_effect(admin: Admin, broker: BrokerProcess, get_client: Callable[[str], Client],
                                  topic: str) -> None:
    _create(get_client, broker.bootstrap, topic, {"retention.ms": "100000"})
    assert admin.incremental(topic, [("SET", "max.message.bytes", "2000"), ("APPEND", "cleanup.policy", "compact")]) \
        is None
    cfg = admin.describe("topic", topic)
    assert (cfg["max.message.bytes"]["value"], cfg["max.message.bytes"]["source"]) == ("2000", "TOPIC_CONFIG")
    assert cfg["cleanup.policy"]["value"] == "delete,compact"
    assert cfg["retention.ms"]["value"] == "100000"
    producer = get_client("confluent-kafka")
    with pytest.raises(ClientError):
        producer.produce(broker.bootstrap, topic, [Rec(b"k", b"x" * 3000, partition=0)], timeout_s=10)
    producer.produce(broker.bootstrap, topic, [Rec(b"k", b"small", partition=0)])

    # AlterConfigs replaces every override: retention.ms and cleanup.policy go back to their defaults ...
    assert admin.legacy(topic, {"max.message.bytes": "5000", "segment.ms": "3600000"}) is None
    cfg = admin.describe("topic", topic)
    overrides = {k: e["value"] for k, e in cfg.items() if e["source"] == "TOPIC_CONFIG"}
    want = {"max.message.bytes": "5000", "segment.ms": "3600000"}
    if admin.name == "kafka-python":  # ... except that kafka-python re-sends the other overrides to keep them
        want |= {"retention.ms": "100000", "cleanup.policy": "delete,compact"}
    assert overrides == want
    assert cfg["cleanup.policy"]["value"] == want.get("cleanup.policy", "delete")
    producer.produce(broker.bootstrap, topic, [Rec(b"k", b"x" * 3000, partition=0)])

    assert admin.incremental(topic, [("DELETE", "segment.ms", None)]) is None
    assert admin.describe("topic", topic)["segment.ms"]["source"] == "DEFAULT_CONFIG"


@pytest.mark.parametrize("admin", CLIENTS, indirect=True)
def test_empty_cleanup_policy(admin: Admin, broker: BrokerProcess, get_client: Callable[[str], Client],
                              topic: str) -> None:
    """Kafka's cleanup.policy is a ValidList: the empty list is valid (no deletion, no compaction), whether
    SUBTRACTed down to nothing, SET to "" or given at creation."""
    _create(get_client, broker.bootstrap, topic, {"cleanup.policy": "delete"})
    assert admin.incremental(topic, [("SUBTRACT", "cleanup.policy", "delete")]) is None
    cp = admin.describe("topic", topic)["cleanup.policy"]
    assert (cp["value"] or "", cp["source"]) == ("", "TOPIC_CONFIG")
    assert admin.incremental(topic, [("SET", "cleanup.policy", "compact")]) is None
    assert admin.describe("topic", topic)["cleanup.policy"]["value"] == "compact"
    assert admin.incremental(topic, [("SET", "cleanup.policy", "")]) is None
    assert (admin.describe("topic", topic)["cleanup.policy"]["value"] or "") == ""
    _create(get_client, broker.bootstrap, f"{topic}-e", {"cleanup.policy": ""})
    assert (admin.describe("topic", f"{topic}-e")["cleanup.policy"]["value"] or "") == ""


@pytest.mark.parametrize("admin", CLIENTS, indirect=True)
@pytest.mark.parametrize(("key", "value"), [("no.such.config", "1"), ("retention.ms", "soon"),
                                            ("cleanup.policy", "shred"), ("min.cleanable.dirty.ratio", "7")])
def test_invalid_config(admin: Admin, broker: BrokerProcess, get_client: Callable[[str], Client], topic: str,
                        key: str, value: str) -> None:
    _create(get_client, broker.bootstrap, topic, {"retention.ms": "100000"})
    for err in (admin.incremental(topic, [("SET", key, value)]), admin.legacy(topic, {key: value})):
        assert err is not None
        assert "INVALID_CONFIG" in err.upper().replace(" ", "_") or "InvalidConfiguration" in err, err
        assert key in err, err
    assert admin.describe("topic", topic)["retention.ms"]["value"] == "100000"


def test_configs_survive_restart(broker: BrokerProcess, get_client: Callable[[str], Client]) -> None:
    topic = "configs-restart"
    get_client("java")
    _create(get_client, broker.bootstrap, topic, {"retention.ms": "7777"})
    first = Admin("confluent-kafka", broker.bootstrap)
    assert first.incremental(topic, [("SET", "max.message.bytes", "2000"), ("SET", "cleanup.policy", "compact")]) \
        is None
    broker.restart(signal.SIGTERM)
    assert broker.last_exit == 0
    for name in CLIENTS:
        a = Admin(name, broker.bootstrap)
        try:
            cfg = a.describe("topic", topic)
        finally:
            a.close()
        overrides = {k: e["value"] for k, e in cfg.items() if e["source"] == "TOPIC_CONFIG"}
        assert overrides == {"retention.ms": "7777", "max.message.bytes": "2000", "cleanup.policy": "compact"}, name
    producer = get_client("confluent-kafka")
    with pytest.raises(ClientError):  # the restarted log enforces the override
        producer.produce(broker.bootstrap, topic, [Rec(b"k", b"x" * 3000, partition=0)], timeout_s=10)
    with pytest.raises(ClientError):  # ... and compaction's need for keys
        producer.produce(broker.bootstrap, topic, [Rec(None, b"no key", partition=0)], timeout_s=10)
    producer.produce(broker.bootstrap, topic, [Rec(b"k", b"fine", partition=0)])

