//go:build cgo

package payidem

/*
#include "payidem.h"
*/
import "C"

// libraryName is the linked library's stable name of value n of one of
// its enums (a payidem_*_name function, which reads the core's table), or
// what(n) for a number the library does not name.
func libraryName(name *C.char, what string, n int) string {
	if name != nil {
		return C.GoString(name)
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
