package io.payidem;

/** The child JVM of {@link NativeLoaderTest}: prints where the library came from, or why it could not load. */
public final class LoaderProbe {
    private LoaderProbe() {}

    /** Prints "loaded: ORIGIN" or "failed: MESSAGE". */
    public static void main(String[] args) {
        try {
            System.out.println("loaded: " + Names.libraryOrigin());
        } catch (UnsatisfiedLinkError e) {
            System.out.println("failed: " + e.getMessage());
        } catch (NoClassDefFoundError e) {
            System.out.println("failed: " + e.getMessage() + " / " + e.getCause());
        }
    }
}
