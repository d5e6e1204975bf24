//! Commits made through GitHub's API, on the fake's bare repository:
//! - `POST /repos/{o}/{r}/git/refs` (docs "Create a reference"): 201, or
//!   422 "Reference already exists"; needs `contents: write`;
//! - GraphQL `createCommitOnBranch` (docs "Mutations"): the branch must
//!   exist (it cannot create one); a branch whose head is not
//!   `expectedHeadOid` is refused with `STALE_DATA` "Expected branch to
//!   point to ... but it did not." (a logged real answer); files are whole
//!   contents in base64, every written file gets mode 100644 (the input has
//!   no mode); the commit is authored by the caller (the App's bot for an
//!   installation token); an App's commit is signed by GitHub (Verified),
//!   a user token's is not (recorded as `verified`).
//!
//! Answers come as GraphQL does: HTTP 200 with `data` or `errors`.

use super::{admit, caller_login, FakeGitHub, Shared};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use base64::Engine;
use serde_json::{json, Value};
use std::path::Path as FsPath;
use std::process::{Command, Stdio};

impl FakeGitHub {
    /// Every commit made through `createCommitOnBranch`, as made:
    /// `{branch, oid, parent, author, verified, message}`.
    pub fn api_commits(&self) -> Vec<Value> {
        self.inner.lock().unwrap().api_commits.clone()
    }
}

pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route("/repos/{owner}/{repo}/git/refs", post(create_ref))
        .route(
            "/repos/{owner}/{repo}/git/refs/heads/{*branch}",
            axum::routing::delete(delete_ref),
        )
        .route("/graphql", post(graphql))
}

fn git_with(
    git_dir: &FsPath,
    args: &[&str],
    env: &[(&str, &str)],
    input: Option<&[u8]>,
) -> Result<String, String> {
    let mut command = Command::new("git");
    command
        .arg("--git-dir")
        .arg(git_dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().map_err(|e| e.to_string())?;
    if let Some(input) = input {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input)
            .map_err(|e| e.to_string())?;
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
    }
}

async fn create_ref(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo)): Path<(String, String)>,
    Json(body): Json<Value>,
) -> Response {
    let line = format!("POST /repos/{owner}/{repo}/git/refs");
    if let Some(refused) = admit(&inner, &headers, line, &[("contents", "write")]).await {
        return refused;
    }
    let Some(dir) = inner.lock().unwrap().repo.git_dir.clone() else {
        return StatusCode::NOT_IMPLEMENTED.into_response();
    };
    let (Some(name), Some(sha)) = (body["ref"].as_str(), body["sha"].as_str()) else {
        return unprocessable("Invalid request: ref and sha are required");
    };
    if !name.starts_with("refs/") || name.matches('/').count() < 2 {
        return unprocessable(
            "Reference name must start with 'refs/' and have at least two slashes.",
        );
    }
    if git_with(
        &dir,
        &["cat-file", "-e", &format!("{sha}^{{commit}}")],
        &[],
        None,
    )
    .is_err()
    {
        return unprocessable("Object does not exist");
    }
    // The zero id as the old value: create only, never move.
    match git_with(&dir, &["update-ref", name, sha, &"0".repeat(40)], &[], None) {
        Ok(_) => (
            StatusCode::CREATED,
            Json(json!({"ref": name, "object": {"type": "commit", "sha": sha}})),
        )
            .into_response(),
        Err(_) => unprocessable("Reference already exists"),
    }
}

/// `DELETE /repos/{o}/{r}/git/refs/heads/{branch}` (docs "Delete a
/// reference"): 204, or 422 "Reference does not exist"; needs
/// `contents: write`.
async fn delete_ref(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, branch)): Path<(String, String, String)>,
) -> Response {
    let line = format!("DELETE /repos/{owner}/{repo}/git/refs/heads/{branch}");
    if let Some(refused) = admit(&inner, &headers, line, &[("contents", "write")]).await {
        return refused;
    }
    let Some(dir) = inner.lock().unwrap().repo.git_dir.clone() else {
        return StatusCode::NOT_IMPLEMENTED.into_response();
    };
    let refname = format!("refs/heads/{branch}");
    let exists = git_with(
        &dir,
        &["rev-parse", "--verify", "--quiet", &refname],
        &[],
        None,
    )
    .is_ok();
    if exists && git_with(&dir, &["update-ref", "-d", &refname], &[], None).is_ok() {
        StatusCode::NO_CONTENT.into_response()
    } else {
        unprocessable("Reference does not exist")
    }
}

fn unprocessable(message: &str) -> Response {
    (
        StatusCode::UNPROCESSABLE_ENTITY,
        Json(json!({"message": message, "documentation_url": "https://docs.github.com/rest/git/refs#create-a-reference"})),
    )
        .into_response()
}

fn graphql_error(kind: &str, message: String) -> Response {
    Json(json!({
        "data": {"createCommitOnBranch": null},
        "errors": [{"type": kind, "path": ["createCommitOnBranch"], "message": message}],
    }))
    .into_response()
}

async fn graphql(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        "POST /graphql".into(),
        &[("contents", "write")],
    )
    .await
    {
        return refused;
    }
    let query = body["query"].as_str().unwrap_or("");
    if !query.contains("createCommitOnBranch") {
        return Json(
            json!({"errors": [{"message": "the fake answers createCommitOnBranch only"}]}),
        )
        .into_response();
    }
    let input = &body["variables"]["input"];
    let Some(dir) = inner.lock().unwrap().repo.git_dir.clone() else {
        return StatusCode::NOT_IMPLEMENTED.into_response();
    };
    let branch = input["branch"]["branchName"].as_str().unwrap_or("");
    let expected = input["expectedHeadOid"].as_str().unwrap_or("");
    let refname = format!("refs/heads/{branch}");
    let Ok(head) = git_with(
        &dir,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{refname}^{{commit}}"),
        ],
        &[],
        None,
    ) else {
        return graphql_error(
            "NOT_FOUND",
            format!("A ref named \"{refname}\" does not exist"),
        );
    };
    if head != expected {
        return graphql_error(
            "STALE_DATA",
            format!(
                "Expected branch to point to \"{expected}\" but it did not.  Pull and try again."
            ),
        );
    }
    let index = std::env::temp_dir().join(format!(
        "longtx-tmp-fake-index-{}-{}",
        std::process::id(),
        inner.lock().unwrap().api_commits.len()
    ));
    let index_env = index.to_str().unwrap().to_owned();
    let env = [("GIT_INDEX_FILE", index_env.as_str())];
    let built = (|| -> Result<String, String> {
        git_with(&dir, &["read-tree", &head], &env, None)?;
        let b64 = base64::engine::general_purpose::STANDARD;
        for addition in input["fileChanges"]["additions"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let path = addition["path"].as_str().unwrap_or("");
            let contents = b64
                .decode(addition["contents"].as_str().unwrap_or(""))
                .map_err(|e| format!("contents of {path} is not base64: {e}"))?;
            let blob = git_with(
                &dir,
                &["hash-object", "-w", "--stdin"],
                &env,
                Some(&contents),
            )?;
            git_with(
                &dir,
                &[
                    "update-index",
                    "--add",
                    "--cacheinfo",
                    &format!("100644,{blob},{path}"),
                ],
                &env,
                None,
            )?;
        }
        for deletion in input["fileChanges"]["deletions"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let path = deletion["path"].as_str().unwrap_or("");
            git_with(&dir, &["update-index", "--force-remove", path], &env, None)?;
        }
        git_with(&dir, &["write-tree"], &env, None)
    })();
    let _ = std::fs::remove_file(&index);
    let tree = match built {
        Ok(tree) => tree,
        Err(why) => return graphql_error("UNPROCESSABLE", why),
    };
    let author = caller_login(&headers);
    let headline = input["message"]["headline"].as_str().unwrap_or("");
    let message_body = input["message"]["body"].as_str().unwrap_or("");
    let message = if message_body.is_empty() {
        headline.to_owned()
    } else {
        format!("{headline}\n\n{message_body}")
    };
    let email = format!("{author}@users.noreply.github.com");
    let identity = [
        ("GIT_AUTHOR_NAME", author.as_str()),
        ("GIT_AUTHOR_EMAIL", email.as_str()),
        ("GIT_COMMITTER_NAME", "GitHub"),
        ("GIT_COMMITTER_EMAIL", "noreply@github.com"),
    ];
    let commit = match git_with(
        &dir,
        &["commit-tree", &tree, "-p", &head, "-F", "-"],
        &identity,
        Some(message.as_bytes()),
    ) {
        Ok(commit) => commit,
        Err(why) => return graphql_error("UNPROCESSABLE", why),
    };
    // Compare-and-swap: a push that landed meanwhile wins, as on GitHub.
    if git_with(&dir, &["update-ref", &refname, &commit, &head], &[], None).is_err() {
        return graphql_error(
            "STALE_DATA",
            format!(
                "Expected branch to point to \"{expected}\" but it did not.  Pull and try again."
            ),
        );
    }
    inner.lock().unwrap().api_commits.push(json!({
        "branch": branch, "oid": commit, "parent": head, "author": author,
        "verified": author.ends_with("[bot]"), "message": message,
    }));
    Json(json!({"data": {"createCommitOnBranch": {"commit": {"oid": commit}}}})).into_response()
}
