package io.payidem;

/** The child JVM of {@link NativeLoaderTest}: prints where the library came from, or why it could not load. */
public final class LoaderProbe {
    private LoaderProbe() {}

    /**
     * Prints "loaded: ORIGIN" or "failed: MESSAGE"; with the argument
     * {@code hold}, then keeps the library loaded until its standard input
     * ends.
     */
    public static void main(String[] args) throws java.io.IOException {
        try {
            System.out.println("loaded: " + Names.libraryOrigin());
            System.out.flush();
            if (args.length > 0 && args[0].equals("hold")) {
                while (System.in.read() >= 0) {
                    // until the parent closes our standard input or kills us
                }
            }
        } catch (UnsatisfiedLinkError e) {
            System.out.println("failed: " + e.getMessage());
        } catch (NoClassDefFoundError e) {
            System.out.println("failed: " + e.getMessage() + " / " + e.getCause());
        }
    }
}
