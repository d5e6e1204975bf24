#!/usr/bin/env bash
# Checks the PromQL of the Grafana dashboard and of the alert rules.
#
#   check-dashboard-queries.sh [-d grafana-dashboard.json] [rules.yml ...]
#
# Defaults: the dashboard and longtx-health-rules.yml beside this script.
#
# 1. Every `expr` of the dashboard (targets[] of every panel, rows included),
#    with Grafana's variables replaced ($__rate_interval -> 5m, $__interval ->
#    1m, $__range -> 1h, any other $var / ${var} / ${var:fmt} / [[var]] -> .+),
#    is written as a recording rule `dash_q_N` into a temporary rules file,
#    and `promtool check rules` parses them all (promtool has no "check
#    expression" command).
# 2. `promtool check rules` on each rules file given.
# 3. Every metric that a dashboard query, a label_values() variable or a rule
#    names must be one that longtx exposes (KNOWN_METRICS below), every label
#    in a selector must be one of that metric's labels (or a target label:
#    job, instance, and $EXTRA_TARGET_LABELS, space-separated), and a value
#    matched exactly (=, !=, or a regex of plain words joined by |) for an
#    enumerated label must be one longtx emits. A renamed metric, label or
#    state is caught here.
#
# Needs bash, jq, promtool, perl; for rules files also yq (the jq wrapper) or
# python3 with PyYAML. Exits 1 on any failure.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dashboard="$here/longtx-dashboard.json"
if [[ "${1:-}" == "-d" ]]; then dashboard=$2; shift 2; fi
rules=("$@")
if ((${#rules[@]} == 0)); then rules=("$here/../prometheus/longtx-health-rules.yml" "$here/../prometheus/longtx-rules.yml"); fi

for tool in jq promtool perl; do
  command -v "$tool" >/dev/null || { echo "missing: $tool" >&2; exit 2; }
done

# What longtx exposes: name, type, labels. From crates/metrics (the registry),
# crates/http/src/{intake,metrics}.rs, crates/pipeline/src/{dispatch,reviewers}.rs,
# crates/github/src/octo.rs, crates/collector/src/lib.rs. Keep it in step
# with the Metrics table of the book's operations page when a metric is added or renamed.
KNOWN_METRICS='
longtx_alerts_received_total                      counter   query_source outcome
longtx_alerts_rejected_total                      counter   origin
longtx_http_responses_total                       counter   route status_class
longtx_alertmanager_truncated_alerts_total        counter
longtx_intake_duration_seconds                    histogram origin
longtx_jobs                                       gauge     state
longtx_dispatches_total                           counter   mode
longtx_dispatch_failures_total                    counter   final
longtx_github_requests_total                      counter   method endpoint
longtx_github_errors_total                        counter   method endpoint kind
longtx_reviewer_requests_total                    counter   kind
longtx_db_pool_connections                        gauge     state
longtx_db_pool_max_connections                    gauge
longtx_db_pool_waiting                            gauge
longtx_db_up                                      gauge
longtx_build_info                                 gauge     version
longtx_mdl_holder_max_tx_duration_seconds         gauge     table query_source
longtx_collector_up                               gauge
longtx_collector_last_success_timestamp_seconds   gauge
longtx_collector_scrape_duration_seconds          gauge
longtx_collector_errors_total                     counter   kind
longtx_collector_setup_problem                    gauge     problem
longtx_mdl_waiters                                gauge     table query_source kind
longtx_jobs_waiting_reviewer_capacity             gauge
longtx_reviewer_open_reviews                      gauge     reviewer kind
longtx_reviewer_capacity                          gauge     kind
longtx_capacity_holds_total                       counter
'
# Label values longtx emits, for labels with a fixed set (metric:label values...).
KNOWN_VALUES='
longtx_jobs:state                      queued dispatching agent_running pre_review in_review merged closed wontfix rejected_by_review failed expired dry_run no_pr
longtx_db_pool_connections:state       in_use idle
longtx_http_responses_total:status_class 1xx 2xx 3xx 4xx 5xx
longtx_alerts_received_total:outcome   created deduped ignored excluded below_threshold resolved rejected
longtx_intake_duration_seconds:origin  alertmanager datadog
longtx_alerts_rejected_total:origin    alertmanager datadog
longtx_dispatches_total:mode           dispatched dry_run
longtx_dispatch_failures_total:final   true false
longtx_github_errors_total:kind        rate_limited unavailable refused credentials
longtx_reviewer_requests_total:kind    user team
longtx_mdl_waiters:kind                ddl dml other
longtx_reviewer_open_reviews:kind      user team
longtx_reviewer_capacity:kind          user team
'

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0

yaml_to_json() {
  if yq --help 2>&1 | grep -q 'jq wrapper'; then
    yq . "$1"
  elif command -v python3 >/dev/null && python3 -c 'import yaml' 2>/dev/null; then
    python3 -c 'import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)' "$1"
  else
    echo "need yq (jq wrapper) or python3 with PyYAML to read $1" >&2
    return 2
  fi
}

# --- 1. dashboard queries through promtool ------------------------------------
echo "== $dashboard"
jq empty "$dashboard"
# One JSON object per query: where it is and the expression.
jq -c '
  [ .. | objects | select(has("targets")) as $p
    | ($p.targets // [])[] | select(.expr != null and .expr != "")
    | {where: "\($p.title // "?") [\(.refId // "?")]", expr: .expr} ]
  | .[]' "$dashboard" >"$work/queries.jsonl"
jq -r '.templating.list[]? | select(.type == "query")
  | {where: "variable $\(.name)", q: (.query | if type == "object" then .query else . end)}
  | select(.q | test("^\\s*label_values\\("))
  | {where, expr: (.q | capture("^\\s*label_values\\((?<s>.*),\\s*[A-Za-z_][A-Za-z0-9_]*\\s*\\)\\s*$").s)}
  | @json' "$dashboard" >"$work/variables.jsonl"

substitute() {
  perl -pe '
    s/\$\{?__rate_interval\}?/5m/g;
    s/\$\{?__interval_ms\}?/60000/g;
    s/\$\{?__interval\}?/1m/g;
    s/\$\{?__range_s\}?/3600/g;
    s/\$\{?__range_ms\}?/3600000/g;
    s/\$\{?__range\}?/1h/g;
    s/\$\{?__scrape_interval\}?/15s/g;
    s/\$\{[A-Za-z_][A-Za-z0-9_]*(?::[^}]*)?\}/.+/g;
    s/\[\[[A-Za-z_][A-Za-z0-9_]*(?::[^\]]*)?\]\]/.+/g;
    s/\$[A-Za-z_][A-Za-z0-9_]*/.+/g;
  '
}

n=0
{
  echo "groups:"
  echo "  - name: dash"
  echo "    rules:"
} >"$work/dash-rules.yml"
: >"$work/exprs.tsv"
while IFS= read -r line; do
  n=$((n + 1))
  where=$(jq -r .where <<<"$line")
  expr=$(jq -r .expr <<<"$line" | substitute)
  # A JSON string is a valid YAML double-quoted scalar.
  printf '      - record: dash_q_%d\n        expr: %s\n' "$n" "$(jq -Rs 'rtrimstr("\n")' <<<"$expr")" >>"$work/dash-rules.yml"
  printf 'dash_q_%d\t%s\t%s\n' "$n" "$where" "$(jq -Rs 'rtrimstr("\n")' <<<"$expr")" >>"$work/exprs.tsv"
done <"$work/queries.jsonl"
while IFS= read -r line; do
  printf 'var\t%s\t%s\n' "$(jq -r .where <<<"$line")" "$(jq -r .expr <<<"$line" | substitute | jq -Rs 'rtrimstr("\n")')" >>"$work/exprs.tsv"
done <"$work/variables.jsonl"

if ((n == 0)); then
  echo "FAIL: no expr found in $dashboard"
  failed=1
elif out=$(promtool check rules "$work/dash-rules.yml" 2>&1); then
  echo "promtool: all $n dashboard queries parse"
else
  echo "FAIL: promtool could not parse some dashboard queries:"
  echo "$out" | grep -v '^Checking' | sed "s|$work/||"
  echo "  (dash_q_N is the Nth query:)"
  cut -f1,2 "$work/exprs.tsv" | grep '^dash_q_' | sed 's/^/    /'
  failed=1
fi

# --- 2. rules files through promtool ------------------------------------------
for file in "${rules[@]}"; do
  echo "== $file"
  if out=$(promtool check rules "$file" 2>&1); then
    echo "promtool: $(echo "$out" | grep -o 'SUCCESS.*')"
  else
    echo "FAIL: promtool check rules $file"
    echo "$out"
    failed=1
  fi
  yaml_to_json "$file" | jq -r '
    .groups[] as $g | $g.rules[]
    | "rules\t\($g.name)/\(.alert // .record)\t\(.expr | tostring | tojson)"' >>"$work/exprs.tsv"
done

# --- 3. metric, label and value names -----------------------------------------
echo "== metric names (dashboard, variables, rules)"
export KNOWN_METRICS KNOWN_VALUES EXTRA_TARGET_LABELS="${EXTRA_TARGET_LABELS:-}"
if ! perl -e '
use strict; use warnings; use JSON::PP;
my (%type, %labels, %values);
for (split /\n/, $ENV{KNOWN_METRICS}) {
  my ($name, $type, @l) = split " "; next unless $name;
  $type{$name} = $type; $labels{$name} = { map { $_ => 1 } @l };
}
for (split /\n/, $ENV{KNOWN_VALUES}) {
  my ($key, @v) = split " "; next unless $key;
  $values{$key} = { map { $_ => 1 } @v };
}
my %target = map { $_ => 1 } ("job", "instance", split " ", $ENV{EXTRA_TARGET_LABELS});
my %keyword = map { $_ => 1 } qw(and or unless bool by without on ignoring group_left group_right offset inf nan atan2);

# A series name as written -> [the metric it belongs to, extra labels it has].
sub base_of {
  my $s = shift;
  return [$s, {}] if exists $type{$s};
  if ($s =~ /^(.*)_(bucket|sum|count)$/ && exists $type{$1} && $type{$1} eq "histogram") {
    return [$1, $2 eq "bucket" ? { le => 1 } : {}];
  }
  return undef;
}
my $bad = 0; my $seen = 0;
my $str = qr/"(?:[^"\\]|\\.)*"|\x27(?:[^\x27\\]|\\.)*\x27/;
open my $fh, "<", shift or die;
while (my $row = <$fh>) {
  chomp $row;
  my ($kind, $where, $json) = split /\t/, $row, 3;
  # The expression is a JSON string: undo its escapes.
  my $e = JSON::PP->new->allow_nonref->decode($json);
  $seen++;
  my @problems;
  # Selectors with their matchers: name{...}.
  while ($e =~ /([A-Za-z_:][A-Za-z0-9_:]*)?\s*\{((?:[^{}"\x27]|$str)*)\}/g) {
    my ($name, $body) = ($1, $2);
    my @m;
    while ($body =~ /([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*($str)/g) {
      push @m, [$1, $2, substr($3, 1, -1)];
    }
    if (!defined $name || $keyword{$name}) {
      my ($n) = map { $_->[2] } grep { $_->[0] eq "__name__" && $_->[1] eq "=" } @m;
      $name = $n;
      next unless defined $name;
    }
    my $b = base_of($name);
    if (!$b) { push @problems, "unknown metric $name"; next }
    my ($base, $extra) = @$b;
    for my $m (@m) {
      my ($label, $op, $value) = @$m;
      next if $label eq "__name__";
      if (!$labels{$base}{$label} && !$extra->{$label} && !$target{$label}) {
        push @problems, "$name has no label $label";
        next;
      }
      my $known = $values{"$base:$label"} or next;
      my @v;
      if ($op eq "=" || $op eq "!=") { @v = ($value) }
      elsif ($value =~ /^[A-Za-z0-9_]+(?:\|[A-Za-z0-9_]+)*$/) { @v = split /\|/, $value }
      for (@v) { push @problems, "$name\{$label=\"$_\"} is never emitted" unless $known->{$_} }
    }
  }
  # Bare series names: drop strings, selectors bodies, ranges, grouping
  # clauses and offsets; what is left and not a function or keyword is a name.
  my $t = $e;
  $t =~ s/$str/""/g;
  $t =~ s/\{[^}]*\}/ /g;
  $t =~ s/\[[^\]]*\]/ /g;
  $t =~ s/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/ /g;
  $t =~ s/\boffset\s+-?[0-9A-Za-z]+/ /g;
  $t =~ s/@\s*[-0-9.]+/ /g;
  while ($t =~ /(?<![\w.:])([A-Za-z_:][A-Za-z0-9_:]*+)(?!\s*\()/g) {
    my $name = $1;
    next if $keyword{lc $name};
    push @problems, "unknown metric $name" unless base_of($name);
  }
  my %u; @problems = grep { !$u{$_}++ } @problems;
  if (@problems) { $bad++; print "FAIL $kind $where: ", join("; ", @problems), "\n" }
}
print "checked $seen expressions, $bad with unknown names\n";
exit($bad ? 1 : 0);
' "$work/exprs.tsv"; then
  failed=1
fi

if ((failed)); then
  echo "RESULT: FAILED"
  exit 1
fi
echo "RESULT: OK"
