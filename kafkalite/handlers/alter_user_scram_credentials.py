"""AlterUserScramCredentials (key 51): v0. Create, replace and delete users' SCRAM credentials.

What ``kafka-configs --alter --add-config 'SCRAM-SHA-512=[password=...]' --entity-type users`` and the admin
clients' ``alterUserScramCredentials`` send: upsertions carry a salt and the *salted* password (the client
ran PBKDF2), from which the broker keeps salt, stored key, server key and iterations (never the password);
deletions name a user and mechanism. Kafka's (KRaft ScramControlManager) checks, per user: an empty name
UNACCEPTABLE_CREDENTIAL "Username must not be empty"; mechanism other than 1 (SCRAM-SHA-256) / 2
(SCRAM-SHA-512) UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM mechanism"; iterations below 4096 "Too few
iterations", above 16384 "Too many iterations" (UNACCEPTABLE_CREDENTIAL); deleting a credential that does not
exist RESOURCE_NOT_FOUND "Attempt to delete a user credential that does not exist"; a user altered twice in
one request DUPLICATE_RESOURCE "A user credential cannot be altered twice in the same request". The valid
changes are written to the data directory (``kafkalite.security.scram_store``) before the answer; a failed
write answers every change UNKNOWN_SERVER_ERROR and changes nothing. Changes apply to new authentications.
- Authorization: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every user (kafkalite.authz).
"""
from __future__ import annotations

import logging

from kafkalite import authz
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.security.scram import BY_TYPE, MAX_ITERATIONS, MIN_ITERATIONS, credential_from_salted
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse

log = logging.getLogger(__name__)
Result = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult
_TWICE = "A user credential cannot be altered twice in the same request"


def _check_name_and_mechanism(name: str, mechanism: int) -> tuple[int, str] | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in BY_TYPE:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


@handler(AlterUserScramCredentialsRequest, min_version=0, max_version=0)
async def alter_user_scram_credentials(ctx: RequestContext, req: AlterUserScramCredentialsRequest,
                                       ) -> AlterUserScramCredentialsResponse:
    state = ctx.broker
    if err := authz.cluster_error(ctx, authz.Op.ALTER):
        return AlterUserScramCredentialsResponse(throttle_time_ms=0, results=[
            Result(user=name, error_code=err, error_message="Cluster authorization failed.") for name in dict.fromkeys(
                [d.name for d in req.deletions or []] + [u.name for u in req.upsertions or []])])
    store = state.scram
    errors: dict[str, tuple[int, str]] = {}
    deletions: dict[str, tuple[str, str]] = {}
    upsertions: dict[str, tuple[str, str, object]] = {}
    for d in req.deletions or []:
        name = d.name or ""
        if name in errors:
            continue
        if deletions.pop(name, None) is not None:
            errors[name] = (ErrorCode.DUPLICATE_RESOURCE, _TWICE)
            continue
        bad = _check_name_and_mechanism(name, d.mechanism)
        if bad is None and store.get(name, BY_TYPE[d.mechanism]) is None:
            bad = (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
        if bad is not None:
            errors[name] = bad
        else:
            deletions[name] = (name, BY_TYPE[d.mechanism])
    for u in req.upsertions or []:
        name = u.name or ""
        if name in errors:
            continue
        if deletions.pop(name, None) is not None or upsertions.pop(name, None) is not None:
            errors[name] = (ErrorCode.DUPLICATE_RESOURCE, _TWICE)
            continue
        bad = _check_name_and_mechanism(name, u.mechanism)
        if bad is None and u.iterations < MIN_ITERATIONS:
            bad = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif bad is None and u.iterations > MAX_ITERATIONS:
            bad = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        if bad is not None:
            errors[name] = bad
            continue
        mech = BY_TYPE[u.mechanism]
        upsertions[name] = (name, mech, credential_from_salted(mech, bytes(u.salt or b""),
                                                               bytes(u.salted_password or b""), u.iterations))
    results: list[Result] = []
    if deletions or upsertions:
        try:
            await store.apply(list(deletions.values()), list(upsertions.values()))  # type: ignore[arg-type]
            ok = (ErrorCode.NONE, None)
        except OSError as exc:
            log.error("could not write SCRAM credentials: %s", exc)
            ok = (ErrorCode.UNKNOWN_SERVER_ERROR, "The SCRAM credentials could not be stored")
        results += [Result(user=n, error_code=ok[0], error_message=ok[1]) for n in (*deletions, *upsertions)]
    results += [Result(user=n, error_code=c, error_message=m) for n, (c, m) in errors.items()]
    return AlterUserScramCredentialsResponse(throttle_time_ms=0, results=results)
