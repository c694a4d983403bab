#!/bin/sh
# Checks the shared library's ABI surface: the SONAME is libpayidem.so.0,
# every exported (defined, dynamic) symbol is payidem_*, and every function
# declared in include/payidem.h is exported.
# Usage: check-symbols.sh path/to/libpayidem.so path/to/payidem.h
set -eu
lib=$1
header=$2
fail=0

soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
if [ "$soname" != "libpayidem.so.0" ]; then
    echo "SONAME is '$soname', expected libpayidem.so.0"
    fail=1
fi

exported=$(nm -D --defined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' | sort -u)
foreign=$(printf '%s\n' "$exported" | grep -v '^payidem_' || true)
if [ -n "$foreign" ]; then
    echo "symbols exported that are not payidem_*:"
    printf '%s\n' "$foreign" | head -20
    fail=1
fi

declared=$(grep -oE '\bpayidem_[a-z0-9_]+\(' "$header" | tr -d '(' | sort -u)
for f in $declared; do
    if ! printf '%s\n' "$exported" | grep -qx "$f"; then
        echo "declared in the header but not exported: $f"
        fail=1
    fi
done
for f in $(printf '%s\n' "$exported" | grep '^payidem_'); do
    if ! printf '%s\n' "$declared" | grep -qx "$f"; then
        echo "exported but not declared in the header: $f"
        fail=1
    fi
done

count=$(printf '%s\n' "$declared" | wc -l)
if [ "$fail" -ne 0 ]; then
    echo "0 passed, 1 failed"
    exit 1
fi
echo "symbols: $count payidem_* functions exported, nothing else; SONAME $soname"
