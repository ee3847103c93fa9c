"""Several brokers in one process: ``kafkalite.cluster.Cluster`` (a test bed for clients' failure paths).

    with Cluster(brokers=3) as cluster:
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
        ...
        cluster.sync.move_leader("orders", 0, 2)       # from plain Python (a test)
        cluster.sync.restart_broker(1)

Each broker has its own PLAINTEXT listener on 127.0.0.1, node id (1..N) and log dir ``<data>/broker-<id>`` in
Kafka's layout; all share one metadata room (``kafkalite.metadata``). Partitions are replicated (the
replication factor of CreateTopics, else ``default.replication.factor``, capped at the broker count; a cluster
defaults it and the internal topics' factors to min(3, N)), followers copy the leader's log, the high
watermark follows the ISR, and leaders and group/transaction coordinators are placed as Kafka places them
(``kafkalite.metadata.partitions``).

The operations are async methods (the ``ClusterControl`` protocol of ``kafkalite.faults.control``), run on
the cluster's trio loop: ``node_ids``, ``stop_broker``, ``start_broker``, ``restart_broker``, ``move_leader``,
``set_isr``, ``move_coordinator``, ``describe``. A cluster started with ``start()`` runs its loop in a daemon
thread (like ``kafkalite.Broker``); ``cluster.sync.<operation>(...)`` calls one from another thread and waits.
Bad requests raise ``ClusterOpError``.
"""
from __future__ import annotations

from kafkalite.cluster.api import Cluster, SyncCluster, serve_cluster
from kafkalite.cluster.runtime import ClusterOpError

__all__ = ["Cluster", "ClusterOpError", "SyncCluster", "serve_cluster"]
