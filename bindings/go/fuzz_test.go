//go:build cgo

package payidem

// Native Go fuzz targets (go test -fuzz) for the Go-side parsing: request
// headers and target into the verifier, a Config into the options JSON
// and through the C options parser, the decision on response headers and
// the error body. `make fuzz` runs each for FUZZ_SECONDS; `go test` runs
// the seeds below and testdata/fuzz/<Name>/ as regression cases.

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

var fuzzNow = time.Unix(1_700_000_000, 0)

// headerLines reads "Name: value" lines into a Header, as a server would
// hand them over (any bytes, no canonicalization).
func headerLines(blob string) http.Header {
	h := http.Header{}
	for _, line := range strings.Split(blob, "\n") {
		name, value, _ := strings.Cut(line, ":")
		h[name] = append(h[name], strings.TrimPrefix(value, " "))
	}
	return h
}

// checkError fails unless err is nil or a *Error with a code that is not
// internal_error (a panic caught in the library).
func checkError(t *testing.T, err error) *Error {
	t.Helper()
	if err == nil {
		return nil
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("not a *payidem.Error: %T %v", err, err)
	}
	if e.Code == CodeInternal {
		t.Fatalf("internal error: %v", e)
	}
	return e
}

func FuzzVerifyRequest(f *testing.F) {
	f.Add("POST", "/v1/payments", "Content-Type: application/json", []byte(`{"amount":1}`), "create-o1", false, uint8(0), "")
	f.Add("GET", "/v1/payments?order_id=o1", "", []byte(nil), "", false, uint8(1), "x")
	f.Add("POST", "/v1/payments", "X-Api-Key: key_live_1\nX-Nonce: 00000000-0000-4000-8000-000000000000", []byte("{}"), "k", true, uint8(2), "1700000000")
	f.Fuzz(func(t *testing.T, method, target, headers string, body []byte, key string, raw bool, edit uint8, value string) {
		v, err := NewVerifier(map[string][][]byte{"key_live_1": {testSecret}}, 300*time.Second, 64)
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		h := headerLines(headers)
		if !raw {
			s, err := NewSigner("key_live_1", testSecret)
			if err != nil {
				t.Fatal(err)
			}
			signed, err := s.Sign(method, target, key, body)
			s.Close()
			if err != nil {
				checkError(t, err)
				return
			}
			for name, values := range signed {
				h[name] = values
			}
			// One edit of a signed header: the verifier must refuse it.
			names := []string{"X-Api-Key", "X-Timestamp", "X-Nonce", "X-Signature", "Idempotency-Key"}
			if edit%8 < 5 {
				h.Set(names[edit%8], value)
			}
		}
		r := &http.Request{Method: method, RequestURI: target, Header: h}
		err = v.Verify(r, body, fuzzNow)
		if e := checkError(t, err); e != nil && e.HTTPStatus == 0 && e.Code != CodeInvalidArgument {
			t.Fatalf("refusal without an HTTP status: %v", e)
		}
		if !raw && edit%8 >= 5 && err == nil && method == "POST" && key == "" {
			t.Fatalf("a POST without Idempotency-Key verified")
		}
	})
}

func FuzzConfigOptions(f *testing.F) {
	f.Add("http://127.0.0.1:1", "key_live_1", int64(5e9), int64(1), 3, int64(0), uint32(0))
	f.Add("https://api.example.com/prefix", "k", int64(-1), int64(1<<62), -1, int64(1), uint32(1<<31))
	f.Fuzz(func(t *testing.T, baseURL, keyID string, timeout, backoff int64, attempts int, retention int64, budget uint32) {
		cfg := Config{
			BaseURL: baseURL, KeyID: keyID, Secret: testSecret, JournalPath: JournalMemory,
			ConnectTimeout: time.Duration(timeout), RequestTimeout: time.Duration(timeout),
			MaxAttempts: attempts, BackoffBase: time.Duration(backoff), BackoffCap: time.Duration(backoff),
			Deadline: time.Duration(timeout), KeyRetention: time.Duration(retention),
			SettledRetention: time.Duration(retention),
		}
		if budget != 0 {
			cfg.RetryBudget = &RetryBudget{Capacity: budget, RetryCost: budget / 2, TimeoutCost: budget / 3, SuccessRefund: budget / 4}
		}
		js, err := cfg.optionsJSON()
		if err != nil {
			if e := checkError(t, err); e == nil || e.Field == "" {
				t.Fatalf("optionsJSON error without a field: %v", err)
			}
			return
		}
		var m map[string]any
		if err := json.Unmarshal(js, &m); err != nil {
			t.Fatalf("optionsJSON is not a JSON object: %v: %s", err, js)
		}
		if m["base_url"] != baseURL || m["key_id"] != keyID {
			t.Fatalf("base_url/key_id not carried over: %s", js)
		}
		for k := range m {
			if _, ok := goFieldOfOption[k]; !ok && k != "retry" && k != "retry_budget" {
				t.Fatalf("unknown option %q in %s", k, js)
			}
		}
		c, err := NewClient(cfg)
		if e := checkError(t, err); e != nil && e.Code == CodeInvalidArgument && e.Field == "" {
			t.Fatalf("invalid_argument without a field: %v", e)
		}
		if c != nil {
			c.Close()
		}
	})
}

func FuzzDecide(f *testing.F) {
	f.Add(uint8(0), 503, "service_unavailable", "Retry-After: 3", false, int64(1_700_000_000))
	f.Add(uint8(0), 401, "timestamp_out_of_window", "X-Server-Time: 1700000100\nDate: Tue, 14 Nov 2023 22:13:20 GMT", true, int64(0))
	f.Add(uint8(2), 0, "", "", true, int64(-5))
	f.Fuzz(func(t *testing.T, outcome uint8, status int, code, headers string, hasStatusPath bool, now int64) {
		result := AttemptResult{Outcome: AttemptOutcome(outcome % 4), Status: status, ErrorCode: code, Headers: headerLines(headers)}
		d, err := Decide(result, hasStatusPath, time.Unix(now, 0))
		checkError(t, err)
		if err == nil && d.RetryAfter < 0 {
			t.Fatalf("negative Retry-After: %v", d)
		}
	})
}

func FuzzErrorCodeFromBody(f *testing.F) {
	f.Add([]byte(`{"error":{"code":"nonce_reused","message":"x"}}`))
	f.Add([]byte(`{"error":{"code":"` + strings.Repeat("a", 100) + `"}}`))
	f.Add([]byte("<html>"))
	f.Fuzz(func(t *testing.T, body []byte) {
		code, err := ErrorCodeFromBody(body)
		checkError(t, err)
		if code != "" {
			var v struct {
				Error struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			if json.Unmarshal(body, &v) == nil && v.Error.Code != code {
				t.Fatalf("code %q, body says %q", code, v.Error.Code)
			}
		}
	})
}
