#!/usr/bin/env bash
# Runs CI as a brand-new machine would: a clean clone of HEAD in a new
# directory, empty cargo registry and git caches, empty Go module and build
# caches, pip's cache off, a fresh HOME and XDG_STATE_HOME, no standard input
# and SIGINT ignored, then `bash .ci/run` with CI=true. The toolchains a new
# machine of this kind has stay (rustup's Rust, Go, Python); so does
# cargo-deny when it is on PATH (a brand-new machine lacks it: uninstall it to
# have the run build it). What a run installs with apt stays installed; remove
# it by hand to try that step too.
#
#   scripts/ci-fresh.sh [--keep] [--warm] [--tail N] [DIR]
#
# DIR (default: a new directory under /tmp) holds the clone, the caches and
# ci.log, each line of which starts with the seconds since the start. At the
# end it prints the exit code, the elapsed time, and for each phase (a `+`
# line of .ci/run, a `## phase:` line of `make test`) its duration and last
# lines. --keep leaves DIR behind when the run passes (it is always kept when
# the run fails).
#
# --warm runs again in the DIR of an earlier run: a new clone at the same
# path, with that run's caches and HOME kept, as on a CI machine that keeps
# them between runs (the go command, for one, reuses a cgo package it built
# with an earlier run's pkg-config flags). Without --warm, a DIR that holds
# an earlier run is refused.
set -euo pipefail

keep=0
warm=0
tail_lines=4
dir=""
while [ $# -gt 0 ]; do
    case "$1" in
        --keep) keep=1 ;;
        --warm) warm=1 ;;
        --tail) tail_lines="$2"; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "ci-fresh: unknown option $1" >&2; exit 2 ;;
        *) dir="$1" ;;
    esac
    shift
done

repo="$(git -C "$(dirname "${BASH_SOURCE[0]}")/.." rev-parse --show-toplevel)"
head="$(git -C "$repo" rev-parse HEAD)"
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
    echo "ci-fresh: uncommitted changes are not part of the run (HEAD $head is)" >&2
fi
if [ -z "$dir" ]; then
    dir="$(mktemp -d /tmp/payidem-ci-fresh.XXXXXX)"
else
    mkdir -p "$dir"
fi
dir="$(cd "$dir" && pwd)"
if [ -e "$dir/main" ]; then
    if [ "$warm" -eq 0 ]; then
        echo "ci-fresh: $dir holds an earlier run; name another DIR, or pass --warm to reuse its caches" >&2
        exit 2
    fi
    chmod -R u+w "$dir/main" 2>/dev/null || true
    rm -rf "$dir/main"
    mv "$dir/ci.log" "$dir/ci.log.before" 2>/dev/null || true
elif [ "$warm" -eq 1 ]; then
    echo "ci-fresh: --warm needs the DIR of an earlier run" >&2
    exit 2
fi

# CI clones main into a folder with shared/ beside it; shared/ is never read
# by the project, so the clone stands alone.
git clone --quiet --no-hardlinks "$repo" "$dir/main"
git -C "$dir/main" checkout --quiet "$head"

real_home="$HOME"
rustup_home="${RUSTUP_HOME:-$real_home/.rustup}"
go_env_file="$(go env GOENV 2>/dev/null || true)"
mkdir -p "$dir/home" "$dir/state" "$dir/cargo" "$dir/go/mod" "$dir/go/cache" "$dir/go/path" "$dir/tmp"

log="$dir/ci.log"
echo "ci-fresh: HEAD $head in $dir/main, log $log"
start=$SECONDS
set +e
(
    cd "$dir/main"
    trap '' INT
    exec env \
        HOME="$dir/home" \
        XDG_STATE_HOME="$dir/state" \
        XDG_CACHE_HOME="$dir/home/.cache" \
        XDG_CONFIG_HOME="$dir/home/.config" \
        RUSTUP_HOME="$rustup_home" \
        CARGO_HOME="$dir/cargo" \
        GOMODCACHE="$dir/go/mod" \
        GOCACHE="$dir/go/cache" \
        GOPATH="$dir/go/path" \
        ${go_env_file:+GOENV="$go_env_file"} \
        PIP_NO_CACHE_DIR=1 \
        CI=true \
        setsid bash .ci/run
) </dev/null 2>&1 | while IFS= read -r line; do
    printf '%6d %s\n' $((SECONDS - start)) "$line"
done > "$log"
status=${PIPESTATUS[0]}
set -e
elapsed=$((SECONDS - start))

# Phases: where each starts, how long it ran, and its last lines.
awk -v total="$elapsed" -v n="$tail_lines" '
    function flush(end) {
        if (name == "") return
        printf "\n[%5d s, %4d s] %s\n", start, end - start, name
        first = (count > n) ? count - n + 1 : 1
        for (i = first; i <= count; i++) print "    " buf[i]
    }
    {
        t = $1; text = substr($0, 8)
        if (text ~ /^\+ / || text ~ /^## phase: /) {
            flush(t); name = text; start = t; count = 0
        } else if (text !~ /^= /) {
            buf[++count] = text
        }
    }
    END { flush(total) }
' "$log"

printf '\nci-fresh: .ci/run exited %d after %d min %d s (HEAD %s)\n' "$status" $((elapsed / 60)) $((elapsed % 60)) "$head"
if [ "$status" -eq 0 ] && [ "$keep" -eq 0 ]; then
    chmod -R u+w "$dir/go/mod" 2>/dev/null || true
    rm -rf "$dir"
else
    echo "ci-fresh: kept $dir"
fi
exit "$status"
