//go:build cgo

package payidem

/*
#include <stdlib.h>
#include "payidem.h"
*/
import "C"

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"
)

// Step is what the operation machine asks for next. Only the field of Kind
// is set: Persist for StepPersist, Send for StepSend, Wait for StepWait,
// End for StepEnd.
type Step struct {
	Kind    StepKind
	Persist PersistStep
	Send    *Attempt
	Wait    time.Duration
	End     *End
}

// PersistStep is the record to make before the next attempt of the
// operation's own request: no attempt leaves before its record.
type PersistStep struct {
	// Attempt is the number the coming attempt will carry (attempts so far
	// plus one); the record marks the operation in flight with it.
	Attempt int
	// First: no attempt of the operation was ever sent, so this record must
	// be durable (fsync'd, committed) before anything leaves.
	First bool
}

// Attempt is one signed request to send now, exactly as given: a fresh
// nonce and signature every time, the operation's one key and body.
type Attempt struct {
	// Kind tells the operation's own request from a status query.
	Kind AttemptKind
	// Number counts every attempt of the operation over all its calls (1
	// for the first ever).
	Number int
	// Method and Path (the request target, with its query) of the request.
	// A Call's Path carries the client's base URL prefix: send it to
	// Client.URL(Path).
	Method string
	Path   string
	// Header holds the signature headers (and Idempotency-Key for the
	// operation); send them unchanged.
	Header http.Header
	// Body is sent byte for byte (empty for a status query).
	Body []byte
	// Timeout is the most the whole exchange may take (a Call's step only;
	// zero from a Machine, whose caller chooses).
	Timeout time.Duration
}

// End is how a call driving an operation ended.
type End struct {
	// Name is the library's name of the end: succeeded, rejected, conflict,
	// refused, not_sent, unknown or key_expired; "" (and State
	// StateNotFound) when a Call stopped on a journal error before the
	// machine ended (Err is then ErrJournal).
	Name string
	// Final: the operation is settled for good and is never sent again
	// (succeeded, rejected, conflict, key_expired). Otherwise the same key
	// may still complete it (Execute, Resume, another Begin).
	Final bool
	// Landed tells whether the operation may have taken effect.
	Landed Landed
	// State is where the end leaves the operation in the journal.
	State State
	// Outcome is the settled answer when the end succeeded (Err is nil).
	Outcome *Outcome
	// Err is the caller's error otherwise; its code alone says whether it
	// is final (IsFinal): ErrRejected and ErrIdempotencyConflict (with the
	// platform's status and body), ErrKeyExpired, ErrRefused (status and
	// body; nothing happened), ErrOutcomeUnknown (resumable), ErrTransport
	// (nothing reached the platform), ErrCancelled (a Call's Cancel),
	// ErrJournal. It carries the order id and key.
	Err error
}

// Reply is what one attempt produced, as the caller saw it.
type Reply struct {
	// Outcome: OutcomeResponse (Status, Header, Body are the answer),
	// OutcomeNotSent (nothing reached the platform: DNS, connect, TLS
	// handshake) or OutcomeSentNoResponse (the request was or may have
	// been sent and no complete answer came: timeout, reset, a body cut
	// short).
	Outcome AttemptOutcome
	Status  int
	Header  http.Header
	Body    []byte
	// Reason says what went wrong, for people (not-sent and no-response).
	Reason string
}

// Reaction is the machine's reaction to one reply, for logs and tests.
type Reaction struct {
	// Next is what comes next.
	Next NextAction
	// Wait is the pause before the next attempt (0 when none).
	Wait time.Duration
	// Status is the answer's HTTP status (0 when no response came).
	Status int
	// Landed: whether the operation may have taken effect, over every
	// attempt so far.
	Landed Landed
}

// MachineSetup bounds one call of a Machine. A zero field is absent: it
// takes the library's default, the one a Client has (see DefaultConfig);
// every other value is passed as given and checked by the library alone
// (core/src/settings; a negative duration is ErrInvalidArgument naming
// e.g. setup.backoff_base_ms). The clock offset defaults to 0 and trusted,
// and there is no retry budget unless RetryBudget is set.
type MachineSetup struct {
	MaxAttempts    int
	BackoffBase    time.Duration
	BackoffCap     time.Duration
	Deadline       time.Duration
	KeyRetention   time.Duration // whole seconds, at most 48h
	MaxClockOffset time.Duration // whole seconds
	// ClockOffset is the platform's clock minus the local clock learnt so
	// far (whole seconds; may be negative).
	ClockOffset time.Duration
	// ClockUntrusted: clock answers are not believed (plain http to a host
	// that is not loopback, where anyone on the path could move the clock).
	ClockUntrusted bool
	// RetryBudget for this call; nil for none. Every field is used as given.
	RetryBudget *RetryBudget
	// ZeroSettings names the numeric fields above ("MaxAttempts",
	// "BackoffBase", "BackoffCap", "Deadline", "KeyRetention",
	// "MaxClockOffset") whose zero value is an explicit 0 for the library
	// rather than "not set", as Config.ZeroSettings does for a client: a
	// zero BackoffBase retries without waiting, a zero MaxAttempts is
	// ErrInvalidArgument naming setup.max_attempts. A named field that is
	// not zero keeps its value; a name that is none of these is
	// ErrInvalidArgument naming "ZeroSettings".
	ZeroSettings []string
}

// machineSettingOfField is, for each numeric MachineSetup field, its
// setting in the start document.
var machineSettingOfField = map[string]string{
	"MaxAttempts":    "setup.max_attempts",
	"BackoffBase":    "setup.backoff_base_ms",
	"BackoffCap":     "setup.backoff_cap_ms",
	"Deadline":       "setup.deadline_ms",
	"KeyRetention":   "setup.key_retention_secs",
	"MaxClockOffset": "setup.max_clock_offset_secs",
}

// MachineStart is what a Machine starts from: the operation, what the
// caller's own journal knows of it, the call's limits and the time.
type MachineStart struct {
	// Operation as frozen when first prepared (every field is checked).
	Operation Operation
	// State and Attempts are the journal's record; StateNotFound (the zero
	// value) is a new operation, started as StatePending.
	State    State
	Attempts int
	// CreatedAt is when the operation was first prepared (the key's age
	// counts from it); zero means Now.
	CreatedAt time.Time
	// FirstRecorded says the journal recorded the first attempt as it
	// opened the operation (State StateInFlight, Attempts 1) and it was not
	// sent: it is sent without a first persist step, and a call that ends
	// before sending it asks for a persist of 0 attempts before its end.
	FirstRecorded bool
	Setup         MachineSetup
	// Now is the local wall clock; zero means time.Now().
	Now time.Time
}

// Machine is payidem's operation state machine with no journal, clock or
// network of its own, for callers that keep their own journal and HTTP
// stack: every protocol rule (retries, status queries, clock offset,
// key retention, budget) is in the machine; the caller persists, sends,
// waits and reports as its steps say. Deterministic given the times it is
// told. Safe for concurrent use (calls are serialized), but a machine
// drives one call: poll, act, report, poll again. Close it when done; a
// finalizer closes a forgotten one.
type Machine struct {
	mu  sync.Mutex
	ptr *C.payidem_operation
}

// startOperation is the "operation" object of the start document (and of
// the shared operation vectors): the body as text when it is UTF-8, else
// as base64; "" is an absent key or status path.
type startOperation struct {
	OrderID        string  `json:"order_id"`
	Method         string  `json:"method"`
	Path           string  `json:"path"`
	Body           *string `json:"body,omitempty"`
	BodyBase64     []byte  `json:"body_base64,omitempty"`
	IdempotencyKey string  `json:"idempotency_key,omitempty"`
	StatusPath     string  `json:"status_path,omitempty"`
}

// startJSON is the document payidem_operation_new reads.
type startJSON struct {
	Operation startOperation `json:"operation"`
	Progress  struct {
		State         string `json:"state"`
		Attempts      int    `json:"attempts"`
		CreatedAt     int64  `json:"created_at"`
		FirstRecorded bool   `json:"first_recorded"`
	} `json:"progress"`
	// A nil setting is absent (the library's default); every other value
	// is passed as given and checked by the library alone.
	Setup struct {
		MaxAttempts        *int64         `json:"max_attempts,omitempty"`
		BackoffBaseMS      *int64         `json:"backoff_base_ms,omitempty"`
		BackoffCapMS       *int64         `json:"backoff_cap_ms,omitempty"`
		DeadlineMS         *int64         `json:"deadline_ms,omitempty"`
		KeyRetentionSecs   *int64         `json:"key_retention_secs,omitempty"`
		MaxClockOffsetSecs *int64         `json:"max_clock_offset_secs,omitempty"`
		ClockOffset        int64          `json:"clock_offset"`
		ClockTrusted       bool           `json:"clock_trusted"`
		RetryBudget        *budgetOptions `json:"retry_budget"`
	} `json:"setup"`
	Now int64 `json:"now"`
}

// NewMachine starts the machine for one call of an operation. Bad input is
// an *InvalidArgumentError naming the setting of the start document
// (operation.order_id, progress.state, setup.max_attempts, now, ...).
func NewMachine(start MachineStart) (*Machine, error) {
	var args cstrings
	off, err := args.addJSON("start_json", start.json)
	if err != nil {
		return nil, err
	}
	var ptr *C.payidem_operation
	if err := cResult(func(cerr **C.payidem_error) C.payidem_result {
		return C.payidem_operation_new(args.ptr(off), &ptr, cerr)
	}); err != nil {
		return nil, err
	}
	m := &Machine{ptr: ptr}
	track(m, (*Machine).Close)
	return m, nil
}

func (s MachineStart) json() ([]byte, error) {
	var d startJSON
	op := s.Operation
	d.Operation.OrderID, d.Operation.Method, d.Operation.Path = op.OrderID, op.Method, op.Path
	d.Operation.IdempotencyKey, d.Operation.StatusPath = op.IdempotencyKey, op.StatusPath
	if utf8.Valid(op.Body) {
		text := string(op.Body)
		d.Operation.Body = &text
	} else {
		d.Operation.BodyBase64 = op.Body
	}
	now := s.Now
	if now.IsZero() {
		now = time.Now()
	}
	created := s.CreatedAt
	if created.IsZero() {
		created = now
	}
	state := s.State
	if state == StateNotFound {
		state = StatePending
	}
	d.Progress.State, d.Progress.Attempts, d.Progress.CreatedAt = state.String(), s.Attempts, created.Unix()
	d.Progress.FirstRecorded = s.FirstRecorded
	d.Now = now.Unix()
	set := s.Setup
	d.Setup.MaxAttempts = setting(set.MaxAttempts)
	d.Setup.BackoffBaseMS = units(set.BackoffBase, time.Millisecond)
	d.Setup.BackoffCapMS = units(set.BackoffCap, time.Millisecond)
	d.Setup.DeadlineMS = units(set.Deadline, time.Millisecond)
	d.Setup.KeyRetentionSecs = units(set.KeyRetention, time.Second)
	d.Setup.MaxClockOffsetSecs = units(set.MaxClockOffset, time.Second)
	d.Setup.ClockOffset = int64(set.ClockOffset / time.Second)
	d.Setup.ClockTrusted = !set.ClockUntrusted
	d.Setup.RetryBudget = set.RetryBudget.written()
	doc, err := json.Marshal(&d)
	if err != nil || len(set.ZeroSettings) == 0 {
		return doc, err
	}
	return withZeros(doc, set.ZeroSettings, "MachineSetup", func(name string) string {
		return machineSettingOfField[name]
	})
}

// Close frees the machine; later calls fail with ErrClosed. Calling it
// again does nothing.
func (m *Machine) Close() error {
	release(&m.mu, &m.ptr, m, func(h *C.payidem_operation) { C.payidem_operation_free(h) })
	return nil
}

// unixOf is t in Unix seconds, clamped at 0.
func unixOf(t time.Time) C.uint64_t {
	if u := t.Unix(); u > 0 {
		return C.uint64_t(u)
	}
	return 0
}

// msOf is d in whole milliseconds (rounded down), clamped at 0.
func msOf(d time.Duration) C.uint64_t {
	if d <= 0 {
		return 0
	}
	return C.uint64_t(d / time.Millisecond)
}

// Poll gives the next step at wall time now, elapsed into the call (the
// call's deadline counts from its start), signing attempts with s. A
// StepPersist must be confirmed with Persisted before the machine hands out
// the attempt; a StepSend must be answered with Handle before polling again
// (polling instead ends the call: the attempt's outcome is unknown).
func (m *Machine) Poll(s *Signer, now time.Time, elapsed time.Duration) (Step, error) {
	if s == nil {
		return Step{}, invalid("signer", "must not be nil")
	}
	var step *C.payidem_step
	if err := m.use(func(mh *C.payidem_operation) error {
		return s.call(func(sh *C.payidem_signer, cerr **C.payidem_error) C.payidem_result {
			return C.payidem_operation_poll(mh, sh, unixOf(now), msOf(elapsed), &step, cerr)
		})
	}); err != nil {
		return Step{}, err
	}
	return takeStep(step, nil), nil
}

// Persisted confirms that the record a StepPersist asked for is made.
func (m *Machine) Persisted() error {
	return m.call(func(h *C.payidem_operation, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_operation_persisted(h, cerr)
	})
}

// Handle tells the machine what the attempt of the last StepSend produced,
// at wall time now and elapsed into the call, and returns its reaction. A
// response's Idempotent-Replayed: true header marks it replayed.
func (m *Machine) Handle(r Reply, now time.Time, elapsed time.Duration) (Reaction, error) {
	var out C.payidem_reaction
	err := m.use(func(h *C.payidem_operation) error {
		return withReply(r, func(a replyArgs, cerr **C.payidem_error) C.payidem_result {
			return C.payidem_operation_handle(h, a.outcome, a.status, a.headers.ptr,
				C.size_t(a.headers.count), a.body, a.bodyLen, a.reason,
				unixOf(now), msOf(elapsed), &out, cerr)
		})
	})
	if err != nil {
		return Reaction{}, err
	}
	return Reaction{
		Next:   NextAction(out.next),
		Wait:   time.Duration(out.wait_ms) * time.Millisecond,
		Status: int(out.status),
		Landed: Landed(out.landed),
	}, nil
}

// Abandon ends the call at the caller's request (a cancel, a shutdown) and
// returns its end: unknown when an attempt may have left without an answer,
// not_sent when nothing did, or the end the machine had already reached.
func (m *Machine) Abandon(reason string) (*End, error) {
	var args cstrings
	off, err := args.add("reason", reason)
	if err != nil {
		return nil, err
	}
	var step *C.payidem_step
	if err := m.call(func(h *C.payidem_operation, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_operation_abandon(h, args.ptr(off), &step, cerr)
	}); err != nil {
		return nil, err
	}
	s := takeStep(step, nil)
	if s.End == nil {
		return nil, &Error{Code: CodeInternal, Message: "abandon gave a " + s.Kind.String() + " step", sentinel: ErrInternal}
	}
	return s.End, nil
}

// Attempts is the number of attempts over every call so far (the
// journal's count, status queries included).
func (m *Machine) Attempts() int {
	n := 0
	_ = m.use(func(h *C.payidem_operation) error {
		n = int(C.payidem_operation_attempts(h))
		return nil
	})
	return n
}

// Landed tells whether the operation may have taken effect, over every
// attempt so far (LandedNo after Close).
func (m *Machine) Landed() Landed {
	l := LandedNo
	_ = m.use(func(h *C.payidem_operation) error {
		l = Landed(C.payidem_operation_landed(h))
		return nil
	})
	return l
}

// replyArgs is a Reply as C arguments; valid during one C call.
type replyArgs struct {
	outcome C.uint32_t
	status  C.uint16_t
	headers cHeaders
	body    *C.uint8_t
	bodyLen C.size_t
	reason  *C.char
}

// withReply builds r's C arguments and runs call with them.
func withReply(r Reply, call func(replyArgs, **C.payidem_error) C.payidem_result) error {
	// The library checks the outcome and the status (the core's one rule).
	var args cstrings
	reason, err := args.addOpt("reason", r.Reason)
	if err != nil {
		return err
	}
	var headers cHeaders
	if r.Outcome == OutcomeResponse {
		if headers, err = newCHeaders(r.Header); err != nil {
			return err
		}
		defer headers.free()
	}
	a := replyArgs{
		outcome: C.uint32_t(r.Outcome),
		headers: headers,
		reason:  args.ptr(reason),
	}
	if r.Outcome == OutcomeResponse {
		a.status = cStatus(r.Status)
		a.body, a.bodyLen = bytesPtr(r.Body), C.size_t(len(r.Body))
	}
	return cResult(func(cerr **C.payidem_error) C.payidem_result { return call(a, cerr) })
}

// stateByName is the State of a journal state's library name.
func stateByName(name string) State {
	for s := StatePending; s <= StateConflict; s++ {
		if s.String() == name {
			return s
		}
	}
	return StateNotFound
}

// takeStep copies a C step into Go and frees it. cause (may be nil) is
// what a cancelled END's error unwraps to (e.g. ctx.Err()).
func takeStep(step *C.payidem_step, cause error) Step {
	defer C.payidem_step_free(step)
	s := Step{Kind: StepKind(C.payidem_step_kind(step))}
	switch s.Kind {
	case StepPersist:
		s.Persist = PersistStep{
			Attempt: int(C.payidem_step_persist_attempt(step)),
			First:   bool(C.payidem_step_persist_first(step)),
		}
	case StepSend:
		a := &Attempt{
			Kind:    AttemptKind(C.payidem_step_attempt_kind(step)),
			Number:  int(C.payidem_step_attempt_number(step)),
			Method:  goStringOrEmpty(C.payidem_step_method(step)),
			Path:    goStringOrEmpty(C.payidem_step_path(step)),
			Header:  http.Header{},
			Body:    []byte{},
			Timeout: time.Duration(C.payidem_step_timeout_ms(step)) * time.Millisecond,
		}
		n := int(C.payidem_step_header_count(step))
		for i := 0; i < n; i++ {
			var name, value *C.char
			if C.payidem_step_header_at(step, C.size_t(i), &name, &value) {
				a.Header.Add(C.GoString(name), C.GoString(value))
			}
		}
		var n2 C.size_t
		if body := C.payidem_step_body(step, &n2); body != nil && n2 > 0 {
			a.Body = C.GoBytes(unsafe.Pointer(body), C.int(n2))
		}
		s.Send = a
	case StepWait:
		s.Wait = time.Duration(C.payidem_step_wait_ms(step)) * time.Millisecond
	case StepEnd:
		e := &End{
			Name:   goStringOrEmpty(C.payidem_step_end_name(step)),
			Final:  bool(C.payidem_step_end_final(step)),
			Landed: Landed(C.payidem_step_end_landed(step)),
			State:  stateByName(goStringOrEmpty(C.payidem_step_end_state(step))),
		}
		var out *C.payidem_outcome
		var cerr *C.payidem_error
		if rc := C.payidem_step_end_result(step, &out, &cerr); rc == C.PAYIDEM_OK {
			e.Outcome = takeOutcome(out)
		} else {
			if rc != C.PAYIDEM_CANCELLED {
				cause = nil
			}
			e.Err = newError(rc, cerr, cause)
		}
		s.End = e
	}
	return s
}
