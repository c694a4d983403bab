//go:build cgo

package payidem

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"context"
	"net/http"
	"runtime/cgo"
	"sync"
	"time"
	"unsafe"
)

// Client runs business operations against the platform: one idempotency
// key per operation, retries and status queries by the protocol, every
// operation journaled before anything is sent. Safe for concurrent use by
// many goroutines; two calls never drive the same order at once (the second
// gets ErrOperationBusy).
type Client struct {
	mu    sync.RWMutex // read-held by every call, write-held by Close
	ptr   *C.payidem_client
	event cgo.Handle // 0 when no OnAttempt hook
	base  string     // Config.BaseURL, for RoundTripper
}

// Operation is one business operation: an order id, one unchanging request
// and one idempotency key.
type Operation struct {
	// OrderID: 1..=128 of [A-Za-z0-9._:-]; names the operation in the journal.
	OrderID string
	// Method and Path of the request, Path exactly as sent (with its query).
	Method string
	Path   string
	// Body is sent byte for byte on every attempt.
	Body []byte
	// IdempotencyKey; "" for the default "create-{OrderID}".
	IdempotencyKey string
	// StatusPath is the path of a signed GET telling whether the operation
	// landed (e.g. "/v1/payments?order_id=..."); "" when none.
	StatusPath string
}

// Outcome is the settled answer of an operation (a 2xx from the platform).
type Outcome struct {
	Status  int
	Headers http.Header
	Body    []byte
	// Replayed: the platform answered from its idempotency store; the
	// operation had already happened, exactly once.
	Replayed       bool
	IdempotencyKey string
	OrderID        string
	// Attempts over every call of the operation, status queries included.
	Attempts int
	// JournalErr is set (an *Error with CodeJournal) when the platform
	// answered 2xx but the journal could not record the success: the
	// payment was made and this Outcome says so. The journal still holds
	// the operation unsettled with its key; the next Execute or Resume of
	// the order gets the same answer replayed by the platform and records
	// it then. Nil when the journal recorded the success.
	JournalErr error
}

// OperationStatus is the journal's record of an operation.
type OperationStatus struct {
	State    State
	Attempts int
}

// NewClient opens the journal and creates a client. Close it when done; a
// finalizer closes a forgotten one.
func NewClient(cfg Config) (*Client, error) {
	var args cstrings
	off, err := args.addJSON("options_json", cfg.optionsJSON)
	if err != nil {
		return nil, err
	}
	var ptr *C.payidem_client
	if err := cResult(func(cerr **C.payidem_error) C.payidem_result {
		return C.payidem_client_new(args.ptr(off), secretPtr(cfg.Secret), C.size_t(len(cfg.Secret)), &ptr, cerr)
	}); err != nil {
		return nil, renameOptionField(err)
	}
	c := &Client{ptr: ptr, base: cfg.BaseURL}
	if cfg.OnAttempt != nil {
		c.event = cgo.NewHandle(cfg.OnAttempt)
		C.payidem_go_set_event_handle(ptr, C.uintptr_t(c.event))
	}
	track(c, (*Client).Close)
	return c, nil
}

// renameOptionField gives an invalid option the name of its Config field.
func renameOptionField(err error) error {
	if ia, ok := err.(*InvalidArgumentError); ok {
		if name, found := goFieldOfOption[ia.Field]; found {
			ia.Field, ia.Err.Field = name, name
		}
	}
	return err
}

// Close waits for running calls, then closes the journal and wipes the
// secret. Later calls fail with ErrClosed. Calling it again does nothing.
func (c *Client) Close() error {
	release(&c.mu, &c.ptr, c, func(h *C.payidem_client) {
		C.payidem_client_free(h)
		if c.event != 0 {
			c.event.Delete()
			c.event = 0
		}
	})
	return nil
}

// callControl maps ctx onto the call: its deadline becomes the call's
// deadline in milliseconds (rounded up, at least 1) and, when ctx can be
// done, a handle to it is polled by the library's cancel hook. release
// frees the handle.
func callControl(ctx context.Context) (deadlineMS uint64, handle cgo.Handle, release func()) {
	if d, ok := ctx.Deadline(); ok {
		left := time.Until(d)
		deadlineMS = 1
		if left > 0 {
			deadlineMS = uint64((left + time.Millisecond - 1) / time.Millisecond)
		}
	}
	if ctx.Done() == nil {
		return deadlineMS, 0, func() {}
	}
	handle = cgo.NewHandle(ctx)
	return deadlineMS, handle, handle.Delete
}

// Execute runs op to a settled outcome. The operation is journaled before
// anything is sent; an order already in the journal with the same request
// continues (a settled one answers from the journal without a network
// call). ctx's deadline shortens the call's deadline; when ctx is done the
// call ends with an error matching both ErrCancelled and ctx.Err(), and the
// operation keeps its key: Resume it. A request already on the wire is not
// interrupted; cancellation takes effect before the next attempt or during
// a wait.
func (c *Client) Execute(ctx context.Context, op Operation) (*Outcome, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	cop, err := newCOperation(op)
	if err != nil {
		return nil, err
	}
	args := &cop.args
	order, method, path, key, status := cop.order, cop.method, cop.path, cop.key, cop.status
	return c.drive(ctx, func(h *C.payidem_client, deadlineMS C.uint64_t, handle C.uintptr_t, out **C.payidem_outcome, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_go_execute(h, args.ptr(order), args.ptr(method), args.ptr(path),
			bytesPtr(op.Body), C.size_t(len(op.Body)), args.ptr(key), args.ptr(status),
			deadlineMS, handle, out, cerr)
	})
}

// drive runs one journaled call (execute or resume) with the client's live
// handle under ctx's deadline and cancel hook and takes its outcome; its
// error carries ctx.Err() when ctx ended it.
func (c *Client) drive(ctx context.Context, f func(h *C.payidem_client, deadlineMS C.uint64_t, handle C.uintptr_t, out **C.payidem_outcome, cerr **C.payidem_error) C.payidem_result) (*Outcome, error) {
	var out *C.payidem_outcome
	err := c.use(func(h *C.payidem_client) error {
		deadlineMS, handle, release := callControl(ctx)
		defer release()
		var cerr *C.payidem_error
		if rc := f(h, C.uint64_t(deadlineMS), C.uintptr_t(handle), &out, &cerr); rc != C.PAYIDEM_OK {
			return newError(rc, cerr, ctx.Err())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return takeOutcome(out), nil
}

// Resume drives an unsettled operation of the journal again with its own
// key and body (after a crash, ErrOutcomeUnknown or ErrCancelled); a
// settled one answers its stored outcome. An order id the journal does not
// hold is ErrInvalidArgument naming "order_id". ctx as in Execute.
func (c *Client) Resume(ctx context.Context, orderID string) (*Outcome, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	var args cstrings
	order, err := args.add("order_id", orderID)
	if err != nil {
		return nil, err
	}
	return c.drive(ctx, func(h *C.payidem_client, deadlineMS C.uint64_t, handle C.uintptr_t, out **C.payidem_outcome, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_go_resume(h, args.ptr(order), deadlineMS, handle, out, cerr)
	})
}

// Status is the journal's record of an order (StateNotFound when absent).
// A done ctx ends it before it starts (ErrCancelled and ctx.Err()).
func (c *Client) Status(ctx context.Context, orderID string) (OperationStatus, error) {
	var args cstrings
	order, err := args.add("order_id", orderID)
	if err != nil {
		return OperationStatus{}, err
	}
	if _, err := liveContext(ctx); err != nil {
		return OperationStatus{}, err
	}
	var found C.bool
	var state C.payidem_operation_state
	var attempts C.uint32_t
	if err := c.call(func(h *C.payidem_client, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_client_status(h, args.ptr(order), &found, &state, &attempts, cerr)
	}); err != nil {
		return OperationStatus{}, err
	}
	if !found {
		return OperationStatus{State: StateNotFound}, nil
	}
	return OperationStatus{State: State(state), Attempts: int(attempts)}, nil
}

// ListUnknown gives the order ids whose outcome is unknown (in flight when
// a process died, or ended with ErrOutcomeUnknown), oldest first: Resume
// each, or call ResumeUnknown. A done ctx ends it before it starts
// (ErrCancelled and ctx.Err()).
func (c *Client) ListUnknown(ctx context.Context) ([]string, error) {
	if _, err := liveContext(ctx); err != nil {
		return nil, err
	}
	var list *C.payidem_order_list
	if err := c.call(func(h *C.payidem_client, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_client_list_unknown(h, &list, cerr)
	}); err != nil {
		return nil, err
	}
	defer C.payidem_order_list_free(list)
	n := int(C.payidem_order_list_len(list))
	ids := make([]string, 0, n)
	for i := 0; i < n; i++ {
		ids = append(ids, goStringOrEmpty(C.payidem_order_list_get(list, C.size_t(i))))
	}
	return ids, nil
}

// ResumeResult is what ResumeUnknown did with one order: exactly one of
// Outcome and Err is set.
type ResumeResult struct {
	OrderID string
	// Outcome is the settled outcome when the resume settled the order.
	Outcome *Outcome
	// Err is the resume's error, as Resume returns it: ErrOperationBusy
	// for an order another process is driving right now, ErrOutcomeUnknown
	// when it is still unknown (resume it later), ErrRejected, ErrKeyExpired,
	// ErrCancelled once ctx is done, ...
	Err error
}

// ResumeUnknown resumes every operation whose outcome is unknown
// (ListUnknown, oldest first), each with Resume and ctx, and returns one
// result per order, in that order. The error is non-nil only when the list
// cannot be read (then no order was resumed); the failure of one order is
// in its result and does not stop the others. Once ctx is done, the
// remaining orders end at once with ErrCancelled, their keys kept.
func (c *Client) ResumeUnknown(ctx context.Context) ([]ResumeResult, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	ids, err := c.ListUnknown(ctx)
	if err != nil {
		return nil, err
	}
	results := make([]ResumeResult, 0, len(ids))
	for _, id := range ids {
		out, err := c.Resume(ctx, id)
		results = append(results, ResumeResult{OrderID: id, Outcome: out, Err: err})
	}
	return results, nil
}

// PurgeSettled deletes the settled operations (succeeded, rejected,
// conflict) whose last change is older than Config.SettledRetention, never
// an unsettled one, and returns how many went. NewClient purges once; a
// long-running process calls this now and then. A done ctx ends it before
// it starts (ErrCancelled and ctx.Err()).
func (c *Client) PurgeSettled(ctx context.Context) (int, error) {
	if _, err := liveContext(ctx); err != nil {
		return 0, err
	}
	var purged C.size_t
	if err := c.call(func(h *C.payidem_client, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_client_purge_settled(h, &purged, cerr)
	}); err != nil {
		return 0, err
	}
	return int(purged), nil
}

// Response is the platform's answer to Get, whatever its status.
type Response struct {
	Status  int
	Headers http.Header
	Body    []byte
}

// Get sends one signed GET of path (joined to BaseURL like every request,
// e.g. "/v1/payments/pay_123") to read a resource: no journal, no retry,
// at most RequestTimeout. Any answer is a Response, 4xx and 5xx included;
// no answer (connection, TLS, timeout) is ErrTransport. A done ctx ends it
// before it starts; when ctx is done while the request is on the wire, Get
// returns at once with ErrCancelled (and ctx.Err()) and the request, which
// changes nothing on the platform, ends in the background within
// RequestTimeout.
func (c *Client) Get(ctx context.Context, path string) (*Response, error) {
	var args cstrings
	p, err := args.add("path", path)
	if err != nil {
		return nil, err
	}
	ctx, err = liveContext(ctx)
	if err != nil {
		return nil, err
	}
	type result struct {
		resp *Response
		err  error
	}
	get := func() result {
		var out *C.payidem_outcome
		if err := c.call(func(h *C.payidem_client, cerr **C.payidem_error) C.payidem_result {
			return C.payidem_client_get(h, args.ptr(p), &out, cerr)
		}); err != nil {
			return result{err: err}
		}
		defer C.payidem_outcome_free(out)
		return result{resp: responseOf(out)}
	}
	if ctx.Done() == nil {
		r := get()
		return r.resp, r.err
	}
	done := make(chan result, 1)
	go func() { done <- get() }()
	select {
	case r := <-done:
		return r.resp, r.err
	case <-ctx.Done():
		return nil, cancelledBy(ctx)
	}
}

// takeOutcome copies a C outcome into Go and frees it.
func takeOutcome(out *C.payidem_outcome) *Outcome {
	defer C.payidem_outcome_free(out)
	r := responseOf(out)
	var journalErr error
	if je := C.payidem_outcome_journal_error(out); je != nil {
		journalErr = copyError(C.payidem_error_code(je), je, nil)
	}
	return &Outcome{
		JournalErr:     journalErr,
		Status:         r.Status,
		Headers:        r.Headers,
		Body:           r.Body,
		Replayed:       bool(C.payidem_outcome_replayed(out)),
		IdempotencyKey: goStringOrEmpty(C.payidem_outcome_idempotency_key(out)),
		OrderID:        goStringOrEmpty(C.payidem_outcome_order_id(out)),
		Attempts:       int(C.payidem_outcome_attempts(out)),
	}
}

// responseOf copies the status, headers and body of a C outcome into Go.
func responseOf(out *C.payidem_outcome) *Response {
	r := &Response{
		Status:  int(C.payidem_outcome_http_status(out)),
		Headers: http.Header{},
		Body:    []byte{},
	}
	var body *C.uint8_t
	var n C.size_t
	if C.payidem_outcome_body(out, &body, &n) && n > 0 {
		r.Body = C.GoBytes(unsafe.Pointer(body), C.int(n))
	}
	count := int(C.payidem_outcome_header_count(out))
	for i := 0; i < count; i++ {
		var name, value *C.char
		if C.payidem_outcome_header_at(out, C.size_t(i), &name, &value, nil) == C.PAYIDEM_OK {
			r.Headers.Add(C.GoString(name), C.GoString(value))
		}
	}
	return r
}
