-- The agent proposes, longtx commits. Agent runs hold read-only tokens and
-- upload their result (a patch, or a verdict, and their cost) as the
-- artifact `longtx-result`; longtx downloads it from the run it dispatched,
-- checks the patch, and makes every round's commit itself.
ALTER TABLE jobs
    -- The commit round 0 starts from, pinned before the dispatch and
    -- passed to the workflow as `base_sha`.
    ADD COLUMN base_sha              TEXT,
    -- When the dispatch was first claimed: a run created before it is not
    -- the one longtx dispatched.
    ADD COLUMN dispatch_started_at   TIMESTAMPTZ,
    -- Round 0's commit, made by longtx on `longtx/<job>`.
    ADD COLUMN fix_commit_sha        TEXT,
    -- What the agent said it did, quoted in the PR body.
    ADD COLUMN agent_summary         TEXT,
    -- When the current head's pre-review was first claimed.
    ADD COLUMN pre_review_started_at TIMESTAMPTZ;

ALTER TABLE revision_rounds
    ADD COLUMN base_sha            TEXT,
    ADD COLUMN dispatch_started_at TIMESTAMPTZ,
    ADD COLUMN commit_sha          TEXT;

-- A round whose patch the policy refused ends `refused`, with the reason.
ALTER TABLE revision_rounds DROP CONSTRAINT revision_rounds_state_check;
ALTER TABLE revision_rounds ADD CONSTRAINT revision_rounds_state_check CHECK (state IN (
    'queued', 'dispatching', 'running', 'checking', 'pushed', 'no_change', 'refused',
    'failed', 'expired', 'cancelled'));

-- Runs already dispatched by the old templates push their own branch and
-- upload no result: they are left to finish as before would have, but a
-- completion now needs the run longtx dispatched, so they count from the
-- moment they were dispatched.
UPDATE jobs SET dispatch_started_at = dispatched_at WHERE dispatched_at IS NOT NULL;
UPDATE revision_rounds SET dispatch_started_at = dispatched_at WHERE dispatched_at IS NOT NULL;

-- People's requests past the hourly limits are recorded and not acted on;
-- only the first of a burst is answered.
ALTER TABLE revision_requests ADD COLUMN rate_limited BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX revision_requests_recent ON revision_requests (created_at);
