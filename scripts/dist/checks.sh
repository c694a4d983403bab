# Sourced by the scripts/dist/test-*.sh suites: counts and prints checks.
# Expects $tmp, a scratch directory. `check WHAT CMD...` runs CMD, prints
# "ok: WHAT" or "FAIL: WHAT" with the tail of its output; the caller ends
# with `[ "$failed" -eq 0 ]`.
passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() { local what=$1; shift; if "$@" >"$tmp/check.out" 2>&1; then pass "$what"; else fail "$what"; sed 's/^/  | /' "$tmp/check.out" | tail -20; fi; }
