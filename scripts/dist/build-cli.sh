#!/usr/bin/env bash
# Builds the `payidem` command for legacy Linux hosts (glibc 2.17, through
# zig, profile `dist`, like the library and the mock) and stages what
# `make install` copies, in target/dist-stage/cli-x86_64/:
#
#   bin/payidem                                    stripped, links its debug file
#   payidem.debug                                  its debug info
#   share/man/man1/payidem.1                       the manual page
#   share/bash-completion/completions/payidem      completions, from the
#   share/zsh/site-functions/_payidem              binary itself
#   share/fish/vendor_completions.d/payidem.fish
#
# A directory of its own: scripts/dist/build-c.sh rewrites
# target/dist-stage/x86_64 and must not drop the command.
#
#   scripts/dist/build-cli.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=scripts/dist/env.sh
. "$root/scripts/dist/env.sh"
cd "$root"
triple=x86_64-unknown-linux-gnu

cargo zigbuild --locked --profile dist -p payidem-cli --bin payidem --target "$triple.2.17" >&2

built="$CARGO_TARGET_DIR/$triple/dist/payidem"
stage="$root/target/dist-stage/cli-x86_64"
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/share/man/man1" "$stage/share/bash-completion/completions" \
    "$stage/share/zsh/site-functions" "$stage/share/fish/vendor_completions.d"
objcopy --target elf64-x86-64 --only-keep-debug "$built" "$stage/payidem.debug"
(cd "$stage" && objcopy --target elf64-x86-64 --strip-all \
    --add-gnu-debuglink=payidem.debug "$built" bin/payidem)
chmod 0755 "$stage/bin/payidem"
"$stage/bin/payidem" man > "$stage/share/man/man1/payidem.1"
"$stage/bin/payidem" completions bash > "$stage/share/bash-completion/completions/payidem"
"$stage/bin/payidem" completions zsh > "$stage/share/zsh/site-functions/_payidem"
"$stage/bin/payidem" completions fish > "$stage/share/fish/vendor_completions.d/payidem.fish"
ls -lR "$stage" >&2
