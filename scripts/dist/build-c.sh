#!/usr/bin/env bash
# Builds libpayidem for legacy Linux hosts: glibc 2.17 (the manylinux2014
# floor) through zig, profile `dist` (fat LTO), and leaves in
# target/dist-stage/ARCH/:
#
#   libpayidem.so        stripped, SONAME libpayidem.so.0, exports payidem_* only
#   libpayidem.so.debug  its debug info (linked by .gnu_debuglink)
#   libpayidem.a         one relocatable object whose only global symbols are
#                        payidem_* (the bundled SQLite, Rust std, ring… are
#                        local, so they never replace a program's own), no
#                        debug info
#   libpayidem.a.debug   the same object with its debug info, unstripped
#
#   scripts/dist/build-c.sh [--arch x86_64|aarch64]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=scripts/dist/arch.sh
. "$root/scripts/dist/arch.sh" "$@"
# shellcheck source=scripts/dist/env.sh
. "$root/scripts/dist/env.sh"
cd "$root"

cargo zigbuild --locked --profile dist -p payidem-ffi --target "$triple.2.17" >&2

out="$CARGO_TARGET_DIR/$triple/dist"
stage="$root/target/dist-stage/$arch"
# One build of an arch at a time: a second waits rather than rewrite the
# stage under the first; readers take no lock (dist_publish_stage).
mkdir -p "$root/target/dist-stage"
exec 9> "$root/target/dist-stage/.lock-$arch"
flock 9
final="$stage"
stage="$root/target/dist-stage/.new-$arch"
rm -rf "$stage"
mkdir -p "$stage"
work="$(mktemp -d)"
trap 'rm -rf "$work" "$stage"' EXIT

# Force the BFD target: the LLVM gold plugin that binutils may load chokes on
# the bitcode sections Rust's std objects carry.
objcopy="${tool_prefix}objcopy --target $bfd"

# Shared library: debug info to its own file, the rest stripped.
$objcopy --only-keep-debug "$out/libpayidem.so" "$stage/libpayidem.so.debug"
(cd "$stage" && $objcopy --strip-unneeded --add-gnu-debuglink=libpayidem.so.debug \
    "$out/libpayidem.so" libpayidem.so)

# Static library: every member merged into one object, whose symbols other
# than payidem_* become local.
"${tool_prefix}ld" -r -o "$work/merged.o" --whole-archive "$out/libpayidem.a"
$objcopy -R .llvmbc -R .llvmcmd "$work/merged.o" "$work/clean.o"
"${tool_prefix}nm" --target "$bfd" -g --defined-only "$work/clean.o" |
    awk '$3 ~ /^payidem_/ { print $3 }' | sort -u > "$work/keep"
if [ ! -s "$work/keep" ]; then
    echo "build-c.sh: no payidem_* symbol in $out/libpayidem.a" >&2
    exit 1
fi
$objcopy --keep-global-symbols="$work/keep" "$work/clean.o" "$work/payidem-debug.o"
$objcopy --strip-debug "$work/payidem-debug.o" "$work/payidem.o"
(cd "$work" && "${tool_prefix}ar" rcsD "$stage/libpayidem.a" payidem.o)
(cd "$work" && mv payidem-debug.o payidem.o && "${tool_prefix}ar" rcsD "$stage/libpayidem.a.debug" payidem.o)

dist_publish_stage "$stage" "$final"
ls -l "$final" >&2
