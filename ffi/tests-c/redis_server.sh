#!/bin/sh
# Starts a throwaway redis-server for the tests (Rust, C, Go, Python, Java):
# each harness runs
#
#   redis_server.sh [--dir DIR] BINARY [ARG...]
#
# instead of `BINARY ARG...` (BINARY is the harness's redis-server:
# PAYIDEM_REDIS_SERVER, or redis-server on the PATH). The script starts a
# watcher of its caller, then execs BINARY with ARGs: the process the
# harness started IS redis-server (same PID, same stdin/stdout/stderr), so
# the harness stops, kills and restarts it as it would without the script.
#
# The watcher keeps a test killed before its own clean-up (SIGKILL, a CI
# timeout) from leaving a running redis-server (reparented to init) and its
# directory behind, as `pg_server.sh watch` does for PostgreSQL: once the
# caller (the script's parent, or PAYIDEM_REDIS_OWNER) has exited while the
# server still runs, it kills the server (SIGKILL) and removes DIR, when
# given. When the server exits first (the test stopped it, e.g. to simulate
# a crash before restarting it through the script again) the watcher ends
# at once and removes nothing. It polls once a second, in a session of its
# own with INT, TERM and HUP ignored (whoever stops the test's process tree
# must not stop it first), with stdin, stdout and stderr on /dev/null (it
# never holds the test's pipes open), and is self-contained: the script may
# be a temporary copy, gone by then. On Linux a process is told apart from
# a later one with the same PID by its start time (/proc/PID/stat), and a
# zombie counts as exited.
#
# A BINARY that cannot be found is an error (status 127, the reason on
# stderr), never a skip; no watcher is started then.
set -eu

usage() {
    echo "usage: $0 [--dir DIR] BINARY [ARG...]" >&2
    exit 2
}

dir=
case "${1:-}" in
--dir)
    if [ $# -lt 2 ] || [ -z "$2" ]; then usage; fi
    dir=$2
    shift 2
    ;;
--* | '')
    usage
    ;;
esac
[ $# -ge 1 ] || usage

if ! command -v "$1" >/dev/null 2>&1; then
    echo "cannot start $1: not found; the Redis tests need a real redis-server: run \`make redis-deps\` (apt-get install -y redis-server) or set PAYIDEM_REDIS_SERVER" >&2
    exit 127
fi

# The watcher: $1 owner, $2 server (this process, redis-server once
# exec'd), $3 DIR or "". Its script expands its own arguments:
# shellcheck disable=SC2016
setsid sh -c '
    trap "" INT TERM HUP
    # ident PID: empty once PID has exited (or is a zombie), else what tells
    # it apart from a later process with the same PID.
    ident() {
        if [ -r /proc/$$/stat ]; then
            { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 0
            set -f
            set -- ${stat##*) }
            set +f
            case $1 in Z | X | x) return 0 ;; esac
            echo "${20}"
        elif kill -0 "$1" 2>/dev/null; then
            echo alive
        fi
    }
    owner=$(ident "$1") server=$(ident "$2")
    while :; do
        [ -n "$server" ] && [ "$(ident "$2")" = "$server" ] || exit 0
        [ -n "$owner" ] && [ "$(ident "$1")" = "$owner" ] || break
        sleep 1
    done
    kill -s KILL "$2" 2>/dev/null
    i=0
    while [ "$i" -lt 50 ] && [ "$(ident "$2")" = "$server" ]; do
        sleep 0.1 2>/dev/null || sleep 1
        i=$((i + 1))
    done
    [ -z "$3" ] || rm -rf "$3"
' payidem-redis-watch "${PAYIDEM_REDIS_OWNER:-$PPID}" "$$" "$dir" </dev/null >/dev/null 2>&1 &

exec "$@"
