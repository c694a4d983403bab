#!/usr/bin/env bash
# Builds payidem-mock for legacy Linux hosts (glibc 2.17, through zig, profile
# `dist`), stripped, with its debug info beside it, so integrators can test
# their retry handling without a Rust toolchain:
#
#   x86_64   dist/payidem-mock           dist/debug/payidem-mock.debug
#   aarch64  dist/payidem-mock-aarch64   dist/debug/aarch64/payidem-mock.debug
#
#   scripts/dist/build-mock.sh [--arch x86_64|aarch64]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=scripts/dist/arch.sh
. "$root/scripts/dist/arch.sh" "$@"
# shellcheck source=scripts/dist/env.sh
. "$root/scripts/dist/env.sh"
cd "$root"
name=payidem-mock
debug="$root/dist/debug"
if [ "$arch" != x86_64 ]; then
    name="payidem-mock-$arch"
    debug="$root/dist/debug/$arch"
fi

cargo zigbuild --locked --profile dist -p payidem-mock --bin payidem-mock --target "$triple.2.17" >&2

built="$CARGO_TARGET_DIR/$triple/dist/payidem-mock"
objcopy="${tool_prefix}objcopy --target $bfd"
mkdir -p "$debug"
$objcopy --only-keep-debug "$built" "$debug/payidem-mock.debug"
(cd "$debug" && $objcopy --strip-all --add-gnu-debuglink=payidem-mock.debug "$built" "$root/dist/$name")
chmod 0755 "$root/dist/$name"
ls -l "$root/dist/$name" >&2
