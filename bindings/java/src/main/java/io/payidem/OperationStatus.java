package io.payidem;

/** Where an order stands in the journal. */
public final class OperationStatus {
    private final String state;
    private final int attempts;

    OperationStatus(String state, int attempts) {
        this.state = state;
        this.attempts = attempts;
    }

    /** Whether the journal has the order. */
    public boolean found() {
        return state != null;
    }

    /**
     * The journal state, the core's name ({@code pending}, {@code in_flight},
     * {@code unknown}, {@code succeeded}, {@code rejected}, {@code conflict},
     * see {@link Names#operationStates()}); null when not found.
     */
    public String state() {
        return state;
    }

    /** Attempts made so far. */
    public int attempts() {
        return attempts;
    }

    @Override
    public String toString() {
        return found() ? state + " after " + attempts + " attempts" : "not found";
    }
}
