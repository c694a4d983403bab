//go:build cgo

package payidem

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

var testSecret = []byte("sk_test_0123456789abcdef0123456789abcdef")

func newTestSigner(t testing.TB) *Signer {
	t.Helper()
	return newSignerOf(t, "key_live_1", testSecret)
}

// newSignerOf is a signer of keyID and secret, closed when the test ends.
func newSignerOf(t testing.TB, keyID string, secret []byte) *Signer {
	t.Helper()
	s, err := NewSigner(keyID, secret)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newMockSigner is a signer of the mock platform's key, closed when the
// test ends.
func newMockSigner(t testing.TB) *Signer {
	t.Helper()
	return newSignerOf(t, mockKeyID, []byte(mockSecret))
}

func newTestVerifier(t testing.TB, capacity int) *Verifier {
	t.Helper()
	v, err := NewVerifier(map[string][][]byte{"key_live_1": {testSecret}}, 300*time.Second, capacity)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

// request builds a received request with signed headers.
func request(method, path string, h http.Header) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	for k, v := range h {
		r.Header[k] = v
	}
	return r
}

func codeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestSignThenVerify(t *testing.T) {
	s, v := newTestSigner(t), newTestVerifier(t, 1024)
	body := []byte(`{"order_id":"o-1","amount":5,"currency":"RUB"}`)
	now := time.Now()
	h, err := s.SignAt(now, "POST", "/v1/payments?x=1", "create-o-1", body)
	if err != nil {
		t.Fatal(err)
	}
	if h.Get(HeaderAPIKey) != "key_live_1" || h.Get(HeaderTimestamp) != strconv.FormatInt(now.Unix(), 10) ||
		len(h.Get(HeaderNonce)) != 36 || len(h.Get(HeaderSignature)) != 64 || h.Get(HeaderIdempotencyKey) != "create-o-1" {
		t.Fatalf("headers %v", h)
	}
	sig, err := s.SignParts("POST", "/v1/payments?x=1", h.Get(HeaderTimestamp), h.Get(HeaderNonce), "create-o-1", body)
	if err != nil || sig != h.Get(HeaderSignature) {
		t.Errorf("SignParts %q %v, header %q", sig, err, h.Get(HeaderSignature))
	}
	if err := v.Verify(request("POST", "/v1/payments?x=1", h), body, now); err != nil {
		t.Fatalf("verify: %v", err)
	}
	err = v.Verify(request("POST", "/v1/payments?x=1", h), body, now)
	var e *Error
	if !errors.Is(err, ErrNonceReused) || !errors.As(err, &e) || e.HTTPStatus != 409 {
		t.Errorf("replay: %v", err)
	}
	h2, _ := s.SignAt(now, "POST", "/v1/payments?x=1", "create-o-1", body)
	if err := v.Verify(request("POST", "/v1/payments?x=1", h2), []byte("tampered"), now); !errors.Is(err, ErrInvalidSignature) {
		t.Errorf("tampered body: %v", err)
	}
	g, _ := s.Sign("GET", "/v1/payments/p1", "", nil)
	if _, ok := g[HeaderIdempotencyKey]; ok || len(g) != 4 {
		t.Errorf("GET headers %v", g)
	}
	if err := v.Verify(request("GET", "/v1/payments/p1", g), nil, time.Now()); err != nil {
		t.Errorf("GET: %v", err)
	}
}

func TestSignAttemptsAreFresh(t *testing.T) {
	s := newTestSigner(t)
	a, _ := s.SignAttempt(time.Unix(1767225600, 0), "POST", "/p", "k", []byte("b"))
	b, _ := s.SignAttempt(time.Unix(1767225600, 0), "POST", "/p", "k", []byte("b"))
	if a.Nonce == b.Nonce || a.Signature == b.Signature || a.Timestamp != "1767225600" {
		t.Errorf("%+v %+v", a, b)
	}
}

func TestSignerInvalidArguments(t *testing.T) {
	s := newTestSigner(t)
	long := "/" + strings.Repeat("a", 500)
	cases := []struct {
		method, path, key string
		at                time.Time
		field             string
	}{
		{"post", "/p", "", time.Now(), "method"},
		{"POST", "p", "", time.Now(), "path"},
		{"POST", "/p q", "", time.Now(), "path"},
		{"POST", "/p\x00", "", time.Now(), "path"},
		{"PO\x00ST", "/p", "", time.Now(), "method"},
		{"POST", "/p", "bad key", time.Now(), "idempotency_key"},
		{"POST", "/p", "k\x00", time.Now(), "idempotency_key"},
		{"POST", long + "\n", "k", time.Now(), "path"},
		{"POST", "/p", "k", time.Unix(-5, 0), "timestamp"},
	}
	for _, tc := range cases {
		_, err := s.SignAt(tc.at, tc.method, tc.path, tc.key, nil)
		var ia *InvalidArgumentError
		if !errors.As(err, &ia) || ia.Field != tc.field {
			t.Errorf("%q %q %q: %v, want invalid %q", tc.method, tc.path, tc.key, err, tc.field)
		}
	}
	// A long path goes through the heap buffer and still signs.
	if _, err := s.Sign("GET", long, "", nil); err != nil {
		t.Errorf("long path: %v", err)
	}
	for _, bad := range []struct {
		id     string
		secret []byte
		field  string
	}{
		{"bad id", testSecret, "key_id"},
		{"k\x00", testSecret, "key_id"},
		{"k", []byte("short"), "secret"},
		{"k", nil, "secret"},
	} {
		_, err := NewSigner(bad.id, bad.secret)
		var ia *InvalidArgumentError
		if !errors.As(err, &ia) || ia.Field != bad.field {
			t.Errorf("NewSigner(%q): %v, want invalid %q", bad.id, err, bad.field)
		}
		if err != nil && strings.Contains(err.Error(), string(testSecret)) {
			t.Error("error shows the secret")
		}
	}
	s.Close()
	s.Close()
	if _, err := s.Sign("GET", "/p", "", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("sign after close: %v", err)
	}
	if _, err := s.SignParts("GET", "/p", "1", "6f1c2a4e-9b3d-4c5e-8f70-1a2b3c4d5e6f", "", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("SignParts after close: %v", err)
	}
}

func TestVerifierErrorPaths(t *testing.T) {
	s := newTestSigner(t)
	now := time.Now()
	body := []byte("{}")
	h, _ := s.SignAt(now, "POST", "/v1/payments", "k-1", body)

	if err := newTestVerifier(t, 16).Verify(request("POST", "/v1/payments", http.Header{}), body, now); !errors.Is(err, ErrMissingSignature) {
		t.Errorf("unsigned: %v", err)
	}
	other, err := NewVerifier(map[string][][]byte{"key_other": {testSecret}}, 300*time.Second, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Verify(request("POST", "/v1/payments", h), body, now); !errors.Is(err, ErrUnknownAPIKey) {
		t.Errorf("unknown key: %v", err)
	}
	err = newTestVerifier(t, 16).Verify(request("POST", "/v1/payments", h), body, now.Add(301*time.Second))
	var e *Error
	if !errors.Is(err, ErrTimestampOutOfWindow) || !errors.As(err, &e) || e.HTTPStatus != 401 || e.ServerTime.Unix() != now.Add(301*time.Second).Unix() {
		t.Errorf("window: %v", err)
	}
	var ia *InvalidArgumentError
	if _, err := s.SignAt(now, "POST", "/v1/payments", "", body); !errors.As(err, &ia) || ia.Field != "idempotency_key" {
		t.Errorf("signing a POST without a key: %v", err)
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	nonce := "6f1c2a4e-9b3d-4c5e-8f70-1a2b3c4d5e6f"
	sig, err := s.SignParts("POST", "/v1/payments", ts, nonce, "", body)
	if err != nil {
		t.Fatal(err)
	}
	noKey := http.Header{HeaderAPIKey: {"key_live_1"}, HeaderTimestamp: {ts}, HeaderNonce: {nonce}, HeaderSignature: {sig}}
	if err := newTestVerifier(t, 16).Verify(request("POST", "/v1/payments", noKey), body, now); !errors.Is(err, ErrIdempotencyKeyRequired) {
		t.Errorf("POST without key: %v", err)
	}
	repeated := request("POST", "/v1/payments", h)
	repeated.Header.Add(HeaderNonce, h.Get(HeaderNonce))
	if err := newTestVerifier(t, 16).Verify(repeated, body, now); !errors.Is(err, ErrMissingSignature) {
		t.Errorf("repeated header: %v", err)
	}
	full := newTestVerifier(t, 1)
	a, _ := s.SignAt(now, "GET", "/a", "", nil)
	b, _ := s.SignAt(now, "GET", "/b", "", nil)
	if err := full.Verify(request("GET", "/a", a), nil, now); err != nil {
		t.Fatal(err)
	}
	if err := full.Verify(request("GET", "/b", b), nil, now); !errors.Is(err, ErrReplayCacheFull) || codeOf(err) != CodeReplayCacheFull {
		t.Errorf("full cache: %v", err)
	}
	if err := full.Verify(request("GET", "/b", http.Header{"X-Nul": {"a\x00"}}), nil, now); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("NUL header: %v", err)
	}
}

func TestVerifierKeysAndRotation(t *testing.T) {
	newSecret := []byte("sk_rotated_secret_value_0123456789")
	v := newTestVerifier(t, 64)
	if err := v.AddKey("key_live_1", testSecret); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("duplicate key: %v", err)
	}
	if err := v.AddKey("key_x"); codeOf(err) != CodeInvalidArgument {
		t.Errorf("no secret: %v", err)
	}
	var ia *InvalidArgumentError
	if err := v.AddKey("key_y", []byte("short")); !errors.As(err, &ia) {
		t.Errorf("short secret: %v", err)
	}
	if err := v.SetSecrets("key_live_1", newSecret); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	old, _ := newTestSigner(t).SignAt(now, "GET", "/p", "", nil)
	if err := v.Verify(request("GET", "/p", old), nil, now); !errors.Is(err, ErrInvalidSignature) {
		t.Errorf("old secret after rotation: %v", err)
	}
	rotated, _ := NewSigner("key_live_1", newSecret)
	defer rotated.Close()
	fresh, _ := rotated.SignAt(now, "GET", "/p", "", nil)
	if err := v.Verify(request("GET", "/p", fresh), nil, now); err != nil {
		t.Errorf("new secret: %v", err)
	}
	for _, bad := range []struct {
		window   time.Duration
		capacity int
		field    string
	}{{300 * time.Second, 0, "capacity"}, {-time.Second, 5, "window"}} {
		_, err := NewVerifier(nil, bad.window, bad.capacity)
		if !errors.As(err, &ia) || ia.Field != bad.field {
			t.Errorf("NewVerifier: %v, want invalid %q", err, bad.field)
		}
	}
	if _, err := NewVerifier(map[string][][]byte{"bad id": {testSecret}}, time.Minute, 4); !errors.As(err, &ia) || ia.Field != "key_id" {
		t.Errorf("bad key id: %v", err)
	}
	v.Close()
	v.Close()
	if err := v.Verify(request("GET", "/p", fresh), nil, now); !errors.Is(err, ErrClosed) {
		t.Errorf("verify after close: %v", err)
	}
	if err := v.AddKey("key_z", newSecret); !errors.Is(err, ErrClosed) {
		t.Errorf("AddKey after close: %v", err)
	}
}

// errorReply is the protocol's error body.
type errorReply struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func TestMiddleware(t *testing.T) {
	v := newTestVerifier(t, 1024)
	v.MaxBodyBytes = 64
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Write(body)
	})
	srv := httptest.NewServer(v.Middleware(echo))
	defer srv.Close()
	s := newTestSigner(t)

	body := []byte(`{"amount":1}`)
	req, _ := http.NewRequest("POST", srv.URL+"/v1/payments?order_id=a%20b", bytes.NewReader(body))
	req.Header.Set(HeaderIdempotencyKey, "create-mw")
	if err := s.SignRequest(req); err != nil {
		t.Fatal(err)
	}
	signed := req.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(got, body) {
		t.Fatalf("signed request: %d %s", resp.StatusCode, got)
	}

	// The same headers again: a replay.
	replay, _ := http.NewRequest("POST", srv.URL+"/v1/payments?order_id=a%20b", bytes.NewReader(body))
	replay.Header = signed
	expectError(t, replay, 409, "nonce_reused")

	unsigned, _ := http.NewRequest("GET", srv.URL+"/v1/x", nil)
	expectError(t, unsigned, 401, "missing_signature")

	skewed, _ := http.NewRequest("GET", srv.URL+"/v1/x", nil)
	h, _ := s.SignAt(time.Now().Add(-time.Hour), "GET", "/v1/x", "", nil)
	skewed.Header = h
	resp = expectError(t, skewed, 401, "timestamp_out_of_window")
	serverTime, err := strconv.ParseInt(resp.Header.Get("X-Server-Time"), 10, 64)
	if err != nil || time.Since(time.Unix(serverTime, 0)).Abs() > time.Minute {
		t.Errorf("X-Server-Time %q", resp.Header.Get("X-Server-Time"))
	}
	if date, err := http.ParseTime(resp.Header.Get("Date")); err != nil || date.Unix() != serverTime {
		t.Errorf("Date %q vs %d", resp.Header.Get("Date"), serverTime)
	}

	big, _ := http.NewRequest("POST", srv.URL+"/v1/x", bytes.NewReader(make([]byte, 65)))
	expectError(t, big, 413, "payload_too_large")
}

func expectError(t *testing.T, req *http.Request, status int, code string) *http.Response {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reply errorReply
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil {
		t.Fatalf("%s: body: %v", code, err)
	}
	if resp.StatusCode != status || reply.Error.Code != code || reply.Error.Message == "" {
		t.Errorf("got %d %+v, want %d %s", resp.StatusCode, reply, status, code)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Errorf("content type %q", resp.Header.Get("Content-Type"))
	}
	return resp
}

// SignRequest against the mock platform: a net/http POST and a status GET.
func TestSignRequestAgainstTheMock(t *testing.T) {
	m := startMock(t)
	s := newMockSigner(t)
	order := orderID("nethttp")
	body := `{"order_id":"` + order + `","amount":90,"currency":"RUB"}`
	req, _ := http.NewRequest("POST", m.URL+"/v1/payments", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderIdempotencyKey, "create-"+order)
	if err := s.SignRequest(req); err != nil {
		t.Fatal(err)
	}
	if req.GetBody == nil || req.ContentLength != int64(len(body)) {
		t.Error("body not restored for the transport")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
	get, _ := http.NewRequest("GET", m.URL+"/v1/payments?order_id="+order, nil)
	if err := s.SignRequest(get); err != nil {
		t.Fatal(err)
	}
	resp, err = http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	if err := s.SignRequest(nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("nil request: %v", err)
	}
	m.assertOnePaymentEach(t, []string{order})
}

// Forgotten handles are released by their finalizers.
func TestFinalizersReleaseForgottenHandles(t *testing.T) {
	runtime.GC()
	before := liveHandles.Load()
	func() {
		for i := 0; i < 20; i++ {
			if _, err := NewSigner("key_live_1", testSecret); err != nil {
				t.Fatal(err)
			}
			if _, err := NewVerifier(map[string][][]byte{"k": {testSecret}}, time.Minute, 8); err != nil {
				t.Fatal(err)
			}
			if _, err := NewClient(fastConfig("http://127.0.0.1:9")); err != nil {
				t.Fatal(err)
			}
		}
	}()
	if liveHandles.Load() < before+60 {
		t.Fatalf("%d live handles, want at least %d", liveHandles.Load(), before+60)
	}
	for i := 0; i < 100 && liveHandles.Load() > before; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if liveHandles.Load() > before {
		t.Errorf("%d handles still live, want %d", liveHandles.Load(), before)
	}
}
