"""KIP-1071 streams groups (``group.protocol=streams``): the broker assigns Kafka Streams tasks.

Members send StreamsGroupHeartbeat with their application's topology (subtopologies with their source,
repartition and changelog topics) instead of JoinGroup/SyncGroup. As Kafka's group coordinator
(``GroupMetadataManager.streamsGroupHeartbeat``) the coordinator:

* configures the topology against the broker's topics (``topology``): the number of tasks of each subtopology,
  the partitions of its internal topics, and the statuses Kafka answers (MISSING_SOURCE_TOPICS,
  MISSING_INTERNAL_TOPICS, INCORRECTLY_PARTITIONED_TOPICS, STALE_TOPOLOGY); the internal topics it finds
  missing are created by the service, as Kafka's broker creates them;
* keeps a group epoch, a target assignment epoch and member epochs, as for consumer groups;
* assigns active and standby tasks with a sticky assignor (``assignor``);
* reconciles each member towards its target: an active task leaves its previous owner (the owner stops
  reporting it) before it is given to another member (``coordinator``).

Modules: ``model`` (groups, members, task sets), ``topology``, ``assignor``, ``coordinator`` (the pure state
machine: heartbeats, timers, offset validation, describe/list/delete), ``service`` (trio glue).
"""
