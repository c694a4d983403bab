/*
 * Eight pthreads share one payidem_signer, one payidem_verifier and one
 * payidem_client (against payidem-mock started here on port 0): every
 * signature verifies once and is refused as a replay the second time,
 * every payment settles exactly once, and the event callback sees every
 * attempt. Run under ThreadSanitizer or helgrind by `make test-c`.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>

#include "harness.h"

#define THREADS 8
#define SIGNATURES_PER_THREAD 100
#define PAYMENTS_PER_THREAD 3

static payidem_signer *signer;
static payidem_verifier *verifier;
static payidem_client *client;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int events_seen;
static int verified;
static int replays_refused;
static int payments_settled;
static int failures;

static void on_event(void *userdata, const payidem_attempt_event *ev) {
    int *seen = userdata;
    pthread_mutex_lock(&lock);
    if (ev->order_id != NULL && strncmp(ev->order_id, "t-", 2) == 0) {
        (*seen)++;
    }
    pthread_mutex_unlock(&lock);
}

static void count(int *counter) {
    pthread_mutex_lock(&lock);
    (*counter)++;
    pthread_mutex_unlock(&lock);
}

static void report(const char *what, payidem_error *err) {
    pthread_mutex_lock(&lock);
    failures++;
    fprintf(stderr, "  %s: %s\n", what, payidem_error_message(err));
    pthread_mutex_unlock(&lock);
    payidem_error_free(err);
}

static void *worker(void *arg) {
    int id = *(int *)arg;
    int i;
    char order[64], body[128], path[128];
    for (i = 0; i < SIGNATURES_PER_THREAD; i++) {
        payidem_signed_headers s;
        payidem_header hs[5];
        payidem_error *err = NULL;
        uint16_t status = 0;
        uint64_t now = 1800000000u + (uint64_t)i;
        snprintf(body, sizeof body, "{\"thread\":%d,\"i\":%d}", id, i);
        if (payidem_signer_sign_into(signer, "POST", "/v1/payments", "create-t", (const uint8_t *)body,
                                     strlen(body), now, &s, &err) != PAYIDEM_OK) {
            report("sign", err);
            continue;
        }
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
        if (payidem_verifier_verify(verifier, "POST", "/v1/payments", hs, 5, (const uint8_t *)body,
                                    strlen(body), now, &status, &err) == PAYIDEM_OK &&
            status == 200) {
            count(&verified);
        } else {
            report("verify", err);
        }
        if (payidem_verifier_verify(verifier, "POST", "/v1/payments", hs, 5, (const uint8_t *)body,
                                    strlen(body), now, &status, &err) == PAYIDEM_NONCE_REUSED &&
            status == 409) {
            count(&replays_refused);
        } else {
            count(&failures);
        }
        payidem_error_free(err);
    }
    for (i = 0; i < PAYMENTS_PER_THREAD; i++) {
        payidem_outcome *outcome = NULL;
        payidem_error *err = NULL;
        bool found = false;
        payidem_operation_state state;
        uint32_t attempts;
        snprintf(order, sizeof order, "t-%d-%d", id, i);
        snprintf(body, sizeof body, "{\"order_id\":\"%s\",\"amount\":1000,\"currency\":\"EUR\"}", order);
        snprintf(path, sizeof path, "/v1/payments?order_id=%s", order);
        if (payidem_client_execute(client, order, "POST", "/v1/payments", (const uint8_t *)body,
                                   strlen(body), NULL, path, &outcome, &err) != PAYIDEM_OK) {
            report("execute", err);
            continue;
        }
        if (payidem_outcome_http_status(outcome) == 201 &&
            strcmp(payidem_outcome_order_id(outcome), order) == 0 &&
            payidem_client_status(client, order, &found, &state, &attempts, NULL) == PAYIDEM_OK &&
            found && state == PAYIDEM_STATE_SUCCEEDED) {
            count(&payments_settled);
        } else {
            count(&failures);
        }
        payidem_outcome_free(outcome);
    }
    return NULL;
}

static void test_threads_share_signer_verifier_and_client(void) {
    static const uint8_t secret[] = MOCK_SECRET;
    const uint8_t *secrets[1];
    size_t lens[1];
    pthread_t threads[THREADS];
    int ids[THREADS];
    int i;
    struct mock m;
    payidem_order_list *unknown = NULL;
    secrets[0] = secret;
    lens[0] = sizeof secret - 1;
    CHECK(mock_start(&m, NULL) == 0);
    if (m.port <= 0) {
        mock_stop(&m);
        return;
    }
    CHECK(payidem_signer_new(MOCK_KEY_ID, secret, sizeof secret - 1, &signer, NULL) == PAYIDEM_OK);
    CHECK(payidem_verifier_new(300, 100000, &verifier, NULL) == PAYIDEM_OK);
    CHECK(payidem_verifier_add_key(verifier, MOCK_KEY_ID, secrets, lens, 1, NULL) == PAYIDEM_OK);
    client = new_client(m.base_url, "");
    CHECK(client != NULL);
    if (signer && verifier && client) {
        payidem_client_set_event_callback(client, on_event, &events_seen);
        for (i = 0; i < THREADS; i++) {
            ids[i] = i;
            CHECK(pthread_create(&threads[i], NULL, worker, &ids[i]) == 0);
        }
        for (i = 0; i < THREADS; i++) {
            pthread_join(threads[i], NULL);
        }
        payidem_client_set_event_callback(client, NULL, NULL);
        CHECK(failures == 0);
        CHECK(verified == THREADS * SIGNATURES_PER_THREAD);
        CHECK(replays_refused == THREADS * SIGNATURES_PER_THREAD);
        CHECK(payments_settled == THREADS * PAYMENTS_PER_THREAD);
        CHECK(events_seen == THREADS * PAYMENTS_PER_THREAD);
        CHECK(payidem_client_list_unknown(client, &unknown, NULL) == PAYIDEM_OK);
        CHECK(payidem_order_list_len(unknown) == 0);
        payidem_order_list_free(unknown);
    }
    payidem_client_free(client);
    payidem_verifier_free(verifier);
    payidem_signer_free(signer);
    mock_stop(&m);
}

int main(void) {
    RUN(test_threads_share_signer_verifier_and_client);
    return harness_finish();
}
