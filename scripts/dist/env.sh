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
