package io.payidem;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/** core/tests/vectors/protocol-v1.json: the same vectors every language passes. */
class VectorsTest {
    private static JsonObject vectors() throws Exception {
        JsonObject v = Vectors.load("protocol-v1.json");
        for (String group : new String[] {"sign", "sign_invalid", "decide"}) {
            assertFalse(v.getAsJsonArray(group).isEmpty(), group + " is empty");
        }
        assertFalse(v.getAsJsonObject("verify_sequence").getAsJsonArray("requests").isEmpty());
        return v;
    }

    private static Stream<JsonObject> cases(JsonArray a) {
        List<JsonObject> out = new ArrayList<>();
        for (JsonElement e : a) {
            out.add(e.getAsJsonObject());
        }
        return out.stream();
    }

    @TestFactory
    Stream<DynamicTest> sign() throws Exception {
        return cases(vectors().getAsJsonArray("sign")).map(c -> DynamicTest.dynamicTest(Vectors.str(c, "name"), () -> {
            byte[] body = Vectors.b64(Vectors.str(c, "body_b64"));
            JsonObject expect = c.getAsJsonObject("expect");
            String method = Vectors.str(c, "method");
            String path = Vectors.str(c, "path");
            String ts = Vectors.str(c, "timestamp");
            String nonce = Vectors.str(c, "nonce");
            String key = Vectors.str(c, "idempotency_key");
            assertEquals(Vectors.str(expect, "canonical"), Signer.canonicalString(method, path, ts, nonce, key, body));
            assertEquals(Vectors.str(expect, "body_sha256"), Signer.bodySha256Hex(body));
            try (Signer s = new Signer("key_vectors", Vectors.b64(Vectors.str(c, "secret_b64")))) {
                assertEquals(Vectors.str(expect, "signature"), s.signParts(method, path, ts, nonce, key, body));
            }
        }));
    }

    @TestFactory
    Stream<DynamicTest> signInvalid() throws Exception {
        return cases(vectors().getAsJsonArray("sign_invalid")).map(c -> DynamicTest.dynamicTest(Vectors.str(c, "name"),
                () -> {
                    byte[] body = Vectors.b64(Vectors.str(c, "body_b64"));
                    String field = Vectors.str(c, "field");
                    PayidemException e = assertThrows(PayidemException.class, () -> {
                        try (Signer s = new Signer("key_vectors", Vectors.b64(Vectors.str(c, "secret_b64")))) {
                            s.signParts(Vectors.str(c, "method"), Vectors.str(c, "path"), Vectors.str(c, "timestamp"),
                                    Vectors.str(c, "nonce"), Vectors.str(c, "idempotency_key"), body);
                        }
                    });
                    assertEquals(Vectors.str(c, "expect_error"), e.code().wireName());
                    assertTrue(e instanceof PayidemException.InvalidArgument);
                    assertEquals(field, e.field());
                    if (!"secret".equals(field)) {
                        PayidemException c2 = assertThrows(PayidemException.InvalidArgument.class,
                                () -> Signer.canonicalString(Vectors.str(c, "method"), Vectors.str(c, "path"),
                                        Vectors.str(c, "timestamp"), Vectors.str(c, "nonce"),
                                        Vectors.str(c, "idempotency_key"), body));
                        assertEquals(field, c2.field());
                    }
                }));
    }

    @Test
    void verifySequence() throws Exception {
        JsonObject seq = vectors().getAsJsonObject("verify_sequence");
        Map<String, List<byte[]>> keys = new LinkedHashMap<>();
        for (Map.Entry<String, JsonElement> k : seq.getAsJsonObject("keys_b64").entrySet()) {
            List<byte[]> secrets = new ArrayList<>();
            for (JsonElement s : k.getValue().getAsJsonArray()) {
                secrets.add(Vectors.b64(s.getAsString()));
            }
            keys.put(k.getKey(), secrets);
        }
        int checked = 0;
        try (Verifier v = new Verifier(keys, seq.get("window_seconds").getAsLong(), 1024)) {
            for (JsonElement re : seq.getAsJsonArray("requests")) {
                JsonObject r = re.getAsJsonObject();
                String name = Vectors.str(r, "name");
                List<Map.Entry<String, String>> headers = new ArrayList<>();
                for (Map.Entry<String, JsonElement> h : r.getAsJsonObject("headers").entrySet()) {
                    headers.add(new AbstractMap.SimpleEntry<>(h.getKey(), h.getValue().getAsString()));
                }
                JsonObject expect = r.getAsJsonObject("expect");
                String code = Vectors.str(expect, "code");
                long now = r.get("server_now").getAsLong();
                try {
                    Verifier.Verified ok = v.verify(Vectors.str(r, "method"), Vectors.str(r, "path"),
                            Collections.unmodifiableList(headers), Vectors.b64(Vectors.str(r, "body_b64")), now);
                    if (code != null) {
                        fail(name + ": accepted, want " + code);
                    }
                    assertEquals(expect.get("status").getAsInt(), 200, name);
                    assertEquals(r.getAsJsonObject("headers").get("X-Api-Key").getAsString(), ok.keyId(), name);
                    assertEquals(r.getAsJsonObject("headers").get("X-Nonce").getAsString(), ok.nonce(), name);
                } catch (PayidemException e) {
                    if (code == null) {
                        fail(name + ": " + e.getMessage() + ", want success");
                    }
                    assertEquals(code, e.code().wireName(), name);
                    assertEquals(expect.get("status").getAsInt(), e.httpStatus(), name);
                    if (e instanceof PayidemException.TimestampOutOfWindow) {
                        assertEquals(Long.valueOf(now), e.serverTime(), name);
                    }
                }
                checked++;
            }
        }
        assertEquals(seq.getAsJsonArray("requests").size(), checked);
    }
}
