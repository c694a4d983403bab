//go:build cgo && !payidem_dynamic && windows && amd64

package payidem

// The prebuilt libpayidem.a for windows_amd64 (MinGW-w64; build with
// CC=x86_64-w64-mingw32-gcc or another MinGW gcc): one object whose only
// global symbols are payidem_*, and the import stubs of the system DLLs it
// calls. The system libraries are those rustc names for the Rust static
// library (`--print native-static-libs`; lib/static-libs.txt of the
// Windows zip).

/*
#cgo LDFLAGS: ${SRCDIR}/lib/windows_amd64/libpayidem.a -lsecur32 -ladvapi32 -lkernel32 -lbcrypt -lntdll -luserenv -lws2_32 -ldbghelp
*/
import "C"

import _ "embed"

// staticLibraryManifest is lib/windows_amd64/SOURCES, which holds the
// library's sha256. Embedding it makes the go command, which does not hash
// the libraries named in LDFLAGS, rebuild and relink whenever go-lib.sh
// replaces the library.
//
//go:embed lib/windows_amd64/SOURCES
var staticLibraryManifest string
