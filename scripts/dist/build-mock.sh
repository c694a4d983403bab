#!/usr/bin/env bash
# Builds payidem-mock for legacy Linux hosts (glibc 2.17, through zig, profile
# `dist`) into dist/payidem-mock (stripped) and dist/debug/payidem-mock.debug,
# so integrators can test their retry handling without a Rust toolchain.
#
#   scripts/dist/build-mock.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=scripts/dist/env.sh
. "$root/scripts/dist/env.sh"
cd "$root"
triple=x86_64-unknown-linux-gnu

cargo zigbuild --locked --profile dist -p payidem-mock --bin payidem-mock --target "$triple.2.17" >&2

built="$CARGO_TARGET_DIR/$triple/dist/payidem-mock"
mkdir -p "$root/dist/debug"
objcopy --target elf64-x86-64 --only-keep-debug "$built" "$root/dist/debug/payidem-mock.debug"
(cd "$root/dist/debug" && objcopy --target elf64-x86-64 --strip-all \
    --add-gnu-debuglink=payidem-mock.debug "$built" ../payidem-mock)
chmod 0755 "$root/dist/payidem-mock"
ls -l "$root/dist/payidem-mock" >&2
