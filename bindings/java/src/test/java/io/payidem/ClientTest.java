package io.payidem;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** The journaled client against the mock platform over loopback. */
class ClientTest {
    @Test
    void paysOnceAndAnswersAgainFromTheJournal() throws Exception {
        try (Mock m = new Mock(); PayidemClient c = m.client().build()) {
            String order = Mock.orderId("pay");
            byte[] body = Mock.paymentBody(order, 125000);
            Outcome first = c.execute(order, "POST", "/v1/payments", body, Mock.statusPath(order));
            assertEquals(201, first.httpStatus());
            assertFalse(first.replayed());
            assertEquals(1, first.attempts());
            assertEquals(order, first.orderId());
            assertEquals("create-" + order, first.idempotencyKey());
            JsonObject p = JsonParser.parseString(new String(first.body(), StandardCharsets.UTF_8)).getAsJsonObject();
            assertEquals(order, p.get("order_id").getAsString());
            assertEquals(125000, p.get("amount").getAsInt());

            Outcome again = c.execute(order, "POST", "/v1/payments", body, Mock.statusPath(order));
            assertEquals(201, again.httpStatus());
            assertArrayEquals(first.body(), again.body());
            OperationStatus st = c.status(order);
            assertEquals("succeeded", st.state());
            assertEquals(1, st.attempts());
            assertFalse(c.status(Mock.orderId("never")).found());
            m.assertOnePaymentEach(Collections.singletonList(order));
        }
    }

    @Test
    void rejectedKeepsStatusAndBody() throws Exception {
        try (Mock m = new Mock(); PayidemClient c = m.client().build()) {
            String order = Mock.orderId("declined");
            PayidemException.Rejected e = assertThrows(PayidemException.Rejected.class, () -> c.execute(order, "POST",
                    "/v1/payments", Mock.paymentBody(order, 1402), Mock.statusPath(order)));
            assertEquals(ErrorCode.REJECTED, e.code());
            assertTrue(e.isFinal());
            assertEquals(402, e.httpStatus());
            assertTrue(new String(e.body(), StandardCharsets.UTF_8).contains("card_declined"));
            // The platform's code and message, read by the core from the body.
            assertEquals("card_declined", e.platformCode());
            assertEquals("the card was declined", e.platformMessage());
            assertTrue(e.getMessage().contains("HTTP 402 card_declined: the card was declined (final)"),
                    e.getMessage());
            assertEquals("rejected", c.status(order).state());
        }
    }

    @Test
    void idempotencyConflict() throws Exception {
        try (Mock m = new Mock(); PayidemClient a = m.client().build(); PayidemClient b = m.client().build()) {
            String order = Mock.orderId("conflict");
            String key = "shared-" + order;
            a.execute(order, "POST", "/v1/payments", Mock.paymentBody(order, 1000), key, Mock.statusPath(order));
            PayidemException e = assertThrows(PayidemException.IdempotencyConflict.class, () -> b.execute(order,
                    "POST", "/v1/payments", Mock.paymentBody(order, 2000), key, Mock.statusPath(order)));
            assertTrue(e.isFinal());
            m.assertOnePaymentEach(Collections.singletonList(order));
        }
    }

    @Test
    void outcomeUnknownIsResumable() throws Exception {
        try (Mock m = new Mock(); PayidemClient c = m.client().maxAttempts(2).build()) {
            m.setFaults("{\"drop_after_commit\": 1.0}");
            String order = Mock.orderId("unknown");
            // No status path: nothing but the POST can tell, so the outcome stays unknown.
            PayidemException.OutcomeUnknown e = assertThrows(PayidemException.OutcomeUnknown.class,
                    () -> c.execute(order, "POST", "/v1/payments", Mock.paymentBody(order, 777), null));
            assertFalse(e.isFinal());
            assertEquals(order, e.orderId());
            assertEquals("create-" + order, e.idempotencyKey());
            assertEquals(Collections.singletonList(order), c.listUnknown());
            OperationStatus st = c.status(order);
            assertEquals("unknown", st.state());
            assertEquals(2, st.attempts());

            m.setFaults("{}");
            List<PayidemClient.ResumeResult> results = c.resumeUnknown();
            assertEquals(1, results.size());
            assertNull(results.get(0).error());
            Outcome out = results.get(0).outcome();
            assertEquals(201, out.httpStatus());
            assertTrue(out.replayed());
            assertEquals(3, out.attempts());
            assertTrue(c.listUnknown().isEmpty());
            m.assertOnePaymentEach(Collections.singletonList(order));
        }
    }

    @Test
    void everyFaultKindAloneNeverChargesTwice() throws Exception {
        try (Mock m = new Mock("--delay-ms", "50"); PayidemClient c = m.client().maxAttempts(30).build()) {
            List<String> kinds = m.faultKinds();
            assertTrue(kinds.size() >= 10, "fault kinds " + kinds);
            List<String> orders = new ArrayList<>();
            for (String kind : kinds) {
                // A status-query fault needs ambiguous POSTs to query after.
                String also = kind.startsWith("status_") ? ", \"drop_after_commit\": 0.5" : "";
                m.setFaults("{\"" + kind + "\": 0.5, \"delay_ms\": 50" + also + "}");
                for (int i = 0; i < 6; i++) {
                    String order = Mock.orderId(kind.replace('_', '-'));
                    orders.add(order);
                    Outcome out = Mock.settle(c, order, 1000 + i);
                    assertEquals(2, out.httpStatus() / 100, order);
                }
            }
            JsonObject injected = m.stats().getAsJsonObject("faults");
            for (String kind : kinds) {
                assertTrue(injected.has(kind) && injected.get(kind).getAsInt() > 0, kind + " was never injected: "
                        + injected);
            }
            m.assertOnePaymentEach(orders);
        }
    }

    @Test
    void transportErrorKeepsTheOperation() throws Exception {
        String url;
        try (Mock m = new Mock()) {
            url = m.url;
        }
        try (PayidemClient c = PayidemClient.builder().baseUrl(url).keyId(Mock.KEY_ID)
                .secret(Mock.SECRET.getBytes(StandardCharsets.UTF_8)).journalPath(PayidemClient.JOURNAL_MEMORY)
                .maxAttempts(2).backoffBase(Duration.ofMillis(5)).build()) {
            String order = Mock.orderId("down");
            PayidemException e = assertThrows(PayidemException.Transport.class,
                    () -> c.execute(order, "POST", "/v1/payments", Mock.paymentBody(order, 5), Mock.statusPath(order)));
            assertFalse(e.isFinal());
            OperationStatus st = c.status(order);
            assertTrue(st.found());
            assertFalse("succeeded".equals(st.state()));
        }
    }

    @Test
    void sixteenThreadsShareOneClient() throws Exception {
        List<ClientEvent> events = new CopyOnWriteArrayList<>();
        try (Mock m = new Mock(); PayidemClient c = m.client().maxAttempts(30).onEvent(events::add).build()) {
            m.setFaults("{\"drop_after_commit\": 0.15, \"error_502\": 0.15, \"error_500_after_commit\": 0.1}");
            int threads = 16;
            int each = 8;
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            List<Future<List<String>>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                done.add(pool.submit(() -> {
                    List<String> mine = new ArrayList<>();
                    for (int i = 0; i < each; i++) {
                        String order = Mock.orderId("conc");
                        mine.add(order);
                        assertEquals(2, Mock.settle(c, order, 100 + i).httpStatus() / 100);
                    }
                    return mine;
                }));
            }
            List<String> orders = new ArrayList<>();
            for (Future<List<String>> f : done) {
                orders.addAll(f.get());
            }
            pool.shutdown();
            assertEquals(threads * each, orders.size());
            m.assertOnePaymentEach(orders);
            long ended = events.stream().filter(e -> "call_ended".equals(e.type())).count();
            assertTrue(ended >= orders.size(), ended + " call_ended events for " + orders.size() + " orders");
            assertTrue(events.stream().anyMatch(e -> "attempt".equals(e.type()) && e.level() != null));
            assertTrue(c.metricsPrometheus().contains("payidem_"), "prometheus text");
            JsonParser.parseString(c.metricsJson()).getAsJsonObject();
        }
    }

    @Test
    void aThrowingListenerLosesOnlyItsEvent() throws Exception {
        try (Mock m = new Mock(); PayidemClient c = m.client().onEvent(e -> {
            throw new IllegalStateException("listener bug");
        }).build()) {
            Thread.UncaughtExceptionHandler before = Thread.currentThread().getUncaughtExceptionHandler();
            List<Throwable> seen = new CopyOnWriteArrayList<>();
            Thread.currentThread().setUncaughtExceptionHandler((t, x) -> seen.add(x));
            try {
                String order = Mock.orderId("listener");
                assertEquals(201, c.execute(order, "POST", "/v1/payments", Mock.paymentBody(order, 1),
                        Mock.statusPath(order)).httpStatus());
            } finally {
                Thread.currentThread().setUncaughtExceptionHandler(before);
            }
            assertFalse(seen.isEmpty());
        }
    }

    @Test
    void invalidSettingsNameTheOption() {
        PayidemException e = assertThrows(PayidemException.InvalidArgument.class, () -> PayidemClient.builder()
                .baseUrl("https://api.example.com").keyId("k").secret(new byte[32]).journalPath(":memory:")
                .maxAttempts(0).build());
        assertEquals("retry.max_attempts", e.field());
        e = assertThrows(PayidemException.InvalidArgument.class, () -> PayidemClient.builder().keyId("k")
                .secret(new byte[32]).journalPath(":memory:").build());
        assertEquals("base_url", e.field());
        // Local: nothing was sent, so no HTTP status and no platform error.
        assertEquals(0, e.httpStatus());
        assertNull(e.platformCode());
        assertNull(e.platformMessage());
        assertEquals("retry.base_ms", assertThrows(PayidemException.InvalidArgument.class,
                () -> PayidemClient.builder().backoffBase(Duration.ofNanos(1500))).field());
    }

    @Test
    void unsetSettingsTakeTheCoresDefaults() {
        JsonObject core = JsonParser.parseString(PayidemClient.defaults()).getAsJsonObject();
        assertEquals(core.get("memory_journal").getAsString(), PayidemClient.JOURNAL_MEMORY);
        JsonObject defaults = core.getAsJsonObject("options");
        JsonObject resolved = JsonParser.parseString(PayidemClient.builder().baseUrl("https://api.example.com")
                .keyId("k").resolve()).getAsJsonObject();
        for (String key : defaults.keySet()) {
            assertEquals(defaults.get(key), resolved.get(key), key);
        }
        assertTrue(defaults.has("retry"), defaults.toString());
        assertEquals("", resolved.get("journal_path").getAsString(), "unset: the durable default journal");
        JsonObject tuned = JsonParser.parseString(PayidemClient.builder().baseUrl("https://api.example.com")
                .keyId("k").journalPath(":memory:").maxAttempts(3).leaseTtl(Duration.ofSeconds(90)).resolve())
                .getAsJsonObject();
        assertEquals(3, tuned.getAsJsonObject("retry").get("max_attempts").getAsInt());
        assertEquals(90, tuned.get("lease_ttl_s").getAsInt());
    }

    /** Leaf settings of a resolved document, dot-separated ("retry.max_attempts"). */
    private static java.util.Map<String, com.google.gson.JsonElement> leaves(JsonObject o, String prefix) {
        java.util.Map<String, com.google.gson.JsonElement> out = new java.util.TreeMap<>();
        for (java.util.Map.Entry<String, com.google.gson.JsonElement> e : o.entrySet()) {
            if (e.getValue().isJsonObject()) {
                out.putAll(leaves(e.getValue().getAsJsonObject(), prefix + e.getKey() + "."));
            } else {
                out.put(prefix + e.getKey(), e.getValue());
            }
        }
        return out;
    }

    @Test
    void theBuilderSetsEveryOptionOfTheCore() {
        java.util.Map<String, com.google.gson.JsonElement> defaults = leaves(JsonParser.parseString(
                PayidemClient.defaults()).getAsJsonObject().getAsJsonObject("options"), "");
        PayidemClient.Builder b = PayidemClient.builder().baseUrl("https://api.example.com").keyId("k")
                .journalPath("/var/lib/shop/journal.sqlite3").journalKey(new byte[16])
                .connectTimeout(Duration.ofMillis(1234)).requestTimeout(Duration.ofMillis(4321)).maxAttempts(3)
                .backoffBase(Duration.ofMillis(7)).backoffCap(Duration.ofMillis(70)).deadline(Duration.ofSeconds(9))
                .retryBudget(11, 2, 3, 4).keyRetention(Duration.ofHours(1)).settledRetention(Duration.ofMinutes(1))
                .leaseTtl(Duration.ofSeconds(90)).leaseHeartbeat(Duration.ofSeconds(20))
                .maxClockOffset(Duration.ofSeconds(30)).allowInsecureHttp(true)
                .proxy("http://proxy.example:3128").proxyFromEnv(true).caBundle("/etc/shop/ca.pem")
                .clientCertificate("/etc/shop/client.pem", "/etc/shop/client.key");
        java.util.Map<String, com.google.gson.JsonElement> tuned = leaves(JsonParser.parseString(b.resolve())
                .getAsJsonObject(), "");
        java.util.Set<String> unchanged = new java.util.TreeSet<>();
        for (java.util.Map.Entry<String, com.google.gson.JsonElement> d : defaults.entrySet()) {
            if (d.getValue().equals(tuned.get(d.getKey()))) {
                unchanged.add(d.getKey());
            }
        }
        assertEquals(Collections.emptySet(), unchanged, "options of the core the Java builder cannot set");
        assertEquals("<set>", tuned.get("journal_key_hex").getAsString());
        assertEquals(3, tuned.get("retry.max_attempts").getAsInt());
        assertEquals(1234, tuned.get("connect_timeout_ms").getAsInt());
    }

    /** A builder prints its URLs as the library does: no password of a journal, proxy or base URL. */
    @Test
    void builderPrintsLocationsRedacted() {
        PayidemClient.Builder b = PayidemClient.builder().baseUrl("https://u:Hunter2Secret@api.example.com")
                .keyId("k").journalPath("postgres://alice:Hunter2Secret@db.internal:5432/pay?sslpassword=K2")
                .proxy("http://proxyuser:Hunter2Secret@proxy:8080");
        String shown = b.toString();
        assertFalse(shown.contains("Hunter2Secret") || shown.contains("K2"), shown);
        assertTrue(shown.contains("\"journal_path\":\"postgres://***@db.internal:5432/pay?***\""), shown);
        assertTrue(shown.contains("\"proxy\":\"http://***@proxy:8080/\""), shown);
        assertTrue(shown.contains("\"base_url\":\"https://***@api.example.com/\""), shown);
        String libpq = PayidemClient.builder().journalPath("host=db password='Hunter2 Secret' dbname=pay").toString();
        assertTrue(libpq.contains("host=db password=*** dbname=pay"), libpq);
        String file = PayidemClient.builder().journalPath("/var/lib/payidem/journal.db").toString();
        assertTrue(file.contains("\"journal_path\":\"/var/lib/payidem/journal.db\""), file);
        String nul = PayidemClient.builder().journalPath("postgres://u:Hunter2Secret@db/pay\0").toString();
        assertTrue(nul.contains("\"journal_path\":\"***\""), nul);
    }

    @Test
    void noSecretInStrings() {
        byte[] secret = "sk_live_do_not_print_0123456789".getBytes(StandardCharsets.UTF_8);
        PayidemClient.Builder b = PayidemClient.builder().baseUrl("https://api.example.com").keyId("k").secret(secret)
                .journalKey(secret).journalPath(":memory:");
        assertFalse(b.toString().contains("do_not_print"), b.toString());
        assertFalse(b.toString().contains(String.format("%x", new java.math.BigInteger(1, secret))), b.toString());
        try (PayidemClient c = b.build(); Signer s = new Signer("k", secret)) {
            assertFalse(c.toString().contains("do_not_print"));
            assertFalse(s.toString().contains("do_not_print"));
        }
        assertEquals("secret", assertThrows(PayidemException.InvalidArgument.class, b::build).field(),
                "build() wiped the builder's copy of the secret");
        PayidemException e = assertThrows(PayidemException.InvalidArgument.class, () -> PayidemClient.builder()
                .baseUrl("https://api.example.com").keyId("k").secret(secret).journalPath(":memory:").maxAttempts(0)
                .build());
        assertFalse(e.getMessage().contains("do_not_print"), e.getMessage());
        assertNull(e.orderId(), "no order: null, not \"\"");
    }

    @Test
    void deadlineAndCancellationKeepTheKey() throws Exception {
        try (Mock m = new Mock(); PayidemClient c = m.client().maxAttempts(1000).build()) {
            String order = Mock.orderId("cancelled");
            byte[] body = Mock.paymentBody(order, 9);
            PayidemException.Cancelled e = assertThrows(PayidemException.Cancelled.class, () -> c.execute(order,
                    "POST", "/v1/payments", body, null, Mock.statusPath(order), null, () -> true));
            assertFalse(e.isFinal());
            assertEquals(order, e.orderId());
            assertEquals(0, m.paymentsCreated(order), "cancelled before the first attempt");

            Thread.currentThread().interrupt();
            try {
                assertThrows(PayidemException.Cancelled.class, () -> c.resume(order, null, null));
                assertTrue(Thread.currentThread().isInterrupted(), "the interrupt status stays set");
            } finally {
                Thread.interrupted();
            }

            // Every attempt refused before the platform's idempotency step: the deadline ends the call.
            m.setFaults("{\"error_503\": 1.0}");
            long t = System.nanoTime();
            PayidemException late = assertThrows(PayidemException.class, () -> c.execute(order, "POST",
                    "/v1/payments", body, null, Mock.statusPath(order), Duration.ofMillis(300), null));
            assertTrue(System.nanoTime() - t < java.util.concurrent.TimeUnit.SECONDS.toNanos(10), "the deadline held");
            assertFalse(late.isFinal(), late.getMessage());
            m.setFaults("{}");
            assertEquals(201, c.execute(order, "POST", "/v1/payments", body, Mock.statusPath(order)).httpStatus());
            m.assertOnePaymentEach(Collections.singletonList(order));
        }
    }

    @Test
    void aClosedClientRefusesCalls() throws Exception {
        try (Mock m = new Mock()) {
            PayidemClient c = m.client().build();
            c.close();
            c.close();
            assertEquals("client", assertThrows(PayidemException.InvalidArgument.class,
                    () -> c.status("x")).field());
        }
    }
}
