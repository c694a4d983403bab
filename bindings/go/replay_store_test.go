//go:build cgo

package payidem

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// newStoreVerifier is newTestVerifier with the replay store named by url.
func newStoreVerifier(t testing.TB, url string) *Verifier {
	t.Helper()
	v, err := NewVerifierWithReplayStore(map[string][][]byte{"key_live_1": {testSecret}}, 300*time.Second, 100, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

// redisServer is a throwaway redis-server on a unix socket in a temporary
// directory (no TCP, nothing persisted), killed with the test. It fails
// the test, never skips it, when redis-server cannot start. It is started
// through ffi/tests-c/redis_server.sh (the module's copy), which execs
// redis-server after starting a watcher: a test binary killed before its
// clean-up (SIGKILL, a CI timeout) leaves neither a running server nor its
// directory behind.
type redisServer struct {
	dir    string
	script string
	cmd    *exec.Cmd
	exited chan error // cmd.Wait's result, once the server has exited
	sock   string
}

func startRedis(t *testing.T) *redisServer {
	t.Helper()
	r := &redisServer{dir: t.TempDir(), script: repositoryFile(t, "ffi/tests-c/redis_server.sh")}
	r.sock = filepath.Join(r.dir, "redis.sock")
	r.start(t)
	t.Cleanup(r.stop)
	return r
}

func (r *redisServer) url() string { return "unix://" + r.sock }

func (r *redisServer) start(t *testing.T) {
	t.Helper()
	bin := os.Getenv("PAYIDEM_REDIS_SERVER")
	if bin == "" {
		bin = "redis-server"
	}
	r.cmd = exec.Command(r.script, "--dir", r.dir,
		bin, "--port", "0", "--unixsocket", r.sock, "--unixsocketperm", "700",
		"--save", "", "--appendonly", "no", "--dir", r.dir, "--logfile", "redis.log")
	r.cmd.Stderr = os.Stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("cannot start %s through %s (%v): the replay-store tests need a real redis-server; make redis-deps installs it", bin, r.script, err)
	}
	r.exited = make(chan error, 1)
	go func(cmd *exec.Cmd, exited chan<- error) { exited <- cmd.Wait() }(r.cmd, r.exited)
	for i := 0; i < 1000; i++ {
		if reply, err := r.command("PING"); err == nil && reply == "PONG" {
			return
		}
		select {
		case err := <-r.exited:
			r.cmd = nil
			t.Fatalf("%s exited at start (%v; its reason above): the replay-store tests need a real redis-server; make redis-deps installs it", bin, err)
		default:
		}
		time.Sleep(10 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(r.dir, "redis.log"))
	t.Fatalf("redis-server did not answer within 10 s; its log:\n%s", log)
}

// stop kills the server at once, like a crash.
func (r *redisServer) stop() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
	r.cmd = nil
	_ = os.Remove(r.sock)
}

// command sends one command and returns a simple, integer or bulk reply.
func (r *redisServer) command(args ...string) (string, error) {
	conn, err := net.DialTimeout("unix", r.sock, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	var req bytes.Buffer
	fmt.Fprintf(&req, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write(req.Bytes()); err != nil {
		return "", err
	}
	rd := bufio.NewReader(conn)
	line, err := rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	switch {
	case strings.HasPrefix(line, "+"), strings.HasPrefix(line, ":"):
		return line[1:], nil
	case strings.HasPrefix(line, "-"):
		return "", errors.New(line[1:])
	case strings.HasPrefix(line, "$"):
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("unsupported reply %q", line)
}

func TestReplayStoreURLIsChecked(t *testing.T) {
	keys := map[string][][]byte{"key_live_1": {testSecret}}
	_, err := NewVerifierWithReplayStore(keys, 300*time.Second, 10, "memcached://user:hunter2@h")
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInvalidArgument || e.Field != "replay_store" || strings.Contains(e.Message, "hunter2") {
		t.Fatalf("bad URL: %#v", err)
	}
	if _, err := NewVerifierWithReplayStore(keys, 300*time.Second, 10, "redis://h\x00"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("NUL: %v", err)
	}
	// "" and "memory" are the in-process store: two verifiers each accept.
	s := newTestSigner(t)
	h, err := s.SignAt(time.Now(), "GET", "/p", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{"", ReplayStoreMemory} {
		v := newStoreVerifier(t, url)
		if err := v.Verify(request("GET", "/p", h), nil, time.Now()); err != nil {
			t.Errorf("%q: %v", url, err)
		}
	}
}

// Issue #11: verifiers (and their Middleware) sharing one real Redis.
func TestVerifiersSharingRedis(t *testing.T) {
	redis := startRedis(t)
	// A store that has been up for a while: its epoch long past.
	now := time.Now()
	if _, err := redis.command("SET", "payidem:replay:epoch", strconv.FormatInt(now.Unix()-100, 10)); err != nil {
		t.Fatal(err)
	}
	a, b := newStoreVerifier(t, redis.url()), newStoreVerifier(t, redis.url())
	reached := 0
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached++
		w.WriteHeader(http.StatusCreated)
	})
	s := newTestSigner(t)
	body := []byte(`{"amount":1}`)
	serve := func(v *Verifier, h http.Header) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/v1/payments", bytes.NewReader(body))
		r.Header = h.Clone()
		w := httptest.NewRecorder()
		v.Middleware(next).ServeHTTP(w, r)
		return w
	}
	signed := func(key string) http.Header {
		h, err := s.SignAt(time.Now(), "POST", "/v1/payments", key, body)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}

	first := signed("create-1")
	if w := serve(a, first); w.Code != http.StatusCreated {
		t.Fatalf("first: %d %s", w.Code, w.Body)
	}
	for _, v := range []*Verifier{b, a} {
		if w := serve(v, first); w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), `"nonce_reused"`) {
			t.Errorf("replay: %d %s", w.Code, w.Body)
		}
	}
	if err := b.Verify(request("POST", "/v1/payments", first.Clone()), body, time.Now()); !errors.Is(err, ErrNonceReused) {
		t.Errorf("Verify of the replay: %v", err)
	}

	// Stopped: both fail closed, 503 with Retry-After, nothing reaches the
	// handler.
	redis.stop()
	reached = 0
	down := signed("create-2")
	for _, v := range []*Verifier{a, b} {
		w := serve(v, down)
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" || !strings.Contains(w.Body.String(), `"replay_store_unavailable"`) {
			t.Errorf("Redis down: %d %v %s", w.Code, w.Header(), w.Body)
		}
		err := v.Verify(request("POST", "/v1/payments", signed("create-3")), body, time.Now())
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrReplayStoreUnavailable) || e.HTTPStatus != 503 {
			t.Errorf("Verify with Redis down: %#v", err)
		}
	}
	if reached != 0 {
		t.Errorf("%d requests reached the handler with Redis down", reached)
	}

	// Restarted empty: what was signed before is refused (the epoch guard),
	// on both.
	redis.start(t)
	for _, v := range []*Verifier{a, b} {
		for _, h := range []http.Header{first, down} {
			if w := serve(v, h); w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" {
				t.Errorf("signed before the restart: %d %s", w.Code, w.Body)
			}
		}
	}
	if reached != 0 {
		t.Errorf("%d requests signed before the restart were accepted", reached)
	}
	// Signed after the new epoch plus its skew: accepted once.
	epoch, err := redis.command("GET", "payidem:replay:epoch")
	if err != nil {
		t.Fatal(err)
	}
	e, _ := strconv.ParseInt(epoch, 10, 64)
	fresh, err := s.SignAt(time.Unix(e+3, 0), "POST", "/v1/payments", "create-4", body)
	if err != nil {
		t.Fatal(err)
	}
	if w := serve(b, fresh); w.Code != http.StatusCreated {
		t.Errorf("fresh: %d %s", w.Code, w.Body)
	}
	if w := serve(a, fresh); w.Code != http.StatusConflict {
		t.Errorf("fresh replayed: %d %s", w.Code, w.Body)
	}
}
