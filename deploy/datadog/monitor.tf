# The monitor of monitor.json, as Terraform. check.py checks that the two
# agree (name, type, query, message, thresholds, notify_by and the other
# options).
#
# Sources:
# - datadog_monitor arguments (monitor_thresholds, notify_by, new_group_delay,
#   require_full_window, notify_no_data, timeout_h, include_tags, tags):
#   terraform-provider-datadog docs/resources/monitor.md
#   https://registry.terraform.io/providers/DataDog/datadog/latest/docs/resources/monitor
# - notify_by: "Tags mentioned in notify_by must be a proper subset of the
#   grouping tags in the query" -> ["query_source"] of {query_source,table}:
#   one notification per query_source.
# - Options and their defaults: https://docs.datadoghq.com/monitors/guide/monitor_api_options/
# - Message variables ({{query_source.name}}, {{value}}, {{threshold}},
#   {{#is_alert}}, {{#is_alert_recovery}}): https://docs.datadoghq.com/monitors/notify/variables/
# - Tag exclusion in the query ({!key:value,...}):
#   https://docs.datadoghq.com/metrics/advanced-filtering/
#
# The webhook is mentioned only inside {{#is_alert}} and
# {{#is_alert_recovery}}: longtx treats every transition other than
# Recovered / No Data as firing, so a Warn sent to it would open a job at the
# warning level.
resource "datadog_monitor" "longtx_long_transaction" {
  name  = "longtx: long transaction holding a metadata lock"
  type  = "query alert"
  query = "max(last_1m):max:longtx.mdl_holder.max_tx_duration_seconds{!query_source:unknown,!query_source:other,!table:ddl_in_progress,!table:other} by {query_source,table} > 100"

  message = <<-EOT
    {{#is_alert}}
    A transaction from `{{query_source.name}}` has held a metadata lock on `{{table.name}}` for {{value}} s (threshold {{threshold}} s): every ALTER TABLE on it waits behind it. longtx opens (or updates) the fix job for this source.
    @webhook-${datadog_webhook.longtx.name}
    {{/is_alert}}
    {{#is_warning}}
    A transaction from `{{query_source.name}}` has held a metadata lock on `{{table.name}}` for {{value}} s (warning at {{warn_threshold}} s). No job is opened below {{threshold}} s.
    {{/is_warning}}
    {{#is_alert_recovery}}
    The long transaction from `{{query_source.name}}` is over.
    @webhook-${datadog_webhook.longtx.name}
    {{/is_alert_recovery}}

    `query_source` above is Datadog's tag value: lowercased, with every character other than letters, digits and `_ - : . /` turned into `_` (`Billing::SyncWorker` reads `billing::syncworker`, `admin/users#update` reads `admin/users_update`). longtx keys the job on that value.
  EOT

  monitor_thresholds {
    critical = 100
    warning  = 60
  }

  # One notification per source, whatever the number of its tables.
  notify_by = ["query_source"]
  # Nonzero on purpose: the provider sends new_group_delay only when it is not 0.
  new_group_delay     = 30
  require_full_window = false
  notify_no_data      = false
  # The gauge exists only while a transaction holds a lock: resolve a group
  # an hour after its data stopped, so that its next long transaction
  # notifies again.
  timeout_h    = 1
  include_tags = true

  tags = ["service:longtx"]
}
