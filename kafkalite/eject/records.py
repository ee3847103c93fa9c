"""KRaft metadata records, encoded by hand (Kafka 4.4's ``metadata/src/main/resources/common/metadata/*.json``).

The wire codec is generated from Kafka's client/server message specs; the metadata record schemas are not among
them, and eject needs only a few, so they are written here field by field. Every record used is a *flexible*
version (compact strings and arrays: length + 1 as an unsigned varint, a tagged-field section after each struct,
left empty when every tagged field holds its default, as Kafka writes it).

A metadata record travels as the *value* of a record in a record batch (its key is null), framed the way
Kafka's ``AbstractApiMessageSerde`` frames it::

    frame version (unsigned varint, 1) | api key (unsigned varint) | record version (unsigned varint) | body

Records written, with the version Kafka 4.4 (metadata.version 4.4-IV2) writes:

==================================  =======  ==========================================================================
record                              key/ver  fields
==================================  =======  ==========================================================================
RegisterBrokerRecord                0 / v4   BrokerId, IsMigratingZkBroker, IncarnationId, BrokerEpoch, EndPoints[Name,
                                             Host, Port (uint16), SecurityProtocol], Features[Name, Min, Max], Rack,
                                             Fenced, InControlledShutdown; tagged LogDirs (tag 0)
TopicRecord                         2 / v0   Name, TopicId
PartitionRecord                     3 / v2   PartitionId, TopicId, Replicas, Isr, RemovingReplicas, AddingReplicas,
                                             Leader, LeaderEpoch, PartitionEpoch, Directories (v1+); tagged
                                             LeaderRecoveryState (0), EligibleLeaderReplicas (1), LastKnownElr (2)
                                             (the [] -> null defaults of the tagged fields are left out)
ConfigRecord                        4 / v0   ResourceType (int8), ResourceName, Name, Value (nullable)
DelegationTokenRecord               10 / v0  Owner, Requester, Renewers[], IssueTimestamp, MaxTimestamp,
                                             ExpirationTimestamp, TokenId (principals as ``Type:name``)
UserScramCredentialRecord           11 / v0  Name, Mechanism (int8: 1 SHA-256, 2 SHA-512), Salt, StoredKey, ServerKey,
                                             Iterations
FeatureLevelRecord                  12 / v0  Name, FeatureLevel (int16)
ClientQuotaRecord                   14 / v0  Entity[EntityType, EntityName (nullable: the default)], Key, Value
                                             (float64), Remove (bool)
ProducerIdsRecord                   15 / v0  BrokerId, BrokerEpoch, NextProducerId
AccessControlEntryRecord            18 / v0  Id, ResourceType, ResourceName, PatternType, Principal, Host, Operation,
                                             PermissionType (the int8 codes of ``kafkalite.authz.acl``)
==================================  =======  ==========================================================================

Control records (raft's own, in control batches): the key is int16 version 0 + int16 type (``ControlRecordType``:
LEADER_CHANGE 2, SNAPSHOT_HEADER 3, SNAPSHOT_FOOTER 4, KRAFT_VERSION 5, KRAFT_VOTERS 6), the value is the flexible
message with no frame: SnapshotHeaderRecord = Version int16 (0), LastContainedLogTimestamp int64; SnapshotFooterRecord
= Version int16 (0).
"""
from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kafkalite_wire.primitives import (
    uvarint,
    write_compact_bytes,
    write_compact_nullable_string,
    write_compact_string,
)

FRAME_VERSION = 1

REGISTER_BROKER, TOPIC, PARTITION, CONFIG, DELEGATION_TOKEN = 0, 2, 3, 4, 10
USER_SCRAM_CREDENTIAL, FEATURE_LEVEL, CLIENT_QUOTA, PRODUCER_IDS, ACCESS_CONTROL_ENTRY = 11, 12, 14, 15, 18

# ConfigResource.Type ids
CONFIG_TOPIC, CONFIG_BROKER, CONFIG_GROUP = 2, 4, 32
# org.apache.kafka.clients.admin.ScramMechanism
SCRAM_MECHANISMS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
# SecurityProtocol ids
SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

# ControlRecordType
SNAPSHOT_HEADER, SNAPSHOT_FOOTER = 3, 4

_I8, _I16, _I32, _I64, _F64 = (struct.Struct(f">{c}") for c in "bhiqd")
_NO_TAGS = b"\x00"


def _frame(api_key: int, version: int, body: bytes | bytearray) -> bytes:
    return uvarint(FRAME_VERSION) + uvarint(api_key) + uvarint(version) + bytes(body)


def _int32s(out: bytearray, values: Sequence[int]) -> None:
    out += uvarint(len(values) + 1)
    for v in values:
        out += _I32.pack(v)


def _uuids(out: bytearray, values: Sequence[uuid.UUID]) -> None:
    out += uvarint(len(values) + 1)
    for u in values:
        out += u.bytes


def _tags(fields: Iterable[tuple[int, bytes]]) -> bytes:
    items = sorted(fields)
    out = bytearray(uvarint(len(items)))
    for tag, payload in items:
        out += uvarint(tag) + uvarint(len(payload)) + payload
    return bytes(out)


# -- metadata records ------------------------------------------------------------------------------------------
def feature_level(name: str, level: int) -> bytes:
    out = bytearray()
    write_compact_string(out, name)
    out += _I16.pack(level) + _NO_TAGS
    return _frame(FEATURE_LEVEL, 0, out)


def topic(name: str, topic_id: uuid.UUID) -> bytes:
    out = bytearray()
    write_compact_string(out, name)
    out += topic_id.bytes + _NO_TAGS
    return _frame(TOPIC, 0, out)


def partition(topic_id: uuid.UUID, partition_id: int, *, replicas: Sequence[int], isr: Sequence[int], leader: int,
              leader_epoch: int, partition_epoch: int, directories: Sequence[uuid.UUID],
              elr: Sequence[int] | None = None, last_known_elr: Sequence[int] | None = None) -> bytes:
    """PartitionRecord v2 with no reassignment in flight; ``elr`` / ``last_known_elr`` are the tagged
    EligibleLeaderReplicas (1) and LastKnownElr (2), left out when None (their default)."""
    if len(directories) != len(replicas):
        raise ValueError("one directory per replica")
    out = bytearray(_I32.pack(partition_id))
    out += topic_id.bytes
    _int32s(out, replicas)
    _int32s(out, isr)
    _int32s(out, ())                 # RemovingReplicas
    _int32s(out, ())                 # AddingReplicas
    out += _I32.pack(leader) + _I32.pack(leader_epoch) + _I32.pack(partition_epoch)
    _uuids(out, directories)
    tagged = []                      # LeaderRecoveryState (tag 0) stays 0: recovered
    for tag, values in ((1, elr), (2, last_known_elr)):
        if values is not None:
            payload = bytearray()
            _int32s(payload, values)
            tagged.append((tag, bytes(payload)))
    out += _tags(tagged)
    return _frame(PARTITION, 2, out)


def config(resource_type: int, resource_name: str, name: str, value: str | None) -> bytes:
    out = bytearray(_I8.pack(resource_type))
    write_compact_string(out, resource_name)
    write_compact_string(out, name)
    write_compact_nullable_string(out, value)
    out += _NO_TAGS
    return _frame(CONFIG, 0, out)


def user_scram_credential(name: str, mechanism: int, salt: bytes, stored_key: bytes, server_key: bytes,
                          iterations: int) -> bytes:
    out = bytearray()
    write_compact_string(out, name)
    out += _I8.pack(mechanism)
    write_compact_bytes(out, salt)
    write_compact_bytes(out, stored_key)
    write_compact_bytes(out, server_key)
    out += _I32.pack(iterations) + _NO_TAGS
    return _frame(USER_SCRAM_CREDENTIAL, 0, out)


def client_quota(entity: Sequence[tuple[str, str | None]], key: str, value: float) -> bytes:
    out = bytearray(uvarint(len(entity) + 1))
    for etype, ename in entity:
        write_compact_string(out, etype)
        write_compact_nullable_string(out, ename)
        out += _NO_TAGS
    write_compact_string(out, key)
    out += _F64.pack(value) + b"\x00" + _NO_TAGS       # Remove = false
    return _frame(CLIENT_QUOTA, 0, out)


def producer_ids(next_producer_id: int, broker_id: int = -1, broker_epoch: int = -1) -> bytes:
    """As Kafka's image writes it: broker id and epoch -1, NextProducerId the first id of the next block."""
    out = _I32.pack(broker_id) + _I64.pack(broker_epoch) + _I64.pack(next_producer_id) + _NO_TAGS
    return _frame(PRODUCER_IDS, 0, out)


def access_control_entry(acl_id: uuid.UUID, resource_type: int, resource_name: str, pattern_type: int,
                         principal: str, host: str, operation: int, permission: int) -> bytes:
    out = bytearray(acl_id.bytes)
    out += _I8.pack(resource_type)
    write_compact_string(out, resource_name)
    out += _I8.pack(pattern_type)
    write_compact_string(out, principal)
    write_compact_string(out, host)
    out += _I8.pack(operation) + _I8.pack(permission) + _NO_TAGS
    return _frame(ACCESS_CONTROL_ENTRY, 0, out)


def delegation_token(token_id: str, owner: str, requester: str, renewers: Sequence[str], issue_ms: int,
                     max_ms: int, expiry_ms: int) -> bytes:
    """DelegationTokenRecord v0: principals as ``Type:name`` (KafkaPrincipal.toString); no HMAC (a broker derives
    it from the token id with its delegation.token.secret.key)."""
    out = bytearray()
    write_compact_string(out, owner)
    write_compact_string(out, requester)
    out += uvarint(len(renewers) + 1)
    for r in renewers:
        write_compact_string(out, r)
    out += _I64.pack(issue_ms) + _I64.pack(max_ms) + _I64.pack(expiry_ms)
    write_compact_string(out, token_id)
    out += _NO_TAGS
    return _frame(DELEGATION_TOKEN, 0, out)


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str
    host: str
    port: int
    security_protocol: str


def register_broker(broker_id: int, incarnation_id: uuid.UUID, broker_epoch: int, endpoints: Sequence[Endpoint],
                    features: Sequence[tuple[str, int, int]], log_dirs: Sequence[uuid.UUID], *,
                    fenced: bool = True, rack: str | None = None) -> bytes:
    """RegisterBrokerRecord v4: the broker as a controlled shutdown leaves it (fenced, not in controlled shutdown)."""
    out = bytearray(_I32.pack(broker_id))
    out += b"\x00"                    # IsMigratingZkBroker
    out += incarnation_id.bytes + _I64.pack(broker_epoch)
    out += uvarint(len(endpoints) + 1)
    for ep in endpoints:
        write_compact_string(out, ep.name)
        write_compact_string(out, ep.host)
        out += struct.pack(">Hh", ep.port, SECURITY_PROTOCOLS[ep.security_protocol]) + _NO_TAGS
    out += uvarint(len(features) + 1)
    for name, lo, hi in features:
        write_compact_string(out, name)
        out += struct.pack(">hh", lo, hi) + _NO_TAGS
    write_compact_nullable_string(out, rack)
    out += b"\x01" if fenced else b"\x00"
    out += b"\x00"                    # InControlledShutdown
    dirs = bytearray()
    _uuids(dirs, log_dirs)
    out += _tags([(0, bytes(dirs))])  # LogDirs; CordonedLogDirs (tag 1) null
    return _frame(REGISTER_BROKER, 4, out)


# -- control records -----------------------------------------------------------------------------------------
def control_key(record_type: int) -> bytes:
    return _I16.pack(0) + _I16.pack(record_type)


def snapshot_header(last_contained_log_timestamp: int) -> tuple[bytes, bytes]:
    """(key, value) of a SnapshotHeaderRecord v0."""
    return control_key(SNAPSHOT_HEADER), _I16.pack(0) + _I64.pack(last_contained_log_timestamp) + _NO_TAGS


def snapshot_footer() -> tuple[bytes, bytes]:
    return control_key(SNAPSHOT_FOOTER), _I16.pack(0) + _NO_TAGS
