#!/usr/bin/env bash
# Builds payidem for Windows x64 (x86_64-pc-windows-gnu, linked by MinGW-w64)
# with profile `dist` and packages dist/libpayidem-VERSION-windows-x86_64.zip:
#
#   bin/payidem.dll          the C library (exports exactly the payidem_*
#                            functions of include/payidem.h; checked here)
#   bin/payidem.exe          the payidem command
#   bin/payidem-mock.exe     the mock platform
#   lib/payidem.def          the DLL's exports, one per line
#   lib/payidem.lib          import library for MSVC's link.exe (from the .def)
#   lib/libpayidem.dll.a     import library for MinGW (from the .def)
#   lib/cmake/payidem/       find_package(payidem): payidem::payidem, the DLL
#                            through its import library
#   include/payidem.h, LICENSE, README.md, THIRD-PARTY.txt
#
# and the debug information of the DLL and the programs in
# dist/debug/windows-x86_64/. Same commit, same bytes (SOURCE_DATE_EPOCH;
# no PE time stamps; a zip with fixed times and order).
#
#   scripts/dist/build-windows.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
triple=x86_64-pc-windows-gnu
tools=x86_64-w64-mingw32

missing=""
command -v "$tools-gcc" >/dev/null 2>&1 || missing="$missing gcc-mingw-w64-x86-64"
command -v "$tools-dlltool" >/dev/null 2>&1 || missing="$missing binutils-mingw-w64-x86-64"
if [ -n "$missing" ]; then
    echo "installing$missing" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi
rustup target list --installed 2>/dev/null | grep -qx "$triple" || rustup target add "$triple" >&2

# shellcheck source=scripts/dist/env.sh
. "$root/scripts/dist/env.sh"
cd "$root"
# PE files carry a link time stamp unless told not to.
RUSTFLAGS="$RUSTFLAGS -C link-arg=-Wl,--no-insert-timestamp"
export RUSTFLAGS

version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)"
epoch="$SOURCE_DATE_EPOCH"
out="$CARGO_TARGET_DIR/$triple/dist"
dist="${PAYIDEM_DIST_DIR:-$root/dist}"
name="libpayidem-$version-windows-x86_64"

mkdir -p "$root/target/dist-stage"
exec 9> "$root/target/dist-stage/.lock-windows"
flock 9
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cargo build --locked --profile dist -p payidem-ffi --lib -p payidem-cli --bin payidem \
    -p payidem-mock --bin payidem-mock --target "$triple" >&2

tree="$work/$name"
debug="$dist/debug/windows-x86_64"
mkdir -p "$tree/bin" "$tree/lib/cmake/payidem" "$tree/include" "$debug"
objcopy="$tools-objcopy"

# The DLL and the programs: debug information to its own file, the rest stripped.
for f in payidem.dll payidem.exe payidem-mock.exe; do
    $objcopy --only-keep-debug "$out/$f" "$debug/$f.debug"
    (cd "$debug" && $objcopy --strip-all --add-gnu-debuglink="$f.debug" "$out/$f" "$tree/bin/$f")
done

# The .def: the DLL's exports, which must be exactly the header's functions.
"$tools-objdump" -p "$tree/bin/payidem.dll" |
    awk '/\[Ordinal\/Name Pointer\] Table/ { t = 1; next } t && /^\t\[/ { print $NF } t && /^$/ { t = 0 }' |
    sort -u > "$work/exported"
grep -oE '\bpayidem_[a-z0-9_]+\(' include/payidem.h | tr -d '(' | sort -u > "$work/declared"
if ! diff -u "$work/declared" "$work/exported" >&2; then
    echo "build-windows.sh: payidem.dll's exports (+) differ from include/payidem.h's functions (-)" >&2
    exit 1
fi
{ echo "LIBRARY payidem.dll"; echo "EXPORTS"; sed 's/^/    /' "$work/exported"; } > "$tree/lib/payidem.def"
"$tools-dlltool" --deterministic-libraries -d "$tree/lib/payidem.def" -D payidem.dll -l "$tree/lib/payidem.lib"
"$tools-dlltool" --deterministic-libraries -d "$tree/lib/payidem.def" -D payidem.dll -l "$tree/lib/libpayidem.dll.a"

# No static library yet: its symbols other than payidem_* must be made local
# (as build-c.sh does on Linux) by merging its objects with `ld -r`, which
# binutils 2.40's PE linker refuses for objects with thread-local storage
# ("unable to fill in DataDictionary[9] because __tls_used is missing").

cp include/payidem.h "$tree/include/payidem.h"
# CMake: the DLL through its import library (IMPORTED_IMPLIB).
cp scripts/dist/windows/payidemConfig.cmake "$tree/lib/cmake/payidem/payidemConfig.cmake"
IFS=. read -r major minor _ <<< "$version"
sed -e "s|@VERSION@|$version|g" -e "s|@VERSION_MAJOR@|$major|" -e "s|@VERSION_MINOR@|$minor|" \
    ffi/cmake/payidemConfigVersion.cmake.in > "$tree/lib/cmake/payidem/payidemConfigVersion.cmake"
cp LICENSE "$tree/LICENSE"
cp ffi/README.md "$tree/README.md"
cargo metadata --locked --format-version 1 --filter-platform "$triple" > "$work/metadata.json"
python3 scripts/dist/third-party.py payidem-ffi payidem-cli payidem-mock < "$work/metadata.json" > "$tree/THIRD-PARTY.txt"

mkdir -p "$dist"
python3 - "$work" "$name" "$epoch" "$dist/$name.zip" <<'EOF'
import os, sys, time, zipfile
work, name, epoch, dest = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
stamp = time.gmtime(max(epoch, 315532800))[:6]
paths = []
for base, dirs, files in os.walk(os.path.join(work, name)):
    paths += [os.path.join(base, f) for f in files]
with zipfile.ZipFile(dest + ".tmp", "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
    for path in sorted(paths):
        info = zipfile.ZipInfo(os.path.relpath(path, work).replace(os.sep, "/"), stamp)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.create_system = 3
        info.external_attr = (0o100755 if path.endswith((".exe", ".dll")) else 0o100644) << 16
        with open(path, "rb") as f:
            z.writestr(info, f.read())
os.replace(dest + ".tmp", dest)
EOF
ls -l "$dist/$name.zip" >&2
echo "$dist/$name.zip"
