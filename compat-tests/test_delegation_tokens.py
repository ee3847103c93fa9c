"""Delegation tokens with real clients (KIP-48, KIP-373), against kafkalite and against Apache Kafka 4.4 alike.

One broker with a PLAINTEXT and a SASL_PLAINTEXT listener (PLAIN users alice and bob, SCRAM-SHA-256/512) and
``delegation.token.secret.key``. The Java 4.4 admin client (``java4``: createDelegationToken, renew, expire,
describe) and Kafka 4.4's ``kafka-delegation-tokens`` (org.apache.kafka.tools.DelegationTokenCommand) manage tokens
as alice; a Java producer and consumer log in with a token (ScramLoginModule, ``tokenauth=true``, user = token id,
password = HMAC) and produce and consume; a wrong HMAC and an expired token are refused.
"""
from __future__ import annotations

import re
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from harness import reference
from harness.broker import BrokerProcess, _free_port
from harness.clients.base import ClientError
from harness.security import Sec, java_conf, roundtrip
from harness.topics import create_topic

T = TypeVar("T")

SECRET = "compat-token-secret"
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" '
              'user_bob="bob-secret";')
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


class TokenBroker(BrokerProcess):
    """The broker started from a server.properties naming its listeners (as test_security's SecureBroker)."""

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
def token_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    base = tmp_path_factory.mktemp("broker-dtokens")
    plain, sasl = _free_port(), _free_port()
    props = base / "server.properties"
    props.write_text("\n".join([
        f"listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        f"listener.name.sasl_plaintext.plain.sasl.jaas.config={PLAIN_JAAS}",
        f"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config={SCRAM_JAAS}",
        f"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config={SCRAM_JAAS}",
        f"delegation.token.secret.key={SECRET}",
    ]) + "\n")
    b = TokenBroker(base, props)
    try:
        b.start()
        yield {"plain": f"127.0.0.1:{plain}", "sasl": f"127.0.0.1:{sasl}", "base": str(base)}
        rc = b.stop()
        assert rc in (0, None)
    finally:
        b.kill()


def _until(probe: Callable[[], T], timeout_s: float = 20.0) -> T:
    """The first truthy answer of ``probe``: Kafka's brokers learn a token from the metadata log a moment after
    the controller created it (kafkalite answers at once)."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = probe()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.2)


def _alice(bs: str) -> dict[str, str]:
    return java_conf(Sec(bs, mechanism="PLAIN", user="alice", password="alice-secret"), {})


def test_java4_admin_create_describe_renew_expire(token_broker: dict[str, str], get_client) -> None:
    java4 = get_client("java4")
    bs = token_broker["sasl"]
    conf = _alice(bs)
    made = java4.admin(bs, "create_token", renewers=["User:bob"], config=conf)
    assert "error" not in made, made
    t = made["token"]
    assert (t["owner"], t["requester"], t["renewers"]) == ("User:alice", "User:alice", ["User:bob"])
    assert t["max"] - t["issue"] == 604800000 and t["expiry"] - t["issue"] == 86400000
    listed = _until(lambda: [(x["token_id"], x["hmac"]) for x in java4.admin(bs, "describe_tokens", config=conf)["tokens"]
                             if x["token_id"] == t["token_id"]])
    assert listed == [(t["token_id"], t["hmac"])]
    renewed = java4.admin(bs, "renew_token", hmac=t["hmac"], period_ms=60000, config=conf)
    assert t["issue"] < renewed["expiry"] < t["expiry"], renewed
    assert "DelegationTokenNotFoundException" in java4.admin(bs, "renew_token", hmac="AAAA", period_ms=-1,
                                                             config=conf)["error"]
    # PLAINTEXT: not allowed (Kafka's UnsupportedByAuthenticationException)
    refused = java4.admin(token_broker["plain"], "describe_tokens", config={})
    assert "UnsupportedByAuthenticationException" in refused["error"], refused
    # another user: neither owner nor renewer
    bob = java_conf(Sec(bs, mechanism="PLAIN", user="bob", password="bob-secret"), {})
    carol = java4.admin(bs, "create_token", config=conf)["token"]
    mismatch = java4.admin(bs, "expire_token", hmac=carol["hmac"], period_ms=-1, config=bob)
    assert "DelegationTokenOwnerMismatchException" in mismatch["error"], mismatch
    gone = java4.admin(bs, "expire_token", hmac=t["hmac"], period_ms=-1, config=bob)   # bob renews t: may expire it
    assert gone.get("expiry", 0) >= t["issue"], gone   # the time of the removal
    assert _until(lambda: t["token_id"] not in [x["token_id"] for x in
                                                java4.admin(bs, "describe_tokens", config=conf)["tokens"]])


def _tokens_tool(bs: str, base: Path, *args: str) -> str:
    cfg = base / "alice.properties"
    cfg.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                   f"sasl.jaas.config={_alice(bs)['sasl.jaas.config']}\n")
    p = subprocess.run(reference.java_command("org.apache.kafka.tools.DelegationTokenCommand", "--bootstrap-server",
                                              bs, "--command-config", str(cfg), *args),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_kafka_delegation_tokens_tool_and_token_login(token_broker: dict[str, str], get_client) -> None:
    why = reference.missing()   # Kafka 4.4's tools come with the reference broker's jars
    if why:
        from conftest import missing

        missing(why)
    bs, base = token_broker["sasl"], Path(token_broker["base"])
    out = _tokens_tool(bs, base, "--create", "--max-life-time-period", "-1", "--renewer-principal", "User:bob")
    row = next(line.split() for line in out.splitlines() if line.strip() and not line.startswith(("Calling", "Created", "TOKENID")))
    token_id, hmac_b64 = row[0], row[1]
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", token_id), out
    # without --owner-principal the tool asks for an empty owner list: no tokens, from both brokers
    assert "Total number of tokens : 0" in _tokens_tool(bs, base, "--describe")
    assert _until(lambda: token_id in _tokens_tool(bs, base, "--describe", "--owner-principal", "User:alice"))
    assert "Completed renew operation" in _tokens_tool(bs, base, "--renew", "--hmac", hmac_b64, "--renew-time-period", "-1")

    java = get_client("java")
    topic = f"dtoken-{uuid.uuid4().hex[:6]}"
    create_topic(token_broker["plain"], topic)
    values = [b"t-1", b"t-2", b"t-3"]
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        s = Sec(bs, mechanism=mechanism, user=token_id, password=hmac_b64, token=True)
        each = f"{topic}-{mechanism[-3:]}"
        create_topic(token_broker["plain"], each)
        assert roundtrip("java", java, s, {}, each, values) == values
    wrong = Sec(bs, mechanism="SCRAM-SHA-512", user=token_id, password="d3Jvbmc=", token=True)
    with pytest.raises(ClientError):
        roundtrip("java", java, wrong, {}, topic, values, consume=False, timeout_s=10)
    assert "Completed expire operation" in _tokens_tool(bs, base, "--expire", "--hmac", hmac_b64, "--expiry-time-period", "-1")
    with pytest.raises(ClientError):   # removed: refused like an expired one
        roundtrip("java", java, Sec(bs, mechanism="SCRAM-SHA-512", user=token_id, password=hmac_b64, token=True),
                  {}, topic, values, consume=False, timeout_s=10)
