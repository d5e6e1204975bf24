//! `longtx config check`: the effective settings as a table (or JSON), and
//! every check `serve` makes before it starts, so "valid" means `serve`
//! would start with this configuration. `serve` runs the same
//! [`problems`] and refuses on the first.

use super::Config;
use std::fmt::Write as _;
use std::time::Duration;

/// One setting as `config check` shows it; secrets only as set or unset.
#[derive(Debug, serde::Serialize)]
pub struct Shown {
    pub key: &'static str,
    pub value: String,
}

/// Where each setting's value came from, by environment name: `env`,
/// `env (KEY_FILE)`, `longtx.toml` or `default`. Worked out from the same
/// inputs `Config::load` reads, in its order (environment over the file).
pub fn sources(
    path: Option<&std::path::Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> std::collections::BTreeMap<String, &'static str> {
    let file: toml::Table = path
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|text| text.parse().ok())
        .unwrap_or_default();
    let set = |name: &str| env(name).is_some_and(|v| !v.trim().is_empty());
    let mut found = std::collections::BTreeMap::new();
    for setting in super::reference::SETTINGS {
        for name in setting.env_names() {
            let from = if super::SECRET_KEYS.contains(&name) && set(&format!("{name}_FILE")) {
                "env (*_FILE)"
            } else if set(name) {
                "env"
            } else if setting.file_keys().any(|k| file.contains_key(k)) {
                "longtx.toml"
            } else {
                "default"
            };
            found.insert(name.to_owned(), from);
        }
    }
    found
}

/// A setting `serve` would refuse, with what to do about it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Problem {
    pub key: &'static str,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

fn secret(v: &Option<String>) -> String {
    if v.is_some() { "<set>" } else { "<unset>" }.to_owned()
}

fn or_unset<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map_or_else(|| "<unset>".to_owned(), ToString::to_string)
}

/// As the settings are written: `7d`, `2h`, `90s`, `250ms`.
fn duration(d: Duration) -> String {
    let secs = d.as_secs();
    if d.subsec_nanos() != 0 || secs == 0 {
        return format!("{}ms", d.as_millis());
    }
    for (unit, size) in [("d", 86_400), ("h", 3_600), ("m", 60)] {
        if secs.is_multiple_of(size) {
            return format!("{}{unit}", secs / size);
        }
    }
    format!("{secs}s")
}

/// Every setting with its effective value.
pub fn shown(c: &Config) -> Vec<Shown> {
    let gh = &c.github;
    let r = &c.reviews;
    let rows: Vec<(&'static str, String)> = vec![
        ("DATABASE_URL", secret(&c.database_url)),
        ("LONGTX_LISTEN", c.listen.to_string()),
        ("LONGTX_DATA_DIR", c.data_dir.display().to_string()),
        ("LONGTX_WEBHOOK_TOKEN", secret(&c.webhook_token)),
        ("LONGTX_DASHBOARD_TOKEN", secret(&c.dashboard_token)),
        ("LONGTX_THRESHOLD_SECONDS", c.threshold_seconds.to_string()),
        (
            "LONGTX_TABLE_THRESHOLDS",
            c.table_thresholds
                .iter()
                .map(|(t, s)| format!("{t}={s}"))
                .collect::<Vec<_>>()
                .join(","),
        ),
        ("LONGTX_EXCLUDE", c.exclude.join(",")),
        ("LONGTX_IGNORE_LIST", c.ignore_list.display().to_string()),
        (
            "LONGTX_DB_MAX_CONNECTIONS",
            c.db_max_connections.to_string(),
        ),
        ("LONGTX_DB_ACQUIRE_TIMEOUT", duration(c.db_acquire_timeout)),
        ("LONGTX_COOLDOWN", duration(c.cooldown)),
        ("LONGTX_DEPLOY_GRACE", duration(c.deploy_grace)),
        ("LONGTX_VERIFY_WINDOW", duration(c.verify_window)),
        ("LONGTX_ALERT_RETENTION", duration(c.alert_retention)),
        (
            "LONGTX_COLLECT_DSN",
            if c.collect_dsn.is_some() {
                "<set>"
            } else {
                "<unset>"
            }
            .to_owned(),
        ),
        ("LONGTX_COLLECT_INTERVAL", duration(c.collect_interval)),
        ("LONGTX_PATTERNS_DIR", c.patterns_dir.display().to_string()),
        (
            "LONGTX_PROMPT_TEMPLATE",
            c.prompt_template.display().to_string(),
        ),
        (
            "LONGTX_REPO_PATH",
            or_unset(&c.repo_path.as_ref().map(|p| p.display())),
        ),
        (
            "LONGTX_PROMPT_BUDGET_BYTES",
            c.prompt_budget_bytes.to_string(),
        ),
        (
            "GitHub credentials",
            match &gh.credentials {
                None => "<unset> (dry run)".to_owned(),
                Some(longtx_github::Credentials::Token(_)) => "<set> (token)".to_owned(),
                Some(longtx_github::Credentials::App { app_id, .. }) => {
                    format!("<set> (GitHub App {app_id})")
                }
            },
        ),
        ("LONGTX_GITHUB_API_URL", gh.api_url.clone()),
        ("LONGTX_GITHUB_REPO", or_unset(&gh.repo)),
        ("LONGTX_WORKFLOW", gh.workflow.clone()),
        ("LONGTX_WORKFLOW_REF", or_unset(&gh.workflow_ref)),
        (
            "LONGTX_MAX_DISPATCHES_PER_DAY",
            gh.max_dispatches_per_day.to_string(),
        ),
        ("LONGTX_MAX_RUNNING", gh.max_running.to_string()),
        ("LONGTX_MAX_COST_PER_DAY", or_unset(&gh.max_cost_per_day)),
        ("LONGTX_RUN_BUDGET_USD", gh.run_budget_usd.to_string()),
        (
            "LONGTX_PRE_REVIEW_BUDGET_USD",
            gh.pre_review_budget_usd.to_string(),
        ),
        ("LONGTX_PAUSED", or_unset(&gh.paused)),
        ("LONGTX_AGENT_TIMEOUT", duration(gh.agent_timeout)),
        ("LONGTX_DISPATCH_LEASE", duration(gh.dispatch_lease)),
        ("LONGTX_PUBLIC_URL", gh.public_url.clone()),
        ("LONGTX_MAX_PATCH_BYTES", gh.max_patch_bytes.to_string()),
        ("LONGTX_MAX_PATCH_FILES", gh.max_patch_files.to_string()),
        ("LONGTX_PROTECTED_PATHS", gh.protected_paths.join(",")),
        (
            "LONGTX_DEVIN_SERVICE_TOKEN",
            if gh.devin.is_some() {
                "<set>"
            } else {
                "<unset>"
            }
            .to_owned(),
        ),
        (
            "LONGTX_DEVIN_ORG_ID",
            or_unset(&gh.devin.as_ref().map(|d| d.org_id.clone())),
        ),
        (
            "LONGTX_DEVIN_API_URL",
            or_unset(&gh.devin.as_ref().map(|d| d.api_url.clone())),
        ),
        (
            "LONGTX_USD_PER_ACU",
            or_unset(
                &gh.devin
                    .as_ref()
                    .and_then(|d| d.usd_per_acu)
                    .map(|p| p.to_string()),
            ),
        ),
        ("LONGTX_GITHUB_WEBHOOK_SECRET", secret(&r.webhook_secret)),
        ("LONGTX_FALLBACK_TEAM", or_unset(&r.fallback_team)),
        ("LONGTX_MAX_REVIEWERS", r.max_reviewers.to_string()),
        ("LONGTX_REVIEWER_CAPACITY", r.capacity.user.to_string()),
        ("LONGTX_TEAM_CAPACITY", r.capacity.team.to_string()),
        ("LONGTX_HISTORY_DAYS", r.history_days.to_string()),
        (
            "LONGTX_GIT_URL",
            or_unset(&r.git_url.as_deref().map(super::review::redact_url)),
        ),
        ("LONGTX_WONTFIX_LABEL", r.wontfix_label.clone()),
        (
            "LONGTX_PRE_REVIEW",
            format!("{:?}", r.pre_review).to_lowercase(),
        ),
        ("LONGTX_PRE_REVIEW_WORKFLOW", r.pre_review_workflow.clone()),
        ("LONGTX_PRE_REVIEW_TIMEOUT", duration(r.pre_review_timeout)),
        ("LONGTX_MAX_REVISIONS", r.max_revisions.to_string()),
        ("LONGTX_PR_CHECK", r.pr_check.to_string()),
        (
            "LONGTX_AUTHOR_LOGINS",
            format!("{} email(s) mapped", r.author_logins.len()),
        ),
        ("LONGTX_LOG", c.log_filter.clone()),
        ("LONGTX_LOG_FORMAT", c.log_format.clone()),
    ];
    rows.into_iter()
        .map(|(key, value)| Shown { key, value })
        .collect()
}

fn http_url(key: &'static str, text: &str, what: &str) -> Option<Problem> {
    let problem = |why: String| Problem {
        key,
        message: format!("{why}; it must be the http(s) URL {what}"),
    };
    match url::Url::parse(text) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => None,
        // `longtx.internal:8080` parses as the scheme `longtx.internal`.
        Ok(_) if !text.contains("://") => Some(problem(format!(
            "{:?} has no scheme: write http://{} (or https://)",
            redact(text),
            redact(text)
        ))),
        Ok(u) => Some(problem(format!(
            "{:?} is a {} URL",
            redact(text),
            u.scheme()
        ))),
        Err(e) => Some(problem(format!("{:?} is not a URL ({e})", redact(text)))),
    }
}

/// A URL as it may be shown: without a password.
fn redact(text: &str) -> String {
    super::review::redact_url(text)
}

/// `LONGTX_GITHUB_API_URL`, when it is not an http(s) URL (doctor skips
/// its GitHub checks then).
pub fn api_url_problem(c: &Config) -> Option<Problem> {
    http_url(
        "LONGTX_GITHUB_API_URL",
        &c.github.api_url,
        "of GitHub's REST API (https://api.github.com, or https://HOST/api/v3)",
    )
}

/// A token or secret shorter than this is guessable: refused when longtx
/// listens beyond loopback, a warning on loopback (local trials stay one
/// command).
pub const MIN_SECRET_CHARS: usize = 16;

/// The secrets a person types or pastes, by the setting that holds them.
fn typed_secrets(c: &Config) -> Vec<(&'static str, &str)> {
    let mut secrets = vec![
        ("LONGTX_WEBHOOK_TOKEN", c.webhook_token.as_deref()),
        ("LONGTX_DASHBOARD_TOKEN", c.dashboard_token.as_deref()),
        (
            "LONGTX_GITHUB_WEBHOOK_SECRET",
            c.reviews.webhook_secret.as_deref(),
        ),
    ];
    if let Some(longtx_github::Credentials::Token(token)) = &c.github.credentials {
        secrets.push(("LONGTX_GITHUB_TOKEN", Some(token.as_str())));
    }
    secrets
        .into_iter()
        .filter_map(|(key, value)| value.map(|v| (key, v)))
        .collect()
}

/// Why `secret` can never be matched as typed: whitespace at either end
/// (no Bearer header carries it, so every write would be locked out), or a
/// character that shows as nothing.
fn unusable_secret(secret: &str) -> Option<String> {
    if secret.trim() != secret {
        return Some("has whitespace at its start or end, which no Authorization header can carry: remove it".into());
    }
    secret
        .chars()
        .find(|c| c.is_control() || c.is_whitespace() || longtx_core::text::is_invisible(*c))
        .map(|c| {
            format!(
                "holds an invisible or blank character (U+{:04X}): retype it",
                c as u32
            )
        })
}

/// What `config check` and `serve` warn about but accept.
pub fn warnings(c: &Config) -> Vec<Problem> {
    // A misspelt variable is otherwise silently no setting at all.
    let mut found: Vec<Problem> = super::reference::unknown_variables(
        std::env::vars_os().filter_map(|(k, _)| k.into_string().ok()),
    )
    .into_iter()
    .map(|(name, nearest)| Problem {
        key: "environment",
        message: match nearest {
            Some(meant) => format!("{name} is not a longtx setting; did you mean {meant}?"),
            None => {
                format!("{name} is not a longtx setting (`longtx config reference` lists them)")
            }
        },
    })
    .collect();
    if !c.listen.ip().is_loopback() {
        return found;
    }
    found.extend(typed_secrets(c)
        .into_iter()
        .filter(|(_, secret)| secret.chars().count() < MIN_SECRET_CHARS && unusable_secret(secret).is_none())
        .map(|(key, secret)| Problem {
            key,
            message: format!(
                "is {} characters, guessable; fine on loopback, refused beyond it: use {MIN_SECRET_CHARS} or more (`openssl rand -hex 32`)",
                secret.chars().count()
            ),
        }));
    found
}

/// Every reason `serve` would refuse to start with `c`, before it touches
/// the network; none means it would start.
pub fn problems(c: &Config) -> Vec<Problem> {
    let mut found = Vec::new();
    for (key, secret) in typed_secrets(c) {
        if let Some(why) = unusable_secret(secret) {
            found.push(Problem { key, message: why });
        } else if secret.chars().count() < MIN_SECRET_CHARS && !c.listen.ip().is_loopback() {
            found.push(Problem {
                key,
                message: format!(
                    "is {} characters while LONGTX_LISTEN is {}: anyone who can reach it could guess it; use {MIN_SECRET_CHARS} or more (`openssl rand -hex 32`)",
                    secret.chars().count(),
                    c.listen
                ),
            });
        }
    }
    if c.webhook_token.is_none() && !c.listen.ip().is_loopback() {
        found.push(Problem {
            key: "LONGTX_WEBHOOK_TOKEN",
            message: format!(
                "unset while LONGTX_LISTEN is {}: anyone who can reach it could create jobs; \
                 set a token or listen on 127.0.0.1",
                c.listen
            ),
        });
    }
    if let Some(url) = &c.database_url {
        let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        if !matches!(scheme.as_deref(), Some("postgres" | "postgresql")) {
            found.push(Problem {
                key: "DATABASE_URL",
                message: format!(
                    "{:?} is not a postgres:// URL: longtx keeps its jobs in PostgreSQL \
                     (the database watched for long transactions goes in LONGTX_COLLECT_DSN)",
                    redact(url)
                ),
            });
        }
    }
    found.extend(http_url(
        "LONGTX_PUBLIC_URL",
        &c.github.public_url,
        "where the workflow runs reach longtx",
    ));
    found.extend(api_url_problem(c));
    if let Err(e) = crate::serve::read_ignore_list(&c.ignore_list) {
        found.push(Problem {
            key: "LONGTX_IGNORE_LIST",
            message: format!("{e:#}"),
        });
    }
    found
}

/// The text `config check` prints: the table (key, where it came from,
/// value), then the verdict.
pub fn report(
    c: Option<&Config>,
    from: &std::collections::BTreeMap<String, &'static str>,
    early: &[super::every_problem::Found],
) -> (String, usize) {
    let mut out = String::new();
    let mut errors: Vec<String> = early
        .iter()
        .map(|f| format!("{} ({}): {}", f.key, f.source, f.message))
        .collect();
    if let Some(c) = c {
        let rows = shown(c);
        let width = rows.iter().map(|r| r.key.len()).max().unwrap_or(0);
        let _ = writeln!(out, "{:width$}  {:<12}  value", "setting", "from");
        for row in &rows {
            let origin = from.get(row.key).copied().unwrap_or("");
            let _ = writeln!(out, "{:width$}  {origin:<12}  {}", row.key, row.value);
        }
        out.push('\n');
        for w in warnings(c) {
            let _ = writeln!(out, "warning: {w}");
        }
        errors.extend(problems(c).iter().map(|p| {
            let origin = from.get(p.key).copied().unwrap_or("default");
            format!("{} ({origin}): {}", p.key, p.message)
        }));
    }
    if errors.is_empty() {
        out.push_str("configuration is valid: `longtx serve` would start with it\n");
    } else {
        for e in &errors {
            let _ = writeln!(out, "error: {e}");
        }
        let _ = writeln!(
            out,
            "configuration is invalid: `longtx serve` would refuse to start ({} problem{})",
            errors.len(),
            if errors.len() == 1 { "" } else { "s" }
        );
    }
    (out, errors.len())
}

/// `--json`: `{"valid": bool, "settings": {KEY: {"value", "from"}},
/// "problems": [{"key", "message"}]}`.
pub fn report_json(
    c: Option<&Config>,
    from: &std::collections::BTreeMap<String, &'static str>,
    early: &[super::every_problem::Found],
) -> (serde_json::Value, usize) {
    let mut problems: Vec<serde_json::Value> = early
        .iter()
        .map(|f| serde_json::json!({"key": f.key, "source": f.source, "message": f.message}))
        .collect();
    let mut settings = serde_json::Map::new();
    let mut warned = Vec::new();
    if let Some(c) = c {
        for s in shown(c) {
            let origin = from.get(s.key).copied();
            settings.insert(
                s.key.to_owned(),
                serde_json::json!({"value": s.value, "from": origin}),
            );
        }
        problems.extend(problems_of(c, from));
        warned = warnings(c);
    }
    let count = problems.len();
    (
        serde_json::json!({
            "valid": count == 0,
            "ok": count == 0,
            "settings": settings,
            "problems": problems,
            "warnings": warned,
        }),
        count,
    )
}

/// The loaded configuration's problems as JSON, each with its source.
fn problems_of(
    c: &Config,
    from: &std::collections::BTreeMap<String, &'static str>,
) -> Vec<serde_json::Value> {
    problems(c)
        .into_iter()
        .map(|p| {
            let origin = from.get(p.key).copied().unwrap_or("default");
            serde_json::json!({"key": p.key, "source": origin, "message": p.message})
        })
        .collect()
}
