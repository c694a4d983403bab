package io.payidem;

import com.sun.jna.Pointer;
import java.util.function.Consumer;

/**
 * A native handle owned by one object whose methods hold its lock (a
 * {@link Call}, an {@link Operation}): freed once, and refused with
 * invalid_argument after that, never used freed.
 */
final class Owned {
    private final Consumer<Pointer> free;
    private final String field;
    private final String closedMessage;
    private Pointer pointer;

    Owned(Pointer pointer, Consumer<Pointer> free, String field, String closedMessage) {
        this.pointer = pointer;
        this.free = free;
        this.field = field;
        this.closedMessage = closedMessage;
    }

    /** The live pointer; throws invalid_argument naming {@code field} once freed. */
    Pointer live() {
        if (pointer == null) {
            throw PayidemException.invalidArgument(field, closedMessage);
        }
        return pointer;
    }

    /** Frees the handle; idempotent. */
    void free() {
        if (pointer != null) {
            free.accept(pointer);
            pointer = null;
        }
    }
}
