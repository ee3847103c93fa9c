// Differential oracle: Apache kafka-clients' own generated message classes read the bytes our codec wrote and
// write them back. Input lines: "<apiKey> <request|response> <version> <hex>" or "H <apiKey> <version>".
// Output lines: "OK <hex>" (Kafka's re-encoding), "H <requestHeaderVersion> <responseHeaderVersion>",
// or "ERR <exception>".
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.MessageUtil;

public class WireRoundTrip {
    public static void main(String[] args) throws Exception {
        HexFormat hex = HexFormat.of();
        List<String> out = new ArrayList<>();
        for (String line : Files.readAllLines(Paths.get(args[0]))) {
            String[] p = line.split(" ");
            try {
                if (p[0].equals("H")) {
                    ApiMessageType t = ApiMessageType.fromApiKey(Short.parseShort(p[1]));
                    short v = Short.parseShort(p[2]);
                    out.add("H " + t.requestHeaderVersion(v) + " " + t.responseHeaderVersion(v));
                    continue;
                }
                ApiMessageType t = ApiMessageType.fromApiKey(Short.parseShort(p[0]));
                ApiMessage m = p[1].equals("request") ? t.newRequest() : t.newResponse();
                short v = Short.parseShort(p[2]);
                ByteBuffer buf = ByteBuffer.wrap(hex.parseHex(p.length > 3 ? p[3] : ""));
                m.read(new ByteBufferAccessor(buf), v);
                if (buf.remaining() != 0) {
                    throw new IllegalStateException(buf.remaining() + " bytes left after read");
                }
                out.add("OK " + hex.formatHex(MessageUtil.byteBufferToArray(MessageUtil.toByteBuffer(m, v))));
            } catch (Throwable e) {
                out.add("ERR " + e.toString().replace('\n', ' '));
            }
        }
        Files.write(Paths.get(args[1]), out);
    }
}
