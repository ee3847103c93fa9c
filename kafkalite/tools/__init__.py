"""Command-line tools (``kafkalite topics|produce|consume|groups|configs``): Kafka clients built on
confluent-kafka, registered in :data:`kafkalite.cli.COMMANDS`; see :mod:`kafkalite.tools.common`."""
