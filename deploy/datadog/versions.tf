# Provider source and versions. The datadog provider is published as
# DataDog/datadog (registry.terraform.io/providers/DataDog/datadog); its
# docs/index.md states the minimum Terraform (1.1.5 since provider 4.0).
# notify_by on datadog_monitor exists since provider 3.17.0 (CHANGELOG); 4.x
# is current.
terraform {
  required_version = ">= 1.1.5"

  required_providers {
    datadog = {
      source  = "DataDog/datadog"
      version = ">= 3.40.0, < 5.0.0"
    }
  }
}

# Credentials come from the environment: DD_API_KEY, DD_APP_KEY, and DD_HOST
# for a site other than datadoghq.com (e.g. https://api.datadoghq.eu/).
provider "datadog" {}
