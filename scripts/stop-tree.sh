# Sourced by scripts that run their work in the background and wait for it
# (.ci/run, scripts/test-lanes.sh): on Ctrl-C, SIGTERM or SIGHUP, every
# process the script started stops too, instead of running on after the
# script is gone. A shell without job control starts background commands
# with SIGINT ignored, and runs a trap only once its foreground command has
# ended but at once during `wait`: hence the background-and-wait.
#
#   . scripts/stop-tree.sh; stop_tree_on_signal NAME

# Every process started by process $1, deepest first.
descendants() {
    local child
    for child in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
        descendants "$child"
        echo "$child"
    done
}

# Installs the traps; NAME starts the line that says the script stops.
stop_tree_on_signal() {
    stop_tree_name=$1
    trap stop_tree INT TERM HUP
}

stop_tree() {
    trap - INT TERM HUP
    echo "$stop_tree_name: stopped; ending everything it started" >&2
    # shellcheck disable=SC2046 # one word per process id
    kill -TERM $(descendants $$) 2>/dev/null
    exit 130
}
