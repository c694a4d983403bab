package io.payidem.bench;

/** The JNI prototype's entry points (jni/payidem_jni.c); benchmark only. */
final class JniSigner {
    private JniSigner() {}

    static native long newSigner(String keyId, byte[] secret);

    static native void freeSigner(long signer);

    static native int signInto(long signer, byte[] method, byte[] path, byte[] key, byte[] body, long ts,
            byte[] out);
}
