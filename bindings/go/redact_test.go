//go:build cgo

package payidem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

// TestRedactURLIsTheLibrarysRule runs core/tests/vectors/redact-v1.json,
// which core/tests/redact_vectors.rs runs against payidem::redact_url: Go
// must print every location as the library does, secrets nowhere.
func TestRedactURLIsTheLibrarysRule(t *testing.T) {
	raw, err := os.ReadFile(repositoryFile(t, "core/tests/vectors/redact-v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Vectors []struct {
			Input    string   `json:"input"`
			Redacted string   `json:"redacted"`
			Secrets  []string `json:"secrets"`
		} `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Vectors) < 20 {
		t.Fatalf("%d redaction vectors, want at least 20", len(file.Vectors))
	}
	// What cannot cross to the library is hidden whole, never shown as given.
	for _, odd := range []string{"postgres://u:Hunter2Secret@db/pay\x00", "postgres://u:Hunter2\xffSecret@db/pay"} {
		if got := RedactURL(odd); got != "***" {
			t.Errorf("RedactURL(%q) = %q, want ***", odd, got)
		}
	}
	for _, v := range file.Vectors {
		got := RedactURL(v.Input)
		if got != v.Redacted {
			t.Errorf("RedactURL(%q) = %q, the library prints %q", v.Input, got, v.Redacted)
		}
		for _, s := range v.Secrets {
			if strings.Contains(got, s) {
				t.Errorf("RedactURL(%q) = %q shows %q", v.Input, got, s)
			}
		}
	}
}

const (
	leakPassword = "PASSWORD-x7Qz"
	leakPgURL    = "postgres://u:PASSWORD-x7Qz@127.0.0.1:1/db"
	leakProxyURL = "http://u:PASSWORD-x7Qz@127.0.0.1:1"
	leakRedisURL = "redis://:PASSWORD-x7Qz@127.0.0.1:1"
)

// everyPrint is v as every verb and slog print it.
func everyPrint(v any) []string {
	var logs strings.Builder
	slog.New(slog.NewTextHandler(&logs, nil)).Info("x", "v", v)
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "v", v)
	out := []string{fmt.Sprintf("%v", v), fmt.Sprintf("%+v", v), fmt.Sprintf("%#v", v), logs.String()}
	if err, ok := v.(error); ok {
		out = append(out, err.Error())
		for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(u) {
			out = append(out, fmt.Sprintf("%+v", u), fmt.Sprintf("%#v", u))
		}
	}
	return out
}

func assertNoPassword(t *testing.T, what string, v any) {
	t.Helper()
	for _, text := range everyPrint(v) {
		if strings.Contains(text, leakPassword) {
			t.Errorf("%s shows the password: %s", what, text)
		}
	}
}

func TestNoPrintableSurfaceShowsAURLPassword(t *testing.T) {
	cfg := fastConfig(leakProxyURL)
	cfg.JournalPath = leakPgURL
	cfg.Proxy = leakProxyURL
	assertNoPassword(t, "Config", cfg)
	assertNoPassword(t, "*Config", &cfg)
	if s := cfg.String(); !strings.Contains(s, `JournalPath:"postgres://***@127.0.0.1:1/db"`) ||
		!strings.Contains(s, `Proxy:"http://***@127.0.0.1:1/"`) {
		t.Errorf("Config does not name its locations redacted: %s", s)
	}

	// A PostgreSQL journal nobody listens for: the client starts (its
	// journal connects lazily) and each call answers ErrJournal, never the
	// password.
	cfg = fastConfig("http://127.0.0.1:1")
	cfg.JournalPath = leakPgURL
	lazy, err := NewClient(cfg)
	if err != nil {
		t.Fatalf("NewClient with an unreachable PostgreSQL journal: %v", err)
	}
	assertNoPassword(t, "Client", lazy)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err = lazy.Execute(ctx, Operation{OrderID: "ord-leak-pg", Method: "POST", Path: "/v1/payments", Body: []byte(`{"amount":1}`)})
	cancel()
	lazy.Close()
	if !errors.Is(err, ErrJournal) {
		t.Errorf("a call with an unreachable PostgreSQL journal: %v", err)
	} else {
		assertNoPassword(t, "the PostgreSQL journal's error", err)
	}
	// Mistyped URLs and libpq's key=value form are taken for file names
	// (relative: no such directory here, nothing is created).
	for _, path := range []string{
		"postgress://u:PASSWORD-x7Qz@127.0.0.1:1/db",
		"host=127.0.0.1 password=PASSWORD-x7Qz/db",
	} {
		cfg.JournalPath = path
		_, err := NewClient(cfg)
		if !errors.Is(err, ErrJournal) {
			t.Errorf("NewClient with journal %q: %v", RedactURL(path), err)
			continue
		}
		assertNoPassword(t, "a file journal's error", err)
		if !strings.Contains(err.Error(), RedactURL(path)) {
			t.Errorf("the error does not name the file redacted: %v", err)
		}
	}

	// A proxy nobody listens for.
	cfg = fastConfig("http://platform.invalid:8080")
	cfg.AllowInsecureHTTP = true
	cfg.Proxy = leakProxyURL
	cfg.MaxAttempts = 1
	c := newTestClient(t, cfg)
	assertNoPassword(t, "Client", c)
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = c.Execute(ctx, Operation{OrderID: "ord-leak-1", Method: "POST", Path: "/v1/payments", Body: []byte(`{"amount":1}`)})
	if err == nil {
		t.Fatal("a call through an unreachable proxy succeeded")
	}
	assertNoPassword(t, "a call through an unreachable proxy", err)
	cfg.Proxy = "socks5://u:PASSWORD-x7Qz@127.0.0.1:1"
	if _, err := NewClient(cfg); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("a socks5 proxy: %v", err)
	} else {
		assertNoPassword(t, "a refused proxy URL", err)
	}

	// A replay store nobody listens for.
	v, err := NewVerifierWithReplayStore(map[string][][]byte{mockKeyID: {[]byte(mockSecret)}}, 0, 1000, leakRedisURL)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	assertNoPassword(t, "Verifier", v)
	s, err := NewSigner(mockKeyID, []byte(mockSecret))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	body := []byte(`{"amount":1}`)
	h, err := s.Sign("POST", "/v1/payments", "create-1", body)
	if err != nil {
		t.Fatal(err)
	}
	err = v.Verify(request("POST", "/v1/payments", h), body, time.Now())
	if !errors.Is(err, ErrReplayStoreUnavailable) {
		t.Fatalf("Verify with an unreachable store: %v", err)
	}
	assertNoPassword(t, "Verify's error", err)
	for _, bad := range []string{"rediss://:PASSWORD-x7Qz@127.0.0.1:1", "redis://:PASSWORD-x7Qz@127.0.0.1:notaport"} {
		_, err := NewVerifierWithReplayStore(map[string][][]byte{mockKeyID: {[]byte(mockSecret)}}, 0, 1000, bad)
		if err == nil {
			t.Errorf("replay store %q accepted", RedactURL(bad))
			continue
		}
		assertNoPassword(t, "a refused replay store URL", err)
	}
}
