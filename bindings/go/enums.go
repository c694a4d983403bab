//go:build cgo

package payidem

/*
#include "payidem.h"
*/
import "C"

// The C ABI's enums; their String methods give the linked library's names
// (libraryName).

// AttemptOutcome is what one attempt produced, for Decide.
type AttemptOutcome int

// The attempt outcomes.
const (
	// OutcomeResponse: an HTTP response came back.
	OutcomeResponse AttemptOutcome = C.PAYIDEM_ATTEMPT_RESPONSE
	// OutcomeNotSent: the request was never sent (connection refused, DNS
	// or TLS failure): nothing reached the platform.
	OutcomeNotSent AttemptOutcome = C.PAYIDEM_ATTEMPT_NOT_SENT
	// OutcomeSentNoResponse: the request was or may have been sent and no
	// response came back (timeout, reset).
	OutcomeSentNoResponse AttemptOutcome = C.PAYIDEM_ATTEMPT_SENT_NO_RESPONSE
)

// DecisionKind is what to do after an attempt.
type DecisionKind int

// The decision kinds.
const (
	// DecisionDone: settled with this 2xx response (see Replayed).
	DecisionDone DecisionKind = C.PAYIDEM_DECISION_DONE
	// DecisionFail: fails for good; Failure is CodeIdempotencyConflict
	// (never retried, never re-keyed) or CodeRejected.
	DecisionFail DecisionKind = C.PAYIDEM_DECISION_FAIL
	// DecisionRetryNow: re-sign with a fresh nonce and timestamp, retry at once.
	DecisionRetryNow DecisionKind = C.PAYIDEM_DECISION_RETRY_NOW
	// DecisionRetryBackoff: retry after a full-jitter backoff (see Landed
	// for what to do if retries run out).
	DecisionRetryBackoff DecisionKind = C.PAYIDEM_DECISION_RETRY_BACKOFF
	// DecisionRetryAfter: retry after RetryAfter (the platform's Retry-After).
	DecisionRetryAfter DecisionKind = C.PAYIDEM_DECISION_RETRY_AFTER
	// DecisionAdjustClockRetry: take the clock offset from ServerTime and
	// retry once at once.
	DecisionAdjustClockRetry DecisionKind = C.PAYIDEM_DECISION_ADJUST_CLOCK_RETRY
	// DecisionQueryStatus: the outcome is unknown; query the status first.
	DecisionQueryStatus DecisionKind = C.PAYIDEM_DECISION_QUERY_STATUS
	// DecisionSendOperation (status queries only): the operation did not
	// land; send it again at once with the same key, unless its key is past
	// the platform's retention (then the outcome is key_expired).
	DecisionSendOperation DecisionKind = C.PAYIDEM_DECISION_SEND_OPERATION
)

// String is the linked library's name of the kind ("done", "fail",
// "retry_now", ...).
func (k DecisionKind) String() string {
	return libraryName(int(k), "decision", func(v C.uint32_t) *C.char { return C.payidem_decision_kind_name(v) })
}

// Landed tells whether an operation may have taken effect.
type Landed int

// The answers about landing.
const (
	// LandedNo: it did not (the answer came before the platform's
	// idempotency step, nothing was sent, or the key is held by another
	// request).
	LandedNo Landed = C.PAYIDEM_LANDED_NO
	// LandedMaybe: it may have. Keep the key, never re-key; if retries run
	// out the outcome is unknown, never "failed".
	LandedMaybe Landed = C.PAYIDEM_LANDED_MAYBE
	// LandedYes: it did (a 2xx, a final refusal the platform keeps, an
	// operation in progress).
	LandedYes Landed = C.PAYIDEM_LANDED_YES
)

// String is the linked library's name ("no", "maybe", "yes").
func (l Landed) String() string {
	return libraryName(int(l), "landed", func(v C.uint32_t) *C.char { return C.payidem_landed_name(v) })
}

// AttemptKind tells the operation's own request from a status query.
type AttemptKind int

// The attempt kinds.
const (
	AttemptOperation   AttemptKind = C.PAYIDEM_ATTEMPT_KIND_OPERATION
	AttemptStatusQuery AttemptKind = C.PAYIDEM_ATTEMPT_KIND_STATUS_QUERY
)

// String is the linked library's name of the kind ("operation",
// "status_query").
func (k AttemptKind) String() string {
	return libraryName(int(k), "kind", func(v C.uint32_t) *C.char { return C.payidem_attempt_kind_name(v) })
}

// NextAction is what the client does after an attempt.
type NextAction int

// The next actions.
const (
	NextSettle      NextAction = C.PAYIDEM_NEXT_SETTLE
	NextRetryNow    NextAction = C.PAYIDEM_NEXT_RETRY_NOW
	NextRetryLater  NextAction = C.PAYIDEM_NEXT_RETRY_LATER
	NextAdjustClock NextAction = C.PAYIDEM_NEXT_ADJUST_CLOCK
	NextQueryStatus NextAction = C.PAYIDEM_NEXT_QUERY_STATUS
	NextQueryLater  NextAction = C.PAYIDEM_NEXT_QUERY_LATER
	NextGiveUp      NextAction = C.PAYIDEM_NEXT_GIVE_UP
)

// String is the linked library's name of the action ("settle",
// "retry_now", ...).
func (n NextAction) String() string {
	return libraryName(int(n), "next", func(v C.uint32_t) *C.char { return C.payidem_next_action_name(v) })
}

// State is where an operation stands in the journal.
type State int

// The journal states.
const (
	StateNotFound  State = C.PAYIDEM_STATE_NOT_FOUND
	StatePending   State = C.PAYIDEM_STATE_PENDING
	StateInFlight  State = C.PAYIDEM_STATE_IN_FLIGHT
	StateUnknown   State = C.PAYIDEM_STATE_UNKNOWN
	StateSucceeded State = C.PAYIDEM_STATE_SUCCEEDED
	StateRejected  State = C.PAYIDEM_STATE_REJECTED
	StateConflict  State = C.PAYIDEM_STATE_CONFLICT
)

// String is the linked library's name of the state ("pending",
// "in_flight", ...; journals store these names), "not_found" for
// StateNotFound.
func (s State) String() string {
	if s == StateNotFound {
		return "not_found"
	}
	return libraryName(int(s), "state", func(v C.uint32_t) *C.char { return C.payidem_operation_state_name(v) })
}

// StepKind tells what a Step asks the caller to do.
type StepKind int

// The step kinds (the C ABI's payidem_step_type).
const (
	// StepPersist: record the coming attempt durably, then confirm with
	// Machine.Persisted (pure machine only: a Call records it itself).
	StepPersist StepKind = C.PAYIDEM_STEP_PERSIST
	// StepSend: send Step.Send, then report what happened.
	StepSend StepKind = C.PAYIDEM_STEP_SEND
	// StepWait: sleep Step.Wait (or less, to check for cancellation), then
	// ask for the next step.
	StepWait StepKind = C.PAYIDEM_STEP_WAIT
	// StepEnd: the call is over; Step.End says how.
	StepEnd StepKind = C.PAYIDEM_STEP_END
)

// String is the linked library's name of the kind (persist, send, wait,
// end).
func (k StepKind) String() string {
	return libraryName(int(k), "step", func(v C.uint32_t) *C.char { return C.payidem_step_type_name(v) })
}
