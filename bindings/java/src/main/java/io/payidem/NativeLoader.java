package io.payidem;

import com.sun.jna.NativeLibrary;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Finds and opens libpayidem, in this order: the file named by the system
 * property {@code payidem.library} (when set, only it); the copy carried by
 * the jar for this platform, extracted to a new private (0700) directory
 * and loaded only when its SHA-256 matches the one recorded when the jar was
 * built; the system ({@code java.library.path}, {@code jna.library.path},
 * the dynamic loader's path, e.g. the libpayidem0 package). {@link #origin()}
 * says which one was loaded; when none can be, the error lists every place
 * tried and why it failed.
 */
final class NativeLoader {
    /** The system property naming a libpayidem file to load instead of any other. */
    static final String PROPERTY = "payidem.library";

    private static final String RESOURCES = "/io/payidem/native/";

    private static volatile String origin = "not loaded";

    private NativeLoader() {}

    /** Where the loaded library came from, for people (e.g. "jar (linux-x86-64, sha-256 verified): /tmp/..."). */
    static String origin() {
        return origin;
    }

    /** The jar's name for this platform's directory, e.g. {@code linux-x86-64}; null when the jar carries none. */
    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        String o = os.startsWith("linux") ? "linux" : os.startsWith("windows") ? "windows" : null;
        String a = arch.equals("amd64") || arch.equals("x86_64") ? "x86-64"
                : arch.equals("aarch64") || arch.equals("arm64") ? "aarch64" : null;
        return o == null || a == null ? null : o + "-" + a;
    }

    /** The library's file name on this platform. */
    static String fileName() {
        return platform() != null && platform().startsWith("windows") ? "payidem.dll" : "libpayidem.so";
    }

    /** Opens the library as described above, or fails naming every place tried. */
    static NativeLibrary load() {
        List<String> tried = new ArrayList<>();
        String explicit = System.getProperty(PROPERTY);
        if (explicit != null && !explicit.isEmpty()) {
            try {
                NativeLibrary lib = NativeLibrary.getInstance(new File(explicit).getAbsolutePath());
                origin = "-D" + PROPERTY + ": " + explicit;
                return lib;
            } catch (UnsatisfiedLinkError e) {
                throw new UnsatisfiedLinkError("payidem: cannot load libpayidem from -D" + PROPERTY + "="
                        + explicit + ": " + e.getMessage());
            }
        }
        String platform = platform();
        if (platform == null) {
            tried.add("jar: no native library for os.name=" + System.getProperty("os.name") + " os.arch="
                    + System.getProperty("os.arch"));
        } else {
            try {
                Path file = extract(platform);
                if (file != null) {
                    NativeLibrary lib = NativeLibrary.getInstance(file.toString());
                    origin = "jar (" + platform + ", SHA-256 verified): " + file;
                    return lib;
                }
                tried.add("jar: carries no library for " + platform);
            } catch (IOException | RuntimeException | UnsatisfiedLinkError e) {
                tried.add("jar (" + platform + "): " + e.getMessage());
            }
        }
        try {
            NativeLibrary lib = NativeLibrary.getInstance("payidem");
            origin = "system (java.library.path / jna.library.path / the dynamic loader): " + lib.getFile();
            return lib;
        } catch (UnsatisfiedLinkError e) {
            tried.add("system (java.library.path=" + System.getProperty("java.library.path") + "): "
                    + e.getMessage());
        }
        throw new UnsatisfiedLinkError("payidem: cannot load libpayidem; tried " + String.join("; ", tried)
                + ". Use a jar built for this platform, install libpayidem, or set -D" + PROPERTY + "=/path/to/"
                + fileName());
    }

    /**
     * Extracts the jar's library for {@code platform} into a new 0700
     * directory and checks it against the recorded SHA-256; null when the
     * jar has none for it.
     */
    private static Path extract(String platform) throws IOException {
        String name = fileName();
        String expected;
        try (InputStream sums = NativeLoader.class.getResourceAsStream(RESOURCES + platform + "/SHA256SUMS")) {
            if (sums == null) {
                return null;
            }
            expected = recordedSum(readAll(sums), name);
        }
        if (expected == null) {
            throw new IOException("SHA256SUMS records no " + name);
        }
        boolean posix = FileSystems.getDefault().supportedFileAttributeViews().contains("posix");
        Path dir = posix
                ? Files.createTempDirectory("payidem-", PosixFilePermissions.asFileAttribute(
                        PosixFilePermissions.fromString("rwx------")))
                : Files.createTempDirectory("payidem-");
        Path file = dir.resolve(name);
        try (InputStream in = NativeLoader.class.getResourceAsStream(RESOURCES + platform + "/" + name)) {
            if (in == null) {
                throw new IOException("SHA256SUMS lists " + name + " but the jar lacks it");
            }
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
        }
        file.toFile().deleteOnExit();
        dir.toFile().deleteOnExit();
        String actual = sha256Hex(Files.readAllBytes(file));
        if (!actual.equals(expected)) {
            Files.deleteIfExists(file);
            throw new IOException("extracted " + name + " has SHA-256 " + actual + ", the jar recorded " + expected
                    + ": not loaded");
        }
        return file;
    }

    /** The hash {@code sha256sum} recorded for {@code name}, or null. */
    static String recordedSum(String sums, String name) {
        for (String line : sums.split("\n")) {
            String[] parts = line.trim().split("\\s+\\*?", 2);
            if (parts.length == 2 && parts[1].equals(name) && parts[0].matches("[0-9a-f]{64}")) {
                return parts[0];
            }
        }
        return null;
    }

    /** The whole stream as UTF-8 text. */
    private static String readAll(InputStream in) throws IOException {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        byte[] buf = new byte[4096];
        for (int n; (n = in.read(buf)) > 0; ) {
            out.write(buf, 0, n);
        }
        return new String(out.toByteArray(), StandardCharsets.UTF_8);
    }

    /** The SHA-256 of {@code data} as 64 lower-case hex digits. */
    static String sha256Hex(byte[] data) {
        try {
            return String.format("%064x", new java.math.BigInteger(1, MessageDigest.getInstance("SHA-256").digest(data)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }
}
