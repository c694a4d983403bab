package io.payidem;

/** Where an order stands in the journal. */
public final class OperationStatus extends Value<OperationStatus> {
    private static final Fields<OperationStatus> FIELDS = Fields.<OperationStatus>of("OperationStatus", " ")
            .add("found", OperationStatus::found).add("state", OperationStatus::state)
            .add("attempts", OperationStatus::attempts);

    private final String state;
    private final int attempts;

    OperationStatus(String state, int attempts) {
        super(FIELDS);
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
}
