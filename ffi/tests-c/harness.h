/*
 * A small C99 test harness shared by the C tests of libpayidem: checks,
 * a runner that prints "N passed, N failed" last, and a helper that starts
 * payidem-mock on port 0 and reads its port.
 */
#ifndef PAYIDEM_TEST_HARNESS_H
#define PAYIDEM_TEST_HARNESS_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#ifndef _WIN32
#include <sys/wait.h>
#endif
#include <time.h>
#include <unistd.h>

#include "payidem.h"

#ifdef _WIN32
#include <direct.h>
#include <io.h>
/* POSIX mkdtemp for the Windows builds. */
static inline char *mkdtemp(char *pattern) {
    return _mktemp(pattern) != NULL && _mkdir(pattern) == 0 ? pattern : NULL;
}
#endif

static int harness_passed;
static int harness_failed;
static int harness_current_failed;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "  %s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                    \
            harness_current_failed = 1;                                        \
        }                                                                      \
    } while (0)

#define CHECK_STR(actual, expected)                                            \
    do {                                                                       \
        const char *check_a_ = (actual);                                       \
        const char *check_e_ = (expected);                                     \
        if (check_a_ == NULL || check_e_ == NULL ||                            \
            strcmp(check_a_, check_e_) != 0) {                                 \
            fprintf(stderr, "  %s:%d: %s is \"%s\", expected \"%s\"\n",        \
                    __FILE__, __LINE__, #actual,                               \
                    check_a_ ? check_a_ : "(null)",                            \
                    check_e_ ? check_e_ : "(null)");                           \
            harness_current_failed = 1;                                        \
        }                                                                      \
    } while (0)

static inline void run_test(const char *name, void (*test)(void)) {
    harness_current_failed = 0;
    test();
    if (harness_current_failed) {
        harness_failed++;
        printf("FAIL %s\n", name);
    } else {
        harness_passed++;
        printf("ok   %s\n", name);
    }
    fflush(stdout);
}

#define RUN(test) run_test(#test, test)

static inline int harness_finish(void) {
    printf("%d passed, %d failed\n", harness_passed, harness_failed);
    return harness_failed == 0 ? 0 : 1;
}

static inline void sleep_ms(long ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

#ifndef _WIN32
/* A payidem-mock child process (POSIX only: the Windows builds of these
 * tests, run under Wine by scripts/dist/test-windows.sh, start no mock). */
struct mock {
    pid_t pid;
    int port;
    FILE *out;
    char base_url[64];
};

static inline const char *mock_binary(void) {
    const char *path = getenv("PAYIDEM_MOCK");
    return path ? path : "target/release/payidem-mock";
}

/* Starts payidem-mock on 127.0.0.1 port 0 with `extra` flags (NULL-ended,
 * at most 8) and reads its "listening on HOST:PORT" line. Returns 0 on
 * success. */
static inline int mock_start(struct mock *m, const char *const *extra) {
    const char *argv[16];
    int n = 0;
    int fds[2];
    char line[256];
    const char *colon;
    argv[n++] = mock_binary();
    argv[n++] = "--port";
    argv[n++] = "0";
    argv[n++] = "--workers";
    argv[n++] = "4";
    while (extra && *extra && n < 15) {
        argv[n++] = *extra++;
    }
    argv[n] = NULL;
    memset(m, 0, sizeof *m);
    if (pipe(fds) != 0) {
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    m->pid = fork();
    if (m->pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (m->pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    m->out = fdopen(fds[0], "r");
    if (m->out == NULL || fgets(line, sizeof line, m->out) == NULL) {
        fprintf(stderr, "  mock %s did not start\n", argv[0]);
        if (m->out) {
            fclose(m->out);
            m->out = NULL;
        } else {
            close(fds[0]);
        }
        kill(m->pid, SIGKILL);
        waitpid(m->pid, NULL, 0);
        return -1;
    }
    colon = strrchr(line, ':');
    m->port = colon ? atoi(colon + 1) : 0;
    snprintf(m->base_url, sizeof m->base_url, "http://127.0.0.1:%d", m->port);
    return m->port > 0 ? 0 : -1;
}

static inline void mock_stop(struct mock *m) {
    if (m->pid > 0) {
        kill(m->pid, SIGTERM);
        waitpid(m->pid, NULL, 0);
        m->pid = 0;
    }
    if (m->out) {
        fclose(m->out);
        m->out = NULL;
    }
}

#endif

/* The mock's default public test key (see mock/README.md). */
#define MOCK_KEY_ID "key_test_1"
#define MOCK_SECRET "sk_test_payidem_mock_secret_0001"

/* Creates a client for `base_url` with extra JSON members `extra` (may be
 * ""), a memory journal unless `extra` names one. */
static inline payidem_client *new_client(const char *base_url, const char *extra) {
    char json[1024];
    payidem_client *client = NULL;
    payidem_error *err = NULL;
    snprintf(json, sizeof json,
             "{\"base_url\":\"%s\",\"key_id\":\"" MOCK_KEY_ID "\"%s%s}",
             base_url, extra[0] ? "," : "", extra);
    if (strstr(extra, "journal_path") == NULL) {
        size_t len = strlen(json);
        snprintf(json + len - 1, sizeof json - len + 1,
                 ",\"journal_path\":\":memory:\"}");
    }
    if (payidem_client_new(json, (const uint8_t *)MOCK_SECRET,
                           strlen(MOCK_SECRET), &client,
                           &err) != PAYIDEM_OK) {
        fprintf(stderr, "  client_new(%s): %s\n", json,
                payidem_error_message(err));
        payidem_error_free(err);
        return NULL;
    }
    return client;
}

#endif
