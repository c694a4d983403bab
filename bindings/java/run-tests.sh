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
for jdk in /usr/lib/jvm/temurin-25-jdk-amd64; do
    if [ -x "$jdk/bin/java" ]; then
        echo "== the suites again on $jdk"
        JAVA_HOME="$jdk" mvn -B -ntp surefire:test
    fi
done
cd "$root"
bindings/java/test-outside.sh bindings/java/target/payidem-0.1.0.jar "$PAYIDEM_MOCK"
