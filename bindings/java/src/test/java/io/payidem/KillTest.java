package io.payidem;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A JVM killed with SIGKILL mid-payment is resumed over the same journal and pays once. */
class KillTest {
    @Test
    void childKilledAfterSendingAttemptOneIsResumedAndPaysOnce(@TempDir Path dir) throws Exception {
        try (Mock m = new Mock()) {
            // The platform commits the payment and holds its answer for a minute.
            m.setFaults("{\"delay_after_commit\": 1.0, \"delay_ms\": 60000}");
            String journal = dir.resolve("journal.sqlite3").toString();
            String order = Mock.orderId("kill");
            String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
            List<String> cmd = Arrays.asList(System.getProperty("java.home") + File.separator + "bin" + File.separator
                    + "java", "-cp", classpath, "-Dpayidem.repo=" + Vectors.repo(), KillChild.class.getName(), m.url,
                    journal, order);
            Process child = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(
                    dir.resolve("child.log").toFile()).start();
            try {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (m.paymentsCreated(order) == 0) {
                    if (!child.isAlive() || System.nanoTime() > deadline) {
                        fail("the child never paid: " + new String(Files.readAllBytes(dir.resolve("child.log")),
                                "UTF-8"));
                    }
                    Thread.sleep(20);
                }
                // "sent attempt 1": the platform ran the payment; the payer dies before any answer.
                new ProcessBuilder("kill", "-KILL", Long.toString(child.pid())).inheritIO().start().waitFor();
                assertTrue(child.waitFor(30, TimeUnit.SECONDS));
                assertEquals(128 + 9, child.exitValue(), "the child ended by SIGKILL");
            } finally {
                child.destroyForcibly();
            }
            String log = new String(Files.readAllBytes(dir.resolve("child.log")), "UTF-8");
            assertTrue(log.contains("sending attempt 1 of " + order), log);
            assertTrue(!log.contains("the child finished"), log);

            m.setFaults("{}");
            try (PayidemClient c = m.client().journalPath(journal).build()) {
                OperationStatus st = c.status(order);
                assertTrue("in_flight".equals(st.state()) || "unknown".equals(st.state()), st.toString());
                assertEquals(1, st.attempts());
                List<PayidemClient.ResumeResult> results = c.resumeUnknown();
                assertEquals(1, results.size(), results.toString());
                assertEquals(order, results.get(0).orderId());
                assertNull(results.get(0).error());
                assertEquals("create-" + order, results.get(0).outcome().idempotencyKey());
                assertEquals(2, results.get(0).outcome().httpStatus() / 100);
                assertEquals("succeeded", c.status(order).state());
            }
            m.assertOnePaymentEach(Collections.singletonList(order));
        }
    }
}
