"""DescribeGroups (key 15): v0–v6.

- A group that does not exist, or is not a classic group (a KIP-848 consumer group, a KIP-1071 streams group), is described as state
  "Dead": with no error before v6, with GROUP_ID_NOT_FOUND and Kafka's message from v6 (KIP-1043). Member
  metadata and assignments are only filled in while the group is Stable, and the protocol name likewise, as
  Kafka's GroupMetadata.summary.
- v3 adds AuthorizedOperations (asked with IncludeAuthorizedOperations): without ACLs every group
  operation is allowed (READ, DELETE, DESCRIBE, and under a 4.x profile DESCRIBE_CONFIGS, ALTER_CONFIGS);
  v4 adds GroupInstanceId; v5 is flexible.
- Authorization: DESCRIBE on each group (else GROUP_AUTHORIZATION_FAILED); authorized_operations (v3+, when
  asked) are the principal's.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import DescribeGroupsRequest, DescribeGroupsResponse

R = DescribeGroupsResponse
NOT_REQUESTED = -(2**31)


@handler(DescribeGroupsRequest, min_version=0, max_version=6)
async def describe_groups(ctx: RequestContext, req: DescribeGroupsRequest) -> DescribeGroupsResponse:
    state = ctx.broker
    svc = state.groups
    asked = ctx.version >= 3 and req.include_authorized_operations
    out = []
    for gid in req.groups:
        ops = authz.group_ops(ctx, gid) if asked else NOT_REQUESTED
        if authz.group_error(ctx, authz.Op.DESCRIBE, gid):
            out.append(R.DescribedGroup(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, group_id=gid,
                                        authorized_operations=ops))
            continue
        if svc is None:
            out.append(R.DescribedGroup(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, group_id=gid))
            continue
        err, summary = svc.describe_group(gid)
        if err != ErrorCode.NONE:
            out.append(R.DescribedGroup(error_code=err, group_id=gid, authorized_operations=ops))
        elif summary is None and ctx.version >= 6:
            other = gid in svc.consumer.coordinator.groups or gid in svc.streams.coordinator.groups
            what = "is not a classic group" if other else "not found"
            out.append(R.DescribedGroup(error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=f"Group {gid} {what}.",
                                        group_id=gid, group_state="Dead", authorized_operations=ops))
        elif summary is None:
            out.append(R.DescribedGroup(error_code=ErrorCode.NONE, group_id=gid, group_state="Dead",
                                        authorized_operations=ops))
        else:
            out.append(R.DescribedGroup(
                error_code=ErrorCode.NONE, group_id=gid, group_state=summary["state"],
                protocol_type=summary["protocol_type"], protocol_data=summary["protocol"],
                authorized_operations=ops, members=[
                    R.DescribedGroupMember(member_id=m["member_id"],
                                           group_instance_id=m["group_instance_id"] if ctx.version >= 4 else None,
                                           client_id=m["client_id"], client_host=m["client_host"],
                                           member_metadata=m["metadata"], member_assignment=m["assignment"])
                    for m in summary["members"]]))
    return R(throttle_time_ms=0, groups=out)
