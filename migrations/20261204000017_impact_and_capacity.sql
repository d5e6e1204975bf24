-- Issue 31: the queue ranked by impact, and dispatch held to what
-- reviewers can absorb.
--
-- waiters_*: the most sessions an alert about the job's source saw waiting
-- behind it, per kind (alerts are snapshots of one queue: the larger wins).
ALTER TABLE jobs
    ADD COLUMN waiters_ddl integer NOT NULL DEFAULT 0 CHECK (waiters_ddl >= 0),
    ADD COLUMN waiters_dml integer NOT NULL DEFAULT 0 CHECK (waiters_dml >= 0),
    ADD COLUMN waiters_other integer NOT NULL DEFAULT 0 CHECK (waiters_other >= 0),
    -- The files the prompt located (relative paths), for predicting the
    -- reviewers before an agent run is paid for.
    ADD COLUMN located_paths text[] NOT NULL DEFAULT '{}',
    -- Reviewer keys predicted at dispatch: they hold a seat of each
    -- reviewer's capacity until the PR's own reviewers are asked.
    ADD COLUMN predicted_reviewers text[] NOT NULL DEFAULT '{}',
    -- Set while a queued job waits because every predicted reviewer is at
    -- capacity; cleared by the dispatcher when it looks again (after any
    -- job ends, or every few minutes).
    ADD COLUMN capacity_hold_at timestamptz;

-- The recurrence count: alerts about a job in the last 7 days.
CREATE INDEX alert_events_by_job_recent ON alert_events (job_id, received_at) WHERE job_id IS NOT NULL;
