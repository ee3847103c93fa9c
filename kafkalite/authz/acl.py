"""ACL vocabulary: Kafka's enums (wire codes), bindings and the filters CreateAcls/DescribeAcls/DeleteAcls use.

The codes are Kafka's (``org.apache.kafka.common.acl`` / ``.resource``): they travel on the wire as int8 and
authorized-operations bit fields are ``1 << operation code``.

Filter semantics (``AclBindingFilter.matches``): a resource type / operation / permission of ANY matches
anything, a null name / principal / host matches anything; the pattern type ANY matches both LITERAL and
PREFIXED bindings of exactly that name, MATCH matches every binding that would apply to a resource of that
name (LITERAL of that name or ``*``, PREFIXED whose prefix starts the name), LITERAL/PREFIXED only their own.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Op(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class Permission(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# Kafka's AclEntry.supportedOperations: what each resource type's authorized_operations may contain
SUPPORTED_OPS: dict[ResourceType, tuple[Op, ...]] = {
    ResourceType.TOPIC: (Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER, Op.DESCRIBE_CONFIGS,
                         Op.ALTER_CONFIGS),
    ResourceType.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE),
    ResourceType.CLUSTER: (Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS,
                           Op.IDEMPOTENT_WRITE, Op.ALTER, Op.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (Op.DESCRIBE, Op.WRITE),
    ResourceType.DELEGATION_TOKEN: (Op.DESCRIBE,),
    ResourceType.USER: (Op.CREATE_TOKENS, Op.DESCRIBE_TOKENS),
}


def ops_bitfield(ops: Iterable[int]) -> int:
    """Kafka's ``Utils.to32BitField`` of operation codes."""
    return sum(1 << int(op) for op in set(ops))


ALL_OPS_BITS: dict[ResourceType, int] = {rt: ops_bitfield(ops) for rt, ops in SUPPORTED_OPS.items()}
#: Kafka 4.x adds a group's configs (KIP-848 group configs) to the operations a group supports (AclEntry)
SUPPORTED_OPS_4: dict[ResourceType, tuple[Op, ...]] = {
    **SUPPORTED_OPS, ResourceType.GROUP: (*SUPPORTED_OPS[ResourceType.GROUP], Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS)}
ALL_OPS_BITS_4: dict[ResourceType, int] = {rt: ops_bitfield(ops) for rt, ops in SUPPORTED_OPS_4.items()}

# an ALLOW of any of these grants DESCRIBE / DESCRIBE_CONFIGS too (Kafka's implied operations)
IMPLIES_DESCRIBE = frozenset({Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER})
IMPLIES_DESCRIBE_CONFIGS = frozenset({Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS})


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry (the principal as Kafka writes it)."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Op
    permission: Permission

    def to_json(self) -> list[object]:
        return [int(self.resource_type), self.name, int(self.pattern_type), self.principal, self.host,
                int(self.operation), int(self.permission)]

    @classmethod
    def from_json(cls, row: list[object]) -> AclBinding:
        rt, name, pt, principal, host, op, perm = row
        return cls(ResourceType(int(rt)), str(name), PatternType(int(pt)), str(principal),  # type: ignore[call-overload]
                   str(host), Op(int(op)), Permission(int(perm)))  # type: ignore[call-overload]


def invalid_binding(b: AclBinding) -> str | None:
    """Why CreateAcls refuses ``b`` (INVALID_REQUEST), in Kafka's words (AclControlManager.validateNewAcl and
    the CLUSTER-name / empty-name checks of its ACL API), or None."""
    if b.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {b.resource_type.name}"
    if b.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {b.pattern_type.name}"
    if b.operation in (Op.UNKNOWN, Op.ANY):
        return f"Invalid operation {b.operation.name}"
    if b.permission not in (Permission.ALLOW, Permission.DENY):
        return f"Invalid permissionType {b.permission.name}"
    if not b.name:
        return "Resource name should not be empty"
    if b.resource_type == ResourceType.CLUSTER and b.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if b.operation not in SUPPORTED_OPS[b.resource_type] and b.operation != Op.ALL:
        return f"Operation {b.operation.name} is not valid for resource type {b.resource_type.name}"
    kind, sep, _name = b.principal.partition(":")
    if not sep or not kind:
        return f"Could not parse principal from `{b.principal}` (no colon is present separating the " \
               "principal type from the principal name)"
    if not b.host:
        return "Invalid empty host"
    return None


def enum_or_unknown(enum: type[IntEnum], code: int) -> IntEnum:
    try:
        return enum(code)
    except ValueError:
        return enum(0)


@dataclass(frozen=True, slots=True)
class AclFilter:
    """An AclBindingFilter: None fields match anything (see the module docstring)."""

    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: Op
    permission: Permission

    def invalid(self) -> str | None:
        """Why a filter cannot match anything well-defined (Kafka answers INVALID_REQUEST), or None."""
        if self.resource_type == ResourceType.UNKNOWN:
            return "Resource type is UNKNOWN"
        if self.pattern_type == PatternType.UNKNOWN:
            return "Pattern type is UNKNOWN"
        if self.operation == Op.UNKNOWN:
            return "Operation is UNKNOWN"
        if self.permission == Permission.UNKNOWN:
            return "Permission type is UNKNOWN"
        return None

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != b.resource_type:
            return False
        pt = self.pattern_type
        if pt not in (PatternType.ANY, PatternType.MATCH) and pt != b.pattern_type:
            return False
        if self.name is not None:
            if pt in (PatternType.ANY, b.pattern_type):
                if self.name != b.name:
                    return False
            elif b.pattern_type == PatternType.LITERAL:   # MATCH
                if self.name != b.name and b.name != WILDCARD:
                    return False
            elif not self.name.startswith(b.name):        # MATCH against PREFIXED
                return False
        if self.principal is not None and self.principal != b.principal:
            return False
        if self.host is not None and self.host != b.host:
            return False
        if self.operation != Op.ANY and self.operation != b.operation:
            return False
        return self.permission == Permission.ANY or self.permission == b.permission
