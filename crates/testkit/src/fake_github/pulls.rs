//! The fake's pull-request side: changed files, review requests, comments,
//! collaborators, commit authors and the token's own user. Like GitHub, a
//! review request naming anyone who cannot review is refused whole (422).

use super::{admit, FakeGitHub, Shared};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};

/// The login the fake's token belongs to.
pub const OWN_LOGIN: &str = "longtx-service";

#[derive(Debug, Default)]
pub(super) struct PullState {
    files: HashMap<u64, Vec<Value>>,
    /// Lowercased logins that are not collaborators (404, and 422 when asked).
    non_collaborators: HashSet<String>,
    /// Lowercased collaborators GitHub still refuses to ask (422), as with
    /// an invitation not yet accepted.
    unrequestable: HashSet<String>,
    commit_logins: HashMap<String, String>,
    /// Accepted review requests: (PR, users, team slugs).
    review_requests: Vec<(u64, Vec<String>, Vec<String>)>,
    refused_review_requests: u32,
    comments: HashMap<u64, Vec<Value>>,
    /// Lowercased login to repository permission; `write` when not set.
    permissions: HashMap<String, String>,
    /// PR number to its (title, body) as last set.
    pulls: HashMap<u64, (String, String)>,
    cancelled_runs: Vec<u64>,
    /// PRs closed through `PATCH pulls/{n}` with `state: closed`, in order
    /// (closing twice is recorded twice: a test can tell).
    closed: Vec<u64>,
    /// Team slug to members; `None`: longtx may not see teams (403).
    teams: Option<Vec<(String, Vec<String>)>>,
    next_comment_id: u64,
    /// Review id to its inline comments, as `GET .../reviews/{id}/comments`
    /// lists them.
    review_comments: HashMap<i64, Vec<Value>>,
}

/// A review request GitHub accepted.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewRequest {
    pub pr: u64,
    pub users: Vec<String>,
    pub teams: Vec<String>,
}

impl FakeGitHub {
    /// The inline comments a review left: (path, line, text).
    pub fn set_review_comments(&self, review_id: i64, comments: &[(&str, u32, &str)]) {
        let comments = comments
            .iter()
            .map(|(path, line, body)| json!({"path": path, "line": line, "body": body, "pull_request_review_id": review_id}))
            .collect();
        self.inner
            .lock()
            .unwrap()
            .pulls
            .review_comments
            .insert(review_id, comments);
    }

    /// The files `GET pulls/{n}/files` lists: (path, lines changed).
    pub fn set_pull_files(&self, pr: u64, files: &[(&str, u64)]) {
        let files = files
            .iter()
            .map(|(path, changes)| json!({"filename": path, "changes": changes, "status": "modified"}))
            .collect();
        self.inner.lock().unwrap().pulls.files.insert(pr, files);
    }

    pub fn set_non_collaborators(&self, logins: &[&str]) {
        self.inner.lock().unwrap().pulls.non_collaborators =
            logins.iter().map(|l| l.to_ascii_lowercase()).collect();
    }

    /// Collaborators whose review request GitHub refuses with 422.
    pub fn set_unrequestable(&self, logins: &[&str]) {
        self.inner.lock().unwrap().pulls.unrequestable =
            logins.iter().map(|l| l.to_ascii_lowercase()).collect();
    }

    /// `login`'s permission on the repository (`read`, `triage`, ...).
    pub fn set_permission(&self, login: &str, permission: &str) {
        self.inner
            .lock()
            .unwrap()
            .pulls
            .permissions
            .insert(login.to_ascii_lowercase(), permission.to_owned());
    }

    /// A PR's title and body as longtx last set them.
    pub fn pull(&self, pr: u64) -> Option<(String, String)> {
        self.inner.lock().unwrap().pulls.pulls.get(&pr).cloned()
    }

    /// PRs closed through the API, in order, repeats included.
    pub fn closed_pulls(&self) -> Vec<u64> {
        self.inner.lock().unwrap().pulls.closed.clone()
    }

    pub fn cancelled_runs(&self) -> Vec<u64> {
        self.inner.lock().unwrap().pulls.cancelled_runs.clone()
    }

    /// The organisation's teams and their members, visible to longtx.
    pub fn set_teams(&self, teams: &[(&str, &[&str])]) {
        self.inner.lock().unwrap().pulls.teams = Some(
            teams
                .iter()
                .map(|(slug, members)| {
                    (
                        slug.to_string(),
                        members.iter().map(|m| m.to_ascii_lowercase()).collect(),
                    )
                })
                .collect(),
        );
    }

    /// GitHub ties commit `sha`'s author to `login`.
    pub fn set_commit_login(&self, sha: &str, login: &str) {
        self.inner
            .lock()
            .unwrap()
            .pulls
            .commit_logins
            .insert(sha.to_owned(), login.to_owned());
    }

    pub fn review_requests(&self) -> Vec<ReviewRequest> {
        self.inner
            .lock()
            .unwrap()
            .pulls
            .review_requests
            .iter()
            .map(|(pr, users, teams)| ReviewRequest {
                pr: *pr,
                users: users.clone(),
                teams: teams.clone(),
            })
            .collect()
    }

    /// How many review requests were refused with 422.
    pub fn refused_review_requests(&self) -> u32 {
        self.inner.lock().unwrap().pulls.refused_review_requests
    }

    /// A comment someone left on a PR.
    pub fn add_comment(&self, pr: u64, login: &str, body: &str) {
        let mut inner = self.inner.lock().unwrap();
        let pulls = &mut inner.pulls;
        pulls.next_comment_id += 1;
        let comment =
            json!({"id": 7000 + pulls.next_comment_id, "body": body, "user": {"login": login}});
        pulls.comments.entry(pr).or_default().push(comment);
    }

    /// The bodies of the comments on a PR, oldest first.
    pub fn comments_on(&self, pr: u64) -> Vec<String> {
        self.inner
            .lock()
            .unwrap()
            .pulls
            .comments
            .get(&pr)
            .map(|list| {
                list.iter()
                    .map(|c| c["body"].as_str().unwrap_or("").to_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
}

pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route(
            "/repos/{owner}/{repo}/pulls/{number}/files",
            get(pull_files),
        )
        .route(
            "/repos/{owner}/{repo}/pulls/{number}/requested_reviewers",
            axum::routing::post(request_reviewers),
        )
        .route(
            "/repos/{owner}/{repo}/issues/{number}/comments",
            get(list_comments).post(create_comment),
        )
        .route(
            "/repos/{owner}/{repo}/collaborators/{login}",
            get(collaborator),
        )
        .route("/repos/{owner}/{repo}/commits/{sha}", get(commit))
        .route("/user", get(own_user))
        .route(
            "/repos/{owner}/{repo}/collaborators/{login}/permission",
            get(permission),
        )
        .route(
            "/repos/{owner}/{repo}/pulls/{number}",
            axum::routing::patch(update_pull),
        )
        .route(
            "/repos/{owner}/{repo}/actions/runs/{id}/cancel",
            axum::routing::post(cancel_run),
        )
        .route(
            "/repos/{owner}/{repo}/pulls/{number}/reviews/{id}/comments",
            get(review_comments),
        )
        .route("/orgs/{org}/teams", get(org_teams))
        .route(
            "/orgs/{org}/teams/{slug}/memberships/{login}",
            get(team_membership),
        )
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found"}))).into_response()
}

/// Everything fits on the first page; later pages are empty.
fn first_page(items: Vec<Value>, page: Option<&str>) -> Response {
    let page: usize = page.and_then(|p| p.parse().ok()).unwrap_or(1);
    Json(if page == 1 { items } else { Vec::new() }).into_response()
}

type Query = axum::extract::Query<HashMap<String, String>>;

async fn pull_files(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    query: Query,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("GET /repos/{owner}/{repo}/pulls/{number}/files"),
        &[("pull_requests", "read")],
    )
    .await
    {
        return refused;
    }
    let files = inner.lock().unwrap().pulls.files.get(&number).cloned();
    match files {
        Some(files) => first_page(files, query.get("page").map(String::as_str)),
        None => not_found(),
    }
}

/// docs "List comments for a pull request review": `pull_requests: read`;
/// an unknown review is a 404.
async fn review_comments(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, number, id)): Path<(String, String, u64, i64)>,
    query: Query,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("GET /repos/{owner}/{repo}/pulls/{number}/reviews/{id}/comments"),
        &[("pull_requests", "read")],
    )
    .await
    {
        return refused;
    }
    let comments = inner
        .lock()
        .unwrap()
        .pulls
        .review_comments
        .get(&id)
        .cloned();
    first_page(
        comments.unwrap_or_default(),
        query.get("page").map(String::as_str),
    )
}

#[derive(serde::Deserialize)]
struct ReviewersBody {
    #[serde(default)]
    reviewers: Vec<String>,
    #[serde(default)]
    team_reviewers: Vec<String>,
}

async fn request_reviewers(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Json(body): Json<ReviewersBody>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("POST /repos/{owner}/{repo}/pulls/{number}/requested_reviewers"),
        &[("pull_requests", "write")],
    )
    .await
    {
        return refused;
    }
    let mut inner = inner.lock().unwrap();
    let pulls = &mut inner.pulls;
    let refused = body.reviewers.iter().any(|login| {
        let login = login.to_ascii_lowercase();
        pulls.non_collaborators.contains(&login) || pulls.unrequestable.contains(&login)
    });
    if refused {
        pulls.refused_review_requests += 1;
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({"message": "Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the repository."})),
        )
            .into_response();
    }
    pulls
        .review_requests
        .push((number, body.reviewers.clone(), body.team_reviewers.clone()));
    (StatusCode::CREATED, Json(json!({"number": number}))).into_response()
}

async fn list_comments(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    query: Query,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("GET /repos/{owner}/{repo}/issues/{number}/comments"),
        &[("issues", "read"), ("pull_requests", "read")],
    )
    .await
    {
        return refused;
    }
    let comments = inner
        .lock()
        .unwrap()
        .pulls
        .comments
        .get(&number)
        .cloned()
        .unwrap_or_default();
    first_page(comments, query.get("page").map(String::as_str))
}

#[derive(serde::Deserialize)]
struct CommentBody {
    body: String,
}

async fn create_comment(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Json(body): Json<CommentBody>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("POST /repos/{owner}/{repo}/issues/{number}/comments"),
        &[("issues", "write"), ("pull_requests", "write")],
    )
    .await
    {
        return refused;
    }
    // The comment is the caller's: the App's bot for an installation token.
    let login = super::caller_login(&headers);
    let mut inner = inner.lock().unwrap();
    let pulls = &mut inner.pulls;
    pulls.next_comment_id += 1;
    let comment =
        json!({"id": 7000 + pulls.next_comment_id, "body": body.body, "user": {"login": login}});
    pulls
        .comments
        .entry(number)
        .or_default()
        .push(comment.clone());
    (StatusCode::CREATED, Json(comment)).into_response()
}

async fn collaborator(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, login)): Path<(String, String, String)>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("GET /repos/{owner}/{repo}/collaborators/{login}"),
        &[("metadata", "read")],
    )
    .await
    {
        return refused;
    }
    let outsider = inner
        .lock()
        .unwrap()
        .pulls
        .non_collaborators
        .contains(&login.to_ascii_lowercase());
    if outsider {
        not_found()
    } else {
        StatusCode::NO_CONTENT.into_response()
    }
}

async fn commit(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, sha)): Path<(String, String, String)>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("GET /repos/{owner}/{repo}/commits/{sha}"),
        &[("contents", "read")],
    )
    .await
    {
        return refused;
    }
    // GitHub ties a commit's author to a login by its email; the fake ties
    // the commits made through `createCommitOnBranch` to their caller, and
    // others as a test sets them.
    let (login, dir) = {
        let inner = inner.lock().unwrap();
        let made = inner
            .api_commits
            .iter()
            .find(|c| c["oid"].as_str().is_some_and(|oid| oid.starts_with(&sha)))
            .and_then(|c| c["author"].as_str().map(str::to_owned));
        (
            made.or_else(|| inner.pulls.commit_logins.get(&sha).cloned()),
            inner.repo.git_dir.clone(),
        )
    };
    let author = login.map(|login| json!({"login": login}));
    // With a remote, the commit as git holds it (docs "Get a commit").
    let Some(dir) = dir else {
        return Json(json!({"sha": sha, "author": author})).into_response();
    };
    let Some(shown) = super::repo::git(
        &dir,
        &[
            "show",
            "-s",
            "--format=%H %T %P%n%B",
            &format!("{sha}^{{commit}}"),
        ],
    ) else {
        if author.is_some() {
            return Json(json!({"sha": sha, "author": author})).into_response();
        }
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({"message": format!("No commit found for SHA: {sha}")})),
        )
            .into_response();
    };
    let (ids, message) = shown.split_once('\n').unwrap_or((shown.as_str(), ""));
    let mut ids = ids.split_whitespace();
    let full = ids.next().unwrap_or(&sha).to_owned();
    let tree = ids.next().unwrap_or_default().to_owned();
    let parents: Vec<Value> = ids.map(|p| json!({"sha": p})).collect();
    Json(json!({"sha": full, "author": author, "parents": parents,
                "commit": {"message": message.trim_end(), "tree": {"sha": tree}}}))
    .into_response()
}

async fn own_user(State(inner): State<Shared>, headers: HeaderMap) -> Response {
    if let Some(refused) = admit(&inner, &headers, "GET /user".to_owned(), &[]).await {
        return refused;
    }
    Json(json!({"login": OWN_LOGIN, "type": "User"})).into_response()
}

async fn org_teams(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path(org): Path<String>,
    query: Query,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("GET /orgs/{org}/teams"),
        &[("members", "read")],
    )
    .await
    {
        return refused;
    }
    let teams = inner.lock().unwrap().pulls.teams.clone();
    match teams {
        Some(teams) => {
            let list = teams
                .iter()
                .map(|(slug, _)| json!({"slug": slug, "name": slug}))
                .collect();
            first_page(list, query.get("page").map(String::as_str))
        }
        None => (
            StatusCode::FORBIDDEN,
            Json(json!({"message": "Resource not accessible by integration"})),
        )
            .into_response(),
    }
}

async fn team_membership(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((org, slug, login)): Path<(String, String, String)>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("GET /orgs/{org}/teams/{slug}/memberships/{login}"),
        &[("members", "read")],
    )
    .await
    {
        return refused;
    }
    let member = inner
        .lock()
        .unwrap()
        .pulls
        .teams
        .as_ref()
        .is_some_and(|teams| {
            teams
                .iter()
                .any(|(s, members)| *s == slug && members.contains(&login.to_ascii_lowercase()))
        });
    if member {
        Json(json!({"state": "active", "role": "member"})).into_response()
    } else {
        not_found()
    }
}

async fn permission(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, login)): Path<(String, String, String)>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("GET /repos/{owner}/{repo}/collaborators/{login}/permission"),
        &[("metadata", "read")],
    )
    .await
    {
        return refused;
    }
    let inner = inner.lock().unwrap();
    let key = login.to_ascii_lowercase();
    if inner.pulls.non_collaborators.contains(&key) {
        return not_found();
    }
    let permission = inner
        .pulls
        .permissions
        .get(&key)
        .cloned()
        .unwrap_or_else(|| "write".into());
    Json(json!({"permission": permission, "role_name": permission, "user": {"login": login}}))
        .into_response()
}

#[derive(serde::Deserialize)]
struct PullPatch {
    title: Option<String>,
    body: Option<String>,
    state: Option<String>,
}

async fn update_pull(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, number)): Path<(String, String, u64)>,
    Json(patch): Json<PullPatch>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("PATCH /repos/{owner}/{repo}/pulls/{number}"),
        &[("pull_requests", "write")],
    )
    .await
    {
        return refused;
    }
    let mut inner = inner.lock().unwrap();
    if patch.state.as_deref() == Some("closed") {
        inner.pulls.closed.push(number);
    }
    let pull = inner.pulls.pulls.entry(number).or_default();
    if let Some(title) = &patch.title {
        pull.0 = title.clone();
    }
    if let Some(body) = &patch.body {
        pull.1 = body.clone();
    }
    Json(json!({"number": number, "title": pull.0, "body": pull.1, "state": patch.state.as_deref().unwrap_or("open")}))
        .into_response()
}

async fn cancel_run(
    State(inner): State<Shared>,
    headers: HeaderMap,
    Path((owner, repo, id)): Path<(String, String, u64)>,
) -> Response {
    if let Some(refused) = admit(
        &inner,
        &headers,
        format!("POST /repos/{owner}/{repo}/actions/runs/{id}/cancel"),
        &[("actions", "write")],
    )
    .await
    {
        return refused;
    }
    let mut inner = inner.lock().unwrap();
    let Some(run) = inner.runs.iter_mut().find(|r| r["id"] == id) else {
        return not_found();
    };
    if run["status"] == "completed" {
        return (
            StatusCode::CONFLICT,
            Json(json!({"message": "Cannot cancel a workflow run that is completed."})),
        )
            .into_response();
    }
    run["status"] = json!("completed");
    run["conclusion"] = json!("cancelled");
    inner.pulls.cancelled_runs.push(id);
    (StatusCode::ACCEPTED, Json(json!({}))).into_response()
}
