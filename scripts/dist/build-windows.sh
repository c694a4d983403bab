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
#   lib/libpayidem.a         static library: one object whose only global
#                            symbols are payidem_* (as build-c.sh on Linux),
#                            and import stubs for the system DLLs it calls
#   lib/static-libs.txt      the system libraries a static link adds
#   lib/cmake/payidem/       find_package(payidem): payidem::payidem (the DLL
#                            through its import library), payidem::payidem_static
#   include/payidem.h, LICENSE, README.md, THIRD-PARTY.txt
#
# and the debug information of the DLL and the programs in
# dist/debug/windows-x86_64/; the static library also goes to
# target/dist-stage/windows-x86_64/ for the Go module (go-lib.sh). Same commit, same bytes (SOURCE_DATE_EPOCH;
# no PE time stamps; a zip with fixed times and order).
#
#   scripts/dist/build-windows.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
triple=x86_64-pc-windows-gnu
tools=x86_64-w64-mingw32

"$root/scripts/apt-ensure.sh" "gcc-mingw-w64-x86-64=$tools-gcc" \
    "binutils-mingw-w64-x86-64=$tools-dlltool"
installed="$(rustup target list --installed 2>/dev/null)" || installed=
grep -qx "$triple" <<< "$installed" || rustup target add "$triple" >&2

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

# The library (the system libraries a static link needs are what rustc
# prints), then the two programs.
cargo rustc --locked --profile dist -p payidem-ffi --lib --target "$triple" \
    -- --print native-static-libs 2> "$work/rustc.log" || { cat "$work/rustc.log" >&2; exit 1; }
static_libs="$(sed -n 's/.*native-static-libs: //p' "$work/rustc.log" | tail -n 1)"
if [ -z "$static_libs" ]; then
    echo "build-windows.sh: rustc printed no native-static-libs" >&2
    exit 1
fi
cargo build --locked --profile dist -p payidem-cli --bin payidem -p payidem-mock --bin payidem-mock \
    --target "$triple" >&2

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
# Inside lib/: dlltool names the members after the library's path.
(cd "$tree/lib" && "$tools-dlltool" --deterministic-libraries -d payidem.def -D payidem.dll -l payidem.lib &&
    "$tools-dlltool" --deterministic-libraries -d payidem.def -D payidem.dll -l libpayidem.dll.a)

# The static library: every object merged into one whose symbols other
# than payidem_* become local, so that the bundled SQLite, Rust std, ring…
# never replace a program's own. Rust's archive also holds import stubs
# (raw-dylib) for every function its Windows bindings declare: those are
# left out of the merge, and the ones the object calls are made again with
# dlltool (one import library per DLL) and added as members of their own.
archive="$out/libpayidem.a"
stub='\.(dll|exe|sys|drv)(s[0-9]+|h|t)\.o$'
mkdir -p "$work/objects"
"$tools-ar" t "$archive" | grep -Ev "$stub" | sort -u > "$work/members"
(cd "$work/objects" && xargs -a "$work/members" -d '\n' "$tools-ar" x "$archive")
# binutils 2.40's PE `ld -r` fails on a reference to _tls_used (it tries to
# fill the TLS directory of an image it does not write): the reference is
# renamed for the merge and back after it, unchanged for the final link.
(cd "$work/objects" && for o in $(cat "$work/members"); do
    if "$tools-nm" -u "$o" 2>/dev/null | grep -w _tls_used >/dev/null; then
        $objcopy --redefine-sym _tls_used=__payidem_merge_tls_used "$o"
    fi
done)
(cd "$work/objects" && "$tools-ld" -r -o "$work/merged.o" @"$work/members")
$objcopy -R .llvmbc -R .llvmcmd --redefine-sym __payidem_merge_tls_used=_tls_used "$work/merged.o" "$work/clean.o"
"$tools-nm" -g --defined-only "$work/clean.o" | awk '$3 ~ /^payidem_/ { print $3 }' | sort -u > "$work/keep"
if ! cmp -s "$work/keep" "$work/declared"; then
    echo "build-windows.sh: libpayidem.a's payidem_* symbols differ from include/payidem.h's functions" >&2
    diff -u "$work/declared" "$work/keep" >&2 || true
    exit 1
fi
$objcopy --keep-global-symbols="$work/keep" --strip-debug "$work/clean.o" "$work/payidem.o"
(cd "$work" && "$tools-ar" rcD "$tree/lib/libpayidem.a" payidem.o)
# Which DLL each stub imports from (its member's name), for the functions
# the object calls (through __imp_X or the X thunk).
"$tools-nm" -A --defined-only "$archive" 2>/dev/null |
    sed -nE 's/^[^:]*:([^:]+)\.(dll|exe|sys|drv)s[0-9]+\.o:[0-9a-f]+ I __imp_(.*)$/\1.\2 \3/p' |
    sort -u > "$work/stubs"
"$tools-nm" -u "$work/payidem.o" | awk '{ sub(/^__imp_/, "", $2); print $2 }' | sort -u > "$work/imported"
awk 'NR == FNR { want[$1] = 1; next } ($2 in want) { print }' "$work/imported" "$work/stubs" |
    sort -u > "$work/needed"
mkdir -p "$work/imports"
for dll in $(cut -d' ' -f1 "$work/needed" | sort -u); do
    d="$work/imports/$dll"
    mkdir -p "$d"
    { echo "LIBRARY $dll"; echo "EXPORTS"; awk -v dll="$dll" '$1 == dll { print "    " $2 }' "$work/needed"; } > "$d/def"
    # Run inside $d: dlltool names the members after the library's path.
    (cd "$d" && "$tools-dlltool" --deterministic-libraries -d def -D "$dll" -l "${dll%.*}.a" &&
        "$tools-ar" t "${dll%.*}.a" > members && "$tools-ar" x "${dll%.*}.a" &&
        xargs -a members -d '\n' "$tools-ar" qD "$tree/lib/libpayidem.a")
done
"$tools-ar" sD "$tree/lib/libpayidem.a"
# The Go module's copy comes from here (scripts/dist/go-lib.sh).
stage_new="$root/target/dist-stage/.new-windows-x86_64"
rm -rf "$stage_new"
mkdir -p "$stage_new"
cp "$tree/lib/libpayidem.a" "$stage_new/libpayidem.a"
dist_publish_stage "$stage_new" "$root/target/dist-stage/windows-x86_64"

cp include/payidem.h "$tree/include/payidem.h"
# CMake: the DLL through its import library (IMPORTED_IMPLIB), the static
# library with the system libraries rustc named (also in static-libs.txt).
cmake_libs="$(printf '%s' "$static_libs" | sed 's/-l//g; s/ \+/;/g')"
sed -e "s|@STATIC_LIBS@|$cmake_libs|" scripts/dist/windows/payidemConfig.cmake.in \
    > "$tree/lib/cmake/payidem/payidemConfig.cmake"
printf '%s\n' "$static_libs" > "$tree/lib/static-libs.txt"
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
