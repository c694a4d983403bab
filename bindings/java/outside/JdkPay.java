import io.payidem.Outcome;
import io.payidem.PayidemClient;
import io.payidem.jdkhttp.PayidemJdkHttp;
import java.net.http.HttpClient;
import shop.Pay;

/**
 * Run as a source file on Java 11+ against the installed jar: pays one order (args[2]) over
 * java.net.http through the jar's META-INF/versions/11 integration, journal args[1], with shop.Pay's client
 * (target/classes on the class path).
 */
public final class JdkPay {
    private JdkPay() {}

    public static void main(String[] args) {
        String order = args[2];
        try (PayidemClient client = Pay.client(args)) {
            Outcome out = new PayidemJdkHttp(HttpClient.newHttpClient(), client).execute(order, "POST",
                    "/v1/payments", Pay.body(order, 990), null, "/v1/payments?order_id=" + order, null);
            System.out.println("jdk paid: " + out.httpStatus() + " " + out.idempotencyKey());
        }
    }
}
