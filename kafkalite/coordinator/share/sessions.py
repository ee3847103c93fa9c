"""Share sessions (KIP-932), as Kafka's ``ShareSessionCache`` / ``SharePartitionManager.newContext``.

A share session belongs to (group, member) and holds the share-partitions the member fetches from, so an
incremental ShareFetch names only what changed. ``ShareSessionEpoch`` in requests:

- 0 opens a session (replacing the member's previous one, whose acquired records are released); such a
  request may not carry acknowledgements (INVALID_REQUEST). The next request must carry epoch 1.
- n > 0 continues it: the session must exist (SHARE_SESSION_NOT_FOUND) and n must be its expected epoch
  (INVALID_SHARE_SESSION_EPOCH); the request's partitions are added, ``ForgottenTopicsData`` removed; the
  expected epoch moves to n + 1 (after 2^31-1 comes 1).
- -1 closes it after this request's acknowledgements are applied; nothing is fetched; acquired records
  still held by the member are released.

ShareAcknowledge uses the same epochs except that 0 is INVALID_SHARE_SESSION_EPOCH. At most
``group.share.max.share.sessions`` sessions exist (SHARE_SESSION_LIMIT_REACHED).

A session remembers the connection that opened it: when that connection closes, the session goes and the
member's acquired records are released at once (Kafka's ``ShareSessionCache`` connection-disconnect
listener, which calls ``ShareGroupListener.onMemberLeave``). A session reopened on another connection
(epoch 0 again) is not ended by the first connection closing.
"""
from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

NONE = 0
INVALID_REQUEST = 42
SHARE_SESSION_NOT_FOUND = 122
INVALID_SHARE_SESSION_EPOCH = 123
SHARE_SESSION_LIMIT_REACHED = 133
INITIAL_EPOCH, FINAL_EPOCH = 0, -1

TP = tuple[uuid.UUID, int]


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1


@dataclass(slots=True)
class ShareSession:
    group: str
    member: str
    epoch: int                      # the epoch the next request must carry
    partitions: dict[TP, None] = field(default_factory=dict)   # insertion-ordered set
    last_used: int = 0
    conn_id: int = 0                # the connection whose ShareFetch (epoch 0) opened it; 0: unknown


@dataclass(slots=True)
class Context:
    error: int = NONE
    session: ShareSession | None = None
    final: bool = False
    replaced: ShareSession | None = None   # the member's previous session (epoch 0): release its records


class ShareSessionCache:
    def __init__(self, max_sessions: int = 2000) -> None:
        self.max_sessions = max_sessions
        self.sessions: dict[tuple[str, str], ShareSession] = {}

    def fetch_context(self, group: str, member: str, epoch: int, add: Iterable[TP], forget: Iterable[TP],
                      has_acks: bool, now: int = 0, conn_id: int = 0) -> Context:
        key = (group, member)
        if epoch == INITIAL_EPOCH:
            if has_acks:
                return Context(INVALID_REQUEST)
            old = self.sessions.pop(key, None)
            if len(self.sessions) >= self.max_sessions:
                if old is not None:
                    self.sessions[key] = old
                return Context(SHARE_SESSION_LIMIT_REACHED)
            new = ShareSession(group, member, next_epoch(INITIAL_EPOCH), dict.fromkeys(add), now, conn_id)
            self.sessions[key] = new
            return Context(session=new, replaced=old)
        s = self.sessions.get(key)
        if s is None:
            return Context(SHARE_SESSION_NOT_FOUND)
        if epoch == FINAL_EPOCH:
            return Context(session=s, final=True)
        if epoch != s.epoch:
            return Context(INVALID_SHARE_SESSION_EPOCH)
        for tp in add:
            s.partitions[tp] = None
        for tp in forget:
            s.partitions.pop(tp, None)
        s.epoch = next_epoch(s.epoch)
        s.last_used = now
        return Context(session=s)

    def ack_context(self, group: str, member: str, epoch: int, now: int = 0) -> Context:
        if epoch == INITIAL_EPOCH:
            return Context(INVALID_SHARE_SESSION_EPOCH)
        s = self.sessions.get((group, member))
        if s is None:
            return Context(SHARE_SESSION_NOT_FOUND)
        if epoch == FINAL_EPOCH:
            return Context(session=s, final=True)
        if epoch != s.epoch:
            return Context(INVALID_SHARE_SESSION_EPOCH)
        s.epoch = next_epoch(s.epoch)
        s.last_used = now
        return Context(session=s)

    def remove(self, group: str, member: str) -> ShareSession | None:
        return self.sessions.pop((group, member), None)

    def remove_group(self, group: str) -> list[ShareSession]:
        gone = [k for k in self.sessions if k[0] == group]
        return [self.sessions.pop(k) for k in gone]
