# Sourced by the scripts/dist tests (also inside the arm64 root): the
# ok/FAIL bookkeeping and the checks of a journal that pay.c wrote.
#
# check WHAT COMMAND...: runs COMMAND, its output into $tmp/check.out, and
# prints `ok: WHAT` or `FAIL: WHAT` with the output's last lines (WHAT
# prefixed by $check_label when set); $passed and $failed count them.
passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok: ${check_label:-}$*"; }
fail() { failed=$((failed + 1)); echo "FAIL: ${check_label:-}$*"; }
check() { local what=$1; shift; if "$@" >"$tmp/check.out" 2>&1; then pass "$what"; else fail "$what"; sed 's/^/  | /' "$tmp/check.out" | tail -20; fi; }

# lists_the_payment PAYIDEM JOURNAL: `journal list --json` shows the one
# payment examples/c/pay.c makes, succeeded at the first attempt.
lists_the_payment() {
    local out
    out="$("$1" journal list --json --journal "$2")" || { echo "$out"; return 1; }
    echo "$out"
    python3 -c '
import json, sys
doc = json.load(sys.stdin)
ops = [(o["order_id"], o["idempotency_key"], o["state"], o["settled"], o["attempts"]) for o in doc["operations"]]
assert doc["journal"] == sys.argv[1], doc["journal"]
assert ops == [("example-1", "create-example-1", "succeeded", True, 1)], ops
' "$2" <<< "$out"
}
# checks_sound PAYIDEM JOURNAL: `journal check --json` finds it sound, with one operation.
checks_sound() {
    local out
    out="$("$1" journal check --json --journal "$2")" || { echo "$out"; return 1; }
    echo "$out"
    python3 -c '
import json, sys
doc = json.load(sys.stdin)
assert doc["ok"] is True and doc["problems"] == [] and doc["operations"] == 1, doc
' <<< "$out"
}
