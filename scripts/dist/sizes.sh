#!/usr/bin/env bash
# Prints the sizes of what `make dist` wrote into dist/ as a Markdown table
# with a column per Linux platform (BENCHMARKS.md, "Release artifacts"): the
# bytes of each file as shipped, of the shared library, the static library
# and the command inside the tarball, and of the debug files (dist/debug/,
# dist/debug/aarch64/). A platform whose files are not all there is an
# error.
#
#   scripts/dist/sizes.sh [DIST]      (default dist/)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dist="${1:-$root/dist}"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

bytes() { stat -c %s "$1" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta'; }
one() {
    local matches=("$@")
    if [ "${#matches[@]}" -ne 1 ] || [ ! -f "${matches[0]}" ]; then
        echo "sizes.sh: expected one file, found: ${matches[*]}" >&2
        exit 1
    fi
    echo "${matches[0]}"
}

# Each platform's column, one size a line, in the rows' order below.
column() {
    local arch=$1 debarch mock debug tarball tree pkg f
    case "$arch" in
        x86_64) debarch=amd64 mock=payidem-mock debug="$dist/debug" ;;
        aarch64) debarch=arm64 mock=payidem-mock-aarch64 debug="$dist/debug/aarch64" ;;
    esac
    tarball="$(one "$dist/libpayidem-$version-linux-$arch.tar.gz")"
    tree="$work/libpayidem-$version-linux-$arch"
    tar -xzf "$tarball" -C "$work"
    bytes "$tarball"
    bytes "$tree/lib/libpayidem.so.$version"
    bytes "$tree/lib/libpayidem.a"
    bytes "$tree/bin/payidem"
    for pkg in libpayidem0 libpayidem-dev payidem-cli; do
        bytes "$(one "$dist/${pkg}_$version-1_$debarch.deb")"
    done
    bytes "$(one "$dist"/payidem-"$version"-cp39-abi3-*manylinux_2_17_"$arch"*.whl)"
    bytes "$(one "$dist/$mock")"
    for f in "libpayidem.so.$version.debug" libpayidem.a.debug payidem.debug payidem-mock.debug; do
        bytes "$(one "$debug/$f")"
    done
}
rows=(
    "\`libpayidem-$version-linux-ARCH.tar.gz\`"
    "— its \`lib/libpayidem.so.$version\` (stripped)"
    "— its \`lib/libpayidem.a\` (one object, only \`payidem_*\` global)"
    "— its \`bin/payidem\` (stripped)"
    "\`libpayidem0_$version-1_DEBARCH.deb\`"
    "\`libpayidem-dev_$version-1_DEBARCH.deb\`"
    "\`payidem-cli_$version-1_DEBARCH.deb\`"
    "\`payidem-$version-cp39-abi3-manylinux2014_ARCH.manylinux_2_17_ARCH.whl\`"
    "\`payidem-mock\` (x86_64), \`payidem-mock-aarch64\` (stripped)"
    "debug: \`libpayidem.so.$version.debug\`"
    "debug: \`libpayidem.a.debug\` (the object unstripped)"
    "debug: \`payidem.debug\`"
    "debug: \`payidem-mock.debug\`"
)
mapfile -t x86 < <(column x86_64)
mapfile -t arm < <(column aarch64)
if [ "${#x86[@]}" -ne "${#rows[@]}" ] || [ "${#arm[@]}" -ne "${#rows[@]}" ]; then
    echo "sizes.sh: not every file of both platforms is in $dist: run 'make dist'" >&2
    exit 1
fi
echo "| artifact (ARCH x86_64 / aarch64, DEBARCH amd64 / arm64) | Linux x86_64 | Linux aarch64 |"
echo "| --- | ---: | ---: |"
for i in "${!rows[@]}"; do
    echo "| ${rows[$i]} | ${x86[$i]} | ${arm[$i]} |"
done
