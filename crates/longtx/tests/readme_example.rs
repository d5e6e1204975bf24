//! README's first example, verbatim and at a person's pace: the `curl`
//! commands of its "from another shell" block run against `longtx serve` on
//! the embedded default, a few seconds apart, and each answer must hold
//! what README shows after it (`...` stands for fields left out).

use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// (command, expected answer) pairs from README's first `sh` block after
/// "from another shell".
fn examples() -> Vec<(String, String)> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let after = &readme[readme
        .find("from another shell")
        .expect("README has the example")..];
    let block = &after[after.find("```sh\n").unwrap() + 6..];
    let block = &block[..block.find("```").unwrap()];
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut command = String::new();
    let mut expected = String::new();
    for line in block.lines() {
        if line.starts_with("curl")
            || (!command.is_empty()
                && expected.is_empty()
                && !line.starts_with('#')
                && !line.is_empty())
        {
            command.push_str(line.trim_end_matches('\\'));
            command.push(' ');
        } else if let Some(json) = line.strip_prefix("# {").map(|j| format!("{{{j}")) {
            expected = json;
        } else if let (Some(rest), false) = (line.strip_prefix("#   "), expected.is_empty()) {
            expected.push_str(rest);
        } else if !command.is_empty() && !expected.is_empty() {
            pairs.push((std::mem::take(&mut command), std::mem::take(&mut expected)));
        }
    }
    if !command.is_empty() {
        pairs.push((command, expected));
    }
    pairs
}

/// `expected` holds in `actual`: every key README shows, with its value.
fn holds(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|av| holds(v, av))),
        (Value::Array(e), Value::Array(a)) => {
            e.len() == a.len() && e.iter().zip(a).all(|(e, a)| holds(e, a))
        }
        (e, a) => e == a,
    }
}

#[tokio::test]
async fn the_first_example_gives_what_readme_shows_at_human_speed() {
    let examples = examples();
    assert_eq!(examples.len(), 3, "{examples:?}");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = longtx_testkit::TempDir::new("readme");
    let mut child = Command::new(env!("CARGO_BIN_EXE_longtx"))
        .arg("serve")
        // As README runs it: from the checkout, where `patterns/` is.
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .env_remove("DATABASE_URL")
        .env_remove("LONGTX_WEBHOOK_TOKEN")
        .env_remove("LONGTX_GITHUB_TOKEN")
        .env_remove("GITHUB_TOKEN")
        .env_remove("LONGTX_GITHUB_APP_ID")
        .env("LONGTX_DATA_DIR", dir.join(".longtx"))
        .env("LONGTX_LISTEN", format!("127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while client
        .get(format!("http://127.0.0.1:{port}/readyz"))
        .send()
        .await
        .map(|r| r.status() != 200)
        .unwrap_or(true)
    {
        assert!(Instant::now() < deadline, "longtx did not become ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for (command, expected) in examples {
        // A person reads the answer before typing the next command.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let command = command.replace("localhost:8080", &format!("127.0.0.1:{port}"));
        let output = tokio::task::spawn_blocking(move || {
            Command::new("bash")
                .arg("-c")
                .arg(&command)
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        let actual: Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)));
        let expected: Value = serde_json::from_str(&expected.replace(",...", ""))
            .unwrap_or_else(|e| panic!("{e}: {expected}"));
        assert!(
            holds(&expected, &actual),
            "README shows\n{expected:#}\nlongtx answered\n{actual:#}"
        );
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
