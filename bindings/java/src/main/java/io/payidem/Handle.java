package io.payidem;

import com.sun.jna.Pointer;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * A native handle shared by many threads: calls hold the read lock, close
 * takes the write lock, so a handle is never freed while in use nor used
 * after it is freed (that is an invalid_argument, not a crash).
 */
final class Handle {
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private final Consumer<Pointer> free;
    private final String what;
    private Pointer pointer;

    Handle(Pointer pointer, Consumer<Pointer> free, String what) {
        this.pointer = pointer;
        this.free = free;
        this.what = what;
    }

    /**
     * Runs {@code body} with the live pointer and returns its result: the
     * pointer stays valid until {@code body} returns ({@link #close()} waits
     * for it; other calls run alongside). Once closed, throws
     * invalid_argument without running {@code body}.
     */
    <T> T with(Function<Pointer, T> body) {
        Pointer p = acquire();
        try {
            return body.apply(p);
        } finally {
            release();
        }
    }

    /** As {@link #with(Function)}, for a {@code body} that returns nothing. */
    void run(Consumer<Pointer> body) {
        Pointer p = acquire();
        try {
            body.accept(p);
        } finally {
            release();
        }
    }

    /** The live pointer, read-locked until {@link #release()}; throws when closed. */
    private Pointer acquire() {
        lock.readLock().lock();
        if (pointer == null) {
            lock.readLock().unlock();
            throw PayidemException.invalidArgument(what, "the " + what + " is closed");
        }
        return pointer;
    }

    /** Ends a call started by {@link #acquire()}. */
    private void release() {
        lock.readLock().unlock();
    }

    /** Frees the handle once running calls are done; idempotent. */
    void close() {
        lock.writeLock().lock();
        try {
            if (pointer != null) {
                free.accept(pointer);
                pointer = null;
            }
        } finally {
            lock.writeLock().unlock();
        }
    }
}
