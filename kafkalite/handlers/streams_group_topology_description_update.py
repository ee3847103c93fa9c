"""StreamsGroupTopologyDescriptionUpdate (key 93): v0 -- KIP-1331: a streams group member pushes its topology
description, which the broker hands to a configured topology description plugin
(``group.streams.topology.description.plugin.class``).

kafkalite has no such plugin, which is Kafka 4.4's default: Kafka then answers UNSUPPORTED_VERSION with "The
broker has no streams group topology description plugin configured." (GroupCoordinatorService
.throwIfStreamsGroupTopologyDescriptionUpdateInvalid), and so does this handler, after the checks Kafka makes
before it: ``streams.version`` finalized, READ on the group (GROUP_AUTHORIZATION_FAILED). Heartbeats never ask
for a description (TopologyDescriptionRequired stays false), so Kafka Streams does not send it.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.handlers.streams_group_heartbeat import streams_enabled
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    StreamsGroupTopologyDescriptionUpdateRequest,
    StreamsGroupTopologyDescriptionUpdateResponse,
)

R = StreamsGroupTopologyDescriptionUpdateResponse
NO_PLUGIN = "The broker has no streams group topology description plugin configured."


@handler(StreamsGroupTopologyDescriptionUpdateRequest, min_version=0, max_version=0)
async def streams_group_topology_description_update(ctx: RequestContext,
                                                    req: StreamsGroupTopologyDescriptionUpdateRequest) -> R:
    if not streams_enabled(ctx):
        return R(error_code=ErrorCode.UNSUPPORTED_VERSION)
    if err := authz.group_error(ctx, authz.Op.READ, req.group_id):
        return R(error_code=err)
    if ctx.broker.groups is None:
        return R(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return R(error_code=ErrorCode.UNSUPPORTED_VERSION, error_message=NO_PLUGIN)
