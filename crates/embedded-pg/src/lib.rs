//! A private PostgreSQL cluster for running longtx with no setup.
//!
//! With `DATABASE_URL` unset, `longtx serve` keeps its data in a cluster
//! under `$LONGTX_DATA_DIR/pg`, made with the system's `initdb` and run with
//! `pg_ctl`. The server listens on a unix socket only, in a directory only
//! its owner can enter, so trust authentication is safe. The cluster is
//! reused on the next start and stopped on shutdown.
//!
//! PostgreSQL refuses to run as root; when longtx runs as root (containers,
//! CI) the server runs as the `postgres` user, else `nobody`.

mod binaries;
mod cluster;

pub use binaries::{locate_binaries, PgBinaries};
pub use cluster::{ClusterOptions, EmbeddedPostgres};

#[derive(Debug, thiserror::Error)]
pub enum EmbeddedPgError {
    #[error(
        "PostgreSQL server programs (initdb, pg_ctl) were not found on PATH or in \
         /usr/lib/postgresql/*/bin: install them (Debian/Ubuntu: apt-get install postgresql) \
         or set DATABASE_URL to an existing database"
    )]
    BinariesNotFound,
    #[error("{what} failed ({status}): {output}")]
    Command {
        what: String,
        status: String,
        output: String,
    },
    #[error("the PostgreSQL server must run as an unprivileged user, and user {user} cannot reach {path}: {hint}")]
    Unreachable {
        user: String,
        path: String,
        hint: String,
    },
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

pub(crate) fn io_error(
    context: impl Into<String>,
) -> impl FnOnce(std::io::Error) -> EmbeddedPgError {
    let context = context.into();
    move |source| EmbeddedPgError::Io { context, source }
}
