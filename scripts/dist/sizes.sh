#!/usr/bin/env bash
# Prints the sizes of what `make dist` wrote into dist/ as a Markdown table
# with a column per Linux platform (BENCHMARKS.md, "Release artifacts"): the
# bytes of each file as shipped, of the shared library, the static library
# and the command inside the tarball, and of the debug files (dist/debug/,
# dist/debug/aarch64/). A platform whose files are not all there is an
# error.
#
#   scripts/dist/sizes.sh [DIST]                 print the table (default dist/)
#   scripts/dist/sizes.sh --write [DIST]         `make docs-figures`: rewrite the table of
#                                                BENCHMARKS.md (between <!-- sizes: … --> and
#                                                <!-- /sizes -->) and every inline
#                                                <!-- figure: NAME -->VALUE<!-- /figure -->
#   scripts/dist/sizes.sh --check ARCH [DIST]    `make test-dist`: ARCH's column and the
#                                                figures against the files, exact (but the
#                                                .tar.gz and .deb files, which hold the commit's
#                                                date and the shipped documents: within 0.1 %;
#                                                the wheel and debug files,
#                                                which name the build paths: within 0.05 %; the Go libraries' sizes are
#                                                rounded to 0.1 MiB, the rounding recomputed);
#                                                and every ARCH artifact
#                                                file name the documents give (README.md,
#                                                bindings/*, ffi/, mock/, docs/, BENCHMARKS.md)
#                                                is a file of DIST. Exit 1 naming each drift.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dist="${1:-$root/dist}"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

bytes() { stat -c %s "$1" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta'; }
one() {
    local matches=("$@")
    if [ "${#matches[@]}" -ne 1 ] || [ ! -f "${matches[0]}" ]; then
        echo "sizes.sh: expected one file, found: ${matches[*]}" >&2
        exit 1
    fi
    echo "${matches[0]}"
}

# Each platform's column, one size a line, in the rows' order below.
column() {
    local arch=$1 debarch mock debug tarball tree pkg f
    case "$arch" in
        x86_64) debarch=amd64 mock=payidem-mock debug="$dist/debug" ;;
        aarch64) debarch=arm64 mock=payidem-mock-aarch64 debug="$dist/debug/aarch64" ;;
    esac
    tarball="$(one "$dist/libpayidem-$version-linux-$arch.tar.gz")"
    tree="$work/libpayidem-$version-linux-$arch"
    tar -xzf "$tarball" -C "$work"
    bytes "$tarball"
    bytes "$tree/lib/libpayidem.so.$version"
    bytes "$tree/lib/libpayidem.a"
    bytes "$tree/bin/payidem"
    for pkg in libpayidem0 libpayidem-dev payidem-cli; do
        bytes "$(one "$dist/${pkg}_$version-1_$debarch.deb")"
    done
    bytes "$(one "$dist"/payidem-"$version"-cp39-abi3-*manylinux_2_17_"$arch"*.whl)"
    bytes "$(one "$dist/$mock")"
    for f in "libpayidem.so.$version.debug" libpayidem.a.debug payidem.debug payidem-mock.debug; do
        bytes "$(one "$debug/$f")"
    done
}
rows=(
    "\`libpayidem-$version-linux-ARCH.tar.gz\`"
    "— its \`lib/libpayidem.so.$version\` (stripped)"
    "— its \`lib/libpayidem.a\` (one object, only \`payidem_*\` global)"
    "— its \`bin/payidem\` (stripped)"
    "\`libpayidem0_$version-1_DEBARCH.deb\`"
    "\`libpayidem-dev_$version-1_DEBARCH.deb\`"
    "\`payidem-cli_$version-1_DEBARCH.deb\`"
    "\`payidem-$version-cp39-abi3-manylinux2014_ARCH.manylinux_2_17_ARCH.whl\`"
    "\`payidem-mock\` (x86_64), \`payidem-mock-aarch64\` (stripped)"
    "debug: \`libpayidem.so.$version.debug\`"
    "debug: \`libpayidem.a.debug\` (the object unstripped)"
    "debug: \`payidem.debug\`"
    "debug: \`payidem-mock.debug\`"
)
# The table of both platforms, as Markdown.
table() {
    local -a x86 arm
    mapfile -t x86 < <(column x86_64)
    mapfile -t arm < <(column aarch64)
    if [ "${#x86[@]}" -ne "${#rows[@]}" ] || [ "${#arm[@]}" -ne "${#rows[@]}" ]; then
        echo "sizes.sh: not every file of both platforms is in $dist: run 'make dist'" >&2
        exit 1
    fi
    echo "| artifact (ARCH x86_64 / aarch64, DEBARCH amd64 / arm64) | Linux x86_64 | Linux aarch64 |"
    echo "| --- | ---: | ---: |"
    for i in "${!rows[@]}"; do
        echo "| ${rows[$i]} | ${x86[$i]} | ${arm[$i]} |"
    done
}

# The Go module's committed libraries, rounded to 0.1 MiB (bindings/go/README.md).
go_lib_sizes() {
    local amd arm
    amd="$(stat -c %s "$root/bindings/go/lib/linux_amd64/libpayidem.a")"
    arm="$(stat -c %s "$root/bindings/go/lib/linux_arm64/libpayidem.a")"
    awk -v a="$amd" -v b="$arm" 'BEGIN { printf "%.1f MiB for linux/amd64, %.1f MiB for linux/arm64\n", a / 1048576, b / 1048576 }'
}

# docs FIGURES_FILE MODE [ARCH]: the generated figures (a "table" file of
# the whole table, or one column of it for ARCH; the go-lib-sizes line)
# against the documents. MODE write rewrites them between their markers;
# MODE check compares and also wants every artifact file name of ARCH that
# the documents give (VERSION, ARCH and DEBARCH spelt out) to be a file of
# dist/. Exit 1 naming each drift.
docs() {
    python3 - "$root" "$dist" "$version" "$@" <<'PY'
import re, sys
from pathlib import Path

root, dist, version, figures, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4]), sys.argv[5]
arch = sys.argv[6] if len(sys.argv) > 6 else None
fig = dict(line.split("=", 1) for line in (figures / "figures").read_text().splitlines())
problems = []

# BENCHMARKS.md: the table between its markers.
bench = root / "BENCHMARKS.md"
text = bench.read_text(encoding="utf-8")
m = re.search(r"(<!-- sizes: [^\n]*-->\n)(.*?)(<!-- /sizes -->)", text, re.S)
if not m:
    problems.append("BENCHMARKS.md has no <!-- sizes: … --> … <!-- /sizes --> table")
else:
    have = m.group(2)
    if mode == "write":
        # An empty cell (a platform not built) keeps what the table had.
        old = [[c.strip() for c in row.split("|")] for row in have.splitlines()]
        new = [[c.strip() for c in row.split("|")] for row in (figures / "table").read_text().splitlines()]
        for i, cells in enumerate(new):
            for j in (2, 3):
                if cells[j] == "":
                    if i >= len(old) or old[i][1] != cells[1]:
                        problems.append(f"BENCHMARKS.md sizes table: row {cells[1]} not measured and not in the table")
                    else:
                        cells[j] = old[i][j]
        rows_text = "".join("| " + " | ".join(c[1:-1]) + " |\n" for c in new)
        text = text[: m.start(2)] + rows_text + text[m.end(2):]
    else:
        col = {"x86_64": 2, "aarch64": 3}[arch]
        want_rows = (figures / "table").read_text().splitlines()
        have_rows = have.splitlines()
        if len(want_rows) != len(have_rows):
            problems.append(f"BENCHMARKS.md sizes table: {len(have_rows)} lines, the files give {len(want_rows)}")
        def same(label, want, have):
            """Exact for the stripped binaries. The archives themselves (a .tar.gz,
            a .deb) hold the commit's date in their tar headers, which moves the
            compressed size by tens of bytes from one commit to the next, and the
            documents they ship (README, docs pages, CHANGELOG), which move it by
            hundreds with each edit (a few CHANGELOG lines: 344 B of a 3.2 MB
            .deb): within 0.1 %, which still reads true to three digits. The wheel (maturin's SBOM names the checkout's path) and the
            debug files (the C objects' debug information names the build
            directories, which --remap-path-prefix does not reach) depend on where
            the tree was built: measured 15 B and up to 3,824 B (0.012 %) apart
            between /work/main and a fresh clone elsewhere, so within 0.05 %."""
            if want == have:
                return True
            if re.match(r"`[^`]*\.(tar\.gz|deb)`", label):
                parts = 1000
            elif re.match(r"(`[^`]*\.whl`|debug: )", label):
                parts = 2000
            else:
                return False
            try:
                w, h = int(want.replace(",", "")), int(have.replace(",", ""))
            except ValueError:
                return False
            return abs(w - h) <= w // parts
        for w, h in zip(want_rows[2:], have_rows[2:]):
            wc, hc = [c.strip() for c in w.split("|")], [c.strip() for c in h.split("|")]
            if wc[1] != hc[1] or not same(wc[1], wc[col], hc[col]):
                problems.append(f"BENCHMARKS.md sizes table, {arch}: {hc[1]} says {hc[col]}, {dist} has {wc[col]}"
                                + (f" (row named {wc[1]})" if wc[1] != hc[1] else ""))

# Inline figures: <!-- figure: NAME -->VALUE<!-- /figure -->.
docs = {p: p.read_text(encoding="utf-8") for p in
        [root / "README.md", bench, *sorted(root.glob("bindings/*/README.md")),
         root / "ffi/README.md", root / "mock/README.md", *sorted(root.glob("docs/*.md"))]}
docs[bench] = text
inline = re.compile(r"<!-- figure: ([a-z0-9-]+) -->(.*?)<!-- /figure -->", re.S)
for path, body in docs.items():
    def fill(m):
        name, value = m.group(1), m.group(2)
        if name not in fig:
            problems.append(f"{path.relative_to(root)}: unknown figure {name!r}")
        elif mode == "write":
            return f"<!-- figure: {name} -->{fig[name]}<!-- /figure -->"
        elif value != fig[name]:
            problems.append(f"{path.relative_to(root)}: figure {name} says {value!r}, the files give {fig[name]!r}")
        return m.group(0)
    docs[path] = inline.sub(fill, body)
if mode == "write":
    for path, body in docs.items():
        path.write_text(body, encoding="utf-8")

# Artifact file names of this platform that the documents give.
if mode == "check":
    debarch = {"x86_64": "amd64", "aarch64": "arm64"}[arch]
    other = {"x86_64": ("aarch64", "arm64"), "aarch64": ("x86_64", "amd64")}[arch]
    name = re.compile(r"(?<![\w.-])((?:lib)?payidem[\w.+-]*?\.(?:deb|whl|tar\.gz))(?![\w])")
    shipped = {p.name for p in dist.iterdir()}
    for path, body in docs.items():
        for n in sorted(set(name.findall(body))):
            spelt = n.replace("VERSION", version).replace("DEBARCH", debarch).replace("ARCH", arch)
            if any(o in spelt for o in other) or (arch not in spelt and debarch not in spelt):
                continue  # another platform's, or no platform's (e.g. a source tarball)
            if "…" in spelt or "*" in spelt:
                continue
            if spelt not in shipped:
                problems.append(f"{path.relative_to(root)}: names {n}, which {dist} does not hold")
for p in problems:
    print("sizes.sh:", p)
if problems:
    sys.exit(f"sizes.sh: {len(problems)} figure(s) or name(s) differ; `make docs-figures` rewrites the figures")
print(f"sizes.sh: every generated figure {'written' if mode == 'write' else 'matches the files'}"
      + (f"; every {arch} artifact name in the documents is a file of {dist}" if mode == "check" else ""))
PY
}

mode=print
case "${1:-}" in
    --write) mode=write; shift ;;
    --check)
        mode=check
        [ $# -ge 2 ] || { echo "usage: $0 --check x86_64|aarch64 [DIST]" >&2; exit 2; }
        arch=$2; shift 2
        case "$arch" in x86_64 | aarch64) ;; *) echo "sizes.sh: no platform $arch" >&2; exit 2 ;; esac
        ;;
esac
dist="$(cd "${1:-$root/dist}" && pwd)"

case "$mode" in
    print) table ;;
    write)
        # Each platform whose files are all in DIST gets its column rewritten;
        # a platform not built keeps the column it had (and says so).
        for a in x86_64 aarch64; do
            if column "$a" > "$work/col-$a" 2> "$work/col-$a.err" && [ "$(wc -l < "$work/col-$a")" -eq "${#rows[@]}" ]; then
                echo "sizes.sh: $a column measured from $dist" >&2
            else
                echo "sizes.sh: $a files not all in $dist: its column is kept as it was" >&2
                rm -f "$work/col-$a"
            fi
        done
        [ -f "$work/col-x86_64" ] || [ -f "$work/col-aarch64" ] || { echo "sizes.sh: no platform's files in $dist: run 'make dist'" >&2; exit 1; }
        {
            echo "| artifact (ARCH x86_64 / aarch64, DEBARCH amd64 / arm64) | Linux x86_64 | Linux aarch64 |"
            echo "| --- | ---: | ---: |"
            for i in "${!rows[@]}"; do
                echo "| ${rows[$i]} | $(sed -n "$((i + 1))p" "$work/col-x86_64" 2>/dev/null || true) | $(sed -n "$((i + 1))p" "$work/col-aarch64" 2>/dev/null || true) |"
            done
        } > "$work/table"
        echo "go-lib-sizes=$(go_lib_sizes)" > "$work/figures"
        docs "$work" write
        ;;
    check)
        # Only ARCH's column is compared: the other platform's files need not be there.
        mapfile -t col < <(column "$arch")
        if [ "${#col[@]}" -ne "${#rows[@]}" ]; then
            echo "sizes.sh: not every $arch file is in $dist" >&2
            exit 1
        fi
        {
            echo "| artifact (ARCH x86_64 / aarch64, DEBARCH amd64 / arm64) | Linux x86_64 | Linux aarch64 |"
            echo "| --- | ---: | ---: |"
            for i in "${!rows[@]}"; do
                echo "| ${rows[$i]} | ${col[$i]} | ${col[$i]} |"
            done
        } > "$work/table"
        echo "go-lib-sizes=$(go_lib_sizes)" > "$work/figures"
        docs "$work" check "$arch"
        ;;
esac
