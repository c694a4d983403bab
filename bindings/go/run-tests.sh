#!/usr/bin/env bash
# Refreshes the module's prebuilt libraries (scripts/dist/go-lib.sh rebuilds
# them only when stale), builds payidem-mock, then runs the Go binding's
# checks on the default build (the module-local static library): go vet, go
# test -race, the GOGC=1 cgocheck run, a dynamic-link run against `make
# install` + pkg-config, the arm64 library under qemu-aarch64 (qemu-user and
# libc6-arm64-cross installed when missing; the run fails without them), and
# (unless PAYIDEM_GO_BENCH=0) a short benchmark.
# Needs Go, Rust (cargo), gcc; go-lib.sh's build needs zig (installed by
# scripts/dist/tools.sh).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

echo "== scripts/dist/go-lib.sh (the module's libraries, rebuilt when stale)"
scripts/dist/go-lib.sh

echo "== cargo build --release -p payidem-mock"
cargo build --release -p payidem-mock
export PAYIDEM_MOCK="$root/target/release/payidem-mock"
# The package embeds lib/GOOS_GOARCH/SOURCES, which holds the library's hash,
# so the go command relinks when go-lib.sh replaces a library.
unset CGO_LDFLAGS PKG_CONFIG_PATH

cd "$here"
echo "== gofmt -l ."
unformatted="$(gofmt -l .)"
if [ -n "$unformatted" ]; then
	echo "gofmt: these files need formatting: $unformatted" >&2
	exit 1
fi

echo "== go vet ./..."
go vet ./...

echo "== go test -race ./..."
go test -count=1 -race ./...

echo "== GOGC=1 GODEBUG=cgocheck=1 go test ./..."
GOGC=1 GODEBUG=cgocheck=1 go test -count=1 ./...

echo "== dynamic linking (-tags payidem_dynamic, make install + pkg-config)"
# `make install` copies target/dist-stage/x86_64 and never compiles: that
# stage must be the build the module's library came from.
stage="$root/target/dist-stage/x86_64"
if ! cmp -s "$stage/libpayidem.a" "$here/lib/linux_amd64/libpayidem.a" || [ ! -f "$stage/libpayidem.so" ]; then
	"$root/scripts/dist/build-c.sh" --arch x86_64
	if ! cmp -s "$stage/libpayidem.a" "$here/lib/linux_amd64/libpayidem.a"; then
		echo "target/dist-stage/x86_64 is not the module's library: sources changed meanwhile; run again" >&2
		exit 1
	fi
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
make -s -C "$root" install PREFIX="$prefix" >/dev/null
# The go command caches the package with the -L that pkg-config gave a
# previous run (a temp prefix since deleted) without keying on it; naming the
# prefix in CGO_LDFLAGS, which it does key on, makes every run link this one.
export_dyn=(env PKG_CONFIG_PATH="$prefix/lib/pkgconfig" LD_LIBRARY_PATH="$prefix/lib"
	CGO_LDFLAGS="${CGO_LDFLAGS:-} -L$prefix/lib")
"${export_dyn[@]}" go test -c -tags payidem_dynamic -o "$work/payidem-dynamic.test" .
dynamic="$(readelf -d "$work/payidem-dynamic.test")"
if ! grep -q 'NEEDED.*\[libpayidem\.so\.0\]' <<< "$dynamic"; then
	echo "the payidem_dynamic build does not load libpayidem.so.0" >&2
	exit 1
fi
(cd "$here" && "${export_dyn[@]}" "$work/payidem-dynamic.test" \
	-test.run 'TestVectors|TestOperationVectors|TestRoundTripper|TestPostgres|TestEveryHeaderCode|TestClientPays|TestSignThenVerify|TestDefaultJournal|TestMemoryJournal')

echo "== linux_arm64 library under qemu-aarch64 (zig cc, glibc 2.17)"
if [ ! -f "$here/lib/linux_arm64/libpayidem.a" ]; then
	echo "lib/linux_arm64/libpayidem.a is missing: scripts/dist/go-lib.sh builds it" >&2
	exit 1
fi
# qemu-user runs the arm64 test binary; libc6-arm64-cross is its glibc.
arm64_missing=""
command -v qemu-aarch64 >/dev/null 2>&1 || arm64_missing="$arm64_missing qemu-user"
[ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ] || arm64_missing="$arm64_missing libc6-arm64-cross"
if [ -n "$arm64_missing" ]; then
	echo "installing$arm64_missing"
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $arm64_missing >/dev/null
fi
if ! command -v qemu-aarch64 >/dev/null 2>&1 || [ ! -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ]; then
	echo "the arm64 run needs qemu-aarch64 and the arm64 glibc, which could not be installed (apt-get install qemu-user libc6-arm64-cross)" >&2
	exit 1
fi
tools="$("$root/scripts/dist/tools.sh")"
printf '#!/bin/sh\nexec "%s" -m ziglang cc -target aarch64-linux-gnu.2.17 "$@"\n' "$tools/python" > "$work/cc-arm64"
chmod +x "$work/cc-arm64"
# The kill -9 test re-executes the test binary as its child, which under
# user-mode qemu is an arm64 file the host cannot exec; it runs natively
# above (-race and cgocheck runs).
GOARCH=arm64 CGO_ENABLED=1 CC="$work/cc-arm64" \
	go test -count=1 -skip 'TestRoundTripperKilledMidCallIsResumed' \
	-exec "qemu-aarch64 -L /usr/aarch64-linux-gnu" ./...

if [ "${PAYIDEM_GO_BENCH:-1}" != "0" ]; then
	echo "== go test -bench BenchmarkSignRatio (short)"
	go test -run '^$' -bench 'BenchmarkSignRatio' -benchtime 200000x ./...
fi
echo "== Go binding: all checks passed"
