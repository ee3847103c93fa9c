"""How does a kafkalite data directory become an Apache Kafka one?

``kafkalite eject DATA_DIR --to NEW_DIR`` (:mod:`kafkalite.eject.command`) copies a stopped broker's data
directory -- already Kafka's on-disk format for partitions, ``__consumer_offsets`` and ``__transaction_state`` -- and
adds what a one-node KRaft Kafka 4.4 needs to start on it: ``meta.properties``, a metadata snapshot in
``__cluster_metadata-0`` holding what kafkalite keeps in its own ``kafkalite-*`` files (topics with their ids,
partitions, configs, producer ids, ACLs, SCRAM credentials, quotas), and a ``server.properties``.

- :mod:`~kafkalite.eject.source` reads the data directory under its ``.lock`` (nothing is written there);
- :mod:`~kafkalite.eject.records` encodes the KRaft metadata records by hand (their schemas are not among the
  message specs the wire codec is generated from);
- :mod:`~kafkalite.eject.snapshot` lays them out as a KRaft snapshot file, with record batches from storage;
- :mod:`~kafkalite.eject.image` decides which records the image holds;
- :mod:`~kafkalite.eject.properties` writes Kafka's settings from kafkalite's.
"""
