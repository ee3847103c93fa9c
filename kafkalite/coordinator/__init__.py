"""Group coordinator: Kafka's classic consumer-group protocol and committed offsets.

``group.py`` etc. are pure state machines (no trio, no I/O, ``now_ms`` passed in);
``service.py`` is the thin trio glue the broker starts in its background nursery.
"""
