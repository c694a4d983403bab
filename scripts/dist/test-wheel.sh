#!/usr/bin/env bash
# Proves a built payidem wheel works where users install it: outside the
# repository, in a fresh venv, with nothing of the source tree on sys.path.
#
#   scripts/dist/test-wheel.sh [--arch ARCH] WHEEL MOCK_BINARY
#   scripts/dist/test-wheel.sh dist/payidem-0.1.0-cp39-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl \
#       target/release/payidem-mock
#   scripts/dist/test-wheel.sh --arch aarch64 --only file WHEEL
#   scripts/dist/test-wheel.sh --only install WHEEL MOCK_BINARY
#
# ARCH is the machine the wheel is for (x86_64 or aarch64), by default this
# one's (uname -m). --only file runs only the checks of the file (where the
# pinned tools run: on the build host, for another architecture's wheel);
# --only install only the rest (where the wheel's users are: an emulated
# arm64 root, where the pinned tools do not run). Both together are the
# default.
#
# Checks, each reported as `ok: …` or `FAIL: …`:
#   - the file name says abi3 (cp39) and manylinux_2_17 ARCH, `auditwheel
#     show` agrees, the wheel is at most PAYIDEM_WHEEL_MAX_BYTES (5 MB) and its
#     extension is an ARCH ELF file, stripped; its METADATA says
#     `License: Apache-2.0` with the license classifier, and (for a wheel of
#     this machine) pip 20.3, Debian 11's, fetched from PyPI into a venv of
#     its own, installs it and `pip show payidem` says that license;
#   - with each CPython (PAYIDEM_WHEEL_PYTHONS, else every python3.9 …
#     python3.13 found, else python3): `pip install --no-index WHEEL` into a
#     new venv in a new temporary directory (so it needs no other package),
#     run from that directory;
#   - the installed package is the venv's, and its metadata (importlib.metadata)
#     has the license, the project URLs, Requires-Python, the classifiers and
#     the license file (byte-identical to the repository's LICENSE);
#   - every block of bindings/python/README.md marked `<!-- example: NAME -->`
#     runs, in its own process, against MOCK_BINARY started on port 0, with
#     PAYIDEM_BASE_URL, PAYIDEM_KEY_ID and PAYIDEM_SECRET naming the mock (the
#     examples assert what they promise: a payment settles with 201, a resumed
#     one is replayed, …); HOME and XDG_STATE_HOME point into the temporary
#     directory, where the durable default journal must then exist, mode 0600.
#
# The last line is `N passed, N failed`; the exit status is 1 when anything
# failed (2 for bad arguments). Needs no terminal and no SIGINT (it can run
# under nohup or as a background job); the temporary directory and the mock
# are removed on exit, including on SIGTERM and SIGHUP.
set -uo pipefail

usage() {
    echo "usage: $0 [--arch x86_64|aarch64] [--only file|install] WHEEL MOCK_BINARY" >&2
    echo "       $0 [--arch x86_64|aarch64] --only file WHEEL" >&2
    exit 2
}
arch="$(uname -m)"
only=all
while [ $# -gt 0 ]; do
    case "$1" in
        --arch) [ $# -ge 2 ] || usage; arch=$2; shift 2 ;;
        --only) [ $# -ge 2 ] || usage; only=$2; shift 2 ;;
        -*) usage ;;
        *) break ;;
    esac
done
case "$arch" in x86_64 | aarch64) ;; *) usage ;; esac
case "$only" in
    file) [ $# -eq 1 ] || [ $# -eq 2 ] || usage ;;
    install | all) [ $# -eq 2 ] || usage ;;
    *) usage ;;
esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[ -f "$1" ] || { echo "test-wheel.sh: WHEEL: no such file: $1" >&2; exit 2; }
wheel="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
mock_bin=
if [ "$only" != file ]; then
    [ -f "$2" ] && [ -x "$2" ] || { echo "test-wheel.sh: MOCK_BINARY: not an executable file: $2" >&2; exit 2; }
    mock_bin="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
fi
platform_tag="manylinux_2_17_$arch"
max_bytes="${PAYIDEM_WHEEL_MAX_BYTES:-5000000}"
# The interpreters to test with: PAYIDEM_WHEEL_PYTHONS (commands separated
# by blanks), else every python3.9 … python3.13 that runs here, else python3.
if [ -n "${PAYIDEM_WHEEL_PYTHONS:-}" ]; then
    read -r -a pythons <<<"$PAYIDEM_WHEEL_PYTHONS"
else
    pythons=()
    for minor in 9 10 11 12 13; do
        if "python3.$minor" -I -c 'import ensurepip, venv' >/dev/null 2>&1 </dev/null; then
            pythons+=("python3.$minor")
        fi
    done
    [ "${#pythons[@]}" -gt 0 ] || pythons=(python3)
fi
readme="$root/bindings/python/README.md"
mock_key_id=key_test_1
mock_secret=sk_test_payidem_mock_secret_0001 # the mock's published test key (mock/README.md)

# A temporary directory that is certainly outside the repository.
tmp_base="${TMPDIR:-/tmp}"
case "$(cd "$tmp_base" 2>/dev/null && pwd -P)/" in
    "$(cd "$root" && pwd -P)"/*) tmp_base=/tmp ;;
esac
work="$(mktemp -d "$tmp_base/payidem-wheel-test.XXXXXX")" || exit 1
mock_pid=
child_pid=
cleanup() {
    if [ -n "$child_pid" ]; then
        kill -TERM "$child_pid" 2>/dev/null
        wait "$child_pid" 2>/dev/null
    fi
    if [ -n "$mock_pid" ]; then
        kill -TERM "$mock_pid" 2>/dev/null
        wait "$mock_pid" 2>/dev/null
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 129' HUP
trap 'exit 143' TERM

passed=0
failed=0
pass() {
    passed=$((passed + 1))
    echo "ok: $1"
}
fail() {
    failed=$((failed + 1))
    echo "FAIL: $1"
    if [ -n "${2:-}" ]; then
        printf '%s\n' "$2" | sed 's/^/    /'
    fi
}
# check NAME COMMAND...: runs COMMAND, passes (and returns 0) when it exits
# 0. It runs in the background and is waited for, so that SIGTERM or SIGHUP
# ends this script (and the command) at once instead of after the command.
check() {
    local name=$1 status
    shift
    "$@" >"$work/check.log" 2>&1 </dev/null &
    child_pid=$!
    wait "$child_pid"
    status=$?
    child_pid=
    if [ "$status" -eq 0 ]; then
        pass "$name"
    else
        fail "$name" "$(cat "$work/check.log")"
    fi
    return "$status"
}
finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit $?
}

# Nothing from the caller's Python set-up: no PYTHONPATH, no pip config, no
# active venv; every run below starts in the temporary directory.
mkdir -p "$work/home" "$work/examples"
# The project's addresses (Cargo.toml's [workspace.metadata.release]) for the
# file checks, which run where the checkout is, read while cargo still finds
# its toolchain under the real HOME.
if [ "$only" != install ]; then
    release_meta="$(cargo metadata --no-deps --format-version 1 --manifest-path "$root/Cargo.toml" |
        python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["metadata"]["release"]))')"
fi
export HOME="$work/home" XDG_STATE_HOME="$work/state" PIP_CONFIG_FILE=/dev/null
unset PYTHONPATH PYTHONHOME VIRTUAL_ENV
cd "$work" || exit 1

echo "testing $(basename "$wheel") ($arch, checks: $only) in $work with ${pythons[*]}"

# --- the file ----------------------------------------------------------------
file_checks() {
    wheel_name="$(basename "$wheel")"
    tag_ok() {
        case "$wheel_name" in
            payidem-*-cp39-abi3-*"$platform_tag"*.whl) return 0 ;;
            *) echo "$wheel_name is not tagged cp39-abi3 $platform_tag"; return 1 ;;
        esac
    }
    check "file name tagged cp39-abi3 and $platform_tag" tag_ok

    size="$(stat -c %s "$wheel")"
    size_ok() {
        echo "$size bytes (limit $max_bytes)"
        [ "$size" -le "$max_bytes" ]
    }
    check "wheel size $size bytes <= $max_bytes" size_ok

    urls_ok() {
        python3 - "$wheel" "$release_meta" <<'PY'
import email, json, sys, zipfile

release = json.loads(sys.argv[2])
with zipfile.ZipFile(sys.argv[1]) as z:
    [name] = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
    meta = email.message_from_bytes(z.read(name))
urls = dict(entry.split(", ", 1) for entry in meta.get_all("Project-URL") or [])
expected = {
    "Homepage": release["homepage"],
    "Repository": release["repository"],
    "Documentation": release["repository"] + "/blob/main/bindings/python/README.md",
    "Issues": release["issues"],
}
print(urls)
assert urls == expected, f"expected {expected}"
PY
    }
    check "Project-URLs are Cargo.toml's [workspace.metadata.release] addresses" urls_ok

    license_ok() {
        python3 - "$wheel" <<'PY'
import email, sys, zipfile

with zipfile.ZipFile(sys.argv[1]) as z:
    [name] = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
    meta = email.message_from_bytes(z.read(name))
found = (meta["License"], meta["License-Expression"], meta.get_all("Classifier") or [])
print(found)
assert found[:2] == ("Apache-2.0", None), "want License: Apache-2.0 and no License-Expression"
assert "License :: OSI Approved :: Apache Software License" in found[2], "no license classifier"
PY
    }
    check "METADATA: License: Apache-2.0 and its classifier" license_ok

    # What Debian 11's pip (20.3) shows: it reads only the License field. pip
    # 20.3 comes from PyPI into a venv of its own; it runs on CPython <= 3.11
    # and installs only a wheel of this machine.
    if [ "$arch" = "$(uname -m)" ]; then
        old_pip_ok() {
            local py=
            for candidate in "${pythons[@]}"; do
                if "$candidate" -I -c 'import sys; sys.exit(sys.version_info >= (3, 12))' </dev/null; then
                    py=$candidate
                    break
                fi
            done
            [ -n "$py" ] || { echo "pip 20.3 needs a CPython <= 3.11; have ${pythons[*]}"; return 1; }
            "$py" -I -m venv "$work/pip20" &&
                "$work/pip20/bin/python" -I -m pip install --quiet --no-cache-dir --disable-pip-version-check \
                    'pip==20.3.4' &&
                "$work/pip20/bin/python" -I -m pip install --quiet --no-index --no-cache-dir \
                    --disable-pip-version-check "$wheel" || return 1
            local shown
            shown="$("$work/pip20/bin/python" -I -m pip show payidem 2>&1)"
            printf '%s\n' "$shown"
            grep -qx 'License: Apache-2.0' <<<"$shown" && grep -q '^Version: 20\.3\.4$' \
                <<<"$("$work/pip20/bin/python" -I -m pip show pip)"
        }
        check "pip 20.3 (Debian 11's) installs the wheel and pip show says License: Apache-2.0" old_pip_ok
        rm -rf "$work/pip20"
    fi

    tools="$("$root/scripts/dist/tools.sh" 2>"$work/tools.err")" || {
        fail "pinned release tools (scripts/dist/tools.sh)" "$(cat "$work/tools.err")"
        tools=
    }
    if [ -n "$tools" ]; then
        audit_ok() {
            local report
            report="$("$tools/auditwheel" show "$wheel" 2>&1)" || { echo "$report"; return 1; }
            if tr '\n' ' ' <<<"$report" | tr -s ' ' |
                grep -q "consistent with the following platform tag: \"$platform_tag\""; then
                return 0
            fi
            echo "$report"
            return 1
        }
        check "auditwheel show: consistent with $platform_tag" audit_ok

        stripped_ok() {
            "$tools/python" -I - "$wheel" "$arch" <<'PY'
import io, sys, zipfile
from elftools.elf.elffile import ELFFile

machine = {"x86_64": "EM_X86_64", "aarch64": "EM_AARCH64"}[sys.argv[2]]
with zipfile.ZipFile(sys.argv[1]) as z:
    libs = [n for n in z.namelist() if n.endswith(".so")]
    assert len(libs) == 1, f"expected one extension module, found {libs}"
    elf = ELFFile(io.BytesIO(z.read(libs[0])))
    assert elf["e_machine"] == machine, f"{libs[0]} is {elf['e_machine']}, not {machine}"
    kept = [s.name for s in elf.iter_sections() if s.name == ".symtab" or s.name.startswith(".debug")]
    assert not kept, f"{libs[0]} is not stripped: {kept}"
    print(f"{libs[0]}: {machine}, no .symtab, no .debug_* sections")
PY
        }
        check "extension module is $arch and stripped" stripped_ok
    fi
}
[ "$only" = install ] || file_checks
[ "$only" = file ] && finish

# --- once: the metadata checker and the README examples ------------------------
cat >"$work/check_metadata.py" <<'PY'
"""Prints ok:/FAIL: for each promise of the installed distribution."""
import importlib.metadata as md
import sys
from pathlib import Path

import payidem

repo_license = Path(sys.argv[1]).read_bytes()
dist = md.distribution("payidem")
meta = dist.metadata
failures = 0


def check(name, condition, detail=""):
    global failures
    if condition:
        print(f"ok: metadata: {name}")
    else:
        failures += 1
        print(f"FAIL: metadata: {name}: {detail}")


check("version matches the module", meta["Version"] == payidem.__version__,
      f"{meta['Version']} != {payidem.__version__}")
check("License Apache-2.0 (no License-Expression: core metadata 2.4 allows one of them)",
      meta["License"] == "Apache-2.0" and "License-Expression" not in meta,
      repr((meta["License"], meta.get_all("License-Expression"))))
check("Requires-Python >=3.9", meta["Requires-Python"] == ">=3.9", repr(meta["Requires-Python"]))
urls = dict(entry.split(", ", 1) for entry in meta.get_all("Project-URL") or [])
check("Project-URL Homepage, Repository, Documentation, Issues (as in the wheel's file checks)",
      set(urls) == {"Homepage", "Repository", "Documentation", "Issues"}, repr(urls))
classifiers = set(meta.get_all("Classifier") or [])
required = {
    "License :: OSI Approved :: Apache Software License",
    "Operating System :: POSIX :: Linux",
    "Topic :: Office/Business :: Financial",
    "Typing :: Typed",
    *(f"Programming Language :: Python :: 3.{minor}" for minor in range(9, 14)),
}
check("classifiers: license, Linux, Python 3.9-3.13, Financial, Typed", required <= classifiers,
      f"missing {sorted(required - classifiers)}")
check("classifier Development Status", any(c.startswith("Development Status :: ") for c in classifiers),
      "none")
keywords = (meta["Keywords"] or "").split(",")
check("keywords", {"payments", "idempotency"} <= set(keywords), repr(keywords))
license_files = [f for f in dist.files or [] if f.parts[-2:] == ("licenses", "LICENSE")]
check("license file installed", len(license_files) == 1, repr(dist.files))
if license_files:
    check("license file byte-identical to the repository's LICENSE",
          license_files[0].locate().read_bytes() == repo_license, str(license_files[0]))
check("License-File entry", "LICENSE" in (meta.get_all("License-File") or []), repr(meta.get_all("License-File")))
wheel_tags = [line.split(": ", 1)[1] for line in (dist.read_text("WHEEL") or "").splitlines()
              if line.startswith("Tag: ")]
check(f"WHEEL tags cp39-abi3-{sys.argv[2]}", f"cp39-abi3-{sys.argv[2]}" in wheel_tags, repr(wheel_tags))
package_files = {f.name for f in dist.files or [] if f.parts[0] == "payidem"}
check("typing: py.typed and _native.pyi installed", {"py.typed", "_native.pyi"} <= package_files,
      repr(sorted(package_files)))
sys.exit(1 if failures else 0)
PY

extract_ok() {
    "${pythons[0]}" -I - "$readme" "$work/examples" <<'PY'
"""Writes each ```python block right after a line <!-- example: NAME --> to
DIR/NN-NAME.py; a marker without its block is an error."""
import re, sys
from pathlib import Path

text = Path(sys.argv[1]).read_text(encoding="utf-8")
out = Path(sys.argv[2])
marker = re.compile(r"^<!--\s*example:\s*([A-Za-z0-9_-]+)\s*-->\s*\n```python[^\n]*\n(.*?)\n```", re.S | re.M)
names = []
for n, m in enumerate(marker.finditer(text), 1):
    name, code = m.group(1), m.group(2)
    assert name not in names, f"example {name!r} is marked twice"
    names.append(name)
    (out / f"{n:02d}-{name}.py").write_text(code + "\n", encoding="utf-8")
markers = len(re.findall(r"^<!--\s*example:", text, re.M))
assert markers == len(names), f"{markers} example markers, but only {len(names)} are followed by a python block"
assert names, "no example marked in the README"
print("examples:", ", ".join(names))
PY
}
check "README examples extracted from bindings/python/README.md" extract_ok

mock_start() {
    "$mock_bin" --port 0 --control --seed 11 </dev/null >"$work/mock.out" 2>"$work/mock.err" &
    mock_pid=$!
    base_url=
    local line
    for _ in $(seq 1 100); do
        line="$(head -n 1 "$work/mock.out" 2>/dev/null)"
        case "$line" in
            "listening on "*) base_url="http://${line#listening on }"; return 0 ;;
        esac
        kill -0 "$mock_pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "payidem-mock did not say where it listens:"
    cat "$work/mock.out" "$work/mock.err" 2>/dev/null
    return 1
}
mock_stop() {
    if [ -n "$mock_pid" ]; then
        kill -TERM "$mock_pid" 2>/dev/null
        wait "$mock_pid" 2>/dev/null
        mock_pid=
    fi
}

# --- per interpreter: install, metadata, examples ------------------------------
# test_with PYTHON: everything a user of that CPython sees, in a directory,
# venv, home and mock of its own.
test_with() {
    local py=$1 ver at dir vpy out st example label
    if ! ver="$("$py" -I -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>&1 </dev/null)"; then
        fail "interpreter $py runs" "$ver"
        return
    fi
    at="[python $ver]"
    dir="$work/python$ver"
    mkdir -p "$dir/home"
    # Isolated runs (-I: no PYTHON* variables, no user site, not the
    # script's directory on sys.path), from the temporary directory, with a
    # home of their own: the durable default journal lands in $dir/state.
    export HOME="$dir/home" XDG_STATE_HOME="$dir/state"
    cd "$dir" || return

    check "$at fresh venv in $dir" "$py" -I -m venv "$dir/venv" || return
    vpy="$dir/venv/bin/python"
    check "$at pip install --no-index WHEEL (needs no other package)" \
        timeout 600 "$vpy" -I -m pip install --no-index --no-cache-dir --disable-pip-version-check \
        --quiet "$wheel" || return

    check "$at imported from the venv, nothing of the source tree on sys.path" \
        "$vpy" -I -c '
import sys, sysconfig
import payidem, payidem._native
site = sysconfig.get_paths()["platlib"]
root = sys.argv[1]
assert payidem.__file__.startswith(site), payidem.__file__
assert payidem._native.__file__.endswith("_native.abi3.so"), payidem._native.__file__
leaks = [p for p in sys.path if p and (p == root or p.startswith(root + "/"))]
assert not leaks, leaks
print(payidem.__file__, payidem.__version__)
' "$root"

    "$vpy" -I "$work/check_metadata.py" "$root/LICENSE" "$platform_tag" >"$dir/metadata.log" 2>&1 </dev/null &
    child_pid=$!
    wait "$child_pid"
    st=$?
    child_pid=
    out="$(cat "$dir/metadata.log")"
    while IFS= read -r line; do
        case "$line" in
            "ok: "*) pass "$at ${line#ok: }" ;;
            "FAIL: "*) fail "$at ${line#FAIL: }" ;;
        esac
    done <<<"$out"
    if [ "$st" -ne 0 ] && ! grep -q '^FAIL: ' <<<"$out"; then
        fail "$at metadata check ran" "$out"
    fi

    if mock_start >"$dir/mock-start.log" 2>&1; then
        pass "$at payidem-mock started on port 0: $base_url"
    else
        fail "$at payidem-mock started on port 0" "$(cat "$dir/mock-start.log")"
        return
    fi
    # The examples' temporary files (a throwaway journal) stay in this
    # interpreter's directory, removed with the run.
    mkdir -p "$dir/tmp"
    for example in "$work"/examples/*.py; do
        [ -e "$example" ] || break
        label="$(basename "$example" .py)"
        label="${label#*-}"
        check "$at README example '$label' against the mock" \
            env PAYIDEM_BASE_URL="$base_url" PAYIDEM_KEY_ID="$mock_key_id" PAYIDEM_SECRET="$mock_secret" \
            TMPDIR="$dir/tmp" timeout 300 "$vpy" -I "$example"
    done

    check "$at the default journal the examples used: \$XDG_STATE_HOME/payidem/journal.sqlite3, 0600 in a 0700 directory" \
        "$vpy" -I -c '
import os, stat, sys
import payidem
path = payidem.default_journal_path()
assert path == os.path.join(sys.argv[1], "payidem", "journal.sqlite3"), path
mode = stat.S_IMODE(os.stat(path).st_mode)
dir_mode = stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode)
assert (mode, dir_mode) == (0o600, 0o700), (oct(mode), oct(dir_mode))
print(path, oct(mode), oct(dir_mode))
' "$XDG_STATE_HOME"

    check "$at the mock's oracle: no order paid twice, no key reused for another request" \
        "$vpy" -I -c '
import json, sys, urllib.request
stats = json.load(urllib.request.urlopen(sys.argv[1] + "/_mock/stats", timeout=10))
orders = stats["orders"]
assert orders, "the examples made no payment"
twice = {o: s for o, s in orders.items() if s["payments_created"] > 1 or s["duplicate_keys"]}
assert not twice, twice
assert stats["duplicate_order"] == 0, stats
print(len(orders), "orders, each paid once;", stats["replays"], "replays")
' "$base_url"
    mock_stop
}

for py in "${pythons[@]}"; do
    test_with "$py"
    mock_stop
done
finish
