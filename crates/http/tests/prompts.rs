//! Every new job gets its prompt, rendered in the background after intake
//! answered, stored with its revision and served as markdown.

use longtx_prompt::{PromptSources, DEFAULT_BUDGET_BYTES};
use longtx_testkit::payloads::{AmAlert, AmWebhook};
use longtx_testkit::TestApp;
use std::path::{Path, PathBuf};

fn shipped_patterns() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../patterns")
}

fn sources(template: PathBuf, repo: Option<PathBuf>) -> PromptSources {
    PromptSources {
        patterns_dir: shipped_patterns(),
        template,
        repo,
        budget_bytes: DEFAULT_BUDGET_BYTES,
    }
}

fn checkout() -> longtx_testkit::TempDir {
    let root = longtx_testkit::TempDir::new("http-prompt-repo");
    let file = root.join("app/workers/mailer_worker.rb");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "class MailerWorker\n  def perform(id)\n    User.transaction do\n      UserMailer.hello(id).deliver_now\n    end\n  end\nend\n").unwrap();
    root
}

async fn create_job(app: &TestApp, source: &str) -> i64 {
    let hook = AmWebhook::with(AmAlert::firing(source).table("users").value(190.0));
    let body: serde_json::Value = app
        .post_json("/webhooks/alertmanager", &hook.to_json())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["results"][0]["outcome"], "created", "{body}");
    body["results"][0]["job_id"].as_i64().unwrap()
}

#[tokio::test]
async fn a_created_job_gets_a_stored_prompt_with_its_revision() {
    let checkout = checkout();
    let app = TestApp::builder()
        .prompts(sources(
            shipped_patterns().join("_prompt.md.tera"),
            Some(checkout.to_path_buf()),
        ))
        .spawn()
        .await;
    let id = create_job(&app, "MailerWorker").await;
    let response = app.wait_for_prompt(id).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/markdown; charset=utf-8"
    );
    let revision = response.headers()["x-longtx-prompt-revision"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(revision.starts_with("patterns sha256:"), "{revision}");
    let sha = response.headers()["x-longtx-prompt-sha256"]
        .to_str()
        .unwrap()
        .to_owned();
    let text = response.text().await.unwrap();
    assert!(
        text.contains("`app/workers/mailer_worker.rb` line 2"),
        "{text}"
    );
    assert!(text.contains(&format!("longtx job: {id}")));
    assert!(text.contains("threshold 100 s"));
    assert_eq!(sha.len(), 64);

    let (_, job) = app.get_json(&format!("/api/jobs/{id}")).await;
    assert_eq!(job["job"]["prompt_revision"], revision.as_str());
    assert_eq!(job["job"]["prompt_error"], serde_json::Value::Null);
}

#[tokio::test]
async fn a_broken_template_is_recorded_on_the_job_and_the_service_keeps_going() {
    let dir = longtx_testkit::TempDir::new("broken-template");
    let template = dir.join("_prompt.md.tera");
    std::fs::write(&template, "{% for x in %}broken").unwrap();
    let app = TestApp::builder()
        .prompts(sources(template, None))
        .spawn()
        .await;
    let id = create_job(&app, "Broken::Worker").await;
    let response = app.wait_for_prompt(id).await;
    assert_eq!(response.status(), 409);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"], "prompt_failed");
    assert!(
        body["detail"].as_str().unwrap().contains("does not parse"),
        "{body}"
    );
    let (_, job) = app.get_json(&format!("/api/jobs/{id}")).await;
    assert!(job["job"]["prompt_error"]
        .as_str()
        .unwrap()
        .contains("does not parse"));
    // Intake still works.
    create_job(&app, "Other::Worker").await;
}

#[tokio::test]
async fn a_hostile_source_appears_literally_in_its_prompt() {
    let app = TestApp::builder()
        .prompts(sources(shipped_patterns().join("_prompt.md.tera"), None))
        .spawn()
        .await;
    let id = create_job(&app, "{{ 7*7 }}#{% raw %}").await;
    let text = app.wait_for_prompt(id).await.text().await.unwrap();
    assert!(text.contains("`{{ 7*7 }}#{% raw %}`"), "{text}");
}

#[tokio::test]
async fn an_unknown_job_has_no_prompt() {
    let app = TestApp::spawn().await;
    let (status, body) = app.get_json("/api/jobs/4242/prompt").await;
    assert_eq!(
        (status.as_u16(), body["error"].as_str()),
        (404, Some("not_found"))
    );
}
