"""CreateAcls (key 30), DescribeAcls (key 29), DeleteAcls (key 31): v0–v3 each (v2+ flexible; v1+ carry the
pattern type, which v0 leaves at its default LITERAL).

- Without an authorizer all three are still advertised and answer SECURITY_DISABLED ("No Authorizer is
  configured."), as Kafka does: per creation, per filter, or as DescribeAcls' top-level error.
- CreateAcls and DeleteAcls need ALTER on the cluster, DescribeAcls DESCRIBE on the cluster
  (CLUSTER_AUTHORIZATION_FAILED otherwise, on every creation / filter / the describe).
- A creation Kafka would refuse (ANY/UNKNOWN types, MATCH/ANY pattern, empty name, a CLUSTER resource not
  named ``kafka-cluster``, an unparsable principal) answers INVALID_REQUEST with Kafka's message; the valid
  ones of the same request are created. An UNKNOWN code in a filter answers INVALID_REQUEST.
- DescribeAcls groups the bindings by resource pattern; DeleteAcls lists, per filter, what it removed.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkalite import authz
from kafkalite.authz.acl import (
    AclBinding,
    AclFilter,
    Op,
    PatternType,
    Permission,
    ResourceType,
    enum_or_unknown,
    invalid_binding,
)
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
)

if TYPE_CHECKING:
    from kafkalite.handlers.registry import RequestContext

log = logging.getLogger(__name__)

NO_AUTHORIZER = "No Authorizer is configured."
_CLUSTER_DENIED = "Cluster authorization failed."


def _filter(rt: int, name: str | None, pt: int, principal: str | None, host: str | None, op: int,
            perm: int) -> AclFilter:
    return AclFilter(enum_or_unknown(ResourceType, rt), name, enum_or_unknown(PatternType, pt),  # type: ignore[arg-type]
                     principal, host, enum_or_unknown(Op, op), enum_or_unknown(Permission, perm))  # type: ignore[arg-type]


def _cluster_check(ctx: RequestContext, op: Op) -> tuple[ErrorCode, str | None]:
    state = ctx.broker
    az = state.authorizer
    if az is None:
        return ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER
    if not authz.cluster_allowed(ctx, op):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _CLUSTER_DENIED
    return ErrorCode.NONE, None


def create_acls(ctx: RequestContext, req: CreateAclsRequest) -> CreateAclsResponse:
    state = ctx.broker
    R = CreateAclsResponse.AclCreationResult
    code, msg = _cluster_check(ctx, Op.ALTER)
    az = state.authorizer
    if code or az is None:   # (no authorizer: code is SECURITY_DISABLED)
        return CreateAclsResponse(throttle_time_ms=0, results=[R(error_code=code, error_message=msg)
                                                               for _ in req.creations])
    results: list[CreateAclsResponse.AclCreationResult] = []
    valid: list[AclBinding] = []
    for c in req.creations:
        f = _filter(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host, c.operation,
                    c.permission_type)
        b = AclBinding(f.resource_type, f.name or "", f.pattern_type, f.principal or "", f.host or "",
                       f.operation, f.permission)
        why = invalid_binding(b)
        if why is not None:
            results.append(R(error_code=ErrorCode.INVALID_REQUEST, error_message=why))
        else:
            results.append(R(error_code=ErrorCode.NONE, error_message=None))
            valid.append(b)
    try:
        az.create(valid)
    except OSError as exc:
        log.error("could not persist new ACLs: %s", exc)
        for r in results:
            if r.error_code == ErrorCode.NONE:
                r.error_code, r.error_message = ErrorCode.UNKNOWN_SERVER_ERROR, f"could not persist ACLs: {exc}"
    else:
        if valid:
            log.info("%s created %d ACL(s)", ctx.principal, len(valid))
    return CreateAclsResponse(throttle_time_ms=0, results=results)


def describe_acls(ctx: RequestContext, req: DescribeAclsRequest) -> DescribeAclsResponse:
    state = ctx.broker
    code, msg = _cluster_check(ctx, Op.DESCRIBE)
    if code == ErrorCode.SECURITY_DISABLED:   # KafkaApis.handleDescribeAcls' own wording
        msg = "No Authorizer is configured on the broker"
    az = state.authorizer
    if code or az is None:   # (no authorizer: code is SECURITY_DISABLED)
        return DescribeAclsResponse(throttle_time_ms=0, error_code=code, error_message=msg, resources=[])
    f = _filter(req.resource_type_filter, req.resource_name_filter, req.pattern_type_filter, req.principal_filter,
                req.host_filter, req.operation, req.permission_type)
    why = f.invalid()
    if why is not None:
        return DescribeAclsResponse(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST, error_message=why,
                                    resources=[])
    groups: dict[tuple[int, str, int], list[DescribeAclsResponse.AclDescription]] = {}
    for b in az.matching(f):
        groups.setdefault((b.resource_type, b.name, b.pattern_type), []).append(DescribeAclsResponse.AclDescription(
            principal=b.principal, host=b.host, operation=b.operation, permission_type=b.permission))
    return DescribeAclsResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, resources=[
        DescribeAclsResponse.DescribeAclsResource(resource_type=rt, resource_name=name, pattern_type=pt, acls=acls)
        for (rt, name, pt), acls in groups.items()])


def delete_acls(ctx: RequestContext, req: DeleteAclsRequest) -> DeleteAclsResponse:
    state = ctx.broker
    FR = DeleteAclsResponse.DeleteAclsFilterResult
    code, msg = _cluster_check(ctx, Op.ALTER)
    az = state.authorizer
    if code or az is None:   # (no authorizer: code is SECURITY_DISABLED)
        return DeleteAclsResponse(throttle_time_ms=0, filter_results=[
            FR(error_code=code, error_message=msg, matching_acls=[]) for _ in req.filters])
    filters = [_filter(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter, f.principal_filter,
                       f.host_filter, f.operation, f.permission_type) for f in req.filters]
    good = [f for f in filters if f.invalid() is None]
    try:
        removed = dict(zip(good, az.delete(good), strict=True))
    except OSError as exc:
        log.error("could not persist ACL deletions: %s", exc)
        return DeleteAclsResponse(throttle_time_ms=0, filter_results=[
            FR(error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=f"could not persist ACLs: {exc}",
               matching_acls=[]) for _ in filters])
    out = []
    for f in filters:
        why = f.invalid()
        if why is not None:
            out.append(FR(error_code=ErrorCode.INVALID_REQUEST, error_message=why, matching_acls=[]))
            continue
        out.append(FR(error_code=ErrorCode.NONE, error_message=None, matching_acls=[
            DeleteAclsResponse.DeleteAclsMatchingAcl(
                error_code=ErrorCode.NONE, error_message=None, resource_type=b.resource_type,
                resource_name=b.name, pattern_type=b.pattern_type, principal=b.principal, host=b.host,
                operation=b.operation, permission_type=b.permission) for b in removed[f]]))
    total = sum(len(v) for v in removed.values())
    if total:
        log.info("%s deleted %d ACL(s)", ctx.principal, total)
    return DeleteAclsResponse(throttle_time_ms=0, filter_results=out)
