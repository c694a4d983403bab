//go:build !payidem_dynamic

package payidem

// Default linking: the static library built from this repository with
// `cargo build --release -p payidem-ffi`. The system libraries are those
// `cargo rustc -p payidem-ffi --release -- --print native-static-libs`
// lists for a Rust static library on Linux.

/*
#cgo CFLAGS: -I${SRCDIR}/../../include
#cgo LDFLAGS: ${SRCDIR}/../../target/release/libpayidem.a -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
*/
import "C"
