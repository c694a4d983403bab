package io.payidem.bench;

import io.payidem.PayidemClient;
import io.payidem.SignedHeaders;
import io.payidem.Signer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * bindings/java/bench.sh: signing one attempt through JNA (the jar), through the
 * JNI prototype, and in pure JVM code (javax.crypto.Mac + MessageDigest, the
 * anchor), in the same JVM; then settled operations per second against the
 * mock at 1 and 16 threads. Prints median ns per signature of several rounds.
 */
public final class SignBench {
    private static final byte[] SECRET = "sk_test_payidem_mock_secret_0001".getBytes(StandardCharsets.UTF_8);
    private static volatile Object sink;

    private SignBench() {}

    interface Op {
        Object run() throws Exception;
    }

    static double nsPerOp(Op op, int n) throws Exception {
        long t = System.nanoTime();
        for (int i = 0; i < n; i++) {
            sink = op.run();
        }
        return (System.nanoTime() - t) / (double) n;
    }

    static double median(Op op, int n, int rounds) throws Exception {
        nsPerOp(op, n); // warm-up
        nsPerOp(op, n);
        List<Double> r = new ArrayList<>();
        for (int i = 0; i < rounds; i++) {
            r.add(nsPerOp(op, n));
        }
        Collections.sort(r);
        return r.get(rounds / 2);
    }

    private static final char[] DIGITS = "0123456789abcdef".toCharArray();

    /** Lower-case hex, the anchor's fastest plain-JVM way (a table), so the JVM side is not handicapped. */
    static String hex(byte[] b) {
        char[] out = new char[2 * b.length];
        for (int i = 0; i < b.length; i++) {
            out[2 * i] = DIGITS[(b[i] >> 4) & 0xf];
            out[2 * i + 1] = DIGITS[b[i] & 0xf];
        }
        return new String(out);
    }

    public static void main(String[] args) throws Exception {
        byte[] body = "{\"order_id\":\"ord-1001\",\"amount\":125000,\"currency\":\"RUB\"}".getBytes(StandardCharsets.UTF_8);
        long ts = 1767225600L;
        int n = 200_000;
        int rounds = 7;

        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(SECRET, "HmacSHA256"));
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        Op jvm = () -> {
            String nonce = UUID.randomUUID().toString();
            String canonical = "POST\n/v1/payments\n" + ts + "\n" + nonce + "\ncreate-ord-1001\n" + hex(sha.digest(body));
            return hex(mac.doFinal(canonical.getBytes(StandardCharsets.UTF_8)));
        };

        try (Signer signer = new Signer("key_test_1", SECRET)) {
            Op jna = () -> signer.signAt(ts, "POST", "/v1/payments", "create-ord-1001", body);
            // The same bytes through the jar and through the JVM's own crypto.
            SignedHeaders h = signer.signAt(ts, "POST", "/v1/payments", "create-ord-1001", body);
            String canonical = "POST\n/v1/payments\n" + ts + "\n" + h.nonce() + "\ncreate-ord-1001\n"
                    + hex(sha.digest(body));
            if (!hex(mac.doFinal(canonical.getBytes(StandardCharsets.UTF_8))).equals(h.signature())) {
                throw new AssertionError("the JVM's HMAC differs from the core's signature");
            }

            System.loadLibrary("payidem_jni");
            long jniSigner = JniSigner.newSigner("key_test_1", SECRET.clone());
            byte[] m = "POST\0".getBytes(StandardCharsets.UTF_8);
            byte[] p = "/v1/payments\0".getBytes(StandardCharsets.UTF_8);
            byte[] k = "create-ord-1001\0".getBytes(StandardCharsets.UTF_8);
            Op jni = () -> {
                byte[] out = new byte[508];
                if (JniSigner.signInto(jniSigner, m, p, k, body, ts, out) != 0) {
                    throw new AssertionError("JNI sign failed");
                }
                return out;
            };
            double a = median(jvm, n, rounds);
            double j = median(jna, n, rounds);
            double i = median(jni, n, rounds);
            System.out.printf("sign jvm  (javax.crypto.Mac + MessageDigest): %8.0f ns%n", a);
            System.out.printf("sign jna  (io.payidem.Signer, the jar):        %8.0f ns  %.2fx the JVM%n", j, j / a);
            System.out.printf("sign jni  (prototype, not shipped):           %8.0f ns  %.2fx the JVM%n", i, i / a);
            JniSigner.freeSigner(jniSigner);
        }

        if (args.length > 0) {
            java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("payidem-java-bench-");
            for (int threads : new int[] {1, 16}) {
                settled(args[0], threads, PayidemClient.JOURNAL_MEMORY, "memory journal");
                settled(args[0], threads, dir.resolve("journal-" + threads + ".sqlite3").toString(), "SQLite journal");
            }
        }
    }

    /** Settled operations per second, {@code threads} threads sharing one client on {@code journal}. */
    static void settled(String url, int threads, String journal, String what) throws Exception {
        try (PayidemClient c = PayidemClient.builder().baseUrl(url).keyId("key_test_1").secret(SECRET)
                .journalPath(journal).retryBudget(1_000_000, 5, 10, 1)
                .deadline(Duration.ofSeconds(30)).build()) {
            AtomicInteger next = new AtomicInteger();
            String run = UUID.randomUUID().toString().substring(0, 8);
            int perThread = 2000 / threads + 50;
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            // Warm-up round, then the measured one.
            for (int round = 0; round < 2; round++) {
                List<Future<?>> fs = new ArrayList<>();
                long t = System.nanoTime();
                for (int w = 0; w < threads; w++) {
                    fs.add(pool.submit(() -> {
                        for (int i = 0; i < perThread; i++) {
                            String order = "bench-" + run + "-" + next.incrementAndGet();
                            byte[] b = ("{\"order_id\":\"" + order + "\",\"amount\":100,\"currency\":\"RUB\"}")
                                    .getBytes(StandardCharsets.UTF_8);
                            c.execute(order, "POST", "/v1/payments", b, "/v1/payments?order_id=" + order);
                        }
                        return null;
                    }));
                }
                for (Future<?> f : fs) {
                    f.get();
                }
                double s = (System.nanoTime() - t) / 1e9;
                if (round == 1) {
                    System.out.printf("settled ops/s, %2d thread(s), %s: %8.0f%n", threads, what,
                            threads * perThread / s);
                }
            }
            pool.shutdown();
        }
    }
}
