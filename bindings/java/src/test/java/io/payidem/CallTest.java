package io.payidem;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.SocketTimeoutException;
import java.net.URL;
import java.time.Duration;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The journal-bound Call driven by the caller's own HTTP stack (here HttpURLConnection, in the JDK since 1.1). */
class CallTest {
    /** Sends one send step exactly as given and reports what came back. */
    private static void send(PayidemClient client, Call call, Step s) {
        HttpURLConnection c = null;
        boolean written = false;
        try {
            c = (HttpURLConnection) new URL(client.url(s.path())).openConnection();
            c.setRequestMethod(s.method());
            c.setInstanceFollowRedirects(false);
            c.setConnectTimeout(2000);
            c.setReadTimeout(2000);
            for (Map.Entry<String, String> h : s.headers()) {
                c.setRequestProperty(h.getKey(), h.getValue());
            }
            byte[] body = s.body();
            if ("POST".equals(s.method())) {
                c.setDoOutput(true);
                c.setFixedLengthStreamingMode(body.length);
                c.connect();
                written = true;
                try (OutputStream out = c.getOutputStream()) {
                    out.write(body);
                }
            } else {
                c.connect();
                written = true;
            }
            int status = c.getResponseCode();
            List<Map.Entry<String, String>> headers = new ArrayList<>();
            for (Map.Entry<String, List<String>> h : c.getHeaderFields().entrySet()) {
                if (h.getKey() != null) {
                    for (String v : h.getValue()) {
                        headers.add(new AbstractMap.SimpleEntry<>(h.getKey(), v));
                    }
                }
            }
            InputStream in = status < 400 ? c.getInputStream() : c.getErrorStream();
            call.report(Reply.response(status, headers, in == null ? new byte[0] : readAll(in)));
        } catch (SocketTimeoutException e) {
            call.report(written ? Reply.noResponse("read timed out") : Reply.notSent("connect timed out"));
        } catch (IOException e) {
            call.report(written ? Reply.noResponse(e.toString()) : Reply.notSent(e.toString()));
        } finally {
            if (c != null) {
                c.disconnect();
            }
        }
    }

    private static byte[] readAll(InputStream in) throws IOException {
        try (InputStream i = in) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buf = new byte[8192];
            for (int n; (n = i.read(buf)) > 0; ) {
                out.write(buf, 0, n);
            }
            return out.toByteArray();
        }
    }

    /** Drives a call to its end; every send's bytes and nonce are checked against the others. */
    private static Step drive(PayidemClient client, Call call, byte[] body, Set<String> nonces) throws Exception {
        for (int i = 0; i < 200; i++) {
            Step s = call.step();
            switch (s.kind()) {
                case "send":
                    assertTrue(nonces.add(s.header("X-Nonce")), "a signed attempt was handed out twice");
                    if ("operation".equals(s.attemptKind())) {
                        assertArrayEquals(body, s.body(), "the operation's exact bytes");
                    }
                    assertTrue(s.timeoutMs() > 0);
                    send(client, call, s);
                    break;
                case "wait":
                    Thread.sleep(s.waitMs());
                    break;
                case "end":
                    return s;
                default:
                    fail("a call never asks to persist: " + s);
            }
        }
        throw new AssertionError("the call did not end");
    }

    @Test
    void ownHttpStackPaysOnceThroughFaults() throws Exception {
        try (Mock m = new Mock(); PayidemClient client = m.client().maxAttempts(30).build()) {
            m.setFaults("{\"drop_after_commit\": 0.3, \"error_502\": 0.2, \"error_500_after_commit\": 0.2,"
                    + " \"status_error_503\": 0.2}");
            List<String> orders = new ArrayList<>();
            Set<String> nonces = new HashSet<>();
            for (int i = 0; i < 12; i++) {
                String order = Mock.orderId("call");
                orders.add(order);
                byte[] body = Mock.paymentBody(order, 300 + i);
                Step end;
                try (Call call = client.begin(order, "POST", "/v1/payments", body, null, Mock.statusPath(order), null)) {
                    end = drive(client, call, body, nonces);
                }
                for (int r = 0; r < 10 && end.error() != null && !end.isFinal(); r++) {
                    try (Call call = client.beginResume(order, null)) {
                        end = drive(client, call, body, nonces);
                    }
                }
                assertNull(end.error(), order + ": " + end);
                assertEquals("succeeded", end.endName());
                assertEquals("succeeded", end.state());
                assertEquals("yes", end.landed());
                assertEquals("create-" + order, end.outcome().idempotencyKey());
                assertEquals("succeeded", client.status(order).state());
            }
            assertTrue(m.stats().getAsJsonObject("faults").size() > 0, "no fault was injected");
            m.assertOnePaymentEach(orders);
        }
    }

    @Test
    void anInterruptedSleepCancelsTheCallAndKeepsTheInterrupt() throws Exception {
        // Long backoffs (the interrupt ends the sleep at once): a full-jitter
        // wait can still be short enough to be over before the next step,
        // which then sends again; another 502 then waits afresh.
        try (Mock m = new Mock(); PayidemClient client = m.client().maxAttempts(8)
                .backoffBase(Duration.ofSeconds(10)).backoffCap(Duration.ofSeconds(10)).build()) {
            m.setFaults("{\"error_502\": 1.0}");
            String order = Mock.orderId("sleep");
            byte[] body = Mock.paymentBody(order, 9);
            try (Call call = client.begin(order, "POST", "/v1/payments", body, null, Mock.statusPath(order), null)) {
                Step wait = call.step();
                assertEquals("send", wait.kind());
                do {
                    send(client, call, wait);
                    wait = call.step();
                } while (wait.kind().equals("send"));
                assertEquals("wait", wait.kind(), "a 502 waits a backoff: " + wait);
                Thread.currentThread().interrupt();
                Step end = call.sleep(wait);
                assertTrue(Thread.interrupted(), "the interrupt is kept (and cleared here)");
                assertEquals("end", end.kind());
                assertEquals(ErrorCode.CANCELLED, end.error().code());
                assertEquals("maybe", end.error().landed(), "after a 502 the core cannot know: keep the key");
            }
            assertEquals(0, m.paymentsCreated(order));
        }
    }

    @Test
    void cancelKeepsTheKeyAndASettledOrderEndsAtOnce() throws Exception {
        try (Mock m = new Mock(); PayidemClient client = m.client().build()) {
            String order = Mock.orderId("cancel");
            byte[] body = Mock.paymentBody(order, 5);
            try (Call call = client.begin(order, "POST", "/v1/payments", body, null, Mock.statusPath(order), null)) {
                Step end = call.cancel();
                assertEquals(ErrorCode.CANCELLED, end.error().code());
                assertEquals(order, end.error().orderId());
                assertNotEquals("succeeded", end.state());
                assertEquals("no", end.error().landed(), "cancelled before anything was sent");
            }
            assertEquals(201, client.execute(order, "POST", "/v1/payments", body, Mock.statusPath(order))
                    .httpStatus());
            try (Call again = client.begin(order, "POST", "/v1/payments", body, null, Mock.statusPath(order), null)) {
                Step end = again.step();
                assertEquals("end", end.kind(), "a settled order ends at once, sending nothing");
                assertNotNull(end.outcome());
                assertEquals(201, end.outcome().httpStatus());
            }
            assertTrue(client.url("/v1/payments").startsWith(m.url), client.url("/v1/payments"));
            m.assertOnePaymentEach(java.util.Collections.singletonList(order));
        }
    }
}
