//go:build cgo

package payidem

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The mock platform's public test key (mock/README.md).
const (
	mockKeyID  = "key_test_1"
	mockSecret = "sk_test_payidem_mock_secret_0001"
)

// repoRoot is the repository root, two levels above this package.
var repoRoot, _ = filepath.Abs(filepath.Join("..", ".."))

// mockBinary is the payidem-mock executable the tests start.
var mockBinary string

// testStateHome is the XDG_STATE_HOME of every test: a client with the
// durable default journal writes there, never into the real home.
var testStateHome string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if os.Getenv("PAYIDEM_RT_CHILD") == "1" {
		// The child of a kill test is SIGKILLed before any deferred call
		// runs: it uses its parent's state directory, inherited through
		// XDG_STATE_HOME, and makes none of its own to leave behind.
		testStateHome = os.Getenv("XDG_STATE_HOME")
	} else {
		dir, err := os.MkdirTemp("", "payidem-go-state-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "temp XDG_STATE_HOME:", err)
			return 2
		}
		defer os.RemoveAll(dir)
		testStateHome = dir
		if err := os.Setenv("XDG_STATE_HOME", dir); err != nil {
			fmt.Fprintln(os.Stderr, "set XDG_STATE_HOME:", err)
			return 2
		}
	}
	bin, err := findMock()
	if err != nil {
		fmt.Fprintln(os.Stderr, "payidem-mock:", err)
		return 2
	}
	mockBinary = bin
	return m.Run()
}

// findMock finds the payidem-mock the tests start, never building it:
// $PAYIDEM_MOCK, else payidem-mock on PATH (the released binary), else,
// inside the payidem repository, a release then a debug build of
// target/. Without one, the error says how to provide it.
func findMock() (string, error) {
	if p := os.Getenv("PAYIDEM_MOCK"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("PAYIDEM_MOCK=%s: %w", p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("payidem-mock"); err == nil {
		return p, nil
	}
	if insideRepository() {
		for _, profile := range []string{"release", "debug"} {
			p := filepath.Join(repoRoot, "target", profile, "payidem-mock")
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
	}
	return "", errors.New("the tests need the mock platform and found none: put the released " +
		"payidem-mock (dist/payidem-mock of `make dist`) on PATH, or set PAYIDEM_MOCK to its path " +
		"(in the repository, `cargo build -p payidem-mock` builds one into target/debug)")
}

// repositoryCopies are the files of the payidem repository the tests read
// (the conformance vectors, the PostgreSQL and Redis starters), by their
// path in the repository. The module carries each as
// testdata/repository/PATH, so that its tests run from a copy of the
// module alone (a `go get` user's module cache);
// TestRepositoryCopiesMatchTheRepository keeps the copies equal to the
// originals and, with PAYIDEM_WRITE_TESTDATA=1, rewrites them.
var repositoryCopies = []string{
	"core/tests/vectors/operation-v1.json",
	"core/tests/vectors/protocol-v1.json",
	"core/tests/vectors/redact-v1.json",
	"core/tests/vectors/settings-v1.json",
	"ffi/tests-c/pg_server.sh",
	"ffi/tests-c/redis_server.sh",
	"scripts/dist/go-lib.sh",
}

// repositoryFile is the path of the module's copy of rel, a slash-separated
// path of repositoryCopies. A module cache keeps no file modes, so a script
// (.sh) is copied into the test's temporary directory and made executable
// there.
func repositoryFile(t testing.TB, rel string) string {
	t.Helper()
	if !slices.Contains(repositoryCopies, rel) {
		t.Fatalf("%s is not one of the repository files the module carries (repositoryCopies)", rel)
	}
	copied := filepath.Join("testdata", "repository", filepath.FromSlash(rel))
	if !strings.HasSuffix(rel, ".sh") {
		return copied
	}
	data, err := os.ReadFile(copied)
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), filepath.Base(rel))
	if err := os.WriteFile(script, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

// TestRepositoryCopiesMatchTheRepository: the module's copies of
// repository files are byte-identical to the originals, and every
// conformance vector of core/tests/vectors has one. With
// PAYIDEM_WRITE_TESTDATA=1 it writes the copies instead. From a copy of the
// module alone there are no originals: it checks that every copy is there.
func TestRepositoryCopiesMatchTheRepository(t *testing.T) {
	write := os.Getenv("PAYIDEM_WRITE_TESTDATA") == "1"
	inside := insideRepository()
	if write && !inside {
		t.Fatal("PAYIDEM_WRITE_TESTDATA=1 outside the payidem repository: nothing to copy from")
	}
	for _, rel := range repositoryCopies {
		copied := filepath.Join("testdata", "repository", filepath.FromSlash(rel))
		have, err := os.ReadFile(copied)
		if !inside {
			if err != nil || len(have) == 0 {
				t.Errorf("the module lacks its copy of %s: %v", rel, err)
			}
			continue
		}
		want, err2 := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(rel)))
		if err2 != nil {
			t.Fatal(err2)
		}
		if write {
			if err := os.MkdirAll(filepath.Dir(copied), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(copied, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil || !bytes.Equal(have, want) {
			t.Errorf("%s differs from %s (%v): run PAYIDEM_WRITE_TESTDATA=1 go test -run %s", copied, rel, err, t.Name())
		}
	}
	if !inside {
		t.Logf("module copied alone: %d copies present; their equality with the repository is checked there", len(repositoryCopies))
		return
	}
	vectors, err := filepath.Glob(filepath.Join(repoRoot, "core", "tests", "vectors", "*.json"))
	if err != nil || len(vectors) == 0 {
		t.Fatalf("no conformance vectors in the repository: %v", err)
	}
	for _, v := range vectors {
		rel := "core/tests/vectors/" + filepath.Base(v)
		if !slices.Contains(repositoryCopies, rel) {
			t.Errorf("%s has no copy in the module: add it to repositoryCopies", rel)
		}
	}
	var extra []string
	_ = filepath.WalkDir(filepath.Join("testdata", "repository"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel := filepath.ToSlash(strings.TrimPrefix(path, filepath.Join("testdata", "repository")+string(filepath.Separator)))
			if !slices.Contains(repositoryCopies, rel) {
				extra = append(extra, rel)
			}
		}
		return nil
	})
	if len(extra) != 0 {
		t.Errorf("testdata/repository holds files no test reads: %v", extra)
	}
}

// mock is one running payidem-mock process with its control routes.
type mock struct {
	URL string
	cmd *exec.Cmd
}

// startMock starts payidem-mock on 127.0.0.1 port 0 with --control and
// extra flags; it stops with the test.
func startMock(t testing.TB, flags ...string) *mock {
	t.Helper()
	args := append([]string{"--port", "0", "--control", "--seed", "7"}, flags...)
	cmd := exec.Command(mockBinary, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", mockBinary, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, r)
	}()
	select {
	case line := <-lines:
		addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
		if !ok {
			t.Fatalf("payidem-mock printed %q", line)
		}
		return &mock{URL: "http://" + addr, cmd: cmd}
	case <-time.After(30 * time.Second):
		t.Fatal("payidem-mock did not start")
	}
	return nil
}

// setFaults replaces the mock's faults (POST /_mock/faults).
func (m *mock) setFaults(t testing.TB, faults map[string]any) {
	t.Helper()
	body, _ := json.Marshal(faults)
	resp, err := http.Post(m.URL+"/_mock/faults", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /_mock/faults: %d %s", resp.StatusCode, msg)
	}
}

// mockStats is the part of GET /_mock/stats the tests read.
type mockStats struct {
	Orders map[string]struct {
		PaymentsCreated int      `json:"payments_created"`
		IdempotencyKeys []string `json:"idempotency_keys"`
		DuplicateKeys   []string `json:"duplicate_keys"`
	} `json:"orders"`
	DuplicateOrder int            `json:"duplicate_order"`
	Payments       int            `json:"payments"`
	Replays        int            `json:"replays"`
	Faults         map[string]int `json:"faults"`
}

func (m *mock) stats(t testing.TB) mockStats {
	t.Helper()
	resp, err := http.Get(m.URL + "/_mock/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s mockStats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// assertOnePaymentEach fails unless every order id got exactly one payment
// under one key and the mock refused no duplicate.
func (m *mock) assertOnePaymentEach(t testing.TB, orders []string) {
	t.Helper()
	s := m.stats(t)
	for _, id := range orders {
		o, ok := s.Orders[id]
		if !ok || o.PaymentsCreated != 1 || len(o.DuplicateKeys) != 0 || len(o.IdempotencyKeys) != 1 {
			t.Errorf("order %s: %+v (present %v), want exactly one payment under one key", id, o, ok)
		}
	}
	if s.DuplicateOrder != 0 {
		t.Errorf("duplicate_order = %d, want 0", s.DuplicateOrder)
	}
	if s.Payments != len(orders) {
		t.Errorf("payments = %d, want %d", s.Payments, len(orders))
	}
}

// fastConfig is a client configuration for the mock with short backoffs and
// a memory journal (each test's client starts empty).
func fastConfig(url string) Config {
	return Config{
		BaseURL:        url,
		KeyID:          mockKeyID,
		Secret:         []byte(mockSecret),
		JournalPath:    JournalMemory,
		ConnectTimeout: 2 * time.Second,
		RequestTimeout: 2 * time.Second,
		MaxAttempts:    8,
		BackoffBase:    5 * time.Millisecond,
		BackoffCap:     50 * time.Millisecond,
		Deadline:       20 * time.Second,
		RetryBudget:    &RetryBudget{Capacity: 100000},
	}
}

// mockClient starts a mock and a client of it with fastConfig, changed by
// tune (when not nil) before the client is made.
func mockClient(t testing.TB, tune func(cfg *Config)) (*mock, *Client) {
	t.Helper()
	m := startMock(t)
	cfg := fastConfig(m.URL)
	if tune != nil {
		tune(&cfg)
	}
	return m, newTestClient(t, cfg)
}

func newTestClient(t testing.TB, cfg Config) *Client {
	t.Helper()
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// orderID is a fresh order id with a readable prefix.
func orderID(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// payment is the create operation of one order.
func payment(order string, amount int) Operation {
	return Operation{
		OrderID:    order,
		Method:     http.MethodPost,
		Path:       "/v1/payments",
		Body:       []byte(fmt.Sprintf(`{"order_id":%q,"amount":%d,"currency":"RUB"}`, order, amount)),
		StatusPath: "/v1/payments?order_id=" + order,
	}
}

func bg() context.Context { return context.Background() }
