#!/usr/bin/env bash
# Runs `make test`'s suites in two lanes at once, so that the suites that wait
# on emulators, cross builds or servers overlap the ones that keep both cores
# busy. Each lane runs its make targets in order and stops at its first
# failure; the other lane runs on. Lane 2's lines are printed as they come,
# prefixed with "[2] ". At the end, one line per suite: lane, start, duration
# and result, then, for each suite that failed, the lines of its output that
# say why (a CI log is often read from its tail, and the other lane's lines
# would have buried them); the exit code is non-zero when any suite failed.
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
        "${make_cmd[@]}" "$target" < /dev/null 2>&1 | tee "$results/$target.log"
        status=${PIPESTATUS[0]}
        printf '%s %d %d %s %s\n' "$name" $((start - begin)) $((SECONDS - start)) \
            "$([ $status -eq 0 ] && echo ok || echo "FAILED($status)")" "$target" >> "$results/$name"
        [ $status -eq 0 ] || return $status
    done
}

# Both lanes run in the background; a stop ends both (scripts/stop-tree.sh).
# shellcheck source=scripts/stop-tree.sh
. scripts/stop-tree.sh
stop_tree_on_signal test-lanes

# shellcheck disable=SC2086 # the target lists are words
{ lane 2 $lane2 2>&1 | sed -u 's/^/[2] /'; exit "${PIPESTATUS[0]}"; } &
lane2_pid=$!
# shellcheck disable=SC2086
lane 1 $lane1 &
lane1_pid=$!
wait "$lane1_pid"
status1=$?
wait "$lane2_pid"
status2=$?

echo
echo "test-lanes: suite durations (lane, start after, took, result, suite)"
cat "$results"/1 "$results"/2 2>/dev/null | sort -k2,2n | while read -r name at took result target; do
    printf '  lane %s  +%5d s  %5d s  %-10s %s\n' "$name" "$at" "$took" "$result" "$target"
done
# The failures' own words: the last lines that name a failure or an error,
# then the suite's last lines, cut to fit a CI log's tail.
cat "$results"/1 "$results"/2 2>/dev/null | while read -r _ _ _ result target; do
    [ "$result" = ok ] && continue
    log="$results/$target.log"
    echo "test-lanes: $target $result; of its $(wc -l < "$log") lines, those that say why, then the last:"
    grep -a -v -E '^(\[2\] )?[[:space:]]*(PASS|ok)\b' "$log" \
        | grep -a -i -E '^[[:alnum:]_.-]+\.(sh|py): |fail|error|panick|differ|not ok|assert|traceback|timed? ?out|refused|no such|not found|expected' \
        | tail -n 8 | cut -c1-200 | sed 's/^/  ! /'
    tail -n 4 "$log" | cut -c1-200 | sed 's/^/  | /'
done
printf 'test-lanes: %d s in all\n' $((SECONDS - begin))
[ $status1 -eq 0 ] && [ $status2 -eq 0 ]
