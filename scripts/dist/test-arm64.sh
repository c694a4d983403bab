#!/usr/bin/env bash
# Proves the Linux arm64 artifacts of dist/ where their users are: in an
# arm64 Debian root, every program run by qemu.
#
#   scripts/dist/test-arm64.sh [MOCK]     (default dist/payidem-mock, the host's)
#
# On the host (binutils for aarch64): every binary is AArch64 and needs no
# glibc newer than 2.17 (the newest GLIBC_x.y symbol version it names);
# libpayidem.so exports exactly the header's functions and has its SONAME;
# libpayidem.a defines only payidem_* globally; binaries are stripped with a
# debug link; the .debs are arm64, in the multiarch libdir, payidem-cli
# depends on exactly the glibc its binary needs; the wheel passes
# scripts/dist/test-wheel.sh --arch aarch64 --only file (tag, size,
# auditwheel, stripped AArch64 extension).
#
# Then an arm64 Debian root (Debian's minbase packages plus python3,
# python3-venv, gcc, libc6-dev and pkg-config, unpacked and recorded in its
# dpkg database by scripts/dist/arm64-root.sh: no root needed, no arm64 code
# run to make it), in a temporary directory under target/ removed at the end,
# runs scripts/dist/arm64-root-tests.sh: dpkg -i of the three .debs, pay.c
# built with pkg-config paying against MOCK on the host's loopback, `payidem
# journal list` on its journal, the tarball unpacked elsewhere, the wheel in
# a venv running the Python README's examples against payidem-mock-aarch64.
#
# How arm64 programs run: a user namespace of this run's own (unshare
# --map-root-user: the user who runs this, root or not, is root there and
# owns the root's files) mounts its own binfmt_misc, where
# qemu-aarch64-static (taken from Debian's qemu-user-static package with
# `apt-get download`, never installed) is registered with the F flag, so that
# it runs inside the chroot; nothing outside the namespace sees the
# registration. Needs Linux >= 6.7 (a binfmt_misc per user namespace) with
# user namespaces allowed to the user, not root; debootstrap, fakeroot (when
# not root), the aarch64 binutils and util-linux, installed by apt-get when
# missing and run as root, else named; and the Debian mirror
# (PAYIDEM_DEBIAN_MIRROR, default http://deb.debian.org/debian; suite
# PAYIDEM_ARM64_SUITE, default bookworm).
#
# The last line is `N passed, N failed`; the exit status is 1 when anything
# failed. Runs beside other suites (temporary directories of its own, the
# mock on port 0); needs no terminal and no SIGINT.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dist="$root/dist"
mock="${1:-$dist/payidem-mock}"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)"
tarball="$dist/libpayidem-$version-linux-aarch64.tar.gz"
deb_runtime="$dist/libpayidem0_$version-1_arm64.deb"
deb_dev="$dist/libpayidem-dev_$version-1_arm64.deb"
deb_cli="$dist/payidem-cli_$version-1_arm64.deb"
mock_arm="$dist/payidem-mock-aarch64"
suite="${PAYIDEM_ARM64_SUITE:-bookworm}"
mirror="${PAYIDEM_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
start=$SECONDS

for f in "$tarball" "$deb_runtime" "$deb_dev" "$deb_cli" "$mock_arm" "$mock"; do
    [ -f "$f" ] || { echo "test-arm64.sh: $f is missing: run 'make dist' first" >&2; exit 1; }
done
wheels=("$dist"/payidem-"$version"-cp39-abi3-*manylinux_2_17_aarch64*.whl)
if [ "${#wheels[@]}" -ne 1 ] || [ ! -f "${wheels[0]}" ]; then
    echo "test-arm64.sh: expected one aarch64 wheel in dist/, found: ${wheels[*]}: run 'make dist' first" >&2
    exit 1
fi
wheel="${wheels[0]}"
root_user=false
[ "$(id -u)" -ne 0 ] || root_user=true
missing=""
command -v debootstrap >/dev/null || missing="$missing debootstrap"
command -v aarch64-linux-gnu-objdump >/dev/null || missing="$missing binutils-aarch64-linux-gnu"
command -v unshare >/dev/null || missing="$missing util-linux"
$root_user || command -v fakeroot >/dev/null || missing="$missing fakeroot"
if [ -n "$missing" ]; then
    $root_user || { echo "test-arm64.sh: missing Debian packages (install them as root):$missing" >&2; exit 1; }
    echo "installing$missing"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi

mkdir -p "$root/target"
tmp="$(mktemp -d "$root/target/test-arm64.XXXXXX")"
mock_pid=
session_pid=
java_pid=
cleanup() {
    if [ -n "$java_pid" ]; then kill "$java_pid" 2>/dev/null || true; wait "$java_pid" 2>/dev/null || true; fi
    if [ -n "$session_pid" ]; then kill "$session_pid" 2>/dev/null || true; wait "$session_pid" 2>/dev/null || true; fi
    if [ -n "$mock_pid" ]; then kill "$mock_pid" 2>/dev/null || true; wait "$mock_pid" 2>/dev/null || true; fi
    # The root's /proc, /dev and /sys are bound only inside the namespace,
    # gone with it; never remove through a mount that is still there.
    if grep -q " $tmp/" /proc/self/mountinfo; then
        echo "test-arm64.sh: something is still mounted under $tmp; left in place" >&2
    else
        rm -rf "$tmp"
    fi
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 143' TERM
# shellcheck source=scripts/dist/test-lib.sh
. "$root/scripts/dist/test-lib.sh"
elapsed() { echo "== $1: $((SECONDS - start)) s since the start"; }

# --- the files, on the host ----------------------------------------------------
elf_prefix=aarch64-linux-gnu-
# shellcheck source=scripts/dist/elf-checks.sh
. "$root/scripts/dist/elf-checks.sh"
mkdir -p "$tmp/tar"
tar -xzf "$tarball" -C "$tmp/tar"
tree="$tmp/tar/libpayidem-$version-linux-aarch64"
so="$tree/lib/libpayidem.so.$version"
a="$tree/lib/libpayidem.a"
for bin in "$so" "$tree/bin/payidem" "$mock_arm"; do
    check "$(basename "$bin") is AArch64" machine_is "$bin" AArch64
    check "$(basename "$bin") needs no glibc newer than 2.17" at_most_2_17 "$bin"
    check "$(basename "$bin") is stripped and links its debug file" stripped_with_link "$bin"
done
check "libpayidem.so has SONAME libpayidem.so.0" sh -c "readelf -d '$so' | grep -q 'SONAME.*\[libpayidem.so.0\]'"
check "libpayidem.so exports only payidem_*" only_payidem_dynamic "$so"
check "libpayidem.so exports exactly the functions the header declares" \
    same_functions "$tree/include/payidem.h" defined_in_so "$so"
check "libpayidem.a defines only payidem_* globally" only_payidem_global "$a"
check "libpayidem.a defines exactly the functions the header declares" \
    same_functions "$tree/include/payidem.h" defined_in_a "$a"
check "libpayidem.a carries no debug info" no_debug_info "$a"
debug_files_are_aarch64() {
    local f
    for f in "libpayidem.so.$version.debug" libpayidem.a.debug payidem.debug payidem-mock.debug; do
        machine_is "$dist/debug/aarch64/$f" AArch64 || return 1
    done
}
check "the separate debug files, in dist/debug/aarch64/, are AArch64" debug_files_are_aarch64
check "the three .debs are Architecture: arm64" sh -c \
    "for d in '$deb_runtime' '$deb_dev' '$deb_cli'; do test \"\$(dpkg-deb -f \"\$d\" Architecture)\" = arm64 || exit 1; done"
check "the .debs use the aarch64 multiarch libdir" sh -c \
    "dpkg-deb -c '$deb_runtime' | grep -q './usr/lib/aarch64-linux-gnu/libpayidem.so.$version\$' && dpkg-deb -c '$deb_dev' | grep -q './usr/lib/aarch64-linux-gnu/libpayidem.a\$'"
cli_depends_on_its_floor() {
    local bin="$tmp/cli-x/usr/bin/payidem" floor depends
    dpkg-deb -x "$deb_cli" "$tmp/cli-x"
    floor="$(glibc_floor "$bin")"
    depends="$(dpkg-deb -f "$deb_cli" Depends)"
    echo "Depends: $depends; the binary needs glibc $floor"
    [ -n "$floor" ] && [ "$depends" = "libc6 (>= $floor)" ] && at_most_2_17 "$bin" && cmp "$bin" "$tree/bin/payidem"
}
check "payidem-cli depends on exactly libc6 (>= the glibc its binary needs), at most 2.17; the tarball's binary" \
    cli_depends_on_its_floor
echo "== scripts/dist/test-wheel.sh --arch aarch64 --only file"
if "$root/scripts/dist/test-wheel.sh" --arch aarch64 --only file "$wheel" > "$tmp/wheel-file.out" 2>&1; then
    pass "the aarch64 wheel's file checks ($(tail -n 1 "$tmp/wheel-file.out"))"
else
    fail "the aarch64 wheel's file checks"
fi
sed 's/^/  /' "$tmp/wheel-file.out"
printf 'sizes (aarch64): libpayidem.so %s B, libpayidem.a %s B, payidem-mock-aarch64 %s B, payidem %s B, tarball %s B, libpayidem0.deb %s B, libpayidem-dev.deb %s B, payidem-cli.deb %s B, wheel %s B\n' \
    "$(size_of "$so")" "$(size_of "$a")" "$(size_of "$mock_arm")" "$(size_of "$tree/bin/payidem")" "$(size_of "$tarball")" \
    "$(size_of "$deb_runtime")" "$(size_of "$deb_dev")" "$(size_of "$deb_cli")" "$(size_of "$wheel")"
elapsed "host checks"

# --- the jar, for the arm64 JRE -------------------------------------------------------
java_app="$tmp/java-app"
echo "== bindings/java/build-app.sh (the jar with every staged library, and shop.Pay), in the background"
"$root/bindings/java/build-app.sh" "$java_app" > "$tmp/java-build.log" 2>&1 &
java_pid=$!

# --- the arm64 root --------------------------------------------------------------
# apt's download user could not write into this directory of ours: download as ourselves.
download_qemu() { (cd "$tmp" && apt-get download -q -o APT::Sandbox::User="$(id -un)" qemu-user-static >/dev/null); }
if ! download_qemu; then
    # The host's package lists may name a version the mirror has replaced
    # since they were fetched (a machine that keeps them between runs).
    echo "test-arm64.sh: apt-get download qemu-user-static failed; fetching the package lists again" >&2
    apt-get update -qq
    download_qemu
fi
dpkg-deb -x "$tmp"/qemu-user-static_*.deb "$tmp/qemu"
qemu="$tmp/qemu/usr/bin/qemu-aarch64-static"
[ -x "$qemu" ] || { echo "test-arm64.sh: no qemu-aarch64-static in Debian's qemu-user-static" >&2; exit 1; }
rm -f "$tmp"/qemu-user-static_*.deb

aroot="$tmp/root"
echo "== scripts/dist/arm64-root.sh: an arm64 Debian $suite root ($mirror)"
"$root/scripts/dist/arm64-root.sh" "$aroot" "$suite" "$mirror" python3 python3-venv gcc libc6-dev pkg-config \
    openjdk-17-jre-headless
elapsed "the arm64 root, unpacked"
java_status=0
wait "$java_pid" || java_status=$?
java_pid=
if [ "$java_status" -ne 0 ]; then
    tail -n 30 "$tmp/java-build.log"
    echo "test-arm64.sh: the jar's build failed" >&2
    exit 1
fi
jar="$java_app/lib/payidem-$version.jar"
check "the jar carries the tarball's libpayidem.so as linux-aarch64, with its SHA-256" sh -c \
    "unzip -p '$jar' io/payidem/native/linux-aarch64/libpayidem.so | cmp - '$so' &&
     unzip -p '$jar' io/payidem/native/linux-aarch64/SHA256SUMS | grep -q \"^\$(sha256sum < '$so' | cut -d' ' -f1)  libpayidem.so\$\""
elapsed "the jar"

# What the tests inside need, in the root.
inside="$aroot/payidem-test"
mkdir -p "$inside/repo/scripts/dist" "$inside/repo/bindings/python"
cp "$deb_runtime" "$deb_dev" "$deb_cli" "$tarball" "$wheel" "$mock_arm" "$inside/"
cp "$root/examples/c/pay.c" "$inside/pay.c"
cp "$root/scripts/dist/arm64-root-tests.sh" "$root/scripts/dist/test-lib.sh" "$root/scripts/dist/test-wheel.sh" \
    "$inside/repo/scripts/dist/"
cp "$root/LICENSE" "$inside/repo/LICENSE"
cp "$root/bindings/python/README.md" "$inside/repo/bindings/python/README.md"
cp -r "$java_app" "$inside/java"

"$mock" --port 0 --control > "$tmp/mock.out" 2>"$tmp/mock.err" &
mock_pid=$!
for _ in $(seq 100); do [ -s "$tmp/mock.out" ] && break; sleep 0.1; done
port="$(sed -n '1s/.*:\([0-9]*\)$/\1/p' "$tmp/mock.out")"
[ -n "$port" ] || { echo "test-arm64.sh: the mock did not start"; cat "$tmp/mock.err"; exit 1; }
url="http://127.0.0.1:$port"

# The session, run as root of a new user namespace (this user mapped to
# root) with a mount namespace of its own.
cat > "$tmp/session.sh" <<'EOF'
set -euo pipefail
aroot=$1 qemu=$2 version=$3 url=$4
mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || {
    echo "cannot mount a binfmt_misc of this user namespace: needs Linux 6.7 or newer (this is $(uname -r))" >&2
    exit 1
}
# The ELF header of an aarch64 executable, as Debian's qemu-user registers it.
magic='\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
printf ':payidem-aarch64:M::%s:%s:%s:F\n' "$magic" "$mask" "$qemu" > /proc/sys/fs/binfmt_misc/register
for fs in proc dev sys; do mount --rbind "/$fs" "$aroot/$fs"; done
run() { chroot "$aroot" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
run ldconfig
run bash /payidem-test/repo/scripts/dist/arm64-root-tests.sh /payidem-test "$version" "$url"
EOF
unshare --user --map-root-user --mount bash "$tmp/session.sh" "$aroot" "$qemu" "$version" "$url" > "$tmp/session.out" 2>&1 &
session_pid=$!
tail -n +1 -f --pid="$session_pid" "$tmp/session.out" &
tail_pid=$!
session_status=0
wait "$session_pid" || session_status=$?
session_pid=
wait "$tail_pid" 2>/dev/null || true
inside_summary="$(tail -n 1 "$tmp/session.out")"
inside_failed=0
if [[ "$inside_summary" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    passed=$((passed + BASH_REMATCH[1]))
    inside_failed=${BASH_REMATCH[2]}
    failed=$((failed + inside_failed))
fi
if [ "$session_status" -ne 0 ] && [ "$inside_failed" -eq 0 ]; then
    fail "the arm64 root's session ended with status $session_status"
fi
elapsed "the arm64 root"

echo "$passed passed, $failed failed"
test "$failed" -eq 0
