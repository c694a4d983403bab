package io.payidem.okhttp;

/**
 * The tag that makes an OkHttp request a payidem operation
 * ({@code new Request.Builder().tag(PayidemOrder.class, order)}): its order
 * id, its status path (null when none) and its idempotency key (null for
 * the default {@code create-<orderId>}).
 */
public final class PayidemOrder {
    private final String orderId;
    private final String statusPath;
    private final String idempotencyKey;

    /** An order with the default key. */
    public PayidemOrder(String orderId, String statusPath) {
        this(orderId, statusPath, null);
    }

    /** An order with an explicit key. */
    public PayidemOrder(String orderId, String statusPath, String idempotencyKey) {
        this.orderId = orderId;
        this.statusPath = statusPath;
        this.idempotencyKey = idempotencyKey;
    }

    /** The order id. */
    public String orderId() {
        return orderId;
    }

    /** The signed GET that tells whether the operation landed, or null. */
    public String statusPath() {
        return statusPath;
    }

    /** The idempotency key, or null for the default. */
    public String idempotencyKey() {
        return idempotencyKey;
    }

    @Override
    public String toString() {
        return "PayidemOrder(" + orderId + ")";
    }
}
