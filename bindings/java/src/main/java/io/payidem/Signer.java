package io.payidem;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.nio.charset.StandardCharsets;

/**
 * Signs requests with one key (protocol v1) through the core. Thread-safe:
 * one signer may sign on many threads at once. Close it to wipe its secret.
 */
public final class Signer implements AutoCloseable {
    private final Handle handle;

    /**
     * A signer for {@code keyId} (1..=128 of {@code [A-Za-z0-9._:-]}) and a
     * secret of 16..=1024 bytes, copied into the core's keyed MAC state: the
     * caller may wipe its array as soon as this returns.
     *
     * @throws PayidemException.InvalidArgument naming {@code key_id} or {@code secret}
     */
    public Signer(String keyId, byte[] secret) {
        PointerByReference out = new PointerByReference();
        PointerByReference err = new PointerByReference();
        byte[] id = Text.c(keyId, "key_id");
        if (id == null) {
            throw PayidemException.invalidArgument("key_id", "key_id is null");
        }
        try (Secret s = new Secret(secret, "secret")) {
            PayidemException.check(Lib.payidem_signer_new(id, s.memory, s.length, out, err), err);
        }
        handle = new Handle(out.getValue(), Lib::payidem_signer_free, "signer");
    }

    /** Signs one attempt now (the system clock) with a fresh random nonce. */
    public SignedHeaders sign(String method, String path, String idempotencyKey, byte[] body) {
        return signAt(System.currentTimeMillis() / 1000, method, path, idempotencyKey, body);
    }

    /**
     * Signs one attempt at {@code unixSeconds} with a fresh random nonce.
     * {@code idempotencyKey} is null or "" for none (a POST requires one).
     */
    public SignedHeaders signAt(long unixSeconds, String method, String path, String idempotencyKey, byte[] body) {
        byte[] m = Text.c(method, "method");
        byte[] p = Text.c(path, "path");
        byte[] k = Text.c(idempotencyKey, "idempotency_key");
        if (m == null || p == null) {
            throw PayidemException.invalidArgument(m == null ? "method" : "path", "method and path must not be null");
        }
        byte[] b = Text.body(body);
        // One native buffer per thread holds the arguments and the answer: JNA copies every byte[]
        // argument on each call, which costs more than the signature.
        long need = SignedHeaders.SIZE + m.length + p.length + (k == null ? 0 : k.length) + b.length;
        Memory own = need > Scratch.SIZE ? new Memory(need) : null;
        Memory buf = own != null ? own : Scratch.get();
        try {
            long o = SignedHeaders.SIZE;
            Pointer mp = put(buf, o, m);
            o += m.length;
            Pointer pp = put(buf, o, p);
            o += p.length;
            Pointer kp = k == null ? null : put(buf, o, k);
            o += k == null ? 0 : k.length;
            Pointer bp = put(buf, o, b);
            PointerByReference err = ErrOut.get();
            int rc = handle.with(
                    h -> Lib.payidem_signer_sign_into(h, mp, pp, kp, bp, b.length, unixSeconds, buf, err));
            PayidemException.check(rc, err);
            return new SignedHeaders(buf.getByteArray(0, SignedHeaders.SIZE));
        } finally {
            if (own != null) {
                own.close();
            }
        }
    }

    private static Pointer put(Memory buf, long offset, byte[] bytes) {
        buf.write(offset, bytes, 0, bytes.length);
        return buf.share(offset);
    }

    /**
     * The signature (64 lower-case hex digits) of explicit canonical parts,
     * each as it goes on the wire; for conformance tests and recorded
     * traffic. Every part is checked first.
     */
    public String signParts(String method, String path, String timestamp, String nonce, String idempotencyKey,
            byte[] body) {
        byte[] b = Text.body(body);
        byte[] buf = new byte[SignedHeaders.SIGNATURE];
        PointerByReference err = new PointerByReference();
        handle.run(p -> PayidemException.check(Lib.payidem_signer_sign_parts(p, Text.c(method, "method"),
                Text.c(path, "path"), Text.c(timestamp, "timestamp"), Text.c(nonce, "nonce"),
                Text.c(idempotencyKey, "idempotency_key"), b, b.length, buf, buf.length, err), err));
        return Text.field(buf, 0, buf.length);
    }

    /**
     * The canonical string
     * {@code method\npath\ntimestamp\nnonce\nidempotency_key\nbody_sha256}
     * of one attempt, as the core builds it.
     */
    public static String canonicalString(String method, String path, String timestamp, String nonce,
            String idempotencyKey, byte[] body) {
        byte[] b = Text.body(body);
        byte[] m = Text.c(method, "method");
        byte[] pa = Text.c(path, "path");
        byte[] t = Text.c(timestamp, "timestamp");
        byte[] n = Text.c(nonce, "nonce");
        byte[] k = Text.c(idempotencyKey, "idempotency_key");
        LongByReference len = new LongByReference();
        PointerByReference err = new PointerByReference();
        int rc = Lib.payidem_canonical_string(m, pa, t, n, k, b, b.length, null, 0, len, err);
        if (rc != 0 && !"buffer_too_small".equals(Text.read(Lib.payidem_result_name(rc)))) {
            throw PayidemException.of(rc, err);
        }
        if (err.getValue() != null) {
            Lib.payidem_error_free(err.getValue());
            err.setValue(null);
        }
        byte[] buf = new byte[(int) len.getValue() + 1];
        PayidemException.check(Lib.payidem_canonical_string(m, pa, t, n, k, b, b.length, buf, buf.length, len, err),
                err);
        return new String(buf, 0, (int) len.getValue(), StandardCharsets.UTF_8);
    }

    /** The body's SHA-256 as 64 lower-case hex digits, as the core computes it. */
    public static String bodySha256Hex(byte[] body) {
        byte[] b = Text.body(body);
        byte[] buf = new byte[SignedHeaders.SIGNATURE];
        PointerByReference err = new PointerByReference();
        PayidemException.check(Lib.payidem_body_sha256_hex(b, b.length, buf, buf.length, err), err);
        return Text.field(buf, 0, buf.length);
    }

    /** The native handle, for the operation machine's signing. */
    Handle handle() {
        return handle;
    }

    /** Frees the signer and wipes its secret; later calls fail. Waits for running signatures. */
    @Override
    public void close() {
        handle.close();
    }

    @Override
    public String toString() {
        return "Signer(secret redacted)";
    }
}
