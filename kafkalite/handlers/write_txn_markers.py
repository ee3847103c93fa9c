"""WriteTxnMarkers (key 27): v0-v2.

In Kafka a transaction coordinator sends it to each partition leader to end a transaction; clients send it too:
``Admin.abortTransaction`` and ``kafka-transactions --abort`` (KIP-664) abort a hanging transaction on one
partition with the producer id, epoch and coordinator epoch that DescribeProducers reports. kafkalite's own
coordinator writes its markers directly; this is the wire path, with Kafka's semantics
(``KafkaApis.handleWriteTxnMarkersRequest``):

- CLUSTER_ACTION on the cluster, else every partition answers CLUSTER_AUTHORIZATION_FAILED.
- Per partition: UNKNOWN_TOPIC_OR_PARTITION (no such topic or partition), NOT_LEADER_OR_FOLLOWER (another broker
  of a kafkalite cluster leads it), else a COMMIT (TransactionResult true) or ABORT control batch is appended
  with the marker's producer id, epoch and coordinator epoch. The producer state checks it as for the
  coordinator's own markers: an epoch older than the producer's is INVALID_PRODUCER_EPOCH, an older coordinator
  epoch TRANSACTION_COORDINATOR_FENCED; a storage failure its own error. An ABORT of an open transaction moves
  the last stable offset, so read_committed consumers go on.
- A marker on ``__consumer_offsets`` also completes the producer's pending transactional offset commits, as
  Kafka's group coordinator does when it writes the marker.
- v2's TransactionVersion (KIP-1228) is accepted; kafkalite's markers carry no version in the control record.
"""
from __future__ import annotations

import logging

from kafkalite import authz
from kafkalite.coordinator.common.config import OFFSETS_TOPIC
from kafkalite.errors import error_code_for
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.runtime.slices import Slices
from kafkalite.state import leader_epoch
from kafkalite_storage.errors import StorageError
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse

log = logging.getLogger(__name__)
R = WriteTxnMarkersResponse
COMMIT, ABORT = 1, 0


@handler(WriteTxnMarkersRequest, min_version=0, max_version=2)
async def write_txn_markers(ctx: RequestContext, req: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
    state = ctx.broker
    allowed = authz.cluster_allowed(ctx, authz.Op.CLUSTER_ACTION)
    work = Slices()   # a request may name many partitions
    markers = []
    for m in req.markers:
        group_partitions = False
        topics = []
        for t in m.topics:
            info = state.topics.get(t.name)
            parts = []
            for p in t.partition_indexes:
                if work.due():
                    await work.pause()
                code: int
                if not allowed:
                    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                elif info is None or not 0 <= p < info.partitions or state.get_log(t.name, p) is None:
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif not state.leads(t.name, p):
                    code = ErrorCode.NOT_LEADER_OR_FOLLOWER
                else:
                    code = _append(state, t.name, p, m)
                    group_partitions |= code == ErrorCode.NONE and t.name == OFFSETS_TOPIC
                parts.append(R.WritableTxnMarkerPartitionResult(partition_index=p, error_code=code))
            topics.append(R.WritableTxnMarkerTopicResult(name=t.name, partitions=parts))
        if group_partitions:   # the producer's pending TxnOffsetCommits are committed or dropped
            _complete_group_txn(state, m.producer_id, bool(m.transaction_result))
        markers.append(R.WritableTxnMarkerResult(producer_id=m.producer_id, topics=topics))
    return R(markers=markers)


def _append(state: object, topic: str, partition: int, m: WriteTxnMarkersRequest.WritableTxnMarker) -> int:
    plog = state.get_log(topic, partition)   # type: ignore[attr-defined]
    try:
        plog.append_control(COMMIT if m.transaction_result else ABORT, producer_id=m.producer_id,
                            producer_epoch=m.producer_epoch, coordinator_epoch=m.coordinator_epoch,
                            leader_epoch=leader_epoch(plog))
    except StorageError as exc:
        code = error_code_for(exc)
        log.info("transaction marker for producer %d on %s-%d refused: %s", m.producer_id, topic, partition, exc)
        return int(code)
    state.notify_append(topic, partition)   # type: ignore[attr-defined]
    return ErrorCode.NONE


def _complete_group_txn(state: object, producer_id: int, commit: bool) -> None:
    """The group coordinator holding the producer's pending offsets (any broker of a kafkalite cluster)."""
    cluster = getattr(state, "cluster", None)
    for st in [state] if cluster is None else cluster.running_states():
        groups = getattr(st, "groups", None)
        if groups is not None:
            groups.complete_txn(producer_id, commit)
