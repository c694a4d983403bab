#!/usr/bin/env bash
# Builds libpayidem.a and payidem-mock (release) with cargo, then runs the Go
# binding's checks: go vet, go test -race, the GOGC=1 cgocheck run, a
# dynamic-link run against `make install` + pkg-config, and (unless
# PAYIDEM_GO_BENCH=0) a short benchmark. Needs Go, Rust (cargo) and gcc.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

echo "== cargo build --release -p payidem-ffi -p payidem-mock"
cargo build --release -p payidem-ffi -p payidem-mock

export PAYIDEM_MOCK="$root/target/release/payidem-mock"
# The go command does not hash libraries named in #cgo LDFLAGS: a define
# that carries the library's hash makes it relink whenever the library
# changes.
lib_sha="$(sha256sum "$root/target/release/libpayidem.a" | cut -c1-16)"
export CGO_CFLAGS="${CGO_CFLAGS:--O2 -g} -DPAYIDEM_LIB_SHA=$lib_sha"

cd "$here"
echo "== go vet ./..."
go vet ./...

echo "== go test -race ./..."
go test -count=1 -race ./...

echo "== GOGC=1 GODEBUG=cgocheck=1 go test ./..."
GOGC=1 GODEBUG=cgocheck=1 go test -count=1 ./...

echo "== dynamic linking (-tags payidem_dynamic, make install + pkg-config)"
prefix="$(mktemp -d)"
trap 'rm -rf "$prefix"' EXIT
make -s -C "$root" install PREFIX="$prefix" >/dev/null
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" LD_LIBRARY_PATH="$prefix/lib" \
	go test -count=1 -tags payidem_dynamic -run 'TestVectors|TestEveryHeaderCode|TestClientPays|TestSignThenVerify' ./...

if [ "${PAYIDEM_GO_BENCH:-1}" != "0" ]; then
	echo "== go test -bench BenchmarkSignRatio (short)"
	go test -run '^$' -bench 'BenchmarkSignRatio' -benchtime 200000x ./...
fi
echo "== Go binding: all checks passed"
