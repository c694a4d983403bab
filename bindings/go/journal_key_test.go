package payidem

import (
	"bytes"
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
	c := newTestClient(t, cfg)
	op := payment(orderID("keyed"), 40)
	first, err := c.Execute(bg(), op)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()

	other := cfg
	other.JournalKey = bytes.Repeat([]byte{0x11}, 32)
	c2 := newTestClient(t, other)
	if _, err := c2.Execute(bg(), op); !errors.Is(err, ErrJournal) ||
		!strings.Contains(err.Error(), op.OrderID) {
		t.Fatalf("another key's client: err = %v, want ErrJournal naming the order", err)
	}
	c2.Close()

	c3 := newTestClient(t, cfg)
	again, err := c3.Execute(bg(), op)
	if err != nil || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("the same key reads the row: %v %v", again, err)
	}
	m.assertOnePaymentEach(t, []string{op.OrderID})

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
