//go:build cgo

package payidem

// Metrics of a Client and a Verifier (the library's own counters and
// histograms, see docs/metrics.md), as a Go value, Prometheus text, an
// http.Handler and an expvar.Var; and the client's call-level events.
// Standard library only.

/*
#include <stdint.h>
#include <stdlib.h>
#include "payidem.h"

extern void payidemGoEventJSON(uintptr_t handle, char *json);

static void payidem_go_event_json(void *userdata, const char *json) {
	payidemGoEventJSON((uintptr_t)userdata, (char *)json);
}

static void payidem_go_set_event_json_handle(const payidem_client *client, uintptr_t handle) {
	payidem_client_set_event_json_callback(client, handle ? payidem_go_event_json : NULL,
	                                       (void *)handle);
}
*/
import "C"

import (
	"context"
	"encoding/json"
	"expvar"
	"io"
	"log/slog"
	"net/http"
	"runtime/cgo"
	"sync"
	"time"
	"unsafe"
)

// MetricsSnapshot is every metric of a client or a verifier at one moment,
// decoded from the library's JSON form (docs/metrics.md).
type MetricsSnapshot struct {
	Metrics []Metric `json:"metrics"`
}

// Metric is one metric family: its name (payidem_…), type ("counter",
// "gauge" or "histogram"), help text and series.
type Metric struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Help   string   `json:"help"`
	Series []Series `json:"series"`
}

// Series is one labelled series. Value is a counter's or gauge's value;
// a histogram has Count, Sum (seconds) and cumulative Buckets instead.
type Series struct {
	Labels  map[string]string `json:"labels"`
	Value   float64           `json:"value"`
	Count   uint64            `json:"count"`
	Sum     float64           `json:"sum"`
	Buckets []Bucket          `json:"buckets"`
}

// Bucket is a histogram bucket: how many observations were at most LE
// seconds (cumulative; the +Inf bucket is the series' Count).
type Bucket struct {
	LE    float64 `json:"le"`
	Count uint64  `json:"count"`
}

// Sum adds up the metric name over every series whose labels include all
// of labels: the values of a counter or gauge, the observation counts of a
// histogram; 0 when nothing matches.
func (s MetricsSnapshot) Sum(name string, labels map[string]string) float64 {
	total := 0.0
	for _, m := range s.Metrics {
		if m.Name != name {
			continue
		}
	series:
		for _, ser := range m.Series {
			for k, v := range labels {
				if ser.Labels[k] != v {
					continue series
				}
			}
			if m.Type == "histogram" {
				total += float64(ser.Count)
			} else {
				total += ser.Value
			}
		}
	}
	return total
}

// The forms of payidem_metrics_format.
const (
	metricsPrometheus = C.PAYIDEM_METRICS_PROMETHEUS
	metricsJSON       = C.PAYIDEM_METRICS_JSON
)

func (c *Client) metricsText(format uint32) (string, error) {
	return c.readText(8192, func(h *C.payidem_client, buf *C.char, n C.size_t, l *C.size_t, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_client_metrics(h, C.uint32_t(format), buf, n, l, cerr)
	})
}

func (v *Verifier) metricsText(format uint32) (text string, err error) {
	err = v.use(func(h *C.payidem_verifier) (err error) {
		text, err = readText(8192, func(buf *C.char, n C.size_t, l *C.size_t, cerr **C.payidem_error) C.payidem_result {
			return C.payidem_verifier_metrics(h, C.uint32_t(format), buf, n, l, cerr)
		})
		return err
	})
	return text, err
}

func decodeSnapshot(text string, err error) (MetricsSnapshot, error) {
	var s MetricsSnapshot
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		return s, internalError("metrics JSON: " + err.Error())
	}
	return s, nil
}

// Metrics returns the client's metrics now: attempts by kind, HTTP status
// and next action, calls ended by end, time to settle, journal write
// latency and failures, and the journal's count of operations whose
// outcome is unknown. ErrClosed after Close.
func (c *Client) Metrics() (MetricsSnapshot, error) {
	return decodeSnapshot(c.metricsText(metricsJSON))
}

// WritePrometheus writes the client's metrics to w in the Prometheus text
// exposition format 0.0.4.
func (c *Client) WritePrometheus(w io.Writer) error {
	return writePrometheus(w, c.metricsText)
}

// MetricsHandler serves the client's metrics as Prometheus text (mount it
// at /metrics, or combine several handlers' output).
func (c *Client) MetricsHandler() http.Handler {
	return prometheusHandler(c.metricsText)
}

// ExpvarVar is an expvar.Var whose String is the client's metrics as JSON,
// e.g. expvar.Publish("payidem", client.ExpvarVar()).
func (c *Client) ExpvarVar() expvar.Var {
	return jsonVar(c.metricsText)
}

// Metrics returns the verifier's metrics now: verdicts by code
// ("accepted" or the refusal's code name) and, with the in-memory replay
// cache, its fill. ErrClosed after Close.
func (v *Verifier) Metrics() (MetricsSnapshot, error) {
	return decodeSnapshot(v.metricsText(metricsJSON))
}

// WritePrometheus writes the verifier's metrics to w in the Prometheus
// text exposition format 0.0.4.
func (v *Verifier) WritePrometheus(w io.Writer) error {
	return writePrometheus(w, v.metricsText)
}

// MetricsHandler serves the verifier's metrics as Prometheus text.
func (v *Verifier) MetricsHandler() http.Handler {
	return prometheusHandler(v.metricsText)
}

// ExpvarVar is an expvar.Var whose String is the verifier's metrics as
// JSON.
func (v *Verifier) ExpvarVar() expvar.Var {
	return jsonVar(v.metricsText)
}

// writePrometheus writes the Prometheus text that text gives to w.
func writePrometheus(w io.Writer, text func(uint32) (string, error)) error {
	t, err := text(metricsPrometheus)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, t)
	return err
}

func prometheusHandler(text func(uint32) (string, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := text(metricsPrometheus)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = io.WriteString(w, body)
	})
}

func jsonVar(text func(uint32) (string, error)) expvar.Var {
	return expvar.Func(func() any {
		body, err := text(metricsJSON)
		if err != nil {
			return map[string]string{"error": err.Error()}
		}
		return json.RawMessage(body)
	})
}

// Event is one event of a client, for logs: an attempt ("attempt"), the
// end of a call ("call_ended") or a failed journal write
// ("journal_failed"). It holds no secret and no body. Level is the
// library's one level policy (the core's, the same in C and Python).
type Event struct {
	Type           string     `json:"type"`
	Level          slog.Level `json:"-"`
	LevelName      string     `json:"level"`
	OrderID        string     `json:"order_id"`
	IdempotencyKey string     `json:"idempotency_key"`
	// Attempt events: the attempt's number, kind and next action names,
	// HTTP status (0 when none) and error code or transport error.
	Attempt        int    `json:"attempt"`
	Kind           string `json:"kind"`
	Next           string `json:"next"`
	HTTPStatus     int    `json:"http_status"`
	ErrorCode      string `json:"error_code"`
	TransportError string `json:"transport_error"`
	Replayed       bool   `json:"replayed"`
	// Call ends: the end's name (succeeded, rejected, conflict, refused,
	// not_sent, unknown, key_expired, cancelled, journal_error), whether
	// it is final, whether it may have landed (yes/no/maybe) and the
	// attempts over every call.
	End      string `json:"end"`
	Final    bool   `json:"final"`
	Landed   string `json:"landed"`
	Attempts int    `json:"attempts"`
	// Journal failures: the write (open, claim, record_attempt, finish, renew),
	// whether it was a durable one and the journal's message.
	Write   string `json:"write"`
	Durable bool   `json:"durable"`
	Message string `json:"message"`
	// Duration of the attempt or the call.
	Duration   time.Duration `json:"-"`
	DurationUS int64         `json:"duration_us"`
}

// eventHooks holds the handle of each client's event hook, by the
// address of its C client (not the *Client, which it must not keep
// alive): replacing or removing a hook deletes the previous handle. The
// handle of a client closed with a hook set stays until its address is
// reused by another client's SetEventHook.
var eventHooks struct {
	sync.Mutex
	handles map[uintptr]cgo.Handle
}

// SetEventHook sets (or with nil removes) the function that receives
// every event of the client: attempts, call ends and journal failures. It
// runs on the goroutine making the call; a panicking hook is recovered.
// Once SetEventHook returns, the previous hook is no longer called. It
// must not call SetEventHook nor start a call on the same client.
func (c *Client) SetEventHook(hook func(Event)) error {
	return c.use(func(ptr *C.payidem_client) error {
		var h cgo.Handle
		if hook != nil {
			h = cgo.NewHandle(hook)
		}
		key := uintptr(unsafe.Pointer(ptr))
		eventHooks.Lock()
		defer eventHooks.Unlock()
		C.payidem_go_set_event_json_handle(ptr, C.uintptr_t(h))
		if eventHooks.handles == nil {
			eventHooks.handles = map[uintptr]cgo.Handle{}
		}
		if old, ok := eventHooks.handles[key]; ok {
			old.Delete()
			delete(eventHooks.handles, key)
		}
		if hook != nil {
			eventHooks.handles[key] = h
		}
		return nil
	})
}

// decodeEvent reads the library's event JSON.
func decodeEvent(text string) (Event, bool) {
	var e Event
	if err := json.Unmarshal([]byte(text), &e); err != nil {
		return e, false
	}
	e.Level = slogLevelNamed(e.LevelName)
	e.Duration = time.Duration(e.DurationUS) * time.Microsecond
	return e, true
}

// SlogEventHook returns a SetEventHook hook that logs every event to
// logger at its Level (attempts, call ends, journal failures).
func SlogEventHook(logger *slog.Logger) func(Event) {
	return func(e Event) {
		attrs := []slog.Attr{
			slog.String("event", e.Type),
			slog.String("order_id", e.OrderID),
		}
		switch e.Type {
		case "attempt":
			attrs = append(attrs, slog.String("idempotency_key", e.IdempotencyKey),
				slog.Int("attempt", e.Attempt), slog.String("kind", e.Kind),
				slog.String("next", e.Next), slog.Int("http_status", e.HTTPStatus),
				slog.Duration("duration", e.Duration))
		case "call_ended":
			attrs = append(attrs, slog.String("idempotency_key", e.IdempotencyKey),
				slog.String("end", e.End), slog.Bool("final", e.Final),
				slog.String("landed", e.Landed), slog.Int("attempts", e.Attempts),
				slog.Duration("duration", e.Duration))
		case "journal_failed":
			attrs = append(attrs, slog.String("write", e.Write), slog.String("message", e.Message))
		}
		if e.ErrorCode != "" {
			attrs = append(attrs, slog.String("error_code", e.ErrorCode))
		}
		logger.LogAttrs(context.Background(), e.Level, "payidem "+e.Type, attrs...)
	}
}
