//go:build cgo

package payidem

/*
#cgo noescape payidem_signer_sign_into
#cgo nocallback payidem_signer_sign_into
#include <stdlib.h>
#include "payidem.h"
*/
import "C"

import (
	"bytes"
	"encoding/hex"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// Header names of a signed attempt.
const (
	HeaderAPIKey         = "X-Api-Key"
	HeaderTimestamp      = "X-Timestamp"
	HeaderNonce          = "X-Nonce"
	HeaderSignature      = "X-Signature"
	HeaderIdempotencyKey = "Idempotency-Key"
)

// Signer signs attempts with one key id and secret, for callers that keep
// their own HTTP stack. The secret lives only inside the library, wiped on
// Close. Safe for concurrent use.
type Signer struct {
	mu  sync.RWMutex
	ptr *C.payidem_signer
}

// SignedHeaders are the header values of one signed attempt.
// IdempotencyKey is "" for a request without one (then it has four headers).
type SignedHeaders struct {
	APIKey         string
	Timestamp      string
	Nonce          string
	Signature      string
	IdempotencyKey string
}

// SetOn sets the attempt's headers on h, replacing earlier values.
func (s SignedHeaders) SetOn(h http.Header) {
	h[HeaderAPIKey] = []string{s.APIKey}
	h[HeaderTimestamp] = []string{s.Timestamp}
	h[HeaderNonce] = []string{s.Nonce}
	h[HeaderSignature] = []string{s.Signature}
	if s.IdempotencyKey != "" {
		h[HeaderIdempotencyKey] = []string{s.IdempotencyKey}
	}
}

// NewSigner creates a signer for keyID (1..=128 of [A-Za-z0-9._:-]) and a
// secret of 16..=1024 bytes (copied; the caller may wipe its slice).
func NewSigner(keyID string, secret []byte) (*Signer, error) {
	var args cstrings
	k, err := args.add("key_id", keyID)
	if err != nil {
		return nil, err
	}
	var ptr *C.payidem_signer
	if err := cResult(func(cerr **C.payidem_error) C.payidem_result {
		return C.payidem_signer_new(args.ptr(k), secretPtr(secret), C.size_t(len(secret)), &ptr, cerr)
	}); err != nil {
		return nil, err
	}
	s := &Signer{ptr: ptr}
	track(s, (*Signer).Close)
	return s, nil
}

// Close waits for running calls and wipes the secret; later calls fail with
// ErrClosed. Calling it again does nothing.
func (s *Signer) Close() error {
	release(&s.mu, &s.ptr, s, func(h *C.payidem_signer) { C.payidem_signer_free(h) })
	return nil
}

// Sign signs one attempt now with a fresh random nonce and returns its
// headers. idempotencyKey is "" for a request without one (a POST needs one).
func (s *Signer) Sign(method, path, idempotencyKey string, body []byte) (http.Header, error) {
	return s.SignAt(time.Now(), method, path, idempotencyKey, body)
}

// SignAt is Sign at the given time (any clock offset already applied).
func (s *Signer) SignAt(t time.Time, method, path, idempotencyKey string, body []byte) (http.Header, error) {
	return headerOf(s.SignAttempt(t, method, path, idempotencyKey, body))
}

// headerOf is signed's headers as an http.Header (nil with err).
func headerOf(signed SignedHeaders, err error) (http.Header, error) {
	if err != nil {
		return nil, err
	}
	h := make(http.Header, 5)
	signed.SetOn(h)
	return h, nil
}

// smallArgs is the size of the stack buffer for the string arguments of a
// signature; longer arguments use the heap.
const smallArgs = 384

// SignAttempt signs one attempt at t with a fresh random nonce and returns
// the header values: the cheapest way to sign.
func (s *Signer) SignAttempt(t time.Time, method, path, idempotencyKey string, body []byte) (SignedHeaders, error) {
	ts := t.Unix()
	if ts < 0 {
		return SignedHeaders{}, invalid("timestamp", "must not be before 1970")
	}
	if strings.IndexByte(method, 0) >= 0 {
		return SignedHeaders{}, invalid("method", "contains a NUL byte")
	}
	if strings.IndexByte(path, 0) >= 0 {
		return SignedHeaders{}, invalid("path", "contains a NUL byte")
	}
	if strings.IndexByte(idempotencyKey, 0) >= 0 {
		return SignedHeaders{}, invalid("idempotency_key", "contains a NUL byte")
	}
	var small [smallArgs]byte
	buf := small[:0]
	if need := len(method) + len(path) + len(idempotencyKey) + 3; need > smallArgs {
		buf = make([]byte, 0, need)
	}
	buf = append(append(buf, method...), 0)
	buf = append(append(buf, path...), 0)
	buf = append(append(buf, idempotencyKey...), 0)
	m := (*C.char)(unsafe.Pointer(&buf[0]))
	p := (*C.char)(unsafe.Pointer(&buf[len(method)+1]))
	k := (*C.char)(unsafe.Pointer(&buf[len(method)+len(path)+2]))

	// By hand rather than through s.call: a closure would move out and
	// cerr to the heap, one more allocation on the hottest path.
	var out C.payidem_signed_headers
	var cerr *C.payidem_error
	s.mu.RLock()
	if s.ptr == nil {
		s.mu.RUnlock()
		return SignedHeaders{}, ErrClosed
	}
	rc := C.payidem_signer_sign_into(s.ptr, m, p, k, bytesPtr(body), C.size_t(len(body)),
		C.uint64_t(ts), &out, &cerr)
	s.mu.RUnlock()
	runtime.KeepAlive(s)
	if rc != C.PAYIDEM_OK {
		return SignedHeaders{}, newError(rc, cerr, nil)
	}
	return signedFromC(&out), nil
}

// cField is a NUL-terminated char array of a C struct as Go bytes.
func cField(p *C.char, size int) []byte {
	b := unsafe.Slice((*byte)(unsafe.Pointer(p)), size)
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// signedFromC copies the five values into one Go string and slices it.
func signedFromC(h *C.payidem_signed_headers) SignedHeaders {
	fields := [5][]byte{
		cField(&h.api_key[0], len(h.api_key)),
		cField(&h.timestamp[0], len(h.timestamp)),
		cField(&h.nonce[0], len(h.nonce)),
		cField(&h.signature[0], len(h.signature)),
		cField(&h.idempotency_key[0], len(h.idempotency_key)),
	}
	total := 0
	for _, f := range fields {
		total += len(f)
	}
	all := make([]byte, 0, total)
	var ends [5]int
	for i, f := range fields {
		all = append(all, f...)
		ends[i] = len(all)
	}
	str := unsafe.String(unsafe.SliceData(all), total)
	return SignedHeaders{
		APIKey:         str[:ends[0]],
		Timestamp:      str[ends[0]:ends[1]],
		Nonce:          str[ends[1]:ends[2]],
		Signature:      str[ends[2]:ends[3]],
		IdempotencyKey: str[ends[3]:ends[4]],
	}
}

// SignRequest signs r in place for teams that keep net/http: it reads the
// body (and restores it, with GetBody, for the transport), signs method,
// the request target r.URL.RequestURI() and the body now, and sets the
// headers. The idempotency key comes from r's Idempotency-Key header, if
// any. Sign again for every retry: a signature is good for one attempt.
func (s *Signer) SignRequest(r *http.Request) error {
	if r == nil || r.URL == nil {
		return invalid("request", "must be a request with a URL")
	}
	body, err := readAndRestoreBody(r)
	if err != nil {
		return err
	}
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	signed, err := s.SignAttempt(time.Now(), method, r.URL.RequestURI(), r.Header.Get(HeaderIdempotencyKey), body)
	if err != nil {
		return err
	}
	if r.Header == nil {
		r.Header = make(http.Header, 5)
	}
	signed.SetOn(r.Header)
	return nil
}

// readAndRestoreBody reads r's whole body and puts an identical one back.
func readAndRestoreBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(r.Body)
	closeErr := r.Body.Close()
	if err != nil {
		return nil, invalid("body", "could not be read: "+err.Error())
	}
	if closeErr != nil {
		return nil, invalid("body", "could not be closed: "+closeErr.Error())
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	return body, nil
}

// SignParts signs explicit canonical parts, each as it goes on the wire
// (timestamp as decimal text, nonce a lower-case UUID v4), for conformance
// tests and replays of recorded traffic; production code uses Sign, whose
// nonce is fresh. Returns the 64-hex-digit signature.
func (s *Signer) SignParts(method, path, timestamp, nonce, idempotencyKey string, body []byte) (string, error) {
	var args cstrings
	offs, err := args.addParts(method, path, timestamp, nonce, idempotencyKey)
	if err != nil {
		return "", err
	}
	var sig [C.PAYIDEM_SIGNATURE_BUF_LEN]byte
	if err := s.call(func(h *C.payidem_signer, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_signer_sign_parts(h, args.ptr(offs[0]), args.ptr(offs[1]), args.ptr(offs[2]),
			args.ptr(offs[3]), args.ptr(offs[4]), bytesPtr(body), C.size_t(len(body)),
			(*C.char)(unsafe.Pointer(&sig[0])), C.size_t(len(sig)), cerr)
	}); err != nil {
		return "", err
	}
	return string(sig[:len(sig)-1]), nil
}

// CanonicalString is the string an attempt's signature covers:
// method, path, timestamp, nonce, idempotency key and the body's SHA-256 in
// hex, joined by newlines. Every part is checked first.
func CanonicalString(method, path, timestamp, nonce, idempotencyKey string, body []byte) (string, error) {
	var args cstrings
	offs, err := args.addParts(method, path, timestamp, nonce, idempotencyKey)
	if err != nil {
		return "", err
	}
	return readText(256+len(path)+len(idempotencyKey), func(buf *C.char, n C.size_t, l *C.size_t, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_canonical_string(args.ptr(offs[0]), args.ptr(offs[1]), args.ptr(offs[2]),
			args.ptr(offs[3]), args.ptr(offs[4]), bytesPtr(body), C.size_t(len(body)), buf, n, l, cerr)
	})
}

// BodySHA256Hex is the body's SHA-256 as 64 lower-case hex digits.
func BodySHA256Hex(body []byte) (string, error) {
	var out [C.PAYIDEM_SHA256_HEX_BUF_LEN]byte
	var cerr *C.payidem_error
	rc := C.payidem_body_sha256_hex(bytesPtr(body), C.size_t(len(body)),
		(*C.char)(unsafe.Pointer(&out[0])), C.size_t(len(out)), &cerr)
	if rc != C.PAYIDEM_OK {
		return "", newError(rc, cerr, nil)
	}
	return string(out[:len(out)-1]), nil
}

// DeriveJournalKey is the journal key a client derives from the API secret
// when Config.JournalKey is nil (32 bytes; a secret itself, never log it). A
// journal is sealed under its key: after the API secret is rotated, a journal
// created under the old one opens only with
// Config.JournalKey = DeriveJournalKey(oldSecret). An *Error with
// CodeInvalidArgument naming "secret" when it is not 16..=1024 bytes.
func DeriveJournalKey(secret []byte) ([]byte, error) {
	var out [65]byte
	var cerr *C.payidem_error
	rc := C.payidem_journal_key_derive(bytesPtr(secret), C.size_t(len(secret)),
		(*C.char)(unsafe.Pointer(&out[0])), C.size_t(len(out)), nil, &cerr)
	if rc != C.PAYIDEM_OK {
		return nil, newError(rc, cerr, nil)
	}
	return hex.DecodeString(string(out[:64]))
}
