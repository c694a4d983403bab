//go:build cgo

package payidem

/*
#include <stdlib.h>
#include "payidem.h"
*/
import "C"

import (
	"net/http"
	"time"
)

// AttemptResult is one attempt's result as Decide reads it.
type AttemptResult struct {
	Outcome AttemptOutcome
	// Status, ErrorCode (the body's error.code, see ErrorCodeFromBody; ""
	// when none) and Headers of the response, for OutcomeResponse.
	Status    int
	ErrorCode string
	Headers   http.Header
}

// Decision is the protocol's answer to one attempt. Fields that do not
// apply to Kind are zero.
type Decision struct {
	Kind DecisionKind
	// Failure is the code of a DecisionFail.
	Failure Code
	// Replayed: the platform answered from its idempotency store (DecisionDone).
	Replayed bool
	// Landed: whether the operation may have taken effect, for every kind.
	// Anything but LandedNo means: keep the key. A DecisionFail with
	// LandedNo is a refusal before the idempotency step: nothing happened
	// (not final).
	Landed Landed
	// RetryAfter is the wait of a DecisionRetryAfter.
	RetryAfter time.Duration
	// ServerTime is the platform's clock of a DecisionAdjustClockRetry.
	ServerTime time.Time
}

// Decide applies the protocol's decision table (section 4) to one attempt
// of the operation's own request, for callers with their own HTTP stack.
// hasStatusPath tells whether the operation's status can be queried; now is
// the platform's clock (local time plus any offset learnt from it), which
// resolves a Retry-After date.
func Decide(result AttemptResult, hasStatusPath bool, now time.Time) (Decision, error) {
	return decideWith(result, now, func(code *C.char, headers cHeaders, unix C.uint64_t, out *C.payidem_decision, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_decide(C.uint32_t(result.Outcome), cStatus(result.Status), code,
			headers.ptr, C.size_t(headers.count), C.bool(hasStatusPath), unix, out, cerr)
	})
}

// DecideStatusQuery applies the status-query rules to one status query's
// result: a 2xx settles the operation with that answer (DecisionDone), 404
// means it did not land (DecisionSendOperation), clock and replay answers as
// for the operation, anything else is asked again after a backoff.
func DecideStatusQuery(result AttemptResult, now time.Time) (Decision, error) {
	return decideWith(result, now, func(code *C.char, headers cHeaders, unix C.uint64_t, out *C.payidem_decision, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_decide_status_query(C.uint32_t(result.Outcome), cStatus(result.Status), code,
			headers.ptr, C.size_t(headers.count), unix, out, cerr)
	})
}

// cStatus is status as the C ABI's uint16_t. A number that does not fit
// is no HTTP status either: it becomes 0, which the library's one status
// check (the core's, 100..=999) refuses with invalid_argument naming
// "status".
func cStatus(status int) C.uint16_t {
	if status < 0 || status > 0xFFFF {
		return 0
	}
	return C.uint16_t(status)
}

type decideFunc func(code *C.char, headers cHeaders, unix C.uint64_t, out *C.payidem_decision, cerr **C.payidem_error) C.payidem_result

func decideWith(result AttemptResult, now time.Time, call decideFunc) (Decision, error) {
	var args cstrings
	code, err := args.addOpt("error_code", result.ErrorCode)
	if err != nil {
		return Decision{}, err
	}
	headers, err := newCHeaders(result.Headers)
	if err != nil {
		return Decision{}, err
	}
	defer headers.free()
	var out C.payidem_decision
	if err := cResult(func(cerr **C.payidem_error) C.payidem_result {
		return call(args.ptr(code), headers, unixOf(now), &out, cerr)
	}); err != nil {
		return Decision{}, err
	}
	d := Decision{
		Kind:       DecisionKind(out.kind),
		Replayed:   bool(out.replayed),
		Landed:     Landed(out.landed),
		RetryAfter: time.Duration(out.seconds) * time.Second,
	}
	if out.failure != C.PAYIDEM_OK {
		if info, ok := codeByResult[uint32(out.failure)]; ok {
			d.Failure = info.code
		} else {
			d.Failure = CodeInternal
		}
	}
	if d.Kind == DecisionAdjustClockRetry {
		d.ServerTime = time.Unix(int64(out.server_time), 0).UTC()
	}
	return d, nil
}

// ErrorCodeFromBody is the error.code of a protocol error body
// ({"error":{"code":"..."}}); "" for a body that is no such JSON.
func ErrorCodeFromBody(body []byte) (string, error) {
	return readText(64, func(buf *C.char, n C.size_t, l *C.size_t, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_error_code_from_body(bytesPtr(body), C.size_t(len(body)), buf, n, l, cerr)
	})
}
