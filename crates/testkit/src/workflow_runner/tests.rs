//! The rehearsal runner's own tests, each on a small workflow written here.

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

/// A rehearsal in a fresh folder with ws/, tmp/ and wf.yml, which goes
/// when the test ends (pass or fail).
struct Fixture {
    rehearsal: Rehearsal,
    _dir: crate::temp_dir::TempDir,
}

impl std::ops::Deref for Fixture {
    type Target = Rehearsal;
    fn deref(&self) -> &Rehearsal {
        &self.rehearsal
    }
}

impl std::ops::DerefMut for Fixture {
    fn deref_mut(&mut self) -> &mut Rehearsal {
        &mut self.rehearsal
    }
}

fn fixture(tag: &str, yaml: &str) -> Fixture {
    let dir = crate::temp_dir::TempDir::new(&format!("wfr-{tag}"));
    let root = dir.path().to_path_buf();
    fs::create_dir_all(root.join("ws")).unwrap();
    fs::create_dir_all(root.join("tmp")).unwrap();
    fs::write(root.join("wf.yml"), yaml).unwrap();
    let rehearsal = Rehearsal {
        workflow: root.join("wf.yml"),
        job: None,
        inputs: BTreeMap::new(),
        secrets: BTreeMap::new(),
        vars: BTreeMap::new(),
        github: gh(),
        workspace: root.join("ws"),
        runner_temp: root.join("tmp"),
        extra_env: BTreeMap::new(),
    };
    Fixture {
        rehearsal,
        _dir: dir,
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
    assert_eq!(
        ev("${{ '1' == 1 }} ${{ null == 0 }} ${{ true == 1 }} ${{ 'abc' == 0 }} ${{ '' == 0 }}"),
        "true true true false true"
    );
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
