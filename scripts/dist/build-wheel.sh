#!/usr/bin/env bash
# Builds the payidem Python wheel for old and new Linux into dist/ and prints
# its path as the last line of stdout (everything else goes to stderr):
#
#   dist/payidem-VERSION-cp39-abi3-manylinux2014_ARCH.manylinux_2_17_ARCH.whl
#
# one abi3 wheel for every CPython from 3.9 on, linked by zig against glibc
# 2.17 (so it installs on any Linux of that architecture, x86_64 by default
# or aarch64 with --arch aarch64, with glibc >= 2.17: CentOS/RHEL 7 and
# everything newer), profile `dist` (fat LTO), stripped. With
# PAYIDEM_WHEEL_MUSL=1, and when the Rust target x86_64-unknown-linux-musl is
# installed (or `rustup target add` can install it), a musllinux_1_2 wheel
# (Alpine 3.13 and newer) is built too and its path printed on the line
# before. It is not built by default: nothing here can run it (no musl
# CPython, no container engine) and auditwheel does not accept it (below), so
# it is not a release artifact until it is proven.
#
# Every wheel is checked before it lands in dist/: at most
# PAYIDEM_WHEEL_MAX_BYTES (5 MB by default), and for the manylinux wheel
# `auditwheel show` must find it consistent with manylinux_2_17_ARCH.
# auditwheel cannot judge the musl wheel: zig links musl libraries against
# `libc.so`, a name musl's loader maps to itself, while auditwheel only
# accepts Alpine's name for it, `libc.musl-x86_64.so.1`. For that wheel
# the script checks instead that its one extension is x86_64, needs nothing
# but musl's libc and references no versioned (glibc) symbol.
#
# Reproducible as far as the tools allow: SOURCE_DATE_EPOCH is the last
# commit's time (maturin stamps the zip entries and the SBOM with it), and the
# target dir, the checkout, the cargo home and the rustup toolchain are
# remapped out of the binary (--remap-path-prefix). The Rust SBOM that maturin
# adds (.dist-info/sboms/) names the checkout's path, so byte-identical
# rebuilds need the same checkout path.
#
#   scripts/dist/build-wheel.sh            # from anywhere; needs Rust, Python 3, git
#   scripts/dist/build-wheel.sh --arch aarch64         # the aarch64 wheel
#   PAYIDEM_WHEEL_MUSL=1 scripts/dist/build-wheel.sh   # also the (unproven) musllinux wheel
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
max_bytes="${PAYIDEM_WHEEL_MAX_BYTES:-5000000}"
want_musl="${PAYIDEM_WHEEL_MUSL:-0}"
# shellcheck source=scripts/dist/arch.sh
. "$root/scripts/dist/arch.sh" "$@"

# shellcheck source=scripts/dist/env.sh
. "$root/scripts/dist/env.sh"
tools="$dist_tools"
tools_python="$tools/python"
cd "$root"

version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
mkdir -p "$root/dist"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# build TARGET COMPATIBILITY EXPECTED_TAG: builds one wheel, checks it and
# moves it into dist/; sets $built to its path.
build() {
    local target=$1 compatibility=$2 tag=$3
    local out="$work/$compatibility"
    mkdir -p "$out"
    echo "build-wheel.sh: building the $tag wheel ($target)" >&2
    maturin build --locked \
        --manifest-path bindings/python/Cargo.toml \
        --profile dist --zig --strip \
        --target "$target" --compatibility "$compatibility" \
        --out "$out" >&2
    local wheels=("$out"/*.whl)
    if [ "${#wheels[@]}" -ne 1 ] || [ ! -f "${wheels[0]}" ]; then
        echo "build-wheel.sh: expected one wheel in $out, found: ${wheels[*]}" >&2
        exit 1
    fi
    local wheel="${wheels[0]}" name
    name="$(basename "$wheel")"
    case "$name" in
        "payidem-$version-cp39-abi3-"*"$tag"*.whl) ;;
        *) echo "build-wheel.sh: $name is not an abi3 $tag wheel of payidem $version" >&2; exit 1 ;;
    esac
    local size
    size="$(stat -c %s "$wheel")"
    if [ "$size" -gt "$max_bytes" ]; then
        echo "build-wheel.sh: $name is $size bytes, over the $max_bytes limit" >&2
        exit 1
    fi
    if [ "$tag" = "manylinux_2_17_$arch" ]; then
        local report
        report="$(auditwheel show "$wheel" 2>&1)" || {
            echo "$report" >&2
            echo "build-wheel.sh: auditwheel show failed on $name" >&2
            exit 1
        }
        echo "$report" >&2
        if ! tr '\n' ' ' <<<"$report" | tr -s ' ' | grep -q "consistent with the following platform tag: \"$tag\""; then
            echo "build-wheel.sh: auditwheel does not find $name consistent with $tag" >&2
            exit 1
        fi
    else
        "$tools_python" - "$wheel" <<'PY' >&2
import io, sys, zipfile
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

wheel = sys.argv[1]
with zipfile.ZipFile(wheel) as z:
    libs = [n for n in z.namelist() if n.endswith(".so")]
    if len(libs) != 1:
        sys.exit(f"expected one extension module in {wheel}, found {libs}")
    elf = ELFFile(io.BytesIO(z.read(libs[0])))
    if elf["e_machine"] != "EM_X86_64":
        sys.exit(f"{libs[0]} is {elf['e_machine']}, not x86_64")
    needed = [t.needed for s in elf.iter_sections() if isinstance(s, DynamicSection)
              for t in s.iter_tags() if t.entry.d_tag == "DT_NEEDED"]
    if needed != ["libc.so"] and needed != ["libc.musl-x86_64.so.1"]:
        sys.exit(f"{libs[0]} needs {needed}, not only musl's libc")
    if elf.get_section_by_name(".gnu.version_r") is not None:
        sys.exit(f"{libs[0]} references versioned (glibc) symbols")
    print(f"{libs[0]}: x86_64, needs only {needed[0]} (musl), no versioned symbols")
PY
    fi
    mv -f "$wheel" "$root/dist/$name"
    echo "build-wheel.sh: dist/$name ($size bytes)" >&2
    built="$root/dist/$name"
}

build "$triple" manylinux2014 "manylinux_2_17_$arch"
glibc_wheel=$built

if [ "$want_musl" = 1 ] && [ "$arch" = x86_64 ]; then
    installed="$(rustup target list --installed 2>/dev/null)" || installed=
    if grep -qx x86_64-unknown-linux-musl <<< "$installed" ||
        rustup target add x86_64-unknown-linux-musl >&2; then
        build x86_64-unknown-linux-musl musllinux_1_2 musllinux_1_2_x86_64
        echo "$built"
    else
        echo "build-wheel.sh: no x86_64-unknown-linux-musl Rust target; musllinux wheel not built" >&2
    fi
fi
echo "$glibc_wheel"
