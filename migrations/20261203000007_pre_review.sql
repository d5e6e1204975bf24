-- The AI pre-review: a fix PR waits in `pre_review` for a verdict on its
-- head commit before people are asked.
ALTER TABLE jobs DROP CONSTRAINT jobs_state_known;
ALTER TABLE jobs ADD CONSTRAINT jobs_state_known CHECK (state IN (
    'queued', 'dispatching', 'agent_running', 'pre_review', 'in_review',
    'merged', 'closed', 'wontfix', 'rejected_by_review', 'failed', 'expired', 'dry_run', 'no_pr'
));
ALTER TABLE jobs DROP CONSTRAINT jobs_ended_iff_inactive;
ALTER TABLE jobs ADD CONSTRAINT jobs_ended_iff_inactive CHECK (
    (state IN ('queued', 'dispatching', 'agent_running', 'pre_review', 'in_review')) = (ended_at IS NULL)
);
-- The same rule as before, with the new active state: one active job per source.
DROP INDEX jobs_one_active_per_source;
CREATE UNIQUE INDEX jobs_one_active_per_source ON jobs (query_source)
    WHERE state IN ('queued', 'dispatching', 'agent_running', 'pre_review', 'in_review');

ALTER TABLE jobs
    -- pending: a run is to be dispatched for pre_review_head; dispatched:
    -- its run is going; judged: the verdict for that head is in.
    ADD COLUMN pre_review_state       TEXT CHECK (pre_review_state IN ('pending', 'dispatched', 'judged')),
    ADD COLUMN pre_review_head        TEXT,
    ADD COLUMN pre_review_lease_until TIMESTAMPTZ,
    ADD COLUMN pre_review_attempts    INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN pre_review_run_id      BIGINT,
    -- The latest verdict (with its head), and whether closing the PR after
    -- a fail is still to be done (comment, then close).
    ADD COLUMN pre_review_verdict     JSONB,
    ADD COLUMN pre_review_close       TEXT CHECK (pre_review_close IN ('pending', 'done'));

CREATE INDEX jobs_pre_review_pending ON jobs (id) WHERE pre_review_state = 'pending';
CREATE INDEX jobs_pre_review_close_pending ON jobs (id) WHERE pre_review_close = 'pending';

-- Every verdict received, for the record (repeats and stale heads too).
CREATE TABLE pre_review_verdicts (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      BIGINT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    head_sha    TEXT NOT NULL,
    received_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    verdict     JSONB NOT NULL,
    outcome     TEXT NOT NULL
);
CREATE INDEX pre_review_verdicts_by_job ON pre_review_verdicts (job_id, id DESC);
