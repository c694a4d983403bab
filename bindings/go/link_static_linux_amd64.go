//go:build cgo && !payidem_dynamic && linux && amd64

package payidem

// The prebuilt libpayidem.a for linux_amd64 (glibc >= 2.17): one relocatable
// object whose only global symbols are payidem_*. The system libraries are
// those a Rust static library needs on Linux (`--print native-static-libs`).

/*
#cgo LDFLAGS: ${SRCDIR}/lib/linux_amd64/libpayidem.a -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
*/
import "C"

import _ "embed"

// staticLibraryManifest is lib/linux_amd64/SOURCES, which holds the library's
// sha256. Embedding it makes the go command, which does not hash the
// libraries named in LDFLAGS, rebuild and relink whenever go-lib.sh
// replaces the library.
//
//go:embed lib/linux_amd64/SOURCES
var staticLibraryManifest string
