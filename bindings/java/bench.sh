#!/usr/bin/env bash
# The Java benchmark (make bench-java, BENCHMARKS.md): signing through the jar (JNA),
# through a JNI prototype and with javax.crypto in the same JVM, then settled operations
# per second against the mock at 1 and 16 threads. Needs `make test-java`'s build first
# (target/release, bindings/java/target).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
here="$root/bindings/java"
out="$root/target/java-bench"
rm -rf "$out" && mkdir -p "$out/classes"
jdk="$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")"
cc -O2 -shared -fPIC -Wall -Wextra -Werror -I"$jdk/include" -I"$jdk/include/linux" -I"$root/include" \
    "$here/bench/jni/payidem_jni.c" -L"$root/target/release" -lpayidem -Wl,-rpath,"$root/target/release" \
    -o "$out/libpayidem_jni.so"
(cd "$here" && mvn -B -ntp -q dependency:build-classpath -Dmdep.outputFile="$out/cp.txt")
cp="$here/target/classes:$(cat "$out/cp.txt")"
javac --release 8 -Xlint:all,-options -Werror -cp "$cp" -d "$out/classes" \
    "$here"/bench/src/io/payidem/bench/*.java
"$root/target/release/payidem-mock" --port 0 > "$out/mock.out" 2>&1 &
mock=$!
trap 'kill $mock 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do grep -q '^listening on ' "$out/mock.out" && break; sleep 0.1; done
url="http://$(sed -n 's/^listening on //p' "$out/mock.out" | head -n1)"
java -Djava.library.path="$out" -cp "$out/classes:$cp" io.payidem.bench.SignBench "$url"
