//go:build cgo

package payidem_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"time"

	payidem "github.com/payidem/payidem/bindings/go"
)

// The mock platform's public test key (never a real secret).
const (
	exampleKeyID  = "key_test_1"
	exampleSecret = "sk_test_payidem_mock_secret_0001"
)

// newExampleSigner is a signer of the mock platform's test key, made as
// ExampleSigner_SignParts shows; Close it when done.
func newExampleSigner() *payidem.Signer {
	signer, err := payidem.NewSigner(exampleKeyID, []byte(exampleSecret))
	if err != nil {
		log.Fatal(err)
	}
	return signer
}

// shopConfig is a production client's configuration: the platform's base
// URL, the API key, its secret from the environment and a journal file
// that outlives the process.
func shopConfig() payidem.Config {
	cfg := payidem.DefaultConfig()
	cfg.BaseURL = "https://api.example.com"
	cfg.KeyID = "key_live_1"
	cfg.Secret = []byte(os.Getenv("PAYIDEM_SECRET"))
	cfg.JournalPath = "/var/lib/shop/payidem.sqlite3"
	return cfg
}

// openShopClient opens the client of shopConfig; Close it when done.
func openShopClient() *payidem.Client {
	client, err := payidem.NewClient(shopConfig())
	if err != nil {
		log.Fatal(err)
	}
	return client
}

// shopPayment is the payment of order ord-1001, with the status query that
// finds it after a lost answer.
var shopPayment = payidem.Operation{
	OrderID:    "ord-1001",
	Method:     http.MethodPost,
	Path:       "/v1/payments",
	Body:       []byte(`{"order_id":"ord-1001","amount":1250,"currency":"EUR"}`),
	StatusPath: "/v1/payments?order_id=ord-1001",
}

// The canonical string and signature of one attempt, with the timestamp
// and nonce fixed as a recorded attempt would have them. Production code
// signs with Sign, SignAttempt or SignRequest, which take the clock and a
// fresh random nonce.
func ExampleSigner_SignParts() {
	signer, err := payidem.NewSigner(exampleKeyID, []byte(exampleSecret))
	if err != nil {
		log.Fatal(err)
	}
	defer signer.Close()
	body := []byte(`{"order_id":"ord-1001","amount":1250,"currency":"EUR"}`)
	const timestamp, nonce = "1700000000", "6f1c2a4e-9b3d-4c5e-8f70-1a2b3c4d5e6f"

	canonical, err := payidem.CanonicalString("POST", "/v1/payments", timestamp, nonce, "create-ord-1001", body)
	if err != nil {
		log.Fatal(err)
	}
	signature, err := signer.SignParts("POST", "/v1/payments", timestamp, nonce, "create-ord-1001", body)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(canonical)
	fmt.Println("X-Signature:", signature)
	// Output:
	// POST
	// /v1/payments
	// 1700000000
	// 6f1c2a4e-9b3d-4c5e-8f70-1a2b3c4d5e6f
	// create-ord-1001
	// b1feb00413e01610908efa9e799dc2214b0a1182c69e986b13620f23054555fc
	// X-Signature: 4d8641d1e6baff113668a0d609b06ca848daa5dc79173b5505ae0e0236ebc31b
}

// Signing a net/http request in place: every attempt, retries included,
// is signed again just before it is sent.
func ExampleSigner_SignRequest() {
	signer := newExampleSigner()
	defer signer.Close()
	body := []byte(`{"order_id":"ord-1001","amount":1250,"currency":"EUR"}`)
	req, err := http.NewRequest(http.MethodPost, "https://api.example.com/v1/payments", bytes.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	req.Header.Set(payidem.HeaderIdempotencyKey, "create-ord-1001")
	if err := signer.SignRequest(req); err != nil {
		log.Fatal(err)
	}
	fmt.Println(payidem.HeaderAPIKey+":", req.Header.Get(payidem.HeaderAPIKey))
	fmt.Println(payidem.HeaderIdempotencyKey+":", req.Header.Get(payidem.HeaderIdempotencyKey))
	fmt.Println("signature hex digits:", len(req.Header.Get(payidem.HeaderSignature)))
	// Output:
	// X-Api-Key: key_test_1
	// Idempotency-Key: create-ord-1001
	// signature hex digits: 64
}

// The decision table, for callers that send attempts with their own HTTP
// stack: what to do after each answer.
func ExampleDecide() {
	now := time.Now()
	answers := []payidem.AttemptResult{
		{Outcome: payidem.OutcomeResponse, Status: 201},
		{Outcome: payidem.OutcomeResponse, Status: 503, Headers: http.Header{"Retry-After": {"2"}}},
		{Outcome: payidem.OutcomeResponse, Status: 409, ErrorCode: "idempotency_conflict"},
		{Outcome: payidem.OutcomeResponse, Status: 504},
		{Outcome: payidem.OutcomeNotSent},
	}
	for _, a := range answers {
		d, err := payidem.Decide(a, true, now)
		if err != nil {
			log.Fatal(err)
		}
		switch d.Kind {
		case payidem.DecisionRetryAfter:
			fmt.Println(a.Status, d.Kind, d.RetryAfter)
		case payidem.DecisionFail:
			fmt.Println(a.Status, d.Kind, d.Failure)
		default:
			fmt.Println(a.Status, d.Kind)
		}
	}
	// Output:
	// 201 done
	// 503 retry_after 2s
	// 409 fail idempotency_conflict
	// 504 query_status
	// 0 retry_backoff
}

// The platform side: a verifier accepts a signed request once; the same
// bytes again are a replay, answered 409 nonce_reused.
func ExampleVerifier() {
	keys := map[string][][]byte{exampleKeyID: {[]byte(exampleSecret)}}
	verifier, err := payidem.NewVerifier(keys, 300*time.Second, 100000)
	if err != nil {
		log.Fatal(err)
	}
	defer verifier.Close()
	signer := newExampleSigner()
	defer signer.Close()

	body := []byte(`{"order_id":"ord-1001","amount":1250,"currency":"EUR"}`)
	req, _ := http.NewRequest(http.MethodPost, "https://api.example.com/v1/payments", bytes.NewReader(body))
	req.Header.Set(payidem.HeaderIdempotencyKey, "create-ord-1001")
	if err := signer.SignRequest(req); err != nil {
		log.Fatal(err)
	}

	verified, err := verifier.VerifyRequest(req, body, time.Now())
	fmt.Println("first:", err, verified.KeyID, verified.IdempotencyKey)
	_, err = verifier.VerifyRequest(req, body, time.Now())
	var e *payidem.Error
	if errors.As(err, &e) {
		fmt.Println("again:", e.Code, e.HTTPStatus, errors.Is(err, payidem.ErrNonceReused))
	}
	// Output:
	// first: <nil> key_test_1 create-ord-1001
	// again: nonce_reused 409 true
}

// A service pays an order: one key for the operation, retries and status
// queries by the protocol, the operation journaled before anything is
// sent. (Compiled, not run: it needs a platform.)
func ExampleClient() {
	cfg := shopConfig()
	cfg.OnAttempt = payidem.SlogHook(slog.Default())
	client, err := payidem.NewClient(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := client.Execute(ctx, shopPayment)
	var rejected *payidem.RejectedError
	switch {
	case err == nil:
		fmt.Println("paid:", out.Status, "replayed:", out.Replayed)
	case errors.As(err, &rejected):
		fmt.Println("declined for good:", rejected.Status, string(rejected.Body))
	case errors.Is(err, payidem.ErrOutcomeUnknown), errors.Is(err, payidem.ErrCancelled):
		// The payment may have happened: never pay it again under a new
		// key. The operation keeps its key; ResumeUnknown finishes it.
		fmt.Println("unknown for now, resume later:", err)
	default:
		fmt.Println("not paid:", err)
	}
}

// At start-up, a service finishes what a crash or an unknown outcome left
// in flight, with the same keys. (Compiled, not run.)
func ExampleClient_ResumeUnknown() {
	client := openShopClient()
	defer client.Close()

	results, err := client.ResumeUnknown(context.Background())
	if err != nil {
		log.Fatal(err) // the journal could not be read
	}
	for _, r := range results {
		switch {
		case r.Err == nil:
			fmt.Println(r.OrderID, "settled:", r.Outcome.Status)
		case errors.Is(r.Err, payidem.ErrOperationBusy):
			fmt.Println(r.OrderID, "another process is finishing it")
		default:
			fmt.Println(r.OrderID, r.Err)
		}
	}
	if purged, err := client.PurgeSettled(context.Background()); err == nil {
		fmt.Println("purged", purged, "settled operations")
	}
}

// Reading a resource with one signed GET, outside the journal. (Compiled,
// not run.)
func ExampleClient_Get() {
	client := openShopClient()
	defer client.Close()

	resp, err := client.Get(context.Background(), "/v1/payments?order_id=ord-1001")
	if err != nil {
		log.Fatal(err) // no answer: a transport error or the context's end
	}
	fmt.Println(resp.Status, resp.Headers.Get("Content-Type"), len(resp.Body))
}
