"""How does a kafkalite broker's content move into an Apache Kafka cluster, online and exactly?

``kafkalite migrate --to BOOTSTRAP`` (the command is :mod:`kafkalite.cli.migrate`) reads a *running* kafkalite
through the Kafka protocol and writes a Kafka cluster with a Kafka client, as MirrorMaker would, but keeping what
MirrorMaker loses: the same partitions, the records' timestamps and timestamp types, aborted transactions staying
aborted, and the committed offsets of every group translated record for record through an exact, persisted
source -> target offset map. Like the tools of :mod:`kafkalite.tools` it is a client and imports nothing of the
broker (an import-linter contract).

The modules, in the order a migration runs through them:

- :mod:`~kafkalite.migration.props`: the connection settings of both sides (``--command-config`` in Java's or
  librdkafka's names) for confluent-kafka and for the project's own wire client;
- :mod:`~kafkalite.migration.source`: the source read over the wire: metadata, raw Fetch at read_committed, each
  batch classified as Kafka's consumer does (data, aborted, control);
- :mod:`~kafkalite.migration.offsetmap`: the offset map, its journal (append-only, committed in groups, so a
  SIGKILL loses nothing that was reported durable) and the translation of committed offsets;
- :mod:`~kafkalite.migration.state`: the state directory (the plan, the journal, what was created);
- :mod:`~kafkalite.migration.topics`: target topics: partitions, replication, configs during and after the copy;
- :mod:`~kafkalite.migration.txns`: open transactions on the source: wait for them, or abort them;
- :mod:`~kafkalite.migration.copier`: the copy itself (idempotent producer; aborted runs inside aborted target
  transactions; resume after a kill by matching what the target already holds);
- :mod:`~kafkalite.migration.groups`, :mod:`~kafkalite.migration.access`: committed offsets, ACLs, SCRAM
  credentials and client quotas;
- :mod:`~kafkalite.migration.verify`: both sides read back and compared record by record;
- :mod:`~kafkalite.migration.progress`: the progress bar (records/s, ETA) or plain lines;
- :mod:`~kafkalite.migration.run`: the whole run, the dry run, and the report of what could not be carried.

User documentation: docs/user/moving-to-kafka.md ("Online: kafkalite migrate").
"""
