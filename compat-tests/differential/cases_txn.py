"""Differential cases of the transaction APIs: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit,
DescribeTransactions, ListTransactions and DescribeProducers, on the success path and with the errors a producer
meets (unknown producer id, fenced epoch, no transaction to end, offsets for a group not in the transaction).

Each case uses a transactional id of its own per version (``diff-<case>-v<N>``): setup runs InitProducerId and puts
the producer id and epoch each broker gave into ``ctx``, and, where the case needs it, adds a partition or a group
to the transaction.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from differential.helpers import TS, Ctx, create, produce_records, produce_request, topic_of, warm_coordinator
from differential.wireconn import WireConn
from kafkalite_storage.testing import Rec, encode_batch
from kafkalite_wire import messages as m

A, AO, E, T = m.AddPartitionsToTxnRequest, m.AddOffsetsToTxnRequest, m.EndTxnRequest, m.TxnOffsetCommitRequest


def txn_of(case: str, ctx: Ctx) -> str:
    return f"diff-{case}-v{ctx['version']}"


def add_partitions(v: int, ctx: Ctx, topic: str, pid: int | None = None, epoch: int | None = None,
                   verify_only: bool = False) -> Any:
    """v0-3: the client's form; v4+: the broker-to-coordinator batch form, one transaction."""
    pid = ctx["pid"] if pid is None else pid
    epoch = ctx["epoch"] if epoch is None else epoch
    topics = [A.AddPartitionsToTxnTopic(name=topic, partitions=[0])]
    if v >= 4:
        return A(transactions=[A.AddPartitionsToTxnTransaction(
            transactional_id=ctx["txn"], producer_id=pid, producer_epoch=epoch, verify_only=verify_only,
            topics=topics)])
    return A(v3_and_below_transactional_id=ctx["txn"], v3_and_below_producer_id=pid,
             v3_and_below_producer_epoch=epoch, v3_and_below_topics=topics)


def add_cases(add: Callable[..., None]) -> None:
    topic = topic_of("txn")
    group = "diff-txn-group"

    def init(name: str, *, partition: bool = False, offsets: bool = False) -> Callable[[WireConn, Ctx], None]:
        def setup(conn: WireConn, ctx: Ctx) -> None:
            create(conn, ctx, topic, 1)
            warm_coordinator(conn, ctx, "diff-warm", 1)
            txn = txn_of(name, ctx)
            warm_coordinator(conn, ctx, txn, 1)
            warm_coordinator(conn, ctx, group, 0)
            r = conn.request(m.InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60_000), 3)
            if r.error_code:
                raise RuntimeError(f"setup: InitProducerId {txn}: error {r.error_code}")
            ctx.update(txn=txn, pid=r.producer_id, epoch=r.producer_epoch)
            if partition:
                a = conn.request(add_partitions(3, ctx, topic), 3)
                if a.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code:
                    raise RuntimeError(f"setup: AddPartitionsToTxn {txn}: {a}")
            if offsets:
                o = conn.request(AO(transactional_id=txn, producer_id=ctx["pid"], producer_epoch=ctx["epoch"],
                                    group_id=group), 3)
                if o.error_code:
                    raise RuntimeError(f"setup: AddOffsetsToTxn {txn}: {o}")
        return setup

    # AddPartitionsToTxn (v0-3: the client's form)
    add("add_partitions_to_txn_ok", m.AddPartitionsToTxnRequest, lambda v, ctx: add_partitions(v, ctx, topic),
        init("apt-ok"), doc="a partition added to a new transaction")
    add("add_partitions_to_txn_unknown_topic", m.AddPartitionsToTxnRequest,
        lambda v, ctx: add_partitions(v, ctx, "diff-no-such-topic"), init("apt-topic"),
        doc="a topic that does not exist")
    add("add_partitions_to_txn_fenced", m.AddPartitionsToTxnRequest,
        lambda v, ctx: add_partitions(v, ctx, topic, epoch=ctx["epoch"] + 1), init("apt-fenced"),
        doc="an epoch above the producer's")
    add("add_partitions_to_txn_unknown_producer", m.AddPartitionsToTxnRequest,
        lambda v, ctx: add_partitions(v, ctx, topic, pid=ctx["pid"] + 1000), init("apt-pid"),
        doc="a producer id the transactional id does not have: INVALID_PRODUCER_ID_MAPPING")
    add("add_partitions_to_txn_verify_only", m.AddPartitionsToTxnRequest,
        lambda v, ctx: add_partitions(v, ctx, topic, verify_only=True), init("apt-verify"), min_version=4,
        doc="v4+ VerifyOnly for a partition not in the transaction: TRANSACTION_ABORTABLE")

    # AddOffsetsToTxn
    def add_offsets(v: int, ctx: Ctx, epoch_delta: int = 0) -> Any:
        return AO(transactional_id=ctx["txn"], producer_id=ctx["pid"], producer_epoch=ctx["epoch"] + epoch_delta,
                  group_id=group)

    add("add_offsets_to_txn_ok", m.AddOffsetsToTxnRequest, lambda v, ctx: add_offsets(v, ctx), init("aot-ok"),
        doc="the consumer group added to a new transaction")
    add("add_offsets_to_txn_fenced", m.AddOffsetsToTxnRequest, lambda v, ctx: add_offsets(v, ctx, 1),
        init("aot-fenced"), doc="an epoch above the producer's")

    # EndTxn
    def end(v: int, ctx: Ctx, committed: bool = True, epoch_delta: int = 0) -> Any:
        return E(transactional_id=ctx["txn"], producer_id=ctx["pid"], producer_epoch=ctx["epoch"] + epoch_delta,
                 committed=committed)

    add("end_txn_commit", m.EndTxnRequest, lambda v, ctx: end(v, ctx), init("end-commit", partition=True),
        doc="commit a transaction holding one (empty) partition")
    add("end_txn_abort", m.EndTxnRequest, lambda v, ctx: end(v, ctx, committed=False),
        init("end-abort", partition=True), doc="abort it")
    add("end_txn_no_transaction", m.EndTxnRequest, lambda v, ctx: end(v, ctx), init("end-none"),
        doc="commit with no transaction ongoing: INVALID_TXN_STATE")
    add("end_txn_fenced", m.EndTxnRequest, lambda v, ctx: end(v, ctx, epoch_delta=1),
        init("end-fenced", partition=True), doc="an epoch above the producer's")
    add("end_txn_abort_no_transaction", m.EndTxnRequest, lambda v, ctx: end(v, ctx, committed=False),
        init("end-abort-none"), doc="abort with no transaction ongoing: INVALID_TXN_STATE before v5; from v5 "
        "(transaction.version 2) allowed, with the epoch bumped")

    def ended(name: str) -> Callable[[WireConn, Ctx], None]:
        base = init(name, partition=True)

        def setup(conn: WireConn, ctx: Ctx) -> None:
            base(conn, ctx)
            r = conn.request(end(ctx["version"], ctx), ctx["version"])
            if r.error_code:
                raise RuntimeError(f"setup: EndTxn {ctx['txn']}: error {r.error_code}")
            # Kafka writes the markers after answering: wait until the transaction is complete, so the retry
            # below does not race them (a retry during PrepareCommit is CONCURRENT_TRANSACTIONS)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                d = conn.request(m.DescribeTransactionsRequest(transactional_ids=[ctx["txn"]]), 0)
                if d.transaction_states[0].transaction_state == "CompleteCommit":
                    return
                time.sleep(0.05)
            raise RuntimeError(f"setup: {ctx['txn']} did not complete")
        return setup

    add("end_txn_retry", m.EndTxnRequest, lambda v, ctx: end(v, ctx), ended("end-retry"),
        doc="the same commit again at the same epoch: a retry (from v5: the epoch one below the bumped one)")

    # Produce (transactional): a partition not added to the transaction
    def txn_produce(v: int, ctx: Ctx) -> Any:
        batch = encode_batch([Rec(value=b"t", key=b"k", timestamp=TS)], base_timestamp=TS, producer_id=ctx["pid"],
                             producer_epoch=ctx["epoch"], base_sequence=0, transactional=True)
        tid = ctx.get("topic_ids", {}).get(topic) if v >= 13 else None
        req = produce_request(topic if v < 13 else "", 0, batch, topic_id=tid)
        req.transactional_id = ctx["txn"]
        return req

    add("produce_transactional_not_added", m.ProduceRequest, txn_produce, init("prod-txn"),
        doc="a transactional batch for a partition not added to the transaction: refused before v12; from v12 "
        "(KIP-890 part 2) the produce adds it")

    # TxnOffsetCommit
    def txn_commit(v: int, ctx: Ctx, name: str = topic, epoch_delta: int = 0) -> Any:
        # v6 names topics by id: each broker's own id for the topic (an unknown topic: an id no topic has)
        tid = ctx.get("topic_ids", {}).get(name, uuid.UUID(int=0x5EED)) if v >= 6 else uuid.UUID(int=0)
        return T(transactional_id=ctx["txn"], group_id=group, producer_id=ctx["pid"],
                 producer_epoch=ctx["epoch"] + epoch_delta,
                 topics=[T.TxnOffsetCommitRequestTopic(name=name, topic_id=tid, partitions=[
                     T.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=3,
                                                       committed_metadata="diff")])])

    add("txn_offset_commit_ok", m.TxnOffsetCommitRequest, lambda v, ctx: txn_commit(v, ctx),
        init("toc-ok", offsets=True), doc="offsets of a group added to the transaction")
    add("txn_offset_commit_unknown_topic", m.TxnOffsetCommitRequest,
        lambda v, ctx: txn_commit(v, ctx, "diff-no-such-topic"), init("toc-topic", offsets=True),
        doc="a topic that does not exist")
    add("txn_offset_commit_fenced", m.TxnOffsetCommitRequest,
        lambda v, ctx: txn_commit(v, ctx, epoch_delta=1), init("toc-fenced", offsets=True),
        doc="an epoch above the producer's")
    add("txn_offset_commit_not_added", m.TxnOffsetCommitRequest,
        lambda v, ctx: txn_commit(v, ctx), init("toc-not-added"),
        doc="offsets of a group the transaction has not added (no AddOffsetsToTxn)")

    # DescribeTransactions, ListTransactions
    add("describe_transactions_ongoing", m.DescribeTransactionsRequest,
        lambda v, ctx: m.DescribeTransactionsRequest(transactional_ids=[ctx["txn"]]),
        init("dt-ongoing", partition=True), doc="an Ongoing transaction holding one partition")
    add("describe_transactions_unknown", m.DescribeTransactionsRequest,
        lambda v, ctx: m.DescribeTransactionsRequest(transactional_ids=["diff-no-such-txn"]),
        lambda conn, ctx: warm_coordinator(conn, ctx, "diff-no-such-txn", 1), doc="TRANSACTIONAL_ID_NOT_FOUND")
    add("list_transactions_ongoing", m.ListTransactionsRequest,
        lambda v, ctx: m.ListTransactionsRequest(state_filters=["Ongoing"], producer_id_filters=[ctx["pid"]]),
        init("lt-ongoing", partition=True), doc="the Ongoing transaction of this producer id")
    add("list_transactions_pattern", m.ListTransactionsRequest,
        lambda v, ctx: m.ListTransactionsRequest(state_filters=[], producer_id_filters=[],
                                                 transactional_id_pattern="diff-lt-pattern-v.*"),
        init("lt-pattern"), doc="the transactional ids matching a pattern (v2)", min_version=2)
    add("list_transactions_bad_pattern", m.ListTransactionsRequest,
        lambda v, ctx: m.ListTransactionsRequest(state_filters=[], producer_id_filters=[],
                                                 transactional_id_pattern="(diff"),
        lambda conn, ctx: warm_coordinator(conn, ctx, "diff-warm", 1),
        doc="a pattern that does not compile: INVALID_REGULAR_EXPRESSION", min_version=2)
    add("list_transactions_unknown_state", m.ListTransactionsRequest,
        lambda v, ctx: m.ListTransactionsRequest(state_filters=["Sleeping"], producer_id_filters=[]),
        lambda conn, ctx: warm_coordinator(conn, ctx, "diff-warm", 1), doc="a state Kafka does not have")

    # DescribeProducers
    t_prod = topic_of("producers")

    def producers_setup(conn: WireConn, ctx: Ctx) -> None:
        if create(conn, ctx, t_prod, 1):
            produce_records(conn, t_prod, 0, [b"p0", b"p1"])

    add("describe_producers_none", m.DescribeProducersRequest,
        lambda v, ctx: m.DescribeProducersRequest(topics=[m.DescribeProducersRequest.TopicRequest(
            name=t_prod, partition_indexes=[0, 3])]), producers_setup,
        doc="a partition written without a producer id, and one that does not exist")

    # WriteTxnMarkers: what Admin.abortTransaction sends (KIP-664), on a partition with a producer's markers
    W = m.WriteTxnMarkersRequest
    t_markers = topic_of("markers")

    def marker(ctx: Ctx, topic: str, partitions: list[int], *, epoch_delta: int = 0, coordinator_epoch: int = 0,
               commit: bool = False) -> Any:
        return W(markers=[W.WritableTxnMarker(
            producer_id=ctx["pid"], producer_epoch=ctx["epoch"] + epoch_delta, transaction_result=commit,
            topics=[W.WritableTxnMarkerTopic(name=topic, partition_indexes=partitions)],
            coordinator_epoch=coordinator_epoch)])

    def markers_setup(case: str, *, epoch_delta: int = 0, coordinator_epoch: int = 0) -> Callable[[WireConn, Ctx], None]:
        first = init(case)

        def setup(conn: WireConn, ctx: Ctx) -> None:
            create(conn, ctx, t_markers, 1)
            first(conn, ctx)
            r = conn.request(marker(ctx, t_markers, [0], epoch_delta=epoch_delta,
                                    coordinator_epoch=coordinator_epoch), 1)
            if r.markers[0].topics[0].partitions[0].error_code:
                raise RuntimeError(f"setup: WriteTxnMarkers: {r}")
        return setup

    add("write_txn_markers_abort", m.WriteTxnMarkersRequest, lambda v, ctx: marker(ctx, t_markers, [0]),
        markers_setup("wtm-abort"), doc="an ABORT marker at the producer's epoch (what kafka-transactions abort sends)")
    add("write_txn_markers_commit", m.WriteTxnMarkersRequest,
        lambda v, ctx: marker(ctx, t_markers, [0], commit=True), markers_setup("wtm-commit"), doc="a COMMIT marker")
    add("write_txn_markers_unknown", m.WriteTxnMarkersRequest,
        lambda v, ctx: W(markers=[W.WritableTxnMarker(
            producer_id=ctx["pid"], producer_epoch=ctx["epoch"], transaction_result=False, coordinator_epoch=0,
            topics=[W.WritableTxnMarkerTopic(name="diff-no-such-topic", partition_indexes=[0]),
                    W.WritableTxnMarkerTopic(name=t_markers, partition_indexes=[7])])]),
        markers_setup("wtm-unknown"), doc="an unknown topic and an unknown partition: UNKNOWN_TOPIC_OR_PARTITION")
    add("write_txn_markers_old_epoch", m.WriteTxnMarkersRequest, lambda v, ctx: marker(ctx, t_markers, [0]),
        markers_setup("wtm-old-epoch", epoch_delta=1),
        doc="an epoch older than the producer's last marker: INVALID_PRODUCER_EPOCH")
    add("write_txn_markers_old_coordinator", m.WriteTxnMarkersRequest,
        lambda v, ctx: marker(ctx, t_markers, [0], coordinator_epoch=3),
        markers_setup("wtm-old-coordinator", coordinator_epoch=5),
        doc="a coordinator epoch older than the last marker's: TRANSACTION_COORDINATOR_FENCED")
