#!/usr/bin/env bash
# The jar as a user gets it, outside the repository: installed with its pom into an
# empty local Maven repository, then used by a separate Maven project (Java 8 target,
# bindings/java/outside) that pays against the mock; the mock's oracle must show one
# payment. Dependencies (JNA, Gson) and plugins resolve from Maven Central.
#
#   bindings/java/test-outside.sh JAR MOCK
set -euo pipefail
jar="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
mock="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d /tmp/payidem-java-outside.XXXXXX)"
mock_pid=""
cleanup() {
    [ -z "$mock_pid" ] || kill "$mock_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
repo="$work/m2"
mvn() { command mvn -B -ntp -Dmaven.repo.local="$repo" "$@"; }

cp -r "$here/outside" "$work/app"
cp "$here/pom.xml" "$work/payidem.pom"
# The jar's coordinates come from its own pom.
(cd "$work" && mvn -q org.apache.maven.plugins:maven-install-plugin:3.1.3:install-file \
    -Dfile="$jar" -DpomFile="$work/payidem.pom")
ls "$repo/io/payidem/payidem/0.1.0/"

cd "$work/app"
mvn -q package dependency:build-classpath -Dmdep.outputFile=cp.txt
major="$(javap -v -cp target/classes shop.Pay | sed -n 's/^ *major version: //p')"
[ "$major" = 52 ] || { echo "shop.Pay has class file version $major, not 52 (Java 8)" >&2; exit 1; }

"$mock" --port 0 --control > "$work/mock.out" 2>&1 &
mock_pid=$!
for _ in $(seq 1 100); do grep -q '^listening on ' "$work/mock.out" 2>/dev/null && break; sleep 0.1; done
url="http://$(sed -n 's/^listening on //p' "$work/mock.out" | head -n1)"
order="java-outside-$$"
out="$(java -cp "target/classes:$(cat cp.txt)" shop.Pay "$url" "$work/journal.sqlite3" "$order")"
echo "$out"
case "$out" in *"library: jar (linux-x86-64, SHA-256 verified): "*) ;; *) echo "not the jar's library" >&2; exit 1 ;; esac
case "$out" in *"paid: 201 create-$order"*) ;; *) echo "no payment" >&2; exit 1 ;; esac
case "$out" in *"again: 201 attempts 1"*) ;; *) echo "the second call was not answered from the journal" >&2; exit 1 ;; esac
# The Java 11 integration from the multi-release jar, by a source-file program (Java 11+).
jdk_order="java-outside-jdk-$$"
jdk_out="$(java -cp "target/classes:$(cat cp.txt)" "$here/outside/JdkPay.java" "$url" "$work/journal.sqlite3" "$jdk_order")"
echo "$jdk_out"
case "$jdk_out" in *"jdk paid: 201 create-$jdk_order"*) ;; *) echo "no payment over java.net.http" >&2; exit 1 ;; esac
stats="$(curl -fsS "$url/_mock/stats")"
python3 - "$stats" "$order" "$jdk_order" <<'PY'
import json, sys
stats, orders = json.loads(sys.argv[1]), sys.argv[2:]
for order in orders:
    o = stats["orders"][order]
    assert o["payments_created"] == 1 and len(o["idempotency_keys"]) == 1, stats
assert stats["payments"] == len(orders), stats
PY
echo "outside the repository: the installed jar paid $order and, over java.net.http, $jdk_order once each"
