"""``--emulate-kafka 3.6``: API versions capped at Apache Kafka 3.6's (Fetch <= v15, Produce <= v9,
ListOffsets <= v8, no DescribeTopicPartitions), over a subset of the default profile's scenarios."""

from __future__ import annotations

from test_admin import (  # noqa: F401 - re-collected
    offsets_topic,
    test_list_offsets,
    test_metadata,
)
from test_produce_consume import test_idempotent_producer, test_roundtrip  # noqa: F401 - re-collected

KAFKALITE_ONLY = "--emulate-kafka 3.6: kafkalite imitating an older release's API versions"

KAFKALITE_EMULATE = "3.6"

# Kafka 3.6 also has only DescribeCluster v0 (v1 came in 3.7): same client bug as under 2.8.
KNOWN_CLIENT_GAPS = {
    "test_metadata[kafka-python]": "kafka-python 3.0.12 describe_cluster() reads DescribeCluster v1's "
                                   "endpoint_type from a v0 response (KeyError) - MATRIX.md gap G1",
}
