#!/usr/bin/env bash
# The block runner's own test: a document of blocks that must fail (an
# unmarked block, a reason too short, a wrong exit status, a temporary file
# left behind, an unknown or unused prelude, a quote or a sample that does
# not match) and blocks that must pass (an expected error exit, a block that
# cleans up, a prelude before or around a block, a quote, samples with `…`,
# samples whose values stand for any number, JSON samples with `…`, a
# command run inside its prelude from the checkout, a prelude in another
# language run first, SQL against a server of its own, stopping at an error,
# a block that needs PostgreSQL, a Java block left to make test-java),
# each through scripts/docs/run-blocks.py --only FILE:LINE.
# Needs what the runner needs for sh, C and SQL blocks (PAYIDEM_DOCS_BIN and
# PAYIDEM_DOCS_LIB, see there; PostgreSQL).
# Ends with "N passed, N failed"; exits 1 when anything failed.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
doc="$work/fixture.md"
cat > "$doc" <<'MD'
```sh
echo unmarked
```

```text no-run: short
x
```

```sh run
exit 3
```

```sh run
touch "$TMPDIR/left-behind"
```

```sh run exit=2
exit 2
```

```sh run
f="$(mktemp)"; rm -f "$f"; test -n "$PAYIDEM_BASE_URL"; command -v payidem-mock
```

<!-- prelude greet sh
greeting="hello from the prelude"
-->

<!-- prelude wrapped sh
wrapped() {
    {block}
}
wrapped | tr a-z A-Z
-->

```sh run prelude=greet
echo "$greeting"
```

```sh run prelude=wrapped
echo inside
```

```sh run prelude=nosuch
echo never
```

```text check quote=Makefile
CARGO ?= cargo
```

```text check quote=Makefile
a line that is in no Makefile
```

<!-- prelude lines sh
printf 'first 42\nsecond\nthird\nlast 7 s\n'
-->

```text check prelude=lines
first …
…
last … s
```

```text check prelude=lines
$ echo from-the-command; exit 3
first 42
…
from-the-command
```

```text check prelude=lines exit=3
$ echo from-the-command; exit 3
first 42
…
from-the-command
```

```text check prelude=lines
first 42
second
```

<!-- prelude unused sh
true
-->

<!-- prelude metrics sh
printf '# HELP x_total Things.\nx_total{a="1",le="0.5"} 42\nx_sum 0.0183\n'
-->

```text check prelude=metrics values=any
# HELP x_total Things.
x_total{a="1",le="0.5"} 7
x_sum 1.5
```

```text check prelude=metrics
# HELP x_total Things.
x_total{a="1",le="0.5"} 7
x_sum 0.0183
```

```text check prelude=metrics values=any
# HELP x_total Things.
x_total{a="1",le="0.25"} 42
x_sum 0.0183
```

<!-- prelude object sh
echo '{"a": [1, 2, 3, 4], "b": "sha 9f2c00", "n": 0.5, "ok": true}'
-->

```json check prelude=object values=any
{"a": [1, …, 4], "b": "sha 9f2c…", "n": 7, "ok": true}
```

```json check prelude=object
{"a": [1, …, 4], "b": "sha 9f2c…", "n": 7, "ok": true}
```

```json check prelude=object values=any
{"a": [1, …, 4], "b": "…", "n": 7, "ok": 1}
```

<!-- prelude first-line sh
first() {
    {block}
}
first | head -n 1
-->

```text check prelude=first-line
$ printf 'one\ntwo\n'; test -f "$PAYIDEM_CHECKOUT/scripts/docs/run-blocks.py"
one
```

```text check prelude=first-line
one
```

<!-- prelude made-by-c c
#include <stdio.h>
int main(void) {
    FILE *f = fopen("made-by-c.txt", "w");
    return f == NULL || fputs("from C\n", f) < 0 || fclose(f) != 0;
}
-->

```sh run prelude=made-by-c
grep -qx 'from C' made-by-c.txt && echo "read what the C prelude wrote"
```

```sh run prelude=wrapped-c
echo never
```

<!-- prelude wrapped-c c
int main(void) {
    {block}
}
-->

<!-- prelude table sql
CREATE TABLE payments (order_id text PRIMARY KEY);
-->

```sql run prelude=table
INSERT INTO payments VALUES ('ord-1');
SELECT count(*) FROM payments;
```

```sql run prelude=table
INSERT INTO payments VALUES ('ord-1'), ('ord-1');
SELECT 'after the error';
```

```sh run needs=postgres
psql -X -At -c "SELECT 'server ' || current_setting('server_version_num')" "$PAYIDEM_PG_URL"
```

```sh run needs=redis
true
```

```java run
public final class NeverHere { public static void main(String[] args) { } }
```
MD
passed=0 failed=0
expect() { # LINE WANT(PASS|FAIL) TEXT: the block at LINE ends WANT, saying TEXT
    local out
    out="$("$root/scripts/docs/run-blocks.py" --only "$doc:$1" "$doc" 2>&1)"
    if grep -q "^$2 $doc:$1 .*$3" <<<"$out"; then
        passed=$((passed + 1)); echo "PASS: block at line $1 ends $2 ($3)"
    else
        failed=$((failed + 1)); echo "FAIL: block at line $1: want $2 with '$3', got: $out"
    fi
}
expect 1 FAIL "unmarked"
expect 5 FAIL "no-run needs a reason"
expect 9 FAIL "exit status 3, want 0"
expect 13 FAIL "left temporary files behind in TMPDIR"
expect 17 PASS ""
expect 21 PASS "payidem-mock"
expect 36 PASS "hello from the prelude"
expect 40 PASS "INSIDE"
expect 44 FAIL "no prelude nosuch"
expect 48 PASS "each as in Makefile"
expect 52 FAIL "lines not found in Makefile"
expect 60 PASS "lines match the output"
expect 66 FAIL "exit status 3, want 0"
expect 73 PASS "lines match the output"
expect 80 FAIL "does not match the sample"
expect 85 FAIL "prelude unused is used by no block"
expect 93 PASS "lines match the output"
expect 99 FAIL "does not match the sample"
expect 105 FAIL "does not match the sample"
expect 115 PASS "the same JSON value as the output"
expect 119 FAIL "the output's JSON differs"
expect 123 FAIL "the output's JSON differs"
expect 134 PASS "lines match the output"
expect 139 FAIL "needs a sh prelude and a first line"
expect 151 PASS "read what the C prelude wrote"
expect 155 FAIL "prelude wrapped-c is c with a {block} line"
expect 169 PASS "(1 row)"
expect 174 FAIL "exit status 3, want 0"
expect 179 PASS "server [0-9]"
expect 183 FAIL "unknown run option 'needs=redis'"
out="$("$root/scripts/docs/run-blocks.py" --only "$doc:187" "$doc" 2>&1)"
if grep -qx '0 passed, 0 failed, 0 not run (no-run), 1 left to make test-dist and make test-java' <<<"$out"; then
    passed=$((passed + 1)); echo "PASS: a Java block is left to make test-java without --java-classpath"
else
    failed=$((failed + 1)); echo "FAIL: a Java block without --java-classpath: $out"
fi
if "$root/scripts/docs/run-blocks.py" "$doc" > /dev/null 2>&1; then
    failed=$((failed + 1)); echo "FAIL: the runner exits 0 on a document with failing blocks"
else
    passed=$((passed + 1)); echo "PASS: the runner exits non-zero on a document with failing blocks"
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
