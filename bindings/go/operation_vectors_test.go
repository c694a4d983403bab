//go:build cgo

package payidem

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// operationVectors mirrors core/tests/vectors/operation-v1.json; its
// "about" holds the runner rules this file follows, as
// core/tests/operation_vectors.rs does.
// vectorSetup is a vector's "setup": the machine's limits and clock.
type vectorSetup struct {
	MaxAttempts        int   `json:"max_attempts"`
	BackoffBaseMS      int64 `json:"backoff_base_ms"`
	BackoffCapMS       int64 `json:"backoff_cap_ms"`
	DeadlineMS         int64 `json:"deadline_ms"`
	KeyRetentionSecs   int64 `json:"key_retention_secs"`
	MaxClockOffsetSecs int64 `json:"max_clock_offset_secs"`
	ClockOffset        int64 `json:"clock_offset"`
	ClockTrusted       bool  `json:"clock_trusted"`
	RetryBudget        *struct {
		Capacity      uint32 `json:"capacity"`
		RetryCost     uint32 `json:"retry_cost"`
		TimeoutCost   uint32 `json:"timeout_cost"`
		SuccessRefund uint32 `json:"success_refund"`
	} `json:"retry_budget"`
}

// machineSetup is s as the machine takes it.
func (s vectorSetup) machineSetup() MachineSetup {
	setup := MachineSetup{
		MaxAttempts:    s.MaxAttempts,
		BackoffBase:    time.Duration(s.BackoffBaseMS) * time.Millisecond,
		BackoffCap:     time.Duration(s.BackoffCapMS) * time.Millisecond,
		Deadline:       time.Duration(s.DeadlineMS) * time.Millisecond,
		KeyRetention:   time.Duration(s.KeyRetentionSecs) * time.Second,
		MaxClockOffset: time.Duration(s.MaxClockOffsetSecs) * time.Second,
		ClockOffset:    time.Duration(s.ClockOffset) * time.Second,
		ClockUntrusted: !s.ClockTrusted,
	}
	if b := s.RetryBudget; b != nil {
		setup.RetryBudget = &RetryBudget{
			Capacity: b.Capacity, RetryCost: b.RetryCost,
			TimeoutCost: b.TimeoutCost, SuccessRefund: b.SuccessRefund,
		}
	}
	return setup
}

type operationVectors struct {
	About   string `json:"about"`
	Vectors []struct {
		Name string `json:"name"`
		// Operation is a start document's operation object.
		Operation startOperation `json:"operation"`
		Progress  struct {
			State         string `json:"state"`
			Attempts      int    `json:"attempts"`
			AgeSecs       int64  `json:"age_secs"`
			FirstRecorded bool   `json:"first_recorded"`
		} `json:"progress"`
		Setup  vectorSetup      `json:"setup"`
		Now    int64            `json:"now"`
		Script []map[string]any `json:"script"`
	} `json:"vectors"`
}

// operation is a vector's operation as an Operation: its body the text
// given, base64 decoded, or empty.
func (o startOperation) operation() Operation {
	op := Operation{
		OrderID: o.OrderID, Method: o.Method, Path: o.Path, Body: o.BodyBase64,
		IdempotencyKey: o.IdempotencyKey, StatusPath: o.StatusPath,
	}
	if o.Body != nil {
		op.Body = []byte(*o.Body)
	}
	return op
}

// vectorRunner is the state of one vector's run (the Rust runner's Runner).
type vectorRunner struct {
	t         *testing.T
	op        Operation
	setup     MachineSetup
	createdAt int64
	vectorClock
	machine *Machine
	last    *End
}

// vectorClock is a vector's clocks.
type vectorClock struct {
	start     int64 // wall clock at the call's start, Unix seconds
	elapsedMS int64
}

// now is the runner's wall clock: start + elapsed rounded down to seconds.
func (c *vectorClock) now() time.Time {
	return time.Unix(c.start+c.elapsedMS/1000, 0)
}

func (c *vectorClock) elapsed() time.Duration {
	return time.Duration(c.elapsedMS) * time.Millisecond
}

func (r *vectorRunner) begin(state string, attempts int, firstRecorded bool) {
	r.t.Helper()
	if r.machine != nil {
		r.machine.Close()
	}
	m, err := NewMachine(MachineStart{
		Operation:     r.op,
		State:         stateByName(state),
		Attempts:      attempts,
		CreatedAt:     time.Unix(r.createdAt, 0),
		FirstRecorded: firstRecorded,
		Setup:         r.setup,
		Now:           r.now(),
	})
	if err != nil {
		r.t.Fatalf("NewMachine(state %s): %v", state, err)
	}
	if stateByName(state) == StateNotFound {
		r.t.Fatalf("unknown state %q", state)
	}
	r.machine = m
}

func TestOperationVectors(t *testing.T) {
	var v operationVectors
	loadVectorFile(t, "operation-v1.json", &v)
	if len(v.Vectors) < 30 {
		t.Fatalf("%d operation vectors, want at least 30", len(v.Vectors))
	}
	signer, err := NewSigner("key_test_1", []byte("0123456789abcdef0123"))
	if err != nil {
		t.Fatal(err)
	}
	defer signer.Close()
	for _, c := range v.Vectors {
		t.Run(c.Name, func(t *testing.T) {
			op := c.Operation.operation()
			setup := c.Setup.machineSetup()
			r := &vectorRunner{
				t:           t,
				op:          op,
				setup:       setup,
				createdAt:   c.Now - c.Progress.AgeSecs,
				vectorClock: vectorClock{start: c.Now},
			}
			r.begin(c.Progress.State, c.Progress.Attempts, c.Progress.FirstRecorded)
			defer func() { r.machine.Close() }()
			for i, step := range c.Script {
				r.runStep(signer, step, fmt.Sprintf("%s step %d", c.Name, i))
			}
			if r.last == nil {
				t.Fatalf("%s: the script never checked the end", c.Name)
			}
		})
	}
}

// Accessors of the script's JSON values; a missing or mistyped field
// fails the test.
func vField[T any](t *testing.T, m map[string]any, key, at string) T {
	t.Helper()
	v, ok := m[key].(T)
	if !ok {
		t.Fatalf("%s: %s missing in %v", at, key, m)
	}
	return v
}

func vText(t *testing.T, m map[string]any, key, at string) string {
	t.Helper()
	return vField[string](t, m, key, at)
}

func vNum(t *testing.T, m map[string]any, key, at string) int64 {
	t.Helper()
	return int64(vField[float64](t, m, key, at))
}

func vBool(t *testing.T, m map[string]any, key, at string) bool {
	t.Helper()
	return vField[bool](t, m, key, at)
}

// abandonStep runs a script's "abandon" step, if step is one, with abandon
// (Machine.Abandon, or Call.Cancel), keeping its end in end.
func abandonStep(t *testing.T, step map[string]any, at string, abandon func(reason string) (*End, error), end **End) bool {
	t.Helper()
	reason, ok := step["abandon"].(string)
	if !ok {
		return false
	}
	got, err := abandon(reason)
	if err != nil {
		t.Fatalf("%s: abandon: %v", at, err)
	}
	*end = got
	return true
}

// replyStep runs a script's "reply" step, if step is one: report gives
// the reply to the machine or call and returns the next action's name,
// checked against the script's.
func replyStep(t *testing.T, step map[string]any, at string, report func(Reply) (next string, err error)) bool {
	t.Helper()
	reply, ok := step["reply"].(map[string]any)
	if !ok {
		return false
	}
	next, err := report(vectorReply(t, reply, at))
	if err != nil {
		t.Fatalf("%s: reply: %v", at, err)
	}
	if want := vText(t, step, "next", at); next != want {
		t.Errorf("%s: next %q, want %s", at, next, want)
	}
	return true
}

// vectorReply is the Reply a script's "reply" stands for.
func vectorReply(t *testing.T, v map[string]any, at string) Reply {
	t.Helper()
	if why, ok := v["not_sent"].(string); ok {
		return Reply{Outcome: OutcomeNotSent, Reason: why}
	}
	if why, ok := v["no_response"].(string); ok {
		return Reply{Outcome: OutcomeSentNoResponse, Reason: why}
	}
	h := http.Header{}
	headers, ok := v["headers"].(map[string]any)
	if !ok {
		t.Fatalf("%s: reply without headers: %v", at, v)
	}
	for name, value := range headers {
		h.Add(name, value.(string))
	}
	return Reply{
		Outcome: OutcomeResponse,
		Status:  int(vNum(t, v, "status", at)),
		Header:  h,
		Body:    []byte(vText(t, v, "body", at)),
	}
}

func (r *vectorRunner) runStep(signer *Signer, step map[string]any, at string) {
	t := r.t
	t.Helper()
	if restart, ok := step["restart"].(map[string]any); ok {
		// Wall time goes on; the new call's elapsed clock starts at 0.
		r.start += r.elapsedMS / 1000
		r.elapsedMS = 0
		r.begin(vText(t, restart, "state", at), int(vNum(t, restart, "attempts", at)), false)
		return
	}
	if abandonStep(t, step, at, r.machine.Abandon, &r.last) {
		return
	}
	if replyStep(t, step, at, func(reply Reply) (string, error) {
		reaction, err := r.machine.Handle(reply, r.now(), r.elapsed())
		if got, want := reaction.Landed.String(), vText(t, step, "landed", at); err == nil && got != want {
			t.Errorf("%s: landed %s, want %s", at, got, want)
		}
		return reaction.Next.String(), err
	}) {
		return
	}
	expect := vText(t, step, "expect", at)
	got, err := r.machine.Poll(signer, r.now(), r.elapsed())
	if err != nil {
		t.Fatalf("%s: Poll: %v", at, err)
	}
	switch {
	case expect == "persist" && got.Kind == StepPersist:
		if got.Persist.Attempt != int(vNum(t, step, "attempt", at)) || got.Persist.First != vBool(t, step, "first", at) {
			t.Errorf("%s: persist %+v, want %v", at, got.Persist, step)
		}
		if err := r.machine.Persisted(); err != nil {
			t.Fatalf("%s: Persisted: %v", at, err)
		}
	case expect == "send" && got.Kind == StepSend:
		checkSend(t, got.Send, r.op, step, false, at)
	case expect == "wait" && got.Kind == StepWait:
		r.elapsedMS += checkWait(t, got.Wait, step, at)
	case expect == "end" && got.Kind == StepEnd:
		checkEnd(t, got.End, step, r.op.OrderID, at)
		r.last = got.End
	case expect == "end" && r.last != nil:
		checkEnd(t, r.last, step, r.op.OrderID, at)
	default:
		t.Fatalf("%s: expected %s, got %s step %+v", at, expect, got.Kind, got)
	}
}

// checkSend checks an attempt against a "send" step: kind, number, the
// operation's own request and key (or the status query), its signature and
// timestamp; fromCall says it came from a client's call (with a timeout)
// rather than the machine (none).
func checkSend(t *testing.T, a *Attempt, op Operation, step map[string]any, fromCall bool, at string) {
	t.Helper()
	if a.Kind.String() != vText(t, step, "kind", at) || a.Number != int(vNum(t, step, "number", at)) {
		t.Errorf("%s: send %s #%d, want %v", at, a.Kind, a.Number, step)
	}
	if (a.Timeout != 0) != fromCall {
		t.Errorf("%s: attempt timeout %v (from a call: %v)", at, a.Timeout, fromCall)
	}
	if a.Kind == AttemptOperation {
		key := op.IdempotencyKey
		if key == "" {
			key = "create-" + op.OrderID
		}
		if a.Method != op.Method || a.Path != op.Path || string(a.Body) != string(op.Body) ||
			a.Header.Get(HeaderIdempotencyKey) != key {
			t.Errorf("%s: operation attempt %s %s key %q body %q, want the operation's", at,
				a.Method, a.Path, a.Header.Get(HeaderIdempotencyKey), a.Body)
		}
	} else {
		if a.Method != http.MethodGet || a.Path != op.StatusPath || len(a.Body) != 0 {
			t.Errorf("%s: status query %s %s body %q, want GET %s", at, a.Method, a.Path, a.Body, op.StatusPath)
		}
	}
	if ts, ok := step["timestamp"].(float64); ok {
		if got := a.Header.Get(HeaderTimestamp); got != strconv.FormatInt(int64(ts), 10) {
			t.Errorf("%s: X-Timestamp %s, want %d", at, got, int64(ts))
		}
	}
	if a.Header.Get(HeaderNonce) == "" || a.Header.Get(HeaderSignature) == "" {
		t.Errorf("%s: attempt is not signed: %v", at, a.Header)
	}
}

// checkWait checks a wait against a "wait" step; it returns the
// milliseconds waited.
func checkWait(t *testing.T, wait time.Duration, step map[string]any, at string) int64 {
	t.Helper()
	ms := int64(wait / time.Millisecond)
	if exact, ok := step["ms"].(float64); ok {
		if ms != int64(exact) {
			t.Errorf("%s: wait %d ms, want %d", at, ms, int64(exact))
		}
	} else {
		max := vNum(t, step, "max_ms", at)
		if ms <= 0 || ms > max {
			t.Errorf("%s: waited %d ms, max %d", at, ms, max)
		}
	}
	return ms
}

// checkEnd checks an end's name, finality, landing, journal state, the
// caller's error code (nil for success) and the last answer's status.
func checkEnd(t *testing.T, end *End, step map[string]any, orderID, at string) {
	t.Helper()
	if end.Name != vText(t, step, "end", at) {
		t.Errorf("%s: end %s, want %s", at, end.Name, step["end"])
	}
	if end.Final != vBool(t, step, "final", at) {
		t.Errorf("%s: final %v, want %v", at, end.Final, step["final"])
	}
	if end.Landed.String() != vText(t, step, "landed", at) {
		t.Errorf("%s: landed %s, want %s", at, end.Landed, step["landed"])
	}
	if end.State.String() != vText(t, step, "state", at) {
		t.Errorf("%s: state %s, want %s", at, end.State, step["state"])
	}
	status := 0
	switch {
	case end.Err == nil && end.Outcome != nil:
		status = end.Outcome.Status
	case end.Err != nil:
		var e *Error
		if errors.As(end.Err, &e) {
			status = e.HTTPStatus
		}
	}
	if want, ok := step["status"].(float64); ok {
		if status != int(want) {
			t.Errorf("%s: status %d, want %d", at, status, int(want))
		}
	} else if step["status"] != nil || status != 0 {
		t.Errorf("%s: status %d, want none", at, status)
	}
	if replayed, ok := step["replayed"].(bool); ok {
		if end.Outcome == nil || end.Outcome.Replayed != replayed {
			t.Errorf("%s: outcome %+v, want replayed %v", at, end.Outcome, replayed)
		}
	}
	code, wantErr := step["error"].(string)
	switch {
	case end.Err == nil && !wantErr:
		if end.Outcome == nil {
			t.Errorf("%s: a successful end without an outcome", at)
		}
	case end.Err != nil && wantErr:
		var e *Error
		if !errors.As(end.Err, &e) || string(e.Code) != code {
			t.Errorf("%s: error %v, want code %s", at, end.Err, code)
		} else if IsFinal(end.Err) != end.Final {
			t.Errorf("%s: IsFinal(%v) = %v, end final %v", at, end.Err, IsFinal(end.Err), end.Final)
		}
		if e != nil && e.OrderID != orderID {
			t.Errorf("%s: error names order %q, want %q", at, e.OrderID, orderID)
		}
	default:
		t.Errorf("%s: result %v, want error %v", at, end.Err, step["error"])
	}
}

// The names the Go types print are the library's (the vectors compare
// them with core's expectations): every constant has one, unknown numbers
// print as such, and a state's name leads back to it.
func TestNamesMatchTheLibrary(t *testing.T) {
	named := map[string]fmt.Stringer{
		"settle": NextSettle, "give_up": NextGiveUp, "no": LandedNo, "yes": LandedYes,
		"operation": AttemptOperation, "status_query": AttemptStatusQuery,
		"in_flight": StateInFlight, "not_found": StateNotFound, "persist": StepPersist,
		"end": StepEnd, "adjust_clock_retry": DecisionAdjustClockRetry,
	}
	for want, v := range named {
		if v.String() != want {
			t.Errorf("%#v prints %q, want %q", v, v.String(), want)
		}
	}
	for s := StatePending; s <= StateConflict; s++ {
		if stateByName(s.String()) != s {
			t.Errorf("state %d (%s) does not round-trip", s, s)
		}
	}
	if got := NextAction(99).String(); got != "next(99)" {
		t.Errorf("an unknown action prints %q", got)
	}
	if got := StepKind(0).String(); got != "step(0)" {
		t.Errorf("an unknown step kind prints %q", got)
	}
	want := []string{HeaderAPIKey, HeaderTimestamp, HeaderNonce, HeaderSignature, HeaderIdempotencyKey}
	if got := signedHeaderNames(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the library signs headers %v, Go names %v", got, want)
	}
}
