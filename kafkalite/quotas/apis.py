"""DescribeClientQuotas (key 48) and AlterClientQuotas (key 49): v0–v1 each (v1 flexible).

- Authorization: DescribeClientQuotas needs DESCRIBE_CONFIGS on the cluster, AlterClientQuotas ALTER_CONFIGS
  (CLUSTER_AUTHORIZATION_FAILED otherwise), as KafkaApis.
- Describe: each filter component names an entity type and matches EXACT (that name), DEFAULT (the type's
  default) or ANY name; an entity matches when it has every component's type with a matching name and, if
  ``strict``, no other type. Duplicate or unknown types answer INVALID_REQUEST.
- Alter: each entry is checked on its own (entity, keys, values; INVALID_REQUEST with Kafka's messages) and
  the valid ones applied together unless ``validate_only``; values are persisted before they take effect.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkalite import authz
from kafkalite.metadata.quotas import CLIENT_ID, USER, Entity, entity_of, invalid_entity, invalid_value
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)

if TYPE_CHECKING:
    from kafkalite.handlers.registry import RequestContext

log = logging.getLogger(__name__)
EXACT, DEFAULT, ANY = 0, 1, 2


def describe(ctx: RequestContext, req: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse:
    state = ctx.broker
    R = DescribeClientQuotasResponse
    if err := authz.cluster_error(ctx, authz.Op.DESCRIBE_CONFIGS):
        return R(throttle_time_ms=0, error_code=err, error_message="Cluster authorization failed.", entries=None)
    comps = [(c.entity_type, c.match_type, c.match) for c in req.components]
    types = [t for t, _m, _n in comps]
    why = None
    if len(set(types)) != len(types):
        why = f"Duplicate entity type in filter: {types}"
    for t, m, _n in comps:
        if t not in (USER, CLIENT_ID):
            why = why or f"Custom entity type {t!r} not supported"
        if m not in (EXACT, DEFAULT, ANY):
            why = why or f"Unknown match type {m}"
        if m == EXACT and _n is None:   # ClientQuotaFilterComponent's check, in Kafka's words
            why = why or "Request specified MATCH_TYPE_EXACT, but set match string to null."
    if why is not None:
        return R(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST, error_message=why, entries=None)
    entries = []
    for ent, values in state.quotas.store.entries.items():
        names = dict(ent)
        if req.strict and set(names) != set(types):
            continue
        ok = True
        for t, m, n in comps:
            if t not in names or (m == EXACT and names[t] != n) or (m == DEFAULT and names[t] is not None):
                ok = False
                break
        if ok:
            entries.append(R.EntryData(
                entity=[R.EntityData(entity_type=t, entity_name=n) for t, n in ent],
                values=[R.ValueData(key=k, value=v) for k, v in sorted(values.items())]))
    return R(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message="", entries=entries)   # "" as Kafka


def alter(ctx: RequestContext, req: AlterClientQuotasRequest) -> AlterClientQuotasResponse:
    state = ctx.broker
    R = AlterClientQuotasResponse
    cluster_err = authz.cluster_error(ctx, authz.Op.ALTER_CONFIGS)
    results = []
    changes: list[tuple[Entity, list[tuple[str, float, bool]]]] = []
    for e in req.entries:
        pairs = [(d.entity_type, d.entity_name) for d in e.entity]
        code, why = (cluster_err, "Cluster authorization failed.") if cluster_err else (0, invalid_entity(pairs))
        if not code and why is None:
            keys = [op.key for op in e.ops]
            if len(set(keys)) != len(keys):
                why = f"Duplicate quota key in {keys}"
            for op in e.ops:
                why = why or invalid_value(op.key, 1.0 if op.remove else op.value)
        if why is not None and not code:
            code = ErrorCode.INVALID_REQUEST
        results.append(R.EntryData(error_code=code, error_message=why if code else None, entity=[
            R.EntityData(entity_type=t, entity_name=n) for t, n in pairs]))
        if not code:
            changes.append((entity_of(pairs), [(op.key, op.value, bool(op.remove)) for op in e.ops]))
    if changes and not req.validate_only:
        quotas = state.quotas
        try:
            quotas.store.apply(changes)
        except OSError as exc:
            log.error("could not persist client quotas: %s", exc)
            for r in results:
                if not r.error_code:
                    r.error_code, r.error_message = ErrorCode.UNKNOWN_SERVER_ERROR, f"could not persist: {exc}"
        else:
            quotas.changed()
            log.info("%s altered client quotas of %d entities", ctx.principal, len(changes))
    return R(throttle_time_ms=0, entries=results)
