//go:build cgo

package payidem

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// seenRequest is one request as it left for the platform.
type seenRequest struct {
	Method, Path, Nonce, Key string
}

// recordingTransport records every request it passes to its base.
type recordingTransport struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen []seenRequest
}

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.seen = append(r.seen, seenRequest{req.Method, req.URL.RequestURI(), req.Header.Get(HeaderNonce), req.Header.Get(HeaderIdempotencyKey)})
	r.mu.Unlock()
	return r.base.RoundTrip(req)
}

func (r *recordingTransport) requests() []seenRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seenRequest(nil), r.seen...)
}

// assertDistinctNonces fails when two requests carried the same nonce.
func assertDistinctNonces(t *testing.T, seen []seenRequest) {
	t.Helper()
	nonces := map[string]bool{}
	for _, s := range seen {
		if s.Nonce == "" {
			t.Errorf("a request without X-Nonce: %+v", s)
		}
		if nonces[s.Nonce] {
			t.Errorf("nonce %s sent twice", s.Nonce)
		}
		nonces[s.Nonce] = true
	}
}

// paymentRequest is the POST of one order's payment, carrying the
// operation in its context.
func paymentRequest(t *testing.T, ctx context.Context, base, order string, amount int, statusPath string) *http.Request {
	t.Helper()
	body := fmt.Sprintf(`{"order_id":%q,"amount":%d,"currency":"RUB"}`, order, amount)
	req, err := http.NewRequestWithContext(WithOperation(ctx, order, statusPath), http.MethodPost,
		base+"/v1/payments", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

func TestRoundTripperPaysOnceThroughAnswersLostAfterCommit(t *testing.T) {
	m := startMock(t)
	m.setFaults(t, map[string]any{"drop_after_commit": 0.25, "timeout_504_after_commit": 0.25})
	cfg := fastConfig(m.URL)
	cfg.MaxAttempts = 30 // a replay may be lost too: settle every order
	client := newTestClient(t, cfg)
	rec := &recordingTransport{base: http.DefaultTransport}
	hc := client.HTTPClient(&http.Client{Transport: rec})

	var orders []string
	for i := 0; i < 12; i++ {
		order := orderID("rt")
		orders = append(orders, order)
		statusPath := ""
		if i%2 == 0 {
			statusPath = "/v1/payments?order_id=" + order
		}
		resp, err := hc.Do(paymentRequest(t, bg(), m.URL, order, 1250, statusPath))
		if err != nil {
			t.Fatalf("order %s: %v", order, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 || !bytes.Contains(body, []byte(order)) {
			t.Fatalf("order %s: %d %s, want the settled payment", order, resp.StatusCode, body)
		}
		if int64(len(body)) != resp.ContentLength {
			t.Errorf("ContentLength %d, body %d bytes", resp.ContentLength, len(body))
		}
	}
	m.assertOnePaymentEach(t, orders)

	seen := rec.requests()
	assertDistinctNonces(t, seen)
	retried := 0
	for _, order := range orders {
		var posts []seenRequest
		for _, s := range seen {
			if s.Method == http.MethodPost && s.Key == "create-"+order {
				posts = append(posts, s)
			}
		}
		if len(posts) == 0 {
			t.Errorf("order %s: no POST with key create-%s", order, order)
		}
		if len(posts) > 1 {
			retried++
		}
	}
	for _, s := range seen {
		if s.Method == http.MethodPost && !strings.HasPrefix(s.Key, "create-rt-") {
			t.Errorf("a POST with key %q", s.Key)
		}
	}
	stats := m.stats(t)
	if stats.Faults["drop_after_commit"] == 0 || stats.Faults["timeout_504_after_commit"] == 0 {
		t.Fatalf("faults injected: %v; the test needs both kinds", stats.Faults)
	}
	if retried == 0 {
		t.Fatal("no operation was re-sent: the test proves nothing about retries")
	}
}

// A server that reads the second request of its first connection and then
// hangs up without answering: net/http's Transport replays a replayable
// request on a fresh connection by itself when a reused one fails so.
type hangUpServer struct {
	ln     net.Listener
	mu     sync.Mutex
	nonces []string
	hungUp bool
}

func newHangUpServer(t *testing.T) *hangUpServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &hangUpServer{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(conn)
		}
	}()
	return s
}

func (s *hangUpServer) URL() string { return "http://" + s.ln.Addr().String() }

func (s *hangUpServer) serve(conn net.Conn) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	for n := 1; ; n++ {
		req, err := http.ReadRequest(r)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		s.mu.Lock()
		s.nonces = append(s.nonces, req.Header.Get(HeaderNonce))
		hangUp := n == 2 && !s.hungUp
		if hangUp {
			s.hungUp = true
		}
		s.mu.Unlock()
		if hangUp {
			return // read, maybe ran, never answered
		}
		body := `{"payment_id":"pay_1","status":"succeeded"}`
		fmt.Fprintf(conn, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
}

func (s *hangUpServer) seenNonces() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.nonces...)
}

func TestNetHTTPReplaysSignedBytesWithoutTheRoundTripper(t *testing.T) {
	// The hazard the RoundTripper exists for: a request signed once and
	// given a GetBody, as http.NewRequest does, is replayed by net/http
	// with the same nonce.
	srv := newHangUpServer(t)
	signer, err := NewSigner(mockKeyID, []byte(mockSecret))
	if err != nil {
		t.Fatal(err)
	}
	defer signer.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	for i := 0; i < 2; i++ {
		body := []byte(fmt.Sprintf(`{"n":%d}`, i))
		req, _ := http.NewRequest(http.MethodPost, srv.URL()+"/v1/payments", bytes.NewReader(body))
		req.Header.Set(HeaderIdempotencyKey, fmt.Sprintf("create-ord-%d", i))
		if err := signer.SignRequest(req); err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body) // so that the connection is reused
		resp.Body.Close()
	}
	nonces := srv.seenNonces()
	if len(nonces) != 3 || nonces[1] != nonces[2] {
		t.Fatalf("the server saw nonces %v: want the second request replayed with its nonce", nonces)
	}
}

func TestRoundTripperNetHTTPCannotReplaySignedBytes(t *testing.T) {
	srv := newHangUpServer(t)
	cfg := fastConfig(srv.URL())
	client := newTestClient(t, cfg)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := client.HTTPClient(&http.Client{Transport: tr})
	for i := 0; i < 2; i++ {
		order := orderID("hang")
		resp, err := hc.Do(paymentRequest(t, bg(), srv.URL(), order, 1250, ""))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	nonces := srv.seenNonces()
	if len(nonces) != 3 {
		t.Fatalf("the server saw %d requests (%v), want 3: one each, one retry after the hang-up", len(nonces), nonces)
	}
	seen := map[string]bool{}
	for _, n := range nonces {
		if n == "" || seen[n] {
			t.Fatalf("the server saw nonces %v: every request must carry its own", nonces)
		}
		seen[n] = true
	}
}

func TestRoundTripperRefusesWhatIsNoOperation(t *testing.T) {
	client := newTestClient(t, fastConfig("http://127.0.0.1:9/api/"))
	hc := client.HTTPClient(nil)
	check := func(name string, req *http.Request, field string) {
		t.Helper()
		_, err := hc.Do(req)
		var ia *InvalidArgumentError
		if !errors.As(err, &ia) || ia.Field != field || !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v, want invalid_argument naming %s", name, err, field)
		}
	}
	plain, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:9/api/v1/payments", strings.NewReader("{}"))
	check("no operation", plain, "operation")
	for _, u := range []string{
		"http://127.0.0.1:9/v1/payments",      // outside the prefix
		"http://127.0.0.1:10/api/v1/payments", // another port
		"https://127.0.0.1:9/api/v1/payments", // another scheme
		"http://localhost:9/api/v1/payments",  // another host
	} {
		req, _ := http.NewRequestWithContext(WithOperation(bg(), "ord-1", ""), http.MethodPost, u, strings.NewReader("{}"))
		check(u, req, "url")
	}
	// Nothing was journaled.
	if ids, err := client.ListUnknown(bg()); err != nil || len(ids) != 0 {
		t.Fatalf("ListUnknown: %v %v", ids, err)
	}
	if st, _ := client.Status(bg(), "ord-1"); st.State != StateNotFound {
		t.Fatalf("ord-1 is %v, want not journaled", st.State)
	}
}

func TestOperationPathStripsTheBasePrefix(t *testing.T) {
	cases := []struct{ base, url, want string }{
		{"https://api.example.com", "https://API.example.com:443/v1/payments?x=1", "/v1/payments?x=1"},
		{"https://api.example.com:443/", "https://api.example.com/v1/payments", "/v1/payments"},
		{"http://127.0.0.1:8080/api/", "http://127.0.0.1:8080/api/v1/p%20q", "/v1/p%20q"},
		{"http://127.0.0.1:8080/api", "http://127.0.0.1:8080/api/v1?", "/v1?"},
	}
	for _, c := range cases {
		client := newTestClient(t, fastConfig(c.base))
		u, _ := url.Parse(c.url)
		got, err := client.targetOf(u)
		if err != nil || got != c.want {
			t.Errorf("targetOf(%s, %s) = %q, %v; want %q", c.base, c.url, got, err, c.want)
		}
	}
	client := newTestClient(t, fastConfig("http://127.0.0.1:8080/api"))
	for _, outside := range []string{
		"http://127.0.0.1:8080/apiv1",        // a path sharing only a string prefix
		"http://u:p@127.0.0.1:8080/api/v1",   // credentials
		"https://127.0.0.1:8080/api/v1",      // another scheme
		"http://127.0.0.1:8081/api/v1",       // another port
		"http://localhost:8080/api/v1",       // another host
		"http://127.0.0.1:8080/other/api/v1", // outside the prefix
	} {
		u, _ := url.Parse(outside)
		var ia *InvalidArgumentError
		if _, err := client.targetOf(u); !errors.As(err, &ia) || ia.Field != "url" {
			t.Errorf("%s: %v, want invalid_argument naming url", outside, err)
		}
	}
}

func TestRoundTripperThroughABasePrefixSignsTheFullPath(t *testing.T) {
	// The mock serves /v1 only; a prefix in BaseURL must reach the wire and
	// the signature. A server that records the target proves it.
	var mu sync.Mutex
	var targets []string
	srv := newRawServer(t, func(req *http.Request) (int, string) {
		mu.Lock()
		targets = append(targets, req.URL.RequestURI())
		mu.Unlock()
		return http.StatusCreated, `{"ok":true}`
	})
	client := newTestClient(t, fastConfig(srv+"/api/"))
	hc := client.HTTPClient(nil)
	resp, err := hc.Do(paymentRequest(t, bg(), srv+"/api", orderID("pfx"), 1, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(targets) != 1 || targets[0] != "/api/v1/payments" {
		t.Fatalf("the server saw %v, want [/api/v1/payments]", targets)
	}
}

// newRawServer serves every request with answer on a loopback listener and
// returns its base URL.
func newRawServer(t *testing.T, answer func(*http.Request) (int, string)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		status, body := answer(r)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

func TestRoundTripperReturnsAFinalRefusalAsTheAnswer(t *testing.T) {
	m := startMock(t)
	client := newTestClient(t, fastConfig(m.URL))
	rec := &recordingTransport{base: http.DefaultTransport}
	hc := client.HTTPClient(&http.Client{Transport: rec})
	order := orderID("decl")
	for i := 0; i < 2; i++ {
		resp, err := hc.Do(paymentRequest(t, bg(), m.URL, order, 402, ""))
		if err != nil {
			t.Fatalf("try %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusPaymentRequired || !bytes.Contains(body, []byte("card_declined")) {
			t.Fatalf("try %d: %d %s, want 402 card_declined", i, resp.StatusCode, body)
		}
		if i == 0 && resp.Header.Get("Content-Type") == "" {
			t.Errorf("the answer lost its headers: %v", resp.Header)
		}
	}
	// The second request answered from the journal: one request in all.
	if n := len(rec.requests()); n != 1 {
		t.Fatalf("%d requests sent, want 1 (a final refusal is never sent again)", n)
	}
	if st, _ := client.Status(bg(), order); st.State != StateRejected {
		t.Fatalf("state %v, want rejected", st.State)
	}
}

func TestRoundTripperUnknownOutcomeIsAnErrorAndResumes(t *testing.T) {
	m := startMock(t)
	m.setFaults(t, map[string]any{"drop_after_commit": 1.0})
	cfg := fastConfig(m.URL)
	cfg.MaxAttempts = 2
	client := newTestClient(t, cfg)
	hc := client.HTTPClient(nil)
	order := orderID("unk")
	resp, err := hc.Do(paymentRequest(t, bg(), m.URL, order, 1250, ""))
	if resp != nil {
		resp.Body.Close()
	}
	var ue *url.Error
	if !errors.Is(err, ErrOutcomeUnknown) || !errors.As(err, &ue) || IsFinal(err) {
		t.Fatalf("%v, want a non-final ErrOutcomeUnknown through *url.Error", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.OrderID != order || e.IdempotencyKey != "create-"+order {
		t.Fatalf("%#v, want the order and its key", e)
	}
	m.setFaults(t, map[string]any{})
	// The same request again finishes it with the same key (the journal
	// holds it), as ResumeUnknown would.
	resp, err = hc.Do(paymentRequest(t, bg(), m.URL, order, 1250, ""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("%d %v, want the replayed 201", resp.StatusCode, resp.Header)
	}
	m.assertOnePaymentEach(t, []string{order})
}

func TestRoundTripperCancelKeepsTheKey(t *testing.T) {
	m := startMock(t)
	// The platform commits, then holds its answer for 6 s: a cancel that
	// did not cut the attempt short would take that long.
	m.setFaults(t, map[string]any{"delay_after_commit": 1.0, "delay_ms": 6000})
	cfg := fastConfig(m.URL)
	cfg.RequestTimeout = 10 * time.Second
	client := newTestClient(t, cfg)
	hc := client.HTTPClient(nil)
	order := orderID("cxl")
	ctx, cancel := context.WithCancel(bg())
	defer cancel()
	req := paymentRequest(t, ctx, m.URL, order, 1250, "/v1/payments?order_id="+order)
	type answer struct {
		resp *http.Response
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := hc.Do(req)
		done <- answer{resp, err}
	}()
	// Cancelled once the attempt is out (the platform committed it), however
	// long getting it out took.
	for give := time.Now().Add(10 * time.Second); m.stats(t).Orders[order].PaymentsCreated != 1; {
		if time.Now().After(give) {
			t.Fatal("the attempt never reached the platform")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancelled := time.Now()
	cancel()
	var got answer
	select {
	case got = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the cancel did not end the request")
	}
	if got.resp != nil {
		got.resp.Body.Close()
	}
	if !errors.Is(got.err, ErrCancelled) || !errors.Is(got.err, context.Canceled) {
		t.Fatalf("%v, want ErrCancelled and context.Canceled", got.err)
	}
	if lag := time.Since(cancelled); lag > 3*time.Second {
		t.Fatalf("the cancel took %v of a 6 s hold", lag)
	}
	st, err := client.Status(bg(), order)
	if err != nil || st.State != StateUnknown {
		t.Fatalf("state %v (%v), want unknown: the attempt was out", st.State, err)
	}
	m.setFaults(t, map[string]any{})
	results, err := client.ResumeUnknown(bg())
	if err != nil || len(results) != 1 || results[0].Err != nil || results[0].OrderID != order {
		t.Fatalf("ResumeUnknown: %+v %v", results, err)
	}
	m.assertOnePaymentEach(t, []string{order})
}

func TestRoundTripperRunsTheClientsHookAndSendsTheCallersHeaders(t *testing.T) {
	var mu sync.Mutex
	var events []AttemptEvent
	var agents []string
	srv := newRawServer(t, func(req *http.Request) (int, string) {
		mu.Lock()
		agents = append(agents, req.Header.Get("User-Agent")+"|"+req.Header.Get("Content-Type"))
		mu.Unlock()
		return http.StatusCreated, `{}`
	})
	cfg := fastConfig(srv)
	cfg.OnAttempt = func(e AttemptEvent) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}
	client := newTestClient(t, cfg)
	order := orderID("hook")
	req := paymentRequest(t, bg(), srv, order, 1, "")
	req.Header.Set("User-Agent", "shop/1.0")
	req.Header.Set(HeaderNonce, "caller-nonce-is-replaced")
	resp, err := (&Transport{Client: client}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 1 || events[0].OrderID != order || events[0].Next != NextSettle || events[0].HTTPStatus != 201 {
		t.Fatalf("events %+v", events)
	}
	if len(agents) != 1 || agents[0] != "shop/1.0|application/json" {
		t.Fatalf("the server saw %v", agents)
	}
}

// The child process of TestRoundTripperKilledMidCallIsResumed: pays one
// order through the RoundTripper with an on-disk journal, and is killed
// while the platform holds the answer.
func TestRoundTripperChildProcess(t *testing.T) {
	if os.Getenv("PAYIDEM_RT_CHILD") != "1" {
		return // only as a child of the kill test
	}
	cfg := fastConfig(os.Getenv("PAYIDEM_RT_URL"))
	cfg.JournalPath = os.Getenv("PAYIDEM_RT_JOURNAL")
	cfg.RequestTimeout = 60 * time.Second
	cfg.Deadline = 120 * time.Second
	client, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	order := os.Getenv("PAYIDEM_RT_ORDER")
	resp, err := client.HTTPClient(nil).Do(paymentRequest(t, bg(), cfg.BaseURL, order, 1250, "/v1/payments?order_id="+order))
	// Never reached while the kill test runs.
	t.Fatalf("the child finished: %v %v", resp, err)
}

func TestRoundTripperKilledMidCallIsResumed(t *testing.T) {
	m := startMock(t)
	m.setFaults(t, map[string]any{"delay_after_commit": 1.0, "delay_ms": 60000})
	journal := filepath.Join(t.TempDir(), "journal.sqlite3")
	order := orderID("kill")
	child := exec.Command(os.Args[0], "-test.run=^TestRoundTripperChildProcess$", "-test.count=1")
	child.Env = append(os.Environ(), "PAYIDEM_RT_CHILD=1", "PAYIDEM_RT_URL="+m.URL,
		"PAYIDEM_RT_JOURNAL="+journal, "PAYIDEM_RT_ORDER="+order)
	child.Stdout, child.Stderr = os.Stderr, os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = child.Process.Kill()
			_ = child.Wait()
		}
	}()
	// The platform ran the payment and holds its answer: kill the payer.
	deadline := time.Now().Add(60 * time.Second)
	for m.stats(t).Orders[order].PaymentsCreated == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the child never paid")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	killed = true
	if ws, ok := child.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child ended with %v, want SIGKILL", child.ProcessState)
	}

	m.setFaults(t, map[string]any{})
	cfg := fastConfig(m.URL)
	cfg.JournalPath = journal
	client := newTestClient(t, cfg)
	st, err := client.Status(bg(), order)
	if err != nil || (st.State != StateInFlight && st.State != StateUnknown) || st.Attempts != 1 {
		t.Fatalf("after the kill: %+v %v, want in flight with 1 attempt", st, err)
	}
	results, err := client.ResumeUnknown(bg())
	if err != nil || len(results) != 1 || results[0].OrderID != order || results[0].Err != nil {
		t.Fatalf("ResumeUnknown: %+v %v", results, err)
	}
	if out := results[0].Outcome; out.IdempotencyKey != "create-"+order || out.Status/100 != 2 {
		t.Fatalf("resumed outcome %+v", out)
	}
	m.assertOnePaymentEach(t, []string{order})
}

func TestRoundTripperConcurrentOrdersPayOnceEach(t *testing.T) {
	m := startMock(t)
	m.setFaults(t, map[string]any{"drop_after_commit": 0.2, "error_502": 0.2})
	cfg := fastConfig(m.URL)
	cfg.MaxAttempts = 30
	client := newTestClient(t, cfg)
	rec := &recordingTransport{base: http.DefaultTransport}
	tr := &Transport{Client: client, Base: rec}
	const workers, each = 6, 4
	orders := make([]string, workers*each)
	for i := range orders {
		orders[i] = orderID("conc")
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(orders))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for _, order := range orders[w*each : (w+1)*each] {
				resp, err := tr.RoundTrip(paymentRequest(t, bg(), m.URL, order, 1250, "/v1/payments?order_id="+order))
				if err != nil {
					errs <- err
					continue
				}
				resp.Body.Close()
				if resp.StatusCode/100 != 2 { // 201, or 200 from a status query
					errs <- fmt.Errorf("order %s: %d", order, resp.StatusCode)
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	m.assertOnePaymentEach(t, orders)
	assertDistinctNonces(t, rec.requests())
}
