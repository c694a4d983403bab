#!/bin/sh
# Checks the error messages a test run recorded (PAYIDEM_ERROR_TEXT_LOG, see
# core/src/error/text.rs): fails when the log is missing or holds fewer than
# MIN messages (the suites did not record), or when any message breaks a rule
# (a line not starting with "ok"), listing those messages.
# Usage: check-error-texts.sh LOG [MIN]
set -eu
log=$1
min=${2:-100}
if [ ! -f "$log" ]; then
    echo "check-error-texts: no log $log: the test suites recorded no error message" >&2
    exit 1
fi
total=$(wc -l <"$log")
distinct=$(cut -f2- "$log" | sort -u | wc -l)
bad=$(grep -v '^ok	' "$log" | sort -u || true)
if [ -n "$bad" ]; then
    echo "check-error-texts: error messages that break a rule (rule, then code: message):" >&2
    printf '%s\n' "$bad" >&2
    exit 1
fi
if [ "$total" -lt "$min" ]; then
    echo "check-error-texts: only $total error messages recorded (at least $min expected)" >&2
    exit 1
fi
echo "check-error-texts: $total error messages ($distinct distinct) checked, none breaks a rule"
