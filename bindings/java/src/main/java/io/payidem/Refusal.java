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
 * The whole HTTP answer to a request that failed verification, as the core
 * builds it (status, headers such as {@code X-Server-Time} or
 * {@code Retry-After}, and the JSON error body), the same in every
 * language. An error that verification never gives is answered 500
 * {@code internal_error}, showing nothing of it.
 */
public final class Refusal {
    private final int status;
    private final List<Map.Entry<String, String>> headers;
    private final byte[] body;

    private Refusal(Pointer r) {
        try {
            status = Lib.payidem_refusal_status(r) & 0xffff;
            List<Map.Entry<String, String>> h = new ArrayList<>();
            long n = Lib.payidem_refusal_header_count(r);
            for (long i = 0; i < n; i++) {
                PointerByReference name = new PointerByReference();
                PointerByReference value = new PointerByReference();
                PointerByReference err = new PointerByReference();
                PayidemException.check(Lib.payidem_refusal_header_at(r, i, name, value, err), err);
                h.add(new AbstractMap.SimpleImmutableEntry<>(Text.read(name.getValue()), Text.read(value.getValue())));
            }
            headers = Collections.unmodifiableList(h);
            PointerByReference b = new PointerByReference();
            LongByReference len = new LongByReference();
            body = Lib.payidem_refusal_body(r, b, len) != 0 && len.getValue() > 0
                    ? b.getValue().getByteArray(0, (int) len.getValue()) : new byte[0];
        } finally {
            Lib.payidem_refusal_free(r);
        }
    }

    /** The answer to a verification failure. */
    public static Refusal of(PayidemException e) {
        int number = e.code().number();
        Long serverTime = e.serverTime();
        PointerByReference out = new PointerByReference();
        PointerByReference err = new PointerByReference();
        int rc = Lib.payidem_refusal_new(number, Text.c(e.coreMessage().replace('\0', ' '), "message"),
                serverTime == null ? 0 : serverTime, out, err);
        PayidemException.check(rc, err);
        return new Refusal(out.getValue());
    }

    /** The 413 answer to a body over {@code limitBytes}, which was neither read nor verified. */
    public static Refusal bodyTooLarge(long limitBytes) {
        PointerByReference out = new PointerByReference();
        PointerByReference err = new PointerByReference();
        PayidemException.check(Lib.payidem_refusal_body_too_large(limitBytes, out, err), err);
        return new Refusal(out.getValue());
    }

    /** The status to answer with (401, 409, 503, 400, 413 or 500). */
    public int status() {
        return status;
    }

    /** The headers to answer with, in order. */
    public List<Map.Entry<String, String>> headers() {
        return headers;
    }

    /** A copy of the body to answer with. */
    public byte[] body() {
        return body.clone();
    }

    @Override
    public String toString() {
        return "Refusal(" + status + ")";
    }
}
