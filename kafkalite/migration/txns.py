"""Open transactions on the source: the copy takes a partition only up to its last stable offset.

Records of a transaction that is still open are neither committed nor aborted: copying them would have to guess.
So before the copy, for each partition, the end to copy to is its high watermark *once the last stable offset
has reached it*. ``--open-transactions``:

- ``wait`` (the default): wait up to ``--transaction-wait`` seconds for every open transaction touching the
  partitions to end (a producer commits or aborts it, or its ``transaction.timeout.ms`` runs out and the
  coordinator aborts it); if one is still open then, the migration stops and says which, and the user can run
  it again later or choose ``abort``;
- ``abort``: abort them now, as ``kafka-transactions.sh`` would fence them: ListTransactions (state Ongoing) and
  DescribeTransactions find the transactional ids whose transactions touch the partitions, and an
  InitProducerId with that transactional id makes the coordinator bump the producer's epoch and abort the
  transaction (the old producer instance is fenced: its next request fails with PRODUCER_FENCED). Their records
  are then copied as aborted.

Either way the report lists the transactions concerned: an open transaction itself (its producer id, epoch and
sequence state) is not something a target can take over.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkalite.client.wire import error_name
from kafkalite.migration.source import Source
from kafkalite_wire.messages import (
    DescribeTransactionsRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ListTransactionsRequest,
)

TP = tuple[str, int]
_RETRY = {14, 15, 16, 51}   # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, CONCURRENT_TRANSACTIONS


class TxnError(RuntimeError):
    pass


@dataclass
class OpenTxn:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: list[TP]


def open_transactions(source: Source, scope: set[TP]) -> list[OpenTxn]:
    """The ongoing transactions of the source that touch ``scope``."""
    meta = source.meta or source.metadata()
    ids: set[str] = set()
    for addr in meta.brokers.values():
        r = source._request(addr, ListTransactionsRequest(state_filters=["Ongoing"], producer_id_filters=[]), 0)
        if r.error_code:
            raise TxnError(f"ListTransactions: {error_name(r.error_code)}")
        ids.update(s.transactional_id for s in r.transaction_states)
    out = []
    for tid in sorted(ids):
        addr = _coordinator(source, tid)
        d = source._request(addr, DescribeTransactionsRequest(transactional_ids=[tid]), 0)
        for s in d.transaction_states:
            if s.error_code or s.transaction_state != "Ongoing":
                continue
            parts = [(t.topic, p) for t in s.topics for p in t.partitions]
            if any(tp in scope for tp in parts):
                out.append(OpenTxn(tid, s.producer_id, s.producer_epoch, parts))
    return out


def _coordinator(source: Source, tid: str) -> tuple[str, int]:
    meta = source.meta or source.metadata()
    addr = next(iter(meta.brokers.values()))
    for _ in range(50):
        r = source._request(addr, FindCoordinatorRequest(key=tid, key_type=1), 3)
        if r.error_code in _RETRY:
            time.sleep(0.1)
            continue
        if r.error_code:
            raise TxnError(f"FindCoordinator {tid}: {error_name(r.error_code)}")
        return (r.host, r.port)
    raise TxnError(f"FindCoordinator {tid}: no coordinator")


def abort(source: Source, txn: OpenTxn, timeout: float) -> None:
    """Fence the transactional id: the coordinator aborts its ongoing transaction."""
    deadline = time.monotonic() + timeout
    while True:
        addr = _coordinator(source, txn.transactional_id)
        r = source._request(addr, InitProducerIdRequest(transactional_id=txn.transactional_id,
                                                        transaction_timeout_ms=60_000, producer_id=-1,
                                                        producer_epoch=-1), 3)
        if not r.error_code:
            return
        if r.error_code not in _RETRY or time.monotonic() > deadline:
            raise TxnError(f"aborting the transaction of {txn.transactional_id}: {error_name(r.error_code)}")
        time.sleep(0.2)


def wait_stable(list_offsets: Callable[[list[TP]], dict[TP, tuple[int, int]]], ends: dict[TP, int],
                timeout: float, sleep: Callable[[float], Any] = time.sleep) -> list[TP]:
    """Wait until each partition's last stable offset reaches its planned end; the partitions still short."""
    deadline = time.monotonic() + timeout
    pending = list(ends)
    while pending:
        offs = list_offsets(pending)
        pending = [tp for tp in pending if offs[tp][0] < ends[tp]]
        if not pending or time.monotonic() >= deadline:
            break
        sleep(0.5)
    return pending
