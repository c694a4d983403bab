package io.payidem.servlet;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.payidem.SignedHeaders;
import io.payidem.Signer;
import io.payidem.Verifier;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The javax and jakarta filters on requests and responses made of
 * proxies (their method names are the same in both APIs): an accepted
 * request reaches the application with its Verified and its body; a
 * refused one gets the core's answer and never reaches it. Each
 * namespace's harness is {@code FilterApi} of its package (the jakarta one
 * made by the build from the javax one, like the filter).
 */
public class PayidemVerifyingFilterTest {
    private static final byte[] SECRET = "sk_test_payidem_mock_secret_0001".getBytes(StandardCharsets.UTF_8);

    /** What one filtered request produced. */
    public static final class Exchange {
        /** The response's status. */
        public int status = 200;
        /** The response's headers. */
        public final Map<String, String> headers = new LinkedHashMap<>();
        /** The response's body. */
        public final ByteArrayOutputStream out = new ByteArrayOutputStream();
        /** The request attribute the application saw; null when it never ran. */
        public Object verified;
        /** The body the application read; null when it never ran. */
        public byte[] bodySeen;
    }

    /** The servlet API of one namespace: its classes and how to make its abstract streams. */
    public interface Api {
        Exchange run(Verifier v, long limit, String method, String uri, Map<String, String> headers, byte[] body)
                throws Exception;
    }

    public static Object proxy(Class<?> type, Map<String, java.util.function.Function<Object[], Object>> methods) {
        return Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, (p, m, args) -> {
            java.util.function.Function<Object[], Object> f = methods.get(m.getName());
            if (f == null) {
                throw new UnsupportedOperationException(m.getName());
            }
            return f.apply(args);
        });
    }

    public static Map<String, java.util.function.Function<Object[], Object>> request(String method, String uri,
            Map<String, String> headers, Object in, Map<String, Object> attributes) {
        Map<String, java.util.function.Function<Object[], Object>> m = new HashMap<>();
        m.put("getMethod", a -> method);
        m.put("getRequestURI", a -> uri);
        m.put("getQueryString", a -> null);
        m.put("getHeaderNames", a -> Collections.enumeration(headers.keySet()));
        m.put("getHeaders", a -> Collections.enumeration(headers.containsKey((String) a[0])
                ? Collections.singletonList(headers.get((String) a[0])) : Collections.<String>emptyList()));
        m.put("getInputStream", a -> in);
        m.put("setAttribute", a -> attributes.put((String) a[0], a[1]));
        m.put("getAttribute", a -> attributes.get((String) a[0]));
        return m;
    }

    public static Map<String, java.util.function.Function<Object[], Object>> response(Exchange x, Object out) {
        Map<String, java.util.function.Function<Object[], Object>> m = new HashMap<>();
        m.put("setStatus", a -> x.status = (Integer) a[0]);
        m.put("addHeader", a -> x.headers.put((String) a[0], (String) a[1]));
        m.put("setContentLength", a -> null);
        m.put("getOutputStream", a -> out);
        return m;
    }

    public static byte[] readAll(InputStream in) throws java.io.IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        byte[] buf = new byte[4096];
        for (int n; (n = in.read(buf)) > 0; ) {
            b.write(buf, 0, n);
        }
        return b.toByteArray();
    }

    void verifiesAndRefuses(Api api) throws Exception {
        Map<String, List<byte[]>> keys = Collections.singletonMap("key_test_1", Collections.singletonList(SECRET));
        byte[] body = "{\"order_id\":\"ord-9\",\"amount\":5}".getBytes(StandardCharsets.UTF_8);
        try (Verifier v = new Verifier(keys, 300, 1000); Signer s = new Signer("key_test_1", SECRET)) {
            SignedHeaders h = s.sign("POST", "/v1/payments", "create-ord-9", body);
            Map<String, String> headers = new LinkedHashMap<>(h.asMap());
            headers.put("Content-Type", "application/json");

            Exchange ok = api.run(v, 1 << 20, "POST", "/v1/payments", headers, body);
            assertEquals(200, ok.status);
            Verifier.Verified verified = (Verifier.Verified) ok.verified;
            assertEquals("key_test_1", verified.keyId());
            assertEquals("create-ord-9", verified.idempotencyKey());
            assertArrayEquals(body, ok.bodySeen, "the application reads the verified body");

            Exchange replay = api.run(v, 1 << 20, "POST", "/v1/payments", headers, body);
            assertEquals(409, replay.status);
            assertNull(replay.bodySeen, "a refused request never reaches the application");
            assertTrue(replay.out.toString("UTF-8").contains("nonce_reused"), replay.out.toString("UTF-8"));

            Exchange unsigned = api.run(v, 1 << 20, "POST", "/v1/payments", Collections.emptyMap(), body);
            assertEquals(401, unsigned.status);
            assertTrue(unsigned.out.toString("UTF-8").contains("missing_signature"));

            SignedHeaders h2 = s.sign("POST", "/v1/payments", "create-ord-9", body);
            Exchange big = api.run(v, 8, "POST", "/v1/payments", new LinkedHashMap<>(h2.asMap()), body);
            assertEquals(413, big.status);
            assertNull(big.bodySeen);

            SignedHeaders h3 = s.signAt(System.currentTimeMillis() / 1000 - 3600, "POST", "/v1/payments",
                    "create-ord-9", body);
            Exchange old = api.run(v, 1 << 20, "POST", "/v1/payments", new LinkedHashMap<>(h3.asMap()), body);
            assertEquals(401, old.status);
            assertTrue(old.headers.containsKey("X-Server-Time"), old.headers.toString());
        }
    }

    @Test
    void javaxFilter() throws Exception {
        verifiesAndRefuses(io.payidem.servlet.javax.FilterApi.API);
    }

    @Test
    void jakartaFilter() throws Exception {
        verifiesAndRefuses(io.payidem.servlet.jakarta.FilterApi.API);
    }
}
