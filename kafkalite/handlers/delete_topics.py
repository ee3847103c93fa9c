"""DeleteTopics (key 20): v0–v6.

With ``delete.topic.enable=false`` every deletion answers TOPIC_DELETION_DISABLED.
v0–v5 name topics in TopicNames; v6 in Topics, each by name or by topic id (name null). Unknown names answer
UNKNOWN_TOPIC_OR_PARTITION, unknown ids UNKNOWN_TOPIC_ID; the internal topics (__consumer_offsets,
__transaction_state), by name or by id, cannot be deleted: TOPIC_AUTHORIZATION_FAILED, what Kafka answers a
client not allowed to delete a topic. (Kafka 3.9 in KRaft mode has no internal-topic check in
ControllerApis.deleteTopics: a client with cluster rights can delete them and lose every group's offsets and
every transaction's state. Only the broker manages them here; see create_topics.py.) Partition directories are removed by storage
(Kafka's ``-delete`` rename then removal); Fetch long polls on deleted partitions are woken.
Each topic is checked and forgotten on the event loop, in slices for a request of many topics (each topic on
its own, as Kafka's controller handles them: 2,000 topics held the loop ~0.2 s); their logs are then taken
out of storage in one pass and their directories removed in worker threads while their names stay reserved
(a CreateTopics of such a name meanwhile answers TOPIC_ALREADY_EXISTS, "marked for deletion", as in Kafka),
so deleting thousands of partitions never holds other clients up.
- Authorization: DELETE on the cluster allows every topic (KRaft Kafka's ControllerApis.deleteTopics, checked
  against Kafka 4.4); else DELETE on each topic (by name or id), else TOPIC_AUTHORIZATION_FAILED.
- controller_mutation_rate: v5+ answers THROTTLING_QUOTA_EXCEEDED while the quota is used up (kafkalite.quotas).
"""
from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

import trio

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.runtime.slices import Slices
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import DeleteTopicsRequest, DeleteTopicsResponse

if TYPE_CHECKING:
    from kafkalite.state import BrokerState

log = logging.getLogger(__name__)
#: requests naming more topics than this are walked in slices
SLICE_AFTER = 128
_Result = DeleteTopicsResponse.DeletableTopicResult
_ZERO_UUID = uuid.UUID(int=0)


@handler(DeleteTopicsRequest, min_version=0, max_version=6)
async def delete_topics(ctx: RequestContext, req: DeleteTopicsRequest) -> DeleteTopicsResponse:
    state = ctx.broker
    if ctx.version >= 6:
        wanted = [(t.name, t.topic_id) for t in req.topics]
    else:
        wanted = [(name, _ZERO_UUID) for name in req.topic_names]
    results = []
    forgotten: list[str] = []
    enabled = state.config.get_bool("delete.topic.enable")
    denied = set() if authz.cluster_allowed(ctx, authz.Op.DELETE) else authz.denied(ctx, authz.Op.DELETE, authz.TOPIC, (
        name or getattr(state.topics_by_id.get(topic_id), "name", None) for name, topic_id in wanted))
    work = Slices() if len(wanted) >= SLICE_AFTER else None
    try:
        for name, topic_id in wanted:
            if work is not None and work.due():
                await work.pause()
            result = _forget(ctx, name, topic_id, enabled, denied)
            if result.error_code == ErrorCode.NONE:
                forgotten.append(result.name)
            results.append(result)
    finally:   # what was forgotten is removed, even if the connection goes away meanwhile
        if forgotten:
            with trio.CancelScope(shield=True):
                await _remove(state, forgotten)
    return DeleteTopicsResponse(throttle_time_ms=state.quotas.mutation_throttle(ctx) if state.quotas.active else 0,
                                responses=results)


def _forget(ctx: RequestContext, name: str | None, topic_id: uuid.UUID, enabled: bool, denied: Any) -> Any:
    """Check one topic and, if it can go, forget it at once (no await: check-then-mutate), its name reserved
    until its directories are removed."""
    state = ctx.broker
    if not enabled:
        return _Result(name=name, topic_id=topic_id, error_code=ErrorCode.TOPIC_DELETION_DISABLED,
                       error_message="Topic deletion is disabled (delete.topic.enable=false)")
    if (name or getattr(state.topics_by_id.get(topic_id), "name", None)) in denied:
        return _Result(name=name, topic_id=topic_id, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                       error_message="Authorization failed.")
    if name is None:
        info = state.topics_by_id.get(topic_id)
        if info is None:
            return _Result(name=None, topic_id=topic_id, error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                           error_message="This server does not host this topic ID.")
    else:
        info = state.topics.get(name)
        if info is None:
            return _Result(name=name, topic_id=topic_id, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                           error_message="This server does not host this topic-partition.")
    if info.name in state.pending_topics:
        return _Result(name=info.name, topic_id=info.topic_id, error_code=ErrorCode.REASSIGNMENT_IN_PROGRESS,
                       error_message="Partitions are being added to this topic; retry.")
    if info.internal:
        return _Result(name=info.name, topic_id=info.topic_id, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                       error_message="Internal topics cannot be deleted")
    if state.quotas.active and state.quotas.mutation_refused(ctx, info.partitions, ctx.version >= 5):
        return _Result(name=info.name, topic_id=info.topic_id, error_code=ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                       error_message="The throttling quota has been exceeded.")
    state.pending_topics.add(info.name)   # until its directories are gone
    state.topics.forget(info.name)
    return _Result(name=info.name, topic_id=info.topic_id, error_code=ErrorCode.NONE)


async def _remove(state: BrokerState, forgotten: list[str]) -> None:
    """Detach the forgotten topics' logs from storage in one pass, then remove their directories in worker
    threads, releasing each name as its directories go."""
    try:
        detached = state.topics.detach(forgotten)
        for name in forgotten:
            try:
                await trio.to_thread.run_sync(state.topics.remove_logs, detached.get(name, []))
            except OSError as exc:   # the topic is gone; a leftover -delete directory goes at next start
                log.error("removing the directories of deleted topic %s failed: %s", name, exc)
            finally:
                state.pending_topics.discard(name)
    finally:
        for name in forgotten:
            state.pending_topics.discard(name)
