//! Read-only calls that tell whether a deployment is set up right, for
//! `longtx doctor`: the repository's files, labels, hooks and secret names,
//! and what longtx's own credentials may do. Only doctor uses them, so they
//! stay off the [`crate::GitHub`] trait the pipeline depends on.

use crate::octo::{parse, query_escape, GitAuth};
use crate::{GitHubError, OctocrabGitHub, RepoName, MAX_PAGES, PER_PAGE};
use base64::Engine;
use serde::Deserialize;
use std::collections::BTreeMap;

/// What longtx's credentials are.
#[derive(Debug, Clone, PartialEq)]
pub enum Grants {
    /// An App installation's permissions (`contents` -> `write`, ...).
    App {
        permissions: BTreeMap<String, String>,
        app_slug: Option<String>,
    },
    /// A classic token's scopes (`X-OAuth-Scopes`), or `None` for a
    /// fine-grained token, which has none; `can_push` from the repository's
    /// `permissions` as GitHub reports them to this token.
    Token {
        scopes: Option<Vec<String>>,
        can_push: bool,
        is_admin: bool,
    },
}

/// Where GitHub delivers webhooks for longtx, and which events.
#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    pub url: String,
    pub active: bool,
    pub events: Vec<String>,
}

#[derive(Deserialize)]
struct ContentJson {
    #[serde(default)]
    content: String,
    #[serde(default)]
    encoding: String,
}

impl OctocrabGitHub {
    /// A file's text at `git_ref`, or `None` when it does not exist there.
    pub async fn file_at(
        &self,
        repo: &RepoName,
        path: &str,
        git_ref: &str,
    ) -> Result<Option<String>, GitHubError> {
        let url = format!(
            "/repos/{repo}/contents/{}?ref={}",
            query_escape(path),
            query_escape(git_ref)
        );
        match self.send("GET", &url, None).await {
            Ok((_, text)) => {
                let content: ContentJson = parse(&text)?;
                if content.encoding != "base64" {
                    return Err(GitHubError::Unavailable(format!(
                        "{path}: unexpected encoding {:?}",
                        content.encoding
                    )));
                }
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(content.content.replace(['\n', '\r'], ""))
                    .map_err(|e| GitHubError::Unavailable(format!("{path}: {e}")))?;
                Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
            }
            Err(GitHubError::Refused { status: 404, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub async fn label_names(&self, repo: &RepoName) -> Result<Vec<String>, GitHubError> {
        #[derive(Deserialize)]
        struct Label {
            name: String,
        }
        let mut names = Vec::new();
        for page in 1..=MAX_PAGES {
            let path = format!("/repos/{repo}/labels?per_page={PER_PAGE}&page={page}");
            let (_, text) = self.send("GET", &path, None).await?;
            let labels: Vec<Label> = parse(&text)?;
            let last = labels.len() < PER_PAGE;
            names.extend(labels.into_iter().map(|l| l.name));
            if last {
                break;
            }
        }
        Ok(names)
    }

    /// Secret names a run of the repository can use, from every place
    /// GitHub keeps them: the repository's own, the organisation's shared
    /// with it, and each environment's. `None` where longtx may not look.
    pub async fn all_secret_names(&self, repo: &RepoName) -> Result<SecretNames, GitHubError> {
        #[derive(Deserialize)]
        struct Secret {
            name: String,
        }
        #[derive(Deserialize)]
        struct Secrets {
            secrets: Vec<Secret>,
        }
        #[derive(Deserialize)]
        struct Environment {
            name: String,
        }
        #[derive(Deserialize)]
        struct Environments {
            #[serde(default)]
            environments: Vec<Environment>,
        }
        let names = |path: String| async move {
            match self.send("GET", &path, None).await {
                Ok((_, text)) => Ok(Some(
                    parse::<Secrets>(&text)?
                        .secrets
                        .into_iter()
                        .map(|s| s.name)
                        .collect::<Vec<_>>(),
                )),
                Err(GitHubError::Refused {
                    status: 403 | 404, ..
                }) => Ok(None),
                Err(e) => Err(e),
            }
        };
        let repository =
            names(format!("/repos/{repo}/actions/secrets?per_page={PER_PAGE}")).await?;
        let organization = names(format!(
            "/repos/{repo}/actions/organization-secrets?per_page={PER_PAGE}"
        ))
        .await?;
        let environments = match self
            .send(
                "GET",
                &format!("/repos/{repo}/environments?per_page={PER_PAGE}"),
                None,
            )
            .await
        {
            Ok((_, text)) => {
                let mut all = Vec::new();
                for env in parse::<Environments>(&text)?.environments {
                    let path = format!(
                        "/repos/{repo}/environments/{}/secrets?per_page={PER_PAGE}",
                        crate::octo::query_escape(&env.name).replace('/', "%2F")
                    );
                    all.extend(names(path).await?.unwrap_or_default());
                }
                Some(all)
            }
            Err(GitHubError::Refused {
                status: 403 | 404, ..
            }) => None,
            Err(e) => return Err(e),
        };
        Ok(SecretNames {
            repository,
            organization,
            environments,
        })
    }

    /// An Actions variable's value as the repository's runs see it: its
    /// own, else the organisation's shared with it. `Err` 403 when longtx
    /// may not read variables.
    pub async fn actions_variable(
        &self,
        repo: &RepoName,
        name: &str,
    ) -> Result<Option<String>, GitHubError> {
        #[derive(Deserialize)]
        struct Variable {
            name: String,
            value: String,
        }
        #[derive(Deserialize)]
        struct Variables {
            variables: Vec<Variable>,
        }
        match self
            .send(
                "GET",
                &format!("/repos/{repo}/actions/variables/{name}"),
                None,
            )
            .await
        {
            Ok((_, text)) => return Ok(Some(parse::<Variable>(&text)?.value)),
            Err(GitHubError::Refused { status: 404, .. }) => {}
            Err(e) => return Err(e),
        }
        for page in 1..=MAX_PAGES {
            let path =
                format!("/repos/{repo}/actions/organization-variables?per_page=30&page={page}");
            let (_, text) = match self.send("GET", &path, None).await {
                Ok(answer) => answer,
                // Not in an organisation, or none shared.
                Err(GitHubError::Refused { status: 404, .. }) => return Ok(None),
                Err(e) => return Err(e),
            };
            let variables = parse::<Variables>(&text)?.variables;
            let last = variables.len() < 30;
            if let Some(v) = variables.into_iter().find(|v| v.name == name) {
                return Ok(Some(v.value));
            }
            if last {
                break;
            }
        }
        Ok(None)
    }

    /// A repository's webhooks (a token's set-up; an App has one hook of
    /// its own, see [`Self::app_hook`]).
    pub async fn repo_hooks(&self, repo: &RepoName) -> Result<Vec<Hook>, GitHubError> {
        #[derive(Deserialize)]
        struct Config {
            #[serde(default)]
            url: String,
        }
        #[derive(Deserialize)]
        struct HookJson {
            active: bool,
            events: Vec<String>,
            config: Config,
        }
        let (_, text) = self
            .send("GET", &format!("/repos/{repo}/hooks"), None)
            .await?;
        Ok(parse::<Vec<HookJson>>(&text)?
            .into_iter()
            .map(|h| Hook {
                url: h.config.url,
                active: h.active,
                events: h.events,
            })
            .collect())
    }

    /// The App's own webhook (URL from `GET /app/hook/config`, events from
    /// `GET /app`), read with the App's JWT; `None` for a token.
    pub async fn app_hook(&self) -> Result<Option<Hook>, GitHubError> {
        let GitAuth::App(app, _) = &self.git_auth else {
            return Ok(None);
        };
        #[derive(Deserialize)]
        struct HookConfig {
            #[serde(default)]
            url: String,
        }
        #[derive(Deserialize)]
        struct App {
            #[serde(default)]
            events: Vec<String>,
        }
        let config: HookConfig = jwt_get(app, "/app/hook/config").await?;
        let about: App = jwt_get(app, "/app").await?;
        Ok(Some(Hook {
            active: !config.url.is_empty(),
            url: config.url,
            events: about.events,
        }))
    }

    /// What longtx's credentials may do on `repo`.
    pub async fn grants(&self, repo: &RepoName) -> Result<Grants, GitHubError> {
        match &self.git_auth {
            GitAuth::App(app, id) => {
                #[derive(Deserialize)]
                struct Installation {
                    #[serde(default)]
                    permissions: BTreeMap<String, String>,
                    #[serde(default)]
                    app_slug: Option<String>,
                }
                let installation: Installation =
                    jwt_get(app, &format!("/app/installations/{}", id.0)).await?;
                Ok(Grants::App {
                    permissions: installation.permissions,
                    app_slug: installation.app_slug,
                })
            }
            GitAuth::Token(_) => {
                #[derive(Deserialize, Default)]
                struct Permissions {
                    #[serde(default)]
                    push: bool,
                    #[serde(default)]
                    admin: bool,
                }
                #[derive(Deserialize)]
                struct Repo {
                    #[serde(default)]
                    permissions: Option<Permissions>,
                }
                let response = self
                    .client
                    ._get(format!("/repos/{repo}"))
                    .await
                    .map_err(|e| GitHubError::Unavailable(e.to_string()))?;
                let status = response.status().as_u16();
                let scopes = response
                    .headers()
                    .get("x-oauth-scopes")
                    .and_then(|v| v.to_str().ok())
                    .map(|v| {
                        v.split(',')
                            .map(|s| s.trim().to_owned())
                            .filter(|s| !s.is_empty())
                            .collect()
                    });
                let text = self.client.body_to_string(response).await;
                let text = checked(status, text)?;
                let permissions = parse::<Repo>(&text)?.permissions.unwrap_or_default();
                Ok(Grants::Token {
                    scopes,
                    can_push: permissions.push,
                    is_admin: permissions.admin,
                })
            }
        }
    }
}

/// Where a repository's runs find secrets, by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SecretNames {
    pub repository: Option<Vec<String>>,
    pub organization: Option<Vec<String>>,
    pub environments: Option<Vec<String>>,
}

impl SecretNames {
    /// Every name found anywhere.
    pub fn all(&self) -> Vec<&str> {
        [&self.repository, &self.organization, &self.environments]
            .into_iter()
            .flatten()
            .flatten()
            .map(String::as_str)
            .collect()
    }

    /// True when no place could be listed.
    pub fn none_readable(&self) -> bool {
        self.repository.is_none() && self.organization.is_none() && self.environments.is_none()
    }
}

/// The App's slug (`GET /app` with its JWT).
pub(crate) async fn app_slug(app: &octocrab::Octocrab) -> Result<Option<String>, GitHubError> {
    #[derive(Deserialize)]
    struct App {
        #[serde(default)]
        slug: Option<String>,
    }
    Ok(jwt_get::<App>(app, "/app").await?.slug)
}

/// A GET with the App's JWT (the `/app` endpoints take nothing else).
async fn jwt_get<T: serde::de::DeserializeOwned>(
    app: &octocrab::Octocrab,
    path: &str,
) -> Result<T, GitHubError> {
    let response = app
        ._get(path)
        .await
        .map_err(|e| GitHubError::Unavailable(e.to_string()))?;
    let status = response.status().as_u16();
    parse(&checked(status, app.body_to_string(response).await)?)
}

/// The body of a response read outside [`OctocrabGitHub::send`] (for its
/// headers, or with the JWT), with the same refusal for a 4xx or 5xx.
fn checked(status: u16, text: octocrab::Result<String>) -> Result<String, GitHubError> {
    let text = text.map_err(|e| GitHubError::Unavailable(e.to_string()))?;
    if status >= 400 {
        return Err(GitHubError::Refused {
            status,
            message: crate::octo::github_message(&text),
        });
    }
    Ok(text)
}
