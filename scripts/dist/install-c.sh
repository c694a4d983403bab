#!/usr/bin/env bash
# Installs (or uninstalls) the C library that scripts/dist/build-c.sh built:
# the one layout behind `make install`, the tarball and the Debian packages.
# It never compiles.
#
#   install-c.sh [--uninstall] [--relocatable] [--only runtime|dev] [--cli CLI_STAGE] \
#                [--docdir DOCDIR] STAGE DESTDIR PREFIX LIBDIR
#
# STAGE   target/dist-stage/ARCH (libpayidem.so, libpayidem.a)
# DESTDIR staging root prepended to every path ("" for none)
# PREFIX  e.g. /usr/local; LIBDIR e.g. /usr/local/lib or /usr/lib/x86_64-linux-gnu
#         (absolute, inside PREFIX)
# --relocatable  payidem.pc and the CMake files find the prefix from their
#                own location (for a tarball unpacked anywhere)
# --only runtime the shared library and its SONAME link;
# --only dev     the rest (header, .so link, .a, pkg-config files payidem and
#                payidem-static, CMake package)
# --cli DIR      also the `payidem` command that scripts/dist/build-cli.sh
#                staged in DIR: PREFIX/bin/payidem, its manual page and its
#                bash, zsh and fish completions under PREFIX/share
# --docdir DIR   also (unless --only runtime) the documentation: the C
#                README as README.md, the docs/ pages it and the command's
#                manual pages point to, examples/c/ (scripts/dist/docs.sh);
#                absolute, inside PREFIX
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mode=install
relocatable=0
only=all
cli=
docdir=
while [ $# -gt 0 ]; do
    case "$1" in
        --uninstall) mode=uninstall; shift ;;
        --cli) cli=$2; shift 2 ;;
        --docdir) docdir=$2; shift 2 ;;
        --relocatable) relocatable=1; shift ;;
        --only) only=$2; shift 2 ;;
        --) shift; break ;;
        -*) echo "install-c.sh: unknown option $1" >&2; exit 2 ;;
        *) break ;;
    esac
done
if [ $# -ne 4 ]; then
    echo "usage: $0 [--uninstall] [--relocatable] [--only runtime|dev] [--cli CLI_STAGE] [--docdir DOCDIR] STAGE DESTDIR PREFIX LIBDIR" >&2
    exit 2
fi
stage=$1 destdir=$2 prefix=$3 libdir=$4
case "$prefix$libdir" in /*) ;; *) echo "install-c.sh: PREFIX and LIBDIR must be absolute" >&2; exit 2 ;; esac
case "$libdir/" in "$prefix"/*) ;; *) echo "install-c.sh: LIBDIR ($libdir) must be inside PREFIX ($prefix)" >&2; exit 2 ;; esac
case "${docdir:-$prefix}/" in "$prefix"/*) ;; *) echo "install-c.sh: DOCDIR ($docdir) must be inside PREFIX ($prefix)" >&2; exit 2 ;; esac
# The documentation's pages (c_doc_files, ship_c_docs).
. "$root/scripts/dist/docs.sh"
doc_files=()
if [ -n "$docdir" ] && [ "$only" != runtime ]; then
    while IFS= read -r f; do doc_files+=("$docdir/$f"); done < <(c_doc_files)
fi

version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)"
abi=0
# The system libraries a program linking libpayidem.a statically needs (Rust
# std's native-static-libs for Linux, glibc 2.17 names).
static_libs="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"
includedir="$prefix/include"
D="$destdir"

runtime_files=("$libdir/libpayidem.so.$version" "$libdir/libpayidem.so.$abi")
dev_files=("$libdir/libpayidem.so" "$libdir/libpayidem.a" "$includedir/payidem.h"
    "$libdir/pkgconfig/payidem.pc" "$libdir/pkgconfig/payidem-static.pc"
    "$libdir/cmake/payidem/payidemConfig.cmake"
    "$libdir/cmake/payidem/payidemConfigVersion.cmake")
# The command: each file's path under the CLI stage and under PREFIX (its
# manual pages: payidem.1 and one per command, as the stage holds them).
cli_files=(bin/payidem share/man/man1/payidem.1 share/bash-completion/completions/payidem
    share/zsh/site-functions/_payidem share/fish/vendor_completions.d/payidem.fish)
if [ -n "$cli" ] && [ -d "$cli/share/man/man1" ]; then
    while IFS= read -r page; do
        cli_files+=("share/man/man1/$page")
    done < <(cd "$cli/share/man/man1" && find . -maxdepth 1 -name 'payidem-*.1' -printf '%f\n' | sort)
fi

if [ "$mode" = uninstall ]; then
    files=()
    [ "$only" != dev ] && files+=("${runtime_files[@]}")
    [ "$only" != runtime ] && files+=("${dev_files[@]}" "${doc_files[@]}")
    if [ -n "$cli" ]; then
        for f in "${cli_files[@]}"; do files+=("$prefix/$f"); done
    fi
    for f in "${files[@]}"; do
        if [ -e "$D$f" ] || [ -L "$D$f" ]; then rm -f "$D$f" && echo "removed $D$f"; fi
    done
    rmdir "$D$libdir/cmake/payidem" 2>/dev/null || true
    if [ "${#doc_files[@]}" -gt 0 ]; then
        rmdir "$D$docdir/examples/c" "$D$docdir/examples" "$D$docdir/docs" 2>/dev/null || true
        [ "$docdir" = "$prefix" ] || rmdir "$D$docdir" 2>/dev/null || true
    fi
    exit 0
fi

for f in libpayidem.so libpayidem.a; do
    if [ ! -f "$stage/$f" ]; then
        echo "install-c.sh: $stage/$f is missing: build it first with 'make lib' (or 'make dist')" >&2
        exit 1
    fi
done
if [ -n "$cli" ]; then
    for f in "${cli_files[@]}"; do
        if [ ! -f "$cli/$f" ]; then
            echo "install-c.sh: $cli/$f is missing: build it first with 'make lib'" >&2
            exit 1
        fi
    done
fi

rel() { realpath -m --relative-to="$1" "$2"; }
if [ "$relocatable" = 1 ]; then
    pc_prefix="\${pcfiledir}/$(rel "$libdir/pkgconfig" "$prefix")"
    pc_libdir="\${prefix}/$(rel "$prefix" "$libdir")"
else
    pc_prefix="$prefix"
    pc_libdir="$libdir"
fi

if [ "$only" != dev ]; then
    install -d "$D$libdir"
    install -m 0644 "$stage/libpayidem.so" "$D$libdir/libpayidem.so.$version"
    ln -sfn "libpayidem.so.$version" "$D$libdir/libpayidem.so.$abi"
fi
if [ "$only" != runtime ]; then
    install -d "$D$libdir/pkgconfig" "$D$libdir/cmake/payidem" "$D$includedir"
    ln -sfn "libpayidem.so.$abi" "$D$libdir/libpayidem.so"
    install -m 0644 "$stage/libpayidem.a" "$D$libdir/libpayidem.a"
    install -m 0644 "$root/include/payidem.h" "$D$includedir/payidem.h"
    for pc in payidem payidem-static; do
        sed -e "s|@PREFIX@|$pc_prefix|" -e "s|@LIBDIR_ABS@|$pc_libdir|" \
            -e "s|@VERSION@|$version|" -e "s|@STATIC_LIBS@|$static_libs|" \
            "$root/ffi/$pc.pc.in" > "$D$libdir/pkgconfig/$pc.pc"
    done
    cmake_libs="$(printf '%s' "$static_libs" | sed 's/-l//g; s/ /;/g')"
    sed -e "s|@PREFIX_FROM_CMAKEDIR@|$(rel "$libdir/cmake/payidem" "$prefix")|" \
        -e "s|@INCLUDEDIR@|$(rel "$prefix" "$includedir")|" \
        -e "s|@LIBDIR@|$(rel "$prefix" "$libdir")|" \
        -e "s|@ABI_VERSION@|$abi|g" -e "s|@STATIC_LIBS@|$cmake_libs|" \
        "$root/ffi/cmake/payidemConfig.cmake.in" > "$D$libdir/cmake/payidem/payidemConfig.cmake"
    IFS=. read -r major minor _ <<< "$version"
    sed -e "s|@VERSION@|$version|g" -e "s|@VERSION_MAJOR@|$major|" -e "s|@VERSION_MINOR@|$minor|" \
        "$root/ffi/cmake/payidemConfigVersion.cmake.in" > "$D$libdir/cmake/payidem/payidemConfigVersion.cmake"
    chmod 0644 "$D$libdir/pkgconfig/"payidem*.pc "$D$libdir/cmake/payidem/"*.cmake
    if [ -n "$docdir" ]; then
        install -d "$D$docdir"
        ship_c_docs "$D$docdir"
    fi
fi
if [ -n "$cli" ]; then
    for f in "${cli_files[@]}"; do
        mode_bits=0644
        [ "$f" = bin/payidem ] && mode_bits=0755
        install -d "$D$prefix/$(dirname "$f")"
        install -m "$mode_bits" "$cli/$f" "$D$prefix/$f"
    done
fi
