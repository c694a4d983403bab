package io.payidem;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.payidem.slf4j.Slf4jEvents;
import java.lang.reflect.Proxy;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;

/** Client events through SLF4J at the core's levels: retries at INFO, the give-up at WARN. */
class Slf4jEventsTest {
    @Test
    void theLevelsAreTheCores() {
        assertEquals(Arrays.asList("debug", "info", "warn"), Arrays.asList(Text.read(Lib.payidem_log_level_name(1)),
                Text.read(Lib.payidem_log_level_name(2)), Text.read(Lib.payidem_log_level_name(3))));
    }

    @Test
    void retriesAtInfoTheGiveUpAtWarn() throws Exception {
        List<String> calls = new CopyOnWriteArrayList<>();
        Logger logger = (Logger) Proxy.newProxyInstance(Logger.class.getClassLoader(), new Class<?>[] {Logger.class},
                (p, m, args) -> {
                    if (m.getName().equals("warn") || m.getName().equals("info") || m.getName().equals("debug")) {
                        calls.add(m.getName() + " " + Arrays.toString(args));
                        return null;
                    }
                    return m.getReturnType() == boolean.class ? Boolean.TRUE : null;
                });
        try (Mock m = new Mock(); PayidemClient c = m.client().maxAttempts(2).onEvent(Slf4jEvents.listener(logger))
                .build()) {
            m.setFaults("{\"drop_after_commit\": 1.0}");
            String order = Mock.orderId("logged");
            assertThrows(PayidemException.OutcomeUnknown.class, () -> c.execute(order, "POST", "/v1/payments",
                    Mock.paymentBody(order, 3), null));
        }
        assertTrue(calls.stream().anyMatch(s -> s.startsWith("info ") && s.contains("attempt")), calls.toString());
        assertTrue(calls.stream().anyMatch(s -> s.startsWith("warn ") && s.contains("call_ended")), calls.toString());
        assertFalse(calls.toString().contains(Mock.SECRET), "no secret in a log line");
        assertFalse(calls.toString().contains("\"amount\""), "no body in a log line");
    }
}
