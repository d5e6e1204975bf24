variable "longtx_url" {
  description = "Base URL of `longtx serve` as Datadog reaches it, without a trailing slash (https://longtx.internal.example). The webhook posts to <longtx_url>/webhooks/datadog."
  type        = string

  validation {
    condition     = can(regex("^https?://[^/]+(/.*[^/])?$", var.longtx_url))
    error_message = "longtx_url must be an http(s) URL without a trailing slash."
  }
}

variable "longtx_webhook_token" {
  description = "longtx's LONGTX_WEBHOOK_TOKEN, sent as `Authorization: Bearer <token>`. Kept out of plan output; it is still stored in the Terraform state and in the webhook's headers in Datadog."
  type        = string
  sensitive   = true

  validation {
    condition     = length(var.longtx_webhook_token) > 0
    error_message = "longtx_webhook_token must not be empty."
  }
}
