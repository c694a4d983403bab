package io.payidem;

import java.util.Locale;

/**
 * payidem's stable error codes, in the core's number order. Each constant's
 * {@link #wireName()} is the snake_case name every binding and the
 * protocol's error bodies use ({@code OUTCOME_UNKNOWN} is
 * {@code "outcome_unknown"}); its {@link #number()} and {@link #isFinal()}
 * are read from the loaded library, never from a copy. The parity tests
 * fail when this list lacks, misspells or adds a code.
 */
public enum ErrorCode {
    /** An argument or option broke its rule ({@link PayidemException#field()} names it). */
    INVALID_ARGUMENT,
    /** The platform saw the same idempotency key with another request. */
    IDEMPOTENCY_CONFLICT,
    /** The platform refused the operation for good (status and body kept). */
    REJECTED,
    /** An attempt may have landed and nothing settled it yet: resume it later. */
    OUTCOME_UNKNOWN,
    /** The operation's key is older than the key retention: it is never sent again. */
    KEY_EXPIRED,
    /** Another call holds the operation's lease. */
    OPERATION_BUSY,
    /** Nothing reached the platform; the operation keeps its key. */
    TRANSPORT_ERROR,
    /** The journal could not be read or written. */
    JOURNAL_ERROR,
    /** A verifier found no complete set of signature headers. */
    MISSING_SIGNATURE,
    /** A verifier does not know the request's key id. */
    UNKNOWN_API_KEY,
    /** The request's timestamp is outside the verifier's window. */
    TIMESTAMP_OUT_OF_WINDOW,
    /** The signature does not match. */
    INVALID_SIGNATURE,
    /** The nonce was seen before: a replay. */
    NONCE_REUSED,
    /** The verifier's nonce memory is full (fails closed). */
    REPLAY_CACHE_FULL,
    /** A POST without an idempotency key. */
    IDEMPOTENCY_KEY_REQUIRED,
    /** A bug of payidem (or of this binding). */
    INTERNAL_ERROR,
    /** The call was cancelled or ran out of its deadline; the operation keeps its key. */
    CANCELLED,
    /** The platform refused every attempt before its idempotency check; nothing happened. */
    REFUSED,
    /** A shared replay store (Redis) could not claim the nonce (fails closed). */
    REPLAY_STORE_UNAVAILABLE;

    private static final ErrorCode[] BY_NUMBER = byNumber();

    private int number;

    /** The stable snake_case name, e.g. {@code "outcome_unknown"}. */
    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The code's stable number in the loaded library (the C ABI's result); 0 if the library lacks the code. */
    public int number() {
        return number;
    }

    /**
     * Whether an operation that ended with this code is settled for good
     * (never sent again; execute and resume answer the same error), from
     * the loaded library's table.
     */
    public boolean isFinal() {
        return number != 0 && Lib.payidem_result_is_final(number) != 0;
    }

    /** The code of a C result number; INTERNAL_ERROR for a number this binding does not know. */
    static ErrorCode ofNumber(int number) {
        return number > 0 && number < BY_NUMBER.length && BY_NUMBER[number] != null ? BY_NUMBER[number]
                : INTERNAL_ERROR;
    }

    /** The code named {@code wireName}, or null. */
    public static ErrorCode ofWireName(String wireName) {
        for (ErrorCode c : values()) {
            if (c.wireName().equals(wireName)) {
                return c;
            }
        }
        return null;
    }

    private static ErrorCode[] byNumber() {
        int max = Lib.payidem_result_max_error_code();
        ErrorCode[] table = new ErrorCode[max + 1];
        for (int n = 1; n <= max; n++) {
            ErrorCode c = ofWireName(Text.read(Lib.payidem_result_name(n)));
            if (c != null) {
                c.number = n;
                table[n] = c;
            }
        }
        return table;
    }
}
