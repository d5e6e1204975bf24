use super::*;
use serde_json::json;

const HERE: &str = "k3x9q2ab";

fn here() -> Installation {
    Installation::new(HERE, 0).unwrap()
}

fn pr(branch: &str, body: &str, head_repo: Option<&str>) -> PullRequest {
    serde_json::from_value(json!({
        "number": 7,
        "html_url": "https://github.example/acme/monolith/pull/7",
        "body": body,
        "merged": false,
        "user": {"login": "github-actions[bot]"},
        "head": {"ref": branch, "sha": "abc", "repo": head_repo.map(|r| json!({"full_name": r}))},
        "base": {"ref": "main", "sha": "def", "repo": {"full_name": "acme/monolith"}},
    }))
    .unwrap()
}

#[test]
fn branch_and_marker_together_name_the_job() {
    let pr = pr(
        "longtx/k3x9q2ab/42",
        "Fix.\n\n<!-- longtx-job: k3x9q2ab/42 -->",
        Some("acme/monolith"),
    );
    assert_eq!(
        correlate(&pr, "acme/monolith", &here()),
        Correlation::Job(42)
    );
}

#[test]
fn ordinary_prs_are_not_ours() {
    let pr = pr("feature/x", "Some change", Some("acme/monolith"));
    assert_eq!(
        correlate(&pr, "acme/monolith", &here()),
        Correlation::NotOurs
    );
}

#[test]
fn disagreement_or_half_a_signal_is_suspicious() {
    for (branch, body) in [
        ("longtx/k3x9q2ab/42", "<!-- longtx-job: k3x9q2ab/43 -->"),
        ("longtx/k3x9q2ab/42", "no marker"),
        ("feature/x", "<!-- longtx-job: k3x9q2ab/42 -->"),
        (
            "longtx/k3x9q2ab/42",
            "<!-- longtx-job: k3x9q2ab/42 --> <!-- longtx-job: k3x9q2ab/9 -->",
        ),
    ] {
        let pr = pr(branch, body, Some("acme/monolith"));
        assert!(
            matches!(
                correlate(&pr, "acme/monolith", &here()),
                Correlation::Suspicious(_)
            ),
            "{branch} / {body}"
        );
    }
}

#[test]
fn a_marker_from_a_fork_is_never_trusted() {
    let body = "<!-- longtx-job: k3x9q2ab/42 -->";
    let fork = pr("longtx/k3x9q2ab/42", body, Some("mallory/monolith"));
    let deleted = pr("longtx/k3x9q2ab/42", body, None);
    for pr in [fork, deleted] {
        let Correlation::Suspicious(why) = correlate(&pr, "acme/monolith", &here()) else {
            panic!("a fork was trusted");
        };
        assert!(why.contains("fork"), "{why}");
    }
}

#[test]
fn a_pr_in_another_repository_is_suspicious() {
    let pr = pr(
        "longtx/k3x9q2ab/42",
        "<!-- longtx-job: k3x9q2ab/42 -->",
        Some("acme/monolith"),
    );
    assert!(matches!(
        correlate(&pr, "acme/other", &here()),
        Correlation::Suspicious(_)
    ));
}

#[test]
fn branch_names_and_run_names_give_job_ids_strictly() {
    assert_eq!(here().job_of_branch("longtx/k3x9q2ab/12"), Some(12));
    assert_eq!(here().job_of_branch("longtx/k3x9q2ab/12a"), None);
    assert_eq!(here().job_of_branch("longtx/"), None);
    assert_eq!(here().job_of_branch("x/longtx/k3x9q2ab/12"), None);
    let run = |title: &str| WorkflowRun {
        id: 1,
        display_title: Some(title.into()),
        conclusion: None,
        html_url: None,
        path: None,
        event: None,
        head_repository: None,
        created_at: None,
    };
    assert_eq!(
        job_of_run(&run("longtx job 12: admin/users#update")),
        Some(12)
    );
    assert_eq!(job_of_run(&run("nightly build")), None);
}

#[test]
fn pr_events_move_jobs_through_review() {
    use JobState::*;
    let closed = PrEvent::Closed { merged: false };
    let merged = PrEvent::Closed { merged: true };
    let cases = [
        (AgentRunning, PrEvent::Opened, Some(InReview)),
        (Dispatching, PrEvent::Opened, Some(InReview)),
        (InReview, PrEvent::Opened, None),
        (NoPr, PrEvent::Opened, Some(InReview)),
        (InReview, merged.clone(), Some(Merged)),
        (InReview, closed.clone(), Some(Closed)),
        (Merged, closed.clone(), None),
        (Closed, PrEvent::Reopened, Some(InReview)),
        (Closed, PrEvent::Opened, None),
        (Closed, PrEvent::Synchronized, None),
        (RejectedByReview, PrEvent::Reopened, Some(InReview)),
        (Merged, PrEvent::Reopened, None),
        (Wontfix, PrEvent::Reopened, None),
        (
            AgentRunning,
            PrEvent::RunCompleted { success: false },
            Some(NoPr),
        ),
        // A good run: longtx opens the PR, then the job moves.
        (AgentRunning, PrEvent::RunCompleted { success: true }, None),
        (InReview, PrEvent::RunCompleted { success: false }, None),
        (Queued, PrEvent::Opened, None),
        (InReview, PrEvent::Labeled(WONTFIX_LABEL.into()), None),
    ];
    for (from, event, to) in cases {
        assert_eq!(
            next_state(from, &event, ReviewGate::PeopleAtOnce),
            to,
            "{from} on {event:?}"
        );
    }
}

#[test]
fn with_the_pre_review_a_new_pr_waits_for_the_verdict_first() {
    use JobState::*;
    let gate = ReviewGate::PreReviewFirst;
    let cases = [
        (AgentRunning, PrEvent::Opened, Some(PreReview)),
        (NoPr, PrEvent::Synchronized, Some(PreReview)),
        // A push while in review keeps the state; the new head is judged again.
        (PreReview, PrEvent::Synchronized, None),
        (InReview, PrEvent::Synchronized, None),
        (PreReview, PrEvent::Closed { merged: false }, Some(Closed)),
        (PreReview, PrEvent::Closed { merged: true }, Some(Merged)),
        (PreReview, PrEvent::RunCompleted { success: true }, None),
        // Reopening after a failed pre-review goes to people: the override.
        (RejectedByReview, PrEvent::Reopened, Some(InReview)),
        (RejectedByReview, PrEvent::Closed { merged: false }, None),
    ];
    for (from, event, to) in cases {
        assert_eq!(next_state(from, &event, gate), to, "{from} on {event:?}");
    }
}

#[test]
fn the_pr_of_a_lost_database_is_not_a_job_of_the_new_one() {
    // Job 42 of the database that was lost, before and after installation ids.
    for (branch, body) in [
        ("longtx/42", "<!-- longtx-job: 42 -->"),
        ("longtx/zz000000/42", "<!-- longtx-job: zz000000/42 -->"),
    ] {
        let pr = pr(branch, body, Some("acme/monolith"));
        assert_eq!(
            correlate(&pr, "acme/monolith", &here()),
            Correlation::NotOurs,
            "{branch}"
        );
    }
}
