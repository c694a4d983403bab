//go:build cgo

package payidem

import (
	"math"
	"testing"
)

// AttemptKind and NextAction print the core's names, and a number the
// core does not know as itself (never another value's name, also past
// the C ABI's 32 bits).
func TestAttemptKindAndNextActionNames(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{AttemptOperation.String(), "operation"},
		{AttemptStatusQuery.String(), "status_query"},
		{NextSettle.String(), "settle"},
		{NextRetryNow.String(), "retry_now"},
		{NextRetryLater.String(), "retry_later"},
		{NextAdjustClock.String(), "adjust_clock"},
		{NextQueryStatus.String(), "query_status"},
		{NextQueryLater.String(), "query_later"},
		{NextGiveUp.String(), "give_up"},
		{AttemptKind(99).String(), "kind(99)"},
		{AttemptKind(-1).String(), "kind(-1)"},
		{NextAction(0).String(), "next(0)"},
		{NextAction(-3).String(), "next(-3)"},
	} {
		if c.got != c.want {
			t.Errorf("name %q, want %q", c.got, c.want)
		}
	}
	if math.MaxInt > math.MaxUint32 {
		wrapped := int(uint64(AttemptOperation) + 1<<32)
		if got := AttemptKind(wrapped).String(); got != "kind("+itoa(wrapped)+")" {
			t.Errorf("a number past 32 bits printed %q", got)
		}
	}
}
