#!/usr/bin/env bash
# Packages the C library that scripts/dist/build-c.sh staged into dist/:
#
#   libpayidem-VERSION-linux-ARCH.tar.gz   lib/ (.so.VERSION, .so.0, .so, .a,
#                                          pkgconfig/, cmake/payidem/), include/,
#                                          LICENSE, README.md, THIRD-PARTY.txt
#   libpayidem0_VERSION-1_DEBARCH.deb      the shared library (multiarch libdir)
#   libpayidem-dev_VERSION-1_DEBARCH.deb   header, .so link, .a, pkg-config, CMake
#   debug/                                 the separate debug files
#
# Same inputs, same bytes: every file gets the last commit's time, owner 0.
#
#   scripts/dist/package-c.sh [--arch x86_64|aarch64]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
arch=x86_64
[ "${1:-}" = --arch ] && arch=$2
case "$arch" in
    x86_64) debarch=amd64; multiarch=x86_64-linux-gnu ;;
    aarch64) debarch=arm64; multiarch=aarch64-linux-gnu ;;
    *) echo "package-c.sh: unsupported arch '$arch'" >&2; exit 2 ;;
esac
stage="$root/target/dist-stage/$arch"
dist="${PAYIDEM_DIST_DIR:-$root/dist}"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)"
debversion="$version-1"
epoch="$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)"
export SOURCE_DATE_EPOCH="$epoch"
install_c="$root/scripts/dist/install-c.sh"

mkdir -p "$dist/debug"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Third-party notices: every crate linked into the library, with its licence.
third_party() {
    (cd "$root" && cargo metadata --locked --format-version 1 --filter-platform "$arch-unknown-linux-gnu") |
        python3 "$root/scripts/dist/third-party.py"
}

# Tarball, relocatable (pkg-config and CMake find the prefix from their own place).
name="libpayidem-$version-linux-$arch"
tree="$work/$name"
"$install_c" --relocatable "$stage" "$tree" /opt/payidem /opt/payidem/lib
mv "$tree/opt/payidem"/* "$tree/" && rm -rf "$tree/opt"
# The relocatable files name no prefix, so the move above changes nothing in them.
cp "$root/LICENSE" "$tree/LICENSE"
cp "$root/ffi/README.md" "$tree/README.md"
third_party > "$tree/THIRD-PARTY.txt"
find "$tree" -exec touch -h -d "@$epoch" {} +
tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner --format=gnu \
    -C "$work" -cf - "$name" | gzip -n -9 > "$dist/$name.tar.gz"

# Debian packages (dpkg-deb, multiarch libdir, shlibs + ldconfig trigger).
deb() {
    local pkg=$1 only=$2 section=$3 depends=$4 description=$5
    local d="$work/deb-$pkg"
    "$install_c" --only "$only" "$stage" "$d" /usr "/usr/lib/$multiarch"
    install -d "$d/DEBIAN" "$d/usr/share/doc/$pkg"
    {
        echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
        echo "Upstream-Name: payidem"
        echo
        echo "Files: *"
        echo "License: Apache-2.0"
        echo
        cat "$root/LICENSE"
        echo
        third_party
    } > "$d/usr/share/doc/$pkg/copyright"
    local size
    size="$(du -sk --exclude=DEBIAN "$d" | cut -f1)"
    cat > "$d/DEBIAN/control" <<EOF
Package: $pkg
Source: payidem
Version: $debversion
Architecture: $debarch
Multi-Arch: same
Maintainer: payidem maintainers <payidem@example.invalid>
Installed-Size: $size
Depends: $depends
Section: $section
Priority: optional
Homepage: https://example.invalid/payidem
Description: $description
 payidem signs payment API requests (protocol v1) and retries them with one
 idempotency key per operation, kept in a durable journal, so that a
 timeout or a crash never charges a card twice.
EOF
    if [ "$only" = runtime ]; then
        echo "libpayidem 0 libpayidem0 (>= $version)" > "$d/DEBIAN/shlibs"
        echo "activate-noawait ldconfig" > "$d/DEBIAN/triggers"
        chmod 0644 "$d/DEBIAN/shlibs" "$d/DEBIAN/triggers"
    fi
    (cd "$d" && find usr -type f -print0 | sort -z | xargs -0 md5sum > DEBIAN/md5sums)
    chmod 0644 "$d/DEBIAN/control" "$d/DEBIAN/md5sums"
    find "$d" -exec touch -h -d "@$epoch" {} +
    dpkg-deb --root-owner-group -Zgzip --build "$d" "$dist/${pkg}_${debversion}_${debarch}.deb" >/dev/null
}
deb libpayidem0 runtime libs "libc6 (>= 2.17)" \
    "signing and idempotent retries for a payment API (shared library)"
deb libpayidem-dev dev libdevel "libpayidem0 (= $debversion)" \
    "signing and idempotent retries for a payment API (development files)"

cp "$stage/libpayidem.so.debug" "$dist/debug/libpayidem.so.$version.debug"
cp "$stage/libpayidem.a.debug" "$dist/debug/libpayidem.a.debug"
ls -l "$dist" >&2
