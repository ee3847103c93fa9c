"""Share group membership (pure): epochs, fencing, session expiry, the simple assignor; share sessions."""
from __future__ import annotations

import uuid

from kafkalite.coordinator.share.config import GroupSettings, ShareConfig
from kafkalite.coordinator.share.group import ShareGroupCoordinator, simple_assign
from kafkalite.coordinator.share.sessions import (
    INVALID_REQUEST,
    INVALID_SHARE_SESSION_EPOCH,
    SHARE_SESSION_LIMIT_REACHED,
    SHARE_SESSION_NOT_FOUND,
    ShareSessionCache,
    next_epoch,
)

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def coordinator(topics: dict) -> ShareGroupCoordinator:
    return ShareGroupCoordinator(ShareConfig(GroupSettings(session_timeout_ms=1000), max_group_size=3),
                                 lambda: topics)


def test_session_timeout_removes_member_and_reassigns() -> None:
    topics = {"a": (T1, 2)}
    c = coordinator(topics)
    r1 = c.heartbeat(0, "g", "x", 0, None, ["a"])
    assert r1.assignment == {T1: [0, 1]}
    r2 = c.heartbeat(0, "g", "y", 0, None, ["a"])
    assert r2.assignment and len(r2.assignment[T1]) == 1
    r1 = c.heartbeat(500, "g", "x", r1.member_epoch, None, None)   # moves to the new epoch: one partition
    assert len(r1.assignment[T1]) == 1
    assert c.next_deadline() == 1000
    assert c.poll(1000) == [("g", "y")]
    r1 = c.heartbeat(1100, "g", "x", r1.member_epoch, None, None)
    assert r1.assignment == {T1: [0, 1]}
    assert c.poll(2100) == [("g", "x")] and c.groups["g"].state == "Empty"


def test_fencing_max_size_and_topic_growth() -> None:
    topics = {"a": (T1, 1)}
    c = coordinator(topics)
    r = c.heartbeat(0, "g", "x", 0, None, ["a"])
    x_epoch = r.member_epoch
    assert c.heartbeat(0, "g", "x", x_epoch + 1, None, None).error == 110
    for m in ("y", "z"):
        c.heartbeat(0, "g", m, 0, None, ["a"])
    assert c.heartbeat(0, "g", "w", 0, None, ["a"]).error == 81
    # a topic subscribed before it exists, and a topic gaining partitions, bump the epoch
    r = c.heartbeat(0, "g", "x", x_epoch, None, ["a", "b"])
    assert r.error == 0
    epoch = r.member_epoch
    topics["b"] = (T2, 3)
    r = c.heartbeat(1, "g", "x", epoch, None, None)
    assert r.member_epoch > epoch and T2 in r.assignment


def test_kafka_4_epochs_and_the_previous_epoch() -> None:
    """Kafka 4.1+: a new group starts at epoch 1 (the first member's join bumps it to 2); a member coming back
    with its previous epoch is accepted (the response that bumped it may have been lost), an older one or a
    greater one is fenced with Kafka's messages."""
    topics = {"a": (T1, 2)}
    c = ShareGroupCoordinator(ShareConfig(GroupSettings(session_timeout_ms=1000), initial_epoch=1),
                              lambda: topics)
    x = c.heartbeat(0, "g", "x", 0, None, ["a"])
    assert (x.error, x.member_epoch) == (0, 2)
    y = c.heartbeat(0, "g", "y", 0, None, ["a"])
    assert y.member_epoch == 3
    x = c.heartbeat(1, "g", "x", 2, None, None)   # moves to epoch 3
    assert (x.error, x.member_epoch) == (0, 3)
    again = c.heartbeat(2, "g", "x", 2, None, None)   # its previous epoch: accepted
    assert (again.error, again.member_epoch) == (0, 3)
    old = c.heartbeat(3, "g", "y", 1, None, None)
    assert old.error == 110 and old.message.startswith("The share group member has a smaller member epoch (1)")
    ahead = c.heartbeat(3, "g", "y", 9, None, None)
    assert ahead.error == 110 and ahead.message == (
        "The share group member has a greater member epoch (9) than the one known by the group coordinator (3). "
        "The member must abandon all its partitions and rejoin.")


def test_simple_assignor_balance_and_stickiness() -> None:
    parts = {(T1, p) for p in range(6)}
    one = simple_assign(dict.fromkeys("abc", parts), {})
    assert sorted(len(v) for v in one.values()) == [2, 2, 2]
    assert set().union(*one.values()) == parts
    # d joins: the others keep what they had as far as balance allows
    two = simple_assign(dict.fromkeys("abcd", parts), one)
    assert sorted(len(v) for v in two.values()) == [1, 1, 2, 2]
    assert sum(len(two[m] & one[m]) for m in "abc") >= 4
    # more members than partitions: every partition shared, every member busy
    shared = simple_assign({m: {(T1, 0), (T1, 1)} for m in "abcde"}, {})
    assert all(len(v) >= 1 for v in shared.values())
    assert sorted(sum(1 for v in shared.values() if tp in v) for tp in [(T1, 0), (T1, 1)]) == [3, 3]
    # heterogeneous: a member is only given what it subscribes to
    het = simple_assign({"a": {(T1, 0)}, "b": {(T2, 0), (T2, 1)}}, {})
    assert het == {"a": {(T1, 0)}, "b": {(T2, 0), (T2, 1)}}


def test_share_sessions() -> None:
    cache = ShareSessionCache(max_sessions=1)
    tp = (T1, 0)
    assert cache.fetch_context("g", "m", 1, [tp], [], False).error == SHARE_SESSION_NOT_FOUND
    assert cache.fetch_context("g", "m", 0, [tp], [], True).error == INVALID_REQUEST
    ctx = cache.fetch_context("g", "m", 0, [tp], [], False)
    assert ctx.error == 0 and ctx.session.epoch == 1
    assert cache.fetch_context("g", "other", 0, [tp], [], False).error == SHARE_SESSION_LIMIT_REACHED
    assert cache.fetch_context("g", "m", 2, [], [], False).error == INVALID_SHARE_SESSION_EPOCH
    ctx = cache.fetch_context("g", "m", 1, [(T2, 0)], [tp], False)
    assert list(ctx.session.partitions) == [(T2, 0)] and ctx.session.epoch == 2
    assert cache.ack_context("g", "m", 0).error == INVALID_SHARE_SESSION_EPOCH
    assert cache.ack_context("g", "m", 2).session.epoch == 3
    again = cache.fetch_context("g", "m", 0, [tp], [], False)     # reopening replaces (and reports) the old one
    assert again.replaced is ctx.session and again.session.epoch == 1
    assert cache.fetch_context("g", "m", -1, [], [], False).final
    assert next_epoch(2**31 - 1) == 1
