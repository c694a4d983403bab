package io.payidem.okhttp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.payidem.ErrorCode;
import io.payidem.PayidemClient;
import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Tagged OkHttp requests run as payidem operations against payidem-mock; signed bytes are never sent twice. */
class PayidemOkHttpTest {
    private static final MediaType JSON = MediaType.get("application/json");
    private Process mock;
    private String url;

    @BeforeEach
    void startMock() throws IOException {
        String bin = System.getenv("PAYIDEM_MOCK");
        if (bin == null || bin.isEmpty()) {
            bin = System.getProperty("payidem.repo") + "/target/release/payidem-mock";
        }
        mock = new ProcessBuilder(bin, "--port", "0", "--control", "--seed", "11")
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String line = new java.io.BufferedReader(new java.io.InputStreamReader(mock.getInputStream(),
                StandardCharsets.UTF_8)).readLine();
        assertTrue(line != null && line.startsWith("listening on "), "payidem-mock printed " + line);
        url = "http://" + line.substring("listening on ".length()).trim();
    }

    @AfterEach
    void stopMock() {
        mock.destroyForcibly();
    }

    private JsonObject control(String method, String path, String body) throws IOException {
        HttpURLConnection c = (HttpURLConnection) new URL(url + path).openConnection();
        c.setRequestMethod(method);
        if (body != null) {
            c.setDoOutput(true);
            c.setRequestProperty("Content-Type", "application/json");
            c.getOutputStream().write(body.getBytes(StandardCharsets.UTF_8));
        }
        assertEquals(200, c.getResponseCode(), method + " " + path);
        return JsonParser.parseReader(new java.io.InputStreamReader(c.getInputStream(), StandardCharsets.UTF_8))
                .getAsJsonObject();
    }

    private PayidemClient client() {
        return PayidemClient.builder().baseUrl(url).keyId("key_test_1")
                .secret("sk_test_payidem_mock_secret_0001".getBytes(StandardCharsets.UTF_8))
                .journalPath(PayidemClient.JOURNAL_MEMORY).maxAttempts(30).backoffBase(Duration.ofMillis(5))
                .backoffCap(Duration.ofMillis(50)).requestTimeout(Duration.ofSeconds(2)).build();
    }

    private static Request payment(String base, String order, int amount) {
        String body = "{\"order_id\":\"" + order + "\",\"amount\":" + amount + ",\"currency\":\"RUB\"}";
        return new Request.Builder().url(base + "/v1/payments").post(RequestBody.create(body, JSON))
                .tag(PayidemOrder.class, new PayidemOrder(order, "/v1/payments?order_id=" + order)).build();
    }

    @Test
    void taggedRequestsPayOnceThroughFaultsAndNoSignedAttemptIsSentTwice() throws Exception {
        control("POST", "/_mock/faults", "{\"drop_after_commit\": 0.25, \"error_502\": 0.15, \"error_503\": 0.15,"
                + " \"error_500_after_commit\": 0.15, \"timeout_504_after_commit\": 0.1}");
        try (PayidemClient client = client()) {
            OkHttpClient http = PayidemOkHttp.newClient(new OkHttpClient.Builder()
                    .readTimeout(Duration.ofSeconds(2)).build(), client);
            List<String> orders = new ArrayList<>();
            for (int i = 0; i < 15; i++) {
                String order = "okhttp-" + UUID.randomUUID().toString().substring(0, 12);
                orders.add(order);
                Response r = null;
                for (int tries = 0; r == null && tries < 10; tries++) {
                    try {
                        r = http.newCall(payment(url, order, 100 + i)).execute();
                    } catch (PayidemIOException e) {
                        assertFalse(e.error().isFinal(), e.getMessage());
                    }
                }
                assertTrue(r != null, order + " never settled");
                try (Response done = r) {
                    assertEquals(2, done.code() / 100, order);
                    assertTrue(done.body().string().contains(order));
                }
                assertEquals("succeeded", client.status(order).state());
            }
            JsonObject stats = control("GET", "/_mock/stats", null);
            JsonObject byOrder = stats.getAsJsonObject("orders");
            for (String order : orders) {
                assertEquals(1, byOrder.getAsJsonObject(order).get("payments_created").getAsInt(), order);
                assertEquals(0, byOrder.getAsJsonObject(order).getAsJsonArray("duplicate_keys").size(), order);
            }
            assertEquals(orders.size(), stats.get("payments").getAsInt());
            JsonObject byCode = stats.getAsJsonObject("requests").getAsJsonObject("by_error_code");
            JsonElement reused = byCode.get("nonce_reused");
            assertTrue(reused == null || reused.getAsInt() == 0, "signed bytes reached the mock twice: " + byCode);
            assertTrue(stats.getAsJsonObject("faults").size() > 0, "no fault was injected");
        }
    }

    @Test
    void aFinalRefusalIsTheResponseAndUntaggedRequestsPassUntouched() throws Exception {
        try (PayidemClient client = client()) {
            OkHttpClient http = PayidemOkHttp.newClient(new OkHttpClient(), client);
            String order = "okhttp-declined-" + UUID.randomUUID().toString().substring(0, 8);
            try (Response r = http.newCall(payment(url, order, 1402)).execute()) {
                assertEquals(402, r.code());
                assertTrue(r.body().string().contains("card_declined"));
            }
            assertEquals("rejected", client.status(order).state());
            try (Response ping = http.newCall(new Request.Builder().url(url + "/_mock/ping").build()).execute()) {
                assertEquals(200, ping.code());
                assertEquals(null, ping.request().header("X-Signature"), "an untagged request is not signed");
            }
            PayidemIOException e = assertThrows(PayidemIOException.class,
                    () -> http.newCall(payment("http://127.0.0.2:9", "elsewhere", 1)).execute());
            assertEquals(ErrorCode.INVALID_ARGUMENT, e.error().code());
            assertEquals("url", e.error().field(), "a signed request is never sent off the base URL");
        }
    }

    @Test
    void okHttpsOwnResendAfterACutConnectionIsRefusedAndTheOrderPaysOnce() throws Exception {
        try (PayidemClient client = client()) {
            // What OkHttp hands to the network, before the guard: every signed attempt's nonce.
            List<String> offered = Collections.synchronizedList(new ArrayList<String>());
            OkHttpClient.Builder b = PayidemOkHttp.newClient(new OkHttpClient.Builder()
                    .readTimeout(Duration.ofSeconds(2)).build(), client).newBuilder().retryOnConnectionFailure(true);
            b.networkInterceptors().add(0, chain -> {
                String nonce = chain.request().header("X-Nonce");
                if (nonce != null) {
                    offered.add(nonce);
                }
                return chain.proceed(chain.request());
            });
            OkHttpClient http = b.build();
            // A pooled connection that has served a request: OkHttp retries a request cut on it.
            try (Response ping = http.newCall(new Request.Builder().url(url + "/_mock/ping").build()).execute()) {
                assertEquals(200, ping.code());
            }
            control("POST", "/_mock/faults", "{\"drop_after_commit\": 1.0}");
            String order = "okhttp-cut-" + UUID.randomUUID().toString().substring(0, 8);
            try (Response r = http.newCall(payment(url, order, 77)).execute()) {
                assertEquals(2, r.code() / 100, order);
                assertTrue(r.body().string().contains(order));
            }
            assertEquals("succeeded", client.status(order).state());
            Set<String> distinct = new HashSet<>(offered);
            assertTrue(distinct.size() < offered.size(), "OkHttp never tried to resend a signed attempt: " + offered);
            JsonObject stats = control("GET", "/_mock/stats", null);
            JsonObject mine = stats.getAsJsonObject("orders").getAsJsonObject(order);
            assertEquals(1, mine.get("payments_created").getAsInt(), order);
            assertEquals(1, stats.get("payments").getAsInt());
            JsonElement reused = stats.getAsJsonObject("requests").getAsJsonObject("by_error_code")
                    .get("nonce_reused");
            assertTrue(reused == null || reused.getAsInt() == 0, "the resend reached the mock: " + stats);
        }
    }

    @Test
    void theResendGuardRefusesTheSameNonceTwice() throws Exception {
        OkHttpClient http = new OkHttpClient.Builder().addNetworkInterceptor(new PayidemOkHttp.ResendGuard())
                .build();
        Request twice = new Request.Builder().url(url + "/_mock/ping").header("X-Nonce",
                UUID.randomUUID().toString()).build();
        try (Response r = http.newCall(twice).execute()) {
            assertEquals(200, r.code());
        }
        IOException e = assertThrows(IOException.class, () -> http.newCall(twice).execute());
        assertTrue(e.getMessage().contains("refused to send a signed attempt again"), e.getMessage());
    }
}
