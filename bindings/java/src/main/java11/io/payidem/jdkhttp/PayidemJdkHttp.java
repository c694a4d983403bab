package io.payidem.jdkhttp;

import io.payidem.Call;
import io.payidem.Outcome;
import io.payidem.PayidemClient;
import io.payidem.PayidemException;
import io.payidem.Reply;
import io.payidem.Step;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * payidem operations over the JDK's {@link HttpClient} (Java 11+, in the
 * jar's {@code META-INF/versions/11}): each runs as one {@link Call} of a
 * {@link PayidemClient} (journaled, retried by the core's rules, each
 * attempt signed afresh), sent through your {@code HttpClient} (its proxy,
 * TLS and executor). Signed bytes are never sent twice by it: every attempt
 * goes as HTTP/1.1 (no HTTP/2 "unprocessed" resend), an operation's body
 * can be read once only (a resend fails before its body leaves), and a JVM
 * with {@code jdk.httpclient.enableAllMethodRetry} set, which lets the JDK
 * resend a POST on its own, is refused. The JDK may still resend a signed
 * status query (a GET, which moves no money) once on a pooled connection
 * the server had closed; the platform refuses its nonce as reused.
 */
public final class PayidemJdkHttp {
    /** The JDK property that would let it resend a POST by itself. */
    static final String ALL_METHOD_RETRY = "jdk.httpclient.enableAllMethodRetry";

    private final HttpClient http;
    private final PayidemClient client;

    /**
     * Operations of {@code client} sent through {@code http}.
     *
     * @throws IllegalStateException when {@code jdk.httpclient.enableAllMethodRetry} is set
     */
    public PayidemJdkHttp(HttpClient http, PayidemClient client) {
        String retryAll = System.getProperty(ALL_METHOD_RETRY);
        if (retryAll != null && !"false".equalsIgnoreCase(retryAll.trim())) {
            throw new IllegalStateException(ALL_METHOD_RETRY + " is set: the JDK would resend signed POSTs");
        }
        this.http = http;
        this.client = client;
    }

    /**
     * Runs one operation to its end, as {@link PayidemClient#execute} does
     * but over the JDK's client; a settled success is the outcome.
     *
     * @throws PayidemException every failure the core ends it with (its
     *         {@link PayidemException#landed()} says whether it may have taken effect)
     */
    public Outcome execute(String orderId, String method, String path, byte[] body, String idempotencyKey,
            String statusPath, Duration deadline) {
        try (Call call = client.begin(orderId, method, path, body, idempotencyKey, statusPath, deadline)) {
            return drive(call);
        }
    }

    /** Resumes an order already journaled (e.g. after an outcome_unknown), as {@link PayidemClient#resume} does. */
    public Outcome resume(String orderId, Duration deadline) {
        try (Call call = client.beginResume(orderId, deadline)) {
            return drive(call);
        }
    }

    private Outcome drive(Call call) {
        for (;;) {
            Step s = call.step();
            switch (s.kind()) {
                case "send":
                    send(call, s);
                    break;
                case "wait":
                    Step cancelled = call.sleep(s);
                    if (cancelled != null) {
                        return end(cancelled);
                    }
                    break;
                default:
                    return end(s);
            }
        }
    }

    private static Outcome end(Step end) {
        if (end.outcome() == null) {
            throw end.error();
        }
        return end.outcome();
    }

    /** Sends one attempt exactly as the step says and reports what came of it. */
    private void send(Call call, Step s) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(client.url(s.path())))
                .version(HttpClient.Version.HTTP_1_1).timeout(Duration.ofMillis(s.timeoutMs()));
        for (Map.Entry<String, String> h : s.headers()) {
            b.header(h.getKey(), h.getValue());
        }
        boolean hasBody = "operation".equals(s.attemptKind()) && s.body() != null && s.body().length > 0;
        b.method(s.method(), hasBody ? new SendOnce(s.body()) : HttpRequest.BodyPublishers.noBody());
        try {
            HttpResponse<byte[]> r = http.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
            List<Map.Entry<String, String>> headers = new ArrayList<>();
            for (Map.Entry<String, List<String>> h : r.headers().map().entrySet()) {
                for (String v : h.getValue()) {
                    headers.add(new AbstractMap.SimpleImmutableEntry<>(h.getKey(), v));
                }
            }
            call.report(Reply.response(r.statusCode(), headers, r.body()));
        } catch (ConnectException | HttpConnectTimeoutException e) {
            call.report(Reply.notSent(e.toString()));
        } catch (IOException e) {
            // Anything after the connection was made may have landed.
            call.report(Reply.noResponse(e.toString()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            call.report(Reply.noResponse("interrupted"));
        }
    }

    /** An operation's body that can be sent once: a second subscription (a resend) fails before any byte. */
    static final class SendOnce implements HttpRequest.BodyPublisher {
        private final HttpRequest.BodyPublisher bytes;
        private final AtomicBoolean used = new AtomicBoolean();

        SendOnce(byte[] body) {
            this.bytes = HttpRequest.BodyPublishers.ofByteArray(body);
        }

        @Override
        public long contentLength() {
            return bytes.contentLength();
        }

        @Override
        public void subscribe(Flow.Subscriber<? super ByteBuffer> subscriber) {
            if (used.compareAndSet(false, true)) {
                bytes.subscribe(subscriber);
                return;
            }
            subscriber.onSubscribe(new Flow.Subscription() {
                @Override
                public void request(long n) {}

                @Override
                public void cancel() {}
            });
            subscriber.onError(new IOException("payidem: refused to send a signed attempt again"));
        }
    }
}
