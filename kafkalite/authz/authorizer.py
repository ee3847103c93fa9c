"""The authorizer: Kafka's StandardAuthorizer semantics over an indexed, persisted ACL store.

Enabled by ``authorizer.class.name`` = ``org.apache.kafka.metadata.authorizer.StandardAuthorizer`` (or the
ZooKeeper-era ``kafka.security.authorizer.AclAuthorizer``, which decides the same way). A decision for
(principal, host, operation, resource) is, as in StandardAuthorizerData.authorize:

1. a principal listed in ``super.users`` (``User:a;User:b``) is allowed everything;
2. the ACLs that apply to the resource are those of its type that are LITERAL with its name, LITERAL ``*``,
   or PREFIXED with a prefix of its name; among them the ones naming the principal (or ``User:*`` for a user
   principal) and the host (or ``*``) and covering the operation count;
3. a matching DENY wins; DENY covers only its own operation (or ALL), while an ALLOW of READ, WRITE, DELETE
   or ALTER also allows DESCRIBE, and ALTER_CONFIGS also allows DESCRIBE_CONFIGS (implied operations);
4. else a matching ALLOW allows;
5. else, if *no* ACL at all applies to the resource (whatever its principal), the answer is
   ``allow.everyone.if.no.acl.found`` (default false); otherwise denied.

Index: LITERAL ACLs by (type, name); PREFIXED ACLs by type then prefix, with the set of prefix lengths in
use, so a check looks up one entry per distinct prefix length rather than scanning every ACL: the cost is
O(prefix lengths + matching ACLs). Decisions are cached per (principal, host, operation, type, name) and the
cache dropped whenever the ACLs change, so the hot paths pay one dict lookup.

Persistence: every change rewrites ``kafkalite-acls.json`` in the data directory (tmp + fsync + rename), and
the change is applied to memory only after the file is written, so an acknowledged CreateAcls/DeleteAcls
survives a crash and a failed write changes nothing.
"""
from __future__ import annotations

import bisect
import json
import logging
from collections.abc import Iterable
from pathlib import Path

from kafkalite.authz.acl import (
    IMPLIES_DESCRIBE,
    IMPLIES_DESCRIBE_CONFIGS,
    SUPPORTED_OPS,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclFilter,
    Op,
    PatternType,
    Permission,
    ResourceType,
)
from kafkalite.errors import ConfigError, StartupError
from kafkalite_storage.checkpoints import write_atomic

log = logging.getLogger(__name__)

ACLS_FILE = "kafkalite-acls.json"
AUTHORIZER_CLASSES = frozenset({
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",
})
_CACHE_MAX = 50_000


def _op_covers(acl_op: Op, allow: bool, op: Op) -> bool:
    if acl_op == Op.ALL or acl_op == op:
        return True
    if not allow:
        return False
    if op == Op.DESCRIBE:
        return acl_op in IMPLIES_DESCRIBE
    if op == Op.DESCRIBE_CONFIGS:
        return acl_op in IMPLIES_DESCRIBE_CONFIGS
    return False


class Authorizer:
    def __init__(self, data_dir: Path | str | None, *, super_users: Iterable[str] = (),
                 allow_if_no_acls: bool = False) -> None:
        self.path = Path(data_dir) / ACLS_FILE if data_dir is not None else None
        self.super_users = frozenset(s for s in super_users if s)
        self.allow_if_no_acls = allow_if_no_acls
        self._acls: dict[AclBinding, None] = {}      # insertion-ordered set
        self._literal: dict[tuple[int, str], list[AclBinding]] = {}
        self._prefixed: dict[int, dict[str, list[AclBinding]]] = {}
        self._prefix_lengths: dict[int, list[int]] = {}    # sorted distinct prefix lengths per type
        self._length_counts: dict[int, dict[int, int]] = {}  # type -> prefix length -> prefixes of that length
        self._by_type: dict[int, int] = {}           # resource type -> number of ACLs of that type
        self._cache: dict[tuple[str, str, int, int, str], bool] = {}
        self._load()

    # -- the store ----------------------------------------------------------------------------------
    def _load(self) -> None:
        if self.path is None:
            return
        try:
            rows = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            # refusing to start beats silently serving without the operator's DENY rules
            raise RuntimeError(f"cannot read the ACL file {self.path}: {exc}") from exc
        for row in rows.get("acls", []):
            self._index(AclBinding.from_json(row))

    def _persist(self, acls: Iterable[AclBinding]) -> None:
        if self.path is None:
            return
        data = json.dumps({"version": 1, "acls": [b.to_json() for b in acls]}, separators=(",", ":"))
        write_atomic(str(self.path), data.encode())

    def _index(self, b: AclBinding) -> None:
        if b in self._acls:
            return
        self._acls[b] = None
        rt = int(b.resource_type)
        self._by_type[rt] = self._by_type.get(rt, 0) + 1
        if b.pattern_type == PatternType.LITERAL:
            self._literal.setdefault((rt, b.name), []).append(b)
        else:
            by_prefix = self._prefixed.setdefault(rt, {})
            bucket = by_prefix.get(b.name)
            if bucket is None:
                bucket = by_prefix[b.name] = []
                counts = self._length_counts.setdefault(rt, {})
                n = len(b.name)
                counts[n] = counts.get(n, 0) + 1
                if counts[n] == 1:
                    bisect.insort(self._prefix_lengths.setdefault(rt, []), n)
            bucket.append(b)

    def _unindex(self, b: AclBinding) -> None:
        del self._acls[b]
        rt = int(b.resource_type)
        self._by_type[rt] -= 1
        if b.pattern_type == PatternType.LITERAL:
            bucket = self._literal[(rt, b.name)]
            bucket.remove(b)
            if not bucket:
                del self._literal[(rt, b.name)]
        else:
            by_prefix = self._prefixed[rt]
            by_prefix[b.name].remove(b)
            if not by_prefix[b.name]:
                del by_prefix[b.name]
                counts = self._length_counts[rt]
                n = len(b.name)
                counts[n] -= 1
                if not counts[n]:
                    del counts[n]
                    self._prefix_lengths[rt].remove(n)

    def __len__(self) -> int:
        return len(self._acls)

    def acls(self) -> list[AclBinding]:
        return list(self._acls)

    def create(self, bindings: list[AclBinding]) -> None:
        """Add bindings (validated by the caller; duplicates are no-ops). Raises OSError if they cannot be
        persisted, and then nothing changed."""
        new = [b for b in dict.fromkeys(bindings) if b not in self._acls]
        if not new:
            return
        self._persist([*self._acls, *new])
        for b in new:
            self._index(b)
        self._cache.clear()

    def matching(self, flt: AclFilter) -> list[AclBinding]:
        return [b for b in self._acls if flt.matches(b)]

    def delete(self, filters: list[AclFilter]) -> list[list[AclBinding]]:
        """Remove every binding matching each filter; returns, per filter, what it removed. Raises OSError
        when the result cannot be persisted (then nothing changed)."""
        per_filter = [self.matching(f) for f in filters]
        doomed = {b for found in per_filter for b in found}
        if doomed:
            self._persist([b for b in self._acls if b not in doomed])
            for b in doomed:
                self._unindex(b)
            self._cache.clear()
        return per_filter

    # -- decisions ----------------------------------------------------------------------------------
    def is_super(self, principal: str) -> bool:
        return principal in self.super_users

    def authorize(self, principal: str, host: str, op: Op, rtype: ResourceType, name: str) -> bool:
        key = (principal, host, op, rtype, name)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        result = self._decide(principal, host, op, rtype, name)
        if len(self._cache) >= _CACHE_MAX:
            self._cache.clear()
        self._cache[key] = result
        return result

    def _candidates(self, rtype: int, name: str) -> list[AclBinding]:
        found: list[AclBinding] = []
        lit = self._literal
        if (rtype, name) in lit:
            found += lit[(rtype, name)]
        if name != WILDCARD and (rtype, WILDCARD) in lit:
            found += lit[(rtype, WILDCARD)]
        by_prefix = self._prefixed.get(rtype)
        if by_prefix:
            n = len(name)
            for length in self._prefix_lengths[rtype]:
                if length > n:
                    break
                bucket = by_prefix.get(name[:length])
                if bucket:
                    found += bucket
        return found

    def _decide(self, principal: str, host: str, op: Op, rtype: ResourceType, name: str) -> bool:
        if principal in self.super_users:
            return True
        acls = self._candidates(int(rtype), name) if self._by_type.get(int(rtype)) else []
        if not acls:
            return self.allow_if_no_acls
        is_user = principal.startswith("User:")
        allowed = False
        for b in acls:
            if b.principal != principal and not (is_user and b.principal == WILDCARD_PRINCIPAL):
                continue
            if b.host != WILDCARD and b.host != host:
                continue
            allow = b.permission == Permission.ALLOW
            if not _op_covers(b.operation, allow, op):
                continue
            if not allow:
                return False
            allowed = True
        return allowed

    def authorized_ops(self, principal: str, host: str, rtype: ResourceType, name: str,
                       supported: dict[ResourceType, tuple[Op, ...]] = SUPPORTED_OPS) -> int:
        """The authorized_operations bit field of a resource (Kafka's AuthHelper.authorizedOperations), over the
        operations ``supported`` (Kafka 3.9's by default; ``acl.SUPPORTED_OPS_4`` for a 4.x profile)."""
        bits = 0
        for op in supported[rtype]:
            if self.authorize(principal, host, op, rtype, name):
                bits |= 1 << int(op)
        return bits

    def authorize_any(self, principal: str, host: str, op: Op, rtype: ResourceType) -> bool:
        """Kafka's ``authorizeByResourceType``: may the principal do ``op`` on *some* resource of the type?

        Allowed when a resource no ACL names would be allowed (super user, ``User:*`` wildcard ALLOW, or
        allow.everyone.if.no.acl.found with no ACLs of the type), or when a matching ALLOW names a resource
        that no matching DENY covers (a DENY on ``*``, on a prefix of the ALLOW's name, or on the same literal
        name). Used for idempotent produce (IDEMPOTENT_WRITE on the cluster or WRITE on any topic)."""
        if self.authorize(principal, host, op, rtype, "\x00kafkalite-unnamed"):
            return True
        is_user = principal.startswith("User:")
        allows: list[AclBinding] = []
        denies: list[AclBinding] = []
        for b in self._acls:
            if b.resource_type != rtype:
                continue
            if b.principal != principal and not (is_user and b.principal == WILDCARD_PRINCIPAL):
                continue
            if b.host != WILDCARD and b.host != host:
                continue
            allow = b.permission == Permission.ALLOW
            if not _op_covers(b.operation, allow, op):
                continue
            (allows if allow else denies).append(b)
        for a in allows:
            covered = False
            for d in denies:
                if d.pattern_type == PatternType.LITERAL:
                    covered = d.name == WILDCARD or (a.pattern_type == PatternType.LITERAL and d.name == a.name)
                else:
                    covered = a.name.startswith(d.name)
                if covered:
                    break
            if not covered:
                return True
        return False


def from_config(config: object, data_dir: Path | str | None) -> Authorizer | None:
    """The broker's authorizer, or None when ``authorizer.class.name`` is empty (no authorization at all)."""
    get = config.get_str  # type: ignore[attr-defined]
    cls = get("authorizer.class.name").strip()
    if not cls:
        return None
    if cls not in AUTHORIZER_CLASSES:
        raise ConfigError(f"authorizer.class.name={cls}: kafkalite provides only "
                          + " and ".join(sorted(AUTHORIZER_CLASSES)))
    supers = [s.strip() for s in get("super.users").split(";")]
    allow = get("allow.everyone.if.no.acl.found").strip().lower() == "true"
    try:
        return Authorizer(data_dir, super_users=supers, allow_if_no_acls=allow)
    except RuntimeError as exc:
        raise StartupError(str(exc)) from exc
