package io.payidem;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.ByteByReference;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * Runs payment operations to a settled outcome through the core's journaled
 * client: each operation is journaled before anything is sent, retried by
 * the protocol's rules with one idempotency key, and answered from the
 * journal once settled. Thread-safe: share one client between every thread.
 * {@link #close()} waits for running calls.
 *
 * <p>Every setting left unset takes the core's default (the same in every
 * language: {@link #defaults()}); the journal is the durable
 * {@code $XDG_STATE_HOME/payidem/journal.sqlite3} unless
 * {@link Builder#journalPath(String)} names another SQLite file,
 * {@code ":memory:"} (tests only) or a PostgreSQL URL.
 */
public final class PayidemClient implements AutoCloseable {
    /** The journal path of a memory journal: operations die with the process (tests only). */
    public static final String JOURNAL_MEMORY = ":memory:";

    private final Handle handle;
    // Held while registered: the library calls it until the client is freed.
    private final Lib.EventJsonCallback callback;

    private PayidemClient(Builder b) {
        PointerByReference out = new PointerByReference();
        PointerByReference err = new PointerByReference();
        try (Secret s = new Secret(b.secret, "secret")) {
            PayidemException.check(Lib.payidem_client_new(Text.c(b.optionsJson(), "options_json"), s.memory, s.length,
                    out, err), err);
        }
        handle = new Handle(out.getValue(), Lib::payidem_client_free, "client");
        Consumer<ClientEvent> listener = b.onEvent;
        if (listener == null) {
            callback = null;
        } else {
            callback = (userdata, json) -> {
                try {
                    listener.accept(new ClientEvent(Text.read(json)));
                } catch (Throwable t) {
                    // Nothing may be thrown through the library's frames; a failing listener loses its event.
                    Thread.currentThread().getUncaughtExceptionHandler().uncaughtException(Thread.currentThread(), t);
                }
            };
            Lib.payidem_client_set_event_json_callback(out.getValue(), callback, null);
        }
    }

    /** A builder: {@code baseUrl}, {@code keyId} and {@code secret} are required. */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * The core's defaults, the same in every language, as its JSON document:
     * {@code options} (every setting's default, the options' shape) and
     * {@code memory_journal} (the journal path of a memory journal).
     */
    public static String defaults() {
        return Text.read(Lib.payidem_client_defaults_json());
    }

    /**
     * Runs {@code method path} with exactly {@code body} for {@code orderId}
     * under the default key {@code create-<orderId>} to a settled outcome;
     * {@code statusPath} (null when none) is the signed GET that tells
     * whether it landed. An order already journaled continues (a settled
     * one answers from the journal, sending nothing).
     *
     * @throws PayidemException.Rejected final, with the platform's status and body
     * @throws PayidemException.OutcomeUnknown may have landed: {@link #resume(String)} it later
     * @throws PayidemException any other code; {@link PayidemException#isFinal()} says whether it is settled
     */
    public Outcome execute(String orderId, String method, String path, byte[] body, String statusPath) {
        return execute(orderId, method, path, body, null, statusPath);
    }

    /** {@link #execute(String, String, String, byte[], String)} with an explicit idempotency key. */
    public Outcome execute(String orderId, String method, String path, byte[] body, String idempotencyKey,
            String statusPath) {
        CallArgs a = new CallArgs(orderId, method, path, body, idempotencyKey, statusPath);
        return outcome((h, out, err) -> Lib.payidem_client_execute(h, a.orderId, a.method, a.path, a.body,
                a.body.length, a.idempotencyKey, a.statusPath, out, err));
    }

    /**
     * {@link #execute(String, String, String, byte[], String, String)} with a
     * per-call {@code deadline} (null for the client's) and cancellation:
     * the call ends with {@link PayidemException.Cancelled} (the operation
     * keeps its key) once {@code cancelled} answers true or the calling
     * thread is interrupted (its interrupt status stays set); both are
     * asked before every attempt and about every 20 ms of a wait.
     */
    public Outcome execute(String orderId, String method, String path, byte[] body, String idempotencyKey,
            String statusPath, Duration deadline, BooleanSupplier cancelled) {
        CallArgs a = new CallArgs(orderId, method, path, body, idempotencyKey, statusPath);
        long ms = deadline == null ? 0 : Builder.millis(deadline, "deadline_ms");
        Lib.CancelCallback hook = hook(cancelled);
        return outcome((h, out, err) -> Lib.payidem_client_execute_with_deadline(h, a.orderId, a.method, a.path,
                a.body, a.body.length, a.idempotencyKey, a.statusPath, ms, hook, null, out, err));
    }

    /** {@link #resume(String)} with a per-call deadline and cancellation, as {@link #execute(String, String, String, byte[], String, String, Duration, BooleanSupplier)}. */
    public Outcome resume(String orderId, Duration deadline, BooleanSupplier cancelled) {
        byte[] o = Text.c(orderId, "order_id");
        long ms = deadline == null ? 0 : Builder.millis(deadline, "deadline_ms");
        Lib.CancelCallback hook = hook(cancelled);
        return outcome((h, out, err) -> Lib.payidem_client_resume_with_deadline(h, o, ms, hook, null, out, err));
    }

    /** The cancel hook of one call: the caller's answer, or the calling thread's interrupt. */
    private static Lib.CancelCallback hook(BooleanSupplier cancelled) {
        return userdata -> {
            try {
                return Thread.currentThread().isInterrupted() || (cancelled != null && cancelled.getAsBoolean())
                        ? 1 : 0;
            } catch (Throwable t) {
                // Nothing may be thrown through the library's frames: a failing hook cancels.
                return 1;
            }
        };
    }

    /**
     * Continues a journaled operation by its order id with its own key and
     * body, to a settled outcome (a settled one answers from the journal).
     */
    public Outcome resume(String orderId) {
        byte[] o = Text.c(orderId, "order_id");
        return outcome((h, out, err) -> Lib.payidem_client_resume(h, o, out, err));
    }

    /**
     * Starts the same operation as {@link #execute} for the caller's own
     * HTTP stack, sending nothing: drive it with {@link Call#step()} and
     * {@link Call#report}. {@code deadline} (null for none) shortens the
     * client's retry deadline for this call.
     */
    public Call begin(String orderId, String method, String path, byte[] body, String idempotencyKey,
            String statusPath, Duration deadline) {
        CallArgs a = new CallArgs(orderId, method, path, body, idempotencyKey, statusPath);
        long ms = deadline == null ? 0 : Builder.millis(deadline, "deadline_ms");
        PointerByReference out = new PointerByReference();
        call((h, err) -> Lib.payidem_client_begin(h, a.orderId, a.method, a.path, a.body, a.body.length,
                a.idempotencyKey, a.statusPath, ms, out, err));
        return new Call(out.getValue());
    }

    /** Starts a call resuming a journaled operation (as {@link #resume}) for the caller's own HTTP stack. */
    public Call beginResume(String orderId, Duration deadline) {
        byte[] o = Text.c(orderId, "order_id");
        long ms = deadline == null ? 0 : Builder.millis(deadline, "deadline_ms");
        PointerByReference out = new PointerByReference();
        call((h, err) -> Lib.payidem_client_begin_resume(h, o, ms, out, err));
        return new Call(out.getValue());
    }

    /** The full URL a {@code send} step's path goes to (the base URL's origin and the step's path). */
    public String url(String stepPath) {
        byte[] p = Text.c(stepPath, "path");
        return readText((h, buf, len, err) -> Lib.payidem_client_url(h, p, buf, buf == null ? 0 : buf.length, len,
                err));
    }

    /**
     * The request target of the absolute {@code url} relative to the base
     * URL (the path to {@link #begin} with); invalid_argument naming
     * {@code url} when it is not under the base URL: a signed request is
     * never sent elsewhere.
     */
    public String targetOf(String url) {
        byte[] u = Text.c(url, "url");
        return readText((h, buf, len, err) -> Lib.payidem_client_target_of(h, u, buf, buf == null ? 0 : buf.length,
                len, err));
    }

    /** Where {@code orderId} stands in the journal. */
    public OperationStatus status(String orderId) {
        byte[] o = Text.c(orderId, "order_id");
        ByteByReference found = new ByteByReference();
        IntByReference state = new IntByReference();
        IntByReference attempts = new IntByReference();
        call((h, err) -> Lib.payidem_client_status(h, o, found, state, attempts, err));
        return new OperationStatus(found.getValue() != 0 ? Text.read(Lib.payidem_operation_state_name(
                state.getValue())) : null, attempts.getValue());
    }

    /** The order ids whose outcome is unknown, oldest first. */
    public List<String> listUnknown() {
        PointerByReference list = new PointerByReference();
        call((h, err) -> Lib.payidem_client_list_unknown(h, list, err));
        return orders(list.getValue());
    }

    /** What {@link #resumeUnknown()} did for one order: its outcome, or the failure that left it unsettled or ended it. */
    public static final class ResumeResult extends Value<ResumeResult> {
        private static final Fields<ResumeResult> FIELDS = Fields.<ResumeResult>of("ResumeResult", " ")
                .add("order", ResumeResult::orderId).add("outcome", ResumeResult::outcome)
                .add("error", r -> r.error == null ? null : r.error.getMessage());

        private final String orderId;
        private final Outcome outcome;
        private final PayidemException error;

        ResumeResult(String orderId, Outcome outcome, PayidemException error) {
            super(FIELDS);
            this.orderId = orderId;
            this.outcome = outcome;
            this.error = error;
        }

        /** The order id. */
        public String orderId() {
            return orderId;
        }

        /** Its outcome when it settled with success, else null. */
        public Outcome outcome() {
            return outcome;
        }

        /** Its failure (rejected, still unknown, ...), else null. */
        public PayidemException error() {
            return error;
        }
    }

    /**
     * Resumes every operation whose outcome is unknown, oldest first; one
     * order's failure is in its result and does not stop the others.
     */
    public List<ResumeResult> resumeUnknown() {
        List<ResumeResult> results = new ArrayList<>();
        for (String id : listUnknown()) {
            try {
                results.add(new ResumeResult(id, resume(id), null));
            } catch (PayidemException e) {
                results.add(new ResumeResult(id, null, e));
            }
        }
        return results;
    }

    /**
     * Drives up to {@code limit} operations recorded by another process
     * (an outbox row, a call whose lease lapsed) to their ends, oldest first,
     * and returns the order ids driven. Read how each ended with
     * {@link #status(String)} or {@link #resume(String)}.
     */
    public List<String> takeOver(int limit) {
        if (limit < 0) {
            throw PayidemException.invalidArgument("limit", "limit is negative");
        }
        PointerByReference list = new PointerByReference();
        call((h, err) -> Lib.payidem_client_take_over(h, limit, list, err));
        return orders(list.getValue());
    }

    /**
     * Runs {@link #takeOver(int)} in a loop, for a sidecar or a worker
     * thread, until {@code stop} answers true or the calling thread is
     * interrupted (its interrupt status stays set): batches of up to
     * {@code batch} operations (0 counts as 1), sleeping {@code idle} when
     * there was nothing to take, but never longer than the lease heartbeat
     * ({@link Builder#leaseHeartbeat(Duration)}), so that an operation whose
     * holder died is picked up within one heartbeat of its lease lapsing;
     * an {@code idle} of zero sleeps a whole heartbeat, so the loop never
     * spins on the journal. The core's loop ({@code payidem_client_take_over_loop}): a journal
     * that cannot be asked is retried after the same sleep, not thrown;
     * {@code stop} and the interrupt are looked at between operations and
     * about every 20 ms of the sleep, not during an operation's call, which
     * ends as it would without them. A {@code stop} that throws stops the
     * loop. Returns how many operations it drove (each one's end is in the
     * journal: {@link #status(String)}). Throws invalid_argument naming
     * {@code batch} (negative), {@code idle} (null, negative or not whole
     * milliseconds) or {@code stop} (null).
     */
    public long takeOverLoop(int batch, Duration idle, BooleanSupplier stop) {
        if (batch < 0) {
            throw PayidemException.invalidArgument("batch", "batch is negative");
        }
        if (idle != null && idle.isNegative()) {
            throw PayidemException.invalidArgument("idle", "idle is negative");
        }
        long ms = Builder.millis(idle, "idle");
        if (stop == null) {
            throw PayidemException.invalidArgument("stop", "stop is null: the loop could never end");
        }
        Lib.CancelCallback hook = hook(stop);
        LongByReference driven = new LongByReference();
        call((h, err) -> Lib.payidem_client_take_over_loop(h, batch, ms, hook, null, driven, err));
        return driven.getValue();
    }

    /**
     * The statement that records one operation as pending in this client's
     * PostgreSQL journal, to run in the application's own transaction
     * together with its business rows (see {@link Outbox}).
     */
    public Outbox outboxInsert(String orderId, String method, String path, byte[] body, String idempotencyKey,
            String statusPath) {
        CallArgs a = new CallArgs(orderId, method, path, body, idempotencyKey, statusPath);
        String json = readText((h, buf, len, err) -> Lib.payidem_client_outbox_insert(h, a.orderId, a.method, a.path,
                a.body, a.body.length, a.idempotencyKey, a.statusPath, Outbox.PARAMS_DOLLAR, buf,
                buf == null ? 0 : buf.length, len, err));
        return new Outbox(json);
    }

    /** The client's metrics in Prometheus' text format (docs/metrics.md). */
    public String metricsPrometheus() {
        return readText((h, buf, len, err) -> Lib.payidem_client_metrics(h, 1, buf, buf == null ? 0 : buf.length, len,
                err));
    }

    /** The client's metrics as the core's JSON document (docs/metrics.md). */
    public String metricsJson() {
        return readText((h, buf, len, err) -> Lib.payidem_client_metrics(h, 2, buf, buf == null ? 0 : buf.length, len,
                err));
    }

    /** Frees the client once running calls are done; later calls fail with invalid_argument. */
    @Override
    public void close() {
        handle.close();
    }

    @Override
    public String toString() {
        return "PayidemClient(secret redacted)";
    }

    private interface OutcomeCall {
        int run(Pointer client, PointerByReference out, PointerByReference err);
    }

    private interface NativeCall {
        int run(Pointer client, PointerByReference err);
    }

    private interface TextCall {
        int run(Pointer client, byte[] buf, LongByReference len, PointerByReference err);
    }

    private Outcome outcome(OutcomeCall f) {
        PointerByReference out = new PointerByReference();
        call((h, err) -> f.run(h, out, err));
        return new Outcome(out.getValue());
    }

    private void call(NativeCall f) {
        PointerByReference err = new PointerByReference();
        int rc = handle.with(h -> f.run(h, err));
        PayidemException.check(rc, err);
    }

    /** A text the library writes into a buffer about this client ({@link Text#out}). */
    private String readText(TextCall f) {
        return Text.out((buf, len, err) -> handle.with(h -> f.run(h, buf, len, err)));
    }

    private static List<String> orders(Pointer list) {
        try {
            long n = Lib.payidem_order_list_len(list);
            List<String> ids = new ArrayList<>();
            for (long i = 0; i < n; i++) {
                ids.add(Text.read(Lib.payidem_order_list_get(list, i)));
            }
            return Collections.unmodifiableList(ids);
        } finally {
            Lib.payidem_order_list_free(list);
        }
    }

    /**
     * The settings of a client. Each unset setting is absent from the
     * options the core reads, so it takes the core's default; every value is
     * checked by the core's rules (an invalid one is
     * {@link PayidemException.InvalidArgument} naming the option, e.g.
     * {@code retry.max_attempts}).
     */
    public static final class Builder {
        private final JsonObject options = new JsonObject();
        private byte[] secret;
        private Consumer<ClientEvent> onEvent;

        private Builder() {}

        /** The platform's base URL, e.g. {@code https://api.example.com} (http only for loopback). */
        public Builder baseUrl(String url) {
            options.addProperty("base_url", url);
            return this;
        }

        /** The key id sent in {@code X-Api-Key}. */
        public Builder keyId(String keyId) {
            options.addProperty("key_id", keyId);
            return this;
        }

        /**
         * The key's secret (16..=1024 bytes), copied now: the caller may wipe
         * its array at once. {@link #build()} wipes this copy, so set it again
         * to build another client from this builder.
         */
        public Builder secret(byte[] secret) {
            this.secret = secret == null ? null : secret.clone();
            return this;
        }

        /**
         * The journal: an SQLite file (created 0600), {@code ":memory:"}
         * (tests only) or a {@code postgres://} URL; unset: the durable default.
         */
        public Builder journalPath(String path) {
            options.addProperty("journal_path", path);
            return this;
        }

        /** The key of the journal rows' integrity MACs (16..=1024 bytes); unset: derived from the secret. */
        public Builder journalKey(byte[] key) {
            options.addProperty("journal_key_hex", key == null || key.length == 0 ? ""
                    : String.format("%0" + (2 * key.length) + "x", new java.math.BigInteger(1, key)));
            return this;
        }

        /** Time to connect (default from the core). */
        public Builder connectTimeout(Duration d) {
            return millisOption("connect_timeout_ms", d);
        }

        /** One attempt's whole response. */
        public Builder requestTimeout(Duration d) {
            return millisOption("request_timeout_ms", d);
        }

        /** Attempts per call, at least 1. */
        public Builder maxAttempts(long n) {
            retry().addProperty("max_attempts", n);
            return this;
        }

        /** The first backoff (0: retry without waiting). */
        public Builder backoffBase(Duration d) {
            return retryMillisOption("base_ms", d);
        }

        /** The largest backoff. */
        public Builder backoffCap(Duration d) {
            return retryMillisOption("cap_ms", d);
        }

        /** One call's retry deadline. */
        public Builder deadline(Duration d) {
            return retryMillisOption("deadline_ms", d);
        }

        /** The retry budget shared by every call: tokens, costs and refund (each 0..=4294967295). */
        public Builder retryBudget(long capacity, long retryCost, long timeoutCost, long successRefund) {
            options.add("retry_budget", RetryBudget.json(capacity, retryCost, timeoutCost, successRefund));
            return this;
        }

        /** An unknown operation whose key is older is never sent again (key_expired). */
        public Builder keyRetention(Duration d) {
            return secondsOption("key_retention_s", d);
        }

        /** Settled operations older than this are purged from the journal. */
        public Builder settledRetention(Duration d) {
            return secondsOption("settled_retention_s", d);
        }

        /**
         * How long a call's lease holds past its last renewal, beyond the request timeout (unset: the
         * deadline plus 30 s); after it, another instance may take a dead caller's operation over.
         */
        public Builder leaseTtl(Duration d) {
            return secondsOption("lease_ttl_s", d);
        }

        /**
         * How often a call renews its lease while it waits (at least 100 ms, shorter than the lease ttl;
         * unset: a third of it). A call that finds its lease lost never sends again (operation_busy).
         */
        public Builder leaseHeartbeat(Duration d) {
            return millisOption("lease_heartbeat_ms", d);
        }

        /** The largest clock offset learnt from the platform (0: never adjust). */
        public Builder maxClockOffset(Duration d) {
            return secondsOption("max_clock_offset_s", d);
        }

        /** Accept {@code http://} for any host (signed requests then travel in clear). */
        public Builder allowInsecureHttp(boolean allow) {
            options.addProperty("allow_insecure_http", allow);
            return this;
        }

        /** An {@code http://} or {@code https://} proxy. */
        public Builder proxy(String url) {
            options.addProperty("proxy", url);
            return this;
        }

        /** Use HTTPS_PROXY / HTTP_PROXY / ALL_PROXY and NO_PROXY when no proxy is set. */
        public Builder proxyFromEnv(boolean fromEnv) {
            options.addProperty("proxy_from_env", fromEnv);
            return this;
        }

        /** A PEM file of CA certificates trusted instead of the system's. */
        public Builder caBundle(String pemFile) {
            options.addProperty("ca_bundle", pemFile);
            return this;
        }

        /** PEM files of a client certificate (chain) and its key, for mutual TLS. */
        public Builder clientCertificate(String certPemFile, String keyPemFile) {
            options.addProperty("client_cert", certPemFile);
            options.addProperty("client_key", keyPemFile);
            return this;
        }

        /** Receives every event (attempts, call ends, failed journal writes) on the thread that caused it. */
        public Builder onEvent(Consumer<ClientEvent> listener) {
            this.onEvent = listener;
            return this;
        }

        /**
         * The settings a client built now would run with, as the core's JSON
         * document (every setting, unset ones at their defaults; no secret).
         */
        public String resolve() {
            PointerByReference out = new PointerByReference();
            PointerByReference err = new PointerByReference();
            PayidemException.check(Lib.payidem_client_options_resolve(Text.c(optionsJson(), "options_json"), out,
                    err), err);
            try {
                return Text.read(out.getValue());
            } finally {
                Lib.payidem_string_free(out.getValue());
            }
        }

        /** The client; opens (or creates) its journal. */
        public PayidemClient build() {
            try {
                return new PayidemClient(this);
            } finally {
                if (secret != null) {
                    java.util.Arrays.fill(secret, (byte) 0);
                    secret = null;
                }
            }
        }

        String optionsJson() {
            return options.toString();
        }

        /** Sets option {@code key} to {@code d} in whole milliseconds. */
        private Builder millisOption(String key, Duration d) {
            options.addProperty(key, millis(d, key));
            return this;
        }

        /** Sets option {@code retry.key} to {@code d} in whole milliseconds. */
        private Builder retryMillisOption(String key, Duration d) {
            retry().addProperty(key, millis(d, "retry." + key));
            return this;
        }

        /** Sets option {@code key} to {@code d} in whole seconds. */
        private Builder secondsOption(String key, Duration d) {
            options.addProperty(key, seconds(d, key));
            return this;
        }

        private JsonObject retry() {
            if (!options.has("retry")) {
                options.add("retry", new JsonObject());
            }
            return options.getAsJsonObject("retry");
        }

        static long millis(Duration d, String field) {
            if (d == null || d.getNano() % 1_000_000 != 0) {
                throw PayidemException.invalidArgument(field, field + " must be a whole number of milliseconds");
            }
            return d.toMillis();
        }

        private static long seconds(Duration d, String field) {
            if (d == null || d.getNano() != 0) {
                throw PayidemException.invalidArgument(field, field + " must be a whole number of seconds");
            }
            return d.getSeconds();
        }

        @Override
        public String toString() {
            JsonObject shown = JsonParser.parseString(options.toString()).getAsJsonObject();
            if (shown.has("journal_key_hex")) {
                shown.addProperty("journal_key_hex", "<redacted>");
            }
            for (String location : new String[] {"base_url", "journal_path", "proxy"}) {
                if (shown.has(location) && shown.get(location).isJsonPrimitive()) {
                    shown.addProperty(location, Text.redacted(shown.get(location).getAsString()));
                }
            }
            return "PayidemClient.Builder(" + shown + ", secret redacted)";
        }
    }
}
