package io.payidem;

import com.sun.jna.Pointer;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;

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

    /** The live pointer, read-locked until {@link #release()}; throws when closed. */
    Pointer acquire() {
        lock.readLock().lock();
        if (pointer == null) {
            lock.readLock().unlock();
            throw PayidemException.invalidArgument(what, "the " + what + " is closed");
        }
        return pointer;
    }

    /** Ends a call started by {@link #acquire()}. */
    void release() {
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
