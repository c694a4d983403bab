#!/usr/bin/env bash
# Stages the native libraries the jar carries into target/java-natives/<platform>/
# with a SHA256SUMS file the loader checks after extraction.
#
#   bindings/java/stage-natives.sh          linux-x86-64 from target/release (cargo build --release -p payidem-ffi)
#   bindings/java/stage-natives.sh --dist   every platform staged by scripts/dist/build-c.sh
#                                           (target/dist-stage/<arch>/, glibc 2.17 floor); x86_64 is required,
#                                           aarch64 is carried when it was built
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/target/java-natives"
rm -rf "$out"

stage() { # <platform> <library file>
    mkdir -p "$out/$1"
    cp "$2" "$out/$1/libpayidem.so"
    (cd "$out/$1" && sha256sum libpayidem.so > SHA256SUMS)
    echo "staged $1: $2"
}

if [ "${1:-}" = "--dist" ]; then
    for pair in x86_64:linux-x86-64 aarch64:linux-aarch64; do
        arch="${pair%%:*}" platform="${pair#*:}"
        lib="$root/target/dist-stage/$arch/libpayidem.so"
        if [ -f "$lib" ]; then
            stage "$platform" "$lib"
        elif [ "$arch" = x86_64 ]; then
            echo "no target/dist-stage/x86_64/libpayidem.so: run scripts/dist/build-c.sh --arch x86_64" >&2
            exit 1
        else
            echo "no $arch library (scripts/dist/build-c.sh --arch $arch): the jar will not carry $platform"
        fi
    done
else
    stage linux-x86-64 "$root/target/release/libpayidem.so"
fi
