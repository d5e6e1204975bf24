# The Datadog webhook that posts monitor notifications to longtx.
#
# Sources:
# - datadog_webhook (name, url, encode_as = json|form, custom_headers and
#   payload as JSON strings): terraform-provider-datadog docs/resources/webhook.md
#   https://registry.terraform.io/providers/DataDog/datadog/latest/docs/resources/webhook
# - Payload variables ($ID, $ALERT_ID, $ALERT_TRANSITION, $EVENT_TITLE,
#   $ALERT_SCOPE, $TAGS, $LINK, $DATE, ...) and "custom headers must be in JSON
#   format": https://docs.datadoghq.com/integrations/webhooks/
#   Datadog retries only on a 5xx or a connection error, with a 15 s timeout
#   per request; longtx answers 4xx for an unusable alert, so it is not resent.
#
# The payload has exactly the fields longtx reads (crates/core/src/datadog.rs,
# DatadogPayload): id, alert_id, transition, title, scope, tags, value, link,
# date. Only one is required: a `query_source:<value>` tag in `scope`
# ($ALERT_SCOPE, the monitor's group) or else in `tags` ($TAGS). `table` (or
# `table_name`) is read the same way; `value` is the duration in seconds.
# `{{value}}` is a monitor-message template variable, not one of the webhook
# variables: where Datadog leaves it as it is, longtx sees the braces, treats
# the value as absent and trusts the monitor's threshold.
resource "datadog_webhook" "longtx" {
  name           = "longtx"
  url            = "${var.longtx_url}/webhooks/datadog"
  encode_as      = "json"
  custom_headers = jsonencode({ Authorization = "Bearer ${var.longtx_webhook_token}" })
  payload        = <<-EOT
    {
      "id": "$ID",
      "alert_id": "$ALERT_ID",
      "transition": "$ALERT_TRANSITION",
      "title": "$EVENT_TITLE",
      "scope": "$ALERT_SCOPE",
      "tags": "$TAGS",
      "value": "{{value}}",
      "link": "$LINK",
      "date": "$DATE"
    }
  EOT
}
