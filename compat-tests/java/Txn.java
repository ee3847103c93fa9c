import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** Transactional KafkaProducers kept open between commands, by name (so a test can run two at once). */
final class Txn {
    private static final Map<String, KafkaProducer<byte[], byte[]>> PRODUCERS = new HashMap<>();

    private Txn() {}

    /** {"name", "bootstrap", "transactional_id", "config"?}: create the producer and initTransactions(). */
    @SuppressWarnings("unchecked")
    static Map<String, Object> open(Map<String, Object> c) {
        Properties p = new Properties();
        p.put("bootstrap.servers", c.get("bootstrap"));
        p.put("transactional.id", c.get("transactional_id"));
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("linger.ms", "5");
        Map<String, Object> extra = (Map<String, Object>) c.get("config");
        if (extra != null) for (Map.Entry<String, Object> e : extra.entrySet()) p.put(e.getKey(), String.valueOf(e.getValue()));
        String name = (String) c.get("name");
        close(c);
        KafkaProducer<byte[], byte[]> prod = new KafkaProducer<>(p);
        PRODUCERS.put(name, prod);
        return run(() -> prod.initTransactions());
    }

    /** {"name", "action": begin|send|commit|abort|send_offsets, "records"?, "group"?, "offsets"?}. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> step(Map<String, Object> c) {
        KafkaProducer<byte[], byte[]> prod = PRODUCERS.get((String) c.get("name"));
        if (prod == null) throw new IllegalArgumentException("no producer " + c.get("name"));
        String action = (String) c.get("action");
        switch (action) {
            case "begin": return run(prod::beginTransaction);
            case "commit": return run(prod::commitTransaction);
            case "abort": return run(prod::abortTransaction);
            case "send": return run(() -> {
                List<Future<RecordMetadata>> futs = new ArrayList<>();
                for (Object o : (List<Object>) c.get("records")) {
                    Map<String, Object> r = (Map<String, Object>) o;
                    byte[] v = Base64.getDecoder().decode((String) r.get("value"));
                    futs.add(prod.send(new ProducerRecord<>((String) r.get("topic"),
                            ((Number) r.get("partition")).intValue(), null, v)));
                }
                prod.flush();
                for (Future<RecordMetadata> f : futs) f.get();
            });
            case "send_offsets": return run(() -> {
                Map<TopicPartition, OffsetAndMetadata> offs = new HashMap<>();
                for (Object o : (List<Object>) c.get("offsets")) {
                    List<Object> t = (List<Object>) o;
                    offs.put(new TopicPartition((String) t.get(0), ((Number) t.get(1)).intValue()),
                            new OffsetAndMetadata(((Number) t.get(2)).longValue()));
                }
                prod.sendOffsetsToTransaction(offs, new ConsumerGroupMetadata((String) c.get("group")));
            });
            default: throw new IllegalArgumentException("unknown action " + action);
        }
    }

    /**
     * Consume-transform-produce in a consumer group (KIP-447): {"bootstrap", "transactional_id", "group", "src",
     * "dst", "batch", "total", "abort_first"}. A subscribed read_committed KafkaConsumer feeds a transactional
     * producer; each batch's upper-cased values and the consumer's next offsets (sendOffsetsToTransaction with
     * consumer.groupMetadata(): generation and member id) go in one transaction. With abort_first the first
     * transaction is aborted and the consumer rewinds to the group's committed offsets, as an application does
     * after a failure.
     */
    static Map<String, Object> consumeTransformProduce(Map<String, Object> c) throws Exception {
        Properties cp = new Properties();
        cp.put("bootstrap.servers", c.get("bootstrap"));
        cp.put("group.id", c.get("group"));
        cp.put("isolation.level", "read_committed");
        cp.put("enable.auto.commit", "false");
        cp.put("auto.offset.reset", "earliest");
        cp.put("max.poll.records", String.valueOf(c.get("batch")));
        cp.put("key.deserializer", org.apache.kafka.common.serialization.ByteArrayDeserializer.class.getName());
        cp.put("value.deserializer", org.apache.kafka.common.serialization.ByteArrayDeserializer.class.getName());
        Properties pp = new Properties();
        pp.put("bootstrap.servers", c.get("bootstrap"));
        pp.put("transactional.id", c.get("transactional_id"));
        pp.put("key.serializer", ByteArraySerializer.class.getName());
        pp.put("value.serializer", ByteArraySerializer.class.getName());
        String src = (String) c.get("src");
        String dst = (String) c.get("dst");
        long total = ((Number) c.get("total")).longValue();
        boolean abortNext = Boolean.TRUE.equals(c.get("abort_first"));
        long done = 0, commits = 0, aborts = 0;
        long deadline = System.currentTimeMillis() + 60000;
        try (org.apache.kafka.clients.consumer.KafkaConsumer<byte[], byte[]> cons =
                     new org.apache.kafka.clients.consumer.KafkaConsumer<>(cp);
             KafkaProducer<byte[], byte[]> prod = new KafkaProducer<>(pp)) {
            prod.initTransactions();
            cons.subscribe(java.util.Collections.singletonList(src));
            while (done < total && System.currentTimeMillis() < deadline) {
                org.apache.kafka.clients.consumer.ConsumerRecords<byte[], byte[]> recs =
                        cons.poll(java.time.Duration.ofMillis(500));
                if (recs.isEmpty()) continue;
                prod.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                for (org.apache.kafka.clients.consumer.ConsumerRecord<byte[], byte[]> r : recs) {
                    String v = new String(r.value(), java.nio.charset.StandardCharsets.UTF_8).toUpperCase();
                    prod.send(new ProducerRecord<>(dst, 0, null, v.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
                    next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                prod.sendOffsetsToTransaction(next, cons.groupMetadata());
                prod.flush();
                if (abortNext) {
                    abortNext = false;
                    prod.abortTransaction();
                    aborts++;
                    Map<TopicPartition, OffsetAndMetadata> committed = cons.committed(cons.assignment());
                    for (TopicPartition tp : cons.assignment()) {
                        OffsetAndMetadata om = committed.get(tp);
                        if (om == null) cons.seekToBeginning(java.util.Collections.singletonList(tp));
                        else cons.seek(tp, om.offset());
                    }
                } else {
                    prod.commitTransaction();
                    commits++;
                    done += recs.count();
                }
            }
        }
        Map<String, Object> res = new LinkedHashMap<>();
        res.put("processed", done);
        res.put("commits", commits);
        res.put("aborts", aborts);
        return res;
    }

    /** {"bootstrap", "ids"}: Admin.describeTransactions + listTransactions. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> describe(Map<String, Object> c) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", c.get("bootstrap"));
        Map<String, Object> res = new LinkedHashMap<>();
        try (Admin admin = Admin.create(p)) {
            Map<String, Object> described = new LinkedHashMap<>();
            Map<String, TransactionDescription> d =
                    admin.describeTransactions((List<String>) c.get("ids")).all().get(30, TimeUnit.SECONDS);
            for (Map.Entry<String, TransactionDescription> e : d.entrySet()) {
                TransactionDescription t = e.getValue();
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("state", t.state().toString());
                m.put("producer_id", t.producerId());
                m.put("producer_epoch", (long) t.producerEpoch());
                m.put("timeout_ms", (long) t.transactionTimeoutMs());
                m.put("start_ms", t.transactionStartTimeMs().isPresent() ? t.transactionStartTimeMs().getAsLong() : -1L);
                List<Object> tps = new ArrayList<>();
                for (TopicPartition tp : t.topicPartitions()) tps.add(tp.topic() + ":" + tp.partition());
                java.util.Collections.sort(tps, (a, b) -> ((String) a).compareTo((String) b));
                m.put("partitions", tps);
                described.put(e.getKey(), m);
            }
            res.put("described", described);
            Map<String, Object> listed = new LinkedHashMap<>();
            for (TransactionListing l : admin.listTransactions().all().get(30, TimeUnit.SECONDS))
                listed.put(l.transactionalId(), l.state().toString());
            res.put("listed", listed);
        }
        return res;
    }

    static Map<String, Object> close(Map<String, Object> c) {
        KafkaProducer<byte[], byte[]> prod = PRODUCERS.remove((String) c.get("name"));
        if (prod != null) prod.close(java.time.Duration.ofSeconds(5));
        return new LinkedHashMap<>();
    }

    interface Body { void run() throws Exception; }

    /** Runs a step; a client exception is part of the answer (its class and its cause's), not a failure. */
    private static Map<String, Object> run(Body body) {
        Map<String, Object> res = new LinkedHashMap<>();
        try {
            body.run();
            res.put("exception", null);
        } catch (Exception e) {
            Throwable t = e;
            if (t instanceof java.util.concurrent.ExecutionException && t.getCause() != null) t = t.getCause();
            res.put("exception", t.getClass().getSimpleName());
            res.put("cause", t.getCause() == null ? null : t.getCause().getClass().getSimpleName());
            res.put("message", String.valueOf(t.getMessage()));
        }
        return res;
    }
}
