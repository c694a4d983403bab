// Package payidem is the Go binding of payidem: request signing,
// verification and idempotent retries for a payment API (protocol v1).
//
// Every protocol rule lives in the audited Rust library behind the C ABI
// (include/payidem.h); this package only moves values across it. A Client
// runs business operations to a settled outcome with one idempotency key
// each, journaled so that a crash or an unknown outcome can be resumed
// without a second charge (Client.ResumeUnknown at start-up finishes what
// a crash left in flight); every Client method takes a context.Context.
// Signer and Verifier serve callers that keep their own HTTP stack
// (net/http included), and Decide exposes the retry decision table.
//
// Nothing is defined twice: error codes, options and defaults come from the
// linked library (DefaultConfig, ResultName), and the package's tests fail
// when the binding lacks a code, an option or a default the library has.
//
// The module carries the header and a prebuilt static libpayidem for
// linux/amd64 and linux/arm64 (glibc >= 2.17), so `go get` is enough with
// cgo enabled and a C compiler; the build tag payidem_dynamic links an
// installed libpayidem.so through pkg-config instead. A Client's journal is
// durable by default ($XDG_STATE_HOME/payidem/journal.sqlite3, else
// $HOME/.local/state/payidem/journal.sqlite3); JournalMemory is for tests
// only.
//
// Errors match their code's sentinel with errors.Is (ErrOutcomeUnknown,
// ErrRejected, ...) and reach *Error, *RejectedError and
// *InvalidArgumentError with errors.As.
package payidem
