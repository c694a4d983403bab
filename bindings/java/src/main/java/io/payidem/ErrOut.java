package io.payidem;

import com.sun.jna.ptr.PointerByReference;

/**
 * The {@code payidem_error **err_out} of a call, one per thread and reused:
 * a new PointerByReference costs a native allocation and a cleaner, more
 * than a signature itself. Each use starts from NULL.
 */
final class ErrOut {
    private static final ThreadLocal<PointerByReference> SLOT = ThreadLocal.withInitial(PointerByReference::new);

    private ErrOut() {}

    /** This thread's err_out, set to NULL. Use it for one call, then read or free what it holds before the next. */
    static PointerByReference get() {
        PointerByReference err = SLOT.get();
        err.setValue(null);
        return err;
    }
}
