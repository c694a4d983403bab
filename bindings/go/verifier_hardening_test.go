//go:build cgo

package payidem

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// Issue #14: VerifyRequest returns what it verified; Middleware puts it in
// the request's context.
func TestVerifyRequestReturnsWhatItVerified(t *testing.T) {
	s, v := newTestSigner(t), newTestVerifier(t, 64)
	now := time.Unix(1767225600, 0)
	body := []byte(`{"amount":1}`)
	h, err := s.SignAt(now, "POST", "/v1/payments", "create-o-9", body)
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.VerifyRequest(request("POST", "/v1/payments", h), body, now)
	if err != nil {
		t.Fatal(err)
	}
	want := Verified{KeyID: "key_live_1", IdempotencyKey: "create-o-9", Nonce: h.Get(HeaderNonce), Timestamp: now}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	g, _ := s.SignAt(now, "GET", "/v1/payments/p", "", nil)
	got, err = v.VerifyRequest(request("GET", "/v1/payments/p", g), nil, now)
	if err != nil || got.IdempotencyKey != "" || got.Nonce != g.Get(HeaderNonce) {
		t.Errorf("GET: %+v %v", got, err)
	}
}

// Before the fix an empty Idempotency-Key header was skipped, so a host
// reading the header again could act on another key than the one verified.
func TestEmptyOrRepeatedIdempotencyKeyIsAnError(t *testing.T) {
	s, v := newTestSigner(t), newTestVerifier(t, 64)
	now := time.Now()
	g, _ := s.SignAt(now, "GET", "/v1/x", "", nil)
	r := request("GET", "/v1/x", g)
	r.Header[HeaderIdempotencyKey] = []string{""}
	var ia *InvalidArgumentError
	if _, err := v.VerifyRequest(r, nil, now); !errors.As(err, &ia) || ia.Field != "idempotency_key" {
		t.Errorf("empty key: %v", err)
	}
	body := []byte(`{}`)
	h, _ := s.SignAt(now, "POST", "/v1/x", "create-a", body)
	r = request("POST", "/v1/x", h)
	r.Header[HeaderIdempotencyKey] = []string{"create-b", "create-a"}
	if _, err := v.VerifyRequest(r, body, now); !errors.As(err, &ia) || ia.Field != "idempotency_key" {
		t.Errorf("repeated key: %v", err)
	}
}

func TestMiddlewarePutsVerifiedInTheContext(t *testing.T) {
	s, v := newTestSigner(t), newTestVerifier(t, 64)
	var seen Verified
	var ok bool
	handler := v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, ok = VerifiedFromContext(r.Context())
	}))
	body := []byte(`{"amount":2}`)
	h, _ := s.SignAt(time.Now(), "POST", "/v1/payments", "create-ctx", body)
	r := httptest.NewRequest("POST", "/v1/payments", bytes.NewReader(body))
	r.Header = h
	w := httptest.NewRecorder()
	handler.ServeHTTP(w, r)
	if w.Code != 200 || !ok || seen.IdempotencyKey != "create-ctx" || seen.KeyID != "key_live_1" || seen.Nonce != h.Get(HeaderNonce) {
		t.Errorf("%d %v %+v", w.Code, ok, seen)
	}
}

func TestRemoveKey(t *testing.T) {
	s, v := newTestSigner(t), newTestVerifier(t, 64)
	now := time.Now()
	if err := v.RemoveKey("key_live_1"); err != nil {
		t.Fatal(err)
	}
	g, _ := s.SignAt(now, "GET", "/p", "", nil)
	if err := v.Verify(request("GET", "/p", g), nil, now); !errors.Is(err, ErrUnknownAPIKey) {
		t.Errorf("after removal: %v", err)
	}
	var ia *InvalidArgumentError
	if err := v.RemoveKey("key_live_1"); !errors.As(err, &ia) || ia.Field != "key_id" {
		t.Errorf("removed twice: %v", err)
	}
	if err := v.AddKey("key_live_1", testSecret); err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(request("GET", "/p", g), nil, now); err != nil {
		t.Errorf("added again: %v", err)
	}
	v.Close()
	if err := v.RemoveKey("key_live_1"); !errors.Is(err, ErrClosed) {
		t.Errorf("after close: %v", err)
	}
}

// Before the fix, a capacity of 1 accepted up to 16 nonces, and nonces
// forgotten at T+301 were accepted again by a clock stepped back.
func TestCapacityIsExactAndTheClockNeverGoesBack(t *testing.T) {
	s := newTestSigner(t)
	now := time.Unix(1767225600, 0)
	for _, capacity := range []int{1, 17, 100} {
		v := newTestVerifier(t, capacity)
		accepted := 0
		for i := 0; i < capacity+20; i++ {
			g, _ := s.SignAt(now, "GET", "/p", "", nil)
			if err := v.Verify(request("GET", "/p", g), nil, now); err == nil {
				accepted++
			} else if !errors.Is(err, ErrReplayCacheFull) {
				t.Fatal(err)
			}
		}
		if accepted != capacity {
			t.Errorf("capacity %d accepted %d", capacity, accepted)
		}
	}
	v := newTestVerifier(t, 100)
	var captured []http.Header
	for i := 0; i < 50; i++ {
		g, _ := s.SignAt(now, "GET", "/p", "", nil)
		captured = append(captured, g)
		if err := v.Verify(request("GET", "/p", g), nil, now); err != nil {
			t.Fatal(err)
		}
	}
	later := now.Add(301 * time.Second)
	for i := 0; i < 100; i++ {
		g, _ := s.SignAt(later, "GET", "/p", "", nil)
		if err := v.Verify(request("GET", "/p", g), nil, later); err != nil {
			t.Fatal(err)
		}
	}
	for _, behind := range []time.Duration{time.Second, 120 * time.Second} {
		for _, g := range captured {
			if err := v.Verify(request("GET", "/p", g), nil, later.Add(-behind)); err == nil {
				t.Fatalf("a replay %v behind was accepted", behind)
			}
		}
	}
	if err := v.SetNonceCapacityTotal(0); codeOf(err) != CodeInvalidArgument {
		t.Errorf("total 0: %v", err)
	}
	if err := v.SetNonceCapacityTotal(50); err != nil {
		t.Fatal(err)
	}
	g, _ := s.SignAt(later, "GET", "/p", "", nil)
	if err := v.Verify(request("GET", "/p", g), nil, later); !errors.Is(err, ErrReplayCacheFull) {
		t.Errorf("over the total: %v", err)
	}
}

// Issue #12: the middleware's refusal is the core's, byte for byte, for
// every code the linked library lists as a verification code. A code added
// to the core without a request here that provokes it fails this test.
func TestMiddlewareRefusalIsTheCoresForEveryVerificationCode(t *testing.T) {
	s := newTestSigner(t)
	now := time.Unix(1767225600, 0)
	body := []byte(`{"amount":1}`)
	sign := func(at time.Time, method, path, key string) http.Header {
		t.Helper()
		h, err := s.SignAt(at, method, path, key, body)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	type scenario struct {
		first  http.Header // verified (and accepted) before, when set
		method string
		header http.Header
		store  string // the verifiers' replay store, when not in memory
	}
	scenarios := map[Code]func() scenario{
		CodeInvalidArgument: func() scenario {
			h := sign(now, "GET", "/v1/payments", "")
			h[HeaderIdempotencyKey] = []string{""}
			return scenario{method: "GET", header: h}
		},
		CodeMissingSignature: func() scenario {
			h := sign(now, "POST", "/v1/payments", "create-a")
			h.Del(HeaderSignature)
			return scenario{method: "POST", header: h}
		},
		CodeUnknownAPIKey: func() scenario {
			h := sign(now, "POST", "/v1/payments", "create-a")
			h.Set(HeaderAPIKey, "key_other")
			return scenario{method: "POST", header: h}
		},
		CodeTimestampOutOfWindow: func() scenario {
			return scenario{method: "POST", header: sign(now.Add(-301*time.Second), "POST", "/v1/payments", "create-a")}
		},
		CodeInvalidSignature: func() scenario {
			return scenario{method: "POST", header: sign(now, "POST", "/v1/other", "create-a")}
		},
		CodeNonceReused: func() scenario {
			h := sign(now, "POST", "/v1/payments", "create-a")
			return scenario{first: h, method: "POST", header: h}
		},
		CodeReplayCacheFull: func() scenario {
			return scenario{
				first:  sign(now, "POST", "/v1/payments", "create-a"),
				method: "POST",
				header: sign(now, "POST", "/v1/payments", "create-b"),
			}
		},
		CodeReplayStoreUnavailable: func() scenario {
			// A Redis store that cannot be reached fails closed.
			return scenario{
				method: "POST",
				header: sign(now, "POST", "/v1/payments", "create-a"),
				store:  "unix:///nonexistent-payidem-dir/redis.sock",
			}
		},
		CodeIdempotencyKeyRequired: func() scenario {
			ts, nonce := strconv.FormatInt(now.Unix(), 10), "6f1c2a4e-9b3d-4c5e-8f70-1a2b3c4d5e6f"
			sig, err := s.SignParts("POST", "/v1/payments", ts, nonce, "", body)
			if err != nil {
				t.Fatal(err)
			}
			h := http.Header{}
			h.Set(HeaderAPIKey, "key_live_1")
			h.Set(HeaderTimestamp, ts)
			h.Set(HeaderNonce, nonce)
			h.Set(HeaderSignature, sig)
			return scenario{method: "POST", header: h}
		},
	}
	codes := VerificationCodes()
	if len(codes) < len(scenarios) {
		t.Fatalf("the library lists %v", codes)
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("%s %s reached the handler", r.Method, r.URL)
	})
	for _, code := range codes {
		build, ok := scenarios[code]
		if !ok {
			t.Errorf("no request here provokes %s: add one", code)
			continue
		}
		sc := build()
		// Two verifiers in the same state: one answers directly, the
		// other through the middleware.
		direct, served := newTestVerifier(t, 1), newTestVerifier(t, 1)
		if sc.store != "" {
			direct, served = newStoreVerifier(t, sc.store), newStoreVerifier(t, sc.store)
		}
		served.Clock = func() time.Time { return now }
		if sc.first != nil {
			for _, v := range []*Verifier{direct, served} {
				if err := v.Verify(request("POST", "/v1/payments", sc.first.Clone()), body, now); err != nil {
					t.Fatalf("%s: first request: %v", code, err)
				}
			}
		}
		_, err := direct.VerifyRequest(request(sc.method, "/v1/payments", sc.header.Clone()), body, now)
		var e *Error
		if !errors.As(err, &e) || e.Code != code {
			t.Errorf("%s: the scenario gave %v", code, err)
			continue
		}
		want := RefusalFor(err)

		r := httptest.NewRequest(sc.method, "/v1/payments", bytes.NewReader(body))
		r.Header = sc.header.Clone()
		w := httptest.NewRecorder()
		served.Middleware(next).ServeHTTP(w, r)

		if w.Code != want.Status || w.Code != e.HTTPStatus || want.Code != code {
			t.Errorf("%s: status %d, core %d (%s), error %d", code, w.Code, want.Status, want.Code, e.HTTPStatus)
		}
		if !bytes.Equal(w.Body.Bytes(), want.Body) {
			t.Errorf("%s: body %s, core %s", code, w.Body.Bytes(), want.Body)
		}
		wantHeader := want.Header.Clone()
		wantHeader.Set("Content-Length", strconv.Itoa(len(want.Body)))
		if !reflect.DeepEqual(w.Header(), wantHeader) {
			t.Errorf("%s: headers %v, core %v", code, w.Header(), wantHeader)
		}
		// What the protocol asks of every refusal, checked apart from the
		// core's own words.
		var reply errorReply
		if err := json.Unmarshal(w.Body.Bytes(), &reply); err != nil || reply.Error.Code != string(code) || reply.Error.Message != e.Message {
			t.Errorf("%s: body %s (%v)", code, w.Body.Bytes(), err)
		}
		if w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: Content-Type %q", code, w.Header().Get("Content-Type"))
		}
		clock := code == CodeTimestampOutOfWindow
		if got := w.Header().Get("X-Server-Time"); (got == strconv.FormatInt(now.Unix(), 10)) != clock || (got != "") != clock {
			t.Errorf("%s: X-Server-Time %q", code, got)
		}
		if got := w.Header().Get("Date"); (got == now.UTC().Format(http.TimeFormat)) != clock || (got != "") != clock {
			t.Errorf("%s: Date %q", code, got)
		}
		if got, want := w.Header().Get("Retry-After"), code == CodeReplayStoreUnavailable; (got == "1") != want || (got != "") != want {
			t.Errorf("%s: Retry-After %q", code, got)
		}
	}
}

func TestRefusalForOtherErrorsIsAHidden500(t *testing.T) {
	if RefusalFor(nil) != nil {
		t.Error("nil error, non-nil refusal")
	}
	for _, err := range []error{ErrClosed, &Error{Code: CodeJournal, Message: "/var/lib/shop/journal"}, &Error{Code: "no_such_code", Message: "x"}} {
		f := RefusalFor(err)
		if f.Status != 500 || f.Code != CodeInternal || bytes.Contains(f.Body, []byte("journal")) || bytes.Contains(f.Body, []byte("closed")) {
			t.Errorf("%v: %d %s %s", err, f.Status, f.Code, f.Body)
		}
	}
	f := bodyTooLarge(64)
	if f.Status != 413 || f.Code != "payload_too_large" || string(f.Body) != `{"error":{"code":"payload_too_large","message":"the body is larger than 64 bytes"}}` {
		t.Errorf("413: %d %s %s", f.Status, f.Code, f.Body)
	}
}
