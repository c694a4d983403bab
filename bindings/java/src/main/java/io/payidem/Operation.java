package io.payidem;

import com.google.gson.JsonObject;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Base64;

/**
 * The core's pure operation machine, for callers who keep their own
 * journal and send with their own HTTP stack: {@link #poll} says what to do
 * ({@link Step}), the caller does it and reports back ({@link #persisted()},
 * {@link #handle}). Every rule (keys, retries, backoff, status queries,
 * clock, when it ends) is the core's. One thread at a time; close it when
 * done.
 */
public final class Operation implements AutoCloseable {
    // struct payidem_reaction: uint32 next, (pad), uint64 wait_ms, uint16 status, (pad), uint32 landed.
    private static final int REACTION_SIZE = 24;

    private final Owned op;

    private Operation(Pointer op) {
        this.op = new Owned(op, Lib::payidem_operation_free, "op", "the operation is closed");
    }

    /** A start for order {@code orderId}: {@code method path}, the rest optional (the core's defaults). */
    public static Start start(String orderId, String method, String path) {
        return new Start(orderId, method, path);
    }

    /** The machine's reaction to one reported attempt. */
    public static final class Reaction extends Value<Reaction> {
        private static final Fields<Reaction> FIELDS = Fields.<Reaction>of("Reaction", " ").add("next", Reaction::next)
                .add("landed", Reaction::landed).add("wait_ms", Reaction::waitMs).add("status", Reaction::status);

        private final String next;
        private final long waitMs;
        private final int status;
        private final String landed;

        Reaction(byte[] c) {
            super(FIELDS);
            ByteBuffer b = ByteBuffer.wrap(c).order(ByteOrder.nativeOrder());
            next = Text.read(Lib.payidem_next_action_name(b.getInt(0)));
            waitMs = b.getLong(8);
            status = b.getShort(16) & 0xffff;
            landed = Text.read(Lib.payidem_landed_name(b.getInt(20)));
        }

        /** What comes next, the core's name ({@code settle}, {@code retry_now}, {@code query_status}, ...). */
        public String next() {
            return next;
        }

        /** The wait before the next attempt, ms; 0 when none. */
        public long waitMs() {
            return waitMs;
        }

        /** The reported response's status; 0 when none came. */
        public int status() {
            return status;
        }

        /** Whether the operation may have taken effect so far ({@code no}, {@code maybe}, {@code yes}). */
        public String landed() {
            return landed;
        }
    }

    /**
     * The next step at local wall time {@code nowUnix} (seconds) and
     * {@code elapsedMs} since the call started (monotonic); a {@code send}
     * is signed by {@code signer} with a fresh nonce.
     */
    public synchronized Step poll(Signer signer, long nowUnix, long elapsedMs) {
        Pointer o = live();
        PointerByReference step = new PointerByReference();
        PointerByReference err = new PointerByReference();
        int rc = signer.handle().with(s -> Lib.payidem_operation_poll(o, s, nowUnix, elapsedMs, step, err));
        PayidemException.check(rc, err);
        return new Step(step.getValue());
    }

    /** Confirms the record the last {@code persist} step asked for is in your journal; the next poll sends. */
    public synchronized void persisted() {
        PointerByReference err = new PointerByReference();
        PayidemException.check(Lib.payidem_operation_persisted(live(), err), err);
    }

    /** Reports what the last {@code send} produced, at {@code nowUnix}/{@code elapsedMs}. */
    public synchronized Reaction handle(Reply reply, long nowUnix, long elapsedMs) {
        Pointer o = live();
        NativeHeaders h = new NativeHeaders(reply.headers);
        byte[] out = new byte[REACTION_SIZE];
        PointerByReference err = new PointerByReference();
        PayidemException.check(Lib.payidem_operation_handle(o, reply.outcome, (short) reply.status, h.array, h.count,
                reply.body, reply.body.length, Text.c(reply.reason, "reason"), nowUnix, elapsedMs, out, err), err);
        return new Reaction(out);
    }

    /**
     * Ends the call now, as a caller's cancel does, with what is known (the
     * key is kept); the {@code end} step to record.
     */
    public synchronized Step abandon(String reason) {
        PointerByReference end = new PointerByReference();
        PointerByReference err = new PointerByReference();
        PayidemException.check(Lib.payidem_operation_abandon(live(), Text.c(reason, "reason"), end, err), err);
        return new Step(end.getValue());
    }

    /** Attempts over every call of the operation so far. */
    public synchronized int attempts() {
        return Lib.payidem_operation_attempts(live());
    }

    /** Whether an attempt may have taken effect so far ({@code no}, {@code maybe}, {@code yes}). */
    public synchronized String landed() {
        return Text.read(Lib.payidem_landed_name(Lib.payidem_operation_landed(live())));
    }

    /** Frees the machine; idempotent. */
    @Override
    public synchronized void close() {
        op.free();
    }

    private Pointer live() {
        return op.live();
    }

    /**
     * What a machine starts from: the operation, what your journal knows
     * ({@code progress}) and the settings ({@code setup}); an unset value
     * takes the core's default. The core checks everything
     * ({@link PayidemException.InvalidArgument} naming e.g.
     * {@code setup.max_attempts}).
     */
    public static final class Start {
        private final JsonObject operation = new JsonObject();
        private final JsonObject progress = new JsonObject();
        private final JsonObject setup = new JsonObject();
        private Long now;

        private Start(String orderId, String method, String path) {
            operation.addProperty("order_id", orderId);
            operation.addProperty("method", method);
            operation.addProperty("path", path);
        }

        /** The exact body (default empty). */
        public Start body(byte[] body) {
            operation.addProperty("body_base64", Base64.getEncoder().encodeToString(Text.body(body)));
            return this;
        }

        /** The idempotency key (default {@code create-<orderId>}). */
        public Start idempotencyKey(String key) {
            operation.addProperty("idempotency_key", key);
            return this;
        }

        /** The signed GET that tells whether the operation landed (default none). */
        public Start statusPath(String statusPath) {
            operation.addProperty("status_path", statusPath);
            return this;
        }

        /** The journal state it starts from, a core state name (default {@code pending}). */
        public Start state(String state) {
            progress.addProperty("state", state);
            return this;
        }

        /** Attempts already made (default 0). */
        public Start attempts(long attempts) {
            progress.addProperty("attempts", attempts);
            return this;
        }

        /** When the operation was first prepared, Unix seconds (default now): the key's age counts from it. */
        public Start createdAt(long unixSeconds) {
            progress.addProperty("created_at", unixSeconds);
            return this;
        }

        /** Your journal recorded the first attempt as it opened the operation (in flight, 1 attempt), unsent. */
        public Start firstRecorded(boolean firstRecorded) {
            progress.addProperty("first_recorded", firstRecorded);
            return this;
        }

        /** Attempts per call. */
        public Start maxAttempts(long n) {
            return setup("max_attempts", n);
        }

        /** The first backoff, ms. */
        public Start backoffBaseMs(long ms) {
            return setup("backoff_base_ms", ms);
        }

        /** The largest backoff, ms. */
        public Start backoffCapMs(long ms) {
            return setup("backoff_cap_ms", ms);
        }

        /** The call's retry deadline, ms. */
        public Start deadlineMs(long ms) {
            return setup("deadline_ms", ms);
        }

        /** The key retention, seconds. */
        public Start keyRetentionSecs(long s) {
            return setup("key_retention_secs", s);
        }

        /** The largest clock offset learnt, seconds. */
        public Start maxClockOffsetSecs(long s) {
            return setup("max_clock_offset_secs", s);
        }

        /** The platform's clock offset known so far (seconds, may be negative) and whether it is trusted. */
        public Start clockOffset(long seconds, boolean trusted) {
            setup.addProperty("clock_trusted", trusted);
            return setup("clock_offset", seconds);
        }

        /** A retry budget for this call (default none). */
        public Start retryBudget(long capacity, long retryCost, long timeoutCost, long successRefund) {
            setup.add("retry_budget", RetryBudget.json(capacity, retryCost, timeoutCost, successRefund));
            return this;
        }

        /** Sets {@code key} of the call's setup. */
        private Start setup(String key, long value) {
            setup.addProperty(key, value);
            return this;
        }

        /** Local wall time at the start, Unix seconds (required). */
        public Start now(long unixSeconds) {
            now = unixSeconds;
            return this;
        }

        /** The machine. */
        public Operation begin() {
            JsonObject start = new JsonObject();
            start.add("operation", operation);
            start.add("progress", progress);
            start.add("setup", setup);
            if (now != null) {
                start.addProperty("now", now);
            }
            PointerByReference out = new PointerByReference();
            PointerByReference err = new PointerByReference();
            PayidemException.check(Lib.payidem_operation_new(Text.c(start.toString(), "start_json"), out, err), err);
            return new Operation(out.getValue());
        }
    }
}
