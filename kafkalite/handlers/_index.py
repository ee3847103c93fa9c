"""Which module of this package serves which API key, and the versions it serves: the broker imports a handler
module when its API is first requested (``registry.lookup``) rather than all sixty at start, and ApiVersions
advertises from this table until then. ``test_handler_index_matches_registrations`` in
``kafkalite/tests/e2e/test_lazy_start.py`` checks it against what the modules' ``@handler`` decorators register
(``load_all()``), so it cannot drift; it prints the corrected table. ``docs/reference/apis.md`` is generated from
it (``tools/gen_reference.py``).
"""
from __future__ import annotations

# api_key -> (module in kafkalite.handlers, min_version, max_version)
INDEX: dict[int, tuple[str, int, int]] = {
    0: ("produce", 3, 13),  # Produce
    1: ("fetch", 4, 18),  # Fetch
    2: ("list_offsets", 0, 11),  # ListOffsets
    3: ("metadata", 0, 13),  # Metadata
    8: ("offset_commit", 0, 10),  # OffsetCommit
    9: ("offset_fetch", 0, 10),  # OffsetFetch
    10: ("find_coordinator", 0, 6),  # FindCoordinator
    11: ("join_group", 0, 9),  # JoinGroup
    12: ("heartbeat", 0, 4),  # Heartbeat
    13: ("leave_group", 0, 5),  # LeaveGroup
    14: ("sync_group", 0, 5),  # SyncGroup
    15: ("describe_groups", 0, 6),  # DescribeGroups
    16: ("list_groups", 0, 5),  # ListGroups
    17: ("sasl_handshake", 0, 1),  # SaslHandshake
    18: ("api_versions", 0, 5),  # ApiVersions
    19: ("create_topics", 0, 7),  # CreateTopics
    20: ("delete_topics", 0, 6),  # DeleteTopics
    21: ("delete_records", 0, 2),  # DeleteRecords
    22: ("init_producer_id", 0, 5),  # InitProducerId
    23: ("offset_for_leader_epoch", 0, 4),  # OffsetForLeaderEpoch
    24: ("add_partitions_to_txn", 0, 5),  # AddPartitionsToTxn
    25: ("add_offsets_to_txn", 0, 4),  # AddOffsetsToTxn
    26: ("end_txn", 0, 5),  # EndTxn
    27: ("write_txn_markers", 0, 2),  # WriteTxnMarkers
    28: ("txn_offset_commit", 0, 6),  # TxnOffsetCommit
    29: ("describe_acls", 0, 3),  # DescribeAcls
    30: ("create_acls", 0, 3),  # CreateAcls
    31: ("delete_acls", 0, 3),  # DeleteAcls
    32: ("describe_configs", 0, 4),  # DescribeConfigs
    33: ("alter_configs", 0, 2),  # AlterConfigs
    34: ("alter_replica_log_dirs", 0, 2),  # AlterReplicaLogDirs
    35: ("describe_log_dirs", 0, 5),  # DescribeLogDirs
    36: ("sasl_authenticate", 0, 2),  # SaslAuthenticate
    37: ("create_partitions", 0, 3),  # CreatePartitions
    38: ("create_delegation_token", 1, 3),  # CreateDelegationToken
    39: ("renew_delegation_token", 1, 2),  # RenewDelegationToken
    40: ("expire_delegation_token", 1, 2),  # ExpireDelegationToken
    41: ("describe_delegation_token", 1, 3),  # DescribeDelegationToken
    42: ("delete_groups", 0, 3),  # DeleteGroups
    43: ("elect_leaders", 0, 2),  # ElectLeaders
    44: ("incremental_alter_configs", 0, 1),  # IncrementalAlterConfigs
    45: ("alter_partition_reassignments", 0, 1),  # AlterPartitionReassignments
    46: ("list_partition_reassignments", 0, 0),  # ListPartitionReassignments
    47: ("offset_delete", 0, 0),  # OffsetDelete
    48: ("describe_client_quotas", 0, 1),  # DescribeClientQuotas
    49: ("alter_client_quotas", 0, 1),  # AlterClientQuotas
    50: ("describe_user_scram_credentials", 0, 0),  # DescribeUserScramCredentials
    51: ("alter_user_scram_credentials", 0, 0),  # AlterUserScramCredentials
    55: ("describe_quorum", 0, 2),  # DescribeQuorum
    57: ("update_features", 0, 2),  # UpdateFeatures
    60: ("describe_cluster", 0, 2),  # DescribeCluster
    61: ("describe_producers", 0, 0),  # DescribeProducers
    64: ("kraft_control", 0, 0),  # UnregisterBroker
    65: ("describe_transactions", 0, 0),  # DescribeTransactions
    66: ("list_transactions", 0, 2),  # ListTransactions
    68: ("consumer_group_heartbeat", 0, 1),  # ConsumerGroupHeartbeat
    69: ("consumer_group_describe", 0, 1),  # ConsumerGroupDescribe
    74: ("list_config_resources", 0, 1),  # ListConfigResources
    75: ("describe_topic_partitions", 0, 0),  # DescribeTopicPartitions
    76: ("share_group_heartbeat", 0, 1),  # ShareGroupHeartbeat
    77: ("share_group_describe", 0, 1),  # ShareGroupDescribe
    78: ("share_fetch", 0, 2),  # ShareFetch
    79: ("share_acknowledge", 0, 2),  # ShareAcknowledge
    80: ("kraft_control", 0, 1),  # AddRaftVoter
    81: ("kraft_control", 0, 0),  # RemoveRaftVoter
    83: ("initialize_share_group_state", 0, 0),  # InitializeShareGroupState
    84: ("read_share_group_state", 0, 0),  # ReadShareGroupState
    85: ("write_share_group_state", 0, 1),  # WriteShareGroupState
    86: ("delete_share_group_state", 0, 0),  # DeleteShareGroupState
    87: ("read_share_group_state_summary", 0, 1),  # ReadShareGroupStateSummary
    88: ("streams_group_heartbeat", 0, 1),  # StreamsGroupHeartbeat
    89: ("streams_group_describe", 0, 1),  # StreamsGroupDescribe
    90: ("describe_share_group_offsets", 0, 1),  # DescribeShareGroupOffsets
    91: ("alter_share_group_offsets", 0, 0),  # AlterShareGroupOffsets
    92: ("delete_share_group_offsets", 0, 0),  # DeleteShareGroupOffsets
    93: ("streams_group_topology_description_update", 0, 0),  # StreamsGroupTopologyDescriptionUpdate
    94: ("kraft_control", 0, 0),  # UnregisterController
}
