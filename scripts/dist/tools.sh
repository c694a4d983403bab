#!/usr/bin/env bash
# Makes sure the release toolchain is installed and prints the directory of
# its commands, for `PATH="$(scripts/dist/tools.sh):$PATH"`.
#
# Everything comes from PyPI, pinned, into a venv under target/ (nothing is
# installed system-wide): zig (the ziglang package) as the C compiler and
# linker against glibc 2.17, cargo-zigbuild and maturin to drive it, and
# auditwheel to check wheel tags. A second run only checks the versions.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${PAYIDEM_DIST_TOOLS:-$root/target/dist-tools}"
pins=(ziglang==0.17.1 cargo-zigbuild==0.24.1 maturin==1.16.0 auditwheel==6.8.2)
stamp="$venv/.pins"

if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "${pins[*]}" ]; then
    python3 -m venv "$venv" >&2
    "$venv/bin/python" -m pip install --quiet "${pins[@]}" >&2
    printf '%s' "${pins[*]}" > "$stamp"
fi
echo "$venv/bin"
