//! `longtx config check` says "valid" only when `longtx serve` would start:
//! each refusal of `serve` is an error of `config check`, naming the key,
//! and `serve` refuses with the same words before it touches anything.

use std::process::{Command, Output};

fn longtx(args: &[&str], env: &[(&str, &str)], dir: &std::path::Path) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_longtx"));
    cmd.args(args).current_dir(dir);
    for (key, _) in std::env::vars() {
        if key.starts_with("LONGTX_") || key == "DATABASE_URL" || key.starts_with("GITHUB_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("LONGTX_DATA_DIR", dir.join("data"));
    cmd.envs(env.iter().copied());
    cmd.output().unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// What is wrong, the environment that says it, the key named, a word of the fix.
type Refusal = (
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static str,
    &'static str,
);

/// The settings `serve` refuses.
const REFUSED: [Refusal; 9] = [
    (
        "a public address without a token",
        &[("LONGTX_LISTEN", "0.0.0.0:0")],
        "LONGTX_WEBHOOK_TOKEN",
        "listen on 127.0.0.1",
    ),
    (
        "a MySQL DATABASE_URL",
        &[("DATABASE_URL", "mysql://app:pw@db.internal/app")],
        "DATABASE_URL",
        "LONGTX_COLLECT_DSN",
    ),
    (
        "a public URL that is not one",
        &[("LONGTX_PUBLIC_URL", "longtx.internal:8080")],
        "LONGTX_PUBLIC_URL",
        "http(s) URL",
    ),
    (
        "an API URL that is not one",
        &[("LONGTX_GITHUB_API_URL", "api.github.com")],
        "LONGTX_GITHUB_API_URL",
        "http(s) URL",
    ),
    (
        "a broken ignore list",
        &[("LONGTX_IGNORE_LIST", "broken.yaml")],
        "LONGTX_IGNORE_LIST",
        "broken.yaml",
    ),
    (
        "a one-character token beyond loopback",
        &[
            ("LONGTX_WEBHOOK_TOKEN", "t"),
            ("LONGTX_LISTEN", "0.0.0.0:8080"),
        ],
        "LONGTX_WEBHOOK_TOKEN",
        "use 16 or more",
    ),
    (
        "a padded token no Bearer header can carry",
        &[("LONGTX_WEBHOOK_TOKEN", " a-token-of-sixteen-chars ")],
        "LONGTX_WEBHOOK_TOKEN",
        "whitespace at its start or end",
    ),
    (
        "a token holding a zero-width space",
        &[("LONGTX_DASHBOARD_TOKEN", "a-token-of\u{200b}-sixteen-chars")],
        "LONGTX_DASHBOARD_TOKEN",
        "U+200B",
    ),
    (
        "a short GitHub webhook secret beyond loopback",
        &[
            ("LONGTX_WEBHOOK_TOKEN", "a-token-of-sixteen-chars"),
            ("LONGTX_GITHUB_WEBHOOK_SECRET", "abc"),
            ("LONGTX_LISTEN", "0.0.0.0:8080"),
        ],
        "LONGTX_GITHUB_WEBHOOK_SECRET",
        "is 3 characters",
    ),
];

/// On loopback a short token is a warning, not an error: a local trial
/// stays one command.
#[test]
fn a_short_token_on_loopback_is_a_warning() {
    let dir = longtx_testkit::TempDir::new("config-check-short");
    let check = longtx(&["config", "check"], &[("LONGTX_WEBHOOK_TOKEN", "t")], &dir);
    let shown = text(&check);
    assert_eq!(check.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("warning: LONGTX_WEBHOOK_TOKEN: is 1 characters"),
        "{shown}"
    );
}

#[test]
fn every_refusal_of_serve_is_an_error_of_config_check() {
    let dir = longtx_testkit::TempDir::new("config-check");
    std::fs::write(dir.join("broken.yaml"), "ignored: [").unwrap();
    for (what, env, key, fix) in REFUSED {
        let check = longtx(&["config", "check"], env, &dir);
        let shown = text(&check);
        assert_eq!(check.status.code(), Some(1), "{what}: {shown}");
        assert!(
            shown.contains(&format!("error: {key} (")),
            "{what}: {shown}"
        );
        assert!(shown.contains(fix), "{what}: {shown}");
        assert!(shown.contains("would refuse to start"), "{what}: {shown}");
        assert!(
            !shown.contains("pw@"),
            "{what}: a password was shown: {shown}"
        );

        let serve = longtx(&["serve"], env, &dir);
        let refused = text(&serve);
        assert_eq!(serve.status.code(), Some(1), "{what}: {refused}");
        assert!(
            refused.contains(&format!("refusing to start: {key}: ")),
            "{what}: {refused}"
        );
        assert!(
            !dir.join("data").exists(),
            "{what}: serve refused before touching its data"
        );
    }
}

#[test]
fn a_good_configuration_is_a_table_and_valid_and_json_says_the_same() {
    let dir = longtx_testkit::TempDir::new("config-check-good");
    let env = [
        ("LONGTX_WEBHOOK_TOKEN", "s3cret-token-of-24-chars"),
        ("LONGTX_LISTEN", "0.0.0.0:8080"),
    ];
    let check = longtx(&["config", "check"], &env, &dir);
    let shown = text(&check);
    assert_eq!(check.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("LONGTX_WEBHOOK_TOKEN") && shown.contains("<set>"),
        "{shown}"
    );
    assert!(!shown.contains("s3cret-token-of-24-chars"), "{shown}");
    assert!(shown.contains("LONGTX_AGENT_TIMEOUT"), "{shown}");
    assert!(shown.contains("configuration is valid"), "{shown}");

    let json = longtx(&["config", "check", "--json"], &env, &dir);
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["valid"], true);
    assert_eq!(report["settings"]["LONGTX_WEBHOOK_TOKEN"]["value"], "<set>");
    assert_eq!(report["settings"]["LONGTX_WEBHOOK_TOKEN"]["from"], "env");
    assert_eq!(report["settings"]["LONGTX_LISTEN"]["value"], "0.0.0.0:8080");
    assert_eq!(report["settings"]["LONGTX_COOLDOWN"]["from"], "default");
    let bad = longtx(
        &["config", "check", "--json"],
        &[("LONGTX_LISTEN", "0.0.0.0:0")],
        &dir,
    );
    let report: serde_json::Value = serde_json::from_slice(&bad.stdout).unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert_eq!(report["valid"], false);
    assert_eq!(report["problems"][0]["key"], "LONGTX_WEBHOOK_TOKEN");
}

#[test]
fn each_value_says_where_it_came_from() {
    let dir = longtx_testkit::TempDir::new("config-check-from");
    std::fs::write(dir.join("longtx.toml"), "threshold_seconds = 30\n").unwrap();
    std::fs::write(dir.join("token"), "from-a-file\n").unwrap();
    let token_file = dir.join("token");
    let env = [
        ("LONGTX_WEBHOOK_TOKEN_FILE", token_file.to_str().unwrap()),
        ("LONGTX_COOLDOWN", "3d"),
    ];
    let out = longtx(
        &["--config", "longtx.toml", "config", "check", "--json"],
        &env,
        &dir,
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let from = |key: &str| report["settings"][key]["from"].as_str().unwrap().to_owned();
    assert_eq!(from("LONGTX_THRESHOLD_SECONDS"), "longtx.toml");
    assert_eq!(
        report["settings"]["LONGTX_THRESHOLD_SECONDS"]["value"],
        "30"
    );
    assert_eq!(from("LONGTX_WEBHOOK_TOKEN"), "env (*_FILE)");
    assert_eq!(from("LONGTX_COOLDOWN"), "env");
    assert_eq!(from("LONGTX_LISTEN"), "default");
    let table = longtx(&["--config", "longtx.toml", "config", "check"], &env, &dir);
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("LONGTX_THRESHOLD_SECONDS")
                && l.contains("longtx.toml")
                && l.ends_with(" 30")),
        "{table}"
    );
}

/// The shipped `longtx.example.toml` is a valid configuration, and names
/// every key the file may hold (set, or commented out with an example).
#[test]
fn the_example_configuration_is_valid_and_names_every_file_key() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let example = root.join("longtx.example.toml");
    let dir = longtx_testkit::TempDir::new("example");
    let out = longtx(
        &["config", "check", "--config", example.to_str().unwrap()],
        &[],
        &dir,
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("configuration is valid"),
        "{}",
        text(&out)
    );
    let reference = Command::new(env!("CARGO_BIN_EXE_longtx"))
        .args(["config", "reference"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&reference.stdout).into_owned();
    let file = std::fs::read_to_string(&example).unwrap();
    for row in table.lines().skip(2) {
        let keys = row.split('|').nth(1).unwrap_or("");
        for key in keys.split('`').skip(1).step_by(2) {
            assert!(
                file.contains(&format!("\n{key} = ")) || file.contains(&format!("\n# {key} = ")),
                "longtx.example.toml lacks {key}"
            );
        }
    }
}

/// A misspelt key in the file or a misspelt variable names the one meant.
#[test]
fn a_misspelling_is_answered_with_the_setting_meant() {
    let dir = longtx_testkit::TempDir::new("misspelt");
    let file = dir.join("longtx.toml");
    std::fs::write(&file, "treshold_seconds = 50\n").unwrap();
    let in_file = longtx(
        &["config", "check", "--config", file.to_str().unwrap()],
        &[],
        &dir,
    );
    let in_env = longtx(
        &["config", "check"],
        &[("LONGTX_TRESHOLD_SECONDS", "50")],
        &dir,
    );
    assert!(!in_file.status.success());
    assert!(
        text(&in_file).contains("unknown key; did you mean `threshold_seconds`?")
            && text(&in_file).contains("error: treshold_seconds ("),
        "{}",
        text(&in_file)
    );
    assert!(
        text(&in_env).contains(
            "warning: environment: LONGTX_TRESHOLD_SECONDS is not a longtx setting; did you mean LONGTX_THRESHOLD_SECONDS?"
        ),
        "{}",
        text(&in_env)
    );
}

/// A value written in the file is reported as the file's key, with what to
/// write instead.
#[test]
fn a_bad_value_in_the_file_names_the_file_key_and_the_fix() {
    let dir = longtx_testkit::TempDir::new("file-values");
    let file = dir.join("longtx.toml");
    std::fs::write(&file, "cooldown = \"7 days\"\n").unwrap();
    let duration = longtx(
        &["config", "check", "--config", file.to_str().unwrap()],
        &[],
        &dir,
    );
    std::fs::write(&file, "public_url = \"longtx.internal:8080\"\n").unwrap();
    let url = longtx(
        &["config", "check", "--config", file.to_str().unwrap()],
        &[],
        &dir,
    );
    assert!(
        text(&duration).contains("error: cooldown (")
            && text(&duration).contains("invalid duration \"7 days\""),
        "{}",
        text(&duration)
    );
    assert!(
        text(&url).contains("has no scheme: write http://longtx.internal:8080"),
        "{}",
        text(&url)
    );
    assert!(!duration.status.success() && !url.status.success());
}

/// Five different mistakes in one file: five lines in one style, and exit 1.
#[test]
fn five_mistakes_are_five_lines_at_once() {
    let dir = longtx_testkit::TempDir::new("five-cli");
    let file = dir.join("longtx.toml");
    std::fs::write(
        &file,
        "treshold_seconds = 50\nmax_running = \"three\"\npublic_url = \"longtx.internal:8080\"\nwebhook_token = \"  \"\ncooldown = \"7 days\"\n",
    )
    .unwrap();
    let out = longtx(
        &["config", "check", "--config", file.to_str().unwrap()],
        &[],
        &dir,
    );
    let json = longtx(
        &[
            "config",
            "check",
            "--json",
            "--config",
            file.to_str().unwrap(),
        ],
        &[],
        &dir,
    );
    let said = text(&out);
    let errors: Vec<&str> = said.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert_eq!(errors.len(), 5, "{said}");
    for (start, fix) in [
        (
            "error: treshold_seconds (",
            "did you mean `threshold_seconds`",
        ),
        ("error: max_running (", "invalid type"),
        ("error: webhook_token (", "give it a real value"),
        ("error: cooldown (", "for example 7d"),
        (
            "error: LONGTX_PUBLIC_URL (",
            "write http://longtx.internal:8080",
        ),
    ] {
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with(start) && e.contains(fix)),
            "{start} … {fix}: {said}"
        );
    }
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json.status.code(), Some(1));
    assert_eq!(report["ok"], false, "{report}");
    assert_eq!(report["problems"].as_array().unwrap().len(), 5, "{report}");
}
