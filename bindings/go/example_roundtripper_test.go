//go:build cgo

package payidem_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	payidem "github.com/payidem/payidem/bindings/go"
)

// Paying through net/http: the Transport runs each request as an
// operation of the client (journaled, re-signed on every retry, status
// queried after a lost answer) over the caller's own *http.Client. Here a
// local server stands in for the platform.
func ExampleTransport() {
	platform := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"payment_id":"pay_1","idempotency_key":%q}`, r.Header.Get(payidem.HeaderIdempotencyKey))
	}))
	defer platform.Close()

	cfg := payidem.DefaultConfig()
	cfg.BaseURL = platform.URL
	cfg.KeyID = exampleKeyID
	cfg.Secret = []byte(exampleSecret)
	cfg.JournalPath = payidem.JournalMemory // tests only: production names a file
	client, err := payidem.NewClient(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	// Your own *http.Client (timeouts, proxy, TLS) keeps its Transport
	// underneath; the copy never follows redirects.
	hc := client.HTTPClient(&http.Client{Timeout: 30 * time.Second})
	ctx := payidem.WithOperation(context.Background(), "ord-1001", "/v1/payments?order_id=ord-1001")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, platform.URL+"/v1/payments",
		strings.NewReader(`{"order_id":"ord-1001","amount":1250,"currency":"EUR"}`))
	if err != nil {
		log.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		// errors.Is(err, payidem.ErrOutcomeUnknown): keep the order, resume
		// it later (client.ResumeUnknown); never pay it under a new key.
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// 201 {"payment_id":"pay_1","idempotency_key":"create-ord-1001"}
}

// What a Transport's error means. (Compiled, not run: it needs a platform.)
func ExampleWithOperation() {
	client := openShopClient()
	defer client.Close()
	hc := &http.Client{Transport: &payidem.Transport{Client: client, Base: http.DefaultTransport}}

	ctx := payidem.WithOperation(context.Background(), "ord-1001", "/v1/payments?order_id=ord-1001")
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.example.com/v1/payments",
		strings.NewReader(`{"order_id":"ord-1001","amount":1250,"currency":"EUR"}`))
	resp, err := hc.Do(req)
	switch {
	case err == nil:
		// A settled answer, final: 2xx, or a refusal the platform keeps
		// (402 card_declined ...). Never sent again.
		defer resp.Body.Close()
		fmt.Println("settled:", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"))
	case errors.Is(err, payidem.ErrOutcomeUnknown), errors.Is(err, payidem.ErrCancelled):
		fmt.Println("may have been paid: resume it with the same key later")
	case errors.Is(err, payidem.ErrRefused), errors.Is(err, payidem.ErrTransport):
		fmt.Println("nothing happened; the same request may be sent again:", payidem.IsFinal(err))
	default:
		fmt.Println("not paid:", err)
	}
}

// A caller with its own HTTP stack drives a Call: the client journals and
// decides, the caller sends. (Compiled, not run.)
func ExampleClient_Begin() {
	client := openShopClient()
	defer client.Close()

	call, err := client.Begin(context.Background(), shopPayment)
	if err != nil {
		log.Fatal(err)
	}
	defer call.Close()
	for {
		step, err := call.Step()
		if err != nil {
			log.Fatal(err)
		}
		switch step.Kind {
		case payidem.StepSend:
			reply := sendWithMyHTTPStack(client, step.Send)
			if err := call.Report(reply); err != nil {
				log.Fatal(err)
			}
		case payidem.StepWait:
			time.Sleep(step.Wait)
		case payidem.StepEnd:
			if step.End.Err != nil {
				fmt.Println(step.End.Name, "final:", step.End.Final, step.End.Err)
				return
			}
			fmt.Println("paid:", step.End.Outcome.Status)
			return
		}
	}
}

// sendWithMyHTTPStack stands for the caller's HTTP client.
func sendWithMyHTTPStack(client *payidem.Client, a *payidem.Attempt) payidem.Reply {
	target, err := client.URL(a.Path)
	if err != nil {
		return payidem.Reply{Outcome: payidem.OutcomeNotSent, Reason: err.Error()}
	}
	req, err := http.NewRequest(a.Method, target, strings.NewReader(string(a.Body)))
	if err != nil {
		return payidem.Reply{Outcome: payidem.OutcomeNotSent, Reason: err.Error()}
	}
	req.Header = a.Header.Clone()
	req.GetBody = nil // never let net/http replay the same signed bytes
	ctx, cancel := context.WithTimeout(context.Background(), a.Timeout)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		// Unsure whether it left: say so (payidem.Transport tells the two
		// apart with httptrace).
		return payidem.Reply{Outcome: payidem.OutcomeSentNoResponse, Reason: err.Error()}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return payidem.Reply{Outcome: payidem.OutcomeSentNoResponse, Reason: err.Error()}
	}
	return payidem.Reply{Outcome: payidem.OutcomeResponse, Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// The pure machine, for callers with their own journal: deterministic
// given the times it is told.
func ExampleNewMachine() {
	signer := newExampleSigner()
	defer signer.Close()
	now := time.Unix(1767225600, 0)
	m, err := payidem.NewMachine(payidem.MachineStart{
		Operation: payidem.Operation{
			OrderID: "ord-1001",
			Method:  http.MethodPost,
			Path:    "/v1/payments",
			Body:    []byte(`{"order_id":"ord-1001","amount":1250,"currency":"EUR"}`),
		},
		Now: now,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	step, _ := m.Poll(signer, now, 0)
	fmt.Println(step.Kind, "attempt", step.Persist.Attempt, "first", step.Persist.First)
	_ = m.Persisted() // after your journal has the record, durably

	step, _ = m.Poll(signer, now, 0)
	fmt.Println(step.Kind, step.Send.Kind, step.Send.Method, step.Send.Path, step.Send.Header.Get(payidem.HeaderIdempotencyKey))

	reaction, _ := m.Handle(payidem.Reply{Outcome: payidem.OutcomeResponse, Status: 504}, now, time.Second)
	fmt.Println("504:", reaction.Next, "landed", reaction.Landed)

	end, _ := m.Abandon("shutting down")
	fmt.Println(end.Name, "final", end.Final, "state", end.State)
	// Output:
	// persist attempt 1 first true
	// send operation POST /v1/payments create-ord-1001
	// 504: retry_later landed maybe
	// unknown final false state unknown
}
