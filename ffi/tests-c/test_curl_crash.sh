#!/bin/sh
# examples/c/pay_curl.c (libcurl drives a payidem call) against payidem-mock:
#
# 1. through 504s: every create answers 504 after the platform committed;
#    the program queries the status and ends paid, once;
# 2. kill -9 and resume: every create's answer is dropped after commit and
#    every status query answers 503, so the program cannot finish; it is
#    killed with SIGKILL after its first attempt, the faults are turned off,
#    and `pay_curl resume` with the same on-disk journal completes the order
#    with its own key. The mock's oracle (/_mock/stats) must show exactly one
#    payment for the order, under the key create-ORDER.
#
# Deterministic: while the faults are on the program cannot end, so the kill
# always lands mid-call. Independent of how it is started: no tty (stdin is
# /dev/null), no signal but SIGKILL is sent (an ignored SIGINT or SIGTERM
# changes nothing), nothing depends on file permissions (root is fine).
#
# Environment: PAY_CURL (default target/c/pay_curl), PAYIDEM_MOCK (default
# target/release/payidem-mock). Needs curl(1) for the mock's control routes.
set -eu

PAY_CURL=${PAY_CURL:-target/c/pay_curl}
MOCK=${PAYIDEM_MOCK:-target/release/payidem-mock}
dir=$(mktemp -d "${TMPDIR:-/tmp}/payidem-curl-crash.XXXXXX")
passed=0
failed=0

# Each test runs in a subshell (a failure exits it); the processes it
# starts are stopped here by the ids they left in $dir/*.pid.
stop_all() {
    for f in "$dir"/*.pid; do
        [ -f "$f" ] || continue
        kill -KILL "$(cat "$f")" 2>/dev/null || true
        rm -f "$f"
    done
}

cleanup() {
    stop_all
    rm -rf "$dir"
}
trap cleanup EXIT

fail() {
    echo "  $*" >&2
    for f in "$dir"/*.out "$dir"/*.err; do
        [ -s "$f" ] && { echo "  --- $f" >&2; sed 's/^/  | /' "$f" >&2; }
    done
    exit 1
}

# Waits up to $2 tenths of a second for file $1 to contain $3.
wait_for() {
    i=0
    while ! grep -q -- "$3" "$1" 2>/dev/null; do
        i=$((i + 1))
        [ "$i" -le "$2" ] || return 1
        sleep 0.1
    done
}

# Starts the mock with the given flags; sets url.
start_mock() {
    "$MOCK" --port 0 --control --workers 4 --seed 7 "$@" \
        >"$dir/mock.out" 2>"$dir/mock.err" </dev/null &
    echo $! >"$dir/mock.pid"
    wait_for "$dir/mock.out" 100 listening || fail "the mock did not start"
    port=$(sed -n '1s/.*://p' "$dir/mock.out")
    url="http://127.0.0.1:$port"
}

stats() {
    curl -sS --max-time 10 "$url/_mock/stats" </dev/null
}

# The oracle's entry for one order: exactly one payment, one key, no
# duplicate.
expect_paid_once() {
    order=$1
    s=$(stats)
    echo "$s" >"$dir/stats.out"
    case "$s" in
    *"\"$order\":{\"duplicate_keys\":[],\"idempotency_keys\":[\"create-$order\"],\"payments_created\":1}"*) ;;
    *) fail "the oracle does not show exactly one payment for $order under create-$order" ;;
    esac
    case "$s" in
    *'"payments":1,'*) ;;
    *) fail "the mock holds another number of payments than 1" ;;
    esac
}

run() {
    name=$1
    shift
    if ( "$@" ); then
        passed=$((passed + 1))
        echo "ok   $name"
    else
        failed=$((failed + 1))
        echo "FAIL $name"
    fi
    stop_all
    rm -f "$dir"/*
}

through_504s() {
    start_mock --fault timeout_504_after_commit=1
    "$PAY_CURL" "$url" "$dir/journal.sqlite3" ord-504-1 1250 \
        >"$dir/pay.out" 2>"$dir/pay.err" </dev/null || fail "pay_curl did not end paid"
    grep -q '^paid ord-504-1: HTTP 200 key=create-ord-504-1 ' "$dir/pay.out" || fail "no paid line"
    grep -q 'HTTP 504' "$dir/pay.err" || fail "the program never saw a 504"
    expect_paid_once ord-504-1
    case "$(cat "$dir/stats.out")" in
    *'"504":'*) ;;
    *) fail "the mock answered no 504" ;;
    esac
}

kill_and_resume() {
    order=ord-crash-1
    journal="$dir/journal.sqlite3"
    start_mock --fault drop_after_commit=1 --fault status_error_503=1
    "$PAY_CURL" "$url" "$journal" "$order" 4200 \
        >"$dir/pay.out" 2>"$dir/pay.err" </dev/null &
    pay_pid=$!
    echo "$pay_pid" >"$dir/pay.pid"
    wait_for "$dir/pay.err" 300 "sent attempt 1 " || fail "no first attempt"
    # The answer was dropped after the platform committed; the program is
    # now asking the status (503s) or waiting: kill it there.
    kill -KILL "$pay_pid"
    status=0
    { wait "$pay_pid"; } 2>/dev/null || status=$?
    rm -f "$dir/pay.pid"
    [ "$status" -eq 137 ] || fail "pay_curl ended by itself (status $status) instead of being killed"
    if grep -q '^paid' "$dir/pay.out"; then fail "paid while every answer was lost"; fi
    # The platform took the payment; the program never learnt it.
    expect_paid_once "$order"

    curl -sS --max-time 10 -X POST -H 'Content-Type: application/json' --data '{}' \
        "$url/_mock/faults" </dev/null >/dev/null || fail "cannot turn the faults off"
    "$PAY_CURL" "$url" "$journal" resume \
        >"$dir/resume.out" 2>"$dir/resume.err" </dev/null || fail "resume did not end paid"
    grep -q '^1 order(s) to resume' "$dir/resume.err" || fail "the journal did not list the order as unknown"
    grep -q "^paid $order: HTTP 200 key=create-$order " "$dir/resume.out" || fail "no paid line after resume"
    expect_paid_once "$order"

    # Nothing left to resume; paying the order again answers from the
    # journal without a request.
    before=$(stats | sed -n 's/.*"total":\([0-9]*\).*/\1/p')
    "$PAY_CURL" "$url" "$journal" resume >"$dir/again.out" 2>"$dir/again.err" </dev/null ||
        fail "an empty resume failed"
    grep -q '^0 order(s) to resume' "$dir/again.err" || fail "the order is still listed"
    "$PAY_CURL" "$url" "$journal" "$order" 4200 >"$dir/again.out" 2>"$dir/again.err" </dev/null ||
        fail "paying a settled order again failed"
    grep -q "^paid $order: HTTP 200 key=create-$order " "$dir/again.out" || fail "no paid line from the journal"
    after=$(stats | sed -n 's/.*"total":\([0-9]*\).*/\1/p')
    # Only the stats request itself came in between.
    [ "$after" -eq $((before + 1)) ] || fail "a settled order was sent again ($before -> $after requests)"
    expect_paid_once "$order"
}

[ -x "$PAY_CURL" ] || { echo "no $PAY_CURL (build examples/c/pay_curl.c)" >&2; exit 1; }
[ -x "$MOCK" ] || { echo "no $MOCK" >&2; exit 1; }

run "pay_curl through 504s after commit ends paid once" through_504s
run "pay_curl killed with SIGKILL mid-call, resumed from its journal, paid once" kill_and_resume

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
