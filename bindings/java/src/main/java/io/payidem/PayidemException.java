package io.payidem;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;

/**
 * Every failure payidem reports: a stable {@link ErrorCode}, a message for
 * people and the context the code calls for. One nested class per code
 * (verification failures under {@link Verification}), so callers catch
 * what they handle, e.g. {@code catch (PayidemException.OutcomeUnknown e)}.
 * Unchecked: every call may fail with some code, and the code, not the
 * type system, says what to do. It never holds a secret.
 */
public class PayidemException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** What the core said about one failure, copied out of its error handle. */
    static final class Details {
        final ErrorCode code;
        final String message;
        final String field;
        final int httpStatus;
        final byte[] body;
        final String platformCode;
        final String platformMessage;
        final String orderId;
        final String idempotencyKey;
        final Long serverTime;

        Details(ErrorCode code, String message, String field, int httpStatus, byte[] body, String platformCode,
                String platformMessage, String orderId, String idempotencyKey, Long serverTime) {
            this.code = code;
            this.message = message;
            this.field = field;
            this.httpStatus = httpStatus;
            this.body = body;
            this.platformCode = platformCode;
            this.platformMessage = platformMessage;
            this.orderId = orderId;
            this.idempotencyKey = idempotencyKey;
            this.serverTime = serverTime;
        }
    }

    private final ErrorCode code;
    private final String coreMessage;
    private final String field;
    private final int httpStatus;
    private final byte[] body;
    private final String platformCode;
    private final String platformMessage;
    private final String orderId;
    private final String idempotencyKey;
    private final Long serverTime;
    private String landed;

    PayidemException(Details d) {
        super(d.code.wireName() + (d.message == null || d.message.isEmpty() ? "" : ": " + d.message)
                + (d.orderId == null ? "" : " (order " + d.orderId + ", key " + d.idempotencyKey + ")"));
        this.code = d.code;
        this.coreMessage = d.message == null ? "" : d.message;
        this.field = d.field;
        this.httpStatus = d.httpStatus;
        this.body = d.body;
        this.platformCode = d.platformCode;
        this.platformMessage = d.platformMessage;
        this.orderId = d.orderId;
        this.idempotencyKey = d.idempotencyKey;
        this.serverTime = d.serverTime;
    }

    /** The stable code. */
    public ErrorCode code() {
        return code;
    }

    /** The core's message alone (no code, no order), as a refusal's body carries it. */
    String coreMessage() {
        return coreMessage;
    }

    /**
     * Whether the operation this error ended is settled for good and never
     * sent again (rejected, idempotency_conflict, key_expired); false for
     * every other code, whose operation keeps its key and may still be
     * completed by execute or resume. From the library's table.
     */
    public boolean isFinal() {
        return code.isFinal();
    }

    /**
     * Whether the operation this failure ended may have taken effect: the
     * core's landed name ({@code no}, {@code maybe}, {@code yes}) carried by
     * the {@code end} step of an {@link Operation} or {@link Call} (and so of
     * the OkHttp integration); null when the failure did not end an
     * operation step (e.g. {@code execute}, whose C error carries no landed
     * value: its code says what to do). Anything but {@code no}: keep the key.
     */
    public String landed() {
        return landed;
    }

    /** Records the landed value of the end step this failure ended (set once, before it is handed out). */
    PayidemException endedWithLanded(String landedName) {
        this.landed = landedName;
        return this;
    }

    /** The argument or option that broke its rule (invalid_argument), else null. */
    public String field() {
        return field;
    }

    /**
     * The platform's status for an error that came with its answer (rejected,
     * conflict, refused) or a verifier's answer; 0 when none, which is every
     * local error (an invalid argument, a journal error: nothing was sent nor
     * answered).
     */
    public int httpStatus() {
        return httpStatus;
    }

    /** A copy of the platform's response body (rejected, conflict, refused); null when none. */
    public byte[] body() {
        return body == null ? null : body.clone();
    }

    /**
     * The platform's error code (e.g. {@code card_declined}) of an answer in
     * the protocol's error body (rejected, conflict, refused), read by the
     * core: bounded, control characters escaped, safe to print; null when
     * none.
     */
    public String platformCode() {
        return platformCode;
    }

    /** The platform's error message of that answer, read like {@link #platformCode()}; null when none. */
    public String platformMessage() {
        return platformMessage;
    }

    /** The order the error concerns (outcome_unknown, key_expired, ...); null when none. */
    public String orderId() {
        return orderId;
    }

    /** The idempotency key of that order; null when none. */
    public String idempotencyKey() {
        return idempotencyKey;
    }

    /** The verifier's clock (Unix seconds) for timestamp_out_of_window; null otherwise. */
    public Long serverTime() {
        return serverTime;
    }

    /** Verification failures: {@link #httpStatus()} is the status a platform answers with. */
    public static class Verification extends PayidemException {
        private static final long serialVersionUID = 1L;

        Verification(Details d) {
            super(d);
        }
    }

    /** An argument or option broke its rule; {@link #field()} names it. */
    public static final class InvalidArgument extends PayidemException {
        private static final long serialVersionUID = 1L;

        InvalidArgument(Details d) {
            super(d);
        }
    }

    /** The platform saw the idempotency key with another request: final. */
    public static final class IdempotencyConflict extends PayidemException {
        private static final long serialVersionUID = 1L;

        IdempotencyConflict(Details d) {
            super(d);
        }
    }

    /** The platform refused the operation for good: final; {@link #httpStatus()} and {@link #body()} hold its answer. */
    public static final class Rejected extends PayidemException {
        private static final long serialVersionUID = 1L;

        Rejected(Details d) {
            super(d);
        }
    }

    /** An attempt may have landed and nothing settled it: resume the order later ({@link #orderId()}). */
    public static final class OutcomeUnknown extends PayidemException {
        private static final long serialVersionUID = 1L;

        OutcomeUnknown(Details d) {
            super(d);
        }
    }

    /** The operation's key outlived the key retention and is never sent again: final. */
    public static final class KeyExpired extends PayidemException {
        private static final long serialVersionUID = 1L;

        KeyExpired(Details d) {
            super(d);
        }
    }

    /** Another call holds the operation's lease. */
    public static final class OperationBusy extends PayidemException {
        private static final long serialVersionUID = 1L;

        OperationBusy(Details d) {
            super(d);
        }
    }

    /** Nothing reached the platform; the operation keeps its key. */
    public static final class Transport extends PayidemException {
        private static final long serialVersionUID = 1L;

        Transport(Details d) {
            super(d);
        }
    }

    /** The journal could not be read or written. */
    public static final class Journal extends PayidemException {
        private static final long serialVersionUID = 1L;

        Journal(Details d) {
            super(d);
        }
    }

    /** No complete set of signature headers. */
    public static final class MissingSignature extends Verification {
        private static final long serialVersionUID = 1L;

        MissingSignature(Details d) {
            super(d);
        }
    }

    /** The verifier does not know the key id. */
    public static final class UnknownApiKey extends Verification {
        private static final long serialVersionUID = 1L;

        UnknownApiKey(Details d) {
            super(d);
        }
    }

    /** The timestamp is outside the window; {@link #serverTime()} is the verifier's clock. */
    public static final class TimestampOutOfWindow extends Verification {
        private static final long serialVersionUID = 1L;

        TimestampOutOfWindow(Details d) {
            super(d);
        }
    }

    /** The signature does not match. */
    public static final class InvalidSignature extends Verification {
        private static final long serialVersionUID = 1L;

        InvalidSignature(Details d) {
            super(d);
        }
    }

    /** The nonce was seen before: a replay. */
    public static final class NonceReused extends Verification {
        private static final long serialVersionUID = 1L;

        NonceReused(Details d) {
            super(d);
        }
    }

    /** The verifier's nonce memory is full (fails closed). */
    public static final class ReplayCacheFull extends Verification {
        private static final long serialVersionUID = 1L;

        ReplayCacheFull(Details d) {
            super(d);
        }
    }

    /** A POST without an idempotency key. */
    public static final class IdempotencyKeyRequired extends Verification {
        private static final long serialVersionUID = 1L;

        IdempotencyKeyRequired(Details d) {
            super(d);
        }
    }

    /** A bug of payidem or of this binding. */
    public static final class Internal extends PayidemException {
        private static final long serialVersionUID = 1L;

        Internal(Details d) {
            super(d);
        }
    }

    /** The call was cancelled or ran out of its deadline; the operation keeps its key. */
    public static final class Cancelled extends PayidemException {
        private static final long serialVersionUID = 1L;

        Cancelled(Details d) {
            super(d);
        }
    }

    /** The platform refused every attempt before its idempotency check: nothing happened, the key is kept. */
    public static final class Refused extends PayidemException {
        private static final long serialVersionUID = 1L;

        Refused(Details d) {
            super(d);
        }
    }

    /** The shared replay store could not claim the nonce (fails closed: 503). */
    public static final class ReplayStoreUnavailable extends Verification {
        private static final long serialVersionUID = 1L;

        ReplayStoreUnavailable(Details d) {
            super(d);
        }
    }

    /** The exception of class {@code d.code}. */
    static PayidemException of(Details d) {
        switch (d.code) {
            case INVALID_ARGUMENT:
                return new InvalidArgument(d);
            case IDEMPOTENCY_CONFLICT:
                return new IdempotencyConflict(d);
            case REJECTED:
                return new Rejected(d);
            case OUTCOME_UNKNOWN:
                return new OutcomeUnknown(d);
            case KEY_EXPIRED:
                return new KeyExpired(d);
            case OPERATION_BUSY:
                return new OperationBusy(d);
            case TRANSPORT_ERROR:
                return new Transport(d);
            case JOURNAL_ERROR:
                return new Journal(d);
            case MISSING_SIGNATURE:
                return new MissingSignature(d);
            case UNKNOWN_API_KEY:
                return new UnknownApiKey(d);
            case TIMESTAMP_OUT_OF_WINDOW:
                return new TimestampOutOfWindow(d);
            case INVALID_SIGNATURE:
                return new InvalidSignature(d);
            case NONCE_REUSED:
                return new NonceReused(d);
            case REPLAY_CACHE_FULL:
                return new ReplayCacheFull(d);
            case IDEMPOTENCY_KEY_REQUIRED:
                return new IdempotencyKeyRequired(d);
            case INTERNAL_ERROR:
                return new Internal(d);
            case CANCELLED:
                return new Cancelled(d);
            case REFUSED:
                return new Refused(d);
            case REPLAY_STORE_UNAVAILABLE:
                return new ReplayStoreUnavailable(d);
            default:
                throw new AssertionError(d.code);
        }
    }

    /** An invalid_argument raised by this binding itself (e.g. a NUL inside a string). */
    static PayidemException invalidArgument(String field, String message) {
        return of(new Details(ErrorCode.INVALID_ARGUMENT, message, field, 0, null, null, null, null, null, null));
    }

    /**
     * The exception of result {@code rc}, copying everything out of the
     * error handle in {@code err} (may hold NULL), which it frees.
     */
    static PayidemException of(int rc, PointerByReference err) {
        Pointer e = err == null ? null : err.getValue();
        try {
            return copy(rc, e);
        } finally {
            if (e != null) {
                Lib.payidem_error_free(e);
            }
        }
    }

    /** The exception of result {@code rc} and error handle {@code e} (may be null), left to its owner. */
    static PayidemException copy(int rc, Pointer e) {
        ErrorCode code = ErrorCode.ofNumber(rc);
        if (e == null) {
            String msg = code.number() == rc ? null : "result " + rc + " (" + Text.read(Lib.payidem_result_name(rc))
                    + ")";
            return of(new Details(code, msg, null, 0, null, null, null, null, null, null));
        }
        byte[] body = null;
        PointerByReference bodyPtr = new PointerByReference();
        LongByReference bodyLen = new LongByReference();
        if (Lib.payidem_error_body(e, bodyPtr, bodyLen) != 0) {
            body = bodyLen.getValue() == 0 ? new byte[0] : bodyPtr.getValue().getByteArray(0, (int) bodyLen.getValue());
        }
        LongByReference st = new LongByReference();
        Long serverTime = Lib.payidem_error_server_time(e, st) != 0 ? st.getValue() : null;
        String message = Text.read(Lib.payidem_error_message(e));
        if (code.number() != rc) {
            message = "result " + rc + " (" + Text.read(Lib.payidem_result_name(rc)) + "): " + message;
        }
        return of(new Details(code, message, nonEmpty(Lib.payidem_error_field(e)),
                Lib.payidem_error_http_status(e) & 0xffff, body, nonEmpty(Lib.payidem_error_platform_code(e)),
                nonEmpty(Lib.payidem_error_platform_message(e)), nonEmpty(Lib.payidem_error_order_id(e)),
                nonEmpty(Lib.payidem_error_idempotency_key(e)), serverTime));
    }

    /** A borrowed string, null for NULL or "" (the C ABI's "none"). */
    private static String nonEmpty(Pointer p) {
        String s = Text.read(p);
        return s == null || s.isEmpty() ? null : s;
    }

    /** Throws the exception of {@code rc} unless it is 0 (ok). */
    static void check(int rc, PointerByReference err) {
        if (rc != 0) {
            throw of(rc, err);
        }
    }
}
