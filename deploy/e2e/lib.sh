# Shared by the end-to-end scripts: a work directory removed at exit (with
# the logs shown when the run failed), servers stopped, and small helpers.
# Source it after setting `name` (the prefix of every line printed).
# shellcheck shell=bash

work=$(mktemp -d "/tmp/longtx-$name.XXXXXX")
chmod 755 "$work"
pids=()
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
cleanup() {
    status=$?
    rm -f "$work/holding"
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    pkill -f -- "$work" 2>/dev/null || true
    [ -f "$work/pg/postmaster.pid" ] && as_postgres "$pg_bin/pg_ctl" -D "$work/pg" -m immediate stop >/dev/null 2>&1 || true
    if [ "$status" -ne 0 ]; then
        echo "$name: FAILED; logs follow" >&2
        for log in "$work"/*.log; do echo "--- $log" >&2; tail -n 40 "$log" >&2; done
    fi
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT

step() { echo "$name: $*"; }
# Prints $1 free local ports, all different: the sockets are held together
# while the kernel picks, since one port picked and released at a time can be
# handed out twice (the collector e2e once got MariaDB's port for PostgreSQL).
ports() {
    python3 -c 'import socket, sys
held = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in held:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in held))' "$1"
}
# Waits up to $1 seconds for the command after it to succeed.
wait_for() {
    local deadline=$((SECONDS + $1)); shift
    until "$@" >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$deadline" ]; then echo "$name: timed out waiting for: $*" >&2; return 1; fi
        sleep 0.5
    done
}
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# A private MariaDB on 127.0.0.1:$1 (more mariadbd options after it), with
# what the collector needs: performance_schema, the MDL instrument and the
# current-statements consumer. `my` talks to it over its socket as the
# current OS user's account: socket authentication admits root@localhost only
# for the OS user root, and mysql_install_db --user=X makes X@localhost too,
# so a non-root CI user (GitHub's runner) connects as itself.
start_mariadb() {
    local port=$1; shift
    mysql_install_db --no-defaults --user="$(id -un)" --datadir="$work/mysql" --auth-root-authentication-method=socket \
        --skip-test-db > "$work/mariadb-install.log" 2>&1
    mariadbd --no-defaults --user="$(id -un)" --datadir="$work/mysql" --socket="$work/mysql.sock" \
        --port="$port" --bind-address=127.0.0.1 --skip-name-resolve --pid-file="$work/mysql.pid" \
        --performance-schema=ON --performance-schema-instrument='wait/lock/metadata/sql/mdl=ON' \
        --performance-schema-consumer-events-statements-current=ON "$@" \
        > "$work/mariadb.log" 2>&1 &
    pids+=($!)
    wait_for 60 my -e 'SELECT 1'
}
my() { mariadb --no-defaults --socket="$work/mysql.sock" -u"$(id -un)" "$@"; }
