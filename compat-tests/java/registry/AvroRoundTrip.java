import io.confluent.kafka.serializers.KafkaAvroDeserializer;
import io.confluent.kafka.serializers.KafkaAvroSerializer;
import java.time.Duration;
import java.util.*;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.*;

// Confluent's KafkaAvroSerializer/Deserializer (7.0.16) with the Java Kafka client through kafkalite and its
// schema registry. Usage: AvroRoundTrip BOOTSTRAP REGISTRY_URL TOPIC; prints the decoded records, one a line.
public class AvroRoundTrip {
  public static void main(String[] args) throws Exception {
    String bootstrap = args[0], url = args[1], topic = args[2];
    Schema schema = new Schema.Parser().parse(
        "{\"type\":\"record\",\"name\":\"Reading\",\"namespace\":\"jv\",\"fields\":["
        + "{\"name\":\"sensor\",\"type\":\"string\"},{\"name\":\"value\",\"type\":\"double\"}]}");
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", KafkaAvroSerializer.class.getName());
    p.put("schema.registry.url", url);
    try (Producer<String, Object> producer = new KafkaProducer<>(p)) {
      for (int i = 0; i < 3; i++) {
        GenericRecord r = new GenericData.Record(schema);
        r.put("sensor", "s" + i);
        r.put("value", i * 1.5);
        producer.send(new ProducerRecord<>(topic, "k" + i, r)).get();
      }
    }
    Properties c = new Properties();
    c.put("bootstrap.servers", bootstrap);
    c.put("group.id", "java-avro-" + topic);
    c.put("auto.offset.reset", "earliest");
    c.put("key.deserializer", StringDeserializer.class.getName());
    c.put("value.deserializer", KafkaAvroDeserializer.class.getName());
    c.put("schema.registry.url", url);
    int seen = 0;
    try (Consumer<String, Object> consumer = new KafkaConsumer<>(c)) {
      consumer.subscribe(List.of(topic));
      long deadline = System.currentTimeMillis() + 60000;
      while (seen < 3 && System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<String, Object> rec : consumer.poll(Duration.ofMillis(500))) {
          GenericRecord v = (GenericRecord) rec.value();
          System.out.println(v.get("sensor") + " " + v.get("value") + " " + v.getSchema().getFullName());
          seen++;
        }
      }
    }
  }
}
