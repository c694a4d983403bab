//go:build cgo

package payidem

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"expvar"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The Prometheus text exposition format 0.0.4, line by line: comments are
// HELP or TYPE lines naming the metric; samples are name{labels} value.
var (
	promHelp   = regexp.MustCompile(`^# HELP (payidem_[a-z_]+) \S.*$`)
	promType   = regexp.MustCompile(`^# TYPE (payidem_[a-z_]+) (counter|gauge|histogram)$`)
	promSample = regexp.MustCompile(`^(payidem_[a-z_]+)(\{[a-z_]+="[^"\\]*"(,[a-z_]+="[^"\\]*")*\})? (\S+)$`)
)

// checkPrometheusText fails unless every line of text follows the format
// and every sample belongs to the metric its TYPE line announced.
func checkPrometheusText(t *testing.T, text string) {
	t.Helper()
	typed := ""
	kind := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if m := promHelp.FindStringSubmatch(line); m != nil {
			continue
		}
		if m := promType.FindStringSubmatch(line); m != nil {
			typed, kind = m[1], m[2]
			continue
		}
		m := promSample.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("not a Prometheus 0.0.4 line: %q", line)
			continue
		}
		name := m[1]
		if kind == "histogram" {
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
			if base != typed || base == name {
				t.Errorf("sample %q is not a series of histogram %s", line, typed)
			}
		} else if name != typed {
			t.Errorf("sample %q under TYPE %s", line, typed)
		}
		if _, err := strconv.ParseFloat(m[4], 64); err != nil && m[4] != "+Inf" {
			t.Errorf("value of %q: %v", line, err)
		}
	}
}

func TestMetricsMatchTheMockDuringARunWithFaults(t *testing.T) {
	m := startMock(t)
	m.setFaults(t, map[string]any{"timeout_504_after_commit": 0.3, "error_500_before_commit": 0.2})
	c := newTestClient(t, fastConfig(m.URL))
	var mu sync.Mutex
	var events []Event
	var logs bytes.Buffer
	logHook := SlogEventHook(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err := c.SetEventHook(func(e Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
		logHook(e)
	}); err != nil {
		t.Fatal(err)
	}
	const n = 20
	for i := 0; i < n; i++ {
		if _, err := c.Execute(bg(), payment(orderID("metrics"), 10+i)); err != nil {
			t.Fatalf("payment %d: %v", i, err)
		}
	}
	stats := m.stats(t)
	snap, err := c.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	attempts := "payidem_client_attempts_total"
	if got, want := snap.Sum(attempts, map[string]string{"http_response_status_code": "504"}), float64(stats.Faults["timeout_504_after_commit"]); got != want || want == 0 {
		t.Errorf("504 attempts %v, mock faulted %v", got, want)
	}
	if got, want := snap.Sum(attempts, map[string]string{"http_response_status_code": "500", "next": "retry_later"}), float64(stats.Faults["error_500_before_commit"]); got != want || want == 0 {
		t.Errorf("500 attempts %v, mock faulted %v", got, want)
	}
	if got, want := snap.Sum(attempts, map[string]string{"kind": "status_query"}), float64(stats.Faults["timeout_504_after_commit"]); got != want {
		t.Errorf("status queries %v, want one per 504 (%v)", got, want)
	}
	if got := snap.Sum("payidem_client_calls_ended_total", map[string]string{"end": "succeeded"}); got != n {
		t.Errorf("succeeded calls %v, want %d", got, n)
	}
	if got := snap.Sum("payidem_client_settle_duration_seconds", nil); got != n {
		t.Errorf("settle observations %v, want %d", got, n)
	}
	if got := snap.Sum("payidem_client_unknown_operations", nil); got != 0 {
		t.Errorf("unknown operations %v", got)
	}

	// The event hook saw every attempt and every call's end, with the
	// core's levels; the slog hook logged them at those levels.
	mu.Lock()
	ends, attemptEvents := 0, 0
	for _, e := range events {
		switch e.Type {
		case "call_ended":
			ends++
			want := slog.LevelDebug
			if e.Attempts > 1 {
				want = slog.LevelInfo
			}
			if e.End != "succeeded" || !e.Final || e.Landed != "yes" || e.Level != want || e.OrderID == "" {
				t.Errorf("call end %+v, want succeeded at %v", e, want)
			}
		case "attempt":
			attemptEvents++
		}
	}
	mu.Unlock()
	if ends != n || float64(attemptEvents) != snap.Sum(attempts, nil) {
		t.Errorf("%d call ends, %d attempt events; metrics count %v attempts", ends, attemptEvents, snap.Sum(attempts, nil))
	}
	if !strings.Contains(logs.String(), `"level":"INFO","msg":"payidem attempt"`) ||
		!strings.Contains(logs.String(), `"msg":"payidem call_ended"`) {
		t.Errorf("logs lack retries at INFO or call ends:\n%s", logs.String())
	}
	if err := c.SetEventHook(nil); err != nil {
		t.Fatal(err)
	}

	// Prometheus text: well formed, and the same counts.
	var buf bytes.Buffer
	if err := c.WritePrometheus(&buf); err != nil {
		t.Fatal(err)
	}
	checkPrometheusText(t, buf.String())
	if !strings.Contains(buf.String(), fmt.Sprintf("payidem_client_calls_ended_total{end=\"succeeded\"} %d\n", n)) {
		t.Errorf("prometheus text:\n%s", buf.String())
	}

	// The http.Handler and the expvar.Var serve the same metrics.
	rec := httptest.NewRecorder()
	c.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Errorf("handler: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	checkPrometheusText(t, rec.Body.String())
	var fromVar MetricsSnapshot
	var v expvar.Var = c.ExpvarVar()
	if err := json.Unmarshal([]byte(v.String()), &fromVar); err != nil {
		t.Fatal(err)
	}
	if fromVar.Sum(attempts, nil) != snap.Sum(attempts, nil) {
		t.Errorf("expvar %v attempts, snapshot %v", fromVar.Sum(attempts, nil), snap.Sum(attempts, nil))
	}

	// The mock's own verifier counted every signed request it accepted.
	resp, err := http.Get(m.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var mockText bytes.Buffer
	_, _ = mockText.ReadFrom(resp.Body)
	checkPrometheusText(t, mockText.String())
	want := fmt.Sprintf("payidem_verifier_verdicts_total{code=\"accepted\"} %v\n", snap.Sum(attempts, nil))
	if !strings.Contains(mockText.String(), want) {
		t.Errorf("mock /metrics lacks %q:\n%s", want, mockText.String())
	}
}

func TestVerifierMetricsCountVerdicts(t *testing.T) {
	v, err := NewVerifier(map[string][][]byte{mockKeyID: {[]byte(mockSecret)}}, 300*time.Second, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	s := newMockSigner(t)
	body := []byte(`{"amount":1}`)
	now := time.Now()
	h, err := s.SignAt(now, http.MethodPost, "/v1/payments", "create-v", body)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/v1/payments", bytes.NewReader(body))
	r.Header = h
	if err := v.Verify(r, body, now); err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(r, body, now); err == nil {
		t.Fatal("a replay was accepted")
	}
	snap, err := v.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	verdicts := "payidem_verifier_verdicts_total"
	if snap.Sum(verdicts, map[string]string{"code": "accepted"}) != 1 || snap.Sum(verdicts, map[string]string{"code": "nonce_reused"}) != 1 {
		t.Errorf("verdicts %+v", snap.Metrics)
	}
	if snap.Sum("payidem_verifier_replay_cache_entries", nil) != 1 || snap.Sum("payidem_verifier_replay_cache_capacity", nil) <= 0 {
		t.Errorf("replay cache %+v", snap.Metrics)
	}
	var buf bytes.Buffer
	if err := v.WritePrometheus(&buf); err != nil {
		t.Fatal(err)
	}
	checkPrometheusText(t, buf.String())
	v.Close()
	if _, err := v.Metrics(); err != ErrClosed {
		t.Errorf("Metrics after Close: %v", err)
	}
}

// The binding's level mapping is the core's: every attempt shape gets the
// level the library computes, and the names map one to one onto slog.
func TestLevelPolicyParityWithTheCore(t *testing.T) {
	for _, tc := range []struct {
		name string
		lib  uint32
		want slog.Level
	}{{"debug", 1, slog.LevelDebug}, {"info", 2, slog.LevelInfo}, {"warn", 3, slog.LevelWarn}} {
		if got := slogLevel(tc.lib); got != tc.want {
			t.Errorf("slogLevel(%d) = %v, want %v", tc.lib, got, tc.want)
		}
		if got := slogLevelNamed(tc.name); got != tc.want {
			t.Errorf("slogLevelNamed(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
	cases := []struct {
		e    AttemptEvent
		want slog.Level
	}{
		{AttemptEvent{Attempt: 1, Kind: AttemptOperation, Next: NextSettle, HTTPStatus: 201}, slog.LevelDebug},
		{AttemptEvent{Attempt: 2, Kind: AttemptOperation, Next: NextSettle, HTTPStatus: 201}, slog.LevelInfo},
		{AttemptEvent{Attempt: 1, Kind: AttemptOperation, Next: NextSettle, HTTPStatus: 402}, slog.LevelInfo},
		{AttemptEvent{Attempt: 1, Kind: AttemptOperation, Next: NextRetryLater, HTTPStatus: 503}, slog.LevelInfo},
		{AttemptEvent{Attempt: 1, Kind: AttemptOperation, Next: NextQueryStatus, HTTPStatus: 504}, slog.LevelInfo},
		{AttemptEvent{Attempt: 3, Kind: AttemptStatusQuery, Next: NextQueryLater}, slog.LevelInfo},
		{AttemptEvent{Attempt: 8, Kind: AttemptOperation, Next: NextGiveUp, HTTPStatus: 504}, slog.LevelWarn},
	}
	for _, tc := range cases {
		if got := tc.e.Level(); got != tc.want {
			t.Errorf("%+v: level %v, want %v", tc.e, got, tc.want)
		}
	}
}

// Retries are logged at INFO by SlogHook, never WARN; only a give-up is.
func TestSlogHookLogsRetriesAtInfoAndGiveUpsAtWarn(t *testing.T) {
	m := startMock(t)
	m.setFaults(t, map[string]any{"error_500_before_commit": 1})
	var logs bytes.Buffer
	cfg := fastConfig(m.URL)
	cfg.MaxAttempts = 3
	cfg.OnAttempt = SlogHook(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	c := newTestClient(t, cfg)
	if _, err := c.Execute(context.Background(), payment(orderID("giveup"), 1)); err == nil {
		t.Fatal("every attempt answered 500, yet the payment succeeded")
	}
	var levels []string
	sc := bufio.NewScanner(&logs)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		levels = append(levels, fmt.Sprintf("%v/%v", rec["level"], rec["next"]))
	}
	want := []string{"INFO/retry_later", "INFO/retry_later", "WARN/give_up"}
	if strings.Join(levels, " ") != strings.Join(want, " ") {
		t.Errorf("levels %v, want %v", levels, want)
	}
}
