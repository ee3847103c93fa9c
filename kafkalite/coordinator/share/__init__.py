"""Share groups (KIP-932, "queues for Kafka"): many consumers read the same partitions, each record is
acquired by one member under a time lock, acknowledged (accept / release / reject) and redelivered when
released or when its lock expires, up to a delivery-count limit.

- ``partition.py``: one share-partition's delivery state (pure state machine).
- ``records.py`` / ``state.py``: ShareSnapshot / ShareUpdate records of ``__share_group_state`` and replay.
- ``manager.py``: all share-partitions of the broker and their persistence (pure).
- ``group.py``: ShareGroupHeartbeat membership and the simple share assignor (pure).
- ``grouprecords.py`` / ``membership.py``: membership in ``__consumer_offsets`` (Kafka 4.3's ShareGroup*
  record types), written before each answer and restored at start.
- ``sessions.py``: share sessions and their epochs (pure).
- ``logread.py``, ``service.py``: the broker glue (log reads, long polls, timers under the supervisor).
- ``config.py``: broker ``group.share.*`` defaults and per-group ``share.*`` overrides.
"""
