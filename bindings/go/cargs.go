//go:build cgo

package payidem

/*
#include <stdlib.h>
#include <string.h>
#include "payidem.h"
*/
import "C"

import (
	"net/http"
	"sort"
	"strings"
	"unsafe"
)

// cstrings packs the string arguments of one C call NUL-terminated into one
// Go byte slice. Pointers into it are passed to C for that call only; the
// slice holds no Go pointers, as cgo requires.
type cstrings struct {
	buf []byte
}

// add appends s and returns its offset; a NUL inside s cannot reach C and is
// an invalid_argument naming field.
func (a *cstrings) add(field, s string) (int, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return 0, invalid(field, "contains a NUL byte")
	}
	off := len(a.buf)
	a.buf = append(a.buf, s...)
	a.buf = append(a.buf, 0)
	return off, nil
}

// addParts adds the five string parts of a canonical string (method,
// path, timestamp, nonce, idempotency key), each checked under its name,
// and gives their offsets in that order.
func (a *cstrings) addParts(method, path, timestamp, nonce, idempotencyKey string) (offs [5]int, err error) {
	for i, part := range [5][2]string{{"method", method}, {"path", path}, {"timestamp", timestamp}, {"nonce", nonce}, {"idempotency_key", idempotencyKey}} {
		if offs[i], err = a.add(part[0], part[1]); err != nil {
			return offs, err
		}
	}
	return offs, nil
}

// addJSON adds the JSON document render gives, checked under name.
func (a *cstrings) addJSON(name string, render func() ([]byte, error)) (int, error) {
	doc, err := render()
	if err != nil {
		return 0, err
	}
	return a.add(name, string(doc))
}

// addOpt is add for an optional string: "" gives -1, passed as NULL.
func (a *cstrings) addOpt(field, s string) (int, error) {
	if s == "" {
		return -1, nil
	}
	return a.add(field, s)
}

// ptr is the C string at off (NULL for -1). Call it only once every add is
// done: a later add may move the buffer.
func (a *cstrings) ptr(off int) *C.char {
	if off < 0 {
		return nil
	}
	return (*C.char)(unsafe.Pointer(&a.buf[off]))
}

// cOperation is an Operation's strings as C strings for one call.
type cOperation struct {
	args                             cstrings
	order, method, path, key, status int
}

// newCOperation copies op's strings; a NUL in one is an invalid_argument
// naming its field.
func newCOperation(op Operation) (*cOperation, error) {
	c := &cOperation{}
	var err error
	if c.order, err = c.args.add("order_id", op.OrderID); err != nil {
		return nil, err
	}
	if c.method, err = c.args.add("method", op.Method); err != nil {
		return nil, err
	}
	if c.path, err = c.args.add("path", op.Path); err != nil {
		return nil, err
	}
	if c.key, err = c.args.addOpt("idempotency_key", op.IdempotencyKey); err != nil {
		return nil, err
	}
	if c.status, err = c.args.addOpt("status_path", op.StatusPath); err != nil {
		return nil, err
	}
	return c, nil
}

// bytesPtr is a Go byte slice as a C buffer for one call (NULL when empty).
// secretPtr is the secret's bytes for C, never NULL: a NULL secret would
// name "secret" as missing, an empty one fails its length rule.
func secretPtr(secret []byte) *C.uint8_t {
	if len(secret) == 0 {
		return new(C.uint8_t)
	}
	return (*C.uint8_t)(unsafe.Pointer(&secret[0]))
}

func bytesPtr(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0]))
}

// cHeaders is an array of payidem_header with its strings, in one block of
// C memory (an array of pointers may not live in Go memory passed to C).
type cHeaders struct {
	block unsafe.Pointer
	ptr   *C.payidem_header
	count int
}

// newCHeaders copies every value of h (a repeated header stays repeated),
// names sorted for a deterministic order. Free it with free.
func newCHeaders(h http.Header) (cHeaders, error) {
	names := make([]string, 0, len(h))
	count, size := 0, 0
	for name, values := range h {
		if strings.IndexByte(name, 0) >= 0 {
			return cHeaders{}, invalid("headers", "has a name with a NUL byte")
		}
		for _, v := range values {
			if strings.IndexByte(v, 0) >= 0 {
				return cHeaders{}, invalid("headers", "has a value with a NUL byte")
			}
			count++
			size += len(name) + len(v) + 2
		}
		names = append(names, name)
	}
	if count == 0 {
		return cHeaders{}, nil
	}
	sort.Strings(names)
	arrayBytes := count * int(unsafe.Sizeof(C.payidem_header{}))
	block := C.malloc(C.size_t(arrayBytes + size))
	if block == nil {
		panic("payidem: out of memory")
	}
	array := unsafe.Slice((*C.payidem_header)(block), count)
	text := unsafe.Slice((*byte)(unsafe.Add(block, arrayBytes)), size)
	i, off := 0, 0
	put := func(s string) *C.char {
		p := (*C.char)(unsafe.Pointer(&text[off]))
		off += copy(text[off:], s)
		text[off] = 0
		off++
		return p
	}
	for _, name := range names {
		for _, v := range h[name] {
			array[i].name = put(name)
			array[i].value = put(v)
			i++
		}
	}
	return cHeaders{block: block, ptr: &array[0], count: count}, nil
}

func (c cHeaders) free() {
	if c.block != nil {
		C.free(c.block)
	}
}

// cSecrets holds secrets in C memory for payidem_verifier_add_key: an array
// of pointers, an array of lengths and the bytes. free wipes the bytes.
type cSecrets struct {
	block unsafe.Pointer
	size  int
	ptrs  **C.uint8_t
	lens  *C.size_t
	count int
}

func newCSecrets(secrets [][]byte) cSecrets {
	if len(secrets) == 0 {
		return cSecrets{}
	}
	ptrBytes := len(secrets) * int(unsafe.Sizeof((*C.uint8_t)(nil)))
	lenBytes := len(secrets) * int(unsafe.Sizeof(C.size_t(0)))
	size := ptrBytes + lenBytes
	for _, s := range secrets {
		size += len(s) + 1
	}
	block := C.malloc(C.size_t(size))
	if block == nil {
		panic("payidem: out of memory")
	}
	ptrs := unsafe.Slice((**C.uint8_t)(block), len(secrets))
	lens := unsafe.Slice((*C.size_t)(unsafe.Add(block, ptrBytes)), len(secrets))
	data := unsafe.Slice((*byte)(unsafe.Add(block, ptrBytes+lenBytes)), size-ptrBytes-lenBytes)
	off := 0
	for i, s := range secrets {
		ptrs[i] = (*C.uint8_t)(unsafe.Pointer(&data[off]))
		lens[i] = C.size_t(len(s))
		off += copy(data[off:], s) + 1
	}
	return cSecrets{block: block, size: size, ptrs: &ptrs[0], lens: &lens[0], count: len(secrets)}
}

func (s cSecrets) free() {
	if s.block != nil {
		C.memset(s.block, 0, C.size_t(s.size))
		C.free(s.block)
	}
}
