"""ConsumerGroupHeartbeat (key 68): v0-v1 -- KIP-848 consumer groups (``group.protocol=consumer``).

- A member joins with MemberEpoch 0 and its subscription (SubscribedTopicNames, or v1 SubscribedTopicRegex),
  RebalanceTimeoutMs and empty TopicPartitions; later heartbeats send only what changed (null = unchanged) and
  its owned partitions; it leaves with epoch -1 (static members -2: a temporary leave keeping the assignment).
- v0: the coordinator generates the member id on the first heartbeat; v1 (Kafka 4.0): the client generates it,
  and a heartbeat without one is INVALID_REQUEST. v1 also resolves regexes with RE2 syntax on the broker.
- The response has the member id, its (new) epoch, the heartbeat interval (group.consumer.heartbeat.interval.ms)
  and its assignment as topic ids -- only when it changed or on a full request (joining, or all fields sent).
The group logic lives in ``kafkalite/coordinator/consumer/``.

Authorization (Kafka 4.x ``KafkaApis.handleConsumerGroupHeartbeat``): READ on the group, else
GROUP_AUTHORIZATION_FAILED; then, when SubscribedTopicNames is non-empty, DESCRIBE on each of them, else
TOPIC_AUTHORIZATION_FAILED (no message) before the coordinator sees the request. A regex subscription only
resolves to topics the member may describe (``authz.describable``, given to the coordinator).
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse

R = ConsumerGroupHeartbeatResponse


@handler(ConsumerGroupHeartbeatRequest, min_version=0, max_version=1)
async def consumer_group_heartbeat(ctx: RequestContext,
                                   req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
    state = ctx.broker
    svc = state.groups
    if svc is None:
        return R(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if err := authz.group_error(ctx, authz.Op.READ, req.group_id):
        return R(error_code=err)
    if req.subscribed_topic_names and authz.denied(ctx, authz.Op.DESCRIBE, authz.TOPIC, req.subscribed_topic_names):
        return R(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    owned = None
    if req.topic_partitions is not None:
        owned = {}
        for tp in req.topic_partitions:
            owned.setdefault(tp.topic_id, set()).update(tp.partitions)
    res = await svc.consumer.heartbeat(
        req.group_id, req.member_id, req.member_epoch, req.instance_id, req.rack_id, req.rebalance_timeout_ms,
        None if req.subscribed_topic_names is None else list(req.subscribed_topic_names),
        req.subscribed_topic_regex if ctx.version >= 1 else None, req.server_assignor, owned,
        ctx.client_id or "", f"/{ctx.client_host}", ctx.version, authz.describable(ctx))
    if res.error_code:
        return R(error_code=res.error_code, error_message=res.error_message)
    assignment = None
    if res.assignment is not None:
        assignment = R.Assignment(topic_partitions=[
            R.TopicPartitions(topic_id=t, partitions=sorted(ps))
            for t, ps in sorted(res.assignment.items(), key=lambda x: str(x[0])) if ps])
    return R(error_code=0, member_id=res.member_id, member_epoch=res.member_epoch,
             heartbeat_interval_ms=res.heartbeat_interval_ms, assignment=assignment)
