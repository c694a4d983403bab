#!/usr/bin/env bash
# Builds payidem-mock for legacy Linux hosts (glibc 2.17, through zig, profile
# `dist`) into dist/payidem-mock (stripped) and dist/debug/payidem-mock.debug,
# so integrators can test their retry handling without a Rust toolchain.
#
#   scripts/dist/build-mock.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PATH="$("$root/scripts/dist/tools.sh"):$PATH"
export PATH
cd "$root"
SOURCE_DATE_EPOCH="$(git log -1 --format=%ct 2>/dev/null || echo 0)"
export SOURCE_DATE_EPOCH
triple=x86_64-unknown-linux-gnu

cargo zigbuild --locked --profile dist -p payidem-mock --bin payidem-mock --target "$triple.2.17" >&2

built="$root/target/$triple/dist/payidem-mock"
mkdir -p "$root/dist/debug"
objcopy --target elf64-x86-64 --only-keep-debug "$built" "$root/dist/debug/payidem-mock.debug"
(cd "$root/dist/debug" && objcopy --target elf64-x86-64 --strip-all \
    --add-gnu-debuglink=payidem-mock.debug "$built" ../payidem-mock)
chmod 0755 "$root/dist/payidem-mock"
ls -l "$root/dist/payidem-mock" >&2
