package io.payidem;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** An array of {@code struct payidem_header} (name and value pointers) in native memory, for one call. */
final class NativeHeaders {
    /** The array, or null for no header. */
    final Memory array;
    /** How many headers. */
    final int count;
    // Holds the strings the array points to for as long as the array lives.
    private final Memory strings;

    NativeHeaders(List<Map.Entry<String, String>> headers) {
        int n = headers == null ? 0 : headers.size();
        List<byte[]> texts = new ArrayList<>(2 * n);
        long size = 0;
        for (int i = 0; i < n; i++) {
            byte[] name = Text.c(headers.get(i).getKey(), "headers[" + i + "].name");
            byte[] value = Text.c(headers.get(i).getValue(), "headers[" + i + "].value");
            if (name == null || value == null) {
                throw PayidemException.invalidArgument("headers[" + i + "]", "a header name or value is null");
            }
            texts.add(name);
            texts.add(value);
            size += name.length + value.length;
        }
        count = n;
        if (n == 0) {
            array = null;
            strings = null;
            return;
        }
        strings = new Memory(size);
        array = new Memory((long) 2 * n * Native.POINTER_SIZE);
        long offset = 0;
        for (int i = 0; i < texts.size(); i++) {
            byte[] t = texts.get(i);
            strings.write(offset, t, 0, t.length);
            array.setPointer((long) i * Native.POINTER_SIZE, strings.share(offset));
            offset += t.length;
        }
    }
}
