package shop;

import io.payidem.Names;
import io.payidem.Outcome;
import io.payidem.PayidemClient;
import io.payidem.PayidemException;
import java.nio.charset.StandardCharsets;

/** Pays one order against the platform at args[0] with the journal args[1]; prints the outcome. */
public final class Pay {
    private Pay() {}

    /** The mock's client for the platform at {@code args[0]} with the journal {@code args[1]}. */
    public static PayidemClient client(String[] args) {
        return PayidemClient.builder().baseUrl(args[0]).keyId("key_test_1")
                .secret("sk_test_payidem_mock_secret_0001".getBytes(StandardCharsets.UTF_8)).journalPath(args[1])
                .build();
    }

    /** The JSON body paying {@code amount} for {@code order}. */
    public static byte[] body(String order, int amount) {
        return ("{\"order_id\":\"" + order + "\",\"amount\":" + amount + ",\"currency\":\"RUB\"}")
                .getBytes(StandardCharsets.UTF_8);
    }

    public static void main(String[] args) {
        String order = args[2];
        byte[] body = body(order, 1250);
        try (PayidemClient client = client(args)) {
            Outcome out = client.execute(order, "POST", "/v1/payments", body, "/v1/payments?order_id=" + order);
            System.out.println("library: " + Names.libraryOrigin());
            System.out.println("paid: " + out.httpStatus() + " " + out.idempotencyKey());
            Outcome again = client.execute(order, "POST", "/v1/payments", body, "/v1/payments?order_id=" + order);
            System.out.println("again: " + again.httpStatus() + " attempts " + again.attempts());
        } catch (PayidemException e) {
            System.out.println("failed: " + e.code().wireName() + " final=" + e.isFinal());
            System.exit(1);
        }
    }
}
