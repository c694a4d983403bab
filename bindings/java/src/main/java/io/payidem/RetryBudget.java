package io.payidem;

import com.google.gson.JsonObject;

/** The core's {@code retry_budget} object, for a client's options and a machine's setup alike. */
final class RetryBudget {
    private RetryBudget() {}

    /** Tokens, costs and refund (each 0..=4294967295, checked by the core). */
    static JsonObject json(long capacity, long retryCost, long timeoutCost, long successRefund) {
        JsonObject b = new JsonObject();
        b.addProperty("capacity", capacity);
        b.addProperty("retry_cost", retryCost);
        b.addProperty("timeout_cost", timeoutCost);
        b.addProperty("success_refund", successRefund);
        return b;
    }
}
