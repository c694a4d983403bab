//go:build cgo

package payidem

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
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
