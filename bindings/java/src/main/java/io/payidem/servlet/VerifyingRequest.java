package io.payidem.servlet;

import io.payidem.PayidemException;
import io.payidem.Refusal;
import io.payidem.Verifier;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * What the javax and jakarta filters share, free of either API: reads the
 * body (up to a limit), verifies the request with a {@link Verifier} and
 * says either what was verified or the core's {@link Refusal}.
 */
public final class VerifyingRequest {
    /** The request attribute holding the {@link Verifier.Verified} of an accepted request. */
    public static final String VERIFIED_ATTRIBUTE = "io.payidem.Verified";

    /** The body limit when none is given: 1 MiB. */
    public static final long DEFAULT_BODY_LIMIT = 1 << 20;

    private final Verified verified;
    private final Refusal refusal;
    private final byte[] body;

    private VerifyingRequest(Verified verified, Refusal refusal, byte[] body) {
        this.verified = verified;
        this.refusal = refusal;
        this.body = body;
    }

    /** An accepted request's verified values. */
    public static final class Verified {
        final Verifier.Verified values;

        Verified(Verifier.Verified values) {
            this.values = values;
        }
    }

    /**
     * Verifies one request: {@code method}, {@code uri} and {@code query}
     * as received (the request target is {@code uri[?query]}), every header
     * through {@code headerNames} / {@code headerValues}, the body from
     * {@code in} (refused with 413 past {@code bodyLimit}), at the server's
     * clock {@code nowUnix}.
     */
    public static VerifyingRequest verify(Verifier verifier, String method, String uri, String query,
            Enumeration<String> headerNames, Function<String, Enumeration<String>> headerValues, InputStream in,
            long bodyLimit, long nowUnix) throws IOException {
        byte[] body = read(in, bodyLimit);
        if (body == null) {
            return new VerifyingRequest(null, Refusal.bodyTooLarge(bodyLimit), null);
        }
        List<Map.Entry<String, String>> headers = new ArrayList<>();
        while (headerNames.hasMoreElements()) {
            String name = headerNames.nextElement();
            Enumeration<String> values = headerValues.apply(name);
            while (values.hasMoreElements()) {
                headers.add(new AbstractMap.SimpleImmutableEntry<>(name, values.nextElement()));
            }
        }
        String target = query == null ? uri : uri + "?" + query;
        try {
            return new VerifyingRequest(new Verified(verifier.verify(method, target, headers, body, nowUnix)), null,
                    body);
        } catch (PayidemException e) {
            return new VerifyingRequest(null, Refusal.of(e), body);
        }
    }

    /** The verified values, or null when refused. */
    public Verifier.Verified verified() {
        return verified == null ? null : verified.values;
    }

    /** The answer to send instead of running the application, or null when accepted. */
    public Refusal refusal() {
        return refusal;
    }

    /** The body as read and verified (the application reads it again from here); null past the limit. */
    public byte[] body() {
        return body;
    }

    /** The whole stream, or null past {@code limit} bytes. */
    private static byte[] read(InputStream in, long limit) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buf = new byte[8192];
        for (int n; (n = in.read(buf)) > 0; ) {
            if (out.size() + (long) n > limit) {
                return null;
            }
            out.write(buf, 0, n);
        }
        return out.toByteArray();
    }
}
