package io.payidem;

import com.sun.jna.Pointer;
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

    /** An empty array for a null body, so its length is 0. */
    static byte[] body(byte[] body) {
        return body == null ? new byte[0] : body;
    }
}
