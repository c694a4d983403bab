#!/usr/bin/env bash
# Packages the C library that scripts/dist/build-c.sh staged and the payidem
# command that scripts/dist/build-cli.sh staged into dist/:
#
#   libpayidem-VERSION-linux-ARCH.tar.gz   lib/ (.so.VERSION, .so.0, .so, .a,
#                                          pkgconfig/, cmake/payidem/), include/,
#                                          bin/payidem, share/man/man1/payidem*.1,
#                                          share/{bash-completion,zsh,fish}/...,
#                                          LICENSE, README.md, THIRD-PARTY.txt,
#                                          docs/ (cli.md and the pages it and
#                                          the README link), examples/c/
#   libpayidem0_VERSION-1_DEBARCH.deb      the shared library (multiarch libdir)
#   libpayidem-dev_VERSION-1_DEBARCH.deb   header, .so link, .a, pkg-config, CMake
#   payidem-cli_VERSION-1_DEBARCH.deb      /usr/bin/payidem, its manual pages
#                                          (man1/payidem.1.gz, one per command),
#                                          its guide (doc/payidem-cli/docs/) and the bash, zsh
#                                          and fish completions in Debian's paths;
#                                          Depends: libc6 (>= the newest GLIBC_x.y
#                                          the binary needs), computed here
#   debug/ (x86_64), debug/ARCH/ (others)  the separate debug files
#
# libpayidem-dev also carries README.md, docs/ and examples/c/ in
# /usr/share/doc/libpayidem-dev/; every package a DEP-5 copyright and the
# Debian and upstream changelogs; libpayidem0 a symbols file. Maintainer and
# Homepage come from Cargo.toml's [workspace.metadata.release].
#
# Same inputs, same bytes: every file gets the last commit's time, owner 0.
#
#   scripts/dist/package-c.sh [--arch x86_64|aarch64]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=scripts/dist/arch.sh
. "$root/scripts/dist/arch.sh" "$@"
stage="$root/target/dist-stage/$arch"
cli_stage="$root/target/dist-stage/cli-$arch"
dist="${PAYIDEM_DIST_DIR:-$root/dist}"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)"
debversion="$version-1"
epoch="$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)"
export SOURCE_DATE_EPOCH="$epoch"
install_c="$root/scripts/dist/install-c.sh"
# The pages each package ships (cli_docs, ship_docs).
. "$root/scripts/dist/docs.sh"
if [ ! -x "$cli_stage/bin/payidem" ]; then
    echo "package-c.sh: $cli_stage/bin/payidem is missing: build it first with scripts/dist/build-cli.sh ('make lib')" >&2
    exit 1
fi

mkdir -p "$dist/debug"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Third-party notices: every crate linked into the named packages
# (payidem-ffi, payidem-cli; default the library), with its licence.
cargo metadata --locked --format-version 1 --filter-platform "$arch-unknown-linux-gnu" \
    --manifest-path "$root/Cargo.toml" > "$work/metadata.json"
third_party() {
    python3 "$root/scripts/dist/third-party.py" "$@" < "$work/metadata.json"
}
# Who publishes the packages and where the project lives: Cargo.toml's
# [workspace.metadata.release], the one place of these addresses.
release_field() {
    python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["release"][sys.argv[1]])' \
        "$1" < "$work/metadata.json"
}
maintainer="$(release_field maintainer)"
homepage="$(release_field homepage)"

# Tarball, relocatable (pkg-config and CMake find the prefix from their own place).
name="libpayidem-$version-linux-$arch"
tree="$work/$name"
# The C README, docs/ and examples/c/ at the top, where the README says they are.
"$install_c" --relocatable --cli "$cli_stage" --docdir /opt/payidem "$stage" "$tree" /opt/payidem /opt/payidem/lib
mv "$tree/opt/payidem"/* "$tree/" && rm -rf "$tree/opt"
# The relocatable files name no prefix, so the move above changes nothing in them.
cp "$root/LICENSE" "$tree/LICENSE"
third_party payidem-ffi payidem-cli > "$tree/THIRD-PARTY.txt"
find "$tree" -exec touch -h -d "@$epoch" {} +
tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner --format=gnu \
    -C "$work" -cf - "$name" | gzip -n -9 > "$dist/$name.tar.gz"

# Debian packages (dpkg-deb). The caller fills $work/deb-PKG first; deb()
# adds what every package documents (a DEP-5 copyright whose Comment lists
# the crates linked into the packages NOTICE names, the Debian changelog,
# the upstream changelog), control and md5sums, and builds PKG.
deb() {
    local pkg=$1 section=$2 multiarch_field=$3 depends=$4 description=$5 notice=$6 long=$7
    local d="$work/deb-$pkg"
    install -d "$d/DEBIAN" "$d/usr/share/doc/$pkg"
    {
        echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
        echo "Upstream-Name: payidem"
        echo "Upstream-Contact: $maintainer"
        echo "Source: $homepage"
        echo "Comment: The binaries link the crates below statically, each under the"
        echo " licence named beside it."
        echo " ."
        # shellcheck disable=SC2086 # NOTICE is a list of package names
        third_party $notice | sed -e 's/^$/./' -e 's/^/ /'
        echo
        echo "Files: *"
        echo "Copyright: the payidem authors"
        echo "License: Apache-2.0"
        echo
        echo "License: Apache-2.0"
        echo " Licensed under the Apache License, Version 2.0 (the \"License\"); you"
        echo " may not use these files except in compliance with the License."
        echo " ."
        echo " On Debian systems, the complete text of the Apache License, Version 2.0"
        echo " can be found in \"/usr/share/common-licenses/Apache-2.0\"."
    } > "$d/usr/share/doc/$pkg/copyright"
    {
        echo "payidem ($debversion) unstable; urgency=medium"
        echo
        echo "  * Upstream release $version (its changes: changelog.gz)."
        echo
        echo " -- $maintainer  $(LC_ALL=C date -u -R -d "@$epoch")"
    } | gzip -n -9 > "$d/usr/share/doc/$pkg/changelog.Debian.gz"
    gzip -n -9 -c "$root/CHANGELOG.md" > "$d/usr/share/doc/$pkg/changelog.gz"
    chmod 0644 "$d/usr/share/doc/$pkg/"{copyright,changelog.Debian.gz,changelog.gz}
    # The one tag overridden: it asks a first Debian upload to close its ITP
    # bug, and these packages are published by the project, not uploaded to
    # Debian's archive (no bug to close).
    install -d "$d/usr/share/lintian/overrides"
    {
        echo "# Published by the payidem project, not uploaded to Debian: no ITP bug to close."
        echo "$pkg: initial-upload-closes-no-bugs"
    } > "$d/usr/share/lintian/overrides/$pkg"
    chmod 0644 "$d/usr/share/lintian/overrides/$pkg"
    local size
    size="$(du -sk --exclude=DEBIAN "$d" | cut -f1)"
    cat > "$d/DEBIAN/control" <<EOF
Package: $pkg
Source: payidem
Version: $debversion
Architecture: $debarch
Multi-Arch: $multiarch_field
Maintainer: $maintainer
Installed-Size: $size
Depends: $depends
Section: $section
Priority: optional
Homepage: $homepage
Description: $description
$long
EOF
    (cd "$d" && find usr -type f -print0 | sort -z | xargs -0 md5sum > DEBIAN/md5sums)
    chmod 0644 "$d/DEBIAN/control" "$d/DEBIAN/md5sums"
    find "$d" -exec touch -h -d "@$epoch" {} +
    dpkg-deb --root-owner-group -Zgzip --build "$d" "$dist/${pkg}_${debversion}_${debarch}.deb" >/dev/null
}
lib_long=" payidem signs payment API requests (protocol v1) and retries them with one
 idempotency key per operation, kept in a durable journal, so that a
 timeout or a crash never charges a card twice."

d="$work/deb-libpayidem0"
"$install_c" --only runtime "$stage" "$d" /usr "/usr/lib/$multiarch"
install -d "$d/DEBIAN"
echo "libpayidem 0 libpayidem0 (>= $version)" > "$d/DEBIAN/shlibs"
# symbols: generated from the library's dynamic symbol table, which must
# export exactly the functions include/payidem.h declares. Each asks for
# this release: never too old a library (docs/versioning.md).
# shellcheck source=scripts/dist/elf-checks.sh
. "$root/scripts/dist/elf-checks.sh"
elf_prefix=$tool_prefix
if ! same_functions "$root/include/payidem.h" defined_in_so "$stage/libpayidem.so" >&2; then
    echo "package-c.sh: libpayidem.so exports (>) other functions than include/payidem.h declares (<)" >&2
    exit 1
fi
{
    echo "libpayidem.so.0 libpayidem0 #MINVER#"
    echo "* Build-Depends-Package: libpayidem-dev"
    defined_in_so "$stage/libpayidem.so" | sed "s/.*/ &@Base $version/"
} > "$d/DEBIAN/symbols"
echo "activate-noawait ldconfig" > "$d/DEBIAN/triggers"
chmod 0644 "$d/DEBIAN/shlibs" "$d/DEBIAN/symbols" "$d/DEBIAN/triggers"
deb libpayidem0 libs same "libc6 (>= 2.17)" \
    "signing and idempotent retries for a payment API (shared library)" payidem-ffi "$lib_long"

"$install_c" --only dev --docdir /usr/share/doc/libpayidem-dev "$stage" "$work/deb-libpayidem-dev" /usr "/usr/lib/$multiarch"
deb libpayidem-dev libdevel same "libpayidem0 (= $debversion)" \
    "signing and idempotent retries for a payment API (development files)" payidem-ffi "$lib_long"

# payidem-cli: the command links the Rust core statically (no libpayidem0);
# it needs only glibc, from the newest version its dynamic symbols name.
# Not dpkg-shlibdeps: it reads the build host's symbols files, and on a
# glibc >= 2.34 host it asks libc6 (>= 2.34) for the libpthread/libdl links
# (merged into libc there), which would refuse the hosts this build targets.
cli_bin="$cli_stage/bin/payidem"
for needed in $(readelf -dW "$cli_bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
    case "$needed" in
        libc.so.6 | libm.so.6 | libpthread.so.0 | libdl.so.2 | librt.so.1 | libutil.so.1 | ld-linux-*.so.*) ;;
        *) echo "package-c.sh: bin/payidem needs $needed, which libc6 does not provide: name its package in payidem-cli's Depends" >&2
            exit 1 ;;
    esac
done
glibc_floor="$(readelf -W --dyn-syms "$cli_bin" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/^GLIBC_//' | sort -uV | tail -n 1)"
if [ -z "$glibc_floor" ]; then
    echo "package-c.sh: no GLIBC_x.y version in $cli_bin's dynamic symbols: cannot compute payidem-cli's Depends" >&2
    exit 1
fi
d="$work/deb-payidem-cli"
cli_pages=()
for page in "${cli_docs[@]}"; do cli_pages+=("docs/$page=docs/$page"); done
ship_docs "$d/usr/share/doc/payidem-cli" "${cli_pages[@]}"
chmod -R u=rwX,go=rX "$d/usr/share/doc/payidem-cli"
install -D -m 0755 "$cli_bin" "$d/usr/bin/payidem"
install -d "$d/usr/share/man/man1"
for page in "$cli_stage/share/man/man1/"payidem*.1; do
    gzip -n -9 -c "$page" > "$d/usr/share/man/man1/${page##*/}.gz"
    chmod 0644 "$d/usr/share/man/man1/${page##*/}.gz"
done
install -D -m 0644 "$cli_stage/share/bash-completion/completions/payidem" \
    "$d/usr/share/bash-completion/completions/payidem"
install -D -m 0644 "$cli_stage/share/zsh/site-functions/_payidem" "$d/usr/share/zsh/vendor-completions/_payidem"
install -D -m 0644 "$cli_stage/share/fish/vendor_completions.d/payidem.fish" \
    "$d/usr/share/fish/vendor_completions.d/payidem.fish"
deb payidem-cli admin foreign "libc6 (>= $glibc_floor)" \
    "operator's command for payidem's payment journal" payidem-cli \
    " payidem is the operator's command for the durable journal of payidem, a
 library that signs payment API requests and retries them with one
 idempotency key per operation: list the operations whose outcome is
 unknown, resume them with the same key, reconcile by hand what cannot be
 finished, purge, export and check the journal; and sign or verify a
 request when debugging an integration.
 .
 It links the payidem core statically (no libpayidem0 needed) and reads
 the journals that every payidem binding (C, Go, Python, Rust) writes."

debug="$dist/debug"
[ "$arch" = x86_64 ] || debug="$dist/debug/$arch"
mkdir -p "$debug"
cp "$stage/libpayidem.so.debug" "$debug/libpayidem.so.$version.debug"
cp "$stage/libpayidem.a.debug" "$debug/libpayidem.a.debug"
cp "$cli_stage/payidem.debug" "$debug/payidem.debug"
ls -l "$dist" >&2
