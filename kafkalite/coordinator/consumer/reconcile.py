"""Reconciling a member towards its target assignment (Kafka's CurrentAssignmentBuilder).

* STABLE at the target epoch: nothing to do (unless its subscription changed: partitions of topics it left are
  revoked at once).
* A newer target: kept = assigned & target; to revoke = assigned - target; to assign = target - assigned, less
  the partitions another member still holds (assigned or pending revocation there).
  - something to revoke that the member still reports owning: the member stays at its epoch, its assignment
    shrinks to ``kept`` and it enters UNREVOKED_PARTITIONS until a heartbeat no longer lists those partitions;
  - otherwise it moves to the target epoch with kept + the free partitions; UNRELEASED_PARTITIONS while some of
    its target is still held elsewhere (they are given on a later heartbeat, once released), else STABLE.
* A member that has not reported its owned partitions (``owned is None``: a heartbeat without them) is assumed
  to still own what it was asked to revoke.
* Assignment epochs (KIP-1251, Kafka 4.3): a partition given to the member records the epoch it was given at
  (the target epoch); kept and revoking partitions keep theirs.
"""
from __future__ import annotations

import uuid
from collections.abc import Callable

from kafkalite.coordinator.consumer.model import Assignment, ConsumerMember, MemberState


def _owns_any(owned: Assignment | None, revoke: Assignment) -> bool:
    if owned is None:
        return True
    return any(owned.get(t, set()) & ps for t, ps in revoke.items())


def reconcile(member: ConsumerMember, target_epoch: int, target: Assignment, subscribed: set[uuid.UUID],
              held_elsewhere: Callable[[uuid.UUID, int], bool], owned: Assignment | None,
              subscription_changed: bool) -> None:
    """Move ``member`` one step towards ``target`` (mutates it)."""
    if member.state == MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            if subscription_changed:
                _drop_unsubscribed(member, subscribed, owned)
            return
        _next(member, target_epoch, target, subscribed, held_elsewhere, owned)
    elif member.state == MemberState.UNRELEASED_PARTITIONS or member.member_epoch != target_epoch:
        _next(member, target_epoch, target, subscribed, held_elsewhere, owned)
    elif subscription_changed:
        _drop_unsubscribed(member, subscribed, owned)


def _drop_unsubscribed(member: ConsumerMember, subscribed: set[uuid.UUID], owned: Assignment | None) -> None:
    gone = {t: ps for t, ps in member.assigned.items() if t not in subscribed and ps}
    if not gone:
        return
    for t in gone:
        del member.assigned[t]
    revoke = {t: set(ps) for t, ps in member.pending_revocation.items()}
    for t, ps in gone.items():
        revoke.setdefault(t, set()).update(ps)
    if _owns_any(owned, revoke):
        member.state = MemberState.UNREVOKED_PARTITIONS
        member.pending_revocation = revoke


def _next(member: ConsumerMember, target_epoch: int, target: Assignment, subscribed: set[uuid.UUID],
          held_elsewhere: Callable[[uuid.UUID, int], bool], owned: Assignment | None) -> None:
    kept: Assignment = {}
    revoke: Assignment = {}
    pending: Assignment = {}
    unreleased = False
    for t in set(target) | set(member.assigned):
        want = target.get(t, set()) if t in subscribed else set()
        cur = member.assigned.get(t, set())
        k = cur & want
        r = cur - k
        a = {p for p in want - k if not held_elsewhere(t, p)}
        if len(a) < len(want - k):
            unreleased = True
        if k:
            kept[t] = k
        if r:
            revoke[t] = r
        if a:
            pending[t] = a
    if revoke and _owns_any(owned, revoke):
        member.state = MemberState.UNREVOKED_PARTITIONS
        member.assigned = kept
        member.pending_revocation = revoke
        prune_epochs(member)
        return
    for t, ps in pending.items():
        kept.setdefault(t, set()).update(ps)
    if member.member_epoch != target_epoch:
        member.previous_member_epoch = member.member_epoch
        member.member_epoch = target_epoch
    member.assigned = kept
    member.pending_revocation = {}
    member.state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    for t, ps in pending.items():
        for p in ps:
            member.epochs.setdefault((t, p), target_epoch)
    prune_epochs(member)


def prune_epochs(member: ConsumerMember) -> None:
    """Keep the assignment epochs of the partitions the member still holds."""
    held = {(t, p) for a in (member.assigned, member.pending_revocation) for t, ps in a.items() for p in ps}
    for tp in [tp for tp in member.epochs if tp not in held]:
        del member.epochs[tp]
