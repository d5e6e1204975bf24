//! A database's installation id: the branches and PRs of a lost database
//! never match the jobs of a new one, and jobs from before the id existed
//! keep their names through the upgrade. Real PostgreSQL, real migrations.

mod tracking;

use longtx_testkit::github_events::PrEventBuilder;
use longtx_testkit::payloads::{AmAlert, AmWebhook};
use longtx_testkit::{sqlx, TestApp};
use tracking::Tracking;

#[tokio::test]
async fn the_pr_of_a_lost_database_does_not_move_the_new_job_with_its_number() {
    let mut repo = tracking::repository_owned_by_alice("installation");
    let t = Tracking::start(&repo.bare(), |_| {}).await;
    t.github.set_pull_files(41, &[("app/models/order.rb", 2)]);
    let job = t.job_with_agent_running("admin/orders#update").await;

    // The lost database's job with the same number left its PR behind,
    // named as longtx named it then (no installation id), and as a later
    // version would have (another installation's id).
    let old_names = [
        (
            format!("longtx/{job}"),
            format!("<!-- longtx-job: {job} -->"),
        ),
        (
            format!("longtx/zz000000/{job}"),
            format!("<!-- longtx-job: zz000000/{job} -->"),
        ),
    ];
    for (i, (branch, marker)) in old_names.iter().enumerate() {
        let event = PrEventBuilder::opened(job, 41)
            .branch(branch)
            .body(&format!("Shortens the transaction.\n\n{marker}\n"))
            .closed(true)
            .to_json();
        let (status, answer) = t.deliver("pull_request", &format!("old-{i}"), &event).await;
        assert_eq!(
            (status, answer["outcome"].as_str()),
            (202, Some("ignored")),
            "{branch}: {answer}"
        );
    }
    assert_eq!(
        t.job(job).await.state,
        "agent_running",
        "the old PR's merge is not this job's"
    );

    // This database's own name for the job is matched.
    assert_ne!(t.app.installation.branch_of(job), format!("longtx/{job}"));
    let ours = PrEventBuilder::opened(job, 41).to_json();
    let (_, answer) = t.deliver("pull_request", "ours", &ours).await;
    assert_eq!(answer["outcome"], "moved", "{answer}");
}

#[tokio::test]
async fn jobs_made_before_the_upgrade_keep_their_bare_branch_names() {
    let app = TestApp::builder().spawn().await;
    for source in ["admin/orders#update", "admin/users#update"] {
        let hook = AmWebhook::with(AmAlert::firing(source).value(150.0));
        assert_eq!(
            app.post_json("/webhooks/alertmanager", &hook.to_json())
                .await
                .status(),
            200
        );
    }
    // The database as it was before migration 16: jobs, no installation.
    let mut db = app.db.connect().await;
    for statement in [
        "DROP TABLE installation",
        "DELETE FROM _sqlx_migrations WHERE version = 20261204000016",
    ] {
        sqlx::query(statement).execute(&mut db).await.unwrap();
    }
    let upgraded = app.db.store(&Default::default());
    upgraded.migrate().await.unwrap();
    let installation = upgraded.installation().await.unwrap();

    let jobs: Vec<i64> = sqlx::query_scalar("SELECT id FROM jobs ORDER BY id")
        .fetch_all(&mut db)
        .await
        .unwrap();
    assert_eq!(jobs.len(), 2);
    for job in &jobs {
        assert_eq!(installation.branch_of(*job), format!("longtx/{job}"));
        assert_eq!(
            installation.job_of_branch(&format!("longtx/{job}")),
            Some(*job)
        );
    }
    let next = jobs[1] + 1;
    assert_eq!(
        installation.branch_of(next),
        format!("longtx/{}/{next}", installation.id())
    );
    assert_eq!(installation.job_of_branch(&format!("longtx/{next}")), None);
    assert_ne!(
        installation.id(),
        app.installation.id(),
        "the migration drew a new id"
    );
}
