//go:build payidem_dynamic

package payidem

// Build tag payidem_dynamic: an installed libpayidem.so found through
// pkg-config (`make install PREFIX=...` writes payidem.pc).

/*
#cgo pkg-config: payidem
*/
import "C"
