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
