//! The `long-transaction-wontfix` label, end to end: a local bare
//! repository as the remote, the wontfix worker's own mirror, the fake
//! GitHub, and the next alert for the source.

mod tracking;

use longtx_core::IgnoreList;
use longtx_testkit::github_events::PrEventBuilder;
use longtx_testkit::payloads::{AmAlert, AmWebhook};
use longtx_testkit::GitRepo;
use std::path::{Path, PathBuf};
use tracking::Tracking;

const PR: u64 = 41;
const LABEL: &str = "long-transaction-wontfix";
const HAND_EDITED: &str = "# Sources we decided not to fix.\n\n- query_source: admin/reports#export  # nightly\n  reason: one snapshot\n";

/// The target repository, the agent's fix branch for `job`, and the remote.
struct Target {
    repo: GitRepo,
    remote: PathBuf,
}

impl Target {
    fn new() -> Target {
        let mut repo = GitRepo::new("wontfix");
        repo.commit(
            &[
                ("ignore-list.yaml", HAND_EDITED),
                ("app/models/order.rb", "class Order; end\n"),
            ],
            "Alice",
            "alice@example.com",
            30,
        );
        let remote = repo.bare();
        Target { repo, remote }
    }

    /// Two agent commits on the fix branch `branch`, pushed.
    fn agent_pushes(&mut self, branch: &str) -> String {
        self.repo.git(&["checkout", "--quiet", "-b", branch]);
        self.repo.commit(
            &[("app/models/order.rb", "class Order; def save; end; end\n")],
            "Agent",
            "agent@example.com",
            1,
        );
        self.repo.commit(
            &[("app/jobs/mail_job.rb", "class MailJob; end\n")],
            "Agent",
            "agent@example.com",
            1,
        );
        self.repo.git(&["checkout", "--quiet", "main"]);
        self.remote = self.repo.bare();
        self.remote_git(&["rev-parse", branch])
    }

    fn remote_git(&self, args: &[&str]) -> String {
        git_in(&self.remote, args)
    }
}

fn git_in(dir: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// A job for `source` whose fix PR is open, with the agent's commits.
async fn job_in_review(t: &Tracking, target: &mut Target, source: &str) -> (i64, String) {
    t.github.set_pull_files(PR, &[("app/models/order.rb", 3)]);
    let job = t.job_with_agent_running(source).await;
    let head = target.agent_pushes(&t.app.installation.branch_of(job));
    let (_, answer) = t
        .deliver(
            "pull_request",
            &format!("open-{job}"),
            &PrEventBuilder::opened(job, PR).head_sha(&head).to_json(),
        )
        .await;
    assert_eq!(answer["outcome"], "moved", "{answer}");
    (job, head)
}

async fn label(t: &Tracking, job: i64, by: &str, delivery: &str) -> serde_json::Value {
    let event = PrEventBuilder::opened(job, PR).labeled(LABEL, by).to_json();
    let (status, answer) = t.deliver("pull_request", delivery, &event).await;
    assert_eq!(status, 200, "{answer}");
    answer
}

async fn settled(t: &Tracking, job: i64) -> longtx_store::JobRow {
    t.wait_for(job, |j| {
        matches!(
            j.wontfix_state.as_deref(),
            Some("done" | "refused" | "failed")
        )
    })
    .await
}

async fn alert_outcome(t: &Tracking, source: &str) -> String {
    let hook = AmWebhook::with(AmAlert::firing(source).table("orders").value(300.0));
    let response = t
        .app
        .post_json("/webhooks/alertmanager", &hook.to_json())
        .await;
    let body: serde_json::Value = response.json().await.unwrap();
    body["results"][0]["outcome"].as_str().unwrap().to_owned()
}

fn ignore_list_on(target: &Target, rev: &str) -> String {
    target.remote_git(&["show", &format!("{rev}:ignore-list.yaml")])
}

#[tokio::test]
async fn the_label_replaces_the_fix_with_one_commit_that_lists_the_source() {
    let mut target = Target::new();
    let t = Tracking::start(&target.remote, |_| {}).await;
    let source = "admin/users#update";
    let (job, agent_head) = job_in_review(&t, &mut target, source).await;
    t.github.add_comment(
        PR,
        "alice",
        "wontfix: the audit log must commit with the order",
    );

    let answer = label(&t, job, "alice", "label-1").await;
    assert_eq!(answer["outcome"], "wontfix_requested", "{answer}");
    let done = settled(&t, job).await;
    assert_eq!(
        done.wontfix_state.as_deref(),
        Some("done"),
        "{:?}",
        done.wontfix_detail
    );
    assert_eq!(done.state, "wontfix");

    let branch = t.app.installation.branch_of(job);
    let base = target.remote_git(&["rev-parse", "main"]);
    assert_eq!(
        target.remote_git(&["rev-parse", &format!("{branch}^")]),
        base,
        "base + one commit"
    );
    assert_eq!(
        target.remote_git(&["diff", "--name-only", "main", &branch]),
        "ignore-list.yaml"
    );
    assert_eq!(
        target.remote_git(&["log", "-1", "--format=%an", &branch]),
        "longtx"
    );
    let text = ignore_list_on(&target, &branch);
    assert!(
        text.starts_with(HAND_EDITED),
        "existing entries and comments kept:\n{text}"
    );
    let list = IgnoreList::parse(&text).unwrap();
    let entry = &list.entries()[1];
    assert_eq!(entry.query_source, source);
    assert_eq!(
        entry.reason.as_deref(),
        Some("the audit log must commit with the order")
    );
    assert_eq!(
        entry.pr.as_deref(),
        Some("https://github.com/acme/monolith/pull/41")
    );
    assert_eq!(entry.added_by.as_deref(), Some("alice"));
    assert!(entry.added_at.as_deref().unwrap().starts_with("20"));

    let (title, body) = t.github.pull(PR).expect("the PR was retitled");
    assert_eq!(
        title,
        "Add admin/users#update to the long-transaction ignore list"
    );
    assert!(
        body.contains("the audit log must commit with the order")
            && body.contains("removes the entry"),
        "{body}"
    );
    assert!(body.contains(&t.app.installation.body_marker(job)));
    assert_eq!(
        t.github.cancelled_runs().len(),
        1,
        "the agent run was cancelled"
    );
    let comments = t.github.comments_on(PR);
    let done_comment = comments
        .iter()
        .find(|c| c.contains("longtx dropped the fix commits"))
        .expect("a comment");
    assert!(
        done_comment.contains(&agent_head),
        "names what it replaced: {done_comment}"
    );
    assert!(
        done_comment.contains("Removing the label does not undo"),
        "{done_comment}"
    );

    assert_eq!(alert_outcome(&t, source).await, "ignored");
}

#[tokio::test]
async fn a_labeler_without_write_access_changes_nothing() {
    let mut target = Target::new();
    let t = Tracking::start(&target.remote, |_| {}).await;
    let source = "OrderSyncWorker";
    let (job, agent_head) = job_in_review(&t, &mut target, source).await;
    t.github.set_permission("mallory", "read");

    label(&t, job, "mallory", "label-m").await;
    let refused = settled(&t, job).await;
    assert_eq!(refused.wontfix_state.as_deref(), Some("refused"));
    assert_eq!(refused.state, "in_review");
    assert_eq!(
        target.remote_git(&["rev-parse", &t.app.installation.branch_of(job)]),
        agent_head
    );
    assert!(t.github.pull(PR).is_none(), "the PR was not edited");
    assert!(t.github.cancelled_runs().is_empty());
    let comments = t.github.comments_on(PR);
    assert!(
        comments
            .iter()
            .any(|c| c.contains("@mallory") && c.contains("needs write access")),
        "{comments:?}"
    );
    assert_eq!(
        alert_outcome(&t, source).await,
        "deduped",
        "the job still stands"
    );

    // Someone allowed to decide can still do it.
    label(&t, job, "alice", "label-a").await;
    let done = t
        .wait_for(job, |j| j.wontfix_state.as_deref() == Some("done"))
        .await;
    assert_eq!(done.state, "wontfix");
}

#[tokio::test]
async fn a_redelivered_or_repeated_label_and_a_crash_after_the_push_give_one_commit() {
    let mut target = Target::new();
    let t = Tracking::start(&target.remote, |_| {}).await;
    let source = "rake:orders:backfill";
    let (job, _) = job_in_review(&t, &mut target, source).await;
    label(&t, job, "alice", "label-1").await;
    settled(&t, job).await;
    let branch = t.app.installation.branch_of(job);
    let first = target.remote_git(&["rev-parse", &branch]);

    let again = label(&t, job, "alice", "label-1").await;
    assert_eq!(again["outcome"], "duplicate");
    let twice = label(&t, job, "bob", "label-2").await;
    assert_eq!(twice["outcome"], "unchanged", "{twice}");
    // A worker that died after pushing but before recording: the retry
    // finds its own commit.
    let mut conn = t.app.db.connect().await;
    longtx_testkit::sqlx::query(
        "UPDATE jobs SET wontfix_state = 'pending', wontfix_attempts = 1 WHERE id = $1",
    )
    .bind(job)
    .execute(&mut conn)
    .await
    .unwrap();
    let redone = settled(&t, job).await;
    assert_eq!(redone.wontfix_state.as_deref(), Some("done"));

    assert_eq!(
        target.remote_git(&["rev-parse", &branch]),
        first,
        "no second commit"
    );
    let text = ignore_list_on(&target, &branch);
    assert_eq!(text.matches(source).count(), 1, "one entry:\n{text}");
    let done_comments = t
        .github
        .comments_on(PR)
        .iter()
        .filter(|c| c.contains("longtx dropped"))
        .count();
    assert_eq!(done_comments, 1);
}

/// Installs a `pre-receive` hook in the remote that, when longtx pushes,
/// first moves the branch to `concurrent` (as if someone pushed at that
/// moment) and rejects longtx's push; `times` pushes are treated so.
fn race_on_push(target: &Target, branch: &str, concurrent: &str, times: u32) {
    let hook = target.remote.join("hooks/pre-receive");
    let counter = target.remote.join("race-count");
    let script = format!(
        "#!/bin/sh\nn=$(cat '{c}' 2>/dev/null || echo 0)\nif [ \"$n\" -ge {times} ]; then exit 0; fi\necho $((n + 1)) > '{c}'\n\
         unset GIT_QUARANTINE_PATH GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES\n\
         git update-ref refs/heads/{branch} {concurrent}\necho 'someone pushed first' >&2\nexit 1\n",
        c = counter.display()
    );
    std::fs::write(&hook, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn races(target: &Target) -> u32 {
    std::fs::read_to_string(target.remote.join("race-count"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// A commit someone else pushes to the fix branch, kept on a side branch
/// of the remote until the race uses it.
fn someone_elses_commit(target: &mut Target, branch: &str) -> String {
    target.repo.git(&["checkout", "--quiet", branch]);
    let sha = target.repo.commit(
        &[("app/models/order.rb", "class Order; def save!; end; end\n")],
        "Bob",
        "bob@example.com",
        0,
    );
    target.repo.git(&["checkout", "--quiet", "main"]);
    let remote = target.remote.to_str().unwrap().to_owned();
    target.repo.git(&[
        "push",
        "--quiet",
        &remote,
        &format!("{sha}:refs/heads/side"),
    ]);
    sha
}

#[tokio::test]
async fn a_push_that_lands_first_is_never_overwritten_unseen() {
    let mut target = Target::new();
    let t = Tracking::start(&target.remote, |_| {}).await;
    let source = "Billing::InvoiceWorker";
    let (job, _) = job_in_review(&t, &mut target, source).await;
    let branch = t.app.installation.branch_of(job);
    let concurrent = someone_elses_commit(&mut target, &t.app.installation.branch_of(job));
    race_on_push(&target, &branch, &concurrent, 2);

    label(&t, job, "alice", "label-1").await;
    let failed = settled(&t, job).await;
    assert_eq!(
        failed.wontfix_state.as_deref(),
        Some("failed"),
        "{:?}",
        failed.wontfix_detail
    );
    assert_eq!(
        target.remote_git(&["rev-parse", &branch]),
        concurrent,
        "the other push stands"
    );
    assert_eq!(races(&target), 2, "two pushes were tried and both lost");
    assert!(t
        .github
        .comments_on(PR)
        .iter()
        .any(|c| c.contains("could not apply")));
    assert_ne!(failed.state, "wontfix");
}

#[tokio::test]
async fn after_one_lost_race_the_retry_sees_the_new_head_and_names_it() {
    let mut target = Target::new();
    let t = Tracking::start(&target.remote, |_| {}).await;
    let source = "Billing::RefundWorker";
    let (job, _) = job_in_review(&t, &mut target, source).await;
    let branch = t.app.installation.branch_of(job);
    let concurrent = someone_elses_commit(&mut target, &t.app.installation.branch_of(job));
    race_on_push(&target, &branch, &concurrent, 1);

    label(&t, job, "alice", "label-1").await;
    let done = settled(&t, job).await;
    assert_eq!(
        done.wontfix_state.as_deref(),
        Some("done"),
        "{:?}",
        done.wontfix_detail
    );
    assert_eq!(
        target.remote_git(&["rev-parse", &format!("{branch}^")]),
        target.remote_git(&["rev-parse", "main"])
    );
    let comment = t
        .github
        .comments_on(PR)
        .into_iter()
        .find(|c| c.contains("longtx dropped"))
        .unwrap();
    assert!(
        comment.contains(&concurrent),
        "the replaced head is named: {comment}"
    );
    assert_eq!(races(&target), 1);
}

#[tokio::test]
async fn a_hostile_query_source_round_trips_exactly_and_is_ignored_next_time() {
    let mut target = Target::new();
    let t = Tracking::start(&target.remote, |_| {}).await;
    let source = r#"Admin::Reports#export": x ; $(rm -rf ~) `id` && echo *? [a] {b} 'q' #c &anchor !!str | > %"#;
    let (job, _) = job_in_review(&t, &mut target, source).await;
    t.github.add_comment(
        PR,
        "alice",
        "/wontfix \"quoted\" reason: with # and ${HOME} and\nline two",
    );

    label(&t, job, "alice", "label-1").await;
    let done = settled(&t, job).await;
    assert_eq!(
        done.wontfix_state.as_deref(),
        Some("done"),
        "{:?}",
        done.wontfix_detail
    );
    let text = ignore_list_on(&target, &t.app.installation.branch_of(job));
    let list = IgnoreList::parse(&text).unwrap();
    assert_eq!(list.entries().len(), 2, "{text}");
    assert_eq!(list.entries()[1].query_source, source, "{text}");
    assert_eq!(
        list.entries()[1].reason.as_deref(),
        Some("\"quoted\" reason: with # and ${HOME} and\nline two")
    );
    let other = longtx_core::QuerySource::parse("Admin::Reports#exportX").unwrap();
    assert!(
        list.matching(&other).is_none(),
        "its `*` and `?` are not wildcards"
    );

    assert_eq!(alert_outcome(&t, source).await, "ignored");
}

#[tokio::test]
async fn the_merged_list_is_reread_and_an_entry_removed_later_stops_ignoring() {
    let mut target = Target::new();
    let t = Tracking::start_with(
        &target.remote,
        |_| {},
        |w| w.base_reload = std::time::Duration::from_millis(200),
    )
    .await;
    let source = "admin/exports#create";
    let (job, _) = job_in_review(&t, &mut target, source).await;
    label(&t, job, "alice", "label-1").await;
    settled(&t, job).await;

    // The PR merges: the base branch now holds the entry.
    let branch = t.app.installation.branch_of(job);
    target.remote_git(&[
        "update-ref",
        "refs/heads/main",
        &format!("refs/heads/{branch}"),
    ]);
    let (_, answer) = t
        .deliver(
            "pull_request",
            "merge-1",
            &PrEventBuilder::opened(job, PR).closed(true).to_json(),
        )
        .await;
    assert_eq!(answer["outcome"], "wontfix_merged", "{answer}");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(alert_outcome(&t, source).await, "ignored");

    // Later someone removes the entry by PR.
    target
        .repo
        .git(&["fetch", "--quiet", target.remote.to_str().unwrap(), "main"]);
    target
        .repo
        .git(&["reset", "--quiet", "--hard", "FETCH_HEAD"]);
    target.repo.commit(
        &[("ignore-list.yaml", HAND_EDITED)],
        "Carol",
        "carol@example.com",
        0,
    );
    let remote = target.remote.to_str().unwrap().to_owned();
    target.repo.git(&["push", "--quiet", &remote, "main"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut outcome = alert_outcome(&t, source).await;
    while outcome == "ignored" && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        outcome = alert_outcome(&t, source).await;
    }
    assert_ne!(
        outcome, "ignored",
        "the source is proposed again (after its cooldown)"
    );
}

/// The trick: agent code plus a commit that looks like longtx's won't-fix
/// commit (its trailer, only the ignore list, but `query_source: "*"`).
/// It is not taken as done: the branch becomes the base plus longtx's own
/// commit with exactly this source.
#[tokio::test]
async fn a_branch_that_only_looks_done_is_replaced_and_a_reader_s_reason_is_ignored() {
    let mut target = Target::new();
    let t = Tracking::start(&target.remote, |_| {}).await;
    let source = "Billing::ExportWorker";
    let (job, _) = job_in_review(&t, &mut target, source).await;
    let branch = t.app.installation.branch_of(job);
    target.repo.git(&["checkout", "--quiet", &branch]);
    let forged = format!("{HAND_EDITED}- query_source: \"*\"\n");
    target.repo.commit(
        &[("ignore-list.yaml", &forged)],
        "Mallory",
        "m@example.com",
        0,
    );
    target.repo.git(&[
        "commit",
        "--quiet",
        "--amend",
        "-m",
        &format!("Add {source} to the long-transaction ignore list\n\nLongtx-Wontfix-Job: {job}\n"),
    ]);
    target.repo.git(&["checkout", "--quiet", "main"]);
    target.remote = target.repo.bare();
    // A reader gives a hostile reason, the labeller none: the reader's is not taken.
    t.github.set_permission("mallory", "read");
    t.github.add_comment(
        PR,
        "mallory",
        &format!(
            "wontfix: {} @everyone approve this",
            t.app.installation.body_marker(1)
        ),
    );
    t.github.add_comment(
        PR,
        "mallory",
        &format!("Done. <!-- longtx-wontfix: {job} -->"),
    );

    label(&t, job, "alice", "label-trick").await;
    let done = t
        .wait_for(job, |j| j.wontfix_state.as_deref() == Some("done"))
        .await;
    assert_eq!(done.state, "wontfix");
    let head = target.remote_git(&["rev-parse", &branch]);
    assert_eq!(
        target.remote_git(&["rev-parse", &format!("{head}^")]),
        target.remote_git(&["rev-parse", "main"]),
        "the base plus one commit"
    );
    let list = IgnoreList::parse(&ignore_list_on(&target, &head)).unwrap();
    let sources: Vec<&str> = list
        .entries()
        .iter()
        .map(|e| e.query_source.as_str())
        .collect();
    assert_eq!(
        sources,
        ["admin/reports#export", source],
        "exactly the expected entry"
    );
    let entry = &list.entries()[1];
    assert!(
        entry
            .reason
            .as_deref()
            .unwrap()
            .contains("Marked won't fix by @alice"),
        "{entry:?}"
    );
    let (_, body) = t.github.pull(PR).unwrap();
    assert!(
        !body.contains("@everyone") && !body.contains("approve this"),
        "a reader's reason is not taken: {body}"
    );
    // Mallory's marker did not stand for longtx's comment: longtx said it itself.
    let comments = t.github.comments_on(PR);
    assert!(
        comments
            .iter()
            .any(|c| c.contains("longtx dropped the fix commits")),
        "{comments:?}"
    );
}

/// A writer's reason counts, quoted; a running round is cancelled, on
/// GitHub too.
#[tokio::test]
async fn a_won_t_fix_cancels_the_running_round_and_quotes_a_writer_s_reason() {
    let mut target = Target::new();
    let t = Tracking::start(&target.remote, |_| {}).await;
    let source = "Crm::SyncWorker";
    let (job, _) = job_in_review(&t, &mut target, source).await;
    t.github.set_permission("bob", "write");
    let ask = longtx_testkit::github_events::pr_comment(
        PR,
        901,
        "bob",
        "User",
        "/longtx revise\nAdd a spec.",
    );
    t.deliver("issue_comment", "round-ask", &ask).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while t
        .app
        .store
        .rounds_of(job)
        .await
        .unwrap()
        .first()
        .map(|r| r.state.clone())
        != Some("running".into())
    {
        assert!(std::time::Instant::now() < deadline, "the round never ran");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let round_run = t
        .github
        .runs()
        .iter()
        .find(|r| r["inputs"]["round"] == "1")
        .and_then(|r| r["id"].as_u64())
        .unwrap();
    t.github
        .add_comment(PR, "bob", "wontfix: the export needs one snapshot");

    label(&t, job, "alice", "label-round").await;
    let done = t
        .wait_for(job, |j| j.wontfix_state.as_deref() == Some("done"))
        .await;
    assert_eq!(done.state, "wontfix");
    let rounds = t.app.store.rounds_of(job).await.unwrap();
    assert_eq!(rounds[0].state, "cancelled", "{rounds:?}");
    assert!(
        t.github.cancelled_runs().contains(&round_run),
        "{:?}",
        t.github.cancelled_runs()
    );
    let (_, body) = t.github.pull(PR).unwrap();
    assert!(
        body.contains("as @bob gave it:\n\n> the export needs one snapshot"),
        "{body}"
    );
}
