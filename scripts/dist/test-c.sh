#!/usr/bin/env bash
# Proves the C artifacts of dist/ outside the repository, as a user gets them:
#
# - every artifact: glibc floor 2.17 (objdump -T), only payidem_* exported
#   (the .so's dynamic table, the .a's global symbols), stripped with a debug
#   link, sizes printed;
# - libpayidem.a links for a glibc 2.17 host (zig cc against glibc 2.17);
# - the .debs: lintian without errors or warnings; libpayidem0's symbols
#   file names exactly the exported and declared functions;
# - the .debs installed with dpkg -i into a throwaway root, the tarball
#   unpacked elsewhere: the C example they ship (examples/c/pay.c) built
#   against each with pkg-config and with CMake, dynamically and statically,
#   and run against the mock; the guides they ship, every link resolving;
# - a program linking the system's libsqlite3 and libpayidem.a keeps the
#   system's SQLite;
# - the payidem command, from the payidem-cli .deb (installed alone into a
#   throwaway root) and from the tarball's bin/: glibc floor, Depends, Debian
#   paths, --version, `journal list --json` and `journal check --json` on a
#   journal that the installed library wrote, `man -l` on its manual page,
#   `man payidem-journal` and every command's page, its bash completion
#   loaded by bash;
# - make install / make uninstall with DESTDIR, PREFIX and LIBDIR (the
#   library, the command and the documentation; the installed example builds);
# - versioning (docs/versioning.md): pay.c built against this release runs
#   with a library built with the patch version bumped, and refuses
#   libraries of another minor version (0.x), naming both versions;
# - the ```sh blocks of ffi/README.md whose marker names this script (make
#   install from a checkout), run as written.
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
    rm -rf "$tmp" "${compat:-}"
}
trap cleanup EXIT
# shellcheck source=scripts/dist/test-lib.sh
. "$root/scripts/dist/test-lib.sh"

for f in "$tarball" "$deb_runtime" "$deb_dev" "$deb_cli" "$mock"; do
    [ -f "$f" ] || { echo "test-c.sh: $f is missing: run 'make dist' first" >&2; exit 1; }
done
PATH="$("$root/scripts/dist/tools.sh"):$PATH"
"$root/scripts/apt-ensure.sh" cmake=cmake pkg-config=pkg-config libsqlite3-dev man-db=man \
    groff-base=groff lintian=lintian

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
# The manual pages the command generates: payidem.1 and one per command.
"$tree/bin/payidem" man --dir "$(mkdir -p "$tmp/man-expected" && echo "$tmp/man-expected")"
man_pages=()
while IFS= read -r page; do man_pages+=("$page"); done < <(cd "$tmp/man-expected" && ls)
echo "manual pages: ${man_pages[*]}"
same_man_pages() {
    local dir=$1 suffix=$2 page
    [ "${#man_pages[@]}" -gt 10 ] || { echo "only ${#man_pages[@]} pages generated"; return 1; }
    diff <(cd "$dir" && ls) <(printf "%s$suffix\n" "${man_pages[@]}") || return 1
    for page in "${man_pages[@]}"; do zcat -f "$dir/$page$suffix" | cmp - "$tmp/man-expected/$page" || return 1; done
}
check "the tarball has the payidem command's manual pages (one per command) and bash, zsh and fish completions" \
    same_man_pages "$tree/share/man/man1" ""
check "the tarball has the payidem command's completions" \
    test -s "$tree/share/bash-completion/completions/payidem" \
    -a -s "$tree/share/zsh/site-functions/_payidem" -a -s "$tree/share/fish/vendor_completions.d/payidem.fish"
check "the tarball's THIRD-PARTY.txt covers the library and the command (clap)" sh -c \
    "grep -qx 'libpayidem and the payidem command (Apache-2.0) link these crates (name, version, licence).' '$tree/THIRD-PARTY.txt' && grep -q '^clap ' '$tree/THIRD-PARTY.txt'"
check "the tarball has LICENSE, README.md, THIRD-PARTY.txt, pkg-config and CMake files" test -s "$tree/LICENSE" \
    -a -s "$tree/README.md" -a -s "$tree/THIRD-PARTY.txt" -a -f "$tree/lib/pkgconfig/payidem.pc" \
    -a -f "$tree/lib/pkgconfig/payidem-static.pc" -a -f "$tree/lib/cmake/payidem/payidemConfig.cmake" \
    -a -f "$tree/lib/cmake/payidem/payidemConfigVersion.cmake"
# Every relative link of the Markdown files under DIR names a file under DIR.
links_resolve() {
    python3 - "$1" <<'PY'
import pathlib, re, sys
root = pathlib.Path(sys.argv[1])
pages = sorted(root.rglob("*.md"))
assert pages, f"no Markdown page under {root}"
bad = []
for page in pages:
    for target in re.findall(r"\]\(([^)#\s]+)", page.read_text()):
        if "://" in target or target.startswith("mailto:"):
            continue
        if not (page.parent / target).resolve().is_relative_to(root.resolve()) or not (page.parent / target).exists():
            bad.append(f"{page.relative_to(root)} -> {target}")
print("\n".join(bad) or f"{len(pages)} pages, every link resolves")
sys.exit(1 if bad else 0)
PY
}
tarball_docs() { test -s "$tree/docs/cli.md" && test -s "$tree/docs/replay-store.md" && links_resolve "$tree"; }
check "the tarball ships the guides the README and the command point to (docs/cli.md ...), every link resolving" tarball_docs
check "the tarball ships the C example (examples/c: pay.c, CMakeLists.txt) as in the checkout" sh -c \
    "cmp '$tree/examples/c/pay.c' '$root/examples/c/pay.c' && cmp '$tree/examples/c/CMakeLists.txt' '$root/examples/c/CMakeLists.txt'"
lintian_clean() {
    local out
    # -I: informational tags are shown, not fatal.
    out="$(lintian --fail-on error,warning -I "$@" 2>&1)" || { echo "$out"; return 1; }
    echo "$out"
    ! grep -qE '^[EW]: ' <<< "$out"
}
check "lintian: the three .debs have no error and no warning" lintian_clean "$deb_runtime" "$deb_dev" "$deb_cli"
symbols_in() { sed -n 's/^ \(payidem_[a-z0-9_]*\)@Base .*/\1/p' "$1"; }
symbols_match() {
    local x="$tmp/symbols-x"
    mkdir -p "$x" && dpkg-deb -e "$deb_runtime" "$x"
    cat "$x/symbols"
    test "$(sed -n 1p "$x/symbols")" = "libpayidem.so.0 libpayidem0 #MINVER#" &&
        ! grep -v -e '^libpayidem.so.0 ' -e '^\* Build-Depends-Package: libpayidem-dev$' -e "^ payidem_[a-z0-9_]*@Base $version\$" "$x/symbols" &&
        diff <(symbols_in "$x/symbols") <(defined_in_so "$so") &&
        same_functions "$tree/include/payidem.h" symbols_in "$x/symbols"
}
check "libpayidem0's symbols file names exactly the functions the .so exports and the header declares" symbols_match
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
    diff <(dpkg-deb -c "$deb_cli" | awk '$NF !~ /\/$/ {print $NF}' | sort) <({
        cat <<'EOF'
./usr/bin/payidem
./usr/share/bash-completion/completions/payidem
./usr/share/doc/payidem-cli/changelog.Debian.gz
./usr/share/doc/payidem-cli/changelog.gz
./usr/share/doc/payidem-cli/copyright
./usr/share/doc/payidem-cli/docs/cli.md
./usr/share/doc/payidem-cli/docs/journal-integrity.md
./usr/share/doc/payidem-cli/docs/metrics.md
./usr/share/doc/payidem-cli/docs/postgres-journal.md
./usr/share/fish/vendor_completions.d/payidem.fish
./usr/share/lintian/overrides/payidem-cli
./usr/share/zsh/vendor-completions/_payidem
EOF
        printf './usr/share/man/man1/%s.gz\n' "${man_pages[@]}"
    } | sort)
}
check "payidem-cli holds exactly the command, its gzipped manual pages, completions in Debian's paths, its guide, changelogs and copyright" cli_deb_files
check "payidem-cli's guide: every link of its pages resolves inside the package" links_resolve "$cli_x/usr/share/doc/payidem-cli"
help_points_to_shipped_docs() {
    local help
    help="$("$cli_x/usr/bin/payidem" --help)"
    printf '%s\n' "$help" | tail -n 4
    grep -q '/usr/share/doc/payidem-cli/docs/cli.md' <<< "$help" && test -s "$cli_x/usr/share/doc/payidem-cli/docs/cli.md" &&
        ! grep -E 'docs/[a-z-]+\.md' <<< "$help" | grep -v -e '/usr/share/doc/payidem-cli/docs/cli.md' -e 'docs/cli.md in the release tarball'
}
check "payidem --help points to the guide the package ships (/usr/share/doc/payidem-cli/docs/cli.md)" help_points_to_shipped_docs
check "payidem-cli's binary is the tarball's" cmp "$cli_x/usr/bin/payidem" "$tree/bin/payidem"
check "payidem-cli's manual page is gzip -n (no name, no time)" sh -c \
    "gzip -t '$cli_x/usr/share/man/man1/payidem.1.gz' && test \"\$(od -An -tx1 -j4 -N4 '$cli_x/usr/share/man/man1/payidem.1.gz' | tr -d ' ')\" = 00000000"
check "payidem-cli's manual pages are the tarball's, one per command" same_man_pages "$cli_x/usr/share/man/man1" .gz
check "payidem-cli's copyright is DEP-5, points to common-licenses and lists the command's crates (clap)" sh -c \
    "head -n 1 '$cli_x/usr/share/doc/payidem-cli/copyright' | grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' && grep -qx ' can be found in \"/usr/share/common-licenses/Apache-2.0\".' '$cli_x/usr/share/doc/payidem-cli/copyright' && grep -qx ' The payidem command (Apache-2.0) links these crates (name, version, licence).' '$cli_x/usr/share/doc/payidem-cli/copyright' && grep -q '^ clap ' '$cli_x/usr/share/doc/payidem-cli/copyright'"

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
    grep -q '^HTTP 201 key=create-example-1 attempts=1' <<<"$out" &&
        test "$(stat -c %a "$state/journal.sqlite3")" = 600
}
dynamic_only() { grep -q 'NEEDED.*\[libpayidem.so.0\]' <<<"$(readelf -d "$1")"; }

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
    # Here-strings, not pipes: under pipefail a grep -q or head that stops
    # reading early fails the check by the writer's SIGPIPE.
    sed -n 1,8p <<<"$rendered"
    grep -q '^NAME' <<<"$rendered" && grep -q 'payidem' <<<"$rendered" &&
        test -z "$(zcat -f "$1" | groff -man -Tutf8 -ww -z 2>&1)"
}
completes() {
    # shellcheck disable=SC2016 # expanded by the inner bash
    bash -c 'source "$1" && complete -p payidem >/dev/null && fn=$(complete -p payidem | sed -n "s/.*-F \([^ ]*\).*/\1/p") &&
        COMP_WORDS=(payidem jo) COMP_CWORD=1 COMP_LINE="payidem jo" COMP_POINT=10 && "$fn" payidem jo payidem &&
        printf "%s\n" "${COMPREPLY[@]}" | grep -qx journal' _ "$1"
}
static_only() {
    local dynamic
    dynamic="$(readelf -d "$1")" && ! grep -q 'libpayidem' <<<"$dynamic"
}

# The C example as shipped in SRC (examples/c of the tarball or of the -dev
# package's documentation), built against the library of LIBDIR.
build_with_pkg_config() {
    local label=$1 libdir=$2 src=$3; shift 3
    local out="$tmp/pay-$label"
    # shellcheck disable=SC2046
    check "$label: pkg-config, dynamic: builds" env "$@" sh -c \
        "cc ${cflags[*]} '$src/pay.c' \$(pkg-config --cflags --libs payidem) -o '$out-dyn'"
    check "$label: pkg-config, dynamic: records libpayidem.so.0" dynamic_only "$out-dyn"
    check "$label: pkg-config, dynamic: pays against the mock" pays "$out-dyn" LD_LIBRARY_PATH="$libdir"
    check "$label: pkg-config payidem-static: builds" env "$@" sh -c \
        "cc ${cflags[*]} '$src/pay.c' \$(pkg-config --cflags --libs payidem-static) -o '$out-static'"
    check "$label: pkg-config payidem-static: no libpayidem at run time" static_only "$out-static"
    check "$label: pkg-config payidem-static: pays against the mock" pays "$out-static"
}
build_with_cmake() {
    local label=$1 prefix=$2 libdir=$3 src=$4
    local b="$tmp/cmake-$label"
    for kind in shared static; do
        local static=OFF
        [ "$kind" = static ] && static=ON
        check "$label: CMake find_package, $kind: configures and builds" sh -c \
            "cmake -S '$src' -B '$b-$kind' -DCMAKE_PREFIX_PATH='$prefix' -DPAYIDEM_STATIC=$static >/dev/null && cmake --build '$b-$kind' >/dev/null"
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
dexample="$droot/usr/share/doc/libpayidem-dev/examples/c"
check "libpayidem-dev ships the C example as in the checkout" sh -c \
    "cmp '$dexample/pay.c' '$root/examples/c/pay.c' && cmp '$dexample/CMakeLists.txt' '$root/examples/c/CMakeLists.txt'"
check "libpayidem-dev's README.md and docs: every link resolves inside the package" \
    links_resolve "$droot/usr/share/doc/libpayidem-dev"
build_with_pkg_config deb "$dlib" "$dexample" PKG_CONFIG_SYSROOT_DIR="$droot" PKG_CONFIG_LIBDIR="$dlib/pkgconfig"
build_with_cmake deb "$droot/usr" "$dlib" "$dexample"

# payidem-cli alone in a throwaway root of its own: it needs no libpayidem0.
croot="$tmp/cliroot"
mkdir -p "$croot/var/lib/dpkg/info" "$croot/var/lib/dpkg/updates" "$croot/var/lib/dpkg/triggers"
touch "$croot/var/lib/dpkg/status"
check "dpkg -i installs payidem-cli alone into a throwaway root" \
    dpkg --root="$croot" --force-depends --force-script-chrootless -i "$deb_cli"
cli_works deb "$croot/usr/bin/payidem" "$croot/usr/share/man/man1/payidem.1.gz" \
    "$croot/usr/share/bash-completion/completions/payidem" "$tmp/pay-deb-dyn" LD_LIBRARY_PATH="$dlib"
man_command_pages() {
    local page name out
    out="$(MANWIDTH=80 man -M "$croot/usr/share/man" payidem-journal 2>&1)" || { echo "$out"; return 1; }
    sed -n 1,12p <<<"$out"
    grep -q 'payidem-journal-resume(1)' <<< "$out" || return 1
    for page in "${man_pages[@]}"; do
        name="${page%.1}"
        MANWIDTH=80 man -M "$croot/usr/share/man" "$name" >/dev/null 2>&1 || { echo "man $name finds nothing"; return 1; }
        out="$(zcat "$croot/usr/share/man/man1/$page.gz" | groff -man -Tutf8 -ww -z 2>&1)"
        [ -z "$out" ] || { echo "$page: $out"; return 1; }
    done
}
check "deb: man payidem-journal (and every command's page) finds the installed page, groff without warnings" man_command_pages
check "dpkg -r removes payidem-cli and its files" sh -c \
    "dpkg --root='$croot' --force-script-chrootless -r payidem-cli >/dev/null && test -z \"\$(find '$croot/usr' -type f)\""
check "dpkg -r removes both packages and their files" sh -c \
    "dpkg --root='$droot' --force-script-chrootless -r libpayidem-dev libpayidem0 >/dev/null && test -z \"\$(find '$droot/usr' -type f)\""

# --- the tarball, unpacked anywhere -----------------------------------------
build_with_pkg_config tarball "$tree/lib" "$tree/examples/c" PKG_CONFIG_PATH="$tree/lib/pkgconfig"
build_with_cmake tarball "$tree" "$tree/lib" "$tree/examples/c"
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
ddoc="$dest/opt/pi/share/doc/payidem"
check "make install put the documentation in DOCDIR (PREFIX/share/doc/payidem): the C README, docs/ and examples/c as the tarball ships them" \
    sh -c "cmp '$ddoc/README.md' '$tree/README.md' && diff -r '$ddoc/docs' '$tree/docs' && test -s '$ddoc/docs/cli.md' && diff -r '$ddoc/examples' '$tree/examples'"
check "make install's documentation: every link resolves inside DOCDIR" links_resolve "$ddoc"
build_with_pkg_config "make install" "$dest/opt/pi/lib64" "$ddoc/examples/c" \
    PKG_CONFIG_SYSROOT_DIR="$dest" PKG_CONFIG_LIBDIR="$dest/opt/pi/lib64/pkgconfig"
check "the installed payidem command needs no glibc newer than 2.17" at_most_2_17 "$dest/opt/pi/bin/payidem"
check "the installed payidem.pc names the final PREFIX and LIBDIR, not DESTDIR" sh -c \
    "grep -qx 'prefix=/opt/pi' '$dest/opt/pi/lib64/pkgconfig/payidem.pc' && grep -qx 'libdir=/opt/pi/lib64' '$dest/opt/pi/lib64/pkgconfig/payidem.pc'"
check "make uninstall removes every installed file" sh -c \
    "make -s -C '$root' uninstall DESTDIR='$dest' PREFIX=/opt/pi LIBDIR=/opt/pi/lib64 >/dev/null && test -z \"\$(find '$dest' -type f -o -type l)\""

# --- versioning (docs/versioning.md) -------------------------------------------
# A newer compatible library: libpayidem built as the release is (zig, glibc
# 2.17, profile dist) from a copy of the workspace whose version has its
# patch number bumped. The copy's target dir starts as hard links of this
# one's dist builds (so it lives beside them, on the same file system) and
# the build environment is this checkout's, so only the workspace's own
# crates compile again.
newer_patch="$(IFS=. read -r major minor patch <<< "$version"; echo "$major.$minor.$((patch + 1))")"
dist_target="${CARGO_TARGET_DIR:-$root/target}"
case "$dist_target" in /*) ;; *) dist_target="$root/$dist_target" ;; esac
compat="$dist_target/version-compat-test"
build_newer_patch() {
    rm -rf "$compat"
    mkdir -p "$compat/src" "$compat/target/x86_64-unknown-linux-gnu"
    (cd "$root" && git ls-files -z -- Cargo.toml Cargo.lock core mock e2e ffi include bindings/python cli sim |
        xargs -0 cp --parents -t "$compat/src") || return 1
    sed -i "0,/^version = \"$version\"/s//version = \"$newer_patch\"/" "$compat/src/Cargo.toml"
    grep -qx "version = \"$newer_patch\"" "$compat/src/Cargo.toml" || { echo "no version to bump"; return 1; }
    cp -al "$dist_target/dist" "$compat/target/dist"
    cp -al "$dist_target/x86_64-unknown-linux-gnu/dist" "$compat/target/x86_64-unknown-linux-gnu/dist"
    (
        # shellcheck source=scripts/dist/env.sh
        . "$root/scripts/dist/env.sh"
        cd "$compat/src" && CARGO_TARGET_DIR="$compat/target" \
            cargo zigbuild --offline --profile dist -p payidem-ffi --target x86_64-unknown-linux-gnu.2.17
    ) || return 1
    mkdir -p "$compat/lib"
    cp "$compat/target/x86_64-unknown-linux-gnu/dist/libpayidem.so" "$compat/lib/libpayidem.so.0"
    local reported
    reported="$(version_of "$compat/lib/libpayidem.so.0")" || return 1
    [ "$reported" = "$newer_patch" ]
}
version_of() {
    python3 -c 'import ctypes, sys; f = ctypes.CDLL(sys.argv[1]).payidem_version; f.restype = ctypes.c_char_p; print(f().decode())' "$1"
}
check "a libpayidem $newer_patch builds from a copy of the workspace with the patch version bumped" build_newer_patch
check "pay.c built against $version pays with the newer compatible library $newer_patch" \
    pays "$tmp/pay-tarball-dyn" LD_LIBRARY_PATH="$compat/lib"
# Incompatible pairs, from the program's side: pay.c built against a copy of
# the header that says 0.(MINOR+1).0 (the library is older) or 0.(MINOR-1).9
# (a 0.x library of another minor version).
refused_with() {
    local claims=$1 hdr="$tmp/header-$1" out
    mkdir -p "$hdr"
    IFS=. read -r major minor patch <<< "$claims"
    sed -e "s/^#define PAYIDEM_VERSION_MAJOR .*/#define PAYIDEM_VERSION_MAJOR $major/" \
        -e "s/^#define PAYIDEM_VERSION_MINOR .*/#define PAYIDEM_VERSION_MINOR $minor/" \
        -e "s/^#define PAYIDEM_VERSION_PATCH .*/#define PAYIDEM_VERSION_PATCH $patch/" \
        -e "s/^#define PAYIDEM_VERSION \".*\"/#define PAYIDEM_VERSION \"$claims\"/" \
        "$tree/include/payidem.h" > "$hdr/payidem.h"
    grep -qx "#define PAYIDEM_VERSION \"$claims\"" "$hdr/payidem.h" || return 1
    cc "${cflags[@]}" -I"$hdr" "$tree/examples/c/pay.c" -L"$tree/lib" -lpayidem -o "$hdr/pay" || return 1
    if out="$(LD_LIBRARY_PATH="$tree/lib" "$hdr/pay" "$url" "$hdr/journal.sqlite3" 2>&1)"; then
        echo "accepted: $out"; return 1
    fi
    echo "$out"
    grep -qx "libpayidem $version is not compatible with the header $claims this program was built with .*versioning.md)" <<< "$out" &&
        test ! -e "$hdr/journal.sqlite3"
}
IFS=. read -r v_major v_minor _ <<< "$version"
check "pay.c built for $v_major.$((v_minor + 1)).0 refuses libpayidem $version, naming both versions" \
    refused_with "$v_major.$((v_minor + 1)).0"
if [ "$v_major" = 0 ] && [ "$v_minor" -gt 0 ]; then
    check "pay.c built for 0.$((v_minor - 1)).9 refuses libpayidem $version (another 0.x minor)" \
        refused_with "0.$((v_minor - 1)).9"
fi
rm -rf "$compat"

# --- ffi/README.md, the ```sh blocks it says this script runs, as written -------
# (from a checkout: make lib, make install; the others run in scripts/docs/run-blocks.py)
readme_dir="$tmp/readme"
mkdir -p "$readme_dir/home"
cp "$tarball" "$readme_dir/"
python3 - "$root/ffi/README.md" > "$readme_dir/commands.sh" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
blocks = re.findall(r"^```sh [^\n]*scripts/dist/test-c\.sh[^\n]*\n(.*?)^```", text, re.S | re.M)
if not blocks:
    sys.exit("ffi/README.md has no ```sh block that names scripts/dist/test-c.sh")
print("set -eux")
print("\n".join(blocks))
EOF
check "ffi/README.md's commands run as written (make lib, make install to \$HOME/.local, pkg-config)" \
    env -C "$readme_dir" HOME="$readme_dir/home" PAYIDEM_REPO="$root" PAYIDEM_URL="$url" \
    RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" \
    XDG_CACHE_HOME="${XDG_CACHE_HOME:-$HOME/.cache}" \
    XDG_STATE_HOME="$readme_dir/state" bash "$readme_dir/commands.sh"

echo "$passed passed, $failed failed"
test "$failed" -eq 0
