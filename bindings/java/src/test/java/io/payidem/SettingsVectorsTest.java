package io.payidem;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.Test;

/**
 * core/tests/vectors/settings-v1.json's client cases through the typed
 * {@link PayidemClient.Builder}: every case whose value a Java setter can
 * take (a wrong JSON type, an unknown key or a hex text has no Java
 * spelling) gives the core's resolved value or its error and field.
 */
class SettingsVectorsTest {
    private static final Map<String, BiConsumer<PayidemClient.Builder, JsonElement>> SETTERS = new HashMap<>();
    private static final JsonObject BUDGET = JsonParser.parseString(PayidemClient.defaults()).getAsJsonObject()
            .getAsJsonObject("options").getAsJsonObject("retry_budget");

    static {
        SETTERS.put("base_url", (b, v) -> b.baseUrl(text(v)));
        SETTERS.put("key_id", (b, v) -> b.keyId(text(v)));
        SETTERS.put("journal_path", (b, v) -> b.journalPath(text(v)));
        SETTERS.put("connect_timeout_ms", (b, v) -> b.connectTimeout(Duration.ofMillis(number(v))));
        SETTERS.put("request_timeout_ms", (b, v) -> b.requestTimeout(Duration.ofMillis(number(v))));
        SETTERS.put("retry.base_ms", (b, v) -> b.backoffBase(Duration.ofMillis(number(v))));
        SETTERS.put("retry.cap_ms", (b, v) -> b.backoffCap(Duration.ofMillis(number(v))));
        SETTERS.put("retry.max_attempts", (b, v) -> b.maxAttempts(number(v)));
        SETTERS.put("retry.deadline_ms", (b, v) -> b.deadline(Duration.ofMillis(number(v))));
        for (String k : new String[] {"capacity", "retry_cost", "timeout_cost", "success_refund"}) {
            SETTERS.put("retry_budget." + k, (b, v) -> {
                Map<String, Long> budget = new HashMap<>();
                for (String name : BUDGET.keySet()) {
                    budget.put(name, BUDGET.get(name).getAsLong());
                }
                budget.put(k, number(v));
                b.retryBudget(budget.get("capacity"), budget.get("retry_cost"), budget.get("timeout_cost"),
                        budget.get("success_refund"));
            });
        }
        SETTERS.put("key_retention_s", (b, v) -> b.keyRetention(Duration.ofSeconds(number(v))));
        SETTERS.put("settled_retention_s", (b, v) -> b.settledRetention(Duration.ofSeconds(number(v))));
        SETTERS.put("max_clock_offset_s", (b, v) -> b.maxClockOffset(Duration.ofSeconds(number(v))));
        SETTERS.put("lease_ttl_s", (b, v) -> b.leaseTtl(Duration.ofSeconds(number(v))));
        SETTERS.put("lease_heartbeat_ms", (b, v) -> b.leaseHeartbeat(Duration.ofMillis(number(v))));
        SETTERS.put("allow_insecure_http", (b, v) -> b.allowInsecureHttp(flag(v)));
        SETTERS.put("proxy_from_env", (b, v) -> b.proxyFromEnv(flag(v)));
        SETTERS.put("proxy", (b, v) -> b.proxy(text(v)));
        SETTERS.put("ca_bundle", (b, v) -> b.caBundle(text(v)));
        SETTERS.put("client_cert", (b, v) -> b.clientCertificate(text(v), null));
        SETTERS.put("client_key", (b, v) -> b.clientCertificate(null, text(v)));
    }

    /** A value Java's parameter types cannot hold. */
    private static final class NoJavaSpelling extends RuntimeException {
        private static final long serialVersionUID = 1L;
    }

    private static String text(JsonElement v) {
        if (!v.isJsonPrimitive() || !v.getAsJsonPrimitive().isString()) {
            throw new NoJavaSpelling();
        }
        return v.getAsString();
    }

    private static long number(JsonElement v) {
        if (!v.isJsonPrimitive() || !v.getAsJsonPrimitive().isNumber()) {
            throw new NoJavaSpelling();
        }
        java.math.BigDecimal d = v.getAsBigDecimal();
        if (d.signum() != 0 && d.stripTrailingZeros().scale() > 0 || d.abs().compareTo(
                java.math.BigDecimal.valueOf(Long.MAX_VALUE)) > 0) {
            throw new NoJavaSpelling();
        }
        return d.longValueExact();
    }

    private static boolean flag(JsonElement v) {
        if (!v.isJsonPrimitive() || !v.getAsJsonPrimitive().isBoolean()) {
            throw new NoJavaSpelling();
        }
        return v.getAsBoolean();
    }

    private static JsonElement at(JsonObject doc, String path) {
        JsonElement e = doc;
        for (String part : path.split("\\.")) {
            e = e.getAsJsonObject().get(part);
        }
        return e;
    }

    @Test
    void clientCasesThroughTheBuilder() throws Exception {
        JsonObject client = Vectors.load("settings-v1.json").getAsJsonObject("client");
        JsonObject base = client.getAsJsonObject("base");
        int ran = 0;
        int noSpelling = 0;
        for (JsonElement ce : client.getAsJsonArray("cases")) {
            JsonObject c = ce.getAsJsonObject();
            String setting = Vectors.str(c, "setting");
            String name = setting + "/" + Vectors.str(c, "case");
            PayidemClient.Builder b = PayidemClient.builder();
            try {
                for (Map.Entry<String, JsonElement> e : base.entrySet()) {
                    if (!e.getKey().equals(setting)) {
                        SETTERS.get(e.getKey()).accept(b, e.getValue());
                    }
                }
                if (c.has("with")) {
                    for (Map.Entry<String, JsonElement> e : c.getAsJsonObject("with").entrySet()) {
                        SETTERS.get(e.getKey()).accept(b, e.getValue());
                    }
                }
                if (c.has("value")) {
                    BiConsumer<PayidemClient.Builder, JsonElement> set = SETTERS.get(setting);
                    if (set == null) {
                        throw new NoJavaSpelling();
                    }
                    set.accept(b, c.get("value"));
                }
            } catch (NoJavaSpelling e) {
                noSpelling++;
                continue;
            }
            JsonObject expect = c.getAsJsonObject("expect");
            try {
                JsonObject resolved = JsonParser.parseString(b.resolve()).getAsJsonObject();
                if (expect.has("error")) {
                    fail(name + ": resolved, want " + expect);
                }
                JsonElement want = expect.get("value");
                JsonElement got = at(resolved, setting);
                assertEquals(want.isJsonPrimitive() && want.getAsJsonPrimitive().isNumber()
                        ? want.getAsBigDecimal() : want, got.isJsonPrimitive() && got.getAsJsonPrimitive().isNumber()
                        ? got.getAsBigDecimal() : got, name);
            } catch (PayidemException e) {
                assertEquals(Vectors.str(expect, "error"), e.code().wireName(), name + ": " + e.getMessage());
                assertEquals(Vectors.str(expect, "field"), e.field(), name);
            }
            ran++;
        }
        assertTrue(ran >= 95, ran + " cases ran, " + noSpelling + " have no Java spelling");
        assertEquals(client.getAsJsonArray("cases").size(), ran + noSpelling);
    }
}
