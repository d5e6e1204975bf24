-- After the merge: recurrences counted against ended jobs, merged fixes
-- verified or regressed, and sources held for a person.
ALTER TABLE jobs DROP CONSTRAINT jobs_state_known;
ALTER TABLE jobs ADD CONSTRAINT jobs_state_known CHECK (state IN (
    'queued', 'dispatching', 'agent_running', 'pre_review', 'in_review',
    'merged', 'closed', 'wontfix', 'rejected_by_review', 'failed', 'expired', 'dry_run', 'no_pr',
    'verified', 'regressed'
));

ALTER TABLE jobs
    -- Alerts for the source after this job ended (not dropped any more).
    ADD COLUMN recurrence_count       INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN recurrence_max_seconds DOUBLE PRECISION,
    ADD COLUMN first_recurrence_at    TIMESTAMPTZ,
    ADD COLUMN last_recurrence_at     TIMESTAMPTZ,
    -- When a merged fix was found to hold, or not.
    ADD COLUMN verified_at            TIMESTAMPTZ,
    ADD COLUMN regressed_at           TIMESTAMPTZ,
    -- On the job a regression opened: the merged job that did not hold.
    ADD COLUMN regressed_from         BIGINT REFERENCES jobs (id) ON DELETE SET NULL,
    -- A queued job the dispatcher leaves to a person (a source regressed twice).
    ADD COLUMN hold_reason            TEXT;

CREATE INDEX jobs_merged_awaiting_verdict ON jobs (ended_at) WHERE state = 'merged';
