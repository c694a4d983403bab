package io.payidem;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link PayidemClient#takeOverLoop}: the core's take-over loop on a Java thread, stopped by a BooleanSupplier. */
class TakeOverLoopTest {
    /** A lease holds ttl + request timeout past its last renewal (2 s, in the journal's whole seconds). */
    private static final Duration LEASE_TTL = Duration.ofSeconds(1);

    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(1);

    private static final Duration HEARTBEAT = Duration.ofMillis(250);

    private static final long LEASE_SPAN_MS = LEASE_TTL.plus(REQUEST_TIMEOUT).toMillis();

    /** A loaded CI host: a claim, a POST, a fsync. */
    private static final long LOAD_MARGIN_MS = 6000;

    private static PayidemClient client(Mock mock, Path journal) {
        return mock.client().journalPath(journal.toString()).leaseTtl(LEASE_TTL).requestTimeout(REQUEST_TIMEOUT)
                .leaseHeartbeat(HEARTBEAT).build();
    }

    /**
     * A call that recorded its attempt and was abandoned (its holder hung or
     * died: nothing renews its lease) is taken over by another client's loop
     * on a background thread once the lease lapsed, never before, within a
     * few heartbeats of that; the stop ends the loop, which counts one
     * operation; the abandoned call, closed afterwards, writes nothing.
     */
    @Test
    void anAbandonedOperationIsTakenOverByABackgroundLoop(@TempDir Path dir) throws Exception {
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (Mock mock = new Mock();
                PayidemClient holder = client(mock, dir.resolve("journal.sqlite3"));
                PayidemClient taker = client(mock, dir.resolve("journal.sqlite3"))) {
            String order = Mock.orderId("loop");
            long begun = System.nanoTime(); // the lease is written after this instant
            Call call = holder.begin(order, "POST", "/v1/payments", Mock.paymentBody(order, 700), null,
                    Mock.statusPath(order), null);
            assertEquals("send", call.step().kind());

            AtomicBoolean stop = new AtomicBoolean();
            Future<Long> loop = pool.submit(() -> taker.takeOverLoop(4, Duration.ofHours(1), stop::get));
            long settledMs = -1;
            while (settledMs < 0) {
                long sinceMs = (System.nanoTime() - begun) / 1_000_000;
                if ("succeeded".equals(taker.status(order).state())) {
                    settledMs = sinceMs;
                } else if (sinceMs > LEASE_SPAN_MS + LOAD_MARGIN_MS + 10_000) {
                    stop.set(true);
                    fail("not taken over: " + taker.status(order));
                }
                Thread.sleep(20);
            }
            // Never before the lease lapsed (written after begun, on the
            // journal's clock in whole seconds), within a few heartbeats of that.
            assertTrue(settledMs >= LEASE_SPAN_MS - 1000
                    && settledMs <= LEASE_SPAN_MS + 3 * HEARTBEAT.toMillis() + LOAD_MARGIN_MS,
                    "settled " + settledMs + " ms after the call began");
            stop.set(true);
            assertEquals(1L, loop.get(10, TimeUnit.SECONDS).longValue());

            call.close();
            assertEquals("succeeded", holder.status(order).state());
            assertEquals(1, mock.paymentsCreated(order));
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void anInterruptStopsAnIdleLoopAndArgumentsAreChecked() throws Exception {
        try (Mock mock = new Mock(); PayidemClient c = mock.client().build()) {
            assertEquals(0L, c.takeOverLoop(1, Duration.ofMillis(10), () -> true));
            Thread.currentThread().interrupt();
            try {
                assertEquals(0L, c.takeOverLoop(1, Duration.ofMillis(10), () -> false));
                assertTrue(Thread.currentThread().isInterrupted(), "the interrupt status stays set");
            } finally {
                Thread.interrupted();
            }
            assertFalse(Thread.currentThread().isInterrupted());
            assertEquals("batch", assertThrows(PayidemException.class,
                    () -> c.takeOverLoop(-1, Duration.ofMillis(10), () -> true)).field());
            assertEquals("idle", assertThrows(PayidemException.class,
                    () -> c.takeOverLoop(1, Duration.ofMillis(-1), () -> true)).field());
            assertEquals("stop", assertThrows(PayidemException.class,
                    () -> c.takeOverLoop(1, Duration.ofMillis(10), null)).field());
        }
    }
}
