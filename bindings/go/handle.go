//go:build cgo

package payidem

/*
#include "payidem.h"
*/
import "C"

import (
	"context"
	"runtime"
	"sync"
	"unsafe"
)

// withLive runs f with the C handle *ptr (a pointer to an opaque C type)
// while lock is held, keeping owner (the Go value whose finalizer frees the
// handle) reachable until f returns. A closed handle (*ptr nil) is
// ErrClosed and f does not run.
func withLive[P comparable](lock sync.Locker, ptr *P, owner any, f func(P) error) error {
	lock.Lock()
	defer lock.Unlock()
	var closed P
	if *ptr == closed {
		return ErrClosed
	}
	err := f(*ptr)
	runtime.KeepAlive(owner)
	return err
}

// track counts owner's new C handle in liveHandles and sets close (owner's
// Close method) as its finalizer, so that a forgotten handle is freed.
func track(owner, close any) {
	liveHandles.Add(1)
	runtime.SetFinalizer(owner, close)
}

// release frees the C handle *ptr with free under lock and marks it closed
// (nil), undoing track; a handle already closed is left alone.
func release[P comparable](lock sync.Locker, ptr *P, owner any, free func(P)) {
	lock.Lock()
	defer lock.Unlock()
	var closed P
	if *ptr == closed {
		return
	}
	free(*ptr)
	*ptr = closed
	liveHandles.Add(-1)
	runtime.SetFinalizer(owner, nil)
}

// cResult runs one C call that reports failure through a payidem_error and
// gives its Go error (nil on PAYIDEM_OK).
func cResult(f func(cerr **C.payidem_error) C.payidem_result) error {
	var cerr *C.payidem_error
	if rc := f(&cerr); rc != C.PAYIDEM_OK {
		return newError(rc, cerr, nil)
	}
	return nil
}

// use runs f with the client's live handle under its read lock (Close
// waits for it); ErrClosed after Close.
func (c *Client) use(f func(h *C.payidem_client) error) error {
	return withLive(c.mu.RLocker(), &c.ptr, c, f)
}

// call is use for a single C call: its result becomes the error.
func (c *Client) call(f func(h *C.payidem_client, cerr **C.payidem_error) C.payidem_result) error {
	return c.use(func(h *C.payidem_client) error {
		return cResult(func(cerr **C.payidem_error) C.payidem_result { return f(h, cerr) })
	})
}

// readText is readText with the client's live handle; ErrClosed after
// Close.
func (c *Client) readText(size int, fill func(h *C.payidem_client, buf *C.char, n C.size_t, len *C.size_t, cerr **C.payidem_error) C.payidem_result) (text string, err error) {
	err = c.use(func(h *C.payidem_client) (err error) {
		text, err = readText(size, func(buf *C.char, n C.size_t, l *C.size_t, cerr **C.payidem_error) C.payidem_result {
			return fill(h, buf, n, l, cerr)
		})
		return err
	})
	return text, err
}

// use runs f with the verifier's live handle under its read lock (Close
// waits for it); ErrClosed after Close.
func (v *Verifier) use(f func(h *C.payidem_verifier) error) error {
	return withLive(v.mu.RLocker(), &v.ptr, v, f)
}

// call is use for a single C call: its result becomes the error.
func (v *Verifier) call(f func(h *C.payidem_verifier, cerr **C.payidem_error) C.payidem_result) error {
	return v.use(func(h *C.payidem_verifier) error {
		return cResult(func(cerr **C.payidem_error) C.payidem_result { return f(h, cerr) })
	})
}

// call runs one C call with the call's live handle, its methods
// serialized; ErrClosed after Close.
func (call *Call) call(f func(h *C.payidem_call, cerr **C.payidem_error) C.payidem_result) error {
	return withLive(&call.mu, &call.ptr, call, func(h *C.payidem_call) error {
		return cResult(func(cerr **C.payidem_error) C.payidem_result { return f(h, cerr) })
	})
}

// readText calls fill (a C call writing text into a caller's buffer) with
// a buffer of size bytes first, then as large as fill asks, until the text
// fits.
func readText(size int, fill func(buf *C.char, n C.size_t, len *C.size_t, cerr **C.payidem_error) C.payidem_result) (string, error) {
	buf := make([]byte, size)
	for {
		var n C.size_t
		var cerr *C.payidem_error
		rc := fill((*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &n, &cerr)
		switch {
		case rc == C.PAYIDEM_OK:
			return string(buf[:n]), nil
		case rc == C.PAYIDEM_BUFFER_TOO_SMALL && int(n) >= len(buf):
			C.payidem_error_free(cerr)
			// Room to spare: the text (metrics) may grow before the next try.
			buf = make([]byte, int(n)+1+size/2)
		default:
			return "", newError(rc, cerr, nil)
		}
	}
}

// liveContext is ctx (context.Background() when nil) when it is not done
// yet, else the ErrCancelled of a call it ended before it started.
func liveContext(ctx context.Context) (context.Context, error) {
	if ctx == nil {
		return context.Background(), nil
	}
	return ctx, cancelledBy(ctx)
}

// use runs f with the signer's live handle under its read lock (Close
// waits for it); ErrClosed after Close.
func (s *Signer) use(f func(h *C.payidem_signer) error) error {
	return withLive(s.mu.RLocker(), &s.ptr, s, f)
}

// call is use for a single C call: its result becomes the error.
func (s *Signer) call(f func(h *C.payidem_signer, cerr **C.payidem_error) C.payidem_result) error {
	return s.use(func(h *C.payidem_signer) error {
		return cResult(func(cerr **C.payidem_error) C.payidem_result { return f(h, cerr) })
	})
}

// use runs f with the machine's live handle, its methods serialized;
// ErrClosed after Close.
func (m *Machine) use(f func(h *C.payidem_operation) error) error {
	return withLive(&m.mu, &m.ptr, m, f)
}

// call is use for a single C call: its result becomes the error.
func (m *Machine) call(f func(h *C.payidem_operation, cerr **C.payidem_error) C.payidem_result) error {
	return m.use(func(h *C.payidem_operation) error {
		return cResult(func(cerr **C.payidem_error) C.payidem_result { return f(h, cerr) })
	})
}
