/*
 * The operation vectors (core/tests/vectors/operation-v1.json) run through
 * the C ABI's pure operation machine (payidem_operation_*), with the same
 * runner rules as the Rust runner (core/tests/operation_vectors.rs; see the
 * file's "about"): one test per vector.
 *
 * Environment: PAYIDEM_OPERATION_VECTORS (default
 * core/tests/vectors/operation-v1.json).
 */
#define _POSIX_C_SOURCE 200809L

#include <cJSON.h>
#include <stdint.h>
#include <strings.h>

#include "harness.h"

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

/* Prints where a vector's check failed and marks the test failed. */
#define VCHECK(cond, at)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "  %s: check failed: %s (line %d)\n", (at), #cond, \
                    __LINE__);                                                 \
            harness_current_failed = 1;                                        \
        }                                                                      \
    } while (0)

static int str_eq(const char *a, const char *b) {
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static const char *jstr(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double jnum(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static int jbool(const cJSON *obj, const char *key) {
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, key));
}

/* The state of one vector's run. */
struct runner {
    const cJSON *vector;
    const cJSON *operation;
    uint64_t created_at;
    uint64_t start;
    uint64_t elapsed_ms;
    payidem_signer *signer;
    payidem_operation *op;
    payidem_step *last_end; /* the last END seen, owned */
    char key[160];          /* the operation's idempotency key */
};

static uint64_t now_unix(const struct runner *r) {
    return r->start + r->elapsed_ms / 1000;
}

/* Starts a machine from the vector's operation and setup, with `state`,
 * `attempts` and `first_recorded` as the journal's progress. */
static payidem_operation *begin(const struct runner *r, const char *state,
                                double attempts, int first_recorded,
                                const char *at) {
    cJSON *start = cJSON_CreateObject();
    cJSON *progress = cJSON_CreateObject();
    char *json;
    payidem_operation *op = NULL;
    payidem_error *err = NULL;
    cJSON_AddItemToObject(start, "operation",
                          cJSON_Duplicate(r->operation, 1));
    cJSON_AddStringToObject(progress, "state", state);
    cJSON_AddNumberToObject(progress, "attempts", attempts);
    cJSON_AddNumberToObject(progress, "created_at", (double)r->created_at);
    cJSON_AddBoolToObject(progress, "first_recorded", first_recorded);
    cJSON_AddItemToObject(start, "progress", progress);
    cJSON_AddItemToObject(
        start, "setup",
        cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(r->vector, "setup"), 1));
    cJSON_AddNumberToObject(start, "now", (double)now_unix(r));
    json = cJSON_PrintUnformatted(start);
    if (payidem_operation_new(json, &op, &err) != PAYIDEM_OK) {
        fprintf(stderr, "  %s: payidem_operation_new: %s\n", at,
                payidem_error_message(err));
        harness_current_failed = 1;
        payidem_error_free(err);
    }
    cJSON_free(json);
    cJSON_Delete(start);
    return op;
}

static const char *step_header(const payidem_step *step, const char *name) {
    size_t i, n = payidem_step_header_count(step);
    for (i = 0; i < n; i++) {
        const char *k = NULL, *v = NULL;
        if (payidem_step_header_at(step, i, &k, &v) && strcasecmp(k, name) == 0) {
            return v;
        }
    }
    return NULL;
}

static void check_end(const struct runner *r, const payidem_step *end,
                      const cJSON *expect, const char *at) {
    payidem_outcome *outcome = NULL;
    payidem_error *err = NULL;
    payidem_result rc;
    const cJSON *error = cJSON_GetObjectItemCaseSensitive(expect, "error");
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(expect, "status");
    const cJSON *replayed = cJSON_GetObjectItemCaseSensitive(expect, "replayed");
    uint16_t got_status;
    VCHECK(payidem_step_kind(end) == PAYIDEM_STEP_END, at);
    VCHECK(str_eq(payidem_step_end_name(end), jstr(expect, "end")), at);
    VCHECK(payidem_step_end_final(end) == (bool)jbool(expect, "final"), at);
    VCHECK(str_eq(payidem_landed_name(payidem_step_end_landed(end)),
                  jstr(expect, "landed")),
           at);
    VCHECK(str_eq(payidem_step_end_state(end), jstr(expect, "state")), at);
    rc = payidem_step_end_result(end, &outcome, &err);
    if (cJSON_IsNull(error)) {
        VCHECK(rc == PAYIDEM_OK && outcome != NULL, at);
        got_status = payidem_outcome_http_status(outcome);
        if (cJSON_IsBool(replayed)) {
            VCHECK(payidem_outcome_replayed(outcome) == (bool)cJSON_IsTrue(replayed), at);
        }
    } else {
        VCHECK(rc != PAYIDEM_OK && outcome == NULL, at);
        VCHECK(payidem_error_code(err) == rc, at);
        VCHECK(str_eq(payidem_result_name((uint32_t)rc), error->valuestring), at);
        VCHECK(payidem_result_is_final((uint32_t)rc) == (bool)jbool(expect, "final"), at);
        VCHECK(str_eq(payidem_error_order_id(err), jstr(r->operation, "order_id")), at);
        VCHECK(str_eq(payidem_error_idempotency_key(err), r->key), at);
        VCHECK(!cJSON_IsTrue(replayed), at);
        got_status = payidem_error_http_status(err);
    }
    if (cJSON_IsNumber(status)) {
        VCHECK(got_status == (uint16_t)status->valuedouble, at);
    } else {
        VCHECK(got_status == 0, at);
    }
    payidem_outcome_free(outcome);
    payidem_error_free(err);
}

static void run_reply(struct runner *r, const cJSON *step, const char *at) {
    const cJSON *reply = cJSON_GetObjectItemCaseSensitive(step, "reply");
    const cJSON *hdrs = cJSON_GetObjectItemCaseSensitive(reply, "headers");
    payidem_header headers[16];
    size_t count = 0;
    uint32_t outcome = PAYIDEM_ATTEMPT_RESPONSE;
    const char *reason = NULL;
    const char *body = jstr(reply, "body");
    double status = jnum(reply, "status");
    payidem_reaction reaction;
    payidem_error *err = NULL;
    const cJSON *h;
    if (jstr(reply, "not_sent")) {
        outcome = PAYIDEM_ATTEMPT_NOT_SENT;
        reason = jstr(reply, "not_sent");
    } else if (jstr(reply, "no_response")) {
        outcome = PAYIDEM_ATTEMPT_SENT_NO_RESPONSE;
        reason = jstr(reply, "no_response");
    }
    cJSON_ArrayForEach(h, hdrs) {
        if (count < 16 && cJSON_IsString(h)) {
            headers[count].name = h->string;
            headers[count].value = h->valuestring;
            count++;
        }
    }
    memset(&reaction, 0xAB, sizeof reaction);
    if (payidem_operation_handle(r->op, outcome, status > 0 ? (uint16_t)status : 0,
                                 count ? headers : NULL, count,
                                 (const uint8_t *)body, body ? strlen(body) : 0,
                                 reason, now_unix(r), r->elapsed_ms, &reaction,
                                 &err) != PAYIDEM_OK) {
        fprintf(stderr, "  %s: handle: %s\n", at, payidem_error_message(err));
        harness_current_failed = 1;
        payidem_error_free(err);
        return;
    }
    VCHECK(str_eq(payidem_next_action_name(reaction.next), jstr(step, "next")), at);
    VCHECK(str_eq(payidem_landed_name(reaction.landed), jstr(step, "landed")), at);
    if (outcome == PAYIDEM_ATTEMPT_RESPONSE) {
        VCHECK(reaction.status == (uint16_t)status, at);
    } else {
        VCHECK(reaction.status == 0, at);
    }
}

static void check_send(const struct runner *r, const payidem_step *step,
                       const cJSON *expect, const char *at) {
    const char *kind = payidem_attempt_kind_name(payidem_step_attempt_kind(step));
    size_t len = 99;
    const uint8_t *body = payidem_step_body(step, &len);
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(expect, "timestamp");
    VCHECK(str_eq(kind, jstr(expect, "kind")), at);
    VCHECK(payidem_step_attempt_number(step) == (uint32_t)jnum(expect, "number"), at);
    VCHECK(payidem_step_timeout_ms(step) == 0, at);
    if (str_eq(kind, "operation")) {
        const char *want = jstr(r->operation, "body");
        VCHECK(str_eq(payidem_step_method(step), jstr(r->operation, "method")), at);
        VCHECK(str_eq(payidem_step_path(step), jstr(r->operation, "path")), at);
        VCHECK(want != NULL && len == strlen(want) &&
                   memcmp(body, want, len) == 0,
               at);
        VCHECK(str_eq(step_header(step, PAYIDEM_HEADER_IDEMPOTENCY_KEY), r->key), at);
    } else {
        VCHECK(str_eq(payidem_step_method(step), "GET"), at);
        VCHECK(str_eq(payidem_step_path(step), jstr(r->operation, "status_path")), at);
        VCHECK(body != NULL && len == 0, at);
        VCHECK(step_header(step, PAYIDEM_HEADER_IDEMPOTENCY_KEY) == NULL, at);
    }
    if (cJSON_IsNumber(ts)) {
        char want[32];
        snprintf(want, sizeof want, "%.0f", ts->valuedouble);
        VCHECK(str_eq(step_header(step, PAYIDEM_HEADER_TIMESTAMP), want), at);
    }
}

static void run_step(struct runner *r, const cJSON *step, const char *at) {
    const cJSON *restart = cJSON_GetObjectItemCaseSensitive(step, "restart");
    const cJSON *abandon = cJSON_GetObjectItemCaseSensitive(step, "abandon");
    const char *expect = jstr(step, "expect");
    payidem_step *got = NULL;
    payidem_error *err = NULL;
    uint32_t kind;
    if (restart) {
        /* Wall time goes on; the new call's elapsed clock starts at 0. */
        r->start += r->elapsed_ms / 1000;
        r->elapsed_ms = 0;
        payidem_operation_free(r->op);
        r->op = begin(r, jstr(restart, "state"), jnum(restart, "attempts"), 0, at);
        return;
    }
    if (abandon) {
        if (payidem_operation_abandon(r->op, abandon->valuestring, &got, &err) != PAYIDEM_OK) {
            fprintf(stderr, "  %s: abandon: %s\n", at, payidem_error_message(err));
            harness_current_failed = 1;
            payidem_error_free(err);
            return;
        }
        payidem_step_free(r->last_end);
        r->last_end = got;
        return;
    }
    if (cJSON_GetObjectItemCaseSensitive(step, "reply")) {
        run_reply(r, step, at);
        return;
    }
    if (payidem_operation_poll(r->op, r->signer, now_unix(r), r->elapsed_ms, &got,
                               &err) != PAYIDEM_OK) {
        fprintf(stderr, "  %s: poll: %s\n", at, payidem_error_message(err));
        harness_current_failed = 1;
        payidem_error_free(err);
        return;
    }
    kind = payidem_step_kind(got);
    if (str_eq(expect, "persist") && kind == PAYIDEM_STEP_PERSIST) {
        VCHECK(payidem_step_persist_attempt(got) == (uint32_t)jnum(step, "attempt"), at);
        VCHECK(payidem_step_persist_first(got) == (bool)jbool(step, "first"), at);
        VCHECK(payidem_operation_persisted(r->op, NULL) == PAYIDEM_OK, at);
    } else if (str_eq(expect, "send") && kind == PAYIDEM_STEP_SEND) {
        check_send(r, got, step, at);
    } else if (str_eq(expect, "wait") && kind == PAYIDEM_STEP_WAIT) {
        uint64_t ms = payidem_step_wait_ms(got);
        const cJSON *exact = cJSON_GetObjectItemCaseSensitive(step, "ms");
        if (cJSON_IsNumber(exact)) {
            VCHECK(ms == (uint64_t)exact->valuedouble, at);
        } else {
            uint64_t max = (uint64_t)jnum(step, "max_ms");
            if (!(ms > 0 && ms <= max)) {
                fprintf(stderr, "  %s: waited %llu ms, max %llu\n", at,
                        (unsigned long long)ms, (unsigned long long)max);
                harness_current_failed = 1;
            }
        }
        r->elapsed_ms += ms;
    } else if (str_eq(expect, "end") && kind == PAYIDEM_STEP_END) {
        check_end(r, got, step, at);
        payidem_step_free(r->last_end);
        r->last_end = got;
        return;
    } else if (str_eq(expect, "end") && r->last_end != NULL) {
        check_end(r, r->last_end, step, at);
    } else {
        fprintf(stderr, "  %s: expected %s, got step kind %u\n", at,
                expect ? expect : "(none)", (unsigned)kind);
        harness_current_failed = 1;
    }
    payidem_step_free(got);
}

static void run_vector(const cJSON *vector, payidem_signer *signer) {
    const char *name = jstr(vector, "name");
    const cJSON *progress = cJSON_GetObjectItemCaseSensitive(vector, "progress");
    const cJSON *script = cJSON_GetObjectItemCaseSensitive(vector, "script");
    const cJSON *step;
    const char *key;
    struct runner r;
    int i = 0;
    char at[256];
    memset(&r, 0, sizeof r);
    r.vector = vector;
    r.operation = cJSON_GetObjectItemCaseSensitive(vector, "operation");
    r.signer = signer;
    r.start = (uint64_t)jnum(vector, "now");
    r.created_at = r.start - (uint64_t)jnum(progress, "age_secs");
    key = jstr(r.operation, "idempotency_key");
    if (key) {
        snprintf(r.key, sizeof r.key, "%s", key);
    } else {
        snprintf(r.key, sizeof r.key, "create-%s", jstr(r.operation, "order_id"));
    }
    harness_current_failed = 0;
    snprintf(at, sizeof at, "%s start", name);
    r.op = begin(&r, jstr(progress, "state"), jnum(progress, "attempts"),
                 jbool(progress, "first_recorded"), at);
    cJSON_ArrayForEach(step, script) {
        if (r.op == NULL) {
            break;
        }
        snprintf(at, sizeof at, "%s step %d", name, i++);
        run_step(&r, step, at);
    }
    if (r.last_end == NULL) {
        fprintf(stderr, "  %s: the script never checked the end\n", name);
        harness_current_failed = 1;
    }
    payidem_step_free(r.last_end);
    payidem_operation_free(r.op);
    if (harness_current_failed) {
        harness_failed++;
        printf("FAIL vector %s\n", name);
    } else {
        harness_passed++;
        printf("ok   vector %s\n", name);
    }
    fflush(stdout);
}

int main(void) {
    const char *path = getenv("PAYIDEM_OPERATION_VECTORS");
    char *text = read_file(path ? path : "core/tests/vectors/operation-v1.json");
    cJSON *doc;
    const cJSON *vectors, *vector;
    payidem_signer *signer = NULL;
    const char *secret = "0123456789abcdef0123";
    if (text == NULL || (doc = cJSON_Parse(text)) == NULL) {
        fprintf(stderr, "cannot read the operation vectors\n");
        free(text);
        printf("0 passed, 1 failed\n");
        return 1;
    }
    free(text);
    if (payidem_signer_new("key_test_1", (const uint8_t *)secret, strlen(secret),
                           &signer, NULL) != PAYIDEM_OK) {
        fprintf(stderr, "cannot make a signer\n");
        cJSON_Delete(doc);
        return 1;
    }
    vectors = cJSON_GetObjectItemCaseSensitive(doc, "vectors");
    if (cJSON_GetArraySize(vectors) < 30) {
        fprintf(stderr, "only %d operation vectors\n", cJSON_GetArraySize(vectors));
        harness_failed++;
    }
    cJSON_ArrayForEach(vector, vectors) {
        run_vector(vector, signer);
    }
    payidem_signer_free(signer);
    cJSON_Delete(doc);
    return harness_finish();
}
