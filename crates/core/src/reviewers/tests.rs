use super::*;

fn user(login: &str, score: f64) -> Candidate {
    Candidate {
        reviewer: Reviewer::User(login.into()),
        reason: format!("{login} knows the code"),
        score,
    }
}

fn facts() -> Facts {
    Facts {
        max_reviewers: 2,
        fallback_team: Some("acme/backend".into()),
        ..Facts::default()
    }
}

fn names(choice: &Choice) -> Vec<String> {
    choice
        .reviewers
        .iter()
        .map(|c| c.reviewer.to_string())
        .collect()
}

#[test]
fn codeowners_come_before_history() {
    let mut f = facts();
    f.codeowners = vec![user("owner", 0.0)];
    f.history = vec![user("committer", 9.0)];
    let choice = choose(&f);
    assert_eq!(choice.source, Source::Codeowners);
    assert_eq!(names(&choice), ["@owner"]);
}

#[test]
fn an_author_who_is_the_only_owner_falls_through_to_history() {
    let mut f = facts();
    f.codeowners = vec![user("Agent", 0.0)];
    f.history = vec![user("carol", 1.0), user("dave", 3.0), user("erin", 2.0)];
    f.excluded.insert("agent".into());
    let choice = choose(&f);
    assert_eq!(choice.source, Source::History);
    assert_eq!(names(&choice), ["@dave", "@erin"]);
    assert_eq!(choice.skipped[0].0, "@Agent");
}

#[test]
fn bots_and_non_collaborators_are_skipped() {
    let mut f = facts();
    f.history = vec![
        user("dependabot[bot]", 5.0),
        user("former", 4.0),
        user("alice", 1.0),
    ];
    f.non_collaborators.insert("former".into());
    let choice = choose(&f);
    assert_eq!(names(&choice), ["@alice"]);
    assert_eq!(choice.skipped.len(), 2);
}

#[test]
fn the_fallback_team_when_nobody_else_can_review() {
    let mut f = facts();
    f.history = vec![user("renovate[bot]", 5.0)];
    let choice = choose(&f);
    assert_eq!(choice.source, Source::Fallback);
    assert_eq!(names(&choice), ["@acme/backend"]);
    f.fallback_team = None;
    assert_eq!(choose(&f).source, Source::Nobody);
}

#[test]
fn ties_go_to_whoever_has_fewest_open_reviews() {
    let mut f = facts();
    f.max_reviewers = 1;
    f.codeowners = vec![user("busy", 0.0), user("free", 0.0)];
    f.open_reviews.insert("busy".into(), 3);
    f.open_reviews.insert("free".into(), 1);
    assert_eq!(names(&choose(&f)), ["@free"]);
    f.open_reviews.insert("free".into(), 7);
    assert_eq!(names(&choose(&f)), ["@busy"]);
}

#[test]
fn at_most_max_reviewers_and_no_duplicates() {
    let mut f = facts();
    f.codeowners = vec![
        user("a", 0.0),
        user("A", 0.0),
        Candidate {
            reviewer: Reviewer::Team("acme/core".into()),
            reason: "owns app/".into(),
            score: 0.0,
        },
        user("b", 0.0),
    ];
    f.max_reviewers = 3;
    let choice = choose(&f);
    assert_eq!(choice.reviewers.len(), 3);
    let keys: HashSet<String> = choice.reviewers.iter().map(|c| c.reviewer.key()).collect();
    assert_eq!(keys.len(), 3);
}

#[test]
fn recent_commits_weigh_more() {
    assert_eq!(recency_weight(0.0, 90.0), 1.0);
    assert!((recency_weight(90.0, 90.0) - 0.5).abs() < 1e-9);
    assert!(recency_weight(10.0, 90.0) > recency_weight(300.0, 90.0));
}

#[test]
fn bots_are_known_by_one_rule_beyond_the_bot_suffix() {
    for bot in [
        "dependabot[bot]",
        "Copilot",
        "198982749+Copilot@users.noreply.github.com",
        "41898282+github-actions[bot]@users.noreply.github.com",
        "noreply@github.com",
        "action@github.com",
        "renovate-bot",
        "ci_bot@acme.example",
        "Renovate Bot",
        "web-flow",
    ] {
        assert!(is_bot(bot), "{bot}");
    }
    for person in [
        "alice",
        "Alice Abbot",
        "robot-arm@acme.example",
        "123+copilotfan@users.noreply.github.com",
        "bob@example.com",
    ] {
        assert!(!is_bot(person), "{person}");
    }
}

#[test]
fn noreply_addresses_name_their_login() {
    assert_eq!(
        noreply_login("123+alice@users.noreply.github.com"),
        Some("alice")
    );
    assert_eq!(noreply_login("bob@users.noreply.github.com"), Some("bob"));
    assert_eq!(noreply_login("bob@example.com"), None);
    assert_eq!(
        noreply_login("49699333+dependabot[bot]@users.noreply.github.com"),
        None
    );
}

fn capped(mut f: Facts, loads: &[(&str, i64)]) -> Facts {
    f.capacity = Some(Capacity { user: 3, team: 5 });
    f.open_reviews = loads.iter().map(|(k, n)| (k.to_string(), *n)).collect();
    f
}

#[test]
fn an_owner_at_capacity_is_passed_over_for_the_next_owner() {
    let mut f = facts();
    f.codeowners = vec![user("alice", 0.0), user("bob", 0.0)];
    let choice = choose(&capped(f, &[("alice", 3), ("bob", 2)]));
    assert_eq!(choice.source, Source::Codeowners);
    assert_eq!(names(&choice), ["@bob"]);
    assert_eq!(choice.at_capacity, ["alice 3/3"]);
    assert!(choice.skipped.contains(&(
        "@alice".into(),
        "at capacity (3/3 open longtx reviews)".into()
    )));
    assert_eq!(choice.capacity_wait(), None);
}

#[test]
fn owners_all_at_capacity_fall_through_to_history_then_the_team() {
    let mut f = facts();
    f.codeowners = vec![user("alice", 0.0)];
    f.history = vec![user("carol", 4.0), user("dave", 2.0)];
    let choice = choose(&capped(f.clone(), &[("alice", 3), ("carol", 4)]));
    assert_eq!(choice.source, Source::History);
    assert_eq!(names(&choice), ["@dave"]);
    let choice = choose(&capped(
        f.clone(),
        &[("alice", 3), ("carol", 3), ("dave", 3)],
    ));
    assert_eq!(
        choice.source,
        Source::Fallback,
        "the team is one reviewer with its own capacity"
    );
    assert_eq!(names(&choice), ["@acme/backend"]);
    let full = capped(
        f,
        &[
            ("alice", 3),
            ("carol", 3),
            ("dave", 3),
            ("@acme/backend", 5),
        ],
    );
    let choice = choose(&full);
    assert_eq!(choice.source, Source::Nobody);
    assert_eq!(
        choice.capacity_wait().as_deref(),
        Some("reviewers at capacity: alice 3/3, carol 3/3, dave 3/3, @acme/backend 5/5")
    );
}

#[test]
fn without_a_capacity_or_a_candidate_nobody_waits() {
    let mut f = facts();
    f.codeowners = vec![user("alice", 0.0)];
    f.open_reviews = HashMap::from([("alice".to_owned(), 40)]);
    assert_eq!(names(&choose(&f)), ["@alice"], "no capacity set: no cap");
    let nobody = Facts {
        fallback_team: None,
        ..capped(facts(), &[])
    };
    assert_eq!(choose(&nobody).capacity_wait(), None);
}
