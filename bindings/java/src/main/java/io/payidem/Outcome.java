package io.payidem;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;

/** How an operation settled with success: the platform's answer (2xx) and how it was reached. */
public final class Outcome extends Value<Outcome> {
    private static final Fields<Outcome> FIELDS = Fields.<Outcome>of("Outcome", " ").add("order", Outcome::orderId)
            .add("key", Outcome::idempotencyKey).add("status", Outcome::httpStatus).add("replayed", Outcome::replayed)
            .add("attempts", Outcome::attempts);

    private final int httpStatus;
    private final byte[] body;
    private final boolean replayed;
    private final String orderId;
    private final String idempotencyKey;
    private final int attempts;

    /** Copies everything out of an outcome handle, which it frees. */
    Outcome(Pointer o) {
        super(FIELDS);
        try {
            httpStatus = Lib.payidem_outcome_http_status(o) & 0xffff;
            PointerByReference b = new PointerByReference();
            LongByReference n = new LongByReference();
            body = Lib.payidem_outcome_body(o, b, n) != 0 && n.getValue() > 0
                    ? b.getValue().getByteArray(0, (int) n.getValue()) : new byte[0];
            replayed = Lib.payidem_outcome_replayed(o) != 0;
            orderId = Text.read(Lib.payidem_outcome_order_id(o));
            idempotencyKey = Text.read(Lib.payidem_outcome_idempotency_key(o));
            attempts = Lib.payidem_outcome_attempts(o);
        } finally {
            Lib.payidem_outcome_free(o);
        }
    }

    /** The platform's HTTP status (2xx). */
    public int httpStatus() {
        return httpStatus;
    }

    /** A copy of the platform's response body. */
    public byte[] body() {
        return body.clone();
    }

    /** Whether the platform answered with a stored reply (Idempotent-Replayed) or the journal did. */
    public boolean replayed() {
        return replayed;
    }

    /** The order id. */
    public String orderId() {
        return orderId;
    }

    /** The idempotency key the operation was sent with. */
    public String idempotencyKey() {
        return idempotencyKey;
    }

    /** Attempts the operation made in total, over every call (an answer from the journal adds none). */
    public int attempts() {
        return attempts;
    }
}
