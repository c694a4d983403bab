//go:build cgo

package payidem

/*
#include <stdlib.h>
#include "payidem.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unsafe"
)

// Code is one of payidem's stable error codes, spelled as in every binding
// and in the protocol's error bodies (e.g. "outcome_unknown").
type Code string

// The stable codes (their numbers are the linked library's:
// payidem_result_name; see codeByResult).
const (
	CodeInvalidArgument        Code = "invalid_argument"
	CodeIdempotencyConflict    Code = "idempotency_conflict"
	CodeRejected               Code = "rejected"
	CodeOutcomeUnknown         Code = "outcome_unknown"
	CodeKeyExpired             Code = "key_expired"
	CodeOperationBusy          Code = "operation_busy"
	CodeTransport              Code = "transport_error"
	CodeJournal                Code = "journal_error"
	CodeMissingSignature       Code = "missing_signature"
	CodeUnknownAPIKey          Code = "unknown_api_key"
	CodeTimestampOutOfWindow   Code = "timestamp_out_of_window"
	CodeInvalidSignature       Code = "invalid_signature"
	CodeNonceReused            Code = "nonce_reused"
	CodeReplayCacheFull        Code = "replay_cache_full"
	CodeIdempotencyKeyRequired Code = "idempotency_key_required"
	CodeInternal               Code = "internal_error"
	CodeCancelled              Code = "cancelled"
	CodeRefused                Code = "refused"
	CodeReplayStoreUnavailable Code = "replay_store_unavailable"
	// CodeBufferTooSmall exists only in the C ABI; seen from Go it is a bug
	// of this binding and matches ErrInternal.
	CodeBufferTooSmall Code = "buffer_too_small"
)

// sentinel is the type of the Err* values: errors.Is(err, ErrX) holds for
// every payidem error whose code is X.
type sentinel struct{ code Code }

func (s *sentinel) Error() string { return "payidem: " + string(s.code) }

// Sentinels, one per code, for errors.Is.
var (
	ErrInvalidArgument        error = &sentinel{CodeInvalidArgument}
	ErrIdempotencyConflict    error = &sentinel{CodeIdempotencyConflict}
	ErrRejected               error = &sentinel{CodeRejected}
	ErrOutcomeUnknown         error = &sentinel{CodeOutcomeUnknown}
	ErrKeyExpired             error = &sentinel{CodeKeyExpired}
	ErrOperationBusy          error = &sentinel{CodeOperationBusy}
	ErrTransport              error = &sentinel{CodeTransport}
	ErrJournal                error = &sentinel{CodeJournal}
	ErrMissingSignature       error = &sentinel{CodeMissingSignature}
	ErrUnknownAPIKey          error = &sentinel{CodeUnknownAPIKey}
	ErrTimestampOutOfWindow   error = &sentinel{CodeTimestampOutOfWindow}
	ErrInvalidSignature       error = &sentinel{CodeInvalidSignature}
	ErrNonceReused            error = &sentinel{CodeNonceReused}
	ErrReplayCacheFull        error = &sentinel{CodeReplayCacheFull}
	ErrIdempotencyKeyRequired error = &sentinel{CodeIdempotencyKeyRequired}
	ErrInternal               error = &sentinel{CodeInternal}
	ErrCancelled              error = &sentinel{CodeCancelled}
	// ErrRefused: the platform refused every attempt of the call before
	// its idempotency check (authentication, rate limit), so nothing
	// happened. Not final: the operation keeps its key and Execute or
	// Resume may still complete it. HTTPStatus and Body hold the last
	// answer.
	ErrRefused error = &sentinel{CodeRefused}
	// ErrReplayStoreUnavailable: a verifier's shared replay store (Redis)
	// could not claim the nonce (unreachable, timed out, out of memory, or
	// restarted after the request was signed), so verification failed
	// closed: answer 503 with Retry-After (RefusalFor does). Nothing was
	// accepted.
	ErrReplayStoreUnavailable error = &sentinel{CodeReplayStoreUnavailable}
)

// ErrClosed is returned by every call on a Client, Signer or Verifier after
// its Close.
var ErrClosed = errors.New("payidem: closed")

// resultInfo is the Go code and sentinel of one C result number.
type resultInfo struct {
	code     Code
	sentinel error
}

// codeByResult maps every payidem_result of the linked library (but
// PAYIDEM_OK) to its code and sentinel: the numbers and names are the
// library's (payidem_result_name reads the core's table), read once here.
var codeByResult = func() map[uint32]resultInfo {
	byCode := map[Code]error{}
	for _, s := range []error{
		ErrInvalidArgument, ErrIdempotencyConflict, ErrRejected, ErrOutcomeUnknown,
		ErrKeyExpired, ErrOperationBusy, ErrTransport, ErrJournal, ErrMissingSignature,
		ErrUnknownAPIKey, ErrTimestampOutOfWindow, ErrInvalidSignature, ErrNonceReused,
		ErrReplayCacheFull, ErrIdempotencyKeyRequired, ErrInternal, ErrCancelled,
		ErrRefused, ErrReplayStoreUnavailable,
	} {
		byCode[s.(*sentinel).code] = s
	}
	m := map[uint32]resultInfo{
		C.PAYIDEM_BUFFER_TOO_SMALL: {CodeBufferTooSmall, ErrInternal},
	}
	for n := uint32(1); n <= libraryMaxErrorCode(); n++ {
		code := Code(ResultName(n))
		if s, known := byCode[code]; known {
			m[n] = resultInfo{code, s}
		}
	}
	return m
}()

// Error is every failure payidem reports: a stable code, a message for
// people and the context the code calls for. It never holds a secret.
// errors.Is(err, ErrX) matches it by code; errors.As reaches it through
// RejectedError and InvalidArgumentError. When a call ended because its
// context was done, Unwrap gives the context's error as well.
type Error struct {
	// Code is the stable code.
	Code Code
	// Message explains the failure; for invalid_argument it names Field.
	Message string
	// Field names the invalid argument or option (invalid_argument only).
	Field string
	// HTTPStatus is the platform's status for an error that came with its
	// answer (rejected, refused, a conflict the platform answered), or the
	// status a verifier answers with for a request that failed
	// verification; 0 when none, which is every local error (an invalid
	// argument, a journal error: nothing was sent nor answered).
	HTTPStatus int
	// Body is the platform's response body for rejected, refused and
	// conflict.
	Body []byte
	// PlatformCode and PlatformMessage are the platform's error code (e.g.
	// "card_declined") and message of an answer in the protocol's error
	// body, read from Body by the core: bounded, control characters
	// escaped, safe to print. Empty when the error came with no such answer
	// (PlatformMessage also when the body had no message).
	PlatformCode    string
	PlatformMessage string
	// OrderID and IdempotencyKey name the operation the error concerns
	// (outcome_unknown, key_expired, cancelled, ...); empty otherwise.
	OrderID        string
	IdempotencyKey string
	// ServerTime is the verifier's clock for timestamp_out_of_window; zero
	// otherwise.
	ServerTime time.Time
	// Final: the operation this error ended is settled for good and never
	// sent again (rejected, idempotency_conflict, key_expired); false for
	// every other code, whose operation keeps its key and may still be
	// completed by Execute or Resume. From the linked library's table.
	Final bool

	sentinel error
	cause    error
}

func (e *Error) Error() string {
	msg := "payidem: " + string(e.Code)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.OrderID != "" {
		msg += fmt.Sprintf(" (order %s, key %s)", e.OrderID, e.IdempotencyKey)
	}
	if e.cause != nil {
		msg += ": " + e.cause.Error()
	}
	return msg
}

// Is reports whether target is the sentinel of e's code.
func (e *Error) Is(target error) bool {
	return target != nil && target == e.sentinel
}

// Unwrap gives the context error that ended the call, if any.
func (e *Error) Unwrap() error { return e.cause }

// RejectedError is a final refusal by the platform: its status and body.
// It unwraps to the *Error and matches ErrRejected.
type RejectedError struct {
	Status int
	Body   []byte
	Err    *Error
}

func (e *RejectedError) Error() string { return e.Err.Error() }

// Unwrap gives the underlying *Error.
func (e *RejectedError) Unwrap() error { return e.Err }

// InvalidArgumentError is an argument or option that broke its rule, named
// by Field. It unwraps to the *Error and matches ErrInvalidArgument.
type InvalidArgumentError struct {
	Field string
	Err   *Error
}

func (e *InvalidArgumentError) Error() string { return e.Err.Error() }

// Unwrap gives the underlying *Error.
func (e *InvalidArgumentError) Unwrap() error { return e.Err }

// typed wraps e in the most specific type its code has.
func typed(e *Error) error {
	switch e.Code {
	case CodeRejected:
		return &RejectedError{Status: e.HTTPStatus, Body: e.Body, Err: e}
	case CodeInvalidArgument:
		return &InvalidArgumentError{Field: e.Field, Err: e}
	}
	return e
}

// newError builds the Go error of a C result, copying everything out of
// cerr and freeing it. cause (may be nil) is the context error of the call.
func newError(rc C.payidem_result, cerr *C.payidem_error, cause error) error {
	defer C.payidem_error_free(cerr)
	return copyError(rc, cerr, cause)
}

// copyError builds the Go error of a C result, copying everything out of
// cerr (may be nil), which it leaves to its owner.
func copyError(rc C.payidem_result, cerr *C.payidem_error, cause error) error {
	info, known := codeByResult[uint32(rc)]
	if !known {
		info.code, info.sentinel = CodeInternal, ErrInternal
	}
	e := &Error{Code: info.code, sentinel: info.sentinel, cause: cause,
		Final: bool(C.payidem_result_is_final(C.uint32_t(rc)))}
	if !known {
		e.Message = fmt.Sprintf("unknown result code %d", uint32(rc))
	}
	if cerr != nil {
		e.Message = goStringOrEmpty(C.payidem_error_message(cerr))
		e.Field = goStringOrEmpty(C.payidem_error_field(cerr))
		e.HTTPStatus = int(C.payidem_error_http_status(cerr))
		e.PlatformCode = goStringOrEmpty(C.payidem_error_platform_code(cerr))
		e.PlatformMessage = goStringOrEmpty(C.payidem_error_platform_message(cerr))
		e.OrderID = goStringOrEmpty(C.payidem_error_order_id(cerr))
		e.IdempotencyKey = goStringOrEmpty(C.payidem_error_idempotency_key(cerr))
		var body *C.uint8_t
		var n C.size_t
		if C.payidem_error_body(cerr, &body, &n) {
			e.Body = C.GoBytes(unsafe.Pointer(body), C.int(n))
		}
		var st C.uint64_t
		if C.payidem_error_server_time(cerr, &st) {
			e.ServerTime = time.Unix(int64(st), 0).UTC()
		}
	}
	return typed(e)
}

// IsFinal reports whether err ended its operation for good: the operation
// is settled (rejected, idempotency_conflict, key_expired) and is never
// sent again. False for nil, for errors that are not payidem's, and for
// every other code: the operation keeps its key and Execute or Resume may
// still complete it.
func IsFinal(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Final
}

// invalid builds an invalid_argument error raised by the binding itself
// (e.g. a string holding a NUL byte, which C cannot receive).
func invalid(field, msg string) error {
	return typed(&Error{
		Code:     CodeInvalidArgument,
		Message:  field + " " + msg,
		Field:    field,
		sentinel: ErrInvalidArgument,
	})
}

// ResultName is the stable name the linked library gives a C result
// number ("ok", "invalid_argument", ..., "buffer_too_small"); "" for a
// number that is no code.
func ResultName(code uint32) string {
	return goStringOrEmpty(C.payidem_result_name(C.uint32_t(code)))
}

// libraryMaxErrorCode is the highest stable error code the linked library
// knows: codes 1 to it are every code of the core, without gaps.
func libraryMaxErrorCode() uint32 {
	return uint32(C.payidem_result_max_error_code())
}

// cancelledBy is the error of a call that ctx ended before it started (nil
// while ctx is live): it matches ErrCancelled and ctx.Err().
func cancelledBy(ctx context.Context) error {
	cause := ctx.Err()
	if cause == nil {
		return nil
	}
	return &Error{
		Code:     CodeCancelled,
		Message:  "the context was done before the call started",
		sentinel: ErrCancelled,
		cause:    cause,
	}
}

// errorOfResult is the error of a bare result number, as a call failing
// without error details would give.
func errorOfResult(rc uint32) error {
	return newError(C.payidem_result(rc), nil, nil)
}
