package io.payidem;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * What an {@link Operation} asks for next, copied out of the core's step:
 * {@code persist} (record it in your journal, then
 * {@link Operation#persisted()}), {@code send} (send exactly this request,
 * then {@link Operation#handle}), {@code wait} (sleep {@link #waitMs()},
 * then poll again) or {@code end} (the call ended: record
 * {@link #state()}; {@link #outcome()} or {@link #error()}). The kind and
 * every name are the core's.
 */
public final class Step {
    private final String kind;
    private final int persistAttempt;
    private final boolean persistFirst;
    private final String attemptKind;
    private final int attemptNumber;
    private final String method;
    private final String path;
    private final List<Map.Entry<String, String>> headers;
    private final byte[] body;
    private final long timeoutMs;
    private final long waitMs;
    private final String endName;
    private final boolean endFinal;
    private final String landed;
    private final String state;
    private final Outcome outcome;
    private final PayidemException error;

    /** Copies everything out of a step handle, which it frees. */
    Step(Pointer s) {
        try {
            kind = Text.read(Lib.payidem_step_type_name(Lib.payidem_step_kind(s)));
            persistAttempt = Lib.payidem_step_persist_attempt(s);
            persistFirst = Lib.payidem_step_persist_first(s) != 0;
            attemptKind = Text.read(Lib.payidem_attempt_kind_name(Lib.payidem_step_attempt_kind(s)));
            attemptNumber = Lib.payidem_step_attempt_number(s);
            method = Text.read(Lib.payidem_step_method(s));
            path = Text.read(Lib.payidem_step_path(s));
            List<Map.Entry<String, String>> h = new ArrayList<>();
            long n = Lib.payidem_step_header_count(s);
            PointerByReference name = new PointerByReference();
            PointerByReference value = new PointerByReference();
            for (long i = 0; i < n; i++) {
                if (Lib.payidem_step_header_at(s, i, name, value) != 0) {
                    h.add(new AbstractMap.SimpleImmutableEntry<>(Text.read(name.getValue()),
                            Text.read(value.getValue())));
                }
            }
            headers = Collections.unmodifiableList(h);
            LongByReference len = new LongByReference();
            Pointer b = Lib.payidem_step_body(s, len);
            body = b == null ? null : len.getValue() == 0 ? new byte[0] : b.getByteArray(0, (int) len.getValue());
            timeoutMs = Lib.payidem_step_timeout_ms(s);
            waitMs = Lib.payidem_step_wait_ms(s);
            endName = Text.read(Lib.payidem_step_end_name(s));
            endFinal = Lib.payidem_step_end_final(s) != 0;
            landed = endName == null ? null : Text.read(Lib.payidem_landed_name(Lib.payidem_step_end_landed(s)));
            state = Text.read(Lib.payidem_step_end_state(s));
            Outcome o = null;
            PayidemException e = null;
            if (endName != null) {
                PointerByReference out = new PointerByReference();
                PointerByReference err = new PointerByReference();
                int rc = Lib.payidem_step_end_result(s, out, err);
                if (rc == 0) {
                    o = new Outcome(out.getValue());
                } else {
                    e = PayidemException.of(rc, err).endedWithLanded(landed);
                }
            }
            outcome = o;
            error = e;
        } finally {
            Lib.payidem_step_free(s);
        }
    }

    /** {@code persist}, {@code send}, {@code wait} or {@code end} (the core's step type names). */
    public String kind() {
        return kind;
    }

    /** For {@code persist}: the attempt count to record (the one about to be sent, or fewer to take one back). */
    public int persistAttempt() {
        return persistAttempt;
    }

    /** For {@code persist}: whether this is the operation's first record, which must be durable before sending. */
    public boolean persistFirst() {
        return persistFirst;
    }

    /** For {@code send}: {@code operation} or {@code status_query}; else null. */
    public String attemptKind() {
        return attemptKind;
    }

    /** For {@code send}: the attempt's number over the operation's life. */
    public int attemptNumber() {
        return attemptNumber;
    }

    /** For {@code send}: the method. */
    public String method() {
        return method;
    }

    /** For {@code send}: the request target (path and query). */
    public String path() {
        return path;
    }

    /** For {@code send}: every header to send, signed ones included, in order. */
    public List<Map.Entry<String, String>> headers() {
        return headers;
    }

    /** For {@code send}: the value of header {@code name} (case-insensitive), or null. */
    public String header(String name) {
        for (Map.Entry<String, String> h : headers) {
            if (h.getKey().equalsIgnoreCase(name)) {
                return h.getValue();
            }
        }
        return null;
    }

    /** For {@code send}: a copy of the exact bytes to send; null for other steps. */
    public byte[] body() {
        return body == null ? null : body.clone();
    }

    /** For {@code send} of a client's call: the most the exchange may take, in ms; 0 for the pure machine. */
    public long timeoutMs() {
        return timeoutMs;
    }

    /** For {@code wait}: how long to wait, in ms. */
    public long waitMs() {
        return waitMs;
    }

    /** For {@code end}: the end's name ({@code succeeded}, {@code unknown}, ...); else null. */
    public String endName() {
        return endName;
    }

    /** For {@code end}: whether the operation is settled for good. */
    public boolean isFinal() {
        return endFinal;
    }

    /** For {@code end}: whether it may have taken effect ({@code no}, {@code maybe}, {@code yes}). */
    public String landed() {
        return landed;
    }

    /** For {@code end}: the journal state it leaves. */
    public String state() {
        return state;
    }

    /** For an {@code end} in success: the outcome; else null. */
    public Outcome outcome() {
        return outcome;
    }

    /** For an {@code end} in failure: what the caller gets (the same as the client would throw); else null. */
    public PayidemException error() {
        return error;
    }

    @Override
    public String toString() {
        switch (String.valueOf(kind)) {
            case "send":
                return "send " + attemptKind + " #" + attemptNumber + " " + method + " " + path;
            case "wait":
                return "wait " + waitMs + " ms";
            case "persist":
                return "persist attempt " + persistAttempt + (persistFirst ? " (first)" : "");
            default:
                return kind + " " + endName + " (state " + state + ", landed " + landed + ")";
        }
    }
}
