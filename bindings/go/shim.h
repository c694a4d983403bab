//go:build cgo

/* Trampolines between the C ABI's callbacks and the Go functions exported
 * in callbacks.go. Go hands C an integer (a runtime/cgo.Handle), never a Go
 * pointer; these functions turn it into the ABI's void *userdata and back. */
#ifndef PAYIDEM_GO_SHIM_H
#define PAYIDEM_GO_SHIM_H

#include <stdint.h>
#include "payidem.h"

payidem_result payidem_go_execute(const payidem_client *client, const char *order_id,
                                  const char *method, const char *path,
                                  const uint8_t *body, size_t body_len,
                                  const char *idempotency_key, const char *status_path,
                                  uint64_t deadline_ms, uintptr_t cancel_handle,
                                  payidem_outcome **outcome_out, payidem_error **err_out);

payidem_result payidem_go_resume(const payidem_client *client, const char *order_id,
                                 uint64_t deadline_ms, uintptr_t cancel_handle,
                                 payidem_outcome **outcome_out, payidem_error **err_out);

payidem_result payidem_go_take_over_loop(const payidem_client *client, uint32_t batch,
                                         uint64_t idle_ms, uintptr_t stop_handle,
                                         uint64_t *driven_out, payidem_error **err_out);

void payidem_go_set_event_handle(const payidem_client *client, uintptr_t event_handle);

#endif
