#!/usr/bin/env bash
# Makes an arm64 Debian root in DIR without root privileges and without
# running arm64 code: what scripts/dist/test-arm64.sh runs its tests in.
#
#   scripts/dist/arm64-root.sh DIR SUITE MIRROR PACKAGE...
#
# debootstrap's first stage (--foreign --variant=minbase, under fakeroot
# when not root) chooses the packages (Priority: required, apt and the
# PACKAGEs with their dependencies) and downloads them. Instead of its second
# stage (every package installed again by dpkg under qemu: minutes), each
# package is unpacked here by the host's dpkg-deb and tar, and recorded in
# the root's dpkg database as installed (its control file in status; its
# file list, md5sums and maintainer scripts in info/), so that the root's own
# dpkg resolves dependencies and installs further packages as on any Debian
# system. The packages' maintainer scripts are not run (no alternatives, no
# byte-compiled Python, no generated configuration); of what they do, the
# root gets /etc/passwd and /etc/group from base-passwd's masters and the
# directories of base-files' postinst (/opt, /usr/local/…) here, and its
# loader cache when the user runs `ldconfig` in it (an arm64 program).
#
# The files belong to the user who ran this; in a user namespace mapping that
# user to root (test-arm64.sh's session) they are root's.
set -euo pipefail

[ $# -ge 3 ] || { echo "usage: $0 DIR SUITE MIRROR [PACKAGE...]" >&2; exit 2; }
aroot=$1 suite=$2 mirror=$3
shift 3
include="$(IFS=,; echo "$*")"
as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(fakeroot)
log="$(dirname "$aroot")/debootstrap.log"
"${as_root[@]}" debootstrap --foreign --arch=arm64 --variant=minbase ${include:+--include="$include"} \
    "$suite" "$aroot" "$mirror" > "$log" 2>&1 || {
    tail -n 30 "$log" >&2
    echo "arm64-root.sh: debootstrap (first stage) failed" >&2
    exit 1
}
# The first stage links proc to the host's /proc; whoever enters the root binds it.
rm -f "$aroot/proc" && mkdir -p "$aroot/proc"

admin="$aroot/var/lib/dpkg"
mkdir -p "$admin/info" "$admin/updates"
: > "$admin/status"
# Info files named pkg:arch for Multi-Arch: same packages (dpkg's database format 1).
echo 1 > "$admin/info/format"
control="$(mktemp -d)"
trap 'rm -rf "$control"' EXIT
# debpaths: "package /var/cache/apt/archives/file.deb", one per package chosen.
while read -r package path; do
    deb="$aroot$path"
    rm -rf "$control" && mkdir "$control"
    dpkg-deb -e "$deb" "$control"
    name=$package
    if grep -qx 'Multi-Arch: same' "$control/control"; then
        name="$package:$(sed -n 's/^Architecture: //p' "$control/control")"
    fi
    # tar -v names what it extracted ("./", "./usr/bin/x"); dpkg lists "/." and "/usr/bin/x".
    dpkg-deb --fsys-tarfile "$deb" |
        tar -x -v -C "$aroot" --keep-directory-symlink --no-same-owner -f - |
        sed -e 's|^\./$|/.|' -e 's|^\.||' -e 's|/$||' > "$admin/info/$name.list"
    for f in "$control"/*; do
        [ "$(basename "$f")" = control ] || cp -p "$f" "$admin/info/$name.$(basename "$f")"
    done
    { sed '/^Package: /a Status: install ok installed' "$control/control"; echo; } >> "$admin/status"
done < "$aroot/debootstrap/debpaths"
# The directories base-files' postinst makes.
for d in mnt srv opt etc/opt var/opt media var/mail usr/local/bin usr/local/etc usr/local/games usr/local/include \
    usr/local/lib usr/local/sbin usr/local/share/man usr/local/src; do
    mkdir -p "$aroot/$d"
done
cp "$aroot/usr/share/base-passwd/passwd.master" "$aroot/etc/passwd"
cp "$aroot/usr/share/base-passwd/group.master" "$aroot/etc/group"
rm -rf "$aroot/var/cache/apt/archives/"*.deb "$aroot/debootstrap"
echo "arm64-root.sh: $(grep -c '^Package: ' "$admin/status") packages unpacked into $aroot"
