package io.payidem;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.nio.charset.StandardCharsets;

/** Strings across the C ABI: always UTF-8, whatever the JVM's default charset. */
final class Text {
    private Text() {}

    /**
     * {@code s} as NUL-terminated UTF-8 for a {@code const char *}; null
     * stays null. A NUL inside {@code s} cannot cross, so it is an
     * invalid_argument naming {@code field}.
     */
    static byte[] c(String s, String field) {
        if (s == null) {
            return null;
        }
        if (s.indexOf('\0') >= 0) {
            throw PayidemException.invalidArgument(field, field + " contains a NUL character");
        }
        byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
        byte[] out = new byte[utf8.length + 1];
        System.arraycopy(utf8, 0, out, 0, utf8.length);
        return out;
    }

    /** A borrowed {@code const char *} as a String; null for NULL. */
    static String read(Pointer p) {
        return p == null ? null : p.getString(0, "UTF-8");
    }

    /** The NUL-terminated text at the start of {@code buf[offset..offset+max]}. */
    static String field(byte[] buf, int offset, int max) {
        int end = offset;
        while (end < offset + max && buf[end] != 0) {
            end++;
        }
        return new String(buf, offset, end - offset, StandardCharsets.UTF_8);
    }

    /** A C call that writes text into a caller's buffer ({@code buf} null: asks only its length). */
    interface Fill {
        int run(byte[] buf, LongByReference len, PointerByReference err);
    }

    /** The text {@code fill} writes, asking for its size first (and again if it grew). */
    static String out(Fill fill) {
        LongByReference len = new LongByReference();
        byte[] buf = null;
        for (int tries = 0; ; tries++) {
            PointerByReference err = new PointerByReference();
            int rc = fill.run(buf, len, err);
            boolean tooSmall = rc != 0 && "buffer_too_small".equals(read(Lib.payidem_result_name(rc)));
            if (rc == 0 && buf != null) {
                return new String(buf, 0, (int) len.getValue(), StandardCharsets.UTF_8);
            }
            if (rc != 0 && !(tooSmall && tries < 3)) {
                throw PayidemException.of(rc, err);
            }
            if (err.getValue() != null) {
                Lib.payidem_error_free(err.getValue());
            }
            buf = new byte[(int) len.getValue() + 1 + 256];
        }
    }

    /**
     * {@code location} (a journal path or URL, a proxy, a base URL) as the
     * library prints it: secrets (user and password, query, fragment, a
     * password keyword's value) as {@code ***}; text the library cannot
     * take, all {@code ***}.
     */
    static String redacted(String location) {
        if (location == null) {
            return null;
        }
        try {
            byte[] c = c(location, "location");
            return out((buf, len, err) -> Lib.payidem_redact_url(c, buf, buf == null ? 0 : buf.length, len, err));
        } catch (PayidemException e) {
            return "***";
        }
    }

    /** An empty array for a null body, so its length is 0. */
    static byte[] body(byte[] body) {
        return body == null ? new byte[0] : body;
    }
}
