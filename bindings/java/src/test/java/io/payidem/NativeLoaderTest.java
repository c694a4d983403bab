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
        Process p = start(classes, false, props);
        String out = new String(readAll(p.getInputStream()), "UTF-8");
        assertEquals(0, p.waitFor(), out);
        return out.trim();
    }

    /** Starts LoaderProbe in a child JVM; with {@code hold}, it keeps the library loaded until its stdin ends. */
    private static Process start(Path classes, boolean hold, String... props) throws Exception {
        java.util.List<String> cmd = new java.util.ArrayList<>();
        cmd.add(System.getProperty("java.home") + "/bin/java");
        for (String p : props) {
            cmd.add(p);
        }
        cmd.add("-cp");
        cmd.add(classes + java.io.File.pathSeparator + System.getProperty("surefire.test.class.path",
                System.getProperty("java.class.path")));
        cmd.add(LoaderProbe.class.getName());
        if (hold) {
            cmd.add("hold");
        }
        // stderr apart: newer JVMs warn there about native access.
        return new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }

    /** The extraction directory named by a probe's "loaded: jar (…): FILE" line. */
    private static Path extractedDir(String line) {
        assertTrue(line.startsWith("loaded: jar ("), line);
        return Paths.get(line.substring(line.indexOf("): ") + 3)).getParent();
    }

    /** Starts a probe that holds the library loaded from {@code tmp}; its extraction directory. */
    private static Path holding(Path tmp, java.util.List<Process> children) throws Exception {
        Process p = start(tmp.resolve("no-classes"), true, "-Djava.io.tmpdir=" + tmp);
        children.add(p);
        String line = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream(), "UTF-8"))
                .readLine();
        Path dir = extractedDir(String.valueOf(line));
        assertEquals(tmp, dir.getParent());
        return dir;
    }

    @Test
    void aKilledJvmsCopyIsDeletedByTheNextLoadAndALiveOnesIsKept(@org.junit.jupiter.api.io.TempDir Path tmp)
            throws Exception {
        java.util.List<Process> children = new java.util.ArrayList<>();
        try {
            Path killed = holding(tmp, children);
            Path live = holding(tmp, children);
            assertTrue(Files.isRegularFile(killed.resolve("libpayidem.so")));
            assertTrue(Files.isRegularFile(live.resolve("libpayidem.so")), "the second load kept the first's copy");

            Process victim = children.get(0);
            victim.destroyForcibly();
            victim.waitFor();
            assertTrue(Files.isRegularFile(killed.resolve("libpayidem.so")), "a killed JVM cannot delete its copy");

            String next = probe(tmp.resolve("no-classes"), "-Djava.io.tmpdir=" + tmp);
            assertTrue(!Files.exists(killed), "the next load deleted the killed JVM's directory");
            assertTrue(Files.isRegularFile(live.resolve("libpayidem.so")), "a live JVM's copy is kept");
            assertTrue(!Files.exists(extractedDir(next)), "a JVM that exits normally deletes its directory");

            Process holder = children.get(1);
            holder.getOutputStream().close();
            assertEquals(0, holder.waitFor());
            assertTrue(!Files.exists(live), "a JVM that exits normally deletes its directory");
        } finally {
            for (Process p : children) {
                p.destroyForcibly();
            }
        }
    }

    @Test
    void theSweepDeletesOnlyWhatAnExtractionWrote(@org.junit.jupiter.api.io.TempDir Path tmp) throws Exception {
        Path stale = Files.createDirectory(tmp.resolve(NativeLoader.DIR_PREFIX + "stale"));
        Files.write(stale.resolve("libpayidem.so"), new byte[] {1});
        Files.write(stale.resolve(NativeLoader.LOCK), new byte[0]);
        Path unlockedOld = Files.createDirectory(tmp.resolve(NativeLoader.DIR_PREFIX + "unlocked-old"));
        Files.write(unlockedOld.resolve("libpayidem.so"), new byte[] {1});
        Files.setLastModifiedTime(unlockedOld, java.nio.file.attribute.FileTime.fromMillis(
                System.currentTimeMillis() - NativeLoader.UNLOCKED_GRACE_MILLIS - 1000));
        Path unlockedNew = Files.createDirectory(tmp.resolve(NativeLoader.DIR_PREFIX + "unlocked-new"));
        Path foreign = Files.createDirectory(tmp.resolve(NativeLoader.DIR_PREFIX + "foreign"));
        Files.write(foreign.resolve("notes.txt"), new byte[] {1});
        Files.write(foreign.resolve(NativeLoader.LOCK), new byte[0]);
        Path other = Files.createDirectory(tmp.resolve("other-stale"));
        Files.write(other.resolve(NativeLoader.LOCK), new byte[0]);

        assertEquals(2, NativeLoader.sweep(tmp));
        assertTrue(!Files.exists(stale), "a directory whose lock no process holds");
        assertTrue(!Files.exists(unlockedOld), "an old directory without a lock file");
        assertTrue(Files.isDirectory(unlockedNew), "a directory being created (no lock file yet)");
        assertTrue(Files.isRegularFile(foreign.resolve("notes.txt")), "a directory holding something else");
        assertTrue(Files.isDirectory(other), "not an extraction directory");
        assertEquals(0, NativeLoader.sweep(tmp.resolve("missing")), "a missing tmpdir is not an error");
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
