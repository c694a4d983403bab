//go:build cgo

package payidem

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestOptionsJSONJournal(t *testing.T) {
	for _, tc := range []struct {
		path string
		want any // nil: journal_path absent
	}{
		{"", nil},
		{JournalMemory, ":memory:"},
		{"/var/lib/pay/journal.sqlite3", "/var/lib/pay/journal.sqlite3"},
	} {
		cfg := Config{BaseURL: "http://127.0.0.1:9", KeyID: "k", JournalPath: tc.path}
		raw, err := cfg.optionsJSON()
		if err != nil {
			t.Fatal(err)
		}
		var o map[string]any
		if err := json.Unmarshal(raw, &o); err != nil {
			t.Fatal(err)
		}
		if got, ok := o["journal_path"]; tc.want == nil && ok || tc.want != nil && got != tc.want {
			t.Errorf("JournalPath %q: options %s, want journal_path %v", tc.path, raw, tc.want)
		}
	}
	if JournalMemory != ":memory:" {
		t.Errorf("JournalMemory = %q", JournalMemory)
	}
}

// mode is the permission bits of path.
func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestDefaultJournalIsDurableAndPrivate(t *testing.T) {
	m := startMock(t)
	state := filepath.Join(t.TempDir(), "state")
	t.Setenv("XDG_STATE_HOME", state)
	cfg := fastConfig(m.URL)
	cfg.JournalPath = ""
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	op := payment(orderID("default-journal"), 40)
	first, err := c.Execute(bg(), op)
	if err != nil || first.Status != 201 {
		t.Fatalf("execute: %+v %v", first, err)
	}
	c.Close()

	dir := filepath.Join(state, "payidem")
	file := filepath.Join(dir, "journal.sqlite3")
	if got := mode(t, dir); got != 0o700 {
		t.Errorf("%s mode %o, want 700", dir, got)
	}
	if got := mode(t, file); got != 0o600 {
		t.Errorf("%s mode %o, want 600", file, got)
	}
	// Every file SQLite left next to the journal is private too.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if got := mode(t, filepath.Join(dir, e.Name())); got&0o077 != 0 {
			t.Errorf("%s mode %o, readable by others", e.Name(), got)
		}
	}

	// A new client (a restarted process) finds the operation and answers it
	// from the journal with the same key.
	c2 := newTestClient(t, cfg)
	if st, err := c2.Status(bg(), op.OrderID); err != nil || st.State != StateSucceeded {
		t.Fatalf("status after reopen: %+v %v", st, err)
	}
	again, err := c2.Execute(bg(), op)
	if err != nil || again.IdempotencyKey != first.IdempotencyKey || string(again.Body) != string(first.Body) {
		t.Fatalf("second execute: %+v %v, want the first answer under key %q", again, err, first.IdempotencyKey)
	}
	m.assertOnePaymentEach(t, []string{op.OrderID})
}

func TestDefaultJournalFallsBackToHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", home)
	cfg := fastConfig("http://127.0.0.1:9")
	cfg.JournalPath = ""
	c := newTestClient(t, cfg)
	c.Close()
	if got := mode(t, filepath.Join(home, ".local", "state", "payidem", "journal.sqlite3")); got != 0o600 {
		t.Errorf("journal mode %o, want 600", got)
	}

	// Neither variable absolute: a journal error, not a file in the
	// working directory.
	t.Setenv("HOME", "relative-home")
	if _, err := NewClient(cfg); !errors.Is(err, ErrJournal) {
		t.Fatalf("err = %v, want journal_error", err)
	}
}

func TestMemoryJournalCreatesNoFile(t *testing.T) {
	m := startMock(t)
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	cfg := fastConfig(m.URL)
	cfg.JournalPath = JournalMemory
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	op := payment(orderID("memory-journal"), 50)
	if out, err := c.Execute(bg(), op); err != nil || out.Status != 201 {
		t.Fatalf("execute: %+v %v", out, err)
	}
	c.Close()
	if entries, err := os.ReadDir(state); err != nil || len(entries) != 0 {
		t.Errorf("XDG_STATE_HOME holds %v (%v), want nothing", entries, err)
	}
	if _, err := os.Stat(JournalMemory); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file named %q exists in the working directory", JournalMemory)
	}
	// The operation died with the client.
	c2 := newTestClient(t, cfg)
	if st, err := c2.Status(bg(), op.OrderID); err != nil || st.State != StateNotFound {
		t.Fatalf("status in a new memory client: %+v %v", st, err)
	}
}
