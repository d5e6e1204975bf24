//! What longtx needs to know about a user's copy of a workflow template,
//! read from its YAML: the `workflow_dispatch` inputs it declares, its
//! `run-name` (the only place a run can carry the job id), and the secrets
//! it uses. `longtx doctor` checks these against what longtx sends.

use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

/// One declared `workflow_dispatch` input.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct InputSpec {
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub default: Option<serde_yaml::Value>,
}

/// A job's time limit when `timeout-minutes` is unset (docs "Workflow
/// syntax": 360 minutes).
pub const DEFAULT_TIMEOUT_MINUTES: u64 = 360;

#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowFile {
    pub run_name: Option<String>,
    /// `None`: the file has no `workflow_dispatch` trigger.
    pub dispatch_inputs: Option<BTreeMap<String, InputSpec>>,
    /// Every `secrets.NAME` the file uses, but `GITHUB_TOKEN`.
    pub secrets: BTreeSet<String>,
    /// The secrets a run cannot do without: those its header declares
    /// (`# longtx-secrets: A, B`), else every one it uses.
    pub required_secrets: BTreeSet<String>,
    /// Each job's `timeout-minutes` (GitHub's default, 360, when unset).
    pub timeout_minutes: BTreeMap<String, u64>,
    /// Whether the file names `vars.LONGTX_APP_SLUG` (as `allowed_bots` or
    /// `allow-bot-users`): an App's runs need it set.
    pub uses_app_slug: bool,
    /// Every `uses:` of its steps.
    pub actions: BTreeSet<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkflowError {
    #[error("not valid YAML: {0}")]
    Yaml(String),
    #[error("`run-name` uses `{0}`, which longtx cannot evaluate (only `inputs.<name>`)")]
    Expression(String),
}

impl WorkflowFile {
    pub fn parse(text: &str) -> Result<WorkflowFile, WorkflowError> {
        let doc: serde_yaml::Value =
            serde_yaml::from_str(text).map_err(|e| WorkflowError::Yaml(e.to_string()))?;
        let run_name = doc
            .get("run-name")
            .and_then(|v| v.as_str())
            .map(str::to_owned);
        // YAML 1.1 readers turn a bare `on` into `true`; accept both keys.
        let on = doc
            .get("on")
            .or_else(|| doc.get(serde_yaml::Value::Bool(true)));
        let dispatch_inputs = on.and_then(dispatch_trigger).map(|trigger| {
            trigger
                .get("inputs")
                .and_then(|inputs| {
                    serde_yaml::from_value::<BTreeMap<String, InputSpec>>(inputs.clone()).ok()
                })
                .unwrap_or_default()
        });
        let mut secrets = BTreeSet::new();
        let mut rest = text;
        while let Some(at) = rest.find("secrets.") {
            rest = &rest[at + "secrets.".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && name != "GITHUB_TOKEN" {
                secrets.insert(name);
            }
        }
        let declared: Option<BTreeSet<String>> = text.lines().find_map(|line| {
            line.trim_start()
                .strip_prefix("# longtx-secrets:")
                .map(|names| {
                    names
                        .split(',')
                        .map(|n| n.trim().to_owned())
                        .filter(|n| !n.is_empty())
                        .collect()
                })
        });
        let required_secrets = declared.unwrap_or_else(|| secrets.clone());
        let timeout_minutes = doc
            .get("jobs")
            .and_then(|j| j.as_mapping())
            .map(|jobs| {
                jobs.iter()
                    .filter_map(|(name, job)| {
                        let minutes = job
                            .get("timeout-minutes")
                            .and_then(|t| t.as_u64())
                            .unwrap_or(DEFAULT_TIMEOUT_MINUTES);
                        Some((name.as_str()?.to_owned(), minutes))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let uses_app_slug = text.contains("vars.LONGTX_APP_SLUG");
        let actions = text
            .lines()
            .filter_map(|line| {
                let line = line.trim_start().trim_start_matches("- ").trim_start();
                line.strip_prefix("uses:").map(|u| u.trim().to_owned())
            })
            .collect();
        Ok(WorkflowFile {
            run_name,
            dispatch_inputs,
            secrets,
            required_secrets,
            timeout_minutes,
            uses_app_slug,
            actions,
        })
    }

    /// The run's `display_title` for these inputs, as GitHub would render
    /// `run-name` (a missing input renders empty, as on GitHub). A file
    /// without `run-name` gets the workflow's name, which carries no job.
    pub fn render_run_name(
        &self,
        inputs: &BTreeMap<String, String>,
    ) -> Result<Option<String>, WorkflowError> {
        let Some(template) = &self.run_name else {
            return Ok(None);
        };
        let mut out = String::new();
        let mut rest = template.as_str();
        while let Some(start) = rest.find("${{") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 3..];
            let Some(end) = after.find("}}") else {
                return Err(WorkflowError::Expression(after.trim().to_owned()));
            };
            let expression = after[..end].trim();
            let name = expression
                .strip_prefix("inputs.")
                .filter(|n| {
                    n.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                })
                .ok_or_else(|| WorkflowError::Expression(expression.to_owned()))?;
            out.push_str(inputs.get(name).map(String::as_str).unwrap_or(""));
            rest = &after[end + 2..];
        }
        out.push_str(rest);
        Ok(Some(out))
    }

    /// Why GitHub would refuse a dispatch with `sent` inputs (docs
    /// "Create a workflow dispatch event": 422 for undeclared inputs and
    /// for missing required ones), or what longtx would leave out.
    pub fn input_problems(&self, sent: &BTreeSet<String>) -> Vec<String> {
        let Some(declared) = &self.dispatch_inputs else {
            return vec!["the workflow has no `workflow_dispatch` trigger".to_owned()];
        };
        let mut problems = Vec::new();
        let unexpected: Vec<&String> = sent.iter().filter(|s| !declared.contains_key(*s)).collect();
        if !unexpected.is_empty() {
            problems.push(format!(
                "longtx sends inputs the workflow does not declare (GitHub refuses the dispatch): {}",
                join(unexpected)
            ));
        }
        let missing: Vec<&String> = declared
            .iter()
            .filter(|(name, spec)| spec.required && spec.default.is_none() && !sent.contains(*name))
            .map(|(name, _)| name)
            .collect();
        if !missing.is_empty() {
            problems.push(format!(
                "the workflow requires inputs longtx does not send: {}",
                join(missing)
            ));
        }
        problems
    }
}

fn dispatch_trigger(on: &serde_yaml::Value) -> Option<serde_yaml::Value> {
    match on {
        serde_yaml::Value::String(s) if s == "workflow_dispatch" => {
            Some(serde_yaml::Value::Mapping(Default::default()))
        }
        serde_yaml::Value::Sequence(items) => items
            .iter()
            .any(|i| i.as_str() == Some("workflow_dispatch"))
            .then(|| serde_yaml::Value::Mapping(Default::default())),
        serde_yaml::Value::Mapping(map) => map.get("workflow_dispatch").map(|t| match t {
            serde_yaml::Value::Null => serde_yaml::Value::Mapping(Default::default()),
            other => other.clone(),
        }),
        _ => None,
    }
}

fn join(names: Vec<&String>) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
name: fix
run-name: "longtx job ${{ inputs.job_id }}: ${{ inputs.query_source }}"
on:
  workflow_dispatch:
    inputs:
      job_id: {required: true, type: string}
      query_source: {required: true, type: string}
      table: {required: false, type: string}
      mode: {required: true, type: string, default: fast}
jobs:
  fix:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v5
      - uses: anthropics/claude-code-action@v1
        with:
          anthropic_api_key: ${{ secrets.ANTHROPIC_API_KEY }}
          github_token: ${{ secrets.GITHUB_TOKEN }}
"#;

    fn names(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_template_is_read_for_inputs_run_name_secrets_and_actions() {
        let file = WorkflowFile::parse(FILE).unwrap();
        let inputs = [("job_id", "12"), ("query_source", "a#b")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        assert_eq!(
            file.render_run_name(&inputs).unwrap().as_deref(),
            Some("longtx job 12: a#b")
        );
        assert_eq!(file.secrets, names(&["ANTHROPIC_API_KEY"]));
        assert!(file.actions.contains("anthropics/claude-code-action@v1"));
        assert!(file
            .input_problems(&names(&["job_id", "query_source"]))
            .is_empty());
        let problems = file.input_problems(&names(&["job_id", "prompt_url"]));
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("`prompt_url`"));
        assert!(problems[1].contains("`query_source`"));
    }

    #[test]
    fn what_doctor_cannot_check_is_said() {
        let file = WorkflowFile::parse("run-name: ${{ github.actor }}\non: push\n").unwrap();
        assert!(matches!(
            file.render_run_name(&BTreeMap::new()),
            Err(WorkflowError::Expression(e)) if e == "github.actor"
        ));
        assert_eq!(file.dispatch_inputs, None);
        assert_eq!(
            file.input_problems(&BTreeSet::new()),
            vec!["the workflow has no `workflow_dispatch` trigger".to_owned()]
        );
        let bare = WorkflowFile::parse("on: [push, workflow_dispatch]\n").unwrap();
        assert_eq!(bare.dispatch_inputs, Some(BTreeMap::new()));
        assert!(WorkflowFile::parse("a: [").is_err());
    }
}
