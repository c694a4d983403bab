//go:build cgo

package payidem

/*
#include "payidem.h"
*/
import "C"

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// JournalMemory, as Config.JournalPath, keeps the client's operations in
// memory only. It is the library's name for a memory journal (a test
// checks it against the linked library).
//
// UNSAFE FOR PRODUCTION. Operations and their idempotency keys die with the
// process: after a crash, a kill or a restart in the middle of a payment,
// the operation cannot be resumed with its key, and paying the order again
// gets a new key, so the card can be charged twice. Use it in tests only;
// production services keep the durable default (JournalPath "") or name a
// file on persistent storage.
const JournalMemory = ":memory:"

// Config configures a Client. A zero field is absent: it takes the
// library's default, which DefaultConfig reads from the linked library.
// Every other value is passed to the library as given and checked there
// alone, by the rule every language shares (core/src/settings: ranges,
// what an explicit 0 means; a negative duration is ErrInvalidArgument
// naming its field). Go has no way to say "absent" apart from 0, so a Go
// Config cannot give an explicit 0 (e.g. BackoffBase 0, retry without
// waiting: use 1ms; MaxClockOffset 0, never adjust the clock: not
// available from Go). The defaults are (a test checks this list against
// the library):
//
//   - JournalPath: "" (the durable default journal)
//   - JournalKey: nil (derived from Secret)
//   - ConnectTimeout: 5s
//   - RequestTimeout: 30s
//   - MaxAttempts: 8
//   - BackoffBase: 200ms
//   - BackoffCap: 10s
//   - Deadline: 60s
//   - KeyRetention: 48h (also the largest allowed)
//   - SettledRetention: 168h (7 days)
//   - MaxClockOffset: 600s
//   - LeaseTTL: 0s (the lease follows Deadline + 30s)
//   - LeaseHeartbeat: 0s (a third of the lease ttl)
//   - RetryBudget: {Capacity:500 RetryCost:5 TimeoutCost:10 SuccessRefund:1}
//   - AllowInsecureHTTP, ProxyFromEnv: false
//   - Proxy, CABundle, ClientCert, ClientKey: "" (none)
type Config struct {
	// BaseURL of the platform, e.g. "https://api.example.com" (required).
	BaseURL string
	// KeyID is sent in X-Api-Key (required).
	KeyID string
	// Secret of the key, 16..=1024 bytes (required). It is copied into the
	// library and never shown; the caller may wipe its slice afterwards.
	Secret []byte
	// JournalKey is the key of the journal's seal and its rows' integrity
	// MACs, 16..=1024 bytes (see docs/journal-integrity.md). nil: derived
	// from Secret (DeriveJournalKey). A journal sealed under another key is
	// refused by NewClient; after a rotation of Secret, set it to
	// DeriveJournalKey(oldSecret). Never shown, like Secret.
	JournalKey []byte
	// JournalPath is the SQLite journal file, created (mode 0600) if
	// missing; its directory must exist.
	//
	// "" (the zero value) is the durable default journal of the user the
	// process runs as: $XDG_STATE_HOME/payidem/journal.sqlite3 when
	// XDG_STATE_HOME is an absolute path, else
	// $HOME/.local/state/payidem/journal.sqlite3; missing directories are
	// created 0700. With neither variable absolute, NewClient fails with
	// ErrJournal: name a file.
	//
	// JournalMemory keeps operations in memory only. NOT FOR PRODUCTION:
	// see JournalMemory.
	JournalPath string
	// ConnectTimeout bounds connecting; RequestTimeout one attempt's whole
	// response.
	ConnectTimeout time.Duration
	RequestTimeout time.Duration
	// MaxAttempts per call (at least 1).
	MaxAttempts int
	// BackoffBase and BackoffCap shape the full-jitter backoff.
	BackoffBase time.Duration
	BackoffCap  time.Duration
	// Deadline bounds one call; a context deadline may shorten it.
	Deadline time.Duration
	// KeyRetention: an unknown operation whose key is older is never sent
	// again (ErrKeyExpired); at most the default, the platform's
	// retention.
	KeyRetention time.Duration
	// SettledRetention: settled operations older than this are purged.
	SettledRetention time.Duration
	// RetryBudget, when set, bounds retries across all calls of the client.
	RetryBudget *RetryBudget
	// AllowInsecureHTTP accepts an http:// BaseURL for a host that is not
	// loopback (localhost, 127.0.0.0/8, [::1]); without it such a BaseURL
	// is ErrInvalidArgument naming BaseURL. Signed requests then travel in
	// clear, and the platform's clock is never learnt from such answers.
	AllowInsecureHTTP bool
	// Proxy is an http:// or https:// proxy URL. No proxy is used unless it
	// is set, or ProxyFromEnv is.
	Proxy string
	// ProxyFromEnv, when Proxy is empty, uses HTTPS_PROXY / HTTP_PROXY /
	// ALL_PROXY and NO_PROXY from the environment (HTTP_PROXY never when
	// REQUEST_METHOD is set, as under CGI). Off by default: the environment
	// is ignored.
	ProxyFromEnv bool
	// CABundle is a PEM file of CA certificates trusted instead of the
	// operating system's trust store (the default, which honours
	// SSL_CERT_FILE and SSL_CERT_DIR).
	CABundle string
	// ClientCert and ClientKey are PEM files of a client certificate
	// (chain) and its private key for mutual TLS: both or neither. The key
	// is read once by NewClient and never appears in errors or String.
	ClientCert string
	ClientKey  string
	// MaxClockOffset bounds the clock offset learnt from a 401
	// timestamp_out_of_window answer (0: the default). A larger answer is
	// not trusted: the call fails with ErrRejected (status 401) and the
	// operation is kept.
	MaxClockOffset time.Duration
	// LeaseTTL is how long a call's lease on an operation holds past its
	// last renewal (beyond RequestTimeout, which every renewal adds so that
	// an attempt in flight stays covered) before another call (another
	// instance of a fleet, Client.TakeOver) may take the operation over;
	// whole seconds, rounded up. 0: Deadline + 30s, longer than any call.
	// A call renews its lease every LeaseHeartbeat while it waits; one that
	// finds its lease lost (paused past it while another call took the
	// operation) never sends again and stops with ErrOperationBusy.
	LeaseTTL time.Duration
	// LeaseHeartbeat is how often a call renews its lease while it waits,
	// and the most time since its last renewal with which it sends; whole
	// milliseconds, rounded up, at least 100ms and shorter than the lease
	// ttl. 0: a third of the lease ttl.
	LeaseHeartbeat time.Duration
	// ZeroSettings names numeric fields (as errors name them: "BackoffBase",
	// "MaxClockOffset", "RetryBudget.RetryCost", ...) whose zero value is
	// an explicit 0 for the library rather than "not set": BackoffBase
	// retries without waiting, MaxClockOffset never adjusts the clock. The
	// library judges that 0 as in every language (a zero ConnectTimeout is
	// ErrInvalidArgument naming it). A named field that is not zero keeps
	// its value; a name that is no Config field is ErrInvalidArgument
	// naming "ZeroSettings".
	ZeroSettings []string
	// OnAttempt, when set, receives every attempt's event, on the goroutine
	// that made the call. It must be safe for concurrent use, and must not
	// call Close, Execute or Resume on the same client (that can deadlock).
	// See SlogHook.
	OnAttempt func(AttemptEvent)
}

// String shows the configuration with its secret and journal key
// redacted, and BaseURL, JournalPath and Proxy through RedactURL (a
// PostgreSQL journal URL or a proxy URL may carry a password), so that a
// logged or printed Config (%v, %+v, %s, slog) never reveals a secret.
func (c Config) String() string {
	budget := "nil"
	if c.RetryBudget != nil {
		budget = fmt.Sprintf("%+v", *c.RetryBudget)
	}
	return fmt.Sprintf("payidem.Config{BaseURL:%q KeyID:%q Secret:<redacted> JournalKey:<redacted> JournalPath:%q "+
		"ConnectTimeout:%v RequestTimeout:%v MaxAttempts:%d BackoffBase:%v BackoffCap:%v "+
		"Deadline:%v KeyRetention:%v SettledRetention:%v RetryBudget:%s OnAttempt:%t "+
		"AllowInsecureHTTP:%t Proxy:%q ProxyFromEnv:%t CABundle:%q ClientCert:%q ClientKey:%q "+
		"MaxClockOffset:%v LeaseTTL:%v LeaseHeartbeat:%v ZeroSettings:%q}",
		RedactURL(c.BaseURL), c.KeyID, RedactURL(c.JournalPath), c.ConnectTimeout, c.RequestTimeout,
		c.MaxAttempts, c.BackoffBase, c.BackoffCap, c.Deadline, c.KeyRetention, c.SettledRetention,
		budget, c.OnAttempt != nil, c.AllowInsecureHTTP, RedactURL(c.Proxy), c.ProxyFromEnv,
		c.CABundle, c.ClientCert, c.ClientKey, c.MaxClockOffset, c.LeaseTTL, c.LeaseHeartbeat, c.ZeroSettings)
}

// GoString is String, for %#v.
func (c Config) GoString() string { return c.String() }

// RetryBudget is a token bucket shared by all calls of a client: retries
// and timeouts spend tokens, successes refund them. Zero fields take the
// defaults (see Config and DefaultConfig).
type RetryBudget struct {
	Capacity      uint32
	RetryCost     uint32
	TimeoutCost   uint32
	SuccessRefund uint32
}

// options is the JSON object payidem_client_new documents. A nil field is
// absent (the library's default); every other value is passed as given and
// checked by the library alone (core/src/settings), so Go states no range
// and no default of its own.
type options struct {
	BaseURL           string         `json:"base_url"`
	KeyID             string         `json:"key_id"`
	JournalPath       string         `json:"journal_path,omitempty"`
	JournalKeyHex     string         `json:"journal_key_hex,omitempty"`
	ConnectTimeoutMS  *int64         `json:"connect_timeout_ms,omitempty"`
	RequestTimeoutMS  *int64         `json:"request_timeout_ms,omitempty"`
	Retry             *retryOptions  `json:"retry,omitempty"`
	RetryBudget       *budgetOptions `json:"retry_budget,omitempty"`
	KeyRetentionS     *int64         `json:"key_retention_s,omitempty"`
	SettledRetentionS *int64         `json:"settled_retention_s,omitempty"`
	MaxClockOffsetS   *int64         `json:"max_clock_offset_s,omitempty"`
	LeaseTTLS         *int64         `json:"lease_ttl_s,omitempty"`
	LeaseHeartbeatMS  *int64         `json:"lease_heartbeat_ms,omitempty"`
	AllowInsecureHTTP bool           `json:"allow_insecure_http,omitempty"`
	Proxy             string         `json:"proxy,omitempty"`
	ProxyFromEnv      bool           `json:"proxy_from_env,omitempty"`
	CABundle          string         `json:"ca_bundle,omitempty"`
	ClientCert        string         `json:"client_cert,omitempty"`
	ClientKey         string         `json:"client_key,omitempty"`
}

type retryOptions struct {
	BaseMS      *int64 `json:"base_ms,omitempty"`
	CapMS       *int64 `json:"cap_ms,omitempty"`
	MaxAttempts *int64 `json:"max_attempts,omitempty"`
	DeadlineMS  *int64 `json:"deadline_ms,omitempty"`
}

type budgetOptions struct {
	Capacity      *int64 `json:"capacity,omitempty"`
	RetryCost     *int64 `json:"retry_cost,omitempty"`
	TimeoutCost   *int64 `json:"timeout_cost,omitempty"`
	SuccessRefund *int64 `json:"success_refund,omitempty"`
}

// setting is n as a present setting, or absent (nil) for Go's zero value.
func setting[T int | int64 | uint32](n T) *int64 {
	if n == 0 {
		return nil
	}
	v := int64(n)
	return &v
}

// units is d in whole units, or absent for 0: rounded away from zero, so
// that a positive duration never becomes 0 and a negative one stays
// negative (the library refuses it, naming the setting).
func units(d, unit time.Duration) *int64 {
	n := d / unit
	if d%unit != 0 {
		if d > 0 {
			n++
		} else {
			n--
		}
	}
	return setting(int64(n))
}

// goFieldOfOption names, for an option the library reports invalid, the
// Config field that sets it.
var goFieldOfOption = map[string]string{
	"base_url":                    "BaseURL",
	"key_id":                      "KeyID",
	"secret":                      "Secret",
	"journal_path":                "JournalPath",
	"journal_key_hex":             "JournalKey",
	"connect_timeout_ms":          "ConnectTimeout",
	"request_timeout_ms":          "RequestTimeout",
	"retry.base_ms":               "BackoffBase",
	"retry.cap_ms":                "BackoffCap",
	"retry.max_attempts":          "MaxAttempts",
	"retry.deadline_ms":           "Deadline",
	"retry_budget.capacity":       "RetryBudget.Capacity",
	"retry_budget.retry_cost":     "RetryBudget.RetryCost",
	"retry_budget.timeout_cost":   "RetryBudget.TimeoutCost",
	"retry_budget.success_refund": "RetryBudget.SuccessRefund",
	"key_retention_s":             "KeyRetention",
	"settled_retention_s":         "SettledRetention",
	"allow_insecure_http":         "AllowInsecureHTTP",
	"proxy":                       "Proxy",
	"proxy_from_env":              "ProxyFromEnv",
	"ca_bundle":                   "CABundle",
	"client_cert":                 "ClientCert",
	"client_key":                  "ClientKey",
	"max_clock_offset_s":          "MaxClockOffset",
	"lease_ttl_s":                 "LeaseTTL",
	"lease_heartbeat_ms":          "LeaseHeartbeat",
}

// optionsJSON renders c as the library's options: a zero field is absent
// (the library's default), every other value is passed as given.
func (c *Config) optionsJSON() ([]byte, error) {
	// encoding/json would silently turn invalid UTF-8 into U+FFFD (e.g. a
	// journal path naming another file); refuse it like every C string.
	for _, f := range []struct{ name, value string }{
		{"BaseURL", c.BaseURL}, {"KeyID", c.KeyID}, {"JournalPath", c.JournalPath},
		{"Proxy", c.Proxy}, {"CABundle", c.CABundle}, {"ClientCert", c.ClientCert}, {"ClientKey", c.ClientKey},
	} {
		if !utf8.ValidString(f.value) {
			return nil, invalid(f.name, "is not valid UTF-8")
		}
	}
	o := options{
		BaseURL: c.BaseURL, KeyID: c.KeyID, JournalPath: c.JournalPath,
		JournalKeyHex:     hex.EncodeToString(c.JournalKey),
		ConnectTimeoutMS:  units(c.ConnectTimeout, time.Millisecond),
		RequestTimeoutMS:  units(c.RequestTimeout, time.Millisecond),
		KeyRetentionS:     units(c.KeyRetention, time.Second),
		SettledRetentionS: units(c.SettledRetention, time.Second),
		MaxClockOffsetS:   units(c.MaxClockOffset, time.Second),
		LeaseTTLS:         units(c.LeaseTTL, time.Second),
		LeaseHeartbeatMS:  units(c.LeaseHeartbeat, time.Millisecond),
		AllowInsecureHTTP: c.AllowInsecureHTTP,
		Proxy:             c.Proxy,
		ProxyFromEnv:      c.ProxyFromEnv,
		CABundle:          c.CABundle,
		ClientCert:        c.ClientCert,
		ClientKey:         c.ClientKey,
	}
	retry := retryOptions{
		BaseMS:      units(c.BackoffBase, time.Millisecond),
		CapMS:       units(c.BackoffCap, time.Millisecond),
		MaxAttempts: setting(c.MaxAttempts),
		DeadlineMS:  units(c.Deadline, time.Millisecond),
	}
	if retry != (retryOptions{}) {
		o.Retry = &retry
	}
	o.RetryBudget = c.RetryBudget.options()
	doc, err := json.Marshal(o)
	if err != nil || len(c.ZeroSettings) == 0 {
		return doc, err
	}
	return withZeros(doc, c.ZeroSettings, "Config", func(name string) string {
		for option, field := range goFieldOfOption {
			if field == name {
				return option
			}
		}
		return ""
	})
}

// withZeros is the JSON document doc with an explicit 0 for each field of
// names (fields of the Go type owner) that doc leaves absent; settingOf
// gives a field's setting path in doc ("retry.base_ms"), "" for a name
// that is no field.
func withZeros(doc []byte, names []string, owner string, settingOf func(string) string) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, err
	}
	for _, name := range names {
		option := settingOf(name)
		if option == "" {
			return nil, invalid("ZeroSettings", fmt.Sprintf("%q is no %s field", name, owner))
		}
		parent, last := m, option
		if group, key, nested := strings.Cut(option, "."); nested {
			if _, ok := m[group].(map[string]any); !ok {
				m[group] = map[string]any{}
			}
			parent, last = m[group].(map[string]any), key
		}
		if _, given := parent[last]; !given {
			parent[last] = 0
		}
	}
	return json.Marshal(m)
}

// options is the budget as the library's retry_budget object (zero fields
// absent), or nil.
func (b *RetryBudget) options() *budgetOptions {
	if b == nil {
		return nil
	}
	return &budgetOptions{setting(b.Capacity), setting(b.RetryCost), setting(b.TimeoutCost), setting(b.SuccessRefund)}
}

// written is the budget as the machine start document's retry_budget
// object (every field written, zero included), or nil.
func (b *RetryBudget) written() *budgetOptions {
	if b == nil {
		return nil
	}
	n := func(v uint32) *int64 {
		w := int64(v)
		return &w
	}
	return &budgetOptions{n(b.Capacity), n(b.RetryCost), n(b.TimeoutCost), n(b.SuccessRefund)}
}

// libraryDefaults is the document payidem_client_defaults_json returns.
type libraryDefaults struct {
	Options       options `json:"options"`
	MemoryJournal string  `json:"memory_journal"`
}

var (
	defaultsOnce sync.Once
	defaults     libraryDefaults
	defaultsErr  error
)

// libraryDefaultsJSON is the linked library's defaults document
// (payidem_client_defaults_json).
func libraryDefaultsJSON() string {
	return goStringOrEmpty(C.payidem_client_defaults_json())
}

// readLibraryDefaults decodes the linked library's defaults once.
func readLibraryDefaults() (libraryDefaults, error) {
	defaultsOnce.Do(func() {
		raw := libraryDefaultsJSON()
		if err := json.Unmarshal([]byte(raw), &defaults); err != nil {
			defaultsErr = fmt.Errorf("payidem: the library's defaults %q: %w", raw, err)
		}
	})
	return defaults, defaultsErr
}

// DefaultConfig is the configuration a Client gets for every zero field of
// Config, read from the linked library (the one source of every default):
// timeouts, retry policy, retry budget, retentions and MaxClockOffset set,
// JournalPath "" (the durable default journal), no proxy and no TLS files.
// BaseURL, KeyID and Secret are empty: set them before NewClient. It
// panics only if the linked library's defaults cannot be decoded, which a
// library and binding built from one source never do.
func DefaultConfig() Config {
	d, err := readLibraryDefaults()
	if err != nil {
		panic(err)
	}
	o := d.Options
	var retry retryOptions
	if o.Retry != nil {
		retry = *o.Retry
	}
	n := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	var budget *RetryBudget
	if b := o.RetryBudget; b != nil {
		budget = &RetryBudget{uint32(n(b.Capacity)), uint32(n(b.RetryCost)), uint32(n(b.TimeoutCost)), uint32(n(b.SuccessRefund))}
	}
	ms := func(p *int64) time.Duration { return time.Duration(n(p)) * time.Millisecond }
	secs := func(p *int64) time.Duration { return time.Duration(n(p)) * time.Second }
	return Config{
		JournalPath:       o.JournalPath,
		ConnectTimeout:    ms(o.ConnectTimeoutMS),
		RequestTimeout:    ms(o.RequestTimeoutMS),
		MaxAttempts:       int(n(retry.MaxAttempts)),
		BackoffBase:       ms(retry.BaseMS),
		BackoffCap:        ms(retry.CapMS),
		Deadline:          ms(retry.DeadlineMS),
		KeyRetention:      secs(o.KeyRetentionS),
		SettledRetention:  secs(o.SettledRetentionS),
		RetryBudget:       budget,
		AllowInsecureHTTP: o.AllowInsecureHTTP,
		Proxy:             o.Proxy,
		ProxyFromEnv:      o.ProxyFromEnv,
		CABundle:          o.CABundle,
		ClientCert:        o.ClientCert,
		ClientKey:         o.ClientKey,
		MaxClockOffset:    secs(o.MaxClockOffsetS),
		LeaseTTL:          secs(o.LeaseTTLS),
		LeaseHeartbeat:    ms(o.LeaseHeartbeatMS),
	}
}

// Check reports the error NewClient would give for c's settings (an
// *InvalidArgumentError naming the Config field), without opening a
// journal or reading a file. Whether BaseURL, Proxy and the TLS files are
// usable is checked by NewClient only.
func (c Config) Check() error {
	raw, err := c.optionsJSON()
	if err != nil {
		return err
	}
	_, err = resolveSettings(raw, false)
	return renameOptionField(err)
}

// resolveSettings passes doc to the library's settings rules
// (payidem_client_options_resolve, or payidem_operation_start_resolve for
// a machine's start document) and returns every setting's effective value
// as JSON.
func resolveSettings(doc []byte, start bool) (string, error) {
	var args cstrings
	field := "options_json"
	if start {
		field = "start_json"
	}
	off, err := args.add(field, string(doc))
	if err != nil {
		return "", err
	}
	var out *C.char
	var cerr *C.payidem_error
	var rc C.payidem_result
	if start {
		rc = C.payidem_operation_start_resolve(args.ptr(off), &out, &cerr)
	} else {
		rc = C.payidem_client_options_resolve(args.ptr(off), &out, &cerr)
	}
	if rc != C.PAYIDEM_OK {
		return "", newError(rc, cerr, nil)
	}
	defer C.payidem_string_free(out)
	return C.GoString(out), nil
}
