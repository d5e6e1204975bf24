//! The README's run command: `longtx serve` with no DATABASE_URL starts a
//! private PostgreSQL, reuses it on the next start, and stops it on SIGTERM
//! after finishing in-flight work.

use longtx_testkit::payloads::{AmAlert, AmWebhook};
use serde_json::Value;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn temp_dir(name: &str) -> longtx_testkit::TempDir {
    longtx_testkit::TempDir::new(&format!("bin-test-{name}"))
}

fn start(data_dir: &Path, port: u16, extra_env: &[(&str, &str)]) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_longtx"));
    cmd.arg("serve")
        .current_dir(data_dir.parent().unwrap())
        .env_remove("DATABASE_URL")
        .env_remove("LONGTX_WEBHOOK_TOKEN")
        .env("LONGTX_DATA_DIR", data_dir)
        .env("LONGTX_LISTEN", format!("127.0.0.1:{port}"))
        .env("LONGTX_IGNORE_LIST", data_dir.join("ignore-list.yaml"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("the longtx binary starts")
}

async fn wait_ready(client: &reqwest::Client, base: &str, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(r) = client.get(format!("{base}/readyz")).send().await {
            if r.status() == 200 {
                return;
            }
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("longtx exited early with {status}: {}", stderr_of(child));
        }
        assert!(Instant::now() < deadline, "longtx did not become ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn stderr_of(child: &mut Child) -> String {
    use std::io::Read;
    let mut text = String::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut text).ok();
    }
    text
}

fn terminate(child: &mut Child) -> std::process::ExitStatus {
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap()
}

async fn post_alert(client: &reqwest::Client, base: &str, source: &str) -> Value {
    let body = AmWebhook::with(AmAlert::firing(source).value(150.0)).to_json();
    let r = client
        .post(format!("{base}/webhooks/alertmanager"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

#[tokio::test]
async fn serve_runs_on_the_embedded_default_and_keeps_its_data() {
    let folder = temp_dir("embedded");
    let data_dir = folder.join(".longtx");
    let client = reqwest::Client::new();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");

    let mut first = start(&data_dir, port, &[]);
    wait_ready(&client, &base, &mut first).await;
    let created = post_alert(&client, &base, "Embedded::Worker").await;
    assert_eq!(created["results"][0]["outcome"], "created");
    let status = terminate(&mut first);
    let log = stderr_of(&mut first);
    assert!(status.success(), "clean exit on SIGTERM: {status}\n{log}");
    assert!(log.contains("embedded PostgreSQL stopped"), "{log}");
    assert!(
        !data_dir.join("pg/postmaster.pid").exists(),
        "the server was stopped"
    );

    // The next start reuses the cluster: the job is still there.
    let mut second = start(&data_dir, port, &[]);
    wait_ready(&client, &base, &mut second).await;
    let again = post_alert(&client, &base, "Embedded::Worker").await;
    assert_eq!(again["results"][0]["outcome"], "deduped");
    assert_eq!(
        again["results"][0]["job_id"],
        created["results"][0]["job_id"]
    );
    assert!(terminate(&mut second).success());
}

#[tokio::test]
async fn a_public_address_without_a_token_is_refused() {
    let folder = temp_dir("public");
    let data_dir = folder.join(".longtx");
    let output = Command::new(env!("CARGO_BIN_EXE_longtx"))
        .arg("serve")
        .env_remove("LONGTX_WEBHOOK_TOKEN")
        .env("LONGTX_DATA_DIR", &data_dir)
        .env("LONGTX_LISTEN", "0.0.0.0:0")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("LONGTX_WEBHOOK_TOKEN: unset while LONGTX_LISTEN is 0.0.0.0"),
        "{stderr}"
    );
    assert!(
        !data_dir.join("pg").exists(),
        "refused before touching the database"
    );
}

#[tokio::test]
async fn a_broken_configuration_names_the_key() {
    let output = Command::new(env!("CARGO_BIN_EXE_longtx"))
        .arg("serve")
        .env("LONGTX_COOLDOWN", "a while")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("LONGTX_COOLDOWN"), "{stderr}");
}

#[tokio::test]
async fn migrate_applies_and_exits() {
    let folder = temp_dir("migrate");
    let data_dir = folder.join(".longtx");
    let output = Command::new(env!("CARGO_BIN_EXE_longtx"))
        .arg("migrate")
        .env_remove("DATABASE_URL")
        .env("LONGTX_DATA_DIR", &data_dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(data_dir.join("pg/PG_VERSION").exists());
    assert!(
        !data_dir.join("pg/postmaster.pid").exists(),
        "migrate stops the server it started"
    );
}

/// The serving process owns its embedded cluster for its whole life.
/// `doctor` (which the GitHub set-up tells the operator to run), `migrate`
/// and `collect` on the same data dir use the running server and leave it
/// running; a second `serve` there refuses, naming the first. Once, the
/// first of these took the cluster over and stopped serve's database.
#[tokio::test]
async fn other_commands_on_a_serving_data_dir_leave_its_database_running() {
    let folder = temp_dir("one-owner");
    let data_dir = folder.join(".longtx");
    let client = reqwest::Client::new();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut serving = start(&data_dir, port, &[]);
    wait_ready(&client, &base, &mut serving).await;
    let ready = || async {
        client
            .get(format!("{base}/readyz"))
            .send()
            .await
            .map(|r| r.status().as_u16())
            .unwrap_or(0)
    };
    let command = |args: &[&str], extra: &[(&str, String)]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_longtx"));
        cmd.args(args)
            .current_dir(data_dir.parent().unwrap())
            .env_remove("DATABASE_URL")
            .env_remove("LONGTX_WEBHOOK_TOKEN")
            .env_remove("LONGTX_GITHUB_TOKEN")
            .env_remove("GITHUB_TOKEN")
            .env("LONGTX_DATA_DIR", &data_dir)
            .env("LONGTX_IGNORE_LIST", data_dir.join("ignore-list.yaml"));
        for (k, v) in extra {
            cmd.env(k, v);
        }
        cmd.output().expect("the longtx binary runs")
    };
    let said = |o: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };

    let doctor = command(&["doctor", "--allow-dry-run"], &[]);
    assert!(
        said(&doctor).contains("local.database"),
        "{}",
        said(&doctor)
    );
    assert_eq!(ready().await, 200, "after doctor: {}", said(&doctor));
    // Its log says so too: a guest never claims to have stopped the server.
    assert!(
        said(&doctor).contains("left running for its owner")
            && !said(&doctor).contains("embedded PostgreSQL stopped"),
        "{}",
        said(&doctor)
    );

    let migrate = command(&["migrate"], &[]);
    assert!(migrate.status.success(), "{}", said(&migrate));
    assert_eq!(ready().await, 200, "after migrate");

    let socket = [data_dir.join("pg-socket")]
        .into_iter()
        .find(|d| d.exists())
        .expect("the cluster's socket folder");
    let dsn = format!(
        "postgres://longtx@localhost/postgres?host={}",
        socket.display()
    );
    let collect = command(&["collect", "--once", "--dsn", &dsn], &[]);
    assert!(collect.status.success(), "{}", said(&collect));
    assert_eq!(ready().await, 200, "after collect");

    let second_port = free_port();
    let second = command(
        &["serve"],
        &[("LONGTX_LISTEN", format!("127.0.0.1:{second_port}"))],
    );
    assert!(!second.status.success());
    assert!(
        said(&second).contains("already serves from LONGTX_DATA_DIR")
            && said(&second).contains(&format!("pid {}", serving.id())),
        "{}",
        said(&second)
    );
    assert_eq!(ready().await, 200, "after a second serve");
    // Still writable, not only answering.
    let created = post_alert(&client, &base, "Owner::Worker").await;
    assert_eq!(created["results"][0]["outcome"], "created");
    assert!(terminate(&mut serving).success());
}
