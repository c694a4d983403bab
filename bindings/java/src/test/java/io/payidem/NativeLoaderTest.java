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

    /** Runs LoaderProbe in a child JVM with {@code classes} first on the class path; its output. */
    private static String probe(Path classes, String... props) throws Exception {
        java.util.List<String> cmd = new java.util.ArrayList<>();
        cmd.add(System.getProperty("java.home") + "/bin/java");
        for (String p : props) {
            cmd.add(p);
        }
        cmd.add("-cp");
        cmd.add(classes + java.io.File.pathSeparator + System.getProperty("surefire.test.class.path",
                System.getProperty("java.class.path")));
        cmd.add(LoaderProbe.class.getName());
        // stderr apart: newer JVMs warn there about native access.
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(readAll(p.getInputStream()), "UTF-8");
        assertEquals(0, p.waitFor(), out);
        return out.trim();
    }

    private static byte[] readAll(java.io.InputStream in) throws java.io.IOException {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        byte[] buf = new byte[8192];
        for (int n; (n = in.read(buf)) > 0; ) {
            out.write(buf, 0, n);
        }
        return out.toByteArray();
    }

    @Test
    void aTamperedLibraryIsNeverLoadedAndTheFailureSaysWhy(@org.junit.jupiter.api.io.TempDir Path dir)
            throws Exception {
        // A class path entry ahead of the real one whose recorded hash does not match the library.
        Path natives = dir.resolve("io/payidem/native/" + NativeLoader.platform());
        Files.createDirectories(natives);
        Path real = Paths.get(NativeLoaderTest.class.getResource("/io/payidem/native/" + NativeLoader.platform()
                + "/libpayidem.so").toURI());
        Files.copy(real, natives.resolve("libpayidem.so"));
        Files.write(natives.resolve("SHA256SUMS"), (String.format("%064d", 0) + "  libpayidem.so\n").getBytes("UTF-8"));
        String out = probe(dir, "-Djna.library.path=" + dir.resolve("none"), "-Djava.library.path="
                + dir.resolve("none"));
        assertTrue(!out.startsWith("loaded: jar"), out);
        if (out.startsWith("failed: ")) {
            assertTrue(out.contains("SHA-256"), out);
            assertTrue(out.contains("the jar recorded"), out);
            assertTrue(out.contains("system (java.library.path="), out);
            assertTrue(out.contains("-Dpayidem.library"), out);
        } else {
            assertTrue(out.startsWith("loaded: system"), "a libpayidem installed on this machine: " + out);
        }

        String missing = probe(dir, "-Dpayidem.library=" + dir.resolve("nowhere/libpayidem.so"));
        assertTrue(missing.startsWith("failed: ") && missing.contains("-Dpayidem.library=") && missing.contains(
                "nowhere"), missing);
        String explicit = probe(dir, "-Dpayidem.library=" + real);
        assertEquals("loaded: -Dpayidem.library: " + real, explicit);
    }
}
