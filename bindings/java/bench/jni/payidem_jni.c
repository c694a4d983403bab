/* The JNI prototype of the signing benchmark (bindings/java/bench.sh): one call,
 * payidem_signer_sign_into, through JNI instead of JNA, to measure what JNA costs.
 * Not shipped: the jar uses JNA (bindings/java/README.md says why). */
#include <jni.h>
#include <stdint.h>
#include <string.h>
#include "payidem.h"

JNIEXPORT jlong JNICALL Java_io_payidem_bench_JniSigner_newSigner(JNIEnv *env, jclass cls, jstring key_id,
                                                                  jbyteArray secret) {
    (void)cls;
    const char *id = (*env)->GetStringUTFChars(env, key_id, NULL);
    jsize n = (*env)->GetArrayLength(env, secret);
    jbyte *s = (*env)->GetByteArrayElements(env, secret, NULL);
    payidem_signer *signer = NULL;
    payidem_result rc = payidem_signer_new(id, (const uint8_t *)s, (size_t)n, &signer, NULL);
    memset(s, 0, (size_t)n);
    (*env)->ReleaseByteArrayElements(env, secret, s, JNI_ABORT);
    (*env)->ReleaseStringUTFChars(env, key_id, id);
    return rc == PAYIDEM_OK ? (jlong)(intptr_t)signer : 0;
}

JNIEXPORT void JNICALL Java_io_payidem_bench_JniSigner_freeSigner(JNIEnv *env, jclass cls, jlong signer) {
    (void)env;
    (void)cls;
    payidem_signer_free((payidem_signer *)(intptr_t)signer);
}

/* Signs into `out` (the payidem_signed_headers bytes); returns the payidem_result. */
JNIEXPORT jint JNICALL Java_io_payidem_bench_JniSigner_signInto(JNIEnv *env, jclass cls, jlong signer,
                                                                jbyteArray method, jbyteArray path,
                                                                jbyteArray key, jbyteArray body, jlong ts,
                                                                jbyteArray out) {
    (void)cls;
    payidem_signed_headers headers;
    jbyte *m = (*env)->GetPrimitiveArrayCritical(env, method, NULL);
    jbyte *p = (*env)->GetPrimitiveArrayCritical(env, path, NULL);
    jbyte *k = (*env)->GetPrimitiveArrayCritical(env, key, NULL);
    jsize bn = (*env)->GetArrayLength(env, body);
    jbyte *b = (*env)->GetPrimitiveArrayCritical(env, body, NULL);
    payidem_result rc = payidem_signer_sign_into((payidem_signer *)(intptr_t)signer, (const char *)m,
                                                 (const char *)p, (const char *)k, (const uint8_t *)b,
                                                 (size_t)bn, (uint64_t)ts, &headers, NULL);
    (*env)->ReleasePrimitiveArrayCritical(env, body, b, JNI_ABORT);
    (*env)->ReleasePrimitiveArrayCritical(env, key, k, JNI_ABORT);
    (*env)->ReleasePrimitiveArrayCritical(env, path, p, JNI_ABORT);
    (*env)->ReleasePrimitiveArrayCritical(env, method, m, JNI_ABORT);
    if (rc == PAYIDEM_OK) {
        (*env)->SetByteArrayRegion(env, out, 0, (jsize)sizeof headers, (const jbyte *)&headers);
    }
    return (jint)rc;
}
