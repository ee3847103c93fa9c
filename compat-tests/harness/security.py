"""Security settings for each real client, and one produce/consume round trip with them.

A ``Sec`` names what a client must do (TLS, a client certificate, a SASL mechanism with user and password, or
an unsecured OAUTHBEARER token); ``roundtrip`` translates it into the client's own configuration (librdkafka
properties for confluent-kafka and kcat, kafka-python / aiokafka keyword arguments, Java properties, kafkajs
options) and produces then consumes a few records through the client's own API.
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from harness.clients.base import ClientError, which
from harness.records import Rec


@dataclass(frozen=True)
class Sec:
    bootstrap: str
    tls: bool = False
    cert: bool = False              # present the client certificate (mTLS)
    mechanism: str | None = None    # PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER
    user: str = ""
    password: str = ""
    reauth_threshold_ms: int | None = None   # kafkajs: re-authenticate this long before the session ends
    token: bool = False             # SCRAM with a delegation token (tokenauth=true; user = token id, password = HMAC)

    @property
    def protocol(self) -> str:
        if self.mechanism:
            return "SASL_SSL" if self.tls else "SASL_PLAINTEXT"
        return "SSL" if self.tls else "PLAINTEXT"


def unsecured_jwt(sub: str, lifetime_s: int = 3600) -> str:
    enc = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()  # noqa: E731
    now = int(time.time())
    return f"{enc({'alg': 'none'})}.{enc({'sub': sub, 'iat': now, 'exp': now + lifetime_s})}."


def librdkafka_conf(s: Sec, certs: dict[str, Path]) -> dict[str, str]:
    conf = {"bootstrap.servers": s.bootstrap, "security.protocol": s.protocol}
    if s.tls:
        conf["ssl.ca.location"] = str(certs["ca.pem"])
    if s.cert:
        conf["ssl.certificate.location"] = str(certs["client-cert.pem"])
        conf["ssl.key.location"] = str(certs["client-key.pem"])
    if s.mechanism == "OAUTHBEARER":
        conf.update({"sasl.mechanisms": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": "true",
                     "sasl.oauthbearer.config": f"principal={s.user}"})
    elif s.mechanism:
        conf.update({"sasl.mechanisms": s.mechanism, "sasl.username": s.user, "sasl.password": s.password})
    return conf


def java_conf(s: Sec, certs: dict[str, Path]) -> dict[str, str]:
    conf = {"security.protocol": s.protocol}
    if s.tls:
        conf.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs["ca.pem"])})
    if s.cert:
        conf.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs["client.pem"])})
    if s.mechanism == "OAUTHBEARER":
        # kafka-clients' own unsecured login handler needs jackson-databind (not in .deps/java): OAuthLogin
        # (compat-tests/java/OAuthLogin.java) mints the same unsecured token
        conf.update({"sasl.mechanism": "OAUTHBEARER", "sasl.login.callback.handler.class": "OAuthLogin",
                     "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
                                         f'required unsecuredLoginStringClaim_sub="{s.user}";'})
    elif s.mechanism:
        module = "plain.PlainLoginModule" if s.mechanism == "PLAIN" else "scram.ScramLoginModule"
        conf.update({"sasl.mechanism": s.mechanism, "sasl.jaas.config":
                     f'org.apache.kafka.common.security.{module} required username="{s.user}" '
                     f'password="{s.password}"' + (' tokenauth="true";' if s.token else ";")})
    return conf


def python_conf(s: Sec, certs: dict[str, Path], aio: bool = False) -> dict[str, object]:
    conf: dict[str, object] = {"bootstrap_servers": s.bootstrap, "security_protocol": s.protocol}
    if s.tls:
        files = {"cafile": str(certs["ca.pem"])}
        if s.cert:
            files.update(certfile=str(certs["client-cert.pem"]), keyfile=str(certs["client-key.pem"]))
        if aio:
            from aiokafka.helpers import create_ssl_context

            conf["ssl_context"] = create_ssl_context(**files)
        else:
            conf.update({f"ssl_{k}": v for k, v in files.items()})
    if s.mechanism == "OAUTHBEARER":
        conf["sasl_mechanism"] = "OAUTHBEARER"
        conf["sasl_oauth_token_provider"] = _token_provider(s.user, aio)
    elif s.mechanism:
        conf["sasl_mechanism"] = s.mechanism
        conf["sasl_plain_username"] = s.user
        conf["sasl_plain_password"] = s.password
    return conf


def _token_provider(sub: str, aio: bool) -> object:
    """kafka-python's / aiokafka's OAUTHBEARER hook: an object whose token() returns the (unsecured) JWT."""
    jwt = unsecured_jwt(sub)
    if aio:
        from aiokafka.abc import AbstractTokenProvider as AioProvider

        class AioTokens(AioProvider):
            async def token(self) -> str:
                return jwt

        return AioTokens()
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class Tokens(AbstractTokenProvider):
        def token(self) -> str:
            return jwt

    return Tokens()


def kafkajs_opts(s: Sec, certs: dict[str, Path]) -> dict[str, object]:
    out: dict[str, object] = {}
    if s.tls:
        ssl: dict[str, object] = {"ca": [certs["ca.pem"].read_text()], "servername": "localhost"}
        if s.cert:
            ssl.update(cert=certs["client-cert.pem"].read_text(), key=certs["client-key.pem"].read_text())
        out["ssl"] = ssl
    if s.mechanism == "OAUTHBEARER":
        out["sasl"] = {"mechanism": "oauthbearer", "token": unsecured_jwt(s.user)}
    elif s.mechanism:
        out["sasl"] = {"mechanism": s.mechanism.lower(), "username": s.user, "password": s.password}
    if s.reauth_threshold_ms is not None:
        out["reauthentication_threshold_ms"] = s.reauth_threshold_ms
    return out


# -- one round trip per client -------------------------------------------------------------------------------
def _confluent(s: Sec, certs: dict[str, Path], topic: str, values: list[bytes], consume: bool) -> list[bytes]:
    from confluent_kafka import Consumer, Producer, TopicPartition

    errors: list[object] = []
    conf = {**librdkafka_conf(s, certs), "error_cb": errors.append}
    p = Producer({**conf, "message.timeout.ms": 20000})
    delivered: list[object] = []
    for v in values:
        p.produce(topic, v, partition=0, on_delivery=lambda err, msg: delivered.append(err))
    deadline = time.monotonic() + 25
    while len(delivered) < len(values) and time.monotonic() < deadline:
        p.poll(0.1)
        if any(e.code() == -169 for e in errors):  # type: ignore[attr-defined]   # _AUTHENTICATION: fatal here
            break
    if len(delivered) != len(values) or any(delivered):
        raise ClientError(f"confluent-kafka produce failed: {delivered} {[str(e) for e in errors[:3]]}")
    if not consume:
        return []
    c = Consumer({**conf, "group.id": f"sec-{time.time()}", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < len(values) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value())
        return got
    finally:
        c.close()


def _kafka_python(s: Sec, certs: dict[str, Path], topic: str, values: list[bytes], consume: bool,
                  timeout_s: float = 30) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    conf = python_conf(s, certs)
    p = KafkaProducer(**conf, request_timeout_ms=20000, bootstrap_timeout_ms=int(timeout_s * 1000))
    try:
        for f in [p.send(topic, v, partition=0) for v in values]:
            f.get(timeout=timeout_s)
    finally:
        p.close(timeout=10)
    if not consume:
        return []
    c = KafkaConsumer(**conf, group_id=None, enable_auto_commit=False, fetch_max_wait_ms=200)
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek(tp, 0)
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < len(values) and time.monotonic() < deadline:
            for recs in c.poll(500).values():
                got += [r.value for r in recs]
        return got
    finally:
        c.close()


def _aiokafka(s: Sec, certs: dict[str, Path], topic: str, values: list[bytes], consume: bool) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    async def run() -> list[bytes]:
        conf = python_conf(s, certs, aio=True)
        p = AIOKafkaProducer(**conf, request_timeout_ms=20000)
        try:
            await p.start()
            for v in values:
                await p.send_and_wait(topic, v, partition=0)
        finally:
            await p.stop()
        if not consume:
            return []
        c = AIOKafkaConsumer(**conf, group_id=None, enable_auto_commit=False, fetch_max_wait_ms=200)
        await c.start()
        try:
            tp = TopicPartition(topic, 0)
            c.assign([tp])
            c.seek(tp, 0)
            got: list[bytes] = []
            async with asyncio.timeout(30):
                while len(got) < len(values):
                    for recs in (await c.getmany(timeout_ms=500)).values():
                        got += [r.value for r in recs]
            return got
        finally:
            await c.stop()

    return asyncio.run(run())


def _java(client: object, s: Sec, certs: dict[str, Path], topic: str, values: list[bytes],
          consume: bool) -> list[bytes]:
    conf = java_conf(s, certs)
    records = [Rec(None, v, partition=0).to_json() for v in values]
    client._call({"op": "produce", "bootstrap": s.bootstrap, "topic": topic, "records": records,  # type: ignore[attr-defined]
                  "timeout_ms": 30000, "config": conf}, 90)
    if not consume:
        return []
    r = client._call({"op": "consume", "bootstrap": s.bootstrap, "topic": topic, "partitions": [0],  # type: ignore[attr-defined]
                      "count": len(values), "start": "earliest", "timeout_ms": 30000, "config": conf}, 90)
    return [Rec.from_json(d).value or b"" for d in r["records"]]


def _kafkajs(client: object, s: Sec, certs: dict[str, Path], topic: str, values: list[bytes],
             consume: bool) -> list[bytes]:
    opts = kafkajs_opts(s, certs)
    records = [Rec(None, v, partition=0).to_json() for v in values]
    client._call({"op": "produce", "bootstrap": s.bootstrap, "topic": topic, "records": records,  # type: ignore[attr-defined]
                  "acks": "all", "timeout_ms": 30000, "retries": 2, **opts}, 90)
    if not consume:
        return []
    r = client._call({"op": "consume", "bootstrap": s.bootstrap, "topic": topic, "partitions": [0],  # type: ignore[attr-defined]
                      "count": len(values), "start": "earliest", "timeout_ms": 30000, **opts}, 90)
    return [Rec.from_json(d).value or b"" for d in r["records"]]


def _kcat(s: Sec, certs: dict[str, Path], topic: str, values: list[bytes], consume: bool) -> list[bytes]:
    kcat = which("kcat") or "/usr/bin/kcat"
    x: list[str] = []
    for k, v in librdkafka_conf(s, certs).items():
        if k != "bootstrap.servers":
            x += ["-X", f"{k}={v}"]

    def run(args: list[str], stdin: bytes | None) -> bytes:
        p = subprocess.run([kcat, "-b", s.bootstrap, *args, *x], input=stdin, capture_output=True, timeout=40)
        if p.returncode != 0:
            raise ClientError(f"kcat exited {p.returncode}: {p.stderr.decode(errors='replace')[-2000:]}")
        return p.stdout

    run(["-P", "-t", topic, "-p", "0", "-X", "message.timeout.ms=20000"], b"\n".join(values) + b"\n")
    if not consume:
        return []
    out = run(["-C", "-t", topic, "-p", "0", "-o", "beginning", "-c", str(len(values)), "-e", "-q"], None)
    return out.splitlines()


def roundtrip(name: str, client: object, s: Sec, certs: dict[str, Path], topic: str, values: list[bytes],
              consume: bool = True, timeout_s: float = 30) -> list[bytes]:
    if name == "confluent-kafka":
        return _confluent(s, certs, topic, values, consume)
    if name == "kafka-python":
        return _kafka_python(s, certs, topic, values, consume, timeout_s)
    if name == "aiokafka":
        return _aiokafka(s, certs, topic, values, consume)
    if name == "java":
        return _java(client, s, certs, topic, values, consume)
    if name == "kafkajs":
        return _kafkajs(client, s, certs, topic, values, consume)
    if name == "kcat":
        return _kcat(s, certs, topic, values, consume)
    raise ValueError(name)
