//go:build cgo

package payidem

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

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
	var wg sync.WaitGroup
	errs := make(chan error, len(orders))
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < perGoroutine; i++ {
				order := orders[g*perGoroutine+i]
				op := payment(order, 1000+g)
				out, err := c.Execute(bg(), op)
				for tries := 0; tries < 20 && (errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrTransport)); tries++ {
					out, err = c.Resume(bg(), order)
				}
				if err != nil {
					errs <- fmt.Errorf("%s: %w", order, err)
					continue
				}
				if out.OrderID != order {
					errs <- fmt.Errorf("%s: outcome of %s", order, out.OrderID)
				}
				if _, err := signer.Sign("GET", "/v1/payments?order_id="+order, "", nil); err != nil {
					errs <- err
				}
				if _, err := c.Status(bg(), order); err != nil {
					errs <- err
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if events.Load() < int64(len(orders)) {
		t.Errorf("%d events for %d orders", events.Load(), len(orders))
	}
	m.assertOnePaymentEach(t, orders)
}
