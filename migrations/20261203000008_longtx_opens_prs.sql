-- longtx opens the fix PR itself once the agent's run has pushed
-- `longtx/<job>`: the workflow no longer creates PRs or labels.
ALTER TABLE jobs
    -- pending: the run ended well and the PR is to be looked up or opened;
    -- done: the PR is recorded, or the job ended `no_pr`.
    ADD COLUMN pr_open_state       TEXT CHECK (pr_open_state IN ('pending', 'done')),
    ADD COLUMN pr_open_lease_until TIMESTAMPTZ,
    ADD COLUMN pr_open_attempts    INTEGER NOT NULL DEFAULT 0,
    -- The fix pattern the agent says it followed (its commit trailer).
    ADD COLUMN fix_pattern         TEXT,
    -- When the current head was handed to the pre-review, so a review run
    -- that never answers cannot keep the job in `pre_review` for ever.
    ADD COLUMN pre_review_since    TIMESTAMPTZ;

CREATE INDEX jobs_pr_open_pending ON jobs (id) WHERE pr_open_state = 'pending';

-- Jobs already waiting for their review keep waiting from now on.
UPDATE jobs SET pre_review_since = now() WHERE state = 'pre_review';
