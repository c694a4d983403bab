#!/usr/bin/env bash
# The Go module's prebuilt libraries: bindings/go/lib/GOOS_GOARCH/libpayidem.a
# and the header copy bindings/go/include/payidem.h, so that `go get` users
# need nothing from this repository.
#
#   scripts/dist/go-lib.sh           rebuild what is stale (scripts/dist/build-c.sh
#                                    --arch ARCH), copy it into bindings/go and
#                                    write its manifest
#   scripts/dist/go-lib.sh --check   only verify; exit 1 naming the first
#                                    changed, added or removed file
#
# Each platform's manifest, bindings/go/lib/GOOS_GOARCH/SOURCES, lists the
# sha256 of every file the library is built from (the roots below, tests and
# benches excluded), then of the header copy and of the library itself. Lines
# are "SHA256HEX  PATH" with PATH relative to the repository root, sources in
# byte order (LC_ALL=C), then bindings/go/include/payidem.h, then the
# library; lines starting with # are comments. bindings/go's
# TestCommittedLibraryMatchesSources computes the same list.
#
# linux_amd64 is always built. linux_arm64 is built only when the Rust target
# aarch64-unknown-linux-gnu is installed; otherwise the committed library is
# kept as it is (and --check still reports it when it is stale).
# windows_amd64 is built by scripts/dist/build-windows.sh (MinGW-w64): its
# libpayidem.a holds one object whose only global symbols are payidem_* and
# the import stubs of the system DLLs that object calls.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
module="bindings/go"
check=0
case "${1:-}" in
    --check) check=1 ;;
    "") ;;
    *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "usage: $0 [--check]" >&2; exit 2; }
cd "$root"
export LC_ALL=C

# The files and directories libpayidem.a is built from.
source_roots=(Cargo.toml Cargo.lock core/Cargo.toml core/src ffi/Cargo.toml ffi/build.rs ffi/src
    ffi/capi/Cargo.toml ffi/capi/cbindgen.toml ffi/capi/src include/payidem.h)

# Platforms: GOOS_GOARCH, build-c.sh arch, Rust target, readelf machine.
platforms=(linux_amd64 linux_arm64 windows_amd64)
arch_of() { case "$1" in linux_amd64) echo x86_64 ;; linux_arm64) echo aarch64 ;; windows_amd64) echo windows-x86_64 ;; esac; }
machine_of() { case "$1" in linux_amd64) echo X86-64 ;; linux_arm64) echo AArch64 ;; esac; }
nm_of() {
    case "$1" in
        linux_arm64) command -v aarch64-linux-gnu-nm >/dev/null 2>&1 && { echo aarch64-linux-gnu-nm; return; } ;;
        windows_amd64) echo x86_64-w64-mingw32-nm; return ;;
    esac
    echo nm
}
# The script that builds PLATFORM's library into target/dist-stage/ARCH.
builder_of() {
    case "$1" in
        windows_amd64) echo "scripts/dist/build-windows.sh" ;;
        *) echo "scripts/dist/build-c.sh --arch $(arch_of "$1")" ;;
    esac
}

sha() { sha256sum < "$1" | cut -c1-64; }

# Every source file, one path a line, byte order.
source_files() {
    local r
    for r in "${source_roots[@]}"; do
        if [ -d "$r" ]; then
            find "$r" -type f -not -path '*/tests/*' -not -path '*/benches/*'
        elif [ -f "$r" ]; then
            echo "$r"
        fi
    done | sort
}

# The manifest lines of the source files as they are now.
source_entries() {
    # sha256sum prints "SHA256HEX  PATH" (paths here hold no backslash or newline).
    source_files | xargs -r -d '\n' sha256sum --
}

# The manifest lines PLATFORM's files have now (no comments).
current_entries() {
    local plat=$1 f
    source_entries
    for f in "$module/include/payidem.h" "$module/lib/$plat/libpayidem.a"; do
        [ -f "$f" ] && printf '%s  %s\n' "$(sha "$f")" "$f"
    done
    return 0
}

# The first difference between PLATFORM's manifest and its files, as
# "changed: PATH", "added: PATH" or "removed: PATH"; nothing when they agree.
first_difference() {
    local plat=$1
    local manifest="$module/lib/$plat/SOURCES" sum path
    if [ ! -f "$manifest" ]; then
        echo "removed: $manifest"
        return
    fi
    declare -A recorded=() now=()
    local -a order=()
    while read -r sum path; do
        case "$sum" in ''|'#'*) continue ;; esac
        recorded[$path]=$sum
        order+=("$path")
    done < "$manifest"
    local current
    current="$(current_entries "$plat")"
    while read -r sum path; do
        [ -n "$sum" ] || continue
        now[$path]=$sum
        if [ -z "${recorded[$path]+x}" ]; then
            echo "added: $path"
            return
        elif [ "${recorded[$path]}" != "$sum" ]; then
            echo "changed: $path"
            return
        fi
    done <<< "$current"
    for path in "${order[@]}"; do
        if [ -z "${now[$path]+x}" ]; then
            echo "removed: $path"
            return
        fi
    done
    if ! cmp -s include/payidem.h "$module/include/payidem.h"; then
        echo "changed: $module/include/payidem.h (differs from include/payidem.h)"
    fi
}

write_manifest() {
    local plat=$1 entries=$2
    {
        echo "# libpayidem.a for $plat, built by $(builder_of "$plat") and"
        echo "# copied by scripts/dist/go-lib.sh. SHA256  PATH (from the repository root) of every"
        echo "# file it is built from, then of the header copy and of the library."
        echo "# Verify: scripts/dist/go-lib.sh --check; refresh: make dist."
        printf '%s\n' "$entries"
    } > "$module/lib/$plat/SOURCES"
}

# Fails unless LIB is a PLATFORM object whose only global definitions are payidem_*.
verify_library() {
    local plat=$1 lib=$2 machine bad
    if [ "$plat" = windows_amd64 ]; then
        x86_64-w64-mingw32-objdump -f "$lib" | grep 'file format pe-x86-64' >/dev/null ||
            { echo "go-lib.sh: $lib is not a pe-x86-64 archive" >&2; return 1; }
        bad="$(x86_64-w64-mingw32-nm -A -g --defined-only "$lib" |
            awk -F'[: ]+' '$2 == "payidem.o" && $NF !~ /^payidem_/ { print $NF }' | head -n 3)"
        if [ -n "$bad" ]; then
            echo "go-lib.sh: $lib's object defines global symbols other than payidem_*: $bad" >&2
            return 1
        fi
        return 0
    fi
    machine="$(readelf -h "$lib" | sed -n 's/^ *Machine: *//p' | sort -u)"
    case "$machine" in
        *"$(machine_of "$plat")"*) ;;
        *) echo "go-lib.sh: $lib is for '$machine', not $plat" >&2; return 1 ;;
    esac
    bad="$("$(nm_of "$plat")" -g --defined-only "$lib" | awk 'NF == 3 && $3 !~ /^payidem_/ { print $3 }' | head -n 3)"
    if [ -n "$bad" ]; then
        echo "go-lib.sh: $lib defines global symbols other than payidem_*: $bad" >&2
        return 1
    fi
}

aarch64_installed() {
    if command -v rustup >/dev/null 2>&1; then
        local installed
        installed="$(rustup target list --installed 2>/dev/null)" || return 1
        grep -qx aarch64-unknown-linux-gnu <<< "$installed"
    else
        [ -d "$(rustc --print sysroot)/lib/rustlib/aarch64-unknown-linux-gnu" ]
    fi
}

if [ "$check" = 1 ]; then
    status=0
    for plat in "${platforms[@]}"; do
        # linux_amd64 must be there; other platforms are checked when committed.
        [ "$plat" = linux_amd64 ] || [ -d "$module/lib/$plat" ] || continue
        diff="$(first_difference "$plat")"
        if [ -n "$diff" ]; then
            echo "go-lib.sh: $module/lib/$plat/libpayidem.a is stale or its manifest is wrong: $diff; run make dist" >&2
            status=1
        else
            echo "go-lib.sh: $module/lib/$plat/libpayidem.a matches its sources"
        fi
    done
    exit $status
fi

status=0
for plat in "${platforms[@]}"; do
    arch="$(arch_of "$plat")"
    if [ "$plat" = linux_arm64 ] && ! aarch64_installed; then
        if [ -f "$module/lib/$plat/libpayidem.a" ]; then
            diff="$(first_difference "$plat")"
            echo "go-lib.sh: Rust target aarch64-unknown-linux-gnu not installed: keeping the committed $module/lib/$plat/libpayidem.a${diff:+ (stale: $diff)}" >&2
        else
            echo "go-lib.sh: Rust target aarch64-unknown-linux-gnu not installed: no $plat library" >&2
        fi
        continue
    fi
    diff="$(first_difference "$plat")"
    if [ -z "$diff" ]; then
        echo "go-lib.sh: $module/lib/$plat/libpayidem.a is up to date"
        continue
    fi
    echo "go-lib.sh: rebuilding $module/lib/$plat/libpayidem.a ($diff)"
    # Sources edited while the build runs would make the manifest lie: the
    # list is taken before and after, and the build repeated until they agree.
    built=0
    for try in 1 2 3; do
        before="$(source_entries)"
        # shellcheck disable=SC2046 # the builder and its arguments
        "$root"/$(builder_of "$plat")
        after="$(source_entries)"
        if [ "$before" = "$after" ]; then
            built=1
            break
        fi
        echo "go-lib.sh: sources changed during build $try of $plat; building again" >&2
    done
    if [ "$built" != 1 ]; then
        echo "go-lib.sh: sources kept changing while building $plat; not updated" >&2
        status=1
        continue
    fi
    stage="target/dist-stage/$arch"
    verify_library "$plat" "$stage/libpayidem.a"
    mkdir -p "$module/lib/$plat" "$module/include"
    cp "$stage/libpayidem.a" "$module/lib/$plat/libpayidem.a.tmp"
    mv "$module/lib/$plat/libpayidem.a.tmp" "$module/lib/$plat/libpayidem.a"
    cp include/payidem.h "$module/include/payidem.h"
    # The sources as they were built, then the copies.
    write_manifest "$plat" "$after
$(sha "$module/include/payidem.h")  $module/include/payidem.h
$(sha "$module/lib/$plat/libpayidem.a")  $module/lib/$plat/libpayidem.a"
    diff="$(first_difference "$plat")"
    if [ -n "$diff" ]; then
        echo "go-lib.sh: $plat manifest does not verify after writing it: $diff" >&2
        status=1
        continue
    fi
    echo "go-lib.sh: $module/lib/$plat/libpayidem.a updated ($(stat -c %s "$module/lib/$plat/libpayidem.a") bytes)"
done
exit $status
