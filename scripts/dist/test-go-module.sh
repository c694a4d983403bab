#!/usr/bin/env bash
# The Go module as `go get` users get it: bindings/go copied alone to a
# temporary directory outside the repository and used from a new module
# (require + replace), with no network (GOPROXY=off: the package has no
# dependencies).
#
#   scripts/dist/test-go-module.sh MOCK_BINARY
#
# MOCK_BINARY is payidem-mock (e.g. dist/payidem-mock). Checks: a program
# builds with the module's prebuilt static library, pays against the mock
# with the durable default journal (under a temporary XDG_STATE_HOME), and a
# second run of the same order is answered with the same key without a
# second payment; CGO_ENABLED=0 fails with the one clear error; the
# committed libraries define only payidem_* globals and are at most 15 MiB;
# with zig, the arm64 library links (and pays under qemu-aarch64 when
# installed) and a platform without a library gets one clear error; the
# module's own manifest test passes outside the repository; its whole test
# suite passes, no test skipped, from the copy alone and from the module cache (`go test all`)
# with the released mock on PATH, stops with a clear message without one,
# and never runs cargo. Ends with
# "N passed, N failed"; exits 1 when anything failed.
set -uo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 MOCK_BINARY" >&2
    exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mock_bin="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
if [ ! -x "$mock_bin" ]; then
    echo "test-go-module.sh: $1 is not an executable" >&2
    exit 2
fi
module_path=github.com/payidem/payidem/bindings/go
max_lib_bytes=$((15 * 1024 * 1024))

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "PASS: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }

work="$(mktemp -d "${TMPDIR:-/tmp}/payidem-go-module.XXXXXX")"
mock_pid=
cleanup() {
    if [ -n "$mock_pid" ]; then
        kill "$mock_pid" 2>/dev/null
        wait "$mock_pid" 2>/dev/null
    fi
    chmod -R u+w "$work" 2>/dev/null # the module cache is read-only
    rm -rf "$work"
}
trap cleanup EXIT

case "$work/" in
    "$root"/*) echo "test-go-module.sh: temporary directory $work is inside the repository" >&2; exit 2 ;;
esac

# No network, no workspace, no toolchain switch: only the copied module.
export GOFLAGS=-mod=mod GOPROXY=off GOSUMDB=off GONOSUMDB="$module_path" GOWORK=off GOTOOLCHAIN=local
unset PKG_CONFIG_PATH CGO_CFLAGS CGO_LDFLAGS

# 1. Only bindings/go, as the module zip has it.
cp -R "$root/bindings/go" "$work/payidem-go"
mod="$work/payidem-go"
if [ -f "$mod/include/payidem.h" ] && [ -f "$mod/lib/linux_amd64/libpayidem.a" ]; then
    pass "module copied alone to $mod carries include/payidem.h and lib/linux_amd64/libpayidem.a"
else
    fail "module copy lacks include/payidem.h or lib/linux_amd64/libpayidem.a"
fi

# 2. A new module that uses it.
app="$work/app"
mkdir -p "$app"
cat > "$app/go.mod" <<EOF
module example.com/payidem-module-test

go 1.22

require $module_path v0.0.0

replace $module_path => ../payidem-go
EOF
cat > "$app/main.go" <<'EOF'
// pay ORDER against the mock at URL with the durable default journal and
// print what came back; stats prints the mock's count of payments.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	payidem "github.com/payidem/payidem/bindings/go"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: app pay|stats URL ORDER")
		os.Exit(2)
	}
	url, order := os.Args[2], os.Args[3]
	switch os.Args[1] {
	case "pay":
		c, err := payidem.NewClient(payidem.Config{
			BaseURL: url,
			KeyID:   "key_test_1",
			Secret:  []byte("sk_test_payidem_mock_secret_0001"), // the mock's public test key
			// JournalPath "": the durable default journal.
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "NewClient:", err)
			os.Exit(1)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := c.Execute(ctx, payidem.Operation{
			OrderID:    order,
			Method:     "POST",
			Path:       "/v1/payments",
			Body:       []byte(fmt.Sprintf(`{"order_id":%q,"amount":1250,"currency":"EUR"}`, order)),
			StatusPath: "/v1/payments?order_id=" + order,
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "Execute:", err)
			os.Exit(1)
		}
		var p struct {
			PaymentID string `json:"payment_id"`
		}
		_ = json.Unmarshal(out.Body, &p)
		fmt.Printf("status=%d key=%s replayed=%t payment=%s\n", out.Status, out.IdempotencyKey, out.Replayed, p.PaymentID)
	case "stats":
		resp, err := http.Get(url + "/_mock/stats")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer resp.Body.Close()
		var s struct {
			Payments int `json:"payments"`
			Orders   map[string]struct {
				PaymentsCreated int      `json:"payments_created"`
				IdempotencyKeys []string `json:"idempotency_keys"`
			} `json:"orders"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		o := s.Orders[order]
		fmt.Printf("payments=%d order_payments=%d order_keys=%d\n", s.Payments, o.PaymentsCreated, len(o.IdempotencyKeys))
	default:
		os.Exit(2)
	}
}
EOF

if (cd "$app" && CGO_ENABLED=1 go build -o "$work/app-bin" . ) > "$work/build.log" 2>&1; then
    pass "go build (cgo, static) of a program requiring $module_path"
else
    fail "go build of the program: $(tail -n 20 "$work/build.log")"
fi
if [ -x "$work/app-bin" ]; then
    if ! dynamic="$(readelf -d "$work/app-bin")"; then
        fail "readelf -d cannot read the program"
    elif grep -q 'NEEDED.*libpayidem' <<< "$dynamic"; then
        fail "the program needs libpayidem.so at run time: $(grep NEEDED <<< "$dynamic" | tr -s ' ')"
    else
        pass "the program does not need libpayidem.so (linked the module's libpayidem.a)"
    fi
fi

# 2b. The same program with the module fetched the way `go get` fetches it:
# a module zip from a (file://) module proxy into a read-only module cache,
# whose path holds '@'.
mkdir -p "$work/app-proxy"
version="v$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)"
"$root/scripts/dist/go-module-zip.sh" "$mod" "$work/proxy" > "$work/zip.log" 2>&1 ||
    fail "scripts/dist/go-module-zip.sh: $(tail -n 5 "$work/zip.log")"
cp "$app/main.go" "$work/app-proxy/main.go"
printf 'module example.com/payidem-module-proxy-test\n\ngo 1.22\n' > "$work/app-proxy/go.mod"
if (cd "$work/app-proxy" &&
    GOPROXY="file://$work/proxy" GOMODCACHE="$work/modcache" go get "$module_path@$version" &&
    GOPROXY="file://$work/proxy" GOMODCACHE="$work/modcache" CGO_ENABLED=1 go build -o "$work/app-proxy-bin" . ) > "$work/proxy.log" 2>&1; then
    pass "go get $module_path@$version from a module proxy (zip, read-only module cache) and go build"
else
    fail "go get / go build through a module proxy: $(tail -n 20 "$work/proxy.log")"
fi

# 3. Pay against the mock, twice, with the default journal.
url=
if [ -x "$work/app-bin" ]; then
    "$mock_bin" --port 0 --control < /dev/null > "$work/mock.out" 2> "$work/mock.err" &
    mock_pid=$!
    # Up to 30 s for the first complete line.
    for _ in $(seq 1 300); do
        [ "$(wc -l < "$work/mock.out")" -ge 1 ] && break
        kill -0 "$mock_pid" 2>/dev/null || break
        sleep 0.1
    done
    line="$(head -n 1 "$work/mock.out" 2>/dev/null)"
    case "$line" in
        "listening on "*) url="http://${line#listening on }" ;;
        http://*) url="$line" ;;
    esac
    if [ -n "$url" ]; then
        pass "mock started on port 0: $url"
    else
        fail "mock did not print its address (stdout: '$line', stderr: $(head -c 500 "$work/mock.err"))"
    fi
fi
if [ -n "$url" ]; then
    state="$work/state"
    order="go-module-$$-$(date +%s)"
    run_app() { XDG_STATE_HOME="$state" HOME="$work/home" "$work/app-bin" "$@"; }
    first="$(run_app pay "$url" "$order" 2> "$work/pay1.err")"
    key="create-$order"
    case "$first" in
        "status=201 key=$key replayed=false payment="?*)
            pass "first run pays: HTTP 201 under key $key ($first)" ;;
        *) fail "first run: '$first' $(cat "$work/pay1.err"), want status=201 key=$key replayed=false" ;;
    esac
    journal="$state/payidem/journal.sqlite3"
    if [ -f "$journal" ] && [ "$(stat -c %a "$journal")" = 600 ] && [ "$(stat -c %a "$state/payidem")" = 700 ]; then
        pass "default journal $journal created (file 0600, directory 0700)"
    else
        fail "default journal: $(ls -la "$state/payidem" 2>&1 | tr '\n' ' ')"
    fi
    if [ -e "$work/home" ]; then
        fail "the default journal went to HOME although XDG_STATE_HOME was set"
    fi
    second="$(run_app pay "$url" "$order" 2> "$work/pay2.err")"
    if [ -n "$first" ] && { [ "$second" = "$first" ] || [ "$second" = "${first/replayed=false/replayed=true}" ]; }; then
        pass "second run (a new process) of the same order is answered from the journal/replay with the same key and payment ($second)"
    else
        fail "second run: '$second' $(cat "$work/pay2.err"), want the first answer '$first' under the same key"
    fi
    stats="$("$work/app-bin" stats "$url" "$order" 2>&1)"
    if [ "$stats" = "payments=1 order_payments=1 order_keys=1" ]; then
        pass "the mock took exactly one payment under one key ($stats)"
    else
        fail "mock stats: $stats, want payments=1 order_payments=1 order_keys=1"
    fi
    if [ -x "$work/app-proxy-bin" ]; then
        order2="go-module-proxy-$$-$(date +%s)"
        got="$(XDG_STATE_HOME="$work/state-proxy" "$work/app-proxy-bin" pay "$url" "$order2" 2>&1)"
        case "$got" in
            "status=201 key=create-$order2 replayed=false payment="?*) pass "the program built from the proxied module pays ($got)" ;;
            *) fail "the program built from the proxied module: $got" ;;
        esac
    fi
fi

# 4. Without cgo: one clear error.
if (cd "$app" && CGO_ENABLED=0 go build -o "$work/app-nocgo" . ) > "$work/nocgo.log" 2>&1; then
    fail "CGO_ENABLED=0 go build succeeded"
else
    errors="$(grep -cE '\.go:[0-9]+:[0-9]+: ' "$work/nocgo.log")"
    if grep -q 'undefined: payidem_requires_cgo_set_CGO_ENABLED_1' "$work/nocgo.log" && [ "$errors" = 1 ]; then
        pass "CGO_ENABLED=0 go build fails with the one error: $(grep -E '\.go:[0-9]+:[0-9]+: ' "$work/nocgo.log")"
    else
        fail "CGO_ENABLED=0 go build said: $(cat "$work/nocgo.log")"
    fi
fi

# 5. The committed libraries: only payidem_* defined globals, size.
for lib in "$mod"/lib/*/libpayidem.a; do
    [ -f "$lib" ] || continue
    plat="$(basename "$(dirname "$lib")")"
    case "$plat" in
        linux_amd64) syms="$(nm -g --defined-only "$lib" 2>&1)" ;;
        # The library's one object (the archive's other members are the
        # import stubs of the Windows DLLs it calls, as go-lib.sh checks).
        windows_amd64) syms="$(x86_64-w64-mingw32-nm -A -g --defined-only "$lib" 2>&1 |
            awk -F: '$2 == "payidem.o" { print $3 }')" ;;
        *)
            nm_cmd=
            [ "$plat" = linux_arm64 ] && command -v aarch64-linux-gnu-nm >/dev/null 2>&1 && nm_cmd=aarch64-linux-gnu-nm
            if [ -n "$nm_cmd" ]; then
                syms="$("$nm_cmd" -g --defined-only "$lib" 2>&1)"
            else
                # readelf reads any ELF machine: defined GLOBAL/WEAK symbols, as nm lines.
                syms="$(readelf -sW "$lib" | awk '($5 == "GLOBAL" || $5 == "WEAK" || $5 == "UNIQUE") && $7 != "UND" { print "0 T " $8 }')"
            fi
            ;;
    esac
    total="$(printf '%s\n' "$syms" | awk 'NF == 3' | wc -l)"
    others="$(printf '%s\n' "$syms" | awk 'NF == 3 && $3 !~ /^payidem_/ { print $3 }' | head -n 5 | tr '\n' ' ')"
    if [ "$total" -gt 0 ] && [ -z "$others" ]; then
        pass "$plat/libpayidem.a: all $total defined global symbols are payidem_*"
    else
        fail "$plat/libpayidem.a: defined globals other than payidem_* ($others) or none ($total)"
    fi
    size="$(stat -c %s "$lib")"
    human="$(awk -v b="$size" 'BEGIN { printf "%.1f MiB", b / 1048576 }')"
    if [ "$size" -le "$max_lib_bytes" ]; then
        pass "$plat/libpayidem.a is $human ($size bytes, limit 15 MiB)"
    else
        fail "$plat/libpayidem.a is $human ($size bytes), over 15 MiB"
    fi
done

# 6. Other platforms, cross-compiled with zig (scripts/dist/tools.sh): the
# linux_arm64 library links, and pays under qemu-aarch64 (with the arm64
# glibc, libc6-arm64-cross: installed when missing, as root; without them
# the check fails); a platform without a prebuilt library stops at the one
# clear error.
# qemu-aarch64 and the arm64 glibc, from Debian, when missing (as root).
if { ! command -v qemu-aarch64 >/dev/null 2>&1 || [ ! -d /usr/aarch64-linux-gnu/lib ]; } && [ "$(id -u)" = 0 ]; then
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user libc6-arm64-cross >/dev/null || true
fi
zig_bin=
if tools="$("$root/scripts/dist/tools.sh" 2>/dev/null)" && [ -x "$tools/python" ] && "$tools/python" -m ziglang version >/dev/null 2>&1; then
    zig_bin="$tools/python -m ziglang"
elif command -v zig >/dev/null 2>&1; then
    zig_bin=zig
fi
zig_cc() { # TARGET: a C compiler wrapper for cgo
    printf '#!/bin/sh\nexec %s cc -target %s "$@"\n' "$zig_bin" "$1" > "$work/cc-$1"
    chmod +x "$work/cc-$1"
    echo "$work/cc-$1"
}
# newest_glibc BINARY: the newest GLIBC_ symbol version it needs.
newest_glibc() { readelf -W --dyn-syms "$1" | grep -o 'GLIBC_[0-9][0-9.]*' | sort -uV | tail -n 1; }
floor_ok() { [ "$(printf '%s\nGLIBC_2.17\n' "$1" | sort -V | tail -n 1)" = GLIBC_2.17 ]; }
if [ -z "$zig_bin" ]; then
    fail "glibc 2.17 and cross-platform checks: no zig (scripts/dist/tools.sh installs it)"
else
    # As built on a glibc 2.17 host: every symbol the library needs exists there.
    if (cd "$app" && CGO_ENABLED=1 CC="$(zig_cc x86_64-linux-gnu.2.17)" go build -o "$work/app-217" . ) > "$work/x86-217.log" 2>&1; then
        newest="$(newest_glibc "$work/app-217")"
        if floor_ok "$newest"; then
            pass "linux_amd64 program linked against glibc 2.17 (zig cc): newest symbol version $newest"
        else
            fail "linux_amd64 program linked against glibc 2.17 needs $newest"
        fi
    else
        fail "go build against glibc 2.17 (zig cc): $(tail -n 20 "$work/x86-217.log")"
    fi
    if [ -f "$mod/lib/linux_arm64/libpayidem.a" ]; then
        if (cd "$app" && GOARCH=arm64 CGO_ENABLED=1 CC="$(zig_cc aarch64-linux-gnu.2.17)" go build -o "$work/app-arm64" . ) > "$work/arm64.log" 2>&1; then
            newest="$(newest_glibc "$work/app-arm64")"
            if floor_ok "$newest"; then
                pass "GOARCH=arm64 go build links lib/linux_arm64/libpayidem.a (zig cc, glibc 2.17; newest symbol version $newest)"
            else
                fail "GOARCH=arm64 program needs $newest, above GLIBC_2.17"
            fi
        else
            fail "GOARCH=arm64 go build: $(tail -n 20 "$work/arm64.log")"
        fi
        if [ -x "$work/app-arm64" ] && [ -n "$url" ] && command -v qemu-aarch64 >/dev/null 2>&1 && [ -d /usr/aarch64-linux-gnu/lib ]; then
            order="go-module-arm64-$$-$(date +%s)"
            got="$(XDG_STATE_HOME="$work/state-arm64" qemu-aarch64 -L /usr/aarch64-linux-gnu "$work/app-arm64" pay "$url" "$order" 2>&1)"
            case "$got" in
                "status=201 key=create-$order replayed=false payment="?*) pass "the arm64 program pays under qemu-aarch64 ($got)" ;;
                *) fail "the arm64 program under qemu-aarch64: $got" ;;
            esac
        else
            fail "running the arm64 program: needs qemu-aarch64 and /usr/aarch64-linux-gnu (apt-get install qemu-user libc6-arm64-cross; make cross-deps)"
        fi
    fi
    if (cd "$app" && GOARCH=riscv64 CGO_ENABLED=1 CC="$(zig_cc riscv64-linux-gnu)" go build -o "$work/app-riscv64" . ) > "$work/riscv64.log" 2>&1; then
        fail "GOARCH=riscv64 go build succeeded without a riscv64 library"
    elif grep -q 'undefined: payidem_has_no_prebuilt_library_for_this_GOOS_GOARCH_build_with_tag_payidem_dynamic' "$work/riscv64.log" &&
        [ "$(grep -cE '\.go:[0-9]+:[0-9]+: ' "$work/riscv64.log")" = 1 ]; then
        pass "GOARCH=riscv64 (no prebuilt library) fails with the one error: $(grep -E '\.go:[0-9]+:[0-9]+: ' "$work/riscv64.log")"
    else
        fail "GOARCH=riscv64 go build said: $(tail -n 20 "$work/riscv64.log")"
    fi
fi

# 7. The module's own manifest test, outside the repository: the copies
# match lib/*/SOURCES; the check against the Rust sources needs them.
if (cd "$mod" && PAYIDEM_MOCK="$mock_bin" go test -count=1 -v -run '^TestCommittedLibraryMatchesSources$' . ) > "$work/gotest.log" 2>&1 &&
    grep -q 'copied alone' "$work/gotest.log" && grep -q -- '--- PASS: TestCommittedLibraryMatchesSources' "$work/gotest.log"; then
    pass "go test TestCommittedLibraryMatchesSources in the copied module: copies match their manifest, source check skipped"
else
    fail "go test in the copied module: $(tail -n 20 "$work/gotest.log")"
fi

# 8. The module's whole test suite from the copy alone, and from the module
# cache as `go test all` runs it in a user's project (the module's package
# only: `all` also names the standard library): with the released mock
# on PATH it passes; without one it stops with the one clear message; it
# never runs cargo (a `cargo` on PATH that records being called).
mkdir -p "$work/bin-mock" "$work/bin-cargo"
ln -s "$mock_bin" "$work/bin-mock/payidem-mock"
printf '#!/bin/sh\necho "$*" >> "%s"\nexit 1\n' "$work/cargo-called" > "$work/bin-cargo/cargo"
chmod +x "$work/bin-cargo/cargo"
with_mock="$work/bin-cargo:$work/bin-mock:$PATH"
without_mock="$work/bin-cargo:$PATH"
if command -v payidem-mock >/dev/null 2>&1; then
    fail "a payidem-mock is already on PATH ($(command -v payidem-mock)): the check without one cannot run"
fi
# No test may skip: the module carries what its tests read (testdata/repository).
skipped() { grep -E -- '^\s*--- SKIP' "$1" | head -n 10; }
if (cd "$mod" && env -u PAYIDEM_MOCK PATH="$with_mock" go test -count=1 -v . ) > "$work/gotest-copy.log" 2>&1; then
    if [ -z "$(skipped "$work/gotest-copy.log")" ]; then
        pass "go test in the module copied alone, released mock on PATH: $(grep -c -- '^--- PASS' "$work/gotest-copy.log") passed, none skipped"
    else
        fail "go test in the module copied alone skipped tests: $(skipped "$work/gotest-copy.log")"
    fi
else
    fail "go test in the module copied alone: $(grep -E -- '^(--- FAIL|FAIL|panic)' "$work/gotest-copy.log" | head -n 10) $(tail -n 20 "$work/gotest-copy.log")"
fi
if (cd "$mod" && env -u PAYIDEM_MOCK PATH="$without_mock" go test -count=1 . ) > "$work/gotest-nomock.log" 2>&1; then
    fail "go test without a mock passed"
elif grep -q 'put the released payidem-mock (dist/payidem-mock of `make dist`) on PATH, or set PAYIDEM_MOCK' "$work/gotest-nomock.log"; then
    pass "go test without a mock fails with: $(grep -m 1 'payidem-mock:' "$work/gotest-nomock.log")"
else
    fail "go test without a mock said: $(tail -n 20 "$work/gotest-nomock.log")"
fi
if (cd "$work/app-proxy" && env -u PAYIDEM_MOCK PATH="$with_mock" GOPROXY="file://$work/proxy" GOMODCACHE="$work/modcache" \
    go test -count=1 -v "$module_path" ) > "$work/gotest-all.log" 2>&1; then
    if [ -z "$(skipped "$work/gotest-all.log")" ]; then
        pass "go test $module_path from a project that imports it (the read-only module cache, as \`go test all\` runs it; released mock on PATH): $(tail -n 1 "$work/gotest-all.log"), none skipped"
    else
        fail "go test $module_path from the module cache skipped tests: $(skipped "$work/gotest-all.log")"
    fi
else
    fail "go test $module_path from a project that imports it: $(tail -n 20 "$work/gotest-all.log")"
fi
if [ -e "$work/cargo-called" ]; then
    fail "the module's tests ran cargo: $(cat "$work/cargo-called")"
else
    pass "the module's tests never ran cargo"
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
