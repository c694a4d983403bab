/*
 * The PostgreSQL journal's fleet features through the C ABI, against a
 * real PostgreSQL server and payidem-mock:
 *
 * - a client whose "journal_path" is a postgres:// URL pays;
 * - payidem_client_outbox_insert gives JSON whose statement, run with libpq
 *   in the application's own transaction next to its business row, records
 *   the operation (a rolled-back transaction records nothing);
 * - payidem_client_take_over then sends it, once, with its key; a second
 *   takeover finds nothing.
 *
 *   pg_server.sh run test_postgres
 *
 * Environment: PAYIDEM_PG_URL (the server, set by pg_server.sh run),
 * PAYIDEM_MOCK (default target/release/payidem-mock). Needs curl(1) for the
 * mock's /_mock/stats.
 */
#define _POSIX_C_SOURCE 200809L

#include <cJSON.h>
#include <libpq-fe.h>

#include "harness.h"

#define EXPECT_OK(rc, err)                                                     \
    do {                                                                       \
        if ((rc) != PAYIDEM_OK) {                                              \
            fprintf(stderr, "  %s:%d: %s failed: %s\n", __FILE__, __LINE__,    \
                    #rc, payidem_error_message(err));                          \
            harness_current_failed = 1;                                        \
        }                                                                      \
        payidem_error_free(err);                                               \
        (err) = NULL;                                                          \
    } while (0)

/* Checks that `rc` failed with `code` and an error naming `field`. */
#define EXPECT_ERR(rc, err, code, field)                                       \
    do {                                                                       \
        payidem_result rc_ = (rc);                                             \
        const char *field_ = payidem_error_field(err);                         \
        if (rc_ != (code) || field_ == NULL || strcmp(field_, (field)) != 0) { \
            fprintf(stderr, "  %s:%d: got %s (%s), expected %s naming %s\n",   \
                    __FILE__, __LINE__, payidem_result_name(rc_),              \
                    err ? payidem_error_message(err) : "no error",             \
                    payidem_result_name(code), (field));                       \
            harness_current_failed = 1;                                        \
        }                                                                      \
        payidem_error_free(err);                                               \
        (err) = NULL;                                                          \
    } while (0)

static struct mock mock;
static int mock_started;
static const char *pg_url;

static payidem_client *pg_client(void) {
    char extra[512];
    snprintf(extra, sizeof extra, "\"journal_path\":\"%s\"", pg_url);
    return new_client(mock.base_url, extra);
}

/* The mock's /_mock/stats, parsed (NULL when it cannot be read). */
static cJSON *mock_stats(void) {
    char cmd[256];
    static char text[1 << 16];
    size_t n;
    FILE *p;
    snprintf(cmd, sizeof cmd, "curl -sS --max-time 10 %s/_mock/stats </dev/null",
             mock.base_url);
    p = popen(cmd, "r");
    if (p == NULL) return NULL;
    n = fread(text, 1, sizeof text - 1, p);
    pclose(p);
    text[n] = 0;
    return cJSON_Parse(text);
}

/* How many payments the mock created for `order`, under which key (the
 * first), or -1 when it cannot tell. */
static int payments_for(const char *order, char *key, size_t key_len) {
    cJSON *stats = mock_stats();
    cJSON *o, *keys;
    int n = -1;
    if (key_len) key[0] = 0;
    if (stats == NULL) return -1;
    o = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(stats, "orders"), order);
    if (o == NULL) {
        n = 0;
    } else {
        n = cJSON_GetObjectItemCaseSensitive(o, "payments_created")->valueint;
        keys = cJSON_GetObjectItemCaseSensitive(o, "idempotency_keys");
        if (cJSON_GetArraySize(keys) > 0 && key_len) {
            snprintf(key, key_len, "%s", cJSON_GetArrayItem(keys, 0)->valuestring);
        }
    }
    cJSON_Delete(stats);
    return n;
}

static int b64_value(int c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Decodes padded standard base64 into `out`; its length, or -1. */
static long b64_decode(const char *in, unsigned char *out, size_t cap) {
    size_t len = strlen(in), i, n = 0;
    if (len % 4 != 0) return -1;
    for (i = 0; i < len; i += 4) {
        int a = b64_value(in[i]), b = b64_value(in[i + 1]);
        int c = in[i + 2] == '=' ? 0 : b64_value(in[i + 2]);
        int d = in[i + 3] == '=' ? 0 : b64_value(in[i + 3]);
        if (a < 0 || b < 0 || c < 0 || d < 0 || n + 3 > cap) return -1;
        out[n++] = (unsigned char)(a << 2 | b >> 4);
        if (in[i + 2] != '=') out[n++] = (unsigned char)((b & 15) << 4 | c >> 2);
        if (in[i + 3] != '=') out[n++] = (unsigned char)((c & 3) << 6 | d);
    }
    return (long)n;
}

static int exec_ok(PGconn *db, const char *sql) {
    PGresult *r = PQexec(db, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok) fprintf(stderr, "  %s: %s", sql, PQerrorMessage(db));
    PQclear(r);
    return ok;
}

/* Runs the outbox statement of `json` (dollar style) on `db`, the body as a
 * binary bytea parameter and every other one as text. */
static int run_outbox(PGconn *db, const char *json) {
    cJSON *root = cJSON_Parse(json);
    cJSON *sql, *params, *types;
    const char *values[7];
    int lengths[7], formats[7], i, ok = 0;
    static unsigned char body[4096];
    PGresult *r;
    if (root == NULL) return 0;
    sql = cJSON_GetObjectItemCaseSensitive(root, "sql");
    params = cJSON_GetObjectItemCaseSensitive(root, "params");
    types = cJSON_GetObjectItemCaseSensitive(root, "param_types");
    if (!cJSON_IsString(sql) || cJSON_GetArraySize(params) != 7 ||
        cJSON_GetArraySize(types) != 7) {
        cJSON_Delete(root);
        return 0;
    }
    for (i = 0; i < 7; i++) {
        cJSON *p = cJSON_GetArrayItem(params, i);
        const char *type = cJSON_GetArrayItem(types, i)->valuestring;
        formats[i] = 0;
        lengths[i] = 0;
        if (cJSON_IsNull(p)) {
            values[i] = NULL;
        } else if (strcmp(type, "bytea") == 0) {
            long n = b64_decode(p->valuestring, body, sizeof body);
            if (n < 0) {
                cJSON_Delete(root);
                return 0;
            }
            values[i] = (const char *)body;
            lengths[i] = (int)n;
            formats[i] = 1;
        } else {
            values[i] = p->valuestring;
        }
    }
    r = PQexecParams(db, sql->valuestring, 7, NULL, values, lengths, formats, 0);
    ok = PQresultStatus(r) == PGRES_COMMAND_OK && strcmp(PQcmdTuples(r), "1") == 0;
    if (!ok) fprintf(stderr, "  outbox insert: %s", PQerrorMessage(db));
    PQclear(r);
    cJSON_Delete(root);
    return ok;
}

static void test_pays_with_a_postgres_journal(void) {
    payidem_client *client;
    payidem_outcome *outcome = NULL;
    payidem_error *err = NULL;
    const char *body = "{\"order_id\":\"ord-pg-c-1\",\"amount\":1250,\"currency\":\"EUR\"}";
    bool found = false;
    payidem_operation_state state = PAYIDEM_STATE_NOT_FOUND;
    uint32_t attempts = 0;
    char key[128];
    CHECK(mock_started);
    if (!mock_started) return;
    client = pg_client();
    CHECK(client != NULL);
    if (client == NULL) return;
    EXPECT_OK(payidem_client_execute(client, "ord-pg-c-1", "POST", "/v1/payments",
                                     (const uint8_t *)body, strlen(body), NULL,
                                     "/v1/payments?order_id=ord-pg-c-1", &outcome, &err),
              err);
    CHECK(outcome != NULL && payidem_outcome_http_status(outcome) / 100 == 2);
    payidem_outcome_free(outcome);
    EXPECT_OK(payidem_client_status(client, "ord-pg-c-1", &found, &state, &attempts, &err), err);
    CHECK(found && state == PAYIDEM_STATE_SUCCEEDED && attempts == 1);
    CHECK(payments_for("ord-pg-c-1", key, sizeof key) == 1);
    payidem_client_free(client);
}

static void test_outbox_insert_checks_its_arguments(void) {
    payidem_client *client;
    payidem_error *err = NULL;
    char buf[4096];
    size_t len = 0;
    cJSON *root;
    const char *body = "{\"amount\":1}";
    CHECK(mock_started);
    if (!mock_started) return;
    client = pg_client();
    CHECK(client != NULL);
    if (client == NULL) return;
    EXPECT_ERR(payidem_client_outbox_insert(client, "ord-x", "POST", "/v1/payments", NULL, 0,
                                            NULL, NULL, 7, buf, sizeof buf, &len, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "param_style");
    EXPECT_ERR(payidem_client_outbox_insert(client, "ord-x", "POST", "v1/payments", NULL, 0,
                                            NULL, NULL, PAYIDEM_PARAMS_DOLLAR, buf,
                                            sizeof buf, &len, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "path");
    EXPECT_ERR(payidem_client_outbox_insert(client, "ord-x", "POST", "/v1/payments", NULL, 0,
                                            NULL, "no-slash", PAYIDEM_PARAMS_DOLLAR, buf,
                                            sizeof buf, &len, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "status_path");
    EXPECT_ERR(payidem_client_outbox_insert(client, NULL, "POST", "/v1/payments", NULL, 0,
                                            NULL, NULL, PAYIDEM_PARAMS_DOLLAR, buf,
                                            sizeof buf, &len, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "order_id");
    EXPECT_ERR(payidem_client_outbox_insert(client, "ord-x", "POST", "/v1/payments", NULL, 3,
                                            NULL, NULL, PAYIDEM_PARAMS_DOLLAR, buf,
                                            sizeof buf, &len, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "body");
    EXPECT_ERR(payidem_client_outbox_insert(NULL, "ord-x", "POST", "/v1/payments", NULL, 0,
                                            NULL, NULL, PAYIDEM_PARAMS_DOLLAR, buf,
                                            sizeof buf, &len, &err),
               err, PAYIDEM_INVALID_ARGUMENT, "client");
    /* Too small: the needed length comes back, nothing is written. */
    len = 0;
    buf[0] = 'z';
    EXPECT_ERR(payidem_client_outbox_insert(client, "ord-x", "POST", "/v1/payments",
                                            (const uint8_t *)body, strlen(body), NULL, NULL,
                                            PAYIDEM_PARAMS_DOLLAR, buf, 8, &len, &err),
               err, PAYIDEM_BUFFER_TOO_SMALL, "buf");
    CHECK(len > 8 && buf[0] == 'z');
    /* %s style: the same statement with %s placeholders. */
    EXPECT_OK(payidem_client_outbox_insert(client, "ord-x", "POST", "/v1/payments",
                                           (const uint8_t *)body, strlen(body), "key-x", NULL,
                                           PAYIDEM_PARAMS_PERCENT_S, buf, sizeof buf, &len,
                                           &err),
              err);
    CHECK(len == strlen(buf));
    root = cJSON_Parse(buf);
    CHECK(root != NULL);
    if (root != NULL) {
        cJSON *sql = cJSON_GetObjectItemCaseSensitive(root, "sql");
        cJSON *params = cJSON_GetObjectItemCaseSensitive(root, "params");
        cJSON *types = cJSON_GetObjectItemCaseSensitive(root, "param_types");
        CHECK(cJSON_IsString(sql) && strstr(sql->valuestring, "%s") != NULL &&
              strstr(sql->valuestring, "$1") == NULL);
        CHECK(cJSON_GetArraySize(params) == 7 && cJSON_GetArraySize(types) == 7);
        CHECK_STR(cJSON_GetArrayItem(params, 0)->valuestring, "ord-x");
        CHECK_STR(cJSON_GetArrayItem(params, 1)->valuestring, "key-x");
        CHECK_STR(cJSON_GetArrayItem(params, 2)->valuestring, "POST");
        CHECK_STR(cJSON_GetArrayItem(params, 3)->valuestring, "/v1/payments");
        /* base64 of {"amount":1} */
        CHECK_STR(cJSON_GetArrayItem(params, 4)->valuestring, "eyJhbW91bnQiOjF9");
        CHECK_STR(cJSON_GetArrayItem(types, 4)->valuestring, "bytea");
        CHECK_STR(cJSON_GetArrayItem(types, 0)->valuestring, "text");
        CHECK(cJSON_IsNull(cJSON_GetArrayItem(params, 6)));
        cJSON_Delete(root);
    }
    payidem_client_free(client);
}

static void test_outbox_then_take_over_sends_once(void) {
    payidem_client *client;
    payidem_error *err = NULL;
    payidem_order_list *taken = NULL;
    static char json[8192];
    size_t len = 0;
    PGconn *db;
    char key[128];
    bool found = false;
    payidem_operation_state state = PAYIDEM_STATE_NOT_FOUND;
    uint32_t attempts = 0;
    const char *body = "{\"order_id\":\"ord-pg-c-2\",\"amount\":4200,\"currency\":\"EUR\"}";
    const char *body3 = "{\"order_id\":\"ord-pg-c-3\",\"amount\":10,\"currency\":\"EUR\"}";
    CHECK(mock_started);
    if (!mock_started) return;
    client = pg_client(); /* opens (creates) the journal's tables */
    CHECK(client != NULL);
    if (client == NULL) return;
    db = PQconnectdb(pg_url);
    CHECK(PQstatus(db) == CONNECTION_OK);
    if (PQstatus(db) != CONNECTION_OK) {
        fprintf(stderr, "  connect: %s", PQerrorMessage(db));
        PQfinish(db);
        payidem_client_free(client);
        return;
    }
    CHECK(exec_ok(db, "CREATE TABLE IF NOT EXISTS app_orders (id text PRIMARY KEY)"));

    /* A rolled-back transaction records nothing. */
    EXPECT_OK(payidem_client_outbox_insert(client, "ord-pg-c-3", "POST", "/v1/payments",
                                           (const uint8_t *)body3, strlen(body3), NULL, NULL,
                                           PAYIDEM_PARAMS_DOLLAR, json, sizeof json, &len, &err),
              err);
    CHECK(exec_ok(db, "BEGIN"));
    CHECK(exec_ok(db, "INSERT INTO app_orders VALUES ('ord-pg-c-3')"));
    CHECK(run_outbox(db, json));
    CHECK(exec_ok(db, "ROLLBACK"));

    /* The committed one: the business row and the operation together. */
    EXPECT_OK(payidem_client_outbox_insert(client, "ord-pg-c-2", "POST", "/v1/payments",
                                           (const uint8_t *)body, strlen(body), NULL,
                                           "/v1/payments?order_id=ord-pg-c-2",
                                           PAYIDEM_PARAMS_DOLLAR, json, sizeof json, &len, &err),
              err);
    CHECK(strstr(json, "$1") != NULL);
    CHECK(exec_ok(db, "BEGIN"));
    CHECK(exec_ok(db, "INSERT INTO app_orders VALUES ('ord-pg-c-2')"));
    CHECK(run_outbox(db, json));
    CHECK(exec_ok(db, "COMMIT"));
    PQfinish(db);

    EXPECT_OK(payidem_client_status(client, "ord-pg-c-2", &found, &state, &attempts, &err), err);
    CHECK(found && state != PAYIDEM_STATE_SUCCEEDED && attempts == 0);
    EXPECT_OK(payidem_client_status(client, "ord-pg-c-3", &found, &state, &attempts, &err), err);
    CHECK(!found);
    CHECK(payments_for("ord-pg-c-2", key, sizeof key) == 0);

    EXPECT_ERR(payidem_client_take_over(NULL, 10, &taken, &err), err, PAYIDEM_INVALID_ARGUMENT,
               "client");
    EXPECT_ERR(payidem_client_take_over(client, 10, NULL, &err), err, PAYIDEM_INVALID_ARGUMENT,
               "taken_out");
    EXPECT_OK(payidem_client_take_over(client, 10, &taken, &err), err);
    CHECK(payidem_order_list_len(taken) == 1);
    CHECK_STR(payidem_order_list_get(taken, 0), "ord-pg-c-2");
    payidem_order_list_free(taken);
    taken = NULL;

    EXPECT_OK(payidem_client_status(client, "ord-pg-c-2", &found, &state, &attempts, &err), err);
    CHECK(found && state == PAYIDEM_STATE_SUCCEEDED && attempts == 1);
    CHECK(payments_for("ord-pg-c-2", key, sizeof key) == 1);
    CHECK_STR(key, "create-ord-pg-c-2");

    /* Nothing is left: a second takeover sends nothing. */
    EXPECT_OK(payidem_client_take_over(client, 10, &taken, &err), err);
    CHECK(taken != NULL && payidem_order_list_len(taken) == 0);
    payidem_order_list_free(taken);
    CHECK(payments_for("ord-pg-c-2", key, sizeof key) == 1);
    payidem_client_free(client);
}

int main(void) {
    static const char *const control[] = {"--control", NULL};
    pg_url = getenv("PAYIDEM_PG_URL");
    if (pg_url == NULL || pg_url[0] == 0) {
        fprintf(stderr, "PAYIDEM_PG_URL is not set: run this through ffi/tests-c/pg_server.sh run\n");
        return 1;
    }
    mock_started = mock_start(&mock, control) == 0;
    RUN(test_pays_with_a_postgres_journal);
    RUN(test_outbox_insert_checks_its_arguments);
    RUN(test_outbox_then_take_over_sends_once);
    mock_stop(&mock);
    return harness_finish();
}
