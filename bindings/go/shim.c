//go:build cgo

#include "shim.h"
#include "_cgo_export.h"

static int cancel_trampoline(void *userdata) {
    return payidemGoCancel((uintptr_t)userdata);
}

static void event_trampoline(void *userdata, const payidem_attempt_event *event) {
    payidemGoEvent((uintptr_t)userdata, (payidem_attempt_event *)event);
}

payidem_result payidem_go_execute(const payidem_client *client, const char *order_id,
                                  const char *method, const char *path,
                                  const uint8_t *body, size_t body_len,
                                  const char *idempotency_key, const char *status_path,
                                  uint64_t deadline_ms, uintptr_t cancel_handle,
                                  payidem_outcome **outcome_out, payidem_error **err_out) {
    return payidem_client_execute_with_deadline(
        client, order_id, method, path, body, body_len, idempotency_key, status_path,
        deadline_ms, cancel_handle ? cancel_trampoline : NULL, (void *)cancel_handle,
        outcome_out, err_out);
}

payidem_result payidem_go_resume(const payidem_client *client, const char *order_id,
                                 uint64_t deadline_ms, uintptr_t cancel_handle,
                                 payidem_outcome **outcome_out, payidem_error **err_out) {
    return payidem_client_resume_with_deadline(
        client, order_id, deadline_ms, cancel_handle ? cancel_trampoline : NULL,
        (void *)cancel_handle, outcome_out, err_out);
}

payidem_result payidem_go_take_over_loop(const payidem_client *client, uint32_t batch,
                                         uint64_t idle_ms, uintptr_t stop_handle,
                                         uint64_t *driven_out, payidem_error **err_out) {
    return payidem_client_take_over_loop(client, batch, idle_ms, cancel_trampoline,
                                         (void *)stop_handle, driven_out, err_out);
}

void payidem_go_set_event_handle(const payidem_client *client, uintptr_t event_handle) {
    payidem_client_set_event_callback(client, event_handle ? event_trampoline : NULL,
                                      (void *)event_handle);
}
