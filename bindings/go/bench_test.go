//go:build cgo

package payidem

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// pureGoSigner is protocol v1 signing written in pure Go (crypto/hmac,
// crypto/sha256, crypto/rand, encoding/hex, strconv), the anchor of the
// benchmarks. It checks the same fields the library checks and keeps keyed
// HMAC state per goroutine in a pool, as a careful Go implementation would.
type pureGoSigner struct {
	keyID string
	macs  sync.Pool
}

func newPureGoSigner(keyID string, secret []byte) *pureGoSigner {
	key := append([]byte(nil), secret...)
	return &pureGoSigner{keyID: keyID, macs: sync.Pool{New: func() any {
		return &pureScratch{mac: hmac.New(sha256.New, key), buf: make([]byte, 0, 512)}
	}}}
}

// pureScratch is one goroutine's keyed HMAC state and buffers.
type pureScratch struct {
	mac    hash.Hash
	buf    []byte
	digest []byte
}

var errPure = errors.New("invalid argument")

func pureCheckToken(s string, max int, ok func(byte) bool) error {
	if len(s) == 0 || len(s) > max {
		return errPure
	}
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return errPure
		}
	}
	return nil
}

func isUpper(c byte) bool     { return c >= 'A' && c <= 'Z' }
func isPrintable(c byte) bool { return c >= 0x21 && c <= 0x7e }
func isKeyChar(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-'
}

func (p *pureGoSigner) sign(t time.Time, method, path, key string, body []byte) (SignedHeaders, error) {
	ts := t.Unix()
	if ts < 0 || pureCheckToken(method, 16, isUpper) != nil || pureCheckToken(path, 2048, isPrintable) != nil || path[0] != '/' {
		return SignedHeaders{}, errPure
	}
	if key != "" && pureCheckToken(key, 255, isKeyChar) != nil || key == "" && method == http.MethodPost {
		return SignedHeaders{}, errPure
	}
	var out [20 + 36 + 64]byte // timestamp, nonce, signature
	stamp := strconv.AppendInt(out[:0], ts, 10)
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return SignedHeaders{}, err
	}
	raw[6] = raw[6]&0x0f | 0x40
	raw[8] = raw[8]&0x3f | 0x80
	nonce := out[len(stamp) : len(stamp)+36]
	hex.Encode(nonce[0:8], raw[0:4])
	nonce[8] = '-'
	hex.Encode(nonce[9:13], raw[4:6])
	nonce[13] = '-'
	hex.Encode(nonce[14:18], raw[6:8])
	nonce[18] = '-'
	hex.Encode(nonce[19:23], raw[8:10])
	nonce[23] = '-'
	hex.Encode(nonce[24:36], raw[10:16])

	sum := sha256.Sum256(body)
	sc := p.macs.Get().(*pureScratch)
	c := append(sc.buf[:0], method...)
	c = append(append(c, '\n'), path...)
	c = append(append(c, '\n'), stamp...)
	c = append(append(c, '\n'), nonce...)
	c = append(append(c, '\n'), key...)
	c = append(c, '\n')
	n := len(c)
	c = append(c, make([]byte, 64)...)
	hex.Encode(c[n:], sum[:])
	sc.mac.Reset()
	sc.mac.Write(c)
	sc.digest = sc.mac.Sum(sc.digest[:0])
	sig := out[len(stamp)+36 : len(stamp)+36+64]
	hex.Encode(sig, sc.digest)
	sc.buf = c
	p.macs.Put(sc)

	all := string(out[:len(stamp)+36+64])
	return SignedHeaders{
		APIKey:         p.keyID,
		Timestamp:      all[:len(stamp)],
		Nonce:          all[len(stamp) : len(stamp)+36],
		Signature:      all[len(stamp)+36:],
		IdempotencyKey: key,
	}, nil
}

func (p *pureGoSigner) header(t time.Time, method, path, key string, body []byte) (http.Header, error) {
	return headerOf(p.sign(t, method, path, key, body))
}

var (
	benchBody = []byte(`{"order_id":"ord-1001","amount":125000,"currency":"RUB","description":"order 1001"}`)
	benchPath = "/v1/payments"
	benchKey  = "create-ord-1001"
)

// The pure-Go anchor signs exactly like the library.
func TestPureGoAnchorMatchesTheLibrary(t *testing.T) {
	s := newTestSigner(t)
	p := newPureGoSigner("key_live_1", testSecret)
	got, err := p.sign(time.Unix(1767225600, 0), "POST", benchPath, benchKey, benchBody)
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.SignParts("POST", benchPath, got.Timestamp, got.Nonce, benchKey, benchBody)
	if err != nil || got.Signature != want {
		t.Fatalf("pure Go %s, library %s (%v)", got.Signature, want, err)
	}
	v := newTestVerifier(t, 16)
	h, _ := p.header(time.Now(), "POST", benchPath, benchKey, benchBody)
	if err := v.Verify(request("POST", benchPath, h), benchBody, time.Now()); err != nil {
		t.Fatal(err)
	}
}

var sinkHeaders SignedHeaders
var sinkHeader http.Header

// benchSign runs sign b.N times, keeping each result in sink.
func benchSign[T any](b *testing.B, sink *T, sign func() (T, error)) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		v, err := sign()
		if err != nil {
			b.Fatal(err)
		}
		*sink = v
	}
}

func benchPayidemAttempt(b *testing.B, s *Signer) {
	benchSign(b, &sinkHeaders, func() (SignedHeaders, error) {
		return s.SignAttempt(time.Now(), "POST", benchPath, benchKey, benchBody)
	})
}

func benchPureAttempt(b *testing.B, p *pureGoSigner) {
	benchSign(b, &sinkHeaders, func() (SignedHeaders, error) {
		return p.sign(time.Now(), "POST", benchPath, benchKey, benchBody)
	})
}

func benchPayidemHeader(b *testing.B, s *Signer) {
	benchSign(b, &sinkHeader, func() (http.Header, error) {
		return s.Sign("POST", benchPath, benchKey, benchBody)
	})
}

func benchPureHeader(b *testing.B, p *pureGoSigner) {
	benchSign(b, &sinkHeader, func() (http.Header, error) {
		return p.header(time.Now(), "POST", benchPath, benchKey, benchBody)
	})
}

func benchSigners(b *testing.B) (*Signer, *pureGoSigner) {
	s, err := NewSigner("key_live_1", testSecret)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s, newPureGoSigner("key_live_1", testSecret)
}

// BenchmarkSignAttempt: one signed attempt (values only), through the C ABI
// and in pure Go.
func BenchmarkSignAttempt(b *testing.B) {
	s, p := benchSigners(b)
	b.Run("payidem", func(b *testing.B) { benchPayidemAttempt(b, s) })
	b.Run("pure-go", func(b *testing.B) { benchPureAttempt(b, p) })
}

// BenchmarkSignHeader: one signed attempt as an http.Header.
func BenchmarkSignHeader(b *testing.B) {
	s, p := benchSigners(b)
	b.Run("payidem", func(b *testing.B) { benchPayidemHeader(b, s) })
	b.Run("pure-go", func(b *testing.B) { benchPureHeader(b, p) })
}

// BenchmarkSignParallel: every CPU signing with one shared signer.
func BenchmarkSignParallel(b *testing.B) {
	s, p := benchSigners(b)
	b.Run("payidem", benchSignParallel(func() (SignedHeaders, error) {
		return s.SignAttempt(time.Now(), "POST", benchPath, benchKey, benchBody)
	}))
	b.Run("pure-go", benchSignParallel(func() (SignedHeaders, error) {
		return p.sign(time.Now(), "POST", benchPath, benchKey, benchBody)
	}))
}

// benchSignParallel is a benchmark running sign on every CPU.
func benchSignParallel(sign func() (SignedHeaders, error)) func(*testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := sign(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
}

// BenchmarkSignRatio interleaves both sides in chunks of 64 signatures,
// so that both see the same machine load, and reports payidem's time per
// attempt as a multiple of pure Go's (target <= 1.3), cgo crossing
// included.
func BenchmarkSignRatio(b *testing.B) {
	s, p := benchSigners(b)
	const chunk = 64
	for _, kind := range []string{"attempt", "header"} {
		b.Run(kind, func(b *testing.B) {
			b.ReportAllocs()
			var ours, theirs time.Duration
			for done := 0; done < b.N; done += chunk {
				start := time.Now()
				for i := 0; i < chunk; i++ {
					if kind == "attempt" {
						sinkHeaders, _ = s.SignAttempt(time.Now(), "POST", benchPath, benchKey, benchBody)
					} else {
						sinkHeader, _ = s.Sign("POST", benchPath, benchKey, benchBody)
					}
				}
				mid := time.Now()
				for i := 0; i < chunk; i++ {
					if kind == "attempt" {
						sinkHeaders, _ = p.sign(time.Now(), "POST", benchPath, benchKey, benchBody)
					} else {
						sinkHeader, _ = p.header(time.Now(), "POST", benchPath, benchKey, benchBody)
					}
				}
				ours += mid.Sub(start)
				theirs += time.Since(mid)
			}
			n := float64((b.N + chunk - 1) / chunk * chunk)
			b.ReportMetric(float64(ours.Nanoseconds())/n, "payidem-ns/op")
			b.ReportMetric(float64(theirs.Nanoseconds())/n, "pure-go-ns/op")
			b.ReportMetric(float64(ours)/float64(theirs), "x-pure-go")
		})
	}
}
