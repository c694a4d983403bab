#!/bin/sh
# Installs the Debian packages that are missing, in one apt-get run.
#
#   scripts/apt-ensure.sh PACKAGE[=COMMAND] ...
#
# PACKAGE=COMMAND: present when COMMAND is on PATH (whatever provides it);
# PACKAGE alone: present when dpkg holds it fully installed ("install ok
# installed"; a package half-installed, unpacked but not configured, or
# removed with its configuration kept is missing). A dpkg run that was
# interrupted is finished first (`dpkg --configure -a`), or apt-get would
# refuse to install anything. Fails, naming them, when packages are still
# missing afterwards.
set -eu

[ "$#" -gt 0 ] || { echo "usage: $0 PACKAGE[=COMMAND] ..." >&2; exit 2; }

# Prints the packages of the arguments that are missing.
missing() {
    for spec in "$@"; do
        package=${spec%%=*}
        case "$spec" in
        *=*)
            command -v "${spec#*=}" >/dev/null 2>&1 || echo "$package"
            ;;
        *)
            status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
            [ "$status" = "install ok installed" ] || echo "$package"
            ;;
        esac
    done
}

todo=$(missing "$@" | tr '\n' ' ')
[ -n "$todo" ] || exit 0
echo "installing ${todo% }" >&2
if [ -n "$(dpkg --audit 2>/dev/null)" ]; then
    DEBIAN_FRONTEND=noninteractive dpkg --configure -a >/dev/null
fi
apt-get update -qq >&2
# shellcheck disable=SC2086 # one word per package
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $todo >/dev/null
left=$(missing "$@" | tr '\n' ' ')
if [ -n "$left" ]; then
    echo "$0: still missing after apt-get install: ${left% }" >&2
    exit 1
fi
