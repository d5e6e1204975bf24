#!/usr/bin/env bash
# End to end, with real servers on loopback: a transaction opened with a
# Rails Query Logs comment and left open in MariaDB and in PostgreSQL, an
# ALTER TABLE blocked behind each, `longtx collect` reporting the holder,
# Prometheus scraping it with the shipped rules, Alertmanager delivering
# with the shipped config, and `longtx serve` creating a job per source.
#
# Needs mariadb-server, postgresql, prometheus and prometheus-alertmanager
# (Debian packages; .ci/run installs them). The shipped rules and config
# are used with three edits for speed: threshold 100 s -> 3 s, `for` 1m ->
# 2s, group_wait 30s -> 1s, plus the receiver's URL and token file.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD

name=e2e
# shellcheck source=deploy/e2e/lib.sh
source "$repo/deploy/e2e/lib.sh"

read -r my_port pg_port serve_port c1_port c2_port prom_port am_port < <(ports 7)
token=e2e-token-$RANDOM$RANDOM
printf '%s' "$token" > "$work/token"

step "building longtx"
cargo build --quiet --locked -p longtx
longtx=${CARGO_TARGET_DIR:-$repo/target}/debug/longtx

step "starting MariaDB on 127.0.0.1:$my_port"
start_mariadb "$my_port"
my <<'SQL'
CREATE DATABASE shop;
CREATE TABLE shop.orders (id INT PRIMARY KEY, total INT) ENGINE=InnoDB;
INSERT INTO shop.orders VALUES (1, 10);
-- What the collector needs, and nothing more: PROCESS for innodb_trx,
-- SELECT on performance_schema.
CREATE USER 'collector'@'127.0.0.1' IDENTIFIED BY 'collector-pw';
GRANT PROCESS ON *.* TO 'collector'@'127.0.0.1';
GRANT SELECT ON performance_schema.* TO 'collector'@'127.0.0.1';
SQL

step "starting PostgreSQL on 127.0.0.1:$pg_port"
mkdir -p "$work/pg" "$work/pgsock"
touch "$work/postgres.log"
if [ "$(id -u)" = 0 ]; then chown postgres "$work/pg" "$work/pgsock" "$work/postgres.log"; fi
as_postgres "$pg_bin/initdb" -D "$work/pg" -U app -A trust > "$work/pg-initdb.log" 2>&1
as_postgres "$pg_bin/pg_ctl" -D "$work/pg" -l "$work/postgres.log" -w \
    -o "-p $pg_port -k $work/pgsock -c listen_addresses=127.0.0.1" start > /dev/null
pg() { psql -X -q -h 127.0.0.1 -p "$pg_port" -U app "$@"; }
pg -d postgres -c 'CREATE DATABASE shop'
pg -d shop -c 'CREATE TABLE orders (id int PRIMARY KEY, total int); INSERT INTO orders VALUES (1, 10);'

step "opening a long transaction in each, and an ALTER TABLE behind it"
# Keeps a client's stdin open (its transaction with it) until cleanup
# removes the work directory.
touch "$work/holding"
hold() { while [ -e "$work/holding" ]; do sleep 0.5; done; }
# --comments: the mariadb client strips comments otherwise.
{ echo "BEGIN;"
  echo "SELECT * FROM orders WHERE id = 1 FOR UPDATE /*application:Shop,namespaced_controller:admin/orders,action:update*/;"
  hold; } | my --comments shop > "$work/mariadb-holder.log" 2>&1 &
pids+=($!)
{ echo "BEGIN;"
  echo "SELECT * FROM orders WHERE id = 1 FOR UPDATE /*sidekiq_worker:Billing::InvoiceSyncWorker,application:Shop*/;"
  hold; } | pg -d shop > "$work/pg-holder.log" 2>&1 &
pids+=($!)
sleep 1
my shop -e 'ALTER TABLE orders ADD COLUMN note INT' > "$work/mariadb-alter.log" 2>&1 &
pids+=($!)
pg -d shop -c 'ALTER TABLE orders ADD COLUMN note int' > "$work/pg-alter.log" 2>&1 &
pids+=($!)
mariadb_alter_blocked() { my -N -e "SELECT 1 FROM information_schema.processlist WHERE info LIKE 'ALTER TABLE orders%' AND state LIKE 'Waiting for table metadata lock'" | grep -q 1; }
pg_alter_blocked() { pg -d shop -At -c "SELECT 1 FROM pg_stat_activity WHERE query LIKE 'ALTER TABLE orders%' AND wait_event_type = 'Lock'" | grep -q 1; }
wait_for 20 mariadb_alter_blocked
wait_for 20 pg_alter_blocked

step "starting longtx serve on 127.0.0.1:$serve_port and two collectors"
env -u GITHUB_TOKEN -u LONGTX_GITHUB_TOKEN -u DATABASE_URL \
    LONGTX_LISTEN="127.0.0.1:$serve_port" LONGTX_DATA_DIR="$work/longtx" LONGTX_WEBHOOK_TOKEN="$token" \
    LONGTX_THRESHOLD_SECONDS=3 LONGTX_IGNORE_LIST="$work/ignore-list.yaml" \
    "$longtx" serve > "$work/serve.log" 2>&1 &
pids+=($!)
"$longtx" collect --dsn "mysql://collector:collector-pw@127.0.0.1:$my_port" \
    --listen "127.0.0.1:$c1_port" --interval 1s > "$work/collect-mariadb.log" 2>&1 &
pids+=($!)
"$longtx" collect --dsn "postgres://app@127.0.0.1:$pg_port/shop" \
    --listen "127.0.0.1:$c2_port" --interval 1s > "$work/collect-postgres.log" 2>&1 &
pids+=($!)
wait_for 60 curl -fsS "http://127.0.0.1:$serve_port/readyz"

holder_reported() { curl -fsS "http://127.0.0.1:$1/metrics" | grep -F "longtx_mdl_holder_max_tx_duration_seconds{$2}"; }
wait_for 30 holder_reported "$c1_port" 'table="orders",query_source="admin/orders#update"'
wait_for 30 holder_reported "$c2_port" 'table="orders",query_source="Billing::InvoiceSyncWorker"'
step "both collectors report the holder of orders with its query_source:"
curl -fsS "http://127.0.0.1:$c1_port/metrics" "http://127.0.0.1:$c2_port/metrics" | grep '^longtx_mdl_holder' | sed 's/^/    /'
if curl -fsS "http://127.0.0.1:$c1_port/metrics" "http://127.0.0.1:$c2_port/metrics" | grep -q "FOR UPDATE"; then
    echo "e2e: SQL text leaked into the metrics" >&2; exit 1
fi

step "starting Prometheus (shipped rules, threshold 3 s) and Alertmanager (shipped config)"
rules=$work/longtx-rules.yml
sed -e 's/) > 100$/) > 3/' -e 's/^        for: 1m$/        for: 2s/' deploy/prometheus/longtx-rules.yml > "$rules"
grep -q ') > 3$' "$rules" && grep -q 'for: 2s' "$rules" || { echo "e2e: the rules edit did not apply" >&2; exit 1; }
promtool check rules "$rules" > /dev/null
cat > "$work/prometheus.yml" <<YAML
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: ["$rules"]
alerting:
  alertmanagers: [{static_configs: [{targets: ["127.0.0.1:$am_port"]}]}]
scrape_configs:
  - job_name: longtx-collect
    static_configs: [{targets: ["127.0.0.1:$c1_port", "127.0.0.1:$c2_port"]}]
YAML
am=$work/alertmanager.yml
sed -e "s#http://longtx.internal:8080#http://127.0.0.1:$serve_port#" -e "s#/etc/alertmanager/longtx-token#$work/token#" \
    -e 's/group_wait: 30s/group_wait: 1s/' deploy/alertmanager/longtx.yml > "$am"
grep -q "127.0.0.1:$serve_port" "$am" || { echo "e2e: the Alertmanager edit did not apply" >&2; exit 1; }
amtool check-config "$am" > /dev/null
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prom-data" \
    --web.listen-address="127.0.0.1:$prom_port" > "$work/prometheus.log" 2>&1 &
pids+=($!)
prometheus-alertmanager --config.file="$am" --storage.path="$work/am-data" \
    --web.listen-address="127.0.0.1:$am_port" --cluster.listen-address= > "$work/alertmanager.log" 2>&1 &
pids+=($!)

jobs_for_both() {
    curl -fsS -H "Authorization: Bearer $token" "http://127.0.0.1:$serve_port/api/jobs" | python3 -c '
import json, sys
jobs = {j["query_source"]: j for j in json.load(sys.stdin)["jobs"]}
for source in ("admin/orders#update", "Billing::InvoiceSyncWorker"):
    job = jobs[source]
    assert job["tables"] == ["orders"], job
    assert job["max_duration_seconds"] >= 3, job
print("jobs:", ", ".join("%s -> job %d (%s, %.0f s)" % (s, j["id"], j["state"], j["max_duration_seconds"]) for s, j in sorted(jobs.items())))
'
}
wait_for 120 jobs_for_both
step "$(jobs_for_both)"

# The blocked ALTERs reached each job through the rule's `waiters`
# annotation: its impact names them.
waiters_reached_jobs() {
    for id in $(curl -fsS -H "Authorization: Bearer $token" "http://127.0.0.1:$serve_port/api/jobs" \
                | python3 -c 'import json, sys; print(" ".join(str(j["id"]) for j in json.load(sys.stdin)["jobs"]))'); do
        curl -fsS -H "Authorization: Bearer $token" "http://127.0.0.1:$serve_port/api/jobs/$id" | python3 -c '
import json, sys
job = json.load(sys.stdin)
why = job["queue"]["impact"]["why"]
assert why.startswith("1 schema change"), why
print("job %d: %s" % (job["job"]["id"], why))
' || return 1
    done
}
wait_for 60 waiters_reached_jobs
step "$(waiters_reached_jobs)"
step "passed"
