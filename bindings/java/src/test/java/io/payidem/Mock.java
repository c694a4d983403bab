package io.payidem;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/** One payidem-mock process on 127.0.0.1, port 0, with its control routes and oracle. */
final class Mock implements AutoCloseable {
    /** The mock's public test key (mock/README.md). */
    static final String KEY_ID = "key_test_1";

    static final String SECRET = "sk_test_payidem_mock_secret_0001";

    final String url;
    private final Process process;

    /** The mock binary: $PAYIDEM_MOCK, else target/release/payidem-mock (make test-java builds it). */
    static Path binary() {
        String env = System.getenv("PAYIDEM_MOCK");
        Path p = env != null && !env.isEmpty() ? java.nio.file.Paths.get(env)
                : Vectors.repo().resolve("target/release/payidem-mock");
        if (!Files.isExecutable(p)) {
            throw new IllegalStateException(p + " is missing: cargo build --release -p payidem-mock");
        }
        return p;
    }

    Mock(String... flags) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(binary().toString());
        for (String f : new String[] {"--port", "0", "--control", "--seed", "7"}) {
            cmd.add(f);
        }
        for (String f : flags) {
            cmd.add(f);
        }
        process = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        String line = r.readLine();
        if (line == null || !line.startsWith("listening on ")) {
            process.destroyForcibly();
            throw new IOException("payidem-mock printed " + line);
        }
        url = "http://" + line.substring("listening on ".length()).trim();
        Thread drain = new Thread(() -> {
            try {
                while (r.readLine() != null) {
                    // discard the rest of stdout so the mock never blocks on it
                }
            } catch (IOException e) {
                // the mock ended
            }
        });
        drain.setDaemon(true);
        drain.start();
    }

    /** Stops the mock (SIGKILL) and waits for it. */
    @Override
    public void close() {
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Replaces the mock's faults (POST /_mock/faults). */
    void setFaults(String json) throws IOException {
        HttpURLConnection c = (HttpURLConnection) new URL(url + "/_mock/faults").openConnection();
        c.setRequestMethod("POST");
        c.setDoOutput(true);
        c.setRequestProperty("Content-Type", "application/json");
        try (OutputStream out = c.getOutputStream()) {
            out.write(json.getBytes(StandardCharsets.UTF_8));
        }
        int status = c.getResponseCode();
        String body = read(status < 400 ? c.getInputStream() : c.getErrorStream());
        assertEquals(200, status, "POST /_mock/faults: " + body);
    }

    /** GET {@code path} of the mock as JSON. */
    JsonObject get(String path) throws IOException {
        HttpURLConnection c = (HttpURLConnection) new URL(url + path).openConnection();
        assertEquals(200, c.getResponseCode(), "GET " + path);
        return JsonParser.parseString(read(c.getInputStream())).getAsJsonObject();
    }

    /** The oracle: GET /_mock/stats. */
    JsonObject stats() throws IOException {
        return get("/_mock/stats");
    }

    /** Payments the mock created for {@code order} (0 when it never saw it). */
    int paymentsCreated(String order) throws IOException {
        JsonElement o = stats().getAsJsonObject("orders").get(order);
        return o == null ? 0 : o.getAsJsonObject().get("payments_created").getAsInt();
    }

    /** Every fault kind the mock knows: the probability settings of GET /_mock/faults. */
    List<String> faultKinds() throws IOException {
        List<String> kinds = new ArrayList<>();
        for (Map.Entry<String, JsonElement> e : get("/_mock/faults").entrySet()) {
            if (e.getValue().getAsJsonPrimitive().getAsString().contains(".")) {
                kinds.add(e.getKey());
            }
        }
        return kinds;
    }

    /** Fails unless every order got exactly one payment under one key and the mock refused no duplicate. */
    void assertOnePaymentEach(List<String> orders) throws IOException {
        JsonObject s = stats();
        for (String id : orders) {
            JsonElement e = s.getAsJsonObject("orders").get(id);
            assertTrue(e != null, "order " + id + " never reached the mock");
            JsonObject o = e.getAsJsonObject();
            assertEquals(1, o.get("payments_created").getAsInt(), id + ": " + o);
            assertEquals(1, o.getAsJsonArray("idempotency_keys").size(), id + ": " + o);
            assertEquals(0, o.getAsJsonArray("duplicate_keys").size(), id + ": " + o);
        }
        assertEquals(0, s.get("duplicate_order").getAsInt(), "duplicate_order");
        assertEquals(orders.size(), s.get("payments").getAsInt(), "payments");
    }

    /** A client of this mock with short backoffs and a memory journal. */
    PayidemClient.Builder client() {
        return PayidemClient.builder().baseUrl(url).keyId(KEY_ID).secret(SECRET.getBytes(StandardCharsets.UTF_8))
                .journalPath(PayidemClient.JOURNAL_MEMORY).connectTimeout(Duration.ofSeconds(2))
                .requestTimeout(Duration.ofSeconds(2)).maxAttempts(8).backoffBase(Duration.ofMillis(5))
                .backoffCap(Duration.ofMillis(50)).deadline(Duration.ofSeconds(20)).retryBudget(100000, 5, 10, 1);
    }

    /** A fresh order id with a readable prefix. */
    static String orderId(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 12);
    }

    /** The create operation's body of one order. */
    static byte[] paymentBody(String order, int amount) {
        return ("{\"order_id\":\"" + order + "\",\"amount\":" + amount + ",\"currency\":\"RUB\"}")
                .getBytes(StandardCharsets.UTF_8);
    }

    /** The status path of one order. */
    static String statusPath(String order) {
        return "/v1/payments?order_id=" + order;
    }

    /**
     * Executes one payment and resumes it while it is unsettled and not
     * final (unknown, transport, refused), a bounded number of times, as a
     * caller would.
     */
    static Outcome settle(PayidemClient c, String order, int amount) {
        PayidemException last = null;
        try {
            return c.execute(order, "POST", "/v1/payments", paymentBody(order, amount), statusPath(order));
        } catch (PayidemException.OutcomeUnknown | PayidemException.Transport | PayidemException.Refused e) {
            last = e;
        }
        for (int i = 0; i < 20; i++) {
            try {
                return c.resume(order);
            } catch (PayidemException.OutcomeUnknown | PayidemException.Transport | PayidemException.Refused e) {
                last = e;
            }
        }
        throw last;
    }

    private static String read(InputStream in) throws IOException {
        if (in == null) {
            return "";
        }
        try (InputStream i = in) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buf = new byte[8192];
            for (int n; (n = i.read(buf)) > 0; ) {
                out.write(buf, 0, n);
            }
            return new String(out.toByteArray(), StandardCharsets.UTF_8);
        }
    }
}
