package payidem

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// The journal's rows carry a MAC keyed by Config.JournalKey (or, unset, a
// key derived from Secret): another key's client refuses them with
// ErrJournal and sends nothing; the same key reads them; the key is never
// shown; a bad key is ErrInvalidArgument naming JournalKey.
func TestJournalKeyGuardsTheJournalRows(t *testing.T) {
	m := startMock(t)
	cfg := fastConfig(m.URL)
	cfg.JournalPath = filepath.Join(t.TempDir(), "journal.sqlite3")
	cfg.JournalKey = bytes.Repeat([]byte{0x5a}, 32)
	op, first := payWithJournal(t, cfg, "keyed")

	// Another key is refused when the client is created: the journal's
	// seal does not open with it, and nothing is written.
	other := cfg
	other.JournalKey = bytes.Repeat([]byte{0x11}, 32)
	if _, err := NewClient(other); !errors.Is(err, ErrJournal) ||
		!strings.Contains(err.Error(), "another journal key") {
		t.Fatalf("another key's client: err = %v, want ErrJournal: another journal key", err)
	}

	assertAnswersFromJournal(t, m, cfg, op, first)

	if s := fmt.Sprintf("%v %+v %#v", cfg, cfg, cfg); strings.Contains(s, "5a5a") || strings.Contains(s, "[90 90") ||
		!strings.Contains(s, "JournalKey:<redacted>") {
		t.Errorf("the key is shown: %s", s)
	}
	bad := cfg
	bad.JournalKey = []byte("short")
	var e *Error
	if _, err := NewClient(bad); !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &e) ||
		e.Field != "JournalKey" {
		t.Fatalf("err = %v, want invalid_argument naming JournalKey", err)
	}
}

// A client of a rotated secret is refused by a journal sealed under the old
// one, and opens it with the old secret's derived key (DeriveJournalKey,
// the core's derivation: HMAC-SHA256(secret, "payidem journal key v1")).
func TestDeriveJournalKeyOpensAJournalAfterARotation(t *testing.T) {
	m := startMock(t)
	cfg := fastConfig(m.URL)
	cfg.JournalPath = filepath.Join(t.TempDir(), "journal.sqlite3")
	op, first := payWithJournal(t, cfg, "rotate")
	oldKey, err := DeriveJournalKey(cfg.Secret)
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, cfg.Secret)
	mac.Write([]byte("payidem journal key v1"))
	if !bytes.Equal(oldKey, mac.Sum(nil)) {
		t.Fatalf("DeriveJournalKey = %x, want HMAC-SHA256(secret, label)", oldKey)
	}
	rotated := cfg
	rotated.Secret = []byte("a-rotated-secret-0123456789")
	if _, err := NewClient(rotated); !errors.Is(err, ErrJournal) {
		t.Fatalf("rotated secret: err = %v, want ErrJournal", err)
	}
	rotated.JournalKey = oldKey
	assertAnswersFromJournal(t, m, rotated, op, first)
	var e *Error
	if _, err := DeriveJournalKey([]byte("short")); !errors.As(err, &e) || e.Field != "secret" {
		t.Fatalf("short secret: err = %v, want invalid_argument naming secret", err)
	}
}

// payWithJournal pays a fresh order with a client of cfg, which it closes,
// and gives the operation and its outcome.
func payWithJournal(t *testing.T, cfg Config, prefix string) (Operation, *Outcome) {
	t.Helper()
	c := newTestClient(t, cfg)
	op := payment(orderID(prefix), 40)
	first, err := c.Execute(bg(), op)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	return op, first
}

// assertAnswersFromJournal checks that a client of cfg reads op's journal
// row: it answers with first's body and the platform was paid once.
func assertAnswersFromJournal(t *testing.T, m *mock, cfg Config, op Operation, first *Outcome) {
	t.Helper()
	again, err := newTestClient(t, cfg).Execute(bg(), op)
	if err != nil || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("a client of the same journal key reads the row: %v %v", again, err)
	}
	m.assertOnePaymentEach(t, []string{op.OrderID})
}
