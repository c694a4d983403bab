package io.payidem;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;

/**
 * One operation of a {@link PayidemClient} driven by the caller's own HTTP
 * stack, bound to the client's journal, lease, signer and retry budget:
 * {@link #step()} gives a {@code send} (already journaled: send exactly its
 * method, {@link PayidemClient#url(String) URL}, headers and body, then
 * {@link #report}), a {@code wait} (sleep, then ask again) or the
 * {@code end} (its outcome or exception). Never a {@code persist}: the call
 * records in the journal itself. One thread at a time; {@link #close()}
 * before the end leaves the journal right (unknown if an attempt may have
 * landed) and releases the lease.
 */
public final class Call implements AutoCloseable {
    private final Owned call;

    Call(Pointer call) {
        this.call = new Owned(call, Lib::payidem_call_free, "call", "the call is closed");
    }

    /** The next step. Asking again after a {@code send} without reporting ends the call (outcome unknown). */
    public synchronized Step step() {
        PointerByReference step = new PointerByReference();
        PointerByReference err = new PointerByReference();
        PayidemException.check(Lib.payidem_call_step(live(), step, err), err);
        return new Step(step.getValue());
    }

    /** Reports what the last {@code send} produced; the client's event listener hears of it before this returns. */
    public synchronized void report(Reply reply) {
        NativeHeaders h = new NativeHeaders(reply.headers);
        PointerByReference err = new PointerByReference();
        PayidemException.check(Lib.payidem_call_report(live(), reply.outcome, (short) reply.status, h.array,
                h.count, reply.body, reply.body.length, Text.c(reply.reason, "reason"), err), err);
    }

    /**
     * Ends the call now (a cancel, a deadline): its {@code end} step, whose
     * error is cancelled, unless the call had already ended (a payment that
     * was made is never hidden behind a cancel).
     */
    public synchronized Step cancel() {
        PointerByReference end = new PointerByReference();
        PointerByReference err = new PointerByReference();
        PayidemException.check(Lib.payidem_call_cancel(live(), end, err), err);
        return new Step(end.getValue());
    }

    /**
     * Sleeps a {@code wait} step's time. When the calling thread is
     * interrupted, keeps it interrupted and ends the call by
     * {@link #cancel()}: the answer is that end step; else null (ask for the
     * next step).
     */
    public Step sleep(Step wait) {
        try {
            Thread.sleep(wait.waitMs());
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return cancel();
        }
    }

    /** Frees the call (abandoning it first if it has not ended); idempotent. */
    @Override
    public synchronized void close() {
        call.free();
    }

    private Pointer live() {
        return call.live();
    }
}
