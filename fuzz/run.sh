#!/bin/sh
# Runs every fuzz target for FUZZ_SECONDS each, one after another (the
# machine is shared): the Rust targets with cargo-fuzz (libFuzzer, nightly),
# the Go targets with `go test -fuzz`, the Python target with atheris.
# Installs what it needs when missing: the nightly toolchain (rustup),
# cargo-fuzz (crates.io), atheris (PyPI, into the Python test venv).
#
#   FUZZ_SECONDS=180 fuzz/run.sh              every target
#   FUZZ_SECONDS=60 fuzz/run.sh verifier      one Rust target
#
# The committed seeds are in fuzz/corpus/<target>/ (read only here); what a
# run discovers goes to target/fuzz/corpus/<target>/, crashes to
# target/fuzz/artifacts/<target>/. A crash fails the run; turn it into a
# regression test (core/tests/fuzz_regressions.rs,
# mock/tests/fuzz_regressions.rs, ffi/capi/tests/fuzz_regressions.rs).
set -eu
cd "$(dirname "$0")/.."
ROOT=$PWD
SECONDS_EACH=${FUZZ_SECONDS:-60}
TARGETS="fields canonical verifier retry_after error_body client_options journal_rows mock_http"
GO_TARGETS="FuzzVerifyRequest FuzzConfigOptions FuzzDecide FuzzErrorCodeFromBody"
only=${1:-}

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

failed=""
for t in $TARGETS; do
    [ -n "$only" ] && [ "$only" != "$t" ] && continue
    echo "== cargo fuzz: $t for ${SECONDS_EACH}s"
    mkdir -p "target/fuzz/corpus/$t" "target/fuzz/artifacts/$t"
    (cd fuzz && cargo +nightly fuzz run -O -a --target-dir "$ROOT/target/fuzz" "$t" \
        "$ROOT/target/fuzz/corpus/$t" "$ROOT/fuzz/corpus/$t" -- \
        -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=10 \
        -artifact_prefix="$ROOT/target/fuzz/artifacts/$t/" -print_final_stats=1) \
        || failed="$failed $t"
done
[ -n "$only" ] && { [ -z "$failed" ] || { echo "fuzz: crashed:$failed"; exit 1; }; exit 0; }

for t in $GO_TARGETS; do
    echo "== go test -fuzz: $t for ${SECONDS_EACH}s"
    (cd bindings/go && go test -run '^$' -fuzz "^$t\$" -fuzztime "${SECONDS_EACH}s" .) \
        || failed="$failed go:$t"
done

PY=bindings/python/.venv/bin/python
if [ -x "$PY" ] && "$PY" -c 'import payidem' 2>/dev/null; then
    "$PY" -c 'import atheris' 2>/dev/null || "$PY" -m pip install -q atheris
    echo "== atheris: bindings/python/fuzz/fuzz_wsgi.py for ${SECONDS_EACH}s"
    mkdir -p target/fuzz/corpus/python_wsgi target/fuzz/artifacts/python_wsgi
    "$PY" bindings/python/fuzz/fuzz_wsgi.py target/fuzz/corpus/python_wsgi bindings/python/fuzz/corpus \
        -max_total_time="$SECONDS_EACH" -artifact_prefix=target/fuzz/artifacts/python_wsgi/ \
        || failed="$failed python:fuzz_wsgi"
else
    echo "== atheris: skipped, no Python package built (run make test-python first)"
fi

if [ -n "$failed" ]; then
    echo "fuzz: crashed:$failed (inputs under target/fuzz/artifacts/ and bindings/go/testdata/fuzz/)"
    exit 1
fi
echo "fuzz: no crash"
