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
