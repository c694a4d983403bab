//go:build cgo

package payidem

/*
#include <stdlib.h>
#include "payidem.h"
*/
import "C"

import (
	"context"
	"net/url"
	"sync"
	"time"
)

// Call is one call driving one operation with a client's journal, signer,
// retry budget, clock offset and OnAttempt hook, for a caller that sends the
// attempts with its own HTTP client (RoundTripper does it for net/http). It
// takes exactly the decisions Execute takes and keeps the same crash
// guarantees: every attempt of the operation is in the journal (the first
// one durably) before Step hands it out, and the end is stored before the
// StepEnd.
//
// Drive it as Step says: send a StepSend's attempt to Client.URL(Path)
// within its Timeout and Report what happened; sleep a StepWait; stop at
// StepEnd. Asking for a step again without reporting a sent attempt ends
// the call (that attempt's outcome is unknown). A Call is used by one
// goroutine at a time (its methods are serialized); many calls of one
// client may run at once. Close it when done: a call closed (or collected)
// before its end is abandoned, leaving the journal right (unknown when an
// attempt may have left, pending otherwise) and the order free for another
// call.
type Call struct {
	mu     sync.Mutex
	ptr    *C.payidem_call
	client *Client // kept reachable while the call lives
}

// deadlineMSOf is ctx's deadline in milliseconds from now, rounded up and
// at least 1; 0 (the client's deadline) when ctx has none.
func deadlineMSOf(ctx context.Context) uint64 {
	d, ok := ctx.Deadline()
	if !ok {
		return 0
	}
	left := time.Until(d)
	if left <= 0 {
		return 1
	}
	return uint64((left + time.Millisecond - 1) / time.Millisecond)
}

// Begin starts a call of op with the same checks and journal rules as
// Execute: the operation is journaled before anything is sent, an order
// already in the journal with the same request continues (a settled one
// ends at the first Step with its stored answer), another request under
// the same order id is ErrIdempotencyConflict, an order another call is
// driving is ErrOperationBusy. ctx's deadline shortens the call's deadline;
// a done ctx fails at once with ErrCancelled. Cancellation afterwards is
// the caller's: call Cancel.
func (c *Client) Begin(ctx context.Context, op Operation) (*Call, error) {
	cop, err := newCOperation(op)
	if err != nil {
		return nil, err
	}
	a := &cop.args
	return c.begin(ctx, func(h *C.payidem_client, deadlineMS C.uint64_t, out **C.payidem_call, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_client_begin(h, a.ptr(cop.order), a.ptr(cop.method), a.ptr(cop.path),
			bytesPtr(op.Body), C.size_t(len(op.Body)), a.ptr(cop.key), a.ptr(cop.status),
			deadlineMS, out, cerr)
	})
}

// BeginResume starts a call resuming an unsettled operation of the journal
// (after a crash, ErrOutcomeUnknown or ErrCancelled) with its own key and
// body; a settled one ends at the first Step with its stored answer. An
// order id the journal does not hold is ErrInvalidArgument naming
// "order_id". ctx as in Begin.
func (c *Client) BeginResume(ctx context.Context, orderID string) (*Call, error) {
	var args cstrings
	order, err := args.add("order_id", orderID)
	if err != nil {
		return nil, err
	}
	return c.begin(ctx, func(h *C.payidem_client, deadlineMS C.uint64_t, out **C.payidem_call, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_client_begin_resume(h, args.ptr(order), deadlineMS, out, cerr)
	})
}

// begin runs start (a payidem_client_begin* call) with ctx's deadline once
// the arguments are checked, and wraps the call it gives.
func (c *Client) begin(ctx context.Context, start func(h *C.payidem_client, deadlineMS C.uint64_t, out **C.payidem_call, cerr **C.payidem_error) C.payidem_result) (*Call, error) {
	ctx, err := liveContext(ctx)
	if err != nil {
		return nil, err
	}
	var ptr *C.payidem_call
	err = c.call(func(h *C.payidem_client, cerr **C.payidem_error) C.payidem_result {
		return start(h, C.uint64_t(deadlineMSOf(ctx)), &ptr, cerr)
	})
	if err != nil {
		return nil, err
	}
	return newCall(c, ptr), nil
}

func newCall(c *Client, ptr *C.payidem_call) *Call {
	call := &Call{ptr: ptr, client: c}
	track(call, (*Call).Close)
	return call
}

// URL is the full URL an attempt's Path (a Call's Attempt.Path, which
// already carries the base URL's path prefix) is sent to: the client's
// scheme, host and port followed by path.
func (c *Client) URL(path string) (string, error) {
	return c.text("path", path, func(c *C.payidem_client, arg *C.char, buf *C.char, n C.size_t, out *C.size_t, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_client_url(c, arg, buf, n, out, cerr)
	})
}

// textFunc is a payidem_client_* call that writes text for one argument.
type textFunc func(c *C.payidem_client, arg *C.char, buf *C.char, n C.size_t, out *C.size_t, cerr **C.payidem_error) C.payidem_result

// text runs fill with arg (named field) and gives the text it writes,
// growing the buffer as the library asks.
func (c *Client) text(field, arg string, fill textFunc) (string, error) {
	var args cstrings
	p, err := args.add(field, arg)
	if err != nil {
		return "", err
	}
	return c.readText(256, func(h *C.payidem_client, buf *C.char, n C.size_t, l *C.size_t, cerr **C.payidem_error) C.payidem_result {
		return fill(h, args.ptr(p), buf, n, l, cerr)
	})
}

// targetOf is u's request target relative to the client's base URL (its
// path below the base URL's path prefix, with its query), as the library
// decides it (payidem_client_target_of): scheme and host without case, a
// default port the same as none; a URL elsewhere is invalid_argument
// naming "url".
func (c *Client) targetOf(u *url.URL) (string, error) {
	if u == nil {
		return "", invalid("url", "must not be nil")
	}
	return c.text("url", u.String(), func(c *C.payidem_client, arg *C.char, buf *C.char, n C.size_t, out *C.size_t, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_client_target_of(c, arg, buf, n, out, cerr)
	})
}

// Step gives the next step: StepSend (its Timeout set), StepWait or
// StepEnd, never StepPersist (the call records attempts in the client's
// journal itself). After StepEnd every Step gives the same end. A journal
// failure ends the call with ErrJournal in End.Err.
func (call *Call) Step() (Step, error) {
	return call.step(nil)
}

// StepAt is Step at the caller's clocks, for a caller that keeps them
// itself (a simulation, the shared operation vectors): now is the wall
// clock the attempts are signed with and the journal written at, elapsed
// the time since the call began, against its deadline and waits. Once
// told, the call keeps to the caller's clocks (a Cancel or Close writes at
// the time last told).
func (call *Call) StepAt(now time.Time, elapsed time.Duration) (Step, error) {
	return call.step(&callClock{now, elapsed})
}

// callClock is the caller's clocks at a step or a report.
type callClock struct {
	now     time.Time
	elapsed time.Duration
}

func (call *Call) step(at *callClock) (Step, error) {
	var step *C.payidem_step
	err := call.call(func(h *C.payidem_call, cerr **C.payidem_error) C.payidem_result {
		if at == nil {
			return C.payidem_call_step(h, &step, cerr)
		}
		return C.payidem_call_step_at(h, unixOf(at.now), msOf(at.elapsed), &step, cerr)
	})
	if err != nil {
		return Step{}, err
	}
	return takeStep(step, nil), nil
}

// Report tells the call what the attempt of the last StepSend produced; it
// runs the client's OnAttempt hook. A report with no attempt in flight is
// ignored.
func (call *Call) Report(r Reply) error {
	return call.report(r, nil)
}

// ReportAt is Report at the caller's clocks (see StepAt).
func (call *Call) ReportAt(r Reply, now time.Time, elapsed time.Duration) error {
	return call.report(r, &callClock{now, elapsed})
}

func (call *Call) report(r Reply, at *callClock) error {
	return withLive(&call.mu, &call.ptr, call, func(h *C.payidem_call) error {
		return withReply(r, func(a replyArgs, cerr **C.payidem_error) C.payidem_result {
			if at == nil {
				return C.payidem_call_report(h, a.outcome, a.status, a.headers.ptr,
					C.size_t(a.headers.count), a.body, a.bodyLen, a.reason, cerr)
			}
			return C.payidem_call_report_at(h, a.outcome, a.status, a.headers.ptr,
				C.size_t(a.headers.count), a.body, a.bodyLen, a.reason, unixOf(at.now), msOf(at.elapsed), cerr)
		})
	})
}

// Cancel ends the call at the caller's request and returns its end: its
// Err matches ErrCancelled (and unwraps to cause when cause is not nil,
// e.g. ctx.Err()), the key kept, the journal left unknown when an attempt
// may have left and pending otherwise. When the machine had already ended
// (the last report settled it), that end is returned as it is: a payment
// that was made is never hidden behind a cancel.
func (call *Call) Cancel(cause error) (*End, error) {
	var step *C.payidem_step
	err := call.call(func(h *C.payidem_call, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_call_cancel(h, &step, cerr)
	})
	if err != nil {
		return nil, err
	}
	s := takeStep(step, cause)
	if s.End == nil {
		return nil, internalError("cancel gave a " + s.Kind.String() + " step")
	}
	return s.End, nil
}

// Close frees the call; a call not yet ended is abandoned first (see
// Call). Later calls fail with ErrClosed. Calling it again does nothing.
func (call *Call) Close() error {
	release(&call.mu, &call.ptr, call, func(h *C.payidem_call) {
		C.payidem_call_free(h)
		call.client = nil
	})
	return nil
}
