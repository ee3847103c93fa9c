import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;

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
