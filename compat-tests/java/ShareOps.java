import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Share groups with kafka-clients 3.9.1's KafkaShareConsumer (KIP-932 early access: ShareGroupHeartbeat,
 * ShareFetch and ShareAcknowledge v0). "share_consume": subscribe, poll until "count" records (or the
 * timeout), acknowledge each (explicitly when "acks" maps an offset to ACCEPT/RELEASE/REJECT, which in 3.9
 * makes the consumer explicit; implicitly otherwise), commitSync, close. Answers the records received.
 */
final class ShareOps {
    private ShareOps() {}

    @SuppressWarnings("unchecked")
    static Map<String, Object> consume(Map<String, Object> c) {
        Properties p = new Properties();
        p.put("bootstrap.servers", c.get("bootstrap"));
        p.put("group.id", c.get("group"));
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        Map<String, Object> acks = (Map<String, Object>) c.get("acks");
        long count = ((Number) c.get("count")).longValue();
        long deadline = System.currentTimeMillis() + ((Number) c.getOrDefault("timeout_ms", 60000L)).longValue();
        List<Object> recs = new ArrayList<>();
        try (KafkaShareConsumer<byte[], byte[]> cons = new KafkaShareConsumer<>(p)) {
            cons.subscribe(List.of((String) c.get("topic")));
            while (recs.size() < count && System.currentTimeMillis() < deadline) {
                // 3.9 decides the acknowledgement mode at the second poll (explicit only if acknowledge() was
                // called on the first one's records), so a poll waits for records rather than returning empty
                long left = Math.max(1, deadline - System.currentTimeMillis());
                for (ConsumerRecord<byte[], byte[]> r : cons.poll(Duration.ofMillis(left))) {
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("offset", r.offset());
                    m.put("value", new String(r.value(), StandardCharsets.UTF_8));
                    recs.add(m);
                    if (acks != null) {
                        Object kind = acks.getOrDefault(Long.toString(r.offset()), "ACCEPT");
                        cons.acknowledge(r, AcknowledgeType.valueOf((String) kind));
                    }
                }
            }
            cons.commitSync();
        }
        Map<String, Object> res = new LinkedHashMap<>();
        res.put("records", recs);
        return res;
    }
}
