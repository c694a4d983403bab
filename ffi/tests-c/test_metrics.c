/*
 * Metrics and events through the C ABI: a client paying through a mock
 * that answers 504 after committing some attempts; its metrics (Prometheus
 * text and JSON) count exactly what its event callbacks saw and what the
 * mock's oracle (/_mock/stats, /metrics) counted; the JSON
 * event callback delivers call ends; the log level of every attempt given
 * by payidem_attempt_event_level equals the level the core wrote in the
 * same attempt's JSON event; a verifier counts its verdicts; a call that
 * outlives its client (driven here over a socket) fires none of the freed
 * client's callbacks, whose userdata is freed, and a new client inherits
 * none of them.
 *
 * Needs PAYIDEM_MOCK (default target/release/payidem-mock) and cJSON.
 */
#define _POSIX_C_SOURCE 200809L

#include <cJSON.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "harness.h"

#define EXPECT_OK(call, err)                                                   \
    do {                                                                       \
        payidem_result r_ = (call);                                            \
        if (r_ != PAYIDEM_OK) {                                                \
            fprintf(stderr, "  %s:%d: %s failed: %s\n", __FILE__, __LINE__,    \
                    #call, payidem_error_message(err));                        \
            harness_current_failed = 1;                                        \
        }                                                                      \
        payidem_error_free(err);                                               \
        (err) = NULL;                                                          \
    } while (0)

#define MAX_EVENTS 512

struct seen {
    int attempts;
    int status_504;
    int status_queries;
    const char *levels[MAX_EVENTS]; /* from payidem_attempt_event_level */
    int json_attempts;
    const char *json_levels[MAX_EVENTS]; /* from the core's JSON */
    int call_ends;
    int succeeded;
};

static const char *static_level(const char *name) {
    if (strcmp(name, "debug") == 0) return "debug";
    if (strcmp(name, "info") == 0) return "info";
    if (strcmp(name, "warn") == 0) return "warn";
    return "?";
}

static void on_attempt(void *userdata, const payidem_attempt_event *ev) {
    struct seen *s = userdata;
    if (s->attempts < MAX_EVENTS) {
        s->levels[s->attempts] =
            payidem_log_level_name((uint32_t)payidem_attempt_event_level(ev));
    }
    s->attempts++;
    if (ev->http_status == 504) s->status_504++;
    if (ev->kind == PAYIDEM_ATTEMPT_KIND_STATUS_QUERY) s->status_queries++;
}

static void on_json(void *userdata, const char *json) {
    struct seen *s = userdata;
    cJSON *doc = cJSON_Parse(json);
    const char *type, *level;
    if (doc == NULL) {
        harness_current_failed = 1;
        return;
    }
    type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "type"));
    level = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "level"));
    if (type && level && strcmp(type, "attempt") == 0) {
        if (s->json_attempts < MAX_EVENTS) s->json_levels[s->json_attempts] = static_level(level);
        s->json_attempts++;
    } else if (type && strcmp(type, "call_ended") == 0) {
        const char *end = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "end"));
        s->call_ends++;
        if (end && strcmp(end, "succeeded") == 0) s->succeeded++;
        if (cJSON_GetObjectItemCaseSensitive(doc, "order_id") == NULL) harness_current_failed = 1;
    }
    cJSON_Delete(doc);
}

/* The value of the sample line starting with `series ` in `text`. */
static double sample(const char *text, const char *series) {
    const char *p = text;
    size_t n = strlen(series);
    while ((p = strstr(p, series)) != NULL) {
        if ((p == text || p[-1] == '\n') && p[n] == ' ') return atof(p + n + 1);
        p += n;
    }
    return -1;
}

/* The body of GET `path` from the mock on 127.0.0.1:`port` (malloc'd; NULL
 * on failure). */
static char *http_get(int port, const char *path) {
    struct sockaddr_in addr;
    char request[256];
    size_t cap = 1 << 16, len = 0;
    ssize_t n;
    char *raw, *body, *out = NULL;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return NULL;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    raw = malloc(cap + 1);
    if (raw == NULL || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        free(raw);
        close(fd);
        return NULL;
    }
    snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n", path, port);
    if (write(fd, request, strlen(request)) == (ssize_t)strlen(request)) {
        while (len < cap && (n = read(fd, raw + len, cap - len)) > 0) len += (size_t)n;
    }
    close(fd);
    raw[len] = 0;
    body = strstr(raw, "\r\n\r\n");
    if (body != NULL) {
        out = malloc(strlen(body + 4) + 1);
        if (out != NULL) strcpy(out, body + 4);
    }
    free(raw);
    return out;
}

static double stats_number(cJSON *stats, const char *group, const char *name) {
    return cJSON_GetNumberValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(stats, group), name));
}

static char *metrics_of(payidem_client *client, payidem_metrics_format format) {
    payidem_error *err = NULL;
    size_t len = 0;
    char *buf;
    CHECK(payidem_client_metrics(client, (uint32_t)format, NULL, 0, &len, &err) ==
          PAYIDEM_BUFFER_TOO_SMALL);
    payidem_error_free(err);
    err = NULL;
    buf = malloc(len + 1);
    EXPECT_OK(payidem_client_metrics(client, (uint32_t)format, buf, len + 1, &len, &err), err);
    return buf;
}

/* Sends the SEND step `step` to the mock on 127.0.0.1:`port` and reports
 * what came back to `call` (a response, or nothing sent / no response).
 * Returns 0 when a response came. */
static int send_step(int port, const payidem_step *step, payidem_call *call) {
    struct sockaddr_in addr;
    size_t cap = 1 << 16, len = 0, i, body_len = 0, head_len;
    size_t count = payidem_step_header_count(step);
    const uint8_t *body = payidem_step_body(step, &body_len);
    const char *name, *value, *answer_body = "";
    char *head, *raw;
    int status = 0, fd, rc = -1;
    ssize_t n;
    payidem_error *err = NULL;
    head = malloc(8192);
    raw = malloc(cap + 1);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (head == NULL || raw == NULL || fd < 0) goto out;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        EXPECT_OK(payidem_call_report(call, PAYIDEM_ATTEMPT_NOT_SENT, 0, NULL, 0, NULL, 0,
                                      "connect failed", &err),
                  err);
        goto out;
    }
    head_len = (size_t)snprintf(head, 8192, "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n",
                                payidem_step_method(step), payidem_step_path(step), port);
    for (i = 0; i < count && head_len < 7000; i++) {
        if (payidem_step_header_at(step, i, &name, &value)) {
            head_len += (size_t)snprintf(head + head_len, 8192 - head_len, "%s: %s\r\n", name, value);
        }
    }
    head_len += (size_t)snprintf(head + head_len, 8192 - head_len,
                                 "Content-Length: %zu\r\nConnection: close\r\n\r\n", body_len);
    if (write(fd, head, head_len) != (ssize_t)head_len ||
        (body_len > 0 && write(fd, body, body_len) != (ssize_t)body_len)) {
        EXPECT_OK(payidem_call_report(call, PAYIDEM_ATTEMPT_SENT_NO_RESPONSE, 0, NULL, 0, NULL, 0,
                                      "write failed", &err),
                  err);
        goto out;
    }
    while (len < cap && (n = read(fd, raw + len, cap - len)) > 0) len += (size_t)n;
    raw[len] = 0;
    if (sscanf(raw, "HTTP/1.1 %d", &status) != 1 || strstr(raw, "\r\n\r\n") == NULL) {
        EXPECT_OK(payidem_call_report(call, PAYIDEM_ATTEMPT_SENT_NO_RESPONSE, 0, NULL, 0, NULL, 0,
                                      "no answer", &err),
                  err);
        goto out;
    }
    answer_body = strstr(raw, "\r\n\r\n") + 4;
    EXPECT_OK(payidem_call_report(call, PAYIDEM_ATTEMPT_RESPONSE, (uint16_t)status, NULL, 0,
                                  (const uint8_t *)answer_body, strlen(answer_body), NULL, &err),
              err);
    rc = 0;
out:
    if (fd >= 0) close(fd);
    free(head);
    free(raw);
    return rc;
}

/* Set once the client below is freed; a callback that runs afterwards
 * counts itself here before touching its (freed) userdata. */
static int probe_client_freed;
static int probe_calls_after_free;

struct probe {
    int attempts;
    int json;
};

static void probe_attempt(void *userdata, const payidem_attempt_event *ev) {
    (void)ev;
    if (probe_client_freed) {
        probe_calls_after_free++;
        return;
    }
    ((struct probe *)userdata)->attempts++;
}

static void probe_json(void *userdata, const char *json) {
    (void)json;
    if (probe_client_freed) {
        probe_calls_after_free++;
        return;
    }
    ((struct probe *)userdata)->json++;
}

/* Drives `call` to its END with the mock; returns the END's name. */
static const char *drive_call(int port, payidem_call *call, char *end_name, size_t cap) {
    payidem_error *err = NULL;
    int rounds;
    end_name[0] = 0;
    for (rounds = 0; rounds < 50; rounds++) {
        payidem_step *step = NULL;
        uint32_t kind;
        EXPECT_OK(payidem_call_step(call, &step, &err), err);
        if (step == NULL) break;
        kind = payidem_step_kind(step);
        if (kind == PAYIDEM_STEP_SEND) {
            send_step(port, step, call);
        } else if (kind == PAYIDEM_STEP_WAIT) {
            sleep_ms((long)payidem_step_wait_ms(step));
        } else {
            const char *name = payidem_step_end_name(step);
            snprintf(end_name, cap, "%s", name ? name : "(none)");
            payidem_step_free(step);
            break;
        }
        payidem_step_free(step);
    }
    return end_name;
}

static void test_a_freed_clients_callbacks_never_fire(void) {
    struct mock mock;
    struct probe *probe = malloc(sizeof *probe);
    struct probe second = {0, 0};
    payidem_client *client, *next;
    payidem_call *call = NULL;
    payidem_outcome *outcome = NULL;
    payidem_error *err = NULL;
    const char *body0 = "{\"order_id\":\"c-freed-0\",\"amount\":1,\"currency\":\"EUR\"}";
    const char *body = "{\"order_id\":\"c-freed-1\",\"amount\":700,\"currency\":\"EUR\"}";
    const char *body2 = "{\"order_id\":\"c-freed-2\",\"amount\":2,\"currency\":\"EUR\"}";
    const char *body3 = "{\"order_id\":\"c-freed-3\",\"amount\":3,\"currency\":\"EUR\"}";
    char end[64];
    CHECK(probe != NULL);
    CHECK(mock_start(&mock, NULL) == 0);
    client = new_client(mock.base_url, "");
    CHECK(client != NULL);
    if (client == NULL || probe == NULL) {
        free(probe);
        mock_stop(&mock);
        return;
    }
    probe->attempts = probe->json = 0;
    payidem_client_set_event_callback(client, probe_attempt, probe);
    payidem_client_set_event_json_callback(client, probe_json, probe);
    /* Both fire while the client lives: one attempt, one call end. */
    EXPECT_OK(payidem_client_execute(client, "c-freed-0", "POST", "/v1/payments",
                                     (const uint8_t *)body0, strlen(body0), NULL, NULL, &outcome,
                                     &err),
              err);
    payidem_outcome_free(outcome);
    outcome = NULL;
    CHECK(probe->attempts == 1);
    CHECK(probe->json == 2);

    /* A call begun by the client outlives it and its userdata. */
    EXPECT_OK(payidem_client_begin(client, "c-freed-1", "POST", "/v1/payments",
                                   (const uint8_t *)body, strlen(body), NULL, NULL, 0, &call, &err),
              err);
    payidem_client_free(client);
    probe_client_freed = 1;
    free(probe);
    CHECK(call != NULL);
    if (call != NULL) {
        CHECK_STR(drive_call(mock.port, call, end, sizeof end), "succeeded");
        payidem_call_free(call);
    }
    CHECK(probe_calls_after_free == 0);

    /* A new client (often at the freed one's address) inherits nothing:
     * only its own callbacks fire. */
    next = new_client(mock.base_url, "");
    CHECK(next != NULL);
    if (next != NULL) {
        EXPECT_OK(payidem_client_execute(next, "c-freed-2", "POST", "/v1/payments",
                                         (const uint8_t *)body2, strlen(body2), NULL, NULL,
                                         &outcome, &err),
                  err);
        payidem_outcome_free(outcome);
        outcome = NULL;
        CHECK(probe_calls_after_free == 0);
        probe_client_freed = 0;
        payidem_client_set_event_callback(next, probe_attempt, &second);
        payidem_client_set_event_json_callback(next, probe_json, &second);
        call = NULL;
        EXPECT_OK(payidem_client_begin(next, "c-freed-3", "POST", "/v1/payments",
                                       (const uint8_t *)body3, strlen(body3), NULL, NULL, 0, &call,
                                       &err),
                  err);
        if (call != NULL) {
            CHECK_STR(drive_call(mock.port, call, end, sizeof end), "succeeded");
            payidem_call_free(call);
        }
        CHECK(second.attempts == 1);
        CHECK(second.json == 2);
        payidem_client_free(next);
    }
    mock_stop(&mock);
}

static void test_client_metrics_count_what_the_events_saw(void) {
    const char *flags[] = {"--control", "--seed", "11", "--fault", "timeout_504_after_commit=0.3", NULL};
    struct mock mock;
    struct seen seen;
    payidem_client *client;
    payidem_error *err = NULL;
    char order[64], body[128], path[128], series[256];
    char *text, *json, *reply;
    cJSON *doc, *metric, *stats;
    int i, n = 20, found_json = 0;
    memset(&seen, 0, sizeof seen);
    CHECK(mock_start(&mock, flags) == 0);
    client = new_client(mock.base_url, "\"retry\":{\"base_ms\":5,\"cap_ms\":50}");
    CHECK(client != NULL);
    if (client == NULL) {
        mock_stop(&mock);
        return;
    }
    payidem_client_set_event_callback(client, on_attempt, &seen);
    payidem_client_set_event_json_callback(client, on_json, &seen);
    for (i = 0; i < n; i++) {
        payidem_outcome *outcome = NULL;
        snprintf(order, sizeof order, "c-metrics-%d", i);
        snprintf(body, sizeof body, "{\"order_id\":\"%s\",\"amount\":%d,\"currency\":\"EUR\"}", order,
                 100 + i);
        snprintf(path, sizeof path, "/v1/payments?order_id=%s", order);
        EXPECT_OK(payidem_client_execute(client, order, "POST", "/v1/payments", (const uint8_t *)body,
                                         strlen(body), NULL, path, &outcome, &err),
                  err);
        payidem_outcome_free(outcome);
    }
    /* After removal, nothing more is delivered to the JSON callback. */
    payidem_client_set_event_json_callback(client, NULL, NULL);

    CHECK(seen.status_504 > 0);
    CHECK(seen.status_queries == seen.status_504);
    CHECK(seen.json_attempts == seen.attempts);
    CHECK(seen.call_ends == n);
    CHECK(seen.succeeded == n);
    for (i = 0; i < seen.attempts && i < MAX_EVENTS; i++) {
        CHECK_STR(seen.levels[i], seen.json_levels[i]);
    }
    CHECK_STR(payidem_log_level_name(PAYIDEM_LOG_WARN), "warn");

    text = metrics_of(client, PAYIDEM_METRICS_PROMETHEUS);
    CHECK(strstr(text, "# TYPE payidem_client_attempts_total counter\n") != NULL);
    CHECK(sample(text, "payidem_client_calls_ended_total{end=\"succeeded\"}") == n);
    snprintf(series, sizeof series,
             "payidem_client_attempts_total{kind=\"operation\",http_request_method=\"POST\","
             "http_response_status_code=\"504\",next=\"query_status\"}");
    CHECK(sample(text, series) == seen.status_504);
    CHECK(sample(text, "payidem_client_attempt_duration_seconds_count{kind=\"status_query\","
                       "http_request_method=\"GET\"}") == seen.status_queries);
    CHECK(sample(text, "payidem_client_unknown_operations") == 0);

    /* The mock's oracle counted the same faults and status queries, and its
     * verifier accepted every signed request the client sent. */
    reply = http_get(mock.port, "/_mock/stats");
    stats = reply ? cJSON_Parse(reply) : NULL;
    CHECK(stats != NULL);
    CHECK(stats_number(stats, "faults", "timeout_504_after_commit") == seen.status_504);
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
              cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(stats, "requests"),
                                               "by_route"),
              "GET /v1/payments?order_id")) == seen.status_queries);
    cJSON_Delete(stats);
    free(reply);
    reply = http_get(mock.port, "/metrics");
    CHECK(reply != NULL);
    if (reply != NULL) {
        CHECK(sample(reply, "payidem_verifier_verdicts_total{code=\"accepted\"}") == seen.attempts);
    }
    free(reply);
    free(text);

    json = metrics_of(client, PAYIDEM_METRICS_JSON);
    doc = cJSON_Parse(json);
    CHECK(doc != NULL);
    cJSON_ArrayForEach(metric, cJSON_GetObjectItemCaseSensitive(doc, "metrics")) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(metric, "name"));
        if (name && strcmp(name, "payidem_client_settle_duration_seconds") == 0) {
            cJSON *series0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(metric, "series"), 0);
            CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(metric, "type")),
                      "histogram");
            CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(series0, "count")) == n);
            found_json = 1;
        }
    }
    CHECK(found_json);
    cJSON_Delete(doc);
    free(json);

    CHECK(payidem_client_metrics(client, 9, NULL, 0, NULL, &err) == PAYIDEM_INVALID_ARGUMENT);
    CHECK_STR(payidem_error_field(err), "format");
    payidem_error_free(err);
    err = NULL;
    payidem_client_free(client);
    mock_stop(&mock);
}

static void test_verifier_metrics_count_verdicts(void) {
    payidem_signer *signer = NULL;
    payidem_verifier *verifier = NULL;
    payidem_error *err = NULL;
    payidem_signed_headers s;
    payidem_header hs[5];
    const uint8_t *secrets[1] = {(const uint8_t *)MOCK_SECRET};
    size_t lens[1] = {strlen(MOCK_SECRET)};
    const char *body = "{\"amount\":1}";
    uint64_t now = 1800000000u;
    uint16_t status = 0;
    char buf[4096];
    size_t len = 0;
    EXPECT_OK(payidem_signer_new(MOCK_KEY_ID, (const uint8_t *)MOCK_SECRET, strlen(MOCK_SECRET),
                                 &signer, &err),
              err);
    EXPECT_OK(payidem_verifier_new(300, 1000, &verifier, &err), err);
    EXPECT_OK(payidem_verifier_add_key(verifier, MOCK_KEY_ID, secrets, lens, 1, &err), err);
    EXPECT_OK(payidem_signer_sign_into(signer, "POST", "/v1/payments", "create-v",
                                       (const uint8_t *)body, strlen(body), now, &s, &err),
              err);
    hs[0].name = PAYIDEM_HEADER_API_KEY;
    hs[0].value = s.api_key;
    hs[1].name = PAYIDEM_HEADER_TIMESTAMP;
    hs[1].value = s.timestamp;
    hs[2].name = PAYIDEM_HEADER_NONCE;
    hs[2].value = s.nonce;
    hs[3].name = PAYIDEM_HEADER_SIGNATURE;
    hs[3].value = s.signature;
    hs[4].name = PAYIDEM_HEADER_IDEMPOTENCY_KEY;
    hs[4].value = s.idempotency_key;
    EXPECT_OK(payidem_verifier_verify(verifier, "POST", "/v1/payments", hs, 5,
                                      (const uint8_t *)body, strlen(body), now, &status, &err),
              err);
    CHECK(payidem_verifier_verify(verifier, "POST", "/v1/payments", hs, 5, (const uint8_t *)body,
                                  strlen(body), now, &status, &err) == PAYIDEM_NONCE_REUSED);
    payidem_error_free(err);
    err = NULL;
    EXPECT_OK(payidem_verifier_metrics(verifier, PAYIDEM_METRICS_PROMETHEUS, buf, sizeof buf, &len,
                                       &err),
              err);
    CHECK(len == strlen(buf));
    CHECK(sample(buf, "payidem_verifier_verdicts_total{code=\"accepted\"}") == 1);
    CHECK(sample(buf, "payidem_verifier_verdicts_total{code=\"nonce_reused\"}") == 1);
    CHECK(sample(buf, "payidem_verifier_replay_cache_entries") == 1);
    CHECK(sample(buf, "payidem_verifier_replay_cache_capacity") > 0);
    payidem_verifier_free(verifier);
    payidem_signer_free(signer);
}

int main(void) {
    RUN(test_client_metrics_count_what_the_events_saw);
    RUN(test_verifier_metrics_count_verdicts);
    RUN(test_a_freed_clients_callbacks_never_fire);
    return harness_finish();
}
