#!/usr/bin/env bash
# Runs the custom query of mysql.d/conf.yaml against a throwaway MariaDB on
# loopback with transactions left open behind Rails Query Logs comments, and
# compares its rows with `longtx collect --once` on the same server when a
# longtx binary is given (LONGTX=/path/to/longtx). Not part of check.py: it
# needs mariadb-server (Debian: apt-get install mariadb-server) and ~10 s.
#
#   bash deploy/datadog/custom-query-e2e.sh
#   LONGTX=target/debug/longtx bash deploy/datadog/custom-query-e2e.sh
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
port="${PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  if [[ -f "$work/my.pid" ]]; then kill "$(cat "$work/my.pid")" 2>/dev/null || true; fi
  sleep 1
  rm -rf "$work"
}
trap cleanup EXIT

mysql_install_db --no-defaults --user="$(id -un)" --datadir="$work/data" \
  --auth-root-authentication-method=socket --skip-test-db > "$work/install.log" 2>&1
mariadbd --no-defaults --user="$(id -un)" --datadir="$work/data" --socket="$work/my.sock" \
  --port="$port" --bind-address=127.0.0.1 --skip-name-resolve --pid-file="$work/my.pid" \
  --performance-schema=ON --performance-schema-instrument='wait/lock/metadata/sql/mdl=ON' \
  --performance-schema-consumer-events-statements-current=ON > "$work/mariadb.log" 2>&1 &
pids+=($!)
# As the current OS user's account: socket authentication admits root only
# for the OS user root (see deploy/e2e/lib.sh).
my() { mariadb --no-defaults --socket="$work/my.sock" -u"$(id -un)" "$@"; }
for _ in $(seq 60); do my -e 'SELECT 1' > /dev/null 2>&1 && break; sleep 0.5; done

my <<'SQL'
CREATE DATABASE shop;
CREATE TABLE shop.orders (id INT PRIMARY KEY) ENGINE=InnoDB;
CREATE TABLE shop.users (id INT PRIMARY KEY) ENGINE=InnoDB;
CREATE TABLE shop.carts (id INT PRIMARY KEY) ENGINE=InnoDB;
CREATE TABLE shop.invoices (id INT PRIMARY KEY) ENGINE=InnoDB;
CREATE TABLE shop.reports (id INT PRIMARY KEY) ENGINE=InnoDB;
CREATE TABLE shop.exports (id INT PRIMARY KEY) ENGINE=InnoDB;
CREATE TABLE shop.syncs (id INT PRIMARY KEY) ENGINE=InnoDB;
INSERT INTO shop.orders VALUES (1), (2);
INSERT INTO shop.users VALUES (1);
INSERT INTO shop.carts VALUES (1);
INSERT INTO shop.invoices VALUES (1);
INSERT INTO shop.reports VALUES (1);
INSERT INTO shop.exports VALUES (1);
INSERT INTO shop.syncs VALUES (1);
CREATE USER 'collector'@'127.0.0.1' IDENTIFIED BY 'collector-pw';
GRANT PROCESS ON *.* TO 'collector'@'127.0.0.1';
GRANT SELECT ON performance_schema.* TO 'collector'@'127.0.0.1';
SQL

# One open transaction per statement, for 20 s; --comments keeps the comment
# in the statement text.
hold() { { echo "BEGIN;"; echo "$1"; sleep 20; echo "ROLLBACK;"; } 2> /dev/null | my --comments shop > /dev/null 2>&1 & pids+=($!); }
hold "SELECT * FROM orders WHERE id = 1 FOR UPDATE /*application:Shop,namespaced_controller:admin/orders,action:update*/;"
sleep 2
hold "SELECT * FROM orders WHERE id = 2 FOR UPDATE /*sidekiq_worker:Billing::InvoiceSyncWorker,application:Shop*/;"
hold "/*action='update',application='Shop',controller='users',namespaced_controller='admin%2Fusers'*/ SELECT * FROM users WHERE id = 1 FOR UPDATE;"
hold "SELECT * FROM carts WHERE id = 1 FOR UPDATE;"
hold "SELECT * FROM invoices WHERE id = 1 FOR UPDATE /* plain note */ /*job='ExportJob',application='Shop'*/;"
hold "SELECT * FROM reports WHERE id = 1 FOR UPDATE /*rake_task:reports:monthly*/;"
hold "SELECT * FROM exports WHERE id = 1 FOR UPDATE /*application:Shop,controller:checkouts,action:create*/;"
hold "SELECT * FROM syncs WHERE id = 1 FOR UPDATE /*job='Billing%3A%3ASyncJob'*/;"
sleep 3
# Behind the holders of orders: a migration, and a read queued behind the
# migration's pending exclusive lock (both wait until the holders end).
{ my shop -e "ALTER TABLE orders ADD COLUMN note INT" > /dev/null 2>&1 || true; } & pids+=($!)
sleep 1
{ my shop -e "/*action:show*/ SELECT * FROM orders" > /dev/null 2>&1 || true; } & pids+=($!)
sleep 1

query="$(python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["instances"][0]["custom_queries"][0]["query"])' "$here/mysql.d/conf.yaml")"
echo "== custom query (as the Agent's user would run it)"
mariadb --no-defaults -h127.0.0.1 -P"$port" -ucollector -pcollector-pw -N -e "$query" \
  > "$work/agent.tsv"
awk -F'\t' '{print $2, $3}' "$work/agent.tsv" | sort | tee "$work/agent.txt"
echo "== waiters (table source ddl dml other)"
awk -F'\t' '$4 + $5 + $6 > 0 {print $2, $3, $4, $5, $6}' "$work/agent.tsv" | sort | tee "$work/agent-waiters.txt"
grep -qx 'orders admin/orders#update 1 1 0' "$work/agent-waiters.txt" \
  || { echo "the custom query did not count the ALTER and the read waiting on orders" >&2; exit 1; }

if [[ -n "${LONGTX:-}" ]]; then
  echo "== longtx collect --once"
  "$LONGTX" collect --dsn "mysql://collector:collector-pw@127.0.0.1:$port" --once 2> "$work/longtx.log" > "$work/longtx.prom"
  sed -n 's/^longtx_mdl_holder_max_tx_duration_seconds{table="\([^"]*\)",query_source="\([^"]*\)"}.*/\1 \2/p' \
    "$work/longtx.prom" | sort | tee "$work/longtx.txt"
  if diff -u "$work/longtx.txt" "$work/agent.txt"; then
    echo "SAME tables and sources as longtx collect"
  else
    echo "DIFFERENT from longtx collect (see above)"
    exit 1
  fi
  python3 - "$work/longtx.prom" > "$work/longtx-waiters.txt" <<'PY'
import re, sys
counts = {}
for line in open(sys.argv[1]):
    m = re.match(r'longtx_mdl_waiters\{table="([^"]*)",query_source="([^"]*)",kind="([^"]*)"\} (\S+)', line)
    if m:
        counts.setdefault((m[1], m[2]), {})[m[3]] = int(float(m[4]))
for (table, source), k in sorted(counts.items()):
    print(table, source, k.get("ddl", 0), k.get("dml", 0), k.get("other", 0))
PY
  if diff -u "$work/longtx-waiters.txt" "$work/agent-waiters.txt"; then
    echo "SAME waiters as longtx collect"
  else
    echo "DIFFERENT waiters from longtx collect (see above)"
    exit 1
  fi
fi
