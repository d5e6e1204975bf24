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

/// Internal evaluation error. `Runtime` errors fail the step (as on GitHub, e.g. fromJSON of bad
/// JSON); `Unsupported` and `Syntax` abort the rehearsal.
#[derive(Debug)]
enum EvalErr {
    Unsupported(String),
    Syntax(String),
    Runtime(String),
}

impl From<EvalErr> for RehearsalError {
    fn from(e: EvalErr) -> Self {
        match e {
            EvalErr::Unsupported(m) => Unsupported(m),
            EvalErr::Syntax(m) | EvalErr::Runtime(m) => RehearsalError::Expression(m),
        }
    }
}

fn syntax(src: &str, msg: &str) -> EvalErr {
    EvalErr::Syntax(format!("{msg} in `{src}`"))
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    And,
    Or,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone)]
enum Expr {
    Lit(Value),
    Ctx(String), // named value (context root), lower-cased: names are case-insensitive
    Index(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Bin(Op, Box<Expr>, Box<Expr>),
    Call(String, Vec<Expr>), // lower-cased function name
}

/// Functions of [expr] with their arity (names are case-insensitive: `toJson` is common).
const FUNCTIONS: &[(&str, usize, usize)] = &[
    ("contains", 2, 2),
    ("startswith", 2, 2),
    ("endswith", 2, 2),
    ("format", 1, 255),
    ("join", 1, 2),
    ("tojson", 1, 1),
    ("fromjson", 1, 1),
    ("hashfiles", 1, 255),
    ("success", 0, 0),
    ("failure", 0, 0),
    ("always", 0, 0),
    ("cancelled", 0, 0),
];
const STATUS_FUNCTIONS: &[&str] = &["success", "failure", "always", "cancelled"];

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Str(String),
    Ident(String),
    P(&'static str),
}

const PUNCT: &[&str] = &[
    "==", "!=", "<=", ">=", "&&", "||", "(", ")", "[", "]", ".", ",", "!", "<", ">", "*",
];

fn lex(src: &str) -> Result<Vec<Tok>, EvalErr> {
    let c: Vec<char> = src.chars().collect();
    let (mut i, mut out) = (0, Vec::new());
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '\'' {
            // 'single-quoted', with '' as an escaped quote [expr: Literals]
            let mut s = String::new();
            i += 1;
            loop {
                match c.get(i) {
                    None => return Err(syntax(src, "unterminated string literal")),
                    Some('\'') if c.get(i + 1) == Some(&'\'') => {
                        s.push('\'');
                        i += 2;
                    }
                    Some('\'') => {
                        i += 1;
                        break;
                    }
                    Some(&x) => {
                        s.push(x);
                        i += 1;
                    }
                }
            }
            out.push(Tok::Str(s));
        } else if ch.is_ascii_digit()
            || (ch == '-'
                && c.get(i + 1)
                    .is_some_and(|d| d.is_ascii_digit() || *d == '.'))
        {
            let start = i;
            i += 1;
            while i < c.len()
                && (c[i].is_ascii_alphanumeric()
                    || c[i] == '.'
                    || (matches!(c[i], '+' | '-') && matches!(c[i - 1], 'e' | 'E')))
            {
                i += 1;
            }
            let text: String = c[start..i].iter().collect();
            let n = if let Some(hex) = text.strip_prefix("0x") {
                i64::from_str_radix(hex, 16).ok().map(|n| n as f64)
            } else if text.chars().all(|d| "0123456789.eE+-".contains(d)) {
                text.parse::<f64>().ok()
            } else {
                None
            };
            out.push(Tok::Num(
                n.ok_or_else(|| syntax(src, &format!("bad number `{text}`")))?,
            ));
        } else if ch.is_alphabetic() || ch == '_' {
            // identifiers may contain '-': steps.my-step.outputs.x
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_' || c[i] == '-') {
                i += 1;
            }
            out.push(Tok::Ident(c[start..i].iter().collect()));
        } else {
            let two: String = c[i..(i + 2).min(c.len())].iter().collect();
            let p = PUNCT.iter().find(|p| two.starts_with(**p));
            let p = p.ok_or_else(|| syntax(src, &format!("unexpected character {ch:?}")))?;
            out.push(Tok::P(p));
            i += p.len();
        }
    }
    Ok(out)
}

/// Recursive descent, precedence per [expr: Operators]: `!` > comparisons > `==`/`!=` > `&&` > `||`.
struct Parser<'a> {
    toks: Vec<Tok>,
    i: usize,
    src: &'a str,
}

impl Parser<'_> {
    fn eat(&mut self, p: &str) -> bool {
        let hit = matches!(self.toks.get(self.i), Some(Tok::P(x)) if *x == p);
        self.i += hit as usize;
        hit
    }
    fn expect(&mut self, p: &str) -> Result<(), EvalErr> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(syntax(self.src, &format!("expected `{p}`")))
        }
    }
    fn binary(
        &mut self,
        ops: &[(&str, Op)],
        next: fn(&mut Self) -> Result<Expr, EvalErr>,
    ) -> Result<Expr, EvalErr> {
        let mut left = next(self)?;
        'outer: loop {
            for (tok, op) in ops {
                if self.eat(tok) {
                    left = Expr::Bin(*op, Box::new(left), Box::new(next(self)?));
                    continue 'outer;
                }
            }
            return Ok(left);
        }
    }
    fn or(&mut self) -> Result<Expr, EvalErr> {
        self.binary(&[("||", Op::Or)], Self::and)
    }
    fn and(&mut self) -> Result<Expr, EvalErr> {
        self.binary(&[("&&", Op::And)], Self::eq)
    }
    fn eq(&mut self) -> Result<Expr, EvalErr> {
        self.binary(&[("==", Op::Eq), ("!=", Op::Ne)], Self::cmp)
    }
    fn cmp(&mut self) -> Result<Expr, EvalErr> {
        self.binary(
            &[("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)],
            Self::unary,
        )
    }
    fn unary(&mut self) -> Result<Expr, EvalErr> {
        if self.eat("!") {
            Ok(Expr::Not(Box::new(self.unary()?)))
        } else {
            self.postfix()
        }
    }
    fn postfix(&mut self) -> Result<Expr, EvalErr> {
        let mut e = self.primary()?;
        loop {
            if self.eat(".") {
                match self.toks.get(self.i).cloned() {
                    Some(Tok::Ident(name)) => {
                        self.i += 1;
                        e = Expr::Index(Box::new(e), Box::new(Expr::Lit(Value::String(name))));
                    }
                    Some(Tok::P("*")) => {
                        return Err(EvalErr::Unsupported(format!(
                            "object filter `.*` in `{}`",
                            self.src
                        )))
                    }
                    _ => return Err(syntax(self.src, "expected a property name after `.`")),
                }
            } else if self.eat("[") {
                if self.eat("*") {
                    return Err(EvalErr::Unsupported(format!(
                        "object filter `[*]` in `{}`",
                        self.src
                    )));
                }
                let key = self.or()?;
                self.expect("]")?;
                e = Expr::Index(Box::new(e), Box::new(key));
            } else {
                return Ok(e);
            }
        }
    }
    fn primary(&mut self) -> Result<Expr, EvalErr> {
        let tok = self
            .toks
            .get(self.i)
            .cloned()
            .ok_or_else(|| syntax(self.src, "unexpected end"))?;
        self.i += 1;
        Ok(match tok {
            Tok::Num(n) => Expr::Lit(num(n)),
            Tok::Str(s) => Expr::Lit(Value::String(s)),
            Tok::Ident(s) if s == "true" || s == "false" => Expr::Lit(Value::Bool(s == "true")),
            Tok::Ident(s) if s == "null" => Expr::Lit(Value::Null),
            Tok::Ident(s) if self.eat("(") => {
                let name = s.to_lowercase();
                let mut args = Vec::new();
                if !self.eat(")") {
                    loop {
                        args.push(self.or()?);
                        if self.eat(")") {
                            break;
                        }
                        self.expect(",")?;
                    }
                }
                let Some((_, min, max)) = FUNCTIONS.iter().find(|f| f.0 == name) else {
                    return Err(EvalErr::Unsupported(format!(
                        "function `{s}()` in `{}`",
                        self.src
                    )));
                };
                if args.len() < *min || args.len() > *max {
                    return Err(syntax(
                        self.src,
                        &format!("wrong number of arguments to `{s}()`"),
                    ));
                }
                Expr::Call(name, args)
            }
            Tok::Ident(s) => Expr::Ctx(s.to_lowercase()),
            Tok::P("(") => {
                let e = self.or()?;
                self.expect(")")?;
                e
            }
            t => return Err(syntax(self.src, &format!("unexpected token {t:?}"))),
        })
    }
}

fn parse_expr(src: &str) -> Result<Expr, EvalErr> {
    let toks = lex(src)?;
    if toks.is_empty() {
        return Err(syntax(src, "empty expression"));
    }
    let mut p = Parser { toks, i: 0, src };
    let e = p.or()?;
    if p.i != p.toks.len() {
        return Err(syntax(src, "unexpected trailing tokens"));
    }
    Ok(e)
}

fn walk<'a>(e: &'a Expr, f: &mut dyn FnMut(&'a Expr)) {
    f(e);
    match e {
        Expr::Index(a, b) | Expr::Bin(_, a, b) => {
            walk(a, f);
            walk(b, f);
        }
        Expr::Not(a) => walk(a, f),
        Expr::Call(_, args) => args.iter().for_each(|a| walk(a, f)),
        Expr::Lit(_) | Expr::Ctx(_) => {}
    }
}

enum Piece {
    Text(String),
    Expr(Expr),
}

/// Splits `text` at every `${{ ... }}`; a `}}` inside a string literal does not close it.
fn parse_template(text: &str) -> Result<Vec<Piece>, EvalErr> {
    let (mut out, mut rest) = (Vec::new(), text);
    while let Some(start) = rest.find("${{") {
        if start > 0 {
            out.push(Piece::Text(rest[..start].to_string()));
        }
        let body = &rest[start + 3..];
        let (b, mut quoted, mut end) = (body.as_bytes(), false, None);
        for i in 0..b.len() {
            if b[i] == b'\'' {
                quoted = !quoted;
            } else if !quoted && b[i..].starts_with(b"}}") {
                end = Some(i);
                break;
            }
        }
        let end = end.ok_or_else(|| syntax(text, "`${{` without a closing `}}`"))?;
        out.push(Piece::Expr(parse_expr(&body[..end])?));
        rest = &body[end + 2..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest.to_string()));
    }
    Ok(out)
}

/// Builds the condition of an `if:` [syntax: jobs.<job_id>.steps[*].if]. `${{ }}` is optional;
/// text around `${{ }}` makes it a (non-empty, so always true) string, exactly as GitHub turns it
/// into format(). Without a status function it becomes `success() && (<expr>)`
/// [expr: Status check functions].
fn condition_expr(raw: &str) -> Result<Expr, EvalErr> {
    let t = raw.trim();
    let call = |n: &str| Expr::Call(n.into(), vec![]);
    if t.is_empty() {
        return Ok(call("success"));
    }
    let e = if t.contains("${{") {
        let mut pieces = parse_template(t)?;
        if let [Piece::Expr(_)] = pieces.as_slice() {
            let Some(Piece::Expr(e)) = pieces.pop() else {
                unreachable!()
            };
            e
        } else {
            let (mut fmt, mut args) = (String::new(), vec![Expr::Lit(Value::Null)]);
            for p in pieces {
                match p {
                    Piece::Text(s) => fmt.push_str(&s.replace('{', "{{").replace('}', "}}")),
                    Piece::Expr(e) => {
                        fmt.push_str(&format!("{{{}}}", args.len() - 1));
                        args.push(e);
                    }
                }
            }
            args[0] = Expr::Lit(Value::String(fmt));
            Expr::Call("format".into(), args)
        }
    } else {
        parse_expr(t)?
    };
    let mut has_status = false;
    walk(
        &e,
        &mut |n| {
            has_status |= matches!(n, Expr::Call(f, _) if STATUS_FUNCTIONS.contains(&f.as_str()))
        },
    );
    Ok(if has_status {
        e
    } else {
        Expr::Bin(Op::And, Box::new(call("success")), Box::new(e))
    })
}

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

fn render(text: &str, ctx: &Contexts) -> Result<String, EvalErr> {
    let mut out = String::new();
    for p in parse_template(text)? {
        match p {
            Piece::Text(s) => out.push_str(&s),
            Piece::Expr(e) => out.push_str(&to_str(&eval(&e, ctx)?)),
        }
    }
    Ok(out)
}

fn num(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9e15 {
        Value::from(x as i64) // so toJSON(1) is "1", not "1.0"
    } else {
        serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
    }
}

/// .NET "G15" number formatting, as the runner uses: 15 significant digits, no trailing zeros.
fn fmt_num(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    if x.fract() == 0.0 && x.abs() < 1e15 {
        return format!("{}", x as i64);
    }
    let exp = x.abs().log10().floor() as i32;
    if (-5..15).contains(&exp) {
        let s = format!("{:.*}", (14 - exp).max(0) as usize, x);
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        let s = format!("{:.14e}", x);
        let (mantissa, e) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        let e: i32 = e.parse().unwrap_or(0);
        format!("{mantissa}E{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
    }
}

/// Conversion to string [expr: Literals; runner EvaluationResult.ConvertToString]: null -> '',
/// booleans -> true/false, numbers G15, and objects/arrays -> 'Object'/'Array' (not JSON; use toJSON).
fn to_str(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => fmt_num(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => s.clone(),
        Value::Array(_) => "Array".into(),
        Value::Object(_) => "Object".into(),
    }
}

/// Falsy: false, 0, -0, NaN, '', null [expr: Operators].
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0 && !x.is_nan()),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

/// String -> number like JavaScript's Number(): trimmed, '' is 0, hex 0x.., otherwise NaN.
fn parse_number(s: &str) -> f64 {
    let s = s.trim();
    if s.is_empty() {
        0.0
    } else if let Some(hex) = s.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).map_or(f64::NAN, |n| n as f64)
    } else if s == "Infinity" || s == "-Infinity" {
        if s.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        }
    } else if s.chars().all(|c| "0123456789.eE+-".contains(c)) {
        s.parse().unwrap_or(f64::NAN)
    } else {
        f64::NAN
    }
}

/// A primitive for comparisons (NaN needs representing, which serde_json cannot).
#[derive(Debug)]
enum Prim {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Obj,
}

fn prim(v: &Value) -> Prim {
    match v {
        Value::Null => Prim::Null,
        Value::Bool(b) => Prim::Bool(*b),
        Value::Number(n) => Prim::Num(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => Prim::Str(s.clone()),
        _ => Prim::Obj,
    }
}

fn prim_num(p: &Prim) -> f64 {
    match p {
        Prim::Null => 0.0,
        Prim::Bool(b) => *b as u8 as f64,
        Prim::Num(n) => *n,
        Prim::Str(s) => parse_number(s),
        Prim::Obj => f64::NAN,
    }
}

/// Loose-equality coercion [expr: Operators]: when types differ, null/bool/string become numbers
/// (runner EvaluationResult.CoerceTypes); objects are never coerced.
fn coerce(a: &Value, b: &Value) -> (Prim, Prim) {
    let (mut a, mut b) = (prim(a), prim(b));
    loop {
        match (&a, &b) {
            _ if std::mem::discriminant(&a) == std::mem::discriminant(&b) => return (a, b),
            (Prim::Num(_), Prim::Str(_)) => b = Prim::Num(prim_num(&b)),
            (Prim::Str(_), Prim::Num(_)) => a = Prim::Num(prim_num(&a)),
            (Prim::Bool(_) | Prim::Null, _) => a = Prim::Num(prim_num(&a)),
            (_, Prim::Bool(_) | Prim::Null) => b = Prim::Num(prim_num(&b)),
            _ => return (a, b),
        }
    }
}

fn upper(s: &str) -> String {
    s.to_uppercase() // ordinal-ignore-case, as the runner compares strings
}

fn loose_eq(a: &Value, b: &Value) -> bool {
    match coerce(a, b) {
        (Prim::Null, Prim::Null) => true,
        (Prim::Num(x), Prim::Num(y)) => x == y, // NaN is never equal
        (Prim::Str(x), Prim::Str(y)) => upper(&x) == upper(&y),
        (Prim::Bool(x), Prim::Bool(y)) => x == y,
        _ => false, // objects/arrays are equal only when the same instance
    }
}

fn loose_order(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    match coerce(a, b) {
        (Prim::Num(x), Prim::Num(y)) => x.partial_cmp(&y),
        (Prim::Str(x), Prim::Str(y)) => Some(upper(&x).cmp(&upper(&y))),
        (Prim::Bool(x), Prim::Bool(y)) => Some(x.cmp(&y)),
        _ => None,
    }
}

fn is_primitive(v: &Value) -> bool {
    !matches!(v, Value::Array(_) | Value::Object(_))
}

fn index(base: &Value, key: &Value, case_sensitive: bool) -> Option<Value> {
    match base {
        Value::Object(m) => {
            let k = to_str(key);
            let hit = m.get(&k);
            let hit = hit.or_else(|| {
                (!case_sensitive)
                    .then(|| {
                        m.iter()
                            .find(|(n, _)| upper(n) == upper(&k))
                            .map(|(_, v)| v)
                    })
                    .flatten()
            });
            hit.cloned()
        }
        Value::Array(a) => {
            let n = prim_num(&prim(key));
            (n.fract() == 0.0 && n >= 0.0)
                .then(|| a.get(n as usize).cloned())
                .flatten()
        }
        _ => None,
    }
}

fn eval(e: &Expr, ctx: &Contexts) -> Result<Value, EvalErr> {
    match e {
        Expr::Lit(v) => Ok(v.clone()),
        Expr::Ctx(name) => ctx.values.get(name).cloned().ok_or_else(|| {
            EvalErr::Unsupported(format!(
                "context `{name}` (not available to this rehearsal here)"
            ))
        }),
        Expr::Index(base, key) => {
            let (b, k) = (eval(base, ctx)?, eval(key, ctx)?);
            let root = match &**base {
                Expr::Ctx(r) => Some(r.as_str()),
                _ => None,
            };
            // env is case-sensitive on Linux (runner CaseSensitiveDictionaryContextData)
            match index(&b, &k, root == Some("env")) {
                Some(v) => Ok(v),
                None if root.is_some_and(|r| STRICT_ROOTS.contains(&r)) => {
                    Err(EvalErr::Unsupported(format!(
                        "`{}.{}` is not modelled by the rehearsal",
                        root.unwrap_or_default(),
                        to_str(&k)
                    )))
                }
                None => Ok(Value::Null), // missing property: null, formatted as ''
            }
        }
        Expr::Not(x) => Ok(Value::Bool(!truthy(&eval(x, ctx)?))),
        // && and || return an operand's value, short-circuiting [expr: Operators]
        Expr::Bin(Op::And, l, r) => {
            let lv = eval(l, ctx)?;
            if truthy(&lv) {
                eval(r, ctx)
            } else {
                Ok(lv)
            }
        }
        Expr::Bin(Op::Or, l, r) => {
            let lv = eval(l, ctx)?;
            if truthy(&lv) {
                Ok(lv)
            } else {
                eval(r, ctx)
            }
        }
        Expr::Bin(op, l, r) => {
            let (a, b) = (eval(l, ctx)?, eval(r, ctx)?);
            use std::cmp::Ordering::*;
            let ord = loose_order(&a, &b);
            Ok(Value::Bool(match op {
                Op::Eq => loose_eq(&a, &b),
                Op::Ne => !loose_eq(&a, &b),
                Op::Lt => ord == Some(Less),
                Op::Gt => ord == Some(Greater),
                Op::Le => loose_eq(&a, &b) || ord == Some(Less),
                Op::Ge => loose_eq(&a, &b) || ord == Some(Greater),
                Op::And | Op::Or => unreachable!(),
            }))
        }
        Expr::Call(name, args) => call(name, args, ctx),
    }
}

fn call(name: &str, args: &[Expr], ctx: &Contexts) -> Result<Value, EvalErr> {
    let vals = args
        .iter()
        .map(|a| eval(a, ctx))
        .collect::<Result<Vec<_>, _>>()?;
    let both_str = |f: fn(&str, &str) -> bool| {
        let ok = is_primitive(&vals[0]) && is_primitive(&vals[1]);
        Value::Bool(ok && f(&upper(&to_str(&vals[0])), &upper(&to_str(&vals[1]))))
    };
    Ok(match name {
        "contains" => match &vals[0] {
            Value::Array(items) => Value::Bool(items.iter().any(|i| loose_eq(i, &vals[1]))),
            _ => both_str(|a, b| a.contains(b)),
        },
        "startswith" => both_str(|a, b| a.starts_with(b)),
        "endswith" => both_str(|a, b| a.ends_with(b)),
        "format" => Value::String(format_fn(&to_str(&vals[0]), &vals[1..])?),
        "join" => Value::String(match &vals[0] {
            Value::Array(items) => {
                let sep = vals
                    .get(1)
                    .filter(|s| is_primitive(s))
                    .map_or(",".into(), to_str);
                items.iter().map(to_str).collect::<Vec<_>>().join(&sep)
            }
            v if is_primitive(v) => to_str(v),
            _ => String::new(),
        }),
        "tojson" => Value::String(serde_json::to_string_pretty(&vals[0]).unwrap_or_default()),
        "fromjson" => serde_json::from_str(&to_str(&vals[0])).map_err(|e| {
            EvalErr::Runtime(format!(
                "fromJSON: invalid JSON {:?}: {e}",
                to_str(&vals[0])
            ))
        })?,
        "hashfiles" => {
            let ws = ctx
                .workspace
                .as_ref()
                .ok_or_else(|| EvalErr::Unsupported("hashFiles() without a workspace".into()))?;
            Value::String(hash_files(
                ws,
                &vals.iter().map(to_str).collect::<Vec<_>>(),
            )?)
        }
        "success" => Value::Bool(!ctx.job_failed),
        "failure" => Value::Bool(ctx.job_failed),
        "always" => Value::Bool(true),
        "cancelled" => Value::Bool(false), // a rehearsal is never cancelled
        other => return Err(EvalErr::Unsupported(format!("function `{other}()`"))),
    })
}

/// format('{0} {1}', a, b) with `{{` / `}}` escapes [expr: format]; bad strings are errors.
fn format_fn(fmt: &str, args: &[Value]) -> Result<String, EvalErr> {
    let bad = || {
        EvalErr::Runtime(format!(
            "format: invalid format string {fmt:?} for {} argument(s)",
            args.len()
        ))
    };
    let (c, mut out, mut i) = (fmt.chars().collect::<Vec<_>>(), String::new(), 0);
    while i < c.len() {
        match (c[i], c.get(i + 1)) {
            ('{', Some('{')) | ('}', Some('}')) => {
                out.push(c[i]);
                i += 2;
            }
            ('{', _) => {
                let close = c[i..].iter().position(|&x| x == '}').ok_or_else(bad)? + i;
                let idx: usize = c[i + 1..close]
                    .iter()
                    .collect::<String>()
                    .parse()
                    .map_err(|_| bad())?;
                out.push_str(&to_str(args.get(idx).ok_or_else(bad)?));
                i = close + 1;
            }
            ('}', _) => return Err(bad()),
            (ch, _) => {
                out.push(ch);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// hashFiles(patterns...) [expr: hashFiles]: sha256 over the sha256 digests of the matching files
/// under the workspace; '' when none match. As in the runner (@actions/glob): `*`/`?` within a path
/// segment, `**` across segments, dot-files included, a matching directory includes its files,
/// `!pattern` excludes, the last matching pattern wins. Files are hashed in sorted path order
/// (the runner uses directory-walk order; sorting keeps the rehearsal deterministic).
fn hash_files(ws: &Path, patterns: &[String]) -> Result<String, EvalErr> {
    let pats: Vec<(bool, Vec<String>)> = patterns
        .iter()
        .flat_map(|p| {
            p.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .map(|p| {
            let (neg, p) = match p.strip_prefix('!') {
                Some(rest) => (true, rest.to_string()),
                None => (false, p),
            };
            let p = p
                .strip_prefix(&format!("{}/", ws.display()))
                .map(str::to_string)
                .unwrap_or(p);
            (
                neg,
                p.trim_start_matches("./")
                    .split('/')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect(),
            )
        })
        .collect();
    let mut files = Vec::new();
    walk_files(ws, "", &mut files).map_err(|e| EvalErr::Runtime(format!("hashFiles: {e}")))?;
    files.sort();
    let mut outer = Sha256::new();
    let mut any = false;
    for rel in files {
        let segs: Vec<&str> = rel.split('/').collect();
        let mut selected = false;
        for (neg, pat) in &pats {
            let pat: Vec<&str> = pat.iter().map(String::as_str).collect();
            if (1..=segs.len()).any(|n| glob_match(&pat, &segs[..n])) {
                selected = !neg;
            }
        }
        if selected {
            let bytes = fs::read(ws.join(&rel))
                .map_err(|e| EvalErr::Runtime(format!("hashFiles: {rel}: {e}")))?;
            outer.update(Sha256::digest(&bytes));
            any = true;
        }
    }
    Ok(if any {
        outer
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    } else {
        String::new()
    })
}

fn walk_files(dir: &Path, rel: &str, out: &mut Vec<String>) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel_path = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        let ft = entry.file_type()?;
        if ft.is_dir() {
            walk_files(&entry.path(), &rel_path, out)?; // symlinked dirs are not followed
        } else if ft.is_file() || fs::metadata(entry.path()).is_ok_and(|m| m.is_file()) {
            out.push(rel_path);
        }
    }
    Ok(())
}

fn glob_match(pat: &[&str], path: &[&str]) -> bool {
    match pat.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => (0..=path.len()).any(|i| glob_match(rest, &path[i..])),
        Some((p, rest)) => {
            !path.is_empty()
                && seg_match(p.as_bytes(), path[0].as_bytes())
                && glob_match(rest, &path[1..])
        }
    }
}

fn seg_match(p: &[u8], s: &[u8]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some((b'*', rest)) => (0..=s.len()).any(|i| seg_match(rest, &s[i..])),
        Some((b'?', rest)) => !s.is_empty() && seg_match(rest, &s[1..]),
        Some((c, rest)) => s.first() == Some(c) && seg_match(rest, &s[1..]),
    }
}

// ───────────────────────────── workflow model ─────────────────────────────

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
        }
    }
}

/// Per-rehearsal state that steps change.
struct JobState {
    env: BTreeMap<String, String>, // workflow env + job env + GITHUB_ENV, in that precedence
    path: Vec<String>,             // GITHUB_PATH additions, latest last
    summary: String,
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
        let (outcome, outputs, stdout, stderr, exit_code) = (
            run.outcome,
            run.outputs,
            run.stdout,
            run.stderr,
            run.exit_code,
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
    for (k, v) in &step.env {
        env.insert(k.clone(), rt!(render(v, ctx), false));
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
    Ok(StepRun {
        outcome,
        continue_on_error,
        outputs,
        stdout,
        stderr,
        exit_code,
    })
}

// ───────────────────────────── tests ─────────────────────────────

#[cfg(test)]
mod tests {
    use super::*;

    fn gh() -> GithubContext {
        GithubContext {
            repository: "acme/widgets".into(),
            ref_name: "main".into(),
            token: "ghs_test".into(),
            api_url: "https://api.github.com".into(),
            server_url: "https://github.com".into(),
            actor: "octocat".into(),
            run_id: 42,
        }
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// A fresh temp dir with ws/, tmp/ and wf.yml.
    fn fixture(tag: &str, yaml: &str) -> Rehearsal {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let root = std::env::temp_dir().join(format!("wfr-{}-{tag}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("ws")).unwrap();
        fs::create_dir_all(root.join("tmp")).unwrap();
        fs::write(root.join("wf.yml"), yaml).unwrap();
        Rehearsal {
            workflow: root.join("wf.yml"),
            job: None,
            inputs: BTreeMap::new(),
            secrets: BTreeMap::new(),
            vars: BTreeMap::new(),
            github: gh(),
            workspace: root.join("ws"),
            runner_temp: root.join("tmp"),
            extra_env: BTreeMap::new(),
        }
    }

    type Call = (String, BTreeMap<String, String>, BTreeMap<String, String>);

    #[derive(Default)]
    struct Recorder {
        calls: Vec<Call>,
        reply: BTreeMap<String, String>,
    }

    impl Actions for Recorder {
        fn run(
            &mut self,
            uses: &str,
            with: &BTreeMap<String, String>,
            env: &BTreeMap<String, String>,
            _: &Rehearsal,
        ) -> Result<BTreeMap<String, String>, String> {
            self.calls
                .push((uses.to_string(), with.clone(), env.clone()));
            if uses.starts_with("fail/") {
                Err("action failed on purpose".into())
            } else {
                Ok(self.reply.clone())
            }
        }
    }

    fn run(r: &Rehearsal) -> Report {
        rehearse(r, &mut Recorder::default()).expect("rehearsal should run")
    }

    #[test]
    fn outputs_including_multiline_flow_into_later_env() {
        let r = fixture(
            "outputs",
            r#"
on: workflow_dispatch
jobs:
  only:
    runs-on: ubuntu-latest
    steps:
      - id: produce
        run: |
          echo "single=one" >> "$GITHUB_OUTPUT"
          {
            echo "multi<<EOF_MARK"
            echo "line 1"
            echo "line=2 <<not a delimiter"
            echo "EOF_MARK"
          } >> "$GITHUB_OUTPUT"
      - id: consume
        env:
          S: ${{ steps.produce.outputs.single }}
          M: ${{ steps.produce.outputs.multi }}
        run: printf '%s|%s' "$S" "$M"
"#,
        );
        let rep = run(&r);
        assert!(rep.succeeded, "{rep:?}");
        assert_eq!(
            rep.step("produce").outputs["multi"],
            "line 1\nline=2 <<not a delimiter"
        );
        assert_eq!(
            rep.step("consume").stdout,
            "one|line 1\nline=2 <<not a delimiter",
            "{rep:?}"
        );
    }

    #[test]
    fn if_status_functions_and_continue_on_error() {
        let r = fixture(
            "if",
            r#"
on: workflow_dispatch
jobs:
  j:
    runs-on: ubuntu-latest
    steps:
      - { id: soft, continue-on-error: true, run: exit 3 }
      - { id: after_soft, run: echo still-running }
      - { id: text_if, if: "${{ false }} == 'x'", run: echo text around an expression is a non-empty string }
      - id: check_soft
        if: steps.soft.outcome == 'failure' && steps.soft.conclusion == 'success'
        run: echo soft-ok
      - { id: hard, run: exit 1 }
      - { id: skipped_default, run: echo should-not-run }
      - { id: on_failure, if: failure(), run: echo failure-seen }
      - { id: skipped_success, if: "${{ success() }}", run: echo nope }
      - { id: on_always, if: always(), run: echo always-ran }
      - { id: implicit_success, if: "github.ref_name == 'main'", run: echo nope }
      - { id: not_cancelled, if: "!cancelled() && job.status == 'failure'", run: echo yes }
"#,
        );
        let rep = run(&r);
        use Outcome::*;
        let expect = [
            ("soft", Failure, Success),
            ("after_soft", Success, Success),
            ("text_if", Success, Success),
            ("check_soft", Success, Success),
            ("hard", Failure, Failure),
            ("skipped_default", Skipped, Skipped),
            ("on_failure", Success, Success),
            ("skipped_success", Skipped, Skipped),
            ("on_always", Success, Success),
            ("implicit_success", Skipped, Skipped),
            ("not_cancelled", Success, Success),
        ];
        for (id, outcome, conclusion) in expect {
            let s = rep.step(id);
            assert_eq!(
                (s.outcome, s.conclusion),
                (outcome, conclusion),
                "step {id}\n{rep:?}"
            );
        }
        assert_eq!(rep.step("check_soft").stdout, "soft-ok\n");
        assert!(!rep.succeeded);
        let shown = format!("{rep:?}");
        assert!(
            shown.contains("#0 [failure -> success] Run exit 3 (id: soft) (exit code 3)"),
            "{shown}"
        );
    }

    #[test]
    fn expression_semantics() {
        let mut ctx = Contexts::new(&gh(), &map(&[("q", "x")]));
        ctx.set("vars", json!({ "SET": "7" }));
        let ev = |t: &str| evaluate_template(t, &ctx).unwrap();
        assert_eq!(
            ev("${{ vars.MISSING || '40' }}/${{ vars.SET || '40' }}"),
            "40/7"
        );
        assert_eq!(
            ev("${{ 'Hello' == 'hELLO' }} ${{ 'a' != 'A' }}"),
            "true false"
        );
        assert_eq!(ev("${{ '1' == 1 }} ${{ null == 0 }} ${{ true == 1 }} ${{ 'abc' == 0 }} ${{ '' == 0 }}"), "true true true false true");
        assert_eq!(
            ev("${{ 1 && 'x' }}|${{ 0 && 'x' }}|${{ !'' }}|${{ null }}|${{ 1.50 }}|${{ 0xff }}"),
            "x|0|true||1.5|255"
        );
        assert_eq!(
            ev("${{ 2 < 10 }} ${{ '2' < '10' }} ${{ 'b' >= 'A' }}"),
            "true false true"
        );
        assert_eq!(ev("${{ format('{0}-{{x}}-{1}', 'a', 2) }}"), "a-{x}-2");
        assert_eq!(ev("${{ contains('Hello World', 'WORLD') }} ${{ startsWith('Hello', 'he') }} ${{ endsWith('a.RS', '.rs') }}"), "true true true");
        assert_eq!(
            ev("${{ github.repository_owner }} ${{ github.event.inputs.q }} ${{ inputs['q'] }}"),
            "acme x x"
        );
        assert_eq!(ev("${{ join(fromJSON('[1, \"a\", true]'), '+') }} ${{ contains(fromJSON('[\"Bug\"]'), 'bug') }}"), "1+a+true true");
        assert_eq!(
            ev("${{ toJSON(fromJSON('{\"a\":[1]}')) }}"),
            "{\n  \"a\": [\n    1\n  ]\n}"
        );
        // Objects format as GitHub formats them, not as JSON.
        assert_eq!(
            ev("${{ fromJSON('{\"a\":1}') }} ${{ fromJSON('[]') }}"),
            "Object Array"
        );
        assert_eq!(ev("a ${{ '}}' }} b"), "a }} b");
        let err = |t: &str| evaluate_template(t, &ctx).unwrap_err();
        assert!(matches!(
            err("${{ github.sha }}"),
            RehearsalError::Unsupported(_)
        ));
        assert!(matches!(
            err("${{ toUpper('x') }}"),
            RehearsalError::Unsupported(_)
        ));
        assert!(matches!(
            err("${{ \"double\" }}"),
            RehearsalError::Expression(_)
        ));
        assert!(matches!(
            err("${{ format('{1}', 'a') }}"),
            RehearsalError::Expression(_)
        ));
    }

    #[test]
    fn or_default_and_case_insensitive_compare_in_a_workflow() {
        let mut r = fixture(
            "or",
            r#"
on:
  workflow_dispatch:
    inputs:
      mode: { type: choice, options: [Fast, slow], default: Fast }
env:
  TURNS: ${{ vars.MAX_TURNS || '40' }}
jobs:
  j:
    steps:
      - { id: fast, if: "inputs.mode == 'FAST'", run: echo "turns=$TURNS" }
"#,
        );
        let rep = run(&r);
        assert_eq!(rep.step("fast").stdout, "turns=40\n", "{rep:?}");
        r.vars = map(&[("MAX_TURNS", "12")]);
        assert_eq!(run(&r).step("fast").stdout, "turns=12\n");
    }

    #[test]
    fn from_json_property_access_and_runtime_error() {
        let mut r = fixture(
            "fromjson",
            r#"
on:
  workflow_dispatch:
    inputs:
      payload: { required: true }
jobs:
  j:
    steps:
      - id: read
        run: echo "${{ fromJSON(inputs.payload).name }} ${{ fromJSON(inputs.payload)['tags'][1] }} ${{ fromJSON(inputs.payload).nested.deep }}"
      - id: bad
        continue-on-error: true
        run: echo "${{ fromJSON('not json').x }}"
"#,
        );
        r.inputs = map(&[(
            "payload",
            r#"{"name":"Widget","tags":["a","b"],"nested":{"Deep":true}}"#,
        )]);
        let rep = run(&r);
        assert_eq!(rep.step("read").stdout, "Widget b true\n", "{rep:?}");
        assert_eq!(rep.step("bad").outcome, Outcome::Failure);
        assert!(rep.step("bad").stderr.contains("fromJSON"), "{rep:?}");
        assert!(rep.succeeded);
    }

    #[test]
    fn hash_files_empty_and_non_empty() {
        let r = fixture(
            "hash",
            r#"
on: workflow_dispatch
jobs:
  j:
    steps:
      - { id: none, run: "echo \"[${{ hashFiles('nothing/**') }}]\"" }
      - { id: some, run: "echo \"${{ hashFiles('**/*.lock', '!ignored/**') }}\"" }
"#,
        );
        for (path, body) in [
            ("a.lock", "A"),
            ("sub/b.lock", "B"),
            ("ignored/c.lock", "C"),
            ("d.txt", "D"),
        ] {
            let p = r.workspace.join(path);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, body).unwrap();
        }
        let rep = run(&r);
        assert_eq!(rep.step("none").stdout, "[]\n");
        let mut outer = Sha256::new();
        outer.update(Sha256::digest(b"A"));
        outer.update(Sha256::digest(b"B"));
        let expected: String = outer
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(rep.step("some").stdout.trim(), expected, "{rep:?}");
    }

    #[test]
    fn github_env_applies_to_later_steps_and_step_env_wins() {
        let r = fixture(
            "env",
            r#"
on: workflow_dispatch
jobs:
  j:
    steps:
      - id: set
        run: |
          echo "GREETING=hello" >> "$GITHUB_ENV"
          printf 'BODY<<END\nx\ny\nEND\n' >> "$GITHUB_ENV"
          echo "/opt/rehearsal-bin" >> "$GITHUB_PATH"
          echo "same-step:[${GREETING:-}]"
      - id: later
        if: env.GREETING == 'HELLO'
        env:
          FROM_CTX: ${{ env.GREETING }}
        run: printf '%s|%s|%s|%s' "$GREETING" "$BODY" "$FROM_CTX" "${PATH%%:*}"
      - id: override
        env: { GREETING: step-wins }
        run: echo "$GREETING"
"#,
        );
        let rep = run(&r);
        assert_eq!(rep.step("set").stdout, "same-step:[]\n", "{rep:?}");
        assert_eq!(
            rep.step("later").stdout,
            "hello|x\ny|hello|/opt/rehearsal-bin",
            "{rep:?}"
        );
        assert_eq!(rep.step("override").stdout, "step-wins\n");
    }

    #[test]
    fn step_if_sees_the_steps_own_env_and_defaults_apply() {
        let r = fixture(
            "stepenv",
            r##"
on: workflow_dispatch
permissions: { contents: read }
defaults:
  run:
    working-directory: sub
jobs:
  j:
    permissions: { contents: write, pull-requests: write }
    steps:
      - { id: a, if: "env.MODE == 'fast'", env: { MODE: fast }, run: "basename \"$PWD\"; echo \"# Done\" >> \"$GITHUB_STEP_SUMMARY\"" }
"##,
        );
        fs::create_dir_all(r.workspace.join("sub")).unwrap();
        let rep = run(&r);
        assert_eq!(rep.step("a").stdout, "sub\n", "{rep:?}");
        assert_eq!(rep.summary, "# Done\n");
        assert_eq!(
            rep.permissions,
            json!({ "contents": "write", "pull-requests": "write" })
        );
    }

    #[test]
    fn default_shell_has_no_pipefail_but_explicit_bash_does() {
        // [syntax: shell]: unspecified runs `bash -e {0}`; `shell: bash` adds `-o pipefail`.
        let r = fixture(
            "shell",
            r#"
on: workflow_dispatch
jobs:
  j:
    steps:
      - { id: default, run: "false | true" }
      - { id: explicit, shell: bash, continue-on-error: true, run: "false | true" }
"#,
        );
        let rep = run(&r);
        assert_eq!(rep.step("default").outcome, Outcome::Success, "{rep:?}");
        assert_eq!(rep.step("explicit").outcome, Outcome::Failure, "{rep:?}");
    }

    #[test]
    fn unsupported_things_fail_loudly() {
        let cases = [
            ("run: echo ${{ matrix.os }}", "unsupported"),
            ("run: echo ${{ needs.build.outputs.x }}", "unsupported"),
            ("run: echo ${{ toUpper('x') }}", "unsupported"),
            ("run: echo ${{ github.sha }}", "unsupported"),
            (
                "{ if: \"false\", run: \"echo ${{ runner.name }}\" }",
                "unsupported",
            ),
            ("{ shell: pwsh, run: echo hi }", "unsupported"),
            (
                "{ if: \"false\", shell: python, run: print() }",
                "unsupported",
            ),
            ("{ if: \"secrets.TOKEN != ''\", run: echo hi }", "invalid"),
            ("{ run: echo hi, bogus: 1 }", "invalid"),
        ];
        for (step, kind) in cases {
            let yaml = format!("on: workflow_dispatch\njobs:\n  j:\n    steps:\n      - {step}\n");
            let err = rehearse(&fixture("unsup", &yaml), &mut Recorder::default()).unwrap_err();
            let ok = match kind {
                "unsupported" => matches!(err, Unsupported(_)),
                _ => matches!(err, Invalid(_)),
            };
            assert!(ok, "{step}: got {err:?}");
        }
        let env_in_wf_env = "on: workflow_dispatch\nenv: { A: \"${{ env.B }}\" }\njobs: { j: { steps: [ { run: echo } ] } }\n";
        assert!(matches!(
            rehearse(&fixture("unsup", env_in_wf_env), &mut Recorder::default()),
            Err(Invalid(_))
        ));
        let strategy = "on: workflow_dispatch\njobs:\n  j:\n    strategy: { matrix: { a: [1] } }\n    steps: [ { run: echo } ]\n";
        assert!(matches!(
            rehearse(&fixture("unsup", strategy), &mut Recorder::default()),
            Err(Unsupported(_))
        ));
    }

    #[test]
    fn uses_step_gets_evaluated_with_and_its_outputs_flow_on() {
        let mut r = fixture(
            "uses",
            r#"
on:
  workflow_dispatch:
    inputs:
      prompt: { required: true, type: string }
jobs:
  j:
    steps:
      - id: act
        uses: anthropics/claude-code-action@v1
        env: { EXTRA: x }
        with:
          prompt: "Do: ${{ inputs.prompt }}"
          github_token: ${{ secrets.GITHUB_TOKEN }}
          max_turns: ${{ vars.MAX_TURNS || '40' }}
      - { id: next, env: { R: "${{ steps.act.outputs.result }}" }, run: echo "got $R" }
      - { id: broken, uses: fail/action@v0, continue-on-error: true }
"#,
        );
        r.inputs = map(&[("prompt", "fix it")]);
        let mut acts = Recorder {
            reply: map(&[("result", "42")]),
            ..Default::default()
        };
        let rep = rehearse(&r, &mut acts).unwrap();
        let (uses, with, env) = &acts.calls[0];
        assert_eq!(uses, "anthropics/claude-code-action@v1");
        assert_eq!(
            with,
            &map(&[
                ("prompt", "Do: fix it"),
                ("github_token", "ghs_test"),
                ("max_turns", "40")
            ])
        );
        assert_eq!(env["EXTRA"], "x");
        assert!(env.contains_key("GITHUB_OUTPUT"));
        assert_eq!(rep.step("next").stdout, "got 42\n", "{rep:?}");
        assert_eq!(rep.step("broken").outcome, Outcome::Failure);
        assert_eq!(rep.step("broken").stderr, "action failed on purpose");
    }

    #[test]
    fn inputs_are_checked_typed_and_defaulted() {
        let yaml = r#"
on:
  workflow_dispatch:
    inputs:
      title: { required: true }
      dry_run: { type: boolean, default: false }
jobs:
  j:
    steps:
      - { id: wet, if: "!inputs.dry_run", run: "echo \"title: ${{ inputs.title }}\"" }
"#;
        let specs = dispatch_inputs(yaml).unwrap();
        assert_eq!(
            specs["dry_run"],
            InputSpec {
                required: false,
                default: Some("false".into()),
                kind: "boolean".into(),
                options: vec![]
            }
        );
        let mut r = fixture("inputs", yaml);
        r.inputs = map(&[("title", "t"), ("surprise", "1")]);
        let err = rehearse(&r, &mut Recorder::default()).unwrap_err();
        assert!(
            matches!(&err, RehearsalError::Inputs(m) if m.contains("Unexpected inputs")),
            "{err:?}"
        );
        r.inputs = map(&[("dry_run", "true")]);
        assert!(matches!(
            rehearse(&r, &mut Recorder::default()),
            Err(RehearsalError::Inputs(_))
        ));
        // Boolean inputs are booleans, so `!inputs.dry_run` works; substitution is textual, so a
        // crafted title is executed: this is what lets tests catch injection-prone templates.
        r.inputs = map(&[("title", "x\"; echo INJECTED; echo \"")]);
        let rep = run(&r);
        assert!(
            rep.step("wet").stdout.lines().any(|l| l == "INJECTED"),
            "{rep:?}"
        );
        r.inputs.insert("dry_run".into(), "true".into());
        assert_eq!(run(&r).step("wet").outcome, Outcome::Skipped);
    }

    #[test]
    fn run_name_sees_inputs_and_github() {
        let yaml = r#"
run-name: "x ${{ inputs.job_id }}: ${{ inputs.q }}"
on:
  workflow_dispatch:
    inputs:
      job_id: { required: true }
      q: { default: what? }
jobs: { j: { steps: [ { run: echo } ] } }
"#;
        let name = run_name(yaml, &map(&[("job_id", "7")]), &gh()).unwrap();
        assert_eq!(name.as_deref(), Some("x 7: what?"));
        let err = run_name(
            "run-name: ${{ secrets.X }}\non: workflow_dispatch\njobs: {}\n",
            &BTreeMap::new(),
            &gh(),
        )
        .unwrap_err();
        assert!(matches!(err, Invalid(_)), "{err:?}");
        assert_eq!(
            run_name("on: push\njobs: {}\n", &BTreeMap::new(), &gh()).unwrap(),
            None
        );
    }

    #[test]
    fn file_command_parsing() {
        let kv = parse_file_commands("a=1\nb<<X\nl1\nl2\nX\n\nc=x<<y\n").unwrap();
        assert_eq!(
            kv,
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "l1\nl2".into()),
                ("c".into(), "x<<y".into())
            ]
        );
        assert!(parse_file_commands("b<<X\nno end\n").is_err());
        assert!(parse_file_commands("no equals sign\n").is_err());
    }
}
