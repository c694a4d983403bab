package io.payidem;

import com.sun.jna.Memory;

/** One native buffer per thread for a call's arguments and answer (see {@link Signer#signAt}). */
final class Scratch {
    /** Bytes of each thread's buffer; a call needing more allocates its own. */
    static final long SIZE = 16 * 1024;

    private static final ThreadLocal<Memory> BUFFER = ThreadLocal.withInitial(() -> new Memory(SIZE));

    private Scratch() {}

    /** This thread's buffer; its contents are the last call's. */
    static Memory get() {
        return BUFFER.get();
    }
}
