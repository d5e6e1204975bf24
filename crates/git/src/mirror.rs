//! A bare mirror of the target repository, fetched with the `git` program.

use crate::GitError;
use std::path::PathBuf;
use std::time::Duration;
use tokio::process::Command;

/// Where the mirror lives and where it is fetched from.
#[derive(Debug, Clone)]
pub struct Mirror {
    pub path: PathBuf,
    /// `https://github.com/<owner>/<repo>.git`, or `LONGTX_GIT_URL` (a
    /// local bare repository in tests).
    pub url: String,
}

impl Mirror {
    /// Fetches `branch` into `refs/heads/<branch>`, creating the mirror on
    /// first use. `token`, when given, goes to git through its environment
    /// (never the command line, which other users can read) as an HTTP
    /// header, and is scrubbed from any error message.
    pub async fn fetch(
        &self,
        branch: &str,
        token: Option<&str>,
        timeout: Duration,
    ) -> Result<(), GitError> {
        if !is_safe_ref(branch) {
            return Err(GitError::Invalid(format!(
                "{branch:?} is not a branch name"
            )));
        }
        let refspec = format!("+refs/heads/{branch}:refs/heads/{branch}");
        self.fetch_refspecs(&[&refspec], token, timeout).await
    }

    /// Fetches pull request `number`'s head into `refs/longtx/pulls/<n>`
    /// and its base branch, in one `git fetch`. GitHub keeps
    /// `refs/pull/<n>/head` in the base repository for every PR, one from a
    /// fork included, so a stranger's PR needs no access to the fork.
    pub async fn fetch_pull(
        &self,
        number: u64,
        base: &str,
        token: Option<&str>,
        timeout: Duration,
    ) -> Result<(), GitError> {
        if !is_safe_ref(base) {
            return Err(GitError::Invalid(format!("{base:?} is not a branch name")));
        }
        let head = format!("+refs/pull/{number}/head:{}", pull_ref(number));
        let base = format!("+refs/heads/{base}:refs/heads/{base}");
        self.fetch_refspecs(&[&head, &base], token, timeout).await
    }

    async fn fetch_refspecs(
        &self,
        refspecs: &[&str],
        token: Option<&str>,
        timeout: Duration,
    ) -> Result<(), GitError> {
        if self.url.starts_with('-') {
            return Err(GitError::Invalid("the clone URL starts with '-'".into()));
        }
        if !self.path.join("HEAD").exists() {
            std::fs::create_dir_all(&self.path)
                .map_err(|e| GitError::Fetch(format!("creating {}: {e}", self.path.display())))?;
            self.run(&["init", "--bare", "--quiet"], None, timeout)
                .await?;
        }
        let mut args = vec!["fetch", "--quiet", "--no-tags", &self.url];
        args.extend_from_slice(refspecs);
        self.run(&args, token, timeout).await
    }

    /// Fetches several branches in one go (see [`Mirror::fetch`]).
    pub async fn fetch_all(
        &self,
        branches: &[&str],
        token: Option<&str>,
        timeout: Duration,
    ) -> Result<(), GitError> {
        for branch in branches {
            self.fetch(branch, token, timeout).await?;
        }
        Ok(())
    }

    /// Pushes `commit` to `branch` on the remote only if the branch still
    /// points at `expected` (`None`: does not exist), so a push that
    /// happened meanwhile is never overwritten.
    pub async fn push_with_lease(
        &self,
        commit: &str,
        branch: &str,
        expected: Option<&str>,
        token: Option<&str>,
        timeout: Duration,
    ) -> Result<Pushed, GitError> {
        if !is_safe_ref(branch) || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(GitError::Invalid(format!(
                "{branch:?} / {commit:?} cannot be pushed"
            )));
        }
        let lease = format!(
            "--force-with-lease=refs/heads/{branch}:{}",
            expected.unwrap_or("")
        );
        let refspec = format!("{commit}:refs/heads/{branch}");
        match self
            .run(
                &[
                    "push",
                    "--quiet",
                    "--porcelain",
                    &lease,
                    &self.url,
                    &refspec,
                ],
                token,
                timeout,
            )
            .await
        {
            Ok(()) => Ok(Pushed::Done),
            Err(GitError::Fetch(message))
                if message.contains("stale info") || message.contains("rejected") =>
            {
                Ok(Pushed::Stale(message))
            }
            Err(e) => Err(e),
        }
    }

    async fn run(
        &self,
        args: &[&str],
        token: Option<&str>,
        timeout: Duration,
    ) -> Result<(), GitError> {
        let mut command = Command::new("git");
        command
            .arg("-C")
            .arg(&self.path)
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_ASKPASS", "true")
            .kill_on_drop(true);
        if let Some(token) = token {
            use base64::Engine;
            let basic =
                base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"));
            command
                .env("GIT_CONFIG_COUNT", "1")
                .env("GIT_CONFIG_KEY_0", "http.extraHeader")
                .env(
                    "GIT_CONFIG_VALUE_0",
                    format!("Authorization: Basic {basic}"),
                );
        }
        let output = tokio::time::timeout(timeout, command.output())
            .await
            .map_err(|_| GitError::Fetch(format!("git {} took longer than {timeout:?}", args[0])))?
            .map_err(|e| GitError::Fetch(format!("running git: {e}")))?;
        if output.status.success() {
            return Ok(());
        }
        // `--porcelain` reports a rejected ref on stdout.
        let mut message = format!(
            "{} {}",
            String::from_utf8_lossy(&output.stderr).trim(),
            String::from_utf8_lossy(&output.stdout).trim()
        )
        .trim()
        .to_owned();
        if let Some(token) = token.filter(|t| !t.is_empty()) {
            message = message.replace(token, "<redacted>");
        }
        message.truncate(500);
        Err(GitError::Fetch(format!("git {}: {message}", args[0])))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Pushed {
    Done,
    /// The branch moved since it was fetched; git's words.
    Stale(String),
}

/// Where [`Mirror::fetch_pull`] keeps a PR's head.
fn pull_ref(number: u64) -> String {
    format!("refs/longtx/pulls/{number}")
}

/// Branch names longtx passes to git: no option-like or odd characters.
fn is_safe_ref(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(['-', '/'])
        && !name.contains("..")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}
