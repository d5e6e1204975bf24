#!/usr/bin/env python3
"""Offline checks of the longtx Datadog kit in this folder.

    python3 check.py                    # every check, one line each
    python3 check.py --samples DIR      # also write the rendered webhook bodies

Needs PyPI's pyyaml and python-hcl2 (installed with pip when missing; after
that no network is used). Where the longtx repository is at hand
(LONGTX_REPO, default the repository this kit sits in) the kit is also checked
against its sources: the fields DatadogPayload reads (crates/core/src/datadog.rs),
the payload README recommends, the holders query (crates/collector/src/mysql.rs)
and the gauge names (crates/collector/src/lib.rs). Exits 1 when a check fails.
"""

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

KIT = Path(__file__).resolve().parent


def ensure_packages():
    try:
        import hcl2  # noqa: F401
        import yaml  # noqa: F401
    except ImportError:
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        # An ordinary user outside a virtualenv (GitHub's runner) installs
        # into the user site; a PEP 668 system Python refuses either without
        # --break-system-packages, which older pips do not know.
        if os.geteuid() != 0 and sys.prefix == sys.base_prefix:
            pip.append("--user")
        packages = ["pyyaml", "python-hcl2"]
        if subprocess.run(pip + ["--break-system-packages"] + packages).returncode != 0:
            subprocess.run(pip + packages, check=True)
        import site

        site.addsitedir(site.getusersitepackages())


ensure_packages()
import hcl2  # noqa: E402
import yaml  # noqa: E402

# ---------------------------------------------------------------------------
# Reporting

RESULTS = []


def report(status, name, detail=""):
    RESULTS.append(status)
    print(f"{status:<4} {name}" + (f": {detail}" if detail else ""))


def check(name, condition, detail_ok="", detail_fail=""):
    if condition:
        report("PASS", name, detail_ok)
    else:
        report("FAIL", name, detail_fail or detail_ok)
    return condition


def skip(name, why):
    report("SKIP", name, why)


# ---------------------------------------------------------------------------
# Facts from Datadog's documentation (https://docs.datadoghq.com/integrations/webhooks/)

# Webhook payload variables, as the webhooks integration page lists them.
WEBHOOK_VARIABLES = {
    "AGGREG_KEY", "ALERT_CYCLE_KEY", "ALERT_ID", "ALERT_METRIC", "ALERT_PRIORITY",
    "ALERT_QUERY", "ALERT_SCOPE", "ALERT_STATUS", "ALERT_TITLE", "ALERT_TRANSITION",
    "ALERT_TYPE", "DATE", "EMAIL", "EVENT_MSG", "EVENT_TITLE", "EVENT_TYPE", "ID",
    "LINK", "TAGS", "TEXT_ONLY_MSG",
}
TRANSITIONS = ["Triggered", "Re-Triggered", "Recovered", "Warn", "No Data"]


def datadog_tag(value):
    """Datadog's tag normalisation (docs "Getting started with tags"; the same
    as dd-trace-rb's to_tag): lowercased, every character other than a letter,
    a digit, `_ - : . /` becomes `_`."""
    return re.sub(r"[^a-z0-9_\-:./]", "_", value.lower())


# ---------------------------------------------------------------------------
# longtx's Datadog parser (crates/core/src/datadog.rs), re-stated in Python so
# that the rendered payload can be run through it here. Kept to what the Rust
# code does: tag_value, is_unrendered, to_alert.

def lt_tag_value(payload, key):
    for field in ("scope", "tags"):
        text = payload.get(field)
        if text is None:
            continue
        for tag in str(text).split(","):
            k, sep, v = tag.strip().partition(":")
            if sep and k == key and v.strip():
                return v.strip()
    return None


def lt_is_unrendered(value):
    v = value.strip()
    return v == "" or v.startswith("$") or "{{" in v


def lt_to_alert(payload):
    transition = (payload.get("transition") or "").strip()
    status = "resolved" if transition in ("Recovered", "No Data", "Re-No Data") else "firing"
    source = lt_tag_value(payload, "query_source")
    if source is None:
        return {"error": "missing query_source tag in scope or tags"}
    table = lt_tag_value(payload, "table") or lt_tag_value(payload, "table_name")
    value = payload.get("value")
    seconds = None
    if value is not None and not lt_is_unrendered(str(value)):
        seconds = float(str(value).replace(",", ""))
    return {"status": status, "query_source": source, "table": table, "duration_seconds": seconds}


# ---------------------------------------------------------------------------
# Loading

def hcl_options():
    return hcl2.SerializationOptions(
        with_comments=False, explicit_blocks=False, preserve_heredocs=True, strip_string_quotes=True
    )


def heredoc(value):
    """The string a Terraform heredoc stands for (`<<EOT` or flush `<<-EOT`,
    which removes the smallest indentation of its lines); other values pass."""
    if not isinstance(value, str):
        return value
    m = re.match(r"^<<(-?)([A-Za-z][A-Za-z0-9_-]*)\r?\n(.*?)^[ \t]*\2[ \t]*$", value, re.S | re.M)
    if not m:
        return value
    body = m.group(3)
    if m.group(1) == "-":
        body = textwrap.dedent(body)
    return body


def hcl_resources(tf):
    out = {}
    for entry in tf.get("resource", []):
        for rtype, named in entry.items():
            for name, body in named.items():
                out[(rtype, name)] = body
    return out


def first(value):
    return value[0] if isinstance(value, list) and len(value) == 1 else value


def find_repo():
    candidates = [os.environ.get("LONGTX_REPO"), str(KIT.parent.parent)]
    for c in candidates:
        if c and (Path(c) / "crates/core/src/datadog.rs").is_file():
            return Path(c)
    return None


def rust_struct_fields(source, struct):
    m = re.search(r"pub struct " + struct + r"\s*\{(.*?)\n\}", source, re.S)
    return re.findall(r"pub (\w+):", m.group(1)) if m else []


# ---------------------------------------------------------------------------

def top_level_commas(text):
    """`a, f(b, c), d` -> ['a', 'f(b, c)', 'd']: commas inside parentheses
    belong to a function call, not to the select list."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", help="write the rendered webhook bodies to this folder")
    args = ap.parse_args()
    repo = find_repo()

    # 1. Every JSON, YAML and Terraform file parses.
    parsed = {}
    for path in sorted(KIT.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts or ".terraform" in path.parts:
            continue
        rel = path.relative_to(KIT).as_posix()
        try:
            if path.suffix == ".json":
                parsed[rel] = json.loads(path.read_text())
                report("PASS", f"parse {rel}", "JSON")
            elif path.suffix in (".yaml", ".yml"):
                parsed[rel] = yaml.safe_load(path.read_text())
                report("PASS", f"parse {rel}", "YAML")
            elif path.suffix == ".tf":
                with path.open() as f:
                    parsed[rel] = hcl2.load(f, serialization_options=hcl_options())
                report("PASS", f"parse {rel}", "HCL (python-hcl2)")
        except Exception as e:  # noqa: BLE001 - any parse error is the finding
            report("FAIL", f"parse {rel}", f"{type(e).__name__}: {e}")
    needed = ["monitor.json", "monitor.tf", "webhook.tf", "variables.tf", "versions.tf",
              "mysql.d/conf.yaml", "openmetrics.d/conf.yaml"]
    missing = [n for n in needed if n not in parsed]
    if not check("kit files present and parsed", not missing, ", ".join(needed), f"missing or unparsable: {missing}"):
        return finish()

    monitor = parsed["monitor.json"]
    tf = {}
    for name in ("monitor.tf", "webhook.tf"):
        tf.update(hcl_resources(parsed[name]))
    variables = {}
    for entry in parsed["variables.tf"].get("variable", []):
        variables.update(entry)

    # 2. versions.tf: the provider's registry source.
    providers = first(first(parsed["versions.tf"].get("terraform", [{}])).get("required_providers", [{}]))
    source = (providers or {}).get("datadog", {}).get("source")
    check("versions.tf provider source", source == "DataDog/datadog", f"datadog = {source}")

    # 3. The webhook resource.
    webhook = tf.get(("datadog_webhook", "longtx"))
    if not check("webhook.tf has datadog_webhook.longtx", webhook is not None):
        return finish()
    hook_name = webhook.get("name")
    check("webhook encode_as", webhook.get("encode_as") == "json", f"encode_as = {webhook.get('encode_as')}")
    url = webhook.get("url", "")
    check("webhook url", re.fullmatch(r"\$\{var\.(\w+)\}/webhooks/datadog", url) is not None,
          url, f"{url} (expected ${{var.<base url>}}/webhooks/datadog)")
    url_var = re.match(r"\$\{var\.(\w+)\}", url)
    check("webhook url variable declared", url_var is not None and url_var.group(1) in variables,
          url_var.group(1) if url_var else url)

    headers_expr = webhook.get("custom_headers", "")
    m = re.fullmatch(r'\$\{jsonencode\(\{\s*"?Authorization"?\s*[=:]\s*"Bearer \$\{var\.(\w+)\}"\s*\}\)\}', headers_expr)
    token_var = m.group(1) if m else None
    check("webhook custom_headers", token_var is not None, f"Authorization: Bearer ${{var.{token_var}}}",
          f"{headers_expr!r} is not jsonencode({{ Authorization = \"Bearer ${{var.<token>}}\" }})")
    if token_var:
        decl = variables.get(token_var, {})
        check("token variable is sensitive", decl.get("sensitive") is True, f"var.{token_var}: sensitive = {decl.get('sensitive')}")
        rendered = json.dumps({"Authorization": "Bearer " + 's3cr"et\\token'})
        check("custom_headers renders to JSON", json.loads(rendered)["Authorization"].startswith("Bearer "),
              "jsonencode escapes the token")

    payload_template = heredoc(webhook.get("payload", ""))
    if "${" in payload_template or "%{" in payload_template:
        report("FAIL", "payload has no Terraform template sequences",
               "`${` or `%{` in the payload would be interpolated by Terraform")
    else:
        report("PASS", "payload has no Terraform template sequences", "$VARIABLES reach Datadog literally")
    used = sorted(set(re.findall(r"\$([A-Z][A-Z0-9_]*)", payload_template)))
    unknown = [v for v in used if v not in WEBHOOK_VARIABLES]
    check("payload uses documented webhook variables only", not unknown,
          " ".join("$" + v for v in used), f"not Datadog webhook variables: {unknown}")

    # Render the payload as Datadog would, for several notifications.
    fixture = {}
    if repo and (repo / "crates/testkit/fixtures/datadog-triggered.json").is_file():
        fixture = json.loads((repo / "crates/testkit/fixtures/datadog-triggered.json").read_text())
    raw_source, raw_table = "Billing::SyncWorker", "invoices"
    scope = f"query_source:{datadog_tag(raw_source)},table:{datadog_tag(raw_table)}"
    base = {
        "ID": fixture.get("id", "7604211837260293214"),
        "ALERT_ID": fixture.get("alert_id", "148021873"),
        "ALERT_CYCLE_KEY": "7604211837260293000",
        "EVENT_TITLE": f"[Triggered on {{{scope}}}] longtx: long transaction holding a metadata lock",
        "ALERT_SCOPE": scope,
        "TAGS": fixture.get("tags", "monitor,service:longtx"),
        "ALERT_METRIC": "longtx.mdl_holder.max_tx_duration_seconds",
        "ALERT_QUERY": monitor.get("query", ""),
        "LINK": fixture.get("link", "https://app.datadoghq.com/event/event?id=1"),
        "DATE": fixture.get("date", "1764669495000"),
        "TEXT_ONLY_MSG": "A transaction from billing::syncworker has held a metadata lock",
    }
    samples = {}
    for transition in TRANSITIONS:
        values = dict(base, ALERT_TRANSITION=transition)
        # Longest names first, so $ALERT_ID does not eat $ALERT_ID_X.
        body = payload_template
        for var in sorted(WEBHOOK_VARIABLES, key=len, reverse=True):
            body = body.replace("$" + var, values.get(var, "sample"))
        samples[transition] = body
    try:
        decoded = {t: json.loads(b) for t, b in samples.items()}
        check("payload is valid JSON once rendered", all(isinstance(d, dict) for d in decoded.values()),
              f"{len(decoded)} transitions ({', '.join(TRANSITIONS)})")
    except json.JSONDecodeError as e:
        report("FAIL", "payload is valid JSON once rendered", str(e))
        return finish()
    if args.samples:
        out = Path(args.samples)
        out.mkdir(parents=True, exist_ok=True)
        for t, b in samples.items():
            (out / ("datadog-" + t.lower().replace(" ", "-") + ".json")).write_text(b)
        report("PASS", "samples written", str(out))

    body = decoded["Triggered"]
    # The fields longtx reads.
    if repo:
        fields = rust_struct_fields((repo / "crates/core/src/datadog.rs").read_text(), "DatadogPayload")
        where = "crates/core/src/datadog.rs DatadogPayload"
    else:
        fields = ["id", "alert_id", "transition", "title", "scope", "tags", "value", "link", "date"]
        where = "embedded copy of DatadogPayload's fields (no longtx repository found)"
    check("parser fields known", bool(fields), f"{where}: {', '.join(fields)}")
    # `waiters` is read when a custom payload sets it; the shipped monitor
    # cannot (its payload carries only its own metric's value), so waiters
    # reach longtx through the Prometheus rule or `waiters_ddl:N` tags.
    optional = {"waiters"}
    missing = [f for f in fields if f not in body and f not in optional]
    extra = [k for k in body if k not in fields]
    check("payload has every field longtx reads", not missing, f"{len(fields)} fields", f"missing: {missing}")
    check("payload has no field longtx ignores", not extra, "none", f"ignored by longtx: {extra}")
    check("payload puts query_source where longtx looks", json.loads(payload_template).get("scope") == "$ALERT_SCOPE",
          "scope = $ALERT_SCOPE (the monitor group: query_source:...,table:...)")

    # Same payload as longtx's book recommends (the "## Datadog" section of its intake page).
    page = repo / "docs/book/src/intake.md" if repo else None
    if page and page.is_file():
        sec = page.read_text().split("## Datadog", 1)[-1]
        m = re.search(r"```json\n(.*?)```", sec, re.S)
        if m:
            recommended = json.loads(m.group(1))
            ours = json.loads(payload_template)
            check("payload equals longtx's intake page", ours == recommended,
                  "same keys and variables", f"book: {recommended}\nkit: {ours}")
        else:
            check("payload equals longtx's intake page", False, "", "no JSON block in the page's Datadog section")
    else:
        skip("payload equals longtx's intake page", "longtx repository not found")

    # Run the rendered bodies through the parser's rules.
    alert = lt_to_alert(body)
    check("longtx reads the Triggered body", alert.get("query_source") == datadog_tag(raw_source)
          and alert.get("table") == raw_table and alert.get("status") == "firing",
          f"query_source={alert.get('query_source')!r} table={alert.get('table')!r} "
          f"status={alert.get('status')} duration={alert.get('duration_seconds')} "
          f"(raw source {raw_source!r} arrives normalised)", str(alert))
    check("unrendered {{value}} means no duration", body.get("value") != "{{value}}" or alert.get("duration_seconds") is None,
          "value '{{value}}' -> monitor threshold trusted")
    rec = lt_to_alert(decoded["Recovered"])
    check("longtx reads Recovered as resolved", rec.get("status") == "resolved", str(rec))
    warn = lt_to_alert(decoded["Warn"])
    check("a Warn body would be firing for longtx", warn.get("status") == "firing",
          "so the monitor must not send Warn to the webhook (checked below)")

    # 4. The monitor: JSON and Terraform agree.
    tfmon = tf.get(("datadog_monitor", "longtx_long_transaction"))
    if not check("monitor.tf has datadog_monitor.longtx_long_transaction", tfmon is not None):
        return finish()
    opts = monitor.get("options", {})
    tf_message = heredoc(tfmon.get("message", "")).replace("${datadog_webhook.longtx.name}", str(hook_name))
    thresholds_tf = first(tfmon.get("monitor_thresholds", [{}])) or {}

    def num(v):
        return float(v) if v is not None else None

    pairs = [
        ("name", monitor.get("name"), tfmon.get("name")),
        ("type", monitor.get("type"), tfmon.get("type")),
        ("query", monitor.get("query"), tfmon.get("query")),
        ("message", monitor.get("message", "").rstrip("\n"), tf_message.rstrip("\n")),
        ("thresholds.critical", num(opts.get("thresholds", {}).get("critical")), num(thresholds_tf.get("critical"))),
        ("thresholds.warning", num(opts.get("thresholds", {}).get("warning")), num(thresholds_tf.get("warning"))),
        ("notify_by", sorted(opts.get("notify_by", [])), sorted(tfmon.get("notify_by", []))),
        ("new_group_delay", opts.get("new_group_delay"), tfmon.get("new_group_delay")),
        ("require_full_window", opts.get("require_full_window"), tfmon.get("require_full_window")),
        ("notify_no_data", opts.get("notify_no_data"), tfmon.get("notify_no_data")),
        ("timeout_h", opts.get("timeout_h"), tfmon.get("timeout_h")),
        ("include_tags", opts.get("include_tags"), tfmon.get("include_tags")),
        ("tags", sorted(monitor.get("tags", [])), sorted(tfmon.get("tags", []))),
    ]
    for field, a, b in pairs:
        if field == "message":
            diff = [d for d in difflib.unified_diff(str(a).splitlines(), str(b).splitlines(), "monitor.json", "monitor.tf", lineterm="", n=0)]
            check(f"monitor.json = monitor.tf: {field}", a == b, f"{len(str(a))} chars", " | ".join(diff[2:6]))
        else:
            check(f"monitor.json = monitor.tf: {field}", a == b, str(a), f"json={a!r} tf={b!r}")

    # 5. The monitor on its own.
    query = monitor.get("query", "")
    qm = re.fullmatch(r"(\w+)\((last_\w+)\):(\w+):([\w.]+)\{([^}]*)\} by \{([^}]*)\} ([<>]=?) ([\d.]+)", query)
    if not check("monitor query shape", qm is not None, query, f"unexpected query: {query}"):
        return finish()
    metric, filters, groups, comparator, limit = qm.group(4), qm.group(5), qm.group(6).split(","), qm.group(7), float(qm.group(8))
    check("monitor type", monitor.get("type") in ("query alert", "metric alert"), monitor.get("type"))
    check("multi alert by query_source and table", sorted(groups) == ["query_source", "table"], "by {" + ",".join(groups) + "}")
    crit = num(opts.get("thresholds", {}).get("critical"))
    warnv = num(opts.get("thresholds", {}).get("warning"))
    check("critical threshold = query threshold = 100", crit == limit == 100 and comparator == ">",
          f"critical {crit}, query {comparator} {limit}")
    check("warning threshold 60 below critical", warnv == 60 and warnv < crit, f"warning {warnv}")
    notify_by = opts.get("notify_by", [])
    check("notify_by one notification per query_source",
          notify_by == ["query_source"] and set(notify_by) < set(groups),
          f"{notify_by} is a proper subset of {groups}")
    check("require_full_window false", opts.get("require_full_window") is False)
    check("notify_no_data false", opts.get("notify_no_data") is False)
    ngd = opts.get("new_group_delay")
    check("new_group_delay set", isinstance(ngd, int) and 0 < ngd < limit,
          f"{ngd} s (nonzero: the provider drops 0; below the threshold so no alert is skipped)")
    excluded = sorted(re.findall(r"!(\w+:[\w.-]+)", filters))
    check("monitor skips what the Prometheus rule skips",
          set(excluded) >= {"query_source:unknown", "query_source:other", "table:ddl_in_progress", "table:other"},
          ", ".join(excluded))

    message = monitor.get("message", "")
    handle = f"@webhook-{hook_name}"
    check("message notifies the webhook", handle in message, handle)
    outside = message
    for block in ("is_alert", "is_alert_recovery"):
        outside = re.sub(r"\{\{#" + block + r"\}\}.*?\{\{/" + block + r"\}\}", "", outside, flags=re.S)
    inside_warning = re.findall(r"\{\{#is_warning\}\}(.*?)\{\{/is_warning\}\}", message, re.S)
    check("webhook only on alert and alert recovery", "@webhook-" not in outside
          and not any("@webhook-" in w for w in inside_warning),
          "Warn (longtx would read it as firing) goes to people only")
    names = set(re.findall(r"\{\{\s*([\w.]+)\.name\s*\}\}", message))
    check("message tag variables are group keys", names and names <= set(groups),
          ", ".join("{{%s.name}}" % n for n in sorted(names)))
    check("message carries {{query_source.name}}", "query_source" in names)

    # 6. The Agent configurations produce the metric the monitor queries.
    mysql = parsed["mysql.d/conf.yaml"]
    inst = (mysql.get("instances") or [{}])[0]
    cqs = inst.get("custom_queries") or []
    cq = cqs[0] if cqs else {}
    cols = cq.get("columns") or []
    gauges = [c for c in cols if c.get("type") == "gauge"]
    tags_cols = [c.get("name") for c in cols if c.get("type") == "tag"]
    full = (cq.get("metric_prefix") + "." if cq.get("metric_prefix") else "") + (gauges[0]["name"] if gauges else "")
    check("mysql.d: custom query submits the monitor's metric", full == metric, full)
    check("mysql.d: tags query_source and table", sorted(tags_cols) == ["query_source", "table"], ", ".join(tags_cols))
    check("mysql.d: collection_interval 15", cq.get("collection_interval") == 15,
          f"collection_interval {cq.get('collection_interval')}, min_collection_interval {inst.get('min_collection_interval')}")
    check("mysql.d: connection placeholders", all(k in inst for k in ("host", "port", "username", "password")),
          ", ".join(k for k in ("host", "port", "username", "password", "ssl") if k in inst))
    sql = cq.get("query", "")
    outer = re.match(r"\s*SELECT\s+(.*?)\s+FROM", sql, re.S | re.I)
    n_out = len(top_level_commas(outer.group(1))) if outer else -1
    check("mysql.d: one column entry per selected column", n_out == len(cols), f"{n_out} selected, {len(cols)} columns")
    if repo and (repo / "crates/collector/src/mysql.rs").is_file():
        rs = (repo / "crates/collector/src/mysql.rs").read_text()
        hm = re.search(r'const HOLDERS_SQL: &str = "(.*?)";', rs, re.S)
        if hm:
            holders = re.sub(r"\\\n\s*", " ", hm.group(1)).replace("THEN ?", "THEN 'ddl_in_progress'")
            clauses = [c for c in re.split(r"\s+(?=FROM |JOIN |LEFT JOIN |WHERE |AND |LIMIT )", holders) if c.strip()]
            flat = " ".join(sql.split())
            absent = [c for c in clauses[1:] if " ".join(c.split()) not in flat]
            check("mysql.d: same holders query as mysql.rs", not absent,
                  f"{len(clauses) - 1} FROM/JOIN/WHERE/LIMIT clauses of HOLDERS_SQL found",
                  f"not in the custom query: {absent}")
            select_items = [" ".join(s.split()) for s in re.findall(r"(CAST\(.*?\) AS \w+)", clauses[0])]
            gone = [s for s in select_items if s not in flat]
            check("mysql.d: same holder columns as mysql.rs", not gone, f"{len(select_items)} columns", f"missing: {gone}")
        else:
            skip("mysql.d: same holders query as mysql.rs", "HOLDERS_SQL not found in mysql.rs")
    else:
        skip("mysql.d: same holders query as mysql.rs", "longtx repository not found")

    om = parsed["openmetrics.d/conf.yaml"]
    oinst = (om.get("instances") or [{}])[0]
    check("openmetrics.d: endpoint", oinst.get("openmetrics_endpoint") == "http://127.0.0.1:9817/metrics",
          oinst.get("openmetrics_endpoint"))
    renames = {}
    for item in oinst.get("metrics") or []:
        if isinstance(item, dict):
            renames.update(item)
        else:
            renames[item] = item
    om_metric = f"{oinst.get('namespace')}.{renames.get('longtx_mdl_holder_max_tx_duration_seconds')}"
    check("openmetrics.d: submits the monitor's metric", om_metric == metric, om_metric)
    if repo and (repo / "crates/collector/src/lib.rs").is_file():
        lib = (repo / "crates/collector/src/lib.rs").read_text()
        gauge_names = set(re.findall(r'name: "(longtx_\w+)"', lib))
        counter_names = {n[: -len("_total")] for n in re.findall(r'"(longtx_\w+_total)"', lib)}
        unknown = [n for n in renames if n not in gauge_names | counter_names]
        check("openmetrics.d: metric names exist in the collector", not unknown,
              f"{len(renames)} names, counters listed without _total",
              f"not exposed by crates/collector/src/lib.rs: {unknown}")
        unlisted = sorted((gauge_names | counter_names) - set(renames))
        check("openmetrics.d: every collector metric listed", not unlisted,
              ", ".join(sorted(gauge_names | counter_names)), f"exposed but not collected: {unlisted}")
    else:
        skip("openmetrics.d: metric names exist in the collector", "longtx repository not found")

    # 7. Formatting as `terraform fmt` leaves it.
    terraform = shutil.which("terraform")
    if terraform:
        env = dict(os.environ, TF_CLI_CONFIG_FILE=os.devnull, CHECKPOINT_DISABLE="1")
        r = subprocess.run([terraform, "fmt", "-check", "-diff", str(KIT)], capture_output=True, text=True, env=env)
        check("terraform fmt -check", r.returncode == 0, "formatted", r.stdout.strip() or r.stderr.strip())
    else:
        skip("terraform fmt -check", "no terraform binary on PATH")

    # 8. The README section says what the kit is for.
    readme = KIT / "README.md"
    text = readme.read_text() if readme.is_file() else ""
    check("README.md states the tag normalisation", "billing::syncworker" in text,
          "Billing::SyncWorker -> billing::syncworker")
    return finish()


def finish():
    failed = RESULTS.count("FAIL")
    print(f"{RESULTS.count('PASS')} passed, {failed} failed" + (f", {RESULTS.count('SKIP')} skipped" if "SKIP" in RESULTS else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
