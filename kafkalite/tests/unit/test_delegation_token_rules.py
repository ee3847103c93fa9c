"""kafkalite.security.tokens.manager without a broker: Kafka 4.4's lifetimes, the renew/expire checks in Kafka's
order, the expiry sweep, the file (restart, a damaged file, a failed write) and the SCRAM credential of a token."""
from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

import pytest
import trio

from kafkalite.config.broker import BrokerConfig
from kafkalite.security.principal import KafkaPrincipal
from kafkalite.security.scram import credential_from_salted, salted_password
from kafkalite.security.tokens.manager import TokenError, TokenManager, TokenStoreError, new_token_id
from kafkalite_wire.errors import ErrorCode

ALICE, BOB, CAROL = (KafkaPrincipal("User", n) for n in ("alice", "bob", "carol"))
NOW = 1_000_000
CONF = {"delegation.token.secret.key": "k", "delegation.token.max.lifetime.ms": "10000",
        "delegation.token.expiry.time.ms": "3000"}


def _manager(tmp_path: Path, **extra: str) -> TokenManager:
    return TokenManager(tmp_path, BrokerConfig({**CONF, **extra}))


def test_lifetimes_renew_and_expire_as_kafka(tmp_path: Path) -> None:
    async def main() -> None:
        m = _manager(tmp_path)
        info, mac = await m.create(ALICE, ALICE, [BOB], -1, NOW)
        assert mac == hmac.new(b"k", info.token_id.encode(), hashlib.sha512).digest()
        assert (info.max_ms, info.expiry_ms) == (NOW + 10000, NOW + 3000)
        short, _ = await m.create(ALICE, ALICE, [], 2000, NOW)
        assert (short.max_ms, short.expiry_ms) == (NOW + 2000, NOW + 2000)   # capped by the request's max
        long, _ = await m.create(ALICE, ALICE, [], 99999, NOW)
        assert long.max_ms == NOW + 10000                                   # capped by the broker's max
        # renew: owner or renewer; min(expiry.time.ms, period); never past max
        assert await m.renew(mac, BOB, 1000, NOW + 100) == NOW + 1100
        assert await m.renew(mac, ALICE, -1, NOW + 1000) == NOW + 4000
        short_mac = m.hmac(short.token_id)
        assert await m.renew(short_mac, ALICE, -1, NOW + 1000) == NOW + 2000   # never past its max
        with pytest.raises(TokenError) as e:
            await m.renew(mac, CAROL, -1, NOW)
        assert e.value.code == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
        with pytest.raises(TokenError) as e:
            await m.renew(b"x", ALICE, -1, NOW)
        assert e.value.code == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
        with pytest.raises(TokenError) as e:   # expired is checked before the owner, as Kafka
            await m.renew(short_mac, CAROL, -1, NOW + 2001)
        assert e.value.code == ErrorCode.DELEGATION_TOKEN_EXPIRED
        assert await m.expire(mac, ALICE, 500, NOW + 3000) == NOW + 3500
        assert await m.expire(mac, ALICE, -1, NOW + 3001) == NOW + 3001
        assert info.token_id not in m.tokens
        with pytest.raises(TokenError) as e:
            await m.create(ALICE, ALICE, [KafkaPrincipal("Group", "g")], -1, NOW)
        assert e.value.code == ErrorCode.INVALID_PRINCIPAL_TYPE
        # the sweep drops what has expired; the file keeps the rest across a restart
        assert await m.remove_expired(NOW + 2001) == 1
        again = _manager(tmp_path)
        assert set(again.tokens) == {long.token_id} and again.tokens[long.token_id] == m.tokens[long.token_id]

    trio.run(main)


def test_disabled_without_a_secret(tmp_path: Path) -> None:
    async def main() -> None:
        m = _manager(tmp_path, **{"delegation.token.secret.key": ""})
        assert not m.enabled
        with pytest.raises(TokenError) as e:
            await m.create(ALICE, ALICE, [], -1, NOW)
        assert e.value.code == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED

    trio.run(main)


def test_a_failed_write_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        m = _manager(tmp_path)
        info, mac = await m.create(ALICE, ALICE, [], -1, NOW)

        def full(data: bytes) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(m, "_write", full)
        with pytest.raises(OSError):
            await m.renew(mac, ALICE, 10, NOW)
        with pytest.raises(OSError):
            await m.create(BOB, BOB, [], -1, NOW)
        assert list(m.tokens) == [info.token_id] and m.tokens[info.token_id].expiry_ms == NOW + 3000

    trio.run(main)


def test_a_damaged_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "kafkalite-delegation-tokens.json").write_text("{not json")
    with pytest.raises(TokenStoreError):
        _manager(tmp_path)


def test_scram_credential_of_a_token(tmp_path: Path) -> None:
    async def main() -> None:
        m = _manager(tmp_path)
        info, mac = await m.create(ALICE, BOB, [], -1, NOW)
        found = m.scram_lookup(info.token_id, "SCRAM-SHA-512", NOW)
        assert found is not None
        cred, got = found
        assert got.owner == ALICE and cred.iterations == 4096
        password = base64.b64encode(mac).decode()
        same = credential_from_salted("SCRAM-SHA-512", cred.salt,
                                      salted_password("SCRAM-SHA-512", password, cred.salt, 4096), 4096)
        assert (same.stored_key, same.server_key) == (cred.stored_key, cred.server_key)
        assert m.scram_lookup(info.token_id, "SCRAM-SHA-512", NOW + 3001) is None   # expired
        assert m.scram_lookup("nope", "SCRAM-SHA-256", NOW) is None

    trio.run(main)


def test_token_ids_look_like_kafkas() -> None:
    ids = {new_token_id() for _ in range(200)}
    assert len(ids) == 200 and all(len(i) == 22 and not i.startswith("-") for i in ids)
