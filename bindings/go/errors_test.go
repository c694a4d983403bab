//go:build cgo

package payidem

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// headerResultCodes reads every payidem_result the header defines: the
// module's copy, which TestCommittedLibraryMatchesSources holds equal to
// the repository's include/payidem.h.
func headerResultCodes(t *testing.T) map[string]uint32 {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("include", "payidem.h"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	start := strings.Index(text, "enum payidem_result")
	end := strings.Index(text[start:], "};")
	if start < 0 || end < 0 {
		t.Fatal("no enum payidem_result in the header")
	}
	codes := map[string]uint32{}
	for _, m := range regexp.MustCompile(`(PAYIDEM_[A-Z_]+) = (\d+),`).FindAllStringSubmatch(text[start:start+end], -1) {
		n, _ := strconv.ParseUint(m[2], 10, 32)
		codes[m[1]] = uint32(n)
	}
	if len(codes) < 19 {
		t.Fatalf("read only %d codes from the header", len(codes))
	}
	return codes
}

var allSentinels = []error{
	ErrInvalidArgument, ErrIdempotencyConflict, ErrRejected, ErrOutcomeUnknown, ErrKeyExpired,
	ErrOperationBusy, ErrTransport, ErrJournal, ErrMissingSignature, ErrUnknownAPIKey,
	ErrTimestampOutOfWindow, ErrInvalidSignature, ErrNonceReused, ErrReplayCacheFull,
	ErrIdempotencyKeyRequired, ErrInternal, ErrCancelled, ErrRefused, ErrReplayStoreUnavailable,
}

func TestEveryHeaderCodeMapsToItsSentinel(t *testing.T) {
	for name, n := range headerResultCodes(t) {
		if n == 0 {
			if name != "PAYIDEM_OK" {
				t.Errorf("%s = 0", name)
			}
			continue
		}
		info, ok := codeByResult[n]
		if !ok {
			t.Errorf("%s (%d) has no Go mapping", name, n)
			continue
		}
		if got := ResultName(n); got != string(info.code) {
			t.Errorf("%s: the library names it %q, Go %q", name, got, info.code)
		}
		if want := strings.ToLower(strings.TrimPrefix(name, "PAYIDEM_")); want != string(info.code) {
			t.Errorf("%s: Go code %q", name, info.code)
		}
		err := errorOfResult(n)
		var e *Error
		if !errors.As(err, &e) || e.Code != info.code {
			t.Errorf("%s: %v is no *Error of its code", name, err)
		}
		matched := 0
		for _, s := range allSentinels {
			if errors.Is(err, s) {
				matched++
				if s != info.sentinel {
					t.Errorf("%s matches %v", name, s)
				}
			}
		}
		if matched != 1 {
			t.Errorf("%s matches %d sentinels", name, matched)
		}
	}
	// Every sentinel is reachable from some code.
	for _, s := range allSentinels {
		found := false
		for _, info := range codeByResult {
			found = found || info.sentinel == s
		}
		if !found {
			t.Errorf("%v has no code", s)
		}
	}
	if len(codeByResult) != len(headerResultCodes(t))-1 {
		t.Errorf("Go maps %d codes, the header defines %d besides OK", len(codeByResult), len(headerResultCodes(t))-1)
	}
}

func TestUnknownResultIsInternal(t *testing.T) {
	err := errorOfResult(99)
	if !errors.Is(err, ErrInternal) || !strings.Contains(err.Error(), "99") {
		t.Errorf("%v", err)
	}
	if ResultName(99) != "" {
		t.Error("99 has a name")
	}
}

func TestTypedErrorsWorkWithErrorsAs(t *testing.T) {
	err := fmt.Errorf("charging: %w", errorOfResult(3))
	var rejected *RejectedError
	var e *Error
	if !errors.As(err, &rejected) || !errors.As(err, &e) || !errors.Is(err, ErrRejected) {
		t.Fatalf("%v", err)
	}
	err = fmt.Errorf("wrapped: %w", invalid("order_id", "is bad"))
	var ia *InvalidArgumentError
	if !errors.As(err, &ia) || ia.Field != "order_id" || !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &e) {
		t.Fatalf("%v", err)
	}
	// The context error of a call stays visible next to the code.
	c := withCause(errorOfResult(17), context.Canceled)
	if !errors.Is(c, ErrCancelled) || !errors.Is(c, context.Canceled) || errors.Is(c, context.DeadlineExceeded) {
		t.Errorf("%v", c)
	}
}

// withCause sets the context error of err's *Error (for tests).
func withCause(err error, cause error) error {
	var e *Error
	if errors.As(err, &e) {
		e.cause = cause
	}
	return err
}

func TestOnlySettledEndsAreFinal(t *testing.T) {
	// The documented table (docs/protocol.md section 5): these three codes
	// settle an operation for good; every other code leaves it resumable.
	final := map[Code]bool{CodeRejected: true, CodeIdempotencyConflict: true, CodeKeyExpired: true}
	for name, n := range headerResultCodes(t) {
		if n == 0 {
			continue
		}
		err := fmt.Errorf("wrapped: %w", errorOfResult(n))
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: no *Error", name)
		}
		if IsFinal(err) != final[e.Code] || e.Final != final[e.Code] {
			t.Errorf("%s: IsFinal %v, Final %v, want %v", name, IsFinal(err), e.Final, final[e.Code])
		}
	}
	if IsFinal(nil) || IsFinal(errors.New("other")) {
		t.Error("a non-payidem error is final")
	}
}
