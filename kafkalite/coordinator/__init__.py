"""Group coordinator: Kafka's classic consumer-group protocol and committed offsets.

- ``group.py``: one group's data (members, generation, protocol vote, offsets) and ``Pending`` results;
- ``coordinator.py``: the membership state machine (JoinGroup/SyncGroup/Heartbeat/LeaveGroup, timers);
- ``offsets.py``: OffsetCommit/OffsetFetch/OffsetDelete/DeleteGroups/Describe/List, retention, txn hooks;
- ``records.py``: ``__consumer_offsets`` key/value schemas and record-batch v2 framing;
- ``loader.py``: rebuilding the state from those records at startup;
- ``config.py`` / ``errors.py``: Kafka's settings and error codes;
- ``service.py``: the trio glue the broker runs (``GroupService(state)``).

Everything but ``service.py`` is sans-I/O: no trio, no sockets, no clock (``now_ms`` is an argument).
"""
