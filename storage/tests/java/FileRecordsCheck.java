/*
 * Kafka's own record reader as a test oracle for kafkalite's storage (Apache kafka-clients 3.9.1 on the classpath).
 *
 * Modes:
 *   FileRecordsCheck FILE.log...          open each file with FileRecords.open(file), iterate batches(), call
 *                                         ensureValid() on every batch, iterate (and ensureValid()) every record,
 *                                         and print one JSON object per batch plus one summary object per file.
 *                                         Exit status 1 if any batch is invalid or a record cannot be read.
 *   FileRecordsCheck --dump [--print-data-log] FILE.log...
 *                                         print the batch and record lines of kafka-dump-log.sh, with every value
 *                                         taken from kafka-clients' own accessors (an oracle for storage/dumplog);
 *                                         an exception ends that file's dump with the JVM's "Exception in thread
 *                                         "main" ..." line (on stdout, to keep the order) and exit status 1.
 *   FileRecordsCheck --decode-hex         read hex lines from stdin; print, per line, the UTF-16 code units (hex)
 *                                         of Java's new String(bytes, UTF_8).
 *   FileRecordsCheck --json NAME HEX...   for each hex blob (int16 version + message body), read it as
 *                                         org.apache.kafka.common.message.NAME at that version and print its
 *                                         generated JsonConverter output (needs Jackson on the classpath), or
 *                                         "ERROR <exception>".
 *   FileRecordsCheck --snapshot-schema FILE...
 *                                         read each producer-state snapshot with the same kafka-clients Schema
 *                                         that ProducerStateManager.readSnapshot uses; print "ok <entries>" or the
 *                                         SchemaException message (what kafka-dump-log reports for it).
 */
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.protocol.types.ArrayOf;
import org.apache.kafka.common.protocol.types.Field;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.SchemaException;
import org.apache.kafka.common.protocol.types.Struct;
import org.apache.kafka.common.protocol.types.Type;
import org.apache.kafka.common.record.AbstractLegacyRecordBatch;
import org.apache.kafka.common.record.ControlRecordType;
import org.apache.kafka.common.record.ControlRecordUtils;
import org.apache.kafka.common.record.EndTransactionMarker;
import org.apache.kafka.common.record.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.RecordBatch;

public class FileRecordsCheck {
    private static final PrintStream OUT = new PrintStream(System.out, false, StandardCharsets.UTF_8);

    public static void main(String[] args) throws Exception {
        int status;
        if (args.length > 0 && args[0].equals("--decode-hex")) {
            status = decodeHex();
        } else if (args.length > 1 && args[0].equals("--json")) {
            for (int i = 2; i < args.length; i++)
                OUT.println(messageJson(args[1], args[i]));
            status = 0;
        } else if (args.length > 0 && args[0].equals("--snapshot-schema")) {
            for (int i = 1; i < args.length; i++)
                OUT.println(snapshotSchema(new File(args[i])));
            status = 0;
        } else if (args.length > 0 && args[0].equals("--dump")) {
            boolean printData = false;
            int status0 = 0;
            for (int i = 1; i < args.length; i++) {
                if (args[i].equals("--print-data-log")) {
                    printData = true;
                    continue;
                }
                status0 |= dump(new File(args[i]), printData);
            }
            status = status0;
        } else {
            int status0 = 0;
            for (String a : args)
                status0 |= check(new File(a));
            status = status0;
        }
        OUT.flush();
        System.exit(status);
    }

    private static String q(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    private static int check(File file) throws Exception {
        int status = 0;
        long batches = 0, records = 0, validBytes = 0;
        String error = null;
        try (FileRecords fr = FileRecords.open(file, false)) {
            for (FileChannelRecordBatch batch : fr.batches()) {
                String batchError = null;
                int iterated = 0;
                try {
                    batch.ensureValid();
                    Iterator<Record> it = batch.iterator();
                    long prev = -1;
                    while (it.hasNext()) {
                        Record r = it.next();
                        r.ensureValid();
                        if (r.offset() < batch.baseOffset() || r.offset() > batch.lastOffset())
                            throw new IllegalStateException("record offset " + r.offset() + " outside batch");
                        if (prev >= 0 && r.offset() <= prev)
                            throw new IllegalStateException("record offsets not increasing at " + r.offset());
                        prev = r.offset();
                        iterated++;
                    }
                    Integer count = batch.countOrNull();
                    if (count != null && count != iterated)
                        throw new IllegalStateException("count " + count + " but iterated " + iterated);
                    if (batch.magic() >= RecordBatch.MAGIC_VALUE_V2 && count != null
                            && count > batch.lastOffset() - batch.baseOffset() + 1)
                        throw new IllegalStateException("count " + count + " exceeds lastOffsetDelta + 1");
                } catch (Exception e) {
                    batchError = e.getClass().getName() + ": " + e.getMessage();
                    status = 1;
                }
                batches++;
                records += iterated;
                validBytes += batch.sizeInBytes();
                OUT.println("{\"type\":\"batch\",\"file\":" + q(file.getPath())
                        + ",\"position\":" + batch.position()
                        + ",\"baseOffset\":" + batch.baseOffset()
                        + ",\"lastOffset\":" + batch.lastOffset()
                        + ",\"count\":" + batch.countOrNull()
                        + ",\"records\":" + iterated
                        + ",\"crc\":" + batch.checksum()
                        + ",\"isValid\":" + batch.isValid()
                        + ",\"magic\":" + batch.magic()
                        + ",\"size\":" + batch.sizeInBytes()
                        + ",\"compression\":" + q(batch.compressionType().name)
                        + ",\"timestampType\":" + q(batch.timestampType().toString())
                        + ",\"maxTimestamp\":" + batch.maxTimestamp()
                        + ",\"producerId\":" + batch.producerId()
                        + ",\"producerEpoch\":" + batch.producerEpoch()
                        + ",\"baseSequence\":" + batch.baseSequence()
                        + ",\"partitionLeaderEpoch\":" + batch.partitionLeaderEpoch()
                        + ",\"isTransactional\":" + batch.isTransactional()
                        + ",\"isControl\":" + batch.isControlBatch()
                        + ",\"error\":" + (batchError == null ? "null" : q(batchError)) + "}");
            }
            OUT.println("{\"type\":\"summary\",\"file\":" + q(file.getPath()) + ",\"batches\":" + batches
                    + ",\"records\":" + records + ",\"validBytes\":" + validBytes + ",\"sizeInBytes\":" + fr.sizeInBytes()
                    + ",\"error\":null}");
        } catch (Exception e) {
            error = e.getClass().getName() + ": " + e.getMessage();
            OUT.println("{\"type\":\"summary\",\"file\":" + q(file.getPath()) + ",\"batches\":" + batches
                    + ",\"records\":" + records + ",\"validBytes\":" + validBytes + ",\"sizeInBytes\":-1,\"error\":"
                    + q(error) + "}");
            status = 1;
        }
        return status;
    }

    /* The .log part of kafka-dump-log.sh, values from kafka-clients' accessors, printed piece by piece in the
     * tool's order so that an exception leaves the same partial output; the exception is then reported on
     * stderr the way the JVM reports an uncaught one (first line only) and the next file is dumped. */
    private static int dump(File file, boolean printData) throws Exception {
        OUT.println("Dumping " + file);
        try (FileRecords opened = FileRecords.open(file, false)) {
            FileRecords fr = opened.slice(0, Integer.MAX_VALUE);  // as DumpLogSegments.dumpLog does
            long validBytes = 0;
            for (FileChannelRecordBatch batch : fr.batches()) {
                boolean v2 = batch.magic() >= RecordBatch.MAGIC_VALUE_V2;
                if (v2)
                    OUT.print("baseOffset: " + batch.baseOffset() + " lastOffset: " + batch.lastOffset() + " count: "
                        + batch.countOrNull() + " baseSequence: " + batch.baseSequence() + " lastSequence: "
                        + batch.lastSequence() + " producerId: " + batch.producerId() + " producerEpoch: "
                        + batch.producerEpoch() + " partitionLeaderEpoch: " + batch.partitionLeaderEpoch()
                        + " isTransactional: " + batch.isTransactional() + " isControl: " + batch.isControlBatch()
                        + " deleteHorizonMs: " + batch.deleteHorizonMs());
                else
                    OUT.print("offset: " + batch.lastOffset());
                OUT.println(" position: " + validBytes + " " + batch.timestampType()
                        + ": " + batch.maxTimestamp() + " size: " + batch.sizeInBytes() + " magic: " + batch.magic()
                        + " compresscodec: " + batch.compressionType().name + " crc: " + batch.checksum()
                        + " isvalid: " + batch.isValid());
                for (Record record : batch) {
                    OUT.print("| offset: " + record.offset() + " " + batch.timestampType()
                            + ": " + record.timestamp() + " keySize: " + record.keySize() + " valueSize: "
                            + record.valueSize());
                    if (v2) {
                        StringBuilder keys = new StringBuilder("[");
                        Header[] headers = record.headers();
                        for (int i = 0; i < headers.length; i++)
                            keys.append(i == 0 ? "" : ",").append(headers[i].key());
                        OUT.print(" sequence: " + record.sequence() + " headerKeys: " + keys.append("]"));
                    }
                    if (record instanceof AbstractLegacyRecordBatch) {
                        AbstractLegacyRecordBatch r = (AbstractLegacyRecordBatch) record;
                        OUT.print(" isValid: " + r.isValid() + " crc: " + r.checksum() + "}");
                    }
                    if (batch.isControlBatch())
                        OUT.print(controlText(record));
                    else if (printData) {
                        // DumpLogSegments' parser decodes the key, then the value, then prints both
                        String key = record.hasKey() ? utf8(record.key()) : null;
                        String payload = record.hasValue() ? utf8(record.value()) : null;
                        if (key != null)
                            OUT.print(" key: " + key);
                        if (payload != null)
                            OUT.print(" payload: " + payload);
                    }
                    OUT.println();
                }
                validBytes += batch.sizeInBytes();
            }
            long trailing = fr.sizeInBytes() - validBytes;
            if (trailing > 0)
                OUT.println("Found " + trailing + " invalid bytes at the end of " + file.getName());
        } catch (Exception | OutOfMemoryError e) {
            // where the JVM would print the uncaught exception (stderr); inline here so the order is kept
            OUT.println("Exception in thread \"main\" " + e);
            return 1;
        }
        return 0;
    }

    private static String utf8(ByteBuffer b) {
        byte[] bytes = new byte[b.remaining()];
        b.duplicate().get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static String json(String converter, Object message, short version, String fallback) {
        // The generated JsonConverters need Jackson; use them when it is on the classpath.
        try {
            Class<?> c = Class.forName("org.apache.kafka.common.message." + converter);
            for (Method m : c.getMethods()) {
                if (m.getName().equals("write") && m.getParameterCount() == 2)
                    return m.invoke(null, message, version).toString();
            }
        } catch (Throwable ignored) {
            // fall through
        }
        return fallback;
    }

    private static String controlText(Record record) {
        short typeId = ControlRecordType.parseTypeId(record.key());
        ControlRecordType type = ControlRecordType.fromTypeId(typeId);
        switch (type) {
            case ABORT:
            case COMMIT: {
                EndTransactionMarker m = EndTransactionMarker.deserialize(record);
                return " endTxnMarker: " + m.controlType() + " coordinatorEpoch: " + m.coordinatorEpoch();
            }
            case SNAPSHOT_HEADER: {
                var h = ControlRecordUtils.deserializeSnapshotHeaderRecord(record);
                return " SnapshotHeader " + json("SnapshotHeaderRecordJsonConverter", h, h.version(),
                        "{\"version\":" + h.version() + ",\"lastContainedLogTimestamp\":" + h.lastContainedLogTimestamp() + "}");
            }
            case SNAPSHOT_FOOTER: {
                var f = ControlRecordUtils.deserializeSnapshotFooterRecord(record);
                return " SnapshotFooter " + json("SnapshotFooterRecordJsonConverter", f, f.version(),
                        "{\"version\":" + f.version() + "}");
            }
            case KRAFT_VERSION: {
                var k = ControlRecordUtils.deserializeKRaftVersionRecord(record);
                return " KRaftVersion " + json("KRaftVersionRecordJsonConverter", k, k.version(),
                        "{\"version\":" + k.version() + ",\"kRaftVersion\":" + k.kRaftVersion() + "}");
            }
            case KRAFT_VOTERS: {
                var v = ControlRecordUtils.deserializeVotersRecord(record);
                return " KRaftVoters " + json("VotersRecordJsonConverter", v, v.version(), v.toString());
            }
            default:
                return " controlType: " + type + "(" + typeId + ")";
        }
    }

    private static String messageJson(String name, String hex) {
        try {
            byte[] bytes = new byte[hex.length() / 2];
            for (int i = 0; i < bytes.length; i++)
                bytes[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
            ByteBuffer buf = ByteBuffer.wrap(bytes);
            short version = buf.getShort();
            Class<?> cls = Class.forName("org.apache.kafka.common.message." + name);
            Object msg = cls.getConstructor(org.apache.kafka.common.protocol.Readable.class, short.class)
                    .newInstance(new org.apache.kafka.common.protocol.ByteBufferAccessor(buf), version);
            Class<?> conv = Class.forName("org.apache.kafka.common.message." + name + "JsonConverter");
            for (Method m : conv.getMethods())
                if (m.getName().equals("write") && m.getParameterCount() == 2)
                    return m.invoke(null, msg, version).toString();
            return "ERROR no converter";
        } catch (java.lang.reflect.InvocationTargetException e) {
            return "ERROR " + e.getCause();
        } catch (Throwable e) {
            return "ERROR " + e;
        }
    }

    /* ProducerStateManager's PID_SNAPSHOT_MAP_SCHEMA, field for field (storage/.../ProducerStateManager.java). */
    private static String snapshotSchema(File file) throws Exception {
        Schema entry = new Schema(new Field("producer_id", Type.INT64), new Field("epoch", Type.INT16),
                new Field("last_sequence", Type.INT32), new Field("last_offset", Type.INT64),
                new Field("offset_delta", Type.INT32), new Field("timestamp", Type.INT64),
                new Field("coordinator_epoch", Type.INT32), new Field("current_txn_first_offset", Type.INT64));
        Schema map = new Schema(new Field("version", Type.INT16), new Field("crc", Type.UNSIGNED_INT32),
                new Field("producer_entries", new ArrayOf(entry)));
        try {
            Struct struct = map.read(ByteBuffer.wrap(java.nio.file.Files.readAllBytes(file.toPath())));
            return "ok " + struct.getArray("producer_entries").length;
        } catch (SchemaException e) {
            return "Snapshot failed schema validation: " + e.getMessage();
        }
    }

    private static int decodeHex() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            byte[] bytes = new byte[line.length() / 2];
            for (int i = 0; i < bytes.length; i++)
                bytes[i] = (byte) Integer.parseInt(line.substring(2 * i, 2 * i + 2), 16);
            String s = new String(bytes, StandardCharsets.UTF_8);
            StringBuilder b = new StringBuilder();
            for (int i = 0; i < s.length(); i++)
                b.append(String.format("%04x", (int) s.charAt(i)));
            OUT.println(b);
        }
        return 0;
    }
}
