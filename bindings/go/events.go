//go:build cgo

package payidem

/*
#include "payidem.h"
*/
import "C"

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"
)

// liveHandles counts C handles (clients, signers, verifiers) not yet freed;
// tests read it to prove finalizers release forgotten handles.
var liveHandles atomic.Int64

func itoa(n int) string { return strconv.Itoa(n) }

// AttemptKind tells the operation's own request from a status query.
type AttemptKind int

// The attempt kinds.
const (
	AttemptOperation   AttemptKind = C.PAYIDEM_ATTEMPT_KIND_OPERATION
	AttemptStatusQuery AttemptKind = C.PAYIDEM_ATTEMPT_KIND_STATUS_QUERY
)

func (k AttemptKind) String() string {
	switch k {
	case AttemptOperation:
		return "operation"
	case AttemptStatusQuery:
		return "status_query"
	}
	return "kind(" + itoa(int(k)) + ")"
}

// NextAction is what the client does after an attempt.
type NextAction int

// The next actions.
const (
	NextSettle      NextAction = C.PAYIDEM_NEXT_SETTLE
	NextRetryNow    NextAction = C.PAYIDEM_NEXT_RETRY_NOW
	NextRetryLater  NextAction = C.PAYIDEM_NEXT_RETRY_LATER
	NextAdjustClock NextAction = C.PAYIDEM_NEXT_ADJUST_CLOCK
	NextQueryStatus NextAction = C.PAYIDEM_NEXT_QUERY_STATUS
	NextQueryLater  NextAction = C.PAYIDEM_NEXT_QUERY_LATER
	NextGiveUp      NextAction = C.PAYIDEM_NEXT_GIVE_UP
)

func (n NextAction) String() string {
	switch n {
	case NextSettle:
		return "settle"
	case NextRetryNow:
		return "retry_now"
	case NextRetryLater:
		return "retry_later"
	case NextAdjustClock:
		return "adjust_clock"
	case NextQueryStatus:
		return "query_status"
	case NextQueryLater:
		return "query_later"
	case NextGiveUp:
		return "give_up"
	}
	return "next(" + itoa(int(n)) + ")"
}

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

// SlogHook returns an OnAttempt hook that logs every attempt to logger:
// Info for an attempt that settled with a 2xx, Warn otherwise.
func SlogHook(logger *slog.Logger) func(AttemptEvent) {
	return func(e AttemptEvent) {
		level := slog.LevelWarn
		if e.Next == NextSettle && e.HTTPStatus >= 200 && e.HTTPStatus < 300 {
			level = slog.LevelInfo
		}
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
