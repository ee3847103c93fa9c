"""Differential cases of the rest of the admin surface: CreatePartitions, DeleteRecords, AlterConfigs,
IncrementalAlterConfigs, DescribeCluster, DescribeLogDirs, AlterReplicaLogDirs, ListPartitionReassignments,
AlterPartitionReassignments, ElectLeaders, OffsetForLeaderEpoch, DescribeTopicPartitions, the ACL APIs (the reference
runs without an authorizer: SECURITY_DISABLED), Describe/AlterUserScramCredentials, Describe/AlterClientQuotas,
UpdateFeatures, ListConfigResources, DescribeQuorum and SaslHandshake / SaslAuthenticate on a PLAINTEXT listener;
success and error paths (unknown topics and partitions, invalid counts, configs, quotas and credentials, offsets
out of range).
"""

from __future__ import annotations

import random
import socket
import uuid
from collections.abc import Callable
from typing import Any

from differential.helpers import TOPIC, Ctx, create, produce_records, topic_of
from differential.wireconn import WireConn
from kafkalite_wire import messages as m

CP, DR, AC, IAC = m.CreatePartitionsRequest, m.DeleteRecordsRequest, m.AlterConfigsRequest, m.IncrementalAlterConfigsRequest
SET, DELETE, APPEND = 0, 1, 2


def per_version(case: str, ctx: Ctx) -> str:
    return topic_of(case, f"-v{ctx['version']}")


_ZERO = uuid.UUID(int=0)


def _controller(conn: WireConn, ctx: Ctx) -> None:
    ctx["controller"] = conn.request(m.MetadataRequest(topics=[]), 12).controller_id


def _add_unreachable_voter(v: int, ctx: Ctx) -> Any:
    with socket.socket() as s:   # a free port: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    L = m.AddRaftVoterRequest.Listener
    # a fresh voter id per request: Kafka's leader holds back a node id it failed to reach (reconnect backoff)
    return m.AddRaftVoterRequest(cluster_id=None, timeout_ms=5000, voter_id=random.randint(1000, 1 << 30),
                                 voter_directory_id=uuid.uuid4(), ack_when_committed=True,
                                 listeners=[L(name=n, host="127.0.0.1", port=port) for n in ("CONTROLLER", "PLAINTEXT")])


def add_cases(add: Callable[..., None]) -> None:
    def fresh(case: str, partitions: int = 1, records: int = 0) -> Callable[[WireConn, Ctx], None]:
        """A topic of this case and version (ctx["topic"]), with ``records`` records in partition 0."""
        def setup(conn: WireConn, ctx: Ctx) -> None:
            name = per_version(case, ctx)
            ctx["topic"] = name
            if create(conn, ctx, name, partitions) and records:
                produce_records(conn, name, 0, [b"r%d" % i for i in range(records)])
        return setup

    shared = topic_of("admin")

    def shared_setup(conn: WireConn, ctx: Ctx) -> None:
        if create(conn, ctx, shared, 2):
            produce_records(conn, shared, 0, [b"a", b"b", b"c"])

    # CreatePartitions
    def create_partitions(ctx: Ctx, name: str, count: int, validate_only: bool = False) -> Any:
        return CP(topics=[CP.CreatePartitionsTopic(name=name, count=count, assignments=None)], timeout_ms=30_000,
                  validate_only=validate_only)

    add("create_partitions_ok", m.CreatePartitionsRequest,
        lambda v, ctx: create_partitions(ctx, ctx["topic"], 3), fresh("cp-ok"), doc="1 -> 3 partitions")
    add("create_partitions_validate_only", m.CreatePartitionsRequest,
        lambda v, ctx: create_partitions(ctx, ctx["topic"], 4, True), fresh("cp-validate"),
        doc="1 -> 4, validate_only")
    add("create_partitions_decrease", m.CreatePartitionsRequest,
        lambda v, ctx: create_partitions(ctx, ctx["topic"], 1), fresh("cp-decrease", 2),
        doc="2 -> 1: INVALID_PARTITIONS")
    add("create_partitions_unknown_topic", m.CreatePartitionsRequest,
        lambda v, ctx: create_partitions(ctx, "diff-no-such-topic", 2), doc="UNKNOWN_TOPIC_OR_PARTITION")
    add("create_partitions_bad_assignment", m.CreatePartitionsRequest,
        lambda v, ctx: CP(topics=[CP.CreatePartitionsTopic(name=ctx["topic"], count=2, assignments=[
            CP.CreatePartitionsAssignment(broker_ids=[7])])], timeout_ms=30_000),
        fresh("cp-assign"), doc="a new partition on broker 7, which does not exist: INVALID_REPLICA_ASSIGNMENT")

    # DeleteRecords
    def delete_records(ctx: Ctx, name: str, partition: int, offset: int) -> Any:
        return DR(topics=[DR.DeleteRecordsTopic(name=name, partitions=[
            DR.DeleteRecordsPartition(partition_index=partition, offset=offset)])], timeout_ms=30_000)

    add("delete_records_ok", m.DeleteRecordsRequest, lambda v, ctx: delete_records(ctx, ctx["topic"], 0, 2),
        fresh("dr-ok", records=4), doc="records before offset 2 of 4")
    add("delete_records_to_end", m.DeleteRecordsRequest, lambda v, ctx: delete_records(ctx, ctx["topic"], 0, -1),
        fresh("dr-end", records=4), doc="offset -1: everything up to the high watermark")
    add("delete_records_out_of_range", m.DeleteRecordsRequest,
        lambda v, ctx: delete_records(ctx, ctx["topic"], 0, 99), fresh("dr-oor", records=4),
        doc="offset 99 of a 4-record partition: OFFSET_OUT_OF_RANGE")
    add("delete_records_unknown_partition", m.DeleteRecordsRequest,
        lambda v, ctx: delete_records(ctx, shared, 7, 0), shared_setup, doc="partition 7 of a 2-partition topic")

    # AlterConfigs (legacy) and IncrementalAlterConfigs
    def legacy(ctx: Ctx, rtype: int, name: str, configs: dict[str, str | None], validate_only: bool = False) -> Any:
        return AC(resources=[AC.AlterConfigsResource(resource_type=rtype, resource_name=name, configs=[
            AC.AlterableConfig(name=k, value=v) for k, v in configs.items()])], validate_only=validate_only)

    def incremental(ctx: Ctx, rtype: int, name: str, *ops: tuple[str, int, str | None],
                    validate_only: bool = False) -> Any:
        return IAC(resources=[IAC.AlterConfigsResource(resource_type=rtype, resource_name=name, configs=[
            IAC.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops])],
            validate_only=validate_only)

    add("alter_configs_topic", m.AlterConfigsRequest,
        lambda v, ctx: legacy(ctx, TOPIC, ctx["topic"], {"retention.ms": "7200000"}), fresh("ac-ok"),
        doc="retention.ms on a topic")
    add("alter_configs_invalid_value", m.AlterConfigsRequest,
        lambda v, ctx: legacy(ctx, TOPIC, ctx["topic"], {"retention.ms": "soon"}), fresh("ac-bad"),
        doc="INVALID_CONFIG")
    add("alter_configs_unknown_topic", m.AlterConfigsRequest,
        lambda v, ctx: legacy(ctx, TOPIC, "diff-no-such-topic", {"retention.ms": "1"}),
        doc="UNKNOWN_TOPIC_OR_PARTITION")
    add("alter_configs_validate_only", m.AlterConfigsRequest,
        lambda v, ctx: legacy(ctx, TOPIC, ctx["topic"], {"cleanup.policy": "compact"}, True), fresh("ac-validate"),
        doc="validate_only")
    add("incremental_alter_configs_set_delete", m.IncrementalAlterConfigsRequest,
        lambda v, ctx: incremental(ctx, TOPIC, ctx["topic"], ("retention.ms", SET, "7200000"),
                                   ("cleanup.policy", DELETE, None)), fresh("iac-ok"),
        doc="SET one config, DELETE another")
    add("incremental_alter_configs_append_non_list", m.IncrementalAlterConfigsRequest,
        lambda v, ctx: incremental(ctx, TOPIC, ctx["topic"], ("retention.ms", APPEND, "5")), fresh("iac-append"),
        doc="APPEND to a non-list config: INVALID_CONFIG")
    add("incremental_alter_configs_unknown_config", m.IncrementalAlterConfigsRequest,
        lambda v, ctx: incremental(ctx, TOPIC, ctx["topic"], ("no.such.config", SET, "1")), fresh("iac-unknown"),
        doc="INVALID_CONFIG")
    add("incremental_alter_configs_broker_static", m.IncrementalAlterConfigsRequest,
        lambda v, ctx: incremental(ctx, 4, "1", ("num.partitions", SET, "3"), validate_only=True),
        doc="a broker setting that cannot change at run time (validate_only)")
    # eligible leader replicas on (KIP-966): min.insync.replicas is cluster-level (kafkalite.metadata.elr_configs)
    add("incremental_alter_configs_cluster_min_isr_delete", m.IncrementalAlterConfigsRequest,
        lambda v, ctx: incremental(ctx, 4, "", ("min.insync.replicas", DELETE, None), validate_only=True),
        doc="removing the cluster-level min.insync.replicas while ELR is on: INVALID_CONFIG")
    add("incremental_alter_configs_broker_min_isr", m.IncrementalAlterConfigsRequest,
        lambda v, ctx: incremental(ctx, 4, "1", ("min.insync.replicas", SET, "1"), validate_only=True),
        doc="one broker's min.insync.replicas while ELR is on: INVALID_CONFIG")
    add("alter_configs_cluster_min_isr_removed", m.AlterConfigsRequest,
        lambda v, ctx: legacy(ctx, 4, "", {"log.retention.ms": "604800000"}, True),
        doc="legacy AlterConfigs replaces the cluster's dynamic settings: one without min.insync.replicas")
    add("describe_configs_cluster_min_isr", m.DescribeConfigsRequest,
        lambda v, ctx: m.DescribeConfigsRequest(resources=[m.DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=4, resource_name="", configuration_keys=["min.insync.replicas"])],
            include_synonyms=v >= 1, include_documentation=False),
        doc="the cluster-level min.insync.replicas the ELR bootstrap wrote: DYNAMIC_DEFAULT_BROKER_CONFIG")

    # broker loggers (KIP-412): resource type 8, Kafka's answers and messages (kafkalite.loggers); the root level
    # is set first so both sides hold the same one (the reference runs with root at ERROR)
    logger = 8

    def root_warn(conn: WireConn, ctx: Ctx) -> None:
        conn.request(incremental(ctx, logger, "1", ("root", SET, "WARN")), 1)

    add("describe_configs_broker_logger_keys", m.DescribeConfigsRequest,
        lambda v, ctx: m.DescribeConfigsRequest(resources=[m.DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=logger, resource_name="1", configuration_keys=["root", "no.such.logger"])],
            include_synonyms=True, include_documentation=True), root_warn, min_version=1,
        doc="the root logger's level after SET root=WARN; an unknown logger is left out")
    for case, name in (("empty", ""), ("not_a_number", "x"), ("other_broker", "2")):
        add(f"describe_configs_broker_logger_{case}", m.DescribeConfigsRequest,
            lambda v, ctx, name=name: m.DescribeConfigsRequest(resources=[
                m.DescribeConfigsRequest.DescribeConfigsResource(resource_type=logger, resource_name=name,
                                                                 configuration_keys=None)]),
            min_version=1, doc=f"broker logger resource name {name!r}: INVALID_REQUEST")
    for case, ops, doc in (
            ("set_root", (("root", SET, "WARN"),), "SET root=WARN"),
            ("unknown_logger", (("no.such.logger", SET, "DEBUG"),), "INVALID_CONFIG"),
            ("bad_level", (("root", SET, "debug"),), "a level Kafka does not know (lower case): INVALID_CONFIG"),
            ("null_level", (("root", SET, None),), "INVALID_REQUEST"),
            ("delete_root", (("root", DELETE, None),), "INVALID_REQUEST"),
            ("append", (("root", APPEND, "WARN"),), "INVALID_REQUEST"),
            ("duplicate", (("root", SET, "WARN"), ("root", SET, "INFO")), "INVALID_REQUEST")):
        add(f"incremental_alter_configs_broker_logger_{case}", m.IncrementalAlterConfigsRequest,
            lambda v, ctx, ops=ops: incremental(ctx, logger, "1", *ops, validate_only=True), doc=doc)
    for case, name in (("empty", ""), ("other_broker", "2")):
        add(f"incremental_alter_configs_broker_logger_{case}", m.IncrementalAlterConfigsRequest,
            lambda v, ctx, name=name: incremental(ctx, logger, name, ("root", SET, "WARN"), validate_only=True),
            doc=f"broker logger resource name {name!r}: INVALID_REQUEST")
    add("alter_configs_broker_logger", m.AlterConfigsRequest,
        lambda v, ctx: legacy(ctx, logger, "1", {"root": "WARN"}, True), doc="legacy AlterConfigs: INVALID_REQUEST")

    # DescribeCluster
    add("describe_cluster", m.DescribeClusterRequest,
        lambda v, ctx: m.DescribeClusterRequest(include_cluster_authorized_operations=True, endpoint_type=1),
        doc="the brokers, the controller, the cluster's authorized operations")
    add("describe_cluster_controllers", m.DescribeClusterRequest,
        lambda v, ctx: m.DescribeClusterRequest(endpoint_type=2), min_version=1,
        doc="endpoint type 2 (controllers) asked of a broker")

    # log dirs
    add("describe_log_dirs_topic", m.DescribeLogDirsRequest,
        lambda v, ctx: m.DescribeLogDirsRequest(topics=[m.DescribeLogDirsRequest.DescribableLogDirTopic(
            topic=shared, partitions=[0, 1, 9])]), shared_setup,
        doc="two partitions of a topic and one that does not exist", min_version=1)
    add("alter_replica_log_dirs_unknown_dir", m.AlterReplicaLogDirsRequest,
        lambda v, ctx: m.AlterReplicaLogDirsRequest(dirs=[m.AlterReplicaLogDirsRequest.AlterReplicaLogDir(
            path="/no/such/dir", topics=[m.AlterReplicaLogDirsRequest.AlterReplicaLogDirTopic(
                name=shared, partitions=[0])])]), shared_setup, doc="LOG_DIR_NOT_FOUND", min_version=1)

    # reassignments and elections
    add("list_partition_reassignments", m.ListPartitionReassignmentsRequest,
        lambda v, ctx: m.ListPartitionReassignmentsRequest(timeout_ms=30_000, topics=None), doc="none ongoing")
    APR = m.AlterPartitionReassignmentsRequest
    add("alter_partition_reassignments_other_broker", m.AlterPartitionReassignmentsRequest,
        lambda v, ctx: APR(timeout_ms=30_000, topics=[APR.ReassignableTopic(name=shared, partitions=[
            APR.ReassignablePartition(partition_index=0, replicas=[7])])]), shared_setup,
        doc="to broker 7, which does not exist")
    add("alter_partition_reassignments_cancel", m.AlterPartitionReassignmentsRequest,
        lambda v, ctx: APR(timeout_ms=30_000, topics=[APR.ReassignableTopic(name=shared, partitions=[
            APR.ReassignablePartition(partition_index=0, replicas=None)])]), shared_setup,
        doc="cancel (null replicas): NO_REASSIGNMENT_IN_PROGRESS")
    EL = m.ElectLeadersRequest
    add("elect_leaders_preferred", m.ElectLeadersRequest,
        lambda v, ctx: EL(election_type=0, topic_partitions=[EL.TopicPartitions(topic=shared, partitions=[0, 9])],
                          timeout_ms=30_000), shared_setup,
        doc="preferred election: ELECTION_NOT_NEEDED, and an unknown partition")

    # OffsetForLeaderEpoch, DescribeTopicPartitions
    OE = m.OffsetForLeaderEpochRequest
    add("offset_for_leader_epoch", m.OffsetForLeaderEpochRequest,
        lambda v, ctx: OE(replica_id=-1, topics=[OE.OffsetForLeaderTopic(topic=shared, partitions=[
            OE.OffsetForLeaderPartition(partition=0, current_leader_epoch=-1, leader_epoch=0),
            OE.OffsetForLeaderPartition(partition=9, current_leader_epoch=-1, leader_epoch=0)])]), shared_setup,
        doc="epoch 0's end offset, and an unknown partition", min_version=2)
    DTP = m.DescribeTopicPartitionsRequest
    add("describe_topic_partitions", m.DescribeTopicPartitionsRequest,
        lambda v, ctx: DTP(topics=[DTP.TopicRequest(name=shared), DTP.TopicRequest(name="diff-no-such-topic")],
                           response_partition_limit=2000), shared_setup,
        doc="a 2-partition topic and one that does not exist")

    # ACLs: the reference runs without an authorizer
    add("describe_acls_no_authorizer", m.DescribeAclsRequest,
        lambda v, ctx: m.DescribeAclsRequest(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                                             principal_filter=None, host_filter=None, operation=1,
                                             permission_type=1), doc="any ACL: SECURITY_DISABLED", min_version=1)
    CA = m.CreateAclsRequest
    add("create_acls_no_authorizer", m.CreateAclsRequest,
        lambda v, ctx: CA(creations=[CA.AclCreation(resource_type=2, resource_name="t", resource_pattern_type=3,
                                                    principal="User:alice", host="*", operation=3,
                                                    permission_type=3)]), doc="SECURITY_DISABLED", min_version=1)
    DA = m.DeleteAclsRequest
    add("delete_acls_no_authorizer", m.DeleteAclsRequest,
        lambda v, ctx: DA(filters=[DA.DeleteAclsFilter(resource_type_filter=1, resource_name_filter=None,
                                                       pattern_type_filter=1, principal_filter=None, host_filter=None,
                                                       operation=1, permission_type=1)]),
        doc="SECURITY_DISABLED", min_version=1)

    # SCRAM and quotas
    DU = m.DescribeUserScramCredentialsRequest
    add("describe_user_scram_credentials_all", m.DescribeUserScramCredentialsRequest,
        lambda v, ctx: DU(users=None), doc="no user has credentials")
    add("describe_user_scram_credentials_unknown", m.DescribeUserScramCredentialsRequest,
        lambda v, ctx: DU(users=[DU.UserName(name="diff-nobody")]), doc="RESOURCE_NOT_FOUND")
    DQ = m.DescribeClientQuotasRequest
    add("describe_client_quotas", m.DescribeClientQuotasRequest,
        lambda v, ctx: DQ(components=[DQ.ComponentData(entity_type="client-id", match_type=2, match=None)],
                          strict=False), doc="every client-id quota: none")
    add("describe_client_quotas_bad_match", m.DescribeClientQuotasRequest,
        lambda v, ctx: DQ(components=[DQ.ComponentData(entity_type="client-id", match_type=0, match=None)],
                          strict=False), doc="match type EXACT without a name: INVALID_REQUEST")
    AQ = m.AlterClientQuotasRequest

    def alter_quota(entity: list[tuple[str, str | None]], ops: list[tuple[str, float, bool]],
                    validate_only: bool = False) -> Any:
        return AQ(entries=[AQ.EntryData(entity=[AQ.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                                        ops=[AQ.OpData(key=k, value=val, remove=r) for k, val, r in ops])],
                  validate_only=validate_only)

    add("alter_client_quotas_validate_only", m.AlterClientQuotasRequest,
        lambda v, ctx: alter_quota([("user", "diff-user")], [("producer_byte_rate", 1024.0, False)], True),
        doc="a user's producer_byte_rate, validate_only")
    add("alter_client_quotas_set", m.AlterClientQuotasRequest,
        lambda v, ctx: alter_quota([("client-id", f"diff-client-v{ctx['version']}")],
                                   [("consumer_byte_rate", 2048.0, False)]), doc="a client-id's consumer_byte_rate")
    add("alter_client_quotas_remove_unset", m.AlterClientQuotasRequest,
        lambda v, ctx: alter_quota([("user", "diff-nobody")], [("producer_byte_rate", 0.0, True)]),
        doc="removing a quota that is not set")
    add("alter_client_quotas_unknown_key", m.AlterClientQuotasRequest,
        lambda v, ctx: alter_quota([("user", "diff-user")], [("diff.bogus", 1.0, False)]),
        doc="a quota key Kafka does not have")
    add("alter_client_quotas_unknown_entity_type", m.AlterClientQuotasRequest,
        lambda v, ctx: alter_quota([("diff-entity", "x")], [("producer_byte_rate", 1.0, False)]),
        doc="an entity type Kafka does not have")
    add("alter_client_quotas_negative", m.AlterClientQuotasRequest,
        lambda v, ctx: alter_quota([("user", "diff-user")], [("producer_byte_rate", -5.0, False)]),
        doc="a negative byte rate")
    AU = m.AlterUserScramCredentialsRequest

    def upsert(name: str, mechanism: int = 1, iterations: int = 4096) -> Any:
        return AU.ScramCredentialUpsertion(name=name, mechanism=mechanism, iterations=iterations,
                                           salt=b"s" * 16, salted_password=b"p" * 32)

    add("alter_user_scram_credentials_upsert", m.AlterUserScramCredentialsRequest,
        lambda v, ctx: AU(deletions=[], upsertions=[upsert(f"diff-scram-v{ctx['version']}")]),
        doc="a SCRAM-SHA-256 credential (4096 iterations)")
    add("alter_user_scram_credentials_delete_unknown", m.AlterUserScramCredentialsRequest,
        lambda v, ctx: AU(deletions=[AU.ScramCredentialDeletion(name="diff-nobody", mechanism=1)], upsertions=[]),
        doc="deleting a credential nobody has: RESOURCE_NOT_FOUND")
    add("alter_user_scram_credentials_low_iterations", m.AlterUserScramCredentialsRequest,
        lambda v, ctx: AU(deletions=[], upsertions=[upsert("diff-weak", iterations=100)]),
        doc="100 iterations (Kafka's minimum is 4096)")
    add("alter_user_scram_credentials_unknown_mechanism", m.AlterUserScramCredentialsRequest,
        lambda v, ctx: AU(deletions=[], upsertions=[upsert("diff-mech", mechanism=0)]),
        doc="mechanism 0 (UNKNOWN)")
    add("alter_user_scram_credentials_duplicate", m.AlterUserScramCredentialsRequest,
        lambda v, ctx: AU(deletions=[AU.ScramCredentialDeletion(name="diff-dup", mechanism=1)],
                          upsertions=[upsert("diff-dup")]),
        doc="the same user and mechanism deleted and upserted in one request")
    add("alter_user_scram_credentials_empty_name", m.AlterUserScramCredentialsRequest,
        lambda v, ctx: AU(deletions=[], upsertions=[upsert("")]), doc="an empty user name")

    # delegation tokens on PLAINTEXT (the runner's listener): DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, whatever follows
    CT = m.CreateDelegationTokenRequest
    add("create_delegation_token_plaintext", m.CreateDelegationTokenRequest,
        lambda v, ctx: CT(owner_principal_type=None, owner_principal_name=None,
                          renewers=[CT.CreatableRenewers(principal_type="User", principal_name="bob")],
                          max_lifetime_ms=-1), doc="DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", min_version=1)
    add("create_delegation_token_plaintext_owner", m.CreateDelegationTokenRequest,
        lambda v, ctx: CT(owner_principal_type="User", owner_principal_name="carol", renewers=[],
                          max_lifetime_ms=1000), doc="another owner (KIP-373): still not allowed", min_version=3)
    add("renew_delegation_token_plaintext", m.RenewDelegationTokenRequest,
        lambda v, ctx: m.RenewDelegationTokenRequest(hmac=b"diff-hmac", renew_period_ms=-1),
        doc="DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", min_version=1)
    add("expire_delegation_token_plaintext", m.ExpireDelegationTokenRequest,
        lambda v, ctx: m.ExpireDelegationTokenRequest(hmac=b"diff-hmac", expiry_time_period_ms=-1),
        doc="DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", min_version=1)
    DT = m.DescribeDelegationTokenRequest
    add("describe_delegation_token_plaintext", m.DescribeDelegationTokenRequest,
        lambda v, ctx: DT(owners=None), doc="every owner: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", min_version=1)
    add("describe_delegation_token_plaintext_owners", m.DescribeDelegationTokenRequest,
        lambda v, ctx: DT(owners=[DT.DescribeDelegationTokenOwner(principal_type="User", principal_name="alice")]),
        doc="one owner: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", min_version=1)

    # features, config resources, quorum, SASL on PLAINTEXT
    U = m.UpdateFeaturesRequest
    add("update_features_refused_downgrade", m.UpdateFeaturesRequest,
        lambda v, ctx: U(timeout_ms=30_000, feature_updates=[U.FeatureUpdateKey(
            feature="metadata.version", max_version_level=31, upgrade_type=2, allow_downgrade=True)],
            validate_only=True),
        doc="metadata.version 33 -> 31 (levels whose metadata changed in between)")
    add("update_features_unknown_feature", m.UpdateFeaturesRequest,
        lambda v, ctx: U(timeout_ms=30_000, feature_updates=[U.FeatureUpdateKey(
            feature="diff.no.such.feature", max_version_level=1, upgrade_type=1)], validate_only=True),
        doc="a feature no node supports")
    add("update_features_validate_only_ok", m.UpdateFeaturesRequest,
        lambda v, ctx: U(timeout_ms=30_000, feature_updates=[U.FeatureUpdateKey(
            feature="group.version", max_version_level=1, upgrade_type=1)], validate_only=True),
        doc="group.version 1 (its current level), validate_only", min_version=1)
    add("list_config_resources", m.ListConfigResourcesRequest,
        lambda v, ctx: m.ListConfigResourcesRequest(resource_types=[4, 8]), min_version=1,
        doc="the broker and broker-logger resources")
    add("describe_quorum", m.DescribeQuorumRequest,
        lambda v, ctx: m.DescribeQuorumRequest(topics=[m.DescribeQuorumRequest.TopicData(
            topic_name="__cluster_metadata", partitions=[m.DescribeQuorumRequest.PartitionData(partition_index=0)])]),
        doc="the metadata quorum: this node alone", fast=False)
    # the KRaft controller's admin APIs (kafkalite/handlers/kraft_control.py); left out: answers that name the
    # deployment in their message (the voter's directory id, the cluster id, the controller listener's name)
    add("unregister_broker_unknown", m.UnregisterBrokerRequest, lambda v, ctx: m.UnregisterBrokerRequest(broker_id=42),
        doc="a broker id that is not registered")
    add("unregister_controller_unknown", m.UnregisterControllerRequest,
        lambda v, ctx: m.UnregisterControllerRequest(controller_id=99), doc="a controller id that is not registered")
    add("unregister_controller_active", m.UnregisterControllerRequest,
        lambda v, ctx: m.UnregisterControllerRequest(controller_id=ctx["controller"]), _controller,
        doc="the active controller (this node) may not unregister itself")
    add("remove_raft_voter_invalid", m.RemoveRaftVoterRequest,
        lambda v, ctx: m.RemoveRaftVoterRequest(cluster_id=None, voter_id=5, voter_directory_id=_ZERO),
        doc="a voter key without a directory id")
    add("add_raft_voter_invalid", m.AddRaftVoterRequest,
        lambda v, ctx: m.AddRaftVoterRequest(cluster_id=None, timeout_ms=5000, voter_id=-1,
                                             voter_directory_id=uuid.uuid4(), listeners=[], ack_when_committed=True),
        doc="a negative voter id")
    add("add_raft_voter_unreachable", m.AddRaftVoterRequest, _add_unreachable_voter,
        doc="a new voter whose endpoint (under Kafka's CONTROLLER and kafkalite's PLAINTEXT names) refuses "
            "connections: the leader's ApiVersions to it fails")
    add("sasl_handshake_plaintext", m.SaslHandshakeRequest,
        lambda v, ctx: m.SaslHandshakeRequest(mechanism="PLAIN"),
        doc="SaslHandshake on a PLAINTEXT listener")
    add("sasl_authenticate_plaintext", m.SaslAuthenticateRequest,
        lambda v, ctx: m.SaslAuthenticateRequest(auth_bytes=b"\x00diff\x00secret"),
        doc="SaslAuthenticate on a PLAINTEXT listener (no handshake)")
