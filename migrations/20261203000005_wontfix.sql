-- The won't-fix decision: a reviewer labels the fix PR, longtx replaces
-- its commits with an ignore-list entry.
ALTER TABLE jobs
    -- pending: to be applied; done: the branch holds the entry; refused: the
    -- labeler may not decide; failed: could not be applied (see detail).
    ADD COLUMN wontfix_state       TEXT CHECK (wontfix_state IN ('pending', 'done', 'refused', 'failed')),
    ADD COLUMN wontfix_by          TEXT,
    ADD COLUMN wontfix_lease_until TIMESTAMPTZ,
    ADD COLUMN wontfix_attempts    INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN wontfix_detail      TEXT,
    ADD COLUMN wontfix_commit      TEXT;

CREATE INDEX jobs_wontfix_pending ON jobs (id) WHERE wontfix_state = 'pending';

-- Sources declined through the label, in force at once on every replica
-- (before the PR with the entry merges) and across restarts. A row leaves
-- when its PR closes unmerged, or after merging when the base branch's
-- list no longer has the entry (someone removed it by PR).
CREATE TABLE ignored_sources (
    query_source TEXT PRIMARY KEY,
    entry        JSONB NOT NULL,
    job_id       BIGINT REFERENCES jobs (id) ON DELETE SET NULL,
    merged       BOOLEAN NOT NULL DEFAULT false,
    added_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);
