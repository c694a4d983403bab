/*
 * Payments through libpayidem with the program's own HTTP client (libcurl):
 * the library journals, signs and decides; this program only sends what it
 * is told to send, sleeps when told to wait, and reports what happened.
 *
 *   cc pay_curl.c $(pkg-config --cflags --libs payidem) -lcurl -o pay_curl
 *   ./pay_curl BASE_URL JOURNAL ORDER_ID AMOUNT   # pay one order
 *   ./pay_curl BASE_URL JOURNAL resume            # finish every order whose
 *                                                 # outcome is unknown
 *
 * JOURNAL is the SQLite journal file: after a crash (kill -9 included) the
 * `resume` run finds the orders that were in flight and completes them with
 * their own idempotency keys, so each order is paid exactly once.
 *
 * After each reported attempt it prints "sent attempt N" to stderr. Exit
 * status: 0 when every order is paid, 1 otherwise, 2 for bad arguments.
 * Uses the mock's public test key; a real integration reads its key id and
 * secret from its own configuration.
 */
#define _POSIX_C_SOURCE 200809L

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <payidem.h>

#define MAX_HEADERS 64

/* One HTTP answer as libcurl delivers it. */
struct answer {
    char *body;
    size_t body_len;
    char *names[MAX_HEADERS];
    char *values[MAX_HEADERS];
    size_t header_count;
};

static void answer_clear(struct answer *a) {
    size_t i;
    for (i = 0; i < a->header_count; i++) {
        free(a->names[i]);
        free(a->values[i]);
    }
    free(a->body);
    memset(a, 0, sizeof *a);
}

static size_t on_body(char *data, size_t size, size_t n, void *userdata) {
    struct answer *a = userdata;
    size_t len = size * n;
    char *grown = realloc(a->body, a->body_len + len + 1);
    if (grown == NULL) {
        return 0; /* makes curl fail the transfer */
    }
    memcpy(grown + a->body_len, data, len);
    a->body = grown;
    a->body_len += len;
    a->body[a->body_len] = '\0';
    return len;
}

static char *trimmed_copy(const char *start, const char *end) {
    char *copy;
    while (start < end && (*start == ' ' || *start == '\t')) {
        start++;
    }
    while (end > start && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t')) {
        end--;
    }
    copy = malloc((size_t)(end - start) + 1);
    if (copy) {
        memcpy(copy, start, (size_t)(end - start));
        copy[end - start] = '\0';
    }
    return copy;
}

static size_t on_header(char *line, size_t size, size_t n, void *userdata) {
    struct answer *a = userdata;
    size_t len = size * n;
    const char *colon = memchr(line, ':', len);
    if (len >= 5 && memcmp(line, "HTTP/", 5) == 0) {
        /* A new status line (after a 100 Continue): keep only the last
         * response's headers. */
        size_t i;
        for (i = 0; i < a->header_count; i++) {
            free(a->names[i]);
            free(a->values[i]);
        }
        a->header_count = 0;
        return len;
    }
    if (colon != NULL && a->header_count < MAX_HEADERS) {
        char *name = trimmed_copy(line, colon);
        char *value = trimmed_copy(colon + 1, line + len);
        if (name == NULL || value == NULL) {
            free(name);
            free(value);
            return 0;
        }
        a->names[a->header_count] = name;
        a->values[a->header_count] = value;
        a->header_count++;
    }
    return len;
}

/* Whether a libcurl failure happened before any byte of the request was
 * written: then nothing reached the platform (NOT_SENT). Every other
 * failure may have left after the request (SENT_NO_RESPONSE): reporting a
 * possible landing is never wrong, only slower. */
static int failed_before_sending(CURLcode code) {
    switch (code) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
        return 1;
    default:
        return 0;
    }
}

static void sleep_ms(uint64_t ms) {
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Sends one SEND step with libcurl and reports the result to the call. */
static int send_attempt(const payidem_client *client, payidem_call *call, CURL *curl,
                        const payidem_step *step) {
    const char *path = payidem_step_path(step);
    const char *method = payidem_step_method(step);
    size_t body_len = 0, url_len = 0, i;
    const uint8_t *body = payidem_step_body(step, &body_len);
    struct curl_slist *headers = NULL;
    struct answer answer;
    char *url = NULL;
    char errbuf[CURL_ERROR_SIZE];
    payidem_error *err = NULL;
    payidem_header reported[MAX_HEADERS];
    payidem_result rc;
    CURLcode code;
    int ok = 0;

    memset(&answer, 0, sizeof answer);
    errbuf[0] = '\0';
    /* The full URL: the base URL's origin and the signed request target. */
    payidem_client_url(client, path, NULL, 0, &url_len, NULL);
    url = malloc(url_len + 1);
    if (url == NULL || payidem_client_url(client, path, url, url_len + 1, NULL, &err) != PAYIDEM_OK) {
        fprintf(stderr, "url: %s\n", err ? payidem_error_message(err) : "out of memory");
        goto done;
    }
    for (i = 0; i < payidem_step_header_count(step); i++) {
        const char *name, *value;
        char line[1024];
        struct curl_slist *grown;
        if (!payidem_step_header_at(step, i, &name, &value)) {
            goto done;
        }
        snprintf(line, sizeof line, "%s: %s", name, value);
        grown = curl_slist_append(headers, line);
        if (grown == NULL) {
            goto done;
        }
        headers = grown;
    }
    {
        /* No "Expect: 100-continue" round trip. */
        struct curl_slist *grown = curl_slist_append(headers, "Expect:");
        if (grown == NULL) {
            goto done;
        }
        headers = grown;
    }

    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)payidem_step_timeout_ms(step));
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &answer);
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, (const char *)body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    }
    code = curl_easy_perform(curl);

    if (code == CURLE_OK) {
        long status = 0;
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
        for (i = 0; i < answer.header_count; i++) {
            reported[i].name = answer.names[i];
            reported[i].value = answer.values[i];
        }
        rc = payidem_call_report(call, PAYIDEM_ATTEMPT_RESPONSE, (uint16_t)status,
                                 answer.header_count ? reported : NULL, answer.header_count,
                                 (const uint8_t *)answer.body, answer.body_len, NULL, &err);
        fprintf(stderr, "sent attempt %u (%s %s): HTTP %ld\n", payidem_step_attempt_number(step),
                method, path, status);
    } else {
        char reason[CURL_ERROR_SIZE + 64];
        uint32_t outcome = failed_before_sending(code) ? PAYIDEM_ATTEMPT_NOT_SENT
                                                       : PAYIDEM_ATTEMPT_SENT_NO_RESPONSE;
        snprintf(reason, sizeof reason, "libcurl %d: %s", (int)code,
                 errbuf[0] ? errbuf : curl_easy_strerror(code));
        rc = payidem_call_report(call, outcome, 0, NULL, 0, NULL, 0, reason, &err);
        fprintf(stderr, "sent attempt %u (%s %s): %s (%s)\n", payidem_step_attempt_number(step),
                method, path, outcome == PAYIDEM_ATTEMPT_NOT_SENT ? "not sent" : "no response",
                reason);
    }
    fflush(stderr);
    if (rc != PAYIDEM_OK) {
        fprintf(stderr, "report: %s\n", payidem_error_message(err));
        goto done;
    }
    ok = 1;
done:
    payidem_error_free(err);
    curl_slist_free_all(headers);
    answer_clear(&answer);
    free(url);
    return ok;
}

/* Drives one call to its end; 1 when the order is paid. */
static int drive(const payidem_client *client, payidem_call *call, CURL *curl, const char *order_id) {
    for (;;) {
        payidem_step *step = NULL;
        payidem_error *err = NULL;
        uint32_t kind;
        if (payidem_call_step(call, &step, &err) != PAYIDEM_OK) {
            fprintf(stderr, "%s: step: %s\n", order_id, payidem_error_message(err));
            payidem_error_free(err);
            return 0;
        }
        kind = payidem_step_kind(step);
        if (kind == PAYIDEM_STEP_SEND) {
            int sent = send_attempt(client, call, curl, step);
            payidem_step_free(step);
            if (!sent) {
                return 0; /* freeing the call leaves the journal right */
            }
        } else if (kind == PAYIDEM_STEP_WAIT) {
            uint64_t ms = payidem_step_wait_ms(step);
            payidem_step_free(step);
            sleep_ms(ms);
        } else {
            payidem_outcome *outcome = NULL;
            payidem_result rc = payidem_step_end_result(step, &outcome, &err);
            int paid = rc == PAYIDEM_OK;
            if (paid) {
                const uint8_t *body = NULL;
                size_t len = 0;
                payidem_outcome_body(outcome, &body, &len);
                printf("paid %s: HTTP %u key=%s attempts=%u replayed=%s body=%.*s\n", order_id,
                       payidem_outcome_http_status(outcome),
                       payidem_outcome_idempotency_key(outcome), payidem_outcome_attempts(outcome),
                       payidem_outcome_replayed(outcome) ? "yes" : "no", (int)len,
                       (const char *)body);
            } else {
                printf("not paid %s: %s (%s, %s): %s\n", order_id, payidem_result_name(rc),
                       payidem_step_end_name(step) ? payidem_step_end_name(step) : "no end",
                       payidem_step_end_final(step) ? "final" : "not final; resume it later",
                       payidem_error_message(err));
            }
            fflush(stdout);
            payidem_outcome_free(outcome);
            payidem_error_free(err);
            payidem_step_free(step);
            return paid;
        }
    }
}

static int pay(const payidem_client *client, CURL *curl, const char *order_id, const char *amount) {
    char body[512], status_path[256];
    payidem_call *call = NULL;
    payidem_error *err = NULL;
    int paid;
    snprintf(body, sizeof body, "{\"order_id\":\"%s\",\"amount\":%s,\"currency\":\"EUR\"}", order_id,
             amount);
    snprintf(status_path, sizeof status_path, "/v1/payments?order_id=%s", order_id);
    if (payidem_client_begin(client, order_id, "POST", "/v1/payments", (const uint8_t *)body,
                             strlen(body), NULL, status_path, 0, &call, &err) != PAYIDEM_OK) {
        printf("not paid %s: %s: %s\n", order_id, payidem_result_name(payidem_error_code(err)),
               payidem_error_message(err));
        payidem_error_free(err);
        return 0;
    }
    paid = drive(client, call, curl, order_id);
    payidem_call_free(call);
    return paid;
}

static int resume_all(const payidem_client *client, CURL *curl) {
    payidem_order_list *list = NULL;
    payidem_error *err = NULL;
    size_t i, n;
    int all = 1;
    if (payidem_client_list_unknown(client, &list, &err) != PAYIDEM_OK) {
        fprintf(stderr, "list: %s\n", payidem_error_message(err));
        payidem_error_free(err);
        return 0;
    }
    n = payidem_order_list_len(list);
    fprintf(stderr, "%lu order(s) to resume\n", (unsigned long)n);
    for (i = 0; i < n; i++) {
        const char *order_id = payidem_order_list_get(list, i);
        payidem_call *call = NULL;
        if (payidem_client_begin_resume(client, order_id, 0, &call, &err) != PAYIDEM_OK) {
            printf("not paid %s: %s: %s\n", order_id, payidem_result_name(payidem_error_code(err)),
                   payidem_error_message(err));
            payidem_error_free(err);
            err = NULL;
            all = 0;
            continue;
        }
        all &= drive(client, call, curl, order_id);
        payidem_call_free(call);
    }
    payidem_order_list_free(list);
    return all;
}

/* Text that needs no escaping inside a JSON string. */
static int plain(const char *s) {
    for (; *s; s++) {
        if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20) {
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv) {
    static const char secret[] = "sk_test_payidem_mock_secret_0001";
    payidem_client *client = NULL;
    payidem_error *err = NULL;
    CURL *curl;
    char *options = NULL;
    size_t options_len;
    int ok;

    if (!(argc == 5 || (argc == 4 && strcmp(argv[3], "resume") == 0))) {
        fprintf(stderr, "usage: %s BASE_URL JOURNAL ORDER_ID AMOUNT\n       %s BASE_URL JOURNAL resume\n",
                argv[0], argv[0]);
        return 2;
    }
    /* The options are JSON built by hand: keep the arguments plain. */
    if (!plain(argv[1]) || !plain(argv[2]) || (argc == 5 && (argv[4][0] == '\0' || strspn(argv[4], "0123456789") != strlen(argv[4])))) {
        fprintf(stderr, "BASE_URL and JOURNAL may not hold quotes, backslashes or control characters; AMOUNT is digits\n");
        return 2;
    }
    options_len = strlen(argv[1]) + strlen(argv[2]) + 256;
    options = malloc(options_len);
    if (options == NULL) {
        return 1;
    }
    /* Attempts, backoff and deadline: the client's policy, applied by the
     * library whichever HTTP client sends. */
    snprintf(options, options_len,
             "{\"base_url\":\"%s\",\"key_id\":\"key_test_1\",\"journal_path\":\"%s\","
             "\"request_timeout_ms\":5000,"
             "\"retry\":{\"base_ms\":100,\"cap_ms\":2000,\"max_attempts\":20,\"deadline_ms\":60000}}",
             argv[1], argv[2]);
    if (payidem_client_new(options, (const uint8_t *)secret, strlen(secret), &client, &err) !=
        PAYIDEM_OK) {
        fprintf(stderr, "client: %s\n", payidem_error_message(err));
        payidem_error_free(err);
        free(options);
        return 1;
    }
    free(options);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || (curl = curl_easy_init()) == NULL) {
        fprintf(stderr, "libcurl cannot start\n");
        payidem_client_free(client);
        return 1;
    }
    ok = argc == 4 ? resume_all(client, curl) : pay(client, curl, argv[3], argv[4]);
    curl_easy_cleanup(curl);
    curl_global_cleanup();
    payidem_client_free(client);
    return ok ? 0 : 1;
}
