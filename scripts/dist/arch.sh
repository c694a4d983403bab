# Sourced by the scripts/dist build scripts, with their arguments
# (`. arch.sh "$@"`): takes `[--arch x86_64|aarch64]` (default x86_64, no
# other argument) into $arch, and sets what that Linux architecture of the
# release needs:
#
#   triple      the Rust target (built at glibc 2.17: "$triple.2.17" for zig)
#   bfd         the BFD target objcopy and nm are told to use
#   tool_prefix the prefix of that architecture's binutils (empty for the host's)
#   debarch     the Debian architecture; multiarch its multiarch triplet
#
# and installs the binutils of that architecture (Debian package
# binutils-aarch64-linux-gnu) when they are missing.
arch=x86_64
while [ $# -gt 0 ]; do
    if [ "$1" = --arch ] && [ $# -ge 2 ]; then
        arch=$2
        shift 2
    else
        echo "usage: $0 [--arch x86_64|aarch64]" >&2
        exit 2
    fi
done
case "$arch" in
    x86_64) bfd=elf64-x86-64; tool_prefix=; debarch=amd64; multiarch=x86_64-linux-gnu ;;
    aarch64) bfd=elf64-littleaarch64; tool_prefix=aarch64-linux-gnu-; debarch=arm64; multiarch=aarch64-linux-gnu ;;
    *) echo "$(basename "$0"): unsupported arch '$arch' (x86_64 or aarch64)" >&2; exit 2 ;;
esac
triple="$arch-unknown-linux-gnu"
"$(dirname "${BASH_SOURCE[0]}")/../apt-ensure.sh" \
    "binutils${tool_prefix:+-${tool_prefix%-}}=${tool_prefix}objcopy"
# A fresh machine has only the host's Rust target.
if ! rustup target list --installed 2>/dev/null | grep -qx "$triple"; then
    rustup target add "$triple" >&2
fi
