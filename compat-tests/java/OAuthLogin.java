import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;

import javax.security.auth.callback.Callback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;

import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerToken;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerTokenCallback;

/**
 * A login callback handler that hands out an unsecured JWT (alg "none") for the JAAS option
 * unsecuredLoginStringClaim_sub, like kafka-clients' OAuthBearerUnsecuredLoginCallbackHandler, which cannot
 * run here: it parses its own token with jackson-databind, not among the jars tools/bootstrap.sh extracts.
 * Used as sasl.login.callback.handler.class=OAuthLogin.
 */
public final class OAuthLogin implements AuthenticateCallbackHandler {
    private String sub = "ANONYMOUS";

    @Override
    public void configure(Map<String, ?> configs, String mechanism, List<AppConfigurationEntry> entries) {
        Object s = entries.get(0).getOptions().get("unsecuredLoginStringClaim_sub");
        if (s != null) sub = s.toString();
    }

    @Override
    public void handle(Callback[] callbacks) throws UnsupportedCallbackException {
        for (Callback cb : callbacks) {
            if (!(cb instanceof OAuthBearerTokenCallback)) throw new UnsupportedCallbackException(cb);
            long now = System.currentTimeMillis();
            long exp = now + 3_600_000L;
            Base64.Encoder enc = Base64.getUrlEncoder().withoutPadding();
            String jwt = enc.encodeToString("{\"alg\":\"none\"}".getBytes(StandardCharsets.UTF_8)) + "."
                + enc.encodeToString(("{\"sub\":\"" + sub + "\",\"iat\":" + now / 1000 + ",\"exp\":" + exp / 1000 + "}")
                    .getBytes(StandardCharsets.UTF_8)) + ".";
            ((OAuthBearerTokenCallback) cb).token(new OAuthBearerToken() {
                public String value() { return jwt; }
                public Set<String> scope() { return Collections.emptySet(); }
                public long lifetimeMs() { return exp; }
                public String principalName() { return sub; }
                public Long startTimeMs() { return now; }
            });
        }
    }

    @Override
    public void close() {
    }
}
