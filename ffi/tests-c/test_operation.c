/*
 * The operation vectors (core/tests/vectors/operation-v1.json) run through
 * the C ABI's pure operation machine (payidem_operation_*), with the same
 * runner rules as the Rust runner (core/tests/operation_vectors.rs; see the
 * file's "about"): one test per vector. Then every vector that starts with a
 * new operation (and no learnt clock offset, no restart) runs again through
 * a client's journal-bound call (payidem_client_begin, payidem_call_*_at)
 * over a memory journal and over a SQLite journal in a temporary directory:
 * the steps and reactions it hands out, each record in the journal before
 * the next step, its end, and the journal's state and attempts after it.
 *
 * Environment: PAYIDEM_OPERATION_VECTORS (default
 * core/tests/vectors/operation-v1.json).
 */
#define _POSIX_C_SOURCE 200809L

#include <cJSON.h>
#include <stdint.h>
#include <strings.h>
#include <unistd.h>

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
    /* Through a client's call only: */
    payidem_client *client;
    payidem_call *call;
    long recorded;  /* attempts a "persist" step says the journal holds; -1 none */
    int last_next;  /* the last attempt event's next action; -1 none */
    int cancelled;  /* the call was cancelled: its END is last_end */
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

/* Checks an END step against an "end" step; `cancelled` says the call was
 * cancelled, whose result is then `cancelled` whatever the end. */
static void check_end(const struct runner *r, const payidem_step *end,
                      const cJSON *expect, int cancelled, const char *at) {
    payidem_outcome *outcome = NULL;
    payidem_error *err = NULL;
    payidem_result rc;
    cJSON *cancel_code = cJSON_CreateString("cancelled");
    const cJSON *error =
        cancelled ? cancel_code : cJSON_GetObjectItemCaseSensitive(expect, "error");
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
    cJSON_Delete(cancel_code);
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
    if (r->call != NULL) {
        r->last_next = -1;
        if (payidem_call_report_at(r->call, outcome, status > 0 ? (uint16_t)status : 0,
                                   count ? headers : NULL, count, (const uint8_t *)body,
                                   body ? strlen(body) : 0, reason, now_unix(r),
                                   r->elapsed_ms, &err) != PAYIDEM_OK) {
            fprintf(stderr, "  %s: report: %s\n", at, payidem_error_message(err));
            harness_current_failed = 1;
            payidem_error_free(err);
            return;
        }
        VCHECK(r->last_next >= 0 &&
                   str_eq(payidem_next_action_name((payidem_next_action)r->last_next),
                          jstr(step, "next")),
               at);
        return;
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

/* Checks a SEND step; `call` says it came from a client's call (with a
 * timeout) rather than the pure machine (none). */
static void check_send(const struct runner *r, const payidem_step *step,
                       const cJSON *expect, int call, const char *at) {
    const char *kind = payidem_attempt_kind_name(payidem_step_attempt_kind(step));
    size_t len = 99;
    const uint8_t *body = payidem_step_body(step, &len);
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(expect, "timestamp");
    VCHECK(str_eq(kind, jstr(expect, "kind")), at);
    VCHECK(payidem_step_attempt_number(step) == (uint32_t)jnum(expect, "number"), at);
    VCHECK(call ? payidem_step_timeout_ms(step) > 0 : payidem_step_timeout_ms(step) == 0, at);
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

/* Checks a WAIT step against a "wait" step and lets the time pass. */
static void check_wait(struct runner *r, const payidem_step *got,
                       const cJSON *step, const char *at) {
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
        check_send(r, got, step, 0, at);
    } else if (str_eq(expect, "wait") && kind == PAYIDEM_STEP_WAIT) {
        check_wait(r, got, step, at);
    } else if (str_eq(expect, "end") && kind == PAYIDEM_STEP_END) {
        check_end(r, got, step, 0, at);
        payidem_step_free(r->last_end);
        r->last_end = got;
        return;
    } else if (str_eq(expect, "end") && r->last_end != NULL) {
        check_end(r, r->last_end, step, 0, at);
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

/* Operation states by number, as payidem_client_status answers them. */
static const char *const STATE_NAMES[] = {"not_found", "pending",   "in_flight", "unknown",
                                          "succeeded", "rejected", "conflict"};

/* Checks that the journal holds the operation in `state` (NULL: any) with
 * `attempts`. */
static void check_journal(const struct runner *r, const char *state, long attempts,
                          const char *at) {
    bool found = false;
    payidem_operation_state got = PAYIDEM_STATE_NOT_FOUND;
    uint32_t got_attempts = 0;
    payidem_error *err = NULL;
    if (payidem_client_status(r->client, jstr(r->operation, "order_id"), &found, &got,
                              &got_attempts, &err) != PAYIDEM_OK) {
        fprintf(stderr, "  %s: status: %s\n", at, payidem_error_message(err));
        harness_current_failed = 1;
        payidem_error_free(err);
        return;
    }
    VCHECK(found && (unsigned)got < sizeof STATE_NAMES / sizeof STATE_NAMES[0], at);
    if (state != NULL && found) {
        VCHECK(str_eq(STATE_NAMES[got], state), at);
    }
    VCHECK((long)got_attempts == attempts, at);
}

static void on_event(void *userdata, const payidem_attempt_event *event) {
    ((struct runner *)userdata)->last_next = (int)event->next;
}

static void run_call_step(struct runner *r, const cJSON *step, const char *at) {
    const char *expect = jstr(step, "expect");
    payidem_step *got = NULL;
    payidem_error *err = NULL;
    uint32_t kind;
    if (cJSON_GetObjectItemCaseSensitive(step, "abandon")) {
        if (payidem_call_cancel(r->call, &got, &err) != PAYIDEM_OK) {
            fprintf(stderr, "  %s: cancel: %s\n", at, payidem_error_message(err));
            harness_current_failed = 1;
            payidem_error_free(err);
            return;
        }
        payidem_step_free(r->last_end);
        r->last_end = got;
        r->cancelled = 1;
        return;
    }
    if (cJSON_GetObjectItemCaseSensitive(step, "reply")) {
        run_reply(r, step, at);
        return;
    }
    if (str_eq(expect, "persist")) {
        /* The call makes the record itself, before its next step. */
        r->recorded = (long)jnum(step, "attempt");
        return;
    }
    if (r->cancelled) {
        got = NULL;
    } else if (payidem_call_step_at(r->call, now_unix(r), r->elapsed_ms, &got, &err) !=
               PAYIDEM_OK) {
        fprintf(stderr, "  %s: step: %s\n", at, payidem_error_message(err));
        harness_current_failed = 1;
        payidem_error_free(err);
        return;
    }
    if (r->recorded >= 0) {
        check_journal(r, NULL, r->recorded, at);
        r->recorded = -1;
    }
    kind = got ? payidem_step_kind(got) : PAYIDEM_STEP_END;
    if (str_eq(expect, "send") && kind == PAYIDEM_STEP_SEND) {
        if (payidem_step_attempt_kind(got) == PAYIDEM_ATTEMPT_KIND_OPERATION) {
            /* Never sent before its record. */
            check_journal(r, "in_flight", (long)payidem_step_attempt_number(got), at);
        }
        check_send(r, got, step, 1, at);
    } else if (str_eq(expect, "wait") && kind == PAYIDEM_STEP_WAIT) {
        check_wait(r, got, step, at);
    } else if (str_eq(expect, "end") && kind == PAYIDEM_STEP_END) {
        check_end(r, got ? got : r->last_end, step, r->cancelled, at);
        check_journal(r, jstr(step, "state"), (long)jnum(step, "journal_attempts"), at);
        if (got) {
            payidem_step_free(r->last_end);
            r->last_end = got;
        }
        return;
    } else {
        fprintf(stderr, "  %s: expected %s, got step kind %u\n", at,
                expect ? expect : "(none)", (unsigned)kind);
        harness_current_failed = 1;
    }
    payidem_step_free(got);
}

/* Whether a vector can start through a client's call: a new operation
 * (opened by the call), no clock offset learnt before, no restart. */
static int runs_through_call(const cJSON *vector) {
    const cJSON *progress = cJSON_GetObjectItemCaseSensitive(vector, "progress");
    const cJSON *setup = cJSON_GetObjectItemCaseSensitive(vector, "setup");
    const cJSON *step;
    int fresh = jnum(progress, "age_secs") == 0 &&
                (jbool(progress, "first_recorded") ||
                 (str_eq(jstr(progress, "state"), "pending") && jnum(progress, "attempts") == 0));
    if (!fresh || jnum(setup, "clock_offset") != 0) {
        return 0;
    }
    cJSON_ArrayForEach(step, cJSON_GetObjectItemCaseSensitive(vector, "script")) {
        if (cJSON_GetObjectItemCaseSensitive(step, "restart")) {
            return 0;
        }
    }
    return 1;
}

/* The longest settled retention the settings allow (about 31 years). */
#define SETTLED_RETENTION_S 1000000000.0

/* The options of a client for a vector's setup, over `journal_path`. */
static char *client_options(const cJSON *setup, const char *journal_path) {
    cJSON *o = cJSON_CreateObject();
    cJSON *retry = cJSON_CreateObject();
    const cJSON *budget = cJSON_GetObjectItemCaseSensitive(setup, "retry_budget");
    int trusted = jbool(setup, "clock_trusted");
    char *json;
    cJSON_AddStringToObject(o, "base_url", trusted ? "https://pay.example" : "http://pay.example");
    cJSON_AddStringToObject(o, "key_id", "key_test_1");
    cJSON_AddStringToObject(o, "journal_path", journal_path);
    cJSON_AddBoolToObject(o, "allow_insecure_http", !trusted);
    /* The vectors' clocks are in the past: a settled row's time must stay
     * after the journal's purge horizon. */
    cJSON_AddNumberToObject(o, "settled_retention_s", SETTLED_RETENTION_S);
    cJSON_AddNumberToObject(o, "key_retention_s", jnum(setup, "key_retention_secs"));
    cJSON_AddNumberToObject(o, "max_clock_offset_s", jnum(setup, "max_clock_offset_secs"));
    cJSON_AddNumberToObject(retry, "base_ms", jnum(setup, "backoff_base_ms"));
    cJSON_AddNumberToObject(retry, "cap_ms", jnum(setup, "backoff_cap_ms"));
    cJSON_AddNumberToObject(retry, "max_attempts", jnum(setup, "max_attempts"));
    cJSON_AddNumberToObject(retry, "deadline_ms", jnum(setup, "deadline_ms"));
    cJSON_AddItemToObject(o, "retry", retry);
    if (cJSON_IsObject(budget)) {
        cJSON_AddItemToObject(o, "retry_budget", cJSON_Duplicate(budget, 1));
    }
    json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return json;
}

/* Runs one vector through a client's call over `journal_path`. */
static void run_call_vector(const cJSON *vector, const char *journal_path,
                            const char *journal_name) {
    const char *name = jstr(vector, "name");
    const cJSON *op;
    const cJSON *step;
    const char *body, *key, *status_path;
    struct runner r;
    payidem_error *err = NULL;
    char *options;
    int i = 0;
    char at[256];
    memset(&r, 0, sizeof r);
    r.vector = vector;
    r.operation = op = cJSON_GetObjectItemCaseSensitive(vector, "operation");
    r.start = (uint64_t)jnum(vector, "now");
    r.recorded = -1;
    r.last_next = -1;
    key = jstr(op, "idempotency_key");
    snprintf(r.key, sizeof r.key, "%s", key);
    harness_current_failed = 0;
    snprintf(at, sizeof at, "%s (call, %s) start", name, journal_name);
    options = client_options(cJSON_GetObjectItemCaseSensitive(vector, "setup"), journal_path);
    body = jstr(op, "body");
    status_path = jstr(op, "status_path");
    if (payidem_client_new(options, (const uint8_t *)"0123456789abcdef0123", 20, &r.client,
                           &err) != PAYIDEM_OK ||
        (payidem_client_set_event_callback(r.client, on_event, &r),
         payidem_client_begin(r.client, jstr(op, "order_id"), jstr(op, "method"),
                              jstr(op, "path"), (const uint8_t *)body, strlen(body), key,
                              status_path, 0, &r.call, &err) != PAYIDEM_OK)) {
        fprintf(stderr, "  %s: %s\n", at, payidem_error_message(err));
        harness_current_failed = 1;
        payidem_error_free(err);
    }
    cJSON_free(options);
    cJSON_ArrayForEach(step, cJSON_GetObjectItemCaseSensitive(vector, "script")) {
        if (r.call == NULL) {
            break;
        }
        snprintf(at, sizeof at, "%s (call, %s) step %d", name, journal_name, i++);
        run_call_step(&r, step, at);
    }
    if (r.last_end == NULL) {
        fprintf(stderr, "  %s (call, %s): the script never checked the end\n", name,
                journal_name);
        harness_current_failed = 1;
    }
    payidem_step_free(r.last_end);
    payidem_call_free(r.call);
    payidem_client_free(r.client);
    if (harness_current_failed) {
        harness_failed++;
        printf("FAIL vector %s through a call over a %s journal\n", name, journal_name);
    } else {
        harness_passed++;
        printf("ok   vector %s through a call over a %s journal\n", name, journal_name);
    }
    fflush(stdout);
}

/* Runs every vector that can start through a client's call over a memory
 * and a SQLite journal; returns how many vectors ran. */
static int run_call_vectors(const cJSON *vectors) {
    const cJSON *vector;
    char dir[] = "/tmp/payidem-vectors-XXXXXX";
    char path[512];
    int n = 0, ran = 0;
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "cannot make a temporary directory\n");
        harness_failed++;
        return 0;
    }
    cJSON_ArrayForEach(vector, vectors) {
        if (!runs_through_call(vector)) {
            continue;
        }
        run_call_vector(vector, ":memory:", "memory");
        snprintf(path, sizeof path, "%s/journal-%d.db", dir, n++);
        run_call_vector(vector, path, "SQLite");
        ran++;
    }
    while (n-- > 0) {
        const char *suffixes[] = {"", "-wal", "-shm"};
        size_t k;
        for (k = 0; k < 3; k++) {
            snprintf(path, sizeof path, "%s/journal-%d.db%s", dir, n, suffixes[k]);
            unlink(path);
        }
    }
    rmdir(dir);
    return ran;
}

int main(void) {
    const char *path = getenv("PAYIDEM_OPERATION_VECTORS");
    char *text = read_file(path ? path : "core/tests/vectors/operation-v1.json");
    cJSON *doc;
    const cJSON *vectors, *vector;
    payidem_signer *signer = NULL;
    int ran;
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
    ran = run_call_vectors(vectors);
    printf("%d of %d vectors ran through a client's call (memory and SQLite journals)\n", ran,
           cJSON_GetArraySize(vectors));
    if (ran < 28) {
        fprintf(stderr, "only %d vectors ran through a call\n", ran);
        harness_failed++;
    }
    payidem_signer_free(signer);
    cJSON_Delete(doc);
    return harness_finish();
}
