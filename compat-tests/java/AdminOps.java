import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.SupportedVersionRange;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.config.ConfigResource;

/**
 * The Java Admin calls of the admin surface (#15), one "admin" op with an "action": each answers the
 * client's own view (results, or per-item {"error": "ExceptionClass: message"}), never a hand-built request.
 */
final class AdminOps {
    private AdminOps() {}

    static Map<String, Object> run(Map<String, Object> c) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", c.get("bootstrap"));
        p.put("default.api.timeout.ms", "30000");
        p.put("request.timeout.ms", "20000");
        @SuppressWarnings("unchecked")
        Map<String, Object> extra = (Map<String, Object>) c.get("config");   // e.g. SASL settings
        if (extra != null) for (Map.Entry<String, Object> e : extra.entrySet()) p.put(e.getKey(), String.valueOf(e.getValue()));
        try (Admin a = Admin.create(p)) {
            String action = (String) c.get("action");
            switch (action) {
                case "create_partitions": return createPartitions(a, c);
                case "elect_leaders": return electLeaders(a, c);
                case "alter_reassignments": return alterReassignments(a, c);
                case "list_reassignments": return listReassignments(a, c);
                case "alter_log_dirs": return alterLogDirs(a, c);
                case "describe_log_dirs": return describeLogDirs(a, c);
                case "describe_producers": return describeProducers(a, c);
                case "describe_quorum": return describeQuorum(a);
                case "describe_features": return describeFeatures(a);
                case "update_features": return updateFeatures(a, c);
                case "describe_broker_configs": return describeBrokerConfigs(a, c);
                case "create_token": return createToken(a, c);
                case "renew_token": return renewToken(a, c);
                case "expire_token": return expireToken(a, c);
                case "describe_tokens": return describeTokens(a, c);
                default: throw new IllegalArgumentException("unknown admin action " + action);
            }
        }
    }

    private static String err(Throwable t) {
        Throwable e = t instanceof ExecutionException && t.getCause() != null ? t.getCause() : t;
        return e.getClass().getSimpleName() + ": " + e.getMessage();
    }

    private static Object outcome(KafkaFuture<?> f) {
        try {
            f.get();
            return null;
        } catch (Exception e) {
            return err(e);
        }
    }

    private static Map<String, Object> one(String key, Object value) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put(key, value);
        return m;
    }

    @SuppressWarnings("unchecked")
    private static List<Integer> ints(Object o) {
        List<Integer> out = new ArrayList<>();
        for (Object x : (List<Object>) o) out.add(((Number) x).intValue());
        return out;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> createPartitions(Admin a, Map<String, Object> c) {
        int total = ((Number) c.get("total")).intValue();
        List<List<Integer>> assign = null;
        if (c.get("assignments") != null) {
            assign = new ArrayList<>();
            for (Object o : (List<Object>) c.get("assignments")) assign.add(ints(o));
        }
        NewPartitions np = assign == null ? NewPartitions.increaseTo(total) : NewPartitions.increaseTo(total, assign);
        return one("error", outcome(a.createPartitions(Map.of((String) c.get("topic"), np)).all()));
    }

    @SuppressWarnings("unchecked")
    private static Set<TopicPartition> tps(Object o) {
        if (o == null) return null;
        Set<TopicPartition> out = new java.util.LinkedHashSet<>();
        for (Object x : (List<Object>) o) {
            List<Object> t = (List<Object>) x;
            out.add(new TopicPartition((String) t.get(0), ((Number) t.get(1)).intValue()));
        }
        return out;
    }

    private static Map<String, Object> electLeaders(Admin a, Map<String, Object> c) {
        ElectionType type = "unclean".equals(c.get("type")) ? ElectionType.UNCLEAN : ElectionType.PREFERRED;
        Map<String, Object> res = new LinkedHashMap<>();
        try {
            Map<TopicPartition, Optional<Throwable>> r = a.electLeaders(type, tps(c.get("partitions"))).partitions().get();
            Map<String, Object> parts = new LinkedHashMap<>();
            for (Map.Entry<TopicPartition, Optional<Throwable>> e : r.entrySet())
                parts.put(e.getKey().toString(), e.getValue().map(AdminOps::err).orElse(null));
            res.put("partitions", parts);
        } catch (Exception e) {
            res.put("error", err(e));
        }
        return res;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> alterReassignments(Admin a, Map<String, Object> c) {
        Map<TopicPartition, Optional<NewPartitionReassignment>> req = new LinkedHashMap<>();
        for (Object x : (List<Object>) c.get("reassignments")) {
            List<Object> t = (List<Object>) x;
            TopicPartition tp = new TopicPartition((String) t.get(0), ((Number) t.get(1)).intValue());
            req.put(tp, t.get(2) == null ? Optional.empty() : Optional.of(new NewPartitionReassignment(ints(t.get(2)))));
        }
        Map<String, Object> parts = new LinkedHashMap<>();
        for (Map.Entry<TopicPartition, KafkaFuture<Void>> e : a.alterPartitionReassignments(req).values().entrySet())
            parts.put(e.getKey().toString(), outcome(e.getValue()));
        return one("partitions", parts);
    }

    private static Map<String, Object> listReassignments(Admin a, Map<String, Object> c) throws Exception {
        Set<TopicPartition> which = tps(c.get("partitions"));
        Map<TopicPartition, PartitionReassignment> r = (which == null ? a.listPartitionReassignments()
                : a.listPartitionReassignments(which)).reassignments().get();
        Map<String, Object> out = new LinkedHashMap<>();
        for (Map.Entry<TopicPartition, PartitionReassignment> e : r.entrySet()) {
            Map<String, Object> v = new LinkedHashMap<>();
            v.put("replicas", e.getValue().replicas());
            v.put("adding", e.getValue().addingReplicas());
            v.put("removing", e.getValue().removingReplicas());
            out.put(e.getKey().toString(), v);
        }
        return one("reassignments", out);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> alterLogDirs(Admin a, Map<String, Object> c) {
        Map<TopicPartitionReplica, String> req = new LinkedHashMap<>();
        for (Object x : (List<Object>) c.get("moves")) {
            List<Object> t = (List<Object>) x;
            req.put(new TopicPartitionReplica((String) t.get(0), ((Number) t.get(1)).intValue(),
                    ((Number) t.get(2)).intValue()), (String) t.get(3));
        }
        Map<String, Object> parts = new LinkedHashMap<>();
        for (Map.Entry<TopicPartitionReplica, KafkaFuture<Void>> e : a.alterReplicaLogDirs(req).values().entrySet())
            parts.put(e.getKey().topic() + "-" + e.getKey().partition(), outcome(e.getValue()));
        return one("replicas", parts);
    }

    private static Map<String, Object> describeLogDirs(Admin a, Map<String, Object> c) throws Exception {
        int broker = ((Number) c.get("broker")).intValue();
        Map<String, LogDirDescription> r = a.describeLogDirs(List.of(broker)).allDescriptions().get().get(broker);
        Map<String, Object> out = new LinkedHashMap<>();
        for (Map.Entry<String, LogDirDescription> e : r.entrySet()) {
            List<Object> parts = new ArrayList<>();
            for (Map.Entry<TopicPartition, ReplicaInfo> p : e.getValue().replicaInfos().entrySet())
                parts.add(p.getKey().toString());
            out.put(e.getKey(), parts);
        }
        return one("dirs", out);
    }

    // -- delegation tokens: each answers {"token": ...} / {"expiry": ms} / {"tokens": [...]}, or {"error": ...}
    private static org.apache.kafka.common.security.auth.KafkaPrincipal principal(String s) {   // "User:alice"
        int i = s.indexOf(':');
        return new org.apache.kafka.common.security.auth.KafkaPrincipal(s.substring(0, i), s.substring(i + 1));
    }

    private static List<org.apache.kafka.common.security.auth.KafkaPrincipal> principals(Object names) {
        List<org.apache.kafka.common.security.auth.KafkaPrincipal> out = new ArrayList<>();
        if (names != null) for (Object n : (List<?>) names) out.add(principal((String) n));
        return out;
    }

    private static Map<String, Object> token(org.apache.kafka.common.security.token.delegation.DelegationToken t) {
        org.apache.kafka.common.security.token.delegation.TokenInformation i = t.tokenInfo();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("token_id", i.tokenId());
        m.put("hmac", t.hmacAsBase64String());
        m.put("owner", i.owner().toString());
        m.put("requester", i.tokenRequester().toString());
        List<Object> renewers = new ArrayList<>();
        for (org.apache.kafka.common.security.auth.KafkaPrincipal r : i.renewers()) renewers.add(r.toString());
        m.put("renewers", renewers);
        m.put("issue", i.issueTimestamp());
        m.put("expiry", i.expiryTimestamp());
        m.put("max", i.maxTimestamp());
        return m;
    }

    private static Map<String, Object> createToken(Admin a, Map<String, Object> c) {
        org.apache.kafka.clients.admin.CreateDelegationTokenOptions o = new org.apache.kafka.clients.admin.CreateDelegationTokenOptions()
            .renewers(principals(c.get("renewers")));
        if (c.get("owner") != null) o.owner(principal((String) c.get("owner")));
        try {
            return one("token", token(a.createDelegationToken(o).delegationToken().get()));
        } catch (Exception e) {
            return one("error", err(e));
        }
    }

    private static Map<String, Object> renewToken(Admin a, Map<String, Object> c) {
        byte[] hmac = java.util.Base64.getDecoder().decode((String) c.get("hmac"));
        try {
            return one("expiry", a.renewDelegationToken(hmac, new org.apache.kafka.clients.admin.RenewDelegationTokenOptions()
                .renewTimePeriodMs(((Number) c.get("period_ms")).longValue())).expiryTimestamp().get());
        } catch (Exception e) {
            return one("error", err(e));
        }
    }

    private static Map<String, Object> expireToken(Admin a, Map<String, Object> c) {
        byte[] hmac = java.util.Base64.getDecoder().decode((String) c.get("hmac"));
        try {
            return one("expiry", a.expireDelegationToken(hmac, new org.apache.kafka.clients.admin.ExpireDelegationTokenOptions()
                .expiryTimePeriodMs(((Number) c.get("period_ms")).longValue())).expiryTimestamp().get());
        } catch (Exception e) {
            return one("error", err(e));
        }
    }

    private static Map<String, Object> describeTokens(Admin a, Map<String, Object> c) {
        org.apache.kafka.clients.admin.DescribeDelegationTokenOptions o = new org.apache.kafka.clients.admin.DescribeDelegationTokenOptions();
        if (c.get("owners") != null) o.owners(principals(c.get("owners")));
        try {
            List<Object> out = new ArrayList<>();
            for (org.apache.kafka.common.security.token.delegation.DelegationToken t : a.describeDelegationToken(o).delegationTokens().get()) out.add(token(t));
            return one("tokens", out);
        } catch (Exception e) {
            return one("error", err(e));
        }
    }

    private static Map<String, Object> describeProducers(Admin a, Map<String, Object> c) {
        TopicPartition tp = new TopicPartition((String) c.get("topic"), ((Number) c.get("partition")).intValue());
        Map<String, Object> res = new LinkedHashMap<>();
        try {
            List<Object> out = new ArrayList<>();
            for (ProducerState s : a.describeProducers(List.of(tp)).partitionResult(tp).get().activeProducers()) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("producer_id", s.producerId());
                m.put("epoch", s.producerEpoch());
                m.put("last_sequence", s.lastSequence());
                m.put("last_timestamp", s.lastTimestamp());
                m.put("coordinator_epoch", s.coordinatorEpoch().isPresent() ? s.coordinatorEpoch().getAsInt() : null);
                m.put("txn_start_offset", s.currentTransactionStartOffset().isPresent()
                        ? s.currentTransactionStartOffset().getAsLong() : null);
                out.add(m);
            }
            res.put("producers", out);
        } catch (Exception e) {
            res.put("error", err(e));
        }
        return res;
    }

    private static List<Object> replicas(List<QuorumInfo.ReplicaState> rs) {
        List<Object> out = new ArrayList<>();
        for (QuorumInfo.ReplicaState r : rs) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", r.replicaId());
            m.put("log_end_offset", r.logEndOffset());
            m.put("last_fetch", r.lastFetchTimestamp().isPresent() ? r.lastFetchTimestamp().getAsLong() : null);
            m.put("last_caught_up", r.lastCaughtUpTimestamp().isPresent() ? r.lastCaughtUpTimestamp().getAsLong() : null);
            out.add(m);
        }
        return out;
    }

    private static Map<String, Object> describeQuorum(Admin a) {
        Map<String, Object> res = new LinkedHashMap<>();
        try {
            QuorumInfo q = a.describeMetadataQuorum().quorumInfo().get();
            res.put("leader_id", q.leaderId());
            res.put("leader_epoch", q.leaderEpoch());
            res.put("high_watermark", q.highWatermark());
            res.put("voters", replicas(q.voters()));
            res.put("observers", replicas(q.observers()));
            Map<String, Object> nodes = new LinkedHashMap<>();
            for (Map.Entry<Integer, QuorumInfo.Node> e : q.nodes().entrySet())
                nodes.put(String.valueOf(e.getKey()), e.getValue().endpoints().toString());
            res.put("nodes", nodes);
        } catch (Exception e) {
            res.put("error", err(e));
        }
        return res;
    }

    private static Map<String, Object> describeFeatures(Admin a) throws Exception {
        FeatureMetadata f = a.describeFeatures().featureMetadata().get();
        Map<String, Object> fin = new LinkedHashMap<>();
        for (Map.Entry<String, FinalizedVersionRange> e : f.finalizedFeatures().entrySet())
            fin.put(e.getKey(), List.of(e.getValue().minVersionLevel(), e.getValue().maxVersionLevel()));
        Map<String, Object> sup = new LinkedHashMap<>();
        for (Map.Entry<String, SupportedVersionRange> e : f.supportedFeatures().entrySet())
            sup.put(e.getKey(), List.of(e.getValue().minVersion(), e.getValue().maxVersion()));
        Map<String, Object> res = new LinkedHashMap<>();
        res.put("finalized", fin);
        res.put("supported", sup);
        res.put("epoch", f.finalizedFeaturesEpoch().isPresent() ? f.finalizedFeaturesEpoch().get() : null);
        return res;
    }

    private static Map<String, Object> updateFeatures(Admin a, Map<String, Object> c) {
        FeatureUpdate.UpgradeType t = FeatureUpdate.UpgradeType.valueOf((String) c.getOrDefault("upgrade_type", "UPGRADE"));
        Map<String, FeatureUpdate> req = Map.of((String) c.get("feature"),
                new FeatureUpdate(((Number) c.get("level")).shortValue(), t));
        UpdateFeaturesOptions opts = new UpdateFeaturesOptions().validateOnly(Boolean.TRUE.equals(c.get("validate_only")));
        return one("error", outcome(a.updateFeatures(req, opts).all()));
    }

    private static Map<String, Object> describeBrokerConfigs(Admin a, Map<String, Object> c) throws Exception {
        ConfigResource r = new ConfigResource(ConfigResource.Type.BROKER, String.valueOf(c.get("broker")));
        Config cfg = a.describeConfigs(List.of(r), new DescribeConfigsOptions().includeSynonyms(true)
                .includeDocumentation(true)).all().get().get(r);
        Map<String, Object> out = new LinkedHashMap<>();
        for (ConfigEntry e : cfg.entries()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("value", e.value());
            m.put("source", e.source().name());
            m.put("read_only", e.isReadOnly());
            m.put("sensitive", e.isSensitive());
            m.put("type", e.type().name());
            m.put("documentation", e.documentation());
            List<Object> syn = new ArrayList<>();
            for (ConfigEntry.ConfigSynonym s : e.synonyms()) syn.add(List.of(s.name(), String.valueOf(s.value()), s.source().name()));
            m.put("synonyms", syn);
            out.put(e.name(), m);
        }
        return one("configs", out);
    }
}
