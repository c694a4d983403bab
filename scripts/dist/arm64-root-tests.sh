#!/bin/bash
# Runs inside the arm64 Debian root that scripts/dist/test-arm64.sh builds,
# every program an arm64 one under qemu: what an arm64 Debian user does with
# the release artifacts.
#
#   arm64-root-tests.sh DIR VERSION MOCK_URL
#
# DIR holds the artifacts (the three _arm64.debs, the linux-aarch64 tarball,
# the manylinux aarch64 wheel, payidem-mock-aarch64, the jar), examples/c/pay.c and,
# under DIR/repo, the files scripts/dist/test-wheel.sh reads (itself,
# LICENSE, bindings/python/README.md). MOCK_URL is a payidem-mock on the
# host's loopback (the root shares its network).
#
# - `dpkg -i` installs libpayidem0, libpayidem-dev and payidem-cli, their
#   dependencies resolved by the root's own dpkg database (libc6);
# - pay.c builds with gcc and pkg-config (payidem, then payidem-static) and
#   pays against the mock; `payidem journal list --json` and `journal check
#   --json` read the journal it wrote;
# - the tarball, unpacked in a directory of its own, builds and runs pay.c,
#   and its bin/payidem reads that journal;
# - the wheel installs into a venv of the root's Python and runs the Python
#   README's examples against payidem-mock-aarch64, started by
#   scripts/dist/test-wheel.sh --only install in this root;
# - the jar (DIR/java/lib, with JNA and Gson; shop.Pay of bindings/java/outside
#   in DIR/java/classes) on the root's arm64 JRE pays against the mock, having
#   loaded its linux-aarch64 library (the mock's oracle: one payment), and
#   `payidem journal list` reads that journal;
# - `dpkg -r` removes the three packages and their files.
#
# The last line is `N passed, N failed`; the exit status is 1 when anything
# failed.
set -uo pipefail

[ $# -eq 3 ] || { echo "usage: $0 DIR VERSION MOCK_URL" >&2; exit 2; }
dir=$1 version=$2 url=$3
deb_runtime="$dir/libpayidem0_$version-1_arm64.deb"
deb_dev="$dir/libpayidem-dev_$version-1_arm64.deb"
deb_cli="$dir/payidem-cli_$version-1_arm64.deb"
tarball="$dir/libpayidem-$version-linux-aarch64.tar.gz"
cflags=(-std=c99 -Wall -Wextra -Werror -pedantic)
tmp="$(mktemp -d /tmp/payidem-arm64-XXXXXX)"
trap 'rm -rf "$tmp"' EXIT

check_label="[arm64 root] "
# shellcheck source=scripts/dist/test-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/test-lib.sh"

check "uname -m says aarch64 (every program here runs under qemu)" sh -c 'uname -m; test "$(uname -m)" = aarch64'

# --- the Debian packages ------------------------------------------------------
check "dpkg -i installs libpayidem0, libpayidem-dev and payidem-cli" \
    dpkg -i "$deb_runtime" "$deb_dev" "$deb_cli"
check "dpkg lists the three packages installed, arm64" sh -c \
    "test \"\$(dpkg-query -W -f='\${Status} \${Architecture}\n' libpayidem0 libpayidem-dev payidem-cli | grep -c 'install ok installed arm64')\" -eq 3"

# pays PROGRAM JOURNAL [ENV...]: one payment, settled at the first attempt,
# into a journal of mode 0600.
pays() {
    local prog=$1 journal=$2 out
    shift 2
    mkdir -m 700 "$(dirname "$journal")"
    out="$(env "$@" "$prog" "$url" "$journal" 2>&1)" || { echo "$out"; return 1; }
    echo "$out"
    grep -q '^HTTP 201 key=create-example-1 attempts=1' <<<"$out" &&
        test "$(stat -c %a "$journal")" = 600
}
needs_libpayidem() { grep -q 'NEEDED.*\[libpayidem.so.0\]' <<<"$(readelf -d "$1")"; }
static_only() {
    local dynamic
    dynamic="$(readelf -d "$1")" && ! grep -q 'libpayidem' <<<"$dynamic"
}
check "deb: pay.c builds with gcc and pkg-config payidem" sh -c \
    "gcc ${cflags[*]} '$dir/pay.c' \$(pkg-config --cflags --libs payidem) -o '$tmp/pay-dyn'"
check "deb: that program loads libpayidem.so.0" needs_libpayidem "$tmp/pay-dyn"
check "deb: it pays against the mock" pays "$tmp/pay-dyn" "$tmp/deb-dyn/journal.sqlite3"
check "deb: pay.c builds with pkg-config payidem-static" sh -c \
    "gcc ${cflags[*]} '$dir/pay.c' \$(pkg-config --cflags --libs payidem-static) -o '$tmp/pay-static'"
check "deb: the static program needs no libpayidem at run time" static_only "$tmp/pay-static"
check "deb: it pays against the mock" pays "$tmp/pay-static" "$tmp/deb-static/journal.sqlite3"
check "payidem-cli: payidem --version" sh -c "payidem --version && test \"\$(payidem --version)\" = 'payidem $version'"
check "payidem-cli: journal list --json lists the payment pay.c made, succeeded" \
    lists_the_payment /usr/bin/payidem "$tmp/deb-dyn/journal.sqlite3"
check "payidem-cli: journal check --json finds that journal sound" checks_sound /usr/bin/payidem "$tmp/deb-dyn/journal.sqlite3"

# --- the tarball, unpacked in a directory of its own ---------------------------
anywhere="$(mktemp -d /opt/payidem-unpacked-XXXXXX)"
check "tarball: unpacks" tar -xzf "$tarball" -C "$anywhere"
tree="$anywhere/libpayidem-$version-linux-aarch64"
check "tarball: pay.c builds with its pkg-config file (PKG_CONFIG_PATH)" env PKG_CONFIG_PATH="$tree/lib/pkgconfig" sh -c \
    "gcc ${cflags[*]} '$dir/pay.c' \$(pkg-config --cflags --libs payidem) -o '$tmp/pay-tarball'"
check "tarball: it pays against the mock (LD_LIBRARY_PATH)" \
    pays "$tmp/pay-tarball" "$tmp/tarball/journal.sqlite3" LD_LIBRARY_PATH="$tree/lib"
check "tarball: bin/payidem journal list --json lists that payment" \
    lists_the_payment "$tree/bin/payidem" "$tmp/tarball/journal.sqlite3"
rm -rf "$anywhere"

# --- the wheel, in a venv of this root's Python ----------------------------------
wheel="$(ls "$dir"/payidem-"$version"-cp39-abi3-*manylinux_2_17_aarch64*.whl)"
echo "== scripts/dist/test-wheel.sh --only install in the arm64 root, against payidem-mock-aarch64"
PAYIDEM_WHEEL_PYTHONS=python3 bash "$dir/repo/scripts/dist/test-wheel.sh" --only install \
    "$wheel" "$dir/payidem-mock-aarch64" | tee "$tmp/wheel.out" | sed 's/^/  /'
wheel_summary="$(tail -n 1 "$tmp/wheel.out")"
if [[ "$wheel_summary" =~ ^([0-9]+)\ passed,\ 0\ failed$ ]] && [ "${BASH_REMATCH[1]}" -gt 0 ]; then
    pass "the wheel's install checks and README examples ($wheel_summary)"
else
    fail "the wheel's install checks and README examples ($wheel_summary)"
fi

# --- the jar, on this root's arm64 JRE (Debian's openjdk-17-jre-headless) ---------
java="$(ls /usr/lib/jvm/java-*-openjdk-arm64/bin/java | head -n 1)"
java_order=java-arm64-1
# java_pays: examples' shop.Pay (bindings/java/outside) pays one order and asks
# again, answered from its journal; prints what it says.
java_pays() {
    local out
    mkdir -m 700 "$tmp/java"
    out="$("$java" -cp "$dir/java/classes:$dir/java/lib/*" shop.Pay "$url" "$tmp/java/journal.sqlite3" "$java_order" 2>&1)" ||
        { echo "$out"; return 1; }
    echo "$out" | tee "$tmp/java.out"
    grep -qx "paid: 201 create-$java_order" "$tmp/java.out" && grep -qx 'again: 201 attempts 1' "$tmp/java.out"
}
check "the jar: shop.Pay on $("$java" -version 2>&1 | head -n 1) pays against the mock, then is answered from its journal" \
    java_pays
check "the jar: it loaded the jar's linux-aarch64 library, SHA-256 verified" \
    grep -q '^library: jar (linux-aarch64, SHA-256 verified): ' "$tmp/java.out"
# The mock's oracle: one payment for that order, under one idempotency key.
check "the jar: the mock saw one payment for $java_order, one key" python3 -c '
import json, sys, urllib.request
stats = json.load(urllib.request.urlopen(sys.argv[1] + "/_mock/stats"))
o = stats["orders"][sys.argv[2]]
assert o["payments_created"] == 1 and len(o["idempotency_keys"]) == 1, o
print(o)
' "$url" "$java_order"
check "payidem-cli: journal list --json reads the Java journal" sh -c \
    "payidem journal list --json --journal '$tmp/java/journal.sqlite3' | grep -q '\"order_id\": *\"$java_order\"'"

# --- removal ------------------------------------------------------------------------
check "dpkg -r removes the three packages and their files" sh -c \
    "dpkg -r payidem-cli libpayidem-dev libpayidem0 >/dev/null && ! ls /usr/lib/aarch64-linux-gnu/libpayidem* /usr/include/payidem.h /usr/bin/payidem 2>/dev/null"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
