// Kafka Streams 4.4 applications for compat-tests/test_kafka_streams.py, run against a kafkalite process.
//
//   java EcoStreams MODE BOOTSTRAP APPLICATION_ID STATE_DIR [key=value ...]
//
// MODE: wordcount (lines -> words, repartitioned by word, counted in a persistent RocksDB store named
// "counts": topics <app>-words-repartition and <app>-counts-changelog), windowed (events counted per key in
// 10 s tumbling windows with 5 s grace, store "win-counts"), fkjoin (orders table joined to products table by
// foreign key). Topics: wc-in -> wc-out (or eco.in=... eco.out=...), win-in -> win-out, orders + products -> enriched.
// The extra key=value pairs are Streams configs (processing.guarantee, ...). Prints "STATE <new state>" on
// every state change and "TASKS active=... standby=..." (this instance's task ids) on each change to RUNNING;
// runs until SIGTERM (closes cleanly) or SIGKILL.
import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;

public class EcoStreams {
    static Topology wordcount(String in, String out) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.toLowerCase().split("\\W+")))
            .filter((k, w) -> !w.isEmpty())
            .groupBy((k, w) -> w, Grouped.with("words", Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream()
            .to(out, Produced.with(Serdes.String(), Serdes.Long()));
        return b.build();
    }

    static Topology windowed() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("win-in", Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(5)))
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("win-counts")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream((wk, v) -> wk.key() + "@" + wk.window().start())
            .to("win-out", Produced.with(Serdes.String(), Serdes.Long()));
        return b.build();
    }

    static Topology fkjoin() {
        StreamsBuilder b = new StreamsBuilder();
        // orders: orderId -> "productId:quantity"; products: productId -> name
        KTable<String, String> orders = b.table("orders", Consumed.with(Serdes.String(), Serdes.String()),
            Materialized.as("orders-store"));
        KTable<String, String> products = b.table("products", Consumed.with(Serdes.String(), Serdes.String()),
            Materialized.as("products-store"));
        orders.join(products, order -> order.split(":")[0],
                (order, name) -> name + " x" + order.split(":")[1])
            .toStream()
            .to("enriched", Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[2]);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[3]);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        // a SIGKILLed instance's member leaves the group after this, not Streams' 45 s default
        p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), "6000");
        p.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), "1500");
        for (int i = 4; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            p.put(kv[0], kv[1]);
        }
        // the word count's topics (eco.in / eco.out are the harness's, not Streams configs)
        String in = (String) p.remove("eco.in"), out = (String) p.remove("eco.out");
        Topology t = switch (mode) {
            case "wordcount" -> wordcount(in == null ? "wc-in" : in, out == null ? "wc-out" : out);
            case "windowed" -> windowed();
            case "fkjoin" -> fkjoin();
            default -> throw new IllegalArgumentException("mode " + mode);
        };
        KafkaStreams streams = new KafkaStreams(t, p);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + now);
            if (now == KafkaStreams.State.RUNNING) {  // "TASKS active=0_0,1_0 standby=1_1": this instance's tasks
                java.util.TreeSet<String> active = new java.util.TreeSet<>(), standby = new java.util.TreeSet<>();
                streams.metadataForLocalThreads().forEach(th -> {
                    th.activeTasks().forEach(m -> active.add(m.taskId().toString()));
                    th.standbyTasks().forEach(m -> standby.add(m.taskId().toString()));
                });
                System.out.println("TASKS active=" + String.join(",", active) + " standby=" + String.join(",", standby));
            }
            System.out.flush();
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) done.countDown();
        });
        streams.setUncaughtExceptionHandler(e -> {
            e.printStackTrace();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse
                .SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(20));
            done.countDown();
        }));
        streams.start();
        done.await();
    }
}
