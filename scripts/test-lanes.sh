#!/usr/bin/env bash
# Runs `make test`'s suites in two lanes at once, so that the suites that wait
# on emulators, cross builds or servers overlap the ones that keep both cores
# busy. Each lane runs its make targets in order and stops at its first
# failure; the other lane runs on. Lane 2's lines are printed as they come,
# prefixed with "[2] ". At the end, one line per suite: lane, start, duration
# and result; the exit code is non-zero when any suite failed.
#
#   scripts/test-lanes.sh --deps "TARGET…" --lane1 "TARGET…" --lane2 "TARGET…"
#
# The --deps targets (the Debian packages every suite needs) run first, one
# after the other: two apt-get runs at once would fight over dpkg's lock.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
deps="" lane1="" lane2=""
while [ $# -gt 0 ]; do
    case "$1" in
        --deps) deps=$2; shift 2 ;;
        --lane1) lane1=$2; shift 2 ;;
        --lane2) lane2=$2; shift 2 ;;
        *) echo "usage: $0 --deps \"TARGET…\" --lane1 \"TARGET…\" --lane2 \"TARGET…\"" >&2; exit 2 ;;
    esac
done
make_cmd=("${MAKE:-make}" --no-print-directory)
results="$(mktemp -d)"
trap 'rm -rf "$results"' EXIT
begin=$SECONDS

for target in $deps; do
    "${make_cmd[@]}" "$target" || { echo "test-lanes: $target failed" >&2; exit 1; }
done

# Runs one lane's targets in order; writes "lane start seconds result target"
# per target into $results/<lane>.
lane() {
    local name=$1 target start status
    shift
    for target in "$@"; do
        start=$SECONDS
        "${make_cmd[@]}" "$target" < /dev/null
        status=$?
        printf '%s %d %d %s %s\n' "$name" $((start - begin)) $((SECONDS - start)) \
            "$([ $status -eq 0 ] && echo ok || echo "FAILED($status)")" "$target" >> "$results/$name"
        [ $status -eq 0 ] || return $status
    done
}

# shellcheck disable=SC2086 # the target lists are words
{ lane 2 $lane2 2>&1 | sed -u 's/^/[2] /'; exit "${PIPESTATUS[0]}"; } &
lane2_pid=$!
# shellcheck disable=SC2086
lane 1 $lane1
status1=$?
wait "$lane2_pid"
status2=$?

echo
echo "test-lanes: suite durations (lane, start after, took, result, suite)"
cat "$results"/1 "$results"/2 2>/dev/null | sort -k2,2n | while read -r name at took result target; do
    printf '  lane %s  +%5d s  %5d s  %-10s %s\n' "$name" "$at" "$took" "$result" "$target"
done
printf 'test-lanes: %d s in all\n' $((SECONDS - begin))
[ $status1 -eq 0 ] && [ $status2 -eq 0 ]
