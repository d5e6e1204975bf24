//! The `longtx` binary: configuration, wiring and process lifecycle.
//! Everything that decides anything lives in the library crates.

mod config;
mod database;
mod serve;

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
    /// Run the webhook receiver and API.
    Serve,
    /// Apply database migrations and exit.
    Migrate,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    init_tracing();
    match run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            // One clear paragraph for people, also in the log stream.
            tracing::error!("{err:#}");
            eprintln!("longtx: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let config = Config::load(cli.config.as_deref(), &|name| std::env::var(name).ok())
        .context("configuration")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    match cli.command {
        Command::Serve => runtime.block_on(serve::serve(config)),
        Command::Migrate => runtime.block_on(async {
            let db = database::Database::open(&config).await?;
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
    let filter = tracing_subscriber::EnvFilter::try_from_env("LONGTX_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if std::env::var("LONGTX_LOG_FORMAT").is_ok_and(|f| f == "json") {
        builder.json().init();
    } else {
        builder.init();
    }
}
