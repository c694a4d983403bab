package io.payidem;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import io.payidem.jdkhttp.PayidemJdkHttp;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Operations over the JDK's HttpClient against payidem-mock: paid once under faults, no nonce reaching it twice. */
class JdkHttpTest {
    @Test
    void operationsOverTheJdkClientPayOnceThroughFaults() throws Exception {
        try (Mock m = new Mock(); PayidemClient client = m.client().maxAttempts(30).build()) {
            m.setFaults("{\"drop_after_commit\": 0.3, \"error_502\": 0.2, \"error_500_after_commit\": 0.2,"
                    + " \"status_error_503\": 0.2}");
            PayidemJdkHttp jdk = new PayidemJdkHttp(HttpClient.newBuilder()
                    .connectTimeout(Duration.ofSeconds(2)).build(), client);
            List<String> orders = new ArrayList<>();
            for (int i = 0; i < 12; i++) {
                String order = Mock.orderId("jdk");
                orders.add(order);
                byte[] body = Mock.paymentBody(order, 700 + i);
                Outcome out = null;
                try {
                    out = jdk.execute(order, "POST", "/v1/payments", body, null, Mock.statusPath(order), null);
                } catch (PayidemException e) {
                    assertFalse(e.isFinal(), e.getMessage());
                    assertTrue(e.landed() != null, "an operation's end carries its landed value: " + e);
                    for (int r = 0; out == null && r < 10; r++) {
                        try {
                            out = jdk.resume(order, null);
                        } catch (PayidemException again) {
                            assertFalse(again.isFinal(), again.getMessage());
                        }
                    }
                }
                assertTrue(out != null, order + " never settled");
                assertEquals(2, out.httpStatus() / 100, order);
                assertEquals("create-" + order, out.idempotencyKey());
                assertEquals("succeeded", client.status(order).state());
            }
            m.assertOnePaymentEach(orders);
            JsonObject stats = m.stats();
            JsonElement reused = stats.getAsJsonObject("requests").getAsJsonObject("by_error_code")
                    .get("nonce_reused");
            assertTrue(reused == null || reused.getAsInt() == 0, "signed bytes reached the mock twice: " + stats);
            assertTrue(stats.getAsJsonObject("faults").size() > 0, "no fault was injected");
        }
    }

    @Test
    void aFinalRefusalIsThrownWithItsStatusAndLanded() throws Exception {
        try (Mock m = new Mock(); PayidemClient client = m.client().build()) {
            PayidemJdkHttp jdk = new PayidemJdkHttp(HttpClient.newHttpClient(), client);
            String order = Mock.orderId("jdk-declined");
            PayidemException.Rejected e = assertThrows(PayidemException.Rejected.class, () -> jdk.execute(order,
                    "POST", "/v1/payments", Mock.paymentBody(order, 1402), null, Mock.statusPath(order), null));
            assertEquals(402, e.httpStatus());
            assertTrue(e.isFinal());
            assertEquals("yes", e.landed(), "a refusal the platform keeps has landed");
            assertEquals("rejected", client.status(order).state());
        }
    }

    @Test
    void aJvmThatLetsTheJdkResendPostsIsRefused() throws Exception {
        try (Mock m = new Mock(); PayidemClient client = m.client().build()) {
            System.setProperty("jdk.httpclient.enableAllMethodRetry", "true");
            try {
                IllegalStateException e = assertThrows(IllegalStateException.class,
                        () -> new PayidemJdkHttp(HttpClient.newHttpClient(), client));
                assertTrue(e.getMessage().contains("jdk.httpclient.enableAllMethodRetry"), e.getMessage());
            } finally {
                System.clearProperty("jdk.httpclient.enableAllMethodRetry");
            }
        }
    }
}
