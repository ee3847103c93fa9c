"""StandardAuthorizer semantics of kafkalite.authz.Authorizer, its index and its persistence."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kafkalite.authz.acl import (
    AclBinding,
    AclFilter,
    Op,
    PatternType,
    Permission,
    ResourceType,
    invalid_binding,
)
from kafkalite.authz.authorizer import ACLS_FILE, Authorizer

T, G, C, X = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Permission.ALLOW, Permission.DENY
ALICE, BOB = "User:alice", "User:bob"


def acl(rt: ResourceType, name: str, principal: str, op: Op, perm: Permission = ALLOW, pt: PatternType = LIT,
        host: str = "*") -> AclBinding:
    return AclBinding(rt, name, pt, principal, host, op, perm)


def az(*bindings: AclBinding, tmp: Path | None = None, **kw: object) -> Authorizer:
    a = Authorizer(tmp, **kw)  # type: ignore[arg-type]
    a.create(list(bindings))
    return a


def test_literal_allow_and_default_deny() -> None:
    a = az(acl(T, "orders", ALICE, Op.WRITE))
    assert a.authorize(ALICE, "10.0.0.1", Op.WRITE, T, "orders")
    assert not a.authorize(BOB, "10.0.0.1", Op.WRITE, T, "orders")
    assert not a.authorize(ALICE, "10.0.0.1", Op.READ, T, "orders")
    assert not a.authorize(ALICE, "10.0.0.1", Op.WRITE, T, "payments")   # no ACL -> denied by default
    assert not a.authorize(ALICE, "10.0.0.1", Op.WRITE, G, "orders")      # another resource type


def test_allow_everyone_if_no_acl_found_only_for_resources_without_acls() -> None:
    a = az(acl(T, "orders", ALICE, Op.WRITE), allow_if_no_acls=True)
    assert a.authorize(BOB, "h", Op.WRITE, T, "payments")       # nothing names payments
    assert not a.authorize(BOB, "h", Op.WRITE, T, "orders")     # orders has an ACL (for someone else)


def test_deny_wins_over_allow_and_wildcards() -> None:
    a = az(acl(T, "*", "User:*", Op.ALL), acl(T, "secret", BOB, Op.READ, DENY))
    assert a.authorize(BOB, "h", Op.READ, T, "orders")
    assert a.authorize(ALICE, "h", Op.READ, T, "secret")
    assert not a.authorize(BOB, "h", Op.READ, T, "secret")
    assert a.authorize(BOB, "h", Op.WRITE, T, "secret")          # DENY READ does not deny WRITE
    assert a.authorize(BOB, "h", Op.DESCRIBE, T, "secret")       # ... nor DESCRIBE (no implication for DENY)


def test_prefixed_patterns() -> None:
    a = az(acl(T, "team-a.", ALICE, Op.READ, pt=PRE), acl(T, "team-a.private", ALICE, Op.READ, DENY, pt=PRE))
    assert a.authorize(ALICE, "h", Op.READ, T, "team-a.events")
    assert not a.authorize(ALICE, "h", Op.READ, T, "team-a.private.x")
    assert not a.authorize(ALICE, "h", Op.READ, T, "team-b.events")
    assert not a.authorize(ALICE, "h", Op.READ, T, "team-a")                # shorter than the prefix


def test_implied_operations() -> None:
    a = az(acl(T, "t", ALICE, Op.READ), acl(T, "t", ALICE, Op.ALTER_CONFIGS), acl(G, "g", ALICE, Op.ALL))
    assert a.authorize(ALICE, "h", Op.DESCRIBE, T, "t")
    assert a.authorize(ALICE, "h", Op.DESCRIBE_CONFIGS, T, "t")
    assert not a.authorize(ALICE, "h", Op.WRITE, T, "t")
    assert a.authorize(ALICE, "h", Op.DELETE, G, "g")
    assert a.authorized_ops(ALICE, "h", T, "t") == (1 << 3) | (1 << 8) | (1 << 10) | (1 << 11)
    assert a.authorized_ops(ALICE, "h", G, "g") == (1 << 3) | (1 << 6) | (1 << 8)


def test_hosts_and_super_users() -> None:
    a = az(acl(T, "t", ALICE, Op.READ, host="10.0.0.1"), acl(T, "t", "User:root", Op.ALL, DENY),
           super_users=["User:root"])
    assert a.authorize(ALICE, "10.0.0.1", Op.READ, T, "t")
    assert not a.authorize(ALICE, "10.0.0.2", Op.READ, T, "t")
    assert a.authorize("User:root", "any", Op.ALTER, C, "kafka-cluster")
    assert a.authorize("User:root", "any", Op.READ, T, "t")          # super users ignore DENY


def test_wildcard_principal_only_matches_users() -> None:
    a = az(acl(T, "t", "User:*", Op.READ))
    assert a.authorize("User:anyone", "h", Op.READ, T, "t")
    assert not a.authorize("Group:x", "h", Op.READ, T, "t")


def test_authorize_any_for_idempotent_write() -> None:
    assert not az(acl(T, "x", BOB, Op.WRITE)).authorize_any(ALICE, "h", Op.WRITE, T)
    assert az(acl(T, "x", ALICE, Op.WRITE)).authorize_any(ALICE, "h", Op.WRITE, T)
    assert az(acl(T, "x", ALICE, Op.WRITE, pt=PRE)).authorize_any(ALICE, "h", Op.WRITE, T)
    assert not az(acl(T, "x", ALICE, Op.WRITE, pt=PRE), acl(T, "*", ALICE, Op.WRITE, DENY)).authorize_any(
        ALICE, "h", Op.WRITE, T)
    assert not az(acl(T, "xy", ALICE, Op.WRITE), acl(T, "x", ALICE, Op.WRITE, DENY, pt=PRE)).authorize_any(
        ALICE, "h", Op.WRITE, T)
    assert az(super_users=[ALICE]).authorize_any(ALICE, "h", Op.WRITE, T)


def test_cache_is_dropped_on_change() -> None:
    a = az()
    assert not a.authorize(ALICE, "h", Op.READ, T, "t")
    a.create([acl(T, "t", ALICE, Op.READ)])
    assert a.authorize(ALICE, "h", Op.READ, T, "t")
    a.delete([AclFilter(ResourceType.ANY, None, PatternType.ANY, None, None, Op.ANY, Permission.ANY)])
    assert not a.authorize(ALICE, "h", Op.READ, T, "t")


def test_filters() -> None:
    b_lit = acl(T, "orders", ALICE, Op.READ)
    b_star = acl(T, "*", ALICE, Op.READ)
    b_pre = acl(T, "ord", ALICE, Op.READ, pt=PRE)
    a = az(b_lit, b_star, b_pre, acl(G, "orders", BOB, Op.READ))

    def f(name: str | None, pt: PatternType, rt: ResourceType = T) -> set[AclBinding]:
        return set(a.matching(AclFilter(rt, name, pt, None, None, Op.ANY, Permission.ANY)))

    assert f("orders", PatternType.MATCH) == {b_lit, b_star, b_pre}
    assert f("orders", PatternType.ANY) == {b_lit}
    assert f("ord", PatternType.ANY) == {b_pre}
    assert f("orders", LIT) == {b_lit}
    assert f(None, PRE) == {b_pre}
    assert len(f(None, PatternType.ANY, ResourceType.ANY)) == 4


def test_validation_of_new_bindings() -> None:
    assert invalid_binding(acl(C, "other", ALICE, Op.ALTER)) is not None
    assert invalid_binding(acl(T, "", ALICE, Op.READ)) is not None
    assert invalid_binding(AclBinding(T, "t", PatternType.MATCH, ALICE, "*", Op.READ, ALLOW)) is not None
    assert invalid_binding(acl(T, "t", "alice", Op.READ)) is not None
    assert invalid_binding(acl(T, "t", ALICE, Op.ANY)) is not None
    assert invalid_binding(acl(T, "t", ALICE, Op.READ)) is None


def test_check_cost_does_not_grow_with_unrelated_acls() -> None:
    """The index: a check looks at the ACLs of its resource, not at every ACL (counted, not timed)."""
    many = [acl(T, f"topic-{i}", ALICE, Op.READ) for i in range(20_000)]
    many += [acl(T, f"pre-{i}-", ALICE, Op.READ, pt=PRE) for i in range(20_000)]
    a = az(*many)
    assert len(a._candidates(int(T), "topic-7")) == 1
    assert len(a._candidates(int(T), "pre-7-x")) == 1
    assert len(a._prefix_lengths[int(T)]) <= 8   # distinct prefix lengths, not prefixes, are walked
    a.delete([AclFilter(T, None, PRE, None, None, Op.ANY, Permission.ANY)])
    assert a._prefix_lengths[int(T)] == [] and len(a) == 20_000
    assert not a.authorize(ALICE, "h", Op.READ, T, "pre-7-x") and a.authorize(ALICE, "h", Op.READ, T, "topic-7")


def test_persisted_and_reloaded(tmp_path: Path) -> None:
    a = az(acl(T, "t", ALICE, Op.READ), acl(G, "g", BOB, Op.READ, DENY, pt=PRE), tmp=tmp_path)
    assert (tmp_path / ACLS_FILE).exists()
    b = Authorizer(tmp_path)
    assert set(b.acls()) == set(a.acls())
    assert b.authorize(ALICE, "h", Op.READ, T, "t")


@pytest.mark.e2e
def test_acls_survive_sigkill(tmp_path: Path) -> None:
    """A process that created ACLs and was SIGKILLed right after leaves them all on disk."""
    script = textwrap.dedent(f"""
        import os, signal
        from kafkalite.authz.acl import *
        from kafkalite.authz.authorizer import Authorizer
        a = Authorizer({str(tmp_path)!r})
        for i in range(50):
            a.create([AclBinding(ResourceType.TOPIC, f"t{{i}}", PatternType.LITERAL, "User:a", "*", Op.READ,
                                 Permission.ALLOW)])
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", script], timeout=60, env={**os.environ})
    assert proc.returncode != 0
    assert len(Authorizer(tmp_path)) == 50


def test_unreadable_acl_file_refuses_to_start(tmp_path: Path) -> None:
    (tmp_path / ACLS_FILE).write_text("{garbage")
    with pytest.raises(RuntimeError):
        Authorizer(tmp_path)
