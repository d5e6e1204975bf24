//! After the merge: alerts for a merged source are counted, a quiet window
//! verifies the fix, an alert after the deploy grace marks it regressed and
//! opens a new job at once (its prompt naming the earlier PR), and a second
//! regression is left to a person.

mod tracking;

use longtx_testkit::github_events::PrEventBuilder;
use longtx_testkit::payloads::{AmAlert, AmWebhook};
use serde_json::Value;
use std::time::Duration;
use tracking::Tracking;

const SOURCE: &str = "admin/orders#update";

/// Fires one alert for `source` lasting `seconds`; the intake's answer.
async fn alert(t: &Tracking, seconds: f64) -> Value {
    let hook = AmWebhook::with(AmAlert::firing(SOURCE).table("orders").value(seconds));
    let response = t
        .app
        .post_json("/webhooks/alertmanager", &hook.to_json())
        .await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    body["results"][0].clone()
}

/// A job whose fix PR (`number`) is merged; returns the job.
async fn merged_fix(t: &Tracking, number: u64) -> i64 {
    t.github.set_pull_files(
        number,
        &[("app/controllers/admin/orders_controller.rb", 14)],
    );
    let job = t.job_with_agent_running(SOURCE).await;
    let opened = PrEventBuilder::opened(job, number).to_json();
    t.deliver("pull_request", &format!("open-{job}"), &opened)
        .await;
    // The reviewer choice is made (whoever it found): the PR's files are
    // recorded with it.
    let chosen = t
        .wait_for(job, |j| {
            matches!(j.reviewers_state.as_deref(), Some("requested" | "none"))
        })
        .await;
    assert!(chosen.reviewers.is_some(), "{chosen:?}");
    let merged = PrEventBuilder::opened(job, number).closed(true).to_json();
    let (_, answer) = t
        .deliver("pull_request", &format!("merge-{job}"), &merged)
        .await;
    assert_eq!(answer["detail"], "in_review -> merged", "{answer}");
    job
}

/// Moves a merge back in time, as if it happened `ago` before now.
async fn merged_ago(t: &Tracking, job: i64, ago: Duration) {
    let mut conn = t.app.db.connect().await;
    longtx_testkit::sqlx::query(
        "UPDATE jobs SET ended_at = now() - make_interval(secs => $2) WHERE id = $1",
    )
    .bind(job)
    .bind(ago.as_secs_f64())
    .execute(&mut conn)
    .await
    .unwrap();
}

const HOUR: Duration = Duration::from_secs(3600);

#[tokio::test]
async fn alerts_after_a_merge_are_counted_and_a_quiet_window_verifies_the_fix() {
    let mut repo = tracking::repository_owned_by_alice("after-merge-quiet");
    let t = Tracking::start(&repo.bare(), |_| {}).await;
    let job = merged_fix(&t, 51).await;
    // The old code still runs for a while after the merge: counted, no more.
    let answer = alert(&t, 130.0).await;
    assert_eq!(answer["outcome"], "deduped", "{answer}");
    assert_eq!(answer["job_id"], job);
    assert!(
        answer["detail"].as_str().unwrap().contains("deploy grace"),
        "{answer}"
    );
    let row = t.job(job).await;
    assert_eq!(row.state, "merged");
    assert_eq!(row.recurrence_count, 1);
    assert_eq!(row.recurrence_max_seconds, Some(130.0));
    assert!(row.first_recurrence_at.is_some());

    let grace = 2 * HOUR;
    let window = Duration::from_secs(7 * 86_400);
    assert!(
        t.app
            .store
            .verify_quiet_fixes(grace, window)
            .await
            .unwrap()
            .is_empty(),
        "too early"
    );
    merged_ago(&t, job, window + grace + HOUR).await;
    assert_eq!(
        t.app.store.verify_quiet_fixes(grace, window).await.unwrap(),
        vec![job]
    );
    let row = t.job(job).await;
    assert_eq!(row.state, "verified");
    assert!(row.verified_at.is_some());

    // The fix held through its window: an alert past the cooldown is a new
    // problem, with a job of its own.
    let later = alert(&t, 120.0).await;
    assert_eq!(later["outcome"], "created", "{later}");
    assert_eq!(t.job(job).await.state, "verified");
}

#[tokio::test]
async fn an_alert_after_the_grace_regresses_the_fix_and_a_new_job_names_the_earlier_pr() {
    let mut repo = tracking::repository_owned_by_alice("after-merge-regressed");
    let t = Tracking::start(&repo.bare(), |_| {}).await;
    let first = merged_fix(&t, 61).await;
    merged_ago(&t, first, 3 * HOUR).await;
    let answer = alert(&t, 240.0).await;
    assert_eq!(
        answer["outcome"], "created",
        "no cooldown for a regression: {answer}"
    );
    let second = answer["job_id"].as_i64().unwrap();
    assert!(
        answer["detail"].as_str().unwrap().contains("regressed"),
        "{answer}"
    );
    let old = t.job(first).await;
    assert_eq!(old.state, "regressed");
    assert_eq!(old.recurrence_max_seconds, Some(240.0));
    let new = t.wait_for(second, |j| j.prompt_rendered_at.is_some()).await;
    assert_eq!(new.regressed_from, Some(first));
    let prompt = t.app.get_text(&format!("/api/jobs/{second}/prompt")).await;
    let section = &prompt[prompt
        .find("## The previous fix did not bring it under the threshold")
        .expect("the prompt names the fix that did not hold")..];
    assert!(
        section.contains(&format!("Job {first}'s fix (PR #61")),
        "{section}"
    );
    assert!(section.contains("the longest 240 s"), "{section}");
    assert!(
        section.contains("`app/controllers/admin/orders_controller.rb` (14 lines changed)"),
        "the merged PR's diff summary: {section}"
    );
    // The new job is dispatched like any other.
    t.wait_for(second, |j| j.state == "agent_running").await;

    // The second fix regresses too: the third job waits for a person.
    let opened = PrEventBuilder::opened(second, 62).to_json();
    t.github.set_pull_files(62, &[("app/models/order.rb", 3)]);
    t.deliver("pull_request", "open-2", &opened).await;
    t.deliver(
        "pull_request",
        "merge-2",
        &PrEventBuilder::opened(second, 62).closed(true).to_json(),
    )
    .await;
    assert_eq!(t.job(second).await.state, "merged");
    merged_ago(&t, second, 3 * HOUR).await;
    let runs_before = t.github.runs().len();
    let third = alert(&t, 200.0).await;
    assert_eq!(third["outcome"], "created", "{third}");
    let third = third["job_id"].as_i64().unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    let held = t.job(third).await;
    assert_eq!(held.state, "queued", "{held:?}");
    assert!(
        held.hold_reason
            .as_deref()
            .unwrap()
            .contains("regressed 2 times"),
        "{held:?}"
    );
    assert_eq!(
        held.state_reason, held.hold_reason,
        "the dashboard says why it waits"
    );
    assert_eq!(
        t.github.runs().len(),
        runs_before,
        "not dispatched again automatically"
    );

    let page = t.app.get_text(&format!("/jobs/{third}")).await;
    assert!(
        page.contains("regressed 2 times"),
        "the job page says it is held"
    );
    let page = t.app.get_text(&format!("/jobs/{first}")).await;
    assert!(
        page.contains("1 alert(s) after the job ended, longest 240"),
        "{page}"
    );

    let metrics = t.app.get_text("/metrics").await;
    assert!(
        metrics.contains("longtx_jobs{state=\"regressed\"} 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("longtx_recurrences{job_state=\"regressed\"} 2"),
        "{metrics}"
    );
}
