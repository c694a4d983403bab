#!/usr/bin/env bash
# The Java binding's tests (make test-java): builds the release library and the mock,
# stages the library into the jar with its SHA-256, runs Maven's build and the JUnit
# suites on the default JDK, the same suites on Temurin 25 when installed, then the jar
# installed into an empty local Maven repository and used by a separate project
# (test-outside.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
${CARGO:-cargo} build --release -p payidem-ffi -p payidem-mock
bindings/java/stage-natives.sh
export PAYIDEM_MOCK="$root/target/release/payidem-mock"
cd bindings/java
mvn -B -ntp verify
# A multi-release jar: the base is Java 8 bytecode (class major 52), the java.net.http
# integration Java 11 (55) under META-INF/versions/11, and the manifest says so.
jar=target/payidem-0.1.0.jar
major() { unzip -p "$jar" "$1" | od -An -j6 -N2 -tu1 | awk '{print $1 * 256 + $2}'; }
manifest="$(unzip -p "$jar" META-INF/MANIFEST.MF)"
grep -q '^Multi-Release: true' <<< "$manifest" || { echo "$jar: not Multi-Release" >&2; exit 1; }
# The jakarta filter is made by the build from the javax one: both are in the jar.
for ns in javax jakarta; do
    unzip -l "$jar" "io/payidem/servlet/$ns/PayidemVerifyingFilter.class" >/dev/null \
        || { echo "$jar: no $ns servlet filter" >&2; exit 1; }
done
[ "$(major io/payidem/PayidemClient.class)" = 52 ] || { echo "$jar: base classes are not Java 8" >&2; exit 1; }
[ "$(major META-INF/versions/11/io/payidem/jdkhttp/PayidemJdkHttp.class)" = 55 ] \
    || { echo "$jar: the java.net.http integration is not Java 11 under META-INF/versions/11" >&2; exit 1; }
for jdk in /usr/lib/jvm/temurin-25-jdk-amd64; do
    if [ -x "$jdk/bin/java" ]; then
        echo "== the suites again on $jdk"
        JAVA_HOME="$jdk" mvn -B -ntp surefire:test
    fi
done
cd "$root"
bindings/java/test-outside.sh bindings/java/target/payidem-0.1.0.jar "$PAYIDEM_MOCK"
