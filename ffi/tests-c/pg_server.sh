#!/bin/sh
# A throwaway PostgreSQL server for the C, Go and Python tests, as
# e2e/src/pg.rs starts one for the Rust tests: initdb (trust
# authentication, no fsync) into a directory, pg_ctl start on a unix socket
# in that directory (no TCP). PostgreSQL refuses to run as root: as root the
# directory is given to the postgres user and initdb/pg_ctl run through
# `runuser -u postgres --`.
#
#   pg_server.sh start DIR    starts a server in DIR (which must exist and be
#                             empty); prints its URL (postgresql://postgres@/postgres?host=DIR,
#                             or postgresql://postgres@127.0.0.1:PORT/postgres with
#                             PAYIDEM_PG_TCP_PORT=PORT, which adds a 127.0.0.1 listener)
#   pg_server.sh stop DIR     stops it (pg_ctl stop -m immediate)
#   pg_server.sh watch PID DIR  once process PID has exited, stops the
#                             server in DIR and removes DIR (see below)
#   pg_server.sh run CMD ...  starts one in a temporary directory, runs CMD
#                             with PAYIDEM_PG_URL set to its URL, stops it
#                             and exits with CMD's status
#
# The binaries are PAYIDEM_PG_BIN or the newest /usr/lib/postgresql/*/bin
# (`make pg-deps` installs them). A server that cannot start is an error
# (status 1, the reason and the server log on stderr), never a skip.
#
# `start` also watches its caller (the script's parent, or
# PAYIDEM_PG_OWNER): a test killed before its own clean-up (SIGKILL, a CI
# timeout) leaves neither a running server nor its directory behind. The
# watcher polls once a second, in a session of its own with INT, TERM and
# HUP ignored (whoever stops the test's process tree must not stop it
# first), and ends as soon as DIR is gone (the test cleaned up itself).
set -eu

find_bin() {
    if [ -n "${PAYIDEM_PG_BIN:-}" ]; then
        echo "$PAYIDEM_PG_BIN"
        return
    fi
    bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
        echo "no PostgreSQL server: no /usr/lib/postgresql/*/bin/initdb; run \`make pg-deps\` (apt-get install postgresql) or set PAYIDEM_PG_BIN" >&2
        exit 1
    fi
    echo "$bin"
}

as_server_user() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

start() {
    dir=$1
    bin=$(find_bin)
    if [ "$(id -u)" = 0 ]; then
        chown postgres: "$dir" || { echo "cannot give $dir to the postgres user (does it exist?)" >&2; exit 1; }
    fi
    as_server_user "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C -N \
        >"$dir/initdb.log" 2>&1 || { echo "initdb failed:" >&2; cat "$dir/initdb.log" >&2; exit 1; }
    # PAYIDEM_PG_TCP_PORT (for clients without unix sockets, e.g. JDBC): also
    # listen on 127.0.0.1 at that port, and print a TCP URL.
    listen="''"
    [ -z "${PAYIDEM_PG_TCP_PORT:-}" ] || listen="127.0.0.1 -p $PAYIDEM_PG_TCP_PORT"
    as_server_user "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-k $dir -c listen_addresses=$listen -c unix_socket_permissions=0777" start \
        >"$dir/pg_ctl.log" 2>&1 || {
        echo "pg_ctl start failed:" >&2
        cat "$dir/pg_ctl.log" "$dir/server.log" >&2 2>/dev/null || true
        exit 1
    }
    if [ -n "${PAYIDEM_PG_TCP_PORT:-}" ]; then
        echo "postgresql://postgres@127.0.0.1:$PAYIDEM_PG_TCP_PORT/postgres"
    else
        echo "postgresql://postgres@/postgres?host=$dir"
    fi
}

stop() {
    dir=$1
    bin=$(find_bin)
    as_server_user "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
}

watch() {
    owner=$1 dir=$2
    bin=$(find_bin)
    runas=
    [ "$(id -u)" != 0 ] || runas="runuser -u postgres --"
    # Self-contained: the script itself may be a temporary copy, gone by then.
    setsid sh -c '
        trap "" INT TERM HUP
        while kill -0 "$1" 2>/dev/null && [ -d "$2" ]; do sleep 1; done
        [ -d "$2" ] || exit 0
        $4 "$3/pg_ctl" -D "$2/data" -m immediate -w stop >/dev/null 2>&1
        rm -rf "$2"' watch "$owner" "$dir" "$bin" "$runas" </dev/null >/dev/null 2>&1 &
}

case "${1:-}" in
start)
    watch "${PAYIDEM_PG_OWNER:-$PPID}" "$2"
    start "$2"
    ;;
stop)
    stop "$2"
    ;;
watch)
    watch "$2" "$3"
    ;;
run)
    shift
    dir=$(mktemp -d /tmp/payidem-pg.XXXXXX)
    chmod 755 "$dir"
    trap 'stop "$dir"; rm -rf "$dir"' EXIT
    watch $$ "$dir"
    PAYIDEM_PG_URL=$(start "$dir")
    export PAYIDEM_PG_URL
    status=0
    "$@" || status=$?
    exit "$status"
    ;;
*)
    echo "usage: $0 start DIR | stop DIR | watch PID DIR | run CMD [ARG...]" >&2
    exit 2
    ;;
esac
