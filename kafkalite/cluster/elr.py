"""Partition changes with eligible leader replicas (KIP-966), as Kafka 4.4's controller makes them.

One function, :func:`partition_change`, is the controller's rule for a partition whose ISR or leader is about
to change (Kafka's ``PartitionChangeBuilder.build`` with ``ReplicationControlManager``'s inputs, read from the
4.4 jars): given the partition as it is, the ISR wanted, the topic's effective min.insync.replicas and which
brokers may lead, it answers the new leader, ISR, eligible leader replicas (ELR) and last-known ELR. With
``eligible.leader.replicas.version`` at 1:

- while the wanted ISR holds at least min ISR members, the ELR and the last-known ELR are empty;
- below it, every replica that was in the ISR (or already in the ELR) and is not in the new ISR becomes an
  eligible leader replica: it held every committed record when it left, because the high watermark does not
  advance while the ISR is below min ISR (``ClusterRuntime.update_hw``). A replica that shut down uncleanly
  is left out;
- the ISR may become empty (without ELR the last member stays in it);
- the leader stays if it may; otherwise the first replica (in replica order) that is in the ISR, or, with an
  empty ISR, in the ELR, and may lead. A leader taken from the ELR becomes the ISR alone and leaves the ELR;
- with an empty ISR and an empty ELR, the last known leader may lead again (an unclean election of exactly
  that one replica) if it is alive: Kafka's "balanced recovery", on by default;
- the last-known ELR holds the last known leader: set to the leader the first time the ISR becomes empty,
  cleared once the partition has a leader again.

The rule is pure (no trio, no I/O): ``ClusterRuntime`` applies what it answers.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

NO_LEADER = -1
NO_CHANGE = -2


@dataclass(frozen=True, slots=True)
class Change:
    leader: int                 # the leader after the change (-1: none)
    leader_changed: bool        # a new leader (or none): the leader epoch moves
    isr: list[int]
    elr: list[int]
    last_known_elr: list[int]
    unclean: bool               # the leader was taken outside the ISR and ELR (its log may lack records)


def effective_min_isr(min_insync: int, replicas: Sequence[int]) -> int:
    """The min ISR the controller and the leader hold a partition to: the topic's min.insync.replicas, at most
    its replication factor (``getTopicEffectiveMinIsr``, ``Partition.effectiveMinIsr``)."""
    return max(1, min(min_insync, len(replicas)))


def partition_change(*, replicas: Sequence[int], isr: Sequence[int], leader: int, elr: Sequence[int],
                     last_known_elr: Sequence[int], target_isr: Sequence[int], min_isr: int,
                     acceptable: Callable[[int], bool], elr_enabled: bool,
                     unclean_shutdown: int | None = None, unclean_election: bool = False) -> Change:
    target = list(target_isr)
    target_elr = list(elr)
    # maybePopulateTargetElr
    if elr_enabled:
        if len(target) >= min_isr:
            target_elr = []
        else:
            candidates = set(target_elr) | set(isr)
            target_elr = sorted(r for r in candidates if r not in target and r != unclean_shutdown)

    # tryElection (Election.ONLINE, or UNCLEAN when the topic allows it)
    def valid(r: int) -> bool:
        return (r in target or (not target and r in target_elr)) and acceptable(r)

    unclean = False
    if leader >= 0 and valid(leader):
        new = leader
    else:
        new = next((r for r in replicas if valid(r)), NO_LEADER)
        if new == NO_LEADER and elr_enabled and not target_elr and not target and len(last_known_elr) == 1 \
                and acceptable(last_known_elr[0]):
            new, unclean = last_known_elr[0], True
        elif new == NO_LEADER and unclean_election:
            new = next((r for r in replicas if acceptable(r)), NO_LEADER)
            unclean = new != NO_LEADER
    record_leader = NO_CHANGE
    record_isr: list[int] | None = None
    if new != leader:
        if new in target_elr:
            target = [new]
            target_elr = [r for r in target_elr if r != new]
        record_leader = new
        if unclean:
            record_isr = [new]

    # maybeUpdateRecordElr: an unclean election (or ELR off) clears the ELR
    if record_isr is not None or not elr_enabled:
        target_elr = []
    if record_isr is None and (target or elr_enabled) and target != list(isr):
        record_isr = target
    new_isr = list(isr) if record_isr is None else record_isr

    # maybeUpdateLastKnownLeader
    new_lkelr = list(last_known_elr)
    if elr_enabled:
        if record_isr is not None and not record_isr and list(last_known_elr) != [leader]:
            new_lkelr = [leader]
        elif (record_leader >= 0 or (leader != NO_LEADER and record_leader != NO_LEADER)) and last_known_elr:
            new_lkelr = []
    else:
        new_lkelr = []
    final_leader = leader if record_leader == NO_CHANGE else record_leader
    return Change(leader=final_leader, leader_changed=record_leader != NO_CHANGE, isr=new_isr, elr=target_elr,
                  last_known_elr=new_lkelr, unclean=unclean)
