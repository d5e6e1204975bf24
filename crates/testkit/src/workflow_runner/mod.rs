//! A tiny local "GitHub Actions runner": it rehearses the steps of ONE job of a real workflow
//! YAML file on this machine, so tests can prove that a shipped workflow template works.
//!
//! Behaviour follows GitHub's documentation (cited as [syntax], [expr], [ctx], [cmds], [vars]);
//! where the docs are silent it follows the runner's source (github.com/actions/runner).
//! [syntax] https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-syntax
//! [expr]   https://docs.github.com/en/actions/reference/workflows-and-actions/expressions
//! [ctx]    https://docs.github.com/en/actions/reference/workflows-and-actions/contexts
//! [cmds]   https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands
//! [vars]   https://docs.github.com/en/actions/reference/workflows-and-actions/variables
//!
//! Design rule: what the rehearsal cannot model faithfully is an error
//! (`RehearsalError::Unsupported`), never a silent pass.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Map, Value};
use serde_yaml::Value as Yaml;
use sha2::{Digest, Sha256};

// ───────────────────────────── public types ─────────────────────────────

#[derive(Debug, Clone)]
pub struct GithubContext {
    pub repository: String, // "owner/name"
    pub ref_name: String,   // "main"
    pub token: String,      // github.token and secrets.GITHUB_TOKEN
    pub api_url: String,
    pub server_url: String,
    pub actor: String,
    pub run_id: u64,
}

#[derive(Debug, Clone)]
pub struct Rehearsal {
    pub workflow: PathBuf,
    /// Key under `jobs:`; the only job when None (error if several).
    pub job: Option<String>,
    pub inputs: BTreeMap<String, String>,
    pub secrets: BTreeMap<String, String>,
    pub vars: BTreeMap<String, String>,
    pub github: GithubContext,
    pub workspace: PathBuf,
    pub runner_temp: PathBuf,
    /// Added to every step's environment, after PATH/HOME and before GitHub's defaults.
    pub extra_env: BTreeMap<String, String>,
}

/// `uses:` steps are delegated to the test. Gets the action reference, the evaluated `with:` map,
/// the step's full evaluated environment (it may write to $GITHUB_OUTPUT etc. like a real action)
/// and the rehearsal. Returns the step's outputs, or Err(message) to make the step fail.
pub trait Actions {
    fn run(
        &mut self,
        uses: &str,
        with: &BTreeMap<String, String>,
        env: &BTreeMap<String, String>,
        rehearsal: &Rehearsal,
    ) -> Result<BTreeMap<String, String>, String>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Failure,
    Skipped,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
            Outcome::Skipped => "skipped",
        }
    }
}

#[derive(Debug, Clone)]
pub struct StepReport {
    pub index: usize,
    pub id: Option<String>,
    pub name: String,
    /// `steps.<id>.outcome`: the result before `continue-on-error` is applied.
    pub outcome: Outcome,
    /// `steps.<id>.conclusion`: the result after `continue-on-error` is applied.
    pub conclusion: Outcome,
    pub outputs: BTreeMap<String, String>,
    pub stdout: String,
    pub stderr: String,
    /// Exit code of a `run:` step's shell (None for skipped and `uses:` steps).
    pub exit_code: Option<i32>,
    /// What the step's log shows, masks applied as the runner applies them.
    pub log: String,
}

#[derive(Clone)]
pub struct Report {
    pub steps: Vec<StepReport>,
    /// All GITHUB_STEP_SUMMARY content, in step order.
    pub summary: String,
    pub succeeded: bool,
    /// Job-level `permissions`, else workflow-level, as written; Null if none.
    pub permissions: Value,
}

impl Report {
    /// The step with this `id`, else with this (evaluated) name. Panics with the report if none.
    pub fn step(&self, id_or_name: &str) -> &StepReport {
        let by_id = self
            .steps
            .iter()
            .find(|s| s.id.as_deref() == Some(id_or_name));
        by_id
            .or_else(|| self.steps.iter().find(|s| s.name == id_or_name))
            .unwrap_or_else(|| {
                panic!("no step with id or name {id_or_name:?} in this report:\n{self:?}")
            })
    }
}

fn tail(text: &str, n: usize) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}

impl fmt::Debug for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.succeeded {
            "succeeded"
        } else {
            "FAILED"
        };
        writeln!(f, "rehearsed job {verdict} ({} steps)", self.steps.len())?;
        for s in &self.steps {
            let coe = if s.conclusion != s.outcome {
                format!(" -> {}", s.conclusion.as_str())
            } else {
                String::new()
            };
            let id =
                s.id.as_ref()
                    .map(|i| format!(" (id: {i})"))
                    .unwrap_or_default();
            let code = s
                .exit_code
                .filter(|c| *c != 0)
                .map(|c| format!(" (exit code {c})"))
                .unwrap_or_default();
            writeln!(
                f,
                "  #{} [{}{coe}] {}{id}{code}",
                s.index,
                s.outcome.as_str(),
                s.name
            )?;
            if !s.outputs.is_empty() {
                writeln!(f, "      outputs: {:?}", s.outputs)?;
            }
            for (label, text) in [("stdout", &s.stdout), ("stderr", &s.stderr)] {
                if !text.trim().is_empty() {
                    writeln!(f, "      {label} (last lines):")?;
                    for line in tail(text, 20) {
                        writeln!(f, "        | {line}")?;
                    }
                }
            }
        }
        if !self.summary.is_empty() {
            writeln!(f, "  step summary (last lines):")?;
            for line in tail(&self.summary, 10) {
                writeln!(f, "        | {line}")?;
            }
        }
        writeln!(f, "  permissions: {}", self.permissions)
    }
}

/// One `on.workflow_dispatch.inputs.<name>` declaration.
#[derive(Debug, Clone, PartialEq)]
pub struct InputSpec {
    pub required: bool,
    pub default: Option<String>,
    /// `type:` (string, boolean, number, choice, environment); "string" when absent.
    pub kind: String,
    /// `options:` of a choice input.
    pub options: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum RehearsalError {
    #[error("workflow YAML cannot be parsed: {0}")]
    Yaml(String),
    #[error("invalid workflow (GitHub would reject it): {0}")]
    Invalid(String),
    #[error("not supported by the rehearsal, so it would prove nothing: {0}")]
    Unsupported(String),
    #[error("expression error: {0}")]
    Expression(String),
    #[error("job selection: {0}")]
    Job(String),
    #[error("workflow_dispatch inputs refused: {0}")]
    Inputs(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

use RehearsalError::{Invalid, Unsupported};

fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> RehearsalError {
    let what = what.into();
    move |source| RehearsalError::Io { what, source }
}

// ───────────────────────────── expressions ─────────────────────────────

mod expr;
use expr::*;

/// The values an expression can see. Roots are named values (`github`, `inputs`, `env`, ...)
/// holding JSON values; a root that is absent is "not available here".
#[derive(Debug, Clone, Default)]
pub struct Contexts {
    values: BTreeMap<String, Value>,
    workspace: Option<PathBuf>,
    job_failed: bool,
}

/// Roots whose every property we model: an unknown property there (say `github.sha`) is
/// Unsupported rather than a silent ''. Other roots give '' for a missing property, as GitHub does.
const STRICT_ROOTS: &[&str] = &["github", "runner"];
const MODELLED: &[(&str, &[&str])] = &[
    (
        "github",
        &[
            "token",
            "repository",
            "repository_owner",
            "ref",
            "ref_name",
            "ref_type",
            "api_url",
            "server_url",
            "actor",
            "triggering_actor",
            "run_id",
            "event_name",
            "event",
            "workspace",
            "job",
            "workflow",
        ],
    ),
    ("runner", &["os", "arch", "temp", "debug"]),
];

impl Contexts {
    /// What `run-name` sees: `github` and `inputs` (as strings), plus an empty `vars`.
    pub fn new(github: &GithubContext, inputs: &BTreeMap<String, String>) -> Self {
        let mut c = Contexts::default();
        c.set("github", github_object(github, inputs, None));
        c.set("inputs", str_obj(inputs));
        c.set("vars", json!({}));
        c
    }
    /// Adds or replaces a context root (`secrets`, `vars`, `env`, `steps`, typed `inputs`, ...).
    pub fn set(&mut self, name: &str, value: Value) -> &mut Self {
        self.values.insert(name.to_lowercase(), value);
        self
    }
    /// Sets the directory `hashFiles()` searches and `github.workspace`.
    pub fn with_workspace(mut self, dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        if let Some(Value::Object(g)) = self.values.get_mut("github") {
            g.insert("workspace".into(), Value::String(dir.display().to_string()));
        }
        self.workspace = Some(dir);
        self
    }
    /// Makes `success()` false and `failure()` true, as after a failed step.
    pub fn set_job_failed(&mut self, failed: bool) {
        self.job_failed = failed;
    }
}

/// Substitutes every `${{ expr }}` in `text`; textual, without any shell quoting (like GitHub).
pub fn evaluate_template(text: &str, ctx: &Contexts) -> Result<String, RehearsalError> {
    Ok(render(text, ctx)?)
}

fn parse_yaml(text: &str) -> Result<Yaml, RehearsalError> {
    let wf: Yaml = serde_yaml::from_str(text).map_err(|e| RehearsalError::Yaml(e.to_string()))?;
    if !wf.is_mapping() {
        return Err(Invalid("the workflow is not a YAML mapping".into()));
    }
    Ok(wf)
}

/// A YAML scalar as GitHub reads it into a string.
fn ystr(v: &Yaml) -> Option<String> {
    match v {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Bool(b) => Some(b.to_string()),
        Yaml::Number(n) => Some(n.to_string()),
        Yaml::Null => Some(String::new()),
        Yaml::Tagged(t) => ystr(&t.value),
        _ => None,
    }
}

fn yaml_pairs(v: Option<&Yaml>, what: &str) -> Result<Vec<(String, String)>, RehearsalError> {
    match v {
        None | Some(Yaml::Null) => Ok(vec![]),
        Some(Yaml::Mapping(m)) => m
            .iter()
            .map(|(k, v)| match (ystr(k), ystr(v)) {
                (Some(k), Some(v)) => Ok((k, v)),
                _ => Err(Invalid(format!("{what}: `{k:?}` must map to a scalar"))),
            })
            .collect(),
        Some(Yaml::String(_)) => Err(Unsupported(format!("{what} given as one expression"))),
        Some(_) => Err(Invalid(format!("{what} must be a mapping"))),
    }
}

fn str_obj(m: &BTreeMap<String, String>) -> Value {
    Value::Object(
        m.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

fn runner_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "X64",
        "aarch64" => "ARM64",
        "arm" => "ARM",
        _ => "X86",
    }
}

/// The `github` context [ctx: github context], for a workflow_dispatch run on a branch.
/// `extra` = (workspace, job id, workflow name) when rehearsing a job.
fn github_object(
    g: &GithubContext,
    inputs: &BTreeMap<String, String>,
    extra: Option<(&Path, &str, &str)>,
) -> Value {
    let gref = format!("refs/heads/{}", g.ref_name);
    let owner = g.repository.split('/').next().unwrap_or_default();
    let mut o = json!({
        "token": g.token, "repository": g.repository, "repository_owner": owner,
        "ref": gref, "ref_name": g.ref_name, "ref_type": "branch",
        "api_url": g.api_url, "server_url": g.server_url, "actor": g.actor, "triggering_actor": g.actor,
        "run_id": g.run_id.to_string(), "event_name": "workflow_dispatch",
        // github.event.inputs are always strings [syntax: on.workflow_dispatch.inputs]
        "event": { "inputs": str_obj(inputs), "ref": gref },
    });
    if let (Some((ws, job, workflow)), Value::Object(m)) = (extra, &mut o) {
        m.insert("workspace".into(), json!(ws.display().to_string()));
        m.insert("job".into(), json!(job));
        m.insert("workflow".into(), json!(workflow));
    }
    o
}

fn on_workflow_dispatch(wf: &Yaml) -> Option<Option<&Yaml>> {
    // serde_yaml 0.9 reads the key `on` as a string (YAML 1.2); a YAML 1.1 reader makes it `true`.
    let m = wf.as_mapping()?;
    let on = m
        .iter()
        .find(|(k, _)| k.as_str() == Some("on") || *k == &Yaml::Bool(true))?
        .1;
    match on {
        Yaml::String(s) => (s == "workflow_dispatch").then_some(None),
        Yaml::Sequence(items) => items
            .iter()
            .any(|i| i.as_str() == Some("workflow_dispatch"))
            .then_some(None),
        Yaml::Mapping(m) => m.get("workflow_dispatch").map(|d| d.get("inputs")),
        _ => None,
    }
}

/// `on.workflow_dispatch.inputs` of a workflow (empty when it has none).
pub fn dispatch_inputs(workflow_yaml: &str) -> Result<BTreeMap<String, InputSpec>, RehearsalError> {
    Ok(dispatch_specs(&parse_yaml(workflow_yaml)?)?.unwrap_or_default())
}

/// The `run:` script of the step named `name` in any job of a workflow,
/// as written (no expression in it is evaluated): for a test that runs one
/// step's script for real where the rehearsal cannot (as another user).
pub fn step_script(workflow_yaml: &str, name: &str) -> Option<String> {
    let wf = parse_yaml(workflow_yaml).ok()?;
    wf["jobs"].as_mapping()?.values().find_map(|job| {
        job["steps"].as_sequence()?.iter().find_map(|step| {
            (ystr(&step["name"]).as_deref() == Some(name))
                .then(|| ystr(&step["run"]))
                .flatten()
        })
    })
}

/// None when the workflow has no workflow_dispatch trigger at all.
fn dispatch_specs(wf: &Yaml) -> Result<Option<BTreeMap<String, InputSpec>>, RehearsalError> {
    let Some(inputs) = on_workflow_dispatch(wf) else {
        return Ok(None);
    };
    let mut out = BTreeMap::new();
    for (name, spec) in inputs.and_then(Yaml::as_mapping).into_iter().flatten() {
        let name = ystr(name).ok_or_else(|| Invalid("input names must be strings".into()))?;
        let field = |k: &str| spec.get(k).and_then(ystr);
        out.insert(
            name,
            InputSpec {
                required: field("required").is_some_and(|r| r == "true"),
                default: field("default"),
                kind: field("type").unwrap_or_else(|| "string".into()),
                options: spec
                    .get("options")
                    .and_then(Yaml::as_sequence)
                    .into_iter()
                    .flatten()
                    .filter_map(ystr)
                    .collect(),
            },
        );
    }
    Ok(Some(out))
}

/// Applies defaults and checks the dispatch like GitHub's API does (422 "Unexpected inputs
/// provided", missing required input, bad boolean/choice/number). Returns the typed `inputs`
/// context (booleans stay booleans [ctx: inputs context]) and the string form for github.event.inputs.
fn resolve_inputs(
    specs: Option<&BTreeMap<String, InputSpec>>,
    given: &BTreeMap<String, String>,
) -> Result<(Value, BTreeMap<String, String>), RehearsalError> {
    let empty = BTreeMap::new();
    let specs = specs.unwrap_or(&empty);
    let unexpected: Vec<&String> = given.keys().filter(|k| !specs.contains_key(*k)).collect();
    if !unexpected.is_empty() {
        return Err(RehearsalError::Inputs(format!(
            "Unexpected inputs provided: {unexpected:?} (GitHub answers HTTP 422)"
        )));
    }
    let (mut typed, mut strings) = (Map::new(), BTreeMap::new());
    for (name, spec) in specs {
        let raw = match given.get(name).or(spec.default.as_ref()) {
            Some(v) => v.clone(),
            None if spec.required => {
                return Err(RehearsalError::Inputs(format!(
                    "Required input '{name}' not provided"
                )))
            }
            None => String::new(),
        };
        let bad = |why: &str| RehearsalError::Inputs(format!("input '{name}' = {raw:?}: {why}"));
        let value = match spec.kind.as_str() {
            "boolean" => match raw.as_str() {
                "true" => Value::Bool(true),
                "false" | "" => Value::Bool(false),
                _ => return Err(bad("not a boolean")),
            },
            "number" if raw.is_empty() => Value::Null,
            "number" => match parse_number(&raw) {
                x if x.is_finite() => num(x),
                _ => return Err(bad("not a number")),
            },
            "choice" if !raw.is_empty() && !spec.options.contains(&raw) => {
                return Err(bad("not one of the options"))
            }
            _ => Value::String(raw.clone()),
        };
        strings.insert(
            name.clone(),
            if spec.kind == "boolean" {
                to_str(&value)
            } else {
                raw
            },
        );
        typed.insert(name.clone(), value);
    }
    Ok((Value::Object(typed), strings))
}

/// The workflow's `run-name`, evaluated with `github`, `inputs` and (empty) `vars`
/// [ctx: Context availability]; None when the workflow has none.
pub fn run_name(
    workflow_yaml: &str,
    inputs: &BTreeMap<String, String>,
    github: &GithubContext,
) -> Result<Option<String>, RehearsalError> {
    let wf = parse_yaml(workflow_yaml)?;
    let Some(v) = wf.get("run-name") else {
        return Ok(None);
    };
    let text = ystr(v).ok_or_else(|| Invalid("run-name must be a string".into()))?;
    check_template(&text, "run-name", &["github", "inputs", "vars"], false)?;
    let (typed, strings) = resolve_inputs(dispatch_specs(&wf)?.as_ref(), inputs)?;
    let mut ctx = Contexts::new(github, &strings);
    ctx.set("inputs", typed);
    Ok(Some(evaluate_template(&text, &ctx)?))
}

struct Step {
    id: Option<String>,
    name: Option<String>,
    cond: Option<String>,
    run: Option<String>,
    uses: Option<String>,
    with: Vec<(String, String)>,
    env: Vec<(String, String)>,
    shell: Option<String>,
    wd: Option<String>,
    continue_on_error: Option<Yaml>,
}

const STEP_KEYS: &[&str] = &[
    "id",
    "name",
    "if",
    "run",
    "uses",
    "with",
    "env",
    "shell",
    "working-directory",
    "continue-on-error",
    "timeout-minutes",
];
const JOB_KEYS: &[&str] = &[
    "name",
    "runs-on",
    "steps",
    "env",
    "defaults",
    "permissions",
    "if",
    "needs",
    "outputs",
    "timeout-minutes",
    "concurrency",
    "services",
    "environment",
    "continue-on-error",
];
const WORKFLOW_KEYS: &[&str] = &[
    "name",
    "run-name",
    "on",
    "true",
    "env",
    "defaults",
    "permissions",
    "concurrency",
    "jobs",
];

fn check_keys(
    v: &Yaml,
    allowed: &[&str],
    unsupported: &[&str],
    what: &str,
) -> Result<(), RehearsalError> {
    for k in v.as_mapping().into_iter().flat_map(|m| m.keys()) {
        let k = ystr(k).unwrap_or_default();
        if unsupported.contains(&k.as_str()) {
            return Err(Unsupported(format!("`{k}` in {what}")));
        }
        if !allowed.contains(&k.as_str()) {
            return Err(Invalid(format!("unknown key `{k}` in {what}")));
        }
    }
    Ok(())
}

fn parse_step(i: usize, v: &Yaml) -> Result<Step, RehearsalError> {
    if !v.is_mapping() {
        return Err(Invalid(format!("step {i} is not a mapping")));
    }
    check_keys(v, STEP_KEYS, &[], &format!("step {i}"))?;
    let s = |k: &str| {
        v.get(k)
            .map(|x| ystr(x).ok_or_else(|| Invalid(format!("step {i}: `{k}` must be a scalar"))))
            .transpose()
    };
    let step = Step {
        id: s("id")?,
        name: s("name")?,
        cond: s("if")?,
        run: s("run")?,
        uses: s("uses")?,
        with: yaml_pairs(v.get("with"), &format!("step {i} with"))?,
        env: yaml_pairs(v.get("env"), &format!("step {i} env"))?,
        shell: s("shell")?,
        wd: s("working-directory")?,
        continue_on_error: v.get("continue-on-error").cloned(),
    };
    match (&step.run, &step.uses) {
        (Some(_), None) if step.with.is_empty() => Ok(step),
        (None, Some(u)) if step.shell.is_none() && step.wd.is_none() && !u.contains("${{") => Ok(step),
        _ => Err(Invalid(format!("step {i}: needs exactly one of `run`/`uses` (with/shell/working-directory fitting it; no expression in `uses`)"))),
    }
}

// Context availability per key [ctx: Context availability]. `needs`, `matrix`, `strategy` are
// not modelled (one job, no matrix), so using them is Unsupported.
const WORKFLOW_ENV_ROOTS: &[&str] = &["github", "secrets", "inputs", "vars"];
const JOB_IF_ROOTS: &[&str] = &["github", "inputs", "vars"];
const STEP_ROOTS: &[&str] = &[
    "github", "inputs", "vars", "secrets", "env", "steps", "runner", "job",
];
const STEP_IF_ROOTS: &[&str] = &["github", "inputs", "vars", "env", "steps", "runner", "job"];

fn check_expr(
    e: &Expr,
    field: &str,
    roots: &[&str],
    is_if: bool,
    hash_files_ok: bool,
) -> Result<(), RehearsalError> {
    let mut err = None;
    walk(e, &mut |n| {
        if err.is_some() {
            return;
        }
        err = match n {
            Expr::Ctx(r) if !roots.contains(&r.as_str()) && STEP_ROOTS.contains(&r.as_str()) => {
                Some(Invalid(format!(
                    "context `{r}` is not available in {field}"
                )))
            }
            Expr::Ctx(r) if !roots.contains(&r.as_str()) => {
                Some(Unsupported(format!("context `{r}` (in {field})")))
            }
            Expr::Index(base, key) => match (&**base, &**key) {
                (Expr::Ctx(r), Expr::Lit(Value::String(k))) => {
                    MODELLED.iter().find(|m| m.0 == r).and_then(|(_, keys)| {
                        (!keys.contains(&k.to_lowercase().as_str()))
                            .then(|| Unsupported(format!("`{r}.{k}` is not modelled (in {field})")))
                    })
                }
                _ => None,
            },
            Expr::Call(f, _) if STATUS_FUNCTIONS.contains(&f.as_str()) && !is_if => {
                Some(Invalid(format!("`{f}()` outside an `if` ({field})")))
            }
            Expr::Call(f, _) if f == "hashfiles" && !hash_files_ok => {
                Some(Invalid(format!("`hashFiles()` in {field}")))
            }
            _ => None,
        }
    });
    err.map_or(Ok(()), Err)
}

fn check_template(
    text: &str,
    field: &str,
    roots: &[&str],
    hash_files_ok: bool,
) -> Result<(), RehearsalError> {
    for p in parse_template(text)? {
        if let Piece::Expr(e) = p {
            check_expr(&e, field, roots, false, hash_files_ok)?;
        }
    }
    Ok(())
}

/// Checks every expression of the job before anything runs, as GitHub validates the workflow
/// file: so an expression in a step that ends up skipped still cannot hide an unsupported feature.
fn validate(
    wf: &Yaml,
    job: &Yaml,
    steps: &[Step],
    default_run: &dyn Fn(&str) -> Option<String>,
) -> Result<(), RehearsalError> {
    if let Some(wd) = default_run("working-directory") {
        check_template(&wd, "defaults.run.working-directory", STEP_ROOTS, false)?;
    }
    for s in steps.iter().filter(|s| s.run.is_some()) {
        shell_argv(s.shell.clone().or_else(|| default_run("shell")).as_deref())?;
    }
    for (_, v) in yaml_pairs(wf.get("env"), "workflow env")? {
        check_template(&v, "workflow env", WORKFLOW_ENV_ROOTS, false)?;
    }
    for (_, v) in yaml_pairs(job.get("env"), "job env")? {
        check_template(&v, "job env", WORKFLOW_ENV_ROOTS, false)?;
    }
    if let Some(c) = job.get("if").and_then(ystr) {
        check_expr(&condition_expr(&c)?, "job if", JOB_IF_ROOTS, true, false)?;
    }
    for (i, s) in steps.iter().enumerate() {
        let field = format!("step {i}");
        let texts = [&s.name, &s.run, &s.wd].into_iter().flatten();
        let texts = texts
            .chain(s.with.iter().map(|p| &p.1))
            .chain(s.env.iter().map(|p| &p.1));
        for t in texts {
            check_template(t, &field, STEP_ROOTS, true)?;
        }
        if let Some(c) = s.continue_on_error.as_ref().and_then(ystr) {
            check_template(&c, &field, STEP_ROOTS, true)?;
        }
        if let Some(c) = &s.cond {
            check_expr(
                &condition_expr(c)?,
                &format!("step {i} if"),
                STEP_IF_ROOTS,
                true,
                true,
            )?;
        }
    }
    Ok(())
}

/// The command for a `run:` step [syntax: jobs.<job_id>.steps[*].shell]. NOTE: with no shell the
/// docs' command is `bash -e {0}` (no pipefail); only an explicit `shell: bash` adds
/// `--noprofile --norc -eo pipefail`.
fn shell_argv(shell: Option<&str>) -> Result<Vec<String>, RehearsalError> {
    let argv: Vec<&str> = match shell.map(str::trim) {
        None => vec!["bash", "-e", "{0}"],
        Some("bash") => vec!["bash", "--noprofile", "--norc", "-eo", "pipefail", "{0}"],
        Some("sh") => vec!["sh", "-e", "{0}"],
        Some(custom) if custom.contains("{0}") => custom.split_whitespace().collect(),
        Some(other) => return Err(Unsupported(format!("shell `{other}` (only bash and sh)"))),
    };
    let prog = Path::new(argv[0])
        .file_name()
        .and_then(|p| p.to_str())
        .unwrap_or_default();
    if prog != "bash" && prog != "sh" {
        return Err(Unsupported(format!(
            "custom shell `{}` (only bash and sh)",
            argv.join(" ")
        )));
    }
    Ok(argv.into_iter().map(String::from).collect())
}

/// GITHUB_OUTPUT / GITHUB_ENV format [cmds: Multiline strings]: `name=value`, or `name<<DELIM`,
/// lines, `DELIM`. Whichever of `=` and `<<` comes first decides (runner FileCommandManager).
fn parse_file_commands(text: &str) -> Result<Vec<(String, String)>, String> {
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let (mut out, mut i) = (Vec::new(), 0);
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        if line.is_empty() {
            continue;
        }
        let (eq, heredoc) = (line.find('='), line.find("<<"));
        let (name, value) = match (eq, heredoc) {
            (Some(e), h) if h.is_none_or(|h| e < h) => (&line[..e], line[e + 1..].to_string()),
            (_, Some(h)) => {
                let delim = &line[h + 2..];
                let end = lines[i..]
                    .iter()
                    .position(|l| *l == delim)
                    .filter(|_| !delim.is_empty());
                let end = end.ok_or_else(|| format!("Matching delimiter not found '{delim}'"))? + i;
                let value = lines[i..end].join("\n");
                i = end + 1;
                (&line[..h], value)
            }
            _ => return Err(format!("Invalid format '{line}'")),
        };
        if name.is_empty() {
            return Err(format!("Invalid format '{line}': empty name"));
        }
        out.push((name.to_string(), value));
    }
    Ok(out)
}

struct StepRun {
    outcome: Outcome,
    continue_on_error: bool,
    outputs: BTreeMap<String, String>,
    stdout: String,
    stderr: String,
    exit_code: Option<i32>,
    log: String,
}

impl StepRun {
    fn new(outcome: Outcome, stderr: String) -> Self {
        StepRun {
            outcome,
            continue_on_error: false,
            outputs: BTreeMap::new(),
            stdout: String::new(),
            stderr,
            exit_code: None,
            log: String::new(),
        }
    }
}

/// Per-rehearsal state that steps change.
struct JobState {
    env: BTreeMap<String, String>, // workflow env + job env + GITHUB_ENV, in that precedence
    path: Vec<String>,             // GITHUB_PATH additions, latest last
    summary: String,
    /// Values the log hides: secrets from the start, `::add-mask::` values
    /// from the moment a step prints the command.
    masks: Vec<String>,
}

/// The runner's masker: every registered value becomes `***`.
fn masked(text: &str, masks: &[String]) -> String {
    masks
        .iter()
        .filter(|m| !m.is_empty())
        .fold(text.to_owned(), |t, m| t.replace(m.as_str(), "***"))
}

/// A step's log as the runner writes it: a header with the step's `with:`
/// and `env:` values, printed before the step runs (so masked only with
/// what earlier steps registered: actions/runner#475), then its output,
/// where an `::add-mask::` line registers its value from that line on.
fn step_log(
    header: &[(String, String)],
    stdout: &str,
    stderr: &str,
    masks: &mut Vec<String>,
) -> String {
    let mut log = String::new();
    for (k, v) in header {
        log.push_str(&masked(&format!("  {k}: {v}\n"), masks));
    }
    for line in stdout.lines() {
        match line.strip_prefix("::add-mask::") {
            Some(value) => masks.push(value.trim().to_owned()),
            None => {
                log.push_str(&masked(line, masks));
                log.push('\n');
            }
        }
    }
    log.push_str(&masked(stderr, masks));
    log
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// Rehearses one job. Err means the workflow cannot be rehearsed faithfully (or is invalid);
/// a failing step is not an Err: it is in the Report.
pub fn rehearse(r: &Rehearsal, actions: &mut dyn Actions) -> Result<Report, RehearsalError> {
    let text = fs::read_to_string(&r.workflow)
        .map_err(io_err(format!("reading {}", r.workflow.display())))?;
    let wf = parse_yaml(&text)?;
    for (dir, what) in [(&r.workspace, "workspace"), (&r.runner_temp, "runner_temp")] {
        if !dir.is_dir() {
            return Err(Invalid(format!(
                "{what} {} is not a directory",
                dir.display()
            )));
        }
    }
    check_keys(&wf, WORKFLOW_KEYS, &[], "the workflow")?;
    let (typed_inputs, string_inputs) = resolve_inputs(dispatch_specs(&wf)?.as_ref(), &r.inputs)?;

    let jobs = wf
        .get("jobs")
        .and_then(Yaml::as_mapping)
        .ok_or_else(|| Invalid("no `jobs:` mapping".into()))?;
    let names: Vec<String> = jobs.keys().filter_map(ystr).collect();
    let job_id = match &r.job {
        Some(j) if names.contains(j) => j.clone(),
        Some(j) => {
            return Err(RehearsalError::Job(format!(
                "no job `{j}`; jobs: {names:?}"
            )))
        }
        None if names.len() == 1 => names[0].clone(),
        None => {
            return Err(RehearsalError::Job(format!(
                "several jobs, name one of {names:?}"
            )))
        }
    };
    let job = &jobs[job_id.as_str()];
    check_keys(
        job,
        JOB_KEYS,
        &["container", "strategy", "uses", "with", "secrets"],
        &format!("job `{job_id}`"),
    )?;
    let raw_steps = job
        .get("steps")
        .and_then(Yaml::as_sequence)
        .ok_or_else(|| Invalid(format!("job `{job_id}` has no steps")))?;
    let steps = raw_steps
        .iter()
        .enumerate()
        .map(|(i, s)| parse_step(i, s))
        .collect::<Result<Vec<_>, _>>()?;
    // Job-level `defaults.run` wins over workflow-level [syntax: defaults.run].
    let default_of = |key: &str| {
        let from = |y: &Yaml| {
            y.get("defaults")
                .and_then(|d| d.get("run"))
                .and_then(|d| d.get(key))
                .and_then(ystr)
        };
        from(job).or_else(|| from(&wf))
    };
    validate(&wf, job, &steps, &default_of)?;

    let workflow_name = wf
        .get("name")
        .and_then(ystr)
        .unwrap_or_else(|| r.workflow.display().to_string());
    let mut secrets = r.secrets.clone();
    secrets.insert("GITHUB_TOKEN".into(), r.github.token.clone());
    let mut ctx = Contexts::default().with_workspace(&r.workspace);
    ctx.set(
        "github",
        github_object(
            &r.github,
            &string_inputs,
            Some((&r.workspace, &job_id, &workflow_name)),
        ),
    );
    ctx.set("inputs", typed_inputs);
    ctx.set("vars", str_obj(&r.vars));
    ctx.set("secrets", str_obj(&secrets));
    ctx.set("runner", json!({ "os": "Linux", "arch": runner_arch(), "temp": r.runner_temp.display().to_string(), "debug": null }));

    // Workflow then job env, each evaluated once, before the job [syntax: env].
    let mut state = JobState {
        env: BTreeMap::new(),
        path: Vec::new(),
        summary: String::new(),
        // The runner masks every secret, GITHUB_TOKEN included.
        masks: secrets
            .values()
            .filter(|v| !v.is_empty())
            .cloned()
            .collect(),
    };
    for scope in [wf.get("env"), job.get("env")] {
        for (k, v) in yaml_pairs(scope, "env")? {
            let value = evaluate_template(&v, &ctx)?;
            state.env.insert(k, value);
        }
    }
    let permissions = job
        .get("permissions")
        .or(wf.get("permissions"))
        .and_then(|p| serde_json::to_value(p).ok())
        .unwrap_or(Value::Null);
    let unique = format!(
        "{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    );
    let event_path = r
        .runner_temp
        .join(format!("_rehearsal_event_{unique}.json"));
    let event = json!({ "inputs": str_obj(&string_inputs), "ref": format!("refs/heads/{}", r.github.ref_name) });
    fs::write(&event_path, event.to_string()).map_err(io_err("writing the event file"))?;

    let job_runs = match job.get("if").and_then(ystr) {
        Some(c) => truthy(&eval(&condition_expr(&c)?, &ctx)?),
        None => true,
    };
    let (mut reports, mut failed, mut steps_ctx) = (Vec::new(), false, Map::new());
    for (index, step) in steps.iter().enumerate() {
        ctx.set("env", str_obj(&state.env));
        ctx.set("steps", Value::Object(steps_ctx.clone()));
        ctx.set(
            "job",
            json!({ "status": if failed { "failure" } else { "success" } }),
        );
        ctx.set_job_failed(failed);
        let run = if job_runs {
            let defaults = (default_of("working-directory"), default_of("shell"));
            let env = Env {
                r,
                job_id: &job_id,
                workflow: &workflow_name,
                unique: &unique,
                event: &event_path,
            };
            run_step(step, index, &mut ctx, &mut state, defaults, &env, actions)?
        } else {
            StepRun::new(Outcome::Skipped, String::new())
        };
        let name = display_name(step, &ctx)?;
        let conclusion = if run.outcome == Outcome::Failure && run.continue_on_error {
            Outcome::Success
        } else {
            run.outcome
        };
        failed |= conclusion == Outcome::Failure;
        if let Some(id) = &step.id {
            steps_ctx.insert(id.clone(), json!({ "outputs": run.outputs, "outcome": run.outcome.as_str(), "conclusion": conclusion.as_str() }));
        }
        let (outcome, outputs, stdout, stderr, exit_code, log) = (
            run.outcome,
            run.outputs,
            run.stdout,
            run.stderr,
            run.exit_code,
            run.log,
        );
        reports.push(StepReport {
            index,
            id: step.id.clone(),
            name,
            outcome,
            conclusion,
            outputs,
            stdout,
            stderr,
            exit_code,
            log,
        });
    }
    Ok(Report {
        steps: reports,
        summary: state.summary,
        succeeded: !failed,
        permissions,
    })
}

/// `name`, evaluated; else "Run <first line of run>" / "Run <uses>" as GitHub displays it.
fn display_name(step: &Step, ctx: &Contexts) -> Result<String, RehearsalError> {
    match &step.name {
        Some(n) => match render(n, ctx) {
            Err(EvalErr::Runtime(_)) => Ok(n.clone()), // GitHub falls back to the raw name
            other => Ok(other?),
        },
        None => {
            let first = step
                .run
                .as_deref()
                .and_then(|r| r.lines().find(|l| !l.trim().is_empty()));
            Ok(format!(
                "Run {}",
                first.or(step.uses.as_deref()).unwrap_or_default().trim()
            ))
        }
    }
}

struct Env<'a> {
    r: &'a Rehearsal,
    job_id: &'a str,
    workflow: &'a str,
    unique: &'a str,
    event: &'a Path,
}

/// Runtime expression errors fail the step (runner StepsRunner); others abort the rehearsal.
/// `continue-on-error` covers errors after it is evaluated, as in the runner's RunStepAsync.
macro_rules! rt {
    ($e:expr, $coe:expr) => {
        match $e {
            Ok(v) => v,
            Err(EvalErr::Runtime(m)) => {
                let mut run = StepRun::new(Outcome::Failure, format!("rehearsal: {m}\n"));
                run.continue_on_error = $coe;
                return Ok(run);
            }
            Err(e) => return Err(e.into()),
        }
    };
}

fn run_step(
    step: &Step,
    index: usize,
    ctx: &mut Contexts,
    state: &mut JobState,
    (default_wd, default_shell): (Option<String>, Option<String>),
    e: &Env,
    actions: &mut dyn Actions,
) -> Result<StepRun, RehearsalError> {
    let r = e.r;
    // As in the runner (StepsRunner.cs): the step's env is evaluated and merged into the `env`
    // context first, and only then is `if` evaluated, so `if` sees the step's own env.
    let mut env = state.env.clone();
    let mut header = Vec::new();
    for (k, v) in &step.env {
        let value = rt!(render(v, ctx), false);
        header.push((k.clone(), value.clone()));
        env.insert(k.clone(), value);
    }
    ctx.set("env", str_obj(&env));
    if !truthy(&rt!(
        condition_expr(step.cond.as_deref().unwrap_or("")).and_then(|c| eval(&c, ctx)),
        false
    )) {
        return Ok(StepRun::new(Outcome::Skipped, String::new()));
    }
    let continue_on_error = match &step.continue_on_error {
        None => false,
        Some(Yaml::Bool(b)) => *b,
        Some(v) => {
            let text = ystr(v).unwrap_or_default();
            let mut pieces = rt!(parse_template(&text), false);
            match (pieces.pop(), pieces.is_empty()) {
                (Some(Piece::Expr(x)), true) => truthy(&rt!(eval(&x, ctx), false)),
                _ => text.trim() == "true",
            }
        }
    };

    // Fresh command files per step, as the runner creates them [cmds: Environment files].
    let dir = r.runner_temp.join("_runner_file_commands");
    fs::create_dir_all(&dir).map_err(io_err("creating the file-command directory"))?;
    let file = |kind: &str| dir.join(format!("{kind}_{}_{index}", e.unique));
    let (out_f, env_f, path_f, sum_f) = (
        file("set_output"),
        file("set_env"),
        file("add_path"),
        file("step_summary"),
    );
    for f in [&out_f, &env_f, &path_f, &sum_f] {
        fs::write(f, "").map_err(io_err(format!("creating {}", f.display())))?;
    }

    // Process environment: PATH and HOME only from the test process, then extra_env, then
    // GitHub's defaults [vars: Default environment variables], then workflow/job/GITHUB_ENV/step env.
    let mut penv: BTreeMap<String, String> = ["PATH", "HOME"]
        .iter()
        .filter_map(|k| Some((k.to_string(), std::env::var(k).ok()?)))
        .collect();
    penv.extend(r.extra_env.clone());
    let g = &r.github;
    let show = |p: &Path| p.display().to_string();
    let defaults = [
        ("CI", "true".into()),
        ("GITHUB_ACTIONS", "true".into()),
        ("GITHUB_WORKSPACE", show(&r.workspace)),
        ("RUNNER_TEMP", show(&r.runner_temp)),
        ("RUNNER_OS", "Linux".into()),
        ("RUNNER_ARCH", runner_arch().into()),
        ("GITHUB_REPOSITORY", g.repository.clone()),
        (
            "GITHUB_REPOSITORY_OWNER",
            g.repository.split('/').next().unwrap_or_default().into(),
        ),
        ("GITHUB_REF", format!("refs/heads/{}", g.ref_name)),
        ("GITHUB_REF_NAME", g.ref_name.clone()),
        ("GITHUB_REF_TYPE", "branch".into()),
        ("GITHUB_API_URL", g.api_url.clone()),
        ("GITHUB_SERVER_URL", g.server_url.clone()),
        ("GITHUB_ACTOR", g.actor.clone()),
        ("GITHUB_TRIGGERING_ACTOR", g.actor.clone()),
        ("GITHUB_RUN_ID", g.run_id.to_string()),
        ("GITHUB_EVENT_NAME", "workflow_dispatch".into()),
        ("GITHUB_EVENT_PATH", show(e.event)),
        ("GITHUB_JOB", e.job_id.into()),
        ("GITHUB_WORKFLOW", e.workflow.into()),
        ("GITHUB_OUTPUT", show(&out_f)),
        ("GITHUB_ENV", show(&env_f)),
        ("GITHUB_PATH", show(&path_f)),
        ("GITHUB_STEP_SUMMARY", show(&sum_f)),
    ];
    penv.extend(defaults.into_iter().map(|(k, v)| (k.to_string(), v)));
    penv.extend(env);
    if !state.path.is_empty() {
        let mut parts: Vec<String> = state.path.iter().rev().cloned().collect();
        parts.extend(penv.get("PATH").cloned());
        penv.insert("PATH".into(), parts.join(":"));
    }

    let mut exit_code = None;
    let (mut ok, stdout, mut stderr, mut outputs) = if let Some(script) = &step.run {
        let script = rt!(render(script, ctx), continue_on_error);
        let wd = match step.wd.clone().or(default_wd) {
            Some(w) => r.workspace.join(rt!(render(&w, ctx), continue_on_error)), // join keeps an absolute path as is
            None => r.workspace.clone(),
        };
        let argv = shell_argv(step.shell.as_deref().or(default_shell.as_deref()))?;
        let script_path = r
            .runner_temp
            .join(format!("_rehearsal_{}_{index}.sh", e.unique));
        fs::write(&script_path, &script).map_err(io_err("writing the step script"))?;
        let args = argv[1..]
            .iter()
            .map(|a| a.replace("{0}", &show(&script_path)));
        let out = Command::new(&argv[0])
            .args(args)
            .current_dir(&wd)
            .env_clear()
            .envs(&penv)
            .stdin(Stdio::null())
            .output();
        match out {
            Ok(o) => {
                exit_code = o.status.code(); // None when killed by a signal
                let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                (
                    o.status.success(),
                    text(&o.stdout),
                    text(&o.stderr),
                    BTreeMap::new(),
                )
            }
            Err(err) => (
                false,
                String::new(),
                format!(
                    "rehearsal: cannot start {} in {}: {err}\n",
                    argv[0],
                    wd.display()
                ),
                BTreeMap::new(),
            ),
        }
    } else {
        let uses = step.uses.as_deref().unwrap_or_default();
        let mut with = BTreeMap::new();
        for (k, v) in &step.with {
            with.insert(k.clone(), rt!(render(v, ctx), continue_on_error));
        }
        // The runner prints an action's non-empty inputs in its header too.
        header.splice(
            0..0,
            with.iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        match actions.run(uses, &with, &penv, r) {
            Ok(outputs) => (true, String::new(), String::new(), outputs),
            Err(msg) => (false, String::new(), msg, BTreeMap::new()),
        }
    };

    // File commands are processed whatever the step's result. Returned outputs win over the file.
    let read = |p: &Path| fs::read_to_string(p).unwrap_or_default();
    match (
        parse_file_commands(&read(&out_f)),
        parse_file_commands(&read(&env_f)),
    ) {
        (Ok(outs), Ok(envs)) => {
            for (k, v) in outs {
                outputs.entry(k).or_insert(v);
            }
            state.env.extend(envs); // applies from the next step on [cmds: Setting an environment variable]
        }
        (Err(m), _) | (_, Err(m)) => {
            ok = false;
            stderr.push_str(&format!("rehearsal: GITHUB_OUTPUT/GITHUB_ENV: {m}\n"));
        }
    }
    for line in read(&path_f)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
    {
        state.path.retain(|p| p != line);
        state.path.push(line.to_string());
    }
    state.summary.push_str(&read(&sum_f));
    let outcome = if ok {
        Outcome::Success
    } else {
        Outcome::Failure
    };
    let log = step_log(&header, &stdout, &stderr, &mut state.masks);
    Ok(StepRun {
        outcome,
        continue_on_error,
        outputs,
        stdout,
        stderr,
        exit_code,
        log,
    })
}

// ───────────────────────────── tests ─────────────────────────────

#[cfg(test)]
mod tests;
