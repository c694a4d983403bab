#!/usr/bin/env bash
# Builds, for a JVM of another platform (the arm64 root of
# scripts/dist/test-arm64.sh, Wine in scripts/dist/test-windows.sh), the
# release jar and a program using it, into OUT:
#
#   OUT/lib/payidem-VERSION.jar   the jar with every library
#                                 `stage-natives.sh --dist` stages
#   OUT/lib/jna-*.jar, gson-*.jar its runtime dependencies
#   OUT/classes/shop/Pay.class    bindings/java/outside's program, Java 8
#
#   bindings/java/build-app.sh OUT
#
# The jar is built from a copy of bindings/java, so that it can run while
# make test-java builds bindings/java/target; Maven resolves from Central. Run the program with the class
# path OUT/classes and OUT/lib/*: `shop.Pay URL JOURNAL ORDER` pays ORDER
# and asks again, printing which library it loaded.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)"
out=$1
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out/lib" "$out/classes"
cp -r "$here/pom.xml" "$here/src" "$work/"
"$here/stage-natives.sh" --dist --out "$work/natives"
# A local Maven repository of its own: make test-java may be resolving into the
# user's at the same time.
mvn() { command mvn -B -ntp -q -Dmaven.repo.local="$work/m2" "$@"; }
(cd "$work" && mvn package -DskipTests -Dpayidem.natives="$work/natives" &&
    mvn org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
        -DincludeArtifactIds=jna,gson -DoutputDirectory="$out/lib")
cp "$work/target/payidem-$version.jar" "$out/lib/"
javac --release 8 -cp "$out/lib/*" -d "$out/classes" "$here/outside/src/main/java/shop/Pay.java"
