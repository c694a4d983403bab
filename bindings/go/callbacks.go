//go:build cgo

package payidem

// The Go functions the C library calls back, through the trampolines in
// shim.c. Their userdata is a runtime/cgo.Handle: C never holds a Go
// pointer. This file's preamble holds declarations only, as //export needs.

/*
#include <stdint.h>
#include "payidem.h"
*/
import "C"

import (
	"context"
	"runtime/cgo"
	"time"
)

// payidemGoCancel is polled by the library on the calling thread before
// every attempt and during waits; non-zero cancels the call.
//
//export payidemGoCancel
func payidemGoCancel(h C.uintptr_t) C.int {
	ctx, ok := cgo.Handle(h).Value().(context.Context)
	if !ok || ctx.Err() != nil {
		return 1
	}
	return 0
}

// payidemGoEvent receives one attempt's event. The event's strings are
// borrowed for the call only, so they are copied before the hook runs.
// A panicking hook is recovered: unwinding through C frames would crash the
// process in the middle of a payment.
//
//export payidemGoEvent
func payidemGoEvent(h C.uintptr_t, ev *C.payidem_attempt_event) {
	hook, ok := cgo.Handle(h).Value().(func(AttemptEvent))
	if !ok || hook == nil || ev == nil {
		return
	}
	event := AttemptEvent{
		OrderID:        goStringOrEmpty(ev.order_id),
		IdempotencyKey: goStringOrEmpty(ev.idempotency_key),
		Attempt:        int(ev.attempt),
		Kind:           AttemptKind(ev.kind),
		Next:           NextAction(ev.next),
		HTTPStatus:     int(ev.http_status),
		Replayed:       bool(ev.replayed),
		HasWait:        bool(ev.has_wait),
		Wait:           time.Duration(ev.wait_ms) * time.Millisecond,
		Duration:       time.Duration(ev.duration_us) * time.Microsecond,
		ErrorCode:      goStringOrEmpty(ev.error_code),
		TransportError: goStringOrEmpty(ev.transport_error),
	}
	defer func() { _ = recover() }()
	hook(event)
}

func goStringOrEmpty(s *C.char) string {
	if s == nil {
		return ""
	}
	return C.GoString(s)
}
