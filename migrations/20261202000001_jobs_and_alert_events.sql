-- The job table: one row per attempt to fix one query_source.
CREATE TABLE jobs (
    id                   BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    query_source         TEXT NOT NULL,
    state                TEXT NOT NULL DEFAULT 'queued',
    -- Why the job is in its state (a cap reached, an error), for people.
    state_reason         TEXT,
    tables               TEXT[] NOT NULL DEFAULT '{}',
    alert_count          INTEGER NOT NULL DEFAULT 1,
    max_duration_seconds DOUBLE PRECISION,
    alert_links          TEXT[] NOT NULL DEFAULT '{}',
    first_seen_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_seen_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
    created_at           TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at           TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- Set when the job leaves the active states; the cooldown counts from it.
    ended_at             TIMESTAMPTZ,
    CONSTRAINT jobs_state_known CHECK (state IN (
        'queued', 'dispatching', 'agent_running', 'in_review',
        'merged', 'closed', 'wontfix', 'rejected_by_review', 'failed', 'expired', 'dry_run', 'no_pr'
    )),
    CONSTRAINT jobs_ended_iff_inactive CHECK (
        (state IN ('queued', 'dispatching', 'agent_running', 'in_review')) = (ended_at IS NULL)
    ),
    CONSTRAINT jobs_query_source_bounded CHECK (length(query_source) BETWEEN 1 AND 256)
);

-- At most one active job per source, enforced here and not in the process,
-- so several replicas sharing this database still create one job.
CREATE UNIQUE INDEX jobs_one_active_per_source ON jobs (query_source)
    WHERE state IN ('queued', 'dispatching', 'agent_running', 'in_review');

-- The cooldown check: the latest ended job of a source.
CREATE INDEX jobs_ended_by_source ON jobs (query_source, ended_at DESC)
    WHERE ended_at IS NOT NULL;

CREATE INDEX jobs_by_state ON jobs (state, id DESC);

-- The audit trail: every alert received, whatever became of it.
CREATE TABLE alert_events (
    id               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    received_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    origin           TEXT NOT NULL CHECK (origin IN ('alertmanager', 'datadog')),
    query_source     TEXT,
    table_name       TEXT,
    duration_seconds DOUBLE PRECISION,
    outcome          TEXT NOT NULL CHECK (outcome IN (
        'created', 'deduped', 'ignored', 'excluded', 'below_threshold', 'resolved', 'rejected'
    )),
    detail           TEXT,
    job_id           BIGINT REFERENCES jobs (id) ON DELETE SET NULL,
    raw_payload      JSONB NOT NULL
);

CREATE INDEX alert_events_by_job ON alert_events (job_id, id DESC) WHERE job_id IS NOT NULL;
CREATE INDEX alert_events_by_received_at ON alert_events (received_at);
