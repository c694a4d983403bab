//go:build cgo

package payidem

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// inWorkers runs do for every order from workers goroutines at once, worker
// w taking its equal share orders[w*n:(w+1)*n] in turn, and returns when
// all are done. do reports failures with t.Error (safe from goroutines).
func inWorkers(orders []string, workers int, do func(worker int, order string)) {
	var wg sync.WaitGroup
	each := len(orders) / workers
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for _, order := range orders[w*each : (w+1)*each] {
				do(w, order)
			}
		}(w)
	}
	wg.Wait()
}

// 64 goroutines share one client (and one signer) under faults; run with
// -race. Every order is paid exactly once.
func TestSixtyFourGoroutinesShareOneClient(t *testing.T) {
	m := startMock(t, "--workers", "16")
	var events atomic.Int64
	cfg := fastConfig(m.URL)
	cfg.OnAttempt = func(AttemptEvent) { events.Add(1) }
	c := newTestClient(t, cfg)
	signer := newMockSigner(t)
	m.setFaults(t, map[string]any{"error_503": 0.05, "drop_after_commit": 0.05, "error_500_after_commit": 0.05})

	const goroutines, perGoroutine = 64, 3
	orders := make([]string, goroutines*perGoroutine)
	for i := range orders {
		orders[i] = orderID(fmt.Sprintf("g%02d", i/perGoroutine))
	}
	inWorkers(orders, goroutines, func(g int, order string) {
		op := payment(order, 1000+g)
		out, err := c.Execute(bg(), op)
		for tries := 0; tries < 20 && (errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrTransport)); tries++ {
			out, err = c.Resume(bg(), order)
		}
		if err != nil {
			t.Errorf("%s: %v", order, err)
			return
		}
		if out.OrderID != order {
			t.Errorf("%s: outcome of %s", order, out.OrderID)
		}
		if _, err := signer.Sign("GET", "/v1/payments?order_id="+order, "", nil); err != nil {
			t.Error(err)
		}
		if _, err := c.Status(bg(), order); err != nil {
			t.Error(err)
		}
	})
	if events.Load() < int64(len(orders)) {
		t.Errorf("%d events for %d orders", events.Load(), len(orders))
	}
	m.assertOnePaymentEach(t, orders)
}
