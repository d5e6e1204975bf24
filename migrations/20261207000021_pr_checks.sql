-- The "long transactions" check on pull requests: one row per head commit
-- a PR event put in front of reviewers. The unique head makes a webhook's
-- redelivery, a reopened PR or two PRs of one commit ask for one check.
-- The checker claims a row with a lease, scans with no connection held,
-- posts the check run (its external_id names the row, so a retry after a
-- crash finds the run instead of making a second) and records it here.
CREATE TABLE pr_checks (
    id BIGSERIAL PRIMARY KEY,
    pr_number BIGINT NOT NULL,
    head_sha TEXT NOT NULL UNIQUE,
    base_ref TEXT NOT NULL,
    base_sha TEXT NOT NULL,
    -- pending: to be checked; posted: the check run exists; superseded:
    -- the PR's head moved on before its check could be fetched; failed:
    -- given up on, with why.
    state TEXT NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'posted', 'superseded', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    lease_until TIMESTAMPTZ,
    check_run_id BIGINT,
    conclusion TEXT,
    findings INTEGER,
    error TEXT,
    requested_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    ended_at TIMESTAMPTZ
);
CREATE INDEX pr_checks_pending ON pr_checks (id) WHERE state = 'pending';
