#!/usr/bin/env bash
# Proves the C artifacts of dist/ outside the repository, as a user gets them:
#
# - every artifact: glibc floor 2.17 (objdump -T), only payidem_* exported
#   (the .so's dynamic table, the .a's global symbols), stripped with a debug
#   link, sizes printed;
# - libpayidem.a links for a glibc 2.17 host (zig cc against glibc 2.17);
# - the .debs installed with dpkg -i into a throwaway root, the tarball
#   unpacked elsewhere: examples/c/pay.c built against each with pkg-config
#   and with CMake, dynamically and statically, and run against the mock;
# - a program linking the system's libsqlite3 and libpayidem.a keeps the
#   system's SQLite;
# - make install / make uninstall with DESTDIR, PREFIX and LIBDIR;
# - every ```sh block of ffi/README.md, run as written.
#
#   scripts/dist/test-c.sh [MOCK]     (default dist/payidem-mock)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dist="$root/dist"
mock="${1:-$dist/payidem-mock}"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)"
tarball="$dist/libpayidem-$version-linux-x86_64.tar.gz"
deb_runtime="$dist/libpayidem0_$version-1_amd64.deb"
deb_dev="$dist/libpayidem-dev_$version-1_amd64.deb"
cflags=(-std=c99 -Wall -Wextra -Werror -pedantic)

tmp="$(mktemp -d /tmp/payidem-dist-c-XXXXXX)"
mock_pid=
cleanup() {
    if [ -n "$mock_pid" ]; then kill "$mock_pid" 2>/dev/null || true; wait "$mock_pid" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT
passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() { local what=$1; shift; if "$@" >"$tmp/check.out" 2>&1; then pass "$what"; else fail "$what"; sed 's/^/  | /' "$tmp/check.out" | tail -20; fi; }

for f in "$tarball" "$deb_runtime" "$deb_dev" "$mock"; do
    [ -f "$f" ] || { echo "test-c.sh: $f is missing: run 'make dist' first" >&2; exit 1; }
done
PATH="$("$root/scripts/dist/tools.sh"):$PATH"
missing=""
command -v cmake >/dev/null || missing="$missing cmake"
command -v pkg-config >/dev/null || missing="$missing pkg-config"
dpkg -s libsqlite3-dev >/dev/null 2>&1 || missing="$missing libsqlite3-dev"
if [ -n "$missing" ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi

# The newest GLIBC_x.y version an ELF file needs (empty for none).
glibc_floor() { objdump -T "$1" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1; }
at_most_2_17() { local v; v="$(glibc_floor "$1")"; echo "$1 needs glibc $v"; [ "$(printf '%s\n2.17\n' "$v" | sort -V | tail -n 1)" = 2.17 ]; }
only_payidem_dynamic() { ! nm -D --defined-only "$1" | awk '{print $NF}' | grep -v '^payidem_'; }
only_payidem_global() { ! nm -g --defined-only "$1" | awk 'NF == 3 {print $3}' | grep -v '^payidem_'; }
sections() { readelf -SW "$1" | awk '{print $2}'; }
stripped_with_link() { local s; s="$(sections "$1")"; ! grep -qx '\.debug_info' <<< "$s" && grep -qx '\.gnu_debuglink' <<< "$s"; }
no_debug_info() { local s; s="$(sections "$1")"; ! grep -qx '\.debug_info' <<< "$s"; }
# The functions the header declares, and those an artifact defines.
declared() { grep -E '^[a-z].*payidem_[a-z0-9_]+\(' "$1" | grep -oE 'payidem_[a-z0-9_]+\(' | tr -d '(' | sort -u; }
defined_in_a() { nm -g --defined-only "$1" | awk '$2 == "T" {print $3}' | sort -u; }
defined_in_so() { nm -D --defined-only "$1" | awk '$2 == "T" {print $3}' | sort -u; }
same_functions() { diff <(declared "$1") <("$2" "$3"); }
size_of() { stat -c %s "$1"; }

# --- the artifacts themselves -------------------------------------------
mkdir -p "$tmp/tar"
tar -xzf "$tarball" -C "$tmp/tar"
tree="$tmp/tar/libpayidem-$version-linux-x86_64"
so="$tree/lib/libpayidem.so.$version"
a="$tree/lib/libpayidem.a"
check "libpayidem.so needs no glibc newer than 2.17" at_most_2_17 "$so"
check "payidem-mock needs no glibc newer than 2.17" at_most_2_17 "$mock"
check "libpayidem.so has SONAME libpayidem.so.0" sh -c "readelf -d '$so' | grep -q 'SONAME.*\[libpayidem.so.0\]'"
check "libpayidem.so exports only payidem_*" only_payidem_dynamic "$so"
check "libpayidem.a defines only payidem_* globally (no sqlite3_*, no Rust std)" only_payidem_global "$a"
check "libpayidem.a defines exactly the functions the header declares" \
    same_functions "$tree/include/payidem.h" defined_in_a "$a"
check "libpayidem.so exports exactly the functions the header declares" \
    same_functions "$tree/include/payidem.h" defined_in_so "$so"
check "libpayidem.so is stripped and links its debug file" stripped_with_link "$so"
check "payidem-mock is stripped and links its debug file" stripped_with_link "$mock"
check "libpayidem.a carries no debug info" no_debug_info "$a"
check "separate debug files exist" test -s "$dist/debug/libpayidem.so.$version.debug" -a -s "$dist/debug/payidem-mock.debug"
check "the tarball has LICENSE, README.md, THIRD-PARTY.txt, pkg-config and CMake files" test -s "$tree/LICENSE" \
    -a -s "$tree/README.md" -a -s "$tree/THIRD-PARTY.txt" -a -f "$tree/lib/pkgconfig/payidem.pc" \
    -a -f "$tree/lib/pkgconfig/payidem-static.pc" -a -f "$tree/lib/cmake/payidem/payidemConfig.cmake" \
    -a -f "$tree/lib/cmake/payidem/payidemConfigVersion.cmake"
check "libpayidem0 depends on libc6 >= 2.17, has shlibs and the ldconfig trigger" sh -c \
    "dpkg-deb -f '$deb_runtime' Depends | grep -qx 'libc6 (>= 2.17)' && dpkg-deb -I '$deb_runtime' shlibs | grep -qx 'libpayidem 0 libpayidem0 (>= $version)' && dpkg-deb -I '$deb_runtime' triggers | grep -qx 'activate-noawait ldconfig'"
check "libpayidem-dev depends on exactly this libpayidem0" sh -c \
    "dpkg-deb -f '$deb_dev' Depends | grep -qx 'libpayidem0 (= $version-1)'"
check "the Debian packages use the multiarch libdir" sh -c \
    "dpkg-deb -c '$deb_runtime' | grep -q './usr/lib/x86_64-linux-gnu/libpayidem.so.$version\$' && dpkg-deb -c '$deb_dev' | grep -q './usr/lib/x86_64-linux-gnu/libpayidem.a\$'"
repackaged_identically() {
    local n
    for n in 1 2; do
        PAYIDEM_DIST_DIR="$tmp/repack-$n" "$root/scripts/dist/package-c.sh" --arch x86_64 >/dev/null 2>&1 || return 1
        (cd "$tmp/repack-$n" && sha256sum ./*.tar.gz ./*.deb) > "$tmp/repack-$n.sums"
    done
    cat "$tmp/repack-1.sums"
    cmp "$tmp/repack-1.sums" "$tmp/repack-2.sums"
}
check "packaging is reproducible: two runs give byte-identical tarball and .debs" repackaged_identically
printf 'sizes: libpayidem.so %s B, libpayidem.a %s B, payidem-mock %s B, tarball %s B, libpayidem0.deb %s B, libpayidem-dev.deb %s B\n' \
    "$(size_of "$so")" "$(size_of "$a")" "$(size_of "$mock")" "$(size_of "$tarball")" \
    "$(size_of "$deb_runtime")" "$(size_of "$deb_dev")"

# libpayidem.a in a program built for a glibc 2.17 host: zig links against
# glibc 2.17's symbol list, so an undefined newer symbol fails the link.
check "pay.c links statically for glibc 2.17 (zig cc)" \
    python3 -m ziglang cc -target x86_64-linux-gnu.2.17 -std=c99 -I"$tree/include" "$root/examples/c/pay.c" \
    "$a" -lunwind -lpthread -lm -ldl -lrt -o "$tmp/pay-2.17"
check "that program needs no glibc newer than 2.17" at_most_2_17 "$tmp/pay-2.17"

# --- the mock ------------------------------------------------------------
"$mock" --port 0 > "$tmp/mock.out" 2>"$tmp/mock.err" &
mock_pid=$!
for _ in $(seq 100); do [ -s "$tmp/mock.out" ] && break; sleep 0.1; done
port="$(sed -n '1s/.*:\([0-9]*\)$/\1/p' "$tmp/mock.out")"
[ -n "$port" ] || { echo "test-c.sh: the mock did not start"; cat "$tmp/mock.err"; exit 1; }
url="http://127.0.0.1:$port"

# Runs a built pay program against the mock with a journal of its own.
run=0
pays() {
    local prog=$1; shift
    run=$((run + 1))
    local state="$tmp/state-$run" out
    out="$(env XDG_STATE_HOME="$state" "$@" "$prog" "$url" 2>&1)" || { echo "$out"; return 1; }
    echo "$out"
    printf '%s\n' "$out" | grep -q '^HTTP 201 key=create-example-1 attempts=1' &&
        test "$(stat -c %a "$state/payidem/journal.sqlite3")" = 600 &&
        test "$(stat -c %a "$state/payidem")" = 700
}
dynamic_only() { readelf -d "$1" | grep -q 'NEEDED.*\[libpayidem.so.0\]'; }
static_only() { ! readelf -d "$1" | grep -q 'libpayidem'; }

build_with_pkg_config() {
    local label=$1 libdir=$2; shift 2
    local out="$tmp/pay-$label"
    # shellcheck disable=SC2046
    check "$label: pkg-config, dynamic: builds" env "$@" sh -c \
        "cc ${cflags[*]} '$root/examples/c/pay.c' \$(pkg-config --cflags --libs payidem) -o '$out-dyn'"
    check "$label: pkg-config, dynamic: records libpayidem.so.0" dynamic_only "$out-dyn"
    check "$label: pkg-config, dynamic: pays against the mock" pays "$out-dyn" LD_LIBRARY_PATH="$libdir"
    check "$label: pkg-config payidem-static: builds" env "$@" sh -c \
        "cc ${cflags[*]} '$root/examples/c/pay.c' \$(pkg-config --cflags --libs payidem-static) -o '$out-static'"
    check "$label: pkg-config payidem-static: no libpayidem at run time" static_only "$out-static"
    check "$label: pkg-config payidem-static: pays against the mock" pays "$out-static"
}
build_with_cmake() {
    local label=$1 prefix=$2 libdir=$3
    local b="$tmp/cmake-$label"
    for kind in shared static; do
        local static=OFF
        [ "$kind" = static ] && static=ON
        check "$label: CMake find_package, $kind: configures and builds" sh -c \
            "cmake -S '$root/examples/c' -B '$b-$kind' -DCMAKE_PREFIX_PATH='$prefix' -DPAYIDEM_STATIC=$static >/dev/null && cmake --build '$b-$kind' >/dev/null"
    done
    check "$label: CMake shared: records libpayidem.so.0" dynamic_only "$b-shared/pay"
    check "$label: CMake shared: pays against the mock" pays "$b-shared/pay" LD_LIBRARY_PATH="$libdir"
    check "$label: CMake static: no libpayidem at run time" static_only "$b-static/pay"
    check "$label: CMake static: pays against the mock" pays "$b-static/pay"
}

# --- the Debian packages, installed into a throwaway root --------------------
droot="$tmp/debroot"
mkdir -p "$droot/var/lib/dpkg/info" "$droot/var/lib/dpkg/updates" "$droot/var/lib/dpkg/triggers"
touch "$droot/var/lib/dpkg/status"
# libc6 is the host's, not the throwaway root's: --force-depends.
check "dpkg -i installs libpayidem0 and libpayidem-dev into a throwaway root" \
    dpkg --root="$droot" --force-depends --force-script-chrootless -i "$deb_runtime" "$deb_dev"
check "dpkg lists both packages installed" sh -c \
    "test \"\$(dpkg-query --admindir='$droot/var/lib/dpkg' -W -f='\${Status}\n' libpayidem0 libpayidem-dev | grep -c 'install ok installed')\" -eq 2"
dlib="$droot/usr/lib/x86_64-linux-gnu"
build_with_pkg_config deb "$dlib" PKG_CONFIG_SYSROOT_DIR="$droot" PKG_CONFIG_LIBDIR="$dlib/pkgconfig"
build_with_cmake deb "$droot/usr" "$dlib"
check "dpkg -r removes both packages and their files" sh -c \
    "dpkg --root='$droot' --force-script-chrootless -r libpayidem-dev libpayidem0 >/dev/null && test -z \"\$(find '$droot/usr' -type f)\""

# --- the tarball, unpacked anywhere -----------------------------------------
build_with_pkg_config tarball "$tree/lib" PKG_CONFIG_PATH="$tree/lib/pkgconfig"
build_with_cmake tarball "$tree" "$tree/lib"

# --- the system's own SQLite beside libpayidem.a ----------------------------
for order in sqlite-first payidem-first; do
    if [ "$order" = sqlite-first ]; then libs=(-lsqlite3 "$a"); else libs=("$a" -lsqlite3); fi
    check "system libsqlite3 + libpayidem.a ($order): links" \
        cc "${cflags[@]}" -I"$tree/include" "$root/ffi/tests-c/test_system_sqlite.c" "${libs[@]}" \
        -lgcc_s -lutil -lrt -lpthread -lm -ldl -o "$tmp/sqlite-$order"
    check "system libsqlite3 + libpayidem.a ($order): sqlite3_libversion() is the system's, both work" \
        "$tmp/sqlite-$order" "$tmp/sqlite-$order.journal"
done

# --- make install / uninstall ------------------------------------------------
dest="$tmp/destdir"
check "make install DESTDIR PREFIX LIBDIR (installs, never compiles)" \
    make -s -C "$root" install DESTDIR="$dest" PREFIX=/opt/pi LIBDIR=/opt/pi/lib64 CARGO=false
check "make install put every file under DESTDIR/LIBDIR" test -f "$dest/opt/pi/lib64/libpayidem.so.$version" \
    -a -L "$dest/opt/pi/lib64/libpayidem.so.0" -a -L "$dest/opt/pi/lib64/libpayidem.so" \
    -a -f "$dest/opt/pi/lib64/libpayidem.a" -a -f "$dest/opt/pi/include/payidem.h" \
    -a -f "$dest/opt/pi/lib64/pkgconfig/payidem.pc" -a -f "$dest/opt/pi/lib64/cmake/payidem/payidemConfig.cmake"
check "make install put the payidem command, its manual page and completions under PREFIX" test -x "$dest/opt/pi/bin/payidem" \
    -a -f "$dest/opt/pi/share/man/man1/payidem.1" -a -f "$dest/opt/pi/share/bash-completion/completions/payidem" \
    -a -f "$dest/opt/pi/share/zsh/site-functions/_payidem" -a -f "$dest/opt/pi/share/fish/vendor_completions.d/payidem.fish"
check "the installed payidem command runs" sh -c "'$dest/opt/pi/bin/payidem' --version | grep -qx 'payidem $version'"
check "the installed payidem command needs no glibc newer than 2.17" at_most_2_17 "$dest/opt/pi/bin/payidem"
check "the installed payidem.pc names the final PREFIX and LIBDIR, not DESTDIR" sh -c \
    "grep -qx 'prefix=/opt/pi' '$dest/opt/pi/lib64/pkgconfig/payidem.pc' && grep -qx 'libdir=/opt/pi/lib64' '$dest/opt/pi/lib64/pkgconfig/payidem.pc'"
check "make uninstall removes every installed file" sh -c \
    "make -s -C '$root' uninstall DESTDIR='$dest' PREFIX=/opt/pi LIBDIR=/opt/pi/lib64 >/dev/null && test -z \"\$(find '$dest' -type f -o -type l)\""

# --- ffi/README.md, every ```sh block as written -----------------------------
readme_dir="$tmp/readme"
mkdir -p "$readme_dir/home"
cp "$tarball" "$readme_dir/"
cp "$root/examples/c/pay.c" "$readme_dir/app.c"
python3 - "$root/ffi/README.md" > "$readme_dir/commands.sh" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
blocks = re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M)
if not blocks:
    sys.exit("ffi/README.md has no ```sh block")
print("set -eux")
print("\n".join(blocks))
EOF
check "ffi/README.md's commands run as written (tarball, pkg-config, make install to \$HOME/.local)" \
    env -C "$readme_dir" HOME="$readme_dir/home" PAYIDEM_REPO="$root" PAYIDEM_URL="$url" \
    RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" \
    XDG_CACHE_HOME="${XDG_CACHE_HOME:-$HOME/.cache}" \
    XDG_STATE_HOME="$readme_dir/state" bash "$readme_dir/commands.sh"

echo "$passed passed, $failed failed"
test "$failed" -eq 0
