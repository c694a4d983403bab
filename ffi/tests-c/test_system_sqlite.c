/*
 * A program that links the system's own SQLite and libpayidem.a (which
 * bundles another SQLite) keeps using the system's: libpayidem.a exports
 * only payidem_*, so neither library's SQLite replaces the other's.
 *
 *   test_system_sqlite JOURNAL_PATH
 *
 * Checks that sqlite3_libversion() is the version of the system header, that
 * the system SQLite works (a table, a row, a query), and that payidem's
 * journal (its own SQLite) works in the same process: a client opens a
 * journal file and signs a request.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <payidem.h>

static int passed = 0, failed = 0;

#define CHECK(cond, what)                                         \
    do {                                                          \
        if (cond) {                                               \
            passed++;                                             \
        } else {                                                  \
            failed++;                                             \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, what); \
        }                                                         \
    } while (0)

static int count_rows(void *userdata, int ncols, char **values, char **names) {
    (void)ncols;
    (void)names;
    *(int *)userdata = values[0] ? (int)strtol(values[0], NULL, 10) : -1;
    return 0;
}

int main(int argc, char **argv) {
    static const char secret[] = "sk_test_payidem_mock_secret_0001";
    char options[1024];
    sqlite3 *db = NULL;
    payidem_client *client = NULL;
    payidem_signer *signer = NULL;
    payidem_error *err = NULL;
    payidem_signed_headers headers;
    int rows = 0;

    if (argc != 2) {
        fprintf(stderr, "usage: %s JOURNAL_PATH\n", argv[0]);
        return 2;
    }

    printf("system SQLite: header %s, library %s; payidem %s\n", SQLITE_VERSION,
           sqlite3_libversion(), payidem_version());
    CHECK(strcmp(sqlite3_libversion(), SQLITE_VERSION) == 0,
          "sqlite3_libversion() is the system header's version");
    CHECK(sqlite3_libversion_number() == SQLITE_VERSION_NUMBER,
          "sqlite3_libversion_number() is the system header's");
    CHECK(strcmp(sqlite3_sourceid(), SQLITE_SOURCE_ID) == 0, "sqlite3_sourceid() is the system's");

    CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK, "system sqlite3_open");
    CHECK(sqlite3_exec(db, "CREATE TABLE orders(id TEXT); INSERT INTO orders VALUES ('o-1'),('o-2');",
                       NULL, NULL, NULL) == SQLITE_OK,
          "system SQLite creates and fills a table");
    CHECK(sqlite3_exec(db, "SELECT count(*) FROM orders;", count_rows, &rows, NULL) == SQLITE_OK,
          "system SQLite queries");
    CHECK(rows == 2, "system SQLite counts 2 rows");
    sqlite3_close(db);

    snprintf(options, sizeof options,
             "{\"base_url\":\"http://127.0.0.1:9\",\"key_id\":\"key_test_1\",\"journal_path\":\"%s\"}",
             argv[1]);
    CHECK(payidem_client_new(options, (const uint8_t *)secret, strlen(secret), &client, &err) == PAYIDEM_OK,
          "payidem opens a SQLite journal file with its own SQLite");
    if (err) {
        fprintf(stderr, "payidem: %s\n", payidem_error_message(err));
        payidem_error_free(err);
        err = NULL;
    }
    payidem_client_free(client);

    CHECK(payidem_signer_new("key_test_1", (const uint8_t *)secret, strlen(secret), &signer, &err) ==
              PAYIDEM_OK,
          "payidem signer");
    CHECK(payidem_signer_sign_into(signer, "POST", "/v1/payments", "create-o-1", (const uint8_t *)"{}", 2,
                                   1700000000, &headers, &err) == PAYIDEM_OK,
          "payidem signs");
    CHECK(strlen(headers.signature) == 64, "a 64-hex-digit signature");
    CHECK(strcmp(headers.idempotency_key, "create-o-1") == 0, "the idempotency key header");
    payidem_signer_free(signer);
    payidem_error_free(err);

    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
