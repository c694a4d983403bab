//go:build cgo

package payidem

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkConcurrentExecute: settled payments per second through one
// Client with a SQLite journal on disk (the journal's group commit lets
// concurrent callers share fsyncs), from 1, 4, 16 and 64 goroutines, against
// the anchor measured in the same benchmark with the same number of
// goroutines: the same signed POSTs (this package's Signer) sent with
// net/http, one pooled http.Client, no journal, no retries. Both sides run
// in alternating rounds of 128 operations against one payidem-mock process,
// so they see the same machine load. Reports payidem-ops/s, raw-ops/s and
// x-raw (payidem / raw, higher is better).
//
//	cargo build --release -p payidem-mock
//	go test -run '^$' -bench ConcurrentExecute -benchtime 1536x .
func BenchmarkConcurrentExecute(b *testing.B) {
	m := startMock(b)
	signer := newMockSigner(b)
	for _, goroutines := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("goroutines=%d", goroutines), func(b *testing.B) {
			cfg := fastConfig(m.URL)
			cfg.JournalPath = filepath.Join(b.TempDir(), "journal.sqlite3")
			client := newTestClient(b, cfg)
			httpClient := &http.Client{
				Timeout: 5 * time.Second,
				Transport: &http.Transport{
					MaxIdleConns:        goroutines,
					MaxIdleConnsPerHost: goroutines,
				},
			}
			b.Cleanup(httpClient.CloseIdleConnections)
			prefix := orderID(fmt.Sprintf("gb%d", goroutines))
			const round = 128
			var ours, raw time.Duration
			done := 0
			for r := 0; done < b.N; r++ {
				n := min(round, b.N-done)
				raw += runConcurrently(b, goroutines, n, func(i int) error {
					return rawSignedPost(httpClient, signer, m.URL, fmt.Sprintf("%s-raw-%d-%d", prefix, r, i))
				})
				ours += runConcurrently(b, goroutines, n, func(i int) error {
					op := payment(fmt.Sprintf("%s-pi-%d-%d", prefix, r, i), 1000+i%400)
					out, err := client.Execute(bg(), op)
					if err == nil && out.Status != http.StatusCreated {
						err = fmt.Errorf("status %d", out.Status)
					}
					return err
				})
				done += n
			}
			b.ReportMetric(float64(b.N)/ours.Seconds(), "payidem-ops/s")
			b.ReportMetric(float64(b.N)/raw.Seconds(), "raw-ops/s")
			b.ReportMetric(raw.Seconds()/ours.Seconds(), "x-raw")
		})
	}
}

// runConcurrently runs op(0..n) on `goroutines` goroutines; the wall time.
func runConcurrently(b *testing.B, goroutines, n int, op func(i int) error) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := op(i); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// rawSignedPost sends one signed payment create with net/http and checks
// that it was created.
func rawSignedPost(c *http.Client, s *Signer, base, order string) error {
	op := payment(order, 1000)
	header, err := s.Sign(http.MethodPost, op.Path, "create-"+order, op.Body)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, base+op.Path, bytes.NewReader(op.Body))
	if err != nil {
		return err
	}
	for name, values := range header {
		req.Header[name] = values
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("raw POST: status %d", resp.StatusCode)
	}
	return nil
}
