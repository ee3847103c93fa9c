"""Groups and transactions: each coordinator is a pure state machine (no trio, no sockets, no clock: ``now_ms`` is
an argument) wrapped by a thin trio service that loads its state topic, appends its records and runs its timers.

- ``common/``: what they share: Kafka's settings (``config``), error codes (``errors``), keys, the internal topics
  their state lives in (``internal_topics``);
- ``classic/``: the classic consumer-group protocol and committed offsets (``coordinator``, ``group``, ``offsets``,
  the ``__consumer_offsets`` records and their ``loader``, the trio ``service``);
- ``consumer/``: KIP-848 consumer groups (``classic_members`` serves classic members of a consumer group);
- ``share/``: KIP-932 share groups and the ``__share_group_state`` records;
- ``txn/``: the transaction coordinator and its ``__transaction_state`` records;
- ``views.py``: a read-only view of every group of every type (console, metrics).

import-linter keeps the cores sans-I/O (pyproject.toml, "coordinator cores are sans-I/O").
"""
