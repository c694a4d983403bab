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

// Config configures a Client. A zero field takes the library's default;
// DefaultConfig reads them all from the linked library. They are (a test
// checks this list against the library):
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
		"MaxClockOffset:%v}",
		RedactURL(c.BaseURL), c.KeyID, RedactURL(c.JournalPath), c.ConnectTimeout, c.RequestTimeout,
		c.MaxAttempts, c.BackoffBase, c.BackoffCap, c.Deadline, c.KeyRetention, c.SettledRetention,
		budget, c.OnAttempt != nil, c.AllowInsecureHTTP, RedactURL(c.Proxy), c.ProxyFromEnv,
		c.CABundle, c.ClientCert, c.ClientKey, c.MaxClockOffset)
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

// options is the JSON object payidem_client_new documents.
type options struct {
	BaseURL           string         `json:"base_url"`
	KeyID             string         `json:"key_id"`
	JournalPath       string         `json:"journal_path,omitempty"`
	JournalKeyHex     string         `json:"journal_key_hex,omitempty"`
	ConnectTimeoutMS  uint64         `json:"connect_timeout_ms,omitempty"`
	RequestTimeoutMS  uint64         `json:"request_timeout_ms,omitempty"`
	Retry             *retryOptions  `json:"retry,omitempty"`
	RetryBudget       *budgetOptions `json:"retry_budget,omitempty"`
	KeyRetentionS     uint64         `json:"key_retention_s,omitempty"`
	SettledRetentionS uint64         `json:"settled_retention_s,omitempty"`
	AllowInsecureHTTP bool           `json:"allow_insecure_http,omitempty"`
	Proxy             string         `json:"proxy,omitempty"`
	ProxyFromEnv      bool           `json:"proxy_from_env,omitempty"`
	CABundle          string         `json:"ca_bundle,omitempty"`
	ClientCert        string         `json:"client_cert,omitempty"`
	ClientKey         string         `json:"client_key,omitempty"`
	MaxClockOffsetS   uint64         `json:"max_clock_offset_s,omitempty"`
}

type retryOptions struct {
	BaseMS      uint64 `json:"base_ms,omitempty"`
	CapMS       uint64 `json:"cap_ms,omitempty"`
	MaxAttempts uint64 `json:"max_attempts,omitempty"`
	DeadlineMS  uint64 `json:"deadline_ms,omitempty"`
}

type budgetOptions struct {
	Capacity      uint32 `json:"capacity,omitempty"`
	RetryCost     uint32 `json:"retry_cost,omitempty"`
	TimeoutCost   uint32 `json:"timeout_cost,omitempty"`
	SuccessRefund uint32 `json:"success_refund,omitempty"`
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
}

// ceilUnits is d in whole units, rounded up so that a positive duration
// never becomes 0 (which would mean "default").
func ceilUnits(field string, d, unit time.Duration) (uint64, error) {
	if d < 0 {
		return 0, invalid(field, "must not be negative")
	}
	return uint64((d + unit - 1) / unit), nil
}

// optionsJSON renders c as the library's options.
func (c *Config) optionsJSON() ([]byte, error) {
	// An empty JournalPath is omitted: the library then opens the durable
	// default journal.
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
	o := options{BaseURL: c.BaseURL, KeyID: c.KeyID, JournalPath: c.JournalPath,
		JournalKeyHex: hex.EncodeToString(c.JournalKey)}
	var err error
	ms := func(field string, d time.Duration) uint64 {
		if err != nil {
			return 0
		}
		var v uint64
		v, err = ceilUnits(field, d, time.Millisecond)
		return v
	}
	secs := func(field string, d time.Duration) uint64 {
		if err != nil {
			return 0
		}
		var v uint64
		v, err = ceilUnits(field, d, time.Second)
		return v
	}
	o.ConnectTimeoutMS = ms("ConnectTimeout", c.ConnectTimeout)
	o.RequestTimeoutMS = ms("RequestTimeout", c.RequestTimeout)
	retry := retryOptions{
		BaseMS:     ms("BackoffBase", c.BackoffBase),
		CapMS:      ms("BackoffCap", c.BackoffCap),
		DeadlineMS: ms("Deadline", c.Deadline),
	}
	o.KeyRetentionS = secs("KeyRetention", c.KeyRetention)
	o.SettledRetentionS = secs("SettledRetention", c.SettledRetention)
	o.MaxClockOffsetS = secs("MaxClockOffset", c.MaxClockOffset)
	o.AllowInsecureHTTP = c.AllowInsecureHTTP
	o.Proxy = c.Proxy
	o.ProxyFromEnv = c.ProxyFromEnv
	o.CABundle = c.CABundle
	o.ClientCert = c.ClientCert
	o.ClientKey = c.ClientKey
	if err != nil {
		return nil, err
	}
	if c.MaxAttempts < 0 {
		return nil, invalid("MaxAttempts", "must not be negative")
	}
	retry.MaxAttempts = uint64(c.MaxAttempts)
	if retry != (retryOptions{}) {
		o.Retry = &retry
	}
	if b := c.RetryBudget; b != nil {
		o.RetryBudget = &budgetOptions{b.Capacity, b.RetryCost, b.TimeoutCost, b.SuccessRefund}
	}
	return json.Marshal(o)
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
	var budget *RetryBudget
	if b := o.RetryBudget; b != nil {
		budget = &RetryBudget{b.Capacity, b.RetryCost, b.TimeoutCost, b.SuccessRefund}
	}
	ms := func(n uint64) time.Duration { return time.Duration(n) * time.Millisecond }
	secs := func(n uint64) time.Duration { return time.Duration(n) * time.Second }
	return Config{
		JournalPath:       o.JournalPath,
		ConnectTimeout:    ms(o.ConnectTimeoutMS),
		RequestTimeout:    ms(o.RequestTimeoutMS),
		MaxAttempts:       int(retry.MaxAttempts),
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
	}
}
