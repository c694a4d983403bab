package io.payidem;

import com.sun.jna.NativeLibrary;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
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
 *
 * <p>Each JVM's extraction directory holds a lock file locked for the JVM's
 * whole life. A JVM that ends normally deletes its directory; one that is
 * killed cannot, so before extracting, the loader deletes every other
 * extraction directory of {@code java.io.tmpdir} whose lock it can take: the
 * operating system releases a lock when its process dies, so those belong to
 * JVMs that are gone. A killed JVM's copy is thus removed by the next load.
 */
final class NativeLoader {
    /** The system property naming a libpayidem file to load instead of any other. */
    static final String PROPERTY = "payidem.library";

    private static final String RESOURCES = "/io/payidem/native/";

    /** The prefix of every extraction directory's name in {@code java.io.tmpdir}. */
    static final String DIR_PREFIX = "payidem-";

    /** The lock file each extraction directory holds, locked while its JVM lives. */
    static final String LOCK = ".lock";

    /** A directory without a lock file is only removed when unchanged for this long (it may be in creation). */
    static final long UNLOCKED_GRACE_MILLIS = 60_000;

    /** The lock this JVM holds on its extraction directory; never released before exit. */
    private static FileChannel held;

    /** This JVM's extraction directory, which its sweeps skip. */
    private static volatile Path heldDir;

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
        Path tmp = Paths.get(System.getProperty("java.io.tmpdir"));
        sweep(tmp);
        Path dir = lockedDirectory(tmp);
        Path file = dir.resolve(name);
        try (InputStream in = NativeLoader.class.getResourceAsStream(RESOURCES + platform + "/" + name)) {
            if (in == null) {
                throw new IOException("SHA256SUMS lists " + name + " but the jar lacks it");
            }
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
        }
        file.toFile().deleteOnExit();
        String actual = sha256Hex(Files.readAllBytes(file));
        if (!actual.equals(expected)) {
            Files.deleteIfExists(file);
            throw new IOException("extracted " + name + " has SHA-256 " + actual + ", the jar recorded " + expected
                    + ": not loaded");
        }
        return file;
    }

    /**
     * A new 0700 directory in {@code tmp} whose lock file this JVM holds
     * until it exits. The lock is taken under a temporary name and then
     * renamed, so no other loader's sweep ever sees the lock file unlocked.
     */
    private static synchronized Path lockedDirectory(Path tmp) throws IOException {
        boolean posix = FileSystems.getDefault().supportedFileAttributeViews().contains("posix");
        Path dir = posix
                ? Files.createTempDirectory(tmp, DIR_PREFIX, PosixFilePermissions.asFileAttribute(
                        PosixFilePermissions.fromString("rwx------")))
                : Files.createTempDirectory(tmp, DIR_PREFIX);
        // Registered first, deleted last (deleteOnExit runs in reverse order).
        dir.toFile().deleteOnExit();
        Path creating = dir.resolve(LOCK + ".new");
        FileChannel channel = FileChannel.open(creating, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
        try {
            channel.lock();
            Files.move(creating, dir.resolve(LOCK), StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
        dir.resolve(LOCK).toFile().deleteOnExit();
        if (held != null) {
            held.close();
        }
        held = channel;
        heldDir = dir;
        return dir;
    }

    /**
     * Deletes the extraction directories in {@code tmp} left by JVMs that
     * are gone: those whose lock file can be locked, and those without one
     * unchanged for {@link #UNLOCKED_GRACE_MILLIS}. Directories of live JVMs,
     * of other users, holding anything an extraction does not write, and
     * anything it cannot read are left alone; it never fails. Returns how
     * many it deleted.
     */
    static int sweep(Path tmp) {
        int deleted = 0;
        String user = System.getProperty("user.name");
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(tmp, DIR_PREFIX + "*")) {
            for (Path dir : dirs) {
                try {
                    if (Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS) && !dir.equals(heldDir)
                            && isUser(Files.getOwner(dir, LinkOption.NOFOLLOW_LINKS).getName(), user)
                            && ours(dir) && sweepOne(dir)) {
                        deleted++;
                    }
                } catch (IOException | RuntimeException e) {
                    // Another JVM's directory, one being deleted by another sweep, or one we may not read.
                }
            }
        } catch (IOException | RuntimeException e) {
            // An unreadable tmpdir: nothing to sweep.
        }
        return deleted;
    }

    /** Whether a file owner's name (Windows: {@code DOMAIN\\user}) is {@code user}. */
    private static boolean isUser(String owner, String user) {
        return owner.equals(user) || owner.endsWith("\\" + user);
    }

    /** Whether {@code dir} holds only what an extraction writes (so it is one of ours to delete). */
    private static boolean ours(Path dir) throws IOException {
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
            for (Path entry : entries) {
                String n = entry.getFileName().toString();
                if (!(n.equals(LOCK) || n.equals(LOCK + ".new") || n.equals("libpayidem.so")
                        || n.equals("payidem.dll")) || !Files.isRegularFile(entry, LinkOption.NOFOLLOW_LINKS)) {
                    return false;
                }
            }
        }
        return true;
    }

    /** Deletes one extraction directory when its JVM is gone; whether it did. */
    private static boolean sweepOne(Path dir) throws IOException {
        Path lock = dir.resolve(LOCK);
        if (!Files.exists(lock, LinkOption.NOFOLLOW_LINKS)) {
            long age = System.currentTimeMillis() - Files.getLastModifiedTime(dir).toMillis();
            if (age < UNLOCKED_GRACE_MILLIS) {
                return false;
            }
            deleteContents(dir);
            Files.delete(dir);
            return true;
        }
        try (FileChannel channel = FileChannel.open(lock, StandardOpenOption.WRITE)) {
            FileLock taken;
            try {
                taken = channel.tryLock();
            } catch (OverlappingFileLockException e) {
                return false; // this JVM's own directory
            }
            if (taken == null) {
                return false; // a live JVM holds it
            }
            try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
                for (Path entry : entries) {
                    if (!entry.getFileName().toString().equals(LOCK)) {
                        Files.deleteIfExists(entry);
                    }
                }
            }
        }
        // Unlocked and closed before deleting: Windows refuses to delete an open file.
        Files.deleteIfExists(lock);
        Files.delete(dir);
        return true;
    }

    private static void deleteContents(Path dir) throws IOException {
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
            for (Path entry : entries) {
                Files.deleteIfExists(entry);
            }
        }
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
