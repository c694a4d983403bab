/*
 * One payment through libpayidem: create a client with a journal of this
 * example's own (JOURNAL, default ./payidem-example.sqlite3: test payments
 * never go into the durable default journal that real payments use), run
 * the operation to a settled outcome, print it.
 *
 *   cc pay.c $(pkg-config --cflags --libs payidem) -o pay
 *   ./pay http://127.0.0.1:PORT [JOURNAL]  # e.g. against payidem-mock
 *
 * A real integration leaves "journal_path" out of its options (the durable
 * default journal) or names where its state lives.
 *
 * Uses the mock's public test key; a real integration reads its key id and
 * secret from its own configuration.
 */
#include <stdio.h>
#include <string.h>

#include <payidem.h>

/*
 * Whether the linked library keeps the promises of the header this program
 * was built with (docs/versioning.md): the same ABI (the SONAME's number),
 * the same major version and at least the header's version; before 1.0 the
 * same minor version too (a 0.x minor release may break).
 */
static int library_compatible(void) {
    int major, minor, patch;
    if (payidem_abi_version() != PAYIDEM_ABI_VERSION) {
        return 0;
    }
    if (sscanf(payidem_version(), "%d.%d.%d", &major, &minor, &patch) != 3 ||
        major != PAYIDEM_VERSION_MAJOR) {
        return 0;
    }
    if (major == 0 && minor != PAYIDEM_VERSION_MINOR) {
        return 0;
    }
    if (minor != PAYIDEM_VERSION_MINOR) {
        return minor > PAYIDEM_VERSION_MINOR;
    }
    return patch >= PAYIDEM_VERSION_PATCH;
}

static void on_event(void *userdata, const payidem_attempt_event *ev) {
    (void)userdata;
    fprintf(stderr, "attempt %u of %s: HTTP %u\n", ev->attempt, ev->order_id, ev->http_status);
}

int main(int argc, char **argv) {
    static const char secret[] = "sk_test_payidem_mock_secret_0001";
    const char *body = "{\"order_id\":\"example-1\",\"amount\":1000,\"currency\":\"EUR\"}";
    char options[1024];
    const char *journal;
    payidem_client *client = NULL;
    payidem_outcome *outcome = NULL;
    payidem_error *err = NULL;
    const uint8_t *response = NULL;
    size_t response_len = 0;
    payidem_result rc;

    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: %s BASE_URL [JOURNAL]\n", argv[0]);
        return 2;
    }
    journal = argc == 3 ? argv[2] : "payidem-example.sqlite3";
    if (strlen(argv[1]) + strlen(journal) > 400 || strpbrk(argv[1], "\"\\") != NULL ||
        strpbrk(journal, "\"\\") != NULL) {
        fprintf(stderr, "the base URL or journal path is too long or holds a quote\n");
        return 2;
    }
    if (!library_compatible()) {
        fprintf(stderr,
                "libpayidem %s is not compatible with the header %s this program was built with "
                "(it needs %d.%d.x, x >= %d, before 1.0; see docs/versioning.md)\n",
                payidem_version(), PAYIDEM_VERSION, PAYIDEM_VERSION_MAJOR, PAYIDEM_VERSION_MINOR,
                PAYIDEM_VERSION_PATCH);
        return 1;
    }
    snprintf(options, sizeof options,
             "{\"base_url\":\"%s\",\"key_id\":\"key_test_1\",\"journal_path\":\"%s\","
             "\"retry\":{\"max_attempts\":4,\"deadline_ms\":10000}}",
             argv[1], journal);
    rc = payidem_client_new(options, (const uint8_t *)secret, strlen(secret), &client, &err);
    if (rc != PAYIDEM_OK) {
        fprintf(stderr, "client: %s\n", payidem_error_message(err));
        payidem_error_free(err);
        return 1;
    }
    payidem_client_set_event_callback(client, on_event, NULL);
    rc = payidem_client_execute(client, "example-1", "POST", "/v1/payments", (const uint8_t *)body,
                                strlen(body), NULL, "/v1/payments?order_id=example-1", &outcome,
                                &err);
    if (rc == PAYIDEM_OK) {
        payidem_outcome_body(outcome, &response, &response_len);
        printf("HTTP %u key=%s attempts=%u body=%.*s\n", payidem_outcome_http_status(outcome),
               payidem_outcome_idempotency_key(outcome), payidem_outcome_attempts(outcome),
               (int)response_len, (const char *)response);
    } else if (rc == PAYIDEM_OUTCOME_UNKNOWN) {
        fprintf(stderr, "unknown; resume order %s later: %s\n", payidem_error_order_id(err),
                payidem_error_message(err));
    } else {
        fprintf(stderr, "%s: %s\n", payidem_result_name(rc), payidem_error_message(err));
    }
    payidem_outcome_free(outcome);
    payidem_error_free(err);
    payidem_client_free(client);
    return rc == PAYIDEM_OK ? 0 : 1;
}
