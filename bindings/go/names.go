//go:build cgo

package payidem

/*
#include "payidem.h"
*/
import "C"

import "math"

// libraryName is the linked library's stable name of value n of one of
// its enums (name is its payidem_*_name function, which reads the core's
// table and answers NULL for a number it does not know), or what(n) for a
// number the library does not name (also one past the C ABI's 32 bits,
// never another value's name).
func libraryName(n int, what string, name func(C.uint32_t) *C.char) string {
	if n >= 0 && uint64(n) <= math.MaxUint32 {
		if s := name(C.uint32_t(n)); s != nil {
			return C.GoString(s)
		}
	}
	return what + "(" + itoa(n) + ")"
}

// signedHeaderNames is the linked library's list of the headers a signed
// attempt carries (payidem_signed_header_name, the core's one spelling):
// HeaderAPIKey, HeaderTimestamp, HeaderNonce, HeaderSignature and
// HeaderIdempotencyKey, which a test checks against it.
func signedHeaderNames() []string {
	var names []string
	for i := 0; ; i++ {
		name := C.payidem_signed_header_name(C.uint32_t(i))
		if name == nil {
			return names
		}
		names = append(names, C.GoString(name))
	}
}
