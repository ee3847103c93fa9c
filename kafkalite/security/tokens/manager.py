"""Delegation tokens: Kafka's rules (DelegationTokenControlManager, KafkaApis' token handlers) and their file.

Times are epoch milliseconds passed in (``now``), so the rules are tested without a clock. A token is found by its
HMAC (renew, expire) or its id (SCRAM). Rules, as Kafka 4.4:

- create: ``max = now + min(max.lifetime.ms, request max lifetime if > 0)``; ``expiry = min(max, now +
  expiry.time.ms)``; the id is a random Kafka Uuid string; renewers must be ``User`` principals
  (INVALID_PRINCIPAL_TYPE); the owner is the request's owner if named, else the requester.
- renew / expire: unknown HMAC DELEGATION_TOKEN_NOT_FOUND; past its expiry or max DELEGATION_TOKEN_EXPIRED; a
  principal that is neither the owner nor a renewer DELEGATION_TOKEN_OWNER_MISMATCH. Renew: ``expiry = min(max,
  now + min(expiry.time.ms, period if > 0))``. Expire with a negative period removes the token (the answer's
  expiry is now, as Kafka 4.4 answers); else ``expiry = min(max, now + period)``.
- describe: a token is listed if (owners given) one of them is its owner, requester or a renewer, and the caller
  is its owner, requester or a renewer, or may DESCRIBE the token or DESCRIBE_TOKENS its owner.
- the expiry task removes tokens whose expiry (or max) has passed, every ``expiry.check.interval.ms``.

File: ``kafkalite-delegation-tokens.json`` in the metadata room (the HMACs are not stored: they follow from the
secret, as Kafka's DelegationTokenRecord leaves them out). Rewritten whole through ``write_atomic`` in a worker
thread; memory changes only after the write succeeded.
"""
from __future__ import annotations

import base64
import hashlib
import hmac as _hmac
import json
import logging
import os
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from kafkalite.security.principal import USER_TYPE, KafkaPrincipal
from kafkalite.security.tokens import FILE_NAME
from kafkalite_storage.checkpoints import write_atomic
from kafkalite_wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkalite.config.broker import BrokerConfig
    from kafkalite.security.scram import ScramCredential

log = logging.getLogger(__name__)



class TokenStoreError(Exception):
    """The token file exists but cannot be read."""


class TokenError(Exception):
    """A request refused with a Kafka error code."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


@dataclass(frozen=True)
class TokenInfo:
    token_id: str
    owner: KafkaPrincipal
    requester: KafkaPrincipal
    renewers: tuple[KafkaPrincipal, ...]
    issue_ms: int
    max_ms: int
    expiry_ms: int

    def owner_or_renewer(self, p: KafkaPrincipal) -> bool:
        """Kafka's TokenInformation.ownerOrRenewer: owner, requester or a renewer."""
        return p == self.owner or p == self.requester or p in self.renewers

    def allowed_to_renew(self, p: KafkaPrincipal) -> bool:
        """DelegationTokenControlManager.allowedToRenew: the owner or a renewer."""
        return p == self.owner or p in self.renewers

    def expired(self, now: int) -> bool:
        return self.max_ms < now or self.expiry_ms < now


def new_token_id() -> str:
    """Kafka's Uuid.randomUuid().toString(): 16 random bytes, URL-safe base64 without padding, never starting
    with '-'."""
    while True:
        s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not s.startswith("-"):
            return s


def _p(d: dict[str, str]) -> KafkaPrincipal:
    return KafkaPrincipal(str(d["type"]), str(d["name"]))


def _d(p: KafkaPrincipal) -> dict[str, str]:
    return {"type": p.principal_type, "name": p.name}


def read_tokens(path: Path) -> dict[str, TokenInfo]:
    """The tokens of a token file (none when it does not exist); TokenStoreError when it cannot be read."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise TokenStoreError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        doc = json.loads(raw)
        return {str(t["id"]): TokenInfo(str(t["id"]), _p(t["owner"]), _p(t["requester"]),
                                        tuple(_p(r) for r in t["renewers"]), int(t["issue_ms"]),
                                        int(t["max_ms"]), int(t["expiry_ms"])) for t in doc["tokens"]}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise TokenStoreError(f"{path} is damaged ({type(exc).__name__}); restore it from a backup "
                              "or remove it (every delegation token is then gone)") from None


class TokenManager:
    def __init__(self, log_dir: Path | str, config: BrokerConfig) -> None:
        self.path = Path(log_dir) / FILE_NAME
        secret = config.get("delegation.token.secret.key")
        self.secret: bytes | None = secret.encode() if secret else None
        self.max_lifetime_ms = config.get_int("delegation.token.max.lifetime.ms")
        self.renew_ms = config.get_int("delegation.token.expiry.time.ms")
        self.check_interval_ms = config.get_int("delegation.token.expiry.check.interval.ms")
        self.tokens: dict[str, TokenInfo] = self._load()
        self._by_hmac: dict[bytes, str] = {self.hmac(t): t for t in self.tokens} if self.secret else {}
        self._scram: dict[tuple[str, str], ScramCredential] = {}
        self._lock: trio.Lock | None = None

    @property
    def enabled(self) -> bool:
        return self.secret is not None

    def hmac(self, token_id: str) -> bytes:
        assert self.secret is not None
        return _hmac.new(self.secret, token_id.encode(), hashlib.sha512).digest()

    # -- the file ---------------------------------------------------------------------------------------
    def _load(self) -> dict[str, TokenInfo]:
        return read_tokens(self.path)

    @staticmethod
    def _encode(tokens: dict[str, TokenInfo]) -> bytes:
        doc = {"version": 1, "tokens": [
            {"id": t.token_id, "owner": _d(t.owner), "requester": _d(t.requester),
             "renewers": [_d(r) for r in t.renewers], "issue_ms": t.issue_ms, "max_ms": t.max_ms,
             "expiry_ms": t.expiry_ms} for _, t in sorted(tokens.items())]}
        return json.dumps(doc, indent=1).encode()

    def _write(self, data: bytes) -> None:
        write_atomic(str(self.path), data)

    async def _commit(self, tokens: dict[str, TokenInfo]) -> None:
        """Write ``tokens`` durably, then make them the manager's. Raises OSError (nothing changed then)."""
        await trio.to_thread.run_sync(self._write, self._encode(tokens))
        self.tokens = tokens
        self._by_hmac = {self.hmac(t): t for t in tokens} if self.secret else {}
        self._scram = {k: v for k, v in self._scram.items() if k[0] in tokens}

    def _lock_of(self) -> trio.Lock:
        if self._lock is None:
            self._lock = trio.Lock()
        return self._lock

    # -- the rules ---------------------------------------------------------------------------------------
    async def create(self, owner: KafkaPrincipal, requester: KafkaPrincipal, renewers: list[KafkaPrincipal],
                     max_lifetime_ms: int, now: int) -> tuple[TokenInfo, bytes]:
        if self.secret is None:
            raise TokenError(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        if any(r.principal_type != USER_TYPE for r in renewers):
            raise TokenError(ErrorCode.INVALID_PRINCIPAL_TYPE)
        life = self.max_lifetime_ms if max_lifetime_ms <= 0 else min(self.max_lifetime_ms, max_lifetime_ms)
        max_ms = now + life
        info = TokenInfo(new_token_id(), owner, requester, tuple(renewers), now, max_ms,
                         min(max_ms, now + self.renew_ms))
        async with self._lock_of():
            await self._commit({**self.tokens, info.token_id: info})
        log.info("delegation token %s created for %s by %s", info.token_id, owner, requester)
        return info, self.hmac(info.token_id)

    def _checked(self, hmac: bytes, principal: KafkaPrincipal, now: int) -> TokenInfo:
        token_id = self._by_hmac.get(bytes(hmac))
        info = self.tokens.get(token_id) if token_id is not None else None
        if info is None:
            raise TokenError(ErrorCode.DELEGATION_TOKEN_NOT_FOUND)
        if info.expired(now):
            raise TokenError(ErrorCode.DELEGATION_TOKEN_EXPIRED)
        if not info.allowed_to_renew(principal):
            raise TokenError(ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH)
        return info

    async def renew(self, hmac: bytes, principal: KafkaPrincipal, period_ms: int, now: int) -> int:
        async with self._lock_of():
            info = self._checked(hmac, principal, now)
            life = self.renew_ms if period_ms <= 0 else min(self.renew_ms, period_ms)
            expiry = min(info.max_ms, now + life)
            await self._commit({**self.tokens, info.token_id: replace(info, expiry_ms=expiry)})
        return expiry

    async def expire(self, hmac: bytes, principal: KafkaPrincipal, period_ms: int, now: int) -> int:
        if self.secret is None:
            raise TokenError(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
        async with self._lock_of():
            info = self._checked(hmac, principal, now)
            tokens = dict(self.tokens)
            if period_ms < 0:
                del tokens[info.token_id]
                expiry = now   # Kafka 4.4 answers the time of the removal (checked against it)
            else:
                expiry = min(info.max_ms, now + period_ms)
                tokens[info.token_id] = replace(info, expiry_ms=expiry)
            await self._commit(tokens)
        return expiry

    async def remove_expired(self, now: int) -> int:
        """The expiry task's sweep: drop every token past its expiry or max; how many were dropped."""
        async with self._lock_of():
            live = {k: t for k, t in self.tokens.items() if not t.expired(now)}
            gone = len(self.tokens) - len(live)
            if gone:
                await self._commit(live)
        if gone:
            log.info("removed %d expired delegation token(s)", gone)
        return gone

    # -- SCRAM (tokenauth=true) ---------------------------------------------------------------------------
    def scram_lookup(self, token_id: str, mechanism: str, now: int) -> tuple[ScramCredential, TokenInfo] | None:
        """The SCRAM credential of a live token (password = base64 of its HMAC, the mechanism's minimum
        iterations, as Kafka's DelegationTokenCache derives it) and the token; None if unknown or expired."""
        info = self.tokens.get(token_id)
        if info is None or self.secret is None or info.expired(now):
            return None
        cred = self._scram.get((token_id, mechanism))
        if cred is None:
            # the SCRAM module: only once a token authenticates
            from kafkalite.security.scram import MIN_ITERATIONS, credential_from_password

            password = base64.b64encode(self.hmac(token_id)).decode()
            cred = self._scram[(token_id, mechanism)] = credential_from_password(
                mechanism, password, MIN_ITERATIONS, os.urandom(32))
        return cred, info


async def expiry_task(tokens: TokenManager) -> None:
    """Kafka's token expiry check: every ``delegation.token.expiry.check.interval.ms``, drop expired tokens."""
    while True:
        await trio.sleep(max(tokens.check_interval_ms, 1) / 1000)
        try:
            await tokens.remove_expired(time.time_ns() // 1_000_000)
        except OSError as exc:   # a full disk: the tokens stay (refused anyway as expired), tried again next time
            log.warning("cannot remove expired delegation tokens: %s", exc.strerror or exc)


def requests_allowed(security_protocol: str, principal: KafkaPrincipal) -> bool:
    """KafkaApis.allowTokenRequests: not on PLAINTEXT, not on 1-way SSL (an anonymous SSL client), not from a
    token-authenticated session (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED otherwise)."""
    if principal.token_authenticated or security_protocol == "PLAINTEXT":
        return False
    return not (security_protocol == "SSL" and principal == KafkaPrincipal(USER_TYPE, "ANONYMOUS"))
