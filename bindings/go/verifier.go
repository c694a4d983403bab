//go:build cgo

package payidem

/*
#include <stdlib.h>
#include "payidem.h"
*/
import "C"

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// Verifier checks signed requests on the platform side, in the protocol's
// order, and refuses replays. Safe for concurrent use.
type Verifier struct {
	mu  sync.RWMutex
	ptr *C.payidem_verifier

	// MaxBodyBytes bounds the body Middleware reads (1 MiB by default); a
	// larger one is answered 413 without being verified.
	MaxBodyBytes int64

	// Clock, when set, gives Middleware the server's time (time.Now by
	// default).
	Clock func() time.Time
}

// Verified is what a successful verification established. Act on these
// values, not on headers read again: the request carried each of them
// exactly once (an empty or repeated Idempotency-Key header fails
// verification).
type Verified struct {
	// KeyID is the key id that signed the request (X-Api-Key).
	KeyID string
	// IdempotencyKey is the request's Idempotency-Key, "" when it carried
	// none.
	IdempotencyKey string
	// Nonce is the signed X-Nonce, now recorded as used.
	Nonce string
	// Timestamp is the signed X-Timestamp.
	Timestamp time.Time
}

type verifiedKey struct{}

// VerifiedFromContext returns what Middleware verified for the request
// whose context is ctx.
func VerifiedFromContext(ctx context.Context) (Verified, bool) {
	v, ok := ctx.Value(verifiedKey{}).(Verified)
	return v, ok
}

// NewVerifier creates a verifier with the timestamp window (300 s in
// protocol v1; 0 means exactly equal, rounded down to whole seconds; at most
// 1,000,000,000 s), exactly capacity live nonces per key id (past it
// verification fails closed with ErrReplayCacheFull until some expire), and
// keys: key id to its active secrets (several during a rotation; any may
// match). All key ids together hold at most 16,000,000 nonces unless
// SetNonceCapacityTotal says otherwise. The replay cache's clock is
// monotonic: a server clock stepped back never lets a replay through.
func NewVerifier(keys map[string][][]byte, window time.Duration, capacity int) (*Verifier, error) {
	return NewVerifierWithReplayStore(keys, window, capacity, ReplayStoreMemory)
}

// ReplayStoreMemory names the in-process replay store (the default).
const ReplayStoreMemory = "memory"

// NewVerifierWithReplayStore creates a verifier like NewVerifier whose
// nonces are recorded in the replay store named by replayStore:
// ReplayStoreMemory ("memory", or "") for this process's memory, exactly
// like NewVerifier; "redis://host[:port][/db]", "unix:///path/redis.sock"
// or "redis+unix:///path" for a Redis server shared by a fleet of
// verifiers, so that a request accepted by one is refused as
// ErrNonceReused by all. Nothing is connected here. With Redis, a
// verification that passes the window and the signature claims the nonce
// with one atomic script; when Redis is unreachable, times out, is out of
// memory, or was restarted after the request was signed (its epoch guard),
// verification fails closed with ErrReplayStoreUnavailable (Middleware
// answers 503 with Retry-After), never accepting. capacity then bounds
// nothing (Redis's maxmemory does). The URL may hold a password; no error
// repeats it. See docs/replay-store.md for what the Redis server needs
// (maxmemory-policy noeviction).
func NewVerifierWithReplayStore(keys map[string][][]byte, window time.Duration, capacity int, replayStore string) (*Verifier, error) {
	if window < 0 {
		return nil, invalid("window", "must not be negative")
	}
	if capacity <= 0 {
		return nil, invalid("capacity", "must be above 0")
	}
	var args cstrings
	store, err := args.addOpt("replay_store", replayStore)
	if err != nil {
		return nil, err
	}
	var ptr *C.payidem_verifier
	var cerr *C.payidem_error
	rc := C.payidem_verifier_new_with_replay_store(C.uint64_t(window/time.Second), C.size_t(capacity), args.ptr(store), &ptr, &cerr)
	if rc != C.PAYIDEM_OK {
		return nil, newError(rc, cerr, nil)
	}
	v := &Verifier{ptr: ptr, MaxBodyBytes: 1 << 20}
	track(v, (*Verifier).Close)
	ids := make([]string, 0, len(keys))
	for id := range keys {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if err := v.AddKey(id, keys[id]...); err != nil {
			v.Close()
			return nil, err
		}
	}
	return v, nil
}

// Close waits for running verifications and wipes the secrets; later calls
// fail with ErrClosed. Calling it again does nothing.
func (v *Verifier) Close() error {
	release(&v.mu, &v.ptr, v, func(h *C.payidem_verifier) { C.payidem_verifier_free(h) })
	return nil
}

// AddKey adds a key id with its active secrets (each 16..=1024 bytes).
func (v *Verifier) AddKey(keyID string, secrets ...[]byte) error {
	return v.keyCall(keyID, secrets, false)
}

// SetSecrets replaces the active secrets of a key id already added
// (rotation), keeping its nonce cache.
func (v *Verifier) SetSecrets(keyID string, secrets ...[]byte) error {
	return v.keyCall(keyID, secrets, true)
}

func (v *Verifier) keyCall(keyID string, secrets [][]byte, replace bool) error {
	var args cstrings
	k, err := args.add("key_id", keyID)
	if err != nil {
		return err
	}
	count := len(secrets)
	if count == 0 {
		// Valid arrays of length 0, so that the library names "secrets".
		secrets = [][]byte{{}}
	}
	cs := newCSecrets(secrets)
	defer cs.free()
	return v.call(func(h *C.payidem_verifier, cerr **C.payidem_error) C.payidem_result {
		if replace {
			return C.payidem_verifier_set_secrets(h, args.ptr(k), cs.ptrs, cs.lens, C.size_t(count), cerr)
		}
		return C.payidem_verifier_add_key(h, args.ptr(k), cs.ptrs, cs.lens, C.size_t(count), cerr)
	})
}

// RemoveKey removes a key id: its secrets are wiped and its nonce memory
// freed; requests signed with it then fail with ErrUnknownAPIKey.
func (v *Verifier) RemoveKey(keyID string) error {
	var args cstrings
	k, err := args.add("key_id", keyID)
	if err != nil {
		return err
	}
	return v.call(func(h *C.payidem_verifier, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_verifier_remove_key(h, args.ptr(k), cerr)
	})
}

// SetNonceCapacityTotal sets the verifier-wide limit of nonces held across
// every key id (a memory cap: 28 to 57 bytes a nonce, 33.6 measured; 16,000,000 by
// default). Past it verification fails closed with ErrReplayCacheFull (503)
// until some expire.
func (v *Verifier) SetNonceCapacityTotal(total int) error {
	if total <= 0 {
		return invalid("nonce_capacity_total", "must be above 0")
	}
	return v.call(func(h *C.payidem_verifier, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_verifier_set_nonce_capacity_total(h, C.size_t(total), cerr)
	})
}

// requestTarget is the request target as sent: the raw one a server
// received, else the URL's.
func requestTarget(r *http.Request) string {
	if r.RequestURI != "" {
		return r.RequestURI
	}
	if r.URL != nil {
		return r.URL.RequestURI()
	}
	return ""
}

// Verify checks r, whose body is body, at the server clock now. On failure
// the *Error's Code and HTTPStatus are the protocol's answer (ServerTime is
// set for timestamp_out_of_window), and RefusalFor(err) is the whole answer
// to send. VerifyRequest also returns what it verified.
func (v *Verifier) Verify(r *http.Request, body []byte, now time.Time) error {
	_, err := v.VerifyRequest(r, body, now)
	return err
}

// VerifyRequest checks r like Verify and returns what it verified: act on
// its key id and idempotency key rather than on r's headers.
func (v *Verifier) VerifyRequest(r *http.Request, body []byte, now time.Time) (Verified, error) {
	if r == nil {
		return Verified{}, invalid("request", "must not be nil")
	}
	var args cstrings
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	m, err := args.add("method", method)
	if err != nil {
		return Verified{}, err
	}
	p, err := args.add("path", requestTarget(r))
	if err != nil {
		return Verified{}, err
	}
	headers, err := newCHeaders(r.Header)
	if err != nil {
		return Verified{}, err
	}
	defer headers.free()
	var out C.payidem_verified
	err = v.call(func(h *C.payidem_verifier, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_verifier_verify_into(h, args.ptr(m), args.ptr(p), headers.ptr,
			C.size_t(headers.count), bytesPtr(body), C.size_t(len(body)), unixOf(now), &out, nil, cerr)
	})
	if err != nil {
		return Verified{}, err
	}
	return Verified{
		KeyID:          C.GoString(&out.key_id[0]),
		IdempotencyKey: C.GoString(&out.idempotency_key[0]),
		Nonce:          C.GoString(&out.nonce[0]),
		Timestamp:      time.Unix(int64(out.timestamp), 0),
	}, nil
}

// Middleware verifies every request before next sees it. A failure is
// answered with the refusal the library's core builds for it (RefusalFor:
// the protocol's status, Content-Type, X-Server-Time and Date for
// timestamp_out_of_window, and the body {"error":{"code","message"}}), the
// same bytes as the mock platform's; a body over MaxBodyBytes is refused
// 413 payload_too_large. A verified request reaches next with its body
// restored and what was verified in its context (VerifiedFromContext).
func (v *Verifier) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		if v.Clock != nil {
			now = v.Clock()
		}
		limit := v.MaxBodyBytes
		if limit <= 0 {
			limit = 1 << 20
		}
		body, err := readBody(r, limit)
		if errors.Is(err, errBodyTooLarge) {
			bodyTooLarge(limit).ServeHTTP(w, r)
			return
		}
		if err != nil {
			RefusalFor(invalid("body", "could not be read: "+err.Error())).ServeHTTP(w, r)
			return
		}
		verified, err := v.VerifyRequest(r, body, now)
		if err != nil {
			RefusalFor(err).ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), verifiedKey{}, verified)))
	})
}

var errBodyTooLarge = errors.New("payidem: body too large")

// readBody reads at most limit bytes of r's body and restores it; a larger
// body is errBodyTooLarge.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > limit {
		return nil, errBodyTooLarge
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return body, nil
}

// Refusal is the complete HTTP answer that refuses a request, as the
// library's core builds it: the same status, headers and body bytes as the
// mock platform, the C ABI and the Python middleware send. It is an
// http.Handler that writes exactly that answer.
type Refusal struct {
	// Status is the HTTP status (401, 409, 503, 400, 413; 500 for a failure
	// of the server itself).
	Status int
	// Code is the error code the body carries (a Code, or
	// "payload_too_large").
	Code Code
	// Header holds the headers to send: Content-Type, and X-Server-Time and
	// Date (the verifier's clock) for timestamp_out_of_window.
	Header http.Header
	// Body is the exact body, {"error":{"code":"...","message":"..."}}.
	Body []byte
}

// ServeHTTP writes the refusal on w: its headers (replacing any of the same
// name, so the Date is the verifier's clock when the refusal has one),
// Content-Length, the status and the body.
func (f *Refusal) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	for name, values := range f.Header {
		h[name] = append([]string(nil), values...)
	}
	h.Set("Content-Length", strconv.Itoa(len(f.Body)))
	w.WriteHeader(f.Status)
	w.Write(f.Body)
}

// RefusalFor is the answer to a request whose verification failed with err
// (from Verify or VerifyRequest). A verification code (VerificationCodes)
// is answered with its status and err's code and message, and
// timestamp_out_of_window with err's ServerTime (the current time when it
// has none) as X-Server-Time and Date. Any other error, also one that is
// no *Error such as ErrClosed, is a failure of the server: 500
// internal_error with a fixed message that shows nothing of it. nil gives
// nil.
func RefusalFor(err error) *Refusal {
	if err == nil {
		return nil
	}
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Code: CodeInternal, Message: err.Error()}
	}
	serverTime := e.ServerTime
	if serverTime.IsZero() {
		serverTime = time.Now()
	}
	number, known := resultNumber(e.Code)
	if !known {
		number = C.PAYIDEM_INTERNAL_ERROR
	}
	if f, ok := newRefusal(number, e.Message, serverTime); ok {
		return f
	}
	return internalRefusal()
}

// newRefusal asks the core for the refusal of an error with these parts.
func newRefusal(number uint32, message string, serverTime time.Time) (*Refusal, bool) {
	var args cstrings
	m, err := args.add("message", strings.ReplaceAll(message, "\x00", "\uFFFD"))
	if err != nil {
		return nil, false
	}
	var ref *C.payidem_refusal
	var cerr *C.payidem_error
	if C.payidem_refusal_new(C.uint32_t(number), args.ptr(m), unixOf(serverTime), &ref, &cerr) != C.PAYIDEM_OK {
		C.payidem_error_free(cerr)
		return nil, false
	}
	return refusalFromC(ref), true
}

// internalRefusal answers a failure of this binding itself: the core's 500
// internal_error, or a bare 500 if even the core cannot build one.
func internalRefusal() *Refusal {
	if f, ok := newRefusal(C.PAYIDEM_INTERNAL_ERROR, "", time.Now()); ok {
		return f
	}
	return &Refusal{Status: http.StatusInternalServerError, Code: CodeInternal, Header: make(http.Header)}
}

// VerificationCodes are the codes Verify fails with, in number order, as
// the linked library lists them: each has its own status in RefusalFor.
func VerificationCodes() []Code {
	var codes []Code
	for i := 0; ; i++ {
		number := uint32(C.payidem_refusal_verification_code_at(C.size_t(i)))
		if number == 0 {
			return codes
		}
		codes = append(codes, Code(ResultName(number)))
	}
}

var resultNumbers = sync.OnceValue(func() map[Code]uint32 {
	numbers := make(map[Code]uint32)
	for n := uint32(1); n < 256; n++ {
		if name := ResultName(n); name != "" {
			numbers[Code(name)] = n
		}
	}
	return numbers
})

// resultNumber is the C result number of code, as the linked library names
// it.
func resultNumber(code Code) (uint32, bool) {
	n, ok := resultNumbers()[code]
	return n, ok
}

// bodyTooLarge is the 413 refusal of a body over limit bytes.
func bodyTooLarge(limit int64) *Refusal {
	var ref *C.payidem_refusal
	var cerr *C.payidem_error
	if C.payidem_refusal_body_too_large(C.uint64_t(limit), &ref, &cerr) != C.PAYIDEM_OK {
		C.payidem_error_free(cerr)
		return internalRefusal()
	}
	return refusalFromC(ref)
}

// refusalFromC copies ref out and frees it.
func refusalFromC(ref *C.payidem_refusal) *Refusal {
	defer C.payidem_refusal_free(ref)
	f := &Refusal{
		Status: int(C.payidem_refusal_status(ref)),
		Code:   Code(goStringOrEmpty(C.payidem_refusal_code(ref))),
		Header: make(http.Header),
	}
	for i := 0; i < int(C.payidem_refusal_header_count(ref)); i++ {
		var name, value *C.char
		if C.payidem_refusal_header_at(ref, C.size_t(i), &name, &value, nil) == C.PAYIDEM_OK {
			f.Header.Add(C.GoString(name), C.GoString(value))
		}
	}
	var body *C.uint8_t
	var n C.size_t
	if C.payidem_refusal_body(ref, &body, &n) {
		f.Body = C.GoBytes(unsafe.Pointer(body), C.int(n))
	}
	return f
}
