//go:build cgo

package payidem

/*
#include <stdlib.h>
#include "payidem.h"
*/
import "C"

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
)

// ParamStyle is the placeholder style of the SQL statement OutboxInsert
// gives.
type ParamStyle int

const (
	// ParamsDollar: $1, $2, ... (pgx, lib/pq, PostgreSQL itself).
	ParamsDollar ParamStyle = C.PAYIDEM_PARAMS_DOLLAR
	// ParamsPercentS: %s (drivers in the Python DB-API style).
	ParamsPercentS ParamStyle = C.PAYIDEM_PARAMS_PERCENT_S
)

// outboxJSON is what payidem_client_outbox_insert writes.
type outboxJSON struct {
	SQL        string    `json:"sql"`
	Params     []*string `json:"params"`
	ParamTypes []string  `json:"param_types"`
}

// OutboxInsert gives the SQL statement and its arguments that record op as
// pending in a PostgreSQL journal's tables, for the application to run in
// its own database transaction together with its business rows (the
// outbox: both are committed, or neither), for example
// tx.ExecContext(ctx, sql, args...). Any client on that journal later
// sends it with TakeOver, with its key and body unchanged. op is checked
// and frozen as Execute would (the base URL's path prefix joins the paths,
// the key is defaulted); nothing is journaled or sent. The journal's tables
// must exist (a client opened the PostgreSQL journal once); the statement
// fails with a unique violation when the order id or the key is already
// there.
//
// args holds seven values, in order order id, idempotency key, method,
// path, body, body SHA-256 (hex), status path, each a string except the
// body ([]byte, bytea) and a missing status path (nil, SQL NULL): the types
// database/sql drivers take. style picks the placeholders; another value
// is ErrInvalidArgument naming "param_style", as a bad op names its field.
func (c *Client) OutboxInsert(op Operation, style ParamStyle) (sql string, args []any, err error) {
	if style < 0 || uint64(style) > math.MaxUint32 {
		return "", nil, invalid("param_style", fmt.Sprintf("%d is not a ParamStyle", int(style)))
	}
	cop, err := newCOperation(op)
	if err != nil {
		return "", nil, err
	}
	a := &cop.args
	text, err := c.readText(1024+2*len(op.Body), func(h *C.payidem_client, buf *C.char, n C.size_t, l *C.size_t, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_client_outbox_insert(h, a.ptr(cop.order), a.ptr(cop.method),
			a.ptr(cop.path), bytesPtr(op.Body), C.size_t(len(op.Body)), a.ptr(cop.key),
			a.ptr(cop.status), C.uint32_t(uint32(style)), buf, n, l, cerr)
	})
	runtime.KeepAlive(op.Body)
	if err != nil {
		return "", nil, err
	}
	return decodeOutbox([]byte(text))
}

// internalError is a library answer the binding cannot read.
func internalError(msg string) error {
	return &Error{Code: CodeInternal, Message: msg, sentinel: ErrInternal}
}

// decodeOutbox turns the C ABI's JSON into database/sql arguments.
func decodeOutbox(text []byte) (string, []any, error) {
	var j outboxJSON
	if err := json.Unmarshal(text, &j); err != nil {
		return "", nil, internalError("the library's outbox JSON cannot be read: " + err.Error())
	}
	if len(j.Params) != len(j.ParamTypes) {
		return "", nil, internalError("the library's outbox JSON has not as many types as parameters")
	}
	args := make([]any, len(j.Params))
	for i, p := range j.Params {
		switch {
		case p == nil:
			args[i] = nil
		case j.ParamTypes[i] == "bytea":
			b, err := base64.StdEncoding.DecodeString(*p)
			if err != nil {
				return "", nil, internalError("the library's outbox body is not base64: " + err.Error())
			}
			args[i] = b
		default:
			args[i] = *p
		}
	}
	return j.SQL, args, nil
}

// TakeOver takes over and drives up to limit unsettled operations of the
// journal that no live call holds (leases free or expired, outbox
// inserts), one after the other, oldest first, each with its own key and
// body; it returns the order ids it drove, in order (none when there was
// nothing to take). How each ended is in the journal: Status gives its
// state, Resume the stored outcome of a settled one without sending
// anything; one whose call failed (outcome unknown, a journal error) stays
// unsettled for the next takeover. Several clients (a fleet's instances, a
// sidecar, a cron job) may run it at once on one journal: each operation
// is taken by one of them. A done ctx ends it before it starts
// (ErrCancelled and ctx.Err()); once started it runs to its end. limit
// outside 0..=4294967295 is ErrInvalidArgument naming "limit"; a journal
// that cannot be asked is ErrJournal.
func (c *Client) TakeOver(ctx context.Context, limit int) ([]string, error) {
	if limit < 0 || uint64(limit) > math.MaxUint32 {
		return nil, invalid("limit", fmt.Sprintf("%d is outside 0..=4294967295", limit))
	}
	if _, err := liveContext(ctx); err != nil {
		return nil, err
	}
	var list *C.payidem_order_list
	err := c.call(func(h *C.payidem_client, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_client_take_over(h, C.uint32_t(limit), &list, cerr)
	})
	if err != nil {
		return nil, err
	}
	return takeOrderIDs(list), nil
}

// takeOrderIDs copies the order ids of list, in order, and frees it.
func takeOrderIDs(list *C.payidem_order_list) []string {
	defer C.payidem_order_list_free(list)
	n := int(C.payidem_order_list_len(list))
	ids := make([]string, 0, n)
	for i := 0; i < n; i++ {
		ids = append(ids, goStringOrEmpty(C.payidem_order_list_get(list, C.size_t(i))))
	}
	return ids
}
