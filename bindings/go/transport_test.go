//go:build cgo

package payidem

// Transport options (#14): a CA bundle and a client certificate against a
// test mTLS server, an unknown issuer reported as not sent, proxies from
// the environment ignored unless ProxyFromEnv, plain http refused for a
// non-loopback host. Every server runs on 127.0.0.1 port 0 in the test.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

type testPKI struct {
	dir            string
	caPEM          string
	clientCertPEM  string
	clientKeyPEM   string
	pool           *x509.CertPool
	serverCert     tls.Certificate
	clientCertDER  []byte
	clientKeyBytes []byte
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	serial := int64(1)
	template := func(cn string) *x509.Certificate {
		serial++
		return &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(24 * time.Hour),
		}
	}
	caKey := key()
	caTmpl := template("payidem go test CA")
	caTmpl.IsCA = true
	caTmpl.BasicConstraintsValid = true
	caTmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	sign := func(tmpl *x509.Certificate, k *ecdsa.PrivateKey) []byte {
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	serverKey := key()
	serverTmpl := template("127.0.0.1")
	serverTmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	serverTmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	serverTmpl.KeyUsage = x509.KeyUsageDigitalSignature
	serverDER := sign(serverTmpl, serverKey)
	clientKey := key()
	clientTmpl := template("payidem go test client")
	clientTmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	clientTmpl.KeyUsage = x509.KeyUsageDigitalSignature
	clientDER := sign(clientTmpl, clientKey)

	write := func(name, kind string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	clientKeyDER, err := x509.MarshalPKCS8PrivateKey(clientKey)
	if err != nil {
		t.Fatal(err)
	}
	serverKeyDER, _ := x509.MarshalPKCS8PrivateKey(serverKey)
	serverCert, err := tls.X509KeyPair(
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: serverDER}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: serverKeyDER}))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &testPKI{
		dir:            dir,
		caPEM:          write("ca.pem", "CERTIFICATE", caDER),
		clientCertPEM:  write("client.pem", "CERTIFICATE", clientDER),
		clientKeyPEM:   write("client.key", "PRIVATE KEY", clientKeyDER),
		pool:           pool,
		serverCert:     serverCert,
		clientCertDER:  clientDER,
		clientKeyBytes: clientKeyDER,
	}
}

// platform is a fake platform answering 201 to everything; it records the
// requests and the client certificate each presented.
type platform struct {
	mu          sync.Mutex
	requests    []string
	clientCerts [][]byte
}

func (p *platform) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		p.mu.Lock()
		p.requests = append(p.requests, r.Method+" "+r.URL.RequestURI())
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			p.clientCerts = append(p.clientCerts, r.TLS.PeerCertificates[0].Raw)
		}
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"pay_1","status":"succeeded"}`)
	})
}

func (p *platform) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.requests)
}

func startTLSPlatform(t *testing.T, pki *testPKI, requireClientCert bool) (*httptest.Server, *platform) {
	t.Helper()
	p := &platform{}
	srv := httptest.NewUnstartedServer(p.handler())
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pki.serverCert}}
	if requireClientCert {
		srv.TLS.ClientAuth = tls.RequireAndVerifyClientCert
		srv.TLS.ClientCAs = pki.pool
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, p
}

func transportConfig(url string) Config {
	c := fastConfig(url)
	c.RequestTimeout = 3 * time.Second
	c.MaxAttempts = 1
	c.Deadline = 10 * time.Second
	return c
}

func TestCABundleAndClientCertificateAgainstMTLS(t *testing.T) {
	pki := newTestPKI(t)
	srv, p := startTLSPlatform(t, pki, true)
	cfg := transportConfig(srv.URL)
	cfg.CABundle = pki.caPEM
	cfg.ClientCert = pki.clientCertPEM
	cfg.ClientKey = pki.clientKeyPEM
	c := newTestClient(t, cfg)
	out, err := c.Execute(bg(), payment(orderID("go-mtls"), 1250))
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if out.Status != 201 {
		t.Fatalf("status %d", out.Status)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.clientCerts) != 1 || string(p.clientCerts[0]) != string(pki.clientCertDER) {
		t.Fatalf("the server saw client certificates %d", len(p.clientCerts))
	}
}

func TestUnknownIssuerIsNotSentAndResumable(t *testing.T) {
	pki := newTestPKI(t)
	srv, p := startTLSPlatform(t, pki, false)
	c := newTestClient(t, transportConfig(srv.URL))
	order := orderID("go-tls")
	_, err := c.Execute(bg(), payment(order, 1250))
	if !errors.Is(err, ErrTransport) {
		t.Fatalf("want ErrTransport (not sent), got %v", err)
	}
	st, err := c.Status(bg(), order)
	if err != nil || st.State != StatePending {
		t.Fatalf("status %+v, %v", st, err)
	}
	if p.count() != 0 {
		t.Fatalf("the server saw %d requests", p.count())
	}
}

func TestTransportOptionsAreChecked(t *testing.T) {
	pki := newTestPKI(t)
	cases := []struct {
		cfg   func(*Config)
		field string
	}{
		{func(c *Config) { c.BaseURL = "http://api.example.com" }, "BaseURL"},
		{func(c *Config) { c.CABundle = filepath.Join(pki.dir, "absent.pem") }, "CABundle"},
		{func(c *Config) { c.ClientCert = pki.clientCertPEM }, "ClientKey"},
		{func(c *Config) { c.ClientCert, c.ClientKey = pki.clientKeyPEM, pki.clientCertPEM }, "ClientCert"},
		{func(c *Config) { c.Proxy = "socks5://user:pw@127.0.0.1:1" }, "Proxy"},
		{func(c *Config) { c.MaxClockOffset = -time.Second }, "MaxClockOffset"},
	}
	for _, tc := range cases {
		cfg := transportConfig("https://api.example.com")
		tc.cfg(&cfg)
		_, err := NewClient(cfg)
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrInvalidArgument) || e.Field != tc.field {
			t.Errorf("%s: got %v", tc.field, err)
			continue
		}
		if strings.Contains(err.Error(), "pw@") {
			t.Errorf("proxy credentials in %v", err)
		}
	}
	cfg := transportConfig("http://api.example.com")
	cfg.AllowInsecureHTTP = true
	cfg.Proxy = "http://user:pw@127.0.0.1:3128"
	cfg.ProxyFromEnv = true
	cfg.MaxClockOffset = 15 * time.Minute
	cfg.ClientKey = pki.clientKeyPEM
	if text := cfg.String(); strings.Contains(text, "pw@") {
		t.Errorf("String shows the proxy credentials: %s", text)
	}
	cfg.ClientKey = ""
	newTestClient(t, cfg)
}

func TestProxyEnvironmentIsIgnoredUnlessOptedIn(t *testing.T) {
	p := &platform{}
	srv := httptest.NewServer(p.handler())
	t.Cleanup(srv.Close)
	// A "proxy" that only counts who came.
	proxyHits := 0
	var mu sync.Mutex
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		proxyHits++
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(proxy.Close)
	for _, name := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"} {
		t.Setenv(name, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	c := newTestClient(t, transportConfig(srv.URL))
	if _, err := c.Execute(bg(), payment(orderID("go-env"), 100)); err != nil {
		t.Fatalf("Execute: %v", err)
	}
	mu.Lock()
	hits := proxyHits
	mu.Unlock()
	if hits != 0 || p.count() != 1 {
		t.Fatalf("proxy hits %d, platform requests %d", hits, p.count())
	}
	// Opted in, the environment's proxy is asked (it refuses the tunnel
	// with a 201, so nothing was sent).
	cfg := transportConfig(srv.URL)
	cfg.ProxyFromEnv = true
	c = newTestClient(t, cfg)
	if _, err := c.Execute(bg(), payment(orderID("go-env"), 100)); !errors.Is(err, ErrTransport) {
		t.Fatalf("want ErrTransport through the refusing proxy, got %v", err)
	}
	mu.Lock()
	hits = proxyHits
	mu.Unlock()
	if hits != 1 || p.count() != 1 {
		t.Fatalf("proxy hits %d, platform requests %d", hits, p.count())
	}
}
