package io.payidem;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/** The header values of one signed attempt, to send with exactly the bytes that were signed. */
public final class SignedHeaders {
    // Offsets of struct payidem_signed_headers (char arrays only: no padding).
    static final int KEY_ID = 129;
    static final int TIMESTAMP = 21;
    static final int NONCE = 37;
    static final int SIGNATURE = 65;
    static final int IDEMPOTENCY_KEY = 256;
    static final int SIZE = KEY_ID + TIMESTAMP + NONCE + SIGNATURE + IDEMPOTENCY_KEY;

    private final String apiKey;
    private final String timestamp;
    private final String nonce;
    private final String signature;
    private final String idempotencyKey;

    SignedHeaders(byte[] c) {
        int o = 0;
        apiKey = Text.field(c, o, KEY_ID);
        o += KEY_ID;
        timestamp = Text.field(c, o, TIMESTAMP);
        o += TIMESTAMP;
        nonce = Text.field(c, o, NONCE);
        o += NONCE;
        signature = Text.field(c, o, SIGNATURE);
        o += SIGNATURE;
        idempotencyKey = Text.field(c, o, IDEMPOTENCY_KEY);
    }

    /** The {@code X-Api-Key} value. */
    public String apiKey() {
        return apiKey;
    }

    /** The {@code X-Timestamp} value (decimal Unix seconds). */
    public String timestamp() {
        return timestamp;
    }

    /** The {@code X-Nonce} value. */
    public String nonce() {
        return nonce;
    }

    /** The {@code X-Signature} value. */
    public String signature() {
        return signature;
    }

    /** The {@code Idempotency-Key} value, or "" for none. */
    public String idempotencyKey() {
        return idempotencyKey;
    }

    /**
     * Every header to send, name to value, in the protocol's order; the
     * names are the library's ({@code payidem_signed_header_name}).
     * {@code Idempotency-Key} only when there is one.
     */
    public Map<String, String> asMap() {
        String[] values = {apiKey, timestamp, nonce, signature, idempotencyKey};
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < values.length; i++) {
            if (!values[i].isEmpty()) {
                m.put(Names.signedHeader(i), values[i]);
            }
        }
        return Collections.unmodifiableMap(m);
    }

    @Override
    public String toString() {
        return asMap().toString();
    }
}
