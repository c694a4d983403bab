# Sourced by the scripts/dist build scripts: the one build environment of
# every release artifact, so that they share compiled dependencies and come
# out the same from the same commit.
#
# Sets and exports: PATH (with the pinned tools of tools.sh first),
# CARGO_TARGET_DIR (absolute), SOURCE_DATE_EPOCH (the last commit's time) and
# RUSTFLAGS with the build paths remapped out of the binaries (panic
# locations name /payidem, /cargo, /rustc and /target, not this machine's
# directories). Expects $root, the repository root.

dist_tools="$("$root/scripts/dist/tools.sh")"
PATH="$dist_tools:$PATH"
export PATH

CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
case "$CARGO_TARGET_DIR" in
    /*) ;;
    *) CARGO_TARGET_DIR="$root/$CARGO_TARGET_DIR" ;;
esac
export CARGO_TARGET_DIR

SOURCE_DATE_EPOCH="$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 315532800)"
export SOURCE_DATE_EPOCH

# RUSTFLAGS is a space-separated list, so a path with blanks is left alone
# (the build still works; it is only less reproducible across machines).
# rustc applies the last matching rule, so the checkout comes after the
# target dir (which is usually inside it).
dist_remap=()
for dist_pair in "$CARGO_TARGET_DIR=/target" "$root=/payidem" "${CARGO_HOME:-$HOME/.cargo}=/cargo" \
    "$(rustc --print sysroot)=/rustc"; do
    case "${dist_pair%=*}" in
        *[[:space:]]*) echo "dist: not remapping '${dist_pair%=*}' (contains blanks)" >&2 ;;
        *) dist_remap+=("--remap-path-prefix=$dist_pair") ;;
    esac
done
RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }${dist_remap[*]}"
export RUSTFLAGS
unset dist_pair dist_remap

# dist_publish_stage NEW STAGE: the directory NEW (built beside STAGE, on
# the same file system) becomes STAGE. When STAGE already holds the same
# files, it is left untouched and NEW dropped, so that a suite reading
# STAGE while another rebuilds it (make test's two lanes) never sees it
# change; otherwise it is replaced by two renames, never emptied first.
dist_publish_stage() {
    if [ -d "$2" ] && diff -r -q "$1" "$2" >/dev/null 2>&1; then
        rm -rf "$1"
        return
    fi
    rm -rf "$2.old"
    if [ -e "$2" ]; then mv -T "$2" "$2.old"; fi
    mv -T "$1" "$2"
    rm -rf "$2.old"
}
