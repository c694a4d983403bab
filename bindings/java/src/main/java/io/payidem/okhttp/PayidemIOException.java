package io.payidem.okhttp;

import io.payidem.PayidemException;
import java.io.IOException;

/** How an OkHttp call of a payidem operation failed (OkHttp lets interceptors throw only IOException). */
public final class PayidemIOException extends IOException {
    private static final long serialVersionUID = 1L;

    private final PayidemException error;

    PayidemIOException(PayidemException error) {
        super(error.getMessage(), error);
        this.error = error;
    }

    /** The payidem error: its code, finality, order id and key. */
    public PayidemException error() {
        return error;
    }
}
