package io.payidem;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two verifiers sharing a real Redis replay store: a nonce accepted by one is a replay for the other. The
 * redis-server ({@code PAYIDEM_REDIS_SERVER}, else redis-server on the PATH) is started through
 * ffi/tests-c/redis_server.sh, which execs it after starting a watcher: a JVM killed before its clean-up
 * (SIGKILL, a CI timeout) leaves neither a running server nor its directory behind.
 */
class ReplayStoreTest {
    private static final byte[] SECRET = "sk_test_payidem_mock_secret_0001".getBytes(StandardCharsets.UTF_8);

    private static List<Map.Entry<String, String>> headersOf(SignedHeaders h) {
        return new ArrayList<>(h.asMap().entrySet());
    }

    private static boolean answersPing(Path sock) throws Exception {
        Process ping = new ProcessBuilder("redis-cli", "-s", sock.toString(), "ping").redirectErrorStream(true).start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buf = new byte[64];
        for (int n; (n = ping.getInputStream().read(buf)) > 0; ) {
            out.write(buf, 0, n);
        }
        return ping.waitFor() == 0 && new String(out.toByteArray(), StandardCharsets.UTF_8).trim().equals("PONG");
    }

    @Test
    void aNonceAcceptedByOneVerifierIsAReplayForAnother(@TempDir Path dir) throws Exception {
        Path sock = dir.resolve("redis.sock");
        String binary = System.getenv().getOrDefault("PAYIDEM_REDIS_SERVER", "redis-server");
        String script = Vectors.repo().resolve("ffi/tests-c/redis_server.sh").toString();
        Process redis = new ProcessBuilder(script, "--dir", dir.toString(), binary, "--port", "0", "--unixsocket",
                sock.toString(), "--unixsocketperm", "700", "--save", "", "--appendonly", "no", "--dir",
                dir.toString(), "--logfile", "redis.log").redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            // The socket file exists once bound, before redis listens: wait until it answers a PING
            // (redis-cli comes with redis-server's Debian package).
            while (!answersPing(sock)) {
                assertTrue(redis.isAlive() && System.nanoTime() < deadline,
                        binary + " did not start (make redis-deps installs it, or set PAYIDEM_REDIS_SERVER)");
                Thread.sleep(20);
            }
            Map<String, List<byte[]>> keys = Collections.singletonMap("key_test_1",
                    Collections.singletonList(SECRET));
            String store = "unix://" + sock;
            // A fresh store refuses requests signed up to two seconds after it started (its epoch guard).
            long now = System.currentTimeMillis() / 1000 + 5;
            byte[] body = "{\"amount\":1}".getBytes(StandardCharsets.UTF_8);
            try (Signer signer = new Signer("key_test_1", SECRET); Verifier a = new Verifier(keys, 300, 1000, store);
                    Verifier b = new Verifier(keys, 300, 1000, store)) {
                SignedHeaders h = signer.signAt(now, "POST", "/v1/payments", "create-ord-1", body);
                Verifier.Verified ok = a.verify("POST", "/v1/payments", headersOf(h), body, now);
                assertEquals("key_test_1", ok.keyId());
                assertEquals("create-ord-1", ok.idempotencyKey());
                assertEquals(h.nonce(), ok.nonce());
                assertEquals(now, ok.timestamp());
                PayidemException replay = assertThrows(PayidemException.NonceReused.class,
                        () -> b.verify("POST", "/v1/payments", headersOf(h), body, now));
                assertEquals(409, replay.httpStatus());
                assertTrue(replay instanceof PayidemException.Verification);
            }
            redis.destroyForcibly();
            redis.waitFor(10, TimeUnit.SECONDS);
            try (Signer signer = new Signer("key_test_1", SECRET); Verifier a = new Verifier(keys, 300, 1000, store)) {
                SignedHeaders h = signer.signAt(now, "POST", "/v1/payments", "create-ord-2", body);
                PayidemException down = assertThrows(PayidemException.ReplayStoreUnavailable.class,
                        () -> a.verify("POST", "/v1/payments", headersOf(h), body, now));
                assertEquals(503, down.httpStatus());
                assertTrue(!down.getMessage().contains(new String(SECRET, StandardCharsets.UTF_8)));
            }
        } finally {
            redis.destroyForcibly();
        }
    }
}
