#!/usr/bin/env bash
# Tests alertmanager-routes.yml with amtool (0.25 or later):
#   amtool check-config, then `amtool config routes test` for each case.
# Usage: alertmanager-routes.test.sh [config.yml]. Exits 1 on any failure.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
config=${1:-$here/longtx.yml}
command -v amtool >/dev/null || { echo "missing: amtool" >&2; exit 2; }

failed=0
if amtool check-config "$config" >/dev/null; then
  echo "ok   amtool check-config $config"
else
  amtool check-config "$config" || true
  echo "FAIL amtool check-config $config"
  failed=1
fi

# expect RECEIVERS LABEL=VALUE...: the alert must reach exactly RECEIVERS
# (comma-separated, in tree order) and nothing else.
expect() {
  local want=$1; shift
  local got err
  err=$(mktemp)
  # stdout: the receivers, comma-separated; stderr: amtool's warnings
  # ("--config.file flag overrides the --alertmanager.url").
  if ! got=$(amtool config routes test --config.file="$config" \
    --verify.receivers="$want" "$@" 2>"$err"); then
    echo "FAIL $* -> $(tr '\n' ' ' <<<"$got") (want $want) $(grep -v 'overrides the --alertmanager.url' "$err" || true)"
    rm -f "$err"
    failed=1
    return
  fi
  rm -f "$err"
  got=$(tr -d ' \n' <<<"$got")
  if [[ "$got" == "$want" ]]; then
    echo "ok   $* -> $got"
  else
    echo "FAIL $* -> $got (want $want)"
    failed=1
  fi
}

# The long-transaction alert, as deploy/prometheus/longtx-rules.yml makes it.
expect longtx alertname=LongTransactionHoldingMetadataLock \
  query_source='admin/orders#update' table=orders severity=warning
# longtx's own health, as longtx-health-rules.yml makes it: people, not longtx.
expect team-platform alertname=LongtxCollectorDown severity=warning \
  team=platform longtx_health=true job=longtx-collect instance=db1:9817
expect team-platform alertname=LongtxDatabaseDown severity=critical \
  team=platform longtx_health=true job=longtx instance=a:8080
# Even a health alert that carries the long-transaction name stays with people.
expect team-platform alertname=LongTransactionHoldingMetadataLock \
  longtx_health=true team=platform
# An unrelated alert, and the old LongtxCollectorDown of longtx-rules.yml
# (no longtx_health label): null, and never longtx.
expect null alertname=HighCPU severity=critical instance=web1:9100
expect null alertname=LongtxCollectorDown severity=warning instance=db1:9817

if ((failed)); then
  echo "RESULT: FAILED"
  exit 1
fi
echo "RESULT: OK"
