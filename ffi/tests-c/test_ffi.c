/*
 * C tests of libpayidem through include/payidem.h: every conformance vector
 * of core/tests/vectors/protocol-v1.json, every reachable error code, NULL
 * and bad lengths for every function, and operations end to end against
 * payidem-mock (started here on port 0).
 *
 * Environment: PAYIDEM_VECTORS (default core/tests/vectors/protocol-v1.json),
 * PAYIDEM_MOCK (default target/release/payidem-mock) and
 * PAYIDEM_REDIS_SERVER (default redis-server on the PATH), which is started
 * through ffi/tests-c/redis_server.sh: like the defaults, relative to the
 * repository root, where `make test-c` runs the tests.
 *
 * Built for Windows (scripts/dist/test-windows.sh runs it under Wine), it
 * runs what needs no child process: the vectors and the argument checks.
 */
#define _POSIX_C_SOURCE 200809L

#include <cJSON.h>
#include <stdint.h>
#include <strings.h>
#include <signal.h>
#ifndef _WIN32
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#endif
#include <sys/stat.h>

#include "harness.h"

/* ---- helpers ---------------------------------------------------------- */

static int reached[128];

/* Checks that a call failed with `code` (and names `field` when given),
 * that the error object agrees, then frees it. */
static void expect_error_at(const char *file, int line, payidem_result rc,
                            payidem_error *err, payidem_result code,
                            const char *field) {
    if (rc != code || payidem_error_code(err) != code) {
        fprintf(stderr, "  %s:%d: got %u (%s: %s), expected %u (%s)\n", file,
                line, (unsigned)rc, payidem_result_name(rc),
                err ? payidem_error_message(err) : "no error", (unsigned)code,
                payidem_result_name(code));
        harness_current_failed = 1;
    } else {
        if (code < 128) {
            reached[code] = 1;
        }
        if (payidem_error_message(err) == NULL) {
            fprintf(stderr, "  %s:%d: error without message\n", file, line);
            harness_current_failed = 1;
        }
        if (field != NULL) {
            const char *got = payidem_error_field(err);
            if (got == NULL || strcmp(got, field) != 0) {
                fprintf(stderr, "  %s:%d: field \"%s\", expected \"%s\" (%s)\n",
                        file, line, got ? got : "(null)", field,
                        payidem_error_message(err));
                harness_current_failed = 1;
            } else if (strncmp(payidem_error_message(err), field,
                               strlen(field)) != 0) {
                fprintf(stderr, "  %s:%d: message does not start with %s\n",
                        file, line, field);
                harness_current_failed = 1;
            }
        }
    }
    payidem_error_free(err);
}

/* The call runs first, then its error is read. */
#define EXPECT_ERR(rc, err, code, field)                                      \
    do {                                                                       \
        payidem_result err_rc_ = (rc);                                         \
        expect_error_at(__FILE__, __LINE__, err_rc_, (err), (code), (field));  \
        (err) = NULL;                                                          \
    } while (0)

#define EXPECT_OK(rc, err)                                                     \
    do {                                                                       \
        payidem_result ok_rc_ = (rc);                                          \
        if (ok_rc_ != PAYIDEM_OK) {                                            \
            fprintf(stderr, "  %s:%d: %s failed: %s\n", __FILE__, __LINE__,    \
                    #rc, payidem_error_message(err));                          \
            harness_current_failed = 1;                                        \
            payidem_error_free(err);                                           \
            err = NULL;                                                        \
        } else {                                                               \
            CHECK(err == NULL);                                                \
        }                                                                      \
    } while (0)

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    long size;
    char *text;
    if (f == NULL) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, 0, SEEK_SET);
    text = malloc((size_t)size + 1);
    if (text && fread(text, 1, (size_t)size, f) != (size_t)size) {
        free(text);
        text = NULL;
    }
    if (text) {
        text[size] = '\0';
    }
    fclose(f);
    return text;
}

static int b64_value(int c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Decodes standard base64; the caller frees the result (never NULL). */
static uint8_t *b64_decode(const char *text, size_t *len_out) {
    size_t n = strlen(text);
    uint8_t *out = malloc(n / 4 * 3 + 3);
    size_t len = 0;
    unsigned acc = 0;
    int bits = 0;
    size_t i;
    for (i = 0; i < n; i++) {
        int v = b64_value((unsigned char)text[i]);
        if (v < 0) {
            continue;
        }
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[len++] = (uint8_t)((acc >> bits) & 0xff);
        }
    }
    *len_out = len;
    return out;
}

static cJSON *vectors;

static const char *jstr(const cJSON *obj, const char *key) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(item) ? item->valuestring : NULL;
}

static uint64_t parse_u64(const char *text) {
    return (uint64_t)strtoull(text, NULL, 10);
}

static const uint8_t SECRET[] = "sk_test_0123456789abcdef0123456789abcdef";
#define SECRET_LEN (sizeof SECRET - 1)
static const char NONCE[] = "6f1c2a4e-9b3d-4c5e-8f70-1a2b3c4d5e6f";
static const uint8_t BODY[] = "{\"order_id\":\"ord-1\",\"amount\":1000,\"currency\":\"EUR\"}";
#define BODY_LEN (sizeof BODY - 1)

static payidem_signer *new_signer(void) {
    payidem_signer *signer = NULL;
    payidem_error *err = NULL;
    EXPECT_OK(payidem_signer_new("key_live_1", SECRET, SECRET_LEN, &signer, &err), err);
    return signer;
}

/* ---- version and codes ------------------------------------------------ */

static void test_version_matches_header(void) {
    char text[32];
    snprintf(text, sizeof text, "%d.%d.%d", PAYIDEM_VERSION_MAJOR,
             PAYIDEM_VERSION_MINOR, PAYIDEM_VERSION_PATCH);
    CHECK_STR(payidem_version(), PAYIDEM_VERSION);
    CHECK_STR(text, PAYIDEM_VERSION);
    CHECK(payidem_abi_version() == PAYIDEM_ABI_VERSION);
}

static void test_result_names_are_the_stable_codes(void) {
    static const char *const names[] = {
        "ok", "invalid_argument", "idempotency_conflict", "rejected",
        "outcome_unknown", "key_expired", "operation_busy", "transport_error",
        "journal_error", "missing_signature", "unknown_api_key",
        "timestamp_out_of_window", "invalid_signature", "nonce_reused",
        "replay_cache_full", "idempotency_key_required", "internal_error",
        "cancelled", "refused", "replay_store_unavailable"};
    unsigned i;
    uint32_t max = payidem_result_max_error_code();
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        CHECK_STR(payidem_result_name(i), names[i]);
    }
    /* Codes 1..max are the library's stable codes, every one named. */
    CHECK(max == sizeof names / sizeof names[0] - 1);
    for (i = 1; i <= max; i++) {
        CHECK(payidem_result_name(i) != NULL);
    }
    CHECK(payidem_result_name(max + 1) == NULL);
    CHECK(PAYIDEM_CANCELLED == 17);
    CHECK(PAYIDEM_INTERNAL_ERROR == 16);
    CHECK(PAYIDEM_REFUSED == 18);
    CHECK(PAYIDEM_REPLAY_STORE_UNAVAILABLE == 19);
    CHECK_STR(payidem_result_name(PAYIDEM_BUFFER_TOO_SMALL), "buffer_too_small");
    CHECK(PAYIDEM_BUFFER_TOO_SMALL == 100);
    CHECK(payidem_result_name(99) == NULL);
    CHECK(payidem_result_name(101) == NULL);
    CHECK(sizeof(payidem_result) == 4);
}

/* ---- conformance vectors ---------------------------------------------- */

static void test_vectors_sign(void) {
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(vectors, "sign");
    const cJSON *c;
    int count = 0;
    CHECK(cJSON_GetArraySize(cases) == 11);
    cJSON_ArrayForEach(c, cases) {
        const cJSON *expect = cJSON_GetObjectItemCaseSensitive(c, "expect");
        size_t secret_len, body_len, len = 0;
        uint8_t *secret = b64_decode(jstr(c, "secret_b64"), &secret_len);
        uint8_t *body = b64_decode(jstr(c, "body_b64"), &body_len);
        const char *key = jstr(c, "idempotency_key");
        char canonical[4096], sha[PAYIDEM_SHA256_HEX_BUF_LEN],
            sig[PAYIDEM_SIGNATURE_BUF_LEN];
        payidem_signer *signer = NULL;
        payidem_signed_attempt *attempt = NULL;
        payidem_error *err = NULL;
        payidem_result rc;

        /* A size query first, then the string itself. */
        rc = payidem_canonical_string(jstr(c, "method"), jstr(c, "path"),
                                      jstr(c, "timestamp"), jstr(c, "nonce"),
                                      key, body, body_len, NULL, 0, &len, &err);
        EXPECT_ERR(rc, err, PAYIDEM_BUFFER_TOO_SMALL, "buf");
        CHECK(len == strlen(jstr(expect, "canonical")));
        EXPECT_OK(payidem_canonical_string(
                      jstr(c, "method"), jstr(c, "path"), jstr(c, "timestamp"),
                      jstr(c, "nonce"), key, body, body_len, canonical,
                      sizeof canonical, &len, &err),
                  err);
        CHECK_STR(canonical, jstr(expect, "canonical"));
        CHECK(len == strlen(canonical));
        EXPECT_OK(payidem_body_sha256_hex(body, body_len, sha, sizeof sha, &err), err);
        CHECK_STR(sha, jstr(expect, "body_sha256"));

        EXPECT_OK(payidem_signer_new("key_live_1", secret, secret_len, &signer, &err), err);
        EXPECT_OK(payidem_signer_sign_parts(signer, jstr(c, "method"),
                                            jstr(c, "path"), jstr(c, "timestamp"),
                                            jstr(c, "nonce"), key, body, body_len,
                                            sig, sizeof sig, &err),
                  err);
        CHECK_STR(sig, jstr(expect, "signature"));

        /* The same attempt through the handle API, timestamp as a number. */
        EXPECT_OK(payidem_signer_sign_attempt_with_nonce(
                      signer, jstr(c, "method"), jstr(c, "path"), key, body,
                      body_len, parse_u64(jstr(c, "timestamp")),
                      jstr(c, "nonce"), &attempt, &err),
                  err);
        if (attempt) {
            const char *name = NULL, *value = NULL;
            size_t headers = payidem_signed_attempt_header_count(attempt);
            CHECK_STR(payidem_signed_attempt_signature(attempt), jstr(expect, "signature"));
            CHECK_STR(payidem_signed_attempt_nonce(attempt), jstr(c, "nonce"));
            CHECK(payidem_signed_attempt_timestamp(attempt) ==
                  parse_u64(jstr(c, "timestamp")));
            CHECK(headers == (key[0] ? 5u : 4u));
            EXPECT_OK(payidem_signed_attempt_header_at(attempt, 0, &name, &value, &err), err);
            CHECK_STR(name, PAYIDEM_HEADER_API_KEY);
            CHECK_STR(value, "key_live_1");
            EXPECT_OK(payidem_signed_attempt_header_at(attempt, 1, &name, &value, &err), err);
            CHECK_STR(name, PAYIDEM_HEADER_TIMESTAMP);
            CHECK_STR(value, jstr(c, "timestamp"));
            EXPECT_OK(payidem_signed_attempt_header_at(attempt, 3, &name, &value, &err), err);
            CHECK_STR(name, PAYIDEM_HEADER_SIGNATURE);
            CHECK_STR(value, jstr(expect, "signature"));
            if (key[0]) {
                EXPECT_OK(payidem_signed_attempt_header_at(attempt, 4, &name, &value, &err), err);
                CHECK_STR(name, PAYIDEM_HEADER_IDEMPOTENCY_KEY);
                CHECK_STR(value, key);
            }
            EXPECT_ERR(payidem_signed_attempt_header_at(attempt, headers, &name, &value, &err),
                       err, PAYIDEM_INVALID_ARGUMENT, "index");
        }
        payidem_signed_attempt_free(attempt);
        payidem_signer_free(signer);
        free(secret);
        free(body);
        count++;
    }
    CHECK(count == 11);
}

static void test_vectors_sign_invalid(void) {
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(vectors, "sign_invalid");
    const cJSON *c;
    int count = 0;
    CHECK(cJSON_GetArraySize(cases) == 18);
    cJSON_ArrayForEach(c, cases) {
        size_t secret_len, body_len, len = 0;
        uint8_t *secret = b64_decode(jstr(c, "secret_b64"), &secret_len);
        uint8_t *body = b64_decode(jstr(c, "body_b64"), &body_len);
        const char *field = jstr(c, "field");
        char buf[4096];
        payidem_signer *signer = NULL;
        payidem_error *err = NULL;
        payidem_result rc;
        CHECK_STR(jstr(c, "expect_error"), "invalid_argument");
        rc = payidem_signer_new("key_live_1", secret_len ? secret : (const uint8_t *)"",
                                secret_len, &signer, &err);
        if (strcmp(field, "secret") == 0) {
            EXPECT_ERR(rc, err, PAYIDEM_INVALID_ARGUMENT, "secret");
            CHECK(signer == NULL);
        } else {
            EXPECT_OK(rc, err);
            rc = payidem_signer_sign_parts(signer, jstr(c, "method"), jstr(c, "path"),
                                           jstr(c, "timestamp"), jstr(c, "nonce"),
                                           jstr(c, "idempotency_key"), body, body_len,
                                           buf, sizeof buf, &err);
            EXPECT_ERR(rc, err, PAYIDEM_INVALID_ARGUMENT, field);
            rc = payidem_canonical_string(jstr(c, "method"), jstr(c, "path"),
                                          jstr(c, "timestamp"), jstr(c, "nonce"),
                                          jstr(c, "idempotency_key"), body, body_len,
                                          buf, sizeof buf, &len, &err);
            EXPECT_ERR(rc, err, PAYIDEM_INVALID_ARGUMENT, field);
        }
        payidem_signer_free(signer);
        free(secret);
        free(body);
        count++;
    }
    CHECK(count == 18);
}

static void test_vectors_verify_sequence(void) {
    const cJSON *seq = cJSON_GetObjectItemCaseSensitive(vectors, "verify_sequence");
    const cJSON *keys = cJSON_GetObjectItemCaseSensitive(seq, "keys_b64");
    const cJSON *requests = cJSON_GetObjectItemCaseSensitive(seq, "requests");
    const cJSON *window = cJSON_GetObjectItemCaseSensitive(seq, "window_seconds");
    const cJSON *key, *req;
    payidem_verifier *verifier = NULL;
    payidem_error *err = NULL;
    int count = 0;
    EXPECT_OK(payidem_verifier_new((uint64_t)window->valuedouble, 1000, &verifier, &err), err);
    cJSON_ArrayForEach(key, keys) {
        const uint8_t *secrets[8];
        size_t lens[8];
        uint8_t *owned[8];
        size_t n = 0, i;
        const cJSON *s;
        cJSON_ArrayForEach(s, key) {
            if (n < 8) {
                owned[n] = b64_decode(s->valuestring, &lens[n]);
                secrets[n] = owned[n];
                n++;
            }
        }
        EXPECT_OK(payidem_verifier_add_key(verifier, key->string, secrets, lens, n, &err), err);
        for (i = 0; i < n; i++) {
            free(owned[i]);
        }
    }
    CHECK(cJSON_GetArraySize(requests) == 20);
    cJSON_ArrayForEach(req, requests) {
        const cJSON *headers = cJSON_GetObjectItemCaseSensitive(req, "headers");
        const cJSON *expect = cJSON_GetObjectItemCaseSensitive(req, "expect");
        const char *code = jstr(expect, "code");
        int status = cJSON_GetObjectItemCaseSensitive(expect, "status")->valueint;
        uint64_t now = (uint64_t)cJSON_GetObjectItemCaseSensitive(req, "server_now")->valuedouble;
        payidem_header hs[16];
        size_t n = 0, body_len;
        uint8_t *body = b64_decode(jstr(req, "body_b64"), &body_len);
        uint16_t http_status = 0;
        const cJSON *h;
        payidem_result rc;
        cJSON_ArrayForEach(h, headers) {
            if (n < 16) {
                hs[n].name = h->string;
                hs[n].value = h->valuestring;
                n++;
            }
        }
        rc = payidem_verifier_verify(verifier, jstr(req, "method"), jstr(req, "path"),
                                     hs, n, body, body_len, now, &http_status, &err);
        CHECK(http_status == status);
        if (code == NULL) {
            if (rc != PAYIDEM_OK) {
                fprintf(stderr, "  %s: %s\n", jstr(req, "name"), payidem_error_message(err));
            }
            EXPECT_OK(rc, err);
        } else {
            uint64_t server_time = 0;
            CHECK_STR(payidem_result_name(rc), code);
            CHECK(payidem_error_http_status(err) == status);
            if (strcmp(code, "timestamp_out_of_window") == 0) {
                CHECK(payidem_error_server_time(err, &server_time));
                CHECK(server_time == now);
            } else {
                CHECK(!payidem_error_server_time(err, &server_time));
            }
            if (rc < 128) {
                reached[rc] = 1;
            }
            payidem_error_free(err);
            err = NULL;
        }
        free(body);
        count++;
    }
    CHECK(count == 20);
    payidem_verifier_free(verifier);
}

static void test_vectors_decide(void) {
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(vectors, "decide");
    const cJSON *c;
    int count = 0;
    CHECK(cJSON_GetArraySize(cases) == 21);
    cJSON_ArrayForEach(c, cases) {
        const cJSON *given = cJSON_GetObjectItemCaseSensitive(c, "given");
        const cJSON *expect = cJSON_GetObjectItemCaseSensitive(c, "expect");
        const cJSON *headers = cJSON_GetObjectItemCaseSensitive(given, "headers");
        const cJSON *status = cJSON_GetObjectItemCaseSensitive(given, "status");
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(given, "has_status_path");
        const char *outcome = jstr(given, "outcome");
        const char *want = jstr(expect, "decision");
        const cJSON *flag;
        payidem_header hs[8];
        size_t n = 0;
        uint32_t kind = 0;
        payidem_decision d;
        payidem_error *err = NULL;
        const cJSON *h;
        cJSON_ArrayForEach(h, headers) {
            if (n < 8) {
                hs[n].name = h->string;
                hs[n].value = h->valuestring;
                n++;
            }
        }
        if (strcmp(outcome, "response") == 0) kind = PAYIDEM_ATTEMPT_RESPONSE;
        if (strcmp(outcome, "not_sent") == 0) kind = PAYIDEM_ATTEMPT_NOT_SENT;
        if (strcmp(outcome, "sent_no_response") == 0) kind = PAYIDEM_ATTEMPT_SENT_NO_RESPONSE;
        memset(&d, 0xff, sizeof d);
        EXPECT_OK(payidem_decide(kind, status ? (uint16_t)status->valueint : 0,
                                 jstr(given, "error_code"), hs, n,
                                 cJSON_IsTrue(path), 1767225600u, &d, &err),
                  err);
        if (strcmp(want, "done") == 0) {
            CHECK(d.kind == PAYIDEM_DECISION_DONE);
            CHECK(d.replayed == cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(expect, "replayed")));
        } else if (strcmp(want, "fail") == 0) {
            CHECK(d.kind == PAYIDEM_DECISION_FAIL);
            CHECK_STR(payidem_result_name(d.failure), jstr(expect, "error"));
        } else if (strcmp(want, "retry_now") == 0) {
            CHECK(d.kind == PAYIDEM_DECISION_RETRY_NOW);
        } else if (strcmp(want, "retry_backoff") == 0) {
            flag = cJSON_GetObjectItemCaseSensitive(expect, "unknown");
            CHECK(d.kind == PAYIDEM_DECISION_RETRY_BACKOFF);
            /* The vectors' "unknown": true is payidem's "may have landed";
             * where they say nothing they assert nothing. */
            if (cJSON_IsTrue(flag)) {
                CHECK(d.landed == PAYIDEM_LANDED_MAYBE);
            }
        } else if (strcmp(want, "retry_after") == 0) {
            CHECK(d.kind == PAYIDEM_DECISION_RETRY_AFTER);
            CHECK(d.seconds == (uint64_t)cJSON_GetObjectItemCaseSensitive(expect, "seconds")->valuedouble);
        } else if (strcmp(want, "adjust_clock_retry") == 0) {
            CHECK(d.kind == PAYIDEM_DECISION_ADJUST_CLOCK_RETRY);
            CHECK(d.server_time == (uint64_t)cJSON_GetObjectItemCaseSensitive(expect, "server_time")->valuedouble);
        } else if (strcmp(want, "query_status") == 0) {
            CHECK(d.kind == PAYIDEM_DECISION_QUERY_STATUS);
        } else {
            fprintf(stderr, "  unknown decision %s\n", want);
            CHECK(0);
        }
        if (d.kind != PAYIDEM_DECISION_FAIL) {
            CHECK(d.failure == PAYIDEM_OK);
        }
        count++;
    }
    CHECK(count == 21);
}

/* ---- signing without vectors -------------------------------------------- */

static void test_sign_into_verifies_and_matches_the_handle_api(void) {
    payidem_signer *signer = new_signer();
    payidem_verifier *verifier = NULL;
    payidem_error *err = NULL;
    payidem_signed_headers out;
    payidem_header hs[5];
    const uint8_t *secrets[1];
    size_t lens[1];
    uint16_t status = 0;
    char sig[PAYIDEM_SIGNATURE_BUF_LEN];
    uint64_t now = 1767225600u;
    secrets[0] = SECRET;
    lens[0] = SECRET_LEN;
    EXPECT_OK(payidem_verifier_new(300, 100, &verifier, &err), err);
    EXPECT_OK(payidem_verifier_add_key(verifier, "key_live_1", secrets, lens, 1, &err), err);

    memset(&out, 'x', sizeof out);
    EXPECT_OK(payidem_signer_sign_into(signer, "POST", "/v1/payments", "create-ord-1",
                                       BODY, BODY_LEN, now, &out, &err),
              err);
    CHECK_STR(out.api_key, "key_live_1");
    CHECK_STR(out.timestamp, "1767225600");
    CHECK(strlen(out.nonce) == 36 && out.nonce[14] == '4');
    CHECK(strlen(out.signature) == 64);
    CHECK_STR(out.idempotency_key, "create-ord-1");
    /* The signature is the one of its own parts. */
    EXPECT_OK(payidem_signer_sign_parts(signer, "POST", "/v1/payments", out.timestamp,
                                        out.nonce, out.idempotency_key, BODY, BODY_LEN,
                                        sig, sizeof sig, &err),
              err);
    CHECK_STR(sig, out.signature);

    hs[0].name = PAYIDEM_HEADER_API_KEY;
    hs[0].value = out.api_key;
    hs[1].name = "x-timestamp"; /* names compare case-insensitively */
    hs[1].value = out.timestamp;
    hs[2].name = PAYIDEM_HEADER_NONCE;
    hs[2].value = out.nonce;
    hs[3].name = PAYIDEM_HEADER_SIGNATURE;
    hs[3].value = out.signature;
    hs[4].name = PAYIDEM_HEADER_IDEMPOTENCY_KEY;
    hs[4].value = out.idempotency_key;
    EXPECT_OK(payidem_verifier_verify(verifier, "POST", "/v1/payments", hs, 5, BODY,
                                      BODY_LEN, now + 10, &status, &err),
              err);
    CHECK(status == 200);
    /* The same nonce again is a replay. */
    EXPECT_ERR(payidem_verifier_verify(verifier, "POST", "/v1/payments", hs, 5, BODY,
                                       BODY_LEN, now + 11, &status, &err),
               err, PAYIDEM_NONCE_REUSED, NULL);
    CHECK(status == 409);

    /* A GET carries no key: four headers, an empty key field. */
    EXPECT_OK(payidem_signer_sign_into(signer, "GET", "/v1/payments/p1", "", NULL, 0,
                                       now, &out, &err),
              err);
    CHECK_STR(out.idempotency_key, "");
    EXPECT_OK(payidem_signer_sign_into(signer, "GET", "/v1/payments/p1", NULL, NULL, 0,
                                       now, &out, &err),
              err);
    CHECK_STR(out.idempotency_key, "");
    /* Two random nonces differ. */
    {
        payidem_signed_attempt *a = NULL, *b = NULL;
        EXPECT_OK(payidem_signer_sign_attempt(signer, "GET", "/v1/x", NULL, NULL, 0, now,
                                              &a, &err),
                  err);
        EXPECT_OK(payidem_signer_sign_attempt(signer, "GET", "/v1/x", NULL, NULL, 0, now,
                                              &b, &err),
                  err);
        CHECK(payidem_signed_attempt_header_count(a) == 4);
        CHECK(strcmp(payidem_signed_attempt_nonce(a), payidem_signed_attempt_nonce(b)) != 0);
        payidem_signed_attempt_free(a);
        payidem_signed_attempt_free(b);
    }
    payidem_verifier_free(verifier);
    payidem_signer_free(signer);
}

static void test_buffers_too_small_report_the_size(void) {
    char small[10];
    char sha[PAYIDEM_SHA256_HEX_BUF_LEN];
    size_t len = 0;
    payidem_error *err = NULL;
    payidem_signer *signer = new_signer();
    memset(small, 'z', sizeof small);
    EXPECT_ERR(payidem_canonical_string("GET", "/v1/x", "1", NONCE, NULL, NULL, 0, small,
                                        sizeof small, &len, &err),
               err, PAYIDEM_BUFFER_TOO_SMALL, "buf");
    CHECK(len == strlen("GET\n/v1/x\n1\n") + 36 + 1 + 1 + 64);
    CHECK(small[0] == 'z'); /* nothing written */
    EXPECT_ERR(payidem_body_sha256_hex(NULL, 0, sha, 64, &err), err,
               PAYIDEM_BUFFER_TOO_SMALL, "buf");
    EXPECT_OK(payidem_body_sha256_hex(NULL, 0, sha, 65, &err), err);
    CHECK_STR(sha, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_ERR(payidem_signer_sign_parts(signer, "GET", "/v1/x", "1", NONCE, NULL, NULL, 0,
                                         small, sizeof small, &err),
               err, PAYIDEM_BUFFER_TOO_SMALL, "buf");
    EXPECT_ERR(payidem_error_code_from_body((const uint8_t *)"{\"error\":{\"code\":\"nonce_reused\"}}",
                                            33, small, 5, &len, &err),
               err, PAYIDEM_BUFFER_TOO_SMALL, "buf");
    CHECK(len == strlen("nonce_reused"));
    EXPECT_OK(payidem_error_code_from_body((const uint8_t *)"{\"error\":{\"code\":\"nonce_reused\"}}",
                                           33, sha, sizeof sha, &len, &err),
              err);
    CHECK_STR(sha, "nonce_reused");
    EXPECT_OK(payidem_error_code_from_body((const uint8_t *)"<html>", 6, sha, sizeof sha,
                                           &len, &err),
              err);
    CHECK_STR(sha, "");
    CHECK(len == 0);
    payidem_signer_free(signer);
}

/* The journal key of a secret, as a client derives it: HMAC-SHA256(secret,
 * "payidem journal key v1") in hex (the value computed independently, with
 * Python's hmac module); a secret too short is named, never echoed. */
static void test_journal_key_derive(void) {
    const char *secret = "0123456789abcdef-secret";
    char hex[65];
    size_t len = 0;
    payidem_error *err = NULL;
    EXPECT_OK(payidem_journal_key_derive((const uint8_t *)secret, strlen(secret), hex, sizeof hex,
                                         &len, &err),
              err);
    CHECK(len == 64);
    CHECK_STR(hex, "b30fd426801b76e1a3e763e72dfe8e9beb092a610f820796e7d925a3e6481e70");
    EXPECT_ERR(payidem_journal_key_derive((const uint8_t *)secret, strlen(secret), hex, 64, &len,
                                          &err),
               err, PAYIDEM_BUFFER_TOO_SMALL, "buf");
    EXPECT_ERR(payidem_journal_key_derive((const uint8_t *)"short", 5, hex, sizeof hex, &len, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "secret");
    EXPECT_ERR(payidem_journal_key_derive(NULL, 16, hex, sizeof hex, &len, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "secret");
}

/* One redaction rule, the library's (Go's RedactURL prints through it and
 * runs every vector of core/tests/vectors/redact-v1.json). */
static void test_redact_url(void) {
    const char *pg = "postgres://alice:Hunter2Secret@db.internal:5432/pay";
    const char *libpq = "host=db user=alice password=Hunter2Secret dbname=pay";
    const char *api = "https://api.example.com";
    char shown[128];
    size_t len = 0;
    payidem_error *err = NULL;
    EXPECT_OK(payidem_redact_url(pg, shown, sizeof shown, &len, &err), err);
    CHECK_STR(shown, "postgres://***@db.internal:5432/pay");
    CHECK(len == strlen(shown));
    EXPECT_OK(payidem_redact_url(libpq, shown, sizeof shown, NULL, &err), err);
    CHECK_STR(shown, "host=db user=alice password=*** dbname=pay");
    EXPECT_OK(payidem_redact_url("/var/lib/payidem/journal.db", shown, sizeof shown, &len, &err),
              err);
    CHECK_STR(shown, "/var/lib/payidem/journal.db");
    /* Longer than its input: the length to retry with, and buf untouched. */
    strcpy(shown, "untouched");
    EXPECT_ERR(payidem_redact_url(api, shown, strlen(api) + 1, &len, &err), err,
               PAYIDEM_BUFFER_TOO_SMALL, "buf");
    CHECK(len == strlen("https://api.example.com/"));
    CHECK_STR(shown, "untouched");
    EXPECT_ERR(payidem_redact_url(NULL, shown, sizeof shown, &len, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "location");
    EXPECT_ERR(payidem_redact_url("postgres://u:\xff@h/db", shown, sizeof shown, &len, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "location");
}

/* Issue #14: verify_into returns what it verified; an empty Idempotency-Key
 * header is an error; remove_key; the verifier-wide nonce limit. */
static void sign_headers(payidem_signer *signer, const char *method, const char *key,
                         uint64_t now, payidem_signed_headers *out, payidem_header hs[5]) {
    payidem_error *err = NULL;
    EXPECT_OK(payidem_signer_sign_into(signer, method, "/v1/payments", key, BODY, BODY_LEN,
                                       now, out, &err),
              err);
    hs[0].name = PAYIDEM_HEADER_API_KEY;
    hs[0].value = out->api_key;
    hs[1].name = PAYIDEM_HEADER_TIMESTAMP;
    hs[1].value = out->timestamp;
    hs[2].name = PAYIDEM_HEADER_NONCE;
    hs[2].value = out->nonce;
    hs[3].name = PAYIDEM_HEADER_SIGNATURE;
    hs[3].value = out->signature;
    hs[4].name = PAYIDEM_HEADER_IDEMPOTENCY_KEY;
    hs[4].value = out->idempotency_key;
}

static void test_verify_into_remove_key_and_total_limit(void) {
    payidem_signer *signer = new_signer();
    payidem_verifier *verifier = NULL;
    payidem_error *err = NULL;
    payidem_signed_headers out;
    payidem_verified verified;
    payidem_header hs[5];
    const uint8_t *secrets[1];
    size_t lens[1];
    uint16_t status = 0;
    uint64_t now = 1767225600u;
    secrets[0] = SECRET;
    lens[0] = SECRET_LEN;
    EXPECT_OK(payidem_verifier_new(300, 100, &verifier, &err), err);
    EXPECT_OK(payidem_verifier_add_key(verifier, "key_live_1", secrets, lens, 1, &err), err);

    sign_headers(signer, "POST", "create-ord-7", now, &out, hs);
    memset(&verified, 'x', sizeof verified);
    EXPECT_OK(payidem_verifier_verify_into(verifier, "POST", "/v1/payments", hs, 5, BODY,
                                           BODY_LEN, now, &verified, &status, &err),
              err);
    CHECK(status == 200);
    CHECK_STR(verified.key_id, "key_live_1");
    CHECK_STR(verified.idempotency_key, "create-ord-7");
    CHECK_STR(verified.nonce, out.nonce);
    CHECK(verified.timestamp == now);
    EXPECT_ERR(payidem_verifier_verify_into(verifier, "POST", "/v1/payments", hs, 5, BODY,
                                            BODY_LEN, now, NULL, &status, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "verified_out");

    /* A GET with an empty Idempotency-Key header: an error, not skipped. */
    sign_headers(signer, "GET", NULL, now, &out, hs);
    CHECK_STR(hs[4].value, "");
    EXPECT_ERR(payidem_verifier_verify_into(verifier, "GET", "/v1/payments", hs, 5, BODY,
                                            BODY_LEN, now, &verified, &status, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "idempotency_key");
    CHECK(status == 400);
    /* Without it, the GET verifies and carries no key. */
    sign_headers(signer, "GET", NULL, now, &out, hs);
    EXPECT_OK(payidem_verifier_verify_into(verifier, "GET", "/v1/payments", hs, 4, BODY,
                                           BODY_LEN, now, &verified, &status, &err),
              err);
    CHECK_STR(verified.idempotency_key, "");

    /* A clock stepped back answers with the newest time it saw. */
    sign_headers(signer, "POST", "k", now - 350, &out, hs);
    EXPECT_ERR(payidem_verifier_verify_into(verifier, "POST", "/v1/payments", hs, 5, BODY,
                                            BODY_LEN, now - 120, &verified, &status, &err),
               err, PAYIDEM_TIMESTAMP_OUT_OF_WINDOW, NULL);
    CHECK(status == 401);

    /* remove_key */
    EXPECT_OK(payidem_verifier_remove_key(verifier, "key_live_1", &err), err);
    sign_headers(signer, "POST", "k", now, &out, hs);
    EXPECT_ERR(payidem_verifier_verify(verifier, "POST", "/v1/payments", hs, 5, BODY,
                                       BODY_LEN, now, &status, &err),
               err, PAYIDEM_UNKNOWN_API_KEY, NULL);
    EXPECT_ERR(payidem_verifier_remove_key(verifier, "key_live_1", &err), err,
               PAYIDEM_INVALID_ARGUMENT, "key_id");
    EXPECT_ERR(payidem_verifier_remove_key(NULL, "key_live_1", &err), err,
               PAYIDEM_INVALID_ARGUMENT, "verifier");
    EXPECT_ERR(payidem_verifier_remove_key(verifier, NULL, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "key_id");

    /* The verifier-wide limit. */
    EXPECT_OK(payidem_verifier_add_key(verifier, "key_live_1", secrets, lens, 1, &err), err);
    EXPECT_ERR(payidem_verifier_set_nonce_capacity_total(verifier, 0, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "nonce_capacity_total");
    EXPECT_OK(payidem_verifier_set_nonce_capacity_total(verifier, 1, &err), err);
    sign_headers(signer, "POST", "k1", now, &out, hs);
    EXPECT_OK(payidem_verifier_verify(verifier, "POST", "/v1/payments", hs, 5, BODY, BODY_LEN,
                                      now, &status, &err),
              err);
    sign_headers(signer, "POST", "k2", now, &out, hs);
    EXPECT_ERR(payidem_verifier_verify(verifier, "POST", "/v1/payments", hs, 5, BODY,
                                       BODY_LEN, now, &status, &err),
               err, PAYIDEM_REPLAY_CACHE_FULL, NULL);
    CHECK(status == 503);

    payidem_verifier_free(verifier);
    payidem_signer_free(signer);
}

static void test_verifier_reaches_every_verification_code(void) {
    payidem_signer *signer = new_signer();
    payidem_verifier *verifier = NULL, *tiny = NULL;
    payidem_error *err = NULL;
    payidem_signed_headers s;
    payidem_header hs[5];
    const uint8_t *secrets[2];
    size_t lens[2];
    uint16_t status = 0;
    uint64_t now = 1800000000u;
    secrets[0] = SECRET;
    lens[0] = SECRET_LEN;
    EXPECT_OK(payidem_verifier_new(300, 100, &verifier, &err), err);
    EXPECT_OK(payidem_verifier_add_key(verifier, "key_live_1", secrets, lens, 1, &err), err);
    EXPECT_ERR(payidem_verifier_add_key(verifier, "key_live_1", secrets, lens, 1, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "key_id");
    EXPECT_ERR(payidem_verifier_add_key(verifier, "key_2", secrets, lens, 0, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "secrets");
    EXPECT_OK(payidem_signer_sign_into(signer, "POST", "/v1/p", "k-1", BODY, BODY_LEN, now,
                                       &s, &err),
              err);
    hs[0].name = "X-Api-Key";
    hs[0].value = s.api_key;
    hs[1].name = "X-Timestamp";
    hs[1].value = s.timestamp;
    hs[2].name = "X-Nonce";
    hs[2].value = s.nonce;
    hs[3].name = "X-Signature";
    hs[3].value = s.signature;
    hs[4].name = "Idempotency-Key";
    hs[4].value = s.idempotency_key;

    EXPECT_ERR(payidem_verifier_verify(verifier, "POST", "/v1/p", hs, 3, BODY, BODY_LEN,
                                       now, &status, &err),
               err, PAYIDEM_MISSING_SIGNATURE, NULL);
    CHECK(status == 401);
    hs[0].value = "key_other";
    EXPECT_ERR(payidem_verifier_verify(verifier, "POST", "/v1/p", hs, 5, BODY, BODY_LEN,
                                       now, &status, &err),
               err, PAYIDEM_UNKNOWN_API_KEY, NULL);
    hs[0].value = s.api_key;
    EXPECT_ERR(payidem_verifier_verify(verifier, "POST", "/v1/p", hs, 5, BODY, BODY_LEN,
                                       now + 301, &status, &err),
               err, PAYIDEM_TIMESTAMP_OUT_OF_WINDOW, NULL);
    CHECK(status == 401);
    EXPECT_ERR(payidem_verifier_verify(verifier, "POST", "/v1/p", hs, 5, BODY, BODY_LEN - 1,
                                       now, &status, &err),
               err, PAYIDEM_INVALID_SIGNATURE, NULL);
    /* Rotation: a new secret only, the old signature no longer matches. */
    secrets[0] = (const uint8_t *)"another_secret_of_enough_length";
    lens[0] = strlen((const char *)secrets[0]);
    EXPECT_OK(payidem_verifier_set_secrets(verifier, "key_live_1", secrets, lens, 1, &err), err);
    EXPECT_ERR(payidem_verifier_verify(verifier, "POST", "/v1/p", hs, 5, BODY, BODY_LEN, now,
                                       &status, &err),
               err, PAYIDEM_INVALID_SIGNATURE, NULL);
    secrets[1] = SECRET;
    lens[1] = SECRET_LEN;
    EXPECT_OK(payidem_verifier_set_secrets(verifier, "key_live_1", secrets, lens, 2, &err), err);
    EXPECT_OK(payidem_verifier_verify(verifier, "POST", "/v1/p", hs, 5, BODY, BODY_LEN, now,
                                      &status, &err),
              err);
    EXPECT_ERR(payidem_verifier_verify(verifier, "POST", "/v1/p", hs, 5, BODY, BODY_LEN, now,
                                       &status, &err),
               err, PAYIDEM_NONCE_REUSED, NULL);
    EXPECT_ERR(payidem_verifier_set_secrets(verifier, "key_unknown", secrets, lens, 1, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "key_id");

    /* A POST signed without a key. */
    {
        char sig[PAYIDEM_SIGNATURE_BUF_LEN];
        EXPECT_OK(payidem_signer_sign_parts(signer, "POST", "/v1/p", s.timestamp,
                                            "11111111-2222-4333-8444-555555555555", "",
                                            BODY, BODY_LEN, sig, sizeof sig, &err),
                  err);
        hs[2].value = "11111111-2222-4333-8444-555555555555";
        hs[3].value = sig;
        EXPECT_ERR(payidem_verifier_verify(verifier, "POST", "/v1/p", hs, 4, BODY, BODY_LEN,
                                           now, &status, &err),
                   err, PAYIDEM_IDEMPOTENCY_KEY_REQUIRED, NULL);
        CHECK(status == 400);
    }

    /* A cache of one nonce fails closed on the second. */
    secrets[0] = SECRET;
    lens[0] = SECRET_LEN;
    EXPECT_OK(payidem_verifier_new(300, 1, &tiny, &err), err);
    EXPECT_OK(payidem_verifier_add_key(tiny, "key_live_1", secrets, lens, 1, &err), err);
    hs[2].value = s.nonce;
    hs[3].value = s.signature;
    EXPECT_OK(payidem_verifier_verify(tiny, "POST", "/v1/p", hs, 5, BODY, BODY_LEN, now,
                                      &status, &err),
              err);
    EXPECT_OK(payidem_signer_sign_into(signer, "POST", "/v1/p", "k-1", BODY, BODY_LEN, now,
                                       &s, &err),
              err);
    hs[2].value = s.nonce;
    hs[3].value = s.signature;
    EXPECT_ERR(payidem_verifier_verify(tiny, "POST", "/v1/p", hs, 5, BODY, BODY_LEN, now,
                                       &status, &err),
               err, PAYIDEM_REPLAY_CACHE_FULL, NULL);
    CHECK(status == 503);
    EXPECT_ERR(payidem_verifier_new(300, 0, &tiny, &err), err, PAYIDEM_INVALID_ARGUMENT,
               "nonce_capacity_per_key");
    payidem_verifier_free(tiny);
    payidem_verifier_free(verifier);
    payidem_signer_free(signer);
}

/* ---- NULL, bad lengths, bad UTF-8 ---------------------------------------- */

static void test_null_and_bad_lengths_are_named(void) {
    payidem_signer *signer = new_signer();
    payidem_signer *no_signer = NULL;
    payidem_verifier *verifier = NULL;
    payidem_error *err = NULL;
    payidem_signed_attempt *attempt = NULL;
    payidem_signed_headers sh;
    payidem_decision d;
    payidem_header bad_header;
    char buf[256];
    size_t len;
    uint16_t status;
    const uint8_t *secrets[1];
    size_t lens[1];
    const char *name, *value;
    secrets[0] = SECRET;
    lens[0] = SECRET_LEN;

    /* signer_new */
    EXPECT_ERR(payidem_signer_new(NULL, SECRET, SECRET_LEN, &no_signer, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "key_id");
    EXPECT_ERR(payidem_signer_new("k", NULL, SECRET_LEN, &no_signer, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "secret");
    EXPECT_ERR(payidem_signer_new("k", NULL, 0, &no_signer, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "secret");
    EXPECT_ERR(payidem_signer_new("k", SECRET, SECRET_LEN, NULL, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "signer_out");
    EXPECT_ERR(payidem_signer_new("k", SECRET, (size_t)-1, &no_signer, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "secret");
    EXPECT_ERR(payidem_signer_new("key id", SECRET, SECRET_LEN, &no_signer, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "key_id");
    CHECK(no_signer == NULL);
    /* A NULL err_out is allowed. */
    CHECK(payidem_signer_new(NULL, SECRET, SECRET_LEN, &no_signer, NULL) ==
          PAYIDEM_INVALID_ARGUMENT);

    /* sign_attempt and friends */
    EXPECT_ERR(payidem_signer_sign_attempt(NULL, "GET", "/x", NULL, NULL, 0, 1, &attempt, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "signer");
    EXPECT_ERR(payidem_signer_sign_attempt(signer, NULL, "/x", NULL, NULL, 0, 1, &attempt, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "method");
    EXPECT_ERR(payidem_signer_sign_attempt(signer, "GET", NULL, NULL, NULL, 0, 1, &attempt, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "path");
    EXPECT_ERR(payidem_signer_sign_attempt(signer, "GET", "/x", NULL, NULL, 3, 1, &attempt, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "body");
    EXPECT_ERR(payidem_signer_sign_attempt(signer, "GET", "/x", NULL, BODY, (size_t)-1, 1,
                                           &attempt, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "body");
    EXPECT_ERR(payidem_signer_sign_attempt(signer, "GET", "/x", NULL, NULL, 0, 1, NULL, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "attempt_out");
    EXPECT_ERR(payidem_signer_sign_attempt(signer, "POST", "/x", NULL, BODY, BODY_LEN, 1,
                                           &attempt, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "idempotency_key");
    EXPECT_ERR(payidem_signer_sign_attempt(signer, "GET", "/x", "bad key", NULL, 0, 1, &attempt,
                                           &err),
               err, PAYIDEM_INVALID_ARGUMENT, "idempotency_key");
    CHECK(attempt == NULL);
    EXPECT_ERR(payidem_signer_sign_attempt_with_nonce(signer, "GET", "/x", NULL, NULL, 0, 1,
                                                      NULL, &attempt, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "nonce");
    EXPECT_ERR(payidem_signer_sign_attempt_with_nonce(signer, "GET", "/x", NULL, NULL, 0, 1,
                                                      "not-a-nonce", &attempt, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "nonce");
    EXPECT_ERR(payidem_signer_sign_attempt_with_nonce(signer, "GET", "/x", NULL, NULL, 0, 1,
                                                      NONCE, NULL, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "attempt_out");
    EXPECT_ERR(payidem_signer_sign_into(signer, "GET", "/x", NULL, NULL, 0, 1, NULL, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "headers_out");
    EXPECT_ERR(payidem_signer_sign_into(NULL, "GET", "/x", NULL, NULL, 0, 1, &sh, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "signer");
    EXPECT_ERR(payidem_signer_sign_into(signer, "get", "/x", NULL, NULL, 0, 1, &sh, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "method");
    EXPECT_ERR(payidem_signer_sign_parts(NULL, "GET", "/x", "1", NONCE, NULL, NULL, 0, buf,
                                         sizeof buf, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "signer");
    EXPECT_ERR(payidem_signer_sign_parts(signer, "GET", "/x", NULL, NONCE, NULL, NULL, 0, buf,
                                         sizeof buf, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "timestamp");
    EXPECT_ERR(payidem_signer_sign_parts(signer, "GET", "/x", "1", NONCE, NULL, NULL, 0, NULL,
                                         sizeof buf, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "buf");
    EXPECT_ERR(payidem_canonical_string(NULL, "/x", "1", NONCE, NULL, NULL, 0, buf, sizeof buf,
                                        &len, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "method");
    EXPECT_ERR(payidem_canonical_string("GET", "/x", "1", NULL, NULL, NULL, 0, buf, sizeof buf,
                                        &len, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "nonce");
    EXPECT_ERR(payidem_canonical_string("GET", "/x", "1", NONCE, NULL, NULL, 0, NULL, 10, &len,
                                        &err),
               err, PAYIDEM_INVALID_ARGUMENT, "buf");
    EXPECT_ERR(payidem_canonical_string("GET", "/x", "1", NONCE, NULL, NULL, 9, buf, sizeof buf,
                                        &len, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "body");
    EXPECT_OK(payidem_canonical_string("GET", "/x", "1", NONCE, NULL, NULL, 0, buf, sizeof buf,
                                       NULL, &err),
              err);
    EXPECT_ERR(payidem_body_sha256_hex(NULL, 1, buf, sizeof buf, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "body");
    EXPECT_ERR(payidem_body_sha256_hex(BODY, BODY_LEN, NULL, 65, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "buf");
    EXPECT_ERR(payidem_error_code_from_body(NULL, 4, buf, sizeof buf, &len, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "body");
    EXPECT_ERR(payidem_error_code_from_body(BODY, BODY_LEN, NULL, 4, &len, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "buf");

    /* Invalid UTF-8 is named. */
    EXPECT_ERR(payidem_signer_sign_into(signer, "GET", "/\xff", NULL, NULL, 0, 1, &sh, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "path");
    EXPECT_ERR(payidem_signer_new("\xc3(", SECRET, SECRET_LEN, &no_signer, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "key_id");

    /* signed attempt accessors */
    EXPECT_ERR(payidem_signed_attempt_header_at(NULL, 0, &name, &value, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "attempt");
    EXPECT_OK(payidem_signer_sign_attempt(signer, "GET", "/x", NULL, NULL, 0, 1, &attempt, &err),
              err);
    EXPECT_ERR(payidem_signed_attempt_header_at(attempt, 0, NULL, &value, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "name_out");
    EXPECT_ERR(payidem_signed_attempt_header_at(attempt, 0, &name, NULL, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "value_out");
    payidem_signed_attempt_free(attempt);
    CHECK(payidem_signed_attempt_header_count(NULL) == 0);
    CHECK(payidem_signed_attempt_timestamp(NULL) == 0);
    CHECK(payidem_signed_attempt_nonce(NULL) == NULL);
    CHECK(payidem_signed_attempt_signature(NULL) == NULL);

    /* verifier */
    EXPECT_ERR(payidem_verifier_new(300, 10, NULL, &err), err, PAYIDEM_INVALID_ARGUMENT,
               "verifier_out");
    EXPECT_OK(payidem_verifier_new(300, 10, &verifier, &err), err);
    EXPECT_ERR(payidem_verifier_add_key(NULL, "k", secrets, lens, 1, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "verifier");
    EXPECT_ERR(payidem_verifier_add_key(verifier, NULL, secrets, lens, 1, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "key_id");
    EXPECT_ERR(payidem_verifier_add_key(verifier, "k", NULL, lens, 1, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "secrets");
    EXPECT_ERR(payidem_verifier_add_key(verifier, "k", secrets, NULL, 1, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "secret_lens");
    {
        const uint8_t *null_secret[1];
        null_secret[0] = NULL;
        EXPECT_ERR(payidem_verifier_add_key(verifier, "k", null_secret, lens, 1, &err), err,
                   PAYIDEM_INVALID_ARGUMENT, "secrets[0]");
    }
    lens[0] = 3;
    EXPECT_ERR(payidem_verifier_add_key(verifier, "k", secrets, lens, 1, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "secret");
    lens[0] = SECRET_LEN;
    EXPECT_ERR(payidem_verifier_set_secrets(NULL, "k", secrets, lens, 1, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "verifier");
    EXPECT_ERR(payidem_verifier_verify(NULL, "GET", "/x", NULL, 0, NULL, 0, 1, &status, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "verifier");
    CHECK(status == 400);
    EXPECT_ERR(payidem_verifier_verify(verifier, NULL, "/x", NULL, 0, NULL, 0, 1, &status, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "method");
    EXPECT_ERR(payidem_verifier_verify(verifier, "GET", NULL, NULL, 0, NULL, 0, 1, &status,
                                       &err),
               err, PAYIDEM_INVALID_ARGUMENT, "path");
    EXPECT_ERR(payidem_verifier_verify(verifier, "GET", "/x", NULL, 2, NULL, 0, 1, &status,
                                       &err),
               err, PAYIDEM_INVALID_ARGUMENT, "headers");
    bad_header.name = "X-Nonce";
    bad_header.value = NULL;
    EXPECT_ERR(payidem_verifier_verify(verifier, "GET", "/x", &bad_header, 1, NULL, 0, 1,
                                       &status, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "headers[0].value");
    EXPECT_ERR(payidem_verifier_verify(verifier, "GET", "/x", NULL, 0, NULL, 5, 1, NULL, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "body");
    /* Bytes from the network that are not UTF-8 are no argument error. */
    bad_header.value = "\xff\xfe";
    EXPECT_ERR(payidem_verifier_verify(verifier, "GET", "/x", &bad_header, 1, NULL, 0, 1,
                                       &status, &err),
               err, PAYIDEM_MISSING_SIGNATURE, NULL);
    payidem_verifier_free(verifier);

    /* decide */
    EXPECT_ERR(payidem_decide(PAYIDEM_ATTEMPT_RESPONSE, 200, NULL, NULL, 0, false, 1, NULL, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "decision_out");
    EXPECT_ERR(payidem_decide(0, 200, NULL, NULL, 0, false, 1, &d, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "outcome");
    EXPECT_ERR(payidem_decide(4, 200, NULL, NULL, 0, false, 1, &d, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "outcome");
    EXPECT_ERR(payidem_decide(PAYIDEM_ATTEMPT_RESPONSE, 200, NULL, NULL, 1, false, 1, &d, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "headers");
    EXPECT_ERR(payidem_decide(PAYIDEM_ATTEMPT_RESPONSE, 409, "\xff", NULL, 0, false, 1, &d, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "error_code");

    /* error accessors on NULL */
    CHECK(payidem_error_code(NULL) == PAYIDEM_OK);
    CHECK(payidem_error_message(NULL) == NULL);
    CHECK(payidem_error_field(NULL) == NULL);
    CHECK(payidem_error_http_status(NULL) == 0);
    CHECK(payidem_error_order_id(NULL) == NULL);
    CHECK(payidem_error_idempotency_key(NULL) == NULL);
    {
        const uint8_t *body = NULL;
        uint64_t t = 0;
        CHECK(!payidem_error_body(NULL, &body, &len));
        CHECK(!payidem_error_server_time(NULL, &t));
    }

    /* outcome and list accessors on NULL */
    CHECK(payidem_outcome_http_status(NULL) == 0);
    CHECK(!payidem_outcome_replayed(NULL));
    CHECK(payidem_outcome_order_id(NULL) == NULL);
    CHECK(payidem_outcome_idempotency_key(NULL) == NULL);
    CHECK(payidem_outcome_attempts(NULL) == 0);
    CHECK(payidem_outcome_header_count(NULL) == 0);
    {
        const uint8_t *body = NULL;
        CHECK(!payidem_outcome_body(NULL, &body, &len));
    }
    EXPECT_ERR(payidem_outcome_header_at(NULL, 0, &name, &value, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "outcome");
    CHECK(payidem_order_list_len(NULL) == 0);
    CHECK(payidem_order_list_get(NULL, 0) == NULL);

    /* every free takes NULL */
    payidem_error_free(NULL);
    payidem_signer_free(NULL);
    payidem_signed_attempt_free(NULL);
    payidem_verifier_free(NULL);
    payidem_client_free(NULL);
    payidem_outcome_free(NULL);
    payidem_order_list_free(NULL);
    payidem_client_set_event_callback(NULL, NULL, NULL);
    payidem_signer_free(signer);
}

static void test_client_options_are_checked(void) {
    payidem_client *client = NULL;
    payidem_error *err = NULL;
    const uint8_t *s = (const uint8_t *)MOCK_SECRET;
    size_t n = strlen(MOCK_SECRET);
    const char *memory = "\"journal_path\":\":memory:\"";
    char json[512];
    EXPECT_ERR(payidem_client_new(NULL, s, n, &client, &err), err, PAYIDEM_INVALID_ARGUMENT,
               "options_json");
    EXPECT_ERR(payidem_client_new("{\"base_url\":\"http://127.0.0.1:1\",\"key_id\":\"k\"}", NULL,
                                  n, &client, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "secret");
    EXPECT_ERR(payidem_client_new("{\"base_url\":\"http://127.0.0.1:1\",\"key_id\":\"k\"}", s, n,
                                  NULL, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "client_out");
    EXPECT_ERR(payidem_client_new("not json", s, n, &client, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "options_json");
    EXPECT_ERR(payidem_client_new("{\"key_id\":\"k\"}", s, n, &client, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "base_url");
    snprintf(json, sizeof json, "{\"base_url\":\"http://127.0.0.1:1\",\"key_id\":\"k\",%s,\"bogus\":1}", memory);
    EXPECT_ERR(payidem_client_new(json, s, n, &client, &err), err, PAYIDEM_INVALID_ARGUMENT,
               "bogus");
    snprintf(json, sizeof json, "{\"base_url\":\"http://127.0.0.1:1\",\"key_id\":\"k\",%s,\"retry\":{\"bogus\":1}}", memory);
    EXPECT_ERR(payidem_client_new(json, s, n, &client, &err), err, PAYIDEM_INVALID_ARGUMENT,
               "retry.bogus");
    snprintf(json, sizeof json, "{\"base_url\":\"http://127.0.0.1:1\",\"key_id\":\"k\",%s,\"retry\":{\"max_attempts\":0}}", memory);
    EXPECT_ERR(payidem_client_new(json, s, n, &client, &err), err, PAYIDEM_INVALID_ARGUMENT,
               "retry.max_attempts");
    snprintf(json, sizeof json, "{\"base_url\":\"http://127.0.0.1:1\",\"key_id\":\"k\",%s,\"key_retention_s\":172801}", memory);
    EXPECT_ERR(payidem_client_new(json, s, n, &client, &err), err, PAYIDEM_INVALID_ARGUMENT,
               "key_retention_s");
    snprintf(json, sizeof json, "{\"base_url\":\"http://127.0.0.1:1\",\"key_id\":\"k\",%s,\"request_timeout_ms\":\"5\"}", memory);
    EXPECT_ERR(payidem_client_new(json, s, n, &client, &err), err, PAYIDEM_INVALID_ARGUMENT,
               "request_timeout_ms");
    snprintf(json, sizeof json, "{\"base_url\":\"http://127.0.0.1:1\",\"key_id\":\"key id\",%s}", memory);
    EXPECT_ERR(payidem_client_new(json, s, n, &client, &err), err, PAYIDEM_INVALID_ARGUMENT,
               "key_id");
    EXPECT_ERR(payidem_client_new("{\"base_url\":\"http://127.0.0.1:1\",\"key_id\":\"k\","
                                  "\"journal_path\":\"/nonexistent-payidem-dir/sub/j.sqlite3\"}",
                                  s, n, &client, &err),
               err, PAYIDEM_JOURNAL_ERROR, NULL);
    CHECK(client == NULL);
}

/* The defaults document: every option at its default, accepted as is by
 * payidem_client_new once base_url and key_id are added. */
static void test_client_defaults_json(void) {
    static const char *const keys[] = {
        "journal_path", "journal_key_hex", "connect_timeout_ms", "request_timeout_ms", "retry",
        "retry_budget", "key_retention_s", "settled_retention_s", "max_clock_offset_s", "lease_ttl_s",
        "lease_heartbeat_ms", "allow_insecure_http", "proxy", "proxy_from_env", "ca_bundle", "client_cert", "client_key"};
    const char *text = payidem_client_defaults_json();
    cJSON *doc, *options;
    payidem_client *client = NULL;
    payidem_error *err = NULL;
    char *json;
    unsigned i;
    CHECK(text != NULL);
    CHECK(text == payidem_client_defaults_json());
    if (text == NULL || (doc = cJSON_Parse(text)) == NULL) {
        CHECK(!"defaults are JSON");
        return;
    }
    options = cJSON_GetObjectItemCaseSensitive(doc, "options");
    CHECK(cJSON_IsObject(options));
    CHECK(cJSON_GetArraySize(options) == (int)(sizeof keys / sizeof keys[0]));
    for (i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        CHECK(cJSON_GetObjectItemCaseSensitive(options, keys[i]) != NULL);
    }
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
              cJSON_GetObjectItemCaseSensitive(options, "retry"), "max_attempts")) >= 1);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "memory_journal")),
              ":memory:");
    /* Every default given explicitly makes a client (memory journal: the
     * durable default would write under $HOME). */
    cJSON_AddStringToObject(options, "base_url", "http://127.0.0.1:1");
    cJSON_AddStringToObject(options, "key_id", MOCK_KEY_ID);
    cJSON_ReplaceItemInObjectCaseSensitive(
        options, "journal_path",
        cJSON_CreateString(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "memory_journal"))));
    json = cJSON_PrintUnformatted(options);
    EXPECT_OK(payidem_client_new(json, (const uint8_t *)MOCK_SECRET, strlen(MOCK_SECRET),
                                 &client, &err),
              err);
    CHECK(client != NULL);
    payidem_client_free(client);
    free(json);
    cJSON_Delete(doc);
}

#ifndef _WIN32
/* ---- end to end against payidem-mock ----------------------------------- */

static struct mock mock_ok;
static int mock_ok_started;

struct events {
    int count;
    int settled;
    char last_order[64];
    uint16_t last_status;
};

static void on_event(void *userdata, const payidem_attempt_event *ev) {
    struct events *e = userdata;
    e->count++;
    snprintf(e->last_order, sizeof e->last_order, "%s", ev->order_id);
    e->last_status = ev->http_status;
    if (ev->next == PAYIDEM_NEXT_SETTLE && ev->kind == PAYIDEM_ATTEMPT_KIND_OPERATION) {
        e->settled++;
    }
}

static void payment_body(char *buf, size_t len, const char *order, long amount) {
    snprintf(buf, len, "{\"order_id\":\"%s\",\"amount\":%ld,\"currency\":\"EUR\"}", order, amount);
}

static void status_path(char *buf, size_t len, const char *order) {
    snprintf(buf, len, "/v1/payments?order_id=%s", order);
}

/* Transport options (#14): https required except loopback, explicit
 * proxies, TLS files checked when the client is made; a payment with proxy
 * variables in the environment goes straight to the platform. */
static void test_client_transport_options(void) {
    payidem_client *client = NULL;
    payidem_error *err = NULL;
    payidem_outcome *outcome = NULL;
    const uint8_t *s = (const uint8_t *)MOCK_SECRET;
    size_t n = strlen(MOCK_SECRET);
    char body[128];
    payidem_result rc;
    rc = payidem_client_new("{\"base_url\":\"http://api.example.com\",\"key_id\":\"k\","
                            "\"journal_path\":\":memory:\"}",
                            s, n, &client, &err);
    /* A local error: nothing was sent, so no HTTP status, no platform error. */
    CHECK(payidem_error_http_status(err) == 0);
    CHECK(payidem_error_platform_code(err) == NULL);
    CHECK(payidem_error_platform_message(err) == NULL);
    EXPECT_ERR(rc, err, PAYIDEM_INVALID_ARGUMENT, "base_url");
    EXPECT_OK(payidem_client_new("{\"base_url\":\"http://api.example.com\",\"key_id\":\"k\","
                                 "\"journal_path\":\":memory:\",\"allow_insecure_http\":true,"
                                 "\"proxy\":\"http://127.0.0.1:3128\",\"proxy_from_env\":true,"
                                 "\"max_clock_offset_s\":900}",
                                 s, n, &client, &err),
              err);
    CHECK(client != NULL);
    payidem_client_free(client);
    client = NULL;
    EXPECT_ERR(payidem_client_new("{\"base_url\":\"https://api.example.com\",\"key_id\":\"k\","
                                  "\"journal_path\":\":memory:\",\"allow_insecure_http\":\"yes\"}",
                                  s, n, &client, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "allow_insecure_http");
    EXPECT_ERR(payidem_client_new("{\"base_url\":\"https://api.example.com\",\"key_id\":\"k\","
                                  "\"journal_path\":\":memory:\",\"proxy\":\"socks5://127.0.0.1:1\"}",
                                  s, n, &client, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "proxy");
    EXPECT_ERR(payidem_client_new("{\"base_url\":\"https://api.example.com\",\"key_id\":\"k\","
                                  "\"journal_path\":\":memory:\","
                                  "\"ca_bundle\":\"/nonexistent-payidem/ca.pem\"}",
                                  s, n, &client, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "ca_bundle");
    EXPECT_ERR(payidem_client_new("{\"base_url\":\"https://api.example.com\",\"key_id\":\"k\","
                                  "\"journal_path\":\":memory:\","
                                  "\"client_cert\":\"/nonexistent-payidem/client.pem\"}",
                                  s, n, &client, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "client_key");
    CHECK(client == NULL);

    /* Proxy variables pointing at nothing are ignored by default. */
    CHECK(mock_ok_started);
    if (!mock_ok_started) return;
    setenv("HTTP_PROXY", "http://127.0.0.1:1", 1);
    setenv("http_proxy", "http://127.0.0.1:1", 1);
    setenv("ALL_PROXY", "http://127.0.0.1:1", 1);
    client = new_client(mock_ok.base_url, "");
    CHECK(client != NULL);
    if (client) {
        payment_body(body, sizeof body, "c-ord-env-proxy", 990);
        EXPECT_OK(payidem_client_execute(client, "c-ord-env-proxy", "POST", "/v1/payments",
                                         (const uint8_t *)body, strlen(body), NULL, NULL,
                                         &outcome, &err),
                  err);
        CHECK(outcome != NULL && payidem_outcome_http_status(outcome) == 201);
        payidem_outcome_free(outcome);
        payidem_client_free(client);
    }
    unsetenv("HTTP_PROXY");
    unsetenv("http_proxy");
    unsetenv("ALL_PROXY");
}

static void test_e2e_payment_succeeds_and_replays_from_the_journal(void) {
    payidem_client *client;
    payidem_outcome *outcome = NULL, *again = NULL;
    payidem_error *err = NULL;
    struct events events;
    char body[128], sp[128];
    const uint8_t *bytes = NULL;
    size_t len = 0, i;
    bool found = false;
    payidem_operation_state state = PAYIDEM_STATE_NOT_FOUND;
    uint32_t attempts = 0;
    int has_location = 0;
    CHECK(mock_ok_started);
    if (!mock_ok_started) return;
    client = new_client(mock_ok.base_url, "\"retry\":{\"base_ms\":5,\"cap_ms\":50}");
    CHECK(client != NULL);
    if (!client) return;
    memset(&events, 0, sizeof events);
    payidem_client_set_event_callback(client, on_event, &events);

    EXPECT_OK(payidem_client_status(client, "c-ord-1", &found, &state, &attempts, &err), err);
    CHECK(!found && state == PAYIDEM_STATE_NOT_FOUND && attempts == 0);

    payment_body(body, sizeof body, "c-ord-1", 1250);
    status_path(sp, sizeof sp, "c-ord-1");
    EXPECT_OK(payidem_client_execute(client, "c-ord-1", "POST", "/v1/payments",
                                     (const uint8_t *)body, strlen(body), NULL, sp, &outcome,
                                     &err),
              err);
    CHECK(outcome != NULL);
    if (outcome) {
        const char *name, *value;
        CHECK(payidem_outcome_http_status(outcome) == 201);
        CHECK(!payidem_outcome_replayed(outcome));
        CHECK_STR(payidem_outcome_order_id(outcome), "c-ord-1");
        CHECK_STR(payidem_outcome_idempotency_key(outcome), "create-c-ord-1");
        CHECK(payidem_outcome_attempts(outcome) == 1);
        CHECK(payidem_outcome_body(outcome, &bytes, &len));
        CHECK(len > 0 && bytes != NULL);
        if (bytes) {
            char *text = malloc(len + 1);
            memcpy(text, bytes, len);
            text[len] = '\0';
            CHECK(strstr(text, "\"payment_id\"") != NULL);
            CHECK(strstr(text, "c-ord-1") != NULL);
            free(text);
        }
        for (i = 0; i < payidem_outcome_header_count(outcome); i++) {
            EXPECT_OK(payidem_outcome_header_at(outcome, i, &name, &value, &err), err);
            if (name && strcasecmp(name, "Location") == 0 && strncmp(value, "/v1/payments/", 13) == 0) {
                has_location = 1;
            }
        }
        CHECK(has_location);
        EXPECT_ERR(payidem_outcome_header_at(outcome, i, &name, &value, &err), err,
                   PAYIDEM_INVALID_ARGUMENT, "index");
    }
    CHECK(events.count == 1 && events.settled == 1);
    CHECK_STR(events.last_order, "c-ord-1");
    CHECK(events.last_status == 201);

    /* The same operation again answers from the journal, no new attempt. */
    payidem_client_set_event_callback(client, NULL, NULL);
    EXPECT_OK(payidem_client_execute(client, "c-ord-1", "POST", "/v1/payments",
                                     (const uint8_t *)body, strlen(body), NULL, NULL, &again,
                                     &err),
              err);
    CHECK(payidem_outcome_http_status(again) == 201);
    CHECK(payidem_outcome_attempts(again) == 1);
    CHECK(events.count == 1);
    EXPECT_OK(payidem_client_status(client, "c-ord-1", &found, &state, &attempts, &err), err);
    CHECK(found && state == PAYIDEM_STATE_SUCCEEDED && attempts == 1);

    /* NULL arguments of the client functions. */
    EXPECT_ERR(payidem_client_execute(NULL, "o", "POST", "/v1/payments", NULL, 0, NULL, NULL,
                                      &outcome, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "client");
    EXPECT_ERR(payidem_client_execute(client, NULL, "POST", "/v1/payments", NULL, 0, NULL, NULL,
                                      &outcome, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "order_id");
    EXPECT_ERR(payidem_client_execute(client, "o", NULL, "/v1/payments", NULL, 0, NULL, NULL,
                                      &outcome, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "method");
    EXPECT_ERR(payidem_client_execute(client, "o", "POST", NULL, NULL, 0, NULL, NULL, &outcome,
                                      &err),
               err, PAYIDEM_INVALID_ARGUMENT, "path");
    EXPECT_ERR(payidem_client_execute(client, "o", "POST", "/v1/payments", NULL, 4, NULL, NULL,
                                      &outcome, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "body");
    EXPECT_ERR(payidem_client_execute(client, "o", "POST", "/v1/payments", NULL, 0, NULL, NULL,
                                      NULL, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "outcome_out");
    EXPECT_ERR(payidem_client_execute(client, "o d", "POST", "/v1/payments", NULL, 0, NULL, NULL,
                                      &outcome, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "order_id");
    EXPECT_ERR(payidem_client_execute(client, "o", "POST", "/v1/payments", NULL, 0, "\xff", NULL,
                                      &outcome, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "idempotency_key");
    EXPECT_ERR(payidem_client_execute_with_deadline(client, "o", "POST", "/v1/payments", NULL, 0,
                                                    NULL, "\xff", 0, NULL, NULL, &outcome, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "status_path");
    EXPECT_ERR(payidem_client_resume(NULL, "o", &outcome, &err), err, PAYIDEM_INVALID_ARGUMENT,
               "client");
    EXPECT_ERR(payidem_client_resume(client, NULL, &outcome, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "order_id");
    EXPECT_ERR(payidem_client_resume(client, "c-ord-1", NULL, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "outcome_out");
    EXPECT_ERR(payidem_client_status(NULL, "o", &found, &state, &attempts, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "client");
    EXPECT_ERR(payidem_client_status(client, NULL, &found, &state, &attempts, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "order_id");
    EXPECT_ERR(payidem_client_status(client, "o", NULL, &state, &attempts, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "found_out");
    EXPECT_ERR(payidem_client_status(client, "o", &found, NULL, &attempts, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "state_out");
    EXPECT_ERR(payidem_client_status(client, "o", &found, &state, NULL, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "attempts_out");
    EXPECT_ERR(payidem_client_list_unknown(NULL, NULL, &err), err, PAYIDEM_INVALID_ARGUMENT,
               "client");
    EXPECT_ERR(payidem_client_list_unknown(client, NULL, &err), err, PAYIDEM_INVALID_ARGUMENT,
               "list_out");

    payidem_outcome_free(outcome);
    payidem_outcome_free(again);
    payidem_client_free(client);
}

static void test_e2e_rejected_and_conflicts(void) {
    payidem_client *client;
    payidem_outcome *outcome = NULL;
    payidem_error *err = NULL;
    char body[128], other[128];
    const uint8_t *bytes = NULL;
    size_t len = 0;
    payidem_result rc;
    CHECK(mock_ok_started);
    if (!mock_ok_started) return;
    client = new_client(mock_ok.base_url, "");
    CHECK(client != NULL);
    if (!client) return;

    /* amount % 1000 == 402: a card decline, kept with status and body. */
    payment_body(body, sizeof body, "c-ord-declined", 1402);
    rc = payidem_client_execute(client, "c-ord-declined", "POST", "/v1/payments",
                                (const uint8_t *)body, strlen(body), NULL, NULL, &outcome, &err);
    CHECK(rc == PAYIDEM_REJECTED);
    CHECK(outcome == NULL);
    CHECK(payidem_error_http_status(err) == 402);
    /* The platform's code and message, read by the core from the body. */
    CHECK_STR(payidem_error_platform_code(err), "card_declined");
    CHECK_STR(payidem_error_platform_message(err), "the card was declined");
    CHECK(strstr(payidem_error_message(err),
                 "HTTP 402 card_declined: the card was declined (final)") != NULL);
    CHECK(payidem_error_body(err, &bytes, &len));
    CHECK(len > 0 && bytes != NULL && memchr(bytes, 'c', len) != NULL);
    if (bytes) {
        char *text = malloc(len + 1);
        memcpy(text, bytes, len);
        text[len] = '\0';
        CHECK(strstr(text, "card_declined") != NULL);
        free(text);
    }
    EXPECT_ERR(rc, err, PAYIDEM_REJECTED, NULL);

    /* A wrong secret: refused before the idempotency step, nothing
     * happened, not final; the right secret then pays it once. */
    {
        payidem_client *wrong = NULL;
        char json[512];
        const char *bad_secret = "not-the-mock-secret-0123456789";
        snprintf(json, sizeof json,
                 "{\"base_url\":\"%s\",\"key_id\":\"" MOCK_KEY_ID
                 "\",\"journal_path\":\":memory:\"}",
                 mock_ok.base_url);
        EXPECT_OK(payidem_client_new(json, (const uint8_t *)bad_secret, strlen(bad_secret),
                                     &wrong, &err),
                  err);
        payment_body(body, sizeof body, "c-ord-refused", 1000);
        rc = payidem_client_execute(wrong, "c-ord-refused", "POST", "/v1/payments",
                                    (const uint8_t *)body, strlen(body), NULL, NULL, &outcome,
                                    &err);
        CHECK(payidem_error_http_status(err) == 401);
        EXPECT_ERR(rc, err, PAYIDEM_REFUSED, NULL);
        payidem_client_free(wrong);
        EXPECT_OK(payidem_client_execute(client, "c-ord-refused", "POST", "/v1/payments",
                                         (const uint8_t *)body, strlen(body), NULL, NULL,
                                         &outcome, &err),
                  err);
        CHECK(payidem_outcome_http_status(outcome) == 201);
        payidem_outcome_free(outcome);
        outcome = NULL;
    }

    /* The same order id with another body: a local conflict, nothing sent. */
    payment_body(body, sizeof body, "c-ord-2", 2000);
    EXPECT_OK(payidem_client_execute(client, "c-ord-2", "POST", "/v1/payments",
                                     (const uint8_t *)body, strlen(body), NULL, NULL, &outcome,
                                     &err),
              err);
    payidem_outcome_free(outcome);
    outcome = NULL;
    payment_body(other, sizeof other, "c-ord-2", 3000);
    EXPECT_ERR(payidem_client_execute(client, "c-ord-2", "POST", "/v1/payments",
                                      (const uint8_t *)other, strlen(other), NULL, NULL,
                                      &outcome, &err),
               err, PAYIDEM_IDEMPOTENCY_CONFLICT, NULL);

    /* Another order reusing that key with another body: refused by the
     * journal, and by the platform for a client with another journal. */
    payment_body(other, sizeof other, "c-ord-3", 3000);
    EXPECT_ERR(payidem_client_execute(client, "c-ord-3", "POST", "/v1/payments",
                                      (const uint8_t *)other, strlen(other), "create-c-ord-2",
                                      NULL, &outcome, &err),
               err, PAYIDEM_IDEMPOTENCY_CONFLICT, NULL);
    payidem_client_free(client);
    client = new_client(mock_ok.base_url, "");
    CHECK(client != NULL);
    if (!client) return;
    rc = payidem_client_execute(client, "c-ord-3", "POST", "/v1/payments",
                                (const uint8_t *)other, strlen(other), "create-c-ord-2", NULL,
                                &outcome, &err);
    CHECK(payidem_error_http_status(err) == 409);
    CHECK(payidem_error_body(err, &bytes, &len));
    CHECK(len > 0 && bytes != NULL);
    EXPECT_ERR(rc, err, PAYIDEM_IDEMPOTENCY_CONFLICT, NULL);
    CHECK(outcome == NULL);
    payidem_client_free(client);
}

struct cancel_state {
    payidem_client *client;
    int polls;
    int answer;
    payidem_result inner;
};

static int cancel_now(void *userdata) {
    struct cancel_state *s = userdata;
    s->polls++;
    return s->answer;
}

/* Polled while the outer call holds the operation: a second call on the
 * same operation must be refused. */
static int execute_same_operation(void *userdata) {
    struct cancel_state *s = userdata;
    payidem_outcome *outcome = NULL;
    payidem_error *err = NULL;
    char body[128];
    if (s->polls++ == 0) {
        payment_body(body, sizeof body, "c-ord-busy", 1000);
        s->inner = payidem_client_execute(s->client, "c-ord-busy", "POST", "/v1/payments",
                                          (const uint8_t *)body, strlen(body), NULL, NULL,
                                          &outcome, &err);
        if (s->inner == PAYIDEM_OPERATION_BUSY && payidem_error_code(err) == PAYIDEM_OPERATION_BUSY) {
            reached[PAYIDEM_OPERATION_BUSY] = 1;
        }
        payidem_outcome_free(outcome);
        payidem_error_free(err);
    }
    return 0;
}

static void test_e2e_cancel_busy_and_transport(void) {
    payidem_client *client, *nowhere;
    payidem_outcome *outcome = NULL;
    payidem_error *err = NULL;
    struct cancel_state s;
    char body[128];
    payidem_result rc;
    bool found;
    payidem_operation_state state;
    uint32_t attempts;
    CHECK(mock_ok_started);
    if (!mock_ok_started) return;
    client = new_client(mock_ok.base_url, "");
    CHECK(client != NULL);
    if (!client) return;

    memset(&s, 0, sizeof s);
    s.client = client;
    s.answer = 1;
    payment_body(body, sizeof body, "c-ord-cancel", 1000);
    rc = payidem_client_execute_with_deadline(client, "c-ord-cancel", "POST", "/v1/payments",
                                              (const uint8_t *)body, strlen(body), NULL, NULL,
                                              5000, cancel_now, &s, &outcome, &err);
    CHECK(s.polls >= 1);
    CHECK_STR(payidem_error_order_id(err), "c-ord-cancel");
    CHECK_STR(payidem_error_idempotency_key(err), "create-c-ord-cancel");
    EXPECT_ERR(rc, err, PAYIDEM_CANCELLED, NULL);
    CHECK(outcome == NULL);
    EXPECT_OK(payidem_client_status(client, "c-ord-cancel", &found, &state, &attempts, &err), err);
    CHECK(found && attempts == 0);
    /* Nothing was sent: resuming runs it for real. */
    s.answer = 0;
    EXPECT_OK(payidem_client_resume_with_deadline(client, "c-ord-cancel", 5000, cancel_now, &s,
                                                  &outcome, &err),
              err);
    CHECK(payidem_outcome_http_status(outcome) == 201);
    payidem_outcome_free(outcome);
    outcome = NULL;

    memset(&s, 0, sizeof s);
    s.client = client;
    payment_body(body, sizeof body, "c-ord-busy", 1000);
    EXPECT_OK(payidem_client_execute_with_deadline(client, "c-ord-busy", "POST", "/v1/payments",
                                                   (const uint8_t *)body, strlen(body), NULL,
                                                   NULL, 0, execute_same_operation, &s,
                                                   &outcome, &err),
              err);
    CHECK(s.inner == PAYIDEM_OPERATION_BUSY);
    payidem_outcome_free(outcome);
    outcome = NULL;

    EXPECT_ERR(payidem_client_resume(client, "c-ord-never", &outcome, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "order_id");
    payidem_client_free(client);

    /* Nothing listens on port 1: the request is never sent. */
    nowhere = new_client("http://127.0.0.1:1", "\"retry\":{\"max_attempts\":1}");
    CHECK(nowhere != NULL);
    if (!nowhere) return;
    payment_body(body, sizeof body, "c-ord-nowhere", 1000);
    rc = payidem_client_execute(nowhere, "c-ord-nowhere", "POST", "/v1/payments",
                                (const uint8_t *)body, strlen(body), NULL, NULL, &outcome, &err);
    EXPECT_ERR(rc, err, PAYIDEM_TRANSPORT_ERROR, NULL);
    payidem_client_free(nowhere);
}

static void test_e2e_unknown_outcome_resume_and_key_expiry(void) {
    static const char *const faulty[] = {"--fault", "timeout_504_after_commit=1", NULL};
    struct mock m;
    payidem_client *client = NULL, *short_keys = NULL;
    payidem_outcome *outcome = NULL;
    payidem_order_list *list = NULL;
    payidem_error *err = NULL;
    char body[128];
    payidem_result rc;
    bool found;
    payidem_operation_state state;
    uint32_t attempts;
    CHECK(mock_start(&m, faulty) == 0);
    if (m.port <= 0) {
        mock_stop(&m);
        return;
    }
    client = new_client(m.base_url, "\"retry\":{\"base_ms\":1,\"cap_ms\":5,\"max_attempts\":2}");
    short_keys = new_client(m.base_url,
                            "\"retry\":{\"base_ms\":1,\"cap_ms\":5,\"max_attempts\":2},"
                            "\"key_retention_s\":1");
    CHECK(client != NULL && short_keys != NULL);
    if (client && short_keys) {
        payment_body(body, sizeof body, "c-ord-unknown", 1000);
        rc = payidem_client_execute(client, "c-ord-unknown", "POST", "/v1/payments",
                                    (const uint8_t *)body, strlen(body), NULL, NULL, &outcome,
                                    &err);
        CHECK_STR(payidem_error_order_id(err), "c-ord-unknown");
        CHECK_STR(payidem_error_idempotency_key(err), "create-c-ord-unknown");
        EXPECT_ERR(rc, err, PAYIDEM_OUTCOME_UNKNOWN, NULL);
        CHECK(outcome == NULL);
        EXPECT_OK(payidem_client_status(client, "c-ord-unknown", &found, &state, &attempts, &err),
                  err);
        CHECK(found && state == PAYIDEM_STATE_UNKNOWN && attempts == 2);
        EXPECT_OK(payidem_client_list_unknown(client, &list, &err), err);
        CHECK(payidem_order_list_len(list) == 1);
        CHECK_STR(payidem_order_list_get(list, 0), "c-ord-unknown");
        CHECK(payidem_order_list_get(list, 1) == NULL);
        payidem_order_list_free(list);
        EXPECT_ERR(payidem_client_resume(client, "c-ord-unknown", &outcome, &err), err,
                   PAYIDEM_OUTCOME_UNKNOWN, NULL);

        payment_body(body, sizeof body, "c-ord-expiring", 1000);
        EXPECT_ERR(payidem_client_execute(short_keys, "c-ord-expiring", "POST", "/v1/payments",
                                          (const uint8_t *)body, strlen(body), NULL, NULL,
                                          &outcome, &err),
                   err, PAYIDEM_OUTCOME_UNKNOWN, NULL);
        sleep_ms(2100);
        rc = payidem_client_resume(short_keys, "c-ord-expiring", &outcome, &err);
        CHECK_STR(payidem_error_order_id(err), "c-ord-expiring");
        EXPECT_ERR(rc, err, PAYIDEM_KEY_EXPIRED, NULL);
    }
    payidem_client_free(client);
    payidem_client_free(short_keys);
    mock_stop(&m);
}

static void test_e2e_sqlite_journal_survives_the_client(void) {
    char dir[] = "/tmp/payidem-c-XXXXXX";
    char path[256], extra[512], body[128], wal[300], shm[300];
    payidem_client *client;
    payidem_outcome *outcome = NULL;
    payidem_error *err = NULL;
    bool found = false;
    payidem_operation_state state = PAYIDEM_STATE_NOT_FOUND;
    uint32_t attempts = 0;
    CHECK(mock_ok_started);
    if (!mock_ok_started || mkdtemp(dir) == NULL) return;
    snprintf(path, sizeof path, "%s/journal.sqlite3", dir);
    snprintf(extra, sizeof extra, "\"journal_path\":\"%s\"", path);
    client = new_client(mock_ok.base_url, extra);
    CHECK(client != NULL);
    payment_body(body, sizeof body, "c-ord-durable", 1000);
    if (client) {
        EXPECT_OK(payidem_client_execute(client, "c-ord-durable", "POST", "/v1/payments",
                                         (const uint8_t *)body, strlen(body), NULL, NULL,
                                         &outcome, &err),
                  err);
        payidem_outcome_free(outcome);
        outcome = NULL;
        payidem_client_free(client);
    }
    client = new_client(mock_ok.base_url, extra);
    CHECK(client != NULL);
    if (client) {
        EXPECT_OK(payidem_client_status(client, "c-ord-durable", &found, &state, &attempts, &err),
                  err);
        CHECK(found && state == PAYIDEM_STATE_SUCCEEDED && attempts == 1);
        payidem_client_free(client);
    }
    snprintf(wal, sizeof wal, "%s-wal", path);
    snprintf(shm, sizeof shm, "%s-shm", path);
    unlink(wal);
    unlink(shm);
    unlink(path);
    rmdir(dir);
}

/* A success is never lost to a journal failure: once the platform's 201 is
 * in, every write to a regular file fails (the file-size limit drops to 0,
 * so write(2) gets EFBIG as on a failing disk). The caller gets the 201 with
 * the journal's error attached; with the disk back, the next execute of the
 * order resumes it and the platform replays the same answer. */
static void set_file_size_limit(int zero) {
    struct rlimit lim;
    CHECK(getrlimit(RLIMIT_FSIZE, &lim) == 0);
    lim.rlim_cur = zero ? 0 : lim.rlim_max;
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
}

static void fail_disk_after_answer(void *userdata, const payidem_attempt_event *ev) {
    int *tripped = userdata;
    if (ev->http_status == 201 && !*tripped) {
        *tripped = 1;
        set_file_size_limit(1);
    }
}

static void test_e2e_success_survives_a_journal_failure(void) {
    char dir[] = "/tmp/payidem-c-XXXXXX";
    char path[256], extra[512], body[128], wal[300], shm[300];
    payidem_client *client;
    payidem_outcome *first = NULL, *again = NULL;
    payidem_error *err = NULL;
    const payidem_error *journal;
    const uint8_t *b1 = NULL, *b2 = NULL;
    size_t n1 = 0, n2 = 0;
    bool found = false;
    payidem_operation_state state = PAYIDEM_STATE_NOT_FOUND;
    uint32_t attempts = 0;
    int tripped = 0;
    CHECK(mock_ok_started);
    if (!mock_ok_started || mkdtemp(dir) == NULL) return;
    signal(SIGXFSZ, SIG_IGN);
    snprintf(path, sizeof path, "%s/journal.sqlite3", dir);
    snprintf(extra, sizeof extra, "\"journal_path\":\"%s\"", path);
    client = new_client(mock_ok.base_url, extra);
    CHECK(client != NULL);
    if (!client) return;
    payidem_client_set_event_callback(client, fail_disk_after_answer, &tripped);
    /* No status path: the resumed call re-sends the POST with its key, and
     * the platform replays its stored answer. */
    payment_body(body, sizeof body, "c-ord-journal-fails", 4200);
    EXPECT_OK(payidem_client_execute(client, "c-ord-journal-fails", "POST", "/v1/payments",
                                     (const uint8_t *)body, strlen(body), NULL, NULL, &first,
                                     &err),
              err);
    set_file_size_limit(0);
    CHECK(tripped);
    CHECK(first != NULL);
    if (first) {
        CHECK(payidem_outcome_http_status(first) == 201);
        CHECK(!payidem_outcome_replayed(first));
        journal = payidem_outcome_journal_error(first);
        CHECK(journal != NULL);
        CHECK(payidem_error_code(journal) == PAYIDEM_JOURNAL_ERROR);
        CHECK_STR(payidem_error_order_id(journal), "c-ord-journal-fails");
        CHECK(payidem_error_message(journal) != NULL);
    }
    EXPECT_OK(payidem_client_status(client, "c-ord-journal-fails", &found, &state, &attempts,
                                    &err),
              err);
    CHECK(found && state == PAYIDEM_STATE_IN_FLIGHT);

    /* The disk works again: the same client resumes at once and the
     * platform answers from its idempotency store. */
    payidem_client_set_event_callback(client, NULL, NULL);
    EXPECT_OK(payidem_client_execute(client, "c-ord-journal-fails", "POST", "/v1/payments",
                                     (const uint8_t *)body, strlen(body), NULL, NULL, &again,
                                     &err),
              err);
    CHECK(again != NULL);
    if (first && again) {
        CHECK(payidem_outcome_replayed(again));
        CHECK(payidem_outcome_journal_error(again) == NULL);
        CHECK(payidem_outcome_body(first, &b1, &n1) && payidem_outcome_body(again, &b2, &n2));
        CHECK(n1 == n2 && n1 > 0 && memcmp(b1, b2, n1) == 0);
        CHECK_STR(payidem_outcome_idempotency_key(again), payidem_outcome_idempotency_key(first));
    }
    EXPECT_OK(payidem_client_status(client, "c-ord-journal-fails", &found, &state, &attempts,
                                    &err),
              err);
    CHECK(found && state == PAYIDEM_STATE_SUCCEEDED);
    CHECK(payidem_outcome_journal_error(NULL) == NULL);
    payidem_outcome_free(first);
    payidem_outcome_free(again);
    payidem_client_free(client);
    snprintf(wal, sizeof wal, "%s-wal", path);
    snprintf(shm, sizeof shm, "%s-shm", path);
    unlink(wal);
    unlink(shm);
    unlink(path);
    rmdir(dir);
}

/* payidem_client_get: one signed GET, any status is an outcome, nothing
 * journaled; a dead platform is a transport error. */
static void test_e2e_get_reads_without_the_journal(void) {
    payidem_client *client, *dead;
    payidem_outcome *outcome = NULL, *got = NULL;
    payidem_order_list *list = NULL;
    payidem_error *err = NULL;
    char body[128], sp[128];
    const uint8_t *bytes = NULL;
    size_t len = 0;
    bool found = true;
    payidem_operation_state state;
    uint32_t attempts;
    CHECK(mock_ok_started);
    if (!mock_ok_started) return;
    client = new_client(mock_ok.base_url, "");
    CHECK(client != NULL);
    if (!client) return;
    payment_body(body, sizeof body, "c-ord-get", 4100);
    EXPECT_OK(payidem_client_execute(client, "c-ord-get", "POST", "/v1/payments",
                                     (const uint8_t *)body, strlen(body), NULL, NULL, &outcome,
                                     &err),
              err);
    status_path(sp, sizeof sp, "c-ord-get");
    EXPECT_OK(payidem_client_get(client, sp, &got, &err), err);
    CHECK(got != NULL);
    if (got) {
        CHECK(payidem_outcome_http_status(got) == 200);
        CHECK(!payidem_outcome_replayed(got));
        CHECK_STR(payidem_outcome_order_id(got), "");
        CHECK_STR(payidem_outcome_idempotency_key(got), "");
        CHECK(payidem_outcome_attempts(got) == 1);
        CHECK(payidem_outcome_body(got, &bytes, &len));
        if (bytes && outcome) {
            /* The GET reads the payment the POST created: the same body. */
            const uint8_t *created = NULL;
            size_t created_len = 0;
            CHECK(payidem_outcome_body(outcome, &created, &created_len));
            CHECK(len > 0 && len == created_len && memcmp(bytes, created, len) == 0);
        }
        payidem_outcome_free(got);
        got = NULL;
    }
    /* A 404 is an answer, not an error. */
    status_path(sp, sizeof sp, "c-ord-never-paid");
    EXPECT_OK(payidem_client_get(client, sp, &got, &err), err);
    CHECK(got != NULL && payidem_outcome_http_status(got) == 404);
    payidem_outcome_free(got);
    got = NULL;
    /* Nothing of the GETs reached the journal. */
    EXPECT_OK(payidem_client_status(client, "c-ord-never-paid", &found, &state, &attempts, &err),
              err);
    CHECK(!found);
    EXPECT_OK(payidem_client_list_unknown(client, &list, &err), err);
    CHECK(payidem_order_list_len(list) == 0);
    payidem_order_list_free(list);

    EXPECT_ERR(payidem_client_get(NULL, "/v1/payments", &got, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "client");
    EXPECT_ERR(payidem_client_get(client, NULL, &got, &err), err, PAYIDEM_INVALID_ARGUMENT,
               "path");
    EXPECT_ERR(payidem_client_get(client, "no-slash", &got, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "path");
    EXPECT_ERR(payidem_client_get(client, "/v1/payments", NULL, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "outcome_out");
    CHECK(got == NULL);

    dead = new_client("http://127.0.0.1:1", "");
    CHECK(dead != NULL);
    if (dead) {
        EXPECT_ERR(payidem_client_get(dead, "/v1/payments/pay_1", &got, &err), err,
                   PAYIDEM_TRANSPORT_ERROR, NULL);
        CHECK(got == NULL);
        payidem_client_free(dead);
    }
    payidem_outcome_free(outcome);
    payidem_client_free(client);
}

/* payidem_client_purge_settled deletes settled operations past the
 * settled retention and never an unsettled one. */
static void test_e2e_purge_settled(void) {
    payidem_client *client;
    payidem_outcome *outcome = NULL;
    payidem_error *err = NULL;
    char body[128];
    size_t purged = 99;
    struct cancel_state cancel = {NULL, 0, 1, PAYIDEM_OK};
    bool found = false;
    payidem_operation_state state;
    uint32_t attempts;
    CHECK(mock_ok_started);
    if (!mock_ok_started) return;
    /* Seconds enough for the calls below under valgrind on a loaded host:
     * the second purge must come while the payment is retained. */
    client = new_client(mock_ok.base_url, "\"settled_retention_s\":5");
    CHECK(client != NULL);
    if (!client) return;
    EXPECT_OK(payidem_client_purge_settled(client, &purged, &err), err);
    CHECK(purged == 0);
    payment_body(body, sizeof body, "c-ord-purged", 4200);
    EXPECT_OK(payidem_client_execute(client, "c-ord-purged", "POST", "/v1/payments",
                                     (const uint8_t *)body, strlen(body), NULL, NULL, &outcome,
                                     &err),
              err);
    payidem_outcome_free(outcome);
    outcome = NULL;
    /* Journaled but never sent (cancelled before the first attempt):
     * unsettled, so never purged. */
    payment_body(body, sizeof body, "c-ord-kept", 4300);
    EXPECT_ERR(payidem_client_execute_with_deadline(client, "c-ord-kept", "POST", "/v1/payments",
                                                    (const uint8_t *)body, strlen(body), NULL,
                                                    NULL, 0, cancel_now, &cancel, &outcome, &err),
               err, PAYIDEM_CANCELLED, NULL);
    EXPECT_OK(payidem_client_purge_settled(client, &purged, &err), err);
    CHECK(purged == 0);
    sleep_ms(6100);
    EXPECT_OK(payidem_client_purge_settled(client, &purged, &err), err);
    CHECK(purged == 1);
    EXPECT_OK(payidem_client_status(client, "c-ord-purged", &found, &state, &attempts, &err), err);
    CHECK(!found);
    EXPECT_OK(payidem_client_status(client, "c-ord-kept", &found, &state, &attempts, &err), err);
    CHECK(found && state == PAYIDEM_STATE_PENDING);
    EXPECT_ERR(payidem_client_purge_settled(NULL, &purged, &err), err, PAYIDEM_INVALID_ARGUMENT,
               "client");
    EXPECT_ERR(payidem_client_purge_settled(client, NULL, &err), err, PAYIDEM_INVALID_ARGUMENT,
               "purged_out");
    payidem_client_free(client);
}

static void test_every_reachable_code_was_reached(void) {
    unsigned code;
    for (code = 1; code <= payidem_result_max_error_code(); code++) {
        if (code == PAYIDEM_INTERNAL_ERROR) {
            continue; /* only a panic gives it; the Rust tests cover that */
        }
        if (!reached[code]) {
            fprintf(stderr, "  code %u (%s) was never reached\n", code, payidem_result_name(code));
            harness_current_failed = 1;
        }
    }
    CHECK(reached[PAYIDEM_BUFFER_TOO_SMALL]);
}
#endif

/* ---- verification refusals (payidem_refusal_*) -------------------------
 * The HTTP answer to a request that failed verification, built by the core:
 * the same status, headers and body bytes the mock, Go and Python send. */

/* The header of `refusal` named `name`, or NULL. */
static const char *refusal_header(const payidem_refusal *refusal, const char *name) {
    size_t i;
    for (i = 0; i < payidem_refusal_header_count(refusal); i++) {
        const char *n = NULL, *v = NULL;
        payidem_error *err = NULL;
        EXPECT_OK(payidem_refusal_header_at(refusal, i, &n, &v, &err), err);
        if (n != NULL && strcasecmp(n, name) == 0) {
            return v;
        }
    }
    return NULL;
}

/* Whether the refusal's body is exactly `expected`. */
static int refusal_body_is(const payidem_refusal *refusal, const char *expected) {
    const uint8_t *body = NULL;
    size_t len = 0;
    if (!payidem_refusal_body(refusal, &body, &len)) {
        return 0;
    }
    if (len != strlen(expected) || memcmp(body, expected, len) != 0) {
        fprintf(stderr, "  body is \"%.*s\", expected \"%s\"\n", (int)len, (const char *)body,
                expected);
        return 0;
    }
    return 1;
}

static void test_refusal_of_a_real_verification_failure(void) {
    payidem_signer *signer = new_signer();
    payidem_verifier *verifier = NULL;
    payidem_refusal *refusal = NULL, *again = NULL;
    payidem_error *err = NULL, *failure = NULL;
    payidem_signed_headers s;
    payidem_header hs[5];
    const uint8_t *secrets[1];
    size_t lens[1];
    uint64_t now = 1800000000u;
    char expected[512];
    secrets[0] = SECRET;
    lens[0] = SECRET_LEN;
    EXPECT_OK(payidem_verifier_new(300, 100, &verifier, &err), err);
    EXPECT_OK(payidem_verifier_add_key(verifier, "key_live_1", secrets, lens, 1, &err), err);
    EXPECT_OK(payidem_signer_sign_into(signer, "POST", "/v1/p", "k-1", BODY, BODY_LEN, now, &s,
                                       &err),
              err);
    hs[0].name = "X-Api-Key";
    hs[0].value = s.api_key;
    hs[1].name = "X-Timestamp";
    hs[1].value = s.timestamp;
    hs[2].name = "X-Nonce";
    hs[2].value = s.nonce;
    hs[3].name = "X-Signature";
    hs[3].value = s.signature;
    hs[4].name = "Idempotency-Key";
    hs[4].value = s.idempotency_key;

    /* 401 timestamp_out_of_window carries the verifier's clock twice. */
    CHECK(payidem_verifier_verify(verifier, "POST", "/v1/p", hs, 5, BODY, BODY_LEN, now + 301,
                                  NULL, &failure) == PAYIDEM_TIMESTAMP_OUT_OF_WINDOW);
    EXPECT_OK(payidem_refusal_from_error(failure, &refusal, &err), err);
    CHECK(payidem_refusal_status(refusal) == 401);
    CHECK_STR(payidem_refusal_code(refusal), "timestamp_out_of_window");
    CHECK(payidem_refusal_header_count(refusal) == 3);
    CHECK_STR(refusal_header(refusal, "Content-Type"), "application/json");
    CHECK_STR(refusal_header(refusal, "X-Server-Time"), "1800000301");
    CHECK_STR(refusal_header(refusal, "Date"), "Fri, 15 Jan 2027 08:05:01 GMT");
    snprintf(expected, sizeof expected,
             "{\"error\":{\"code\":\"timestamp_out_of_window\",\"message\":\"%s\"}}",
             payidem_error_message(failure));
    CHECK(refusal_body_is(refusal, expected));
    /* The same answer from the error's parts. */
    EXPECT_OK(payidem_refusal_new(PAYIDEM_TIMESTAMP_OUT_OF_WINDOW, payidem_error_message(failure),
                                  1800000301u, &again, &err),
              err);
    CHECK(refusal_body_is(again, expected));
    CHECK_STR(refusal_header(again, "Date"), "Fri, 15 Jan 2027 08:05:01 GMT");
    payidem_refusal_free(again);
    payidem_refusal_free(refusal);
    payidem_error_free(failure);

    /* 409 nonce_reused: the second verification of the same attempt. */
    EXPECT_OK(payidem_verifier_verify(verifier, "POST", "/v1/p", hs, 5, BODY, BODY_LEN, now, NULL,
                                      &err),
              err);
    CHECK(payidem_verifier_verify(verifier, "POST", "/v1/p", hs, 5, BODY, BODY_LEN, now, NULL,
                                  &failure) == PAYIDEM_NONCE_REUSED);
    EXPECT_OK(payidem_refusal_from_error(failure, &refusal, &err), err);
    CHECK(payidem_refusal_status(refusal) == 409);
    CHECK(payidem_refusal_header_count(refusal) == 1);
    CHECK(refusal_header(refusal, "Date") == NULL);
    snprintf(expected, sizeof expected,
             "{\"error\":{\"code\":\"nonce_reused\",\"message\":\"%s\"}}",
             payidem_error_message(failure));
    CHECK(refusal_body_is(refusal, expected));
    payidem_refusal_free(refusal);
    payidem_error_free(failure);

    /* An error verification never gives: 500, its message not shown. */
    CHECK(payidem_verifier_new(300, 0, &verifier, &failure) == PAYIDEM_INVALID_ARGUMENT);
    payidem_error_free(failure);
    EXPECT_OK(payidem_refusal_new(PAYIDEM_JOURNAL_ERROR, "/var/lib/shop/journal.sqlite3", 0,
                                  &refusal, &err),
              err);
    CHECK(payidem_refusal_status(refusal) == 500);
    CHECK_STR(payidem_refusal_code(refusal), "internal_error");
    CHECK(refusal_body_is(refusal, "{\"error\":{\"code\":\"internal_error\",\"message\":"
                                   "\"the server could not verify this request\"}}"));
    payidem_refusal_free(refusal);

    payidem_verifier_free(verifier);
    payidem_signer_free(signer);
}

static void test_refusal_of_every_verification_code(void) {
    size_t i;
    size_t count = 0;
    for (i = 0; payidem_refusal_verification_code_at(i) != 0; i++) {
        uint32_t code = payidem_refusal_verification_code_at(i);
        const char *name = payidem_result_name(code);
        payidem_refusal *refusal = NULL;
        payidem_error *err = NULL;
        uint16_t status;
        char expected[256];
        count++;
        CHECK(name != NULL);
        if (name == NULL) {
            continue;
        }
        EXPECT_OK(payidem_refusal_new(code, "why \"it\" failed", 7, &refusal, &err), err);
        status = payidem_refusal_status(refusal);
        CHECK(status == 400 || status == 401 || status == 409 || status == 503);
        CHECK_STR(payidem_refusal_code(refusal), name);
        CHECK_STR(refusal_header(refusal, "Content-Type"), "application/json");
        CHECK((refusal_header(refusal, "X-Server-Time") != NULL) ==
              (code == PAYIDEM_TIMESTAMP_OUT_OF_WINDOW));
        CHECK((refusal_header(refusal, "Retry-After") != NULL) ==
              (code == PAYIDEM_REPLAY_STORE_UNAVAILABLE));
        snprintf(expected, sizeof expected,
                 "{\"error\":{\"code\":\"%s\",\"message\":\"why \\\"it\\\" failed\"}}", name);
        CHECK(refusal_body_is(refusal, expected));
        payidem_refusal_free(refusal);
    }
    /* The verifier's seven protocol codes, invalid_argument (a bad
     * Idempotency-Key header) and replay_store_unavailable (a Redis replay
     * store that cannot answer). */
    CHECK(count == 9);
    CHECK(payidem_refusal_verification_code_at(0) == PAYIDEM_INVALID_ARGUMENT);
    CHECK(payidem_refusal_verification_code_at(count) == 0);
    CHECK(payidem_refusal_verification_code_at((size_t)-1) == 0);
}

static void test_refusal_body_too_large_and_bad_arguments(void) {
    payidem_refusal *refusal = NULL;
    payidem_error *err = NULL;
    const char *name = NULL, *value = NULL;
    const uint8_t *body = NULL;
    size_t len = 0;
    EXPECT_OK(payidem_refusal_body_too_large(1048576u, &refusal, &err), err);
    CHECK(payidem_refusal_status(refusal) == 413);
    CHECK_STR(payidem_refusal_code(refusal), "payload_too_large");
    CHECK(refusal_body_is(refusal, "{\"error\":{\"code\":\"payload_too_large\",\"message\":"
                                   "\"the body is larger than 1048576 bytes\"}}"));

    EXPECT_ERR(payidem_refusal_header_at(refusal, 1, &name, &value, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "index");
    EXPECT_ERR(payidem_refusal_header_at(NULL, 0, &name, &value, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "refusal");
    EXPECT_ERR(payidem_refusal_header_at(refusal, 0, NULL, &value, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "name_out");
    EXPECT_ERR(payidem_refusal_header_at(refusal, 0, &name, NULL, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "value_out");
    CHECK(!payidem_refusal_body(refusal, NULL, &len));
    CHECK(!payidem_refusal_body(refusal, &body, NULL));
    CHECK(!payidem_refusal_body(NULL, &body, &len));
    payidem_refusal_free(refusal);
    refusal = NULL;

    EXPECT_ERR(payidem_refusal_from_error(NULL, &refusal, &err), err, PAYIDEM_INVALID_ARGUMENT,
               "error");
    EXPECT_ERR(payidem_refusal_new(PAYIDEM_NONCE_REUSED, "m", 0, NULL, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "refusal_out");
    EXPECT_ERR(payidem_refusal_new(PAYIDEM_NONCE_REUSED, NULL, 0, &refusal, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "message");
    EXPECT_ERR(payidem_refusal_new(PAYIDEM_OK, "m", 0, &refusal, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "code");
    EXPECT_ERR(payidem_refusal_new(99, "m", 0, &refusal, &err), err, PAYIDEM_INVALID_ARGUMENT,
               "code");
    EXPECT_ERR(payidem_refusal_body_too_large(1, NULL, &err), err, PAYIDEM_INVALID_ARGUMENT,
               "refusal_out");
    CHECK(refusal == NULL);
    CHECK(payidem_refusal_status(NULL) == 0);
    CHECK(payidem_refusal_code(NULL) == NULL);
    CHECK(payidem_refusal_header_count(NULL) == 0);
    payidem_refusal_free(NULL);
}

/* ---- end of verification refusals ------------------------------------- */

#ifndef _WIN32
/* ---- a shared Redis replay store (issue #11) ----------------------------
 * A real redis-server, started here in a temporary directory on a unix
 * socket only (no TCP, nothing persisted), shared by two verifiers. It is
 * started through ffi/tests-c/redis_server.sh, which execs redis-server
 * (the child is the server itself) after starting a watcher: a test killed
 * before its clean-up (SIGKILL, a CI timeout) leaves neither a running
 * server nor its directory behind. */

#define REDIS_SCRIPT "ffi/tests-c/redis_server.sh"

struct redis {
    pid_t pid;
    char dir[64];
    char socket[128];
    char url[160];
};

/* 1 when the server on r->socket answers PING with PONG (a socket file
 * exists before the server accepts and answers on it). */
static int redis_answers(const struct redis *r) {
    struct sockaddr_un addr;
    struct timeval limit;
    char reply[8];
    size_t got = 0;
    int ok = 0;
    size_t len = strlen(r->socket);
    int fd;
    if (len >= sizeof addr.sun_path) {
        return 0;
    }
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) {
        return 0;
    }
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, r->socket, len);
    limit.tv_sec = 5;
    limit.tv_usec = 0;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
        write(fd, "PING\r\n", 6) == 6) {
        while (got < 7) {
            ssize_t n = read(fd, reply + got, 7 - got);
            if (n <= 0) {
                break;
            }
            got += (size_t)n;
        }
        ok = got == 7 && memcmp(reply, "+PONG\r\n", 7) == 0;
    }
    close(fd);
    return ok;
}

/* Starts redis-server ($PAYIDEM_REDIS_SERVER or redis-server on the PATH);
 * returns 0 once it answers on its socket. Never skipped: a failure is
 * reported. */
static int redis_start(struct redis *r) {
    const char *binary = getenv("PAYIDEM_REDIS_SERVER");
    struct stat st;
    struct timespec tick;
    int i;
    tick.tv_sec = 0;
    tick.tv_nsec = 10000000;
    if (r->dir[0] == '\0') {
        strcpy(r->dir, "/tmp/payidem-c-redis-XXXXXX");
        if (mkdtemp(r->dir) == NULL) {
            return -1;
        }
        snprintf(r->socket, sizeof r->socket, "%s/redis.sock", r->dir);
        snprintf(r->url, sizeof r->url, "unix://%s", r->socket);
    }
    if (binary == NULL) {
        binary = "redis-server";
    }
    fflush(stdout);
    fflush(stderr);
    r->pid = fork();
    if (r->pid < 0) {
        return -1;
    }
    if (r->pid == 0) {
        execl(REDIS_SCRIPT, REDIS_SCRIPT, "--dir", r->dir, binary, "--port", "0", "--unixsocket",
              r->socket, "--unixsocketperm", "700", "--save", "", "--appendonly", "no", "--dir",
              r->dir, "--logfile", "redis.log", (char *)NULL);
        _exit(127);
    }
    for (i = 0; i < 1000; i++) {
        int status;
        if (stat(r->socket, &st) == 0 && redis_answers(r)) {
            return 0;
        }
        if (waitpid(r->pid, &status, WNOHANG) == r->pid) {
            r->pid = 0;
            break;
        }
        nanosleep(&tick, NULL);
    }
    fprintf(stderr, "  cannot start %s through %s (run from the repository root): the "
                    "replay-store tests need a real redis-server (make redis-deps installs it)\n",
            binary, REDIS_SCRIPT);
    return -1;
}

/* Kills the server at once (like a crash; nothing was persisted). */
static void redis_stop(struct redis *r) {
    if (r->pid > 0) {
        kill(r->pid, SIGKILL);
        waitpid(r->pid, NULL, 0);
        r->pid = 0;
    }
    unlink(r->socket);
}

static payidem_verifier *replay_verifier(const char *store) {
    payidem_verifier *v = NULL;
    payidem_error *err = NULL;
    const uint8_t *secrets[1];
    size_t lens[1];
    secrets[0] = SECRET;
    lens[0] = SECRET_LEN;
    EXPECT_OK(payidem_verifier_new_with_replay_store(300, 100, store, &v, &err), err);
    if (v != NULL) {
        EXPECT_OK(payidem_verifier_add_key(v, "key_live_1", secrets, lens, 1, &err), err);
    }
    return v;
}

/* Signs a POST at `timestamp` into `s` and points `hs` at its headers. */
static void replay_sign(payidem_signer *signer, uint64_t timestamp, payidem_signed_headers *s,
                        payidem_header hs[5]) {
    payidem_error *err = NULL;
    EXPECT_OK(payidem_signer_sign_into(signer, "POST", "/v1/p", "k-redis", BODY, BODY_LEN,
                                       timestamp, s, &err),
              err);
    hs[0].name = "X-Api-Key";
    hs[0].value = s->api_key;
    hs[1].name = "X-Timestamp";
    hs[1].value = s->timestamp;
    hs[2].name = "X-Nonce";
    hs[2].value = s->nonce;
    hs[3].name = "X-Signature";
    hs[3].value = s->signature;
    hs[4].name = "Idempotency-Key";
    hs[4].value = s->idempotency_key;
}

static payidem_result replay_verify(payidem_verifier *v, payidem_header hs[5], uint16_t *status,
                                    payidem_error **err) {
    return payidem_verifier_verify(v, "POST", "/v1/p", hs, 5, BODY, BODY_LEN,
                                   (uint64_t)time(NULL), status, err);
}

static void test_verifier_with_a_replay_store(void) {
    payidem_signer *signer = new_signer();
    payidem_verifier *a, *b, *v = NULL;
    payidem_error *err = NULL;
    payidem_signed_headers s, fresh;
    payidem_header hs[5], fresh_hs[5];
    payidem_refusal *refusal = NULL;
    uint16_t status = 0;
    struct redis redis;
    memset(&redis, 0, sizeof redis);

    /* The store is named by a URL; a bad one names the argument, and never
     * repeats a password. */
    EXPECT_ERR(payidem_verifier_new_with_replay_store(300, 100, "memcached://u:hunter2@h", &v,
                                                      &err),
               err, PAYIDEM_INVALID_ARGUMENT, "replay_store");
    CHECK(v == NULL);
    EXPECT_ERR(payidem_verifier_new_with_replay_store(300, 100, "memory", NULL, &err), err,
               PAYIDEM_INVALID_ARGUMENT, "verifier_out");
    /* "memory" and NULL are the in-process store. */
    a = replay_verifier("memory");
    b = replay_verifier(NULL);
    replay_sign(signer, (uint64_t)time(NULL), &s, hs);
    EXPECT_OK(replay_verify(a, hs, &status, &err), err);
    EXPECT_OK(replay_verify(b, hs, &status, &err), err); /* two processes' worth */
    payidem_verifier_free(a);
    payidem_verifier_free(b);

    /* A Redis store that cannot be reached fails closed: 503 + Retry-After. */
    a = replay_verifier("unix:///nonexistent-payidem-dir/redis.sock");
    EXPECT_ERR(replay_verify(a, hs, &status, &err), err, PAYIDEM_REPLAY_STORE_UNAVAILABLE, NULL);
    CHECK(status == 503);
    payidem_verifier_free(a);

    /* Two verifiers sharing one real redis-server. */
    CHECK(redis_start(&redis) == 0);
    if (redis.pid <= 0) {
        payidem_signer_free(signer);
        return;
    }
    a = replay_verifier(redis.url);
    b = replay_verifier(redis.url);
    /* The first claim creates the store's epoch (its clock now); requests
     * signed up to 2 s after it (the skew) are refused, so wait that out
     * and sign with the real clock, as a client does. */
    replay_sign(signer, (uint64_t)time(NULL) + 60, &s, hs);
    EXPECT_OK(replay_verify(a, hs, &status, &err), err);
    {
        struct timespec wait;
        wait.tv_sec = 3;
        wait.tv_nsec = 200000000;
        nanosleep(&wait, NULL);
    }
    replay_sign(signer, (uint64_t)time(NULL), &s, hs);
    EXPECT_OK(replay_verify(a, hs, &status, &err), err);
    CHECK(status == 200);
    EXPECT_ERR(replay_verify(b, hs, &status, &err), err, PAYIDEM_NONCE_REUSED, NULL);
    CHECK(status == 409);
    replay_sign(signer, (uint64_t)time(NULL), &fresh, fresh_hs);
    EXPECT_OK(replay_verify(b, fresh_hs, &status, &err), err);

    /* Stopped: every verifier refuses, with the refusal the core builds. */
    redis_stop(&redis);
    replay_sign(signer, (uint64_t)time(NULL), &fresh, fresh_hs);
    if (replay_verify(a, fresh_hs, &status, &err) == PAYIDEM_REPLAY_STORE_UNAVAILABLE) {
        payidem_error *refusal_err = NULL;
        reached[PAYIDEM_REPLAY_STORE_UNAVAILABLE] = 1;
        EXPECT_OK(payidem_refusal_from_error(err, &refusal, &refusal_err), refusal_err);
        CHECK(refusal != NULL && payidem_refusal_status(refusal) == 503);
        CHECK_STR(refusal_header(refusal, "Retry-After"), "1");
        payidem_refusal_free(refusal);
        payidem_error_free(err);
        err = NULL;
    } else {
        fprintf(stderr, "  verification with Redis stopped must fail closed\n");
        harness_current_failed = 1;
        payidem_error_free(err);
        err = NULL;
    }
    CHECK(status == 503);
    EXPECT_ERR(replay_verify(b, fresh_hs, &status, &err), err, PAYIDEM_REPLAY_STORE_UNAVAILABLE,
               NULL);

    /* Restarted empty: what was accepted before, and what was refused while
     * it was down, is refused (the epoch guard), never accepted. */
    CHECK(redis_start(&redis) == 0);
    EXPECT_ERR(replay_verify(b, hs, &status, &err), err, PAYIDEM_REPLAY_STORE_UNAVAILABLE, NULL);
    EXPECT_ERR(replay_verify(a, hs, &status, &err), err, PAYIDEM_REPLAY_STORE_UNAVAILABLE, NULL);
    EXPECT_ERR(replay_verify(a, fresh_hs, &status, &err), err, PAYIDEM_REPLAY_STORE_UNAVAILABLE,
               NULL);
    CHECK(status == 503);
    redis_stop(&redis);
    {
        char log[sizeof redis.dir + 16];
        snprintf(log, sizeof log, "%s/redis.log", redis.dir);
        unlink(log);
    }
    CHECK(rmdir(redis.dir) == 0);
    payidem_verifier_free(a);
    payidem_verifier_free(b);
    payidem_signer_free(signer);
}

#endif

int main(void) {
    const char *path = getenv("PAYIDEM_VECTORS");
    char *text = read_file(path ? path : "core/tests/vectors/protocol-v1.json");
    int rc;
    if (text == NULL || (vectors = cJSON_Parse(text)) == NULL) {
        fprintf(stderr, "cannot read the conformance vectors\n");
        free(text);
        printf("0 passed, 1 failed\n");
        return 1;
    }
    free(text);
#ifndef _WIN32
    mock_ok_started = mock_start(&mock_ok, NULL) == 0;
#endif

    RUN(test_version_matches_header);
    RUN(test_result_names_are_the_stable_codes);
    RUN(test_vectors_sign);
    RUN(test_vectors_sign_invalid);
    RUN(test_vectors_verify_sequence);
    RUN(test_vectors_decide);
    RUN(test_sign_into_verifies_and_matches_the_handle_api);
    RUN(test_buffers_too_small_report_the_size);
    RUN(test_journal_key_derive);
    RUN(test_redact_url);
    RUN(test_verifier_reaches_every_verification_code);
    RUN(test_verify_into_remove_key_and_total_limit);
    RUN(test_null_and_bad_lengths_are_named);
    RUN(test_client_options_are_checked);
#ifndef _WIN32
    RUN(test_e2e_payment_succeeds_and_replays_from_the_journal);
    RUN(test_client_transport_options);
    RUN(test_e2e_rejected_and_conflicts);
    RUN(test_e2e_cancel_busy_and_transport);
    RUN(test_e2e_unknown_outcome_resume_and_key_expiry);
    RUN(test_e2e_sqlite_journal_survives_the_client);
    RUN(test_e2e_success_survives_a_journal_failure);
#endif
    RUN(test_client_defaults_json);
#ifndef _WIN32
    RUN(test_e2e_get_reads_without_the_journal);
    RUN(test_e2e_purge_settled);
#endif
    /* verification refusals */
    RUN(test_refusal_of_a_real_verification_failure);
    RUN(test_refusal_of_every_verification_code);
    RUN(test_refusal_body_too_large_and_bad_arguments);
#ifndef _WIN32
    RUN(test_verifier_with_a_replay_store);
    RUN(test_every_reachable_code_was_reached);

    mock_stop(&mock_ok);
#endif
    cJSON_Delete(vectors);
    rc = harness_finish();
    return rc;
}
