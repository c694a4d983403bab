import io.payidem.Outcome;
import io.payidem.PayidemClient;
import io.payidem.jdkhttp.PayidemJdkHttp;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;

/**
 * Run as a source file on Java 11+ against the installed jar: pays one order (args[2]) over
 * java.net.http through the jar's META-INF/versions/11 integration, journal args[1].
 */
public final class JdkPay {
    private JdkPay() {}

    public static void main(String[] args) {
        String order = args[2];
        byte[] body = ("{\"order_id\":\"" + order + "\",\"amount\":990,\"currency\":\"RUB\"}")
                .getBytes(StandardCharsets.UTF_8);
        try (PayidemClient client = PayidemClient.builder().baseUrl(args[0]).keyId("key_test_1")
                .secret("sk_test_payidem_mock_secret_0001".getBytes(StandardCharsets.UTF_8)).journalPath(args[1])
                .build()) {
            Outcome out = new PayidemJdkHttp(HttpClient.newHttpClient(), client).execute(order, "POST",
                    "/v1/payments", body, null, "/v1/payments?order_id=" + order, null);
            System.out.println("jdk paid: " + out.httpStatus() + " " + out.idempotencyKey());
        }
    }
}
