"""Authorization (ACLs), Kafka's StandardAuthorizer semantics; the calls handlers make.

Every helper takes the request context and costs one attribute test when no authorizer is configured
(``ctx.broker.authorizer is None``): then everything is allowed, and authorized-operations fields carry every
operation the resource type supports, as Kafka's AuthHelper answers without an authorizer. Handlers keep
Kafka's choice of error per API (see each handler's docstring); the decision logic lives in
:mod:`kafkalite.authz.authorizer`.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TypeVar

from kafkalite.authz.acl import (
    ALL_OPS_BITS,
    ALL_OPS_BITS_4,
    CLUSTER_NAME,
    SUPPORTED_OPS,
    SUPPORTED_OPS_4,
    Op,
    ResourceType,
)
from kafkalite.authz.authorizer import Authorizer, from_config
from kafkalite_wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkalite.handlers.registry import RequestContext

T = TypeVar("T")

__all__ = [
    "CLUSTER",
    "GROUP",
    "TOPIC",
    "TXN",
    "Authorizer",
    "Op",
    "ResourceType",
    "allowed",
    "cluster_allowed",
    "cluster_ops",
    "denied",
    "from_config",
    "group_ops",
    "idempotent_write_allowed",
    "topic_ops",
]

TOPIC = ResourceType.TOPIC
GROUP = ResourceType.GROUP
CLUSTER = ResourceType.CLUSTER
TXN = ResourceType.TRANSACTIONAL_ID
USER = ResourceType.USER
DELEGATION_TOKEN = ResourceType.DELEGATION_TOKEN


def allowed(ctx: RequestContext, op: Op, rtype: ResourceType, name: str) -> bool:
    az = ctx.broker.authorizer
    return az is None or az.authorize(str(ctx.principal), ctx.client_host, op, rtype, name)


def cluster_allowed(ctx: RequestContext, op: Op) -> bool:
    az = ctx.broker.authorizer
    return az is None or az.authorize(str(ctx.principal), ctx.client_host, op, CLUSTER, CLUSTER_NAME)


def denied(ctx: RequestContext, op: Op, rtype: ResourceType, names: Iterable[str | None]) -> set[str]:
    """Those of ``names`` the principal may not ``op`` (Kafka's filterByAuthorized, inverted); empty without
    an authorizer. None names (topics given by id) are skipped."""
    az = ctx.broker.authorizer
    if az is None:
        return set()
    principal, host = str(ctx.principal), ctx.client_host
    return {n for n in set(names) if n is not None and not az.authorize(principal, host, op, rtype, n)}


def ops(ctx: RequestContext, rtype: ResourceType, name: str) -> int:
    """The operations the principal may do on a resource, as the profile's Kafka release lists them."""
    kafka4 = ctx.broker.config.release != "3.9"
    az = ctx.broker.authorizer
    if az is None:
        return (ALL_OPS_BITS_4 if kafka4 else ALL_OPS_BITS)[rtype]
    return az.authorized_ops(str(ctx.principal), ctx.client_host, rtype, name,
                             SUPPORTED_OPS_4 if kafka4 else SUPPORTED_OPS)


def topic_ops(ctx: RequestContext, name: str) -> int:
    return ops(ctx, TOPIC, name)


def group_ops(ctx: RequestContext, name: str) -> int:
    return ops(ctx, GROUP, name)


def cluster_ops(ctx: RequestContext) -> int:
    return ops(ctx, CLUSTER, CLUSTER_NAME)


def idempotent_write_allowed(ctx: RequestContext) -> bool:
    """Kafka 3.x (KIP-679): IDEMPOTENT_WRITE on the cluster, or WRITE on any topic."""
    az = ctx.broker.authorizer
    if az is None:
        return True
    principal, host = str(ctx.principal), ctx.client_host
    return (az.authorize(principal, host, Op.IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME)
            or az.authorize_any(principal, host, Op.WRITE, TOPIC))


def produce_denied(ctx: RequestContext, req: object) -> dict[str, int]:
    """Topic -> error code for the topics a Produce may not write (KafkaApis.handleProduceRequest): all of
    them TRANSACTIONAL_ID_AUTHORIZATION_FAILED when a transactional produce lacks WRITE on its id, else
    TOPIC_AUTHORIZATION_FAILED for those without WRITE."""
    names = [t.name for t in req.topic_data]  # type: ignore[attr-defined]
    txn_id = req.transactional_id  # type: ignore[attr-defined]
    if txn_id is not None and not allowed(ctx, Op.WRITE, TXN, txn_id):
        return dict.fromkeys(names, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    return dict.fromkeys(denied(ctx, Op.WRITE, TOPIC, names), ErrorCode.TOPIC_AUTHORIZATION_FAILED)


def may_create_topic(ctx: RequestContext, name: str) -> bool:
    """CREATE on the cluster, or else on the topic (Metadata auto-creation, CreateTopics)."""
    return cluster_allowed(ctx, Op.CREATE) or allowed(ctx, Op.CREATE, TOPIC, name)


def group_error(ctx: RequestContext, op: Op, group_id: str) -> int:
    """0, or GROUP_AUTHORIZATION_FAILED when the principal may not ``op`` the group."""
    if ctx.broker.authorizer is None or allowed(ctx, op, GROUP, group_id):
        return 0
    return ErrorCode.GROUP_AUTHORIZATION_FAILED


def txn_error(ctx: RequestContext, op: Op, transactional_id: str | None) -> int:
    """0, or TRANSACTIONAL_ID_AUTHORIZATION_FAILED when the principal may not ``op`` the transactional id."""
    if ctx.broker.authorizer is None or transactional_id is None or allowed(ctx, op, TXN, transactional_id):
        return 0
    return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def cluster_error(ctx: RequestContext, op: Op) -> int:
    """0, or CLUSTER_AUTHORIZATION_FAILED when the principal may not ``op`` the cluster."""
    if ctx.broker.authorizer is None or cluster_allowed(ctx, op):
        return 0
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def create_denied(ctx: RequestContext, names: Iterable[str]) -> set[str]:
    """The topics CreateTopics may not create: none with CREATE on the cluster, else those without CREATE on
    the topic (KafkaApis.handleCreateTopicsRequest)."""
    if ctx.broker.authorizer is None or cluster_allowed(ctx, Op.CREATE):
        return set()
    return denied(ctx, Op.CREATE, TOPIC, names)


CLUSTER_DENIED_MESSAGE = "Cluster authorization failed."   # Errors.CLUSTER_AUTHORIZATION_FAILED.message()
TOPIC_DENIED_MESSAGE = "Topic authorization failed."       # Errors.TOPIC_AUTHORIZATION_FAILED.message()


def denied_ids(ctx: RequestContext, op: Op, ids: Iterable[T], name_of: Callable[[T], str | None]) -> set[T]:
    """Those topic ids whose topic (``name_of(id)``; unknown ids are left to the handler) the principal may
    not ``op``: the share APIs name topics by id."""
    if ctx.broker.authorizer is None:
        return set()
    names = {i: name_of(i) for i in set(ids)}
    refused = denied(ctx, op, TOPIC, names.values())
    return {i for i, n in names.items() if n in refused}


def describable(ctx: RequestContext) -> Callable[[set[str]], set[str]] | None:
    """None without an authorizer, else a function keeping the topic names the principal may DESCRIBE:
    what a KIP-848 group's regex subscription may resolve to (Kafka 4.x
    ``GroupMetadataManager.filterTopicDescribeAuthorizedTopics``, with the context of the member whose
    heartbeat refreshed the regexes). It captures the principal and host, not the connection."""
    az = ctx.broker.authorizer
    if az is None:
        return None
    principal, host = str(ctx.principal), ctx.client_host
    return lambda names: {n for n in names if az.authorize(principal, host, Op.DESCRIBE, TOPIC, n)}


_CONFIG_TOPIC, _CONFIG_BROKER, _CONFIG_BROKER_LOGGER, _CONFIG_GROUP = 2, 4, 8, 32


def config_error(ctx: RequestContext, op: Op, config_resource_type: int, name: str) -> tuple[int, str | None]:
    """(0, None), or the authorization error of a Describe/AlterConfigs resource: TOPIC_AUTHORIZATION_FAILED
    for a topic, CLUSTER_AUTHORIZATION_FAILED for a broker or broker logger (ConfigResource types 2, 4, 8),
    GROUP_AUTHORIZATION_FAILED for a group (type 32: Kafka's AuthHelper authorizes the GROUP resource)."""
    if ctx.broker.authorizer is None:
        return 0, None
    if config_resource_type == _CONFIG_TOPIC and not allowed(ctx, op, TOPIC, name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, f"Authorization failed for topic {name}."
    if config_resource_type == _CONFIG_GROUP and not allowed(ctx, op, GROUP, name):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, f"Authorization failed for group {name}."
    if config_resource_type in (_CONFIG_BROKER, _CONFIG_BROKER_LOGGER) and not cluster_allowed(ctx, op):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
    return 0, None


def fetch_denied(ctx: RequestContext, req: object, names: list[str]) -> set[str]:
    """Topics a Fetch may not read: a follower's fetch (replica id >= 0) needs CLUSTER_ACTION, a consumer's
    READ on each topic (KafkaApis.handleFetchRequest)."""
    replica = getattr(getattr(req, "replica_state", None), "replica_id", -1) if ctx.version >= 15 \
        else getattr(req, "replica_id", -1)
    if replica is not None and replica >= 0:
        return set() if cluster_allowed(ctx, Op.CLUSTER_ACTION) else set(names)
    return denied(ctx, Op.READ, TOPIC, names)
