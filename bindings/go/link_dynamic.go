//go:build cgo && payidem_dynamic

package payidem

// Build tag payidem_dynamic: an installed libpayidem.so and its header,
// found through pkg-config (`make install PREFIX=...` writes payidem.pc).
// The module's prebuilt static libraries and header copy are not used.

/*
#cgo pkg-config: payidem
*/
import "C"
