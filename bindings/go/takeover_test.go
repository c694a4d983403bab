//go:build cgo

package payidem

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// The lease settings of TestTakeOverLoop: a lease holds ttl + request
// timeout past its last renewal (2 s, in the journal's whole seconds),
// renewed every heartbeat.
const (
	loopLeaseTTL   = time.Second
	loopRequest    = time.Second
	loopHeartbeat  = 250 * time.Millisecond
	loopLeaseSpan  = loopLeaseTTL + loopRequest
	loopLoadMargin = 6 * time.Second // a loaded CI host: a claim, a POST, a fsync
)

func loopClient(t *testing.T, m *mock, journal string) *Client {
	cfg := fastConfig(m.URL)
	cfg.JournalPath = journal
	cfg.LeaseTTL, cfg.RequestTimeout, cfg.LeaseHeartbeat = loopLeaseTTL, loopRequest, loopHeartbeat
	return newTestClient(t, cfg)
}

// A call that recorded its attempt and was abandoned (its holder hung or
// died: nothing renews its lease) is taken over by another client's loop
// running in the background once the lease lapsed, never before, within a
// few heartbeats of that; cancelling ctx ends the loop, which counts one
// operation; the abandoned call, closed afterwards, writes nothing over it.
func TestTakeOverLoop(t *testing.T) {
	m := startMock(t)
	journal := filepath.Join(t.TempDir(), "journal.sqlite3")
	holder, taker := loopClient(t, m, journal), loopClient(t, m, journal)
	op := payment(orderID("loop"), 700)
	begun := time.Now() // the lease is written after this instant
	call, err := holder.Begin(bg(), op)
	if err != nil {
		t.Fatal(err)
	}
	if step, err := call.Step(); err != nil || step.Kind != StepSend {
		t.Fatalf("first step %+v %v", step, err)
	}

	ctx, cancel := context.WithCancel(bg())
	defer cancel()
	type result struct {
		driven uint64
		err    error
	}
	done := make(chan result, 1)
	go func() {
		n, err := taker.TakeOverLoop(ctx, 4, time.Hour)
		done <- result{n, err}
	}()
	var settled time.Duration
	for settled == 0 {
		st, err := taker.Status(bg(), op.OrderID)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == StateSucceeded {
			settled = time.Since(begun)
		} else if time.Since(begun) > loopLeaseSpan+loopLoadMargin+10*time.Second {
			t.Fatalf("not taken over %v after the call began: %+v", time.Since(begun), st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The lease, written after begun, lapses loopLeaseSpan after that write
	// on the journal's clock, in whole seconds.
	if settled < loopLeaseSpan-time.Second || settled > loopLeaseSpan+3*loopHeartbeat+loopLoadMargin {
		t.Errorf("settled %v after the call began; the lease lapses %v after its last write", settled, loopLeaseSpan)
	}
	cancel()
	select {
	case r := <-done:
		if r.err != nil || r.driven != 1 {
			t.Errorf("TakeOverLoop = %d, %v; want 1 operation, no error", r.driven, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("TakeOverLoop did not end when ctx was cancelled")
	}

	if err := call.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := holder.Status(bg(), op.OrderID); err != nil || st.State != StateSucceeded {
		t.Errorf("after the stale holder closed: %+v %v, want succeeded", st, err)
	}
	m.assertOnePaymentEach(t, []string{op.OrderID})
}

func TestTakeOverLoopArguments(t *testing.T) {
	_, c := mockClient(t, nil)
	ctx, cancel := context.WithCancel(bg())
	defer cancel()
	var bad *InvalidArgumentError
	for _, tc := range []struct {
		ctx   context.Context
		batch int
		idle  time.Duration
		field string
	}{
		{bg(), 1, time.Second, "ctx"},
		{nil, 1, time.Second, "ctx"},
		{ctx, -1, time.Second, "batch"},
		{ctx, 1, -time.Second, "idle"},
	} {
		if _, err := c.TakeOverLoop(tc.ctx, tc.batch, tc.idle); !errors.As(err, &bad) || bad.Field != tc.field {
			t.Errorf("TakeOverLoop(%v, %d, %v): err = %v, want invalid %s", tc.ctx, tc.batch, tc.idle, err, tc.field)
		}
	}
	cancel()
	if n, err := c.TakeOverLoop(ctx, 1, time.Millisecond); n != 0 || err != nil {
		t.Errorf("TakeOverLoop(done ctx) = %d, %v; want 0, nil", n, err)
	}
	c.Close()
	if _, err := c.TakeOverLoop(ctx, 1, time.Millisecond); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}
