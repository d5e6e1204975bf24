//! Test support for longtx: real parts only.
//!
//! - [`TestDatabase`]: a fresh database per test in a real PostgreSQL (the
//!   server named by `LONGTX_TEST_DATABASE_URL`, else a private cluster that
//!   the first test starts and later tests reuse).
//! - [`TestApp`]: the real router served on a real loopback socket.
//! - [`payloads`]: builders for webhook bodies shaped like what
//!   Alertmanager 0.25 and Datadog send.

mod app;
mod db;
pub mod payloads;

pub use app::{TestApp, TestAppBuilder};
pub use db::TestDatabase;
/// Runs futures concurrently on the current task and collects their outputs.
pub use futures_util::future::join_all;
/// Re-exported so tests can read tables without their own dependency.
pub use sqlx;

/// The path of a file under this crate's `fixtures/`.
pub fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}
