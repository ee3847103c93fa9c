import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Java kafka-clients driver for the compat tests: reads one JSON command per stdin line, answers one JSON
 * line on stdout ({"ok":true,...} or {"ok":false,"error":...}). Every command builds its own producer,
 * consumer or admin client from the command's settings, so the JVM is started once per test session.
 * Client defaults are kept unless the command overrides them (3.9: acks=all, enable.idempotence=true).
 */
public final class Driver {
    private static final Base64.Encoder B64E = Base64.getEncoder();
    private static final Base64.Decoder B64D = Base64.getDecoder();

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        System.setOut(System.err); // nothing but protocol lines on the real stdout
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        out.println("{\"ok\":true,\"ready\":true}");
        out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            Map<String, Object> reply;
            try {
                @SuppressWarnings("unchecked")
                Map<String, Object> cmd = (Map<String, Object>) Json.parse(line);
                reply = dispatch(cmd);
                reply.put("ok", true);
            } catch (Throwable t) {
                Throwable root = t;
                while (root.getCause() != null && root != root.getCause()) root = root.getCause();
                StringWriter sw = new StringWriter();
                t.printStackTrace(new PrintWriter(sw));
                reply = new LinkedHashMap<>();
                reply.put("ok", false);
                reply.put("error", root.getClass().getName() + ": " + root.getMessage());
                reply.put("trace", sw.toString());
            }
            out.println(Json.write(reply));
            out.flush();
        }
    }

    private static Map<String, Object> dispatch(Map<String, Object> c) throws Exception {
        String op = (String) c.get("op");
        switch (op) {
            case "produce": return produce(c);
            case "consume": return consume(c);
            case "subscribe_consume": return subscribeConsume(c);
            case "metadata": return metadata(c);
            case "create_topic": return createTopic(c);
            case "create_acl": return createAcl(c);
            case "describe_acls": return describeAcls(c);
            case "alter_client_quota": return alterClientQuota(c);
            case "describe_client_quotas": return describeClientQuotas(c);
            case "delete_topic": return deleteTopic(c);
            case "create_partitions": return createPartitions(c);
            case "describe_config": return describeConfig(c);
            case "alter_config": return alterConfig(c);
            case "list_offsets": return listOffsets(c);
            case "txn_open": return Txn.open(c);
            case "txn_step": return Txn.step(c);
            case "txn_close": return Txn.close(c);
            case "txn_describe": return Txn.describe(c);
            case "txn_ctp": return Txn.consumeTransformProduce(c);
            case "admin": return AdminOps.run(c);
            case "share_consume": return ShareOps.consume(c);
            case "scram_upsert": return scramUpsert(c);
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    /** What kafka-configs --alter --add-config 'SCRAM-SHA-512=[iterations=N,password=P]' does: Admin's
     *  alterUserScramCredentials, then describeUserScramCredentials of that user (mechanism -> iterations). */
    private static Map<String, Object> scramUpsert(Map<String, Object> c) throws Exception {
        String user = (String) c.get("user");
        org.apache.kafka.clients.admin.ScramMechanism mech =
            org.apache.kafka.clients.admin.ScramMechanism.fromMechanismName((String) c.get("mechanism"));
        int iterations = ((Number) c.get("iterations")).intValue();
        try (Admin admin = Admin.create(base(c))) {
            admin.alterUserScramCredentials(List.of(new org.apache.kafka.clients.admin.UserScramCredentialUpsertion(
                user, new org.apache.kafka.clients.admin.ScramCredentialInfo(mech, iterations),
                (String) c.get("password")))).all().get(30, TimeUnit.SECONDS);
            Map<String, Object> infos = new LinkedHashMap<>();
            for (org.apache.kafka.clients.admin.ScramCredentialInfo i : admin.describeUserScramCredentials(List.of(user))
                    .description(user).get(30, TimeUnit.SECONDS).credentialInfos())
                infos.put(i.mechanism().mechanismName(), (long) i.iterations());
            Map<String, Object> res = new LinkedHashMap<>();
            res.put("credentials", infos);
            return res;
        }
    }

    private static Properties base(Map<String, Object> c) {
        Properties p = new Properties();
        p.put("bootstrap.servers", c.get("bootstrap"));
        @SuppressWarnings("unchecked")
        Map<String, Object> extra = (Map<String, Object>) c.get("config");
        if (extra != null) for (Map.Entry<String, Object> e : extra.entrySet()) p.put(e.getKey(), String.valueOf(e.getValue()));
        return p;
    }

    private static byte[] b64(Object o) {
        return o == null ? null : B64D.decode((String) o);
    }

    private static String b64(byte[] b) {
        return b == null ? null : B64E.encodeToString(b);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> produce(Map<String, Object> c) throws Exception {
        Properties p = base(c);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("linger.ms", "5");
        if (c.get("compression") != null) p.put("compression.type", c.get("compression"));
        if (c.get("idempotent") != null) p.put("enable.idempotence", String.valueOf(c.get("idempotent")));
        if (c.get("acks") != null) p.put("acks", String.valueOf(c.get("acks")));
        if (c.get("max_request_bytes") != null) p.put("max.request.size", String.valueOf(c.get("max_request_bytes")));
        long timeoutMs = ((Number) c.getOrDefault("timeout_ms", 60000L)).longValue();
        long requestMs = Math.min(timeoutMs, 30000L);
        p.put("request.timeout.ms", String.valueOf(requestMs));
        p.put("delivery.timeout.ms", String.valueOf(Math.max(timeoutMs, requestMs + 1000L)));
        String topic = (String) c.get("topic");
        List<Future<RecordMetadata>> futs = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> prod = new KafkaProducer<>(p)) {
            for (Object o : (List<Object>) c.get("records")) {
                Map<String, Object> r = (Map<String, Object>) o;
                List<Header> headers = new ArrayList<>();
                for (Object h : (List<Object>) r.get("headers")) {
                    List<Object> hl = (List<Object>) h;
                    headers.add(new RecordHeader((String) hl.get(0), b64(hl.get(1))));
                }
                Integer part = r.get("partition") == null ? null : ((Number) r.get("partition")).intValue();
                Long ts = r.get("timestamp") == null ? null : ((Number) r.get("timestamp")).longValue();
                futs.add(prod.send(new ProducerRecord<>(topic, part, ts, b64(r.get("key")), b64(r.get("value")), headers)));
            }
            prod.flush();
            List<Object> offsets = new ArrayList<>();
            for (Future<RecordMetadata> f : futs) {
                RecordMetadata md = f.get(timeoutMs, TimeUnit.MILLISECONDS);
                offsets.add(List.of((long) md.partition(), md.offset()));
            }
            Map<String, Object> res = new LinkedHashMap<>();
            res.put("offsets", offsets);
            return res;
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> consume(Map<String, Object> c) {
        Properties p = base(c);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("fetch.max.wait.ms", "200");
        if (c.get("max_fetch_bytes") != null) {
            long m = ((Number) c.get("max_fetch_bytes")).longValue();
            p.put("max.partition.fetch.bytes", String.valueOf(m));
            p.put("fetch.max.bytes", String.valueOf(2 * m));
        }
        String topic = (String) c.get("topic");
        long count = ((Number) c.get("count")).longValue();
        long deadline = System.currentTimeMillis() + ((Number) c.getOrDefault("timeout_ms", 60000L)).longValue();
        Object start = c.get("start");
        List<Object> recs = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> cons = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (Object o : (List<Object>) c.get("partitions")) tps.add(new TopicPartition(topic, ((Number) o).intValue()));
            cons.assign(tps);
            if ("earliest".equals(start)) cons.seekToBeginning(tps);
            else for (TopicPartition tp : tps) cons.seek(tp, ((Number) start).longValue());
            while (recs.size() < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : cons.poll(Duration.ofMillis(500))) {
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("key", b64(r.key()));
                    m.put("value", b64(r.value()));
                    List<Object> hs = new ArrayList<>();
                    for (Header h : r.headers()) hs.add(java.util.Arrays.asList(h.key(), b64(h.value())));
                    m.put("headers", hs);
                    m.put("timestamp", r.timestamp());
                    m.put("partition", (long) r.partition());
                    m.put("offset", r.offset());
                    recs.add(m);
                }
            }
        }
        Map<String, Object> res = new LinkedHashMap<>();
        res.put("records", recs);
        return res;
    }

    /** Group consumer: subscribe (the topic may not exist yet), poll until ``count`` records or timeout; with
     * "commit": true, commitSync after every poll that returned records (the group coordinator must answer). */
    private static Map<String, Object> subscribeConsume(Map<String, Object> c) {
        Properties p = base(c);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("group.id", c.get("group"));
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("metadata.max.age.ms", "1000");
        long count = ((Number) c.get("count")).longValue();
        long deadline = System.currentTimeMillis() + ((Number) c.getOrDefault("timeout_ms", 60000L)).longValue();
        boolean commit = Boolean.TRUE.equals(c.get("commit"));
        List<Object> recs = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> cons = new KafkaConsumer<>(p)) {
            cons.subscribe(List.of((String) c.get("topic")));
            while (recs.size() < count && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> polled = cons.poll(Duration.ofMillis(300));
                if (commit && !polled.isEmpty()) cons.commitSync(Duration.ofSeconds(30));
                for (ConsumerRecord<byte[], byte[]> r : polled) {
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("key", b64(r.key()));
                    m.put("value", b64(r.value()));
                    m.put("headers", new ArrayList<>());
                    m.put("timestamp", r.timestamp());
                    m.put("partition", (long) r.partition());
                    m.put("offset", r.offset());
                    recs.add(m);
                }
            }
        }
        Map<String, Object> res = new LinkedHashMap<>();
        res.put("records", recs);
        return res;
    }

    private static Admin admin(Map<String, Object> c) {
        Properties p = base(c);
        p.put("default.api.timeout.ms", "30000");
        p.put("request.timeout.ms", "20000");
        return Admin.create(p);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> metadata(Map<String, Object> c) throws Exception {
        try (Admin a = admin(c)) {
            DescribeClusterResult cl = a.describeCluster();
            List<Object> brokers = new ArrayList<>();
            for (Node n : cl.nodes().get()) brokers.add(List.of((long) n.id(), n.host(), (long) n.port()));
            Collection<String> names = c.get("topics") == null ? a.listTopics().names().get() : (List<String>) (List<?>) c.get("topics");
            Map<String, Object> topics = new LinkedHashMap<>();
            if (!names.isEmpty()) {
                for (Map.Entry<String, TopicDescription> e : a.describeTopics(names).allTopicNames().get().entrySet())
                    topics.put(e.getKey(), (long) e.getValue().partitions().size());
            }
            Map<String, Object> res = new LinkedHashMap<>();
            res.put("brokers", brokers);
            res.put("topics", topics);
            res.put("cluster_id", cl.clusterId().get());
            return res;
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> createTopic(Map<String, Object> c) throws Exception {
        try (Admin a = admin(c)) {
            NewTopic t = new NewTopic((String) c.get("topic"), ((Number) c.get("partitions")).intValue(), (short) 1);
            Map<String, String> cfg = new HashMap<>();
            Map<String, Object> tc = (Map<String, Object>) c.get("topic_config");
            if (tc != null) for (Map.Entry<String, Object> e : tc.entrySet()) cfg.put(e.getKey(), String.valueOf(e.getValue()));
            a.createTopics(List.of(t.configs(cfg))).all().get();
            return new LinkedHashMap<>();
        }
    }

    /** Admin.createAcls of one binding: resource_type / pattern_type / operation / permission by enum name. */
    private static Map<String, Object> createAcl(Map<String, Object> c) throws Exception {
        try (Admin a = admin(c)) {
            org.apache.kafka.common.acl.AclBinding b = new org.apache.kafka.common.acl.AclBinding(
                new org.apache.kafka.common.resource.ResourcePattern(
                    org.apache.kafka.common.resource.ResourceType.valueOf((String) c.get("resource_type")),
                    (String) c.get("name"),
                    org.apache.kafka.common.resource.PatternType.valueOf((String) c.get("pattern_type"))),
                new org.apache.kafka.common.acl.AccessControlEntry((String) c.get("principal"), "*",
                    org.apache.kafka.common.acl.AclOperation.valueOf((String) c.get("operation")),
                    org.apache.kafka.common.acl.AclPermissionType.valueOf((String) c.get("permission"))));
            a.createAcls(List.of(b)).all().get();
            return new LinkedHashMap<>();
        }
    }

    /** Admin.describeAcls(AclBindingFilter.ANY): each binding as its toString(). */
    private static Map<String, Object> describeAcls(Map<String, Object> c) throws Exception {
        try (Admin a = admin(c)) {
            List<Object> out = new ArrayList<>();
            for (org.apache.kafka.common.acl.AclBinding b
                    : a.describeAcls(org.apache.kafka.common.acl.AclBindingFilter.ANY).values().get()) {
                out.add(b.pattern().resourceType() + ":" + b.pattern().patternType() + ":" + b.pattern().name() + ":"
                        + b.entry().principal() + ":" + b.entry().operation() + ":" + b.entry().permissionType());
            }
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("acls", out);
            return r;
        }
    }

    /** Admin.alterClientQuotas of one entity: entity {type: name-or-null}, ops {key: value-or-null (remove)}. */
    @SuppressWarnings("unchecked")
    private static Map<String, Object> alterClientQuota(Map<String, Object> c) throws Exception {
        try (Admin a = admin(c)) {
            Map<String, String> entity = new HashMap<>();
            for (Map.Entry<String, Object> e : ((Map<String, Object>) c.get("entity")).entrySet())
                entity.put(e.getKey(), (String) e.getValue());
            List<org.apache.kafka.common.quota.ClientQuotaAlteration.Op> ops = new ArrayList<>();
            for (Map.Entry<String, Object> e : ((Map<String, Object>) c.get("ops")).entrySet())
                ops.add(new org.apache.kafka.common.quota.ClientQuotaAlteration.Op(e.getKey(),
                    e.getValue() == null ? null : ((Number) e.getValue()).doubleValue()));
            a.alterClientQuotas(List.of(new org.apache.kafka.common.quota.ClientQuotaAlteration(
                new org.apache.kafka.common.quota.ClientQuotaEntity(entity), ops)),
                new org.apache.kafka.clients.admin.AlterClientQuotasOptions().validateOnly(
                    Boolean.TRUE.equals(c.get("validate_only")))).all().get();
            return new LinkedHashMap<>();
        }
    }

    /** Admin.describeClientQuotas(ClientQuotaFilter.all()): "type=name,..." -> {key: value}. */
    private static Map<String, Object> describeClientQuotas(Map<String, Object> c) throws Exception {
        try (Admin a = admin(c)) {
            Map<String, Object> out = new LinkedHashMap<>();
            for (Map.Entry<org.apache.kafka.common.quota.ClientQuotaEntity, Map<String, Double>> e
                    : a.describeClientQuotas(org.apache.kafka.common.quota.ClientQuotaFilter.all()).entities().get().entrySet()) {
                List<String> parts = new ArrayList<>();
                for (Map.Entry<String, String> p : new java.util.TreeMap<>(e.getKey().entries()).entrySet())
                    parts.add(p.getKey() + "=" + p.getValue());
                out.put(String.join(",", parts), new LinkedHashMap<String, Object>(e.getValue()));
            }
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("quotas", out);
            return r;
        }
    }

    private static Map<String, Object> deleteTopic(Map<String, Object> c) throws Exception {
        try (Admin a = admin(c)) {
            a.deleteTopics(List.of((String) c.get("topic"))).all().get();
            return new LinkedHashMap<>();
        }
    }

    private static Map<String, Object> createPartitions(Map<String, Object> c) throws Exception {
        try (Admin a = admin(c)) {
            a.createPartitions(Map.of((String) c.get("topic"),
                    org.apache.kafka.clients.admin.NewPartitions.increaseTo(((Number) c.get("total")).intValue()))).all().get();
            return new LinkedHashMap<>();
        }
    }

    private static Map<String, Object> describeConfig(Map<String, Object> c) throws Exception {
        try (Admin a = admin(c)) {
            ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, (String) c.get("topic"));
            Config cfg = a.describeConfigs(List.of(r)).all().get().get(r);
            Map<String, Object> entries = new LinkedHashMap<>();
            for (ConfigEntry e : cfg.entries()) entries.put(e.name(), e.value());
            Map<String, Object> res = new LinkedHashMap<>();
            res.put("config", entries);
            return res;
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> alterConfig(Map<String, Object> c) throws Exception {
        try (Admin a = admin(c)) {
            ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, (String) c.get("topic"));
            List<AlterConfigOp> ops = new ArrayList<>();
            for (Map.Entry<String, Object> e : ((Map<String, Object>) c.get("topic_config")).entrySet())
                ops.add(new AlterConfigOp(new ConfigEntry(e.getKey(), String.valueOf(e.getValue())), AlterConfigOp.OpType.SET));
            a.incrementalAlterConfigs(Map.of(r, ops)).all().get();
            return new LinkedHashMap<>();
        }
    }

    private static Map<String, Object> listOffsets(Map<String, Object> c) throws Exception {
        try (Admin a = admin(c)) {
            TopicPartition tp = new TopicPartition((String) c.get("topic"), ((Number) c.get("partition")).intValue());
            Object spec = c.get("spec");
            OffsetSpec os = "earliest".equals(spec) ? OffsetSpec.earliest()
                    : "latest".equals(spec) ? OffsetSpec.latest()
                    : OffsetSpec.forTimestamp(((Number) spec).longValue());
            ListOffsetsResult.ListOffsetsResultInfo info = a.listOffsets(Map.of(tp, os)).partitionResult(tp).get();
            Map<String, Object> res = new LinkedHashMap<>();
            res.put("offset", info.offset());
            return res;
        }
    }
}
