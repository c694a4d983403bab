#!/bin/sh
# Installs libpayidem into a temporary PREFIX with `make install`, builds
# examples/c/pay.c with pkg-config (dynamically, then statically with
# Libs.private) and runs each against payidem-mock started on port 0.
# Usage: install-example.sh path/to/payidem-mock
set -eu
mock=$1
root=$(pwd)
tmp=$(mktemp -d /tmp/payidem-install-XXXXXX)
mock_pid=
cleanup() {
    if [ -n "$mock_pid" ]; then kill "$mock_pid" 2>/dev/null || true; wait "$mock_pid" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
passed=0
failed=0
check() {
    if "$@"; then passed=$((passed + 1)); else echo "FAIL: $*"; failed=$((failed + 1)); fi
}

make -s install PREFIX="$tmp/prefix" >/dev/null
lib="$tmp/prefix/lib"
check test -f "$lib/libpayidem.so.0.1.0"
check test "$(readlink "$lib/libpayidem.so.0")" = libpayidem.so.0.1.0
check test "$(readlink "$lib/libpayidem.so")" = libpayidem.so.0
check test -f "$lib/libpayidem.a"
check test -f "$tmp/prefix/include/payidem.h"
check test -f "$lib/pkgconfig/payidem.pc"

export PKG_CONFIG_PATH="$lib/pkgconfig"
check test "$(pkg-config --modversion payidem)" = "$(sed -n 's/^#define PAYIDEM_VERSION "\(.*\)"/\1/p' "$root/include/payidem.h")"
# shellcheck disable=SC2046
cc -std=c99 -Wall -Wextra -Werror -pedantic "$root/examples/c/pay.c" -o "$tmp/pay" $(pkg-config --cflags --libs payidem)
# shellcheck disable=SC2046
cc -std=c99 -Wall -Wextra -Werror -pedantic "$root/examples/c/pay.c" -o "$tmp/pay-static" \
    $(pkg-config --cflags payidem) -L"$lib" -Wl,-Bstatic -lpayidem -Wl,-Bdynamic \
    $(pkg-config --libs-only-l --static payidem | sed 's/-lpayidem//')
check sh -c "readelf -d '$tmp/pay' | grep -q 'NEEDED.*libpayidem.so.0'"
check sh -c "! readelf -d '$tmp/pay-static' | grep -q 'libpayidem'"

"$mock" --port 0 > "$tmp/mock.out" &
mock_pid=$!
i=0
while [ ! -s "$tmp/mock.out" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
port=$(sed -n '1s/.*:\([0-9]*\)$/\1/p' "$tmp/mock.out")
check test -n "$port"
out=$(LD_LIBRARY_PATH="$lib" "$tmp/pay" "http://127.0.0.1:$port" 2>/dev/null) || out="failed: $out"
echo "dynamic: $out"
check sh -c "printf '%s' '$out' | grep -q '^HTTP 201 key=create-example-1 attempts=1'"
out=$("$tmp/pay-static" "http://127.0.0.1:$port" 2>/dev/null) || out="failed: $out"
echo "static:  $out"
check sh -c "printf '%s' '$out' | grep -q '^HTTP 201 key=create-example-1 attempts=1'"

echo "$passed passed, $failed failed"
test "$failed" -eq 0
