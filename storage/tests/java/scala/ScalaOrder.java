/*
 * Iteration orders of Scala 2.13 collections that kafka-dump-log's output depends on. Needs scala-library 2.13
 * (and kafka-clients for the "tp" mode) on the classpath.
 *
 *   ScalaOrder            each stdin line: tab-separated put(key, 1) calls on a mutable.HashMap[String, _]
 *                         (repeats allowed); prints the keys in iteration order, tab-separated.
 *   ScalaOrder tp         each stdin line: tab-separated "topic<SP>partition" items added to a
 *                         mutable.HashSet[TopicPartition] (TransactionMetadata.topicPartitions); prints them in
 *                         iteration order as TopicPartition.toString, comma-separated.
 */
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

import org.apache.kafka.common.TopicPartition;

public class ScalaOrder {
    public static void main(String[] args) throws Exception {
        boolean tp = args.length > 0 && args[0].equals("tp");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            StringBuilder out = new StringBuilder();
            if (tp) {
                scala.collection.mutable.HashSet<TopicPartition> set = new scala.collection.mutable.HashSet<>();
                for (String item : line.split("\t")) {
                    int sp = item.lastIndexOf(' ');
                    set.add(new TopicPartition(item.substring(0, sp), Integer.parseInt(item.substring(sp + 1))));
                }
                scala.collection.Iterator<TopicPartition> it = set.iterator();
                while (it.hasNext())
                    out.append(out.length() > 0 ? "," : "").append(it.next());
            } else {
                scala.collection.mutable.HashMap<String, Object> map = new scala.collection.mutable.HashMap<>();
                for (String key : line.split("\t"))
                    map.put(key, 1);
                scala.collection.Iterator<String> it = map.keysIterator();
                while (it.hasNext())
                    out.append(out.length() > 0 ? "\t" : "").append(it.next());
            }
            System.out.println(out);
        }
    }
}
