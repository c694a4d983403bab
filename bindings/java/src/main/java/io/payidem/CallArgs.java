package io.payidem;

/** One operation's arguments as the C ABI takes them (NUL-terminated UTF-8; null stays NULL). */
final class CallArgs {
    final byte[] orderId;
    final byte[] method;
    final byte[] path;
    final byte[] body;
    final byte[] idempotencyKey;
    final byte[] statusPath;

    CallArgs(String orderId, String method, String path, byte[] body, String idempotencyKey, String statusPath) {
        this.orderId = Text.c(orderId, "order_id");
        this.method = Text.c(method, "method");
        this.path = Text.c(path, "path");
        this.body = Text.body(body);
        this.idempotencyKey = Text.c(idempotencyKey, "idempotency_key");
        this.statusPath = Text.c(statusPath, "status_path");
    }
}
