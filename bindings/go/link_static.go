//go:build cgo && !payidem_dynamic

package payidem

// Default linking: the prebuilt static library this module carries, one
// per platform under lib/GOOS_GOARCH/ (link_static_GOOS_GOARCH.go), with
// the header copy in include/. Nothing outside the module is needed but a C
// compiler for cgo. The libraries are built by scripts/dist/build-c.sh for
// glibc 2.17 and copied here by scripts/dist/go-lib.sh, which records what
// they were built from in lib/GOOS_GOARCH/SOURCES.

/*
#cgo CFLAGS: -I${SRCDIR}/include
*/
import "C"
