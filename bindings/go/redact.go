//go:build cgo

package payidem

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// RedactURL returns location fit to print: what it names (scheme, host,
// port, path, file) stays readable, what may be a secret never appears. It
// is the rule of the library (payidem::redact_url in Rust; a test runs both
// over core/tests/vectors/redact-v1.json and requires the same text):
//
//   - scheme://… (a URL), parsed by net/url: user information (user and
//     password) becomes ***, a query ?*** (a PostgreSQL or Redis query may
//     hold password=), a fragment #***. A scheme://… the parser refuses,
//     whose host is a list (h1:5432,h2:5433), has a port above 65535 or
//     holds a percent escape or a non-ASCII byte, or that has a user but
//     no host, becomes scheme://*** (an internationalised http(s) host,
//     which the library's parser writes in punycode, is hidden too).
//     Like the library's parser, dot segments of the path are removed, and
//     http, https, ws, wss and ftp URLs get a lower-case host, no default
//     port and at least the path "/".
//   - scheme:…@… without // (a URL with a slash missing): scheme:***.
//   - Text with = and no :// (libpq's key=value form): the value of every
//     keyword containing "password" becomes ***, quoted or not; the rest
//     is kept as written. When the text does not split into keywords and
//     values and mentions a password, all of it becomes ***.
//   - Anything else (a file path, JournalMemory) is returned unchanged.
func RedactURL(location string) string {
	if scheme, ok := schemeOf(location); ok {
		rest := location[len(scheme)+1:]
		if strings.HasPrefix(rest, "//") {
			if shown, ok := redactParsed(location); ok {
				return shown
			}
			return strings.ToLower(scheme) + "://***"
		}
		if strings.Contains(rest, "@") {
			return strings.ToLower(scheme) + ":***"
		}
	}
	if strings.Contains(location, "=") {
		return redactKeyValues(location)
	}
	return location
}

// schemeOf is the scheme location starts with (RFC 3986: a letter, then
// letters, digits, +, - or ., then :), if any.
func schemeOf(location string) (string, bool) {
	i := strings.IndexByte(location, ':')
	if i <= 0 {
		return "", false
	}
	for j := 0; j < i; j++ {
		c := location[j]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (j == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "", false
		}
	}
	return location[:i], true
}

// defaultPorts are the special schemes of the URL standard (which the
// library's parser follows) and their default ports.
var defaultPorts = map[string]string{"http": "80", "https": "443", "ws": "80", "wss": "443", "ftp": "21"}

// redactParsed is a scheme://… URL redacted through net/url; false when
// it is to be hidden after its scheme (see RedactURL).
func redactParsed(location string) (string, bool) {
	u, err := url.Parse(location)
	if err != nil || u.Opaque != "" {
		return "", false
	}
	host, port := u.Hostname(), u.Port()
	if host == "" && u.Host != "" {
		return "", false // a port or ":" without a host
	}
	bracketed := strings.HasPrefix(u.Host, "[")
	if !bracketed && strings.Contains(host, ":") {
		return "", false // a host list: h1:5432,h2
	}
	for i := 0; i < len(host); i++ {
		if host[i] == '%' || host[i] >= 0x80 {
			return "", false
		}
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n > 65535 {
			return "", false
		}
		port = strconv.Itoa(n) // as the library prints it: 0080 is 80
	}
	// Dot segments removed (RFC 3986 5.2.4), as the library's parser does.
	path := u.ResolveReference(&url.URL{}).EscapedPath()
	if def, special := defaultPorts[u.Scheme]; special {
		if host == "" {
			return "", false
		}
		host = strings.ToLower(host)
		if port == def {
			port = ""
		}
		if path == "" {
			path = "/"
		}
	}
	userinfo := false
	if u.User != nil {
		_, hasPassword := u.User.Password()
		userinfo = u.User.Username() != "" || hasPassword
	}
	if u.User != nil && host == "" {
		return "", false // user information (even empty) without a host
	}
	var b strings.Builder
	b.WriteString(u.Scheme + "://")
	if userinfo {
		b.WriteString("***@")
	}
	if bracketed {
		b.WriteString("[" + host + "]")
	} else {
		b.WriteString(host)
	}
	if port != "" {
		b.WriteString(":" + port)
	}
	b.WriteString(path)
	if u.RawQuery != "" || u.ForceQuery {
		b.WriteString("?***")
	}
	// net/url cuts the fragment at the first #, whatever follows.
	if strings.Contains(location, "#") {
		b.WriteString("#***")
	}
	return b.String(), true
}

// redactKeyValues is libpq's key=value form with the value of every
// password keyword replaced by *** (see RedactURL).
func redactKeyValues(text string) string {
	spans, ok := keyValueSpans(text)
	if !ok {
		if strings.Contains(strings.ToLower(text), "password") {
			return "***"
		}
		return text
	}
	var b strings.Builder
	at := 0
	for _, s := range spans {
		if strings.Contains(strings.ToLower(text[s.keyStart:s.keyEnd]), "password") {
			b.WriteString(text[at:s.valueStart])
			b.WriteString("***")
			at = s.valueEnd
		}
	}
	b.WriteString(text[at:])
	return b.String()
}

type keyValueSpan struct{ keyStart, keyEnd, valueStart, valueEnd int }

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

// keyValueSpans are the byte ranges of each keyword and its value in a
// libpq connection string (kw = value, kw='quoted \' value', backslash
// escapes); false when the text does not split that way.
func keyValueSpans(text string) ([]keyValueSpan, bool) {
	n := len(text)
	skip := func(i int) int {
		for i < n && isSpace(text[i]) {
			i++
		}
		return i
	}
	var spans []keyValueSpan
	i := skip(0)
	for i < n {
		var s keyValueSpan
		s.keyStart = i
		for i < n && text[i] != '=' && !isSpace(text[i]) {
			i++
		}
		s.keyEnd = i
		i = skip(i)
		if s.keyEnd == s.keyStart || i >= n || text[i] != '=' {
			return nil, false
		}
		i = skip(i + 1)
		s.valueStart = i
		if i < n && text[i] == '\'' {
			i++
			for {
				if i >= n {
					return nil, false
				}
				if text[i] == '\\' {
					i += 2
					continue
				}
				if text[i] == '\'' {
					break
				}
				i++
			}
			i++
		} else {
			for i < n && !isSpace(text[i]) {
				if text[i] == '\\' {
					i += 2
				} else {
					i++
				}
			}
		}
		if i > n {
			i = n
		}
		s.valueEnd = i
		spans = append(spans, s)
		i = skip(i)
	}
	return spans, true
}

// redactLocations is err with every location of locations that its
// message quotes replaced by its RedactURL form: the library names a file
// journal as given, and a mistyped PostgreSQL URL is taken for a file.
func redactLocations(err error, locations ...string) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	for _, location := range locations {
		if shown := RedactURL(location); location != "" && shown != location {
			e.Message = strings.ReplaceAll(e.Message, location, shown)
		}
	}
	return err
}
