//go:build cgo

package payidem

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// driveWithNetHTTP drives call to its end, sending every attempt with
// net/http as a caller with its own HTTP stack would, and returns the end
// and every attempt sent.
func driveWithNetHTTP(t *testing.T, client *Client, call *Call) (*End, []*Attempt) {
	t.Helper()
	var sent []*Attempt
	for i := 0; i < 100; i++ {
		step, err := call.Step()
		if err != nil {
			t.Fatal(err)
		}
		switch step.Kind {
		case StepEnd:
			return step.End, sent
		case StepWait:
			time.Sleep(step.Wait)
		case StepSend:
			a := step.Send
			if a.Timeout <= 0 {
				t.Fatalf("a call's attempt without a timeout: %+v", a)
			}
			sent = append(sent, a)
			target, err := client.URL(a.Path)
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(a.Method, target, bytes.NewReader(a.Body))
			req.Header = a.Header.Clone()
			req.GetBody = nil
			resp, err := http.DefaultClient.Do(req)
			reply := Reply{Outcome: OutcomeSentNoResponse}
			if err != nil {
				reply.Reason = err.Error()
			} else {
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil {
					reply = Reply{Outcome: OutcomeResponse, Status: resp.StatusCode, Header: resp.Header, Body: body}
				}
			}
			if err := call.Report(reply); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("a call gave a %s step", step.Kind)
		}
	}
	t.Fatal("the call never ended")
	return nil, nil
}

func TestCallDrivesAPaymentWithTheCallersHTTP(t *testing.T) {
	m := startMock(t)
	m.setFaults(t, map[string]any{"timeout_504_after_commit": 0.5})
	client := newTestClient(t, fastConfig(m.URL))
	var orders []string
	for i := 0; i < 6; i++ {
		order := orderID("call")
		orders = append(orders, order)
		call, err := client.Begin(bg(), payment(order, 1250))
		if err != nil {
			t.Fatal(err)
		}
		end, sent := driveWithNetHTTP(t, client, call)
		if end.Err != nil || end.Name != "succeeded" || !end.Final || end.Landed != LandedYes || end.State != StateSucceeded {
			t.Fatalf("order %s: end %+v", order, end)
		}
		if end.Outcome.OrderID != order || end.Outcome.Attempts != len(sent) || !bytes.Contains(end.Outcome.Body, []byte(order)) {
			t.Fatalf("outcome %+v after %d attempts", end.Outcome, len(sent))
		}
		nonces := map[string]bool{}
		for _, a := range sent {
			if nonces[a.Header.Get(HeaderNonce)] {
				t.Fatalf("nonce reused across attempts")
			}
			nonces[a.Header.Get(HeaderNonce)] = true
			if a.Kind == AttemptOperation && a.Header.Get(HeaderIdempotencyKey) != "create-"+order {
				t.Fatalf("attempt key %q", a.Header.Get(HeaderIdempotencyKey))
			}
		}
		// After the end every step is the same end.
		again, err := call.Step()
		if err != nil || again.Kind != StepEnd || again.End.Name != "succeeded" {
			t.Fatalf("step after the end: %+v %v", again, err)
		}
		if err := call.Close(); err != nil {
			t.Fatal(err)
		}
		if err := call.Close(); err != nil {
			t.Fatal("a second Close:", err)
		}
		if _, err := call.Step(); !errors.Is(err, ErrClosed) {
			t.Fatalf("Step after Close: %v", err)
		}
	}
	m.assertOnePaymentEach(t, orders)
	if m.stats(t).Faults["timeout_504_after_commit"] == 0 {
		t.Fatal("no fault injected: the test proves nothing")
	}
}

func TestCallOfASettledOperationEndsWithoutSending(t *testing.T) {
	m := startMock(t)
	client := newTestClient(t, fastConfig(m.URL))
	op := payment(orderID("settled"), 1250)
	if _, err := client.Execute(bg(), op); err != nil {
		t.Fatal(err)
	}
	call, err := client.Begin(bg(), op)
	if err != nil {
		t.Fatal(err)
	}
	defer call.Close()
	step, err := call.Step()
	if err != nil || step.Kind != StepEnd || step.End.Err != nil || step.End.Outcome.Status != http.StatusCreated {
		t.Fatalf("first step %+v %v, want the stored outcome", step, err)
	}
	// Another request under the same order id is a conflict.
	other := op
	other.Body = []byte(`{"other":true}`)
	if _, err := client.Begin(bg(), other); !errors.Is(err, ErrIdempotencyConflict) {
		t.Fatalf("Begin with another body: %v", err)
	}
	m.assertOnePaymentEach(t, []string{op.OrderID})
}

func TestCallCancelAndCloseLeaveTheJournalRight(t *testing.T) {
	client := newTestClient(t, fastConfig("http://127.0.0.1:9"))
	// Cancelled before anything was sent: pending, nothing landed.
	op := payment(orderID("cancel"), 1)
	call, err := client.Begin(bg(), op)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Begin(bg(), op); !errors.Is(err, ErrOperationBusy) {
		t.Fatalf("a second call of a driven order: %v", err)
	}
	end, err := call.Cancel(context.Canceled)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(end.Err, ErrCancelled) || !errors.Is(end.Err, context.Canceled) || end.Final || end.Landed != LandedNo {
		t.Fatalf("cancel: %+v", end)
	}
	call.Close()
	if st, _ := client.Status(bg(), op.OrderID); st.State != StatePending {
		t.Fatalf("state %v, want pending", st.State)
	}

	// Closed with an attempt out: unknown, listed, and free to resume.
	op2 := payment(orderID("closed"), 1)
	call, err = client.Begin(bg(), op2)
	if err != nil {
		t.Fatal(err)
	}
	step, err := call.Step()
	if err != nil || step.Kind != StepSend || step.Send.Kind != AttemptOperation || step.Send.Number != 1 {
		t.Fatalf("first step %+v %v", step, err)
	}
	if st, _ := client.Status(bg(), op2.OrderID); st.State != StateInFlight || st.Attempts != 1 {
		t.Fatalf("before sending, the journal holds %+v, want in flight, 1 attempt", st)
	}
	call.Close()
	ids, err := client.ListUnknown(bg())
	if err != nil || len(ids) != 1 || ids[0] != op2.OrderID {
		t.Fatalf("ListUnknown: %v %v", ids, err)
	}
	resumed, err := client.BeginResume(bg(), op2.OrderID)
	if err != nil {
		t.Fatalf("BeginResume after Close: %v", err)
	}
	resumed.Close()
	if _, err := client.BeginResume(bg(), "ord-never-seen"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("BeginResume of an unknown order: %v", err)
	}
	done, cancel := context.WithCancel(bg())
	cancel()
	if _, err := client.Begin(done, payment(orderID("done"), 1)); !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Begin with a done context: %v", err)
	}
}

func TestCallRefusesBadInputNamingTheField(t *testing.T) {
	client := newTestClient(t, fastConfig("http://127.0.0.1:9"))
	_, err := client.Begin(bg(), Operation{OrderID: "bad order id", Method: http.MethodPost, Path: "/v1/payments", Body: []byte("{}")})
	var ia *InvalidArgumentError
	if !errors.As(err, &ia) || ia.Field != "order_id" {
		t.Fatalf("Begin: %v, want invalid order_id", err)
	}
	call, err := client.Begin(bg(), payment(orderID("bad"), 1))
	if err != nil {
		t.Fatal(err)
	}
	defer call.Close()
	if _, err := call.Step(); err != nil {
		t.Fatal(err)
	}
	if err := call.Report(Reply{Outcome: AttemptOutcome(9)}); !errors.As(err, &ia) || ia.Field != "outcome" {
		t.Fatalf("Report: %v, want invalid outcome", err)
	}
	if err := call.Report(Reply{Outcome: OutcomeResponse, Status: 42}); !errors.As(err, &ia) || ia.Field != "status" {
		t.Fatalf("Report: %v, want invalid status", err)
	}
	if err := call.Report(Reply{Outcome: OutcomeNotSent, Reason: "a\x00b"}); !errors.As(err, &ia) || ia.Field != "reason" {
		t.Fatalf("Report: %v, want invalid reason", err)
	}
	// A valid report still goes through after the refused ones.
	if err := call.Report(Reply{Outcome: OutcomeNotSent, Reason: "connection refused"}); err != nil {
		t.Fatal(err)
	}
}

func TestClientURLJoinsTheOriginAndTheTarget(t *testing.T) {
	client := newTestClient(t, fastConfig("http://127.0.0.1:9/api/"))
	call, err := client.Begin(bg(), payment(orderID("url"), 1))
	if err != nil {
		t.Fatal(err)
	}
	defer call.Close()
	step, err := call.Step()
	if err != nil || step.Kind != StepSend {
		t.Fatalf("%+v %v", step, err)
	}
	if step.Send.Path != "/api/v1/payments" {
		t.Fatalf("attempt path %q, want the prefix and the path", step.Send.Path)
	}
	u, err := client.URL(step.Send.Path)
	if err != nil || u != "http://127.0.0.1:9/api/v1/payments" {
		t.Fatalf("URL = %q, %v", u, err)
	}
	long := "/" + strings.Repeat("a", 1000)
	if u, err := client.URL(long); err != nil || u != "http://127.0.0.1:9"+long {
		t.Fatalf("a long URL: %d bytes, %v", len(u), err)
	}
}

func TestForgottenCallsAndMachinesAreFreed(t *testing.T) {
	client := newTestClient(t, fastConfig("http://127.0.0.1:9"))
	before := liveHandles.Load()
	func() {
		for i := 0; i < 20; i++ {
			call, err := client.Begin(bg(), payment(orderID("gc"), 1))
			if err != nil {
				t.Fatal(err)
			}
			_ = call
			m, err := NewMachine(MachineStart{Operation: payment(orderID("gc"), 1)})
			if err != nil {
				t.Fatal(err)
			}
			_ = m
		}
	}()
	for i := 0; i < 50 && liveHandles.Load() > before; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := liveHandles.Load(); n > before {
		t.Fatalf("%d handles still live after GC", n-before)
	}
	// The abandoned calls left their orders pending, not busy.
	ids, err := client.ListUnknown(bg())
	if err != nil || len(ids) != 0 {
		t.Fatalf("ListUnknown: %v %v", ids, err)
	}
}

func TestMachineRefusesBadInputNamingTheField(t *testing.T) {
	var ia *InvalidArgumentError
	_, err := NewMachine(MachineStart{Operation: payment("bad id", 1)})
	if !errors.As(err, &ia) || !strings.Contains(ia.Field, "order_id") {
		t.Fatalf("NewMachine: %v, want invalid order_id", err)
	}
	_, err = NewMachine(MachineStart{Operation: payment("ord-1", 1), Setup: MachineSetup{KeyRetention: 49 * time.Hour}})
	if !errors.As(err, &ia) || !strings.Contains(ia.Field, "key_retention") {
		t.Fatalf("NewMachine: %v, want invalid key retention", err)
	}
	m, err := NewMachine(MachineStart{Operation: payment("ord-1", 1)})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := NewSigner(mockKeyID, []byte(mockSecret))
	if err != nil {
		t.Fatal(err)
	}
	defer signer.Close()
	if _, err := m.Poll(nil, time.Now(), 0); !errors.As(err, &ia) || ia.Field != "signer" {
		t.Fatalf("Poll(nil): %v", err)
	}
	step, err := m.Poll(signer, time.Now(), 0)
	if err != nil || step.Kind != StepPersist || !step.Persist.First || step.Persist.Attempt != 1 {
		t.Fatalf("first step %+v %v", step, err)
	}
	// Until the record is confirmed, nothing is sent.
	step, err = m.Poll(signer, time.Now(), 0)
	if err != nil || step.Kind != StepPersist {
		t.Fatalf("a poll before Persisted gave %+v %v", step, err)
	}
	if err := m.Persisted(); err != nil {
		t.Fatal(err)
	}
	step, err = m.Poll(signer, time.Now(), 0)
	if err != nil || step.Kind != StepSend || m.Attempts() != 1 {
		t.Fatalf("%+v %v attempts %d", step, err, m.Attempts())
	}
	if _, err := m.Handle(Reply{Outcome: OutcomeResponse, Status: 7}, time.Now(), 0); !errors.As(err, &ia) || ia.Field != "status" {
		t.Fatalf("Handle: %v", err)
	}
	reaction, err := m.Handle(Reply{Outcome: OutcomeResponse, Status: 504, Header: http.Header{}, Body: []byte(`{}`)}, time.Now(), 0)
	if err != nil || reaction.Status != 504 || reaction.Landed != LandedMaybe || m.Landed() != LandedMaybe {
		t.Fatalf("reaction %+v %v", reaction, err)
	}
	end, err := m.Abandon("shutting down")
	if err != nil || end.Name != "unknown" || end.Final || !errors.Is(end.Err, ErrOutcomeUnknown) {
		t.Fatalf("abandon: %+v %v", end, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Poll(signer, time.Now(), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Poll after Close: %v", err)
	}
}
