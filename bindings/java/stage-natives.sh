#!/usr/bin/env bash
# Stages the native libraries the jar carries into target/java-natives/<platform>/
# with a SHA256SUMS file the loader checks after extraction.
#
#   bindings/java/stage-natives.sh          linux-x86-64 from target/release (cargo build --release -p payidem-ffi)
#   bindings/java/stage-natives.sh --dist   every platform staged by scripts/dist/build-c.sh
#                                           (target/dist-stage/<arch>/, glibc 2.17 floor); x86_64 is required,
#                                           aarch64 is carried when it was built, windows-x86-64 (payidem.dll
#                                           of dist/'s Windows zip) when build-windows.sh made that zip
#
# --out DIR (last) stages into DIR instead, for a jar built beside the one of
# bindings/java/target (mvn -Dpayidem.natives=DIR).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/target/java-natives"
args=()
while [ $# -gt 0 ]; do
    if [ "$1" = --out ] && [ $# -eq 2 ]; then
        out=$2
        shift 2
    else
        args+=("$1")
        shift
    fi
done
set -- "${args[@]+"${args[@]}"}"
rm -rf "$out"

stage() { # <platform> <library file> [<name in the jar>, default libpayidem.so]
    local name="${3:-libpayidem.so}"
    mkdir -p "$out/$1"
    cp "$2" "$out/$1/$name"
    (cd "$out/$1" && sha256sum "$name" > SHA256SUMS)
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
    # The Windows zip's payidem.dll (scripts/dist/build-windows.sh).
    version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)"
    zip="$root/dist/libpayidem-$version-windows-x86_64.zip"
    if [ -f "$zip" ]; then
        dll="$(mktemp -d)"
        python3 -c 'import sys, zipfile; open(sys.argv[3], "wb").write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
            "$zip" "libpayidem-$version-windows-x86_64/bin/payidem.dll" "$dll/payidem.dll"
        stage windows-x86-64 "$dll/payidem.dll" payidem.dll
        rm -rf "$dll"
    else
        echo "no $zip (scripts/dist/build-windows.sh): the jar will not carry windows-x86-64"
    fi
else
    stage linux-x86-64 "$root/target/release/libpayidem.so"
fi
