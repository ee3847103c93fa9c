"""KIP-848 consumer groups (``group.protocol=consumer``): the broker computes assignments.

Members send ConsumerGroupHeartbeat instead of JoinGroup/SyncGroup. The coordinator keeps three epochs, as
Kafka's group coordinator (GroupMetadataManager.consumerGroupHeartbeat) does:

* the *group epoch*, bumped whenever the group's membership or subscriptions change (a member joins, leaves, is
  fenced, changes its subscription, or a subscribed topic is created / grows / is deleted);
* the *target assignment epoch*: the group epoch the server-side assignor (``uniform`` or ``range``,
  ``assignors.py``) last computed a target assignment for;
* each member's *member epoch*: the target epoch it has reconciled to (``reconcile.py``). A member gives up
  partitions leaving its target before it is given new ones, and a partition is given to a new owner only after
  its previous owner acknowledged revoking it (it no longer reports it as owned).

Modules: ``model`` (groups and members), ``assignors``, ``reconcile``, ``records`` (Kafka 4's
``__consumer_offsets`` record types 3-8), ``coordinator`` (the pure state machine: heartbeats, timers, offsets
validation, describe/list/delete, loading), ``service`` (trio glue).
"""
