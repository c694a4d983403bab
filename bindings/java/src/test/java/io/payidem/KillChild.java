package io.payidem;

import java.time.Duration;

/**
 * The child JVM of {@link KillTest}: pays one order with an on-disk
 * journal and is SIGKILLed while the platform holds the answer. Arguments:
 * the mock's URL, the journal path, the order id.
 */
public final class KillChild {
    private KillChild() {}

    /** Pays args[2] against args[0] with the journal args[1]; never returns while the kill test runs. */
    public static void main(String[] args) {
        try (PayidemClient c = PayidemClient.builder().baseUrl(args[0]).keyId(Mock.KEY_ID)
                .secret(Mock.SECRET.getBytes(java.nio.charset.StandardCharsets.UTF_8)).journalPath(args[1])
                .requestTimeout(Duration.ofSeconds(60)).deadline(Duration.ofSeconds(120)).build()) {
            System.out.println("sending attempt 1 of " + args[2]);
            System.out.flush();
            Outcome out = c.execute(args[2], "POST", "/v1/payments", Mock.paymentBody(args[2], 1250),
                    Mock.statusPath(args[2]));
            System.out.println("the child finished: " + out);
        }
        System.exit(3);
    }
}
