//go:build !cgo

package payidem

// payidem is a cgo binding of libpayidem, the Rust library that holds
// every protocol rule; without cgo there is nothing to call. The build
// stops at the identifier below, whose name is the fix: build with
// CGO_ENABLED=1 and a C compiler (gcc or clang) on PATH. Every other file
// of the package requires cgo, so this is the only error the go command
// reports.
var _ = payidem_requires_cgo_set_CGO_ENABLED_1
