"""All six real clients over SSL, mTLS, SASL_PLAINTEXT and SASL_SSL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512,
OAUTHBEARER with unsecured tokens), wrong passwords, and KIP-368 re-authentication.

One broker process with a listener per protocol (and one with ``connections.max.reauth.ms``) serves the whole
module; certificates come from ``kafkalite certs`` (kafkalite.cli.certs) and SCRAM users are created
through AlterUserScramCredentials (confluent-kafka's admin) on the PLAINTEXT listener. Each client produces
three records through its own API and consumes them back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from harness.broker import BrokerProcess, BrokerStartError, _free_port
from harness.clients import Client
from harness.clients.base import ClientError
from harness.security import Sec, roundtrip

ALL = ("confluent-kafka", "kafka-python", "aiokafka", "java", "kcat", "kafkajs")
OAUTH = ALL    # every client can log in with an unsecured token (kafka-python/aiokafka: a token provider)
REAUTH = ("confluent-kafka", "kafka-python", "java", "kafkajs")   # the clients that re-authenticate (KIP-368)
# aiokafka has no re-authentication and kcat's librdkafka 2.0.2 predates it (2.2): at expiry the broker closes
LISTENERS = ("PLAINTEXT", "SSL", "MTLS", "SASL_PLAINTEXT", "SASL_SSL", "REAUTH")
# KIP-368 lets a client re-authenticate anywhere in the last 5-15% of its session (Java 85-95%, librdkafka 90%)
# and the broker closes a connection whose next request (not a SaslHandshake) comes after the end, as Kafka
# does: with 1 s sessions a request delayed 50 ms on a loaded machine was enough. 5 s leave >= 250 ms.
REAUTH_MS = 5000
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" '
        'user_admin="admin-secret";')
# Kafka wants a login module for every mechanism a listener enables (kafkalite does without): SCRAM's users are
# in the metadata (AlterUserScramCredentials), OAUTHBEARER's unsecured tokens are checked by Kafka's default
# validator (OAuthBearerUnsecuredValidatorCallbackHandler)
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
OAUTH_JAAS = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
              'unsecuredLoginStringClaim_sub="admin";')


class SecureBroker(BrokerProcess):
    """The broker started from a server.properties naming every listener (no --listen)."""

    def __init__(self, base: Path, properties: Path) -> None:
        super().__init__(base / "data", base / "broker.log")
        self.properties = properties

    def _command(self) -> list[str]:
        if self.kind == "kafka":   # the same file is Kafka's server.properties (harness/reference.py adds the rest)
            self.extra_args = ["--config", str(self.properties)]
            return super()._command()
        cmd = super()._command()
        i = cmd.index("--listen")
        return [*cmd[:i], *cmd[i + 2:], "--config", str(self.properties)]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from kafkalite.cli.certs import write_certs

    return write_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def sec_broker(certs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    base = tmp_path_factory.mktemp("broker-security")
    for attempt in range(3):   # a port picked here can be taken by another process before the broker binds it
        ports = {name: _free_port() for name in LISTENERS}
        b = _start_secure(base, certs, ports)
        if b is not None or attempt == 2:
            break
    assert b is not None, "no free ports in three attempts"
    try:
        addrs = {n: f"127.0.0.1:{p}" for n, p in ports.items()}
        _add_scram_users(addrs["PLAINTEXT"])
        yield {**addrs, "log": str(b.log_path), "kind": b.kind}
    finally:
        rc = b.stop()
        b.kill()
        assert rc in (0, None)


def _start_secure(base: Path, certs: dict[str, Path], ports: dict[str, int]) -> SecureBroker | None:
    """The broker on these ports; None if one of them was taken meanwhile (any other start error raises)."""
    lines = [
        "listeners=" + ",".join(f"{n}://127.0.0.1:{p}" for n, p in ports.items()),
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
        "SASL_SSL:SASL_SSL,REAUTH:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        f"ssl.keystore.location={certs['broker.pem']}",
        f"ssl.truststore.location={certs['ca.pem']}",
        "ssl.keystore.type=PEM",      # kafkalite's default; Kafka's is JKS
        "ssl.truststore.type=PEM",
        "listener.name.mtls.ssl.client.auth=required",
        f"listener.name.reauth.connections.max.reauth.ms={REAUTH_MS}",
        *(f"listener.name.{n}.{mech}.sasl.jaas.config={jaas}" for n in ("sasl_plaintext", "sasl_ssl", "reauth")
          for mech, jaas in (("plain", JAAS), ("scram-sha-256", SCRAM_JAAS), ("scram-sha-512", SCRAM_JAAS),
                             ("oauthbearer", OAUTH_JAAS))),
    ]
    props = base / "server.properties"
    props.write_text("\n".join(lines) + "\n")
    b = SecureBroker(base, props)
    try:
        b.start()
    except BrokerStartError as exc:
        b.kill()
        if "Address already in use" in str(exc):
            return None
        raise
    return b


def _add_scram_users(bootstrap: str) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for user, mech, pw in (("scram256", ScramMechanism.SCRAM_SHA_256, "pw-256"),
                           ("scram512", ScramMechanism.SCRAM_SHA_512, "pw-512")):
        for f in admin.alter_user_scram_credentials(
                [UserScramCredentialUpsertion(user, ScramCredentialInfo(mech, 8192), pw.encode())]).values():
            f.result(30)


def _create(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})    # kept alive until the futures are done
    for f in admin.create_topics([NewTopic(topic, 1)]).values():
        f.result(30)


CASES = {
    # name: (listener, Sec fields)
    "ssl": ("SSL", dict(tls=True)),
    "mtls": ("MTLS", dict(tls=True, cert=True)),
    "sasl_plaintext-plain": ("SASL_PLAINTEXT", dict(mechanism="PLAIN", user="alice", password="alice-secret")),
    "sasl_plaintext-scram-sha-256": ("SASL_PLAINTEXT", dict(mechanism="SCRAM-SHA-256", user="scram256",
                                                             password="pw-256")),
    "sasl_ssl-scram-sha-512": ("SASL_SSL", dict(tls=True, mechanism="SCRAM-SHA-512", user="scram512",
                                                 password="pw-512")),
    "sasl_ssl-plain": ("SASL_SSL", dict(tls=True, mechanism="PLAIN", user="alice", password="alice-secret")),
}


def _values(topic: str) -> list[bytes]:
    return [f"{topic}-{i}".encode() for i in range(3)]


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("client_name", ALL)
def test_secured_round_trip(sec_broker: dict[str, str], certs: dict[str, Path], client: Client,
                            client_name: str, case: str, topic: str) -> None:
    listener, fields = CASES[case]
    _create(sec_broker["PLAINTEXT"], topic)
    s = Sec(sec_broker[listener], **fields)  # type: ignore[arg-type]
    consume = client_name != "kafkajs" or case in ("mtls", "sasl_ssl-scram-sha-512")   # its group consumer is slow
    if client_name == "kcat" and "scram" in case and sec_broker["kind"] == "kafka":
        # kcat's librdkafka 2.0.2 repeats the client nonce in SCRAM's final message (fixed in librdkafka 2.6.1);
        # Kafka 3.8.1-3.9 (and kafkalite's default 3.9 profile) accept it, Kafka 4.x compare the nonce whole
        with pytest.raises(ClientError, match="invalid credentials"):
            roundtrip(client_name, client, s, certs, topic, _values(topic), consume=consume)
        return
    got = roundtrip(client_name, client, s, certs, topic, _values(topic), consume=consume)
    assert sorted(got) == (sorted(_values(topic)) if consume else [])


def test_java_admin_creates_a_scram_user_others_log_in_with(sec_broker: dict[str, str], certs: dict[str, Path],
                                                             get_client: Callable[[str], Client], topic: str) -> None:
    """Java's Admin.alterUserScramCredentials (what kafka-configs --add-config 'SCRAM-SHA-512=[...]' sends),
    its describeUserScramCredentials, then a librdkafka client logging in with that user over SASL_SSL."""
    java = get_client("java")
    r = java._call({"op": "scram_upsert", "bootstrap": sec_broker["PLAINTEXT"], "user": "javauser",  # type: ignore[attr-defined]
                    "mechanism": "SCRAM-SHA-512", "iterations": 4096, "password": "java-pw"}, 90)
    assert r["credentials"] == {"SCRAM-SHA-512": 4096}
    _create(sec_broker["PLAINTEXT"], topic)
    s = Sec(sec_broker["SASL_SSL"], tls=True, mechanism="SCRAM-SHA-512", user="javauser", password="java-pw")
    values = _values(topic)
    assert sorted(roundtrip("confluent-kafka", get_client("confluent-kafka"), s, certs, topic, values)) == values


@pytest.mark.parametrize("client_name", OAUTH)
def test_oauthbearer_unsecured_token(sec_broker: dict[str, str], certs: dict[str, Path], client: Client,
                                     client_name: str, topic: str) -> None:
    _create(sec_broker["PLAINTEXT"], topic)
    s = Sec(sec_broker["SASL_SSL"], tls=True, mechanism="OAUTHBEARER", user="alice")
    roundtrip(client_name, client, s, certs, topic, _values(topic), consume=False)


@pytest.mark.parametrize("client_name", ALL)
def test_wrong_password_is_rejected_with_kafkas_message(sec_broker: dict[str, str], certs: dict[str, Path],
                                                        client: Client, client_name: str, topic: str,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    _create(sec_broker["PLAINTEXT"], topic)
    s = Sec(sec_broker["SASL_PLAINTEXT"], mechanism="PLAIN", user="alice", password="wrong")
    with pytest.raises(Exception) as info:
        roundtrip(client_name, client, s, certs, topic, _values(topic), consume=False, timeout_s=4)
    # the broker's message: in the error (confluent-kafka, Java, kcat, kafkajs) or logged by the client
    # (kafka-python and aiokafka raise a generic connection error after logging it)
    text = str(info.value) + "\n" + caplog.text
    if client_name == "kafka-python":
        # the broker sends the failed SaslAuthenticate answer as it closes the connection, a delay after the
        # attempt (KIP-306, as Kafka's KafkaChannel.completeCloseOnAuthenticationFailure does): kafka-python
        # 3.0.12 takes the connection's end before the answer that came with it and reports only the lost
        # connection (the same on Kafka 4.4)
        assert "Unable to bootstrap" in text and "socket disconnected" in text, text
        return
    assert "Authentication failed: Invalid username or password" in text, text


@pytest.mark.parametrize("client_name", REAUTH)
def test_reauthentication_cycle(sec_broker: dict[str, str], certs: dict[str, Path], client: Client,
                                client_name: str, topic: str) -> None:
    """A consumer that keeps fetching past ``connections.max.reauth.ms`` re-authenticates in band: the broker
    logs each re-authentication and never closes its connections for an expired session."""
    _create(sec_broker["PLAINTEXT"], topic)
    # kafkajs re-authenticates reauthenticationThreshold (default 10 s) before the session ends: with 5 s
    # sessions that is before every request, and a broker refuses more than one re-authentication a second
    # (Kafka's KafkaChannel; ILLEGAL_SASL_STATE): a user with short sessions lowers it, as here
    s = Sec(sec_broker["REAUTH"], mechanism="PLAIN", user="alice", password="alice-secret",
            reauth_threshold_ms=REAUTH_MS // 5)
    log = Path(sec_broker["log"])
    start = log.stat().st_size
    values = _values(topic)
    roundtrip(client_name, client, s, certs, topic, values, consume=False)
    # each broker's log line for a re-authentication (Kafka: SaslServerAuthenticator at DEBUG, see reference.py)
    mark = "Beginning re-authentication" if sec_broker["kind"] == "kafka" else "re-authenticated as User:alice"
    for _ in range(3):   # a consumer slow to connect on a loaded machine may need a second window
        got = _consume_for(client_name, client, s, certs, topic, seconds=1.2 * REAUTH_MS / 1000)
        assert sorted(got) == sorted(values)
        text = log.read_bytes()[start:].decode(errors="replace")
        if mark in text:
            break
    assert mark in text
    assert "SASL session expired" not in text


def _consume_for(client_name: str, client: object, s: Sec, certs: dict[str, Path], topic: str,
                 seconds: float) -> list[bytes]:
    """Keep a consumer fetching for ``seconds`` (asks for one record more than there are)."""
    if client_name == "confluent-kafka":
        from confluent_kafka import Consumer, TopicPartition
        from harness.security import librdkafka_conf

        c = Consumer({**librdkafka_conf(s, certs), "group.id": "reauth", "fetch.wait.max.ms": 100})
        c.assign([TopicPartition(topic, 0, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append(m.value())
        c.close()
        return got
    if client_name == "kafka-python":
        from harness.security import python_conf
        from kafka import KafkaConsumer, TopicPartition

        kc = KafkaConsumer(**python_conf(s, certs), group_id=None, enable_auto_commit=False, fetch_max_wait_ms=100)
        tp = TopicPartition(topic, 0)
        kc.assign([tp])
        kc.seek(tp, 0)
        got = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for recs in kc.poll(200).values():
                got += [r.value for r in recs]
        kc.close()
        return got
    from harness.records import Rec
    from harness.security import java_conf, kafkajs_opts

    cmd = {"op": "consume", "bootstrap": s.bootstrap, "topic": topic, "partitions": [0], "count": 4,
           "start": "earliest", "timeout_ms": int(seconds * 1000)}
    cmd.update({"config": java_conf(s, certs)} if client_name == "java" else kafkajs_opts(s, certs))
    r = client._call(cmd, 90)  # type: ignore[attr-defined]
    return [Rec.from_json(d).value or b"" for d in r["records"]]





def test_reference_node_tls_listeners(tmp_path_factory: pytest.TempPathFactory,
                                      get_client: Callable[[str], Client]) -> None:
    """The reference harness's own SSL and SASL_SSL listeners (``ReferenceCluster(tls=True)``, the certificates of
    ``kafkalite certs``, SCRAM users from ``kafka-storage format``): a one-node Apache Kafka 4.4, whatever
    KAFKALITE_COMPAT_BROKER says (it is the reference itself under test), with a round trip over each listener
    through librdkafka and the Java client."""
    from harness import reference

    from conftest import _LIVE, missing

    if reason := reference.missing():
        missing(reason)
    one_node = {"offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1",
                "transaction.state.log.min.isr": "1", "share.coordinator.state.topic.replication.factor": "1",
                "share.coordinator.state.topic.min.isr": "1"}
    cluster = reference.ReferenceCluster(tmp_path_factory.mktemp("kafka-tls"), 1, sasl_users={"scram512": "pw-512"},
                                         overrides=one_node, tls=True)
    assert cluster.certs is not None
    _LIVE.extend(cluster.nodes)
    try:
        cluster.start()
        for i, (name, s) in enumerate((
                ("confluent-kafka", Sec(cluster.ssl_bootstrap, tls=True)),
                ("confluent-kafka", Sec(cluster.sasl_ssl_bootstrap, tls=True, mechanism="SCRAM-SHA-512",
                                        user="scram512", password="pw-512")),
                ("java", Sec(cluster.sasl_ssl_bootstrap, tls=True, mechanism="SCRAM-SHA-256", user="scram512",
                             password="pw-512")))):
            topic = f"tls-roundtrip-{i}"
            _create(cluster.bootstrap, topic)
            values = _values(topic)
            assert sorted(roundtrip(name, get_client(name), s, cluster.certs, topic, values)) == values, \
                (name, s.protocol, s.mechanism)
        assert cluster.stop() == [0]
    finally:
        cluster.kill()
        for n in cluster.nodes:
            _LIVE.remove(n)
