package payidem

import (
	"bytes"
	"errors"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
)

// setFileSizeLimit drops the process's file-size limit to 0 (every write to
// a regular file then fails with EFBIG, as on a failing disk) or restores
// it.
func setFileSizeLimit(t *testing.T, zero bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Error(err)
		return
	}
	lim.Cur = lim.Max
	if zero {
		lim.Cur = 0
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Error(err)
	}
}

// A success is never lost to a journal failure: the platform's 201 reaches
// the caller with the journal's error attached, and with the disk back the
// next Execute of the order resumes it and gets the platform's replay.
func TestSuccessSurvivesAJournalFailure(t *testing.T) {
	signal.Ignore(syscall.SIGXFSZ)
	m := startMock(t)
	cfg := fastConfig(m.URL)
	cfg.JournalPath = filepath.Join(t.TempDir(), "journal.sqlite3")
	tripped := false
	cfg.OnAttempt = func(ev AttemptEvent) {
		if ev.HTTPStatus == 201 && !tripped {
			tripped = true
			setFileSizeLimit(t, true)
		}
	}
	c := newTestClient(t, cfg)
	op := payment(orderID("go-journal-fails"), 4200)
	// No status path: the resumed call re-sends the POST with its key, and
	// the platform replays its stored answer.
	op.StatusPath = ""

	first, err := c.Execute(bg(), op)
	setFileSizeLimit(t, false)
	if !tripped {
		t.Fatal("the disk never failed")
	}
	if err != nil {
		t.Fatalf("Execute: %v; the platform's 201 must reach the caller", err)
	}
	if first.Status != 201 || first.Replayed {
		t.Fatalf("first = %d replayed %v, want a fresh 201", first.Status, first.Replayed)
	}
	var je *Error
	if !errors.As(first.JournalErr, &je) || je.Code != CodeJournal || !errors.Is(first.JournalErr, ErrJournal) {
		t.Fatalf("JournalErr = %#v, want a journal_error", first.JournalErr)
	}
	if je.OrderID != op.OrderID || je.Final {
		t.Errorf("JournalErr order %q final %v", je.OrderID, je.Final)
	}
	st, err := c.Status(bg(), op.OrderID)
	if err != nil || st.State != StateInFlight {
		t.Fatalf("Status = %+v, %v; want in flight (resumable)", st, err)
	}

	again, err := c.Execute(bg(), op)
	if err != nil {
		t.Fatalf("the resumed Execute: %v", err)
	}
	if !again.Replayed || again.JournalErr != nil || !bytes.Equal(again.Body, first.Body) ||
		again.IdempotencyKey != first.IdempotencyKey {
		t.Fatalf("again = %+v, want the platform's replay of the first answer", again)
	}
	if st, err := c.Status(bg(), op.OrderID); err != nil || st.State != StateSucceeded {
		t.Fatalf("Status = %+v, %v; want succeeded", st, err)
	}
	m.assertOnePaymentEach(t, []string{op.OrderID})
}
