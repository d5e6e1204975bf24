//! The octocrab implementation of [`GitHub`]. Requests go through
//! octocrab's authenticated client; status codes are read here so that rate
//! limits and server errors map onto [`GitHubError`] the same way for every
//! call.

use crate::retry::rate_limit_wait;
use crate::{
    Artifact, CheckRunSummary, Comment, CommitSummary, Comparison, Dispatch, GitHub, GitHubError,
    NewCheckRun, NewCommit, NewPull, PullFile, PullSummary, RepoName, ReviewComment, Run,
    MAX_PAGES, PER_PAGE,
};
use serde::de::DeserializeOwned;
use std::time::Duration;

/// How longtx authenticates to GitHub.
#[derive(Clone)]
pub enum Credentials {
    Token(String),
    App {
        app_id: u64,
        private_key_pem: String,
        installation_id: u64,
    },
}

/// Secrets stay out of Debug output, and so out of logs.
impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credentials::Token(_) => f.write_str("Token(<redacted>)"),
            Credentials::App {
                app_id,
                installation_id,
                ..
            } => {
                write!(f, "App {{ app_id: {app_id}, installation_id: {installation_id}, private_key: <redacted> }}")
            }
        }
    }
}

#[derive(Clone)]
pub struct OctocrabGitHub {
    pub(crate) client: octocrab::Octocrab,
    /// What `git fetch` authenticates with: the token, or the App client
    /// that mints installation tokens.
    pub(crate) git_auth: GitAuth,
    /// Set once GitHub refused `return_run_details` (older Enterprise
    /// Server); shared by clones.
    no_run_details: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// GraphQL's path, `/graphql`.
    graphql_url: String,
    /// Fetches the short-lived artifact URLs GitHub redirects to, without
    /// longtx's credentials (the URL carries its own signature).
    downloads: reqwest::Client,
    /// longtx's own login, read once (shared by clones).
    own_login: std::sync::Arc<tokio::sync::OnceCell<Option<String>>>,
}

#[derive(Clone)]
pub(crate) enum GitAuth {
    Token(String),
    App(octocrab::Octocrab, octocrab::models::InstallationId),
}

impl OctocrabGitHub {
    /// `api_url` is `https://api.github.com`, a GitHub Enterprise API URL,
    /// or a test server's. Calls that do not answer in `timeout` fail as
    /// [`GitHubError::Unavailable`] and are retried by the caller.
    pub fn new(
        api_url: &str,
        credentials: &Credentials,
        timeout: Duration,
    ) -> Result<Self, GitHubError> {
        let builder = octocrab::Octocrab::builder()
            .base_uri(api_url)
            .map_err(|e| GitHubError::Credentials(format!("LONGTX_GITHUB_API_URL: {e}")))?
            .set_connect_timeout(Some(timeout))
            .set_read_timeout(Some(timeout))
            .set_write_timeout(Some(timeout));
        let (client, git_auth) = match credentials {
            Credentials::Token(token) => (
                builder
                    .personal_token(token.clone())
                    .build()
                    .map_err(|e| GitHubError::Credentials(e.to_string()))?,
                GitAuth::Token(token.clone()),
            ),
            Credentials::App {
                app_id,
                private_key_pem,
                installation_id,
            } => {
                let key = octocrab::models::AppId(*app_id);
                let pem = jsonwebtoken_key(private_key_pem)?;
                let app = builder
                    .app(key, pem)
                    .build()
                    .map_err(|e| GitHubError::Credentials(e.to_string()))?;
                let id = octocrab::models::InstallationId(*installation_id);
                let client = app
                    .installation(id)
                    .map_err(|e| GitHubError::Credentials(e.to_string()))?;
                (client, GitAuth::App(app, id))
            }
        };
        // A path, so octocrab sends it to the API's host authenticated like
        // the REST calls (an App's installation token included). octocrab
        // prefixes a base URL's path, so on an Enterprise Server whose REST
        // API is `/api/v3` this reaches `/api/v3/graphql`, not GraphQL's
        // `/api/graphql`: commits there need a proxy rule (README).
        let graphql_url = "/graphql".to_owned();
        let downloads = reqwest::Client::builder()
            .timeout(timeout * 4)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| GitHubError::Credentials(format!("an HTTP client: {e}")))?;
        Ok(OctocrabGitHub {
            client,
            git_auth,
            no_run_details: Default::default(),
            graphql_url,
            downloads,
            own_login: Default::default(),
        })
    }

    /// `PATCH /repos/{repo}/pulls/{number}` with `patch` (title and body,
    /// or state): setting the same values again changes nothing.
    async fn patch_pull(
        &self,
        repo: &RepoName,
        number: u64,
        patch: serde_json::Value,
    ) -> Result<(), GitHubError> {
        self.send(
            "PATCH",
            &format!("/repos/{repo}/pulls/{number}"),
            Some(&patch),
        )
        .await
        .map(drop)
    }

    pub(crate) async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<(u16, String), GitHubError> {
        let endpoint = endpoint_of(path);
        longtx_metrics::inc(
            "longtx_github_requests_total",
            "GitHub API calls, by method and endpoint.",
            &[("method", method), ("endpoint", &endpoint)],
        );
        let result = self.send_once(method, path, body).await;
        if let Err(err) = &result {
            let kind = match err {
                GitHubError::RateLimited(_) | GitHubError::SecondaryRateLimited => "rate_limited",
                GitHubError::Unavailable(_) => "unavailable",
                GitHubError::Refused { .. } => "refused",
                GitHubError::Credentials(_) => "credentials",
            };
            longtx_metrics::inc(
                "longtx_github_errors_total",
                "GitHub API calls that failed, by endpoint and kind.",
                &[("method", method), ("endpoint", &endpoint), ("kind", kind)],
            );
        }
        result
    }

    async fn send_once(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<(u16, String), GitHubError> {
        let response = match method {
            "POST" => self.client._post(path, body).await,
            "DELETE" => self.client._delete(path, body).await,
            "PUT" => self.client._put(path, body).await,
            "PATCH" => self.client._patch(path, body).await,
            _ => self.client._get(path).await,
        }
        .map_err(|e| GitHubError::Unavailable(transport_message(&e)))?;
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let (retry_after, remaining, reset) = (
            header("retry-after"),
            header("x-ratelimit-remaining"),
            header("x-ratelimit-reset"),
        );
        let text = self
            .client
            .body_to_string(response)
            .await
            .map_err(|e| GitHubError::Unavailable(transport_message(&e)))?;
        if status == 403 || status == 429 {
            let now = chrono::Utc::now().timestamp();
            if let Some(wait) = rate_limit_wait(
                retry_after.as_deref(),
                remaining.as_deref(),
                reset.as_deref(),
                now,
            ) {
                return Err(GitHubError::RateLimited(wait));
            }
            // No header to go by: the secondary limit says so in its message
            // (and a bare 429 is one too); the caller backs off from 60 s.
            if status == 429 || text.to_ascii_lowercase().contains("secondary rate limit") {
                return Err(GitHubError::SecondaryRateLimited);
            }
        }
        if status >= 500 {
            return Err(GitHubError::Unavailable(format!("HTTP {status}")));
        }
        if status >= 400 {
            return Err(GitHubError::Refused {
                status,
                message: github_message(&text),
            });
        }
        Ok((status, text))
    }
}

pub(crate) fn parse<T: DeserializeOwned>(text: &str) -> Result<T, GitHubError> {
    serde_json::from_str(text)
        .map_err(|e| GitHubError::Unavailable(format!("unexpected response: {e}")))
}

fn jsonwebtoken_key(pem: &str) -> Result<octocrab::EncodingKey, GitHubError> {
    octocrab::EncodingKey::from_rsa_pem(pem.as_bytes()).map_err(|e| {
        GitHubError::Credentials(format!(
            "the GitHub App private key is not an RSA PEM key: {e}"
        ))
    })
}

/// GitHub's `{"message": ...}`, short; never the request, which may carry
/// inputs.
pub(crate) fn github_message(body: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Message {
        message: String,
    }
    serde_json::from_str::<Message>(body)
        .map(|m| m.message)
        .unwrap_or_else(|_| body.chars().take(200).collect())
}

fn transport_message(error: &octocrab::Error) -> String {
    let text = error.to_string();
    if text.to_lowercase().contains("timed out") || text.to_lowercase().contains("timeout") {
        "no answer in time".to_owned()
    } else {
        text.chars().take(200).collect()
    }
}

#[derive(serde::Deserialize)]
struct RepoInfo {
    default_branch: String,
}

#[derive(serde::Deserialize)]
struct DispatchDetails {
    workflow_run_id: Option<u64>,
    html_url: Option<String>,
}

#[derive(serde::Deserialize)]
struct RunList {
    workflow_runs: Vec<Run>,
}

impl GitHub for OctocrabGitHub {
    async fn default_branch(&self, repo: &RepoName) -> Result<String, GitHubError> {
        let (_, text) = self.send("GET", &format!("/repos/{repo}"), None).await?;
        Ok(parse::<RepoInfo>(&text)?.default_branch)
    }

    async fn dispatch_workflow(
        &self,
        repo: &RepoName,
        dispatch: &Dispatch,
    ) -> Result<Option<Run>, GitHubError> {
        let path = format!(
            "/repos/{repo}/actions/workflows/{}/dispatches",
            dispatch.workflow
        );
        let mut body = serde_json::json!({
            "ref": dispatch.git_ref,
            "inputs": dispatch.inputs,
        });
        let details = !self
            .no_run_details
            .load(std::sync::atomic::Ordering::Relaxed);
        if details {
            body["return_run_details"] = serde_json::json!(true);
        }
        let (status, text) = match self.send("POST", &path, Some(&body)).await {
            // An older GitHub Enterprise Server refuses the key (400/422): it
            // created no run, so sending once more without it is safe, and
            // this client never asks for details again.
            Err(GitHubError::Refused {
                status: 400 | 422,
                message,
            }) if details && message.contains("return_run_details") => {
                tracing::warn!(%message, "this GitHub does not return run details; dispatching without them (runs are found by name)");
                self.no_run_details
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                body.as_object_mut().unwrap().remove("return_run_details");
                self.send("POST", &path, Some(&body)).await?
            }
            other => other?,
        };
        // 204: an older GitHub without run details; the run is found by name.
        if status == 204 || text.trim().is_empty() {
            return Ok(None);
        }
        let details: DispatchDetails = parse(&text)?;
        Ok(details.workflow_run_id.map(|id| Run {
            id,
            html_url: details.html_url,
            status: Some("queued".into()),
            conclusion: None,
            display_title: None,
            ..Run::default()
        }))
    }

    async fn recent_runs(&self, repo: &RepoName, workflow: &str) -> Result<Vec<Run>, GitHubError> {
        let path = format!(
            "/repos/{repo}/actions/workflows/{workflow}/runs?event=workflow_dispatch&per_page=100"
        );
        let (_, text) = self.send("GET", &path, None).await?;
        Ok(parse::<RunList>(&text)?.workflow_runs)
    }

    async fn run(&self, repo: &RepoName, run_id: u64) -> Result<Run, GitHubError> {
        let (_, text) = self
            .send("GET", &format!("/repos/{repo}/actions/runs/{run_id}"), None)
            .await?;
        parse(&text)
    }

    async fn pull_files(&self, repo: &RepoName, number: u64) -> Result<Vec<PullFile>, GitHubError> {
        self.pages(&format!("/repos/{repo}/pulls/{number}/files"))
            .await
    }

    async fn request_reviewers(
        &self,
        repo: &RepoName,
        number: u64,
        users: &[String],
        team_slugs: &[String],
    ) -> Result<(), GitHubError> {
        let body = serde_json::json!({"reviewers": users, "team_reviewers": team_slugs});
        let path = format!("/repos/{repo}/pulls/{number}/requested_reviewers");
        self.send("POST", &path, Some(&body)).await.map(drop)
    }

    async fn comments(&self, repo: &RepoName, number: u64) -> Result<Vec<Comment>, GitHubError> {
        self.pages(&format!("/repos/{repo}/issues/{number}/comments"))
            .await
    }

    async fn create_comment(
        &self,
        repo: &RepoName,
        number: u64,
        body: &str,
    ) -> Result<(), GitHubError> {
        let body = serde_json::json!({ "body": body });
        let path = format!("/repos/{repo}/issues/{number}/comments");
        self.send("POST", &path, Some(&body)).await.map(drop)
    }

    async fn is_collaborator(&self, repo: &RepoName, login: &str) -> Result<bool, GitHubError> {
        match self
            .send("GET", &format!("/repos/{repo}/collaborators/{login}"), None)
            .await
        {
            Ok(_) => Ok(true),
            Err(GitHubError::Refused { status: 404, .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn org_teams(&self, org: &str) -> Result<Option<Vec<String>>, GitHubError> {
        #[derive(serde::Deserialize)]
        struct Team {
            slug: String,
        }
        match self.pages::<Team>(&format!("/orgs/{org}/teams")).await {
            Ok(teams) => Ok(Some(teams.into_iter().map(|t| t.slug).collect())),
            Err(GitHubError::Refused {
                status: 403 | 404, ..
            }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn is_team_member(
        &self,
        org: &str,
        slug: &str,
        login: &str,
    ) -> Result<bool, GitHubError> {
        #[derive(serde::Deserialize)]
        struct Membership {
            state: String,
        }
        let path = format!("/orgs/{org}/teams/{slug}/memberships/{login}");
        match self.send("GET", &path, None).await {
            Ok((_, text)) => Ok(parse::<Membership>(&text)?.state == "active"),
            Err(GitHubError::Refused {
                status: 403 | 404, ..
            }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn permission(&self, repo: &RepoName, login: &str) -> Result<String, GitHubError> {
        #[derive(serde::Deserialize)]
        struct Permission {
            permission: String,
        }
        let path = format!("/repos/{repo}/collaborators/{login}/permission");
        match self.send("GET", &path, None).await {
            Ok((_, text)) => Ok(parse::<Permission>(&text)?.permission),
            Err(GitHubError::Refused { status: 404, .. }) => Ok("none".to_owned()),
            Err(e) => Err(e),
        }
    }

    async fn update_pull(
        &self,
        repo: &RepoName,
        number: u64,
        title: &str,
        body: &str,
    ) -> Result<(), GitHubError> {
        self.patch_pull(
            repo,
            number,
            serde_json::json!({"title": title, "body": body}),
        )
        .await
    }

    async fn close_pull(&self, repo: &RepoName, number: u64) -> Result<(), GitHubError> {
        self.patch_pull(repo, number, serde_json::json!({"state": "closed"}))
            .await
    }

    async fn cancel_run(&self, repo: &RepoName, run_id: u64) -> Result<(), GitHubError> {
        let path = format!("/repos/{repo}/actions/runs/{run_id}/cancel");
        match self.send("POST", &path, None).await {
            // 409: the run is no longer running.
            Ok(_) | Err(GitHubError::Refused { status: 409, .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn pulls_for_branch(
        &self,
        repo: &RepoName,
        branch: &str,
    ) -> Result<Vec<PullSummary>, GitHubError> {
        // `head` takes `owner:branch`; the owner pins it to the repository
        // itself, so a fork's branch of the same name is never found.
        let path = format!(
            "/repos/{repo}/pulls?state=all&head={}:{}&per_page={PER_PAGE}",
            repo.owner,
            query_escape(branch)
        );
        let (_, text) = self.send("GET", &path, None).await?;
        let pulls: Vec<PullJson> = parse(&text)?;
        Ok(pulls.into_iter().map(PullJson::summary).collect())
    }

    async fn compare(
        &self,
        repo: &RepoName,
        base: &str,
        head: &str,
    ) -> Result<Option<Comparison>, GitHubError> {
        #[derive(serde::Deserialize)]
        struct CommitBody {
            message: String,
        }
        #[derive(serde::Deserialize)]
        struct CommitJson {
            commit: CommitBody,
        }
        #[derive(serde::Deserialize)]
        struct CompareJson {
            ahead_by: u64,
            #[serde(default)]
            commits: Vec<CommitJson>,
        }
        let path = format!(
            "/repos/{repo}/compare/{}...{}",
            query_escape(base),
            query_escape(head)
        );
        match self.send("GET", &path, None).await {
            Ok((_, text)) => {
                let compared: CompareJson = parse(&text)?;
                Ok(Some(Comparison {
                    ahead_by: compared.ahead_by,
                    messages: compared
                        .commits
                        .into_iter()
                        .map(|c| c.commit.message)
                        .collect(),
                }))
            }
            Err(GitHubError::Refused { status: 404, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn create_pull(
        &self,
        repo: &RepoName,
        pull: &NewPull,
    ) -> Result<PullSummary, GitHubError> {
        let body = serde_json::json!({
            "title": pull.title,
            "body": pull.body,
            "head": pull.head,
            "base": pull.base,
            "maintainer_can_modify": false,
        });
        let (_, text) = self
            .send("POST", &format!("/repos/{repo}/pulls"), Some(&body))
            .await?;
        Ok(parse::<PullJson>(&text)?.summary())
    }

    async fn run_artifacts(
        &self,
        repo: &RepoName,
        run_id: u64,
    ) -> Result<Vec<Artifact>, GitHubError> {
        #[derive(serde::Deserialize)]
        struct Artifacts {
            artifacts: Vec<Artifact>,
        }
        let path = format!("/repos/{repo}/actions/runs/{run_id}/artifacts?per_page={PER_PAGE}");
        let (_, text) = self.send("GET", &path, None).await?;
        Ok(parse::<Artifacts>(&text)?.artifacts)
    }

    async fn download_artifact(
        &self,
        repo: &RepoName,
        artifact_id: u64,
        max_bytes: u64,
    ) -> Result<Vec<u8>, GitHubError> {
        let path = format!("/repos/{repo}/actions/artifacts/{artifact_id}/zip");
        longtx_metrics::inc(
            "longtx_github_requests_total",
            "GitHub API calls, by method and endpoint.",
            &[("method", "GET"), ("endpoint", &endpoint_of(&path))],
        );
        let response = self
            .client
            ._get(path.as_str())
            .await
            .map_err(|e| GitHubError::Unavailable(transport_message(&e)))?;
        let status = response.status().as_u16();
        let location = response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let Some(location) = location.filter(|_| (300..400).contains(&status)) else {
            let text = self
                .client
                .body_to_string(response)
                .await
                .unwrap_or_default();
            return Err(match status {
                500.. => GitHubError::Unavailable(format!("HTTP {status}")),
                _ => GitHubError::Refused {
                    status,
                    message: github_message(&text),
                },
            });
        };
        let mut download = self.downloads.get(&location).send().await.map_err(|e| {
            GitHubError::Unavailable(format!("the artifact download: {}", e.without_url()))
        })?;
        let status = download.status().as_u16();
        if status != 200 {
            return Err(if status >= 500 {
                GitHubError::Unavailable(format!("the artifact download: HTTP {status}"))
            } else {
                GitHubError::Refused {
                    status,
                    message: "the artifact's download URL was refused".into(),
                }
            });
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = download.chunk().await.map_err(|e| {
            GitHubError::Unavailable(format!("the artifact download: {}", e.without_url()))
        })? {
            bytes.extend_from_slice(&chunk);
            if bytes.len() as u64 > max_bytes {
                return Err(GitHubError::Refused {
                    status: 413,
                    message: format!("the artifact is larger than {max_bytes} bytes"),
                });
            }
        }
        Ok(bytes)
    }

    async fn create_branch(
        &self,
        repo: &RepoName,
        branch: &str,
        sha: &str,
    ) -> Result<bool, GitHubError> {
        let body = serde_json::json!({"ref": format!("refs/heads/{branch}"), "sha": sha});
        match self
            .send("POST", &format!("/repos/{repo}/git/refs"), Some(&body))
            .await
        {
            Ok(_) => Ok(true),
            Err(GitHubError::Refused {
                status: 422,
                message,
            }) if message.contains("already exists") => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn delete_branch(&self, repo: &RepoName, branch: &str) -> Result<bool, GitHubError> {
        // docs "Delete a reference": 204; 422 "Reference does not exist".
        match self
            .send(
                "DELETE",
                &format!("/repos/{repo}/git/refs/heads/{branch}"),
                None,
            )
            .await
        {
            Ok(_) => Ok(true),
            Err(GitHubError::Refused {
                status: 404 | 422, ..
            }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn create_commit_on_branch(
        &self,
        repo: &RepoName,
        commit: &NewCommit,
    ) -> Result<String, GitHubError> {
        use base64::Engine;
        const MUTATION: &str = "mutation($input: CreateCommitOnBranchInput!) { \
            createCommitOnBranch(input: $input) { commit { oid } } }";
        let b64 = base64::engine::general_purpose::STANDARD;
        let input = serde_json::json!({
            "branch": {"repositoryNameWithOwner": repo.to_string(), "branchName": commit.branch},
            "message": {"headline": commit.headline, "body": commit.body},
            "expectedHeadOid": commit.expected_head,
            "fileChanges": {
                "additions": commit.additions.iter()
                    .map(|a| serde_json::json!({"path": a.path, "contents": b64.encode(&a.contents)}))
                    .collect::<Vec<_>>(),
                "deletions": commit.deletions.iter()
                    .map(|path| serde_json::json!({"path": path}))
                    .collect::<Vec<_>>(),
            },
        });
        let body = serde_json::json!({"query": MUTATION, "variables": {"input": input}});
        let url = self.graphql_url.clone();
        let (_, text) = self.send("POST", &url, Some(&body)).await?;
        graphql_commit(&text)
    }

    async fn commit(
        &self,
        repo: &RepoName,
        sha: &str,
    ) -> Result<Option<CommitSummary>, GitHubError> {
        #[derive(serde::Deserialize)]
        struct Parent {
            sha: String,
        }
        #[derive(serde::Deserialize)]
        struct Tree {
            sha: String,
        }
        #[derive(serde::Deserialize)]
        struct Message {
            message: String,
            tree: Tree,
        }
        #[derive(serde::Deserialize)]
        struct CommitJson {
            sha: String,
            parents: Vec<Parent>,
            commit: Message,
            author: Option<Login>,
        }
        match self
            .send("GET", &format!("/repos/{repo}/commits/{sha}"), None)
            .await
        {
            Ok((_, text)) => {
                let c: CommitJson = parse(&text)?;
                Ok(Some(CommitSummary {
                    sha: c.sha,
                    parents: c.parents.into_iter().map(|p| p.sha).collect(),
                    message: c.commit.message,
                    tree: c.commit.tree.sha,
                    author_login: c.author.map(|a| a.login),
                }))
            }
            Err(GitHubError::Refused {
                status: 404 | 422, ..
            }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn ensure_label(
        &self,
        repo: &RepoName,
        name: &str,
        color: &str,
        description: &str,
    ) -> Result<(), GitHubError> {
        let body = serde_json::json!({"name": name, "color": color, "description": description});
        match self
            .send("POST", &format!("/repos/{repo}/labels"), Some(&body))
            .await
        {
            // 422 `already_exists`: someone (or an earlier attempt) made it.
            Ok(_) | Err(GitHubError::Refused { status: 422, .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn add_labels(
        &self,
        repo: &RepoName,
        number: u64,
        labels: &[String],
    ) -> Result<(), GitHubError> {
        let body = serde_json::json!({ "labels": labels });
        let path = format!("/repos/{repo}/issues/{number}/labels");
        self.send("POST", &path, Some(&body)).await.map(drop)
    }

    async fn commit_author_login(
        &self,
        repo: &RepoName,
        sha: &str,
    ) -> Result<Option<String>, GitHubError> {
        #[derive(serde::Deserialize)]
        struct CommitInfo {
            author: Option<Login>,
        }
        match self
            .send("GET", &format!("/repos/{repo}/commits/{sha}"), None)
            .await
        {
            Ok((_, text)) => Ok(parse::<CommitInfo>(&text)?.author.map(|a| a.login)),
            Err(GitHubError::Refused {
                status: 404 | 422, ..
            }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn review_comments(
        &self,
        repo: &RepoName,
        number: u64,
        review_id: i64,
    ) -> Result<Vec<ReviewComment>, GitHubError> {
        self.pages(&format!(
            "/repos/{repo}/pulls/{number}/reviews/{review_id}/comments"
        ))
        .await
    }

    async fn branch_head(
        &self,
        repo: &RepoName,
        branch: &str,
    ) -> Result<Option<String>, GitHubError> {
        #[derive(serde::Deserialize)]
        struct Object {
            sha: String,
        }
        #[derive(serde::Deserialize)]
        struct Ref {
            object: Object,
        }
        // docs "Get a reference": 404 when the branch does not exist.
        let path = format!("/repos/{repo}/git/ref/heads/{branch}");
        match self.send("GET", &path, None).await {
            Ok((_, text)) => Ok(Some(parse::<Ref>(&text)?.object.sha)),
            Err(GitHubError::Refused { status: 404, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn own_login(&self) -> Result<Option<String>, GitHubError> {
        let me = self
            .own_login
            .get_or_try_init(|| async {
                if let GitAuth::App(app, _) = &self.git_auth {
                    return Ok(crate::probe::app_slug(app)
                        .await?
                        .map(|slug| format!("{slug}[bot]")));
                }
                let (_, text) = self.send("GET", "/user", None).await?;
                Ok::<_, GitHubError>(Some(parse::<Login>(&text)?.login))
            })
            .await?;
        Ok(me.clone())
    }

    async fn git_token(&self) -> Result<Option<String>, GitHubError> {
        use octocrab::secrecy::ExposeSecret;
        match &self.git_auth {
            GitAuth::Token(token) => Ok(Some(token.clone())),
            GitAuth::App(app, id) => {
                let (_, token) = app
                    .installation_and_token(*id)
                    .await
                    .map_err(|e| GitHubError::Unavailable(transport_message(&e)))?;
                Ok(Some(token.expose_secret().to_owned()))
            }
        }
    }

    async fn check_runs(
        &self,
        repo: &RepoName,
        sha: &str,
        name: &str,
    ) -> Result<Vec<CheckRunSummary>, GitHubError> {
        #[derive(serde::Deserialize)]
        struct Listed {
            check_runs: Vec<CheckRunSummary>,
        }
        // `filter=all`: every run of that name, not only the latest, so a
        // run an earlier attempt made is found even behind a newer one.
        let path = format!(
            "/repos/{repo}/commits/{}/check-runs?check_name={}&filter=all&per_page={PER_PAGE}",
            query_escape(sha),
            query_escape(name)
        );
        let (_, text) = self.send("GET", &path, None).await?;
        Ok(parse::<Listed>(&text)?.check_runs)
    }

    async fn create_check_run(
        &self,
        repo: &RepoName,
        check: &NewCheckRun,
    ) -> Result<u64, GitHubError> {
        #[derive(serde::Deserialize)]
        struct Created {
            id: u64,
        }
        let report = &check.report;
        let mut body = serde_json::json!({
            "name": longtx_core::pr_check::CHECK_NAME,
            "head_sha": check.head_sha,
            "external_id": check.external_id,
            "status": "completed",
            "conclusion": report.conclusion.as_str(),
            "output": {
                "title": report.title,
                "summary": report.summary,
                "annotations": report.annotations,
            },
        });
        if !report.text.is_empty() {
            body["output"]["text"] = serde_json::json!(report.text);
        }
        if let Some(url) = &check.details_url {
            body["details_url"] = serde_json::json!(url);
        }
        let (_, text) = self
            .send("POST", &format!("/repos/{repo}/check-runs"), Some(&body))
            .await?;
        Ok(parse::<Created>(&text)?.id)
    }
}

/// The new commit's id from a `createCommitOnBranch` answer. GraphQL
/// answers errors with 200 and an `errors` list; a branch that moved
/// (`expectedHeadOid` no longer its head) is a 409, any other error a 422.
fn graphql_commit(text: &str) -> Result<String, GitHubError> {
    #[derive(serde::Deserialize)]
    struct Oid {
        oid: String,
    }
    #[derive(serde::Deserialize)]
    struct Created {
        commit: Oid,
    }
    #[derive(serde::Deserialize)]
    struct Data {
        #[serde(rename = "createCommitOnBranch")]
        created: Option<Created>,
    }
    #[derive(serde::Deserialize)]
    struct Error {
        message: String,
    }
    #[derive(serde::Deserialize)]
    struct Answer {
        data: Option<Data>,
        #[serde(default)]
        errors: Vec<Error>,
    }
    let answer: Answer = parse(text)?;
    if let Some(created) = answer.data.and_then(|d| d.created) {
        return Ok(created.commit.oid);
    }
    let message: String = answer
        .errors
        .iter()
        .map(|e| e.message.as_str())
        .collect::<Vec<_>>()
        .join("; ")
        .chars()
        .take(300)
        .collect();
    let moved =
        message.contains("Expected branch to point to") || message.contains("expectedHeadOid");
    Err(GitHubError::Refused {
        status: if moved { 409 } else { 422 },
        message: if message.is_empty() {
            "createCommitOnBranch made no commit".into()
        } else {
            message
        },
    })
}

#[derive(serde::Deserialize)]
struct Login {
    login: String,
}

#[derive(serde::Deserialize)]
struct RefJson {
    #[serde(rename = "ref")]
    git_ref: String,
    sha: String,
}

/// A pull request as GitHub's REST API returns it.
#[derive(serde::Deserialize)]
struct PullJson {
    number: u64,
    html_url: String,
    state: String,
    #[serde(default)]
    merged_at: Option<String>,
    user: Login,
    head: RefJson,
    base: RefJson,
}

impl PullJson {
    fn summary(self) -> PullSummary {
        PullSummary {
            number: self.number,
            html_url: self.html_url,
            state: self.state,
            merged: self.merged_at.is_some(),
            head_ref: self.head.git_ref,
            head_sha: self.head.sha,
            base_ref: self.base.git_ref,
            author: self.user.login,
        }
    }
}

/// Percent-encodes what a branch name may hold that a URL path or query
/// cannot carry as is (`/` stays: GitHub takes it in both places).
pub(crate) fn query_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'/' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

impl OctocrabGitHub {
    /// Follows `page=` up to [`MAX_PAGES`]; a short page is the last.
    async fn pages<T: DeserializeOwned>(&self, path: &str) -> Result<Vec<T>, GitHubError> {
        let mut all = Vec::new();
        for page in 1..=MAX_PAGES {
            let (_, text) = self
                .send(
                    "GET",
                    &format!("{path}?per_page={PER_PAGE}&page={page}"),
                    None,
                )
                .await?;
            let items: Vec<T> = parse(&text)?;
            let last = items.len() < PER_PAGE;
            all.extend(items);
            if last {
                break;
            }
        }
        Ok(all)
    }
}

/// A path as an endpoint template, so labels stay few: owner, repository,
/// numbers, shas and names become placeholders.
fn endpoint_of(path: &str) -> String {
    // An absolute URL (GraphQL's) counts by its path.
    let path = match path.split_once("://") {
        Some((_, rest)) => rest.find('/').map(|i| &rest[i..]).unwrap_or("/"),
        None => path,
    };
    let path = path.split('?').next().unwrap_or("");
    let parts: Vec<&str> = path.split('/').collect();
    let mut out = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter().enumerate() {
        let previous = if i > 0 { parts[i - 1] } else { "" };
        let placeholder = match previous {
            _ if i >= 2 && parts.get(1) == Some(&"repos") && i == 2 => Some(":owner"),
            _ if i == 3 && parts.get(1) == Some(&"repos") => Some(":repo"),
            _ if i == 2 && parts.get(1) == Some(&"orgs") => Some(":org"),
            "collaborators" | "memberships" => Some(":user"),
            "teams" if i > 3 => Some(":team"),
            "workflows" => Some(":workflow"),
            "artifacts" if i > 4 => Some(":n"),
            "commits" => Some(":sha"),
            "compare" => Some(":basehead"),
            _ if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) => Some(":n"),
            _ => None,
        };
        out.push(placeholder.unwrap_or(part));
        // `base...head` may hold slashes of its own (`longtx/12`).
        if placeholder == Some(":basehead") {
            break;
        }
    }
    out.join("/")
}

#[cfg(test)]
mod endpoint_tests {
    use super::endpoint_of;

    #[test]
    fn paths_become_templates() {
        assert_eq!(
            endpoint_of("/repos/acme/app/actions/runs/9001?x=1"),
            "/repos/:owner/:repo/actions/runs/:n"
        );
        assert_eq!(
            endpoint_of("/repos/a/b/collaborators/alice/permission"),
            "/repos/:owner/:repo/collaborators/:user/permission"
        );
        assert_eq!(
            endpoint_of("/orgs/acme/teams/dba/memberships/bob"),
            "/orgs/:org/teams/:team/memberships/:user"
        );
        assert_eq!(
            endpoint_of("/repos/a/b/commits/abc123"),
            "/repos/:owner/:repo/commits/:sha"
        );
        assert_eq!(
            endpoint_of("/repos/a/b/compare/main...longtx/12"),
            "/repos/:owner/:repo/compare/:basehead"
        );
        assert_eq!(endpoint_of("/user"), "/user");
    }
}
