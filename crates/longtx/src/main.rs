//! The `longtx` binary: configuration, wiring and process lifecycle.
//! Everything that decides anything lives in the library crates.

mod collect;
mod collect_push;
mod config;
mod database;
mod doctor;
mod offline;
mod process_tuning;
mod serve;
mod signals;
mod worker_settings;

use anyhow::Context;
use clap::{Parser, Subcommand};
use config::Config;
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "longtx",
    version,
    about = "From a long database transaction seen in production to a reviewed fix PR"
)]
struct Cli {
    /// A longtx.toml; every key can also be set by environment.
    #[arg(long, global = true, env = "LONGTX_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the webhook receiver, the API, the dashboard and the workers.
    ///
    /// Listens on LONGTX_LISTEN (default 127.0.0.1:8080; `listen` in
    /// longtx.toml), e.g. `LONGTX_LISTEN=0.0.0.0:9000 longtx serve` (a
    /// non-loopback address needs LONGTX_WEBHOOK_TOKEN). With DATABASE_URL
    /// unset it runs a private PostgreSQL under LONGTX_DATA_DIR; with no
    /// GitHub credentials it runs in dry-run mode. `longtx config check`
    /// shows every setting and `longtx config reference` explains each.
    Serve,
    /// Apply database migrations and exit.
    Migrate,
    /// Work with the configuration.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Check that this deployment will work, before the first alert: the
    /// database, the catalogue, and on GitHub the workflow files, labels,
    /// permissions, webhook and secrets. Exits 1 when a check fails.
    Doctor {
        /// Create what longtx can create (the labels).
        #[arg(long)]
        fix: bool,
        /// One JSON document instead of lines.
        #[arg(long)]
        json: bool,
        /// Accept a deployment without GitHub (dry run): its GitHub checks
        /// are skipped, and doctor exits 0 if the rest pass.
        #[arg(long)]
        allow_dry_run: bool,
    },
    /// Measure, per table, the longest transaction holding a metadata lock
    /// and its query_source; serve the figures on /metrics for Prometheus.
    Collect {
        /// mysql://user:password@host:3306/db (MySQL 8, Aurora, MariaDB) or
        /// postgres://user@host:5432/db (PostgreSQL 14+).
        #[arg(long, env = "LONGTX_COLLECT_DSN", hide_env_values = true)]
        dsn: longtx_collector::Dsn,
        /// Where `/metrics` is served (9817; 9187, the old default, is
        /// postgres_exporter's registered port).
        #[arg(long, default_value = "127.0.0.1:9817")]
        listen: std::net::SocketAddr,
        /// How often to poll the database.
        #[arg(long, default_value = "15s", value_parser = collect::parse_interval)]
        interval: std::time::Duration,
        /// The statement and connect timeout.
        #[arg(long, default_value = "5s", value_parser = collect::parse_interval)]
        timeout: std::time::Duration,
        /// Distinct query_source labels per poll; the rest become `other`.
        #[arg(long, default_value_t = 100)]
        max_sources: usize,
        /// Poll once, print the figures and exit: to check a DSN (TLS
        /// settings, grants) before deploying.
        #[arg(long)]
        once: bool,
        /// A `longtx serve` to push each source's longest transaction to
        /// (under the threshold too), for its what-if: http://longtx:8080.
        #[arg(long, env = "LONGTX_COLLECT_PUSH_URL")]
        push: Option<reqwest::Url>,
        /// How often to push.
        #[arg(long, default_value = "60s", value_parser = collect::parse_interval)]
        push_interval: std::time::Duration,
        /// The serve's webhook token, sent as a Bearer token with each push.
        #[arg(long, env = "LONGTX_WEBHOOK_TOKEN", hide_env_values = true)]
        push_token: Option<String>,
    },
    /// Work with the fix-pattern catalogue.
    Patterns {
        #[command(subcommand)]
        command: PatternsCommand,
    },
    /// List every transaction site in a checkout that holds slow work (an
    /// HTTP, payment, mail or enqueue call, a bulk statement...), with the
    /// sources that reach it and the pattern that fits, offline.
    Scan {
        /// The checkout to scan (default: the current directory).
        #[arg(long, default_value = ".")]
        repo: PathBuf,
        /// Only the findings the checkout adds relative to this revision
        /// (for pull requests and CI).
        #[arg(long)]
        base: Option<String>,
        /// text for a person, json, or sarif (SARIF 2.1.0, for code scanning).
        #[arg(long, value_enum, default_value = "text")]
        format: offline::scan::Format,
        /// The ignore list whose sources are silenced (default: the
        /// checkout's ignore-list.yaml, when it has one).
        #[arg(long)]
        ignore_list: Option<PathBuf>,
        /// Exit 1 when an unsilenced finding of a slow call is printed
        /// (work whose length depends on row counts is printed, as a
        /// notice, and does not fail).
        #[arg(long)]
        fail_on_findings: bool,
        /// Only the findings reached from sources a running longtx at this
        /// URL already has jobs for (read from its API with
        /// LONGTX_WEBHOOK_TOKEN): the backlog already costing migrations.
        #[arg(long)]
        alerting_from: Option<String>,
    },
    /// Print the prompt a job for this source would get, offline (to
    /// preview template and catalogue edits).
    Prompt {
        /// The source as an alert names it: `admin/users#update`,
        /// `ImportWorker` or `rake:db:backfill`.
        #[arg(long)]
        query_source: String,
        /// A table whose metadata lock was held; repeat for several.
        #[arg(long)]
        table: Vec<String>,
        /// The longest transaction seen, in seconds.
        #[arg(long)]
        duration: Option<f64>,
        /// A checkout of the target repository (default LONGTX_REPO_PATH).
        #[arg(long)]
        repo: Option<PathBuf>,
    },
    /// Edit and check the ignore list (default LONGTX_IGNORE_LIST).
    Ignore {
        #[command(subcommand)]
        command: IgnoreCommand,
    },
    /// Print who would be asked to review a change to these files, and why,
    /// offline: CODEOWNERS at the revision, else commit history, else the
    /// fallback team. GitHub-only checks (collaborators, the commit API)
    /// are left out.
    Reviewers {
        /// A clone of the target repository.
        #[arg(long)]
        repo: PathBuf,
        /// A changed file, relative to the repository root; repeat for several.
        #[arg(long = "file", required = true)]
        files: Vec<String>,
        /// The revision whose CODEOWNERS and history count (the PR's base).
        #[arg(long = "ref", default_value = "HEAD")]
        rev: String,
        /// End of the history window: YYYY-MM-DD (the end of that day, UTC)
        /// or an RFC 3339 time; default now.
        #[arg(long)]
        as_of: Option<String>,
        /// The PR's author, who never reviews their own PR.
        #[arg(long)]
        author: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum IgnoreCommand {
    /// Append an entry, keeping every existing line and comment.
    Add {
        /// The source to ignore: a name (`admin/users#update`) or a glob
        /// (`rake:tmp:*`); compared in the canonical form every sender shares.
        query_source: String,
        /// Why the source is not fixed.
        #[arg(long)]
        reason: String,
        /// The PR where this was decided.
        #[arg(long)]
        pr: Option<String>,
        /// Who decided (default $USER).
        #[arg(long)]
        by: Option<String>,
        /// The ignore list to edit (default LONGTX_IGNORE_LIST, `ignore-list.yaml`).
        #[arg(long)]
        file: Option<PathBuf>,
    },
    /// Exit 0 and print the entry when the source is ignored, exit 1 when not.
    Check {
        /// The source to look up.
        query_source: String,
        /// The ignore list to read (default LONGTX_IGNORE_LIST, `ignore-list.yaml`).
        #[arg(long)]
        file: Option<PathBuf>,
    },
    /// Check the file parses, and flag duplicates and entries without a reason.
    Lint {
        /// The ignore list to check (default LONGTX_IGNORE_LIST, `ignore-list.yaml`).
        file: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Print the effective configuration (environment, `*_FILE` secrets
    /// and longtx.toml combined) as a table, secrets shown only as set or
    /// unset, then run every check `serve` makes before it starts: "valid"
    /// only when `serve` would start; exit 1 naming each offending key.
    Check {
        /// One JSON object: `valid`, `settings`, `problems`.
        #[arg(long)]
        json: bool,
    },
    /// Print every setting (key, environment variable, default, meaning)
    /// as a Markdown table: the book's settings page.
    Reference,
}

#[derive(Debug, Subcommand)]
enum PatternsCommand {
    /// Check front matter, unique ids, sections and links; print
    /// `file:line: message` for each problem and exit 1 if there is one.
    Lint {
        /// The catalogue (default LONGTX_PATTERNS_DIR, `patterns`).
        dir: Option<PathBuf>,
    },
}

fn main() -> std::process::ExitCode {
    process_tuning::return_large_buffers_to_the_system();
    process_tuning::raise_open_files_limit();
    let cli = Cli::parse();
    init_tracing();
    match run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            // One clear paragraph for people; as a JSON log line too when
            // the logs are machine-read, never twice on a terminal.
            if std::env::var("LONGTX_LOG_FORMAT").is_ok_and(|f| f == "json") {
                tracing::error!("{err:#}");
            }
            eprintln!("longtx: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    if let Command::Config {
        command: ConfigCommand::Check { json },
    } = cli.command
    {
        // Every problem at once: not stopped by the first, as a load is.
        let env = |name: &str| std::env::var(name).ok();
        let (config, early) = config::every_problem::load(cli.config.as_deref(), &env);
        let from = config::check::sources(cli.config.as_deref(), &env);
        let errors = if json {
            let (report, errors) = config::check::report_json(config.as_ref(), &from, &early);
            println!("{report:#}");
            errors
        } else {
            let (report, errors) = config::check::report(config.as_ref(), &from, &early);
            print!("{report}");
            errors
        };
        if errors > 0 {
            std::process::exit(1);
        }
        return Ok(());
    }
    let config = Config::load(cli.config.as_deref(), &|name| std::env::var(name).ok())
        .context("configuration")?;
    match cli.command {
        Command::Config {
            command: ConfigCommand::Reference,
        } => {
            print!("{}", config::reference::markdown());
            return Ok(());
        }
        Command::Config {
            command: ConfigCommand::Check { .. },
        } => unreachable!("handled above"),
        Command::Patterns {
            command: PatternsCommand::Lint { dir },
        } => {
            return offline::lint_patterns(&dir.unwrap_or_else(|| config.patterns_dir.clone()));
        }
        Command::Scan {
            repo,
            base,
            format,
            ignore_list,
            fail_on_findings,
            alerting_from,
        } => {
            let passed = offline::scan::run(offline::scan::ScanArgs {
                repo,
                base,
                format,
                patterns: config.patterns_dir.clone(),
                ignore_list,
                fail_on_findings,
                alerting_from,
            })?;
            if !passed {
                std::process::exit(1);
            }
            return Ok(());
        }
        Command::Prompt {
            query_source,
            table,
            duration,
            repo,
        } => {
            return offline::print_prompt(&config, &query_source, table, duration, repo);
        }
        Command::Ignore { command } => {
            let default = config.ignore_list.clone();
            return match command {
                IgnoreCommand::Add {
                    query_source,
                    reason,
                    pr,
                    by,
                    file,
                } => offline::ignore::add(
                    &file.unwrap_or(default),
                    offline::ignore::AddArgs {
                        source: &query_source,
                        reason: &reason,
                        pr: pr.as_deref(),
                        by: by.as_deref(),
                    },
                ),
                IgnoreCommand::Check { query_source, file } => {
                    offline::ignore::check(&file.unwrap_or(default), &query_source)
                }
                IgnoreCommand::Lint { file } => offline::ignore::lint(&file.unwrap_or(default)),
            };
        }
        Command::Reviewers {
            repo,
            files,
            rev,
            as_of,
            author,
        } => {
            let args = offline::ReviewersArgs {
                repo: &repo,
                files: &files,
                rev: &rev,
                as_of: as_of.as_deref(),
                author: author.as_deref(),
            };
            return offline::print_reviewers(&config, args);
        }
        Command::Serve | Command::Migrate | Command::Collect { .. } | Command::Doctor { .. } => {}
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    match cli.command {
        Command::Serve => runtime.block_on(serve::serve(config)),
        Command::Collect {
            dsn,
            listen,
            interval,
            timeout,
            max_sources,
            once,
            push,
            push_interval,
            push_token,
        } => runtime.block_on(collect::run(collect::CollectArgs {
            dsn,
            listen,
            interval,
            timeout,
            max_sources,
            once,
            push: push.map(|url| collect::Push {
                url,
                interval: push_interval,
                token: push_token.filter(|t| !t.is_empty()),
            }),
        })),
        Command::Patterns { .. }
        | Command::Config { .. }
        | Command::Prompt { .. }
        | Command::Scan { .. }
        | Command::Reviewers { .. }
        | Command::Ignore { .. } => {
            unreachable!("handled above")
        }
        Command::Doctor {
            fix,
            json,
            allow_dry_run,
        } => {
            let ok = runtime.block_on(doctor::run(&config, fix, json, allow_dry_run))?;
            let dry_run = config.github.credentials.is_none() || config.github.repo.is_none();
            if !ok {
                anyhow::bail!("some checks failed (see above)")
            }
            if dry_run {
                eprintln!("doctor: the local checks passed; GitHub was skipped (--allow-dry-run)");
            }
            Ok(())
        }
        Command::Migrate => runtime.block_on(async {
            let db = database::Database::open(&config).await?;
            // A running serve owns the embedded cluster and applied its own
            // migrations; newer ones wait until it stops (they belong to a
            // version change, and the running build does not know them).
            if let Some(owner) = db.embedded_owner() {
                let pending = db.store.pending_migrations().await;
                db.shutdown().await;
                return match pending {
                    Ok(pending) if pending.is_empty() => {
                        tracing::info!(%owner, "migrations are current (the embedded database is served by another process)");
                        Ok(())
                    }
                    Ok(pending) => anyhow::bail!(
                        "{owner} serves the embedded database in LONGTX_DATA_DIR {}: stop it before applying {} migration(s) ({})",
                        config.data_dir.display(),
                        pending.len(),
                        pending.join(", ")
                    ),
                    Err(e) => Err(e).context("reading the applied migrations"),
                };
            }
            let result = db.store.migrate().await.context("applying migrations");
            db.shutdown().await;
            result?;
            tracing::info!("migrations applied");
            Ok(())
        }),
    }
}

/// `LONGTX_LOG` sets the filter (default `info`); `LONGTX_LOG_FORMAT=json`
/// switches to one JSON object per line.
fn init_tracing() {
    // sqlx logs PostgreSQL's notices at info; "relation _sqlx_migrations
    // already exists, skipping" at every start is not news.
    let filter = tracing_subscriber::EnvFilter::try_from_env("LONGTX_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx::postgres::notice=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    if std::env::var("LONGTX_LOG_FORMAT").is_ok_and(|f| f == "json") {
        builder.json().init();
    } else {
        builder.init();
    }
    // A panic is logged as an event of the span it happened in, so the line
    // names the job and query_source a worker was on when it died (the
    // supervisor restarts the worker and counts it).
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let what = longtx_core::text::panic_text(info.payload());
        tracing::error!(panic = %what, at = %at, "a task panicked");
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every flag and argument of every subcommand says what it is in
    /// `--help`: an undescribed one leaves a new user guessing.
    #[test]
    fn every_argument_of_every_command_has_a_description() {
        fn walk(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in command.get_arguments() {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in command.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "longtx", &mut missing);
        assert!(
            missing.is_empty(),
            "arguments without a description: {missing:?}"
        );
    }
}
