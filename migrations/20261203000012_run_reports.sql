-- What each agent run cost, as its workflow reports it: one row per run
-- (a retried report replaces the row, never adds to it).
CREATE TABLE run_reports (
    job_id      BIGINT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    run_id      BIGINT NOT NULL,
    round       INTEGER NOT NULL DEFAULT 0,
    agent       TEXT,
    cost_usd    DOUBLE PRECISION,
    turns       INTEGER,
    acus        DOUBLE PRECISION,
    reported_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, run_id)
);
CREATE INDEX run_reports_reported_at ON run_reports (reported_at);
