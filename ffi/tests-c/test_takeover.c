/*
 * payidem_client_take_over_loop against payidem-mock, with a SQLite
 * journal two clients share:
 *
 * - a call takes its lease, records its attempt and is abandoned (as by a
 *   holder that hangs or dies): nothing renews its lease;
 * - another client's take-over loop, idle and polling, picks the operation
 *   up once the lease lapsed (never before) and within a few heartbeats of
 *   that, settles it, and ends when its stop callback says so, counting
 *   one operation driven;
 * - the abandoned call, freed afterwards, writes nothing over the settled
 *   operation (its lease is stale);
 * - an idle loop with nothing to take drives nothing and stops.
 *
 * Environment: PAYIDEM_MOCK (default target/release/payidem-mock).
 */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"

/* Lease settings of both clients: a lease holds ttl + request timeout past
 * its last renewal (2 s here, whole seconds), the heartbeat a third of the
 * ttl. */
#define LEASE_OPTIONS "\"lease_ttl_s\":1,\"request_timeout_ms\":1000"
#define LEASE_SPAN_MS 2000
#define HEARTBEAT_MS 334
/* Slack for a loaded CI host and valgrind (a claim, a POST, a fsync). */
#define MARGIN_MS 6000

static struct mock mock;
static int mock_started;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* What the stop callback watches: the order, on the loop's client. */
struct watch {
    payidem_client *client;
    const char *order_id;
    double give_up_at;
    double settled_at;
    int polls;
};

/* Stops the loop once the order is settled (or after the give-up time);
 * calls back into the same client, as a stop callback may. */
static int stop_when_settled(void *userdata) {
    struct watch *w = userdata;
    bool found = false;
    payidem_operation_state state = PAYIDEM_STATE_NOT_FOUND;
    uint32_t attempts = 0;
    payidem_error *err = NULL;
    w->polls++;
    if (payidem_client_status(w->client, w->order_id, &found, &state, &attempts, &err) !=
        PAYIDEM_OK) {
        payidem_error_free(err);
        return 0;
    }
    if (found && state == PAYIDEM_STATE_SUCCEEDED) {
        w->settled_at = now_ms();
        return 1;
    }
    return now_ms() > w->give_up_at;
}

static int stop_after_polls(void *userdata) {
    int *left = userdata;
    return --*left <= 0;
}

static payidem_client *shared_client(const char *journal) {
    char extra[512];
    snprintf(extra, sizeof extra, "\"journal_path\":\"%s\"," LEASE_OPTIONS, journal);
    return new_client(mock.base_url, extra);
}

static void test_an_abandoned_operation_is_taken_over_after_its_lease_lapses(void) {
    char dir[] = "/tmp/payidem-takeover-XXXXXX";
    char journal[256];
    payidem_client *holder, *taker;
    payidem_call *call = NULL;
    payidem_step *step = NULL;
    payidem_error *err = NULL;
    payidem_outcome *outcome = NULL;
    struct watch w;
    uint64_t driven = 99;
    double begun_at, took_ms;
    bool found = false;
    payidem_operation_state state = PAYIDEM_STATE_NOT_FOUND;
    uint32_t attempts = 0;
    const char *order = "ord-c-loop-1";
    const char *body = "{\"order_id\":\"ord-c-loop-1\",\"amount\":700,\"currency\":\"EUR\"}";
    CHECK(mock_started);
    if (!mock_started || mkdtemp(dir) == NULL) return;
    snprintf(journal, sizeof journal, "%s/journal.sqlite3", dir);
    holder = shared_client(journal);
    taker = shared_client(journal);
    CHECK(holder != NULL && taker != NULL);
    if (holder == NULL || taker == NULL) goto out;

    /* The holder records its first attempt (SEND) and never sends it; its
     * lease is written after this instant. */
    begun_at = now_ms();
    CHECK(payidem_client_begin(holder, order, "POST", "/v1/payments", (const uint8_t *)body,
                               strlen(body), NULL, "/v1/payments?order_id=ord-c-loop-1", 0,
                               &call, &err) == PAYIDEM_OK);
    payidem_error_free(err);
    err = NULL;
    if (call == NULL) goto out;
    CHECK(payidem_call_step(call, &step, &err) == PAYIDEM_OK);
    CHECK(step != NULL && payidem_step_kind(step) == PAYIDEM_STEP_SEND);
    payidem_step_free(step);
    payidem_error_free(err);
    err = NULL;

    w.client = taker;
    w.order_id = order;
    w.give_up_at = begun_at + LEASE_SPAN_MS + MARGIN_MS + 10000;
    w.settled_at = 0;
    w.polls = 0;
    /* An idle of a minute: the loop still looks every heartbeat. */
    CHECK(payidem_client_take_over_loop(taker, 4, 60000, stop_when_settled, &w, &driven, &err) ==
          PAYIDEM_OK);
    payidem_error_free(err);
    err = NULL;
    CHECK(w.settled_at > 0);
    CHECK(driven == 1);
    took_ms = w.settled_at - begun_at;
    /* The lease, written after begun_at, lapses LEASE_SPAN_MS after that
     * write on the journal's clock, in whole seconds: never taken before
     * LEASE_SPAN_MS - 1000 after begun_at. */
    if (!(took_ms >= LEASE_SPAN_MS - 1000 && took_ms <= LEASE_SPAN_MS + 3 * HEARTBEAT_MS + MARGIN_MS)) {
        fprintf(stderr, "  taken over %.0f ms after the call began\n", took_ms);
        harness_current_failed = 1;
    }
    CHECK(w.polls > 1);

    /* The stale holder's free writes nothing over the settled operation. */
    payidem_call_free(call);
    call = NULL;
    CHECK(payidem_client_status(taker, order, &found, &state, &attempts, &err) == PAYIDEM_OK);
    payidem_error_free(err);
    err = NULL;
    CHECK(found && state == PAYIDEM_STATE_SUCCEEDED);
    CHECK(payidem_client_resume(holder, order, &outcome, &err) == PAYIDEM_OK);
    payidem_error_free(err);
    err = NULL;
    CHECK(outcome != NULL && payidem_outcome_http_status(outcome) == 201);
    payidem_outcome_free(outcome);

out:
    payidem_call_free(call);
    payidem_client_free(holder);
    payidem_client_free(taker);
    snprintf(journal, sizeof journal, "rm -rf '%s'", dir);
    CHECK(system(journal) == 0);
}

static void test_an_idle_loop_drives_nothing_and_stops(void) {
    payidem_client *client;
    payidem_error *err = NULL;
    uint64_t driven = 99;
    int left = 5;
    CHECK(mock_started);
    if (!mock_started) return;
    client = new_client(mock.base_url, LEASE_OPTIONS);
    CHECK(client != NULL);
    if (client == NULL) return;
    CHECK(payidem_client_take_over_loop(client, 1, 50, stop_after_polls, &left, &driven, &err) ==
          PAYIDEM_OK);
    payidem_error_free(err);
    err = NULL;
    CHECK(driven == 0 && left == 0);
    CHECK(payidem_client_take_over_loop(client, 1, 50, NULL, NULL, &driven, &err) ==
          PAYIDEM_INVALID_ARGUMENT);
    CHECK(err != NULL && strcmp(payidem_error_field(err), "stop") == 0);
    payidem_error_free(err);
    payidem_client_free(client);
}

int main(void) {
    mock_started = mock_start(&mock, NULL) == 0;
    RUN(test_an_abandoned_operation_is_taken_over_after_its_lease_lapses);
    RUN(test_an_idle_loop_drives_nothing_and_stops);
    mock_stop(&mock);
    return harness_finish();
}
