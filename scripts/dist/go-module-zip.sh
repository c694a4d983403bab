#!/usr/bin/env bash
# Writes the Go module as a module proxy directory, the route to the module
# before it is published (bindings/go/README.md, "Install"):
#
#   scripts/dist/go-module-zip.sh [MODULE_DIR [PROXY_DIR]]
#
# MODULE_DIR defaults to bindings/go, PROXY_DIR to dist/goproxy. Writes
# PROXY_DIR/github.com/payidem/payidem/bindings/go/@v/ with vVERSION.zip
# (the module's files under MODULE@vVERSION/, as the go command's module
# zips hold them), vVERSION.mod, vVERSION.info and list; VERSION is the
# workspace's (Cargo.toml). `GOPROXY=file://PROXY_DIR go get MODULE@vVERSION`
# then fetches it like a published module. Prints the zip's path.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
module_dir="$(cd "${1:-$root/bindings/go}" && pwd)"
proxy_dir="${2:-$root/dist/goproxy}"
module_path=github.com/payidem/payidem/bindings/go
version="v$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n 1)"
epoch="${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 315532800)}"

at="$proxy_dir/$module_path/@v"
mkdir -p "$at"
rm -f "$at/$version.zip"
cp "$module_dir/go.mod" "$at/$version.mod"
# In a checkout, the files git tracks (nothing a local build left there);
# in a copy of the module, every file.
list="$(mktemp)"
trap 'rm -f "$list"' EXIT
if git -C "$module_dir" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$module_dir" ls-files . > "$list"
else
    (cd "$module_dir" && find . -type f ! -path './.git/*' | sed 's|^\./||') > "$list"
fi
python3 - "$module_dir" "$list" "$at/$version.zip" "$module_path@$version" "$epoch" <<'PY'
import os, sys, time, zipfile
src, listing, out, prefix, epoch = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
stamp = time.gmtime(max(epoch, 315532800))[:6]
with open(listing, encoding="utf-8") as fh:
    names = sorted(n for n in fh.read().splitlines() if n)
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for name in names:
        info = zipfile.ZipInfo(prefix + "/" + name, stamp)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        with open(os.path.join(src, name), "rb") as fh:
            z.writestr(info, fh.read())
PY
printf '{"Version":"%s","Time":"%s"}\n' "$version" "$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)" > "$at/$version.info"
printf '%s\n' "$version" > "$at/list"
echo "$at/$version.zip"
