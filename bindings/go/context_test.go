//go:build cgo

package payidem

import (
	"context"
	"errors"
	"testing"
	"time"
)

// waitingClient is a client of a mock whose every POST answers 503 with
// Retry-After: 8, so that each call waits 8 s between attempts: a wait that
// a cancellation did not cut short stands out by seconds, however loaded
// the machine.
func waitingClient(t *testing.T) (*mock, *Client) {
	m, c := mockClient(t, func(cfg *Config) {
		cfg.BackoffCap = 10 * time.Second
	})
	m.setFaults(t, map[string]any{"error_503": 1.0, "retry_after_seconds": 8})
	return m, c
}

func TestCancelDuringBackoffReturnsPromptlyAndStaysResumable(t *testing.T) {
	m, c := waitingClient(t)
	op := payment(orderID("cancel"), 60)
	ctx, cancel := context.WithCancel(bg())
	var cancelledAt time.Time
	timer := time.AfterFunc(300*time.Millisecond, func() {
		cancelledAt = time.Now()
		cancel()
	})
	defer timer.Stop()
	_, err := c.Execute(ctx, op)
	returned := time.Now()
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrCancelled) {
		t.Fatalf("err = %v, want context.Canceled and ErrCancelled", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Error("a cancellation claims a deadline")
	}
	if lag := returned.Sub(cancelledAt); lag > 4*time.Second {
		t.Errorf("returned %v after cancel, during an 8 s Retry-After", lag)
	}
	var e *Error
	if !errors.As(err, &e) || e.OrderID != op.OrderID || e.IdempotencyKey != "create-"+op.OrderID {
		t.Errorf("error names %+v", e)
	}
	if st, _ := c.Status(bg(), op.OrderID); st.State == StateNotFound || st.State == StateSucceeded {
		t.Errorf("state after cancel %v", st.State)
	}

	m.setFaults(t, map[string]any{})
	out, err := c.Resume(bg(), op.OrderID)
	if err != nil || out.Status != 201 {
		t.Fatalf("resume: %+v %v", out, err)
	}
	m.assertOnePaymentEach(t, []string{op.OrderID})
}

func TestAlreadyCancelledContextJournalsButSendsNothing(t *testing.T) {
	m, c := mockClient(t, nil)
	ctx, cancel := context.WithCancel(bg())
	cancel()
	op := payment(orderID("precancel"), 61)
	if _, err := c.Execute(ctx, op); !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if s := m.stats(t); s.Payments != 0 {
		t.Errorf("a cancelled call paid: %+v", s)
	}
	if _, err := c.Resume(bg(), op.OrderID); err != nil {
		t.Fatalf("resume: %v", err)
	}
	m.assertOnePaymentEach(t, []string{op.OrderID})
}

func TestContextDeadlineBoundsASlowAttempt(t *testing.T) {
	m, c := mockClient(t, func(cfg *Config) { cfg.RequestTimeout = 10 * time.Second })
	// The platform commits, then holds its answer for 10 s: a deadline that
	// did not cut the attempt short would take that long. The deadline
	// leaves a loaded host seconds to get the attempt out.
	m.setFaults(t, map[string]any{"delay_after_commit": 1.0, "delay_ms": 10000})
	op := payment(orderID("deadline"), 62)
	ctx, cancel := context.WithTimeout(bg(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.Execute(ctx, op)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if !errors.Is(err, ErrCancelled) && !errors.Is(err, ErrOutcomeUnknown) {
		t.Errorf("err = %v, want cancelled or outcome_unknown", err)
	}
	if took > 7*time.Second {
		t.Errorf("took %v with a 2 s deadline and a 10 s hold", took)
	}
	m.setFaults(t, map[string]any{})
	out, err := c.Resume(bg(), op.OrderID)
	if err != nil || !out.Replayed && out.Status != 200 {
		t.Fatalf("resume: %+v %v", out, err)
	}
	m.assertOnePaymentEach(t, []string{op.OrderID})
}

func TestResumeHonoursCancellation(t *testing.T) {
	_, c := waitingClient(t)
	op := payment(orderID("resume-cancel"), 63)
	short, cancelShort := context.WithCancel(bg())
	cancelShort()
	_, _ = c.Execute(short, op)
	ctx, cancel := context.WithCancel(bg())
	time.AfterFunc(200*time.Millisecond, cancel)
	if _, err := c.Resume(ctx, op.OrderID); !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("resume err = %v", err)
	}
}

// Many calls, each with its own context, some cancelled: every handle is
// released and nothing is paid twice.
func TestManyCancellableCallsShareAClient(t *testing.T) {
	m, c := mockClient(t, nil)
	m.setFaults(t, map[string]any{"error_503": 0.3})
	orders := make([]string, 16)
	for i := range orders {
		orders[i] = orderID("mixed")
	}
	inWorkers(orders, len(orders), func(i int, order string) {
		ctx, cancel := context.WithTimeout(bg(), time.Duration(50+i*40)*time.Millisecond)
		defer cancel()
		_, _ = c.Execute(ctx, payment(order, 100+i))
	})
	m.setFaults(t, map[string]any{})
	for _, o := range orders {
		if st, _ := c.Status(bg(), o); st.State != StateSucceeded {
			if _, err := c.Resume(bg(), o); err != nil {
				t.Fatalf("resume %s: %v", o, err)
			}
		}
	}
	m.assertOnePaymentEach(t, orders)
}
