//go:build cgo

package payidem

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// The operation vectors through a client's journal-bound call
// (Client.Begin, Call.StepAt, Call.ReportAt) over a memory and a SQLite
// journal: the steps and reactions the call hands out, each record in the
// journal before the step that follows, its end, and the journal's state
// and attempts after it. Every vector that starts with a new operation
// (opened by the call), with no clock offset learnt before and no restart,
// runs; see the vector file's "about".

// callRunner is the state of one vector's run through a call.
type callRunner struct {
	t      *testing.T
	client *Client
	call   *Call
	op     Operation
	vectorClock
	recorded  int // attempts a "persist" step says the journal holds; -1 none
	lastNext  string
	cancelled *End
}

// checkJournal checks that the journal holds the operation in state (""
// for any) with attempts.
func (r *callRunner) checkJournal(state string, attempts int, at string) {
	r.t.Helper()
	got, err := r.client.Status(context.Background(), r.op.OrderID)
	if err != nil {
		r.t.Fatalf("%s: Status: %v", at, err)
	}
	if (state != "" && got.State.String() != state) || got.Attempts != attempts {
		r.t.Errorf("%s: journal holds %s with %d attempts, want %s with %d", at, got.State, got.Attempts, state, attempts)
	}
}

func (r *callRunner) runStep(step map[string]any, at string) {
	t := r.t
	t.Helper()
	cancel := func(string) (*End, error) { return r.call.Cancel(nil) }
	if abandonStep(t, step, at, cancel, &r.cancelled) {
		return
	}
	if replyStep(t, step, at, func(reply Reply) (string, error) {
		r.lastNext = ""
		err := r.call.ReportAt(reply, r.now(), r.elapsed())
		return r.lastNext, err
	}) {
		return
	}
	expect := vText(t, step, "expect", at)
	if expect == "persist" {
		// The call makes the record itself, before its next step.
		r.recorded = int(vNum(t, step, "attempt", at))
		return
	}
	got := Step{Kind: StepEnd, End: r.cancelled}
	if r.cancelled == nil {
		var err error
		if got, err = r.call.StepAt(r.now(), r.elapsed()); err != nil {
			t.Fatalf("%s: StepAt: %v", at, err)
		}
	}
	if r.recorded >= 0 {
		r.checkJournal("", r.recorded, at)
		r.recorded = -1
	}
	switch {
	case expect == "send" && got.Kind == StepSend:
		if got.Send.Kind == AttemptOperation {
			// Never sent before its record.
			r.checkJournal("in_flight", got.Send.Number, at)
		}
		checkSend(t, got.Send, r.op, step, true, at)
	case expect == "wait" && got.Kind == StepWait:
		r.elapsedMS += checkWait(t, got.Wait, step, at)
	case expect == "end" && got.Kind == StepEnd:
		want := step
		if r.cancelled != nil {
			// A cancelled call's result is cancelled, whatever its end.
			want = map[string]any{}
			for k, v := range step {
				want[k] = v
			}
			want["error"] = "cancelled"
		}
		checkEnd(t, got.End, want, r.op.OrderID, at)
		r.checkJournal(vText(t, step, "state", at), int(vNum(t, step, "journal_attempts", at)), at)
	default:
		t.Fatalf("%s: expected %s, got %s step %+v", at, expect, got.Kind, got)
	}
}

func TestOperationVectorsThroughCall(t *testing.T) {
	var v operationVectors
	loadVectorFile(t, "operation-v1.json", &v)
	var doc struct {
		Vectors []struct {
			Progress map[string]any `json:"progress"`
		} `json:"vectors"`
	}
	loadVectorFile(t, "operation-v1.json", &doc)
	dir := t.TempDir()
	ran := 0
	for i, c := range v.Vectors {
		restarts := false
		for _, step := range c.Script {
			if _, ok := step["restart"]; ok {
				restarts = true
			}
		}
		first, _ := doc.Vectors[i].Progress["first_recorded"].(bool)
		fresh := c.Progress.AgeSecs == 0 && (first || (c.Progress.State == "pending" && c.Progress.Attempts == 0))
		if !fresh || restarts || c.Setup.ClockOffset != 0 {
			continue
		}
		ran++
		for _, journal := range []string{"memory", "SQLite"} {
			t.Run(fmt.Sprintf("%s/%s", c.Name, journal), func(t *testing.T) {
				s := c.Setup
				m := s.machineSetup()
				cfg := Config{
					BaseURL:     "https://pay.example",
					KeyID:       "key_test_1",
					Secret:      []byte("0123456789abcdef0123"),
					JournalPath: ":memory:",
					MaxAttempts: m.MaxAttempts, BackoffBase: m.BackoffBase, BackoffCap: m.BackoffCap,
					Deadline: m.Deadline, KeyRetention: m.KeyRetention, MaxClockOffset: m.MaxClockOffset,
					AllowInsecureHTTP: !s.ClockTrusted,
					// The vectors' clocks are in the past: a settled row's
					// time must stay after the journal's purge horizon.
					SettledRetention: 1_000_000_000 * time.Second, // the longest the settings allow
				}
				if !s.ClockTrusted {
					cfg.BaseURL = "http://pay.example"
				}
				if journal == "SQLite" {
					cfg.JournalPath = filepath.Join(dir, fmt.Sprintf("journal-%d.db", i))
				}
				if b := s.RetryBudget; b != nil {
					cfg.RetryBudget = &RetryBudget{
						Capacity: b.Capacity, RetryCost: b.RetryCost,
						TimeoutCost: b.TimeoutCost, SuccessRefund: b.SuccessRefund,
					}
				}
				client, err := NewClient(cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer client.Close()
				r := &callRunner{t: t, client: client, vectorClock: vectorClock{start: c.Now}, recorded: -1}
				if err := client.SetEventHook(func(e Event) {
					if e.Type == "attempt" {
						r.lastNext = e.Next
					}
				}); err != nil {
					t.Fatal(err)
				}
				r.op = c.Operation.operation()
				if r.call, err = client.Begin(context.Background(), r.op); err != nil {
					t.Fatal(err)
				}
				defer r.call.Close()
				for k, step := range c.Script {
					r.runStep(step, fmt.Sprintf("%s (call, %s) step %d", c.Name, journal, k))
				}
			})
		}
	}
	t.Logf("%d of %d vectors ran through a client's call (memory and SQLite journals)", ran, len(v.Vectors))
	if ran < 28 {
		t.Errorf("only %d vectors ran through a call", ran)
	}
}
