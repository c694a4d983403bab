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
# - the payidem command, from the payidem-cli .deb (installed alone into a
#   throwaway root) and from the tarball's bin/: glibc floor, Depends, Debian
#   paths, --version, `journal list --json` and `journal check --json` on a
#   journal that the installed library wrote, `man -l` on its manual page,
#   its bash completion loaded by bash;
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
deb_cli="$dist/payidem-cli_$version-1_amd64.deb"
cflags=(-std=c99 -Wall -Wextra -Werror -pedantic)

tmp="$(mktemp -d /tmp/payidem-dist-c-XXXXXX)"
mock_pid=
cleanup() {
    if [ -n "$mock_pid" ]; then kill "$mock_pid" 2>/dev/null || true; wait "$mock_pid" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT
# shellcheck source=scripts/dist/test-lib.sh
. "$root/scripts/dist/test-lib.sh"

for f in "$tarball" "$deb_runtime" "$deb_dev" "$deb_cli" "$mock"; do
    [ -f "$f" ] || { echo "test-c.sh: $f is missing: run 'make dist' first" >&2; exit 1; }
done
PATH="$("$root/scripts/dist/tools.sh"):$PATH"
missing=""
command -v cmake >/dev/null || missing="$missing cmake"
command -v pkg-config >/dev/null || missing="$missing pkg-config"
dpkg -s libsqlite3-dev >/dev/null 2>&1 || missing="$missing libsqlite3-dev"
command -v man >/dev/null || missing="$missing man-db"
command -v groff >/dev/null || missing="$missing groff-base"
if [ -n "$missing" ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi

# shellcheck source=scripts/dist/elf-checks.sh
. "$root/scripts/dist/elf-checks.sh"

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
check "separate debug files exist" test -s "$dist/debug/libpayidem.so.$version.debug" -a -s "$dist/debug/payidem-mock.debug" \
    -a -s "$dist/debug/payidem.debug"
check "the tarball's bin/payidem needs no glibc newer than 2.17" at_most_2_17 "$tree/bin/payidem"
check "the tarball's bin/payidem is stripped and links its debug file" stripped_with_link "$tree/bin/payidem"
check "the tarball has the payidem command's manual page and bash, zsh and fish completions" \
    test -s "$tree/share/man/man1/payidem.1" -a -s "$tree/share/bash-completion/completions/payidem" \
    -a -s "$tree/share/zsh/site-functions/_payidem" -a -s "$tree/share/fish/vendor_completions.d/payidem.fish"
check "the tarball's THIRD-PARTY.txt covers the library and the command (clap)" sh -c \
    "grep -qx 'libpayidem and the payidem command (Apache-2.0) link these crates (name, version, licence).' '$tree/THIRD-PARTY.txt' && grep -q '^clap ' '$tree/THIRD-PARTY.txt'"
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
check "packaging is reproducible: two runs give byte-identical tarball and .debs (payidem-cli too)" repackaged_identically

# payidem-cli: the command alone, glibc only, Debian's paths.
cli_x="$tmp/cli-deb-x"
dpkg-deb -x "$deb_cli" "$cli_x"
cli_depends_on_its_floor() {
    local floor depends
    floor="$(glibc_floor "$cli_x/usr/bin/payidem")"
    depends="$(dpkg-deb -f "$deb_cli" Depends)"
    echo "Depends: $depends; the binary needs glibc $floor"
    [ -n "$floor" ] && [ "$depends" = "libc6 (>= $floor)" ] && at_most_2_17 "$cli_x/usr/bin/payidem"
}
check "payidem-cli depends on exactly libc6 (>= the newest glibc its binary needs), at most 2.17" cli_depends_on_its_floor
check "payidem-cli is Multi-Arch: foreign, section admin" sh -c \
    "test \"\$(dpkg-deb -f '$deb_cli' Multi-Arch Section)\" = 'Multi-Arch: foreign
Section: admin'"
cli_deb_files() {
    diff <(dpkg-deb -c "$deb_cli" | awk '$NF !~ /\/$/ {print $NF}' | sort) - <<'EOF'
./usr/bin/payidem
./usr/share/bash-completion/completions/payidem
./usr/share/doc/payidem-cli/copyright
./usr/share/fish/vendor_completions.d/payidem.fish
./usr/share/man/man1/payidem.1.gz
./usr/share/zsh/vendor-completions/_payidem
EOF
}
check "payidem-cli holds exactly the command, its gzipped manual page, completions in Debian's paths and the copyright" cli_deb_files
check "payidem-cli's binary is the tarball's" cmp "$cli_x/usr/bin/payidem" "$tree/bin/payidem"
check "payidem-cli's manual page is gzip -n (no name, no time) and the tarball's page" sh -c \
    "gzip -t '$cli_x/usr/share/man/man1/payidem.1.gz' && test \"\$(od -An -tx1 -j4 -N4 '$cli_x/usr/share/man/man1/payidem.1.gz' | tr -d ' ')\" = 00000000 && zcat '$cli_x/usr/share/man/man1/payidem.1.gz' | cmp - '$tree/share/man/man1/payidem.1'"
check "payidem-cli's copyright has the licence and the command's crates (clap), not only the library's" sh -c \
    "grep -q 'Apache License' '$cli_x/usr/share/doc/payidem-cli/copyright' && grep -qx 'The payidem command (Apache-2.0) links these crates (name, version, licence).' '$cli_x/usr/share/doc/payidem-cli/copyright' && grep -q '^clap ' '$cli_x/usr/share/doc/payidem-cli/copyright'"

printf 'sizes: libpayidem.so %s B, libpayidem.a %s B, payidem-mock %s B, payidem %s B, tarball %s B, libpayidem0.deb %s B, libpayidem-dev.deb %s B, payidem-cli.deb %s B\n' \
    "$(size_of "$so")" "$(size_of "$a")" "$(size_of "$mock")" "$(size_of "$tree/bin/payidem")" "$(size_of "$tarball")" \
    "$(size_of "$deb_runtime")" "$(size_of "$deb_dev")" "$(size_of "$deb_cli")"

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
    mkdir -m 700 "$state"
    out="$(env "$@" "$prog" "$url" "$state/journal.sqlite3" 2>&1)" || { echo "$out"; return 1; }
    echo "$out"
    printf '%s\n' "$out" | grep -q '^HTTP 201 key=create-example-1 attempts=1' &&
        test "$(stat -c %a "$state/journal.sqlite3")" = 600
}
dynamic_only() { readelf -d "$1" | grep -q 'NEEDED.*\[libpayidem.so.0\]'; }

# The payidem command as installed (BIN, its manual page MAN, its bash
# completion BASH_COMP) on a journal that the installed library wrote:
# PAY (a pay.c built against that library) pays once, with ENV..., into a
# journal of its own, then the command lists and checks it.
cli_works() {
    local label=$1 bin=$2 man_page=$3 bash_comp=$4 pay=$5; shift 5
    local state="$tmp/cli-state-$label"
    local journal="$state/journal.sqlite3"
    mkdir -m 700 "$state"
    check "$label: payidem --version" sh -c "'$bin' --version | tee /dev/stderr | grep -qx 'payidem $version'"
    check "$label: the installed library writes a journal (pay.c pays once)" \
        sh -c "env $* '$pay' '$url' '$journal' && test -f '$journal'"
    check "$label: payidem journal list --json lists that payment, succeeded" lists_the_payment "$bin" "$journal"
    check "$label: payidem journal check --json finds the journal sound" checks_sound "$bin" "$journal"
    check "$label: man -l renders the manual page, groff without warnings" man_renders "$man_page"
    check "$label: bash loads the completion, which completes 'payidem jo' to journal" completes "$bash_comp"
}
man_renders() {
    local rendered
    rendered="$(MANWIDTH=80 man -l "$1" 2>&1)" || { echo "$rendered"; return 1; }
    printf '%s\n' "$rendered" | head -n 8
    printf '%s\n' "$rendered" | grep -q '^NAME' && printf '%s\n' "$rendered" | grep -q 'payidem' &&
        test -z "$(zcat -f "$1" | groff -man -Tutf8 -ww -z 2>&1)"
}
completes() {
    # shellcheck disable=SC2016 # expanded by the inner bash
    bash -c 'source "$1" && complete -p payidem >/dev/null && fn=$(complete -p payidem | sed -n "s/.*-F \([^ ]*\).*/\1/p") &&
        COMP_WORDS=(payidem jo) COMP_CWORD=1 COMP_LINE="payidem jo" COMP_POINT=10 && "$fn" payidem jo payidem &&
        printf "%s\n" "${COMPREPLY[@]}" | grep -qx journal' _ "$1"
}
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

# payidem-cli alone in a throwaway root of its own: it needs no libpayidem0.
croot="$tmp/cliroot"
mkdir -p "$croot/var/lib/dpkg/info" "$croot/var/lib/dpkg/updates" "$croot/var/lib/dpkg/triggers"
touch "$croot/var/lib/dpkg/status"
check "dpkg -i installs payidem-cli alone into a throwaway root" \
    dpkg --root="$croot" --force-depends --force-script-chrootless -i "$deb_cli"
cli_works deb "$croot/usr/bin/payidem" "$croot/usr/share/man/man1/payidem.1.gz" \
    "$croot/usr/share/bash-completion/completions/payidem" "$tmp/pay-deb-dyn" LD_LIBRARY_PATH="$dlib"
check "dpkg -r removes payidem-cli and its files" sh -c \
    "dpkg --root='$croot' --force-script-chrootless -r payidem-cli >/dev/null && test -z \"\$(find '$croot/usr' -type f)\""
check "dpkg -r removes both packages and their files" sh -c \
    "dpkg --root='$droot' --force-script-chrootless -r libpayidem-dev libpayidem0 >/dev/null && test -z \"\$(find '$droot/usr' -type f)\""

# --- the tarball, unpacked anywhere -----------------------------------------
build_with_pkg_config tarball "$tree/lib" PKG_CONFIG_PATH="$tree/lib/pkgconfig"
build_with_cmake tarball "$tree" "$tree/lib"
cli_works tarball "$tree/bin/payidem" "$tree/share/man/man1/payidem.1" \
    "$tree/share/bash-completion/completions/payidem" "$tmp/pay-tarball-dyn" LD_LIBRARY_PATH="$tree/lib"

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
blocks = re.findall(r"^```sh[^\n]*\n(.*?)^```", text, re.S | re.M)
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
