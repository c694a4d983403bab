package io.payidem.slf4j;

import io.payidem.ClientEvent;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A client's events logged through SLF4J at the core's level for each
 * ({@code debug}, {@code info}, {@code warn}: retries at INFO, give-ups at
 * WARN, the one policy of every language), as the core's JSON, which holds
 * no body and no secret:
 * {@code PayidemClient.builder()...onEvent(Slf4jEvents.listener()).build()}.
 */
public final class Slf4jEvents {
    private Slf4jEvents() {}

    /** Logs to the logger named {@code io.payidem}. */
    public static Consumer<ClientEvent> listener() {
        return listener(LoggerFactory.getLogger("io.payidem"));
    }

    /** Logs to {@code logger}. */
    public static Consumer<ClientEvent> listener(Logger logger) {
        return event -> {
            String level = event.level();
            if ("warn".equals(level)) {
                logger.warn("payidem {}: {}", event.type(), event.json());
            } else if ("info".equals(level)) {
                logger.info("payidem {}: {}", event.type(), event.json());
            } else {
                logger.debug("payidem {}: {}", event.type(), event.json());
            }
        };
    }
}
