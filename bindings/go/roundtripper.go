//go:build cgo

package payidem

/*
#include "payidem.h"
*/
import "C"

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultMaxResponseBytes bounds the body Transport reads from one answer
// when MaxResponseBytes is 0; a longer body counts as a lost answer. It is
// the linked library's own bound (payidem_max_response_bytes).
var DefaultMaxResponseBytes = int64(C.payidem_max_response_bytes())

// operationKey is the context key of WithOperation.
type operationKey struct{}

// RequestOperation names the business operation a request sent through
// Transport carries out (see WithOperation).
type RequestOperation struct {
	// OrderID names the operation in the journal (1..=128 of
	// [A-Za-z0-9._:-]).
	OrderID string
	// StatusPath is the path (relative to the client's BaseURL, like
	// Operation.StatusPath) of a signed GET telling whether the operation
	// landed; "" when none.
	StatusPath string
}

// WithOperation returns a copy of ctx that makes a request built with it a
// payidem operation when sent through Transport: orderID names it in the
// journal, statusPath ("" for none) is asked after an answer that may hide
// the outcome (504, a timeout).
func WithOperation(ctx context.Context, orderID, statusPath string) context.Context {
	return context.WithValue(ctx, operationKey{}, RequestOperation{OrderID: orderID, StatusPath: statusPath})
}

// OperationFromContext gives the operation WithOperation put in ctx.
func OperationFromContext(ctx context.Context) (RequestOperation, bool) {
	op, ok := ctx.Value(operationKey{}).(RequestOperation)
	return op, ok
}

// Transport is an http.RoundTripper that runs each request as a payidem
// operation of Client, over Base: the net/http stack of the caller's
// choice (its proxy, TLS, connection pool, tracing) carries the bytes and
// the library takes every decision, with exactly Execute's rules and crash
// guarantees (RoundTrip drives a Call).
//
// For one request, RoundTrip:
//   - takes the order id and status path from the request's context
//     (WithOperation; a request without one is refused with
//     ErrInvalidArgument naming "operation": the Transport sends nothing
//     unsigned or unjournaled — use Client.Get for reads);
//   - takes the operation's path from the request's URL, which must lie
//     under the client's BaseURL (same scheme and host, below its path
//     prefix), the key from the request's Idempotency-Key header (default
//     "create-{order id}"), and reads the body once: that body is frozen
//     with the operation in the journal before anything leaves;
//   - sends every attempt the call asks for as a new request to Base, to
//     Client.URL of the attempt's path, with the request's own headers
//     (Content-Type, User-Agent, cookies ...) plus the attempt's signature
//     headers, each with a fresh nonce: a retry is always re-signed, and
//     net/http cannot replay an attempt by itself (see sendAttempt);
//   - tells the call what happened: the whole answer (up to
//     MaxResponseBytes), or, from httptrace, whether the request's headers
//     were written before a failure (not written: nothing reached the
//     platform; written: it may have, answer lost);
//   - waits as the call says, with the request's context: when it is done,
//     the call is cancelled (key kept) and RoundTrip returns an error
//     matching ErrCancelled and the context's error;
//   - returns the settled answer as the *http.Response: a 2xx
//     (Idempotent-Replayed: true when the platform replayed it), or a final
//     refusal the platform keeps under the key (402 card_declined, 409
//     idempotency_conflict, ...). A returned response is final: the
//     operation is never sent again. An order already settled in the
//     journal answers its stored response without a network call.
//
// Every other end is an error (as *Error, wrapped in *url.Error by
// http.Client) whose code says what happened and whether it is final:
// ErrOutcomeUnknown (may have landed; resume it with the same key:
// Client.ResumeUnknown, Client.Resume, or the same request again),
// ErrRefused (every attempt refused before the platform's idempotency
// check, nothing happened), ErrTransport (nothing reached the platform),
// ErrKeyExpired (final), ErrOperationBusy (another call drives the order),
// ErrIdempotencyConflict (the order id was journaled with another request),
// ErrCancelled, ErrJournal, ErrInvalidArgument.
//
// Safe for concurrent use.
type Transport struct {
	// Client runs the operations (required).
	Client *Client
	// Base sends each attempt; nil means http.DefaultTransport. Give your
	// own *http.Transport (or your *http.Client's Transport) to keep its
	// settings. A Base that reports no httptrace events (http.Transport
	// reports them) has every failure counted as possibly sent, never as
	// "nothing reached the platform".
	Base http.RoundTripper
	// MaxResponseBytes bounds the body read from one answer; 0 means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
}

// HTTPClient returns an *http.Client that sends through a Transport of c:
// a copy of base (its Timeout, Jar ...; nil for a zero http.Client) whose
// Transport wraps base's Transport, and which never follows a redirect
// (the library never does: a redirect would be another operation). A
// request needs WithOperation in its context.
func (c *Client) HTTPClient(base *http.Client) *http.Client {
	hc := &http.Client{}
	if base != nil {
		*hc = *base
	}
	hc.Transport = &Transport{Client: c, Base: hc.Transport}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return hc
}

// RoundTrip runs req as a payidem operation (see Transport).
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	// RoundTrip must close the body on every path; the body is read once
	// here and frozen with the operation.
	body, readErr := readRequestBody(req)
	if readErr != nil {
		return nil, invalid("body", "could not be read: "+readErr.Error())
	}
	if t.Client == nil {
		return nil, invalid("Client", "must not be nil")
	}
	ctx := req.Context()
	op, ok := OperationFromContext(ctx)
	if !ok {
		return nil, invalid("operation", "is missing from the request's context: build it with payidem.WithOperation")
	}
	path, err := t.Client.targetOf(req.URL)
	if err != nil {
		return nil, err
	}
	call, err := t.Client.Begin(ctx, Operation{
		OrderID:        op.OrderID,
		Method:         req.Method,
		Path:           path,
		Body:           body,
		IdempotencyKey: req.Header.Get(HeaderIdempotencyKey),
		StatusPath:     op.StatusPath,
	})
	if err != nil {
		return nil, err
	}
	defer call.Close()
	var last *Reply // the last answer of this call, for a final refusal's headers
	for {
		if ctx.Err() != nil {
			return t.cancel(call, req, last)
		}
		step, err := call.Step()
		if err != nil {
			return nil, err
		}
		switch step.Kind {
		case StepSend:
			reply := t.sendAttempt(ctx, req, step.Send)
			if reply.Outcome != OutcomeResponse && ctx.Err() != nil {
				// The caller gave up while the attempt was out: the call
				// ends as cancelled, unknown if it may have left.
				return t.cancel(call, req, last)
			}
			if reply.Outcome == OutcomeResponse {
				last = &reply
			}
			if err := call.Report(reply); err != nil {
				return nil, err
			}
		case StepWait:
			timer := time.NewTimer(step.Wait)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				return t.cancel(call, req, last)
			}
		case StepEnd:
			return settled(req, step.End, last)
		default:
			return nil, &Error{Code: CodeInternal, Message: "a call gave a " + step.Kind.String() + " step", sentinel: ErrInternal}
		}
	}
}

// cancel ends call because req's context is done.
func (t *Transport) cancel(call *Call, req *http.Request, last *Reply) (*http.Response, error) {
	end, err := call.Cancel(req.Context().Err())
	if err != nil {
		return nil, err
	}
	return settled(req, end, last)
}

// settled turns an end into RoundTrip's result: the answer of a final end
// that has one, the end's error otherwise.
func settled(req *http.Request, end *End, last *Reply) (*http.Response, error) {
	if end.Err == nil {
		if end.Outcome == nil {
			return nil, &Error{Code: CodeInternal, Message: "a successful end without an outcome", sentinel: ErrInternal}
		}
		o := end.Outcome
		return response(req, o.Status, o.Headers, o.Body), nil
	}
	var e *Error
	if end.Final && errors.As(end.Err, &e) && e.HTTPStatus != 0 {
		// A final refusal the platform keeps under the key (rejected,
		// conflict): an answer like any other for net/http. Its headers
		// are those of this call's last answer when it is that answer (a
		// journal's stored refusal has status and body only).
		header := http.Header{}
		if last != nil && last.Status == e.HTTPStatus && bytes.Equal(last.Body, e.Body) {
			header = last.Header.Clone()
		}
		return response(req, e.HTTPStatus, header, e.Body), nil
	}
	return nil, end.Err
}

// response is an *http.Response holding a settled answer.
func response(req *http.Request, status int, header http.Header, body []byte) *http.Response {
	if header == nil {
		header = http.Header{}
	}
	return &http.Response{
		Status:        strings.TrimSpace(fmt.Sprintf("%d %s", status, http.StatusText(status))),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// readRequestBody reads req's body whole and closes it.
func readRequestBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return []byte{}, nil
	}
	defer req.Body.Close()
	return io.ReadAll(req.Body)
}

// The headers an attempt sets and the caller's request may not: the
// signed ones (the library's list, the key among them; a status query has
// none) and the framing, which net/http computes.
var attemptOwnedHeaders = append(signedHeaderNames(), "Content-Length", "Transfer-Encoding")

// sendAttempt sends one attempt of the call to Base and says what came of
// it.
//
// Each attempt is a new *http.Request whose Body is set and whose GetBody
// is nil. That is deliberate: net/http's Transport silently replays a
// request on a fresh connection when a reused one fails early (the server
// closed it, a read error before the first response byte) if the request is
// "replayable" — no body, or a GetBody to rewind it, and an idempotent
// method or an Idempotency-Key header, which every payidem operation
// carries. Such a replay would resend the same signed bytes (same nonce),
// which the platform refuses as nonce_reused even though the first copy may
// have run the payment. With a body and no GetBody (an empty body for a
// status query too) the request is never replayable: the failure comes back
// here, the call decides, and a retry is re-signed with a fresh nonce.
func (t *Transport) sendAttempt(ctx context.Context, orig *http.Request, a *Attempt) Reply {
	if a == nil {
		return Reply{Outcome: OutcomeNotSent, Reason: "a send step without an attempt"}
	}
	target, err := t.Client.URL(a.Path)
	if err != nil {
		return Reply{Outcome: OutcomeNotSent, Reason: err.Error()}
	}
	actx := ctx
	if a.Timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, a.Timeout)
		defer cancel()
	}
	// Whether the base transport traces at all (http.Transport always
	// reports GetConn first), and whether the request's headers were
	// written: without them the platform cannot have run anything.
	var traced, wrote atomic.Bool
	actx = httptrace.WithClientTrace(actx, &httptrace.ClientTrace{
		GetConn:      func(string) { traced.Store(true) },
		WroteHeaders: func() { wrote.Store(true) },
	})
	r, err := http.NewRequestWithContext(actx, a.Method, target, nil)
	if err != nil {
		return Reply{Outcome: OutcomeNotSent, Reason: "the request could not be built: " + err.Error()}
	}
	r.Header = orig.Header.Clone()
	if r.Header == nil {
		r.Header = http.Header{}
	}
	for _, name := range attemptOwnedHeaders {
		r.Header.Del(name)
	}
	for name := range a.Header {
		r.Header.Del(name)
	}
	if a.Kind == AttemptStatusQuery {
		r.Header.Del("Content-Type")
	} else if len(a.Body) > 0 && r.Header.Get("Content-Type") == "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for name, values := range a.Header {
		r.Header[name] = append([]string(nil), values...)
	}
	r.Body = io.NopCloser(bytes.NewReader(a.Body))
	r.ContentLength = int64(len(a.Body))
	r.GetBody = nil // never replayable by net/http: see above

	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(r)
	if err != nil {
		if traced.Load() && !wrote.Load() {
			return Reply{Outcome: OutcomeNotSent, Reason: describeSendError(err)}
		}
		return Reply{Outcome: OutcomeSentNoResponse, Reason: describeSendError(err)}
	}
	defer resp.Body.Close()
	limit := t.MaxResponseBytes
	if limit <= 0 {
		limit = DefaultMaxResponseBytes
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return Reply{Outcome: OutcomeSentNoResponse, Reason: "response body lost: " + describeSendError(err)}
	}
	if int64(len(body)) > limit {
		return Reply{Outcome: OutcomeSentNoResponse, Reason: fmt.Sprintf("response body over %d bytes", limit)}
	}
	return Reply{Outcome: OutcomeResponse, Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// describeSendError is a transport error for people, naming a timeout.
func describeSendError(err error) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout: " + err.Error()
	}
	return err.Error()
}
