"""Delegation tokens over the wire (CreateDelegationToken 38 .. DescribeDelegationToken 41) and SCRAM with
``tokenauth=true``, against an embedded broker with a SASL listener."""
from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite.embedded import Broker
from kafkalite.tests.support import saslclient as sc
from kafkalite.tests.support.rawclient import RawClient
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    CreateDelegationTokenRequest,
    CreateTopicsRequest,
    DescribeDelegationTokenRequest,
    ExpireDelegationTokenRequest,
    MetadataRequest,
    RenewDelegationTokenRequest,
)

SECRET = "s3cret-key"
OVERRIDES = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config":
        'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-pw" user_bob="bob-pw";',
    "delegation.token.secret.key": SECRET,
}
Renewer = CreateDelegationTokenRequest.CreatableRenewers


def _start(data_dir: Path, **extra: str) -> Broker:
    return Broker(data_dir=data_dir, overrides={**OVERRIDES, **extra}).start()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    b = _start(tmp_path_factory.mktemp("dtokens"))
    try:
        yield b
    finally:
        b.stop()


def _sasl(b: Broker, user: str = "alice") -> RawClient:
    host, port = b.addresses[1]
    c = RawClient(host, port, timeout=10)
    sc.api_versions(c)
    assert sc.login_plain(c, user, f"{user}-pw").error_code == 0
    return c


def _create(c: RawClient, renewers: tuple[str, ...] = (), max_ms: int = -1, version: int = 3,
            owner: str | None = None) -> object:
    return c.request(CreateDelegationTokenRequest(
        owner_principal_type="User" if owner else None, owner_principal_name=owner,
        renewers=[Renewer(principal_type="User", principal_name=r) for r in renewers], max_lifetime_ms=max_ms),
        version)


def _token_login(b: Broker, token_id: str, hmac_: bytes, mechanism: str = "SCRAM-SHA-256") -> tuple[object, RawClient]:
    host, port = b.addresses[1]
    c = RawClient(host, port, timeout=10)
    sc.api_versions(c)
    return sc.login_scram(c, mechanism, token_id, base64.b64encode(hmac_).decode(),
                          extensions="tokenauth=true"), c


def test_create_describe_renew_expire(broker: Broker) -> None:
    with _sasl(broker) as c:
        r = _create(c, renewers=("bob",))
        assert r.error_code == 0
        assert (r.principal_type, r.principal_name) == ("User", "alice")
        assert (r.token_requester_principal_type, r.token_requester_principal_name) == ("User", "alice")
        assert bytes(r.hmac) == hmac.new(SECRET.encode(), r.token_id.encode(), hashlib.sha512).digest()
        assert r.max_timestamp_ms - r.issue_timestamp_ms == 604800000
        assert r.expiry_timestamp_ms - r.issue_timestamp_ms == 86400000
        d = c.request(DescribeDelegationTokenRequest(owners=None), 3)
        assert d.error_code == 0
        mine = [t for t in d.tokens if t.token_id == r.token_id]
        assert len(mine) == 1 and bytes(mine[0].hmac) == bytes(r.hmac)
        assert [(x.principal_type, x.principal_name) for x in mine[0].renewers] == [("User", "bob")]
        assert c.request(DescribeDelegationTokenRequest(owners=[]), 3).tokens == []
        rn = c.request(RenewDelegationTokenRequest(hmac=bytes(r.hmac), renew_period_ms=1000), 2)
        assert rn.error_code == 0 and r.issue_timestamp_ms < rn.expiry_timestamp_ms < r.expiry_timestamp_ms
        bad = c.request(RenewDelegationTokenRequest(hmac=b"nope", renew_period_ms=-1), 2)
        assert bad.error_code == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    with _sasl(broker, "bob") as c:   # a renewer may renew; bob sees alice's token as its renewer
        assert c.request(RenewDelegationTokenRequest(hmac=bytes(r.hmac), renew_period_ms=-1), 2).error_code == 0
        assert [t.token_id for t in c.request(DescribeDelegationTokenRequest(owners=None), 3).tokens] == [r.token_id]
        other = _create(c)
        assert other.error_code == 0
    with _sasl(broker) as c:   # alice is neither owner nor renewer of bob's token
        mis = c.request(ExpireDelegationTokenRequest(hmac=bytes(other.hmac), expiry_time_period_ms=-1), 2)
        assert mis.error_code == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
        ex = c.request(ExpireDelegationTokenRequest(hmac=bytes(r.hmac), expiry_time_period_ms=-1), 2)
        assert ex.error_code == 0 and ex.expiry_timestamp_ms >= r.issue_timestamp_ms   # now, as Kafka 4.4
        gone = c.request(RenewDelegationTokenRequest(hmac=bytes(r.hmac), renew_period_ms=-1), 2)
        assert gone.error_code == ErrorCode.DELEGATION_TOKEN_NOT_FOUND


def test_not_allowed_on_plaintext(broker: Broker) -> None:
    host, port = broker.addresses[0]
    with RawClient(host, port, timeout=10) as c:
        r = _create(c)
        assert r.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        assert (r.issue_timestamp_ms, r.token_id, bytes(r.hmac)) == (-1, "", b"")
        d = c.request(DescribeDelegationTokenRequest(owners=None), 3)
        assert d.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        rn = c.request(RenewDelegationTokenRequest(hmac=b"x", renew_period_ms=-1), 2)
        assert (rn.error_code, rn.expiry_timestamp_ms) == (ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, -1)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_token_authentication(broker: Broker, mechanism: str) -> None:
    with _sasl(broker) as c:
        r = _create(c)
        assert r.error_code == 0
    login, c = _token_login(broker, r.token_id, bytes(r.hmac), mechanism)
    with c:
        assert login.error_code == 0
        # KIP-368: the session ends at the token's expiry (Kafka's CREDENTIAL_LIFETIME_MS of a token login)
        assert 0 < login.session_lifetime_ms <= r.expiry_timestamp_ms - r.issue_timestamp_ms
        assert c.request(MetadataRequest(topics=[], allow_auto_topic_creation=False), 9).brokers
        # a token-authenticated session may not ask for tokens
        assert _create(c).error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    wrong, c = _token_login(broker, r.token_id, b"\x00" * 64, mechanism)
    with c:
        assert wrong.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    unknown, c = _token_login(broker, "no-such-token", bytes(r.hmac), mechanism)
    with c:
        assert unknown.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED


def test_expired_token_is_refused(broker: Broker) -> None:
    with _sasl(broker) as c:
        r = _create(c)
        ex = c.request(ExpireDelegationTokenRequest(hmac=bytes(r.hmac), expiry_time_period_ms=0), 2)
        assert ex.error_code == 0 and ex.expiry_timestamp_ms >= r.issue_timestamp_ms
        # the expiry is now (a millisecond later it has passed): renewing it is refused once that has passed
        while True:
            rn = c.request(RenewDelegationTokenRequest(hmac=bytes(r.hmac), renew_period_ms=-1), 2)
            if rn.error_code:
                break
            ex = c.request(ExpireDelegationTokenRequest(hmac=bytes(r.hmac), expiry_time_period_ms=0), 2)
        assert rn.error_code == ErrorCode.DELEGATION_TOKEN_EXPIRED
    login, c = _token_login(broker, r.token_id, bytes(r.hmac))
    with c:
        assert login.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED


def test_owner_for_another_user_and_disabled(tmp_path: Path) -> None:
    b = _start(tmp_path / "acl", **{"authorizer.class.name":
                                    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                                    "super.users": "User:alice"})
    try:
        with _sasl(b, "bob") as c:
            r = _create(c, owner="carol")
            assert r.error_code == ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
            assert (r.principal_name, r.token_requester_principal_name) == ("carol", "bob")
        with _sasl(b) as c:   # a super user may
            r = _create(c, owner="carol")
            assert (r.error_code, r.principal_name, r.token_requester_principal_name) == (0, "carol", "alice")
            mine = _create(c)
        # a token session is its owner: carol (no ACLs) may not create a topic, alice (a super user) may
        for token, expected in ((r, ErrorCode.TOPIC_AUTHORIZATION_FAILED), (mine, ErrorCode.NONE)):
            login, c = _token_login(b, token.token_id, bytes(token.hmac))
            with c:
                assert login.error_code == 0
                made = c.request(CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
                    name=f"t-{token.principal_name}", num_partitions=1, replication_factor=1, assignments=[],
                    configs=[])], timeout_ms=10000, validate_only=False), 5)
                assert made.topics[0].error_code == expected
    finally:
        b.stop()
    off = _start(tmp_path / "off", **{"delegation.token.secret.key": ""})
    try:
        with _sasl(off) as c:
            assert _create(c).error_code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
            d = c.request(DescribeDelegationTokenRequest(owners=None), 3)
            assert d.error_code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    finally:
        off.stop()


def test_tokens_survive_a_restart(tmp_path: Path) -> None:
    b = _start(tmp_path)
    try:
        with _sasl(b) as c:
            r = _create(c)
            assert r.error_code == 0
    finally:
        b.stop()
    b = _start(tmp_path)
    try:
        with _sasl(b) as c:
            d = c.request(DescribeDelegationTokenRequest(owners=None), 3)
            assert [t.token_id for t in d.tokens] == [r.token_id]
        login, c = _token_login(b, r.token_id, bytes(r.hmac), "SCRAM-SHA-512")
        with c:
            assert login.error_code == 0
    finally:
        b.stop()


def test_a_clusters_brokers_share_tokens(tmp_path: Path) -> None:
    """A token created on one broker of ``kafkalite serve --brokers 3`` is listed by, and logs in to, the others."""
    from kafkalite.cluster import Cluster

    overrides = {"listener.security.protocol.map": "PLAINTEXT:SASL_PLAINTEXT",
                 "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
                 "listener.name.plaintext.plain.sasl.jaas.config": OVERRIDES[
                     "listener.name.sasl_plaintext.plain.sasl.jaas.config"],
                 "delegation.token.secret.key": SECRET, "offsets.topic.num.partitions": "3"}
    with Cluster(brokers=3, data_dir=tmp_path, overrides=overrides) as cluster:
        first, *others = cluster.node_ids()

        def conn(node: int) -> RawClient:
            host, port = cluster.addresses()[node]
            c = RawClient(host, port, timeout=15)
            sc.api_versions(c)
            return c

        with conn(first) as c:
            assert sc.login_plain(c, "alice", "alice-pw").error_code == 0
            r = _create(c)
            assert r.error_code == 0
        for node in others:
            with conn(node) as c:
                assert sc.login_plain(c, "alice", "alice-pw").error_code == 0
                d = c.request(DescribeDelegationTokenRequest(owners=None), 3)
                assert [t.token_id for t in d.tokens] == [r.token_id]
            with conn(node) as c:
                login = sc.login_scram(c, "SCRAM-SHA-512", r.token_id, base64.b64encode(bytes(r.hmac)).decode(),
                                       extensions="tokenauth=true")
                assert login.error_code == 0
