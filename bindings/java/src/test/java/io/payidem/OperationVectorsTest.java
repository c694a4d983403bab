package io.payidem;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * core/tests/vectors/operation-v1.json through {@link Operation}, by the
 * file's runner rules (its "about"), as Rust, C, Go and Python run it.
 */
class OperationVectorsTest {
    private static final byte[] SECRET = "0123456789abcdef0123".getBytes(StandardCharsets.UTF_8);

    @Test
    void replyNumbersAreTheCoresOutcomes() {
        List<String> outcomes = Names.attemptOutcomes();
        assertEquals("response", outcomes.get(Reply.RESPONSE - 1));
        assertEquals("not_sent", outcomes.get(Reply.NOT_SENT - 1));
        assertEquals("sent_no_response", outcomes.get(Reply.SENT_NO_RESPONSE - 1));
        assertEquals(3, outcomes.size());
    }

    @TestFactory
    Stream<DynamicTest> vectors() throws Exception {
        List<DynamicTest> tests = new ArrayList<>();
        JsonObject file = Vectors.load("operation-v1.json");
        assertTrue(file.getAsJsonArray("vectors").size() >= 30);
        for (JsonElement e : file.getAsJsonArray("vectors")) {
            JsonObject v = e.getAsJsonObject();
            tests.add(DynamicTest.dynamicTest(Vectors.str(v, "name"), () -> new Runner(v).run()));
        }
        return tests.stream();
    }

    /** One vector: the machine, its clocks and the last end seen. */
    private static final class Runner {
        private final JsonObject v;
        private final JsonObject op;
        private final long createdAt;
        private long start;
        private long elapsedMs;
        private Operation machine;
        private Step last;

        Runner(JsonObject v) {
            this.v = v;
            this.op = v.getAsJsonObject("operation");
            this.start = v.get("now").getAsLong();
            this.createdAt = start - v.getAsJsonObject("progress").get("age_secs").getAsLong();
        }

        long now() {
            return start + elapsedMs / 1000;
        }

        void begin(String state, long attempts, boolean firstRecorded) {
            if (machine != null) {
                machine.close();
            }
            JsonObject s = v.getAsJsonObject("setup");
            Operation.Start st = Operation.start(Vectors.str(op, "order_id"), Vectors.str(op, "method"),
                    Vectors.str(op, "path")).body(Vectors.str(op, "body").getBytes(StandardCharsets.UTF_8))
                    .idempotencyKey(Vectors.str(op, "idempotency_key")).statusPath(Vectors.str(op, "status_path"))
                    .state(state).attempts(attempts).createdAt(createdAt).firstRecorded(firstRecorded)
                    .maxAttempts(s.get("max_attempts").getAsLong()).backoffBaseMs(s.get("backoff_base_ms").getAsLong())
                    .backoffCapMs(s.get("backoff_cap_ms").getAsLong()).deadlineMs(s.get("deadline_ms").getAsLong())
                    .keyRetentionSecs(s.get("key_retention_secs").getAsLong())
                    .maxClockOffsetSecs(s.get("max_clock_offset_secs").getAsLong())
                    .clockOffset(s.get("clock_offset").getAsLong(), s.get("clock_trusted").getAsBoolean()).now(now());
            JsonElement b = s.get("retry_budget");
            if (b != null && !b.isJsonNull()) {
                JsonObject o = b.getAsJsonObject();
                st.retryBudget(o.get("capacity").getAsLong(), o.get("retry_cost").getAsLong(),
                        o.get("timeout_cost").getAsLong(), o.get("success_refund").getAsLong());
            }
            machine = st.begin();
        }

        void run() {
            JsonObject p = v.getAsJsonObject("progress");
            JsonElement first = p.get("first_recorded");
            begin(Vectors.str(p, "state"), p.get("attempts").getAsLong(), first != null && first.getAsBoolean());
            try (Signer signer = new Signer("key_test_1", SECRET)) {
                int i = 0;
                for (JsonElement se : v.getAsJsonArray("script")) {
                    step(signer, se.getAsJsonObject(), Vectors.str(v, "name") + " step " + i++);
                }
            } finally {
                machine.close();
            }
            assertNotNull(last, "the script never checked the end");
        }

        void step(Signer signer, JsonObject step, String at) {
            if (step.has("restart")) {
                JsonObject r = step.getAsJsonObject("restart");
                start += elapsedMs / 1000;
                elapsedMs = 0;
                begin(Vectors.str(r, "state"), r.get("attempts").getAsLong(), false);
                return;
            }
            if (step.has("abandon")) {
                last = machine.abandon(Vectors.str(step, "abandon"));
                return;
            }
            if (step.has("reply")) {
                Operation.Reaction r = machine.handle(reply(step.getAsJsonObject("reply")), now(), elapsedMs);
                assertEquals(Vectors.str(step, "next"), r.next(), at + ": next");
                assertEquals(Vectors.str(step, "landed"), r.landed(), at + ": landed");
                return;
            }
            String expect = Vectors.str(step, "expect");
            Step got = machine.poll(signer, now(), elapsedMs);
            if (expect.equals("persist") && got.kind().equals("persist")) {
                assertEquals(step.get("attempt").getAsInt(), got.persistAttempt(), at);
                assertEquals(step.get("first").getAsBoolean(), got.persistFirst(), at);
                machine.persisted();
            } else if (expect.equals("send") && got.kind().equals("send")) {
                checkSend(got, step, at);
            } else if (expect.equals("wait") && got.kind().equals("wait")) {
                long ms = got.waitMs();
                if (step.has("ms")) {
                    assertEquals(step.get("ms").getAsLong(), ms, at + ": wait");
                } else {
                    assertTrue(ms > 0 && ms <= step.get("max_ms").getAsLong(), at + ": waited " + ms);
                }
                elapsedMs += ms;
            } else if (expect.equals("end") && got.kind().equals("end")) {
                checkEnd(got, step, at);
                last = got;
            } else if (expect.equals("end") && last != null) {
                checkEnd(last, step, at);
            } else {
                fail(at + ": expected " + expect + ", got " + got);
            }
        }

        static Reply reply(JsonObject r) {
            if (r.has("not_sent")) {
                return Reply.notSent(Vectors.str(r, "not_sent"));
            }
            if (r.has("no_response")) {
                return Reply.noResponse(Vectors.str(r, "no_response"));
            }
            List<Map.Entry<String, String>> headers = new ArrayList<>();
            for (Map.Entry<String, JsonElement> h : r.getAsJsonObject("headers").entrySet()) {
                headers.add(new AbstractMap.SimpleEntry<>(h.getKey(), h.getValue().getAsString()));
            }
            return Reply.response(r.get("status").getAsInt(), headers,
                    Vectors.str(r, "body").getBytes(StandardCharsets.UTF_8));
        }

        void checkSend(Step a, JsonObject step, String at) {
            assertEquals(Vectors.str(step, "kind"), a.attemptKind(), at);
            assertEquals(step.get("number").getAsInt(), a.attemptNumber(), at);
            assertEquals(0, a.timeoutMs(), at + ": the pure machine sets no timeout");
            String orderId = Vectors.str(op, "order_id");
            if ("operation".equals(a.attemptKind())) {
                String key = Vectors.str(op, "idempotency_key");
                assertEquals(key == null ? "create-" + orderId : key, a.header("Idempotency-Key"), at);
                assertEquals(Vectors.str(op, "method"), a.method(), at);
                assertEquals(Vectors.str(op, "path"), a.path(), at);
                assertArrayEquals(Vectors.str(op, "body").getBytes(StandardCharsets.UTF_8), a.body(), at);
            } else {
                assertEquals("GET", a.method(), at);
                assertEquals(Vectors.str(op, "status_path"), a.path(), at);
                assertEquals(0, a.body().length, at);
            }
            if (step.has("timestamp")) {
                assertEquals(step.get("timestamp").getAsString(), a.header("X-Timestamp"), at);
            }
            assertNotNull(a.header("X-Nonce"), at);
            assertNotNull(a.header("X-Signature"), at);
        }

        void checkEnd(Step end, JsonObject step, String at) {
            assertEquals(Vectors.str(step, "end"), end.endName(), at + ": end");
            assertEquals(step.get("final").getAsBoolean(), end.isFinal(), at + ": final");
            assertEquals(Vectors.str(step, "landed"), end.landed(), at + ": landed");
            assertEquals(Vectors.str(step, "state"), end.state(), at + ": state");
            int status = end.error() == null ? (end.outcome() == null ? 0 : end.outcome().httpStatus())
                    : end.error().httpStatus();
            JsonElement want = step.get("status");
            assertEquals(want == null || want.isJsonNull() ? 0 : want.getAsInt(), status, at + ": status");
            if (step.has("replayed")) {
                assertNotNull(end.outcome(), at);
                assertEquals(step.get("replayed").getAsBoolean(), end.outcome().replayed(), at + ": replayed");
            }
            String code = Vectors.str(step, "error");
            if (code == null) {
                assertNull(end.error(), at);
                assertNotNull(end.outcome(), at + ": a successful end without an outcome");
            } else {
                assertNotNull(end.error(), at + ": want " + code);
                assertEquals(code, end.error().code().wireName(), at);
                assertEquals(end.isFinal(), end.error().isFinal(), at + ": finality");
                assertEquals(Vectors.str(op, "order_id"), end.error().orderId(), at);
                assertEquals(Vectors.str(step, "landed"), end.error().landed(), at + ": the error's landed");
            }
        }
    }
}
