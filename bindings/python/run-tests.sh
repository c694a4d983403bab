#!/usr/bin/env bash
# Builds and installs the payidem Python package into a fresh venv, then runs
# its pytest suite (conformance vectors, end to end against payidem-mock with
# the client and with the requests and httpx adapters, Ctrl-C, threads, bad
# input) and the typing checks (mypy --strict on tests/typed_usage.py and
# tests/typed_operation_usage.py, stubtest on the package).
#
#   bindings/python/run-tests.sh            # from anywhere
#   PAYIDEM_VENV=/tmp/v bindings/python/run-tests.sh
#
# The extension is built in release mode by `pip install` (maturin, fetched
# from PyPI by pip as the build backend) into the workspace's target dir, so
# a second run only relinks. The mock platform is built with cargo by the
# test fixture when target/debug/payidem-mock is missing.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
VENV="${PAYIDEM_VENV:-$HERE/.venv}"
PYTHON="${PYTHON:-python3}"

PYTEST_VERSION="9.2.0"
MYPY_VERSION="2.4.1"
REQUESTS_VERSION="2.34.2"
HTTPX_VERSION="0.29.0"
PROMETHEUS_CLIENT_VERSION="0.26.0"

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$REPO/target}"

# Two runs on one venv (e.g. `make test` and a developer's run) would
# reinstall the package under each other; the second waits for the first.
# (flock is util-linux; without it runs are not serialised.)
if command -v flock >/dev/null 2>&1; then
    mkdir -p "$(dirname "$VENV")"
    exec 9>"$VENV.lock"
    flock 9
fi

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet \
    "pytest==$PYTEST_VERSION" "mypy==$MYPY_VERSION" "requests==$REQUESTS_VERSION" \
    "httpx==$HTTPX_VERSION" "prometheus-client==$PROMETHEUS_CLIENT_VERSION"
# Non-editable, like a user's install: the wheel goes into site-packages.
"$VENV/bin/python" -m pip install --quiet --force-reinstall --no-deps "$HERE"

if [ -z "${PAYIDEM_MOCK_BIN:-}" ] && [ ! -x "$CARGO_TARGET_DIR/debug/payidem-mock" ]; then
    (cd "$REPO" && cargo build --quiet -p payidem-mock)
fi

# Run from the tests directory so that `import payidem` finds the installed
# package, not the source tree.
cd "$HERE/tests"
"$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
"$VENV/bin/python" -m mypy --strict --no-incremental typed_usage.py typed_operation_usage.py
"$VENV/bin/python" -m mypy.stubtest payidem --allowlist stubtest-allowlist.txt
echo "python bindings: all checks passed"
