"""``kafkalite dump-log``: Kafka's ``kafka-dump-log.sh`` (``kafka.tools.DumpLogSegments``, 3.9) line for line.

Theory of operation. Kafka's tool walks each ``--files`` entry and picks a dumper by the suffix after the last
dot: ``.log`` and ``.checkpoint`` (KRaft snapshots) print batches, ``.index`` / ``.timeindex`` print entries and
check them against the segment's ``.log``, ``.snapshot`` prints producer-state entries, ``.txnindex`` prints
aborted transactions; anything else is "Ignoring unknown file". Mismatches found while dumping indexes and
non-consecutive offsets found while deep-iterating logs are collected per file (keyed by the absolute path) and
printed to stderr only after all files were dumped, in the iteration order of Scala 2.13's ``mutable.HashMap``
(reproduced by ``java.ScalaHashMap``). Index mismatches and offset gaps are *prepended* to their lists in
Kafka, so they print newest first; time-index problems are appended and print oldest first.

Where Kafka's values come from (all reproduced here from the bytes, never from our own storage code):

* batch line: the v2 header fields as stored; ``lastSequence`` wraps like ``DefaultRecordBatch.incrementSequence``;
  ``deleteHorizonMs`` is Java's ``OptionalLong`` text (``OptionalLong.empty`` / ``OptionalLong[ms]``); the
  timestamp label is ``TimestampType.toString`` (``CreateTime`` / ``LogAppendTime``, attribute bit 3); ``crc``
  is the stored unsigned CRC-32C and ``isvalid`` recomputes it over attributes..end.
* record line (deep iteration; ``--print-data-log`` implies it): record timestamps are ``baseTimestamp + delta``
  or the batch's maxTimestamp for LogAppendTime batches; ``sequence`` is ``baseSequence + offsetDelta`` (wrapping)
  or -1; header keys and (with ``--print-data-log``) key/payload are decoded the way Java's
  ``new String(bytes, UTF_8)`` does it, including its replacement rules for malformed input (``java_utf8_decode``).
* segment iteration follows ``FileLogInputStream``: stop when fewer than 17 bytes remain or a batch does not fit
  (the rest is reported as "Found N invalid bytes at the end of NAME"); a size field below 14 is a
  ``CorruptRecordException`` that ends the tool.

Where Kafka's tool would die with an exception, we stop at the same point with the same output before it and
print one line of our own instead, ``kafkalite dump-log: error: FILE: what is wrong`` (no Java class names, no
stack trace), with exit status 1; the exception Kafka would throw (class and message) is kept on ``JavaError``
and ``dump_files(errors="java")`` prints it as the JVM does, which is what the tests compare with Kafka.

How each output was verified (storage/tests/test_dumplog*.py, test_java_checker.py):

* against Kafka code running on the JVM (kafka-clients 3.9.1 via storage/tests/java/FileRecordsCheck.java):
  every ``.log`` batch and record line, v2 and magic 0/1 (all codecs, control records including the KRaft
  JSON printed by Kafka's generated JsonConverters), Java's UTF-8 replacement rules, the producer-snapshot
  SchemaException texts, and (with scala-library 2.13) the Scala HashMap order of the error reports.
  Corrupted batches (random byte flips, truncations, header damage, corrupt gzip/snappy/lz4/zstd payloads,
  v2 and magic 0/1) end with the same partial output and the same exception line as Kafka's reader
  (``codecs.py`` delivers decompressed bytes with the granularity of Kafka's streams);
* against DumpLogSegments.scala / the storage module's Java sources by reading only (those classes are not
  in kafka-clients): the ``.index`` / ``.timeindex`` / ``.txnindex`` / ``.snapshot`` line formats, the
  mismatch report wording, ``--index-sanity-check`` messages (CorruptIndexException), the CRC and version
  messages of snapshots, and "Ignoring unknown file";
* not reproduced: stack-trace lines after the first exception line; codec-library messages beyond the cases in
  ``codecs.py`` (e.g. snappy-java's error codes other than FAILED_TO_UNCOMPRESS); the JVM running out of
  memory is modelled only as "compressed batch with >= 60M records" (kafka-run-class.sh's -Xmx256M);
  jopt-simple's exact ``--help`` layout; ``--cluster-metadata-decoder`` and ``--remote-log-metadata-decoder``
  (rejected as unrecognized); ``--key/value-decoder-class`` beyond Kafka's String/Integer/Long decoders (other
  classes fail like a missing class); the KIP-848 record types 3-8 under ``--offsets-decoder``. Output is
  UTF-8 (a JVM in a UTF-8 locale).
* ``--offsets-decoder`` / ``--transaction-log-decoder`` (``decoders.py``): the consumer-protocol JSON is checked
  against kafka-clients' generated JsonConverters and the transaction partitions' order against Scala's
  HashSet; the OffsetCommit/GroupMetadata/TransactionLog record JSON follows the same generator rules from
  their JSON specs (those converters live in Kafka's group-coordinator jar, not available here).
"""

from __future__ import annotations

from kafkalite_storage.dumplog.cli import main
from kafkalite_storage.dumplog.dumpers import Options, dump_files
from kafkalite_storage.dumplog.java import JavaError, ScalaHashMap, java_utf8_decode
from kafkalite_storage.dumplog.lines import batch_head, batch_line, batch_tail
from kafkalite_storage.dumplog.records import (
           Batch,
           Record,
           iter_file_batches,
           iter_legacy_records,
           iter_records,
)

__all__ = ["Batch", "JavaError", "Options", "Record", "ScalaHashMap", "batch_head", "batch_line", "batch_tail",
           "dump_files", "iter_file_batches", "iter_legacy_records", "iter_records", "java_utf8_decode", "main"]
