"""DescribeUserScramCredentials (key 50): v0. Which SCRAM mechanisms (and iteration counts) each user has.

As Kafka's ScramImage.describe: no users (null or empty) lists every user with a credential; a named user
without one gets RESOURCE_NOT_FOUND "Attempt to describe a user credential that does not exist: <user>"; a
user named twice DUPLICATE_RESOURCE "Cannot describe SCRAM credentials for the same user twice in a single
request: <user>". Mechanism codes: 1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512. Salts and keys are never returned.
- Authorization: DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED (kafkalite.authz).
"""
from __future__ import annotations

from collections import Counter

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.security.scram import MECHANISMS
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse

Result = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
Info = DescribeUserScramCredentialsResponse.CredentialInfo


@handler(DescribeUserScramCredentialsRequest, min_version=0, max_version=0)
async def describe_user_scram_credentials(ctx: RequestContext, req: DescribeUserScramCredentialsRequest,
                                          ) -> DescribeUserScramCredentialsResponse:
    state = ctx.broker
    if err := authz.cluster_error(ctx, authz.Op.DESCRIBE):
        return DescribeUserScramCredentialsResponse(throttle_time_ms=0, error_code=err,
                                                    error_message="Cluster authorization failed.", results=[])
    users = state.scram.users
    named = [u.name for u in (req.users or [])]
    counts = Counter(named)
    results = []
    for user in (dict.fromkeys(named) if named else sorted(users)):
        if counts[user] > 1:
            results.append(Result(user=user, error_code=ErrorCode.DUPLICATE_RESOURCE,
                                  error_message="Cannot describe SCRAM credentials for the same user twice in "
                                                f"a single request: {user}", credential_infos=[]))
            continue
        mechs = users.get(user)
        if not mechs:
            results.append(Result(user=user, error_code=ErrorCode.RESOURCE_NOT_FOUND,
                                  error_message=f"Attempt to describe a user credential that does not exist: "
                                                f"{user}", credential_infos=[]))
            continue
        results.append(Result(user=user, error_code=ErrorCode.NONE, error_message=None, credential_infos=[
            Info(mechanism=MECHANISMS[m][1], iterations=c.iterations) for m, c in sorted(mechs.items())]))
    return DescribeUserScramCredentialsResponse(throttle_time_ms=0, error_code=ErrorCode.NONE,
                                                error_message="", results=results)   # "" on success, as Kafka
