//! Checks that need no GitHub: the database, the ignore list, the pattern
//! catalogue and the prompt template.

use super::Check;
use crate::config::Config;

pub async fn checks(config: &Config) -> Vec<Check> {
    let mut checks = vec![database(config).await];
    checks.push(match crate::serve::read_ignore_list(&config.ignore_list) {
        Ok(list) => Check::pass(
            "local.ignore_list",
            format!(
                "{}: {} entries{}",
                config.ignore_list.display(),
                list.as_ref().map_or(0, |l| l.entries().len()),
                if list.is_none() {
                    " (no file: nothing is ignored)"
                } else {
                    ""
                }
            ),
        ),
        Err(e) => Check::fail(
            "local.ignore_list",
            format!("{e:#}"),
            format!(
                "run `longtx ignore lint {}` and correct the file",
                config.ignore_list.display()
            ),
        ),
    });
    checks.push(match longtx_catalog::lint_dir(&config.patterns_dir) {
        Ok(problems) if problems.is_empty() => Check::pass(
            "local.patterns",
            format!("{}: no problems", config.patterns_dir.display()),
        ),
        Ok(problems) => Check::fail(
            "local.patterns",
            format!("{} problem(s), first: {}", problems.len(), problems[0]),
            format!(
                "run `longtx patterns lint {}`",
                config.patterns_dir.display()
            ),
        ),
        Err(e) => Check::fail(
            "local.patterns",
            e.to_string(),
            "set LONGTX_PATTERNS_DIR to the catalogue (a folder of pattern files)",
        ),
    });
    checks.push(prompt(config));
    checks
}

async fn database(config: &Config) -> Check {
    let id = "local.database";
    let db = match crate::database::Database::open(config).await {
        Ok(db) => db,
        Err(e) => {
            return Check::fail(
                id,
                format!("{e:#}"),
                "set DATABASE_URL to a reachable postgres:// URL (or unset it for the embedded database)",
            )
        }
    };
    let result = match db.store.pending_migrations().await {
        Ok(pending) if pending.is_empty() => {
            Check::pass(id, "the database answers; migrations are current")
        }
        Ok(pending) => Check::fail(
            id,
            format!(
                "{} migration(s) not applied: {}",
                pending.len(),
                pending.join(", ")
            ),
            "run `longtx migrate` (serve also applies them at start)",
        ),
        Err(e) => Check::fail(
            id,
            e.to_string(),
            "check DATABASE_URL: host, credentials, database name and TLS settings",
        ),
    };
    db.shutdown().await;
    result
}

/// Renders the prompt of a made-up job, as the prompt worker would.
fn prompt(config: &Config) -> Check {
    let facts = longtx_prompt::JobFacts {
        id: Some(1),
        threshold_seconds: config.threshold_seconds,
        query_source: "admin/users#update".to_owned(),
        tables: vec!["users".to_owned()],
        max_duration_seconds: Some(config.threshold_seconds * 2.0),
        alert_count: 1,
        first_seen_at: None,
        last_seen_at: None,
        alert_links: Vec::new(),
        previous_rejection: Vec::new(),
        previous_fix: None,
    };
    match config.prompt_sources().build(&facts) {
        Ok(prompt) => Check::pass(
            "local.prompt",
            format!(
                "the template renders ({} bytes for a sample job)",
                prompt.text.len()
            ),
        ),
        Err(e) => Check::fail(
            "local.prompt",
            e.to_string(),
            format!(
                "correct the template {} (preview with `longtx prompt --query-source ...`)",
                config.prompt_template.display()
            ),
        ),
    }
}
