-- What the dashboard reads, kept cheap at 10,000 jobs and 1,000,000 alerts.

-- Alerts per source and day, so the charts never scan alert_events. Rows
-- are added by the roll-up task, which also sets `rolled_up`; the dashboard
-- adds the few events not rolled up yet, so its figures are exact at once.
-- The roll-up outlives alert retention: purged events stay counted here.
CREATE TABLE alert_daily (
    query_source         TEXT NOT NULL,
    day                  DATE NOT NULL,
    alerts               BIGINT NOT NULL,
    max_duration_seconds DOUBLE PRECISION,
    PRIMARY KEY (query_source, day)
);
CREATE INDEX alert_daily_by_day ON alert_daily (day);

-- A flag rather than an id watermark: an intake transaction that commits
-- after a later id was rolled up would be skipped forever by a watermark.
ALTER TABLE alert_events ADD COLUMN rolled_up BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX alert_events_not_rolled_up ON alert_events (id) WHERE NOT rolled_up;

-- When the fix PR was first seen, for the PRs-opened-per-week figure.
ALTER TABLE jobs ADD COLUMN pr_opened_at TIMESTAMPTZ;
UPDATE jobs SET pr_opened_at = COALESCE(dispatched_at, created_at) WHERE pr_number IS NOT NULL;
CREATE INDEX jobs_pr_opened_at ON jobs (pr_opened_at) WHERE pr_opened_at IS NOT NULL;
CREATE INDEX jobs_ended_at ON jobs (ended_at) WHERE ended_at IS NOT NULL;

-- Open reviews per reviewer: requests of jobs still in review.
CREATE INDEX review_requests_by_job ON review_requests (job_id);
