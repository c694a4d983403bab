/*
 * payidem.h: the C ABI of payidem (protocol v1 request signing,
 * verification and idempotent retries for a payment API).
 *
 * GENERATED FILE: do not edit. Produced by cbindgen from ffi/capi/src;
 * regenerate with `make header`.
 *
 * Conventions (every function):
 * - Opaque handles are created by *_new and released by *_free;
 *   *_free(NULL) does nothing.
 * - Fallible calls return payidem_result (PAYIDEM_OK = 0) and take a last
 *   `payidem_error **err_out`, which may be NULL. When given, *err_out is
 *   set to NULL on success and to a new error on failure; free it with
 *   payidem_error_free.
 * - Every pointer is checked: NULL where it is not allowed is
 *   PAYIDEM_INVALID_ARGUMENT, and payidem_error_field names the parameter.
 * - Strings are NUL-terminated UTF-8 (invalid UTF-8 is
 *   PAYIDEM_INVALID_ARGUMENT naming the parameter). Buffers are a pointer
 *   and a size_t length; NULL with length 0 is an empty buffer.
 * - Outputs are written only on success, unless a function says otherwise.
 * - Strings returned by accessors are borrowed from their handle and live
 *   until it is freed.
 * - No panic crosses the ABI: it becomes PAYIDEM_INTERNAL_ERROR.
 * - Thread safety is stated per handle: payidem_client, payidem_verifier and
 *   payidem_signer may be shared freely between threads; payidem_outcome,
 *   payidem_error, payidem_signed_attempt and payidem_order_list have a
 *   single owner at a time.
 * - Handle misuse is undefined behaviour and is not detected: freeing a
 *   handle twice, using it after its *_free, or passing a handle of
 *   another type (e.g. a payidem_signer cast to payidem_verifier).
 * - Callbacks (payidem_event_callback, payidem_cancel_callback) must
 *   return normally: a C++ exception through one aborts the process, and
 *   a longjmp out of one is undefined behaviour (see their docs).
 */

#ifndef PAYIDEM_H
#define PAYIDEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Major version of the library (Cargo.toml). */
#define PAYIDEM_VERSION_MAJOR 0
/** Minor version of the library. */
#define PAYIDEM_VERSION_MINOR 1
/** Patch version of the library. */
#define PAYIDEM_VERSION_PATCH 0
/** The library's version as text; payidem_version() returns the linked one. */
#define PAYIDEM_VERSION "0.1.0"
/** Name of the header carrying the key id. */
#define PAYIDEM_HEADER_API_KEY "X-Api-Key"
/** Name of the header carrying the attempt's Unix seconds. */
#define PAYIDEM_HEADER_TIMESTAMP "X-Timestamp"
/** Name of the header carrying the attempt's one-time UUID v4. */
#define PAYIDEM_HEADER_NONCE "X-Nonce"
/** Name of the header carrying the HMAC-SHA256 signature. */
#define PAYIDEM_HEADER_SIGNATURE "X-Signature"
/** Name of the header carrying the operation's idempotency key. */
#define PAYIDEM_HEADER_IDEMPOTENCY_KEY "Idempotency-Key"


/**
 * Bytes of `payidem_signed_headers.api_key`: a key id (at most 128) and
 * its NUL.
 */
#define PAYIDEM_KEY_ID_BUF_LEN 129

/**
 * Bytes of a decimal Unix timestamp (at most 20 digits) and its NUL.
 */
#define PAYIDEM_TIMESTAMP_BUF_LEN 21

/**
 * Bytes of a nonce (36) and its NUL.
 */
#define PAYIDEM_NONCE_BUF_LEN 37

/**
 * Bytes of a signature (64 hex digits) and its NUL.
 */
#define PAYIDEM_SIGNATURE_BUF_LEN 65

/**
 * Bytes of a SHA-256 in hex (64) and its NUL.
 */
#define PAYIDEM_SHA256_HEX_BUF_LEN 65

/**
 * Bytes of an idempotency key (at most 255) and its NUL.
 */
#define PAYIDEM_IDEMPOTENCY_KEY_BUF_LEN 256

/**
 * Most headers one signed attempt carries (`X-Api-Key`, `X-Timestamp`,
 * `X-Nonce`, `X-Signature`, `Idempotency-Key`).
 */
#define PAYIDEM_SIGNED_HEADERS_MAX 5

/**
 * The ABI version: the number in the SONAME (`libpayidem.so.0`). It changes
 * only when a function, struct or code changes incompatibly.
 */
#define PAYIDEM_ABI_VERSION 0

/**
 * The result of every fallible call. `PAYIDEM_OK` (0) is success; codes 1 to
 * 99 are exactly payidem's stable error codes (the same numbers and names in
 * every binding); codes from 100 up exist only in the C ABI. A number is
 * never reused or renumbered; new codes may be added, so treat an unknown
 * one like `PAYIDEM_INTERNAL_ERROR`.
 */
enum payidem_result
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * Success.
   */
  PAYIDEM_OK = 0,
  /**
   * An argument broke its rule; `payidem_error_field` names it.
   */
  PAYIDEM_INVALID_ARGUMENT = 1,
  /**
   * The idempotency key was used with another request. Never retried.
   */
  PAYIDEM_IDEMPOTENCY_CONFLICT = 2,
  /**
   * The platform refused the operation with a final answer (status and
   * body in the error).
   */
  PAYIDEM_REJECTED = 3,
  /**
   * The operation may or may not have happened; its key is kept and it
   * can be resumed.
   */
  PAYIDEM_OUTCOME_UNKNOWN = 4,
  /**
   * The outcome is unknown and the key is past the platform's retention:
   * the operation is never sent again.
   */
  PAYIDEM_KEY_EXPIRED = 5,
  /**
   * Another call is driving the same operation right now.
   */
  PAYIDEM_OPERATION_BUSY = 6,
  /**
   * A network failure before anything reached the platform.
   */
  PAYIDEM_TRANSPORT_ERROR = 7,
  /**
   * The journal could not be opened, read or written.
   */
  PAYIDEM_JOURNAL_ERROR = 8,
  /**
   * Verification: a signature header is missing, repeated or malformed.
   */
  PAYIDEM_MISSING_SIGNATURE = 9,
  /**
   * Verification: the key id is not known.
   */
  PAYIDEM_UNKNOWN_API_KEY = 10,
  /**
   * Verification: the timestamp is outside the window.
   */
  PAYIDEM_TIMESTAMP_OUT_OF_WINDOW = 11,
  /**
   * Verification: the signature does not match.
   */
  PAYIDEM_INVALID_SIGNATURE = 12,
  /**
   * Verification: the nonce was already used inside the window.
   */
  PAYIDEM_NONCE_REUSED = 13,
  /**
   * Verification: the replay cache is full and fails closed.
   */
  PAYIDEM_REPLAY_CACHE_FULL = 14,
  /**
   * Verification: a POST carried no `Idempotency-Key`.
   */
  PAYIDEM_IDEMPOTENCY_KEY_REQUIRED = 15,
  /**
   * A bug inside payidem (a panic caught at the boundary). Never expected.
   */
  PAYIDEM_INTERNAL_ERROR = 16,
  /**
   * The caller cancelled the call; the operation keeps its key.
   */
  PAYIDEM_CANCELLED = 17,
  /**
   * The platform refused every attempt before its idempotency check
   * (authentication, rate limit): nothing happened; not final, the
   * operation keeps its key (status and body in the error).
   */
  PAYIDEM_REFUSED = 18,
  /**
   * Verification: the shared replay store (Redis) could not claim the
   * nonce (unreachable, timed out, out of memory, or restarted after the
   * request was signed): fails closed, answer 503 with `Retry-After`
   * (`payidem_refusal_from_error` builds it). Nothing was accepted.
   */
  PAYIDEM_REPLAY_STORE_UNAVAILABLE = 19,
  /**
   * C ABI only: the caller's buffer is too small; the error message and
   * the call's length output say how much is needed.
   */
  PAYIDEM_BUFFER_TOO_SMALL = 100,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum payidem_result payidem_result;
#else
typedef uint32_t payidem_result;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * The kind of an attempt.
 */
enum payidem_attempt_kind
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * The operation's own request (same method, path, body and key every
   * time).
   */
  PAYIDEM_ATTEMPT_KIND_OPERATION = 1,
  /**
   * A signed GET of the operation's status path.
   */
  PAYIDEM_ATTEMPT_KIND_STATUS_QUERY = 2,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum payidem_attempt_kind payidem_attempt_kind;
#else
typedef uint32_t payidem_attempt_kind;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * What the client does after an attempt.
 */
enum payidem_next_action
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * The call settled.
   */
  PAYIDEM_NEXT_SETTLE = 1,
  /**
   * Retry at once with a fresh signature.
   */
  PAYIDEM_NEXT_RETRY_NOW = 2,
  /**
   * Retry after a backoff or `Retry-After`.
   */
  PAYIDEM_NEXT_RETRY_LATER = 3,
  /**
   * Adjust the clock offset and retry at once.
   */
  PAYIDEM_NEXT_ADJUST_CLOCK = 4,
  /**
   * Query the operation's status.
   */
  PAYIDEM_NEXT_QUERY_STATUS = 5,
  /**
   * Query the status again after a backoff.
   */
  PAYIDEM_NEXT_QUERY_LATER = 6,
  /**
   * Give up: attempts, deadline or budget exhausted.
   */
  PAYIDEM_NEXT_GIVE_UP = 7,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum payidem_next_action payidem_next_action;
#else
typedef uint32_t payidem_next_action;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * Where an operation stands in the journal.
 */
enum payidem_operation_state
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * Not in the journal.
   */
  PAYIDEM_STATE_NOT_FOUND = 0,
  /**
   * Prepared; nothing sent, so nothing can have happened.
   */
  PAYIDEM_STATE_PENDING = 1,
  /**
   * An attempt may have reached the platform and the call has not ended
   * (or the process died during it).
   */
  PAYIDEM_STATE_IN_FLIGHT = 2,
  /**
   * A call ended without learning the outcome; resumable.
   */
  PAYIDEM_STATE_UNKNOWN = 3,
  /**
   * Settled: the platform answered 2xx.
   */
  PAYIDEM_STATE_SUCCEEDED = 4,
  /**
   * Settled: the platform refused it with a final answer.
   */
  PAYIDEM_STATE_REJECTED = 5,
  /**
   * Settled: the platform reported an idempotency conflict.
   */
  PAYIDEM_STATE_CONFLICT = 6,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum payidem_operation_state payidem_operation_state;
#else
typedef uint32_t payidem_operation_state;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * How loud an event is: one policy for every language (a first-attempt
 * success is debug; a retry, backoff, clock adjustment, status query or a
 * success after them is info; a give-up — unknown, key expired, refused,
 * nothing sent, a journal failure — is warn).
 */
enum payidem_log_level
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * Routine: nothing needed more than one attempt.
   */
  PAYIDEM_LOG_DEBUG = 1,
  /**
   * The retry machinery worked: retries, backoffs, status queries.
   */
  PAYIDEM_LOG_INFO = 2,
  /**
   * The call gave up or the journal failed: someone may have to act.
   */
  PAYIDEM_LOG_WARN = 3,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum payidem_log_level payidem_log_level;
#else
typedef uint32_t payidem_log_level;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * What to do after one attempt.
 */
enum payidem_decision_kind
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * Settled with this 2xx response; see `replayed`.
   */
  PAYIDEM_DECISION_DONE = 1,
  /**
   * Fails for good; `failure` is `PAYIDEM_IDEMPOTENCY_CONFLICT` (never
   * retried, never re-keyed) or `PAYIDEM_REJECTED`.
   */
  PAYIDEM_DECISION_FAIL = 2,
  /**
   * Re-sign with a fresh nonce and timestamp and retry at once.
   */
  PAYIDEM_DECISION_RETRY_NOW = 3,
  /**
   * Retry after a full-jitter backoff (see `landed` for what to do if
   * retries run out).
   */
  PAYIDEM_DECISION_RETRY_BACKOFF = 4,
  /**
   * Retry after `seconds` (the platform's `Retry-After`).
   */
  PAYIDEM_DECISION_RETRY_AFTER = 5,
  /**
   * Take the clock offset from `server_time` and retry once at once.
   */
  PAYIDEM_DECISION_ADJUST_CLOCK_RETRY = 6,
  /**
   * The outcome is unknown: query the operation's status first.
   */
  PAYIDEM_DECISION_QUERY_STATUS = 7,
  /**
   * (Status queries only.) The operation did not land: send the
   * operation itself again at once with the same key — unless its key is
   * past the platform's retention, which makes the outcome `key_expired`.
   */
  PAYIDEM_DECISION_SEND_OPERATION = 8,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum payidem_decision_kind payidem_decision_kind;
#else
typedef uint32_t payidem_decision_kind;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * Whether the operation may have taken effect, as far as one answer tells
 * (`payidem_decision.landed`).
 */
enum payidem_landed
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * It did not (the answer came before the platform's idempotency step,
   * nothing was sent, or the key is held by another request).
   */
  PAYIDEM_LANDED_NO = 0,
  /**
   * It may have: keep the key, never re-key; if retries run out the
   * outcome is unknown (`PAYIDEM_OUTCOME_UNKNOWN`), never "failed".
   */
  PAYIDEM_LANDED_MAYBE = 1,
  /**
   * It did (a 2xx, a final refusal the platform keeps, an operation in
   * progress).
   */
  PAYIDEM_LANDED_YES = 2,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum payidem_landed payidem_landed;
#else
typedef uint32_t payidem_landed;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * What one attempt produced (input of `payidem_decide`, passed as
 * `uint32_t`).
 */
enum payidem_attempt_outcome
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * An HTTP response came back (give its status, error code and headers).
   */
  PAYIDEM_ATTEMPT_RESPONSE = 1,
  /**
   * The request was never sent (connection refused, DNS or TLS failure
   * before the request): nothing reached the platform.
   */
  PAYIDEM_ATTEMPT_NOT_SENT = 2,
  /**
   * The request was sent, or may have been, and no response came back
   * (timeout, reset).
   */
  PAYIDEM_ATTEMPT_SENT_NO_RESPONSE = 3,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum payidem_attempt_outcome payidem_attempt_outcome;
#else
typedef uint32_t payidem_attempt_outcome;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * What a step asks the caller to do: the values `payidem_step_kind`
 * returns. (Named `_type`: C gives the function and a type one namespace.)
 */
enum payidem_step_type
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * Record the coming attempt in your journal (durably when
   * `payidem_step_persist_first`), then call
   * `payidem_operation_persisted`. Only the pure machine asks for it: a
   * client's call records in the client's journal itself.
   */
  PAYIDEM_STEP_PERSIST = 1,
  /**
   * Send this signed attempt, then report what happened.
   */
  PAYIDEM_STEP_SEND = 2,
  /**
   * Sleep `payidem_step_wait_ms`, then ask for the next step.
   */
  PAYIDEM_STEP_WAIT = 3,
  /**
   * The call is over; see `payidem_step_end_result`.
   */
  PAYIDEM_STEP_END = 4,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum payidem_step_type payidem_step_type;
#else
typedef uint32_t payidem_step_type;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * The placeholder style of the outbox statement's SQL (input of
 * `payidem_client_outbox_insert`, passed as `uint32_t`).
 */
enum payidem_param_style
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * `$1, $2, …`: the server's own style (libpq's `PQexecParams`, Go
   * `pgx`/`lib/pq`, Rust `postgres`/`sqlx`, Python `asyncpg`).
   */
  PAYIDEM_PARAMS_DOLLAR = 1,
  /**
   * `%s`: Python DB-API drivers (`psycopg`, `psycopg2`).
   */
  PAYIDEM_PARAMS_PERCENT_S = 2,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum payidem_param_style payidem_param_style;
#else
typedef uint32_t payidem_param_style;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * The form of a metrics snapshot.
 */
enum payidem_metrics_format
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : uint32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  /**
   * The Prometheus text exposition format 0.0.4 (`# HELP`, `# TYPE`,
   * samples; histograms as `_bucket`, `_sum`, `_count`).
   */
  PAYIDEM_METRICS_PROMETHEUS = 1,
  /**
   * JSON: `{"metrics": [{"name", "type", "help", "series": [...]}]}`
   * (see docs/metrics.md).
   */
  PAYIDEM_METRICS_JSON = 2,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum payidem_metrics_format payidem_metrics_format;
#else
typedef uint32_t payidem_metrics_format;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

/**
 * One call of a client driving one operation, for a caller that sends
 * the attempts with its own HTTP client: ask `payidem_call_step` what to
 * do, send SEND steps to `payidem_client_url` of their path, report with
 * `payidem_call_report`, sleep WAIT steps, stop at END. The call records
 * every attempt in the client's journal (durably for the first) before
 * handing it out, and stores the end before the END step.
 *
 * Single owner: used by one thread at a time (it may move between
 * threads); many calls of one client may run on many threads. Free it
 * with `payidem_call_free`; a call freed before its END is abandoned (the
 * journal is left right and the lease released).
 */
typedef struct payidem_call payidem_call;

/**
 * Runs business operations against the platform, one idempotency key per
 * operation, keeping each operation's key and frozen body in a journal.
 *
 * Share freely: every function taking a `const payidem_client *` may be
 * called from any number of threads at once. Two calls never drive the
 * same operation at once; the second gets `PAYIDEM_OPERATION_BUSY`.
 */
typedef struct payidem_client payidem_client;

/**
 * An error: a stable code, a message for people, and the context the code
 * calls for (the invalid field, the platform's status and body, the
 * operation's order id and idempotency key). Never holds a secret.
 *
 * Single owner: created by a failing call, freed with `payidem_error_free`;
 * it may move between threads but must not be used by two at once.
 */
typedef struct payidem_error payidem_error;

/**
 * One call driving one operation, with no journal, clock or network of its
 * own: the caller persists what PERSIST steps ask, sends what SEND steps
 * carry, sleeps WAIT steps, and gives the time with every poll and report.
 * The same machine `payidem_client_execute` drives; for callers with their
 * own journal, and for the operation vectors.
 *
 * Single owner: used by one thread at a time (it may move between
 * threads); free it with `payidem_operation_free`.
 */
typedef struct payidem_operation payidem_operation;

/**
 * A list of order ids (from `payidem_client_list_unknown`).
 *
 * Single owner: it may move between threads but must not be used by two at
 * once; free it with `payidem_order_list_free`.
 */
typedef struct payidem_order_list payidem_order_list;

/**
 * The settled outcome of an operation: the platform's 2xx answer (status,
 * headers, body), the order id, the idempotency key and the attempts made,
 * and the journal's error when the journal could not record the success
 * (`payidem_outcome_journal_error`).
 *
 * Single owner: it may move between threads but must not be used by two at
 * once; free it with `payidem_outcome_free`.
 */
typedef struct payidem_outcome payidem_outcome;

/**
 * The HTTP answer that refuses a request which failed verification (or
 * whose body is too large): status, headers and the exact body
 * `{"error":{"code":"...","message":"..."}}`. The core builds it; the mock,
 * the Go middleware and the Python WSGI middleware send the same bytes.
 *
 * Read-only once made: any number of threads may read it at once; free it
 * once, with `payidem_refusal_free`, when no other thread uses it.
 */
typedef struct payidem_refusal payidem_refusal;

/**
 * The signed headers of one attempt, in a fixed order: `X-Api-Key`,
 * `X-Timestamp`, `X-Nonce`, `X-Signature`, then `Idempotency-Key` when the
 * request carries one.
 *
 * Single owner: it may move between threads but must not be used by two at
 * once; free it with `payidem_signed_attempt_free`.
 */
typedef struct payidem_signed_attempt payidem_signed_attempt;

/**
 * Signs attempts with one key id and secret. The secret is kept only as
 * keyed HMAC state, wiped when the signer is freed, and never shown.
 *
 * Share freely: every function taking a `const payidem_signer *` may be
 * called from any number of threads at once.
 */
typedef struct payidem_signer payidem_signer;

/**
 * One step of an operation: persist, send, wait or end. Made by
 * `payidem_operation_poll`, `payidem_operation_abandon`,
 * `payidem_call_step` and `payidem_call_cancel`; read with the
 * `payidem_step_*` accessors (an accessor of another kind's data answers
 * 0, false or NULL).
 *
 * Single owner: it may move between threads but must not be used by two
 * at once; free it with `payidem_step_free`. It does not borrow the
 * operation or call that made it.
 */
typedef struct payidem_step payidem_step;

/**
 * Verifies signed requests for a set of key ids and refuses replays.
 *
 * Share freely: every function may be called from any number of threads
 * at once (verifications run concurrently; `payidem_verifier_add_key`
 * waits for running verifications). Secrets are wiped on free.
 */
typedef struct payidem_verifier payidem_verifier;

/**
 * One attempt's event, for logs and metrics. Holds no secret and no body.
 * Every pointer is borrowed and valid only during the callback.
 */
typedef struct payidem_attempt_event {
  /**
   * The operation's order id.
   */
  const char *order_id;
  /**
   * The operation's idempotency key.
   */
  const char *idempotency_key;
  /**
   * The attempt's number over every call of the operation (1 = first).
   */
  uint32_t attempt;
  /**
   * The operation's own request or a status query.
   */
  payidem_attempt_kind kind;
  /**
   * What the client does next.
   */
  payidem_next_action next;
  /**
   * The HTTP status; 0 when no response came.
   */
  uint16_t http_status;
  /**
   * Whether the platform replayed a stored answer.
   */
  bool replayed;
  /**
   * Whether `wait_ms` holds a wait before the next attempt.
   */
  bool has_wait;
  /**
   * The wait before the next attempt, in milliseconds.
   */
  uint64_t wait_ms;
  /**
   * How long the attempt took, in microseconds.
   */
  uint64_t duration_us;
  /**
   * The response's error code; NULL when none.
   */
  const char *error_code;
  /**
   * The transport failure; NULL when a response came.
   */
  const char *transport_error;
} payidem_attempt_event;

/**
 * Receives every attempt's event, on the thread that made the attempt.
 * `userdata` is the pointer given to `payidem_client_set_event_callback`.
 *
 * It must return normally: no `longjmp`/`siglongjmp` out of it, no C++
 * exception or other unwinding through it. A C++ exception reaching the
 * library aborts the process ("Rust cannot catch foreign exceptions");
 * it cannot be caught by the caller of `payidem_client_execute`. A
 * `longjmp` skips the library's frames and is undefined behaviour; in
 * practice the library still counts that callback as running, so
 * `payidem_client_set_event_callback` and `payidem_client_free` on that
 * client (from a thread that is not inside a callback) then wait forever
 * (other threads' attempts and calls go on: no lock is held while the
 * callback runs), the operation's journal lease is kept until it expires
 * (retry deadline + request timeout + 30 s, about 120 s by default;
 * meanwhile its order id answers `PAYIDEM_OPERATION_BUSY`), and the
 * call's memory leaks.
 */
typedef void (*payidem_event_callback)(void *userdata, const struct payidem_attempt_event *event);

/**
 * Polled before every attempt and during waits (about every 20 ms) on the
 * calling thread; a non-zero return cancels the call. The library holds
 * no lock while it runs.
 *
 * It must return normally: no `longjmp`/`siglongjmp` out of it, no C++
 * exception or other unwinding through it. A C++ exception reaching the
 * library aborts the process. A `longjmp` skips the library's frames and
 * is undefined behaviour; in practice the operation's journal lease is
 * kept until it expires (about 120 s by default; meanwhile its order id
 * answers `PAYIDEM_OPERATION_BUSY`) and the call's memory leaks. To stop
 * a call, return non-zero instead.
 */
typedef int (*payidem_cancel_callback)(void *userdata);

/**
 * One HTTP header: a name and a value, both NUL-terminated. Names compare
 * ASCII case-insensitively. Bytes that are not UTF-8 are read lossily
 * (such a value can never satisfy a protocol rule).
 */
typedef struct payidem_header {
  /**
   * The header's name, e.g. `"X-Nonce"`; never NULL.
   */
  const char *name;
  /**
   * The header's value; never NULL (use `""` for an empty value).
   */
  const char *value;
} payidem_header;

/**
 * Receives one client event as JSON (`event_json`, borrowed for the call
 * only), with the `userdata` given at registration. The object has `type`
 * (`"attempt"`, `"call_ended"` or `"journal_failed"`), `level`
 * (`"debug"`, `"info"` or `"warn"`, the policy of `payidem_log_level`)
 * and the event's fields (docs/metrics.md). It must return normally: no
 * `longjmp`, no exception (the library catches nothing thrown through C
 * frames).
 */
typedef void (*payidem_event_json_callback)(void *userdata, const char *event_json);

/**
 * The machine's reaction to one reported attempt (filled by
 * `payidem_operation_handle`).
 */
typedef struct payidem_reaction {
  /**
   * What comes next: a `payidem_next_action` value.
   */
  uint32_t next;
  /**
   * The wait before the next attempt in milliseconds, rounded up; 0 when
   * none.
   */
  uint64_t wait_ms;
  /**
   * The HTTP status of the reported response; 0 when none came.
   */
  uint16_t status;
  /**
   * Whether the operation may have taken effect, over every attempt so
   * far: a `payidem_landed` value.
   */
  uint32_t landed;
} payidem_reaction;

/**
 * The decision of `payidem_decide`. Fields that do not apply to `kind` are
 * 0 / false.
 */
typedef struct payidem_decision {
  /**
   * What to do.
   */
  payidem_decision_kind kind;
  /**
   * For `PAYIDEM_DECISION_FAIL`: `PAYIDEM_IDEMPOTENCY_CONFLICT` or
   * `PAYIDEM_REJECTED`; `PAYIDEM_OK` otherwise.
   */
  payidem_result failure;
  /**
   * For `PAYIDEM_DECISION_DONE`: the platform replayed a stored answer.
   */
  bool replayed;
  /**
   * For every kind: whether the operation may have taken effect. Not
   * `PAYIDEM_LANDED_NO` means: keep the key; when retries run out the
   * outcome is unknown. A `PAYIDEM_DECISION_FAIL` with
   * `PAYIDEM_LANDED_NO` is a refusal before the platform's idempotency
   * step: nothing happened (not final; `PAYIDEM_REFUSED` in a client).
   */
  payidem_landed landed;
  /**
   * For `PAYIDEM_DECISION_RETRY_AFTER`: seconds to wait.
   */
  uint64_t seconds;
  /**
   * For `PAYIDEM_DECISION_ADJUST_CLOCK_RETRY`: the server's clock, Unix
   * seconds.
   */
  uint64_t server_time;
} payidem_decision;

/**
 * The signed header values of one attempt written into caller memory, with
 * no allocation. Each field is NUL-terminated; `idempotency_key` is `""`
 * when the request carries none (then send four headers, not five).
 */
typedef struct payidem_signed_headers {
  /**
   * The `X-Api-Key` value.
   */
  char api_key[PAYIDEM_KEY_ID_BUF_LEN];
  /**
   * The `X-Timestamp` value.
   */
  char timestamp[PAYIDEM_TIMESTAMP_BUF_LEN];
  /**
   * The `X-Nonce` value.
   */
  char nonce[PAYIDEM_NONCE_BUF_LEN];
  /**
   * The `X-Signature` value.
   */
  char signature[PAYIDEM_SIGNATURE_BUF_LEN];
  /**
   * The `Idempotency-Key` value, or `""` for none.
   */
  char idempotency_key[PAYIDEM_IDEMPOTENCY_KEY_BUF_LEN];
} payidem_signed_headers;

/**
 * What `payidem_verifier_verify_into` verified: act on these values, not
 * on headers read again (the request carried each of them exactly once).
 * Every string is NUL-terminated.
 */
typedef struct payidem_verified {
  /**
   * The key id that signed the request (`X-Api-Key`).
   */
  char key_id[PAYIDEM_KEY_ID_BUF_LEN];
  /**
   * The `Idempotency-Key`, or `""` when the request carried none (an
   * empty or repeated header fails verification).
   */
  char idempotency_key[PAYIDEM_IDEMPOTENCY_KEY_BUF_LEN];
  /**
   * The signed nonce (`X-Nonce`), now recorded as used.
   */
  char nonce[PAYIDEM_NONCE_BUF_LEN];
  /**
   * The signed timestamp (`X-Timestamp`, Unix seconds).
   */
  uint64_t timestamp;
} payidem_verified;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/**
 * The stable name of a `payidem_operation_state` value (`"pending"`,
 * `"in_flight"`, `"unknown"`, `"succeeded"`, `"rejected"`, `"conflict"`:
 * the names journals store); NULL for `PAYIDEM_STATE_NOT_FOUND` and any
 * other number that is no state.
 *
 * Ownership: the string is static; never free it.
 * NULL: never takes a pointer.
 * Threads: safe from any thread.
 * Errors: none; an unknown number gives NULL.
 */
const char *payidem_operation_state_name(uint32_t state);

/**
 * The stable name of a `payidem_step_type` value (`"persist"`, `"send"`,
 * `"wait"`, `"end"`); NULL for a number that is no step type.
 *
 * Ownership: the string is static; never free it.
 * NULL: never takes a pointer.
 * Threads: safe from any thread.
 * Errors: none; an unknown number gives NULL.
 */
const char *payidem_step_type_name(uint32_t kind);

/**
 * The stable name of a `payidem_attempt_outcome` value (`"response"`,
 * `"not_sent"`, `"sent_no_response"`); NULL for a number that is none.
 *
 * Ownership: the string is static; never free it.
 * NULL: never takes a pointer.
 * Threads: safe from any thread.
 * Errors: none; an unknown number gives NULL.
 */
const char *payidem_attempt_outcome_name(uint32_t outcome);

/**
 * The stable name of a `payidem_next_action` value (`"settle"`,
 * `"retry_now"`, `"retry_later"`, `"adjust_clock"`, `"query_status"`,
 * `"query_later"`, `"give_up"`), as the core library names it; NULL for a
 * number that is no action.
 *
 * Ownership: the string is static; never free it.
 * NULL: never takes a pointer.
 * Threads: safe from any thread.
 * Errors: none; an unknown number gives NULL.
 */
const char *payidem_next_action_name(uint32_t action);

/**
 * The stable name of a `payidem_landed` value (`"no"`, `"maybe"`,
 * `"yes"`), as the core library names it; NULL for a number that is none.
 *
 * Ownership: the string is static; never free it.
 * NULL: never takes a pointer.
 * Threads: safe from any thread.
 * Errors: none; an unknown number gives NULL.
 */
const char *payidem_landed_name(uint32_t landed);

/**
 * The stable name of a `payidem_attempt_kind` value (`"operation"`,
 * `"status_query"`), as the core library names it; NULL for a number that
 * is no kind.
 *
 * Ownership: the string is static; never free it.
 * NULL: never takes a pointer.
 * Threads: safe from any thread.
 * Errors: none; an unknown number gives NULL.
 */
const char *payidem_attempt_kind_name(uint32_t kind);

/**
 * The stable name of a `payidem_decision_kind` (`done`, `fail`,
 * `retry_now`, `retry_backoff`, `retry_after`, `adjust_clock_retry`,
 * `query_status`, `send_operation`: the core's names); NULL for a number
 * that is no decision kind.
 *
 * Ownership: a static string; never free it.
 * NULL: never takes a pointer.
 * Threads: safe from any thread.
 * Errors: none (NULL for an unknown number).
 */
const char *payidem_decision_kind_name(uint32_t kind);

/**
 * The name of the `index`th header a signed attempt carries, in the
 * core's order (`"X-Api-Key"`, `"X-Timestamp"`, `"X-Nonce"`,
 * `"X-Signature"`, `"Idempotency-Key"`; a request without an idempotency
 * key carries the first four); NULL from index 5 on. A caller's own values
 * of these headers must never be sent with an attempt.
 *
 * Ownership: the string is static; never free it.
 * NULL: never takes a pointer.
 * Threads: safe from any thread.
 * Errors: none; an index past the last gives NULL.
 */
const char *payidem_signed_header_name(uint32_t index);

/**
 * The error's code; `PAYIDEM_OK` for a NULL error (no error).
 *
 * Ownership: borrows `err`.
 * NULL: `err` may be NULL.
 * Threads: read-only; safe while no other thread frees `err`.
 * Errors: none.
 */
payidem_result payidem_error_code(const struct payidem_error *err);

/**
 * The error's message for people: NUL-terminated UTF-8 that starts with the
 * field's name for `PAYIDEM_INVALID_ARGUMENT`. Never holds a secret.
 *
 * Ownership: borrowed from `err`; valid until `payidem_error_free(err)`.
 * NULL: `err` may be NULL, giving NULL.
 * Threads: read-only; safe while no other thread frees `err`.
 * Errors: none.
 */
const char *payidem_error_message(const struct payidem_error *err);

/**
 * The name of the invalid argument or option (e.g. `"path"`,
 * `"retry.base_ms"`), for `PAYIDEM_INVALID_ARGUMENT` and
 * `PAYIDEM_BUFFER_TOO_SMALL`; NULL otherwise.
 *
 * Ownership: borrowed from `err`; valid until `payidem_error_free(err)`.
 * NULL: `err` may be NULL, giving NULL.
 * Threads: read-only; safe while no other thread frees `err`.
 * Errors: none.
 */
const char *payidem_error_field(const struct payidem_error *err);

/**
 * The HTTP status: the platform's answer for an error that came with one
 * (`PAYIDEM_REJECTED`, `PAYIDEM_REFUSED`, a conflict answered by the
 * platform), or the status a verifier answers with for a request that
 * failed verification (401, 409, 503, 400); 0 when none, which is every
 * local error (an invalid argument, a journal error: nothing was sent nor
 * answered).
 *
 * Ownership: borrows `err`.
 * NULL: `err` may be NULL, giving 0.
 * Threads: read-only; safe while no other thread frees `err`.
 * Errors: none.
 */
uint16_t payidem_error_http_status(const struct payidem_error *err);

/**
 * The platform's response body, for `PAYIDEM_REJECTED` and a conflict
 * answered by the platform. Returns true and sets `*body_out` and
 * `*len_out` when there is one; returns false and leaves them untouched
 * otherwise. The bytes are not NUL-terminated.
 *
 * Ownership: the bytes are borrowed from `err`; valid until
 * `payidem_error_free(err)`.
 * NULL: `err` may be NULL (false); `body_out` and `len_out` must not be
 * NULL (false).
 * Threads: read-only; safe while no other thread frees `err`.
 * Errors: none.
 */
bool payidem_error_body(const struct payidem_error *err, const uint8_t **body_out, size_t *len_out);

/**
 * The platform's error code (`error.code` of its answer's body, e.g.
 * `"card_declined"`), for an error that came with a platform answer in the
 * protocol's error body (`PAYIDEM_REJECTED`, `PAYIDEM_REFUSED`, a conflict
 * answered by the platform); NULL otherwise. NUL-terminated UTF-8, at most
 * 64 characters (a longer code is cut and ends with `…`), control
 * characters written as escapes (`\n`): safe to print.
 *
 * Ownership: borrowed from `err`; valid until `payidem_error_free(err)`.
 * NULL: `err` may be NULL, giving NULL.
 * Threads: read-only; safe while no other thread frees `err`.
 * Errors: none.
 */
const char *payidem_error_platform_code(const struct payidem_error *err);

/**
 * The platform's error message for people (`error.message` of its answer's
 * body), when `payidem_error_platform_code` is set and the body has a
 * message; NULL otherwise. NUL-terminated UTF-8, at most 256 characters (a
 * longer message is cut and ends with `…`), control characters written as
 * escapes: safe to print.
 *
 * Ownership: borrowed from `err`; valid until `payidem_error_free(err)`.
 * NULL: `err` may be NULL, giving NULL.
 * Threads: read-only; safe while no other thread frees `err`.
 * Errors: none.
 */
const char *payidem_error_platform_message(const struct payidem_error *err);

/**
 * The operation's order id, when the error concerns one operation
 * (`PAYIDEM_OUTCOME_UNKNOWN`, `PAYIDEM_KEY_EXPIRED`, `PAYIDEM_CANCELLED`,
 * ...); NULL otherwise.
 *
 * Ownership: borrowed from `err`; valid until `payidem_error_free(err)`.
 * NULL: `err` may be NULL, giving NULL.
 * Threads: read-only; safe while no other thread frees `err`.
 * Errors: none.
 */
const char *payidem_error_order_id(const struct payidem_error *err);

/**
 * The operation's idempotency key, when the error concerns one operation;
 * NULL otherwise. Resume the operation with the same order id: the key is
 * kept by the journal.
 *
 * Ownership: borrowed from `err`; valid until `payidem_error_free(err)`.
 * NULL: `err` may be NULL, giving NULL.
 * Threads: read-only; safe while no other thread frees `err`.
 * Errors: none.
 */
const char *payidem_error_idempotency_key(const struct payidem_error *err);

/**
 * The server's clock (Unix seconds), for
 * `PAYIDEM_TIMESTAMP_OUT_OF_WINDOW` from a verifier. Returns true and sets
 * `*server_time_out` when known; false otherwise.
 *
 * Ownership: borrows `err`.
 * NULL: `err` may be NULL (false); `server_time_out` must not be NULL
 * (false).
 * Threads: read-only; safe while no other thread frees `err`.
 * Errors: none.
 */
bool payidem_error_server_time(const struct payidem_error *err, uint64_t *server_time_out);

/**
 * Frees an error.
 *
 * Ownership: takes `err`; every string and buffer borrowed from it dies.
 * NULL: `err` may be NULL (nothing happens).
 * Anything else must be a live handle of this type from this library:
 * freeing it twice, using it after this call, or passing a handle of
 * another type is undefined behaviour, and is not detected.
 * Threads: the caller must own `err`; free it once.
 * Errors: none.
 */
void payidem_error_free(struct payidem_error *err);

/**
 * The stable snake_case name of a result number (`"ok"`,
 * `"invalid_argument"`, ..., `"buffer_too_small"`), the same name every
 * binding uses; NULL for a number that is no code.
 *
 * Ownership: the string is static; never free it.
 * NULL: never takes a pointer.
 * Threads: safe from any thread.
 * Errors: none; an unknown number gives NULL.
 */
const char *payidem_result_name(uint32_t code);

/**
 * The highest number among payidem's stable error codes in the linked
 * library. Codes 1 to this number are exactly the core library's codes,
 * without gaps, each named by `payidem_result_name`; the C ABI's own codes
 * (from 100 up) are not counted. Lets a binding check, at run time, that
 * it knows every code of the library it is linked with.
 *
 * Ownership: nothing to free.
 * NULL: never takes a pointer.
 * Threads: safe from any thread.
 * Errors: none.
 */
uint32_t payidem_result_max_error_code(void);

/**
 * Whether an operation that ended with `code` is settled for good: it is
 * never sent again, and executing or resuming it answers the same end
 * (`PAYIDEM_REJECTED`, `PAYIDEM_IDEMPOTENCY_CONFLICT`,
 * `PAYIDEM_KEY_EXPIRED`). False for every other code, including unknown
 * numbers: the operation keeps its key and may still be completed
 * (`PAYIDEM_OUTCOME_UNKNOWN`, `PAYIDEM_REFUSED`, `PAYIDEM_TRANSPORT_ERROR`,
 * `PAYIDEM_CANCELLED`, ...).
 *
 * Ownership: nothing to free.
 * NULL: never takes a pointer.
 * Threads: safe from any thread.
 * Errors: none.
 */
bool payidem_result_is_final(uint32_t code);

/**
 * Creates a client from `options_json`, a JSON object, and the key's
 * `secret` (16..=1024 bytes; copied into keyed MAC state, wiped on free).
 * Opens (or creates) the journal and purges settled operations older than
 * the settled retention.
 *
 * Options (read by the core's one rule per setting, the table in
 * core/src/settings/client.rs: an absent or null key takes the default;
 * every number is a JSON integer in its range, every duration at most
 * 10^9 s; anything else, and an unknown key, is `PAYIDEM_INVALID_ARGUMENT`
 * naming it, e.g. `"retry.bogus"`; `payidem_client_options_resolve` shows
 * the values a client would get):
 * - `base_url` (string, required): e.g. `"https://api.example.com"`; a
 *   path prefix is allowed (sent and signed as part of every request
 *   target), no query. `https://` is required except for loopback hosts
 *   (`localhost`, `127.0.0.0/8`, `[::1]`).
 * - `allow_insecure_http` (boolean, default false): accept `http://` for
 *   any host (signed requests then travel in clear; the platform's clock
 *   is never learnt from such answers).
 * - `proxy` (string): an `http://` or `https://` proxy URL; none by
 *   default. `proxy_from_env` (boolean, default false): when `proxy` is
 *   absent, use `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY` and `NO_PROXY`
 *   (`HTTP_PROXY` is ignored when `REQUEST_METHOD` is set, i.e. under CGI).
 * - `ca_bundle` (string): a PEM file of CA certificates trusted instead of
 *   the operating system's trust store (the default, which honours
 *   `SSL_CERT_FILE` and `SSL_CERT_DIR`).
 * - `client_cert`, `client_key` (strings, both or neither): PEM files of a
 *   client certificate (chain) and its private key for mutual TLS; the key
 *   is read once and never appears in errors.
 * - `max_clock_offset_s` (default 600): the largest clock offset learnt
 *   from a `401 timestamp_out_of_window`; a larger answer is not trusted
 *   and the call fails with `PAYIDEM_REJECTED` (status 401), the operation
 *   kept. 0 never adjusts the clock.
 * - `key_id` (string, required): sent in `X-Api-Key`.
 * - `journal_key_hex` (string): the key of the journal rows' integrity
 *   MACs, in hex (16 to 1024 bytes); absent or `""`: derived from the
 *   secret. Set it to keep reading rows written before a rotation of the
 *   secret (docs/journal-integrity.md). Never appears in errors.
 * - `journal_path` (string): SQLite file, created 0600 if missing (its
 *   directory must exist); `":memory:"` for a memory journal (operations
 *   die with the process: tests only, never production). Absent or `""`:
 *   the durable default `$XDG_STATE_HOME/payidem/journal.sqlite3`, or
 *   `$HOME/.local/state/payidem/journal.sqlite3`, its directories created
 *   0700.
 * - `connect_timeout_ms` (default 5000), `request_timeout_ms` (one
 *   attempt's whole response, default 30000): both above 0.
 * - `retry`: object with `base_ms` (200; 0 retries without waiting; at
 *   most `cap_ms`), `cap_ms` (10000), `max_attempts` (8, at least 1),
 *   `deadline_ms` (60000, above 0; per call).
 * - `retry_budget`: object with `capacity` (500), `retry_cost` (5),
 *   `timeout_cost` (10), `success_refund` (1): tokens shared by all calls,
 *   each 0..=4294967295 (0 is a count: capacity 0 allows no retry).
 * - `key_retention_s` (172800 = 48 h, 1..=172800): an unknown operation
 *   whose key is older is never POSTed again (`PAYIDEM_KEY_EXPIRED`).
 * - `settled_retention_s` (604800 = 7 days): settled operations older than
 *   this are purged from the journal (0: every settled one, at open).
 * - `lease_ttl_s` (1..=10^9; absent: the retry deadline plus 30 s): how
 *   long a call's lease on an operation holds past its last renewal
 *   (beyond the request timeout, which every renewal adds so that an
 *   attempt in flight stays covered) before another call may take it over.
 * - `lease_heartbeat_ms` (100..=10^12, less than the lease ttl; absent: a
 *   third of the ttl): how often a call renews its lease while it waits,
 *   and the most time since its last renewal with which it sends. A call
 *   that finds its lease lost never sends again (`PAYIDEM_OPERATION_BUSY`).
 *
 * Ownership: on success `*client_out` receives a new client the caller
 * frees with `payidem_client_free`; the inputs are only read.
 * NULL: `options_json`, `secret` and `client_out` must not be NULL;
 * `err_out` may be NULL.
 * Threads: safe from any thread.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `options_json` (not a JSON
 * object), an option (missing, mistyped, unknown or out of range, e.g.
 * `base_url`, `retry.max_attempts`, `key_retention_s`; an unreadable or
 * mismatched `ca_bundle`, `client_cert` or `client_key`; a bad `proxy`),
 * `key_id`, `secret` or `client_out`; `PAYIDEM_JOURNAL_ERROR` when the journal cannot be opened.
 */
payidem_result payidem_client_new(const char *options_json,
                                  const uint8_t *secret,
                                  size_t secret_len,
                                  struct payidem_client **client_out,
                                  struct payidem_error **err_out);

/**
 * Sets (or, with `callback` NULL, removes) the function that receives
 * every attempt's event, with `userdata` as its first argument. It runs on
 * whichever thread made the attempt, so it and `userdata` must be safe to
 * use from every thread calling the client. Once this function returns, no
 * call of the previous callback is running or will start, except when this
 * function is called from inside a payidem callback (on any client): it
 * then returns without waiting, since that callback itself may be one of
 * the calls it would wait for.
 *
 * The library holds no lock while it calls the callback (nor the JSON
 * event callback, nor the cancel hook): the callback may call any function
 * on the same client, this one and `payidem_client_execute` included, and
 * a slow callback delays only the thread it runs on (and a
 * `payidem_client_set_event_callback` or `payidem_client_free` waiting for
 * it). After `payidem_client_free` the callback is never called again,
 * not even by a `payidem_call` that outlives the client. The callback
 * must return normally (see `payidem_event_callback`).
 *
 * Ownership: `userdata` stays the caller's; it must stay valid until the
 * callback is replaced or removed, or the client freed (each of which
 * waits for running calls of it, as above).
 * NULL: `client` must not be NULL (nothing happens); `callback` and
 * `userdata` may be NULL.
 * Threads: safe at any time; it waits for running calls of the previous
 * callback to return (unless called from inside a callback), never for
 * calls of the new one.
 * Errors: none.
 */
void payidem_client_set_event_callback(const struct payidem_client *client,
                                       payidem_event_callback callback,
                                       void *userdata);

/**
 * Runs one business operation to a settled outcome: `method` `path` with
 * the exact `body`, keyed by `idempotency_key` (NULL for the default
 * `create-{order_id}`), with `status_path` (NULL when none) as the signed
 * GET that tells whether it landed. The operation is journaled before
 * anything is sent; an order id already in the journal with the same
 * request continues that operation (a settled one answers from the journal
 * without any network call).
 *
 * Ownership: on success `*outcome_out` receives a new outcome the caller
 * frees with `payidem_outcome_free`; the inputs are only read (the body is
 * copied into the journal).
 * NULL: `client`, `order_id`, `method`, `path` and `outcome_out` must not
 * be NULL; `body` may be NULL when `body_len` is 0; `idempotency_key`,
 * `status_path` and `err_out` may be NULL.
 * Threads: safe from any number of threads on one client.
 * Errors: `PAYIDEM_REJECTED` (status and body in the error),
 * `PAYIDEM_IDEMPOTENCY_CONFLICT`, `PAYIDEM_OUTCOME_UNKNOWN` (resumable:
 * order id and key in the error), `PAYIDEM_KEY_EXPIRED`,
 * `PAYIDEM_TRANSPORT_ERROR` (nothing reached the platform; key kept),
 * `PAYIDEM_OPERATION_BUSY`, `PAYIDEM_JOURNAL_ERROR`,
 * `PAYIDEM_INVALID_ARGUMENT` naming `client`, `order_id`, `method`,
 * `path`, `body`, `idempotency_key`, `status_path` or `outcome_out`.
 */
payidem_result payidem_client_execute(const struct payidem_client *client,
                                      const char *order_id,
                                      const char *method,
                                      const char *path,
                                      const uint8_t *body,
                                      size_t body_len,
                                      const char *idempotency_key,
                                      const char *status_path,
                                      struct payidem_outcome **outcome_out,
                                      struct payidem_error **err_out);

/**
 * `payidem_client_execute` with a per-call deadline and a cancellation
 * hook. `deadline_ms` (0 for none) shortens the client's retry deadline
 * for this call. `cancel` (NULL for none) is polled with `cancel_userdata`
 * on the calling thread before every attempt and during waits; when it
 * returns non-zero the call ends with `PAYIDEM_CANCELLED` and the
 * operation keeps its key (resume it if an attempt may have landed).
 *
 * Ownership: as `payidem_client_execute`; `cancel_userdata` stays the
 * caller's.
 * NULL: as `payidem_client_execute`; `cancel` and `cancel_userdata` may be
 * NULL.
 * Threads: safe from any number of threads on one client.
 * Errors: those of `payidem_client_execute`, and `PAYIDEM_CANCELLED`
 * (order id and key in the error); a deadline that runs out ends as the
 * call would when its retries run out (e.g. `PAYIDEM_OUTCOME_UNKNOWN`).
 */
payidem_result payidem_client_execute_with_deadline(const struct payidem_client *client,
                                                    const char *order_id,
                                                    const char *method,
                                                    const char *path,
                                                    const uint8_t *body,
                                                    size_t body_len,
                                                    const char *idempotency_key,
                                                    const char *status_path,
                                                    uint64_t deadline_ms,
                                                    payidem_cancel_callback cancel,
                                                    void *cancel_userdata,
                                                    struct payidem_outcome **outcome_out,
                                                    struct payidem_error **err_out);

/**
 * Drives an unsettled operation of the journal again with its own key and
 * body (after a crash, or after `PAYIDEM_OUTCOME_UNKNOWN`); a settled one
 * answers its stored outcome.
 *
 * Ownership: on success `*outcome_out` receives a new outcome the caller
 * frees with `payidem_outcome_free`.
 * NULL: `client`, `order_id` and `outcome_out` must not be NULL; `err_out`
 * may be NULL.
 * Threads: safe from any number of threads on one client.
 * Errors: those of `payidem_client_execute`; `PAYIDEM_INVALID_ARGUMENT`
 * naming `order_id` also when the journal does not hold it.
 */
payidem_result payidem_client_resume(const struct payidem_client *client,
                                     const char *order_id,
                                     struct payidem_outcome **outcome_out,
                                     struct payidem_error **err_out);

/**
 * `payidem_client_resume` with a per-call deadline (0 for none) and a
 * cancellation hook, as in `payidem_client_execute_with_deadline`.
 *
 * Ownership: as `payidem_client_resume`; `cancel_userdata` stays the
 * caller's.
 * NULL: as `payidem_client_resume`; `cancel` and `cancel_userdata` may be
 * NULL.
 * Threads: safe from any number of threads on one client.
 * Errors: those of `payidem_client_resume`, and `PAYIDEM_CANCELLED`.
 */
payidem_result payidem_client_resume_with_deadline(const struct payidem_client *client,
                                                   const char *order_id,
                                                   uint64_t deadline_ms,
                                                   payidem_cancel_callback cancel,
                                                   void *cancel_userdata,
                                                   struct payidem_outcome **outcome_out,
                                                   struct payidem_error **err_out);

/**
 * The journal's record of an operation: `*found_out` tells whether it
 * exists; when it does, `*state_out` and `*attempts_out` receive its state
 * and attempts so far, otherwise `PAYIDEM_STATE_NOT_FOUND` and 0.
 *
 * Ownership: the outputs are caller memory, written only on success.
 * NULL: `client`, `order_id`, `found_out`, `state_out` and `attempts_out`
 * must not be NULL; `err_out` may be NULL.
 * Threads: safe from any number of threads on one client.
 * Errors: `PAYIDEM_JOURNAL_ERROR`; `PAYIDEM_INVALID_ARGUMENT` naming
 * `client`, `order_id`, `found_out`, `state_out` or `attempts_out`.
 */
payidem_result payidem_client_status(const struct payidem_client *client,
                                     const char *order_id,
                                     bool *found_out,
                                     payidem_operation_state *state_out,
                                     uint32_t *attempts_out,
                                     struct payidem_error **err_out);

/**
 * The order ids of operations whose outcome is unknown (in flight when a
 * process died, or ended as `PAYIDEM_OUTCOME_UNKNOWN`), oldest first:
 * resume each with `payidem_client_resume`.
 *
 * Ownership: on success `*list_out` receives a new list the caller frees
 * with `payidem_order_list_free`.
 * NULL: `client` and `list_out` must not be NULL; `err_out` may be NULL.
 * Threads: safe from any number of threads on one client.
 * Errors: `PAYIDEM_JOURNAL_ERROR`; `PAYIDEM_INVALID_ARGUMENT` naming
 * `client` or `list_out`.
 */
payidem_result payidem_client_list_unknown(const struct payidem_client *client,
                                           struct payidem_order_list **list_out,
                                           struct payidem_error **err_out);

/**
 * Frees a client, closing its journal and wiping its secret. Its event
 * callback and JSON event callback are removed first: once this returns,
 * neither is running (unless this is called from inside a payidem
 * callback, when it does not wait) nor ever called again, also by a
 * `payidem_call` of this client that is still unfinished, so their
 * userdata may be freed.
 *
 * Ownership: takes `client`.
 * NULL: `client` may be NULL (nothing happens).
 * Anything else must be a live handle of this type from this library:
 * freeing it twice, using it after this call, or passing a handle of
 * another type is undefined behaviour, and is not detected.
 * Threads: no call on `client` may be running or start (a `payidem_call`
 * it began may go on, on any thread).
 * Errors: none.
 */
void payidem_client_free(struct payidem_client *client);

/**
 * Deletes the settled operations (succeeded, rejected, conflict) whose
 * last change is older than the client's settled retention
 * (`settled_retention_s`); never an unsettled one. `*purged_out` receives
 * how many went. `payidem_client_new` purges once when it opens the
 * journal; a long-running process calls this now and then.
 *
 * Ownership: `*purged_out` is caller memory, written only on success.
 * NULL: `client` and `purged_out` must not be NULL; `err_out` may be NULL.
 * Threads: safe from any number of threads on one client.
 * Errors: `PAYIDEM_JOURNAL_ERROR`; `PAYIDEM_INVALID_ARGUMENT` naming
 * `client` or `purged_out`.
 */
payidem_result payidem_client_purge_settled(const struct payidem_client *client,
                                            size_t *purged_out,
                                            struct payidem_error **err_out);

/**
 * One signed GET of `path` (joined to the base URL like every request
 * target, e.g. `"/v1/payments/pay_123"`), for reading a resource: no
 * journal, no retry, no status query, bounded by the request timeout.
 * Whatever the platform answers (any status, 4xx and 5xx included) is the
 * outcome: read it with `payidem_outcome_http_status`,
 * `payidem_outcome_body` and `payidem_outcome_header_at`. Its order id and
 * idempotency key are empty strings, its attempts 1, and it is never
 * replayed.
 *
 * Ownership: on success `*outcome_out` receives a new outcome the caller
 * frees with `payidem_outcome_free`.
 * NULL: `client`, `path` and `outcome_out` must not be NULL; `err_out` may
 * be NULL.
 * Threads: safe from any number of threads on one client.
 * Errors: `PAYIDEM_TRANSPORT_ERROR` when no answer came (connection,
 * TLS, timeout); `PAYIDEM_INVALID_ARGUMENT` naming `client`, `path` or
 * `outcome_out`.
 */
payidem_result payidem_client_get(const struct payidem_client *client,
                                  const char *path,
                                  struct payidem_outcome **outcome_out,
                                  struct payidem_error **err_out);

/**
 * The client's defaults as JSON, from the same source `payidem_client_new`
 * uses, so that a binding never copies a default:
 *
 * `{"options": {...}, "memory_journal": ":memory:"}`
 *
 * - `options`: every optional key of `payidem_client_new`'s options object
 *   (nested `retry` and `retry_budget` included) at its default value;
 *   string options that are unset by default (`journal_path`, meaning the
 *   durable default journal, `proxy`, `ca_bundle`, `client_cert`,
 *   `client_key`) are `""`. With `base_url` and `key_id` added it is a
 *   valid options object that sets every default explicitly.
 * - `memory_journal`: the `journal_path` value that keeps operations in
 *   memory only (tests only, never production).
 *
 * Ownership: the string is static; never free it.
 * NULL: never takes a pointer.
 * Threads: safe from any thread.
 * Errors: none.
 */
const char *payidem_client_defaults_json(void);

/**
 * The largest response body a client reads from one answer, in bytes; a
 * longer body counts as a lost answer. Callers that send attempts with
 * their own HTTP client (`payidem_call_step`) apply the same bound.
 *
 * Ownership: nothing to free.
 * NULL: never takes a pointer.
 * Threads: safe from any thread.
 * Errors: none.
 */
uint64_t payidem_max_response_bytes(void);

/**
 * Starts a call of one business operation, as `payidem_client_execute`
 * does (same arguments, checks and journal; an order id already in the
 * journal with the same request continues that operation, a settled one
 * gives an END step at once) but without sending anything: the caller
 * drives it with `payidem_call_step` and `payidem_call_report`.
 * `deadline_ms` (0 for none) shortens the client's retry deadline for this
 * call.
 *
 * Ownership: on success `*call_out` receives a new call the caller frees
 * with `payidem_call_free`; the inputs are only read (the body is copied
 * into the journal).
 * NULL: `client`, `order_id`, `method`, `path` and `call_out` must not be
 * NULL; `body` may be NULL when `body_len` is 0; `idempotency_key`,
 * `status_path` and `err_out` may be NULL.
 * Threads: safe from any number of threads on one client.
 * Errors: `PAYIDEM_IDEMPOTENCY_CONFLICT` (the order id is journaled with
 * another request), `PAYIDEM_OPERATION_BUSY` (another call drives it),
 * `PAYIDEM_JOURNAL_ERROR`, `PAYIDEM_INVALID_ARGUMENT` naming `client`,
 * `order_id`, `method`, `path`, `body`, `idempotency_key`, `status_path`
 * or `call_out`. The platform's answers come with the END step.
 */
payidem_result payidem_client_begin(const struct payidem_client *client,
                                    const char *order_id,
                                    const char *method,
                                    const char *path,
                                    const uint8_t *body,
                                    size_t body_len,
                                    const char *idempotency_key,
                                    const char *status_path,
                                    uint64_t deadline_ms,
                                    struct payidem_call **call_out,
                                    struct payidem_error **err_out);

/**
 * Starts a call resuming an unsettled operation of the journal with its
 * own key and body (after a crash, or after `PAYIDEM_OUTCOME_UNKNOWN`;
 * see `payidem_client_list_unknown`), as `payidem_client_resume` does,
 * for a caller that sends with its own HTTP client. A settled operation
 * gives an END step at once with its stored outcome.
 *
 * Ownership: on success `*call_out` receives a new call the caller frees
 * with `payidem_call_free`.
 * NULL: `client`, `order_id` and `call_out` must not be NULL; `err_out`
 * may be NULL.
 * Threads: safe from any number of threads on one client.
 * Errors: `PAYIDEM_OPERATION_BUSY`, `PAYIDEM_JOURNAL_ERROR`,
 * `PAYIDEM_INVALID_ARGUMENT` naming `client`, `order_id` (also when the
 * journal does not hold it) or `call_out`.
 */
payidem_result payidem_client_begin_resume(const struct payidem_client *client,
                                           const char *order_id,
                                           uint64_t deadline_ms,
                                           struct payidem_call **call_out,
                                           struct payidem_error **err_out);

/**
 * The call's next step: SEND (already recorded in the journal: send it to
 * `payidem_client_url` of `payidem_step_path`, within
 * `payidem_step_timeout_ms`, then `payidem_call_report`), WAIT (sleep,
 * then ask again) or END (the journal holds the end; read it with
 * `payidem_step_end_result`). Never PERSIST: the call records in the
 * client's journal itself. Asking again after a SEND without reporting
 * ends the call: that attempt's outcome is unknown. After END every step
 * is the same END.
 *
 * Ownership: on success `*step_out` receives a new step the caller frees
 * with `payidem_step_free`.
 * NULL: `call` and `step_out` must not be NULL; `err_out` may be NULL.
 * Threads: one thread at a time on `call`.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `call` or `step_out`. How
 * the operation ended (journal errors included) is the END step's result,
 * not this function's.
 */
payidem_result payidem_call_step(struct payidem_call *call,
                                 struct payidem_step **step_out,
                                 struct payidem_error **err_out);

/**
 * `payidem_call_step` at the caller's clocks, for a caller that keeps
 * them itself (a simulation, the shared operation vectors): `now_unix` is
 * the wall clock (Unix seconds) the attempts are signed with and the
 * journal written at, `elapsed_ms` the time since the call began, against
 * its deadline and waits. Once told, the call keeps to the caller's
 * clocks (a cancel or free writes at the time last told).
 *
 * Ownership: as `payidem_call_step`.
 * NULL: as `payidem_call_step`.
 * Threads: as `payidem_call_step`.
 * Errors: as `payidem_call_step`.
 */
payidem_result payidem_call_step_at(struct payidem_call *call,
                                    uint64_t now_unix,
                                    uint64_t elapsed_ms,
                                    struct payidem_step **step_out,
                                    struct payidem_error **err_out);

/**
 * Reports what the attempt of the last SEND step produced, as for
 * `payidem_operation_handle`: `outcome` is a `payidem_attempt_outcome`;
 * for `PAYIDEM_ATTEMPT_RESPONSE` the `status`, response `headers` and
 * `body`; for `PAYIDEM_ATTEMPT_NOT_SENT` (nothing was written: DNS,
 * connect, TLS handshake) and `PAYIDEM_ATTEMPT_SENT_NO_RESPONSE` (the
 * request was or may have been written, and no answer came: timeout,
 * reset) an optional `reason`. The client's event callback receives the
 * attempt's event before this returns. A report without an attempt in
 * flight is ignored.
 *
 * Ownership: every input is only read (copied).
 * NULL: `call` must not be NULL; `headers` may be NULL when
 * `header_count` is 0 (no header's `name` or `value` may be NULL); `body`
 * may be NULL when `body_len` is 0; `reason` and `err_out` may be NULL.
 * Threads: one thread at a time on `call`.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `call`, `outcome` (not a
 * `payidem_attempt_outcome`), `status` (a response's status outside
 * 100..=999), `headers[i].name`, `headers[i].value`, `body` or `reason`;
 * nothing is reported then (report again).
 */
payidem_result payidem_call_report(struct payidem_call *call,
                                   uint32_t outcome,
                                   uint16_t status,
                                   const struct payidem_header *headers,
                                   size_t header_count,
                                   const uint8_t *body,
                                   size_t body_len,
                                   const char *reason,
                                   struct payidem_error **err_out);

/**
 * `payidem_call_report` at the caller's clocks (see
 * `payidem_call_step_at`): `now_unix` Unix seconds, `elapsed_ms` since the
 * call began.
 *
 * Ownership: as `payidem_call_report`.
 * NULL: as `payidem_call_report`.
 * Threads: as `payidem_call_report`.
 * Errors: as `payidem_call_report`.
 */
payidem_result payidem_call_report_at(struct payidem_call *call,
                                      uint32_t outcome,
                                      uint16_t status,
                                      const struct payidem_header *headers,
                                      size_t header_count,
                                      const uint8_t *body,
                                      size_t body_len,
                                      const char *reason,
                                      uint64_t now_unix,
                                      uint64_t elapsed_ms,
                                      struct payidem_error **err_out);

/**
 * Ends the call at the caller's request (a cancel, a deadline, a signal)
 * and gives its END step: the journal is left right (unknown if an attempt
 * may have landed, pending otherwise; the key is kept) and the lease is
 * released. Its result is `PAYIDEM_CANCELLED` (order id and key in the
 * error), unless the machine had already ended: then it is that end's
 * result (a payment that was made is never hidden behind a cancel).
 *
 * Ownership: on success `*end_out` receives a new step the caller frees
 * with `payidem_step_free`.
 * NULL: `call` and `end_out` must not be NULL; `err_out` may be NULL.
 * Threads: one thread at a time on `call`.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `call` or `end_out`.
 */
payidem_result payidem_call_cancel(struct payidem_call *call,
                                   struct payidem_step **end_out,
                                   struct payidem_error **err_out);

/**
 * Frees a call. A call freed before its END is abandoned first, as
 * `payidem_call_cancel` does: the journal is left right (unknown if an
 * attempt may have landed, so `payidem_client_list_unknown` lists it) and
 * the lease is released.
 *
 * Ownership: takes `call`; steps it made stay valid.
 * NULL: `call` may be NULL (nothing happens).
 * Anything else must be a live handle of this type from this library:
 * freeing it twice, using it after this call, or passing a handle of
 * another type is undefined behaviour, and is not detected. The client
 * that made it may be freed before or after.
 * Threads: no call on `call` may be running or start.
 * Errors: none.
 */
void payidem_call_free(struct payidem_call *call);

/**
 * Writes the full URL an attempt's request target is sent to (the base
 * URL's origin followed by `path`, as `payidem_step_path` gives it, which
 * already holds the base URL's path prefix) and a NUL into `buf`;
 * `*len_out` (when given) receives its length without the NUL, also on
 * `PAYIDEM_BUFFER_TOO_SMALL`.
 *
 * Ownership: `buf` is caller memory, written only on success.
 * NULL: `client` and `path` must not be NULL; `buf` may be NULL only with
 * `buf_len` 0; `len_out` and `err_out` may be NULL.
 * Threads: safe from any number of threads on one client.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `client`, `path` or `buf`;
 * `PAYIDEM_BUFFER_TOO_SMALL` naming `buf`.
 */
payidem_result payidem_client_url(const struct payidem_client *client,
                                  const char *path,
                                  char *buf,
                                  size_t buf_len,
                                  size_t *len_out,
                                  struct payidem_error **err_out);

/**
 * Writes the request target of the absolute `url` relative to the
 * client's base URL (its path below the base URL's path prefix, with its
 * query), the path to begin an operation with, and a NUL into `buf`;
 * `*len_out` (when given) receives its length without the NUL, also on
 * `PAYIDEM_BUFFER_TOO_SMALL`. The core decides whether `url` is under the
 * base URL: scheme and host compare without case, a default port equals no
 * port (`https://h:443/x` is `https://h/x`), paths compare as their
 * percent-encoded text, and a URL with credentials is refused. A signed
 * request is never sent elsewhere.
 *
 * Ownership: `buf` is caller memory, written only on success.
 * NULL: `client` and `url` must not be NULL; `buf` may be NULL only with
 * `buf_len` 0; `len_out` and `err_out` may be NULL.
 * Threads: safe from any number of threads on one client.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `client`, `url` (no absolute
 * URL under the base URL) or `buf`; `PAYIDEM_BUFFER_TOO_SMALL` naming
 * `buf`.
 */
payidem_result payidem_client_target_of(const struct payidem_client *client,
                                        const char *url,
                                        char *buf,
                                        size_t buf_len,
                                        size_t *len_out,
                                        struct payidem_error **err_out);

/**
 * The log level of an attempt's event (the policy of
 * `payidem_log_level`): `PAYIDEM_LOG_DEBUG` for a first attempt that
 * settled with a 2xx, `PAYIDEM_LOG_WARN` when the client gives up,
 * `PAYIDEM_LOG_INFO` otherwise.
 *
 * Ownership: `event` is only read.
 * NULL: `event` NULL answers `PAYIDEM_LOG_WARN`.
 * Threads: safe from any thread (typically inside the event callback).
 * Errors: none.
 */
payidem_log_level payidem_attempt_event_level(const struct payidem_attempt_event *event);

/**
 * The name of a `payidem_log_level`: `"debug"`, `"info"`, `"warn"` (the
 * core's names); `"unknown"` for any other number.
 *
 * Ownership: the string is static; never free it.
 * NULL: never takes a pointer.
 * Threads: safe from any thread.
 * Errors: none.
 */
const char *payidem_log_level_name(uint32_t level);

/**
 * Sets (or, with `callback` NULL, removes) the function that receives
 * every event of the client as JSON: each attempt (the same attempts
 * `payidem_client_set_event_callback` receives), each call's end (order
 * id, key, end name, final, landed, attempts, duration; never a body or a
 * secret) and each failed journal write. It runs on whichever thread
 * caused the event, so it and `userdata` must be safe to use from every
 * thread calling the client. Once this function returns, no call of the
 * previous callback is running or will start, except when this function
 * is called from inside a payidem callback (it then returns without
 * waiting). No lock is held while the callback runs: it may call any
 * function on the same client, this one included. After
 * `payidem_client_free` it is never called again, not even by a
 * `payidem_call` that outlives the client.
 *
 * Ownership: `userdata` stays the caller's; it must stay valid until the
 * callback is replaced or removed, or the client freed (each of which
 * waits for running calls of it).
 * NULL: `client` must not be NULL (nothing happens); `callback` and
 * `userdata` may be NULL.
 * Threads: safe at any time; it waits for running calls of the previous
 * callback to return (unless called from inside a callback).
 * Errors: none.
 */
void payidem_client_set_event_json_callback(const struct payidem_client *client,
                                            payidem_event_json_callback callback,
                                            void *userdata);

/**
 * Writes, as JSON and a NUL into `buf`, the SQL statement and parameters
 * that record one operation as pending in a PostgreSQL journal's tables,
 * for the caller to run in its own database transaction together with its
 * business rows (the outbox): both are committed, or neither. Any client
 * on that journal later sends it with `payidem_client_take_over`, with its
 * key and body unchanged. The operation is checked and frozen as
 * `payidem_client_begin` would (same arguments; the base URL's path
 * prefix joins the paths, the key is defaulted); nothing is journaled or
 * sent. The client's own journal must be PostgreSQL: the row carries its
 * integrity MACs, bound to that journal and this client's journal key,
 * platform and key id, so the clients taking it over must share them. The
 * statement fails with a unique violation when the order id or the key is
 * already there.
 *
 * The JSON is `{"sql": "INSERT …", "params": [...], "param_types":
 * [...]}`: seven parameters, in order order id, idempotency key, method,
 * path, body, body SHA-256 (hex), status path; each a string, except the
 * body, which is base64 (standard alphabet, padded; decode it and pass
 * bytes), and a missing status path, which is null (SQL NULL).
 * `param_types` gives each one's SQL type: `"text"` or `"bytea"`.
 * `param_style` is a `payidem_param_style`: the placeholders of `sql`
 * (`$1` … or `%s`). `*len_out` (when given) receives the JSON's length
 * without the NUL, also on `PAYIDEM_BUFFER_TOO_SMALL`.
 *
 * Ownership: `buf` is caller memory, written only on success; the inputs
 * are only read.
 * NULL: `client`, `order_id`, `method` and `path` must not be NULL; `body`
 * may be NULL when `body_len` is 0; `idempotency_key`, `status_path`,
 * `len_out` and `err_out` may be NULL; `buf` may be NULL only with
 * `buf_len` 0.
 * Threads: safe from any number of threads on one client.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `client`, `order_id`,
 * `method`, `path`, `body`, `idempotency_key`, `status_path`,
 * `param_style`, `buf` or `journal` (the client's journal is not
 * PostgreSQL); `PAYIDEM_BUFFER_TOO_SMALL` naming `buf`.
 */
payidem_result payidem_client_outbox_insert(const struct payidem_client *client,
                                            const char *order_id,
                                            const char *method,
                                            const char *path,
                                            const uint8_t *body,
                                            size_t body_len,
                                            const char *idempotency_key,
                                            const char *status_path,
                                            uint32_t param_style,
                                            char *buf,
                                            size_t buf_len,
                                            size_t *len_out,
                                            struct payidem_error **err_out);

/**
 * Takes over and drives up to `limit` unsettled operations of the journal
 * that no live call holds (leases free or expired, outbox inserts), one
 * after the other, oldest first, each with its own key and body, and
 * returns when they ended or nothing is left to take. Several clients (a
 * fleet's instances, a sidecar, a cron job) may run it at once on one
 * journal: each operation is taken by one of them. `*taken_out` receives
 * the order ids it drove, in order (empty when there was nothing to
 * take); how each ended is in the journal: read it with
 * `payidem_client_status` (its state) or `payidem_client_resume` (a
 * settled operation gives its stored outcome at once, sending nothing).
 * An operation whose call failed (outcome unknown, a journal error) stays
 * unsettled for the next takeover or resume.
 *
 * Ownership: on success `*taken_out` receives a new list the caller frees
 * with `payidem_order_list_free`.
 * NULL: `client` and `taken_out` must not be NULL; `err_out` may be NULL.
 * Threads: safe from any number of threads on one client (and from any
 * number of clients on one journal).
 * Errors: `PAYIDEM_JOURNAL_ERROR` (the journal cannot be asked; the
 * operations driven before stay as they ended); `PAYIDEM_INVALID_ARGUMENT`
 * naming `client` or `taken_out`.
 */
payidem_result payidem_client_take_over(const struct payidem_client *client,
                                        uint32_t limit,
                                        struct payidem_order_list **taken_out,
                                        struct payidem_error **err_out);

/**
 * Checks `options_json` as `payidem_client_new` does, without opening a
 * journal or reading any file, and gives every setting's effective value
 * as a JSON object of the options object's shape (absent settings at
 * their defaults; `journal_key_hex` is `"<set>"` or `""`, never the key;
 * `lease_ttl_s` is null when the lease follows the deadline,
 * `lease_heartbeat_ms` null when it is a third of the ttl). Whether
 * the base URL, proxy or TLS files are usable is checked by
 * `payidem_client_new` only.
 *
 * Ownership: on success `*resolved_out` receives a new NUL-terminated
 * string the caller frees with `payidem_string_free`.
 * NULL: `options_json` and `resolved_out` must not be NULL; `err_out` may
 * be NULL.
 * Threads: safe from any thread.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `options_json` (not a JSON
 * object), the setting (e.g. `retry.base_ms`, `lease_ttl_s`, an unknown
 * `retry.bogus`) or `resolved_out`.
 */
payidem_result payidem_client_options_resolve(const char *options_json,
                                              char **resolved_out,
                                              struct payidem_error **err_out);

/**
 * Checks `start_json` as `payidem_operation_new` does and gives every
 * setting's effective value as a JSON object: `operation` (its
 * `order_id`), `progress`, `setup` (`retry_budget` null for none) and
 * `now`.
 *
 * Ownership: on success `*resolved_out` receives a new NUL-terminated
 * string the caller frees with `payidem_string_free`.
 * NULL: `start_json` and `resolved_out` must not be NULL; `err_out` may be
 * NULL.
 * Threads: safe from any thread.
 * Errors: as `payidem_operation_new`, or naming `resolved_out`.
 */
payidem_result payidem_operation_start_resolve(const char *start_json,
                                               char **resolved_out,
                                               struct payidem_error **err_out);

/**
 * Frees a string the library returned for the caller to free (e.g. by
 * `payidem_client_options_resolve`). NULL does nothing.
 *
 * Ownership: takes `text`; free each string once.
 * NULL: allowed.
 * Threads: safe from any thread.
 * Errors: none.
 */
void payidem_string_free(char *text);

/**
 * The platform's HTTP status (2xx); 0 for a NULL outcome.
 *
 * Ownership: borrows `outcome`.
 * NULL: `outcome` may be NULL, giving 0.
 * Threads: read-only; not while another thread frees `outcome`.
 * Errors: none.
 */
uint16_t payidem_outcome_http_status(const struct payidem_outcome *outcome);

/**
 * The response body: sets `*body_out` and `*len_out` (the bytes are not
 * NUL-terminated; an empty body gives a non-NULL pointer and 0) and returns
 * true; returns false and leaves them untouched for NULL arguments.
 *
 * Ownership: the bytes are borrowed from `outcome`, valid until
 * `payidem_outcome_free(outcome)`.
 * NULL: none of the arguments may be NULL (false).
 * Threads: read-only; not while another thread frees `outcome`.
 * Errors: none.
 */
bool payidem_outcome_body(const struct payidem_outcome *outcome,
                          const uint8_t **body_out,
                          size_t *len_out);

/**
 * Whether the platform replayed a stored answer (`Idempotent-Replayed:
 * true`): the operation had already happened, exactly once.
 *
 * Ownership: borrows `outcome`.
 * NULL: `outcome` may be NULL, giving false.
 * Threads: read-only; not while another thread frees `outcome`.
 * Errors: none.
 */
bool payidem_outcome_replayed(const struct payidem_outcome *outcome);

/**
 * The operation's idempotency key.
 *
 * Ownership: borrowed from `outcome`, valid until it is freed.
 * NULL: `outcome` may be NULL, giving NULL.
 * Threads: read-only; not while another thread frees `outcome`.
 * Errors: none.
 */
const char *payidem_outcome_idempotency_key(const struct payidem_outcome *outcome);

/**
 * The operation's order id.
 *
 * Ownership: borrowed from `outcome`, valid until it is freed.
 * NULL: `outcome` may be NULL, giving NULL.
 * Threads: read-only; not while another thread frees `outcome`.
 * Errors: none.
 */
const char *payidem_outcome_order_id(const struct payidem_outcome *outcome);

/**
 * Attempts made over every call of the operation (status queries
 * included); 0 for a NULL outcome.
 *
 * Ownership: borrows `outcome`.
 * NULL: `outcome` may be NULL, giving 0.
 * Threads: read-only; not while another thread frees `outcome`.
 * Errors: none.
 */
uint32_t payidem_outcome_attempts(const struct payidem_outcome *outcome);

/**
 * How many response headers the outcome kept; 0 for a NULL outcome.
 *
 * Ownership: borrows `outcome`.
 * NULL: `outcome` may be NULL, giving 0.
 * Threads: read-only; not while another thread frees `outcome`.
 * Errors: none.
 */
size_t payidem_outcome_header_count(const struct payidem_outcome *outcome);

/**
 * The response header at `index` (0-based, in the order received).
 *
 * Ownership: `*name_out` and `*value_out` are borrowed from `outcome`,
 * valid until `payidem_outcome_free(outcome)`.
 * NULL: `outcome`, `name_out` and `value_out` must not be NULL; `err_out`
 * may be NULL.
 * Threads: read-only; not while another thread frees `outcome`.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `outcome`, `index` (out of
 * range), `name_out` or `value_out`.
 */
payidem_result payidem_outcome_header_at(const struct payidem_outcome *outcome,
                                         size_t index,
                                         const char **name_out,
                                         const char **value_out,
                                         struct payidem_error **err_out);

/**
 * The journal's error when the platform answered 2xx but the journal
 * could not record the success (`PAYIDEM_JOURNAL_ERROR`; read it with the
 * `payidem_error_*` accessors); NULL when the journal recorded it. The
 * payment was made either way. The journal still holds the operation in
 * flight with its key: a later `payidem_client_execute` or
 * `payidem_client_resume` of the order gets the same answer replayed by
 * the platform and records it then.
 *
 * Ownership: borrowed from `outcome`, valid until
 * `payidem_outcome_free(outcome)`; never pass it to `payidem_error_free`.
 * NULL: `outcome` may be NULL, giving NULL.
 * Threads: read-only; not while another thread frees `outcome`.
 * Errors: none.
 */
const struct payidem_error *payidem_outcome_journal_error(const struct payidem_outcome *outcome);

/**
 * Frees an outcome.
 *
 * Ownership: takes `outcome`; every string and buffer borrowed from it dies.
 * NULL: `outcome` may be NULL (nothing happens).
 * Anything else must be a live handle of this type from this library:
 * freeing it twice, using it after this call, or passing a handle of
 * another type is undefined behaviour, and is not detected.
 * Threads: the caller must own `outcome`; free it once.
 * Errors: none.
 */
void payidem_outcome_free(struct payidem_outcome *outcome);

/**
 * How many order ids the list holds; 0 for a NULL list.
 *
 * Ownership: borrows `list`.
 * NULL: `list` may be NULL, giving 0.
 * Threads: read-only; not while another thread frees `list`.
 * Errors: none.
 */
size_t payidem_order_list_len(const struct payidem_order_list *list);

/**
 * The order id at `index` (0-based, oldest operation first); NULL when
 * `index` is out of range.
 *
 * Ownership: borrowed from `list`, valid until `payidem_order_list_free`.
 * NULL: `list` may be NULL, giving NULL.
 * Threads: read-only; not while another thread frees `list`.
 * Errors: none (NULL for an index out of range).
 */
const char *payidem_order_list_get(const struct payidem_order_list *list, size_t index);

/**
 * Frees a list of order ids.
 *
 * Ownership: takes `list`; every string borrowed from it dies.
 * NULL: `list` may be NULL (nothing happens).
 * Anything else must be a live handle of this type from this library:
 * freeing it twice, using it after this call, or passing a handle of
 * another type is undefined behaviour, and is not detected.
 * Threads: the caller must own `list`; free it once.
 * Errors: none.
 */
void payidem_order_list_free(struct payidem_order_list *list);

/**
 * Takes over, in a loop, the unsettled operations of the journal that no
 * live call holds (leases free or expired, outbox inserts), as
 * `payidem_client_take_over` does, in batches of up to `batch` (0 counts
 * as 1), until `stop` returns non-zero. When a batch found nothing (or
 * the journal could not be asked: the database may be restarting) it
 * sleeps `idle_ms`, but never longer than the client's lease heartbeat,
 * so that an operation whose holder died is picked up within one
 * heartbeat of its lease lapsing; an `idle_ms` of 0 sleeps a whole
 * heartbeat, so the loop never spins on the journal. `stop` is polled with `stop_userdata`
 * on the calling thread between operations and during the sleep (about
 * every 20 ms), never during an operation's call: the call in progress
 * ends as it would without a stop. `*driven_out` receives how many
 * operations it drove (each one's end is in the journal: read it with
 * `payidem_client_status`).
 *
 * `stop` has the rules of `payidem_cancel_callback`: it must return
 * normally; the library holds no lock while it runs, so it may call any
 * function of this client (e.g. `payidem_client_status`).
 *
 * Ownership: `stop_userdata` stays the caller's.
 * NULL: `client`, `stop` and `driven_out` must not be NULL (a loop
 * nothing can stop would never return); `stop_userdata` and `err_out` may
 * be NULL.
 * Threads: blocks the calling thread until `stop` returns non-zero; safe
 * from any number of threads on one client (and from any number of
 * clients on one journal): each operation is taken by one of them.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `client`, `stop` or
 * `driven_out`. A journal that cannot be asked is retried, not reported.
 */
payidem_result payidem_client_take_over_loop(const struct payidem_client *client,
                                             uint32_t batch,
                                             uint64_t idle_ms,
                                             payidem_cancel_callback stop,
                                             void *stop_userdata,
                                             uint64_t *driven_out,
                                             struct payidem_error **err_out);

/**
 * Writes, in lowercase hex and a NUL into `buf`, the journal key a client
 * derives from the API secret `secret` when it is given no journal key of
 * its own (64 hex digits). After the API secret is rotated, a journal
 * sealed under the old one opens only with this key of the old secret,
 * set as the client option `journal_key_hex`. A secret itself: never log
 * it. `*len_out` (when given) receives the text's length without the NUL,
 * also on `PAYIDEM_BUFFER_TOO_SMALL`.
 *
 * Ownership: `buf` is caller memory, written only on success; `secret` is
 * only read.
 * NULL: `secret` must not be NULL; `len_out` and `err_out` may be NULL;
 * `buf` may be NULL only with `buf_len` 0.
 * Threads: safe from any thread.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `secret` (NULL, or not
 * 16..=1024 bytes) or `buf`; `PAYIDEM_BUFFER_TOO_SMALL` naming `buf`.
 */
payidem_result payidem_journal_key_derive(const uint8_t *secret,
                                          size_t secret_len,
                                          char *buf,
                                          size_t buf_len,
                                          size_t *len_out,
                                          struct payidem_error **err_out);

/**
 * Writes the client's metrics (shared by every call of the client) into
 * `buf` as `format` (a `payidem_metrics_format`), NUL-terminated:
 * attempts by kind, HTTP status and next action, calls ended by end, time
 * to settle, journal write latency and failures, and the journal's count
 * of operations whose outcome is unknown (read from the journal now; left
 * out when it cannot answer). Every metric is listed in docs/metrics.md.
 * `*len_out` (when given) receives the text's length without the NUL,
 * also on `PAYIDEM_BUFFER_TOO_SMALL`: call once with `buf_len` 0 to learn
 * the size (it may grow between two calls: leave room).
 *
 * Ownership: `buf` is caller memory, written only on success.
 * NULL: `client` must not be NULL; `len_out` and `err_out` may be NULL;
 * `buf` may be NULL only with `buf_len` 0.
 * Threads: safe from any number of threads on one client.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `client`, `format` or `buf`;
 * `PAYIDEM_BUFFER_TOO_SMALL` naming `buf`.
 */
payidem_result payidem_client_metrics(const struct payidem_client *client,
                                      uint32_t format,
                                      char *buf,
                                      size_t buf_len,
                                      size_t *len_out,
                                      struct payidem_error **err_out);

/**
 * Writes the verifier's metrics into `buf` as `format` (a
 * `payidem_metrics_format`), NUL-terminated: verdicts by code (`accepted`
 * or the refusal's error code name) and, with the in-memory replay cache,
 * its fill (nonces held, capacity). `*len_out` as for
 * `payidem_client_metrics`.
 *
 * Ownership: `buf` is caller memory, written only on success.
 * NULL: `verifier` must not be NULL; `len_out` and `err_out` may be NULL;
 * `buf` may be NULL only with `buf_len` 0.
 * Threads: safe from any number of threads, during verifications.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `verifier`, `format` or `buf`;
 * `PAYIDEM_BUFFER_TOO_SMALL` naming `buf`.
 */
payidem_result payidem_verifier_metrics(const struct payidem_verifier *verifier,
                                        uint32_t format,
                                        char *buf,
                                        size_t buf_len,
                                        size_t *len_out,
                                        struct payidem_error **err_out);

/**
 * Starts the machine for one operation from `start_json`, a JSON object:
 *
 * - `operation` (required): `order_id`, `method`, `path` (strings,
 *   required), `body` (UTF-8 text) or `body_base64` (bytes), both
 *   optional (empty body), `idempotency_key` (default
 *   `create-{order_id}`) and `status_path` (strings or null). Checked as
 *   `payidem_client_execute` checks them.
 * - `progress`: what your journal knows: `state` (`"pending"`,
 *   `"in_flight"`, `"unknown"`, `"succeeded"`, `"rejected"`, `"conflict"`;
 *   default pending), `attempts` (default 0), `created_at` (Unix seconds
 *   the operation was first prepared; the key's age counts from it;
 *   default `now`), `first_recorded` (bool, default false: your journal
 *   recorded the first attempt, in flight with 1 attempt, as it opened
 *   the operation, and it was not sent; the first `PERSIST` step is then
 *   skipped, and a call that ends before sending it asks for a `PERSIST`
 *   of 0 attempts before its end).
 * - `setup`: `max_attempts`, `backoff_base_ms`, `backoff_cap_ms`,
 *   `deadline_ms`, `key_retention_secs` (at most 172800),
 *   `max_clock_offset_secs`, `clock_offset` (seconds, may be negative),
 *   `clock_trusted` (bool), `retry_budget` (null, or an object with
 *   `capacity`, `retry_cost`, `timeout_cost`, `success_refund`). A
 *   missing key takes the client's default (see
 *   `payidem_client_defaults_json`); the clock offset defaults to 0,
 *   trusted; no retry budget by default.
 * - `now` (required): local wall time, Unix seconds.
 *
 * Every value follows the core's rule for it (core/src/settings/start.rs):
 * null is absent, numbers are JSON integers in range; unknown keys are
 * errors. `payidem_operation_start_resolve` shows the values a machine
 * would start with.
 *
 * Ownership: on success `*op_out` receives a new operation the caller
 * frees with `payidem_operation_free`.
 * NULL: `start_json` and `op_out` must not be NULL; `err_out` may be NULL.
 * Threads: safe from any thread.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `start_json` (not JSON), the
 * field (e.g. `operation.order_id`, `progress.state`,
 * `setup.max_attempts`, `setup.retry_budget.capacity`) or `op_out`.
 */
payidem_result payidem_operation_new(const char *start_json,
                                     struct payidem_operation **op_out,
                                     struct payidem_error **err_out);

/**
 * The next step at local wall time `now_unix` (Unix seconds) and
 * `elapsed_ms` since the call started (monotonic): PERSIST (record it,
 * then `payidem_operation_persisted`), SEND (signed with `signer` and a
 * fresh nonce: send it, then `payidem_operation_handle`), WAIT (sleep,
 * then poll again) or END. Polling again after a SEND without reporting
 * ends the call: that attempt's outcome is unknown.
 *
 * Ownership: on success `*step_out` receives a new step the caller frees
 * with `payidem_step_free`; `signer` is only read.
 * NULL: `op`, `signer` and `step_out` must not be NULL; `err_out` may be
 * NULL.
 * Threads: one thread at a time on `op`; `signer` may be shared.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `op`, `signer` or
 * `step_out`.
 */
payidem_result payidem_operation_poll(struct payidem_operation *op,
                                      const struct payidem_signer *signer,
                                      uint64_t now_unix,
                                      uint64_t elapsed_ms,
                                      struct payidem_step **step_out,
                                      struct payidem_error **err_out);

/**
 * Confirms that the record the last PERSIST step asked for is in your
 * journal (durable, when `payidem_step_persist_first` said so); the next
 * poll sends. Without a pending PERSIST it does nothing.
 *
 * Ownership: borrows `op`.
 * NULL: `op` must not be NULL; `err_out` may be NULL.
 * Threads: one thread at a time on `op`.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `op`.
 */
payidem_result payidem_operation_persisted(struct payidem_operation *op,
                                           struct payidem_error **err_out);

/**
 * Reports what the attempt of the last SEND step produced, at
 * `now_unix`/`elapsed_ms` (as for `payidem_operation_poll`). `outcome` is
 * a `payidem_attempt_outcome`: for `PAYIDEM_ATTEMPT_RESPONSE` give the
 * `status`, the response `headers` (`Idempotent-Replayed: true` marks a
 * replayed answer) and `body`; for `PAYIDEM_ATTEMPT_NOT_SENT` (nothing
 * reached the platform) and `PAYIDEM_ATTEMPT_SENT_NO_RESPONSE` (sent, or
 * maybe sent, and no answer) they are ignored and `reason` (NULL for a
 * generic one) says what went wrong. `*reaction_out` (when given)
 * receives what the machine decided. A report without an attempt in
 * flight changes nothing and gives `PAYIDEM_NEXT_GIVE_UP`.
 *
 * Ownership: `*reaction_out` is caller memory, written only on success;
 * every input is only read (copied).
 * NULL: `op` must not be NULL; `headers` may be NULL when `header_count`
 * is 0 (no header's `name` or `value` may be NULL); `body` may be NULL
 * when `body_len` is 0; `reason`, `reaction_out` and `err_out` may be
 * NULL.
 * Threads: one thread at a time on `op`.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `op`, `outcome` (not a
 * `payidem_attempt_outcome`), `status` (a response's status outside
 * 100..=999), `headers[i].name`, `headers[i].value`, `body` or `reason`;
 * nothing is reported then.
 */
payidem_result payidem_operation_handle(struct payidem_operation *op,
                                        uint32_t outcome,
                                        uint16_t status,
                                        const struct payidem_header *headers,
                                        size_t header_count,
                                        const uint8_t *body,
                                        size_t body_len,
                                        const char *reason,
                                        uint64_t now_unix,
                                        uint64_t elapsed_ms,
                                        struct payidem_reaction *reaction_out,
                                        struct payidem_error **err_out);

/**
 * Ends the call now, as a caller's cancel does, with what is known
 * (unknown if an attempt may have landed, else not sent or refused; the
 * key is kept either way); an ended call keeps its end. `*end_out`
 * receives the END step (its result is the end's own, never
 * `PAYIDEM_CANCELLED`: record its state in your journal).
 *
 * Ownership: on success `*end_out` receives a new step the caller frees
 * with `payidem_step_free`.
 * NULL: `op`, `reason` and `end_out` must not be NULL; `err_out` may be
 * NULL.
 * Threads: one thread at a time on `op`.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `op`, `reason` or `end_out`.
 */
payidem_result payidem_operation_abandon(struct payidem_operation *op,
                                         const char *reason,
                                         struct payidem_step **end_out,
                                         struct payidem_error **err_out);

/**
 * Attempts over every call of the operation so far (the `attempts` it
 * started from plus those this call signed); 0 for a NULL operation.
 *
 * Ownership: borrows `op`.
 * NULL: `op` may be NULL, giving 0.
 * Threads: one thread at a time on `op`.
 * Errors: none.
 */
uint32_t payidem_operation_attempts(const struct payidem_operation *op);

/**
 * Whether an attempt of the operation may have taken effect, over every
 * call so far: a `payidem_landed` value; 0 for a NULL operation.
 *
 * Ownership: borrows `op`.
 * NULL: `op` may be NULL, giving 0.
 * Threads: one thread at a time on `op`.
 * Errors: none.
 */
uint32_t payidem_operation_landed(const struct payidem_operation *op);

/**
 * Frees an operation.
 *
 * Ownership: takes `op`; steps it made stay valid.
 * NULL: `op` may be NULL (nothing happens).
 * Anything else must be a live handle of this type from this library:
 * freeing it twice, using it after this call, or passing a handle of
 * another type is undefined behaviour, and is not detected.
 * Threads: no call on `op` may be running or start.
 * Errors: none.
 */
void payidem_operation_free(struct payidem_operation *op);

/**
 * The protocol's decision (section 4) after one attempt of the
 * operation's own request. `outcome` is a `payidem_attempt_outcome` value;
 * for `PAYIDEM_ATTEMPT_RESPONSE` give the `status`, the body's
 * `error.code` (`error_code`, NULL when none; see
 * `payidem_error_code_from_body`) and the response `headers`; otherwise
 * they are ignored. `has_status_path` tells whether the operation's status
 * can be queried; `now` is the platform's clock in Unix seconds (local
 * time plus any offset learnt from it), which resolves a `Retry-After`
 * date. `decision_out->landed` tells whether the operation may have taken
 * effect: never give up on a key that is not `PAYIDEM_LANDED_NO`.
 *
 * Ownership: `*decision_out` is caller memory, written only on success;
 * every input is only read.
 * NULL: `decision_out` must not be NULL; `error_code` may be NULL;
 * `headers` may be NULL when `header_count` is 0, and no header's `name`
 * or `value` may be NULL; `err_out` may be NULL.
 * Threads: safe from any thread.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `outcome` (not a
 * `payidem_attempt_outcome`), `status` (a response's status outside
 * 100..=999), `error_code`, `headers[i].name`, `headers[i].value` or
 * `decision_out`.
 */
payidem_result payidem_decide(uint32_t outcome,
                              uint16_t status,
                              const char *error_code,
                              const struct payidem_header *headers,
                              size_t header_count,
                              bool has_status_path,
                              uint64_t now,
                              struct payidem_decision *decision_out,
                              struct payidem_error **err_out);

/**
 * The protocol's decision after one status query (a signed GET of the
 * operation's status path): 2xx settles the operation with that answer
 * (`PAYIDEM_DECISION_DONE`), 404 means it did not land
 * (`PAYIDEM_DECISION_SEND_OPERATION`), clock and replay answers as for
 * the operation, anything else is asked again after a backoff or
 * `Retry-After`. `decision_out->landed` is `PAYIDEM_LANDED_YES` for a 2xx,
 * `PAYIDEM_LANDED_NO` for a 404, `PAYIDEM_LANDED_MAYBE` otherwise.
 *
 * Ownership: `*decision_out` is caller memory, written only on success;
 * every input is only read.
 * NULL: as for `payidem_decide`.
 * Threads: safe from any thread.
 * Errors: as for `payidem_decide`.
 */
payidem_result payidem_decide_status_query(uint32_t outcome,
                                           uint16_t status,
                                           const char *error_code,
                                           const struct payidem_header *headers,
                                           size_t header_count,
                                           uint64_t now,
                                           struct payidem_decision *decision_out,
                                           struct payidem_error **err_out);

/**
 * Writes the `error.code` of a protocol error body
 * (`{"error": {"code": "...", ...}}`) and a NUL into `buf`; `*len_out`
 * (when given) receives its length without the NUL, also on
 * `PAYIDEM_BUFFER_TOO_SMALL`. A body that is no such JSON gives `""`
 * (length 0), which is not an error.
 *
 * Ownership: `buf` is caller memory, written only on success.
 * NULL: `body` may be NULL when `body_len` is 0; `buf` may be NULL only
 * with `buf_len` 0; `len_out` and `err_out` may be NULL.
 * Threads: safe from any thread.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `body` or `buf`;
 * `PAYIDEM_BUFFER_TOO_SMALL` naming `buf`.
 */
payidem_result payidem_error_code_from_body(const uint8_t *body,
                                            size_t body_len,
                                            char *buf,
                                            size_t buf_len,
                                            size_t *len_out,
                                            struct payidem_error **err_out);

/**
 * What `step` asks for: a `payidem_step_type` value; 0 for a NULL step.
 *
 * Ownership: borrows `step`.
 * NULL: `step` may be NULL, giving 0.
 * Threads: read-only; not while another thread frees `step`.
 * Errors: none.
 */
uint32_t payidem_step_kind(const struct payidem_step *step);

/**
 * For a PERSIST step: the number the coming attempt will carry (attempts
 * so far plus one), which the journal records while marking the operation
 * in flight; 0 for any other step.
 *
 * Ownership: borrows `step`.
 * NULL: `step` may be NULL, giving 0.
 * Threads: read-only; not while another thread frees `step`.
 * Errors: none.
 */
uint32_t payidem_step_persist_attempt(const struct payidem_step *step);

/**
 * For a PERSIST step: true when no attempt of the operation was ever sent,
 * so this record must be durable (fsync'd, committed) before anything
 * leaves; false otherwise and for any other step.
 *
 * Ownership: borrows `step`.
 * NULL: `step` may be NULL, giving false.
 * Threads: read-only; not while another thread frees `step`.
 * Errors: none.
 */
bool payidem_step_persist_first(const struct payidem_step *step);

/**
 * For a SEND step: the attempt's kind, a `payidem_attempt_kind` value; 0
 * for any other step.
 *
 * Ownership: borrows `step`.
 * NULL: `step` may be NULL, giving 0.
 * Threads: read-only; not while another thread frees `step`.
 * Errors: none.
 */
uint32_t payidem_step_attempt_kind(const struct payidem_step *step);

/**
 * For a SEND step: the attempt's number over every call of the operation
 * (1 = the first ever); 0 for any other step.
 *
 * Ownership: borrows `step`.
 * NULL: `step` may be NULL, giving 0.
 * Threads: read-only; not while another thread frees `step`.
 * Errors: none.
 */
uint32_t payidem_step_attempt_number(const struct payidem_step *step);

/**
 * For a SEND step: the HTTP method to send (`"POST"`, `"GET"` for a
 * status query); NULL for any other step.
 *
 * Ownership: borrowed from `step`, valid until `payidem_step_free(step)`.
 * NULL: `step` may be NULL, giving NULL.
 * Threads: read-only; not while another thread frees `step`.
 * Errors: none.
 */
const char *payidem_step_method(const struct payidem_step *step);

/**
 * For a SEND step: the request target to send, exactly as signed (for a
 * client's call it holds the base URL's path prefix; `payidem_client_url`
 * gives the full URL); NULL for any other step.
 *
 * Ownership: borrowed from `step`, valid until `payidem_step_free(step)`.
 * NULL: `step` may be NULL, giving NULL.
 * Threads: read-only; not while another thread frees `step`.
 * Errors: none.
 */
const char *payidem_step_path(const struct payidem_step *step);

/**
 * For a SEND step: how many headers to send (the signature headers,
 * `Idempotency-Key` on the operation's request, `Content-Type` for a
 * non-empty body); 0 for any other step.
 *
 * Ownership: borrows `step`.
 * NULL: `step` may be NULL, giving 0.
 * Threads: read-only; not while another thread frees `step`.
 * Errors: none.
 */
size_t payidem_step_header_count(const struct payidem_step *step);

/**
 * For a SEND step: the header at `index` (0-based); sets `*name_out` and
 * `*value_out` and returns true. Returns false and writes nothing for
 * another kind of step, an index out of range or a NULL argument.
 *
 * Ownership: the strings are borrowed from `step`, valid until
 * `payidem_step_free(step)`.
 * NULL: no argument may be NULL (false).
 * Threads: read-only; not while another thread frees `step`.
 * Errors: none (false).
 */
bool payidem_step_header_at(const struct payidem_step *step,
                            size_t index,
                            const char **name_out,
                            const char **value_out);

/**
 * For a SEND step: the body to send (not NUL-terminated; empty for a
 * status query, with a non-NULL pointer) and `*len_out` its length. NULL
 * (and `*len_out` 0) for any other step.
 *
 * Ownership: borrowed from `step`, valid until `payidem_step_free(step)`.
 * NULL: `step` may be NULL, giving NULL; `len_out` may be NULL (the length
 * is then not written).
 * Threads: read-only; not while another thread frees `step`.
 * Errors: none.
 */
const uint8_t *payidem_step_body(const struct payidem_step *step, size_t *len_out);

/**
 * For a SEND step of a client's call: the most the whole exchange may
 * take, in milliseconds (the client's request timeout shortened to the
 * call's remaining deadline; at least 1). 0 for a SEND step of the pure
 * machine (which knows no timeout) and for any other step.
 *
 * Ownership: borrows `step`.
 * NULL: `step` may be NULL, giving 0.
 * Threads: read-only; not while another thread frees `step`.
 * Errors: none.
 */
uint64_t payidem_step_timeout_ms(const struct payidem_step *step);

/**
 * For a WAIT step: how long to sleep before asking again, in
 * milliseconds, rounded up (never less than the machine's wait); 0 for any
 * other step.
 *
 * Ownership: borrows `step`.
 * NULL: `step` may be NULL, giving 0.
 * Threads: read-only; not while another thread frees `step`.
 * Errors: none.
 */
uint64_t payidem_step_wait_ms(const struct payidem_step *step);

/**
 * For an END step: how the call ended, as the core library names it:
 * `"succeeded"`, `"rejected"`, `"conflict"`, `"refused"`, `"not_sent"`,
 * `"unknown"` or `"key_expired"`. NULL for any other step, and for the END
 * of a client's call that stopped on a journal error before the machine
 * ended (see `payidem_step_end_result`).
 *
 * Ownership: borrowed from `step`, valid until `payidem_step_free(step)`.
 * NULL: `step` may be NULL, giving NULL.
 * Threads: read-only; not while another thread frees `step`.
 * Errors: none.
 */
const char *payidem_step_end_name(const struct payidem_step *step);

/**
 * For an END step: true when the operation is settled for good and is
 * never sent again (succeeded, rejected, conflict, key expired); false
 * when a later call with the same key may still complete it, and for any
 * other step. Always the same as `payidem_result_is_final` of
 * `payidem_step_end_result`'s code (true for success).
 *
 * Ownership: borrows `step`.
 * NULL: `step` may be NULL, giving false.
 * Threads: read-only; not while another thread frees `step`.
 * Errors: none.
 */
bool payidem_step_end_final(const struct payidem_step *step);

/**
 * For an END step: whether the operation may have taken effect, a
 * `payidem_landed` value (`PAYIDEM_LANDED_MAYBE` when the call stopped on
 * a journal error before the machine ended); `PAYIDEM_LANDED_NO` (0) for
 * any other step.
 *
 * Ownership: borrows `step`.
 * NULL: `step` may be NULL, giving 0.
 * Threads: read-only; not while another thread frees `step`.
 * Errors: none.
 */
uint32_t payidem_step_end_landed(const struct payidem_step *step);

/**
 * For an END step: the state the end leaves the operation in, as journals
 * store it (`"pending"`, `"unknown"`, `"succeeded"`, `"rejected"`,
 * `"conflict"`). NULL for any other step, and when the call stopped on a
 * journal error before the machine ended.
 *
 * Ownership: borrowed from `step`, valid until `payidem_step_free(step)`.
 * NULL: `step` may be NULL, giving NULL.
 * Threads: read-only; not while another thread frees `step`.
 * Errors: none.
 */
const char *payidem_step_end_state(const struct payidem_step *step);

/**
 * For an END step: what the caller gets. `PAYIDEM_OK` and a new outcome
 * in `*outcome_out` when the operation succeeded; otherwise the error's
 * code with the usual error object in `*err_out` (the platform's status
 * and body, the order id and the key): `PAYIDEM_REJECTED`,
 * `PAYIDEM_IDEMPOTENCY_CONFLICT`, `PAYIDEM_KEY_EXPIRED` (final);
 * `PAYIDEM_REFUSED`, `PAYIDEM_OUTCOME_UNKNOWN`, `PAYIDEM_TRANSPORT_ERROR`
 * (nothing reached the platform), `PAYIDEM_CANCELLED`,
 * `PAYIDEM_JOURNAL_ERROR` (not final). May be asked any number of times.
 *
 * Ownership: on success `*outcome_out` receives a new outcome the caller
 * frees with `payidem_outcome_free`.
 * NULL: `step` and `outcome_out` must not be NULL; `err_out` may be NULL.
 * Threads: read-only on `step`; not while another thread frees it.
 * Errors: as listed; `PAYIDEM_INVALID_ARGUMENT` naming `step` (NULL or not
 * an END step) or `outcome_out`.
 */
payidem_result payidem_step_end_result(const struct payidem_step *step,
                                       struct payidem_outcome **outcome_out,
                                       struct payidem_error **err_out);

/**
 * Frees a step.
 *
 * Ownership: takes `step`; every string and buffer borrowed from it dies.
 * NULL: `step` may be NULL (nothing happens).
 * Anything else must be a live handle of this type from this library:
 * freeing it twice, using it after this call, or passing a handle of
 * another type is undefined behaviour, and is not detected.
 * Threads: the caller must own `step`; free it once.
 * Errors: none.
 */
void payidem_step_free(struct payidem_step *step);

/**
 * Writes into `buf`, NUL-terminated, `location` (a journal path or URL, a
 * proxy, a base URL, a replay store's URL, a libpq `key=value` string) as
 * the library itself prints it in errors and logs: what it names (scheme,
 * host, port, path, file) stays readable; user and password, a URL's
 * query and fragment, and the value of every `password` keyword become
 * `***`; a URL that cannot be parsed is hidden after its scheme; a file
 * path is unchanged. One rule for every language
 * (`core/tests/vectors/redact-v1.json`). `*len_out` (when given)
 * receives the text's length without the NUL, also on
 * `PAYIDEM_BUFFER_TOO_SMALL` (the redacted text can be longer than
 * `location`: call again with a larger buffer).
 *
 * Ownership: `buf` is caller memory, written only on success; `location`
 * is only read.
 * NULL: `location` must not be NULL; `len_out` and `err_out` may be NULL;
 * `buf` may be NULL only with `buf_len` 0.
 * Threads: safe from any thread.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `location` (NULL, or not
 * UTF-8) or `buf`; `PAYIDEM_BUFFER_TOO_SMALL` naming `buf`.
 */
payidem_result payidem_redact_url(const char *location,
                                  char *buf,
                                  size_t buf_len,
                                  size_t *len_out,
                                  struct payidem_error **err_out);

/**
 * Creates a signer for `key_id` (1..=128 of `[A-Za-z0-9._:-]`) and a
 * secret of 16..=1024 bytes. The secret is copied into keyed MAC state;
 * the caller may wipe its own copy at once.
 *
 * Ownership: on success `*signer_out` receives a new signer the caller
 * frees with `payidem_signer_free`; `key_id` and `secret` are only read.
 * NULL: `key_id`, `secret` and `signer_out` must not be NULL;
 * `err_out` may be NULL.
 * Threads: safe from any thread.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `key_id`, `secret` or
 * `signer_out`.
 */
payidem_result payidem_signer_new(const char *key_id,
                                  const uint8_t *secret,
                                  size_t secret_len,
                                  struct payidem_signer **signer_out,
                                  struct payidem_error **err_out);

/**
 * Frees a signer and wipes its secret.
 *
 * Ownership: takes `signer`.
 * NULL: `signer` may be NULL (nothing happens).
 * Anything else must be a live handle of this type from this library:
 * freeing it twice, using it after this call, or passing a handle of
 * another type is undefined behaviour, and is not detected.
 * Threads: no other thread may be using `signer`.
 * Errors: none.
 */
void payidem_signer_free(struct payidem_signer *signer);

/**
 * Signs one attempt at `timestamp` (Unix seconds, any clock offset already
 * applied) with a fresh random nonce. `idempotency_key` is NULL or `""` for
 * a request without one (a POST requires one).
 *
 * Ownership: on success `*attempt_out` receives a new attempt the caller
 * frees with `payidem_signed_attempt_free`; every input is only read.
 * NULL: `signer`, `method`, `path` and `attempt_out` must not be NULL;
 * `idempotency_key` may be NULL; `body` may be NULL when `body_len` is 0;
 * `err_out` may be NULL.
 * Threads: safe from any thread, with the same signer on many at once.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `signer`, `method`, `path`,
 * `idempotency_key`, `body` or `attempt_out`.
 */
payidem_result payidem_signer_sign_attempt(const struct payidem_signer *signer,
                                           const char *method,
                                           const char *path,
                                           const char *idempotency_key,
                                           const uint8_t *body,
                                           size_t body_len,
                                           uint64_t timestamp,
                                           struct payidem_signed_attempt **attempt_out,
                                           struct payidem_error **err_out);

/**
 * `payidem_signer_sign_attempt` with an explicit `nonce` (a lower-case
 * hyphenated UUID v4), for conformance tests and replays of recorded
 * traffic. Production code must use the random nonce of
 * `payidem_signer_sign_attempt`: a nonce is never reused.
 *
 * Ownership: as `payidem_signer_sign_attempt`.
 * NULL: as `payidem_signer_sign_attempt`; `nonce` must not be NULL.
 * Threads: safe from any thread, with the same signer on many at once.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `signer`, `method`, `path`,
 * `idempotency_key`, `nonce`, `body` or `attempt_out`.
 */
payidem_result payidem_signer_sign_attempt_with_nonce(const struct payidem_signer *signer,
                                                      const char *method,
                                                      const char *path,
                                                      const char *idempotency_key,
                                                      const uint8_t *body,
                                                      size_t body_len,
                                                      uint64_t timestamp,
                                                      const char *nonce,
                                                      struct payidem_signed_attempt **attempt_out,
                                                      struct payidem_error **err_out);

/**
 * Signs one attempt like `payidem_signer_sign_attempt` (fresh random
 * nonce) but writes the header values into the caller's
 * `payidem_signed_headers`, with no allocation by the caller and no handle
 * to free. The header names are the `PAYIDEM_HEADER_*` strings.
 *
 * Ownership: `*headers_out` is caller memory, written only on success.
 * NULL: `signer`, `method`, `path` and `headers_out` must not be NULL;
 * `idempotency_key` may be NULL; `body` may be NULL when `body_len` is 0;
 * `err_out` may be NULL.
 * Threads: safe from any thread, with the same signer on many at once.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `signer`, `method`, `path`,
 * `idempotency_key`, `body` or `headers_out`.
 */
payidem_result payidem_signer_sign_into(const struct payidem_signer *signer,
                                        const char *method,
                                        const char *path,
                                        const char *idempotency_key,
                                        const uint8_t *body,
                                        size_t body_len,
                                        uint64_t timestamp,
                                        struct payidem_signed_headers *headers_out,
                                        struct payidem_error **err_out);

/**
 * The signature of explicit canonical parts, each given as text exactly as
 * it goes on the wire (`timestamp` as decimal text, `nonce` as a UUID v4,
 * `idempotency_key` `""` or NULL for none). Every part is checked first.
 * Writes 64 lower-case hex digits and a NUL into `buf` (at least
 * `PAYIDEM_SIGNATURE_BUF_LEN` bytes).
 *
 * Ownership: `buf` is caller memory, written only on success.
 * NULL: `signer`, `method`, `path`, `timestamp`, `nonce` and `buf` must not
 * be NULL; `idempotency_key` may be NULL; `body` may be NULL when
 * `body_len` is 0; `err_out` may be NULL.
 * Threads: safe from any thread, with the same signer on many at once.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming the first part that breaks its
 * rule (`method`, `path`, `timestamp`, `nonce`, `idempotency_key`) or a
 * NULL parameter; `PAYIDEM_BUFFER_TOO_SMALL` when `buf_len` < 65.
 */
payidem_result payidem_signer_sign_parts(const struct payidem_signer *signer,
                                         const char *method,
                                         const char *path,
                                         const char *timestamp,
                                         const char *nonce,
                                         const char *idempotency_key,
                                         const uint8_t *body,
                                         size_t body_len,
                                         char *buf,
                                         size_t buf_len,
                                         struct payidem_error **err_out);

/**
 * Writes the canonical string of one attempt,
 * `method\npath\ntimestamp\nnonce\nidempotency_key\nbody_sha256` (no
 * trailing newline), and a NUL into `buf`. `*len_out` (when given)
 * receives the string's length without the NUL, on success and also on
 * `PAYIDEM_BUFFER_TOO_SMALL`, so a call with `buf` NULL and `buf_len` 0
 * asks for the size (the buffer needs `*len_out + 1` bytes).
 *
 * Ownership: `buf` is caller memory, written only on success.
 * NULL: `method`, `path`, `timestamp` and `nonce` must not be NULL;
 * `idempotency_key` may be NULL (none); `body` may be NULL when `body_len`
 * is 0; `buf` may be NULL only with `buf_len` 0; `len_out` and `err_out`
 * may be NULL.
 * Threads: safe from any thread.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming the first part that breaks its
 * rule or a NULL parameter; `PAYIDEM_BUFFER_TOO_SMALL` naming `buf`.
 */
payidem_result payidem_canonical_string(const char *method,
                                        const char *path,
                                        const char *timestamp,
                                        const char *nonce,
                                        const char *idempotency_key,
                                        const uint8_t *body,
                                        size_t body_len,
                                        char *buf,
                                        size_t buf_len,
                                        size_t *len_out,
                                        struct payidem_error **err_out);

/**
 * Writes the body's SHA-256 as 64 lower-case hex digits and a NUL into
 * `buf` (at least `PAYIDEM_SHA256_HEX_BUF_LEN` bytes).
 *
 * Ownership: `buf` is caller memory, written only on success.
 * NULL: `body` may be NULL when `body_len` is 0; `buf` must not be NULL;
 * `err_out` may be NULL.
 * Threads: safe from any thread.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `body` or `buf`;
 * `PAYIDEM_BUFFER_TOO_SMALL` when `buf_len` < 65.
 */
payidem_result payidem_body_sha256_hex(const uint8_t *body,
                                       size_t body_len,
                                       char *buf,
                                       size_t buf_len,
                                       struct payidem_error **err_out);

/**
 * How many headers the attempt carries: 4, or 5 with `Idempotency-Key`.
 *
 * Ownership: borrows `attempt`.
 * NULL: `attempt` may be NULL, giving 0.
 * Threads: read-only; not while another thread frees `attempt`.
 * Errors: none.
 */
size_t payidem_signed_attempt_header_count(const struct payidem_signed_attempt *attempt);

/**
 * The header at `index` (0-based, in the order `X-Api-Key`,
 * `X-Timestamp`, `X-Nonce`, `X-Signature`, `Idempotency-Key`).
 *
 * Ownership: `*name_out` and `*value_out` are borrowed from `attempt`,
 * valid until `payidem_signed_attempt_free(attempt)`.
 * NULL: `attempt`, `name_out` and `value_out` must not be NULL; `err_out`
 * may be NULL.
 * Threads: read-only; not while another thread frees `attempt`.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `attempt`, `index` (out of
 * range), `name_out` or `value_out`.
 */
payidem_result payidem_signed_attempt_header_at(const struct payidem_signed_attempt *attempt,
                                                size_t index,
                                                const char **name_out,
                                                const char **value_out,
                                                struct payidem_error **err_out);

/**
 * The signed timestamp (Unix seconds); 0 for a NULL attempt.
 *
 * Ownership: borrows `attempt`.
 * NULL: `attempt` may be NULL, giving 0.
 * Threads: read-only; not while another thread frees `attempt`.
 * Errors: none.
 */
uint64_t payidem_signed_attempt_timestamp(const struct payidem_signed_attempt *attempt);

/**
 * The `X-Nonce` value.
 *
 * Ownership: borrowed from `attempt`, valid until it is freed.
 * NULL: `attempt` may be NULL, giving NULL.
 * Threads: read-only; not while another thread frees `attempt`.
 * Errors: none.
 */
const char *payidem_signed_attempt_nonce(const struct payidem_signed_attempt *attempt);

/**
 * The `X-Signature` value.
 *
 * Ownership: borrowed from `attempt`, valid until it is freed.
 * NULL: `attempt` may be NULL, giving NULL.
 * Threads: read-only; not while another thread frees `attempt`.
 * Errors: none.
 */
const char *payidem_signed_attempt_signature(const struct payidem_signed_attempt *attempt);

/**
 * Frees a signed attempt.
 *
 * Ownership: takes `attempt`; every string borrowed from it dies.
 * NULL: `attempt` may be NULL (nothing happens).
 * Anything else must be a live handle of this type from this library:
 * freeing it twice, using it after this call, or passing a handle of
 * another type is undefined behaviour, and is not detected.
 * Threads: the caller must own `attempt`; free it once.
 * Errors: none.
 */
void payidem_signed_attempt_free(struct payidem_signed_attempt *attempt);

/**
 * Creates a verifier with a timestamp window of `window_seconds` (300 in
 * protocol v1; 0 means exactly equal) and at most
 * `nonce_capacity_per_key` live nonces per key id, exactly (past it
 * verification fails closed with `PAYIDEM_REPLAY_CACHE_FULL`, 503, until
 * some expire). All key ids together hold at most 16,000,000 nonces (about
 * 540 MB, at most 0.9 GB) unless `payidem_verifier_set_nonce_capacity_total` says
 * otherwise. Add key ids with `payidem_verifier_add_key`.
 *
 * The verifier's clock is monotonic per key id: a `now` older than the
 * newest one already given counts as that newest one, so a server clock
 * stepped back never lets a replay through.
 *
 * Ownership: on success `*verifier_out` receives a new verifier the caller
 * frees with `payidem_verifier_free`.
 * NULL: `verifier_out` must not be NULL; `err_out` may be NULL.
 * Threads: safe from any thread.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `window_seconds` (above
 * 1,000,000,000), `nonce_capacity_per_key` (0) or `verifier_out`.
 */
payidem_result payidem_verifier_new(uint64_t window_seconds,
                                    size_t nonce_capacity_per_key,
                                    struct payidem_verifier **verifier_out,
                                    struct payidem_error **err_out);

/**
 * Creates a verifier like `payidem_verifier_new` whose nonces are recorded
 * in the replay store named by `replay_store`: `"memory"` (or NULL, or
 * `""`) for this process's memory, exactly like `payidem_verifier_new`;
 * `"redis://host[:port][/db]"`, `"unix:///path/redis.sock"` or
 * `"redis+unix:///path"` for a Redis server shared by a fleet of verifiers,
 * so a request accepted by one is a replay (`PAYIDEM_NONCE_REUSED`) for
 * all. Nothing is connected here. With Redis each verification that
 * passes the window and the signature claims the nonce with one atomic
 * script; when Redis is unreachable, times out, is out of memory, or was
 * restarted after the request was signed (its epoch guard), verification
 * fails closed with `PAYIDEM_REPLAY_STORE_UNAVAILABLE` (503 with
 * `Retry-After`), never accepting. `nonce_capacity_per_key` then bounds
 * nothing (Redis's `maxmemory` does). See docs/replay-store.md for what
 * the Redis server needs (`maxmemory-policy noeviction`).
 *
 * Ownership: `replay_store` is only read (it may hold a password; it never
 * appears in an error). On success `*verifier_out` receives a new verifier
 * the caller frees with `payidem_verifier_free`.
 * NULL: `verifier_out` must not be NULL; `replay_store` and `err_out` may
 * be NULL.
 * Threads: safe from any thread.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `replay_store` (not one of the
 * forms above), `window_seconds`, `nonce_capacity_per_key` or
 * `verifier_out`.
 */
payidem_result payidem_verifier_new_with_replay_store(uint64_t window_seconds,
                                                      size_t nonce_capacity_per_key,
                                                      const char *replay_store,
                                                      struct payidem_verifier **verifier_out,
                                                      struct payidem_error **err_out);

/**
 * Adds `key_id` with its `count` active secrets (each 16..=1024 bytes;
 * several for rotation: any may match). The secrets are copied.
 *
 * Ownership: every input is only read.
 * NULL: `verifier`, `key_id`, `secrets`, `secret_lens` and every
 * `secrets[i]` must not be NULL; `err_out` may be NULL.
 * Threads: safe at any time; it waits for running verifications.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `verifier`, `key_id` (invalid
 * or already added), `secrets` (none given), `secrets[i]` or `secret`
 * (a secret out of its length rule), or `secret_lens`.
 */
payidem_result payidem_verifier_add_key(const struct payidem_verifier *verifier,
                                        const char *key_id,
                                        const uint8_t *const *secrets,
                                        const size_t *secret_lens,
                                        size_t count,
                                        struct payidem_error **err_out);

/**
 * Replaces the active secrets of a key id already added (rotation), keeping
 * its nonce cache.
 *
 * Ownership: every input is only read.
 * NULL: as `payidem_verifier_add_key`.
 * Threads: safe at any time, concurrently with verifications.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `verifier`, `key_id` (invalid
 * or unknown), `secrets`, `secrets[i]`, `secret` or `secret_lens`.
 */
payidem_result payidem_verifier_set_secrets(const struct payidem_verifier *verifier,
                                            const char *key_id,
                                            const uint8_t *const *secrets,
                                            const size_t *secret_lens,
                                            size_t count,
                                            struct payidem_error **err_out);

/**
 * Verifies one received request at the server's clock `now` (Unix
 * seconds), in the protocol's order: signature headers, key id, window,
 * signature, nonce replay, idempotency key on POST (an empty or repeated
 * `Idempotency-Key` header is `PAYIDEM_INVALID_ARGUMENT` naming
 * `idempotency_key`). A nonce is recorded only once its signature verified.
 * `payidem_verifier_verify_into` also returns what was verified. Header names compare
 * case-insensitively; header bytes that are not UTF-8 are read lossily.
 *
 * `*http_status_out` (when given) receives the status to answer with: 200
 * on success, the error's status otherwise (401, 409, 503, 400; 500 for an
 * internal error), so a server can answer without inspecting the error.
 * `payidem_refusal_from_error` builds the whole answer (status, headers and
 * body) from the error.
 *
 * Ownership: every input is only read.
 * NULL: `verifier`, `method` and `path` must not be NULL; `headers` may be
 * NULL when `header_count` is 0, and no header's `name` or `value` may be
 * NULL; `body` may be NULL when `body_len` is 0; `http_status_out` and
 * `err_out` may be NULL.
 * Threads: safe from any number of threads at once on one verifier.
 * Errors: `PAYIDEM_MISSING_SIGNATURE`, `PAYIDEM_UNKNOWN_API_KEY`,
 * `PAYIDEM_TIMESTAMP_OUT_OF_WINDOW` (with the server time,
 * `payidem_error_server_time`), `PAYIDEM_INVALID_SIGNATURE`,
 * `PAYIDEM_NONCE_REUSED`, `PAYIDEM_REPLAY_CACHE_FULL`,
 * `PAYIDEM_IDEMPOTENCY_KEY_REQUIRED`, `PAYIDEM_REPLAY_STORE_UNAVAILABLE`
 * (a Redis replay store that cannot answer; 503 with `Retry-After`);
 * `PAYIDEM_INVALID_ARGUMENT` naming
 * `verifier`, `method`, `path`, `headers[i].name`, `headers[i].value`,
 * `body` or `idempotency_key`.
 */
payidem_result payidem_verifier_verify(const struct payidem_verifier *verifier,
                                       const char *method,
                                       const char *path,
                                       const struct payidem_header *headers,
                                       size_t header_count,
                                       const uint8_t *body,
                                       size_t body_len,
                                       uint64_t now,
                                       uint16_t *http_status_out,
                                       struct payidem_error **err_out);

/**
 * Verifies like `payidem_verifier_verify` and, on success, writes what it
 * verified (key id, idempotency key, nonce, timestamp) into the caller's
 * `*verified_out`. A server must act on these values rather than read the
 * headers again: that is how the key it charges is the key it verified.
 *
 * Ownership: `*verified_out` is caller memory, written only on success.
 * NULL: as `payidem_verifier_verify`; `verified_out` must not be NULL.
 * Threads: safe from any number of threads at once on one verifier.
 * Errors: as `payidem_verifier_verify`, and `PAYIDEM_INVALID_ARGUMENT`
 * naming `verified_out`.
 */
payidem_result payidem_verifier_verify_into(const struct payidem_verifier *verifier,
                                            const char *method,
                                            const char *path,
                                            const struct payidem_header *headers,
                                            size_t header_count,
                                            const uint8_t *body,
                                            size_t body_len,
                                            uint64_t now,
                                            struct payidem_verified *verified_out,
                                            uint16_t *http_status_out,
                                            struct payidem_error **err_out);

/**
 * Removes a key id: its secrets are wiped and its nonce memory freed;
 * requests signed with it are then refused with `PAYIDEM_UNKNOWN_API_KEY`.
 *
 * Ownership: every input is only read.
 * NULL: `verifier` and `key_id` must not be NULL; `err_out` may be NULL.
 * Threads: safe at any time; it waits for running verifications.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `verifier` or `key_id`
 * (invalid or not added).
 */
payidem_result payidem_verifier_remove_key(const struct payidem_verifier *verifier,
                                           const char *key_id,
                                           struct payidem_error **err_out);

/**
 * Sets the verifier-wide limit of nonces held across every key id (a
 * memory cap: 28 to 57 bytes a nonce, 33.6 measured; default 16,000,000). Past it
 * verification fails closed with `PAYIDEM_REPLAY_CACHE_FULL` (503) until
 * some expire. Lowering it below what is held forgets nothing.
 *
 * Ownership: every input is only read.
 * NULL: `verifier` must not be NULL; `err_out` may be NULL.
 * Threads: safe at any time, concurrently with verifications.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `verifier` or
 * `nonce_capacity_total` (0).
 */
payidem_result payidem_verifier_set_nonce_capacity_total(const struct payidem_verifier *verifier,
                                                         size_t nonce_capacity_total,
                                                         struct payidem_error **err_out);

/**
 * Frees a verifier and wipes its secrets.
 *
 * Ownership: takes `verifier`.
 * NULL: `verifier` may be NULL (nothing happens).
 * Anything else must be a live handle of this type from this library:
 * freeing it twice, using it after this call, or passing a handle of
 * another type is undefined behaviour, and is not detected.
 * Threads: no other thread may be using `verifier`.
 * Errors: none.
 */
void payidem_verifier_free(struct payidem_verifier *verifier);

/**
 * The result number of the verification code at `index` (0-based, in
 * number order), or 0 (`PAYIDEM_OK`) past the last one: exactly the codes
 * `payidem_verifier_verify` fails with (`PAYIDEM_INVALID_ARGUMENT`,
 * `PAYIDEM_MISSING_SIGNATURE`, ..., `PAYIDEM_IDEMPOTENCY_KEY_REQUIRED`),
 * each refused with its own status. Lets a binding test every one.
 *
 * Ownership: nothing to free.
 * NULL: never takes a pointer.
 * Threads: safe from any thread.
 * Errors: none.
 */
uint32_t payidem_refusal_verification_code_at(size_t index);

/**
 * Builds the answer to a request whose verification failed with `error`
 * (as `payidem_verifier_verify` gave it): its status (401, 409, 503 or
 * 400), `Content-Type: application/json`, for
 * `PAYIDEM_TIMESTAMP_OUT_OF_WINDOW` the server's clock as `X-Server-Time`
 * and `Date`, for `PAYIDEM_REPLAY_STORE_UNAVAILABLE` `Retry-After: 1`,
 * and the body with the error's code and message. An error that
 * verification never gives is a failure of the server: 500
 * `internal_error`, whose message shows nothing of it.
 *
 * Ownership: `error` is only read (free it as usual); on success
 * `*refusal_out` receives a new refusal the caller frees with
 * `payidem_refusal_free`.
 * NULL: `error` and `refusal_out` must not be NULL; `err_out` may be NULL.
 * Threads: safe from any thread; `error` must not be freed meanwhile.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `error` or `refusal_out`.
 */
payidem_result payidem_refusal_from_error(const struct payidem_error *error,
                                          struct payidem_refusal **refusal_out,
                                          struct payidem_error **err_out);

/**
 * Builds the refusal for a verification failure given by its parts, for a
 * binding that keeps an error's fields rather than the `payidem_error`:
 * `code` is a result number (`PAYIDEM_NONCE_REUSED`, ...), `message` the
 * error's message, and `server_time` (Unix seconds) the server's clock,
 * used only by `PAYIDEM_TIMESTAMP_OUT_OF_WINDOW`. The same answer as
 * `payidem_refusal_from_error` for an error with these parts.
 *
 * Ownership: inputs are only read; on success `*refusal_out` receives a new
 * refusal the caller frees with `payidem_refusal_free`.
 * NULL: `message` and `refusal_out` must not be NULL; `err_out` may be NULL.
 * Threads: safe from any thread.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `code` (0, or a number that is
 * no code), `message` or `refusal_out`.
 */
payidem_result payidem_refusal_new(uint32_t code,
                                   const char *message,
                                   uint64_t server_time,
                                   struct payidem_refusal **refusal_out,
                                   struct payidem_error **err_out);

/**
 * Builds the 413 `payload_too_large` refusal for a body over a server's
 * limit of `limit_bytes`, which was neither read nor verified.
 *
 * Ownership: on success `*refusal_out` receives a new refusal the caller
 * frees with `payidem_refusal_free`.
 * NULL: `refusal_out` must not be NULL; `err_out` may be NULL.
 * Threads: safe from any thread.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `refusal_out`.
 */
payidem_result payidem_refusal_body_too_large(uint64_t limit_bytes,
                                              struct payidem_refusal **refusal_out,
                                              struct payidem_error **err_out);

/**
 * The HTTP status to answer with; 0 for a NULL refusal.
 *
 * Ownership: borrows `refusal`.
 * NULL: `refusal` may be NULL, giving 0.
 * Threads: read-only; not while another thread frees `refusal`.
 * Errors: none.
 */
uint16_t payidem_refusal_status(const struct payidem_refusal *refusal);

/**
 * The error code the body carries (e.g. `"nonce_reused"`,
 * `"payload_too_large"`), for logs and metrics; NULL for a NULL refusal.
 *
 * Ownership: borrowed from `refusal`, valid until
 * `payidem_refusal_free(refusal)`.
 * NULL: `refusal` may be NULL, giving NULL.
 * Threads: read-only; not while another thread frees `refusal`.
 * Errors: none.
 */
const char *payidem_refusal_code(const struct payidem_refusal *refusal);

/**
 * How many headers to send (besides framing ones such as
 * `Content-Length`); 0 for a NULL refusal.
 *
 * Ownership: borrows `refusal`.
 * NULL: `refusal` may be NULL, giving 0.
 * Threads: read-only; not while another thread frees `refusal`.
 * Errors: none.
 */
size_t payidem_refusal_header_count(const struct payidem_refusal *refusal);

/**
 * The header at `index` (0-based): `Content-Type` first, then for
 * `timestamp_out_of_window` `X-Server-Time` and `Date`, for
 * `replay_store_unavailable` `Retry-After`. A server that adds
 * its own `Date` to every answer must not add it to one that has this one.
 *
 * Ownership: `*name_out` and `*value_out` are borrowed from `refusal`,
 * valid until `payidem_refusal_free(refusal)`.
 * NULL: `refusal`, `name_out` and `value_out` must not be NULL; `err_out`
 * may be NULL.
 * Threads: read-only; not while another thread frees `refusal`.
 * Errors: `PAYIDEM_INVALID_ARGUMENT` naming `refusal`, `index` (out of
 * range), `name_out` or `value_out`.
 */
payidem_result payidem_refusal_header_at(const struct payidem_refusal *refusal,
                                         size_t index,
                                         const char **name_out,
                                         const char **value_out,
                                         struct payidem_error **err_out);

/**
 * The body to send: sets `*body_out` and `*len_out` (UTF-8 JSON, not
 * NUL-terminated) and returns true; returns false and leaves them untouched
 * for NULL arguments.
 *
 * Ownership: the bytes are borrowed from `refusal`, valid until
 * `payidem_refusal_free(refusal)`.
 * NULL: none of the arguments may be NULL (false).
 * Threads: read-only; not while another thread frees `refusal`.
 * Errors: none.
 */
bool payidem_refusal_body(const struct payidem_refusal *refusal,
                          const uint8_t **body_out,
                          size_t *len_out);

/**
 * Frees a refusal.
 *
 * Ownership: takes `refusal`; every string and buffer borrowed from it dies.
 * NULL: `refusal` may be NULL (nothing happens).
 * Anything else must be a live handle of this type from this library:
 * freeing it twice, using it after this call, or passing a handle of
 * another type is undefined behaviour, and is not detected.
 * Threads: no other thread may be using `refusal`; free it once.
 * Errors: none.
 */
void payidem_refusal_free(struct payidem_refusal *refusal);

/**
 * The library's version (`PAYIDEM_VERSION_MAJOR` and friends in the
 * header are generated from the same Cargo.toml), e.g. `"0.1.0"`; compare with `PAYIDEM_VERSION` to
 * detect a header that does not match the linked library.
 *
 * Ownership: the string is static; never free it.
 * NULL: never takes a pointer.
 * Threads: safe from any thread.
 * Errors: none.
 */
const char *payidem_version(void);

/**
 * The ABI version of the linked library; equal to `PAYIDEM_ABI_VERSION`
 * when the header matches.
 *
 * Ownership: nothing to free.
 * NULL: never takes a pointer.
 * Threads: safe from any thread.
 * Errors: none.
 */
uint32_t payidem_abi_version(void);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* PAYIDEM_H */
