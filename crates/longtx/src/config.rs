//! Configuration: an optional `longtx.toml`, every key overridable by an
//! environment variable. The environment names are a contract.

use longtx_core::duration::parse_duration;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub mod check;
pub mod every_problem;
pub mod reference;
mod review;
pub use review::ReviewConfig;

/// The file's shape; every key optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    database_url: Option<String>,
    listen: Option<String>,
    data_dir: Option<PathBuf>,
    webhook_token: Option<String>,
    dashboard_token: Option<String>,
    threshold_seconds: Option<f64>,
    table_thresholds: Option<BTreeMap<String, f64>>,
    exclude: Option<Vec<String>>,
    ignore_list: Option<PathBuf>,
    db_max_connections: Option<u32>,
    db_acquire_timeout: Option<String>,
    cooldown: Option<String>,
    alert_retention: Option<String>,
    collect_dsn: Option<String>,
    collect_interval: Option<String>,
    patterns_dir: Option<PathBuf>,
    prompt_template: Option<PathBuf>,
    repo_path: Option<PathBuf>,
    prompt_budget_bytes: Option<usize>,
    github_token: Option<String>,
    github_app_id: Option<u64>,
    github_app_private_key_file: Option<PathBuf>,
    github_installation_id: Option<u64>,
    github_api_url: Option<String>,
    github_repo: Option<String>,
    workflow: Option<String>,
    workflow_ref: Option<String>,
    max_dispatches_per_day: Option<i64>,
    max_running: Option<i64>,
    paused: Option<bool>,
    agent_timeout: Option<String>,
    dispatch_lease: Option<String>,
    public_url: Option<String>,
    github_webhook_secret: Option<String>,
    fallback_team: Option<String>,
    max_reviewers: Option<usize>,
    reviewer_capacity: Option<i64>,
    team_capacity: Option<i64>,
    history_days: Option<u32>,
    git_url: Option<String>,
    author_logins: Option<BTreeMap<String, String>>,
    wontfix_label: Option<String>,
    pre_review: Option<String>,
    pre_review_workflow: Option<String>,
    pr_check: Option<String>,
}

#[derive(Clone)]
pub struct Config {
    /// `None`: run the embedded PostgreSQL under `data_dir`.
    pub database_url: Option<String>,
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub webhook_token: Option<String>,
    /// Opens the dashboard pages (not the API or webhooks).
    pub dashboard_token: Option<String>,
    pub threshold_seconds: f64,
    pub table_thresholds: BTreeMap<String, f64>,
    pub exclude: Vec<String>,
    pub ignore_list: PathBuf,
    pub db_max_connections: u32,
    pub db_acquire_timeout: Duration,
    pub cooldown: Duration,
    /// `LONGTX_DEPLOY_GRACE` (2h) and `LONGTX_VERIFY_WINDOW` (7d): when a
    /// merged fix counts as holding, or as regressed.
    pub deploy_grace: Duration,
    pub verify_window: Duration,
    pub alert_retention: Duration,
    /// Run the lock-holder collector inside `serve` on this database.
    pub collect_dsn: Option<longtx_collector::Dsn>,
    pub collect_interval: Duration,
    /// The fix-pattern catalogue.
    pub patterns_dir: PathBuf,
    /// The prompt template; `patterns_dir/_prompt.md.tera` by default.
    pub prompt_template: PathBuf,
    /// A checkout of the target repository, where the code is looked up.
    pub repo_path: Option<PathBuf>,
    pub prompt_budget_bytes: usize,
    pub github: GitHubConfig,
    pub reviews: ReviewConfig,
    /// `LONGTX_LOG` and `LONGTX_LOG_FORMAT`, as `config check` shows them
    /// (logging itself is set up from the environment before any file is
    /// read, so these two have no file key).
    pub log_filter: String,
    pub log_format: String,
}

/// GitHub access and dispatch. No credentials: dry-run mode.
#[derive(Clone)]
pub struct GitHubConfig {
    pub credentials: Option<longtx_github::Credentials>,
    pub api_url: String,
    pub repo: Option<String>,
    pub workflow: String,
    pub workflow_ref: Option<String>,
    pub max_dispatches_per_day: i64,
    pub max_running: i64,
    /// `LONGTX_MAX_COST_PER_DAY`: US dollars of counted agent budgets per
    /// UTC day; unset, no cost cap.
    pub max_cost_per_day: Option<f64>,
    /// `LONGTX_RUN_BUDGET_USD`, `LONGTX_PRE_REVIEW_BUDGET_USD`: what one fix
    /// run (or round) and one pre-review run count against the cost cap,
    /// and the most their reported cost is taken to be.
    pub run_budget_usd: f64,
    pub pre_review_budget_usd: f64,
    /// `Some` when set: applied to the shared pause switch at start.
    pub paused: Option<bool>,
    pub agent_timeout: Duration,
    pub dispatch_lease: Duration,
    /// Where the workflow reaches this service (to fetch prompts).
    pub public_url: String,
    /// `LONGTX_MAX_PATCH_BYTES`, `LONGTX_MAX_PATCH_FILES`: the largest agent
    /// patch longtx commits.
    pub max_patch_bytes: usize,
    pub max_patch_files: usize,
    /// `LONGTX_PROTECTED_PATHS`: globs (comma-separated) no agent patch may
    /// touch, on top of the built-in ones.
    pub protected_paths: Vec<String>,
    /// `LONGTX_DEVIN_SERVICE_TOKEN` and `LONGTX_DEVIN_ORG_ID` (with
    /// `LONGTX_DEVIN_API_URL`, `LONGTX_USD_PER_ACU`): longtx reads a Devin
    /// run's ACUs itself.
    pub devin: Option<longtx_pipeline::DevinSettings>,
}

/// Secrets never reach logs: Debug shows only whether they are set.
impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set = |v: &Option<String>| if v.is_some() { "<set>" } else { "<unset>" };
        f.debug_struct("Config")
            .field("database_url", &set(&self.database_url))
            .field("listen", &self.listen)
            .field("data_dir", &self.data_dir)
            .field("webhook_token", &set(&self.webhook_token))
            .field("dashboard_token", &set(&self.dashboard_token))
            .field("threshold_seconds", &self.threshold_seconds)
            .field("table_thresholds", &self.table_thresholds)
            .field("exclude", &self.exclude)
            .field("ignore_list", &self.ignore_list)
            .field("db_max_connections", &self.db_max_connections)
            .field("db_acquire_timeout", &self.db_acquire_timeout)
            .field("cooldown", &self.cooldown)
            .field("deploy_grace", &self.deploy_grace)
            .field("verify_window", &self.verify_window)
            .field("alert_retention", &self.alert_retention)
            .field("collect_dsn", &self.collect_dsn)
            .field("collect_interval", &self.collect_interval)
            .field("log_filter", &self.log_filter)
            .field("log_format", &self.log_format)
            .field("patterns_dir", &self.patterns_dir)
            .field("prompt_template", &self.prompt_template)
            .field("repo_path", &self.repo_path)
            .field("prompt_budget_bytes", &self.prompt_budget_bytes)
            .field("github_credentials", &self.github.credentials)
            .field("github_api_url", &self.github.api_url)
            .field("github_repo", &self.github.repo)
            .field("workflow", &self.github.workflow)
            .field(
                "max_dispatches_per_day",
                &self.github.max_dispatches_per_day,
            )
            .field("max_running", &self.github.max_running)
            .field("public_url", &self.github.public_url)
            .field("devin", &self.github.devin)
            .field("reviews", &self.reviews)
            .finish()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {cause}")]
    Read { path: String, cause: std::io::Error },
    #[error("{path} is not valid: {message}")]
    File { path: String, message: String },
    #[error("{key} is not valid: {message}")]
    Value { key: &'static str, message: String },
    #[error("{key}: {message}")]
    SecretFile { key: String, message: String },
}

/// The settings that hold secrets. Each may instead be given as
/// `NAME_FILE`, a file holding the value (Kubernetes and Docker secrets,
/// systemd credentials); one trailing newline is dropped.
pub const SECRET_KEYS: [&str; 7] = [
    "DATABASE_URL",
    "LONGTX_WEBHOOK_TOKEN",
    "LONGTX_DASHBOARD_TOKEN",
    "LONGTX_GITHUB_TOKEN",
    "GITHUB_TOKEN",
    "LONGTX_GITHUB_WEBHOOK_SECRET",
    "LONGTX_COLLECT_DSN",
];

/// The values of `NAME_FILE` settings, read once; both forms set is an
/// error, so a stale variable never silently wins over the file.
fn secret_files(
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<BTreeMap<&'static str, String>, ConfigError> {
    let mut values = BTreeMap::new();
    for key in SECRET_KEYS {
        let file_key = format!("{key}_FILE");
        let Some(path) = env(&file_key).filter(|p| !p.trim().is_empty()) else {
            continue;
        };
        if env(key).is_some_and(|v| !v.trim().is_empty()) {
            return Err(ConfigError::SecretFile {
                key: file_key,
                message: format!("set {key} or {key}_FILE, not both"),
            });
        }
        let text = std::fs::read_to_string(&path).map_err(|e| ConfigError::SecretFile {
            key: file_key.clone(),
            message: format!("cannot read {path}: {e}"),
        })?;
        let value = text.strip_suffix('\n').unwrap_or(&text);
        let value = value.strip_suffix('\r').unwrap_or(value);
        if value.trim().is_empty() {
            return Err(ConfigError::SecretFile {
                key: file_key,
                message: format!("{path} is empty"),
            });
        }
        values.insert(key, value.to_owned());
    }
    Ok(values)
}

/// The tokens and secrets that open longtx or verify what reaches it. A
/// blank one would be an empty HMAC key, or a password of spaces that
/// passes the "a public address needs a token" check: from any source it
/// stops startup, naming the key (`*_FILE` files are checked as they are
/// read).
const NEVER_BLANK: [&str; 6] = [
    "LONGTX_WEBHOOK_TOKEN",
    "LONGTX_DASHBOARD_TOKEN",
    "LONGTX_GITHUB_TOKEN",
    "GITHUB_TOKEN",
    "LONGTX_GITHUB_WEBHOOK_SECRET",
    "LONGTX_DEVIN_SERVICE_TOKEN",
];

fn refuse_blank_secrets(
    env: &dyn Fn(&str) -> Option<String>,
    file: &FileConfig,
) -> Result<(), ConfigError> {
    let blank = "is set but empty or only whitespace: give it a real value, or unset it";
    for key in NEVER_BLANK {
        if env(key).is_some_and(|v| v.trim().is_empty()) {
            return Err(invalid(key, blank));
        }
    }
    for (key, value) in [
        ("webhook_token (config file)", &file.webhook_token),
        ("dashboard_token (config file)", &file.dashboard_token),
        ("github_token (config file)", &file.github_token),
        (
            "github_webhook_secret (config file)",
            &file.github_webhook_secret,
        ),
    ] {
        if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
            return Err(invalid(key, blank));
        }
    }
    Ok(())
}

/// A positive amount of US dollars from `key`, else `default`.
fn dollars(
    var: &dyn Fn(&str) -> Option<String>,
    key: &'static str,
    default: f64,
) -> Result<f64, ConfigError> {
    match var(key).filter(|v| !v.trim().is_empty()) {
        None => Ok(default),
        Some(v) => amount_of_dollars(&v)
            .filter(|n| *n > 0.0 && *n <= 10_000.0)
            .ok_or_else(|| {
                invalid(
                    key,
                    format!("{v:?} is not an amount of US dollars above 0 and at most 10000"),
                )
            }),
    }
}

/// `12.5` or `$12.5` as a finite number; `None` for anything else.
fn amount_of_dollars(text: &str) -> Option<f64> {
    text.trim()
        .trim_start_matches('$')
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite())
}

fn invalid(key: &'static str, message: impl fmt::Display) -> ConfigError {
    ConfigError::Value {
        key,
        message: message.to_string(),
    }
}

impl Config {
    pub fn prompt_sources(&self) -> longtx_prompt::PromptSources {
        longtx_prompt::PromptSources {
            patterns_dir: self.patterns_dir.clone(),
            template: self.prompt_template.clone(),
            repo: self.repo_path.clone(),
            budget_bytes: self.prompt_budget_bytes,
        }
    }

    /// The intake policy these settings describe.
    pub fn policy(&self) -> longtx_core::IntakePolicy {
        longtx_core::IntakePolicy {
            threshold_seconds: self.threshold_seconds,
            table_thresholds: self.table_thresholds.clone(),
            exclude: self.exclude.clone(),
            cooldown: self.cooldown,
            deploy_grace: self.deploy_grace,
            verify_window: self.verify_window,
        }
    }

    /// Reads `path` (if given) and then the environment through `env`, which
    /// tests replace with a map.
    pub fn load(
        path: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let text = match path {
            Some(path) => Some((
                path.display().to_string(),
                std::fs::read_to_string(path).map_err(|cause| ConfigError::Read {
                    path: path.display().to_string(),
                    cause,
                })?,
            )),
            None => None,
        };
        Config::load_text(text.as_ref().map(|(p, t)| (p.as_str(), t.as_str())), env)
    }

    /// As [`load`](Self::load), from the file's text (and its name, for
    /// messages) already read.
    pub fn load_text(
        file: Option<(&str, &str)>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let file = match file {
            Some((path, text)) => {
                toml::from_str::<FileConfig>(text).map_err(|e| ConfigError::File {
                    path: path.to_owned(),
                    message: file_error(text, &e),
                })?
            }
            None => FileConfig::default(),
        };
        Config::from_file(file, env)
    }

    /// The configuration from the file's keys, already parsed, and `env`.
    fn from_file(
        file: FileConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        // An empty variable counts as unset, except LONGTX_EXCLUDE where it
        // means "exclude nothing".
        let secrets = secret_files(env)?;
        refuse_blank_secrets(env, &file)?;
        let var = |name: &str| {
            secrets
                .get(name)
                .cloned()
                .or_else(|| env(name))
                .filter(|v| !v.trim().is_empty())
        };
        let file_gh = file_github(&file);

        let listen_text = var("LONGTX_LISTEN")
            .or(file.listen)
            .unwrap_or_else(|| "127.0.0.1:8080".into());
        let listen = listen_text.parse().map_err(|e| {
            invalid(
                "LONGTX_LISTEN",
                format!("{listen_text:?}: {e} (use host:port, e.g. 127.0.0.1:8080)"),
            )
        })?;

        let threshold_seconds = match var("LONGTX_THRESHOLD_SECONDS") {
            Some(v) => v.trim().parse().map_err(|_| {
                invalid("LONGTX_THRESHOLD_SECONDS", format!("{v:?} is not a number"))
            })?,
            None => file.threshold_seconds.unwrap_or(100.0),
        };
        if !(threshold_seconds >= 0.0 && f64::is_finite(threshold_seconds)) {
            return Err(invalid(
                "LONGTX_THRESHOLD_SECONDS",
                "must be a non-negative number",
            ));
        }

        let table_thresholds = match var("LONGTX_TABLE_THRESHOLDS") {
            Some(v) => parse_table_thresholds(&v)?,
            None => file.table_thresholds.unwrap_or_default(),
        };

        let exclude = match env("LONGTX_EXCLUDE") {
            Some(v) => v
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
            None => file
                .exclude
                .unwrap_or_else(|| vec!["unknown".into(), "rake:tmp:*".into()]),
        };

        let db_max_connections = match var("LONGTX_DB_MAX_CONNECTIONS") {
            Some(v) => v.trim().parse().map_err(|_| {
                invalid(
                    "LONGTX_DB_MAX_CONNECTIONS",
                    format!("{v:?} is not a whole number"),
                )
            })?,
            None => file.db_max_connections.unwrap_or(5),
        };
        if db_max_connections == 0 {
            return Err(invalid("LONGTX_DB_MAX_CONNECTIONS", "must be at least 1"));
        }

        let duration = |key: &'static str,
                        env_value: Option<String>,
                        file_value: Option<String>,
                        default: &str| {
            // Name where a bad value was written: the file's key, when it
            // came from the file, is what the person has to edit.
            let from_file = env_value.is_none() && file_value.is_some();
            let text = env_value
                .or(file_value)
                .unwrap_or_else(|| default.to_owned());
            parse_duration(&text).map_err(|e| {
                if from_file {
                    let file_key = key.trim_start_matches("LONGTX_").to_lowercase();
                    invalid(key, format!("`{file_key}` in the file: {e}"))
                } else {
                    invalid(key, e)
                }
            })
        };

        let patterns_dir = var("LONGTX_PATTERNS_DIR")
            .map(PathBuf::from)
            .or(file.patterns_dir)
            .unwrap_or_else(|| "patterns".into());
        let prompt_budget_bytes = match var("LONGTX_PROMPT_BUDGET_BYTES") {
            Some(v) => v.trim().parse().map_err(|_| {
                invalid(
                    "LONGTX_PROMPT_BUDGET_BYTES",
                    format!("{v:?} is not a whole number of bytes"),
                )
            })?,
            None => file.prompt_budget_bytes.unwrap_or(48 * 1024),
        };
        if prompt_budget_bytes < 1024 {
            return Err(invalid(
                "LONGTX_PROMPT_BUDGET_BYTES",
                "must be at least 1024",
            ));
        }

        let github = load_github(&var, &file_gh, listen)?;
        let reviews = review::load(
            &var,
            review::FileReview {
                webhook_secret: file.github_webhook_secret,
                fallback_team: file.fallback_team,
                max_reviewers: file.max_reviewers,
                reviewer_capacity: file.reviewer_capacity,
                team_capacity: file.team_capacity,
                history_days: file.history_days,
                git_url: file.git_url,
                author_logins: file.author_logins,
                wontfix_label: file.wontfix_label,
                pre_review: file.pre_review,
                pre_review_workflow: file.pre_review_workflow,
                pr_check: file.pr_check,
            },
            github.repo.as_deref(),
        )?;

        Ok(Config {
            github,
            reviews,
            prompt_template: var("LONGTX_PROMPT_TEMPLATE")
                .map(PathBuf::from)
                .or(file.prompt_template)
                .unwrap_or_else(|| patterns_dir.join("_prompt.md.tera")),
            patterns_dir,
            repo_path: var("LONGTX_REPO_PATH")
                .map(PathBuf::from)
                .or(file.repo_path),
            prompt_budget_bytes,
            database_url: var("DATABASE_URL")
                .or(file.database_url)
                .filter(|v| !v.is_empty()),
            listen,
            data_dir: var("LONGTX_DATA_DIR")
                .map(PathBuf::from)
                .or(file.data_dir)
                .unwrap_or_else(|| ".longtx".into()),
            webhook_token: var("LONGTX_WEBHOOK_TOKEN")
                .or(file.webhook_token)
                .filter(|v| !v.is_empty()),
            dashboard_token: var("LONGTX_DASHBOARD_TOKEN")
                .or(file.dashboard_token)
                .filter(|v| !v.is_empty()),
            threshold_seconds,
            table_thresholds,
            exclude,
            ignore_list: var("LONGTX_IGNORE_LIST")
                .map(PathBuf::from)
                .or(file.ignore_list)
                .unwrap_or_else(|| "ignore-list.yaml".into()),
            db_max_connections,
            db_acquire_timeout: duration(
                "LONGTX_DB_ACQUIRE_TIMEOUT",
                var("LONGTX_DB_ACQUIRE_TIMEOUT"),
                file.db_acquire_timeout,
                "5s",
            )?,
            cooldown: duration(
                "LONGTX_COOLDOWN",
                var("LONGTX_COOLDOWN"),
                file.cooldown,
                "7d",
            )?,
            deploy_grace: duration(
                "LONGTX_DEPLOY_GRACE",
                var("LONGTX_DEPLOY_GRACE"),
                None,
                "2h",
            )?,
            verify_window: duration(
                "LONGTX_VERIFY_WINDOW",
                var("LONGTX_VERIFY_WINDOW"),
                None,
                "7d",
            )?,
            alert_retention: duration(
                "LONGTX_ALERT_RETENTION",
                var("LONGTX_ALERT_RETENTION"),
                file.alert_retention,
                "30d",
            )?,
            collect_dsn: var("LONGTX_COLLECT_DSN")
                .or(file.collect_dsn)
                .filter(|v| !v.is_empty())
                .map(|v| {
                    v.parse()
                        .map_err(|e: String| invalid("LONGTX_COLLECT_DSN", e))
                })
                .transpose()?,
            collect_interval: duration(
                "LONGTX_COLLECT_INTERVAL",
                var("LONGTX_COLLECT_INTERVAL"),
                file.collect_interval,
                "15s",
            )?,
            log_filter: var("LONGTX_LOG").unwrap_or_else(|| "info".to_owned()),
            log_format: var("LONGTX_LOG_FORMAT").unwrap_or_else(|| "text".to_owned()),
        })
    }
}

/// A TOML error as one line: an unknown key with the key meant (serde lists
/// all 44 valid ones instead), anything else with its line.
fn file_error(text: &str, e: &toml::de::Error) -> String {
    let line = e
        .span()
        .map(|span| text[..span.start.min(text.len())].lines().count().max(1));
    let at = line.map(|l| format!("line {l}: ")).unwrap_or_default();
    let message = e.message();
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let key = rest.split('`').next().unwrap_or("");
        return match reference::nearest(key, reference::all_file_keys()) {
            Some(meant) => format!("{at}unknown key `{key}`; did you mean `{meant}`?"),
            None => format!("{at}unknown key `{key}` (`longtx config reference` lists the keys)"),
        };
    }
    format!("{at}{message}")
}

/// The GitHub keys of the file, apart, so `load_github` can own them.
struct FileGitHub {
    token: Option<String>,
    app_id: Option<u64>,
    app_key_file: Option<PathBuf>,
    installation_id: Option<u64>,
    api_url: Option<String>,
    repo: Option<String>,
    workflow: Option<String>,
    workflow_ref: Option<String>,
    max_per_day: Option<i64>,
    max_running: Option<i64>,
    paused: Option<bool>,
    agent_timeout: Option<String>,
    lease: Option<String>,
    public_url: Option<String>,
}

fn file_github(file: &FileConfig) -> FileGitHub {
    FileGitHub {
        token: file.github_token.clone(),
        app_id: file.github_app_id,
        app_key_file: file.github_app_private_key_file.clone(),
        installation_id: file.github_installation_id,
        api_url: file.github_api_url.clone(),
        repo: file.github_repo.clone(),
        workflow: file.workflow.clone(),
        workflow_ref: file.workflow_ref.clone(),
        max_per_day: file.max_dispatches_per_day,
        max_running: file.max_running,
        paused: file.paused,
        agent_timeout: file.agent_timeout.clone(),
        lease: file.dispatch_lease.clone(),
        public_url: file.public_url.clone(),
    }
}

fn parse_number<T: std::str::FromStr>(
    key: &'static str,
    value: Option<String>,
    file: Option<T>,
    default: T,
) -> Result<T, ConfigError> {
    match value {
        Some(v) => v
            .trim()
            .parse()
            .map_err(|_| invalid(key, format!("{v:?} is not a whole number"))),
        None => Ok(file.unwrap_or(default)),
    }
}

fn parse_optional(
    key: &'static str,
    value: Option<String>,
    file: Option<u64>,
) -> Result<Option<u64>, ConfigError> {
    match value {
        Some(v) => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| invalid(key, format!("{v:?} is not a whole number"))),
        None => Ok(file),
    }
}

fn load_github(
    var: &dyn Fn(&str) -> Option<String>,
    file: &FileGitHub,
    listen: SocketAddr,
) -> Result<GitHubConfig, ConfigError> {
    let token = var("LONGTX_GITHUB_TOKEN")
        .or_else(|| var("GITHUB_TOKEN"))
        .or(file.token.clone());
    let app_id = parse_optional(
        "LONGTX_GITHUB_APP_ID",
        var("LONGTX_GITHUB_APP_ID"),
        file.app_id,
    )?;
    let credentials = match (token, app_id) {
        (Some(token), _) => Some(longtx_github::Credentials::Token(token)),
        (None, Some(app_id)) => {
            let key_file = var("LONGTX_GITHUB_APP_PRIVATE_KEY_FILE")
                .map(PathBuf::from)
                .or(file.app_key_file.clone())
                .ok_or_else(|| {
                    invalid(
                        "LONGTX_GITHUB_APP_PRIVATE_KEY_FILE",
                        "is required with LONGTX_GITHUB_APP_ID",
                    )
                })?;
            let private_key_pem = std::fs::read_to_string(&key_file).map_err(|e| {
                invalid(
                    "LONGTX_GITHUB_APP_PRIVATE_KEY_FILE",
                    format!("cannot read {}: {e}", key_file.display()),
                )
            })?;
            let installation_id = parse_optional(
                "LONGTX_GITHUB_INSTALLATION_ID",
                var("LONGTX_GITHUB_INSTALLATION_ID"),
                file.installation_id,
            )?
            .ok_or_else(|| {
                invalid(
                    "LONGTX_GITHUB_INSTALLATION_ID",
                    "is required with LONGTX_GITHUB_APP_ID",
                )
            })?;
            Some(longtx_github::Credentials::App {
                app_id,
                private_key_pem,
                installation_id,
            })
        }
        (None, None) => None,
    };
    let repo = var("LONGTX_GITHUB_REPO").or(file.repo.clone());
    if let Some(repo) = &repo {
        repo.parse::<longtx_github::RepoName>()
            .map_err(|e| invalid("LONGTX_GITHUB_REPO", e))?;
    } else if credentials.is_some() {
        return Err(invalid(
            "LONGTX_GITHUB_REPO",
            "is required when GitHub credentials are set (owner/name)",
        ));
    }
    let paused = match var("LONGTX_PAUSED") {
        Some(v) => Some(matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "on"
        )),
        None => file.paused,
    };
    let duration = |key: &'static str, text: Option<String>, default: &str| {
        parse_duration(&text.unwrap_or_else(|| default.to_owned())).map_err(|e| invalid(key, e))
    };
    Ok(GitHubConfig {
        credentials,
        api_url: var("LONGTX_GITHUB_API_URL")
            .or(file.api_url.clone())
            .unwrap_or_else(|| "https://api.github.com".into()),
        repo,
        workflow: var("LONGTX_WORKFLOW")
            .or(file.workflow.clone())
            .unwrap_or_else(|| "long-transaction-fix.yml".into()),
        workflow_ref: var("LONGTX_WORKFLOW_REF").or(file.workflow_ref.clone()),
        devin: match (
            var("LONGTX_DEVIN_SERVICE_TOKEN"),
            var("LONGTX_DEVIN_ORG_ID"),
        ) {
            (Some(service_token), Some(org_id)) => Some(longtx_pipeline::DevinSettings {
                api_url: var("LONGTX_DEVIN_API_URL")
                    .unwrap_or_else(|| "https://api.devin.ai".into()),
                org_id,
                service_token,
                usd_per_acu: match var("LONGTX_USD_PER_ACU") {
                    Some(v) => Some(
                        v.trim()
                            .parse::<f64>()
                            .ok()
                            .filter(|p| p.is_finite() && *p >= 0.0)
                            .ok_or_else(|| {
                                invalid(
                                    "LONGTX_USD_PER_ACU",
                                    format!("{v:?} is not a price in US dollars"),
                                )
                            })?,
                    ),
                    None => None,
                },
            }),
            (None, None) => None,
            _ => {
                return Err(invalid(
                    "LONGTX_DEVIN_SERVICE_TOKEN",
                    "set both LONGTX_DEVIN_SERVICE_TOKEN and LONGTX_DEVIN_ORG_ID, or neither"
                        .to_owned(),
                ))
            }
        },
        max_patch_bytes: parse_number(
            "LONGTX_MAX_PATCH_BYTES",
            var("LONGTX_MAX_PATCH_BYTES"),
            None,
            longtx_core::patch_policy::DEFAULT_MAX_PATCH_BYTES,
        )?,
        max_patch_files: parse_number(
            "LONGTX_MAX_PATCH_FILES",
            var("LONGTX_MAX_PATCH_FILES"),
            None,
            longtx_core::patch_policy::DEFAULT_MAX_PATCH_FILES,
        )?,
        protected_paths: var("LONGTX_PROTECTED_PATHS")
            .map(|v| {
                v.split(',')
                    .map(|p| p.trim().to_owned())
                    .filter(|p| !p.is_empty())
                    .collect()
            })
            .unwrap_or_default(),
        max_dispatches_per_day: parse_number(
            "LONGTX_MAX_DISPATCHES_PER_DAY",
            var("LONGTX_MAX_DISPATCHES_PER_DAY"),
            file.max_per_day,
            10,
        )?,
        max_running: parse_number(
            "LONGTX_MAX_RUNNING",
            var("LONGTX_MAX_RUNNING"),
            file.max_running,
            3,
        )?,
        max_cost_per_day: var("LONGTX_MAX_COST_PER_DAY")
            .filter(|v| !v.trim().is_empty())
            .map(|v| {
                amount_of_dollars(&v).filter(|n| *n >= 0.0).ok_or_else(|| {
                    invalid(
                        "LONGTX_MAX_COST_PER_DAY",
                        format!("{v:?} is not an amount of US dollars"),
                    )
                })
            })
            .transpose()?,
        run_budget_usd: dollars(
            var,
            "LONGTX_RUN_BUDGET_USD",
            longtx_store::DEFAULT_RUN_BUDGET_USD,
        )?,
        pre_review_budget_usd: dollars(
            var,
            "LONGTX_PRE_REVIEW_BUDGET_USD",
            longtx_store::DEFAULT_PRE_REVIEW_BUDGET_USD,
        )?,
        paused,
        agent_timeout: duration(
            "LONGTX_AGENT_TIMEOUT",
            var("LONGTX_AGENT_TIMEOUT").or(file.agent_timeout.clone()),
            "2h",
        )?,
        dispatch_lease: duration(
            "LONGTX_DISPATCH_LEASE",
            var("LONGTX_DISPATCH_LEASE").or(file.lease.clone()),
            "5m",
        )?,
        public_url: var("LONGTX_PUBLIC_URL")
            .or(file.public_url.clone())
            .unwrap_or_else(|| format!("http://{listen}")),
    })
}

/// `orders=300,users=50`.
fn parse_table_thresholds(text: &str) -> Result<BTreeMap<String, f64>, ConfigError> {
    text.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (table, seconds) = pair.split_once('=').ok_or_else(|| {
                invalid(
                    "LONGTX_TABLE_THRESHOLDS",
                    format!("{pair:?}: use table=seconds"),
                )
            })?;
            let seconds: f64 = seconds.trim().parse().map_err(|_| {
                invalid(
                    "LONGTX_TABLE_THRESHOLDS",
                    format!("{pair:?}: seconds must be a number"),
                )
            })?;
            Ok((table.trim().to_owned(), seconds))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(vars: &[(&str, &str)], file: Option<&str>) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let dir = longtx_testkit::TempDir::new("config-test");
        let path = file.map(|text| {
            let p = dir.join(format!("{}.toml", text.len()));
            std::fs::write(&p, text).unwrap();
            p
        });
        Config::load(path.as_deref(), &|k| map.get(k).cloned())
    }

    #[test]
    fn defaults_match_the_documented_contract() {
        let c = load(&[], None).unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(c.data_dir, PathBuf::from(".longtx"));
        assert_eq!(c.threshold_seconds, 100.0);
        assert_eq!(c.exclude, vec!["unknown", "rake:tmp:*"]);
        assert_eq!(c.ignore_list, PathBuf::from("ignore-list.yaml"));
        assert_eq!(c.db_max_connections, 5);
        assert_eq!(c.cooldown, Duration::from_secs(7 * 86_400));
        assert_eq!(c.alert_retention, Duration::from_secs(30 * 86_400));
        assert!(c.database_url.is_none() && c.webhook_token.is_none());
        assert_eq!(c.patterns_dir, PathBuf::from("patterns"));
        assert_eq!(c.prompt_template, PathBuf::from("patterns/_prompt.md.tera"));
        assert_eq!(c.prompt_budget_bytes, 48 * 1024);
        assert!(c.repo_path.is_none());
        assert!(c.github.credentials.is_none(), "no credentials: dry run");
        assert_eq!(c.github.api_url, "https://api.github.com");
        assert_eq!(c.github.workflow, "long-transaction-fix.yml");
        assert_eq!(
            (c.github.max_dispatches_per_day, c.github.max_running),
            (10, 3)
        );
        assert_eq!(c.github.agent_timeout, Duration::from_secs(7200));
        assert_eq!(c.github.paused, None);
    }

    #[test]
    fn environment_overrides_the_file() {
        let file = "threshold_seconds = 50\ncooldown = \"1d\"\n[table_thresholds]\norders = 20\n";
        let c = load(
            &[("LONGTX_THRESHOLD_SECONDS", "30"), ("LONGTX_EXCLUDE", "")],
            Some(file),
        )
        .unwrap();
        assert_eq!(c.threshold_seconds, 30.0);
        assert_eq!(c.cooldown, Duration::from_secs(86_400));
        assert_eq!(c.table_thresholds.get("orders"), Some(&20.0));
        assert!(c.exclude.is_empty());
        let c = load(
            &[("LONGTX_TABLE_THRESHOLDS", "users=5, orders=7")],
            Some(file),
        )
        .unwrap();
        assert_eq!(c.table_thresholds.get("orders"), Some(&7.0));
    }

    #[test]
    fn bad_values_name_their_key_and_secrets_stay_hidden() {
        let err = load(&[("LONGTX_COOLDOWN", "soon")], None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("LONGTX_COOLDOWN"), "{err}");
        let err = load(&[], Some("cooldown = \"7 days\"\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`cooldown` in the file"), "{err}");
        let err = load(&[], Some("unknown_key = 1\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown_key"), "{err}");
        let c = load(
            &[
                ("LONGTX_WEBHOOK_TOKEN", "hunter2"),
                ("LONGTX_DASHBOARD_TOKEN", "peekaboo"),
                ("LONGTX_COLLECT_DSN", "mysql://collector:dbpass@db:3306"),
                ("DATABASE_URL", "postgres://u:pw@h/db"),
            ],
            None,
        )
        .unwrap();
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("hunter2")
                && !shown.contains("peekaboo")
                && !shown.contains("dbpass")
                && !shown.contains("pw@"),
            "{shown}"
        );
        let dir = longtx_testkit::TempDir::new("secret");
        let token_file = dir.join("token");
        std::fs::write(&token_file, "from-a-file\n").unwrap();
        let path = token_file.to_str().unwrap();
        let c = load(&[("LONGTX_WEBHOOK_TOKEN_FILE", path)], None).unwrap();
        assert_eq!(c.webhook_token.as_deref(), Some("from-a-file"));
        let err = load(
            &[
                ("LONGTX_WEBHOOK_TOKEN_FILE", path),
                ("LONGTX_WEBHOOK_TOKEN", "x"),
            ],
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("not both"), "{err}");
        let err = load(&[("DATABASE_URL_FILE", "/nonexistent/db-url")], None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("DATABASE_URL_FILE") && err.contains("/nonexistent/db-url"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).ok();
        let err = load(&[("GITHUB_TOKEN", "ghp_x")], None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("LONGTX_GITHUB_REPO") && !err.contains("ghp_x"),
            "{err}"
        );
        let c = load(
            &[
                ("GITHUB_TOKEN", "ghp_secret"),
                ("LONGTX_GITHUB_REPO", "acme/app"),
                ("LONGTX_PAUSED", "true"),
            ],
            None,
        )
        .unwrap();
        assert_eq!(c.github.paused, Some(true));
        assert!(!format!("{c:?}").contains("ghp_secret"));
    }

    #[test]
    fn a_blank_secret_from_any_source_stops_startup_naming_its_key() {
        for key in [
            "LONGTX_WEBHOOK_TOKEN",
            "LONGTX_GITHUB_WEBHOOK_SECRET",
            "GITHUB_TOKEN",
        ] {
            for blank in ["", " ", "\t\n"] {
                let err = load(&[(key, blank)], None).unwrap_err().to_string();
                assert!(
                    err.contains(key) && err.contains("empty or only whitespace"),
                    "{err}"
                );
            }
        }
        for line in ["github_webhook_secret = \"\"", "webhook_token = \" \""] {
            let err = load(&[], Some(&format!("{line}\n")))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("(config file)") && err.contains(line.split(' ').next().unwrap()),
                "{err}"
            );
        }
        let dir = longtx_testkit::TempDir::new("blank");
        let secret = dir.join("token");
        std::fs::write(&secret, "  \n").unwrap();
        let err = load(
            &[("LONGTX_WEBHOOK_TOKEN_FILE", secret.to_str().unwrap())],
            None,
        )
        .unwrap_err()
        .to_string();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            err.contains("LONGTX_WEBHOOK_TOKEN_FILE") && err.contains("is empty"),
            "{err}"
        );
    }
}
