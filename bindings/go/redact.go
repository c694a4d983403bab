//go:build cgo

package payidem

/*
#include "payidem.h"
*/
import "C"

// RedactURL returns location (a journal path or URL, a proxy, a base URL,
// a replay store's URL, a libpq key=value string) fit to print, exactly as
// the linked library prints it in its errors: what it names (scheme,
// host, port, path, file) stays readable; user and password, a URL's
// query and fragment, and the value of every password keyword become
// ***; a URL the library cannot parse is hidden after its scheme; a file
// path is returned unchanged. The rule is the library's own
// (payidem_redact_url), checked against core/tests/vectors/redact-v1.json.
// Text the library cannot take (a NUL byte, invalid UTF-8) is all ***.
func RedactURL(location string) string {
	var args cstrings
	off, err := args.add("location", location)
	if err != nil {
		return "***"
	}
	shown, err := readText(len(location)+16, func(buf *C.char, n C.size_t, l *C.size_t, cerr **C.payidem_error) C.payidem_result {
		return C.payidem_redact_url(args.ptr(off), buf, n, l, cerr)
	})
	if err != nil {
		return "***"
	}
	return shown
}
