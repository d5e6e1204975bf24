-- Following each fix PR, and asking people to review it.
ALTER TABLE jobs
    ADD COLUMN pr_number             BIGINT,
    ADD COLUMN pr_url                TEXT,
    ADD COLUMN pr_head_sha           TEXT,
    ADD COLUMN pr_base_ref           TEXT,
    ADD COLUMN pr_author             TEXT,
    -- pending: reviewers still to be asked; requested: asked; none: nobody
    -- could be found (the reasons are in `reviewers`).
    ADD COLUMN reviewers_state       TEXT CHECK (reviewers_state IN ('pending', 'requested', 'none')),
    ADD COLUMN reviewers_lease_until TIMESTAMPTZ,
    ADD COLUMN reviewers_attempts    INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN reviewers             JSONB;

CREATE INDEX jobs_reviewers_pending ON jobs (id) WHERE reviewers_state = 'pending';

-- Every GitHub delivery processed, so a redelivery is acknowledged and not
-- processed twice; also the audit trail of what GitHub told longtx.
CREATE TABLE github_deliveries (
    delivery_id TEXT PRIMARY KEY,
    received_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    event       TEXT NOT NULL,
    action      TEXT,
    job_id      BIGINT REFERENCES jobs (id) ON DELETE SET NULL,
    outcome     TEXT NOT NULL
);
CREATE INDEX github_deliveries_received_at ON github_deliveries (received_at);
CREATE INDEX github_deliveries_by_job ON github_deliveries (job_id) WHERE job_id IS NOT NULL;

-- Who was asked to review which job; open counts break reviewer ties.
CREATE TABLE review_requests (
    job_id       BIGINT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    reviewer     TEXT NOT NULL,
    requested_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, reviewer)
);
CREATE INDEX review_requests_by_reviewer ON review_requests (reviewer);
