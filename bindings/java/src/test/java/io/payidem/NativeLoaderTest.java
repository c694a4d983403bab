package io.payidem;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;

/** The library is the jar's copy, extracted privately and checked by hash. */
class NativeLoaderTest {
    @Test
    void loadedFromTheJarAfterTheHashCheck() throws Exception {
        String origin = Names.libraryOrigin();
        assertTrue(origin.startsWith("jar (" + NativeLoader.platform() + ", SHA-256 verified): "), origin);
        Path file = Paths.get(origin.substring(origin.indexOf("): ") + 3));
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file.getParent())));
        String sums = new String(Files.readAllBytes(Paths.get(NativeLoaderTest.class
                .getResource("/io/payidem/native/" + NativeLoader.platform() + "/SHA256SUMS").toURI())), "UTF-8");
        assertEquals(NativeLoader.recordedSum(sums, "libpayidem.so"), NativeLoader.sha256Hex(Files.readAllBytes(file)));
        assertEquals(Signer.bodySha256Hex("abc".getBytes("UTF-8")),
                NativeLoader.sha256Hex("abc".getBytes("UTF-8")), "the core and the JVM agree on SHA-256");
        assertEquals(System.getProperty("payidem.version"), Names.libraryVersion(), "the jar's version is the library's");
    }

    @Test
    void recordedSumReadsSha256sumOutputOnly() {
        String h = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        assertEquals(h, NativeLoader.recordedSum(h + "  libpayidem.so\n", "libpayidem.so"));
        assertEquals(h, NativeLoader.recordedSum(h + " *libpayidem.so\n", "libpayidem.so"));
        assertNull(NativeLoader.recordedSum(h + "  other.so\n", "libpayidem.so"));
        assertNull(NativeLoader.recordedSum("xyz  libpayidem.so\n", "libpayidem.so"));
    }
}
