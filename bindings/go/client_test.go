//go:build cgo

package payidem

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestClientPaysOnceAndAnswersAgainFromTheJournal(t *testing.T) {
	m, c := mockClient(t, nil)
	order := orderID("pay")
	op := payment(order, 125000)

	first, err := c.Execute(bg(), op)
	if err != nil {
		t.Fatal(err)
	}
	if first.Status != 201 || first.Replayed || first.Attempts != 1 || first.OrderID != order || first.IdempotencyKey != "create-"+order {
		t.Fatalf("first outcome %+v", first)
	}
	var p struct {
		PaymentID string `json:"payment_id"`
		OrderID   string `json:"order_id"`
		Amount    int    `json:"amount"`
	}
	if err := json.Unmarshal(first.Body, &p); err != nil || p.OrderID != order || p.Amount != 125000 || p.PaymentID == "" {
		t.Fatalf("body %s: %v", first.Body, err)
	}
	if !strings.Contains(first.Headers.Get("Content-Type"), "json") {
		t.Errorf("headers %v", first.Headers)
	}

	again, err := c.Execute(bg(), op)
	if err != nil || again.Status != 201 || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("second call %+v, %v", again, err)
	}
	st, err := c.Status(bg(), order)
	if err != nil || st.State != StateSucceeded || st.Attempts != 1 {
		t.Fatalf("status %+v %v", st, err)
	}
	if st, _ := c.Status(bg(), orderID("never")); st.State != StateNotFound {
		t.Errorf("status of an unknown order: %v", st.State)
	}
	m.assertOnePaymentEach(t, []string{order})
}

func TestClientRejectedKeepsStatusAndBody(t *testing.T) {
	_, c := mockClient(t, nil)
	order := orderID("declined")
	_, err := c.Execute(bg(), payment(order, 1402))
	var rejected *RejectedError
	if !errors.As(err, &rejected) || !errors.Is(err, ErrRejected) {
		t.Fatalf("err = %v, want rejected", err)
	}
	if rejected.Status != 402 || !bytes.Contains(rejected.Body, []byte("card_declined")) {
		t.Errorf("rejected %d %s", rejected.Status, rejected.Body)
	}
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeRejected || e.HTTPStatus != 402 {
		t.Errorf("as *Error: %+v", e)
	}
	// The platform's code and message, read by the core from the body.
	if e.PlatformCode != "card_declined" || e.PlatformMessage != "the card was declined" ||
		!strings.Contains(e.Error(), "HTTP 402 card_declined: the card was declined (final)") {
		t.Errorf("platform error: %q %q in %q", e.PlatformCode, e.PlatformMessage, e.Error())
	}
	if errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrCancelled) {
		t.Error("a rejection matches another sentinel")
	}
	if st, _ := c.Status(bg(), order); st.State != StateRejected {
		t.Errorf("state %v, want rejected", st.State)
	}
}

func TestClientIdempotencyConflict(t *testing.T) {
	m := startMock(t)
	order := orderID("conflict")
	op := payment(order, 1000)
	op.IdempotencyKey = "shared-" + order
	if _, err := newTestClient(t, fastConfig(m.URL)).Execute(bg(), op); err != nil {
		t.Fatal(err)
	}
	// Another process (its own journal) reuses the key for another body.
	other := op
	other.Body = []byte(strings.Replace(string(op.Body), "1000", "2000", 1))
	_, err := newTestClient(t, fastConfig(m.URL)).Execute(bg(), other)
	if !errors.Is(err, ErrIdempotencyConflict) {
		t.Fatalf("err = %v, want idempotency_conflict", err)
	}
	var e *Error
	if errors.As(err, &e); e == nil || e.Code != CodeIdempotencyConflict {
		t.Errorf("as *Error: %v", err)
	}
	m.assertOnePaymentEach(t, []string{order})
}

func TestClientOutcomeUnknownIsResumable(t *testing.T) {
	m, c := mockClient(t, func(cfg *Config) {
		cfg.MaxAttempts = 2
	})
	m.setFaults(t, map[string]any{"drop_after_commit": 1.0})
	order := orderID("unknown")
	op := payment(order, 777)
	op.StatusPath = "" // nothing but the POST can tell: the outcome stays unknown
	_, err := c.Execute(bg(), op)
	var e *Error
	if !errors.Is(err, ErrOutcomeUnknown) || !errors.As(err, &e) {
		t.Fatalf("err = %v, want outcome_unknown", err)
	}
	if e.OrderID != order || e.IdempotencyKey != "create-"+order {
		t.Errorf("error names %q %q", e.OrderID, e.IdempotencyKey)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Error("an unknown outcome without a context claims a context error")
	}
	unknown, err := c.ListUnknown(bg())
	if err != nil || len(unknown) != 1 || unknown[0] != order {
		t.Fatalf("ListUnknown = %v, %v", unknown, err)
	}
	if st, _ := c.Status(bg(), order); st.State != StateUnknown || st.Attempts != 2 {
		t.Errorf("status %+v, want unknown after 2 attempts", st)
	}

	m.setFaults(t, map[string]any{})
	out, err := c.Resume(bg(), order)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != 201 || !out.Replayed || out.Attempts != 3 {
		t.Errorf("resumed outcome %+v", out)
	}
	if unknown, _ := c.ListUnknown(bg()); len(unknown) != 0 {
		t.Errorf("still unknown: %v", unknown)
	}
	m.assertOnePaymentEach(t, []string{order})
}

func TestClientFaultsNeverChargeTwice(t *testing.T) {
	m, c := mockClient(t, nil)
	m.setFaults(t, map[string]any{
		"error_503": 0.1, "error_500_after_commit": 0.1, "timeout_504_after_commit": 0.1,
		"drop_after_commit": 0.1, "error_502": 0.1, "timeout_504_before_commit": 0.05,
		"status_error_503": 0.2,
	})
	var orders []string
	for i := 0; i < 25; i++ {
		order := orderID("faulty")
		orders = append(orders, order)
		settle(t, c, payment(order, 1000+i))
	}
	if s := m.stats(t); len(s.Faults) == 0 {
		t.Error("no fault was injected")
	}
	m.assertOnePaymentEach(t, orders)
}

// settle executes op and resumes it while its outcome is unknown, a
// bounded number of times.
func settle(t testing.TB, c *Client, op Operation) *Outcome {
	t.Helper()
	out, err := c.Execute(bg(), op)
	for i := 0; i < 20 && (errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrTransport)); i++ {
		out, err = c.Resume(bg(), op.OrderID)
	}
	if err != nil {
		t.Fatalf("order %s: %v", op.OrderID, err)
	}
	if out.Status < 200 || out.Status > 299 {
		t.Fatalf("order %s: status %d", op.OrderID, out.Status)
	}
	return out
}

func TestClientTransportError(t *testing.T) {
	m := startMock(t)
	url := m.URL
	_ = m.cmd.Process.Kill()
	_ = m.cmd.Wait()
	cfg := fastConfig(url)
	cfg.MaxAttempts = 2
	c := newTestClient(t, cfg)
	order := orderID("down")
	_, err := c.Execute(bg(), payment(order, 5))
	if !errors.Is(err, ErrTransport) {
		t.Fatalf("err = %v, want transport_error", err)
	}
	if st, _ := c.Status(bg(), order); st.State == StateNotFound || st.State == StateSucceeded {
		t.Errorf("state %v: the operation must stay journaled with its key", st.State)
	}
}

func TestClientOperationBusy(t *testing.T) {
	m := startMock(t)
	// The platform takes 3 s over the create, well inside the request
	// timeout: the first call holds the order all that time.
	m.setFaults(t, map[string]any{"processing_delay_ms": 3000})
	cfg := fastConfig(m.URL)
	cfg.RequestTimeout = 10 * time.Second
	c := newTestClient(t, cfg)
	op := payment(orderID("busy"), 10)
	done := make(chan error, 1)
	go func() {
		_, err := c.Execute(bg(), op)
		done <- err
	}()
	var err error
	for give := time.Now().Add(10 * time.Second); time.Now().Before(give); {
		if st, _ := c.Status(bg(), op.OrderID); st.State == StateInFlight {
			_, err = c.Execute(bg(), op)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !errors.Is(err, ErrOperationBusy) {
		t.Errorf("second call: %v, want operation_busy", err)
	}
	if err := <-done; err != nil {
		t.Errorf("first call: %v", err)
	}
	m.assertOnePaymentEach(t, []string{op.OrderID})
}

func TestClientKeyExpired(t *testing.T) {
	m, c := mockClient(t, func(cfg *Config) {
		cfg.MaxAttempts = 1
		cfg.KeyRetention = time.Second
	})
	m.setFaults(t, map[string]any{"drop_after_commit": 1.0})
	op := payment(orderID("expired"), 20)
	op.StatusPath = ""
	if _, err := c.Execute(bg(), op); !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("err = %v, want outcome_unknown", err)
	}
	m.setFaults(t, map[string]any{})
	time.Sleep(2100 * time.Millisecond)
	_, err := c.Resume(bg(), op.OrderID)
	var e *Error
	if !errors.Is(err, ErrKeyExpired) || !errors.As(err, &e) || e.OrderID != op.OrderID {
		t.Fatalf("err = %v, want key_expired naming the order", err)
	}
	if s := m.stats(t); s.Orders[op.OrderID].PaymentsCreated != 1 || s.Payments != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestClientSQLiteJournalSurvivesReopen(t *testing.T) {
	m := startMock(t)
	cfg := fastConfig(m.URL)
	cfg.JournalPath = filepath.Join(t.TempDir(), "journal.sqlite3")
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	op := payment(orderID("durable"), 30)
	first, err := c.Execute(bg(), op)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	c2 := newTestClient(t, cfg)
	if st, err := c2.Status(bg(), op.OrderID); err != nil || st.State != StateSucceeded {
		t.Fatalf("status after reopen %+v %v", st, err)
	}
	again, err := c2.Execute(bg(), op)
	if err != nil || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("%v %v", again, err)
	}
	m.assertOnePaymentEach(t, []string{op.OrderID})
}

func TestClientJournalError(t *testing.T) {
	cfg := fastConfig("http://127.0.0.1:9")
	cfg.JournalPath = filepath.Join(t.TempDir(), "missing-dir", "journal.sqlite3")
	_, err := NewClient(cfg)
	if !errors.Is(err, ErrJournal) {
		t.Fatalf("err = %v, want journal_error", err)
	}
}

func TestClientInvalidArguments(t *testing.T) {
	c := newTestClient(t, fastConfig("http://127.0.0.1:9"))
	cases := []struct {
		op    Operation
		field string
	}{
		{Operation{OrderID: "bad order", Method: "POST", Path: "/v1/payments"}, "order_id"},
		{Operation{OrderID: "nul\x00", Method: "POST", Path: "/v1/payments"}, "order_id"},
		{Operation{OrderID: "ok", Method: "post", Path: "/v1/payments"}, "method"},
		{Operation{OrderID: "ok", Method: "POST", Path: "no-slash"}, "path"},
		{Operation{OrderID: "ok", Method: "POST", Path: "/p\x00"}, "path"},
		{Operation{OrderID: "ok", Method: "POST", Path: "/p", IdempotencyKey: "has space"}, "idempotency_key"},
		{Operation{OrderID: "ok", Method: "POST", Path: "/p", StatusPath: "bad"}, "status_path"},
	}
	for _, tc := range cases {
		_, err := c.Execute(bg(), tc.op)
		var ia *InvalidArgumentError
		if !errors.As(err, &ia) || !errors.Is(err, ErrInvalidArgument) || ia.Field != tc.field {
			t.Errorf("%+v: err = %v, want invalid %q", tc.op, err, tc.field)
		}
	}
	_, err := c.Resume(bg(), "not-in-journal")
	var ia *InvalidArgumentError
	if !errors.As(err, &ia) || ia.Field != "order_id" {
		t.Errorf("resume of an unknown order: %v", err)
	}
	if _, err := c.Status(bg(), "bad id"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("status of a bad id: %v", err)
	}
}

func TestNewClientInvalidConfig(t *testing.T) {
	base := fastConfig("http://127.0.0.1:9")
	cases := []struct {
		mutate func(*Config)
		field  string
	}{
		{func(c *Config) { c.BaseURL = "" }, "BaseURL"},
		{func(c *Config) { c.KeyID = "" }, "KeyID"},
		{func(c *Config) { c.Secret = []byte("short") }, "Secret"},
		{func(c *Config) { c.Secret = nil }, "Secret"},
		{func(c *Config) { c.KeyRetention = 49 * time.Hour }, "KeyRetention"},
		{func(c *Config) { c.ConnectTimeout = -time.Second }, "ConnectTimeout"},
		{func(c *Config) { c.MaxAttempts = -1 }, "MaxAttempts"},
		{func(c *Config) { c.BaseURL = "http://a\x00b" }, "BaseURL"},
	}
	for _, tc := range cases {
		cfg := base
		tc.mutate(&cfg)
		_, err := NewClient(cfg)
		var ia *InvalidArgumentError
		if !errors.As(err, &ia) || ia.Field != tc.field {
			t.Errorf("want invalid %q, got %v (%+v)", tc.field, err, ia)
		} else if ia.Err.HTTPStatus != 0 || ia.Err.PlatformCode != "" || ia.Err.Body != nil {
			t.Errorf("a local error carries a platform answer: %+v", ia.Err)
		}
		if err != nil && strings.Contains(err.Error(), mockSecret) {
			t.Errorf("error shows the secret: %v", err)
		}
	}
}

func TestConfigNeverPrintsTheSecret(t *testing.T) {
	cfg := fastConfig("http://127.0.0.1:9")
	cfg.RetryBudget = &RetryBudget{Capacity: 7}
	asDecimal := strings.Trim(fmt.Sprint(cfg.Secret), "[]")
	var logs strings.Builder
	slog.New(slog.NewTextHandler(&logs, nil)).Info("config", "cfg", cfg)
	for _, text := range []string{
		fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg),
		fmt.Sprintf("%s", cfg), fmt.Sprintf("%v", &cfg), logs.String(),
	} {
		if strings.Contains(text, mockSecret) || strings.Contains(text, asDecimal) {
			t.Errorf("the secret shows: %s", text)
		}
		if !strings.Contains(text, "<redacted>") || !strings.Contains(text, cfg.KeyID) {
			t.Errorf("not the redacted config: %s", text)
		}
	}
}

func TestClientCloseIsIdempotentAndFinal(t *testing.T) {
	c, err := NewClient(fastConfig("http://127.0.0.1:9"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Execute(bg(), payment("o", 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Execute after Close: %v", err)
	}
	if _, err := c.Resume(bg(), "o"); !errors.Is(err, ErrClosed) {
		t.Errorf("Resume after Close: %v", err)
	}
	if _, err := c.Status(bg(), "o"); !errors.Is(err, ErrClosed) {
		t.Errorf("Status after Close: %v", err)
	}
	if _, err := c.ListUnknown(bg()); !errors.Is(err, ErrClosed) {
		t.Errorf("ListUnknown after Close: %v", err)
	}
	if _, err := c.ResumeUnknown(bg()); !errors.Is(err, ErrClosed) {
		t.Errorf("ResumeUnknown after Close: %v", err)
	}
	if _, err := c.PurgeSettled(bg()); !errors.Is(err, ErrClosed) {
		t.Errorf("PurgeSettled after Close: %v", err)
	}
	if _, err := c.Get(bg(), "/v1/payments/p"); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
	ctx, cancel := context.WithCancel(bg())
	defer cancel()
	if _, err := c.Get(ctx, "/v1/payments/p"); !errors.Is(err, ErrClosed) {
		t.Errorf("Get with a live context after Close: %v", err)
	}
}

func TestClientEventsReachTheHookAndSlog(t *testing.T) {
	m := startMock(t)
	var mu sync.Mutex
	var events []AttemptEvent
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	slogHook := SlogHook(logger)
	cfg := fastConfig(m.URL)
	cfg.OnAttempt = func(e AttemptEvent) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
		slogHook(e)
	}
	c := newTestClient(t, cfg)
	m.setFaults(t, map[string]any{"error_503": 0})
	op := payment(orderID("events"), 40)
	if _, err := c.Execute(bg(), op); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 1 {
		t.Fatalf("events %+v", events)
	}
	e := events[0]
	if e.OrderID != op.OrderID || e.IdempotencyKey != "create-"+op.OrderID || e.Attempt != 1 ||
		e.Kind != AttemptOperation || e.Next != NextSettle || e.HTTPStatus != 201 || e.TransportError != "" {
		t.Errorf("event %+v", e)
	}
	var record map[string]any
	if err := json.Unmarshal(logs.Bytes(), &record); err != nil {
		t.Fatalf("log %q: %v", logs.String(), err)
	}
	if record["msg"] != "payidem attempt" || record["order_id"] != op.OrderID || record["level"] != "DEBUG" ||
		record["next"] != "settle" || record["http_status"] != float64(201) {
		t.Errorf("log record %v", record)
	}
	if strings.Contains(logs.String(), mockSecret) {
		t.Error("the log shows the secret")
	}
}

func TestClientSurvivesAPanickingHook(t *testing.T) {
	_, c := mockClient(t, func(cfg *Config) {
		cfg.OnAttempt = func(AttemptEvent) { panic("hook bug") }
	})
	if _, err := c.Execute(bg(), payment(orderID("panic"), 50)); err != nil {
		t.Fatal(err)
	}
}

// unknownOrders leaves n orders with an unknown outcome in c's journal:
// the platform commits each payment but its answer is lost, and nothing
// else (no status path) can tell. c must allow few attempts.
func unknownOrders(t *testing.T, m *mock, c *Client, prefix string, n int) []string {
	t.Helper()
	m.setFaults(t, map[string]any{"drop_after_commit": 1.0})
	var orders []string
	for i := 0; i < n; i++ {
		op := payment(orderID(prefix), 300+i)
		op.StatusPath = ""
		if _, err := c.Execute(bg(), op); !errors.Is(err, ErrOutcomeUnknown) {
			t.Fatalf("%s: err = %v, want outcome_unknown", op.OrderID, err)
		}
		orders = append(orders, op.OrderID)
	}
	m.setFaults(t, map[string]any{})
	return orders
}

func TestClientResumeUnknownSettlesEveryUnknownOrder(t *testing.T) {
	m, c := mockClient(t, func(cfg *Config) {
		cfg.MaxAttempts = 2
	})
	settled := orderID("settled")
	if _, err := c.Execute(bg(), payment(settled, 100)); err != nil {
		t.Fatal(err)
	}
	orders := unknownOrders(t, m, c, "resume-all", 3)
	listed, err := c.ListUnknown(bg())
	if err != nil || fmt.Sprint(listed) != fmt.Sprint(orders) {
		t.Fatalf("ListUnknown = %v, %v; want %v (oldest first)", listed, err, orders)
	}

	results, err := c.ResumeUnknown(bg())
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(orders) {
		t.Fatalf("%d results for %d unknown orders: %+v", len(results), len(orders), results)
	}
	for i, r := range results {
		if r.OrderID != orders[i] || r.Err != nil || r.Outcome == nil {
			t.Errorf("result %d: %+v, want %s settled", i, r, orders[i])
			continue
		}
		if r.Outcome.OrderID != r.OrderID || r.Outcome.Status != 201 || !r.Outcome.Replayed {
			t.Errorf("result %d: outcome %+v, want the platform's replayed 201", i, r.Outcome)
		}
	}
	if left, err := c.ListUnknown(bg()); err != nil || len(left) != 0 {
		t.Errorf("still unknown: %v %v", left, err)
	}
	// Nothing left: an empty result, not an error.
	if again, err := c.ResumeUnknown(bg()); err != nil || len(again) != 0 {
		t.Errorf("second ResumeUnknown: %+v %v", again, err)
	}
	m.assertOnePaymentEach(t, append(orders, settled))
}

// An order another process is driving answers ErrOperationBusy; the other
// orders are resumed all the same.
func TestClientResumeUnknownReportsBusyOrders(t *testing.T) {
	m := startMock(t)
	cfg := fastConfig(m.URL)
	cfg.MaxAttempts = 2
	cfg.RequestTimeout = 10 * time.Second
	cfg.JournalPath = filepath.Join(t.TempDir(), "journal.sqlite3")
	c := newTestClient(t, cfg)
	other := newTestClient(t, cfg) // another process sharing the journal
	orders := unknownOrders(t, m, c, "busy-resume", 2)

	// Every answer, replays included, comes 3 s late (well inside the 10 s
	// request timeout): the other client holds the first order meanwhile.
	m.setFaults(t, map[string]any{"delay_after_commit": 1.0, "delay_ms": 3000})
	done := make(chan error, 1)
	go func() {
		_, err := other.Resume(bg(), orders[0])
		done <- err
	}()
	driving := false
	for give := time.Now().Add(10 * time.Second); time.Now().Before(give) && !driving; {
		st, err := c.Status(bg(), orders[0])
		driving = err == nil && st.State == StateInFlight && st.Attempts > 2
		if !driving {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if !driving {
		t.Fatal("the other client never sent its attempt")
	}
	results, err := c.ResumeUnknown(bg())
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 || results[0].OrderID != orders[0] || results[1].OrderID != orders[1] {
		t.Fatalf("results %+v, want %v", results, orders)
	}
	if !errors.Is(results[0].Err, ErrOperationBusy) || results[0].Outcome != nil {
		t.Errorf("the busy order: %+v, want ErrOperationBusy", results[0])
	}
	if results[1].Err != nil || results[1].Outcome == nil || results[1].Outcome.Status != 201 {
		t.Errorf("the free order: %+v, want settled", results[1])
	}
	if err := <-done; err != nil {
		t.Errorf("the other client's resume: %v", err)
	}
	m.assertOnePaymentEach(t, orders)
}

func TestClientResumeUnknownStopsWithItsContext(t *testing.T) {
	m, c := mockClient(t, func(cfg *Config) {
		cfg.MaxAttempts = 2
		cfg.BackoffCap = 10 * time.Second
	})
	orders := unknownOrders(t, m, c, "resume-cancel", 2)

	// A done context resumes nothing.
	done, cancelDone := context.WithCancel(bg())
	cancelDone()
	if results, err := c.ResumeUnknown(done); !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) || results != nil {
		t.Fatalf("with a done context: %+v, %v", results, err)
	}

	// Every POST answers 503 with Retry-After: 8: the first resume waits,
	// the context ends during the wait, the second order ends at once. A
	// wait not cut short would take 8 s; the bound leaves a loaded machine
	// seconds of slack.
	m.setFaults(t, map[string]any{"error_503": 1.0, "retry_after_seconds": 8})
	ctx, cancel := context.WithCancel(bg())
	defer cancel()
	timer := time.AfterFunc(300*time.Millisecond, cancel)
	defer timer.Stop()
	start := time.Now()
	results, err := c.ResumeUnknown(ctx)
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("took %v, cancelled after 300ms during an 8 s Retry-After", took)
	}
	if err != nil || len(results) != 2 {
		t.Fatalf("results %+v, %v", results, err)
	}
	for i, r := range results {
		if r.OrderID != orders[i] || r.Outcome != nil || !errors.Is(r.Err, ErrCancelled) || !errors.Is(r.Err, context.Canceled) {
			t.Errorf("result %d: %+v, want ErrCancelled and context.Canceled", i, r)
		}
	}
	// Both keep their keys and settle later, paid once.
	m.setFaults(t, map[string]any{})
	results, err = c.ResumeUnknown(bg())
	if err != nil || len(results) != 2 || results[0].Err != nil || results[1].Err != nil {
		t.Fatalf("resume after the faults: %+v, %v", results, err)
	}
	m.assertOnePaymentEach(t, orders)
}

func TestClientPurgeSettledKeepsUnsettledOperations(t *testing.T) {
	m, c := mockClient(t, func(cfg *Config) {
		cfg.MaxAttempts = 2
		// Seconds enough for the calls below on a loaded host: the first
		// purge must come while every settled operation is retained.
		cfg.SettledRetention = 5 * time.Second
	})
	settledOp := payment(orderID("purged"), 500)
	first, err := c.Execute(bg(), settledOp)
	if err != nil {
		t.Fatal(err)
	}
	declined := orderID("purged-declined")
	if _, err := c.Execute(bg(), payment(declined, 1402)); !errors.Is(err, ErrRejected) {
		t.Fatalf("declined: %v", err)
	}
	unknown := unknownOrders(t, m, c, "kept", 1)[0]
	if n, err := c.PurgeSettled(bg()); err != nil || n != 0 {
		t.Fatalf("PurgeSettled right away = %d, %v; want 0 (inside the retention)", n, err)
	}
	time.Sleep(6100 * time.Millisecond)
	if n, err := c.PurgeSettled(bg()); err != nil || n != 2 {
		t.Fatalf("PurgeSettled = %d, %v; want 2 (the success and the rejection)", n, err)
	}
	for _, o := range []string{settledOp.OrderID, declined} {
		if st, err := c.Status(bg(), o); err != nil || st.State != StateNotFound {
			t.Errorf("%s after the purge: %+v %v", o, st, err)
		}
	}
	if st, err := c.Status(bg(), unknown); err != nil || st.State != StateUnknown {
		t.Errorf("the unknown order after the purge: %+v %v", st, err)
	}
	if n, err := c.PurgeSettled(bg()); err != nil || n != 0 {
		t.Errorf("PurgeSettled again = %d, %v", n, err)
	}
	// A purged order executed again is a new operation with the same
	// default key: the platform replays its payment, paid once.
	again, err := c.Execute(bg(), settledOp)
	if err != nil || !again.Replayed || !bytes.Equal(again.Body, first.Body) {
		t.Errorf("the purged order again: %+v %v", again, err)
	}
	if _, err := c.Resume(bg(), unknown); err != nil {
		t.Fatal(err)
	}
	m.assertOnePaymentEach(t, []string{settledOp.OrderID, unknown})

	ctx, cancel := context.WithCancel(bg())
	cancel()
	if _, err := c.PurgeSettled(ctx); !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Errorf("PurgeSettled with a done context: %v", err)
	}
}

func TestClientGetReadsWithoutTheJournal(t *testing.T) {
	m, c := mockClient(t, nil)
	order := orderID("get")
	created, err := c.Execute(bg(), payment(order, 650))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		PaymentID string `json:"payment_id"`
	}
	if err := json.Unmarshal(created.Body, &p); err != nil || p.PaymentID == "" {
		t.Fatalf("created %s: %v", created.Body, err)
	}
	for _, path := range []string{"/v1/payments?order_id=" + order, "/v1/payments/" + p.PaymentID} {
		r, err := c.Get(bg(), path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		if r.Status != 200 || !bytes.Equal(r.Body, created.Body) || !strings.Contains(r.Headers.Get("Content-Type"), "json") {
			t.Errorf("GET %s: %d %v %s, want the created payment", path, r.Status, r.Headers, r.Body)
		}
	}
	// Any answer is a response: a 404 is no error.
	never := orderID("never-paid")
	r, err := c.Get(bg(), "/v1/payments?order_id="+never)
	if err != nil || r.Status != 404 || !bytes.Contains(r.Body, []byte("not_found")) {
		t.Fatalf("GET of an unknown order: %+v %v", r, err)
	}
	// Nothing was journaled, and the platform saw signed GETs only.
	if st, err := c.Status(bg(), never); err != nil || st.State != StateNotFound {
		t.Errorf("status %+v %v", st, err)
	}
	if unknown, err := c.ListUnknown(bg()); err != nil || len(unknown) != 0 {
		t.Errorf("unknown %v %v", unknown, err)
	}
	m.assertOnePaymentEach(t, []string{order})

	for _, path := range []string{"", "no-slash", "/nul\x00"} {
		var ia *InvalidArgumentError
		if _, err := c.Get(bg(), path); !errors.As(err, &ia) || ia.Field != "path" {
			t.Errorf("GET %q: %v, want invalid path", path, err)
		}
	}
	done, cancel := context.WithCancel(bg())
	cancel()
	if _, err := c.Get(done, "/v1/payments?order_id="+order); !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Errorf("GET with a done context: %v", err)
	}
	if _, err := c.Status(done, order); !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Errorf("Status with a done context: %v", err)
	}
	if _, err := c.ListUnknown(done); !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Errorf("ListUnknown with a done context: %v", err)
	}
}

func TestClientGetTransportErrorAndContextDeadline(t *testing.T) {
	m := startMock(t)
	url := m.URL
	_ = m.cmd.Process.Kill()
	_ = m.cmd.Wait()
	if _, err := newTestClient(t, fastConfig(url)).Get(bg(), "/v1/payments/p"); !errors.Is(err, ErrTransport) {
		t.Errorf("GET of a dead platform: %v, want ErrTransport", err)
	}

	// A platform that accepts and never answers: the context ends the call
	// long before the request timeout.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conns := make(chan net.Conn, 4)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- conn
		}
	}()
	cfg := fastConfig("http://" + ln.Addr().String())
	cfg.RequestTimeout = 10 * time.Second
	c := newTestClient(t, cfg)
	ctx, cancel := context.WithTimeout(bg(), time.Second)
	defer cancel()
	start := time.Now()
	_, err = c.Get(ctx, "/v1/payments/p")
	if took := time.Since(start); took > 6*time.Second {
		t.Errorf("took %v with a 1 s deadline (and a 10 s request timeout)", took)
	}
	if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want ErrCancelled and context.DeadlineExceeded", err)
	}
	// Hang up: the request left in the background ends, and Close returns.
	select {
	case conn := <-conns:
		conn.Close()
	case <-time.After(5 * time.Second):
		t.Error("the GET never connected")
	}
	closed := make(chan struct{})
	go func() {
		c.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Error("Close waited for the abandoned GET past its hang-up")
	}
}
