"""``kafkalite acls`` and users' SCRAM credentials (``kafkalite configs --entity-type users`` / ``kafkalite
scram``) end to end: an embedded broker with the StandardAuthorizer and a SASL_PLAINTEXT listener only, the
tools logged in as the super user ``admin`` (PLAIN), a granted ACL seen working for ``alice``, bad input and
exit codes."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite import Broker
from kafkalite.tests.support.tools_helpers import cli, need_confluent

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" '
        'user_alice="alice-secret";')


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path]]:
    need_confluent()
    base = tmp_path_factory.mktemp("tools-acls")
    b = Broker(data_dir=base / "data", overrides={
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
    }).start()
    confs = []
    for user in ("admin", "alice"):
        conf = base / f"{user}.properties"
        conf.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username={user}\n"
                        f"sasl.password={user}-secret\n")
        confs.append(conf)
    try:
        host, port = b.addresses[0]
        yield f"{host}:{port}", confs[0], confs[1]
    finally:
        b.stop()


def _visible_topics(bootstrap: str, timeout: float = 15, **conf: str) -> set[str] | None:
    """The topics the user sees, None when it cannot log in (the client is gone before this returns: a
    librdkafka handle kept alive by a traceback until interpreter exit can crash it)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    client = AdminClient({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", **conf})
    try:
        return set(client.list_topics(timeout=timeout).topics)
    except KafkaException:
        return None
    finally:
        del client


def test_acls_add_list_remove(env: tuple[str, Path, Path]) -> None:
    bs, admin_conf, alice_conf = env

    def acls(*argv: str, conf: Path = admin_conf, stdin: bytes = b""):
        return cli(bs, "acls", "--command-config", str(conf), *argv, stdin=stdin)

    assert cli(bs, "topics", "--command-config", str(admin_conf), "--create", "--topic", "t").code == 0
    alice = {"sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"}
    assert "t" not in _visible_topics(bs, **alice)
    r = acls("--add", "--allow-principal", "User:alice", "--operation", "Describe", "--operation", "read",
             "--topic", "t")
    assert r.code == 0, r.err
    assert r.rows() == [["TOPIC", "t", "LITERAL", "User:alice", "*", op, "ALLOW"] for op in ("DESCRIBE", "READ")]
    assert "t" in _visible_topics(bs, **alice)                     # the grant works
    assert acls("--add", "--consumer", "--allow-principal", "User:bob", "--topic", "t", "--group", "g").code == 0
    assert acls("--add", "--producer", "--idempotent", "--allow-principal", "User:carol", "--topic", "t").code == 0
    r = acls("--add", "--deny-principal", "User:alice", "--deny-host", "10.0.0.1", "--operation", "Write",
             "--topic", "pre", "--resource-pattern-type", "prefixed")
    assert r.code == 0, r.err
    bob = acls("--list", "--principal", "User:bob", "--json").json()
    assert sorted((a["resource_type"], a["name"], a["operation"]) for a in bob) == [
        ("GROUP", "g", "READ"), ("TOPIC", "t", "DESCRIBE"), ("TOPIC", "t", "READ")]
    carol = {(a["resource_type"], a["operation"]) for a in acls("--list", "--principal", "User:carol",
                                                                "--json").json()}
    assert carol == {("TOPIC", "WRITE"), ("TOPIC", "DESCRIBE"), ("TOPIC", "CREATE"), ("CLUSTER", "IDEMPOTENT_WRITE")}
    matched = acls("--list", "--topic", "pre-x", "--resource-pattern-type", "match").rows()
    assert matched == [["TOPIC", "pre", "PREFIXED", "User:alice", "10.0.0.1", "WRITE", "DENY"]]
    assert len(acls("--list").rows()) == 10
    # remove: asks first; "n" removes nothing (exit 1), --force removes
    r = acls("--remove", "--allow-principal", "User:bob", "--consumer", "--topic", "t", "--group", "g", stdin=b"n\n")
    assert r.code == 1 and "Are you sure" in r.err and len(acls("--list", "--principal", "User:bob").rows()) == 3
    r = acls("--remove", "--force", "--allow-principal", "User:bob", "--consumer", "--topic", "t", "--group", "g")
    assert r.code == 0 and len(r.rows()) == 3
    assert acls("--list", "--principal", "User:bob").rows() == []
    r = acls("--remove", "--topic", "pre", "--resource-pattern-type", "prefixed", stdin=b"y\n")  # all ACLs of it
    assert r.code == 0 and len(r.rows()) == 1
    # bad input: usage errors exit 2 with one line; a principal without ALTER on the cluster exits 1
    for argv in (["--add", "--topic", "t", "--operation", "Read"],                       # no principal
                 ["--add", "--allow-principal", "User:x", "--operation", "Fly", "--topic", "t"],
                 ["--add", "--allow-principal", "User:x", "--topic", "t", "--resource-pattern-type", "match"],
                 ["--add", "--allow-principal", "User:x", "--consumer", "--topic", "t"],   # --consumer without --group
                 ["--add", "--allow-principal", "alice", "--topic", "t"],                  # not TYPE:NAME
                 ["--add", "--allow-host", "h", "--deny-principal", "User:x", "--topic", "t"],
                 ["--add", "--allow-principal", "User:x"],                                 # no resource
                 ["--list", "--allow-principal", "User:x"]):
        r = acls(*argv)
        assert r.code == 2 and r.err.count("\n") <= 2 and "error" in r.err, (argv, r)
    r = acls("--list", conf=alice_conf)
    assert r.code == 1 and "CLUSTER_AUTHORIZATION_FAILED" in r.err
    r = acls("--add", "--allow-principal", "User:alice", "--cluster", "--operation", "Alter", conf=alice_conf)
    assert r.code == 1 and "CLUSTER_AUTHORIZATION_FAILED" in r.err


def test_scram_credentials(env: tuple[str, Path, Path]) -> None:
    bs, admin_conf, alice_conf = env
    cfg = ("configs", "--command-config", str(admin_conf))
    scram_alice = {"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "alice", "sasl.password": "alice-scram"}
    r = cli(bs, *cfg, "--alter", "--entity-type", "users", "--entity-name", "alice",
            "--add-config", "SCRAM-SHA-256=[iterations=8192,password=alice-scram],SCRAM-SHA-512=[password=p512]")
    assert r.code == 0, r.err
    assert "alice-scram" not in r.out + r.err
    assert cli(bs, *cfg, "--describe", "--entity-type", "users", "--entity-name", "alice").rows() == [
        ["alice", "SCRAM-SHA-256", "8192"], ["alice", "SCRAM-SHA-512", "4096"]]
    assert _visible_topics(bs, **scram_alice) is not None          # alice logs in with the new credential
    assert cli(bs, "scram", "--command-config", str(admin_conf), "--alter", "--user", "carl",
               "--add-config", "SCRAM-SHA-512=[password=c]").code == 0
    everyone = cli(bs, "scram", "--command-config", str(admin_conf), "--describe", "--json").json()
    assert [(u["user"], u["mechanism"]) for u in everyone] == [
        ("alice", "SCRAM-SHA-256"), ("alice", "SCRAM-SHA-512"), ("carl", "SCRAM-SHA-512")]
    assert cli(bs, *cfg, "--alter", "--user", "alice", "--delete-config", "SCRAM-SHA-256").code == 0
    assert cli(bs, *cfg, "--describe", "--user", "alice").rows() == [["alice", "SCRAM-SHA-512", "4096"]]
    assert _visible_topics(bs, timeout=2, **scram_alice) is None    # that credential is gone
    r = cli(bs, *cfg, "--describe", "--user", "nobody")
    assert r.code == 1 and "RESOURCE_NOT_FOUND" in r.err
    r = cli(bs, *cfg, "--alter", "--user", "alice", "--add-config", "SCRAM-SHA-256=[iterations=10,password=x]")
    assert r.code == 1 and "UNACCEPTABLE_CREDENTIAL" in r.err        # the broker's minimum is 4096
    for argv in (["--alter", "--user", "alice", "--add-config", "SCRAM-SHA-256=[iterations=8192]"],  # no password
                 ["--alter", "--user", "alice", "--add-config", "SCRAM-SHA-1=[password=x]"],
                 ["--alter", "--user", "alice", "--add-config", "SCRAM-SHA-256=[salt=x,password=x]"],
                 ["--alter", "--entity-type", "users", "--add-config", "SCRAM-SHA-256=[password=x]"],
                 ["--describe", "--user", "alice", "--add-config", "SCRAM-SHA-256=[password=x]"]):
        r = cli(bs, *cfg, *argv)
        assert r.code == 2 and "error" in r.err, (argv, r)
    r = cli(bs, "configs", "--command-config", str(alice_conf), "--describe", "--user", "alice")
    assert r.code == 1 and "CLUSTER_AUTHORIZATION_FAILED" in r.err
