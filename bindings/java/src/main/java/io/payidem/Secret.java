package io.payidem;

import com.sun.jna.Memory;

/**
 * A secret's bytes in native memory for one call into the library, wiped
 * when closed: the JVM's own array copies (which it never wipes) are avoided.
 */
final class Secret implements AutoCloseable {
    final Memory memory;
    final long length;

    Secret(byte[] secret, String field) {
        if (secret == null) {
            throw PayidemException.invalidArgument(field, field + " is null");
        }
        length = secret.length;
        memory = new Memory(Math.max(1, secret.length));
        memory.write(0, secret, 0, secret.length);
    }

    @Override
    public void close() {
        memory.clear();
        memory.close();
    }

    @Override
    public String toString() {
        return "Secret(" + length + " bytes, redacted)";
    }
}
