"""DescribeQuorum (key 55): v0–v2 (flexible; v1 adds the replicas' fetch timestamps, v2 ErrorMessage,
ReplicaDirectoryId and the voters' Nodes).

What a single Kafka 3.9 node in KRaft combined mode (formatted ``--standalone``) reports for the metadata
partition ``__cluster_metadata-0``: this node is the leader and the only voter, there are no observers (the
broker half of a combined node shares the controller's raft client), and the leader's own fetch and
caught-up timestamps are "now" (``LeaderState.describeReplicaState``). Any other topic or partition is
UNKNOWN_TOPIC_OR_PARTITION at partition level (``KafkaRaftClient.handleDescribeQuorumRequest``).

kafkalite keeps no metadata log, so the values that come from one are chosen, fixed and honest:

* LeaderEpoch 1: the one election of a one-voter quorum at its first start;
* HighWatermark and the voter's LogEndOffset 0: nothing has been replicated through a metadata log, the
  same offset as the FinalizedFeaturesEpoch of ``kafkalite.metadata.features``;
* ReplicaDirectoryId: the ``directory.id`` of the log dir's ``meta.properties`` (Kafka's metadata log dir);
* the voter's endpoint (Nodes): the listener the client reached (kafkalite has no CONTROLLER listener).

Authorization (``ControllerApis.handleDescribeQuorum``): DESCRIBE on the cluster, else a top-level
CLUSTER_AUTHORIZATION_FAILED with Kafka's default message and no topics (``getTopLevelErrorResponse``).
"""
from __future__ import annotations

import logging
import os
import uuid

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_storage.checkpoints import read_properties, uuid_from_base64
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import DescribeQuorumRequest, DescribeQuorumResponse

log = logging.getLogger(__name__)
R = DescribeQuorumResponse
METADATA_TOPIC = "__cluster_metadata"
LEADER_EPOCH = 1
HIGH_WATERMARK = 0


def _directory_id(log_dir: str) -> uuid.UUID:
    try:
        return uuid_from_base64(read_properties(os.path.join(log_dir, "meta.properties"))["directory.id"])
    except (OSError, KeyError, ValueError) as exc:
        log.debug("no directory.id in %s: %s", log_dir, exc)
        return uuid.UUID(int=0)


@handler(DescribeQuorumRequest, min_version=0, max_version=2)
async def describe_quorum(ctx: RequestContext, req: DescribeQuorumRequest) -> DescribeQuorumResponse:
    state = ctx.broker
    if err := authz.cluster_error(ctx, authz.Op.DESCRIBE):
        return R(error_code=err, error_message=authz.CLUSTER_DENIED_MESSAGE, topics=[], nodes=[])
    valid = (len(req.topics) == 1 and req.topics[0].topic_name == METADATA_TOPIC
             and len(req.topics[0].partitions) == 1 and req.topics[0].partitions[0].partition_index == 0)
    if not valid:
        topics = [R.TopicData(topic_name=t.topic_name, partitions=[
            R.PartitionData(partition_index=p.partition_index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                            error_message=None) for p in t.partitions]) for t in req.topics]
        return R(error_code=ErrorCode.NONE, error_message=None, topics=topics, nodes=[])
    now = ctx.now_ms()
    voter = R.ReplicaState(replica_id=state.node_id, replica_directory_id=_directory_id(str(state.log_dir)),
                           log_end_offset=HIGH_WATERMARK, last_fetch_timestamp=now, last_caught_up_timestamp=now)
    part = R.PartitionData(partition_index=0, error_code=ErrorCode.NONE, error_message="",
                           leader_id=state.node_id, leader_epoch=LEADER_EPOCH, high_watermark=HIGH_WATERMARK,
                           current_voters=[voter], observers=[])
    lst = state.advertised_for(ctx.listener)
    nodes = [R.Node(node_id=state.node_id, listeners=[R.Listener(name=lst.name, host=lst.host, port=lst.port)])]
    return R(error_code=ErrorCode.NONE, error_message="",   # "" (v2), as Kafka
             topics=[R.TopicData(topic_name=METADATA_TOPIC, partitions=[part])], nodes=nodes)
