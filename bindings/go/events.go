//go:build cgo

package payidem

/*
#include "payidem.h"
*/
import "C"

import (
	"context"
	"log/slog"
	"runtime/cgo"
	"strconv"
	"sync/atomic"
	"time"
)

// liveHandles counts C handles (clients, signers, verifiers) not yet freed;
// tests read it to prove finalizers release forgotten handles.
var liveHandles atomic.Int64

func itoa(n int) string { return strconv.Itoa(n) }

// AttemptEvent describes one attempt, for logs and metrics. It holds no
// secret and no body.
type AttemptEvent struct {
	OrderID        string
	IdempotencyKey string
	// Attempt is the attempt's number over every call of the operation.
	Attempt    int
	Kind       AttemptKind
	Next       NextAction
	HTTPStatus int // 0 when no response came
	Replayed   bool
	// HasWait tells whether Wait is the pause before the next attempt.
	HasWait  bool
	Wait     time.Duration
	Duration time.Duration
	// ErrorCode is the response's error code; TransportError the network
	// failure when no response came. Empty when none.
	ErrorCode      string
	TransportError string
}

// Level is the attempt's log level by the library's one policy (the
// core's, through payidem_attempt_event_level; the same in C and
// Python): Debug for a first attempt that settled with a 2xx, Warn when
// the client gives up, Info otherwise (a retry, a backoff, a clock
// adjustment, a status query, a settle after retries or with a refusal).
func (e AttemptEvent) Level() slog.Level {
	status := e.HTTPStatus
	if status < 0 || status > 0xffff {
		status = 0
	}
	attempt := e.Attempt
	if attempt < 0 {
		attempt = 0
	}
	cev := C.payidem_attempt_event{
		attempt:     C.uint32_t(uint32(attempt)),
		kind:        C.payidem_attempt_kind(e.Kind),
		next:        C.payidem_next_action(e.Next),
		http_status: C.uint16_t(uint16(status)),
	}
	return slogLevel(uint32(C.payidem_attempt_event_level(&cev)))
}

// slogLevel maps a payidem_log_level onto slog's levels.
func slogLevel(level uint32) slog.Level {
	switch level {
	case C.PAYIDEM_LOG_DEBUG:
		return slog.LevelDebug
	case C.PAYIDEM_LOG_INFO:
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

// slogLevelNamed maps a level name of the event JSON ("debug", "info",
// "warn") onto slog's levels.
func slogLevelNamed(name string) slog.Level {
	for _, l := range []uint32{C.PAYIDEM_LOG_DEBUG, C.PAYIDEM_LOG_INFO, C.PAYIDEM_LOG_WARN} {
		if C.GoString(C.payidem_log_level_name(C.uint32_t(l))) == name {
			return slogLevel(l)
		}
	}
	return slog.LevelWarn
}

// SlogHook returns an OnAttempt hook that logs every attempt to logger at
// the attempt's Level: Debug for a first attempt that succeeded, Info for
// retries, backoffs and status queries, Warn when the client gives up.
func SlogHook(logger *slog.Logger) func(AttemptEvent) {
	return func(e AttemptEvent) {
		level := e.Level()
		attrs := []slog.Attr{
			slog.String("order_id", e.OrderID),
			slog.String("idempotency_key", e.IdempotencyKey),
			slog.Int("attempt", e.Attempt),
			slog.String("kind", e.Kind.String()),
			slog.String("next", e.Next.String()),
			slog.Int("http_status", e.HTTPStatus),
			slog.Bool("replayed", e.Replayed),
			slog.Duration("duration", e.Duration),
		}
		if e.HasWait {
			attrs = append(attrs, slog.Duration("wait", e.Wait))
		}
		if e.ErrorCode != "" {
			attrs = append(attrs, slog.String("error_code", e.ErrorCode))
		}
		if e.TransportError != "" {
			attrs = append(attrs, slog.String("transport_error", e.TransportError))
		}
		logger.LogAttrs(context.Background(), level, "payidem attempt", attrs...)
	}
}

// payidemGoEventJSON receives one client event as JSON (see
// Client.SetEventHook); the text is borrowed for the call only. A
// panicking hook is recovered: unwinding through C frames would crash the
// process in the middle of a payment.
//
//export payidemGoEventJSON
func payidemGoEventJSON(h C.uintptr_t, text *C.char) {
	hook, ok := cgo.Handle(h).Value().(func(Event))
	if !ok || hook == nil || text == nil {
		return
	}
	event, ok := decodeEvent(C.GoString(text))
	if !ok {
		return
	}
	defer func() { _ = recover() }()
	hook(event)
}
