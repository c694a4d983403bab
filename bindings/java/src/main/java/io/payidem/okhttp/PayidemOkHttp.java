package io.payidem.okhttp;

import io.payidem.Call;
import io.payidem.Names;
import io.payidem.PayidemClient;
import io.payidem.PayidemException;
import io.payidem.Reply;
import io.payidem.Step;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.UnknownHostException;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kotlin.Pair;
import okhttp3.Interceptor;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Protocol;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import okhttp3.ResponseBody;
import okio.Buffer;

/**
 * OkHttp for payidem operations: a request tagged with a
 * {@link PayidemOrder} runs as one operation of a {@link PayidemClient}
 * (journaled, retried by the core's rules, each attempt signed afresh);
 * other requests pass untouched. The settled answer comes back as the
 * response (a final refusal such as 402 too); anything else unsettled is a
 * {@link PayidemIOException}. Signed bytes are never sent twice: OkHttp's
 * own retries and redirects are off, and a resend OkHttp still attempts
 * (a 503 with {@code Retry-After: 0}) is refused before it leaves.
 */
public final class PayidemOkHttp {
    private PayidemOkHttp() {}

    /** {@code base} with the payidem interceptor, the resend guard, no retry on connection failure, no redirects. */
    public static OkHttpClient newClient(OkHttpClient base, PayidemClient client) {
        return base.newBuilder().retryOnConnectionFailure(false).followRedirects(false).followSslRedirects(false)
                .addInterceptor(new OperationInterceptor(client)).addNetworkInterceptor(new ResendGuard()).build();
    }

    /** Runs tagged requests as operations through a {@link Call}. */
    static final class OperationInterceptor implements Interceptor {
        private final PayidemClient client;

        OperationInterceptor(PayidemClient client) {
            this.client = client;
        }

        @Override
        public Response intercept(Chain chain) throws IOException {
            Request request = chain.request();
            PayidemOrder order = request.tag(PayidemOrder.class);
            if (order == null) {
                return chain.proceed(request);
            }
            RequestBody original = request.body();
            MediaType type = original == null ? null : original.contentType();
            byte[] body = new byte[0];
            if (original != null) {
                Buffer buf = new Buffer();
                original.writeTo(buf);
                body = buf.readByteArray();
            }
            try (Call call = client.begin(order.orderId(), request.method(), client.targetOf(request.url().toString()),
                    body, order.idempotencyKey(), order.statusPath(), null)) {
                MediaType answerType = null;
                for (;;) {
                    Step s = call.step();
                    switch (s.kind()) {
                        case "send":
                            MediaType t = send(chain, request, call, s, type);
                            answerType = t != null ? t : answerType;
                            break;
                        case "wait":
                            if (call.sleep(s) != null) {
                                throw new InterruptedIOException("interrupted; the operation keeps its key");
                            }
                            break;
                        default:
                            return answer(request, s, answerType);
                    }
                }
            } catch (PayidemException e) {
                throw new PayidemIOException(e);
            }
        }

        /** Sends one attempt exactly as the step says and reports it; the answer's media type. */
        private MediaType send(Chain chain, Request request, Call call, Step s, MediaType type) {
            Request.Builder b = request.newBuilder().url(client.url(s.path()));
            for (Map.Entry<String, String> h : s.headers()) {
                b.header(h.getKey(), h.getValue());
            }
            if ("operation".equals(s.attemptKind())) {
                b.method(s.method(), RequestBody.create(s.body(), type));
            } else {
                b.method(s.method(), null).removeHeader("Content-Type");
            }
            boolean reached = false;
            try (Response r = chain.proceed(b.build())) {
                reached = true;
                byte[] bytes = r.body().bytes();
                List<Map.Entry<String, String>> headers = new ArrayList<>();
                for (Pair<? extends String, ? extends String> h : r.headers()) {
                    headers.add(new AbstractMap.SimpleImmutableEntry<>(h.getFirst(), h.getSecond()));
                }
                call.report(Reply.response(r.code(), headers, bytes));
                return r.body().contentType();
            } catch (IOException e) {
                // Only a failure before any byte left is "not sent"; anything later may have landed.
                boolean notSent = !reached && (e instanceof ConnectException || e instanceof UnknownHostException
                        || e instanceof NoRouteToHostException);
                call.report(notSent ? Reply.notSent(e.toString()) : Reply.noResponse(e.toString()));
                return null;
            }
        }

        /** The settled answer as a response, or the failure as an exception. */
        private static Response answer(Request request, Step end, MediaType type) throws PayidemIOException {
            int status;
            byte[] body;
            boolean replayed = false;
            if (end.outcome() != null) {
                status = end.outcome().httpStatus();
                body = end.outcome().body();
                replayed = end.outcome().replayed();
            } else if (end.error().isFinal() && end.error().httpStatus() > 0 && end.error().body() != null) {
                status = end.error().httpStatus();
                body = end.error().body();
            } else {
                throw new PayidemIOException(end.error());
            }
            Response.Builder r = new Response.Builder().request(request).protocol(Protocol.HTTP_1_1).code(status)
                    .message("").body(ResponseBody.create(body, type));
            if (replayed) {
                r.header("Idempotent-Replayed", "true");
            }
            return r.build();
        }
    }

    /** Refuses to send the same signed attempt (the same X-Nonce) twice, whoever asks. */
    static final class ResendGuard implements Interceptor {
        // X-Nonce: the core's third signed header.
        private static final String NONCE = Names.signedHeaders().get(2);

        private final Map<String, Boolean> seen = Collections.synchronizedMap(
                new LinkedHashMap<String, Boolean>(1024, 0.75f, false) {
                    private static final long serialVersionUID = 1L;

                    @Override
                    protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
                        return size() > 100_000;
                    }
                });

        @Override
        public Response intercept(Chain chain) throws IOException {
            String nonce = chain.request().header(NONCE);
            if (nonce != null && seen.put(nonce, Boolean.TRUE) != null) {
                throw new IOException("payidem: refused to send a signed attempt again (X-Nonce " + nonce + ")");
            }
            return chain.proceed(chain.request());
        }
    }
}
