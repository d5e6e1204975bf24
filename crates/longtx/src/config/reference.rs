//! Every setting, in one list: `longtx config reference` prints it as the
//! book's settings table (`docs/book/src/settings.md`, checked by a test to
//! match), so the table cannot drift from the code.

/// One setting as the reference table shows it.
pub struct Setting {
    /// The `longtx.toml` key(s), empty when the setting has none.
    pub file_key: &'static str,
    /// The environment variable(s).
    pub env: &'static str,
    pub default: &'static str,
    pub meaning: &'static str,
}

impl Setting {
    /// The environment variables named (without their Markdown).
    pub fn env_names(&self) -> impl Iterator<Item = &'static str> {
        self.env
            .split('`')
            .filter(|n| n.starts_with(|c: char| c.is_ascii_uppercase()))
    }

    /// The `longtx.toml` keys named (without their Markdown).
    pub fn file_keys(&self) -> impl Iterator<Item = &'static str> {
        self.file_key
            .split('`')
            .filter(|k| k.starts_with(|c: char| c.is_ascii_lowercase()))
    }
}

pub const SETTINGS: &[Setting] = &[
    Setting {
        file_key: "`database_url`",
        env: "`DATABASE_URL`",
        default: "unset",
        meaning: "PostgreSQL URL. Unset: run the private cluster under `data_dir/pg`.",
    },
    Setting {
        file_key: "`listen`",
        env: "`LONGTX_LISTEN`",
        default: "`127.0.0.1:8080`",
        meaning: "Address to listen on. A non-loopback address needs a webhook token.",
    },
    Setting {
        file_key: "`data_dir`",
        env: "`LONGTX_DATA_DIR`",
        default: "`.longtx`",
        meaning: "Where the private cluster lives (`pg/`, its socket in `pg-socket/`).",
    },
    Setting {
        file_key: "`webhook_token`",
        env: "`LONGTX_WEBHOOK_TOKEN`",
        default: "unset",
        meaning: "Required as `Authorization: Bearer <token>` on webhooks and `/api` (Basic auth with the token as password opens the dashboard's pages and GETs only). Requests that change something are refused when a browser says they come from another site (`Origin`, `Sec-Fetch-Site`: 403), and a body must be `application/json` (415). Unset: allowed only on loopback.",
    },
    Setting {
        file_key: "`dashboard_token`",
        env: "`LONGTX_DASHBOARD_TOKEN`",
        default: "unset",
        meaning: "Opens the dashboard pages (only them), besides the webhook token: give it to people who should see, not post.",
    },
    Setting {
        file_key: "`threshold_seconds`",
        env: "`LONGTX_THRESHOLD_SECONDS`",
        default: "`100`",
        meaning: "Alerts with a shorter duration are `below_threshold`.",
    },
    Setting {
        file_key: "`table_thresholds`",
        env: "`LONGTX_TABLE_THRESHOLDS`",
        default: "none",
        meaning: "Per-table thresholds, a TOML table `{orders = 30}` or `orders=30,users=50`.",
    },
    Setting {
        file_key: "`exclude`",
        env: "`LONGTX_EXCLUDE`",
        default: "`unknown,rake:tmp:*`",
        meaning: "`query_source` globs that never create jobs (`excluded`).",
    },
    Setting {
        file_key: "`ignore_list`",
        env: "`LONGTX_IGNORE_LIST`",
        default: "`ignore-list.yaml`",
        meaning: "The ignore list file (`ignored`); a missing file means nothing is ignored, a broken one stops startup. With GitHub configured it is also the file's path in the target repository, so it must be relative.",
    },
    Setting {
        file_key: "`db_max_connections`",
        env: "`LONGTX_DB_MAX_CONNECTIONS`",
        default: "`5`",
        meaning: "Pool size.",
    },
    Setting {
        file_key: "`db_acquire_timeout`",
        env: "`LONGTX_DB_ACQUIRE_TIMEOUT`",
        default: "`5s`",
        meaning: "How long a request waits for a free connection before it gets 503.",
    },
    Setting {
        file_key: "`cooldown`",
        env: "`LONGTX_COOLDOWN`",
        default: "`7d`",
        meaning: "After a job ends, how long before the same source may open a new job.",
    },
    Setting {
        file_key: "",
        env: "`LONGTX_DEPLOY_GRACE`",
        default: "`2h`",
        meaning: "After a merge, alerts this long are the old code still running: counted, never a regression.",
    },
    Setting {
        file_key: "",
        env: "`LONGTX_VERIFY_WINDOW`",
        default: "`7d`",
        meaning: "After the grace, a merged fix with no alert this long becomes `verified`.",
    },
    Setting {
        file_key: "`alert_retention`",
        env: "`LONGTX_ALERT_RETENTION`",
        default: "`30d`",
        meaning: "How long alert events are kept (purged hourly, in small batches).",
    },
    Setting {
        file_key: "`patterns_dir`",
        env: "`LONGTX_PATTERNS_DIR`",
        default: "`patterns`",
        meaning: "The fix-pattern catalogue.",
    },
    Setting {
        file_key: "`prompt_template`",
        env: "`LONGTX_PROMPT_TEMPLATE`",
        default: "`<patterns_dir>/_prompt.md.tera`",
        meaning: "The prompt template (tera).",
    },
    Setting {
        file_key: "`repo_path`",
        env: "`LONGTX_REPO_PATH`",
        default: "unset",
        meaning: "A checkout of the target repository, where the code for a `query_source` is looked up.",
    },
    Setting {
        file_key: "`prompt_budget_bytes`",
        env: "`LONGTX_PROMPT_BUDGET_BYTES`",
        default: "`49152` (48 KiB)",
        meaning: "The prompt's size budget.",
    },
    Setting {
        file_key: "`github_token`",
        env: "`LONGTX_GITHUB_TOKEN`, else `GITHUB_TOKEN`",
        default: "unset",
        meaning: "A token that may dispatch workflows in the target repository. No credentials at all: dry-run mode.",
    },
    Setting {
        file_key: "`github_app_id`, `github_app_private_key_file`, `github_installation_id`",
        env: "`LONGTX_GITHUB_APP_ID`, `LONGTX_GITHUB_APP_PRIVATE_KEY_FILE`, `LONGTX_GITHUB_INSTALLATION_ID`",
        default: "unset",
        meaning: "Authenticate as a GitHub App instead of with a token.",
    },
    Setting {
        file_key: "`github_api_url`",
        env: "`LONGTX_GITHUB_API_URL`",
        default: "`https://api.github.com`",
        meaning: "GitHub Enterprise's API, or a test server. longtx commits through GraphQL at `<this URL>/graphql`; on an Enterprise Server (REST at `/api/v3`, GraphQL at `/api/graphql`) route that path to GraphQL. The templates' `actions/upload-artifact@v7` and `download-artifact@v7` do not work on Enterprise Server (v4 and later need github.com): pin both to v3 in your copies there.",
    },
    Setting {
        file_key: "`github_repo`",
        env: "`LONGTX_GITHUB_REPO`",
        default: "unset",
        meaning: "The target repository, `owner/name` (required with credentials).",
    },
    Setting {
        file_key: "`workflow`",
        env: "`LONGTX_WORKFLOW`",
        default: "`long-transaction-fix.yml`",
        meaning: "The workflow file to dispatch.",
    },
    Setting {
        file_key: "`workflow_ref`",
        env: "`LONGTX_WORKFLOW_REF`",
        default: "the default branch",
        meaning: "The ref the workflow runs on.",
    },
    Setting {
        file_key: "`max_dispatches_per_day`",
        env: "`LONGTX_MAX_DISPATCHES_PER_DAY`",
        default: "`10`",
        meaning: "Dispatches per UTC day, across replicas.",
    },
    Setting {
        file_key: "`max_running`",
        env: "`LONGTX_MAX_RUNNING`",
        default: "`3`",
        meaning: "Jobs dispatching or with an agent running, at once.",
    },
    Setting {
        file_key: "",
        env: "`LONGTX_MAX_COST_PER_DAY`",
        default: "unset",
        meaning: "US dollars of agent budget counted since midnight UTC past which queued jobs, rounds and pre-reviews wait (with the reason), across replicas. Every run sent counts its budget, whatever it reports.",
    },
    Setting {
        file_key: "",
        env: "`LONGTX_RUN_BUDGET_USD`",
        default: "`5`",
        meaning: "What one fix run or revision round counts against the cost cap, and the most its reported cost is taken to be. Keep it at the fix template's `vars.LONGTX_MAX_BUDGET_USD` (`--max-budget-usd`).",
    },
    Setting {
        file_key: "",
        env: "`LONGTX_PRE_REVIEW_BUDGET_USD`",
        default: "`2`",
        meaning: "The same for one pre-review run; keep it at `vars.LONGTX_PRE_REVIEW_MAX_BUDGET_USD`.",
    },
    Setting {
        file_key: "`paused`",
        env: "`LONGTX_PAUSED`",
        default: "unset",
        meaning: "`true`/`false` sets the shared pause switch at start (also `POST /api/pause`, `/api/resume`).",
    },
    Setting {
        file_key: "`agent_timeout`",
        env: "`LONGTX_AGENT_TIMEOUT`",
        default: "`2h`",
        meaning: "A job with no PR this long after dispatch becomes `expired`.",
    },
    Setting {
        file_key: "",
        env: "`LONGTX_MAX_PATCH_BYTES`",
        default: "`1048576` (1 MiB)",
        meaning: "The largest agent patch longtx commits; a larger one is refused with the reason.",
    },
    Setting {
        file_key: "",
        env: "`LONGTX_MAX_PATCH_FILES`",
        default: "`50`",
        meaning: "The most files one agent patch may touch.",
    },
    Setting {
        file_key: "",
        env: "`LONGTX_PROTECTED_PATHS`",
        default: "none",
        meaning: "Comma-separated globs (`*` crosses `/`; `**/` at the front matches at any depth) no agent patch may write, on top of the built-in list (workflows, CODEOWNERS, `.gitmodules`, `.gitattributes`, agents' settings and instruction files such as `.claude/**`, `CLAUDE.md`, `AGENTS.md`, `.mcp.json`, other CI systems' and editors' configs, `vendor/**`, `node_modules/**`; the Security page lists them all) and the ignore list. Paths are compared after folding case, Unicode look-alikes and trailing dots.",
    },
    Setting {
        file_key: "",
        env: "`LONGTX_DEVIN_SERVICE_TOKEN`, `LONGTX_DEVIN_ORG_ID`",
        default: "unset",
        meaning: "A Devin service user's `cog_` token (ViewOrgSessions) and organisation: longtx reads a Devin run's ACUs from Devin's API v3. Both or neither.",
    },
    Setting {
        file_key: "",
        env: "`LONGTX_DEVIN_API_URL`",
        default: "`https://api.devin.ai`",
        meaning: "Devin's API, or a test server.",
    },
    Setting {
        file_key: "",
        env: "`LONGTX_USD_PER_ACU`",
        default: "unset",
        meaning: "Your Devin contract's price per ACU, for `cost_usd` (Devin publishes no flat rate).",
    },
    Setting {
        file_key: "`dispatch_lease`",
        env: "`LONGTX_DISPATCH_LEASE`",
        default: "`5m`",
        meaning: "How long a dispatcher's claim holds before another may take the job over.",
    },
    Setting {
        file_key: "`public_url`",
        env: "`LONGTX_PUBLIC_URL`",
        default: "`http://<listen>`",
        meaning: "How the workflow reaches longtx to fetch the prompt.",
    },
    Setting {
        file_key: "`github_webhook_secret`",
        env: "`LONGTX_GITHUB_WEBHOOK_SECRET`",
        default: "unset",
        meaning: "The secret of the GitHub webhook; `/webhooks/github` answers 503 until it is set.",
    },
    Setting {
        file_key: "`fallback_team`",
        env: "`LONGTX_FALLBACK_TEAM`",
        default: "unset",
        meaning: "`org/team` asked when no code owner or recent committer can review.",
    },
    Setting {
        file_key: "`max_reviewers`",
        env: "`LONGTX_MAX_REVIEWERS`",
        default: "`2`",
        meaning: "Reviewers requested per PR (1 to 15).",
    },
    Setting {
        file_key: "`reviewer_capacity`",
        env: "`LONGTX_REVIEWER_CAPACITY`",
        default: "`3`",
        meaning: "Open longtx PRs one person is asked to review at once. People at capacity are passed over for the next candidate; when every candidate is, the job waits instead of paying for a run.",
    },
    Setting {
        file_key: "`team_capacity`",
        env: "`LONGTX_TEAM_CAPACITY`",
        default: "`10`",
        meaning: "The same for a team (CODEOWNERS or the fallback team), which counts as one reviewer.",
    },
    Setting {
        file_key: "`history_days`",
        env: "`LONGTX_HISTORY_DAYS`",
        default: "`365`",
        meaning: "How far back commit history counts.",
    },
    Setting {
        file_key: "`git_url`",
        env: "`LONGTX_GIT_URL`",
        default: "`https://github.com/<github_repo>.git`",
        meaning: "Where the reviewer mirror (`data_dir/mirror/`) fetches from; a local path works too.",
    },
    Setting {
        file_key: "`pre_review`",
        env: "`LONGTX_PRE_REVIEW`",
        default: "`off`",
        meaning: "`on`: a new fix PR waits in `pre_review` for the AI pre-review; a revise starts a revision round, a reject (or a revise after the last round) closes it; `advisory`: the verdict is recorded, people are asked either way; `off`: people at once.",
    },
    Setting {
        file_key: "`pr_check`",
        env: "`LONGTX_PR_CHECK`",
        default: "`neutral`",
        meaning: "The \"long transactions\" check run on every PR's head commit (needs a GitHub App with Checks: write and the webhook secret): `neutral` shows what the PR adds without blocking, `failure` fails the check when it adds slow work inside a transaction, `off`.",
    },
    Setting {
        file_key: "`pre_review_workflow`",
        env: "`LONGTX_PRE_REVIEW_WORKFLOW`",
        default: "`long-transaction-pre-review.yml`",
        meaning: "The reviewing workflow longtx dispatches per head commit.",
    },
    Setting {
        file_key: "",
        env: "`LONGTX_PRE_REVIEW_TIMEOUT`",
        default: "`30m`",
        meaning: "A head with no verdict this long goes to people as \"no verdict\" (never stuck in `pre_review`).",
    },
    Setting {
        file_key: "",
        env: "`LONGTX_MAX_REVISIONS`",
        default: "`2`",
        meaning: "Revision rounds on one fix PR, counted apart for rounds the pre-review starts and rounds people start (0 to 10; 0 turns rounds off).",
    },
    Setting {
        file_key: "`collect_dsn`",
        env: "`LONGTX_COLLECT_DSN`",
        default: "unset",
        meaning: "Run the lock-holder collector inside `serve` on this database (`mysql://`, `mariadb://`, `postgres://`); its gauges join `/metrics`. Also `longtx collect --dsn`'s default.",
    },
    Setting {
        file_key: "`collect_interval`",
        env: "`LONGTX_COLLECT_INTERVAL`",
        default: "`15s`",
        meaning: "How often the in-process collector polls.",
    },
    Setting {
        file_key: "`wontfix_label`",
        env: "`LONGTX_WONTFIX_LABEL`",
        default: "`long-transaction-wontfix`",
        meaning: "The label that declines a fix.",
    },
    Setting {
        file_key: "`author_logins`",
        env: "`LONGTX_AUTHOR_LOGINS`",
        default: "none",
        meaning: "Commit email to GitHub login, a TOML table or `a@x.com=alice,b@x.com=bob`.",
    },
    Setting {
        file_key: "",
        env: "`LONGTX_CONFIG`",
        default: "none (no file)",
        meaning: "The configuration file every command reads (`--config` on the command line); environment variables override its keys.",
    },
    Setting {
        file_key: "",
        env: "`LONGTX_COLLECT_PUSH_URL`",
        default: "unset",
        meaning: "`longtx collect` only (`--push`): a `longtx serve` to push each source's longest transaction to, under the threshold too, for its what-if (`http://longtx:8080`).",
    },
    Setting {
        file_key: "",
        env: "`LONGTX_LOG`",
        default: "`info`",
        meaning: "Log filter (`tracing` syntax, e.g. `longtx_http=debug,info`).",
    },
    Setting {
        file_key: "",
        env: "`LONGTX_LOG_FORMAT`",
        default: "text",
        meaning: "`json` for one JSON object per line.",
    },
];

/// `LONGTX_*` variables longtx's tests and benches read: not settings, and
/// not misspellings of one.
const NOT_SETTINGS: [&str; 4] = [
    "LONGTX_TEST_DATABASE_URL",
    "LONGTX_BENCH_DATABASE_URL",
    "LONGTX_SCREENSHOT_OUT",
    "LONGTX_CHROMIUM",
];

/// The `LONGTX_*` names among `names` that no setting has (a secret's
/// `_FILE` form counts as its setting's), each with the nearest setting's
/// name when one is close enough to be the one meant.
pub fn unknown_variables(
    names: impl Iterator<Item = String>,
) -> Vec<(String, Option<&'static str>)> {
    let known: Vec<&'static str> = SETTINGS.iter().flat_map(|s| s.env_names()).collect();
    let mut unknown: Vec<(String, Option<&'static str>)> = names
        .filter(|name| name.starts_with("LONGTX_"))
        .filter(|name| {
            let base = name.strip_suffix("_FILE").unwrap_or(name);
            !known.contains(&name.as_str())
                && !known.contains(&base)
                && !NOT_SETTINGS.contains(&name.as_str())
        })
        .map(|name| {
            let meant = nearest(&name, known.iter().copied());
            (name, meant)
        })
        .collect();
    unknown.sort();
    unknown
}

/// The name among `known` that `name` most likely misspells: within three
/// edits, else none (a name far from every one was not meant as any).
pub fn nearest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known
        .into_iter()
        .map(|k| (edit_distance(name, k), k))
        .min()
        .filter(|(d, _)| *d <= 3)
        .map(|(_, k)| k)
}

/// Every `longtx.toml` key.
pub fn all_file_keys() -> impl Iterator<Item = &'static str> {
    SETTINGS.iter().flat_map(|s| s.file_keys())
}

/// Levenshtein distance, for "did you mean".
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = if ca == *cb {
                previous
            } else {
                1 + previous.min(row[j]).min(current)
            };
            previous = current;
        }
    }
    row[b.len()]
}

/// The settings table in Markdown, as the book shows it.
pub fn markdown() -> String {
    let mut out = String::from(
        "| key (`longtx.toml`) | environment | default | meaning |\n| --- | --- | --- | --- |\n",
    );
    for s in SETTINGS {
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            s.file_key, s.env, s.default, s.meaning
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Settings `config check` does not show as rows of their own: read by
    /// one command only (not what `serve` runs with), a secret's `_FILE`
    /// form (shown as its setting's source), or GitHub credentials (shown
    /// together as one row).
    const NOT_SHOWN: &[&str] = &[
        "LONGTX_COLLECT_PUSH_URL",
        "LONGTX_CONFIG",
        "GITHUB_TOKEN",
        "LONGTX_GITHUB_TOKEN",
        "LONGTX_GITHUB_APP_ID",
        "LONGTX_GITHUB_APP_PRIVATE_KEY_FILE",
        "LONGTX_GITHUB_INSTALLATION_ID",
    ];

    #[test]
    fn every_setting_in_the_reference_is_shown_by_config_check() {
        let config = crate::config::Config::load(None, &|_| None).unwrap();
        let shown: Vec<&str> = crate::config::check::shown(&config)
            .iter()
            .map(|s| s.key)
            .collect();
        for setting in SETTINGS {
            for name in setting.env_names() {
                assert!(
                    shown.contains(&name) || NOT_SHOWN.contains(&name),
                    "{name} is in the reference but config check does not show it"
                );
            }
        }
    }

    /// Every `LONGTX_*` variable the binary's own code reads (a clap `env`
    /// or a `var("LONGTX_…")` outside tests) is in the reference.
    #[test]
    fn every_variable_the_code_reads_is_in_the_reference() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = vec![src.clone()];
        let mut read: Vec<String> = Vec::new();
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(
                    std::fs::read_dir(&path)
                        .unwrap()
                        .flatten()
                        .map(|e| e.path()),
                );
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            // Tests set variables of their own; only the code above them counts.
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            for (at, _) in code.match_indices("\"LONGTX_") {
                let name: String = code[at + 1..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                    .collect();
                let before = &code[..at];
                let is_read = before.ends_with("var(") || before.ends_with("env = ");
                if is_read && !read.contains(&name) {
                    read.push(name);
                }
            }
        }
        assert!(read.len() > 20, "the scan finds the variables: {read:?}");
        for name in read {
            let listed = SETTINGS.iter().any(|s| s.env_names().any(|n| n == name));
            assert!(
                listed,
                "{name} is read by the code but missing from the settings reference"
            );
        }
    }

    #[test]
    fn a_misspelt_variable_is_unknown_with_the_setting_meant() {
        let names = [
            "LONGTX_TRESHOLD_SECONDS",
            "LONGTX_THRESHOLD_SECONDS",
            "LONGTX_WEBHOOK_TOKEN_FILE",
            "LONGTX_TEST_DATABASE_URL",
            "LONGTX_SOMETHING_ELSE_ENTIRELY",
            "PATH",
        ]
        .map(String::from);
        assert_eq!(
            unknown_variables(names.into_iter()),
            vec![
                ("LONGTX_SOMETHING_ELSE_ENTIRELY".to_owned(), None),
                (
                    "LONGTX_TRESHOLD_SECONDS".to_owned(),
                    Some("LONGTX_THRESHOLD_SECONDS")
                ),
            ]
        );
    }

    #[test]
    fn every_setting_config_check_shows_is_in_the_reference() {
        let config = crate::config::Config::load(None, &|_| None).unwrap();
        for shown in crate::config::check::shown(&config) {
            if shown.key == "GitHub credentials" {
                continue;
            }
            let listed = SETTINGS
                .iter()
                .any(|s| s.env_names().any(|name| name == shown.key));
            assert!(
                listed,
                "{} is missing from the settings reference",
                shown.key
            );
        }
    }
}
