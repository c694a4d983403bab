package shop;

import io.payidem.Names;
import io.payidem.Outcome;
import io.payidem.PayidemClient;
import io.payidem.PayidemException;
import java.nio.charset.StandardCharsets;

/** Pays one order against the platform at args[0] with the journal args[1]; prints the outcome. */
public final class Pay {
    private Pay() {}

    public static void main(String[] args) {
        String order = args[2];
        byte[] body = ("{\"order_id\":\"" + order + "\",\"amount\":1250,\"currency\":\"RUB\"}")
                .getBytes(StandardCharsets.UTF_8);
        try (PayidemClient client = PayidemClient.builder().baseUrl(args[0]).keyId("key_test_1")
                .secret("sk_test_payidem_mock_secret_0001".getBytes(StandardCharsets.UTF_8)).journalPath(args[1])
                .build()) {
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
