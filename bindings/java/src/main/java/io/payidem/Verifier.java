package io.payidem;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.ptr.PointerByReference;
import com.sun.jna.ptr.ShortByReference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Verifies signed requests for a platform (protocol v1) through the core:
 * window, signature, nonce replay (in this process's memory or a shared
 * Redis replay store), idempotency key on POST. Thread-safe. Close it to
 * wipe its secrets.
 */
public final class Verifier implements AutoCloseable {
    // struct payidem_verified: key_id[129], idempotency_key[256], nonce[37], then uint64_t timestamp (8-aligned).
    private static final int VERIFIED_TIMESTAMP = 424;
    private static final int VERIFIED_SIZE = 432;

    private final Handle handle;

    /** What a verification accepted: act on these values, never on headers read again. */
    public static final class Verified extends Value<Verified> {
        private static final Fields<Verified> FIELDS = Fields.<Verified>of("Verified", "=").add("key_id", Verified::keyId)
                .add("idempotency_key", Verified::idempotencyKey).add("nonce", Verified::nonce)
                .add("timestamp", Verified::timestamp);

        private final String keyId;
        private final String idempotencyKey;
        private final String nonce;
        private final long timestamp;

        Verified(byte[] c) {
            super(FIELDS);
            keyId = Text.field(c, 0, SignedHeaders.KEY_ID);
            idempotencyKey = Text.field(c, SignedHeaders.KEY_ID, SignedHeaders.IDEMPOTENCY_KEY);
            nonce = Text.field(c, SignedHeaders.KEY_ID + SignedHeaders.IDEMPOTENCY_KEY, SignedHeaders.NONCE);
            timestamp = ByteBuffer.wrap(c).order(ByteOrder.nativeOrder()).getLong(VERIFIED_TIMESTAMP);
        }

        /** The key id that signed the request. */
        public String keyId() {
            return keyId;
        }

        /** The idempotency key, or "" for none. */
        public String idempotencyKey() {
            return idempotencyKey;
        }

        /** The signed nonce, now recorded as used. */
        public String nonce() {
            return nonce;
        }

        /** The signed timestamp (Unix seconds). */
        public long timestamp() {
            return timestamp;
        }
    }

    /**
     * A verifier with a timestamp window of {@code windowSeconds} (300 in
     * protocol v1), at most {@code nonceCapacityPerKey} live nonces per key
     * in memory, and the keys given (each key id with one or more active
     * secrets of 16..=1024 bytes, copied).
     */
    public Verifier(Map<String, List<byte[]>> keys, long windowSeconds, long nonceCapacityPerKey) {
        this(keys, windowSeconds, nonceCapacityPerKey, "memory");
    }

    /**
     * As {@link #Verifier(Map, long, long)} with nonces recorded in
     * {@code replayStore}: {@code "memory"} (or null), or a Redis URL
     * ({@code redis://host[:port][/db]}, {@code unix:///path.sock}) shared
     * by a fleet of verifiers; an unreachable store fails closed
     * ({@link PayidemException.ReplayStoreUnavailable}).
     */
    public Verifier(Map<String, List<byte[]>> keys, long windowSeconds, long nonceCapacityPerKey,
            String replayStore) {
        PointerByReference out = new PointerByReference();
        PointerByReference err = new PointerByReference();
        PayidemException.check(Lib.payidem_verifier_new_with_replay_store(windowSeconds, nonceCapacityPerKey,
                Text.c(replayStore, "replay_store"), out, err), err);
        handle = new Handle(out.getValue(), Lib::payidem_verifier_free, "verifier");
        try {
            for (Map.Entry<String, List<byte[]>> k : keys.entrySet()) {
                addKey(k.getKey(), k.getValue());
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** Adds a key id with its active secrets (several during a rotation: any may match). */
    public void addKey(String keyId, List<byte[]> secrets) {
        keyCall(keyId, secrets, false);
    }

    /** Replaces the active secrets of a key id already added, keeping its nonce memory. */
    public void setSecrets(String keyId, List<byte[]> secrets) {
        keyCall(keyId, secrets, true);
    }

    /** Removes a key id: its secrets are wiped; its requests are then unknown_api_key. */
    public void removeKey(String keyId) {
        PointerByReference err = new PointerByReference();
        handle.run(p -> PayidemException.check(Lib.payidem_verifier_remove_key(p, Text.c(keyId, "key_id"), err), err));
    }

    private void keyCall(String keyId, List<byte[]> secrets, boolean replace) {
        int n = secrets == null ? 0 : secrets.size();
        List<Secret> copies = new ArrayList<>();
        Memory ptrs = new Memory((long) Math.max(1, n) * Native.POINTER_SIZE);
        Memory lens = new Memory((long) Math.max(1, n) * Native.SIZE_T_SIZE);
        PointerByReference err = new PointerByReference();
        try {
            handle.run(p -> {
                for (int i = 0; i < n; i++) {
                    Secret s = new Secret(secrets.get(i), "secrets[" + i + "]");
                    copies.add(s);
                    ptrs.setPointer((long) i * Native.POINTER_SIZE, s.memory);
                    lens.setLong((long) i * Native.SIZE_T_SIZE, s.length);
                }
                byte[] id = Text.c(keyId, "key_id");
                int rc = replace ? Lib.payidem_verifier_set_secrets(p, id, ptrs, lens, n, err)
                        : Lib.payidem_verifier_add_key(p, id, ptrs, lens, n, err);
                PayidemException.check(rc, err);
            });
        } finally {
            for (Secret s : copies) {
                s.close();
            }
        }
    }

    /**
     * Verifies one received request at the server's clock {@code nowUnixSeconds}.
     * {@code headers} are every header received, in order (a name may repeat;
     * names compare case-insensitively). {@code path} is the request target
     * as received (path and query).
     *
     * @throws PayidemException.Verification with the status to answer in
     *     {@link PayidemException#httpStatus()}, or
     *     {@link PayidemException.InvalidArgument}
     */
    public Verified verify(String method, String path, List<Map.Entry<String, String>> headers, byte[] body,
            long nowUnixSeconds) {
        byte[] b = Text.body(body);
        NativeHeaders h = new NativeHeaders(headers);
        byte[] verified = new byte[VERIFIED_SIZE];
        ShortByReference status = new ShortByReference();
        PointerByReference err = new PointerByReference();
        int rc = handle.with(p -> Lib.payidem_verifier_verify_into(p, Text.c(method, "method"), Text.c(path, "path"),
                h.array, h.count, b, b.length, nowUnixSeconds, verified, status, err));
        if (rc != 0) {
            throw PayidemException.of(rc, err);
        }
        return new Verified(verified);
    }

    /** Frees the verifier and wipes its secrets, once running verifications are done. */
    @Override
    public void close() {
        handle.close();
    }

    @Override
    public String toString() {
        return "Verifier(secrets redacted)";
    }
}
