/*
 * Key iteration order of Scala 2.13's mutable.HashMap, which kafka-dump-log (DumpLogSegments) uses to collect
 * its per-file error reports. Each stdin line is a tab-separated sequence of put(key, 1) calls (repeats allowed);
 * the program prints the map's keys in iteration order, tab-separated. Needs scala-library 2.13 on the classpath.
 */
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

public class ScalaOrder {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            scala.collection.mutable.HashMap<String, Object> map = new scala.collection.mutable.HashMap<>();
            for (String key : line.split("\t"))
                map.put(key, 1);
            scala.collection.Iterator<String> it = map.keysIterator();
            StringBuilder out = new StringBuilder();
            while (it.hasNext()) {
                if (out.length() > 0)
                    out.append('\t');
                out.append(it.next());
            }
            System.out.println(out);
        }
    }
}
