-- Dispatching each job to exactly one GitHub Actions run.
ALTER TABLE jobs
    ADD COLUMN lease_until         TIMESTAMPTZ,
    ADD COLUMN dispatch_attempts   INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN dispatched_at       TIMESTAMPTZ,
    ADD COLUMN run_id              BIGINT,
    ADD COLUMN run_url             TEXT,
    -- Lets the job's workflow run fetch this job's prompt and nothing else.
    -- Stored as is: whoever can read this table can read the prompt anyway.
    ADD COLUMN prompt_token        TEXT;

CREATE INDEX jobs_dispatchable ON jobs (id) WHERE state IN ('queued', 'dispatching');
CREATE INDEX jobs_dispatched_at ON jobs (dispatched_at) WHERE dispatched_at IS NOT NULL;

-- What was sent (or, in dry-run mode, would have been sent), per attempt.
CREATE TABLE dispatches (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id     BIGINT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    dry_run    BOOLEAN NOT NULL,
    -- The workflow, ref and inputs, without the prompt token.
    request    JSONB NOT NULL,
    outcome    TEXT NOT NULL,
    run_id     BIGINT
);
CREATE INDEX dispatches_by_job ON dispatches (job_id, id DESC);

-- Switches people flip at run time (the dispatch pause), shared by replicas.
CREATE TABLE service_flags (
    name       TEXT PRIMARY KEY,
    enabled    BOOLEAN NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
